"""A recorder per formula: straight-line code that records one op's calls (issue 20).

The Autograd layer's general path (``AutogradLayer.handle``) loops over an op's tensor positions,
appends edges and metadata to lists, copies the arguments, then calls ``below``, ``Node`` and
``_attach``: about ten Python frames and loops for what, for most ops, is the same few
statements each call. ``build`` writes those statements out once per op from its schema and its
formula's ``save`` (like ``ember/_bind.py`` writes the ``ember.*`` functions): one frame with the
tensor positions unrolled, each needed save written as one test, the call below the layer
inline, the node written slot by slot (it is its own ctx: autograd/context.py). The result is
the same graph: the same ``Node``, edges, metadata and history, the same checks (anomaly mode,
saved-tensor hooks through ``SavedTensor``, view replays through ``gradient_edge``).

The recorder runs when the Autograd layer handles a call (``handle``), and straight from the
operators and one-tensor functions (``ember/_bind.py``) while it is the only installed layer
(``STACK.direct_layers``): then ``Op.__call__``, the layer loop and ``wants`` are skipped too.
Its contract is the layer's: some tensor argument requires grad; it runs the op unrecorded
when grad mode is off (the operators do not test grad mode themselves).

Ops whose calls need more than this keep the general path (``build`` returns None): in-place
and mutating ops, Tensor[] arguments, optional tensor arguments after a default (a call may
leave them out), formulas that ask for strides, keep inputs weakly or run a forward of their
own, library formulas, and the view rows that copy (``COPYING_VIEWS``).
"""

from __future__ import annotations

from ember._dtype import FLOATING
from ember._tensor import Tensor

from ..dispatcher.layers import STACK
from .anomaly import record_trace
from .formula import Formula, _save
from .grad_mode import MIRROR, mirror_mode
from .node import _SEQUENCE, SavedTensor, gradient_edge, leaf_edge


def eligible(op, formula) -> bool:
    """Whether ``build`` can write a recorder for ``op``'s calls (the module docstring)."""
    from .layer import COPYING_VIEWS

    if type(formula) is not Formula or formula.strides or formula.weak or formula.forward:
        return False
    if formula.plan.has_lists:
        return False
    if op.mutates or op.inplace_of is not None or op.name in COPYING_VIEWS:
        return False
    return all(i < _required(op) for i in formula.plan.tensor_positions)


def build(op, formula, layer, attach, set_history):
    """The recorder of ``op``'s calls, ``recorder(*args) -> output``, or None (not eligible).

    The arguments come one by one (``record(a, b)`` from the operators, ``record(*args)`` from
    the layer's ``handle``): the callers build no tuple, and the body reads its parameters
    instead of indexing one. ``layer`` is the Autograd layer (the call below it goes through
    ``op.redispatch`` when another layer sits under it); ``attach`` and ``set_history`` are its
    general helpers, for the outputs the straight-line code leaves to them (tuples, views,
    integer outputs).
    """
    if not eligible(op, formula):
        return None
    plan = formula.plan
    required = _required(op)
    names = _names(plan, required)
    given = f"({''.join(f'{name}, ' for name in names)})"  # the required arguments, a tuple
    lines = [f"def record({''.join(f'{name}=_SHORT, ' for name in names)}*rest):"]
    if names:
        lines.append(f"    if {names[-1]} is _SHORT:  # a short call: the general path's errors")
        lines.append(f"        return _general(_given{given})")
    lines += _off_path(names, given)
    for k in range(len(plan.tensor_positions)):
        lines += _scan_lines(k)
    lines += _save_lines(plan, required)
    lines += _below_lines(names, given)
    lines += _node_lines(op, plan, names)
    lines += _output_lines(op, formula)
    # Op.__call__'s argument check, for the callers that skip it (a try costs nothing here)
    lines = [lines[0], "  try:"] + [f"  {line}" for line in lines[1:]]
    lines += [
        "  except (AttributeError, TypeError) as error:",
        f"    _op.argument_error(_given{given} + rest, error)",
        "    raise",
    ]
    scope = {
        "_op": op,
        "_formula": formula,
        "_layer": layer,
        "_stack": STACK,
        "_mirror": MIRROR,
        "_mirror_mode": mirror_mode,
        "_Tensor": Tensor,
        "_Node": formula.node_type(op),
        "_sequence": _SEQUENCE,
        "_nones": _NONES,
        "_Saved": SavedTensor,
        "_save": _save,
        "_leaf_edge": leaf_edge,
        "_gradient_edge": gradient_edge,
        "_record_trace": record_trace,
        "_attach": attach,
        "_set_history": set_history,
        "_FLOATING": FLOATING,
        "_SHORT": _SHORT,
        "_given": _given,
        "_general": lambda args: layer.handle_general(op, args),
        "__name__": "ember.autograd.recorder",
    }
    exec("\n".join(lines), scope)
    record = scope["record"]
    record.__qualname__ = f"record_{op.name}"
    return record


