"""How a graph node presents itself, as PyTorch's would: its name and its ``next_functions``.

PyTorch names a node after the overload of the op that made it (``PowBackward0`` for a number
exponent, ``PowBackward1`` for a tensor one, ``RsubBackward1`` for ``1 - x``) and lists only
the inputs that overload differentiates (``where``'s condition and ``gather``'s index are not
inputs of its node). ember has one row per op, so the row's call decides: a rule here takes the
node and returns ``(name, argument names to hide)``; ops without one are ``<CamelName>Backward0``
over all their tensor arguments but the integer ones named in ``HIDDEN``.

Composites that PyTorch also computes as one node keep that node's name when ember decomposes
them (``mean`` is ``MeanBackward0`` over ``x``, not ``DivBackward0`` over a sum); the
autograd layer presents their last node that way (``present_composite``). Those PyTorch itself
decomposes (``TRANSPARENT``) show their parts, as there. Functions outside the table that build
one of PyTorch's ops from parts (advanced indexing, ``F.embedding``, ``F.interpolate``...) show
it with ``present``; ``rename`` only renames (``x.max()`` is ember's amax, PyTorch's
MaxBackward1). A shown node (``Shown``) also answers ``_saved_*`` from the call's arguments
(saved_values.py) and ``_saved_*_sym_sizes`` from their sizes (saved_sizes.py).
"""

from __future__ import annotations

import contextlib
from typing import NamedTuple

from ember._tensor import Tensor

from .node import SavedTensor, camel, gradient_edge
from .saved_values import OUTPUTS
from .views import CopySlices

# Tensor arguments that are never differentiable inputs of a node (indices, masks...).
HIDDEN = frozenset({"index", "mask", "condition", "indices", "sorter", "sorted_sequence"})

# Composites PyTorch computes from other ops too: their parts' nodes show.
TRANSPARENT = frozenset(
    {
        "einsum", "inner", "tensordot", "outer", "swapaxes", "swapdims", "hstack", "vstack",
        "argsort", "repeat_interleave", "softsign", "eye", "tensor_split",
        # nn.functional rows whose PyTorch forms are compositions too (linear is addmm or mm
        # over a folded view, in nn/functional/linear._linear as there)
        "linear", "bilinear", "l1_loss", "kl_div", "cosine_similarity",
        "cosine_embedding_loss", "scaled_dot_product_attention",
        # log_softmax and nll_loss (shown as NllLoss over LogSoftmax), or other parts for
        # probability targets and label smoothing, as PyTorch's
        "cross_entropy_loss",
        # nll_loss is its forward row's node (NllLossBackward0 or NllLoss2DBackward0)
        "nll_loss",
        # the recurrent layers: PyTorch's CPU graph is its cells' steps (its CUDA one a cuDNN
        # node), as ember's decomposition (nn/functional/recurrent.py)
        "lstm", "gru", "rnn_tanh", "rnn_relu",
    }
)  # fmt: skip


class _Call:
    """What a node's forward call looked like: which arguments were tensors, and the others'
    values."""

    def __init__(self, node):
        self.node = node
        self.args = node.op.schema.args
        self.plan = node.formula.plan if node.formula is not None else None

    def was_tensor(self, name: str) -> bool:
        index = self.plan.tensor_index.get(name)
        if index is None or index >= len(self.node.input_meta):
            return False
        return self.node.input_meta[index] is not None

    def value(self, name: str):
        position = self.plan.position[name]
        values = self.node.ctx._values
        return values[position] if position < len(values) else self.plan.defaults[position]


def _by_dim(base: str, dim_arg: str = "dim"):
    def rule(call):
        return (f"{base}Backward0" if call.value(dim_arg) is None else f"{base}Backward1"), ()

    return rule


def _pow(call):
    if not call.was_tensor("input"):
        return "PowBackward2", ("input",)
    if not call.was_tensor("other"):
        return "PowBackward0", ("other",)
    return "PowBackward1", ()


def _sub(call):
    if not call.was_tensor("input"):
        return "RsubBackward1", ("input",)
    return "SubBackward0", ()


def _clamp(call):
    if call.was_tensor("min") or call.was_tensor("max"):
        return "ClampBackward0", ()
    return "ClampBackward1", ("min", "max")


