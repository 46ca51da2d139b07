"""One OpInfo record on one device: its sample inputs (every one with
``EMBER_OPINFO_SAMPLES=all``), through every variant PyTorch has
(function, Tensor method, in-place method, operator, ``out=``), compared with PyTorch in values,
dtypes and shapes, and in input gradients for float64 samples."""

from __future__ import annotations

import dataclasses
import functools
import os
import random
import sys
import traceback
import unittest

import numpy as np
import torch
from torch.testing._internal import common_utils
from torch.testing._internal.opinfo import core as opinfo_core

import ember

from . import convert
from .convert import Converter, MissingError, normalise_torch, to_torch
from .signs import EIGENVECTOR_RECORDS, SIGN_FREE, align_eigenvectors, align_singular_vectors

# PyTorch's CPU kernels spin up OpenMP threads that starve each other (and ember's) on a busy
# machine: one thread made the suite four times faster on two cores.
torch.set_num_threads(1)


def _seed_cpu_only(seed=None):
    """PyTorch's sample iterators reseed before every sample through ``torch.manual_seed``,
    which also queues a lazy CUDA/XPU seeding with a captured stack (a third of the suite's
    time); the samples come from the CPU generator alone, so that is the one seeded."""
    seed = common_utils.SEED if seed is None else seed
    torch.default_generator.manual_seed(seed)
    random.seed(seed)
    np.random.seed(seed)


common_utils.set_rng_seed = _seed_cpu_only


def _test_fn_from_frames():
    """``common_utils.extract_test_fn`` (the unittest test method running, found by walking the
    stack; None under pytest's plain functions) with the same walk over ``sys._getframe``:
    PyTorch's goes through ``inspect.stack()``, which reads the source lines of every frame:
    36 ms per sample iterator under pytest's deep stacks, 14 of 59 s for 64 records on xpu."""
    frame = sys._getframe(1)
    while frame is not None:
        test = frame.f_locals.get("self")
        if isinstance(test, unittest.TestCase):
            *_, cls_name, test_name = test.id().rsplit(".", 2)
            if cls_name == type(test).__name__ and test_name.startswith("test"):
                return getattr(test, test_name).__func__
        frame = frame.f_back
    return None


# common_utils' TrackedInputIter calls it through the module; opinfo.core imported the name
# itself, and calls it once per sample_inputs() (0.22 s each under pytest: 38 of 48 s for 73
# cpu records), so both bindings are replaced.
common_utils.extract_test_fn = _test_fn_from_frames
opinfo_core.extract_test_fn = _test_fn_from_frames

# Dtypes each record is checked in, where PyTorch's CPU kernels support them: gradients in
# float64, values in every one of them.
DTYPES = (torch.float64, torch.float32, torch.int64, torch.bool)
# Complex records are checked again in complex128 (test_opinfo_complex), with a table of their own.
COMPLEX_DTYPES = (torch.complex128,)

# Records whose values are random or uninitialised: results are compared in shape and dtype
# (and device); their distributions are tested in tests/ops/test_properties.py.
VALUES_UNCOMPARED = {
    "bernoulli": "random",
    "cauchy": "random",
    "exponential": "random",
    "geometric": "random",
    "log_normal": "random",
    "multinomial": "random",
    "normal": "random",
    "normal.in_place": "random",
    "normal.number_mean": "random",
    "uniform": "random",
    "rand_like": "random",
    "randint": "random",
    "randint_like": "random",
    "randn": "random",
    "randn_like": "random",
    "nn.functional.dropout": "random",
    "nn.functional.dropout2d": "random",
    "nn.functional.dropout3d": "random",
    "nn.functional.alpha_dropout": "random",
    "nn.functional.feature_alpha_dropout.with_train": "random",
    "nn.functional.fractional_max_pool2d": "random",
    "nn.functional.fractional_max_pool3d": "random",
    "nn.functional.rrelu": "random",
    "svd_lowrank": "random",
    "pca_lowrank": "random",
    "empty": "uninitialised",
    "empty_like": "uninitialised",
    "empty_permuted": "uninitialised",
    "empty_strided": "uninitialised",
    "new_empty": "uninitialised",
    "new_empty_strided": "uninitialised",
}

