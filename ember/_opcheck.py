"""``ember.library.opcheck``: test a third-party op the way ember tests its own ops."""

from __future__ import annotations

import inspect

import numpy as np

from . import _dtype as dt
from ._tensor import Tensor
from .dispatcher import registry
from .dispatcher.devices import REGISTRY
from .dispatcher.opdef import TOLERANCES


class OpCheckError(AssertionError):
    """A check of ``opcheck`` failed; the message names the op, the sample and the check."""


def opcheck(op, sample_inputs, *, rtol=None, atol=None, check_grad: bool = True) -> dict:
    """Check an op on sample inputs; raise OpCheckError at the first failure.

    For each sample: the arguments bind to the schema (tensors exactly where it says Tensor);
    the outputs have the count, shapes and dtypes the shape rule predicts; values match the op's
    numpy ``reference`` (when it has one); every device type the op has a kernel for gives the
    values of the samples' device (a device that is not available here is reported as skipped);
    and gradients of differentiable ops agree with central finite differences in float64.

    Args:
        op: the op's function (``ember.ops.ns.name``), its qualified name, or the Op.
        sample_inputs: tuples of positional arguments, or ``(args, kwargs)`` pairs.
        rtol, atol: tolerances; by default the op table's per-dtype ones.
        check_grad: False skips the gradient check.

    Returns:
        ``{check: "ok" or "skipped: reason"}``; checks are named ``"schema"``, ``"shape"``,
        ``"reference"``, ``"device <type>"`` and ``"gradients"``.
    """
    from .library import LIBRARY, find_op

    target = find_op(op)
    function = LIBRARY.functions.get(target.name) or target
    report: dict = {}
    samples = list(sample_inputs)
    if not samples:
        raise OpCheckError(f"opcheck({target.name}): no sample inputs")
    for index, sample in enumerate(samples):
        check = _Check(target, function, index, (rtol, atol), report)
        values = check.bind(sample)
        result = check.outputs(values)
        check.reference(values, result)
        check.devices(values, result)
        if check_grad:
            check.gradients(values)
    return report