def _lerp(call):
    if call.was_tensor("weight"):
        return "LerpBackward1", ()
    return "LerpBackward0", ("weight",)


def _squeeze(call):
    dim = call.value("dim")
    if dim is None:
        return "SqueezeBackward0", ()
    if isinstance(dim, int):
        return "SqueezeBackward1", ()
    return "SqueezeBackward2", ()


def _fill(call):
    return ("FillBackward3" if call.was_tensor("value") else "FillBackward2"), ("value",)


def _split(call):
    sizes = call.value("split_size_or_sections")
    return ("SplitBackward0" if isinstance(sizes, int) else "SplitWithSizesBackward0"), ()


def _chunk(call):  # PyTorch's chunk is a split (with sizes for an empty dim)
    shape = call.node.input_meta[0][0]
    return ("SplitBackward0" if shape[call.value("dim")] else "SplitWithSizesBackward0"), ()


def _fixed(name: str, hide=()):
    return lambda call: (name, hide)


def _number_overload(base: str, argument: str):
    """Ops whose PyTorch Scalar overload (``Backward0``) has no edge for a number argument,
    and whose Tensor overload (``Backward1``) differentiates it."""

    def rule(call):
        if call.was_tensor(argument):
            return f"{base}Backward1", ()
        return f"{base}Backward0", (argument,)

    return rule


class _Values(dict):
    """A composite's arguments by name, asked as a node's ``_Call`` is (the number-overload
    rules serve both)."""

    def was_tensor(self, name: str) -> bool:
        return isinstance(self.get(name), Tensor)


def _nll(suffix: str):
    """nll_loss's rows: PyTorch's nll_loss2d node for inputs (N, C, d1, ...), edges to the
    differentiable tensors only (target and weight take no gradient)."""

    def rule(call):
        ndim = len(call.node.input_meta[call.plan.tensor_index["input"]][0])
        base = "NllLoss2D" if ndim >= 3 else "NllLoss"
        return f"{base}{suffix}", ("target", "weight", "total_weight")

    return rule


RULES = {
    "sum": _by_dim("Sum"),
    "prod": _by_dim("Prod"),
    "pow": _pow,
    "square": _fixed("PowBackward0"),
    "sub": _sub,
    "clamp": _clamp,
    "lerp": _lerp,
    "squeeze": _squeeze,
    "fill_": _fill,
    "copy_": _fixed("CopyBackwards"),
    "view": _fixed("ViewBackward0"),
    "reshape": _fixed("ViewBackward0"),
    "flatten": _fixed("ViewBackward0"),
    "unflatten": _fixed("ViewBackward0"),
    "movedim": _fixed("PermuteBackward0"),
    "narrow": _fixed("SliceBackward0"),
    "split": _split,
    "chunk": _chunk,
    "div_trunc": _fixed("DivBackward2"),
    "relu6": _fixed("HardtanhBackward0"),
    "selu": _fixed("EluBackward0"),
    "logsigmoid": _fixed("LogSigmoidBackward0"),
    "max_pool2d_with_indices": _fixed("MaxPool2DWithIndicesBackward0"),
    "grid_sampler_2d": _fixed("GridSampler2DBackward0"),
    "grid_sampler_3d": _fixed("GridSampler3DBackward0"),
    "im2col": _fixed("Im2ColBackward0"),
    "col2im": _fixed("Col2ImBackward0"),
    "layer_norm": _fixed("NativeLayerNormBackward0"),
    "conv1d": _fixed("ConvolutionBackward0"),  # rows with their own formulas (conv_formulas.py)
    "conv2d": _fixed("ConvolutionBackward0"),
    "norm": _fixed("LinalgVectorNormBackward0"),
    "fmod": _number_overload("Fmod", "other"),
    "remainder": _number_overload("Remainder", "other"),
    "masked_fill": _number_overload("MaskedFill", "value"),
    "nll_loss_forward": _nll("Backward0"),
    "nll_loss_backward": _nll("BackwardBackward0"),
}