# Records random on some samples only: a sample for which the rule says so is compared as the
# VALUES_UNCOMPARED records are (shapes and dtypes, no gradients). Attention dropout draws its
# mask from ember's Philox stream, not PyTorch's; tests/nn/test_functional.py recovers ember's
# mask and checks the values against PyTorch's formula with it.
RANDOM_SAMPLES = {
    "nn.functional.scaled_dot_product_attention": lambda s: _arg(3, "dropout_p", 0.0)(s) > 0,
    "nn.functional.multi_head_attention_forward": lambda s: (
        _arg(9, "dropout_p", 0.0)(s) > 0 and _arg(99, "training", True)(s)
    ),
}


# Records whose out= variant PyTorch computes wrongly: ember's out= is compared with PyTorch's
# function result instead.
OUT_WRONG_IN_PYTORCH = {
    # over one dim, ATen's ihfftn calls conj_physical_out(tmp, out) with its arguments swapped:
    # out is left unwritten (its old memory comes back) and the transform is overwritten
    "fft.ihfft2": "out= over one dim returns out unwritten",
    "fft.ihfftn": "out= over one dim returns out unwritten",
}


def _arg(position: int, name: str, default):
    """A sample's argument (after the input) by position or keyword."""

    def find(sample):
        if name in sample.kwargs:
            return sample.kwargs[name]
        return sample.args[position] if len(sample.args) > position else default

    return find


# Records whose indices are PyTorch's choice among equal values (quickselect, unstable sorts):
# ember's indices must point at the same values, not necessarily the same places. Each entry
# finds the sample's dim.
TIED_INDICES = {
    "kthvalue": _arg(1, "dim", -1),
    "mode": _arg(0, "dim", -1),
    "topk": _arg(1, "dim", -1),
    "sort": _arg(0, "dim", -1),
    "argsort": _arg(0, "dim", -1),
    "median": _arg(0, "dim", None),
    "nanmedian": _arg(0, "dim", None),
}


# Records whose eigenvectors are unique only up to a complex phase each: LAPACK's geev scales a
# vector to norm 1 with its largest component real, and which component is largest, or its sign,
# differs between LAPACKs (MKL's against OpenBLAS's). The value is where V sits in the result.
PHASE_FREE = {"linalg.eig": 1}


def align_eigenvector_phases(actual, expected, index: int):
    """``actual`` with each eigenvector (a column of V) turned by the unit phase that brings it
    closest to PyTorch's; values that differ otherwise still differ."""
    actual = list(to_torch(actual))
    v, ev = actual[index], expected[index].detach()
    if v.shape == ev.shape and v.is_complex() and v.numel():
        inner = (v.conj() * ev).sum(-2, keepdim=True)
        size = inner.abs()
        phase = torch.where(size > 0, inner / torch.where(size > 0, size, 1), 1)
        actual[index] = v * phase
    return actual


# Samples per record and dtype on the devices other than cpu (cpu checks every one). Seven
# records have hundreds of samples per dtype, the combinations of a few flags over the same
# shapes (max_pool2d 1440, logspace's tensor overload 1201, unique 528...); checking all of
# them again on xpu, ref and the CUDA emulator cost about 150 worker-seconds of a CI run
# (unique alone 28 s on each, 2026-11-28). A spread of 64 keeps OpInfo's first and last
# samples (its edge cases) and an even spread of the flags' combinations between; cpu, which
# runs every sample, is where the flags' semantics are checked; a device's kernels take those
# flags as arguments. 128 checked 11608 float32 samples over the records, 64 checks 9536
# (2026-11-29: CI time).
DEVICE_SAMPLE_LIMIT = 64


def sample_limit(device: str) -> int | None:
    """Samples checked per record and dtype: every one on cpu (None), at most
    ``DEVICE_SAMPLE_LIMIT`` elsewhere, unless ``EMBER_OPINFO_SAMPLES`` says ``all`` (every one
    everywhere) or a count (for a quick local run). Those checked are spread evenly over
    PyTorch's list, its first and last included, so the edge cases OpInfo puts last stay in.

    Every sample on cpu, xpu and ref took 48 s, 110 s and 74 s of wall time with ``-n 2`` on
    CI's 2-core machine (2026-11-27)."""
    value = os.environ.get("EMBER_OPINFO_SAMPLES", "").strip().lower()
    if value == "all":
        return None
    if value:
        return max(int(value), 1)
    return None if device == "cpu" else DEVICE_SAMPLE_LIMIT


