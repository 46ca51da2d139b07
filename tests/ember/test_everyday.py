"""Issue 15's everyday helpers against PyTorch: ``ember.testing``, determinism and precision
switches, ``ember.backends`` flags, ``ember.functional``, ``ember.hub``, ``utils.benchmark``,
safe globals and parameter swapping."""

import re

import numpy as np
import pytest
import torch

import ember
from ember.testing import assert_close, make_tensor


def _to_torch(x):
    if isinstance(x, ember.Tensor):
        name = str(x.dtype).split(".")[1]
        wide = x.to(ember.float32) if name == "bfloat16" else x  # NumPy has no bfloat16
        return torch.from_numpy(np.array(wide.numpy())).to(getattr(torch, name))
    if isinstance(x, list):
        return [_to_torch(v) for v in x]
    if isinstance(x, dict):
        return {k: _to_torch(v) for k, v in x.items()}
    return x


def _message(fn, a, b, **kw):
    try:
        fn(a, b, **kw)
    except (AssertionError, ValueError, TypeError) as error:
        return type(error).__name__, re.sub(r"\b(torch|ember)\.", "", str(error))
    return None


E = ember
CASES = [
    (lambda: (E.tensor([1.0, 2, 3]), E.tensor([1.0, 2.5, 3])), {}),
    (lambda: (E.tensor([1.0, 2, 3]), E.tensor([1.0, 2 + 1e-7, 3])), {}),
    (lambda: (E.tensor([1, 2, 3]), E.tensor([1, 4, 3])), {}),
    (lambda: (E.tensor([[1.0, 2], [3, 4]]), E.tensor([[1.0, 2], [3, 9]])), {}),
    (lambda: (E.tensor([1.0, 2], dtype=E.float64), E.tensor([1.0, 2 + 1e-6], dtype=E.float64)), {}),
    (lambda: (E.tensor([1.0, 2], dtype=E.float16), E.tensor([1.0, 2.001], dtype=E.float16)), {}),
    (lambda: (E.tensor([1.0, 2], dtype=E.bfloat16), E.tensor([1.0, 2.5], dtype=E.bfloat16)), {}),
    (lambda: (E.tensor([1.0, 2]), E.tensor([1.0, 2.5])), {"rtol": 0.3, "atol": 0.0}),
    (lambda: (E.tensor([1.0, 2]), E.tensor([1.0, 2.5])), {"rtol": 0.1}),
    (lambda: (E.tensor([1.0, float("nan")]), E.tensor([1.0, float("nan")])), {}),
    (lambda: (E.tensor([1.0, float("nan")]), E.tensor([1.0, float("nan")])), {"equal_nan": True}),
    (lambda: (E.tensor(True), E.tensor(False)), {}),
    (lambda: (E.tensor(1.0), E.tensor(1.5)), {}),
    (lambda: (1.0, 1.5), {}),
    (lambda: (3, 4), {}),
    (lambda: (1, 1.0), {}),
    (lambda: (E.ones(2), E.ones(3)), {}),
    (lambda: (E.ones(2), E.ones(2, dtype=E.float64)), {}),
    (lambda: (E.ones(2), E.ones(2, dtype=E.float64) * 1.5), {"check_dtype": False}),
    (lambda: ([E.ones(2), E.ones(1)], [E.ones(2), E.zeros(1)]), {}),
    (lambda: ({"a": E.ones(2)}, {"a": E.zeros(2)}), {}),
    (lambda: (E.ones(2), E.zeros(2)), {"msg": "custom"}),
    (lambda: (E.zeros(2, 3), E.zeros(2, 3)), {}),
]


@pytest.mark.parametrize("case", range(len(CASES)))
def test_assert_close_matches_torch(case):
    make, kw = CASES[case]
    a, b = make()
    ours = _message(assert_close, a, b, **kw)
    theirs = _message(torch.testing.assert_close, _to_torch(a), _to_torch(b), **kw)
    assert ours == theirs


def test_assert_close_callable_msg_and_type_error():
    with pytest.raises(AssertionError, match=r"^wrapped: Tensor-likes are not close!"):
        assert_close(E.ones(2), E.zeros(2), msg=lambda m: "wrapped: " + m)
    with pytest.raises(TypeError, match="No comparison pair"):
        assert_close(E.ones(2), [1.0, 1.0])


