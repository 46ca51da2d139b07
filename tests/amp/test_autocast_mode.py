"""ember.autocast as PyTorch's: context manager and decorator, nesting and disabled regions,
thread-local state, the weight-cast cache, casts recorded by autograd, custom_fwd/custom_bwd,
library ops, and the deprecated ember.cuda.amp / ember.cpu.amp spellings."""

from __future__ import annotations

import pickle
import threading
import warnings

import pytest

import ember
import ember.library as L
from ember.dispatcher import layers
from ember.dispatcher.autocast import LAYER
from ember.dispatcher.layers import STACK, Layer

F = ember.nn.functional


class Casts(Layer):
    """Above autocast: counts the ``_to_copy`` calls (casts) per source tensor."""

    name = "casts"
    priority = 250

    def __init__(self):
        self.sources: list = []

    def wants(self, op, args) -> bool:
        return op.name == "_to_copy"

    def handle(self, op, args):
        self.sources.append(args[0])
        return op.redispatch(self, args)


def test_context_manager_and_decorator():
    a, b = ember.randn(3, 4), ember.randn(4, 2)
    with ember.autocast("cpu"):
        assert ember.is_autocast_enabled("cpu") and not ember.is_autocast_enabled("cuda")
        assert ember.get_autocast_dtype("cpu") is ember.bfloat16
        assert (a @ b).dtype is ember.bfloat16
    assert not ember.is_autocast_enabled("cpu") and (a @ b).dtype is ember.float32

    @ember.autocast("cpu", dtype=ember.float16)
    def product(x, y):
        return ember.mm(x, y)

    assert product(a, b).dtype is ember.float16
    assert ember.amp.autocast is ember.autocast
    assert LAYER not in STACK.layers  # off everywhere: the layer is out of the stack


def test_nested_and_disabled_regions_restore_state():
    a = ember.randn(2, 2)
    with ember.autocast("cpu"):
        with ember.autocast("cpu", enabled=False):
            assert not ember.is_autocast_enabled("cpu")
            assert ember.mm(a, a).dtype is ember.float32
            with ember.autocast("cpu", dtype=ember.float16):
                assert ember.mm(a, a).dtype is ember.float16
            assert ember.mm(a, a).dtype is ember.float32
        assert ember.mm(a, a).dtype is ember.bfloat16
        with pytest.raises(ZeroDivisionError), ember.autocast("cpu", dtype=ember.float16):
            raise ZeroDivisionError
        assert ember.get_autocast_dtype("cpu") is ember.bfloat16
        assert ember.mm(a, a).dtype is ember.bfloat16
    assert not ember.is_autocast_enabled("cpu")


def test_state_is_thread_local():
    a = ember.randn(2, 2)
    seen = {}
    entered, release = threading.Event(), threading.Event()

    def other():
        seen["outside"] = (ember.is_autocast_enabled("cpu"), ember.mm(a, a).dtype)
        with ember.autocast("cpu", dtype=ember.float16):
            entered.set()
            release.wait(10)
            seen["inside"] = ember.mm(a, a).dtype

    with ember.autocast("cpu"):
        thread = threading.Thread(target=other)
        thread.start()
        entered.wait(10)
        assert ember.mm(a, a).dtype is ember.bfloat16  # the other thread's float16 stays there
        release.set()
        thread.join()
    assert seen == {"outside": (False, ember.float32), "inside": ember.float16}
    assert LAYER not in STACK.layers


def test_weight_cast_cached_per_region():
    """A parameter used by three products is cast once per region; activations every time."""
    w = ember.nn.Parameter(ember.randn(4, 4))
    x = ember.randn(2, 4)
    with layers.installed(Casts()) as casts:
        with ember.autocast("cpu"):
            y = x
            for _ in range(3):
                y = F.linear(y, w)
        weight_casts = sum(s is w for s in casts.sources)
        assert weight_casts == 1
        casts.sources.clear()
        with ember.autocast("cpu"):  # a new region casts again
            F.linear(x, w)
        assert sum(s is w for s in casts.sources) == 1
        casts.sources.clear()
        with ember.autocast("cpu", cache_enabled=False):
            F.linear(F.linear(x, w), w)
        assert sum(s is w for s in casts.sources) == 2
    y.float().sum().backward()  # the cached cast is in the graph: the gradient reaches w
    assert w.grad is not None and w.grad.dtype is ember.float32


def test_casts_are_recorded_and_inputs_saved_in_lower_precision():
    w = ember.nn.Parameter(ember.randn(3, 5))
    x = ember.randn(4, 5)
    with ember.autocast("cpu"):
        y = F.linear(x, w)
        loss = F.cross_entropy(y, ember.tensor([0, 1, 2, 0]))
    assert y.dtype is ember.bfloat16 and loss.dtype is ember.float32
    node = y.grad_fn  # linear without bias: the mm node, which saved the input for w's grad
    assert node.op.name == "mm"
    saved = [s.unpack(node) for s in node.ctx._saved.values()]
    assert saved and all(t.dtype is ember.bfloat16 and t.shape == x.shape for t in saved)
    loss.backward()
    assert w.grad.dtype is ember.float32 and w.grad.shape == w.shape


