"""Lazy math bits: PyTorch's conjugate and negative bits, and their dispatch fallback.

``x.conj()`` of a complex tensor is a view of x's storage with the conjugate bit set; the values
it stands for are ``conj(storage)``. ``imag`` of such a view is a view with the negative bit. As
PyTorch's ``ConjugateFallback.cpp``/``MathBitsFallback.h``, a dispatch layer below autograd makes
the bits transparent to every kernel:

- view ops keep the bits of their input (a view of a conjugate view is one too); ``_conj`` and
  ``_neg_view`` flip them; ``view_as_real`` refuses a conjugate view, as PyTorch does;
- any other op gets its flagged inputs materialized (``conj_physical``/``neg`` of the plain
  storage) and runs on those, so no kernel sees a bit it does not read;
- the matrix products are the exception, as PyTorch's (it hands the conjugate bit to BLAS as
  ConjTrans): the rows that only decompose into mm/bmm (``PRODUCTS``) run on the flagged
  operands, and mm/bmm pass them to a kernel marked ``reads_bits`` (the CPU's cgemm/zgemm,
  dispatcher/complex_gemm.py), so ``a.mH @ b`` is one gemm without a copy of ``a``; a kernel
  whose BLAS takes only some flagged layouts marks itself with a predicate instead (xpu's and
  CUDA's, whose BLAS has a conjugate transpose but no conjugate without one), and the operands
  it refuses are materialized here;
- an in-place op on a flagged tensor runs on its materialized value, and the result is written
  back through the bits (so writing ``v`` into ``x.conj()[0]`` makes ``x[0] == conj(v)``).

The layer is installed only while some flagged tensor is alive (a count kept by weakref
finalizers), so programs that never call ``conj()`` keep the layer-free fast path.
"""

from __future__ import annotations

import weakref

from ember._tensor import Tensor, make

from .layers import STACK, Layer
from .opdef import Kind

# (bit attribute, op that materializes it): both are involutions, so the same op writes back.
BITS = (("_conj_bit", "conj_physical"), ("_neg_bit", "neg"))

_VIEW_AS_REAL_CONJ = (
    "view_as_real doesn't work on unresolved conjugated tensors.  To resolve the conjugate "
    "tensor so you can view it as real, use self.resolve_conj(); however, be warned that the "
    "resulting tensor will NOT alias the original."
)


def flagged(t) -> bool:
    return isinstance(t, Tensor) and (t._conj_bit or t._neg_bit)


def plain(t: Tensor) -> Tensor:
    """A view of ``t``'s storage without bits, history or grad: the raw stored values."""
    out = make(t._storage, t._shape, t._stride, t._offset, t._dtype, t._contig)
    out._base = t if t._base is None else t._base
    return out


def set_bits(t: Tensor, conj: bool, neg: bool) -> Tensor:
    """Give ``t`` these bits (in place; ``t`` is a fresh view), keeping the layer installed while
    it lives."""
    was = t._conj_bit or t._neg_bit
    if conj:
        t._conj_bit = True
    else:
        t.__dict__.pop("_conj_bit", None)
    if neg:
        t._neg_bit = True
    else:
        t.__dict__.pop("_neg_bit", None)
    if (conj or neg) and not was:
        _track(t)
    return t


def keep_bits(out: Tensor, source: Tensor) -> Tensor:
    """``out``, a fresh alias of ``source``'s memory built with ``make``, with source's bits."""
    if source._conj_bit or source._neg_bit:
        set_bits(out, source._conj_bit, source._neg_bit)
    return out


# The bits as torch.save records them (``_rebuild_tensor_v2``'s metadata) and ember keeps them.
METADATA = (("conj", "_conj_bit"), ("neg", "_neg_bit"))
ATTRIBUTES = frozenset(bit for _, bit in METADATA)


def metadata(t: Tensor) -> dict:
    """``t``'s bits as torch.save's rebuild metadata (empty when none is set)."""
    return {key: True for key, bit in METADATA if getattr(t, bit)}


def apply_metadata(t: Tensor, found) -> Tensor:
    """``t`` (freshly rebuilt) with the bits a checkpoint's rebuild metadata names."""
    if found:
        set_bits(t, bool(found.get("conj")), bool(found.get("neg")))
    return t


def _apply_bits(value: Tensor, source: Tensor) -> Tensor:
    from .optable import OPS

    for bit, name in BITS:
        if getattr(source, bit):
            value = OPS[name](value)
    return value


def resolve(t):
    """``t``'s values in a tensor without bits (``t`` itself when it has none)."""
    if not flagged(t):
        return t
    return _apply_bits(plain(t), t)


