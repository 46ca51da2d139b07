"""``ReduceOp`` and ``Backend``, with ``torch.distributed``'s names and values."""

from __future__ import annotations

import datetime
import enum

default_pg_timeout = datetime.timedelta(minutes=30)


class TorchEnum(enum.IntEnum):
    """An int enum shown as PyTorch's C++ enums are (``<RedOpType.SUM: 0>``, ``RedOpType.SUM``)."""

    def __repr__(self) -> str:
        return f"<{type(self).__name__}.{self.name}: {self.value}>"

    def __str__(self) -> str:
        return f"{type(self).__name__}.{self.name}"


class _RedOpType(TorchEnum):
    SUM = 0
    AVG = 1
    PRODUCT = 2
    MIN = 3
    MAX = 4
    BAND = 5
    BOR = 6
    BXOR = 7
    PREMUL_SUM = 8


_RedOpType.__name__ = _RedOpType.__qualname__ = "RedOpType"


class ReduceOp:
    """How reductions combine values: ``ReduceOp.SUM``, ``AVG``, ``PRODUCT``, ``MIN``, ``MAX``
    and the bitwise ``BAND``, ``BOR``, ``BXOR`` (integer tensors; on bool tensors SUM and MAX
    are logical or, PRODUCT and MIN logical and)."""

    RedOpType = _RedOpType
    SUM = _RedOpType.SUM
    AVG = _RedOpType.AVG
    PRODUCT = _RedOpType.PRODUCT
    MIN = _RedOpType.MIN
    MAX = _RedOpType.MAX
    BAND = _RedOpType.BAND
    BOR = _RedOpType.BOR
    BXOR = _RedOpType.BXOR
    PREMUL_SUM = _RedOpType.PREMUL_SUM


_OP_NAMES = {m: m.name.lower() for m in _RedOpType if m is not _RedOpType.PREMUL_SUM}
_OP_NAMES[_RedOpType.PRODUCT] = "product"


def op_name(op) -> str:
    """The hook spec's name of a reduction (``"sum"``...), from a ReduceOp (a dict lookup:
    every collective call pays it)."""
    name = _OP_NAMES.get(op)
    if name is not None:
        return name
    if op == _RedOpType.PREMUL_SUM:
        raise ValueError("ReduceOp.PREMUL_SUM is not supported: scale the tensor, then use SUM")
    raise ValueError(f"Invalid reduce op: {op!r}")


def supports_complex(reduceOp) -> bool:  # noqa: N803 - PyTorch's name
    """Whether ``reduceOp`` is defined on complex tensors (not MAX, MIN, PRODUCT or bitwise)."""
    return reduceOp not in _NOT_COMPLEX


_NOT_COMPLEX = [_RedOpType.MAX, _RedOpType.MIN, _RedOpType.PRODUCT]
_NOT_COMPLEX += [_RedOpType.BAND, _RedOpType.BOR, _RedOpType.BXOR]


class Backend(str):
    """A collective backend's name (``Backend("MPI") == "mpi"``); the constants name PyTorch's.

    ember has the backends of the ``ember.distributed_backends`` entry-point group: ``mpi`` and
    ``nccl`` ship with it. A string such as ``"cpu:mpi,cuda:nccl"`` picks one per device type.
    """

    UNDEFINED = "undefined"
    GLOO = "gloo"
    NCCL = "nccl"
    UCC = "ucc"
    MPI = "mpi"

    def __new__(cls, name: str):
        if not isinstance(name, str):
            raise ValueError(f"Backend constructor parameter must be string-ish, got {name!r}")
        return super().__new__(cls, name.lower())
