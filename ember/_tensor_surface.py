"""Tensor methods PyTorch code calls that are not one op of the table: ``fill_diagonal_``,
``is_nonzero``, the device-type predicates beside ``is_cuda`` (``is_xpu``; ``False`` for the
backends ember has no counterpart of), the legacy constructor ``x.new(...)``
(ember/_legacy_types.py), the CPU-only Python-callable maps ``apply_``/``map_``/``map2_``, and
method spellings of functional ops (``x.prelu(w)``, ``x.hardshrink()``, ``x.ger(y)``), and
autograd's bookkeeping as PyTorch shows it (``_version``, ``output_nr``, ``is_inference()``).
``METHODS`` and ``PROPERTIES`` say what goes on Tensor; ember/__init__.py binds them."""

from __future__ import annotations

import builtins
import sys

from . import _dim_order, _legacy_types, _resize, _set
from ._tensor import Tensor


def _ember():
    return sys.modules["ember"]


def fill_diagonal_(self: Tensor, fill_value, wrap: bool = False) -> Tensor:
    """Fill the main diagonal in place (every dim of equal length beyond 2-D); ``wrap``: a tall
    matrix's diagonal starts again every ``width + 1`` rows. PyTorch's own strided-view
    construction, so autograd sees the in-place fill of a view."""
    if self.ndim < 2:
        raise RuntimeError("dimensions must larger than 1")
    height, width = self.shape[0], self.shape[1]
    if self.ndim > 2 and any(size != height for size in self.shape[1:]):
        raise RuntimeError("all dimensions of input must be of equal length")
    stride = builtins.sum(self.stride())
    offset = self.storage_offset()
    size = min(height, width)
    self.as_strided((size,), (stride,), offset).fill_(fill_value)
    if wrap and self.ndim == 2 and height > width + 1:
        step = width + 1
        count = (self.numel() + step - 1) // step - size
        self.as_strided((count,), (stride,), offset + self.stride(0) * step).fill_(fill_value)
    return self


def is_nonzero(self: Tensor) -> bool:
    count = self.numel()
    if count == 0:
        raise RuntimeError("Boolean value of Tensor with no values is ambiguous")
    if count > 1:
        raise RuntimeError("Boolean value of Tensor with more than one value is ambiguous")
    return builtins.bool(self.item() != 0)


def const_data_ptr(self: Tensor) -> int:
    return self.data_ptr()


def _cpu_only(self: Tensor, name: str) -> None:
    if self.device.type != "cpu":
        raise TypeError(f"{name} is only implemented on CPU tensors")


def _map_into(self: Tensor, name: str, fn, others: tuple) -> Tensor:
    """``self[i] = fn(self[i], *others[i])`` for every element, with Python numbers."""
    ember = _ember()
    _cpu_only(self, name)
    for other in others:
        _cpu_only(other, name)
    # flat lists, 0-d included (reshape(-1) of a 0-d tensor has its one element)
    columns = [t.expand(self.shape).reshape(-1).tolist() for t in (self, *others)]
    values = [fn(*row) for row in zip(*columns)]
    with ember.no_grad():
        self.copy_(ember.tensor(values, dtype=self.dtype).reshape(self.shape))
    return self


def apply_(self: Tensor, callable) -> Tensor:
    """``callable(v)`` for every element, in place (CPU only, slow: Python per element)."""
    return _map_into(self, "apply_", callable, ())


def map_(self: Tensor, tensor: Tensor, callable) -> Tensor:
    """``callable(a, b)`` over self and ``tensor`` (broadcast to self), in place (CPU only)."""
    return _map_into(self, "map_", callable, (tensor,))


def map2_(self: Tensor, x: Tensor, y: Tensor, callable) -> Tensor:
    return _map_into(self, "map2_", callable, (x, y))


def to_dense(self: Tensor, dtype=None, *, masked_grad=None) -> Tensor:
    """A strided tensor is already dense: itself (in ``dtype`` when given)."""
    del masked_grad
    return self if dtype is None else self.to(dtype)


def prelu(self: Tensor, weight: Tensor) -> Tensor:
    return _ember().nn.functional.prelu(self, weight)


def hardshrink(self: Tensor, lambd: float = 0.5) -> Tensor:
    return _ember().nn.functional.hardshrink(self, lambd)


def ger(self: Tensor, vec2: Tensor) -> Tensor:
    return _ember().ger(self, vec2)


def is_same_size(self: Tensor, other: Tensor) -> bool:
    if not isinstance(other, Tensor):
        raise TypeError(
            "is_same_size(): argument 'other' (position 1) must be Tensor, not "
            f"{type(other).__name__}"
        )
    return self._shape == other._shape


def is_inference(self: Tensor) -> bool:
    """Whether this tensor was made inside ``ember.inference_mode()`` (or is a view of one)."""
    return self._storage.inference


def is_inference_fn(input: Tensor) -> bool:
    """``ember.is_inference(t)``: ``t.is_inference()``."""
    if not isinstance(input, Tensor):
        raise TypeError(
            "is_inference(): argument 'input' (position 1) must be Tensor, not "
            f"{type(input).__name__}"
        )
    return input._storage.inference


def _version(self: Tensor) -> int:
    """In-place writes to this tensor's memory so far. ember counts per storage: views and
    ``detach()`` share the count, as in PyTorch, and so does ``.data`` (PyTorch gives it a
    counter of its own)."""
    if self._storage.inference:
        raise RuntimeError("Inference tensors do not track version counter.")
    return self._storage.version


def record_stream(self: Tensor, stream) -> None:
    """PyTorch's hint to the CUDA caching allocator; ember's allocator does not track streams,
    so there is nothing it could record: CPU tensors raise as in PyTorch, others explain."""
    if type(stream).__name__ != "Stream":  # any device module's Stream class
        raise RuntimeError("unknown parameter type")
    if self.device.type == "cpu":
        raise NotImplementedError(
            "Could not run 'aten::record_stream' with arguments from the 'CPU' backend. This "
            "could be because the operator doesn't exist for this backend, or was omitted "
            "during the selective/custom build process (if using custom build)."
        )
    raise NotImplementedError(
        f"record_stream(): ember's caching allocator does not track streams, so a "
        f"{self.device.type} tensor used on another stream cannot be kept alive by it; "
        "synchronize that stream before the tensor is freed"
    )


METHODS = {
    "fill_diagonal_": fill_diagonal_,
    "is_nonzero": is_nonzero,
    "const_data_ptr": const_data_ptr,
    "new": _legacy_types.new,
    "apply_": apply_,
    "map_": map_,
    "map2_": map2_,
    "to_dense": to_dense,
    "prelu": prelu,
    "hardshrink": hardshrink,
    "ger": ger,
    "is_same_size": is_same_size,
    "is_inference": is_inference,
    "record_stream": record_stream,
    "dim_order": _dim_order.dim_order,
    "set_": _set.set_,
    "resize": _resize.resize,
    "resize_as": _resize.resize_as,
}

FUNCTIONS = {"is_inference": is_inference_fn}

# Device-type predicates: xpu is an ember device; the others name backends ember has none of.
ABSENT_BACKENDS = ("is_mps", "is_mkldnn", "is_quantized", "is_nested", "is_vulkan", "is_ipu",
                   "is_xla", "is_mtia", "is_maia")  # fmt: skip
PROPERTIES = {
    "is_xpu": property(lambda self: self._storage.device.type == "xpu"),
    **{name: property(lambda self: False) for name in ABSENT_BACKENDS},
    "_version": property(_version),
    "output_nr": property(lambda self: self._output_nr),  # 0 unless a multi-output node's
}
