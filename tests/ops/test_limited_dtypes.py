"""PyTorch's limited-support dtypes (float8, uint16/32/64) through every op of the table.

For each row with a sample generator and a PyTorch counterpart, the row's samples are drawn for a
*proxy* dtype (float32 stands for the float8 formats, uint8 for the wide unsigned ones) and their
proxy tensors (and dtype arguments) recast to the limited dtype. PyTorch's CPU build is the
oracle: where torch runs the call, ember must give the same values, dtype and shape; where torch
raises, ember must raise an exception of the same type. Nothing here lists what torch supports:
the call decides. A sample is surveyed only when torch and ember agree on it with the proxy dtype
(same result structure, shapes and dtypes), so that the sample is the same call in both
libraries; the rest are counted, not compared.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import ember
from ember import _dtype as dt
from ember.dispatcher.opdef import Kind
from ember.dispatcher.optable import OPS

from .limited_survey import DEVICE_REFUSES, KNOWN_GAPS, SUPERSET
from .samples import generator_name, samples
from .sampling import Arr, Seed

torch = pytest.importorskip("torch")

SAMPLES = 2  # per row and dtype: the generators put different shapes first and last
ML_DTYPES = {d.np for d in (*dt.FLOAT8, dt.bfloat16)}
PROXY = {**dict.fromkeys(dt.FLOAT8, dt.float32), **dict.fromkeys(dt.WIDE_UNSIGNED, dt.uint8)}


def torch_callable(name: str):
    """torch's function of the row's name (in-place rows: the Tensor method), or None."""
    for space in (torch, torch.nn.functional, torch.special, torch.linalg, torch.Tensor):
        found = getattr(space, name, None)
        if callable(found):
            return found
    return None


ROWS = [
    name
    for name, op in OPS.items()
    if generator_name(op) is not None
    and (op.inplace_of or op).kind is not Kind.RANDOM
    and (op.inplace_of or op).defn.reference is not None  # defined values (not empty's)
    and torch_callable(name) is not None
]


def _torch_tensor(values: np.ndarray, dtype):
    """A torch tensor of ``values`` recast to ``dtype`` (an ember dtype)."""
    if values.dtype in ML_DTYPES:  # torch cannot read them: their float32 values instead
        values = values.astype(np.float32)
    return torch.from_numpy(np.array(values, order="C")).to(getattr(torch, dtype.name))


def _argument(arg, proxy, target, lib: str):
    """One sample argument for ``lib`` ('torch' or 'ember'), ``proxy`` tensors made ``target``."""
    if isinstance(arg, Arr):
        wanted = target if arg.values.dtype == proxy.np else dt.from_numpy_dtype(arg.values.dtype)
        if lib == "torch":
            return _torch_tensor(arg.values, wanted)
        return ember.from_numpy(np.array(arg.values, order="C")).to(wanted)
    if isinstance(arg, list) and any(isinstance(a, Arr) for a in arg):
        return [_argument(a, proxy, target, lib) for a in arg]
    if isinstance(arg, dt.dtype):
        chosen = target if arg is proxy else arg
        return getattr(torch, chosen.name) if lib == "torch" else chosen
    return arg


def _host(value):
    """A result as a comparable host value: (dtype name, shape, float64/int64/object array)."""
    if isinstance(value, (ember.Tensor, torch.Tensor)):
        name = str(value.dtype).split(".")[-1]
        t = value.detach().cpu()
        shape = tuple(t.shape)
        if name == "uint64":  # above int64: compare as Python ints
            return name, shape, np.array(t.reshape(-1).tolist(), dtype=object)
        lib = torch if isinstance(value, torch.Tensor) else ember
        wide = lib.float64 if t.dtype.is_floating_point else lib.int64
        return name, shape, np.asarray(t.to(wide).numpy())
    if isinstance(value, (tuple, list)):
        return [_host(v) for v in value]
    return value


def _outcome(fn, args):
    """``(result as host values, None)`` or ``(None, exception)``."""
    try:
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            return _host(fn(*args)), None
    except Exception as exc:  # the oracle's exception type is compared
        return None, exc


def _structure(host):
    if isinstance(host, list):
        return [_structure(h) for h in host]
    if isinstance(host, tuple) and len(host) == 3:
        return host[:2]
    return type(host).__name__


def _differs(got, want) -> str | None:
    """Why ember's host result differs from torch's, or None."""
    if isinstance(want, list):
        if not isinstance(got, list) or len(got) != len(want):
            return f"{_structure(got)} vs torch {_structure(want)}"
        return next((d for g, w in zip(got, want) if (d := _differs(g, w))), None)
    if not (isinstance(want, tuple) and len(want) == 3):
        return None if got == want else f"{got!r} vs torch {want!r}"
    if not (isinstance(got, tuple) and len(got) == 3) or got[:2] != want[:2]:
        return f"{_structure(got)} vs torch {_structure(want)}"
    g, w = got[2], want[2]
    if w.dtype == object or w.dtype.kind in "biu":
        same = np.array_equal(g, w)
    else:
        same = np.allclose(g, w, rtol=1e-6, atol=1e-6, equal_nan=True)
    return None if same else f"values {g.ravel()[:6]} vs torch {w.ravel()[:6]}"


def _torch_call(op, fn, args):
    """``fn`` called positionally, or, where torch's signature takes ember's schema arguments
    only by name (``torch.sum(x, dim=None, keepdim=False, dtype=None)``), by keyword; None when
    torch takes the sample neither way."""
    names = [arg.name for arg in op.schema.args]

    def by_name(*values):
        return fn(values[0], **dict(zip(names[1:], values[1:])))

    for call in (fn, by_name):
        if not isinstance(_outcome(call, args)[1], TypeError):
            return call
    return None


def _same_call(op, fn, sample, proxy) -> bool:
    """Whether torch and ember agree on the sample with the proxy dtype (the same call)."""
    if any(isinstance(a, Seed) for a in sample.args):
        return False
    call = _torch_call(op, fn, [_argument(a, proxy, proxy, "torch") for a in sample.args])
    if call is None:
        return False
    want, torch_error = _outcome(call, [_argument(a, proxy, proxy, "torch") for a in sample.args])
    got, _ = _outcome(op, [_argument(a, proxy, proxy, "ember") for a in sample.args])
    return torch_error is None and _structure(got) == _structure(want)


def torch_refusals(name: str, dtype) -> list[Exception]:
    """torch's exceptions for the row's surveyed samples recast to ``dtype``."""
    op, fn, proxy = OPS[name], torch_callable(name), PROXY[dtype]
    errors = []
    for sample in samples(op, proxy, "cpu", np.random.default_rng(0)):
        if not _same_call(op, fn, sample, proxy):
            continue
        call = _torch_call(op, fn, [_argument(a, proxy, proxy, "torch") for a in sample.args])
        _, error = _outcome(call, [_argument(a, proxy, dtype, "torch") for a in sample.args])
        if error is not None:
            errors.append(error)
    return errors


def survey(name: str, device: str, dtype) -> list[str]:
    """The mismatches of row ``name`` with ``dtype`` on ``device`` against torch's CPU."""
    op, fn, proxy = OPS[name], torch_callable(name), PROXY[dtype]
    rng = np.random.default_rng(0)
    try:
        drawn = samples(op, proxy, "cpu", rng)
    except (ValueError, KeyError, TypeError):
        return []  # the generator has no samples for the proxy dtype
    found = []
    for sample in drawn[:1] + drawn[-1:] if len(drawn) > 1 else drawn:
        if not _same_call(op, fn, sample, proxy):
            continue
        args_of = sample.args
        call = _torch_call(op, fn, [_argument(a, proxy, proxy, "torch") for a in sample.args])
        want, torch_error = _outcome(call, [_argument(a, proxy, dtype, "torch") for a in args_of])
        args = [_argument(a, proxy, dtype, "ember") for a in sample.args]
        if device != "cpu":
            args = [a.to(device) if isinstance(a, ember.Tensor) else a for a in args]
        got, error = _outcome(op, args)
        what = f"{name}[{dtype.name}] {sample!r}"
        if torch_error is not None:
            if error is None or not isinstance(error, type(torch_error)):
                found.append(f"{what}: torch raises {type(torch_error).__name__}, ember {error!r}")
        elif error is not None:
            if not (device != "cpu" and isinstance(error, DEVICE_REFUSES)):
                found.append(f"{what}: ember raises {error!r}")
        elif (why := _differs(got, want)) is not None:
            found.append(f"{what}: {why}")
    return found


@pytest.mark.parametrize("name", ROWS)
def test_limited_dtypes_match_torch(name, device):
    found = []
    for dtype in dt.LIMITED:
        mismatches = survey(name, device, dtype)
        if mismatches and name not in KNOWN_GAPS:
            found.extend(mismatches)
    assert not found, "\n".join(found)


@pytest.mark.parametrize("name", sorted(SUPERSET))
def test_superset_rows_are_kernels_torch_lacks(name):
    """Each refusal torch gives a row ember runs (the superset rows) is the NotImplementedError
    of a kernel the table names, not an error of meaning (a RuntimeError ember would raise)."""
    refusals = [(dtype, error) for dtype in dt.LIMITED for error in torch_refusals(name, dtype)]
    assert refusals, f"torch refuses no sample of '{name}' now: drop it from SUPERSET"
    found = []
    for dtype, error in refusals:
        kernel = str(error).split('"')[1] if str(error).startswith('"') else None
        if type(error) is not NotImplementedError or kernel not in SUPERSET[name]:
            found.append(f"{dtype.name}: {error!r}")
    assert not found, "\n".join(found)