def write_through(target: Tensor, value: Tensor) -> tuple:
    """``(storage view, stored values)`` that make the flagged ``target`` read ``value``: the
    bits are involutions, so applying them to ``value`` gives what its storage must hold."""
    return plain(target), _apply_bits(value, target)


def _resolve_arg(arg):
    if isinstance(arg, (list, tuple)) and any(flagged(a) for a in arg):
        return type(arg)(resolve(a) for a in arg)
    return resolve(arg)


def _has_flagged(args) -> bool:
    for arg in args:
        if isinstance(arg, Tensor):
            if arg._conj_bit or arg._neg_bit:
                return True
        elif isinstance(arg, (list, tuple)) and any(flagged(a) for a in arg):
            return True
    return False


def _propagate(out, source: Tensor):
    if isinstance(out, Tensor):
        if out._dtype is not source._dtype or out is source:
            return out
        if out._storage is not source._storage:  # reshape's copy of the stored values
            return _apply_bits(out, source)
        return set_bits(out, source._conj_bit or out._conj_bit, source._neg_bit or out._neg_bit)
    if isinstance(out, (list, tuple)):
        return type(out)(_propagate(item, source) for item in out)
    return out


class MathBitsLayer(Layer):
    """The conjugate/negative fallback (see the module docstring)."""

    name = "math bits"
    priority = 20

    def wants(self, op, args) -> bool:
        return _has_flagged(args)

    def handle(self, op, args):
        first = args[0] if args else None
        if op.name == "contiguous" and flagged(first) and first._contig:
            return first  # PyTorch's contiguous() returns self, bits and all
        if op.kind is Kind.VIEW and isinstance(first, Tensor):
            return self._view(op, args, first)
        if op.name in PRODUCTS:
            return op.redispatch(self, args)
        takes = _gemm_takes(op, args) if op.name in GEMMS else None
        if takes is True:
            return op.redispatch(self, args)
        if takes is not None:
            return op.redispatch(self, tuple(_taken(a, takes) for a in args))
        resolved = tuple(_resolve_arg(a) for a in args)
        if op.mutates and flagged(first):
            value = resolved[0]
            op.redispatch(self, resolved)
            from .optable import OPS

            OPS["copy_"](*write_through(first, value))
            return first
        return op.redispatch(self, resolved)

    def _view(self, op, args, first: Tensor):
        if op.name == "view_as_real" and first._conj_bit:
            raise RuntimeError(_VIEW_AS_REAL_CONJ)
        if op.name in FLIPS:
            return op.redispatch(self, args)
        if op.name in REINTERPRETS:  # the same numbers in the other dtype: negated as well
            return set_bits(op.redispatch(self, args), False, first._neg_bit)
        return _propagate(op.redispatch(self, args), first)


def _gemm_takes(op, args):
    """What mm/bmm's kernel for these operands (one device, one dtype) takes of the bits: True
    (every flagged operand as it is), a predicate ``takes(operand)`` (those it accepts; the
    others are materialized), or None (none)."""
    a, b = args[0], args[1]
    if not (isinstance(a, Tensor) and isinstance(b, Tensor)) or a._dtype is not b._dtype:
        return None
    device = a._storage.device
    if device is not b._storage.device:
        return None
    try:
        kernel = op.kernel(device.type, a._dtype)
    except NotImplementedError:
        return None
    return getattr(kernel, "reads_bits", None) or None


def _taken(arg, takes):
    """``arg`` as the gemm kernel gets it: as it is unless flagged in a way it refuses."""
    return arg if not flagged(arg) or takes(arg) else resolve(arg)


LAYER = MathBitsLayer()
# Matrix-product rows that only run their decomposition (ember ops down to mm/bmm, whose calls
# meet this layer again): their flagged operands go down as they are.
PRODUCTS = frozenset(
    {"matmul", "mv", "dot", "vdot", "inner", "addmm", "addmv", "addbmm", "baddbmm", "linear"}
    | {"tensordot"}  # views, sums (which resolve the bits themselves) and one mm or dot
)
# The gemm rows, whose kernel may read the bits itself (``reads_bits``: True or a predicate).
GEMMS = frozenset({"mm", "bmm"})
# The view rows whose runners set the bits themselves.
FLIPS = frozenset({"_conj", "_neg_view"})
# The views between a complex tensor and its real pairs, which keep the negative bit (PyTorch's).
REINTERPRETS = frozenset({"view_as_real", "view_as_complex"})
_LIVE = [0]


def _released() -> None:
    _LIVE[0] -= 1
    if not _LIVE[0]:
        STACK.remove(LAYER)


def _track(t: Tensor) -> None:
    if not _LIVE[0]:
        STACK.install(LAYER)
    _LIVE[0] += 1
    weakref.finalize(t, _released)
