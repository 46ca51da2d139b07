"""Structured control flow: ``ember.cond``, ``ember.while_loop`` and
``ember._higher_order_ops.map``, PyTorch 2.13's ``torch.cond``, ``torch.while_loop`` and
``torch._higher_order_ops.map``.

Eagerly they run the Python they describe (the branch the predicate picks, the loop, the map over
dim 0), so autograd records the ops the functions call, as it records any code: gradients reach
the operands and the tensors the functions close over (a module's parameters), where PyTorch's
``CondAutogradOp``/``WhileLoopAutogradOp`` get them by lifting those tensors to inputs.

PyTorch traces both branches (and the loop body) on fake tensors before running, and refuses
functions whose outputs differ in structure or metadata, alias or mutate their inputs, or are
of another type. Ember checks the same on the values it meets, and runs the branch it does not
take on the meta device (compiler/meta_eval.py), so a mismatch is found whichever branch the
predicate picks, as in PyTorch. The errors are PyTorch's types (``ember._dynamo.exc``) and
texts, with ``ember`` for ``torch``. docs/control_flow.md says what differs.

Inside ``ember.compile`` a tensor predicate is a graph break named after the op: the capture
records one path of ops, and a predicate read at each call picks the path (see the docs).
"""

from __future__ import annotations

import warnings

from ember._tensor import Tensor
from ember.autograd._pytree import tree_flatten, tree_unflatten
from ember.autograd.grad_mode import is_grad_enabled

from . import meta_eval
from .exc import TorchRuntimeError, UncapturedHigherOrderOpError, Unsupported

__all__ = ["cond", "map", "while_loop"]


def cond(pred, true_fn, false_fn, operands=()):
    """Apply ``true_fn`` or ``false_fn`` to ``operands``, as picked by ``pred``.

    Equivalent to ``true_fn(*operands) if pred else false_fn(*operands)``, with PyTorch's
    restrictions so that the call can be captured: both branches return the same structure of
    tensors (same dtype, rank and device; sizes may differ) or ints, and do not return or
    mutate (with grad mode on) their inputs.

    Args:
        pred: a Python bool (or int/float: no check is made, the branch runs as is) or a tensor
            with one element.
        true_fn: the function run when ``pred`` is true.
        false_fn: the function run when ``pred`` is false.
        operands: a tuple or list of (possibly nested tuples, lists and dicts of) tensors,
            passed to the branch as positional arguments.

    Returns:
        What the branch returns.

    Example:
        >>> def f(x):
        ...     return ember.cond(x.sum() > 0, lambda x: x.cos(), lambda x: x.sin(), (x,))
        >>> f(ember.ones(3))
        tensor([0.5403, 0.5403, 0.5403])
    """
    if isinstance(pred, (bool, int, float)):
        _warn_constant_pred()
        return true_fn(*operands) if pred else false_fn(*operands)
    _check_cond_args(pred, true_fn, false_fn, operands)
    if meta_eval.active() and pred.device.type == "meta":  # the other branch of an outer cond
        true_out = true_fn(*operands)
        _merge_check(true_out, false_fn(*operands))
        return true_out
    take = _read_pred("cond", pred)
    taken, other = (true_fn, false_fn) if take else (false_fn, true_fn)
    versions = _versions(operands)
    out = taken(*operands)
    _check_outputs("cond", out)
    _check_pure("cond", operands, out, versions)
    abstract = _abstract(other, operands)
    if abstract is not _UNKNOWN:
        _check_outputs("cond", abstract)
        _merge_check(*((out, abstract) if take else (abstract, out)))
    return out


