"""PyTorch's aten entry points that its compilers and decompositions emit (issue 13, batch
ops6): the masked gather and accumulate of upsampling's decompositions, max_pool2d's input
gradient, _segment_reduce, _batch_norm_with_update and the antialiased bilinear resize. Each is
a composite of existing ops, written as torch/_decomp (or PyTorch's CPU kernel) computes it, so
autograd comes from the parts."""

from __future__ import annotations

import numpy as np

from ember import _dtype as dt

from ..opdef import DTYPES_ALL, DTYPES_FLOAT, DTYPES_NUMERIC, Kind, OpDef, Promotion


def _check_masked_index(name, mask, indices):
    for index in indices:
        if index is not None and index.dtype.name not in ("int64", "int32"):
            raise RuntimeError(f"{name} found unexpected index type {index.dtype.name}")
    if mask.dtype.name != "bool":
        raise RuntimeError(f"{name} found unexpected mask type {mask.dtype.name}")


def _clamped(x, indices, low):
    """Each index clamped into its dim (PyTorch's unsafe ops skip the bounds check; masked
    positions may point anywhere). ``low`` is 0 or -size (negative indices wrap)."""
    key = []
    for dim, index in enumerate(indices):
        size = x.shape[dim]
        key.append(slice(None) if index is None else index.clamp(low(size), size - 1))
    return tuple(key)


# ---- _unsafe_masked_index --------------------------------------------------------------------
def _unsafe_masked_index(x, mask, indices, fill):
    import ember

    _check_masked_index("_unsafe_masked_index", mask, indices)
    if x.numel() == 0:  # every position is masked out: the indexing's shape, filled
        shape = ember.empty(x.shape, dtype=x.dtype, device=x.device)[tuple(indices)].shape
        return ember.full(shape, fill, dtype=x.dtype, device=x.device)
    picked = x[_clamped(x, indices, lambda size: 0)]
    return picked.masked_fill(mask.logical_not(), fill)


def _np_unsafe_masked_index(x, mask, indices, fill):
    key = tuple(
        slice(None) if i is None else np.clip(i, 0, x.shape[d] - 1) for d, i in enumerate(indices)
    )
    picked = (
        x[key] if x.size else np.zeros(np.broadcast_shapes(*[i.shape for i in indices]), x.dtype)
    )
    return np.where(mask, picked, np.asarray(fill).astype(x.dtype))


# ---- _unsafe_masked_index_put_accumulate -----------------------------------------------------
def _unsafe_masked_index_put_accumulate(x, mask, indices, values):
    _check_masked_index("_unsafe_masked_index_put_accumulate", mask, indices)
    if x.numel() == 0:
        return x.clone()
    masked = values.masked_fill(mask.logical_not(), 0)
    from ember._indexing import put_key  # index_put_ that also takes slices (None here)

    return put_key(x.clone(), _clamped(x, indices, lambda size: -size), masked, True)


def _np_unsafe_masked_index_put_accumulate(x, mask, indices, values):
    out = x.copy()
    if not x.size:
        return out
    key = tuple(
        slice(None) if i is None else np.clip(i, -x.shape[d], x.shape[d] - 1)
        for d, i in enumerate(indices)
    )
    np.add.at(out, key, np.where(mask, values, np.zeros((), values.dtype)))
    return out


# ---- max_pool2d_with_indices_backward ------------------------------------------------------
def _max_pool2d_with_indices_backward(
    grad_output, input, kernel_size, stride, padding, dilation, ceil_mode, indices
):
    # max_pool2d's input gradient: grad_output summed at the argmax of each window (indices
    # are flat in each (H, W) plane), as autograd's formula for max_pool2d_with_indices
    import ember

    shape = tuple(input.shape)
    # zeros that depend on input: PyTorch's result requires grad through it (its formula
    # for input is zeros_like), and where's backward gives exactly that, NaN inputs included
    nowhere = ember.zeros(shape, dtype=ember.bool, device=input.device)
    grad = ember.where(nowhere, input, 0).to(grad_output.dtype).flatten(-2)
    return grad.scatter_add(-1, indices.flatten(-2), grad_output.flatten(-2)).view(shape)


def _np_max_pool2d_with_indices_backward(
    grad_output, input, kernel_size, stride, padding, dilation, ceil_mode, indices
):
    planes = int(np.prod(input.shape[:-2], dtype=np.int64))
    grad = np.zeros((planes, input.shape[-2] * input.shape[-1]), grad_output.dtype)
    flat = indices.reshape(planes, -1)
    np.add.at(grad, (np.arange(planes)[:, None], flat), grad_output.reshape(planes, -1))
    return grad.reshape(input.shape)