@pytest.mark.parametrize(
    "dtype,low,high,lo,hi",
    [("float32", None, None, -9, 9), ("float64", 0, 1, 0, 1), ("int64", None, None, -9, 9),
     ("uint8", None, None, 0, 9), ("int8", -1000, 1000, -128, 127), ("bfloat16", -2, 2, -2, 2)],
)  # fmt: skip
def test_make_tensor_ranges(dtype, low, high, lo, hi):
    t = make_tensor(40, 50, dtype=getattr(ember, dtype), device="cpu", low=low, high=high)
    ref = torch.testing.make_tensor(
        40, 50, dtype=getattr(torch, dtype), device="cpu", low=low, high=high
    )
    assert tuple(t.shape) == tuple(ref.shape) == (40, 50)
    assert str(t.dtype).split(".")[1] == str(ref.dtype).split(".")[1]
    values = t.to(ember.float64).numpy()
    assert values.min() >= lo and values.max() <= hi
    assert len(np.unique(values)) > 5  # random, not a constant


def test_make_tensor_flags():
    t = make_tensor((3, 4), dtype=ember.float32, device="cpu", noncontiguous=True,
                    exclude_zero=True, requires_grad=True)  # fmt: skip
    ref = torch.testing.make_tensor((3, 4), dtype=torch.float32, device="cpu", noncontiguous=True)
    assert t.is_contiguous() == ref.is_contiguous() is False
    assert t.requires_grad and bool((t != 0).all())
    b = make_tensor(100, dtype=ember.bool, device="cpu")
    assert b.dtype == ember.bool and 0 < int(b.sum()) < 100
    z = make_tensor(1000, dtype=ember.int64, device="cpu", low=-1, high=1, exclude_zero=True)
    assert bool((z != 0).all())
    for fn, dt in ((make_tensor, ember.int64), (torch.testing.make_tensor, torch.int64)):
        with pytest.raises(ValueError, match="requires_grad"):
            fn(2, dtype=dt, device="cpu", requires_grad=True)
    with pytest.raises(ValueError, match=r"low.*less than or equal"):
        make_tensor(2, dtype=ember.float32, device="cpu", low=2, high=1)


@pytest.fixture
def restore_switches():
    yield
    for lib in (ember, torch):
        lib.use_deterministic_algorithms(False)
        lib.set_float32_matmul_precision("highest")
        lib.backends.cuda.matmul.allow_tf32 = False


def test_deterministic_algorithms_switch(restore_switches):
    for lib in (ember, torch):
        seen = [(lib.are_deterministic_algorithms_enabled(),
                 lib.is_deterministic_algorithms_warn_only_enabled())]  # fmt: skip
        lib.use_deterministic_algorithms(True, warn_only=True)
        seen.append((lib.are_deterministic_algorithms_enabled(),
                     lib.is_deterministic_algorithms_warn_only_enabled()))  # fmt: skip
        lib.use_deterministic_algorithms(True)
        seen.append((lib.are_deterministic_algorithms_enabled(),
                     lib.is_deterministic_algorithms_warn_only_enabled()))  # fmt: skip
        with pytest.raises(TypeError, match=r"argument 'mode'.*must be bool, not str"):
            lib.use_deterministic_algorithms("yes")
        if lib is ember:
            ours = seen
    assert ours == seen == [(False, False), (True, True), (True, False)]


def test_float32_matmul_precision(restore_switches):
    for lib in (ember, torch):
        seen = [lib.get_float32_matmul_precision()]
        for value in ("high", "medium", "highest"):
            lib.set_float32_matmul_precision(value)
            seen.append((lib.get_float32_matmul_precision(), lib.backends.cuda.matmul.allow_tf32))
        with pytest.warns(UserWarning, match="low is not one of 'highest', 'high', or 'medium'"):
            lib.set_float32_matmul_precision("low")
        lib.backends.cuda.matmul.allow_tf32 = True  # the same switch, seen from the other side
        seen.append(lib.get_float32_matmul_precision())
        if lib is ember:
            ours = seen
    assert ours == seen


