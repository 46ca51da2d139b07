"""PyTorch's ``_saved_<name>`` attributes that are not tensors an ember formula saved: the
call's other arguments under PyTorch's names, and what PyTorch's node keeps about a call that
ember computed from parts (``mean`` shown as ``MeanBackward1``, ``mse_loss`` as
``MseLossBackward0``, advanced indexing as ``IndexBackward0``, see ``graph_names.Shown``).

A part's own node saved what its formula needs, under its own names; what PyTorch's node would
have saved comes from the call's arguments, kept by name on the shown node. ``SAVED`` says, per
PyTorch node name, which attributes such a node has and how each is read from them; other nodes
answer with the argument of the asked name (``DERIVED`` and ``ALIASES`` where PyTorch's differs).
"""

from __future__ import annotations

# PyTorch's at::Reduction enum, which its loss nodes save as an int
_REDUCTION = {"none": 0, "mean": 1, "sum": 2}


def _arg(name: str):
    return lambda values: values.get(name)


def _dims(name: str):
    """An int[] argument as PyTorch keeps it: a tuple, one int given as a one-tuple."""

    def read(values):
        value = values.get(name)
        return (value,) if isinstance(value, int) else tuple(value)

    return read


def _reduction(values):
    reduction = values.get("reduction", "mean")  # an int already in nll_loss's rows
    return reduction if isinstance(reduction, int) else _REDUCTION[reduction]


def _pair(name: str, default):
    def read(values):
        value = values.get(name, default)
        return tuple(value) if isinstance(value, (list, tuple)) else (value, value)

    return read