# Devices that run their kernels on the host's cores, where a sample of millions of elements
# takes a minute: the CUDA emulator runs each emulated GPU thread in turn, 10-30 ns an element
# per kernel (grid_sampler_3d's 5M-element inputs: 77 of its record's 79 s, 2026-11-28), and
# xpu on an OpenCL CPU device (PoCL, CI's) runs grid_sampler_3d's decomposition over them (60
# of CI's worker-seconds, 2026-11-29). Those samples are left to cpu, to xpu on a GPU and to the
# GPU acceptance run, and counted as not run in the pass count. 2**18 elements still spans many
# blocks or work-groups of every launch. At 2**20 grid_sampler_3d's samples of 2**18-2**20
# elements (the only samples of OpInfo's float32 lists in that band) still cost 147 s on xpu and
# 45 s on the emulator of a 33-minute run (2026-11-29); at 2**18 its xpu record takes 5 s.
HOST_DEVICE_ELEMENT_LIMIT = 1 << 18


def element_limit(device: str) -> int | None:
    """The most input elements a sample may have on ``device`` (None: no limit)."""
    emulated = device == "cuda" and os.environ.get("EMBER_CUDA_EMULATOR") == "1"
    return HOST_DEVICE_ELEMENT_LIMIT if emulated or opencl_on_the_host(device) else None


@functools.cache
def opencl_on_the_host(device: str) -> bool:
    """Whether ``device`` is xpu on an OpenCL CPU device (PoCL)."""
    if device != "xpu":
        return False
    try:
        return "CPU" in ember.xpu.get_device_properties(0).type
    except Exception:  # no usable xpu: its tests skip, with the reason
        return False


def sample_elements(sample) -> int:
    """The elements of every tensor a sample passes (input, arguments, keywords)."""
    total = 0

    def count(t):
        nonlocal total
        total += t.numel()
        return t

    _map_tensors([sample.input, list(sample.args), dict(sample.kwargs)], count)
    return total


def spread(count: int, limit: int | None) -> list[int]:
    """At most ``limit`` of ``range(count)``, evenly spaced, first and last included."""
    if limit is None or count <= limit:
        return list(range(count))
    if limit == 1:
        return [0]
    step = (count - 1) / (limit - 1)
    return [round(i * step) for i in range(limit)]


def record_id(record) -> str:
    variant = record.variant_test_name
    return f"{record.name}.{variant}" if variant else record.name


@dataclasses.dataclass
class Outcome:
    samples: int = 0
    passed: int = 0
    over_limit: int = 0  # samples not run: over the device's element limit
    failures: list = dataclasses.field(default_factory=list)


def dtypes_for(record) -> list:
    supported = record.supported_dtypes("cpu")
    chosen = [d for d in DTYPES if d in supported]
    if not chosen:  # ints or halves only: the first of them ember has
        for d in sorted(supported, key=str):
            try:
                convert.ember_dtype(d)
            except MissingError:
                continue
            chosen.append(d)
            break
    return chosen


def _tensors(value) -> list:
    if isinstance(value, (torch.Tensor, ember.Tensor)):
        return [value]
    if isinstance(value, (list, tuple)):
        return [t for v in value for t in _tensors(v)]
    return []


def _structure(value):
    """What is compared for random and uninitialised results: shapes and dtypes."""
    if isinstance(value, torch.Tensor):
        return (tuple(value.shape), value.dtype)
    if isinstance(value, (list, tuple)):
        return [_structure(v) for v in value]
    return type(value).__name__


