"""``repr(tensor)`` in PyTorch's style: 4 decimals, aligned columns, dtype/device if not default."""

from __future__ import annotations

import math

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
        PrintOptions.precision, PrintOptions.threshold, PrintOptions.edgeitems = 4, math.inf, 3
        PrintOptions.linewidth = 80
    elif profile == "short":
        PrintOptions.precision, PrintOptions.threshold, PrintOptions.edgeitems = 2, 1000, 2
        PrintOptions.linewidth = 80
    for name, value in (
        ("precision", precision),
        ("threshold", threshold),
        ("edgeitems", edgeitems),
        ("linewidth", linewidth),
    ):
        if value is not None:
            setattr(PrintOptions, name, value)
    PrintOptions.sci_mode = sci_mode


class _Formatter:
    """PyTorch's element formatter: one width for every element, and for floats one style (whole
    numbers as ``3.``, fixed ``precision`` decimals, or scientific) chosen from the nonzero finite
    values; NaN and infinity never decide it."""

    __slots__ = ("floating", "int_mode", "sci_mode", "width")

    def __init__(self, values: np.ndarray, floating: bool):
        self.floating = floating
        self.int_mode = True
        self.sci_mode = False
        self.width = 1
        if not floating:
            self.width = max((len(f"{v}") for v in values.tolist()), default=1)
        else:
            self._choose_float_style(values[np.isfinite(values) & (values != 0)])

    def _choose_float_style(self, finite: np.ndarray) -> None:
        if finite.size == 0:
            return  # PyTorch ignores a forced sci_mode here too
        magnitude = np.abs(finite)
        low, high = magnitude.min(), magnitude.max()
        self.int_mode = bool(np.all(finite == np.ceil(finite)))
        forced = PrintOptions.sci_mode
        self.sci_mode = high / low > 1000.0 or high > 1.0e8 or low < 1.0e-4
        if forced is not None:
            self.sci_mode = forced
        precision = PrintOptions.precision
        if self.sci_mode:
            pattern = f"{{:.{precision}e}}"
        else:
            pattern = "{:.0f}." if self.int_mode else f"{{:.{precision}f}}"
        self.width = max(len(pattern.format(v)) for v in finite.tolist())

    def format(self, value) -> str:
        if not self.floating:
            text = f"{value}"
        elif self.sci_mode:
            text = f"{value:{self.width}.{PrintOptions.precision}e}"
        elif self.int_mode:
            text = f"{value:.0f}" + ("" if math.isinf(value) or math.isnan(value) else ".")
        else:
            text = f"{value:.{PrintOptions.precision}f}"
        return text.rjust(self.width)


class _ComplexFormatter:
    """PyTorch's complex elements: the real and imaginary parts each formatted as floats (their
    own style and width), joined as ``a+bj``."""

    __slots__ = ("imag", "real", "width")

    def __init__(self, values: np.ndarray):
        self.real = _Formatter(values.real.astype(np.float64), True)
        self.imag = _Formatter(values.imag.astype(np.float64), True)
        self.width = self.real.width + self.imag.width + 1

    def format(self, value) -> str:
        imag = (self.imag.format(value.imag) + "j").lstrip()
        sign = "" if imag[0] in "+-" else "+"
        return self.real.format(value.real) + sign + imag


def _formatter(values: np.ndarray, floating: bool):
    if values.dtype.kind == "c":
        return _ComplexFormatter(values)
    return _Formatter(values, floating)


def _summarized(array: np.ndarray) -> np.ndarray:
    """Only the elements a summarised print shows (the formatter's width comes from them)."""
    edge = PrintOptions.edgeitems
    for axis in range(array.ndim):
        size = array.shape[axis]
        if size > 2 * edge:
            keep = np.r_[0:edge, size - edge : size]
            array = np.take(array, keep, axis=axis)
    return array


