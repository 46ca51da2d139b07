"""Tensors over read-only memory (``np.frombuffer(bytes)``, ``np.load(mmap_mode="r")``, arrays
with ``flags.writeable = False``): ``from_numpy`` warns as PyTorch does, and every write path
refuses them with an error naming the op, instead of corrupting a bytes object or crashing."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import warnings

import numpy as np
import pytest

import ember
from ember.dispatcher.optable import OPS

pytestmark = pytest.mark.filterwarnings("ignore:The given NumPy array is not writable")

VALUES = np.arange(1, 7, dtype=np.float32).reshape(2, 3)


def _read_only(dtype=np.float32):
    """A tensor over the memory of a bytes object, and that bytes object."""
    raw = bytes(VALUES.astype(dtype).tobytes())
    return ember.from_numpy(np.frombuffer(raw, dtype=dtype).reshape(2, 3)), raw


def _unchanged(raw: bytes, dtype=np.float32) -> bool:
    return raw == VALUES.astype(dtype).tobytes()


def test_from_numpy_warns_like_torch():
    raw = b"\x00" * 16
    with pytest.warns(UserWarning, match="The given NumPy array is not writable"):
        ember.from_numpy(np.frombuffer(raw, dtype=np.float32))
    with pytest.warns(UserWarning, match="The given NumPy array is not writable"):
        ember.as_tensor(np.frombuffer(raw, dtype=np.float32))


def test_writable_arrays_and_copies_do_not_warn():
    raw = b"\x00" * 16
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ember.from_numpy(np.zeros(4, np.float32))
        copied = ember.tensor(np.frombuffer(raw, dtype=np.float32))
    copied.add_(1)  # a copy is ordinary memory
    assert copied.tolist() == [1.0] * 4


def _mutating_call(name, op, target):
    """A call of the table's in-place op ``name`` writing into ``target``."""
    same = ember.ones(2, 3, dtype=target.dtype)
    if name == "copy_":
        return lambda: op(target, same)
    if name == "fill_":
        return lambda: op(target, 0)
    if name == "put_":
        return lambda: op(target, ember.tensor([0]), ember.tensor([9], dtype=target.dtype), False)
    arity = op.inplace_of.info.get("arity", 1) if op.inplace_of is not None else 1
    return lambda: op(target, *[same] * (arity - 1))


MUTATING = sorted(name for name, op in OPS.items() if op.mutates)


@pytest.mark.parametrize("name", MUTATING)
def test_every_in_place_op_refuses_read_only_memory(name):
    """Generated from the op table: a new in-place op is covered (or fails here)."""
    op = OPS[name]
    dtype = np.float32 if ember.float32 in op.dtypes else np.int64
    target, raw = _read_only(dtype)
    with pytest.raises(RuntimeError, match=rf"^{name}\(\): the tensor's memory is read-only"):
        _mutating_call(name, op, target)()
    assert _unchanged(raw, dtype)


def test_the_fast_in_place_path_refuses_too():
    """``add_`` memoises a fast path on its first full call; read-only targets must not take it."""
    scratch = ember.zeros(2, 3)
    for _ in range(2):
        scratch.add_(ember.ones(2, 3))
        scratch.mul_(0.5)
    target, raw = _read_only()
    for call in (lambda: target.add_(ember.ones(2, 3)), lambda: target.mul_(0.5)):
        with pytest.raises(RuntimeError, match="read-only"):
            call()
    assert _unchanged(raw)


WRITES = [
    ("setitem-int", lambda t: t.__setitem__(0, 5.0)),
    ("setitem-slice", lambda t: t.__setitem__((slice(None), 1), ember.zeros(2))),
    ("setitem-mask", lambda t: t.__setitem__(t > 2, 0.0)),
    ("setitem-index", lambda t: t.__setitem__(ember.tensor([1]), 0.0)),
    ("copy_", lambda t: t.copy_(ember.zeros(2, 3))),
    ("copy_-broadcast", lambda t: t.copy_(ember.zeros(3))),
    ("fill_", lambda t: t.fill_(0)),
    ("zero_", lambda t: t.zero_()),
    ("masked_fill_", lambda t: t.masked_fill_(t > 2, 0.0)),
    ("uniform_", lambda t: t.uniform_()),
    ("normal_", lambda t: t.normal_()),
    ("view-add_", lambda t: t.view(6)[2:].add_(1)),
    ("transposed-mul_", lambda t: t.t().mul_(2)),
    ("detached-sub_", lambda t: t.detach().sub_(1)),
    ("data-div_", lambda t: t.data.div_(2)),
    ("clamp_", lambda t: t.clamp_(0, 1)),
    ("index_add_", lambda t: t.index_add_(0, ember.tensor([0]), ember.ones(1, 3))),
    ("scatter_", lambda t: t.scatter_(0, ember.tensor([[0, 1, 0]]), ember.ones(1, 3))),
]