_MATMUL = {(1, 1): "DotBackward0", (2, 1): "MvBackward0", (2, 2): "MmBackward0"}
# The last node of PyTorch's folded matmul (3-d and more, or a vector against a batch): the
# result is unfolded with _unsafe_view, or a vector's dim squeezed in place.
_MATMUL_LAST = {"ViewBackward0": "UnsafeViewBackward0", "SqueezeBackward1": "SqueezeBackward4"}
# Composites shown as PyTorch's one node over all their tensor arguments: the linalg functions
# call their _ex forms (which add an error code), svdvals the svd (its S output), contiguous is
# a clone.
_COMPOSITE_NAMES = {
    "linalg_inv": "LinalgInvExBackward0",
    "linalg_solve": "LinalgSolveExBackward0",
    "linalg_cholesky": "LinalgCholeskyExBackward0",
    "linalg_svdvals": "LinalgSvdBackward0",
    "contiguous": "CloneBackward0",
    "tile": "RepeatBackward0",
}
# The node keeps its own edges and only takes PyTorch's name (``_COMPOSITE_NAMES`` rows and
# rules take the composite's arguments as edges instead).
OWN_EDGES = "own edges"


def _unweighted(name: str):
    """Losses PyTorch runs as one op without a weight and composes from parts with one."""
    return lambda values: None if values.get("weight") is not None else (name, ("input", "target"))


# nn.functional rows: the node PyTorch's call makes, over which of the row's arguments
# (None: all its tensor arguments, an absent optional one shown as None as there).
_FUNCTIONAL = {
    "conv1d": lambda values: ("ConvolutionBackward0", None),
    "conv2d": lambda values: ("ConvolutionBackward0", None),
    "conv_transpose2d": lambda values: ("ConvolutionBackward0", None),
    "group_norm": lambda values: ("NativeGroupNormBackward0", None),
    "mse_loss": _unweighted("MseLossBackward0"),
    "huber_loss": _unweighted("HuberLossBackward0"),
    "smooth_l1_loss": lambda values: ("SmoothL1LossBackward0", ("input", "target")),
    "binary_cross_entropy": lambda values: ("BinaryCrossEntropyBackward0", ("input", "target")),
    "binary_cross_entropy_with_logits": lambda values: (
        "BinaryCrossEntropyWithLogitsBackward0",
        ("input", "target"),
    ),
}


def _composite_name(op, args):
    """``(name, shown argument names or None for all)`` of the node PyTorch gives the call
    ``op(*args)`` of a composite ember decomposed (None: PyTorch decomposes this call too, its
    parts show)."""
    name = op.name
    if name in TRANSPARENT:
        return None
    values = dict(zip((a.name for a in op.schema.args), args))
    if name in _FUNCTIONAL:
        return _FUNCTIONAL[name](values)
    if name in _COMPOSITE_NAMES:
        return _COMPOSITE_NAMES[name], None
    if name in ("clamp_min", "clamp_max"):
        shown, hide = _number_overload(camel(name), name[len("clamp_") :])(_Values(values))
        return shown, tuple(a for a in values if a not in hide)
    if name == "linalg_matrix_norm":  # the Frobenius norm is a vector norm over two dims
        return ("LinalgVectorNormBackward0", None) if values.get("ord") == "fro" else None
    if name == "mean":
        return ("MeanBackward0" if values.get("dim") is None else "MeanBackward1"), None
    if name in ("median", "nanmedian"):
        return f"{camel(name)}Backward{0 if values.get('dim') is None else 1}", None
    if name == "sum_to_size":  # PyTorch's is a sum over the dims it reduces
        return "SumBackward1", None
    if name in ("diag", "matmul"):
        tensors = [v for v in values.values() if isinstance(v, Tensor)]
        dims = tuple(t.dim() for t in tensors)
        if name == "diag":
            return ("DiagEmbedBackward0" if dims == (1,) else "DiagonalBackward0"), None
        return (_MATMUL[dims], None) if dims in _MATMUL else (_MATMUL_LAST, OWN_EDGES)
    return f"{camel(name)}Backward0", None