# Comparison tolerances (rtol, atol): assert_close's defaults, except float32, where two sound
# summation orders (matmul, conv) differ by ~2e-5 near zero. Complex dtypes take their parts'
# (as assert_close does): another complex exp or division differs in the last bits.
TOLERANCES = {
    torch.float16: (1e-3, 1e-5),
    torch.bfloat16: (1.6e-2, 1e-5),
    torch.float32: (1.3e-6, 1e-4),
    torch.float64: (1e-7, 1e-7),
    torch.complex64: (1.3e-6, 1e-4),  # as float32 (the FFTs sum in different orders)
    torch.complex128: (1e-7, 1e-7),
}


# How much farther than PyTorch from the float64 result a float32 result may be when the two
# differ beyond TOLERANCES: both round in different orders, so on an ill-conditioned sample
# either may be the closer (ember's error is 0.4x to 3x PyTorch's on attention samples).
ACCURACY_FACTOR = 4.0


def _tolerance(expected) -> dict:
    found = [TOLERANCES.get(t.dtype, (0.0, 0.0)) for t in _tensors(expected)]
    if not found:
        return {}
    return {"rtol": max(r for r, _ in found), "atol": max(a for _, a in found)}


def _close(actual, expected, rtol: float, atol: float) -> bool:
    """The common case of assert_close, fast: equal structure, dtypes, shapes, close values."""
    if isinstance(expected, torch.Tensor):
        return (
            isinstance(actual, torch.Tensor)
            and actual.dtype == expected.dtype
            and actual.shape == expected.shape
            and (
                torch.equal(actual, expected)
                or torch.allclose(actual, expected, rtol, atol, equal_nan=True)
            )
        )
    if isinstance(expected, list):
        return (
            isinstance(actual, list)
            and len(actual) == len(expected)
            and all(_close(a, e, rtol, atol) for a, e in zip(actual, expected))
        )
    return False  # scalars and the rest: assert_close decides


def compare(actual, expected, exact_values: bool, what: str) -> None:
    actual = to_torch(actual)
    expected = normalise_torch(expected)
    if not exact_values:
        if _structure(actual) != _structure(expected):
            raise AssertionError(
                f"{what}: got {_structure(actual)}, PyTorch {_structure(expected)}"
            )
        return
    tolerance = _tolerance(expected)
    if tolerance and _close(actual, expected, tolerance["rtol"], tolerance["atol"]):
        return
    try:
        torch.testing.assert_close(
            actual, expected, equal_nan=True, check_device=False, **tolerance
        )
    except (AssertionError, TypeError, ValueError) as exc:
        raise AssertionError(f"{what}: {exc}") from None


class _Sample:
    """One sample in torch and, converted, in ember."""

    def __init__(self, sample, device: str, detach: bool = False):
        self.torch = sample
        prepare = _detached_copy if detach else (lambda v: v)
        self.t_input = _map_tensors(sample.input, prepare)
        self.t_args = _map_tensors(sample.args, lambda v: v.detach() if detach else v)
        self.t_kwargs = _map_tensors(sample.kwargs, lambda v: v.detach() if detach else v)
        self.conv = Converter(device)
        self.e_input = self.conv(self.t_input)
        self.e_args = self.conv(self.t_args)
        self.e_kwargs = self.conv(self.t_kwargs)


def _detached_copy(t: torch.Tensor) -> torch.Tensor:
    """A detached copy of ``t`` that views a copy of its storage as ``t`` does, when ``t``
    starts past its storage's start (as_strided's partial views read around the view)."""
    if not convert.views_part_of_storage(t):
        return t.detach().clone()
    size = t.untyped_storage().nbytes() // t.element_size()
    whole = torch.as_strided(t.detach(), (size,), (1,), 0).clone()
    return whole.as_strided(t.shape, t.stride(), t.storage_offset())


def _map_tensors(value, fn):
    if isinstance(value, torch.Tensor):
        return fn(value)
    if isinstance(value, (list, tuple)) and not isinstance(value, torch.Size):
        items = [_map_tensors(v, fn) for v in value]
        return type(value)(items) if type(value) in (list, tuple) else type(value)(*items)
    if isinstance(value, dict):
        return {k: _map_tensors(v, fn) for k, v in value.items()}
    return value