FLAGS = [("cudnn", "enabled"), ("cudnn", "benchmark"), ("cudnn", "deterministic"),
         ("cudnn", "allow_tf32"), ("cuda.matmul", "allow_tf32"),
         ("cuda.matmul", "allow_bf16_reduced_precision_reduction"),
         ("cuda.matmul", "allow_fp16_reduced_precision_reduction"),
         ("mkldnn", "enabled")]  # fmt: skip


@pytest.mark.parametrize("where,flag", FLAGS)
def test_backend_flags_default_and_settable(where, flag):
    def holder(lib):
        obj = lib.backends
        for part in where.split("."):
            obj = getattr(obj, part)
        return obj

    ours, theirs = holder(ember), holder(torch)
    default = getattr(theirs, flag)
    assert getattr(ours, flag) == default
    try:
        setattr(ours, flag, not default)
        assert getattr(ours, flag) is (not default)
    finally:
        setattr(ours, flag, default)


def test_backend_availability_queries():
    b = ember.backends
    assert b.mps.is_available() is torch.backends.mps.is_available() is False
    assert b.cudnn.is_available() is False and b.cudnn.version() is None
    assert b.mkldnn.is_available() is False and b.mkl.is_available() is False
    assert isinstance(b.openmp.is_available(), bool) and isinstance(b.cuda.is_built(), bool)
    with pytest.raises(AttributeError, match=r"no switch cudnn\.benchmrk"):
        b.cudnn.benchmrk = True


@pytest.mark.parametrize("name", ember.backends.SUBMODULES)
def test_backend_switches_import_as_modules(name):
    # `import torch.backends.cudnn as cudnn` is how scripts reach them (the ImageNet example)
    import importlib

    import torch.backends  # noqa: F401  (the oracle: each name is a module there too)

    importlib.import_module(f"torch.backends.{name}")
    ours = importlib.import_module(f"ember.backends.{name}")
    assert ours is getattr(ember.backends, name)
    namespace: dict = {}
    exec(
        f"import ember.backends.{name} as alias\nfrom ember.backends import {name} as other",
        namespace,
    )
    assert namespace["alias"] is namespace["other"] is ours


def test_xnnpack_flag_is_read_only_as_torch():
    import torch.backends.xnnpack

    assert ember.backends.xnnpack.enabled is False
    for lib in (ember.backends.xnnpack, torch.backends.xnnpack):
        with pytest.raises(RuntimeError, match="Assignment not supported"):
            lib.enabled = True


def _t(x):
    return torch.from_numpy(np.array(x.numpy()))


def test_functional_names_are_ember_functions():
    import torch.functional as tf

    F = ember.functional
    ported = [n for n in tf.__all__ if hasattr(F, n)]
    assert set(tf.__all__) == set(ported)
    for name in ported:
        if hasattr(ember, name):
            assert getattr(F, name) is getattr(ember, name)


@pytest.mark.parametrize(
    "shape_a,shape_b,dims",
    [((3, 4, 5), (4, 5, 2), 2), ((3, 4), (4, 2), 1), ((2, 3), (4,), 0),
     ((3, 4, 5), (5, 3, 2), ([0, 2], [1, 0])), ((3, 4, 5), (5, 2), ([-1], [0]))],
)  # fmt: skip
def test_tensordot_matches_torch(shape_a, shape_b, dims):
    a = ember.randn(*shape_a, dtype=ember.float64, requires_grad=True)
    b = ember.randn(*shape_b, dtype=ember.float64)
    ours = ember.functional.tensordot(a, b, dims)
    ta = _t(a.detach()).requires_grad_()
    theirs = torch.tensordot(ta, _t(b), dims)
    np.testing.assert_allclose(ours.detach().numpy(), theirs.detach().numpy(), rtol=1e-12)
    ours.sum().backward()
    theirs.sum().backward()
    np.testing.assert_allclose(a.grad.numpy(), ta.grad.numpy(), rtol=1e-12)


def test_tensordot_errors_match_torch():
    for lib, fn in ((ember, ember.functional.tensordot), (torch, torch.tensordot)):
        with pytest.raises(RuntimeError, match="contracted dimensions need to match"):
            fn(lib.ones(2, 3), lib.ones(4, 2), 1)