def while_loop(cond_fn, body_fn, carried_inputs):
    """Run ``body_fn`` on the carried values while ``cond_fn`` of them is true.

    Equivalent to::

        val = carried_inputs
        while cond_fn(*val):
            val = body_fn(*val)
        return val

    ``body_fn`` returns values of the same metadata (sizes, strides, dtype, device) as the
    carried inputs, flattened alike, and neither function returns or mutates (with grad mode
    on) its inputs. ``cond_fn`` returns a bool or a 0-dim bool tensor.

    Args:
        cond_fn: the loop condition, taking the carried values as positional arguments.
        body_fn: one iteration, returning the next carried values.
        carried_inputs: a tuple or list of (possibly nested tuples, lists and dicts of) tensors
            and ints: the initial values.

    Returns:
        The last values ``body_fn`` returned, in its structure (copies of the inputs when the
        loop does not run).

    Example:
        >>> ember.while_loop(lambda i, x: i < 3, lambda i, x: (i + 1, x * 2),
        ...                  (ember.tensor(0), ember.ones(2)))
        (tensor(3), tensor([8., 8.]))
    """
    flat, in_spec = tree_flatten(carried_inputs)
    _check_while_args(cond_fn, body_fn, carried_inputs, flat)
    carried = tree_unflatten(flat, in_spec)
    if meta_eval.active():  # inside the branch cond checks abstractly: one iteration's metadata
        _loop_pred(cond_fn(*carried))
        return _body_step(body_fn, carried, flat)[0]
    out_spec = None
    while _keep_going(cond_fn(*carried)):
        out, flat = _body_step(body_fn, carried, flat)
        out_spec = tree_flatten(out)[1]
        carried = tree_unflatten(flat, in_spec)
    if out_spec is not None:
        return tree_unflatten(flat, out_spec)
    # as PyTorch's: fresh copies, in the structure the body returns (its trace's)
    abstract = _abstract(lambda *c: _body_step(body_fn, c, flat)[0], carried)
    spec = in_spec if abstract is _UNKNOWN else tree_flatten(abstract)[1]
    return tree_unflatten([v.clone() if isinstance(v, Tensor) else v for v in flat], spec)


def map(f, xs, *args):  # PyTorch's name (torch._higher_order_ops.map)
    """Apply ``f`` to each slice of ``xs`` along dim 0 and stack the results.

    Args:
        f: called as ``f(x, *args)`` with ``x`` one slice of ``xs`` (the same structure).
        xs: a tensor, or a tuple/list/dict of tensors with the same size of dim 0 (not 0).
        *args: passed to every call unchanged.

    Returns:
        ``f``'s outputs (tensors, in its structure), each stacked along a new dim 0.

    Example:
        >>> map(lambda x, y: x * y, ember.arange(6.0).reshape(3, 2), ember.tensor([1.0, 2.0]))
        tensor([[ 0.,  2.],
                [ 2.,  6.],
                [ 4., 10.]])
    """
    from ember import stack

    leaves, spec = tree_flatten(xs)
    if not all(isinstance(x, Tensor) for x in leaves):
        raise RuntimeError(f"Mapped xs can only consist of tensors. Got xs {leaves}.")
    leading = [x.shape[0] for x in leaves]  # a 0-dim tensor: IndexError, as PyTorch's
    if any(n != leading[0] for n in leading):
        shapes = ", ".join(repr(x.shape) for x in leaves)
        raise RuntimeError(
            f"Leading dimensions of mapped xs must be consistent. Got shapes [{shapes}]."
        )
    if leading and leading[0] == 0:
        raise RuntimeError("Leading dimensions of mapped xs cannot be 0.")
    results = [
        tree_flatten(f(tree_unflatten([x[i] for x in leaves], spec), *args))
        for i in range(leading[0] if leading else 0)
    ]
    out_spec = results[0][1]
    columns = zip(*(r[0] for r in results))
    return tree_unflatten([stack(list(column)) for column in columns], out_spec)