class RecordRun:
    """Runs the samples of one record on one device; ``outcome`` counts and explains."""

    def __init__(self, record, device: str, dtypes: list | None = None):
        self.record = record
        self.device = device
        self.id = record_id(record)
        self.dtypes = dtypes
        self.record_exact = (
            self.id not in VALUES_UNCOMPARED and record.name not in VALUES_UNCOMPARED
        )
        self.exact = self.record_exact
        self.random_sample = RANDOM_SAMPLES.get(self.id, lambda sample: False)
        self.outcome = Outcome()
        self.limit = sample_limit(device)
        self.elements = element_limit(device)
        self.operator = record.operator_variant
        self.inplace_operator = record.inplace_operator_variant
        try:
            self.function = convert.function_variant(record)
            self.method = convert.variant(record.method_variant)
            self.inplace = convert.variant(record.inplace_variant)
            self.missing = None
        except MissingError as exc:  # every sample then fails for this reason (and is counted)
            self.missing = exc

    def run(self) -> Outcome:
        dtypes = self.dtypes if self.dtypes is not None else dtypes_for(self.record)
        if not dtypes:
            supported = sorted(str(d) for d in self.record.supported_dtypes("cpu"))
            self.outcome.failures.append(f"no CPU dtype that ember has: {supported}")
        for dtype in dtypes:
            torch.manual_seed(0)
            grads = dtype == torch.float64 and self.record.supports_autograd
            samples = list(self.record.sample_inputs("cpu", dtype, requires_grad=grads))
            for index in spread(len(samples), self.limit):
                if self.elements is not None and sample_elements(samples[index]) > self.elements:
                    self.outcome.over_limit += 1
                    continue
                self._sample(samples[index], dtype, index, grads)
        return self.outcome

    def _sample(self, sample, dtype, index: int, grads: bool) -> None:
        self.outcome.samples += 1
        self.exact = self.record_exact and not self.random_sample(sample)
        try:
            self._check(sample, grads and self.exact)
        except Exception as exc:  # any failure of any variant fails this sample, with its cause
            where = f"{str(dtype).split('.')[-1]} sample {index} ({_describe(sample)})"
            self.outcome.failures.append(f"{where}: {_reason(exc)}")
            return
        self.outcome.passed += 1

    def _check(self, sample, grads: bool) -> None:
        if self.missing is not None:
            raise self.missing
        record = self.record
        one = _Sample(sample, self.device)
        expected = record.op(one.t_input, *one.t_args, **one.t_kwargs)
        actual = self.function(one.e_input, *one.e_args, **one.e_kwargs)
        self._compare(sample, actual, expected, "function")
        if grads:
            self._gradients(sample, one, expected, actual)
        with torch.no_grad(), ember.no_grad():
            # operators take no keyword arguments (PyTorch's tests skip those samples too)
            operator = self.operator if not sample.kwargs else None
            for name, fn in (("method", self.method), ("operator", operator)):
                if fn is not None:
                    view = _Sample(sample, self.device, detach=True)
                    result = fn(view.e_input, *view.e_args, **view.e_kwargs)
                    self._compare(sample, result, expected, name)
            for name, fn, torch_fn in (
                ("in-place", self.inplace, record.inplace_variant),
                ("in-place operator", self.inplace_operator, self.inplace_operator),
            ):
                if name == "in-place operator" and sample.kwargs:
                    continue
                if fn is not None and isinstance(sample.input, torch.Tensor):
                    self._inplace(sample, name, fn, torch_fn)
            if record.supports_out and self.exact:
                self._out(sample, expected)

    def _compare(self, sample, actual, expected, what: str) -> None:
        actual = self._untie(sample, actual, expected)
        try:
            compare(actual, expected, self.exact, what)
        except AssertionError:
            if not (self.exact and self._as_accurate(sample, actual, expected)):
                raise

    def _as_accurate(self, sample, actual, expected) -> bool:
        """For a low-precision result off PyTorch's by more than the tolerance: whether ember
        is about as close as PyTorch to the same op computed in float64. Ill-conditioned
        samples (attention over scores of 1e4 with a float mask) leave two sound float32
        summation orders far apart, each off the exact result by as much as they differ."""
        t_outs, e_outs = _tensors(expected), _tensors(to_torch(actual))
        low = (torch.float32, torch.float16, torch.bfloat16)
        if not t_outs or len(t_outs) != len(e_outs) or t_outs[0].dtype not in low:
            return False
        wide = lambda v: v.detach().double() if v.is_floating_point() else v.detach()  # noqa: E731
        try:
            exact = self.record.op(
                _map_tensors(sample.input, wide),
                *_map_tensors(sample.args, wide),
                **_map_tensors(sample.kwargs, wide),
            )
        except Exception:  # no float64 kernel: nothing to measure against
            return False
        for e, t, x in zip(e_outs, t_outs, _tensors(exact)):
            if e.shape != t.shape or e.dtype != t.dtype or not t.is_floating_point():
                return False
            ours = (e.double() - x).abs().nan_to_num(0).max().item() if e.numel() else 0.0
            theirs = (t.double() - x).abs().nan_to_num(0).max().item() if t.numel() else 0.0
            if ours > ACCURACY_FACTOR * theirs + TOLERANCES[t.dtype][1]:
                return False
        return True

    def _untie(self, sample, actual, expected):
        """For TIED_INDICES records: ember's result with its indices replaced by PyTorch's where
        both point at equal values (then a plain comparison checks everything else)."""
        if self.record.name in EIGENVECTOR_RECORDS and len(expected) == 2:
            return align_eigenvectors(to_torch(actual), expected)
        layout = SIGN_FREE.get(self.record.name)
        if layout and isinstance(expected, (tuple, list)) and len(expected) == 3:
            return align_singular_vectors(to_torch(actual), expected, layout)
        if self.record.name in PHASE_FREE and isinstance(expected, (tuple, list)):
            return align_eigenvector_phases(actual, expected, PHASE_FREE[self.record.name])
        find = TIED_INDICES.get(self.record.name)
        dim = find(sample) if find is not None else None
        source = sample.input
        if dim is None or not isinstance(source, torch.Tensor) or source.ndim == 0:
            return actual
        if isinstance(expected, torch.Tensor):  # argsort: indices only
            return self._same_places(source, dim, actual, expected)
        pair = isinstance(expected, (tuple, list)) and isinstance(actual, (tuple, list))
        if pair and len(expected) == 2 and len(actual) == 2:
            return (actual[0], self._same_places(source, dim, actual[1], expected[1]))
        return actual

    @staticmethod
    def _same_places(source, dim, e_indices, t_indices):
        e_indices = to_torch(e_indices)
        if e_indices.shape != t_indices.shape or e_indices.dtype != t_indices.dtype:
            return e_indices
        keep = e_indices.ndim == source.ndim
        if e_indices.numel() == 0 or e_indices.min() < 0 or e_indices.max() >= source.shape[dim]:
            return e_indices

        def at(idx):
            idx = idx if keep else idx.unsqueeze(dim)
            return torch.take_along_dim(source.detach(), idx, dim)

        same = (at(e_indices) == at(t_indices)) | (at(e_indices).isnan() & at(t_indices).isnan())
        same = same if keep else same.squeeze(dim)
        return torch.where(same, t_indices, e_indices)

    def _inplace(self, sample, name, fn, torch_fn) -> None:
        own = _Sample(sample, self.device, detach=True)
        expected = _same_outcome(
            name,
            lambda: torch_fn(own.t_input, *own.t_args, **own.t_kwargs),
            lambda: fn(own.e_input, *own.e_args, **own.e_kwargs),
        )
        if expected is _REFUSED:
            return
        actual = fn(own.e_input, *own.e_args, **own.e_kwargs)
        compare(actual, expected, self.exact, name)
        compare(own.e_input, own.t_input, self.exact, f"{name} (the written input)")
        if self.exact and actual is not own.e_input and isinstance(expected, torch.Tensor):
            raise AssertionError(f"{name}: did not return its input")

    def _out(self, sample, expected) -> None:
        if not all(isinstance(t, torch.Tensor) for t in _tensors(expected)):
            return
        function_result = expected
        own = _Sample(sample, self.device, detach=True)
        t_outs = [torch.empty_like(t) for t in _tensors(expected)]
        t_out = t_outs[0] if isinstance(expected, torch.Tensor) else tuple(t_outs)
        e_out = own.conv(t_out)
        call = lambda fn, out: fn(own.e_input, *own.e_args, **own.e_kwargs, out=out)  # noqa: E731
        expected = _same_outcome(
            "out=",
            lambda: self.record.op(own.t_input, *own.t_args, **own.t_kwargs, out=t_out),
            lambda: call(self.function, e_out),
        )
        if expected is _REFUSED:
            return
        if self.id in OUT_WRONG_IN_PYTORCH:  # ember's out= against PyTorch's function result
            expected = t_out = function_result
        returned = call(self.function, e_out)
        self._compare(sample, returned, expected, "out= (returned)")
        self._compare(sample, e_out, t_out, "out= (written)")

    def _gradients(self, sample, one: _Sample, expected, actual) -> None:
        process = sample.output_process_fn_grad
        e_process = convert.rebind(process) if convert._from_test_suite(process) else process
        t_outs = [t for t in _tensors(process(expected)) if t.requires_grad]
        e_outs = [t for t in _tensors(e_process(actual)) if t.requires_grad]
        if not t_outs or not one.conv.leaves:
            return
        if len(t_outs) != len(e_outs):
            raise AssertionError(
                f"gradients: {len(e_outs)} outputs require grad, PyTorch has {len(t_outs)}"
            )
        generator = torch.Generator().manual_seed(1)
        t_seeds = [torch.randn(t.shape, dtype=t.dtype, generator=generator) for t in t_outs]
        e_seeds = [one.conv(s) for s in t_seeds]
        t_leaves = [pair[0] for pair in one.conv.leaves]
        e_leaves = [pair[1] for pair in one.conv.leaves]
        try:
            t_grads = torch.autograd.grad(t_outs, t_leaves, t_seeds, allow_unused=True)
        except RuntimeError:  # no derivative in PyTorch either (nextafter): nothing to compare
            return
        e_grads = ember.autograd.grad(e_outs, e_leaves, e_seeds, allow_unused=True)
        t_grads = [torch.zeros_like(t) if g is None else g for t, g in zip(t_leaves, t_grads)]
        e_grads = [ember.zeros_like(e) if g is None else g for e, g in zip(e_leaves, e_grads)]
        compare(e_grads, t_grads, True, "gradients")