# ---- _segment_reduce -------------------------------------------------------------------------
# PyTorch's result for an empty segment without initial=, per reduction
_EMPTY = {"max": -np.inf, "min": np.inf, "sum": 0.0, "prod": 1.0, "mean": np.nan}
_REDUCE_NAMES = {
    "sum": "sum",
    "prod": "prod",
    "mean": "mean",
    "max": "max",
    "amax": "max",
    "min": "min",
    "amin": "min",
}


def _segment_lengths(name, data, reduce, lengths, indices, offsets, axis, unsafe):
    """(reduction, axis, lengths as a host array [batch, segments]) after PyTorch's checks."""
    if reduce not in _REDUCE_NAMES:
        raise RuntimeError(
            f"reduce argument must be either sum, prod, mean, amax or amin, got {reduce}"
        )
    if indices is not None:
        raise RuntimeError(f"{name}(): indices based reduction is not supported yet.")
    if lengths is None and offsets is None:
        raise RuntimeError(f"{name}(): Either lengths or offsets must be defined.")
    counts = np.asarray((lengths if lengths is not None else offsets).tolist(), np.int64)
    if lengths is None:  # offsets: segment i is [offsets[i], offsets[i + 1])
        counts = np.diff(counts, axis=-1)
    axis = axis % data.ndim
    batch = int(np.prod(data.shape[:axis], dtype=np.int64))
    counts = counts.reshape(batch, -1)
    if not unsafe and ((counts < 0).any() or (counts.sum(-1) != data.shape[axis]).any()):
        raise RuntimeError(
            f"{name}(): Expected all rows of lengths along axis to sum to "
            "data.size(lengths.dim()-1) when !unsafe."
        )
    return _REDUCE_NAMES[reduce], axis, counts


def _one_segment(piece, reduce, initial, count):
    """One segment (dim 0 of piece) reduced as PyTorch's kernel does: initial= starts the
    accumulator (so mean is (initial + sum) / count) and is the result of an empty segment."""
    import ember

    if count == 0:
        fill = _EMPTY[reduce] if initial is None else initial
        return ember.full(piece.shape[1:], fill, dtype=piece.dtype, device=piece.device)
    if reduce in ("max", "min"):
        value = piece.amax(0) if reduce == "max" else piece.amin(0)
        if initial is None:
            return value
        bound = ember.full_like(value, initial)
        return ember.maximum(value, bound) if reduce == "max" else ember.minimum(value, bound)
    if reduce == "prod":
        value = piece.prod(0)
        return value if initial is None else value * initial
    value = piece.sum(0)
    value = value if initial is None else value + initial
    return value / count if reduce == "mean" else value


def _segment_reduce(
    data, reduce, lengths=None, indices=None, offsets=None, axis=0, unsafe=False, initial=None
):
    import ember

    if data.device.type == "meta":  # no lengths to read: the shape alone, from the arguments
        return _segment_reduce_meta(data, reduce, lengths, indices, offsets, axis)
    reduce, axis, counts = _segment_lengths(
        "segment_reduce", data, reduce, lengths, indices, offsets, axis, unsafe
    )
    rows = data.reshape((counts.shape[0],) + tuple(data.shape[axis:]))
    results = []
    for row, row_counts in zip(rows.unbind(0), counts, strict=True):
        starts = np.concatenate([[0], np.cumsum(row_counts)[:-1]])
        pieces = [
            _one_segment(row.narrow(0, int(start), int(n)), reduce, initial, int(n))
            for start, n in zip(starts, row_counts, strict=True)
        ]
        results.append(ember.stack(pieces))
    shape = tuple(data.shape[:axis]) + (counts.shape[1],) + tuple(data.shape[axis + 1 :])
    return ember.stack(results).reshape(shape)


def _segment_reduce_meta(data, reduce, lengths, indices, offsets, axis):
    """The result on the meta device: data's shape with axis replaced by the segment count."""
    import ember

    if reduce not in _REDUCE_NAMES or indices is not None or (lengths is None and offsets is None):
        _segment_lengths("segment_reduce", data, reduce, lengths, indices, offsets, axis, True)
    segments = lengths.shape[-1] if lengths is not None else offsets.shape[-1] - 1
    axis = axis % data.ndim
    shape = tuple(data.shape[:axis]) + (segments,) + tuple(data.shape[axis + 1 :])
    return ember.empty(shape, dtype=data.dtype, device=data.device)


def _run_segment_reduce(op, *args):
    """Only data is computed in the row's float dtypes (lengths and offsets are integer
    tensors), then the decomposition."""
    from ..kinds._common import unsupported_dtype
    from ..kinds.functional import refuse_non_tensors

    refuse_non_tensors(op, args)
    if args[0].dtype not in op.dtypes:
        raise unsupported_dtype(op, args[0].dtype)
    return op.decomposition(*args)