def _split_size(values):
    """split's int, or the one chunk computes (PyTorch's chunk is a split)."""
    if "chunks" not in values:
        return values["split_size_or_sections"]
    return -(-_shape(values, "input")[values["dim"]] // values["chunks"])


def _split_sizes(values):
    if "chunks" not in values:
        return tuple(values["split_size_or_sections"])
    return (0,) * values["chunks"]  # chunk of an empty dim


def _total_weight(values):
    """What PyTorch's nll_loss computes beside the loss and its node keeps: the summed class
    weight of the targets that count (0 without a reduction), in the input's dtype."""
    import ember

    x, target = values["input"], values["target"]
    if values.get("reduction", "mean") == "none":
        return ember.zeros((), dtype=x.dtype, device=x.device)
    with ember.no_grad():
        valid = target != values.get("ignore_index", -100)
        counted = valid.to(x.dtype)
        if values.get("weight") is not None:
            counted = counted * values["weight"][target.masked_fill(~valid, 0)]
        return counted.sum()


def _bias_sizes(values):
    """A convolution's bias sizes ((0,) without one): a table row's node keeps the sizes of its
    tensor arguments (``Call.shapes``), not the bias, which its formula does not save."""
    shapes = getattr(values, "shapes", None)
    if shapes is not None:
        return shapes.get("bias", (0,))
    return (0,) if values.get("bias") is None else tuple(values["bias"].shape)


_LOSS = {"self": _arg("input"), "target": _arg("target"), "reduction": _reduction}
_CONV = {
    "input": _arg("input"),
    "weight": _arg("weight"),
    "stride": _pair("stride", 1),
    "padding": _pair("padding", 0),
    "dilation": _pair("dilation", 1),
    "groups": lambda values: values.get("groups", 1),
    "transposed": lambda values: False,
    "output_padding": lambda values: (0, 0),
    "bias_sym_sizes_opt": _bias_sizes,
}

SAVED = {
    "IndexBackward0": {"indices": _arg("indices")},
    "MeanBackward1": {"dim": _dims("dim"), "keepdim": lambda values: bool(values.get("keepdim"))},
    "SplitBackward0": {"dim": _arg("dim"), "split_size": _split_size},
    "SplitWithSizesBackward0": {"dim": _arg("dim"), "split_sizes": _split_sizes},
    "MseLossBackward0": _LOSS,
    "HuberLossBackward0": {**_LOSS, "delta": lambda values: values.get("delta", 1.0)},
    "SmoothL1LossBackward0": {**_LOSS, "beta": lambda values: values.get("beta", 1.0)},
    "BinaryCrossEntropyBackward0": {**_LOSS, "weight": _arg("weight")},
    "BinaryCrossEntropyWithLogitsBackward0": {
        **_LOSS,
        "weight": _arg("weight"),
        "pos_weight": _arg("pos_weight"),
    },
    "NllLossBackward0": {
        **_LOSS,
        "weight": _arg("weight"),
        "ignore_index": lambda values: values.get("ignore_index", -100),
        "total_weight": _total_weight,
    },
    "ConvolutionBackward0": _CONV,
}
SAVED["NllLoss2DBackward0"] = SAVED["NllLossBackward0"]
# the margin losses ATen computes as one op (nn/functional/margin.py shows their node)
SAVED["SoftMarginLossBackward0"] = _LOSS
SAVED["MultiMarginLossBackward0"] = {
    **_LOSS,
    "p": _arg("p"),
    "margin": _arg("margin"),
    "weight": _arg("weight"),
}
SAVED["MultilabelMarginLossBackward0"] = {**_LOSS, "is_target": _arg("is_target")}
SAVED["UnsafeSplitBackward0"] = SAVED["SplitBackward0"]
SAVED["UnsafeSplitWithSizesBackward0"] = SAVED["SplitWithSizesBackward0"]


_INT64_MAX = (1 << 63) - 1
_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_SCALE = 1.0507009873554804934193349852946


def _slice_end(values):
    """slice's end (None: PyTorch's INT64_MAX), or narrow's start + length."""
    if "length" in values:
        return values["start"] + values["length"]
    return _INT64_MAX if values["end"] is None else values["end"]


def _one(dim):
    return dim[0] if isinstance(dim, (list, tuple)) else dim


def _repeats(values):
    """repeat's, or tile's dims padded to the input's rank with ones (PyTorch's tile is a
    repeat)."""
    if "repeats" in values:
        return tuple(values["repeats"])
    dims = values["dims"]
    dims = (dims,) if isinstance(dims, int) else tuple(dims)
    return (1,) * (values["input"].ndim - len(dims)) + dims


def _ord(values):
    """The order of a vector norm: ``norm``'s ``p``, and the Frobenius norm's 2."""
    order = values.get("ord", values.get("p", 2))
    return 2 if order in ("fro", None) else order


def _norm_dims(values):
    """A vector norm's dims: the matrix norm's two, which PyTorch wraps."""
    dims = values.get("dim")
    if dims is None:
        return None
    dims = (dims,) if isinstance(dims, int) else tuple(dims)
    if values.get("ord") == "fro":
        dims = tuple(d % values["input"].ndim for d in dims)
    return dims


class Call(dict):
    """A table op's call as its node keeps it: the arguments by name, ``shapes``, the sizes of
    its tensor arguments by name, and the tensors its formula saved (``saved``, of node
    ``owner``), unpacked when read as ``call[name]``."""

    __slots__ = ("owner", "saved", "shapes")

    def __missing__(self, name: str):
        saved = self.saved.get(name) if self.saved else None
        if saved is None or isinstance(saved, tuple):
            raise KeyError(name)
        return saved.unpack(self.owner)


def _shape(values, name: str) -> tuple:
    shapes = getattr(values, "shapes", None)
    return shapes[name] if shapes is not None else tuple(values[name].shape)


def _permutation(values):
    """permute's dims, or movedim's as the permute PyTorch's movedim is: each destination
    takes its source, the other dims keep their order."""
    if "dims" in values:
        return tuple(values["dims"])
    ndim = len(_shape(values, "input"))
    source, destination = (
        [d % max(ndim, 1) for d in ((v,) if isinstance(v, int) else v)]
        for v in (values["source"], values["destination"])
    )
    rest = iter(d for d in range(ndim) if d not in source)
    moved = dict(zip(destination, source))
    return tuple(moved[d] if d in moved else next(rest) for d in range(ndim))


def _statistic(kind: str, which: int):
    """A normalisation's mean (``which`` 1) or 1 / std (2), which PyTorch's node keeps as
    result1 and result2 and ember's formula recomputes: from the saved input when asked (a
    layer_norm node whose forward ran native_layer_norm's kernel keeps them: read before this).
    ``kind``: batch norm's per channel (dims 0, 2, ...), layer norm's over the trailing dims
    (kept)."""

    def read(values):
        name = f"result{which}"
        if name in values:  # the call kept it (batch norm computes both)
            return values[name]
        import ember

        x = values["input"]
        if kind == "batch":
            dims, keep = [0, *range(2, x.ndim)], False
        else:
            dims, keep = list(range(x.ndim - len(values["normalized_shape"]), x.ndim)), True
        with ember.no_grad():
            if which == 1:
                return x.mean(dims, keepdim=keep)
            return ember.rsqrt(x.var(dims, correction=0, keepdim=keep) + values["eps"])

    return read


def _log_sigmoid_buffer(x):
    """What PyTorch's CPU log_sigmoid forward computes beside its output and its node keeps,
    ``exp(-|x|)`` (its CUDA kernel keeps an empty one): ember's formula recomputes it."""
    import ember

    if x.device.type != "cpu":
        return x.new_empty((0,))
    with ember.no_grad():
        return ember.exp(-x.abs())


def _lu_factor(index: int, transposed: bool):
    """The LU factors (``index`` 0) or pivots (1) of A that PyTorch's node keeps: det's
    factor a contiguous real A's transpose (the same det, no copy into column-major order),
    solve's A itself (under autograd, as torch 2.13 shows)."""

    def read(values):
        import ember

        matrix = values["A"]
        if transposed and matrix.is_contiguous() and not matrix.is_complex():
            matrix = matrix.mT
        with ember.no_grad():
            return ember.linalg.lu_factor(matrix)[index]

    return read


def _attention(reader: str):
    """What PyTorch's CPU flash-attention node keeps beyond the call's arguments, computed
    from them when asked (by nn.functional.attention, which shows the node)."""

    def read(values):
        from ember.nn.functional import attention

        return getattr(attention, reader)(values)

    return read


# Attributes PyTorch's node computes from the call or names differently from ember's argument
# (``narrow`` is PyTorch's slice, ``norm``'s ``p`` its ``ord``): read before the argument of
# that name, and absent (AttributeError) when the call lacks what they are computed from.
DERIVED = {
    "SliceBackward0": {
        "start": lambda values: values["start"] or 0,
        "end": _slice_end,
        "step": lambda values: values.get("step", 1),
    },
    "LinalgVectorNormBackward0": {"ord": _ord, "dim": _norm_dims},
    # ATen's at::norm(x, p, dim, keepdim) (pairwise_distance's): p as a float, dim a tuple
    "NormBackward1": {"p": lambda values: float(values["p"]), "dim": _norm_dims},
    "RollBackward0": {"dims": lambda values: tuple(values.get("dims") or ())},
    "PermuteBackward0": {"dims": _permutation},
    "IndexAddBackward0": {"source_dim": lambda values: len(_shape(values, "source"))},
    # squeeze(int): PyTorch's overload takes one dim (ember's row a list of them)
    "SqueezeBackward1": {"dim": lambda values: _one(values["dim"])},
    "SqueezeBackward4": {"dim": lambda values: _one(values["dim"])},
    "NativeBatchNormBackward0": {
        "result1": _statistic("batch", 1),
        "result2": _statistic("batch", 2),
    },
    "NativeLayerNormBackward0": {
        "result1": _statistic("layer", 1),
        "result2": _statistic("layer", 2),
    },
    "RepeatBackward0": {"repeats": _repeats},
    "LogSigmoidBackward0": {"buffer": lambda values: _log_sigmoid_buffer(values["input"])},
    # LAPACK factors PyTorch's node keeps and ember's formula does not need: computed when asked
    "LinalgDetBackward0": {"LU": _lu_factor(0, True), "pivots": _lu_factor(1, True)},
    "LinalgSolveExBackward0": {"LU": _lu_factor(0, False), "pivots": _lu_factor(1, False)},
    "LinalgSvdBackward0": {"full_matrices": lambda values: values.get("full_matrices", False)},
    "ScaledDotProductFlashAttentionForCpuBackward0": {
        "attn_mask": _attention("flash_mask"),
        "logsumexp": _attention("flash_logsumexp"),
    },
    # add/sub keep alpha (1 unless given: ember's rows take none, _frontends scales first)
    **{
        f"{name}Backward{i}": {"alpha": lambda values: values.get("alpha", 1)}
        for name, i in (("Add", 0), ("Sub", 0), ("Rsub", 0), ("Rsub", 1))
    },
    # matmul shown as the product PyTorch picks: its second operand under that op's name
    "MmBackward0": {"mat2": lambda values: values["other"]},
    "MvBackward0": {"vec": lambda values: values["other"]},
    "DotBackward0": {"tensor": lambda values: values["other"]},
    "ProdBackward1": {"dim": lambda values: _one(values["dim"])},
    # selu is PyTorch's elu with fixed alpha and scale
    "EluBackward0": {
        "alpha": lambda values: values.get("alpha", _SELU_ALPHA),
        "scale": lambda values: 1.0 if "alpha" in values else _SELU_SCALE,
        "input_scale": lambda values: 1.0,
    },
}


def _upsample_size(values):
    """The output size PyTorch's upsample node keeps, also when the call gave scale factors."""
    if values.get("output_size") is not None:
        return tuple(values["output_size"])
    shape = values["input"].shape[2:]
    return tuple(int(n * s) for n, s in zip(shape, values["scale_factors"]))


def _upsample_scale(index: int):
    def read(values):
        factors = values.get("scale_factors")
        return None if factors is None else float(factors[index])

    return read


SCALE_NAMES = {
    1: ("scales",),
    2: ("scales_h", "scales_w"),
    3: ("scales_d", "scales_h", "scales_w"),
}
# the upsample rows (F.interpolate): output_size computed, one scales_* per spatial dim
for _mode, _ranks in (
    ("Nearest", (1, 2, 3)),
    ("NearestExact", (1, 2, 3)),
    ("Linear", (1,)),
    ("Bilinear", (2,)),
    ("Bicubic", (2,)),
    ("Trilinear", (3,)),
):
    for _rank in _ranks:
        DERIVED[f"Upsample{_mode}{_rank}DBackward0"] = {
            "output_size": _upsample_size,
            **{name: _upsample_scale(i) for i, name in enumerate(SCALE_NAMES[_rank])},
        }


# Ops whose Python-number operand PyTorch makes a 0-dim tensor, which its node saves as such
WRAPS_NUMBERS = frozenset({"add", "sub", "mul", "div"})


def wrapped(value):
    """A Python number as PyTorch wraps it: a 0-dim tensor of its widest dtype."""
    if value is None or not isinstance(value, (bool, int, float, complex)):
        return value
    import ember

    dtypes = {bool: ember.bool, int: ember.int64, float: ember.float64}
    return ember.tensor(value, dtype=dtypes.get(type(value), ember.complex128))


_INDICES = {"indices": 1}
_RESULT = {"result": 0}
# Outputs PyTorch's node keeps, by the name it shows them under: the output's index. A table
# op's node reads them from the outputs its formula saved (``result``); a composite's shown node
# saves the listed outputs of the call when it is presented (graph_names.present_composite).
OUTPUTS = {
    **dict.fromkeys(
        (
            "CummaxBackward0",
            "CumminBackward0",
            "KthvalueBackward0",
            "MaxBackward0",
            "MedianBackward1",
            "MinBackward0",
            "ModeBackward0",
            "NanmedianBackward1",
            "SortBackward0",
            "SortBackward1",
            "TopkBackward0",
        ),
        _INDICES,
    ),
    "MaxPool2DWithIndicesBackward0": {"result1": 1},
    # nll_loss_forward's second output
    "NllLossBackward0": {"total_weight": 1},
    "NllLoss2DBackward0": {"total_weight": 1},
    "LinalgQrBackward0": {"Q": 0, "R": 1},
    # linalg composites shown as their _ex node, which keeps the factor they return
    "LinalgInvExBackward0": {"inverse": 0},
    "LinalgCholeskyExBackward0": {"L": 0},
    # composites whose PyTorch node keeps its output (ember's parts keep what they need)
    **dict.fromkeys(
        (
            "CdistBackward0",
            "LinalgSolveExBackward0",
            "LinalgVectorNormBackward0",
            "LogsumexpBackward0",
            "NormBackward1",
            "StdBackward0",
        ),
        _RESULT,
    ),
}

# Factors PyTorch's node keeps that the last part of ember's composite saved for its own formula
# (svdvals' and linalg.svd's SVD keeps U, S, Vh): PyTorch's name -> (the part's saved name, the
# index in it or None).
PARTS = {"LinalgSvdBackward0": {"U": ("result", 0), "S": ("result", 1), "Vh": ("result", 2)}}

# PyTorch's names of the arguments ember's rows call otherwise
ALIASES = {f"PowBackward{i}": {"exponent": "other"} for i in range(3)}


def saved_value(node_name: str, values: dict, lists: frozenset, name: str, first=None):
    """``_saved_<name>`` of a node named ``node_name`` from its call's arguments ``values``
    (by name; ``lists`` the int[] ones): PyTorch's own table for nodes ember makes from parts
    (``SAVED``), else the argument of that name (``self`` the ``first``, by default the first
    of ``values``)."""
    table = SAVED.get(node_name)
    if table is not None:
        if name not in table:
            raise AttributeError(f"'{node_name}' object has no attribute '_saved_{name}'")
        return _unsigned(table[name](values))
    derived = DERIVED.get(node_name, {}).get(name)
    if derived is not None:
        try:
            return _unsigned(derived(values))
        except KeyError:  # a call without the arguments it is computed from
            raise AttributeError(f"'{node_name}' object has no attribute '_saved_{name}'") from None
    own = (first or next(iter(values), None)) if name == "self" else name
    if own not in values:
        raise AttributeError(f"'{node_name}' object has no attribute '_saved_{name}'")
    value = values[own]
    if isinstance(value, int) and not isinstance(value, bool) and own in lists:
        return (_unsigned(value),)  # an int[] argument given as one int
    return _unsigned(tuple(value) if isinstance(value, list) else value)


def _unsigned(value):
    """PyTorch's bindings read a saved int64 back as an unsigned 64-bit int (dim -1 is
    18446744073709551615), in int[] ones too."""
    if isinstance(value, int) and not isinstance(value, bool):
        return value % (1 << 64)
    if isinstance(value, tuple):
        return tuple(_unsigned(v) for v in value)
    return value
