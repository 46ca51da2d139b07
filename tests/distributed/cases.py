"""The inputs of the collective tests, made the same way in the ranks and in the test process,
and the numpy oracle of every collective. Imported by jobs/collectives.py and
test_collectives.py."""

from __future__ import annotations

import zlib

import ml_dtypes
import numpy as np

WORLD = 3
DTYPES = ["bool", "uint8", "int8", "int16", "int32", "int64"]
DTYPES += ["float16", "bfloat16", "float32", "float64"]
NUMPY = {name: np.dtype(name) for name in DTYPES if name != "bfloat16"}
NUMPY["bfloat16"] = np.dtype(ml_dtypes.bfloat16)
REDUCE_OPS = ["sum", "avg", "product", "min", "max", "band", "bor", "bxor"]
SHAPE = (2, 3)
# Half types reduce in float32 and round once (distributed/backends/mpi.py): one rounding.
TOLERANCE = {"float16": 1e-3, "bfloat16": 8e-3, "float32": 1e-6, "float64": 1e-12}


def value(rank: int, dtype: str, salt: str, shape=SHAPE) -> np.ndarray:
    """Rank ``rank``'s input for the case ``salt``: small values, so sums and products of
    three ranks stay exact in every integer type."""
    rng = np.random.default_rng(zlib.crc32(f"{rank}/{dtype}/{salt}".encode()))
    if dtype == "bool":
        return rng.random(shape) < 0.5
    if dtype.startswith(("int", "uint")):
        low = 0 if dtype == "uint8" else -4
        return rng.integers(low, 5, shape).astype(dtype)
    return rng.standard_normal(shape).astype(np.float32).astype(NUMPY[dtype])


def error_of(op: str, dtype: str) -> str | None:
    """The exception type a reduction raises for ``dtype`` (None: it works)."""
    if dtype == "bool" and op == "avg":
        return "ValueError"
    if op in ("band", "bor", "bxor") and NUMPY[dtype].kind not in "iub":
        return "TypeError"
    return None


def reduce(arrays: list[np.ndarray], op: str, dtype: str) -> np.ndarray:
    """The reduction of the ranks' arrays as the backends define it."""
    if dtype == "bool":
        table = {"sum": np.any, "max": np.any, "bor": np.any, "product": np.all, "min": np.all}
        table["band"] = np.all
        if op == "bxor":
            return np.logical_xor.reduce(np.stack(arrays), axis=0)
        return table[op](np.stack(arrays), axis=0)
    half = dtype in ("float16", "bfloat16")
    wide = np.stack([a.astype(np.float32) if half else a for a in arrays])
    ufunc = {"sum": np.add, "avg": np.add, "product": np.multiply, "min": np.minimum}
    ufunc.update(max=np.maximum, band=np.bitwise_and, bor=np.bitwise_or, bxor=np.bitwise_xor)
    out = ufunc[op].reduce(wide, axis=0)
    if op == "avg":
        out = out / len(arrays) if out.dtype.kind == "f" else np.trunc(out / len(arrays))
    return out.astype(NUMPY[dtype])


def split_rows(sender: int, receiver: int) -> int:
    """Rows ``sender`` sends ``receiver`` in the uneven all_to_all_single case."""
    return sender + receiver + 1