class Shown(NamedTuple):
    """How a node presents itself as PyTorch's one node.

    A node that only takes PyTorch's name keeps its inputs, sizes and saved tensors (``sizes``
    and ``values`` None); one that stands for a call ember made from parts shows the call's:
    the sizes of its arguments by position (saved_sizes.py) and the arguments by name
    (saved_values.py)."""

    name: str
    edges: tuple  # shown as next_functions
    sizes: tuple | None = None
    output_nr: int | None = None  # the output of PyTorch's node this one stands for
    values: dict | None = None
    lists: frozenset = frozenset()  # the int[] arguments among ``values``
    # the call's outputs PyTorch's node keeps (saved_values.OUTPUTS), by its name for them
    outputs: dict | None = None


def present_composite(op, args, out, start: int) -> None:
    """Show the nodes a composite's decomposition made last as the composite's node: its
    PyTorch name, over the composite's own inputs."""
    shown_as = _composite_name(op, args)
    if shown_as is None:
        return
    name, shown = shown_as
    outputs = out if isinstance(out, (tuple, list)) else (out,)
    made = [
        (i, o._grad_fn)
        for i, o in enumerate(outputs)
        if isinstance(o, Tensor) and o._grad_fn is not None and o._grad_fn.seq > start
    ]
    if not made:
        return
    # by position, for PyTorch's _saved_<argument>_sym_sizes (saved_sizes.py)
    if shown is OWN_EDGES:  # a new name only, for the nodes ``name`` maps: their own inputs
        for _, node in made:
            own = describe(node)
            if own[0] in name:
                node.display = Shown(name[own[0]], own[1])
        return
    sizes = tuple(tuple(v.shape) if isinstance(v, Tensor) else None for v in args)
    values = dict(zip((a.name for a in op.schema.args), args))
    edges = []
    for a, value in zip(op.schema.args, args):
        if not a.is_tensor or a.name in HIDDEN or (shown is not None and a.name not in shown):
            continue
        items = value if a.is_list and isinstance(value, (list, tuple)) else (value,)
        for t in items:
            edges.append(gradient_edge(t) if isinstance(t, Tensor) else None)
    if op.mutates and isinstance(args[0], Tensor):
        target = args[0]
        if target._base is not None:  # the view's node is the replay: PyTorch's too
            _show_slices(target, edges[1:])
            return
        # the write's node (the one copy of a written-back composite) leads to the target's
        # history before the call, which PyTorch's in-place node shows
        edges[0] = target._grad_fn.edges[0]
    many = len(outputs) > 1
    lists = frozenset(a.name for a in op.schema.args if a.is_list)
    kept = _kept_outputs(name, outputs)
    for index, node in made:
        shown = Shown(name, tuple(edges), sizes, index if many else None, values, lists, kept)
        node.display = shown


def _kept_outputs(name: str, outputs) -> dict | None:
    """The outputs PyTorch's node ``name`` keeps, saved as a node saves its own output: an
    alias without history, so the graph does not keep the output object alive (no cycle)."""
    wanted = OUTPUTS.get(name)
    if wanted is None:
        return None
    return {
        saved: SavedTensor(outputs[index], index)
        for saved, index in wanted.items()
        if index < len(outputs) and isinstance(outputs[index], Tensor)
    }


def describe(node) -> tuple[str, tuple]:
    """``(name, edges shown as next_functions)`` of a table op's node."""
    if node.display is not None:
        return node.display
    op = node.op
    base = op.inplace_of or op if op is not None else None
    rule = RULES.get(base.name) if base is not None else None
    name, hide = (None, ())
    if rule is not None and node.formula is not None:
        name, hide = rule(_Call(node))
    if name is None:
        name = f"{camel(base.name)}Backward0"
    plan = node.formula.plan if node.formula is not None else None
    if plan is None or plan.has_lists:
        return name, node.edges  # Tensor[] arguments: every tensor is an input
    hidden = HIDDEN.union(hide)
    tensor_args = [a for a in op.schema.args if a.is_tensor]
    if not any(a.name in hidden for a in tensor_args):
        return name, node.edges
    return name, tuple(e for e, a in zip(node.edges, tensor_args) if a.name not in hidden)


