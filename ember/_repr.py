"""``repr(tensor)`` in PyTorch's style: 4 decimals, aligned columns, dtype/device if not default."""

from __future__ import annotations

import numpy as np

from . import _dtype as dt

THRESHOLD = 1000  # summarise tensors with more elements, like PyTorch
EDGE_ITEMS = 3
PRECISION = 4


class PrintOptions:
    threshold = THRESHOLD
    edgeitems = EDGE_ITEMS
    precision = PRECISION
    linewidth = 80
    sci_mode = None


def set_printoptions(
    precision=None, threshold=None, edgeitems=None, linewidth=None, profile=None, sci_mode=None
) -> None:
    """Change how tensors print (PyTorch's ``set_printoptions``)."""
    if profile == "default":
        PrintOptions.precision, PrintOptions.threshold, PrintOptions.edgeitems = 4, 1000, 3
        PrintOptions.linewidth = 80
    elif profile == "full":
        PrintOptions.threshold = float("inf")
    elif profile == "short":
        PrintOptions.precision, PrintOptions.threshold, PrintOptions.edgeitems = 2, 1000, 2
    for name, value in (
        ("precision", precision),
        ("threshold", threshold),
        ("edgeitems", edgeitems),
        ("linewidth", linewidth),
    ):
        if value is not None:
            setattr(PrintOptions, name, value)
    PrintOptions.sci_mode = sci_mode


def _float_formatter(values: np.ndarray):
    finite = values[np.isfinite(values)]
    precision = PrintOptions.precision
    if finite.size == 0:
        return lambda v: f"{v}".replace("inf", "inf")
    integral = np.all(finite == np.round(finite))
    magnitude = np.abs(finite)
    big, small = magnitude.max(), magnitude[magnitude > 0].min() if np.any(magnitude > 0) else 1.0
    sci = PrintOptions.sci_mode
    if sci is None:
        sci = big >= 1e8 or (not integral and (small < 1e-4 or big / small > 1000))
    if sci:
        return lambda v: np.format_float_scientific(
            v, precision=precision, unique=False, exp_digits=2
        )
    if integral:
        return lambda v: f"{v:.0f}." if np.isfinite(v) else str(v)
    return lambda v: f"{v:.{precision}f}" if np.isfinite(v) else str(v)


def _body(array: np.ndarray, prefix: str) -> str:
    kind = array.dtype.kind
    if kind == "f":
        array = array.astype(np.float64)
        formatter = {"float_kind": _float_formatter(array.reshape(-1))}
    elif kind == "b":
        formatter = {"bool": lambda v: "True" if v else "False"}
    else:
        formatter = None
    return np.array2string(
        array,
        separator=", ",
        prefix=prefix,
        formatter=formatter,
        threshold=PrintOptions.threshold,
        edgeitems=PrintOptions.edgeitems,
        max_line_width=PrintOptions.linewidth,
    )


def tensor_repr(t) -> str:
    prefix = "tensor("
    array = t.detach().cpu().numpy()
    if t.dtype in (dt.bfloat16, dt.float16):
        array = array.astype(np.float32)
    suffix = []
    if array.size == 0 and array.ndim != 1:
        body = "[]"
        suffix.append(f"size={tuple(array.shape)}")
    else:
        body = _body(array, prefix)
    default_float = t.dtype is dt.DEFAULTS.float
    if not (default_float or t.dtype is dt.int64 or t.dtype is dt.bool_) or (
        array.size == 0 and t.dtype is not dt.DEFAULTS.float
    ):
        suffix.append(f"dtype={t.dtype!r}")
    if t.device.type != "cpu":
        suffix.append(f"device='{t.device}'")
    grad_fn = getattr(t, "_grad_fn", None)
    if grad_fn is not None:
        name = grad_fn.name() if hasattr(grad_fn, "name") else type(grad_fn).__name__
        suffix.append(f"grad_fn=<{name}>")
    elif t.requires_grad:
        suffix.append("requires_grad=True")
    tail = "".join(f", {s}" for s in suffix)
    return f"{prefix}{body}{tail})"
