"""``EMBER_DISTRIBUTED_DEBUG=DETAIL`` (or PyTorch's ``TORCH_DISTRIBUTED_DEBUG``): before each
collective, the ranks exchange what they are about to run (op, dtype, shape) and every rank
raises, naming the ranks that differ, instead of exchanging mismatched bytes or hanging.

It costs one small all-gather per collective, so it is off by default, as in PyTorch. Checks
that need no exchange (list lengths, a gathered tensor's size) always run. ``set_debug_level``
overrides the environment, as in PyTorch.
"""

from __future__ import annotations

import os

import numpy as np

from ._types import TorchEnum

_OPS = [
    "all_reduce",
    "broadcast",
    "reduce",
    "all_gather",
    "all_gather_into_tensor",
    "gather",
    "scatter",
    "reduce_scatter",
    "reduce_scatter_tensor",
    "all_to_all_single",
    "all_to_all",
]
_DTYPES = ["bool", "uint8", "int8", "int16", "int32", "int64"]
_DTYPES += ["float16", "bfloat16", "float32", "float64"]
_WIDTH = 12  # op, dtype, ndim, and up to 9 dims


class DebugLevel(TorchEnum):
    """How much ember.distributed checks and logs (``torch.distributed.DebugLevel``)."""

    OFF = 0
    INFO = 1
    DETAIL = 2


_LEVEL: list = [None]  # set_debug_level's level; None: read the environment at each look


def _env_level() -> str:
    mode = os.environ.get("EMBER_DISTRIBUTED_DEBUG") or os.environ.get("TORCH_DISTRIBUTED_DEBUG")
    return (mode or "OFF").upper()


def get_debug_level() -> DebugLevel:
    """The debug level: the one ``set_debug_level`` set, else ``EMBER_DISTRIBUTED_DEBUG`` (or
    PyTorch's ``TORCH_DISTRIBUTED_DEBUG``) as it is now, an unknown value counting as OFF."""
    if _LEVEL[0] is not None:
        return _LEVEL[0]
    return DebugLevel.__members__.get(_env_level(), DebugLevel.OFF)


def set_debug_level(level: DebugLevel) -> None:
    """Set the debug level, whatever the environment says."""
    if not isinstance(level, DebugLevel):
        raise TypeError(f"set_debug_level(): expected a DebugLevel, got {level!r}")
    _LEVEL[0] = level


def set_debug_level_from_env() -> None:
    """Set the debug level from ``EMBER_DISTRIBUTED_DEBUG`` (else ``TORCH_DISTRIBUTED_DEBUG``;
    unset: OFF)."""
    name = _env_level()
    if name not in DebugLevel.__members__:
        raise ValueError(
            "The value of EMBER_DISTRIBUTED_DEBUG (or TORCH_DISTRIBUTED_DEBUG) must be OFF, "
            "INFO, or DETAIL."
        )
    _LEVEL[0] = DebugLevel[name]


def enabled() -> bool:
    return get_debug_level() == DebugLevel.DETAIL


def _fingerprint(op: str, tensors) -> np.ndarray:
    first = tensors[0]
    shape = list(first.shape)[: _WIDTH - 3]
    row = [_OPS.index(op) if op in _OPS else len(_OPS), _DTYPES.index(first.dtype.name), len(shape)]
    return np.array(row + shape + [-1] * (_WIDTH - 3 - len(shape)), dtype=np.int64)


def _describe(row) -> str:
    op = _OPS[row[0]] if row[0] < len(_OPS) else "other"
    shape = [int(d) for d in row[3 : 3 + row[2]]]
    dtype = _DTYPES[row[1]]
    return f"CollectiveFingerPrint(OpType={op.upper()}, TensorShape={shape}, TensorDtypes={dtype})"


def check(pg, comm, op: str, tensors) -> None:
    """Compare this collective with every rank's (a no-op unless DETAIL is on)."""
    if not enabled() or op in ("send", "recv") or not tensors:
        return
    mine = _fingerprint(op, tensors)
    host = "cpu" if "cpu" in pg._backends else None
    if host is None:
        return  # device-memory backends would need a device buffer: not checked
    cpu_comm, _memory = pg.communicator("cpu")
    rows = np.empty(_WIDTH * pg.size(), dtype=np.int64)
    if not cpu_comm.all_gather(mine, rows).wait(pg._timeout):
        raise RuntimeError(f"{op}: the DETAIL consistency check timed out")
    rows = rows.reshape(pg.size(), _WIDTH)
    # Shapes may differ by design where ranks hold different amounts (all_to_all, gather lists)
    columns = slice(0, 3) if op in ("all_to_all_single", "all_to_all") else slice(None)
    for rank, row in enumerate(rows):
        if not np.array_equal(row[columns], mine[columns]):
            raise RuntimeError(
                f"Detected mismatch between collectives on ranks. Rank {pg.rank()} is running "
                f"collective: {_describe(mine)}, but Rank {rank} is running collective: "
                f"{_describe(row)}."
            )