# ---- argument checks (PyTorch's eager entry points) -----------------------------------------
def _check_cond_args(pred, true_fn, false_fn, operands) -> None:
    if not isinstance(pred, Tensor):
        raise RuntimeError(f"Expected pred to be bool or tensor, but got {pred}.")
    if pred.numel() != 1:
        raise RuntimeError(f"Expected pred to be bool or single-element tensor, but got {pred}.")
    if not callable(true_fn) or not callable(false_fn):
        raise RuntimeError("Expect both branches to be callable.")
    if not isinstance(operands, (tuple, list)) or not all(
        isinstance(t, Tensor) for t in tree_flatten(operands)[0]
    ):
        raise RuntimeError(
            "Expect operands to be a tuple of possibly nested dict/list/tuple that only "
            f"consists of tensor leaves, but got {operands}."
        )


def _check_while_args(cond_fn, body_fn, carried_inputs, flat) -> None:
    if not callable(cond_fn) or not callable(body_fn):
        raise RuntimeError("Expect cond_fn and body_fn to be callable.")
    if not all(isinstance(v, (Tensor, int)) for v in flat):
        raise AssertionError(
            f"{flat} can only be of (<class 'ember.Tensor'>, <class 'int'>) but got "
            f"{tuple(type(v) for v in flat)}"
        )
    if not isinstance(carried_inputs, (tuple, list)):  # a bare tensor: the body gets its rows
        raise UncapturedHigherOrderOpError(
            "ember.while_loop: carried_inputs must be a tuple or list, got "
            f"{type(carried_inputs).__name__} (`cond_fn(*carried_inputs)` unpacks it)"
        )


def _warn_constant_pred() -> None:
    from .hints import is_exporting

    if is_exporting():
        warnings.warn(
            "Pred is a Python constant. When used with ember.cond, it specializes on one of the "
            "branches. If you want ember.cond to preserve two branches, please make the "
            "predicate a boolean tensor or a SymBool.",
            UserWarning,
            stacklevel=3,
        )


def _read_pred(op: str, pred: Tensor) -> bool:
    """``bool(pred)``. Met while a capture records, a tensor predicate is a graph break named
    after ``op`` (``fullgraph=True`` raises; ``explain()`` counts it once, not again for the
    read), and ember.export refuses it, as its graphs hold one path of ops."""
    from ember.jit.tracer import current

    state = current()
    if state is None or not state.recording():
        return bool(pred)
    if state.observer is not None:
        state.observer.graph_break(op)
        state.suspended += 1
        try:
            return bool(pred)
        finally:
            state.suspended -= 1
    from .hints import is_exporting

    if is_exporting():
        raise Unsupported(
            f"ember.export: ember.{op} with a tensor predicate cannot be exported: an exported "
            "graph holds one path of ops and has no node that picks a branch at run time "
            "(docs/control_flow.md). Make the predicate a Python bool (the export specialises "
            "on its branch) or choose values with ember.where.",
            f"ember.{op} with a tensor predicate",
        )
    return bool(pred)  # jit.trace: the read warns and the trace keeps this branch


# ---- while_loop's steps ----------------------------------------------------------------------
def _loop_pred(pred):
    if isinstance(pred, bool) or (
        isinstance(pred, Tensor) and pred.dim() == 0 and pred.dtype.name == "bool"
    ):
        return pred
    got = repr(pred.shape) if isinstance(pred, Tensor) else type(pred).__name__
    raise UncapturedHigherOrderOpError(
        "ember.while_loop: unsupported cond_fn return type\n"
        f"  Explanation: Expected cond_fn to return a scalar tensor or a bool but got {got}."
    )


def _keep_going(pred) -> bool:
    pred = _loop_pred(pred)
    return _read_pred("while_loop", pred) if isinstance(pred, Tensor) else pred