def test_tensordot_out_matches_torch():
    for lib in (ember, torch):
        a, b = lib.ones(3, 4, requires_grad=True), lib.ones(4, 2)
        out = lib.empty(0)
        assert lib.tensordot(a, b, 1, out=out) is out and out.shape == (3, 2)
        assert out.requires_grad and out.tolist() == [[4.0] * 2] * 3  # a recorded copy
        with pytest.raises(RuntimeError, match="tensordot: Expected the output tensor to have "
                           "dtype Float, but got an output tensor with dtype Long"):  # fmt: skip
            lib.tensordot(a, b, 1, out=lib.empty(3, 2, dtype=lib.int64))


@pytest.mark.filterwarnings("ignore:.*chain_matmul is deprecated")
def test_chain_matmul_and_unravel_index_match_torch():
    with pytest.warns(UserWarning, match="chain_matmul is deprecated"):
        ember.functional.chain_matmul(ember.ones(2, 2))
    ms = [ember.randn(2, 3, dtype=ember.float64), ember.randn(3, 4, dtype=ember.float64),
          ember.randn(4, 2, dtype=ember.float64)]  # fmt: skip
    ours = ember.functional.chain_matmul(*ms)
    theirs = torch.chain_matmul(*[_t(m) for m in ms])
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-12)
    for lib, fn in ((ember, ember.functional.chain_matmul), (torch, torch.chain_matmul)):
        with pytest.raises(RuntimeError, match="Tensor dimension is 1, expected 2 instead"):
            fn(lib.ones(2, 2), lib.ones(2))
        with pytest.raises(RuntimeError, match="Expected one or more matrices"):
            fn()
    for idx, shape in (([5, 7, -1, 0], (2, 4)), ([11, 3], (3, 2, 2)), (4, 6)):
        ours = ember.functional.unravel_index(ember.tensor(idx), shape)
        theirs = torch.unravel_index(torch.tensor(idx), shape)
        assert [o.tolist() for o in ours] == [t.tolist() for t in theirs]


HUBCONF = '''
"""A hub for the tests."""
import helper_for_hub  # found next to hubconf.py: the directory is on sys.path while loading

dependencies = ["numpy"]


def tiny(width, scale=1.0):
    """A tiny model."""
    import ember

    return ember.nn.Linear(width, width) if scale else helper_for_hub.VALUE


def _private():
    return 0


NOT_CALLABLE = 3
'''


@pytest.fixture
def hub_dir(tmp_path):
    (tmp_path / "hubconf.py").write_text(HUBCONF)
    (tmp_path / "helper_for_hub.py").write_text("VALUE = 'helper'\n")
    return str(tmp_path)


def test_hub_load_local(hub_dir):
    model = ember.hub.load(hub_dir, "tiny", 3, source="local", scale=2.0)
    assert isinstance(model, ember.nn.Linear) and tuple(model.weight.shape) == (3, 3)
    assert ember.hub.load(hub_dir, "tiny", 3, source="local", scale=0) == "helper"
    assert torch.hub.load(hub_dir, "tiny", 3, source="local", scale=0) == "helper"
    assert ember.hub.list(hub_dir) == ["tiny"]
    assert ember.hub.help(hub_dir, "tiny") == "A tiny model."


@pytest.mark.parametrize(
    "model,kw,error",
    [("missing", {"source": "local"}, RuntimeError),
     ("NOT_CALLABLE", {"source": "local"}, RuntimeError),
     (3, {"source": "local"}, ValueError), ("tiny", {"source": "svn"}, ValueError)],
)  # fmt: skip
def test_hub_errors_match_torch(hub_dir, model, kw, error):
    messages = []
    for hub in (ember.hub, torch.hub):
        with pytest.raises(error) as info:
            hub.load(hub_dir, model, 3, **kw)
        messages.append(str(info.value))
    assert messages[0] == messages[1]


def test_hub_missing_dependency_and_no_network(tmp_path):
    (tmp_path / "hubconf.py").write_text(
        "dependencies = ['no_such_module_xyz']\ndef m():\n    pass\n"
    )
    for hub in (ember.hub, torch.hub):
        with pytest.raises(RuntimeError, match="Missing dependencies: no_such_module_xyz"):
            hub.load(str(tmp_path), "m", source="local")
    with pytest.raises(RuntimeError, match="does not download"):
        ember.hub.load("pytorch/vision", "resnet18")
    ember.hub.set_dir(tmp_path / "h")
    try:
        assert ember.hub.get_dir() == str(tmp_path / "h")
    finally:
        ember.hub._hub_dir["value"] = None