_REFUSED = object()


def _same_outcome(name: str, torch_call, ember_call):
    """PyTorch's result, or _REFUSED when PyTorch raised and ember raised the same type (a
    refused in-place dtype change, out= of the wrong kind); else the difference, raised."""
    try:
        return torch_call()
    except Exception as exc:  # whatever PyTorch raises, ember must match
        try:
            ember_call()
        except type(exc):
            return _REFUSED
        except Exception as other:
            raise AssertionError(
                f"{name}: raised {type(other).__name__} where PyTorch raised "
                f"{type(exc).__name__}: {other}"
            ) from None
        raise AssertionError(f"{name}: PyTorch raised {type(exc).__name__}: {exc}") from None


def _describe(sample) -> str:
    def show(value):
        if isinstance(value, torch.Tensor):
            if value.layout != torch.strided:
                return f"{list(value.shape)} {value.layout}"
            return f"{list(value.shape)}" + ("" if value.is_contiguous() else " strided")
        if isinstance(value, (list, tuple)):
            return "[" + ", ".join(show(v) for v in value) + "]"
        return repr(value)

    parts = [show(sample.input)] + [show(a) for a in sample.args]
    parts += [f"{k}={show(v)}" for k, v in sample.kwargs.items()]
    return ", ".join(parts)[:160]


def _reason(exc: Exception) -> str:
    if isinstance(exc, MissingError):
        return f"missing: {exc}"
    text = str(exc).strip().splitlines()
    head = " ".join(text[:4])[:400]
    if isinstance(exc, AssertionError):
        return head
    frame = traceback.extract_tb(exc.__traceback__)[-1]
    return f"{type(exc).__name__}: {head} [{frame.filename.split('/')[-1]}:{frame.lineno}]"