@pytest.mark.parametrize("write", [w[1] for w in WRITES], ids=[w[0] for w in WRITES])
def test_every_write_path_refuses_read_only_memory(write):
    target, raw = _read_only()
    with pytest.raises(RuntimeError, match="the tensor's memory is read-only"):
        write(target)
    assert _unchanged(raw)


def test_numpy_view_of_a_read_only_tensor_is_read_only():
    target, raw = _read_only()
    view = target.numpy()
    assert not view.flags.writeable
    with pytest.raises(ValueError, match="read-only"):
        view[0, 0] = 5
    assert _unchanged(raw)


def test_reads_work_and_clone_is_writable():
    target, raw = _read_only()
    assert (target * 2).tolist() == (VALUES * 2).tolist()
    assert target.sum().item() == 21.0
    copy = target.clone()
    copy.add_(1)
    assert copy.tolist() == (VALUES + 1).tolist()
    assert _unchanged(raw)


@pytest.mark.parametrize(
    "make",
    [
        lambda ps: ember.optim.SGD(ps, lr=0.1),  # the loop's step, one fused call on CPU
        lambda ps: ember.optim.SGD(ps, lr=0.1, momentum=0.9, fused=True),
        lambda ps: ember.optim.AdamW(ps, lr=0.1, fused=True),
        lambda ps: ember.optim.Adam(ps, lr=0.1),
    ],
    ids=["sgd", "sgd-fused", "adamw-fused", "adam"],
)
def test_optimizer_step_on_read_only_parameter_raises(make):
    target, raw = _read_only()
    weight = ember.nn.Parameter(target)
    weight.grad = ember.ones(2, 3)
    with pytest.raises(RuntimeError, match="read-only"):
        make([weight]).step()
    assert _unchanged(raw)


def test_load_state_dict_into_read_only_parameter_raises():
    layer = ember.nn.Linear(3, 2)
    target, raw = _read_only()
    layer.weight.data = target
    with pytest.raises(RuntimeError, match="read-only"):
        layer.load_state_dict({"weight": ember.zeros(2, 3), "bias": ember.zeros(2)})
    assert _unchanged(raw)


def test_writable_flag_false_on_a_normal_array():
    array = np.ones(3, np.float32)
    array.flags.writeable = False
    with pytest.warns(UserWarning):
        t = ember.from_numpy(array)
    with pytest.raises(RuntimeError, match=r"^add_\(\).*read-only.*clone\(\) it first"):
        t.add_(1)
    assert array.tolist() == [1.0, 1.0, 1.0]


_MMAP_SCRIPT = """
import sys, warnings
import numpy as np
import ember

warnings.simplefilter("ignore")
path = sys.argv[1]
np.save(path, np.arange(4, dtype=np.float32))
t = ember.from_numpy(np.load(path, mmap_mode="r"))
refused = 0
for write in (
    lambda: t.add_(1),
    lambda: t.copy_(ember.zeros(4)),
    lambda: t.fill_(3),
    lambda: t.__setitem__(0, 9.0),
    lambda: t.uniform_(),
    lambda: t.put_(ember.tensor([1]), ember.tensor([5.0])),
    lambda: ember.optim.Adam([ember.nn.Parameter(t)], lr=1.0).step(),
):
    try:
        write()
    except RuntimeError as exc:
        refused += "read-only" in str(exc)
print(refused, (t * 2).tolist())
"""


def test_read_only_mmap_never_crashes(tmp_path):
    """A write into a read-only mapping is a SIGSEGV: run it in a subprocess."""
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(_MMAP_SCRIPT), str(tmp_path / "a.npy")],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, (done.returncode, done.stderr)
    assert done.stdout.split(" ", 1)[0] == "6"  # Adam's step has no grad: nothing to write
    assert done.stdout.split(" ", 1)[1].strip() == "[0.0, 2.0, 4.0, 6.0]"