def test_measurement_statistics_match_torch():
    from torch.utils.benchmark.utils.common import Measurement as TorchMeasurement
    from torch.utils.benchmark.utils.common import TaskSpec as TorchTaskSpec

    from ember.utils.benchmark import Measurement, TaskSpec

    raw = [1.0e-3, 1.2e-3, 0.9e-3, 1.5e-3, 1.1e-3, 1.05e-3, 2.0e-3]
    for raw_times in (raw, raw[:1], raw[:4], [1e-6] * 5):
        ours = Measurement(10, raw_times, TaskSpec("x + 1", "pass"))
        theirs = TorchMeasurement(10, raw_times, TorchTaskSpec("x + 1", "pass"))
        for attr in ("times", "median", "mean", "iqr"):
            assert getattr(ours, attr) == pytest.approx(getattr(theirs, attr), rel=1e-12), attr
        for attr in ("has_warnings", "significant_figures", "title", "number_per_run"):
            assert getattr(ours, attr) == getattr(theirs, attr), attr
        assert ours.meets_confidence(0.2) == theirs.meets_confidence(0.2)
    tail = lambda m: repr(m).split("\n", 1)[1]  # noqa: E731 - drop the object address line
    spec = ("x+1", "x=2", "", "L", "S", "D")
    assert tail(Measurement(10, raw, TaskSpec(*spec))) == tail(
        TorchMeasurement(10, raw, TorchTaskSpec(*spec))
    )
    assert tail(Measurement(10, raw[:1], TaskSpec(*spec))) == tail(
        TorchMeasurement(10, raw[:1], TorchTaskSpec(*spec))
    )


def test_timer_runs_with_globals_and_setup():
    from ember.utils.benchmark import Timer

    x = ember.ones(8)
    calls = []
    m = Timer("x + x", globals={"x": x}, label="add").blocked_autorange(
        callback=lambda number, spent: calls.append(number), min_run_time=0.02)  # fmt: skip
    assert m.number_per_run >= 1 and sum(m.raw_times) >= 0.02 and m.median > 0
    assert calls and all(n == m.number_per_run for n in calls) and m.title == "add"
    one = Timer("y * 2", setup="y = ember.ones(4)").timeit(50)
    assert one.number_per_run == 50 and len(one.times) == 1 and one.median > 0
    adaptive = Timer("sum(range(100))").adaptive_autorange(min_run_time=0.01, max_run_time=0.5)
    assert len(adaptive.times) >= 1 and adaptive.mean > 0
    with pytest.raises(NotImplementedError, match="blocked_autorange"):
        Timer().autorange()


class SavedConfig:
    def __init__(self, width):
        self.width = width


class RenamedConfig:
    pass


def test_safe_globals_allow_weights_only_loads(tmp_path):
    from ember import serialization as S

    for lib, ser in ((ember, S), (torch, torch.serialization)):
        path = tmp_path / f"{lib.__name__}.pt"
        lib.save({"config": SavedConfig(7), "w": lib.ones(2)}, path)
        ser.clear_safe_globals()
        with pytest.raises(Exception, match="SavedConfig"):
            lib.load(path, weights_only=True)
        with ser.safe_globals([SavedConfig]):
            assert ser.get_safe_globals() == [SavedConfig]
            assert lib.load(path, weights_only=True)["config"].width == 7
        assert ser.get_safe_globals() == []
        ser.add_safe_globals([SavedConfig])
        try:
            loaded = lib.load(path, weights_only=True)
            assert loaded["config"].width == 7 and loaded["w"].tolist() == [1.0, 1.0]
        finally:
            ser.clear_safe_globals()
    with pytest.raises(TypeError, match="callables or"):
        S.add_safe_globals([3])
    # A pair allows an object saved under another name.
    path = tmp_path / "renamed.pt"
    ember.save(SavedConfig(3), path)
    with S.safe_globals([(RenamedConfig, f"{SavedConfig.__module__}.SavedConfig")]):
        loaded = ember.load(path)
    assert type(loaded) is RenamedConfig and loaded.width == 3


