"""Sample inputs for the generated op tests: one generator per ``OpDef.samples`` name.

A generator is ``gen(op, dtype, device, rng) -> iterable of Sample``: the arguments of one call
in schema order, with tensors described as ``Arr`` (values + memory layout, see ``sampling``) so
the same sample gives the ember arguments on any device and the numpy reference's arguments.
Rows without a ``samples`` name use their kind's default. The table below is the whole registry;
the coverage test fails for a name used in the op table that is missing here.
"""

from __future__ import annotations

from ember.dispatcher.opdef import Kind

from . import gen_activation_backward as activation_backward
from . import gen_amp as amp
from . import gen_complex as complex_rows
from . import gen_distribution_grads as distribution_grads
from . import gen_elementwise as ew
from . import gen_factory as fac
from . import gen_fft as fft
from . import gen_foreach as foreach
from . import gen_functional as functional
from . import gen_index as idx
from . import gen_lapack as lapack
from . import gen_linalg as la
from . import gen_nn as nn
from . import gen_optim as optim
from . import gen_recurrent as recurrent
from . import gen_reduction as red
from . import gen_scaled_mm as scaled_mm
from . import gen_special as special
from . import gen_structure as st
from . import gen_surface as surface
from . import gen_surface4b as surface4b
from . import gen_surface5_ops5nn as surface5_ops5nn
from . import gen_surface6_ops6 as surface6_ops6
from . import gen_surface_more as surface_more
from . import gen_surface_strided as surface_strided
from . import gen_surface_unique as surface_unique
from .sampling import Sample

GENERATORS = {
    # elementwise
    "unary": ew.unary,
    "unary_nonzero": ew.unary_nonzero,
    "unary_special": ew.unary_special,
    "binary": ew.binary,
    "binary_nonzero": ew.binary_nonzero,
    "binary_positive": ew.binary_positive,
    "pow": ew.pow_,
    "shift": ew.shift,
    "ternary": ew.ternary,
    "ternary_nonzero": ew.ternary_nonzero,
    "where": ew.where,
    "clamp": ew.clamp,
    # reductions and scans
    "reduction": red.reduction,
    "reduction_nonempty": red.reduction_nonempty,
    "reduction_dims": red.reduction_dims,
    "reduction_one_dim": red.reduction_one_dim,
    "reduction_one_dim_optional": red.reduction_one_dim_optional,
    "scan": red.scan,
    "norm": red.norm,
    # views, data movement, copies
    "view": st.view,
    "split": st.view,
    "as_strided": st.as_strided,
    "shape": st.view,
    "cat": st.cat,
    "matrix": st.matrix,
    "copy": st.copy,
    "to_copy": st.to_copy,
    "fill": st.fill,
    # indexing and sorting
    "gather": idx.gather,
    "scatter": idx.scatter,
    "index_select": idx.index_select,
    "index_add": idx.index_add,
    "take": idx.take,
    "put": idx.put,
    "masked": idx.masked,
    "index_fill": idx.index_fill,
    "nonzero": idx.nonzero,
    "sort": idx.sort,
    "topk": idx.topk,
    "searchsorted": idx.searchsorted,
    # matrix products
    "mm": la.mm,
    "bmm": la.bmm,
    "matmul": la.matmul,
    "dot": la.dot,
    "mv": la.mv,
    "addmm": la.addmm,
    "baddbmm": la.baddbmm,
    "einsum": la.einsum,
    "diag": la.diag,
    # nn
    "along_dim": nn.along_dim,
    "layer_norm": nn.layer_norm,
    "pad": nn.pad,
    "im2col": nn.im2col,
    "col2im": nn.col2im,
    "max_pool2d": nn.max_pool2d,
    "grid_sampler": nn.grid_sampler,
    "conv2d": nn.conv2d,
    # factories and random
    "factory": fac.factory,
    "arange": fac.arange,
    "linspace": fac.linspace,
    "random": fac.random,
    # nn.functional rows
    **functional.GENERATORS,
    # GradScaler's ops
    **amp.GENERATORS,
    **foreach.GENERATORS,
    **optim.GENERATORS,
    # ember.special rows
    **special.GENERATORS,
    # FFT primitives
    **fft.GENERATORS,
    # PyTorch's core surface (dispatcher/optable/surface_*.py)
    **surface.GENERATORS,
    **surface_more.GENERATORS,
    **surface_strided.GENERATORS,
    **surface_unique.GENERATORS,
    **surface4b.GENERATORS,
    **surface5_ops5nn.GENERATORS,
    **surface6_ops6.GENERATORS,
    **recurrent.GENERATORS,
    **scaled_mm.GENERATORS,
    **distribution_grads.GENERATORS,
    **activation_backward.GENERATORS,
}

GENERATORS.update(lapack.GENERATORS)  # ember.linalg's rows (tests/ops/gen_lapack.py)
GENERATORS.update(complex_rows.GENERATORS)  # complex dtypes' rows (tests/ops/gen_complex.py)

# The generator of rows that name none, by kind (elementwise rows always name theirs).
DEFAULT_BY_KIND = {
    Kind.COPY: "unary",
    Kind.SHAPE: "shape",
    Kind.VIEW: "view",
    Kind.REDUCTION: "reduction",
    Kind.SCAN: "scan",
    Kind.SORT: "sort",
    Kind.RANDOM: "random",
    Kind.FACTORY: "factory",
    Kind.NN: "unary",
}


def generator_name(op) -> str | None:
    base = op.inplace_of or op
    return base.defn.samples or DEFAULT_BY_KIND.get(base.kind)


def samples(op, dtype, device, rng) -> list[Sample]:
    """Every sample of ``op`` for ``dtype``, with all arguments (KeyError: no generator)."""
    name = generator_name(op)
    if name not in GENERATORS:
        raise KeyError(f"{op.name}: no sample generator named {name!r} (tests/ops/samples.py)")
    return [s.complete(op) for s in GENERATORS[name](op.inplace_of or op, dtype, device, rng)]


__all__ = ["DEFAULT_BY_KIND", "GENERATORS", "Sample", "generator_name", "samples"]