# Blanked values by argument count: the node's values when every argument is a tensor.
_NONES = tuple((None,) * n for n in range(16))

# The default of each required parameter: a call that leaves one out goes to the general path.
_SHORT = object()


def _given(*values) -> tuple:
    """The arguments a short call gave (the missing ones are the last)."""
    return tuple(value for value in values if value is not _SHORT)


def _names(plan, required: int) -> list:
    """The recorder's parameters: ``x<k>`` for the ``k``-th tensor argument, ``a<i>`` for the
    other required ones (those after them arrive in ``rest``)."""
    k_of = {i: k for k, i in enumerate(plan.tensor_positions)}
    return [f"x{k_of[i]}" if i in k_of else f"a{i}" for i in range(required)]


def _required(op) -> int:
    """How many leading arguments every call gives (those before the first default)."""
    for i, arg in enumerate(op.schema.args):
        if arg.has_default:
            return i
    return len(op.schema.args)


def _off_path(names: list, given: str) -> list:
    # Reached from the operators with grad mode off (no_grad over parameters that require
    # grad): the op, unrecorded (the layer is alone).
    return [
        "    try:  # the thread's modes, fetched once (grad_mode.py's MIRROR)",
        "        mode = _mirror.mode",
        "    except AttributeError:  # the thread's first recorded call",
        "        mode = _mirror_mode()",
        "    if not mode.enabled:",
        "        try:",
        *_run(names, "            return"),
        "        except NotImplementedError as error:",
        f"            return _op.refused({given} + rest, error)",
    ]


def _run(names: list, target: str) -> list:
    """The runner's call: the arguments spelled out (``*rest`` only when there is a rest:
    a star call builds one more tuple)."""
    spelled = "".join(f", {name}" for name in names)
    indent = target[: len(target) - len(target.lstrip())]
    return [
        f"{indent}if rest:",
        f"{target.replace(indent, indent + '    ', 1)} _op.runner(_op{spelled}, *rest)",
        f"{indent}else:",
        f"{target.replace(indent, indent + '    ', 1)} _op.runner(_op{spelled})",
    ]


def _scan_lines(k: int) -> list:
    """The ``k``-th tensor argument: requires ``r``, edge ``e``, metadata ``m``; the two common
    edges inline (a leaf's, cached by the leaf; a plain tensor's single-output node)."""
    x, r, e, m = f"x{k}", f"r{k}", f"e{k}", f"m{k}"
    return [
        f"    if isinstance({x}, _Tensor):",
        f"        {r} = {x}._requires_grad",
        f"        node = {x}._grad_fn",
        "        if node is None:",
        f"            if {r}:",
        "                try:",
        f"                    {e} = {x}._leaf_edge",
        "                except AttributeError:  # the leaf's first recorded call",
        f"                    {e} = _leaf_edge({x})",
        "            else:",
        f"                {e} = None",
        f"        elif {x}._base is None and node.num_outputs == 1:",
        f"            {e} = (node, 0)",
        "        else:  # a view's history may need a replay; a multi-output node its index",
        f"            {e} = _gradient_edge({x})",
        f"        {m} = ({x}._shape, {x}._dtype, {x}._storage.device)",
        "    else:  # None or a Python scalar (kept in the values)",
        f"        {r} = False",
        f"        {e} = {m} = None",
    ]