def _vector(array: np.ndarray, indent: int, summarize: bool, fmt: _Formatter) -> str:
    edge = PrintOptions.edgeitems
    per_line = max(1, (PrintOptions.linewidth - indent) // (fmt.width + 2))
    if summarize and not edge:
        items = ["..."]
    elif summarize and array.shape[0] > 2 * edge:
        items = [fmt.format(v) for v in array[:edge].tolist()] + [" ..."]
        items += [fmt.format(v) for v in array[-edge:].tolist()]
    else:
        items = [fmt.format(v) for v in array.tolist()]
    lines = [", ".join(items[i : i + per_line]) for i in range(0, len(items), per_line)]
    return "[" + (",\n" + " " * (indent + 1)).join(lines) + "]"


def _nested(array: np.ndarray, indent: int, summarize: bool, fmt: _Formatter) -> str:
    if array.ndim == 0:
        return fmt.format(array.item())
    if array.ndim == 1:
        return _vector(array, indent, summarize, fmt)
    edge, size = PrintOptions.edgeitems, array.shape[0]
    if summarize and size > 2 * edge:
        rows = [_nested(array[i], indent + 1, summarize, fmt) for i in range(edge)]
        rows.append("...")
        rows += [_nested(array[i], indent + 1, summarize, fmt) for i in range(size - edge, size)]
    else:
        rows = [_nested(array[i], indent + 1, summarize, fmt) for i in range(size)]
    return "[" + ("," + "\n" * (array.ndim - 1) + " " * (indent + 1)).join(rows) + "]"


def _with_suffixes(text: str, suffixes: list, indent: int) -> str:
    """Append ``, suffix`` items, starting a new line when one would pass the line width."""
    parts = [text]
    line_length = len(text) - text.rfind("\n") + 1
    for suffix in suffixes:
        if line_length + len(suffix) + 2 > PrintOptions.linewidth:
            parts.append(",\n" + " " * indent + suffix)
            line_length = indent + len(suffix)
        else:
            parts.append(", " + suffix)
            line_length += len(suffix) + 2
    return "".join(parts) + ")"


def _meta_repr(t, prefix: str, indent: int) -> str:
    suffixes = ["device='meta'", f"size={tuple(t.shape)}"]
    if t.dtype is not dt.DEFAULTS.float:
        suffixes.append(f"dtype={t.dtype!r}")
    if t.requires_grad:
        suffixes.append("requires_grad=True")
    return _with_suffixes(prefix + "...", suffixes, indent)


def tensor_repr(t) -> str:
    prefix = "tensor("
    indent = len(prefix)
    if t.device.type == "meta":  # no values to show, as PyTorch prints it
        return _meta_repr(t, prefix, indent)
    floating = t.dtype.is_floating_point
    suffixes = []
    if t.device.type != "cpu":
        suffixes.append(f"device='{t.device}'")
    if 0 in t.shape:  # nothing to read: a zero-size view's offset may lie past its storage
        body = "[]"
        if len(t.shape) != 1:
            suffixes.append(f"size={tuple(t.shape)}")
        if t.dtype is not dt.DEFAULTS.float:  # nothing to infer the dtype from
            suffixes.append(f"dtype={t.dtype!r}")
    else:
        array = t.detach().cpu().numpy()
        if floating:  # float16/bfloat16 print through float64, as in PyTorch
            array = array.astype(np.float64)
        if not PrintOptions.edgeitems:
            suffixes.append(f"size={tuple(array.shape)}")
        if t.dtype not in (dt.DEFAULTS.float, dt.default_complex(), dt.int64, dt.bool_):
            suffixes.append(f"dtype={t.dtype!r}")
        summarize = array.size > PrintOptions.threshold
        fmt = _formatter((_summarized(array) if summarize else array).reshape(-1), floating)
        body = _nested(array, indent, summarize, fmt)
    grad_fn = getattr(t, "_grad_fn", None)
    if grad_fn is not None:
        name = grad_fn.name() if hasattr(grad_fn, "name") else type(grad_fn).__name__
        suffixes.append(f"grad_fn=<{name}>")
    elif t.requires_grad:
        suffixes.append("requires_grad=True")
    return _with_suffixes(prefix + body, suffixes, indent)
