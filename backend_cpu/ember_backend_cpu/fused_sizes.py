"""Fused kernels whose sizes are given per call (a description's ``dynamic`` dims).

A size-generic compiled program (ember's compiler/dynamic.py) describes a chain at the sizes it
was captured at and lists in ``dynamic`` the element dims whose sizes change from call to call.
The kernel's loop nest is the same for every size: the dims every input walks as one are merged
the same way (dense inputs, sizes 0 and 1 specialised), so only the numbers change, the row
count, the merged sizes, the outer strides. ``Sizes`` finds which of them depend on the dynamic
dims, by laying the loop nest out at the captured sizes and at two other sizes, and names them
in the C source (``em_v[i]``, read from an int64 array passed after the tensors); the others
stay constants the C compiler folds (the inner strides, 0 or 1, keep the loop vectorised).
Each call lays the nest out for its own sizes (cached per shape) and passes the array.
"""

from __future__ import annotations

import math

import numpy as np

PROBES = (3, 7)  # added to each dynamic dim for the two probe layouts (distinct, not 0 or 1)


class Sizes:
    """The runtime sizes of a description with ``dynamic`` dims; ``why`` says why not."""

    def __init__(self, d, row: bool, collapse, block: int):
        self.d, self.row, self.collapse, self.block = d, row, collapse, block
        self.dims = tuple(d.dynamic)
        self.why = ""
        self.source = self._sources()
        self._cache: dict = {}
        if self.why:
            return
        base = self.flat(d.shape)
        probes = [self.flat(self._probe(k)) for k in PROBES]
        if any(p is None for p in (base, *probes)) or any(
            len(p) != len(base) or [v == 0 for v in p] != [v == 0 for v in base] for p in probes
        ):
            self.why = "the loop nest differs between sizes"
            return
        # the entries that change with the sizes are read at run time, the others are constants
        self.varies = [any(p[i] != base[i] for p in probes) for i in range(len(base))]
        self.base = base

    def _probe(self, extra: int) -> tuple:
        return tuple(n + extra if i in self.dims else n for i, n in enumerate(self.d.shape))

    def _sources(self):
        """Per dynamic dim, where a call's tensors hold its size: ``(tensor index, dim)``."""
        d = self.d
        if self.row and len(d.shape) - 1 in self.dims:
            self.why = "a row kernel's row length is dynamic"
            return ()
        found = []
        rank = len(d.shape)
        for dim in self.dims:
            for k, spec in enumerate(d.inputs):
                lead = rank - len(spec.shape)
                walk = [n if stride else 1 for n, stride in zip(d.shape, spec.strides)]
                if lead < 0 or list(spec.shape) != walk[lead:]:
                    continue  # read once per row (a row tail's target): not of the element dims
                if dim >= lead and spec.strides[dim]:
                    found.append((len(d.outputs) + k, dim - lead))
                    break
            else:
                for k, index in enumerate(d.outputs):
                    step = d.steps[index]
                    if not getattr(step, "row", False) and not getattr(step, "total", False):
                        found.append((k, dim))
                        break
                else:
                    self.why = f"no tensor of the call holds dim {dim}'s size"
                    return ()
        return tuple(found)

    def layout(self, shape: tuple):
        strides = [_walk(spec.strides, shape) for spec in self.d.inputs]
        return layout(shape, strides, self.row, self.collapse, self.block)

    def flat(self, shape: tuple):
        numel, rows, sizes, strides = self.layout(shape)
        return [numel, rows, *sizes, *(s for st in strides for s in st)]

    def named(self):
        """The layout at the captured sizes with each size-dependent entry a C name, and the
        lines declaring those names from ``em_v``."""
        names = [f"em_{i}" if v else n for i, (n, v) in enumerate(zip(self.base, self.varies))]
        numel, rows, *rest = names
        count = len(self.layout(self.d.shape)[2])
        sizes, flat = rest[:count], rest[count:]
        strides = [flat[k * count : (k + 1) * count] for k in range(len(self.d.inputs))]
        decl = [f"    const int64_t em_{i} = em_v[{i}];" for i, v in enumerate(self.varies) if v]
        return numel, rows, sizes, strides, decl

    def shape_of(self, tensors) -> tuple:
        shape = list(self.d.shape)
        for dim, (k, own) in zip(self.dims, self.source):
            shape[dim] = tensors[k]._shape[own]
        return tuple(shape)

    def arguments(self, tensors) -> tuple:
        """``(numel, the size-dependent numbers)`` for a call's tensors: a GPU kernel takes
        them as arguments (ember_backend_gpu's fused/chain.py)."""
        numel, _address = self.values(tensors)
        return numel, self._cache[self.shape_of(tensors)][3]

    def values(self, tensors):
        """``(numel, the array's address)`` for a call's tensors (kept per shape)."""
        shape = self.shape_of(tensors)
        found = self._cache.get(shape)
        if found is None:
            flat = self.flat(shape)
            if len(flat) != len(self.base) or any(
                (a == 0) != (b == 0) for a, b in zip(flat, self.base)
            ):  # a size 1 merges dims otherwise (the compiler specialises sizes 0 and 1)
                raise ValueError(f"fused kernel built for sizes like {self.d.shape}: not {shape}")
            array = np.asarray(flat, dtype=np.int64)
            varying = [int(n) for n, v in zip(flat, self.varies) if v]
            found = (math.prod(shape), array, array.ctypes.data, varying)
            self._cache[shape] = found
        return found[0], found[2]


def layout(shape: tuple, strides: list, row: bool, collapse, block: int) -> tuple:
    """``(numel, rows, sizes, strides per input)`` of a kernel's loop nest at ``shape``: the
    output's dims that every input walks as one merged (``collapse``); a row kernel (``row``)
    keeps the last dim apart and runs a row per iteration, an elementwise one rows of the
    merged output (rows of ``block`` elements when it is one dim)."""
    if row:
        outer, ostrides = collapse(tuple(shape[:-1]), [s[:-1] for s in strides])
        sizes = [*outer, shape[-1]]
        strides = [[*o, s[-1]] for o, s in zip(ostrides, strides)]
        rows = math.prod(outer)
    else:
        sizes, strides = collapse(tuple(shape), strides)
        one = len(sizes) == 1
        rows = max(1, -(-sizes[0] // block)) if one else math.prod(sizes[:-1])
    return math.prod(shape), rows, list(sizes), [list(s) for s in strides]


def _walk(captured: tuple, shape: tuple) -> list:
    """An input's element strides at ``shape``: contiguous over the dims it walks (a nonzero
    stride at capture), 0 over the ones it repeats."""
    out = [0] * len(shape)
    step = 1
    for i in range(len(shape) - 1, -1, -1):
        if captured[i] and shape[i] != 1:
            out[i] = step
            step *= shape[i]
    return out
