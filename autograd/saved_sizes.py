"""PyTorch's ``_saved_<argument>_sym_sizes`` (and ``_sym_numel``) on grad nodes: the shape of an
input that the node's backward formula keeps instead of the tensor (a sum's gradient is
expanded back to the input's sizes, a select's scattered into zeros of them).

PyTorch generates these attributes from derivatives.yaml; ember's formulas read the sizes from
the node's input metadata, so the table below says which nodes PyTorch exposes them on, under
PyTorch's node names and argument names, with the argument's position in the call (the same
in PyTorch's schema and ember's). A composite ember
decomposes (``mean`` is a ``div`` of a ``sum``) is presented as PyTorch's node with the sizes
of its own inputs (``graph_names.present_composite`` records them)."""

from __future__ import annotations

import math

_SELF = {"self": 0}
_UPSAMPLE_MODES = ("Nearest", "NearestExact", "Linear", "Bilinear", "Bicubic", "Trilinear")
# node name -> {argument whose sizes PyTorch's node saves: its position in the call}
SIZES = {
    **dict.fromkeys(
        (
            "SumBackward0",
            "SumBackward1",
            "MeanBackward0",
            "MeanBackward1",
            "ExpandBackward0",
            "ViewBackward0",
            "UnsafeViewBackward0",
            "ReshapeAliasBackward0",
            "SelectBackward0",
            "SliceBackward0",
            "IndexBackward0",
            "SqueezeBackward0",
            "SqueezeBackward1",
            "SqueezeBackward2",
            "RepeatBackward0",
            "MaxBackward0",
            "MinBackward0",
            "MedianBackward1",
            "NanmedianBackward1",
            "ModeBackward0",
            "KthvalueBackward0",
            "TopkBackward0",
            "SortBackward0",
            "IndexSelectBackward0",
            "DiagonalBackward0",
            "UnfoldBackward0",
            "SplitBackward0",
            "SplitWithSizesBackward0",
            "UnsafeSplitBackward0",
            "UnsafeSplitWithSizesBackward0",
            "TraceBackward0",
            "SqueezeBackward4",
            "AliasBackward0",
            *(
                f"Upsample{mode}{rank}D{aa}Backward0"
                for mode in _UPSAMPLE_MODES
                for rank in (1, 2, 3)
                for aa in ("", "Aa")
            ),
        ),
        _SELF,
    ),
    "MmBackward0": {"self": 0, "mat2": 1},
    "AddmmBackward0": {"mat1": 1, "mat2": 2},
    "MaskedScatterBackward0": {"source": 2},
}
# node name -> {argument some of whose sizes PyTorch's node saves: (its position, the dims)},
# shown as ``_saved_<argument>_sym_argsize_<dim>`` (``_minus_<n>`` for dim -n)
ARGSIZES = {
    "Im2ColBackward0": {"self": (0, (-2, -1))},
    "AddbmmBackward0": {"batch1": (1, (0, 1)), "batch2": (2, (2,))},
    "EmbeddingBackward0": {"weight": (0, (0,))},
}
# node name -> {saved output: dims whose sizes PyTorch's node shows as its argsize}
OUTPUT_ARGSIZES = {"LinalgSvdBackward0": {"S": (-1,)}}
# node name -> {argument whose element count PyTorch's node saves: its position}
NUMELS = {"MeanBackward0": _SELF, "MeanBackward1": _SELF}

# node name -> {argument whose strides PyTorch's node saves: ember's argument}; the formula
# records them (``Formula(strides=...)``), PyTorch keeps an input's only if it needs a gradient
STRIDES = {
    "MmBackward0": {"self": "input", "mat2": "mat2"},
    "AddmmBackward0": {"mat1": "mat1", "mat2": "mat2"},
}

SUFFIXES = ("_sym_sizes", "_sym_numel", "_sym_strides")
_ARGSIZE = "_sym_argsize_"


def is_size(attribute: str) -> bool:
    """Whether ``_saved_<...>`` names sizes of an argument (answered here)."""
    return attribute.endswith(SUFFIXES) or _ARGSIZE in attribute


def saved_size(node, attribute: str):
    """``node._saved_<argument>_sym_sizes`` or ``_sym_strides`` (a tuple of ints), or
    ``_sym_numel`` or ``_sym_argsize_<dim>`` (an int)."""
    if _ARGSIZE in attribute:
        return _argsize(node, attribute)
    argument, _, suffix = attribute[len("_saved_") :].rpartition("_sym_")
    if suffix == "strides":
        return _strides(node, argument, attribute)
    table = SIZES if suffix == "sizes" else NUMELS
    position = table.get(node.name(), {}).get(argument)
    shape = None if position is None else _input_shape(node, position)
    if shape is None:
        raise AttributeError(f"'{node.name()}' object has no attribute '{attribute}'")
    return shape if suffix == "sizes" else math.prod(shape)


def _argsize(node, attribute: str) -> int:
    """One size of an argument (im2col keeps its input's last two)."""
    argument, _, dim = attribute[len("_saved_") :].partition(_ARGSIZE)
    dim = -int(dim[len("minus_") :]) if dim.startswith("minus_") else int(dim)
    position, dims = ARGSIZES.get(node.name(), {}).get(argument, (None, ()))
    shape = _input_shape(node, position) if dim in dims else None
    if dim in OUTPUT_ARGSIZES.get(node.name(), {}).get(argument, ()):
        shape = tuple(getattr(node, f"_saved_{argument}").shape)  # the output it keeps
    if shape is None:
        raise AttributeError(f"'{node.name()}' object has no attribute '{attribute}'")
    return shape[dim]


def _strides(node, argument: str, attribute: str) -> tuple:
    own = STRIDES.get(node.name(), {}).get(argument)
    ctx = node.ctx
    if own is None or ctx is None or getattr(ctx, "_strides", None) is None:
        raise AttributeError(f"'{node.name()}' object has no attribute '{attribute}'")
    needs = ctx.needs_input_grad[node.formula.plan.tensor_index[own]]
    return tuple(ctx._strides[own]) if needs else ()


def _input_shape(node, position: int):
    """The sizes the tensor argument at ``position`` had when the node was made."""
    sizes = node.display.sizes if node.display is not None else None
    if sizes is not None:  # a call made from parts shown as PyTorch's node: the call's inputs
        return sizes[position] if position < len(sizes) else None
    args = node.op.schema.args if hasattr(node.op, "schema") else ()
    if node.formula is None or position >= len(args):
        return None
    index = node.formula.plan.tensor_index.get(args[position].name)
    if index is None or index >= len(node.input_meta) or node.input_meta[index] is None:
        return None
    return tuple(node.input_meta[index][0])
