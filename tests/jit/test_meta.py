"""The meta device: every op of the table gives on meta tensors the shape, dtype and strides it
gives on the CPU, without memory; data reads raise as in PyTorch; ``Module.to_empty``."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import ember
from ember.dispatcher.meta import DATA_DEPENDENT
from ember.dispatcher.optable import OPS

from ..ops import checks
from ..ops.samples import generator_name, samples

# One floating and one integral dtype per op (every dtype would repeat the same rules).
CASES = []
for _name, _op in OPS.items():
    if generator_name(_op) is None:
        continue
    _accepted = checks.accepted_dtypes(_op)
    _picked = [d for d in _accepted if d.is_floating_point][:1]
    _picked += [d for d in _accepted if d in (ember.int64, ember.int32)][:1]
    CASES += [(_name, d.name) for d in _picked]


def _outputs(value):
    if isinstance(value, ember.Tensor):
        return [value]
    if isinstance(value, (tuple, list)):
        return [v for v in value if isinstance(v, ember.Tensor)]
    return []


def _value_shaped(op, args) -> bool:
    """repeat_interleave by a tensor of repeats: the output length is the repeats' sum."""
    return op.name == "repeat_interleave" and isinstance(args[1], ember.Tensor)


def _call(op, args):
    try:
        return op(*args), None
    except Exception as exc:  # compared between devices below
        return None, exc


@pytest.mark.parametrize("name,dtype_name", CASES)
def test_op_on_meta_matches_cpu_metadata(name, dtype_name):
    op, dtype = OPS[name], checks.BY_NAME[dtype_name]
    on_cpu = samples(op, dtype, "cpu", np.random.default_rng(0))
    on_meta = samples(op, dtype, "meta", np.random.default_rng(0))  # factories take a device
    for sample, meta_sample in zip(on_cpu, on_meta, strict=True):
        cpu_out, cpu_error = _call(op, sample.ember_args("cpu"))
        meta_args = meta_sample.ember_args("meta")
        if (op.inplace_of or op).name in DATA_DEPENDENT:  # PyTorch has no meta kernel for them
            with pytest.raises(NotImplementedError, match="meta device"):
                op(*meta_args)
            continue
        meta_out, meta_error = _call(op, meta_args)
        if meta_error is not None and _value_shaped(op, meta_args):
            assert "meta" in str(meta_error)
            continue
        if cpu_error is not None:
            assert meta_error is not None, f"{name}{sample!r}: cpu raised {cpu_error!r}, meta not"
            assert type(meta_error) is type(cpu_error)
            continue
        assert meta_error is None, f"{name}{sample!r}: meta raised {meta_error!r}"
        got, want = _outputs(meta_out), _outputs(cpu_out)
        assert len(got) == len(want)
        for g, w in zip(got, want):
            assert g.device == ember.device("meta")
            assert (g.shape, g.dtype) == (w.shape, w.dtype), f"{name}{sample!r}"
            if w.numel() and (w.is_contiguous() or name == "as_strided"):
                assert g.stride() == w.stride(), f"{name}{sample!r}: strides"
            assert g.untyped_storage().data_ptr() == 0


# The ops of dispatcher/meta_rules.py (their CPU path reads values) next to torch on meta: one
# call each, from the same empty inputs. Shapes, dtypes and contiguous strides as torch's.
def _m(*shape, dtype="float32", lib=torch):
    return lib.empty(*shape, dtype=getattr(lib, dtype), device="meta")


RULE_CALLS = {
    "gcd": lambda lib: lib.gcd(_m(3, 4, dtype="int32", lib=lib), _m(4, dtype="int64", lib=lib)),
    "lcm": lambda lib: lib.lcm(_m(2, 1, dtype="int32", lib=lib), _m(5, dtype="int32", lib=lib)),
    "mvlgamma": lambda lib: lib.mvlgamma(_m(3, 4, dtype="int32", lib=lib), 3),
    "matrix_exp": lambda lib: lib.linalg.matrix_exp(_m(2, 3, 3, lib=lib)),
    "histc": lambda lib: lib.histc(_m(7, dtype="float64", lib=lib), bins=5),
    "quantile": lambda lib: lib.quantile(_m(3, 4, lib=lib), _m(2, lib=lib), dim=0),
    "nanquantile": lambda lib: lib.nanquantile(_m(3, 4, lib=lib), 0.5, dim=1, keepdim=True),
    "scatter_reduce": lambda lib: lib.scatter_reduce(
        _m(4, 5, lib=lib), 0, _m(3, 5, dtype="int64", lib=lib), _m(4, 6, lib=lib), "amax"
    ),
    "lu_unpack": lambda lib: lib.lu_unpack(_m(2, 5, 3, lib=lib), _m(2, 3, dtype="int32", lib=lib)),
    "linalg_lu": lambda lib: lib.linalg.lu(_m(2, 3, 4, lib=lib)),
    "inv": lambda lib: lib.linalg.inv(_m(2, 3, 3, lib=lib)),
    "cholesky": lambda lib: lib.linalg.cholesky(_m(3, 3, lib=lib)),
    "solve": lambda lib: lib.linalg.solve(_m(3, 3, lib=lib), _m(3, 2, lib=lib)),
}