def _body_step(body_fn, carried, flat: list):
    """One call of ``body_fn``: its output and flat leaves, checked against the carried ones."""
    versions = _versions(flat)
    out = body_fn(*carried)
    leaves = tree_flatten(out)[0]
    _check_pure("while_loop", flat, out, versions)
    if len(leaves) != len(flat):
        raise UncapturedHigherOrderOpError(
            "Expected body_fn_output and carried_inputs to have same number of outputs but got "
            f"lhs:{_show(leaves)} and rhs:{_show(flat)}"
        )
    diffs = [
        f"pair[{i}] differ in {diff}, where lhs is {_describe(a)} and rhs is {_describe(b)}"
        for i, (a, b) in enumerate(zip(leaves, flat))
        if (diff := _loop_diff(a, b))
    ]
    if diffs:
        raise UncapturedHigherOrderOpError(
            "Expected body_fn_output and carried_inputs to have same metadata but found:\n"
            + "\n".join(diffs)
        )
    return out, leaves


def _loop_diff(a, b) -> str:
    if isinstance(a, Tensor) and isinstance(b, Tensor):
        pairs = [("shape", repr(a.shape), repr(b.shape)),
                 ("dtype", f"ember.{a.dtype.name}", f"ember.{b.dtype.name}"),
                 ("stride", a.stride(), b.stride())]  # fmt: skip
        found = [f"'{name}: {x} vs {y}'" for name, x, y in pairs if x != y]
        if _devices_differ(a, b):
            found.append("device")
        return ", ".join(found)
    if isinstance(a, int) and isinstance(b, int) and not isinstance(a, Tensor):
        return ""
    return f"type: {_describe(a)} vs {_describe(b)}"


# ---- cond's output checks --------------------------------------------------------------------
def _check_outputs(op: str, out) -> None:
    for leaf in tree_flatten(out, is_leaf=lambda v: v is None)[0]:
        if isinstance(leaf, (Tensor, int)):  # bool too: the merge refuses it, as PyTorch's
            continue
        if isinstance(leaf, float):
            raise UncapturedHigherOrderOpError(
                "HOP body output unsupported\n"
                f"  Higher Order Operator: ember.{op}\n"
                "  Explanation: HigherOrderOperator body's output must consist of tensors or "
                f"ints/bools only but got {type(leaf)}."
            )
        raise UncapturedHigherOrderOpError(
            f"ember.{op}: unsupported branch return type (constant non-int)\n"
            f"  Higher Order Operator: ember.{op}\n"
            "  Explanation: Constants returned from branches must be ints."
        )


def _merge_check(true_out, false_out) -> None:
    """PyTorch's merge of the two branches' outputs: the same structure; per leaf two ints, or
    two tensors of one dtype, device, rank and order of strides (sizes may differ)."""
    true_leaves, true_spec = tree_flatten(true_out)
    false_leaves, false_spec = tree_flatten(false_out)
    bare = [spec.is_leaf() for spec in (true_spec, false_spec)]
    if bare[0] != bare[1] and len(true_leaves) == len(false_leaves) == 1:
        pass  # PyTorch's trace takes a lone tensor for a one-item tuple or list
    elif bare[0] != bare[1]:
        raise TorchRuntimeError(
            "RuntimeError when making fake tensor call: Unmatched output spec from ember.cond "
            f"branches: true branch tree_spec {true_spec} vs false branch tree_spec {false_spec}."
        )
    elif true_spec != false_spec:
        raise UncapturedHigherOrderOpError(
            "ember.cond: differing branch outputs\n"
            "  Higher Order Operator: ember.cond\n"
            "  Explanation: Expected branches to return the same pytree structure.\n"
            f"  true branch tree_spec {true_spec} vs false branch tree_spec {false_spec}."
        )
    for a, b in zip(true_leaves, false_leaves):
        if type(a) is int and type(b) is int:
            continue
        if not (isinstance(a, Tensor) and isinstance(b, Tensor)):
            raise TorchRuntimeError(
                "RuntimeError when making fake tensor call: expected both a and b to be "
                f"FakeTensor, got a={type(a)}, b={type(b)}"
            )
        _merge_tensor(a, b)