_run_segment_reduce.only_decomposes = True  # forward AD and vmap run the parts


def _np_one_segment(piece, reduce, initial, count):
    if count == 0:
        return _EMPTY[reduce] if initial is None else initial
    if reduce == "mean":
        return ((0.0 if initial is None else initial) + piece.sum(0)) / count
    ufunc = {"max": np.maximum, "min": np.minimum, "sum": np.add, "prod": np.multiply}[reduce]
    value = ufunc.reduce(piece, axis=0)
    return value if initial is None else ufunc(value, initial)


def _np_segment_reduce(
    data, reduce, lengths=None, indices=None, offsets=None, axis=0, unsafe=False, initial=None
):
    counts = lengths if lengths is not None else np.diff(offsets, axis=-1)
    axis = axis % data.ndim
    reduce = _REDUCE_NAMES[reduce]
    rows = data.reshape((-1,) + data.shape[axis:])
    counts = counts.reshape(rows.shape[0], -1)
    out = np.empty((rows.shape[0], counts.shape[1]) + data.shape[axis + 1 :], data.dtype)
    for b, row_counts in enumerate(counts):
        bounds = np.concatenate([[0], np.cumsum(row_counts)])
        for j, n in enumerate(row_counts):
            piece = rows[b, bounds[j] : bounds[j + 1]]
            out[b, j] = _np_one_segment(piece.astype(np.float64), reduce, initial, n)
    return out.reshape(data.shape[:axis] + (counts.shape[1],) + data.shape[axis + 1 :])


# ---- _batch_norm_with_update -----------------------------------------------------------------
def _batch_norm_with_update(input, weight, bias, running_mean, running_var, momentum, eps):
    # torch/_decomp: native_batch_norm in training (the running statistics updated in place)
    # plus the reserve space cuDNN would keep: an empty uint8 tensor on the CPU
    import ember

    out, save_mean, save_invstd = ember.ops.native_batch_norm(
        input, weight, bias, running_mean, running_var, True, momentum, eps
    )
    reserve = ember.empty(0, dtype=ember.uint8, device=input.device)
    return out, save_mean, save_invstd, reserve


def _np_batch_norm_with_update(input, weight, bias, running_mean, running_var, momentum, eps):
    from .nn_native import _np_native_batch_norm

    found = _np_native_batch_norm(input, weight, bias, running_mean, running_var, True, 0, eps)
    return (*found, np.zeros(0, np.uint8))


# The rows below sum several values per output in the storage dtype (accumulating puts, batch
# statistics), in an order each device picks: their half-precision results differ by ulps.
HALF_SUMS = {dt.float16: (1e-2, 1e-2), dt.bfloat16: (5e-2, 5e-2)}


# ---- _upsample_bilinear2d_aa -----------------------------------------------------------------
def _aa_sizes(input, output_size, scales_h, scales_w, scale_factors):
    """(output sizes, scales) of either overload: (output_size, scales_h, scales_w) or .vec's
    (output_size or None, scale_factors), whose size is floor(in * scale)."""
    if scale_factors is not None:
        if output_size is not None:
            raise RuntimeError("Must specify exactly one of output_size and scale_factors")
        scales = tuple(float(f) for f in scale_factors)
        sizes = tuple(int(n * f) for n, f in zip(input.shape[2:], scales, strict=True))
        return sizes, scales
    if output_size is None:
        raise RuntimeError("Must specify exactly one of output_size and scale_factors")
    return tuple(output_size), (scales_h, scales_w)


def _upsample_bilinear2d_aa(
    input, output_size, align_corners, scales_h=None, scales_w=None, scale_factors=None
):
    # interpolate(mode='bilinear', antialias=True): PIL's triangle filter widened by the
    # downscale, as one (out, in) matrix per spatial dim (nn/functional/_resample.py)
    from ember.nn.functional._resample import apply_along, resample_matrix

    sizes, scales = _aa_sizes(input, output_size, scales_h, scales_w, scale_factors)
    out, device = input, str(input.device)
    for dim, (target, scale) in enumerate(zip(sizes, scales, strict=True), start=2):
        matrix = resample_matrix(
            input.shape[dim],
            target,
            "bilinear",
            bool(align_corners),
            scale,
            True,
            device,
            input.dtype,
        )
        out = apply_along(out, dim, matrix)
    return out