@pytest.mark.parametrize("name", RULE_CALLS)
def test_value_reading_ops_on_meta_like_torch(name):
    got, want = _outputs(RULE_CALLS[name](ember)), RULE_CALLS[name](torch)
    want = [want] if isinstance(want, torch.Tensor) else list(want)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.device.type == "meta"
        assert (tuple(g.shape), g.dtype.name) == (tuple(w.shape), str(w.dtype)[len("torch.") :])
        if w.is_contiguous():
            assert g.stride() == w.stride(), name


@pytest.mark.parametrize(
    "call",
    [
        lambda lib: lib.bincount(_m(5, dtype="int64", lib=lib)),
        lambda lib: lib.linalg.lstsq(_m(5, 3, lib=lib), _m(5, 2, lib=lib)),
        lambda lib: lib.nonzero(_m(5, lib=lib)),
    ],
)
def test_value_shaped_ops_refuse_meta_like_torch(call):
    with pytest.raises(NotImplementedError):
        call(torch)
    with pytest.raises(NotImplementedError, match="meta device"):
        call(ember)


def test_meta_tensors_hold_no_memory():
    x = ember.empty(1 << 20, 1 << 20, device="meta")  # 4 TiB if it were allocated
    y = (x @ x).relu().sum(1)
    assert y.shape == (1 << 20,) and y.device.type == "meta" and y.is_meta


def test_meta_device_has_no_index():
    assert ember.empty(2, device="meta:0").device == ember.device("meta")
    assert str(ember.empty(2, device="meta").device) == "meta"


def test_to_meta_and_factories():
    t = ember.arange(6).reshape(2, 3).to("meta")
    assert (t.shape, t.dtype, t.device.type) == ((2, 3), ember.int64, "meta")
    assert ember.randn(3, 4, device="meta").shape == (3, 4)
    assert ember.zeros_like(t).device.type == "meta"


def test_meta_with_cpu_scalar_tensor_and_mixed_device_error():
    x = ember.empty(2, 3, device="meta")
    assert (x + ember.tensor(2.0)).device.type == "meta"
    with pytest.raises(RuntimeError, match="same device"):
        ember.ones(2, 3) + x


@pytest.mark.parametrize(
    "read, error, message",
    [
        (lambda x: x.cpu(), NotImplementedError, "Cannot copy out of meta tensor; no data!"),
        (lambda x: x.sum().item(), RuntimeError, "Tensor.item() cannot be called on meta"),
        (lambda x: bool(x.sum()), RuntimeError, "Tensor.item() cannot be called on meta"),
        (lambda x: x.tolist(), NotImplementedError, "Cannot copy out of meta tensor"),
        (lambda x: x.numpy(), TypeError, "meta"),
    ],
)
def test_data_reads_raise_like_torch(read, error, message):
    with pytest.raises(error, match=message.replace("(", r"\(").replace(")", r"\)")):
        read(ember.empty(2, 3, device="meta"))
    theirs = torch.empty(2, 3, device="meta")
    with pytest.raises(error):
        read(theirs)


def test_repr_like_torch():
    for shape, dtype, their_dtype in [((2, 3), None, None), ((), ember.int64, torch.int64)]:
        ours = ember.empty(shape, dtype=dtype, device="meta")
        theirs = torch.empty(shape, dtype=their_dtype, device="meta")
        assert repr(ours) == repr(theirs).replace("torch.", "ember.")


def test_autograd_on_meta():
    w = ember.empty(3, 4, device="meta", requires_grad=True)
    loss = (ember.empty(2, 3, device="meta") @ w).tanh().sum()
    loss.backward()
    assert w.grad.shape == (3, 4) and w.grad.device.type == "meta"


def test_module_to_empty():
    with ember.device("meta"):
        model = ember.nn.Sequential(ember.nn.Linear(4, 8), ember.nn.BatchNorm1d(8))
    assert all(p.device.type == "meta" for p in model.parameters())
    assert model[1].running_mean.device.type == "meta"
    out = model(ember.empty(5, 4, device="meta"))
    assert out.shape == (5, 8)
    same = model.to_empty(device="cpu")
    assert same is model
    params = dict(model.named_parameters())
    assert all(p.device.type == "cpu" for p in params.values())
    assert isinstance(params["0.weight"], ember.nn.Parameter) and params["0.weight"].requires_grad
    assert model[1].running_var.shape == (8,)
    model[0].reset_parameters()
    assert model(ember.ones(5, 4)).shape == (5, 8)