def _merge_tensor(a: Tensor, b: Tensor) -> None:
    prefix = "When merging two branches' output in ember.cond, "
    pairs = [("dtype", f"ember.{a.dtype.name}", f"ember.{b.dtype.name}"),
             ("dim", a.dim(), b.dim()), ("is_conj", a.is_conj(), b.is_conj())]  # fmt: skip
    if _devices_differ(a, b):
        pairs.append(("device", a.device, b.device))
    for name, x, y in pairs:
        if x != y:
            raise TorchRuntimeError(f"{prefix} expected same {name} but got {x} and {y}.")
    if _stride_order(a) != _stride_order(b):
        raise TorchRuntimeError(
            "The sorted order of strides of the two branches' output doesn't match.this "
            "indicates the contiguousness of the two branches are different. True branch has "
            f"stride {a.stride()} but false branch has stride {b.stride()}.Consider using "
            "contiguous() to make the two branches have the same contiguousness."
        )


def _stride_order(t: Tensor) -> list:
    """Dims from the smallest stride up, over the dims longer than 1 (a size-1 dim's stride
    is arbitrary and the branches may differ there without differing in layout)."""
    dims = [d for d in range(t.dim()) if t.shape[d] > 1]
    return sorted(dims, key=lambda d: t.stride(d))


def _devices_differ(a: Tensor, b: Tensor) -> bool:
    """Whether two outputs are on different devices; an abstract (meta) output came from the
    branch not taken, whose tensors were moved to meta, so its device says nothing."""
    if a.device.type == "meta" or b.device.type == "meta":
        return False
    return a.device != b.device


# ---- purity: no aliasing of the inputs, no mutation (with grad mode on) -----------------------
def _versions(tree) -> list:
    return [(t, t._version) for t in tree_flatten(tree)[0] if isinstance(t, Tensor)]


def _check_pure(op: str, inputs, out, versions: list) -> None:
    """PyTorch refuses, with grad mode on, a function that returns one of its inputs (or a view
    of one), returns one tensor twice, or writes an input in place."""
    if not is_grad_enabled():
        return
    if any(t._version != v for t, v in versions):
        raise UncapturedHigherOrderOpError(
            "Encountered input mutation during higher order op tracing\n"
            f"  Higher Order Operator: ember.{op}\n"
            "  Explanation: Higher order ops do not support input mutation.\n"
            "  Hint: Consider using the debug context to change user code to avoid mutation."
        )
    storages = [t._storage for t in tree_flatten(inputs)[0] if isinstance(t, Tensor)]
    seen: list = []
    for leaf in tree_flatten(out)[0]:
        if not isinstance(leaf, Tensor):
            continue
        if any(leaf._storage is s for s in storages) or any(leaf._storage is s for s in seen):
            raise UncapturedHigherOrderOpError(
                "Encountered aliasing during higher order op tracing\n"
                f"  Higher Order Operator: ember.{op}\n"
                "  Explanation: Higher order ops do not support aliasing.\n"
                "  Hint: Replace `return input` with `return input.clone()` to avoid aliasing."
            )
        seen.append(leaf._storage)


# ---- helpers ---------------------------------------------------------------------------------
_UNKNOWN = object()


def _abstract(fn, operands):
    """``fn(*operands)`` on the meta device, or ``_UNKNOWN`` where it cannot run there (a data
    read such as ``.item()``, an op without a meta rule): then that function is not checked."""
    try:
        return meta_eval.run(fn, *operands)
    except (UncapturedHigherOrderOpError, TorchRuntimeError):
        raise  # a nested cond's or loop's own check
    except Exception:  # any failure on meta only means "cannot check"
        return _UNKNOWN


def _describe(value) -> str:
    if isinstance(value, Tensor):
        return f"Tensor(..., size={tuple(value.shape)}, dtype=ember.{value.dtype.name})"
    return repr(value)


def _show(values) -> str:
    return "[" + ", ".join(_describe(v) for v in values) + "]"