def _node_lines(op, plan, names: list) -> list:
    """The node (``Node.fill``'s writes, without its frame), its own ctx: the call's
    values are the arguments with the tensors blanked out."""
    values = [f"{n} if m{n[1:]} is None else None" if n[0] == "x" else n for n in names]
    tail = " + rest" if len(names) < len(op.schema.args) else ""
    count = len(plan.tensor_positions)
    written = f"({''.join(f'{v}, ' for v in values)}){tail}"
    if not tail and len(names) < len(_NONES) and all(n[0] == "x" for n in names):
        # every argument a tensor (the common call): the values are all blanked, one shared
        # tuple of Nones instead of a tuple built per call
        tensors = " and ".join(f"m{k} is not None" for k in range(count))
        written = f"_nones[{len(names)}] if {tensors} else {written}"
    return [
        "    node = _Node()",
        "    node.op = _op",
        "    node.formula = _formula",
        f"    node.edges = ({''.join(f'e{k}, ' for k in range(count))})",
        f"    node.input_meta = ({''.join(f'm{k}, ' for k in range(count))})",
        "    node.num_outputs = 1",
        "    node.seq = next(_sequence)",
        f"    node._values = {written}",
        f"    node._saved = {'saved' if plan.saves else None}",
    ]


def _save_lines(plan, required: int) -> list:
    """What the formula saves (``_keep``'s work, one test per saved argument), before the op
    runs (the saved-tensor hooks see the inputs before the output, as in PyTorch)."""
    if not plan.saves:
        return []
    lines = ["    saved = {}"]
    k_of = {i: k for k, i in enumerate(plan.tensor_positions)}
    for position, name, when in plan.saves:
        need = f" and r{when}" if when is not None else ""
        if position in k_of:
            k = k_of[position]
            lines.append(f"    if m{k} is not None{need}:")
            lines.append(f"        saved[{name!r}] = _Saved(x{k})")
        else:  # a non-tensor argument (a list of tensors in an int[] slot...), maybe absent
            j = position - required
            value = f"a{position}" if j < 0 else f"rest[{j}]"
            lines.append(f"    if {'True' if j < 0 else f'len(rest) > {j}'}{need}:")
            lines.append(f"        kept = _save({value})")
            lines.append("        if kept is not None:")
            lines.append(f"            saved[{name!r}] = kept")
    return lines


def _below_lines(names: list, given: str) -> list:
    """``AutogradLayer.below``: the op with recording off, straight to its runner when no
    layer sits under this one (autograd alone, the operators' case, is one identity test)."""
    return [
        "    mode.enabled = False",
        "    try:",
        "        if (layers := _stack.layers) is _stack.direct_layers or layers[-1] is _layer:",
        "            try:",
        *_run(names, "                out ="),
        "            except NotImplementedError as error:",
        f"                out = _op.refused({given} + rest, error)",
        "        else:",
        f"            out = _op.redispatch(_layer, {given} + rest)",
        "    finally:",
        "        mode.enabled = True",
    ]


def _output_lines(op, formula) -> list:
    """The node and the output's history: a fresh floating tensor's two writes inline, the
    rest (several outputs, a view's history) through the layer's general helpers."""
    returns = op.schema.returns
    if op.schema.returns_tuple or len(returns) != 1 or returns[0][0] != "Tensor":
        return ["    return _attach(node, out)"]
    saves = ["    _formula.save_result(node, out)"] if formula.saves_result else []
    return [
        *saves,
        "    if mode.anomaly:",
        "        _record_trace(node)",
        "    if out._dtype.category >= _FLOATING:",
        # a fresh output: no base, no history (a nonzero _output_nr comes only with a
        # grad_fn, and reading that class default costs ten times a slot's read)
        "        if out._base is None and out._grad_fn is None:",
        "            out._grad_fn = node",
        "            out._requires_grad = True",
        "        else:",
        "            _set_history(out, node, 0)",
        "    return out",
    ]
