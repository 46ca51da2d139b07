"""``ember.nn.attention.sdpa_kernel`` and ``ember.backends.cuda.enable_*_sdp`` against torch's:
the kernel a CPU call runs (its graph node), the errors where none may run, the values, and
the switches restored on exit."""

import numpy as np
import pytest
import torch
import torch.nn.attention as theirs

import ember
import ember.nn.attention as ours

SETS = [
    ["MATH"],
    ["FLASH_ATTENTION"],
    ["EFFICIENT_ATTENTION"],
    ["CUDNN_ATTENTION"],
    ["MATH", "FLASH_ATTENTION"],
    ["EFFICIENT_ATTENTION", "CUDNN_ATTENTION"],
    [],
]
CALLS = {
    "plain": ((2, 2, 5, 8), {}),
    "causal": ((1, 3, 4, 6), {"is_causal": True}),
    "three_dims": ((3, 5, 8), {}),  # flash takes 4-D inputs only
    "dropout": ((2, 2, 5, 8), {"dropout_p": 0.5}),
}


def _run(lib, module, names, shape, kwargs, data):
    backends = [getattr(module.SDPBackend, n) for n in names]
    q = lib.tensor(data, requires_grad=True)
    with module.sdpa_kernel(backends):
        try:
            out = lib.nn.functional.scaled_dot_product_attention(q, q, q, **kwargs)
        except RuntimeError as error:
            return "error", str(error)
    return type(out.grad_fn).__name__, out


@pytest.mark.parametrize("names", SETS, ids=lambda s: "+".join(s) or "none")
@pytest.mark.parametrize("call", list(CALLS))
def test_sdpa_kernel_chooses_as_torch(names, call):
    shape, kwargs = CALLS[call]
    data = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
    mine = _run(ember, ours, names, shape, kwargs, data)
    torchs = _run(torch, theirs, names, shape, kwargs, data)
    assert mine[0] == torchs[0]
    if mine[0] == "error":
        assert mine[1] == torchs[1]
    elif "dropout_p" not in kwargs:
        np.testing.assert_allclose(mine[1].detach().numpy(), torchs[1].detach().numpy(), atol=1e-5)


def test_switches_read_and_restore_as_torch():
    def state(lib):
        c = lib.backends.cuda
        return (c.flash_sdp_enabled(), c.math_sdp_enabled(), c.mem_efficient_sdp_enabled(),
                c.cudnn_sdp_enabled())  # fmt: skip

    assert state(ember) == state(torch) == (True, True, True, True)
    for lib, module in ((ember, ours), (torch, theirs)):
        with module.sdpa_kernel(module.SDPBackend.MATH) as found:
            assert found == {}
            assert state(lib) == (False, True, False, False)
        assert state(lib) == (True, True, True, True)
    ember.backends.cuda.enable_flash_sdp(False)
    try:
        q = ember.randn(1, 1, 3, 4, requires_grad=True)
        out = ember.nn.functional.scaled_dot_product_attention(q, q, q)
        assert type(out.grad_fn).__name__ != "ScaledDotProductFlashAttentionForCpuBackward0"
    finally:
        ember.backends.cuda.enable_flash_sdp(True)


def test_enum_and_argument_check_as_torch():
    assert {b.name: int(b) for b in ours.SDPBackend} == {
        n: int(b) for n, b in theirs.SDPBackend.__members__.items()
    }
    for module in (ours, theirs):
        with pytest.raises(AssertionError, match="got str"), module.sdpa_kernel("MATH"):
            pass


def test_nn_attention_comes_with_import_ember():
    """PyTorch imports ``torch.nn.attention`` with torch, so programs write
    ``torch.nn.attention.sdpa_kernel(...)`` after ``import torch`` alone (a fresh interpreter:
    in this one another test may have imported the module)."""
    import subprocess
    import sys

    code = "import ember; print(ember.nn.attention.sdpa_kernel, ember.nn.attention.SDPBackend.MATH)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