class _Check:
    """The checks of one sample; results go into the shared report."""

    def __init__(self, op, function, index: int, tolerance: tuple, report: dict):
        self.op = op
        self.function = function
        self.index = index
        self.tolerance = tolerance
        self.report = report

    def fail(self, check: str, message: str):
        raise OpCheckError(f"opcheck({self.op.name}) sample {self.index}, {check}: {message}")

    def record(self, check: str, outcome: str = "ok") -> None:
        if self.report.get(check, "ok") == "ok" or outcome != "ok":
            self.report[check] = outcome

    def call(self, values: list):
        out = self.op(*values)  # schema order, defaults filled: the Op takes them positionally
        return list(out) if isinstance(out, tuple) else [out]

    # ---- schema and outputs -------------------------------------------------------------------
    def bind(self, sample) -> list:
        """The sample's arguments in schema order, defaults filled in."""
        args, kwargs = sample if _is_pair(sample) else (sample, {})
        args = args if isinstance(args, (tuple, list)) else (args,)
        try:
            bound = inspect.signature(self.function).bind(*args, **kwargs)
        except TypeError as exc:
            self.fail("schema", f"arguments do not bind to {self.op.schema.text}: {exc}")
        bound.apply_defaults()
        values = list(bound.arguments.values())
        for arg, value in zip(self.op.schema.args, values):
            if not _fits(arg, value):
                self.fail("schema", f"argument '{arg.name}' is {type(value).__name__}")
        self.record("schema")
        return values

    def outputs(self, values: list) -> list:
        from .dispatcher.kinds.library import output_specs

        result = self.call(values)
        if len(result) != self.op.num_outputs or not all(isinstance(t, Tensor) for t in result):
            self.fail("shape", f"returned {result!r}, the schema says {self.op.schema.text}")
        if self.op.info.get("shape") is not None:
            expected = output_specs(self.op, values)
            got = [(t._shape, t._dtype) for t in result]
            if got != expected:
                self.fail(
                    "shape", f"outputs are {_specs(got)}, the shape rule says {_specs(expected)}"
                )
        self.record("shape")
        return result

    def reference(self, values: list, result: list) -> None:
        reference = self.op.defn.reference
        if reference is None:
            self.record("reference", "skipped: the op has no reference")
            return
        expected = reference(*(_to_numpy(v) for v in values))
        expected = list(expected) if isinstance(expected, tuple) else [expected]
        for k, (t, want) in enumerate(zip(result, expected)):
            self.compare("reference", f"output {k}", t, np.asarray(want))
        self.record("reference")

    def compare(self, check: str, what: str, t: Tensor, want: np.ndarray) -> None:
        got = t.detach().cpu().numpy()
        if got.shape != want.shape:
            self.fail(check, f"{what} has shape {list(got.shape)}, expected {list(want.shape)}")
        rtol, atol = TOLERANCES.get(t._dtype, (0.0, 0.0))
        rtol = self.tolerance[0] if self.tolerance[0] is not None else rtol
        atol = self.tolerance[1] if self.tolerance[1] is not None else atol
        a, b = got.astype(np.float64), want.astype(np.float64)
        if not np.allclose(a, b, rtol=rtol, atol=atol, equal_nan=True):
            worst = np.nanmax(np.abs(a - b)) if a.size else 0.0
            self.fail(
                check, f"{what} differs (max abs error {worst:.3g}, rtol {rtol}, atol {atol})"
            )

    # ---- devices and gradients ----------------------------------------------------------------
    def devices(self, values: list, result: list) -> None:
        home = _device_of(values)
        claimed = set(registry.EXTRA.device_types(self.op.name))
        claimed |= {d for d, b in REGISTRY.loaded_backends().items() if self.op.name in b.kernels}
        for device_type in sorted(claimed - {home.type}):
            check = f"device {device_type}"
            try:
                REGISTRY.backend(device_type)
            except RuntimeError as exc:
                self.record(check, f"skipped: {str(exc).splitlines()[0]}")
                continue
            moved = [_move(v, device_type) for v in values]
            out = self.call(moved)
            for k, (t, want) in enumerate(zip(out, result)):
                if t.device.type != device_type:
                    self.fail(check, f"output {k} is on {t.device}, not {device_type}")
                self.compare(
                    check, f"output {k} against {home.type}", t, want.detach().cpu().numpy()
                )
            self.record(check)

    def gradients(self, values: list) -> None:
        from .autograd import gradcheck

        if not self.op.defn.differentiable:
            self.record("gradients", "skipped: the op is not differentiable")
            return
        if dt.float64 not in self.op.dtypes:
            self.record("gradients", "skipped: the op does not accept float64")
            return
        inputs = [
            v.detach().to(dt.float64).requires_grad_(True) if _is_float(v) else v for v in values
        ]
        if not any(isinstance(v, Tensor) and v.requires_grad for v in inputs):
            self.record("gradients", "skipped: no floating-point tensor input")
            return
        if not any(t.grad_fn is not None for t in self.call(inputs)):
            self.fail("gradients", "outputs carry no grad_fn: register_autograd was not called")
        try:
            gradcheck(lambda *xs: tuple(self.call(list(xs))), tuple(inputs))
        except Exception as exc:
            self.fail("gradients", f"{type(exc).__name__}: {exc}")
        self.record("gradients")


def _is_pair(sample) -> bool:
    return isinstance(sample, tuple) and len(sample) == 2 and isinstance(sample[1], dict)


def _fits(arg, value) -> bool:
    if value is None:
        return arg.optional or not arg.is_tensor
    if arg.is_tensor:
        items = value if arg.is_list else [value]
        return isinstance(items, (list, tuple)) and all(isinstance(t, Tensor) for t in items)
    return not isinstance(value, Tensor)


def _specs(specs) -> str:
    return ", ".join(f"{list(shape)} {dtype.name}" for shape, dtype in specs)


def _is_float(value) -> bool:
    return isinstance(value, Tensor) and value.dtype.is_floating_point


def _to_numpy(value):
    if isinstance(value, Tensor):
        return value.detach().cpu().numpy()
    if isinstance(value, (list, tuple)) and any(isinstance(v, Tensor) for v in value):
        return [_to_numpy(v) for v in value]
    return value


def _move(value, device_type: str):
    if isinstance(value, Tensor):
        return value.to(device_type)
    if isinstance(value, (list, tuple)) and any(isinstance(v, Tensor) for v in value):
        return [_move(v, device_type) for v in value]
    return value


def _device_of(values: list):
    for value in values:
        items = value if isinstance(value, (list, tuple)) else [value]
        for t in items:
            if isinstance(t, Tensor):
                return t.device
    raise OpCheckError("opcheck: a sample needs at least one tensor argument")