def present(out, name: str, *inputs, saved: dict | None = None, outputs: dict | None = None):
    """Show ``out``'s node as PyTorch's op ``name`` over ``inputs`` (for functions that
    compute it from parts, such as advanced indexing); ``saved`` holds what its ``_saved_*``
    attributes read (saved_values.py), ``outputs`` the outputs it keeps by name (``out`` for
    ``_saved_output``), saved without a cycle as a node saves its own output. Returns ``out``."""
    node = out._grad_fn if isinstance(out, Tensor) else None
    if node is not None:
        node.display = Shown(
            name,
            tuple(gradient_edge(t) if isinstance(t, Tensor) else None for t in inputs),
            tuple(tuple(t.shape) if isinstance(t, Tensor) else None for t in inputs),
            None,
            {} if saved is None else saved,
            outputs=None
            if outputs is None
            else {key: SavedTensor(t, 0 if t is out else None) for key, t in outputs.items()},
        )
    return out


def written_back(target, result):
    """``target`` after an in-place op ember computed out of place (``result``) and copied in:
    its node shows ``result``'s, PyTorch's in-place node (name, the target's history before the
    write as its input, saved values). A view keeps its CopySlices, as in PyTorch. Returns
    ``target``."""
    node, made = target._grad_fn, result._grad_fn
    if node is None or made is None:
        return target
    shown = made.display if made.display is not None else _as_call(made)
    if target._base is None:
        node.display = shown
    else:
        _show_slices(target, shown[1][1:])
    return target


def _as_call(node) -> Shown:
    """A formula node shown by another node (an in-place op's written-back copy): its name and
    edges, and its call's arguments and sizes, which the other node's ``_saved_*`` read."""
    name, edges = describe(node)
    if node.formula is None or node.formula.plan.has_lists:
        return Shown(name, edges)
    plan, meta = node.formula.plan, node.input_meta
    values, sizes = {}, []
    for a in node.op.schema.args:
        k = plan.tensor_index.get(a.name)
        found = meta[k] if k is not None and k < len(meta) else None
        sizes.append(None if found is None else tuple(found[0]))
        with contextlib.suppress(AttributeError):  # a tensor the formula did not save
            values[a.name] = node.argument(a.name)
    return Shown(name, edges, tuple(sizes), None, values)


def written_in(target: Tensor, before, name: str, others: tuple, saved: dict) -> None:
    """An in-place op ember made from parts wrote into ``target``, whose history was ``before``
    (its gradient edge, taken before the write): show PyTorch's one node ``name`` over that
    history and the tensors ``others`` (None for a number), with ``saved`` for its ``_saved_*``
    attributes; a view's base shows its CopySlices instead, as PyTorch's over that node."""
    edges = tuple(gradient_edge(t) if isinstance(t, Tensor) else None for t in others)
    if target._base is not None:
        _show_slices(target, edges)
        return
    node = target._grad_fn
    if node is not None:
        sizes = (tuple(target.shape),) + tuple(
            tuple(t.shape) if isinstance(t, Tensor) else None for t in others
        )
        node.display = Shown(name, (before,) + edges, sizes, None, saved)


def _show_slices(view: Tensor, others: tuple) -> None:
    """An in-place op ember made from parts wrote into ``view``: its base's CopySlices shows the
    base's history and then the op's ``others`` inputs, as PyTorch's over the op's node."""
    slices = view._base._grad_fn
    if isinstance(slices, CopySlices):
        slices.display = Shown("torch::autograd::CopySlices", slices.edges[:1] + tuple(others))


def unsafe_split(outputs) -> None:
    """The nodes of ``unsafe_split``/``unsafe_chunk``'s pieces: the split's, under PyTorch's
    names for them (``UnsafeSplitBackward0``, same saved values)."""
    for t in outputs:
        node = t._grad_fn if isinstance(t, Tensor) else None
        if node is None or node.name().startswith("Unsafe"):
            continue
        shown = node.display if node.display is not None else Shown(*describe(node))
        node.display = shown._replace(name="Unsafe" + shown.name)


def rename(out, name: str):
    """Show ``out``'s node under PyTorch's name ``name``, with its own inputs and saved
    values (``x.max()`` is ember's amax, PyTorch's MaxBackward1); returns ``out``."""
    node = out._grad_fn if isinstance(out, Tensor) else None
    if node is not None:
        node.display = Shown(name, describe(node)[1])
    return out