def test_ops_run_with_autocast_off_inside():
    seen = []

    def body(x):
        seen.append(ember.is_autocast_enabled("cpu"))
        return ember.mm(x, x)  # not cast again: autocast is off inside

    L.define("amptest::inner(Tensor x) -> Tensor", decomposition=body)
    L.register_autocast("amptest::inner", "cpu", ember.float16)
    x = ember.randn(2, 2)
    with ember.autocast("cpu"):
        out = ember.ops.amptest.inner(x)
        assert ember.is_autocast_enabled("cpu")
    assert seen == [False] and out.dtype is ember.float16
    L.register_autocast("amptest::inner", "cpu", ember.float16)  # the same rule again: no-op
    with pytest.raises(ValueError, match="cast_inputs"):
        L.register_autocast("amptest::inner", "cpu", "opaque")


def test_custom_fwd_and_custom_bwd():
    states = {}

    class Square(ember.autograd.Function):
        @staticmethod
        @ember.amp.custom_fwd(device_type="cpu", cast_inputs=ember.float32)
        def forward(ctx, x):
            states["forward"] = (x.dtype, ember.is_autocast_enabled("cpu"))
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        @ember.amp.custom_bwd(device_type="cpu")
        def backward(ctx, g):
            states["backward"] = ember.is_autocast_enabled("cpu")
            (x,) = ctx.saved_tensors
            return 2 * x * g

    x = ember.randn(3, dtype=ember.bfloat16, requires_grad=True)
    with ember.autocast("cpu"):
        y = Square.apply(x)
    y.sum().backward()
    assert states == {"forward": (ember.float32, False), "backward": False}
    assert x.grad.dtype is ember.bfloat16


def test_arguments_and_warnings_as_pytorch():
    with pytest.raises(ValueError, match="Expected `device_type` of type `str`"):
        ember.autocast(ember.device("cpu"))
    with pytest.raises(RuntimeError, match="unsupported autocast device_type 'foo'"):
        ember.autocast("foo")
    with pytest.warns(UserWarning, match="CPU Autocast only supports dtypes of"):
        region = ember.autocast("cpu", dtype=ember.float32)
    with region:
        assert not ember.is_autocast_enabled("cpu")
    if not ember.cuda.is_available():
        with pytest.warns(UserWarning, match="CUDA is not available"), ember.autocast("cuda"):
            assert not ember.is_autocast_enabled("cuda")
    with pytest.raises(TypeError, match="requires a callable"):
        ember.autocast("cpu")(3)
    ember.set_autocast_enabled("cpu", True)
    try:
        assert ember.is_autocast_enabled("cpu") and LAYER in STACK.layers
    finally:
        ember.set_autocast_enabled("cpu", False)
    assert LAYER not in STACK.layers
    assert ember.is_autocast_cache_enabled()


def test_banned_op_names_the_safe_one(emulated_cuda):
    p = ember.rand(4, device="cuda")
    with ember.autocast("cuda"), pytest.raises(RuntimeError, match="with_logits"):
        F.binary_cross_entropy(p, p)


def test_explicit_dtype_argument_is_kept(emulated_cuda):
    x = ember.randn(3, device="cuda", dtype=ember.float16)
    with ember.autocast("cuda"):
        assert ember.sum(x).dtype is ember.float32  # fp32_set_opt_dtype
        assert ember.sum(x, dtype=ember.float16).dtype is ember.float16
        assert ember.softmax(x, 0).dtype is ember.float32


def test_deprecated_spellings_warn_and_work():
    import ember.cpu.amp
    import ember.cuda.amp

    assert hasattr(ember.cuda, "amp") and hasattr(ember.cpu, "amp")
    assert not hasattr(ember.xpu, "amp")  # as torch.xpu
    with pytest.warns(FutureWarning, match=r"ember\.cpu\.amp\.autocast\(args\.\.\.\)` is deprec"):
        region = ember.cpu.amp.autocast()
    with region:
        assert ember.mm(ember.ones(2, 2), ember.ones(2, 2)).dtype is ember.bfloat16
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        scaler = ember.cuda.amp.GradScaler(enabled=False)  # nanoGPT's train.py on a CPU
    assert [w.category for w in caught] == [FutureWarning]
    assert not scaler.is_enabled()
    assert type(pickle.loads(pickle.dumps(scaler))) is ember.cuda.amp.GradScaler
    if not ember.cuda.is_available():
        with pytest.warns(UserWarning, match="CUDA is not available.  Disabling"):
            assert not ember.cuda.amp.GradScaler().is_enabled()
    with pytest.warns(FutureWarning, match="custom_fwd"):
        ember.cuda.amp.custom_fwd(lambda ctx, x: x)