def test_swap_tensors_matches_torch():
    for lib in (ember, torch):
        a, b = lib.nn.Parameter(lib.ones(2)), lib.zeros(3, 1)
        a.note = "on a"
        lib.utils.swap_tensors(a, b)
        result = (type(a).__name__, type(b).__name__, tuple(a.shape), tuple(b.shape),
                  b.note, hasattr(a, "note"), a.requires_grad, b.requires_grad)  # fmt: skip
        if lib is ember:
            ours = result
    assert ours == result
    import weakref

    for lib in (ember, torch):
        a, b = lib.ones(1), lib.ones(1)
        ref = weakref.ref(a)  # noqa: F841 - held while swapping
        with pytest.raises(RuntimeError, match="Cannot swap t1 because it has weakref"):
            lib.utils.swap_tensors(a, b)


@pytest.fixture
def future_flags():
    yield
    for lib in (ember, torch):
        lib.__future__.set_swap_module_params_on_conversion(False)
        lib.__future__.set_overwrite_module_params_on_conversion(False)


@pytest.mark.parametrize("mode", ["default", "swap", "overwrite"])
def test_module_conversion_under_future_flags(mode, future_flags):
    results = []
    for lib in (ember, torch):
        fut = lib.__future__
        fut.set_swap_module_params_on_conversion(mode == "swap")
        fut.set_overwrite_module_params_on_conversion(mode == "overwrite")
        assert fut.get_swap_module_params_on_conversion() is (mode == "swap")
        lin = lib.nn.Linear(2, 3)
        lin.weight.grad = lib.ones(3, 2)
        weight, grad = lin.weight, lin.weight.grad
        lin.double()
        name = lambda t: str(t.dtype).split(".")[1]  # noqa: E731
        results.append((lin.weight is weight, lin.weight.grad is grad, name(lin.weight),
                        name(lin.weight.grad), name(weight), type(lin.weight).__name__,
                        lin.weight.requires_grad))  # fmt: skip
    assert results[0] == results[1]


def test_load_mmap_maps_the_file(tmp_path):
    path = tmp_path / "w.pt"
    weights = {"w": torch.arange(12.0).reshape(3, 4), "b": torch.ones(3, dtype=torch.float64)}
    torch.save(weights, path)
    loaded = ember.load(path, mmap=True)
    for key, value in weights.items():
        assert loaded[key].tolist() == value.tolist()
    assert isinstance(loaded["w"]._storage.owner, np.memmap)  # the file's pages, not a copy
    loaded["w"][0, 0] = 100.0  # copy-on-write: the file keeps its bytes
    assert ember.load(path)["w"][0, 0].item() == 0.0
    assert torch.load(path, mmap=True)["w"][0, 0].item() == 0.0
    for lib in (ember, torch):
        with open(path, "rb") as f, pytest.raises(ValueError, match="f must be a file path"):
            lib.load(f, mmap=True)


def test_to_empty_and_assign_load_match_torch():
    results = []
    for lib in (ember, torch):
        with lib.device("meta"):
            lin = lib.nn.Linear(2, 3)
        lin.to_empty(device="cpu")
        shape, device = tuple(lin.weight.shape), str(lin.weight.device)
        state = {
            "weight": lib.ones(3, 2, dtype=lib.float64),
            "bias": lib.zeros(3, dtype=lib.float64),
        }
        lin.load_state_dict(state, assign=True)
        results.append((shape, device, str(lin.weight.dtype).split(".")[1],
                        type(lin.weight).__name__, lin.weight.requires_grad))  # fmt: skip
    assert results[0] == results[1]


def test_cpu_capability_as_torch():
    import torch.backends.cpu

    import ember.backends.cpu

    assert ember.backends.cpu.get_cpu_capability() == torch.backends.cpu.get_cpu_capability()
    levels = ember.backends._cpu_capability
    v3 = {"avx", "avx2", "fma", "bmi1", "bmi2", "f16c", "movbe", "abm", "sse4_2"}
    assert levels(v3 | {"avx512f", "avx512bw", "avx512cd", "avx512dq", "avx512vl"}) == "AVX512"
    assert levels(v3 | {"avx512f"}) == "AVX2"  # AVX-512 without BW/VL: no v4 clone
    assert levels(v3 - {"fma"}) == "DEFAULT"