def _np_upsample_bilinear2d_aa(
    input, output_size, align_corners, scales_h=None, scales_w=None, scale_factors=None
):
    from ember.nn.functional._resample import _antialias_matrix

    sizes, scales = _aa_sizes(input, output_size, scales_h, scales_w, scale_factors)
    out = input.astype(np.float64)
    for dim, (target, scale) in enumerate(zip(sizes, scales, strict=True), start=2):
        matrix = _antialias_matrix(input.shape[dim], target, bool(align_corners), scale, "bilinear")
        out = np.moveaxis(np.tensordot(matrix, np.moveaxis(out, dim, 0), 1), 0, dim)
    return out.astype(input.dtype)


ROWS = [
    OpDef(
        "_unsafe_masked_index(Tensor input, Tensor mask, Tensor?[] indices, Scalar fill) -> Tensor",
        Kind.INDEX,
        _np_unsafe_masked_index,
        promotion=Promotion.KEEP,
        dtypes=DTYPES_ALL,
        decomposition=_unsafe_masked_index,
        method=False,
        out=None,
        samples="unsafe_masked_index",
        notes="self[indices clamped into range] where mask, else fill (upsampling's gather)",
    ),
    OpDef(
        "_unsafe_masked_index_put_accumulate(Tensor input, Tensor mask, Tensor?[] indices, "
        "Tensor values) -> Tensor",
        Kind.INDEX,
        _np_unsafe_masked_index_put_accumulate,
        promotion=Promotion.KEEP,
        dtypes=DTYPES_ALL,
        decomposition=_unsafe_masked_index_put_accumulate,
        method=False,
        out=None,
        samples="unsafe_masked_index_put_accumulate",
        # Duplicate indices add up in the storage dtype in an order each device picks (the CUDA
        # emulator's float16 sum differed by one ulp of 0.69), as PyTorch's accumulating put.
        tolerances=HALF_SUMS,
        notes="a copy of self plus values (zero where not mask) summed at the clamped indices",
    ),
    OpDef(
        "max_pool2d_with_indices_backward(Tensor grad_output, Tensor input, int[2] kernel_size, "
        "int[2] stride, int[2] padding, int[2] dilation, bool ceil_mode, Tensor indices) -> Tensor",
        Kind.NN,
        _np_max_pool2d_with_indices_backward,
        promotion=Promotion.KEEP,
        dtypes=DTYPES_NUMERIC,
        decomposition=_max_pool2d_with_indices_backward,
        method=False,
        out=None,
        samples="max_pool2d_with_indices_backward",
        # Overlapping windows add their gradients at a shared maximum in the storage dtype, in
        # an order each device picks (as the accumulating put above).
        tolerances=HALF_SUMS,
        notes="grad_output summed into zeros shaped like input at the window maxima's indices",
    ),
    OpDef(
        "_segment_reduce(Tensor data, str reduce, *, Tensor? lengths=None, Tensor? indices=None, "
        "Tensor? offsets=None, int axis=0, bool unsafe=False, Scalar? initial=None) -> Tensor",
        Kind.REDUCTION,
        _np_segment_reduce,
        promotion=Promotion.KEEP,
        dtypes=DTYPES_FLOAT,
        decomposition=_segment_reduce,
        runner=_run_segment_reduce,
        method=False,
        out=None,
        samples="segment_reduce",
        notes="sum/prod/mean/max/min of consecutive segments along axis (lengths= or offsets=, "
        "one row per leading index); lengths are read on the host",
    ),
    OpDef(
        "_batch_norm_with_update(Tensor input, Tensor? weight, Tensor? bias, "
        "Tensor running_mean, Tensor running_var, float momentum, float eps) "
        "-> (Tensor output, Tensor save_mean, Tensor save_invstd, Tensor reserve)",
        Kind.NN,
        _np_batch_norm_with_update,
        dtypes=DTYPES_FLOAT,
        decomposition=_batch_norm_with_update,
        method=False,
        out=None,
        samples="batch_norm_with_update",
        tolerances=HALF_SUMS,
        notes="native_batch_norm in training (running statistics updated in place) and an "
        "empty uint8 reserve",
    ),
    OpDef(
        "_upsample_bilinear2d_aa(Tensor input, int[]? output_size, bool align_corners, "
        "float? scales_h=None, float? scales_w=None, float[]? scale_factors=None) -> Tensor",
        Kind.NN,
        _np_upsample_bilinear2d_aa,
        promotion=Promotion.KEEP,
        dtypes=frozenset((dt.float32, dt.float64)),  # PyTorch's CPU kernel: no halves
        decomposition=_upsample_bilinear2d_aa,
        method=False,
        out=None,
        samples="upsample_bilinear2d_aa",
        tolerances=HALF_SUMS,
        notes="interpolate(bilinear, antialias=True) of a 4-D input; PyTorch's two overloads "
        "in one row: (output_size, scales_h, scales_w) or .vec's (None, scale_factors=)",
    ),
]
