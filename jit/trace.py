"""``ember.jit.trace`` and ``trace_module``: run a function or module once, keep the graph.

As in PyTorch: the example inputs go through the code, every op is recorded, Python control
flow and Python values read from tensors are baked in (with a ``TracerWarning``), sizes read
from traced tensors stay symbolic where they feed ops. ``check_trace`` traces again on
``check_inputs`` and compares graphs (``TracingCheckError`` when they differ) and outputs
(a ``TracerWarning`` when they do not match).
"""

from __future__ import annotations

import difflib
import inspect
import warnings

import numpy as np

from ember._tensor import Tensor
from ember.autograd import no_grad
from ember.nn.modules.module import Module

from . import pytree
from .graph_utils import all_values
from .script_module import Method, ScriptFunction, mirror
from .tracer import TracerWarning, capture


class TracingCheckError(Exception):
    """``check_trace`` found that tracing again gives another graph (PyTorch's class)."""

    def __init__(self, graph_diff_error, tensor_compare_error, extra_msg=None):
        self.message = "Tracing failed sanity checks!\n"
        if extra_msg is not None:
            self.message += extra_msg + "\n"
        if graph_diff_error is not None:
            self.message += "ERROR: Graphs differed across invocations!\n"
            self.message += _indent(graph_diff_error) + "\n"
        if tensor_compare_error is not None:
            self.message += (
                "ERROR: Tensor-valued Constant nodes differed in value across invocations. This "
                "often indicates that the tracer has encountered untraceable code.\n"
            )
            self.message += _indent(tensor_compare_error) + "\n"
        super().__init__(self.message)


def _indent(text: str) -> str:
    return "\n".join("\t" + line for line in text.splitlines())


def trace(
    func,
    example_inputs=None,
    optimize=None,
    check_trace: bool = True,
    check_inputs=None,
    check_tolerance: float = 1e-5,
    strict: bool = True,
    _force_outplace: bool = False,
    _module_class=None,
    _compilation_unit=None,
    example_kwarg_inputs=None,
    _store_inputs: bool = True,
):
    """Trace a function or module into a ``ScriptFunction`` / ``ScriptModule``.

    Args:
        func: a function, an ``nn.Module`` (its ``forward`` is traced) or a module's method.
        example_inputs: a tensor or a tuple of arguments (nested tuples, lists and dicts of
            tensors).
        check_trace: trace again on ``check_inputs`` (default: the example inputs) and compare.
        check_inputs: a list of argument tuples for the check.
        check_tolerance: relative tolerance of the output comparison.
        strict: warn about lists and dicts among the outputs (their structure is baked in).
        example_kwarg_inputs: keyword arguments, instead of or besides ``example_inputs``.

    Returns:
        ``ScriptModule`` for modules, ``ScriptFunction`` for functions.

    Example:
        >>> traced = ember.jit.trace(model.eval(), ember.randn(1, 3, 32, 32))
        >>> print(traced.graph)
    """
    if isinstance(func, Module):
        return trace_module(
            func,
            {"forward": example_inputs},
            None,
            check_trace,
            _wrap_check_inputs(check_inputs, "forward"),
            check_tolerance,
            strict,
            example_inputs_is_kwarg=example_kwarg_inputs,
        )
    owner = getattr(func, "__self__", None)
    if isinstance(owner, Module) and inspect.ismethod(func):
        # PyTorch returns the traced method itself (bound to a ScriptModule holding it).
        module = trace_module(
            owner,
            {func.__name__: example_inputs},
            None,
            check_trace,
            _wrap_check_inputs(check_inputs, func.__name__),
            check_tolerance,
            strict,
            example_inputs_is_kwarg=example_kwarg_inputs,
        )
        return module if func.__name__ == "forward" else getattr(module, func.__name__)
    args, kwargs = _arguments(example_inputs, example_kwarg_inputs)
    captured = capture(func, args, kwargs, strict=strict)
    name = getattr(func, "__name__", "fn")
    name = name if name.isidentifier() else "fn"
    method = Method(name, captured.graph, captured.in_spec, captured.out_spec, method=False)
    traced = ScriptFunction(name, method)
    if check_trace:
        inputs = check_inputs or [(args, kwargs)]
        _check(func, traced, method, inputs, check_tolerance, root=None)
    return traced


def trace_module(
    mod: Module,
    inputs: dict,
    optimize=None,
    check_trace: bool = True,
    check_inputs=None,
    check_tolerance: float = 1e-5,
    strict: bool = True,
    _force_outplace: bool = False,
    _module_class=None,
    _compilation_unit=None,
    example_inputs_is_kwarg=None,
    _store_inputs: bool = True,
):
    """Trace several methods of ``mod``: ``inputs`` maps method names to example inputs.

    Returns a ``ScriptModule`` holding ``mod``'s parameters and buffers and one graph per
    method (``traced.forward``, ``traced.other_method``).
    """
    if not isinstance(mod, Module):
        raise AttributeError("expected torch.nn.Module as the first argument")
    if not isinstance(inputs, dict):
        raise AttributeError("expected a dictionary of (method_name, input) pairs")
    traced = mirror(mod)
    for name, example in inputs.items():
        kwargs_example = example_inputs_is_kwarg if name == "forward" else None
        args, kwargs = _arguments(example, kwargs_example)
        fn = getattr(mod, name)
        captured = capture(_module_call(mod, name), args, kwargs, root=mod, strict=strict)
        _name_inputs(captured.graph, fn, captured.in_spec)
        method = Method(name, captured.graph, captured.in_spec, captured.out_spec)
        traced._add_method(method)
        if check_trace:
            checks = _method_check_inputs(check_inputs, name) or [(args, kwargs)]
            run = getattr(traced, name) if name != "forward" else traced
            _check(_module_call(mod, name), run, method, checks, check_tolerance, mod)
    return traced


def _module_call(mod: Module, name: str):
    """``mod(...)`` for forward (hooks and scopes included), else the bound method."""
    return mod if name == "forward" else getattr(mod, name)


def _name_inputs(graph, fn, in_spec) -> None:
    """Graph inputs named after the method's parameters (the call went through ``mod(...)``)."""
    try:
        params = [p.name for p in inspect.signature(fn).parameters.values()]
    except (TypeError, ValueError):
        return
    for value, path in zip(graph.inputs(), pytree.leaf_paths(in_spec)):
        group, position, *rest = path.split(".")
        if group == "0" and int(position) < len(params):
            value.setDebugName(".".join([params[int(position)], *rest]))


def _arguments(example_inputs, example_kwarg_inputs) -> tuple[tuple, dict]:
    if example_inputs is None and example_kwarg_inputs is None:
        raise RuntimeError("ember.jit.trace: give example_inputs or example_kwarg_inputs")
    if example_inputs is None:
        args = ()
    elif isinstance(example_inputs, tuple):
        args = example_inputs
    else:
        args = (example_inputs,)
    return args, dict(example_kwarg_inputs or {})


def _wrap_check_inputs(check_inputs, name: str):
    if check_inputs is None:
        return None
    return [{name: inputs} for inputs in check_inputs]


def _method_check_inputs(check_inputs, name: str):
    if not check_inputs:
        return None
    found = []
    for entry in check_inputs:
        inputs = entry[name] if isinstance(entry, dict) and name in entry else entry
        found.append(_arguments(inputs, None))
    return found


# ---- check_trace --------------------------------------------------------------------------------
def _clone(tree):
    leaves, spec = pytree.flatten(tree)
    return pytree.unflatten([t.clone() if isinstance(t, Tensor) else t for t in leaves], spec)


def _check(func, traced, method, inputs, tolerance, root) -> None:
    """``traced``: calls the traced method; ``func``: the original."""
    with no_grad():
        for entry in inputs:
            args, kwargs = entry if _is_pair(entry) else _arguments(entry, None)
            again = capture(func, *_clone((tuple(args), kwargs)), root=root, strict=False)
            graph_diff, constant_diff = _graph_differences(method.graph, again.graph)
            if graph_diff is None and constant_diff is None:
                _compare_outputs(func, traced, method, args, kwargs, tolerance)
            else:
                raise TracingCheckError(graph_diff, constant_diff)


def _is_pair(entry) -> bool:
    return isinstance(entry, tuple) and len(entry) == 2 and isinstance(entry[1], dict)


def canonical_text(graph) -> str:
    """The graph without types, scopes and source locations, values numbered in order: what
    two traces of the same code share."""
    from .printer import graph_text

    stripped = graph.copy()
    for node in stripped.all_nodes():
        node.setScope("")
        node.setSourceRange("")
    for number, value in enumerate(all_values(stripped)):
        value.setDebugName(str(number))
    from .types import Tensor as AnyTensor

    for value in all_values(stripped):
        if hasattr(value.type(), "sizes"):
            value.setType(AnyTensor)
    return graph_text(stripped, print_source_locations=False)


def _graph_differences(traced_graph, check_graph):
    mine, theirs = canonical_text(traced_graph), canonical_text(check_graph)
    graph_diff = None
    if mine != theirs:
        diff = difflib.ndiff(mine.splitlines(True), theirs.splitlines(True))
        graph_diff = "Graph diff:\n" + _indent("".join(diff)) + "\n"
        for a, b in zip(traced_graph.all_nodes(), check_graph.all_nodes()):
            if a.kind() != b.kind() or a.attributeNames() != b.attributeNames():
                graph_diff += "First diverging operator:\n" + _indent(
                    f"{a!r}\n{b!r}\nTrace source location: {a.sourceRange()}\n"
                    f"Check source location: {b.sourceRange()}"
                )
                break
        return graph_diff, None
    for a, b in zip(traced_graph.all_nodes(), check_graph.all_nodes()):
        constant = a.kind() == "prim::Constant" and isinstance(a["value"], Tensor)
        if constant and not _close(a["value"], b["value"], 0.0, 0.0):
            return None, f"Node:\n{_indent(repr(a))}\nSource Location:\n{a.sourceRange()}"
    return None, None


def _close(a, b, rtol: float, atol: float) -> bool:
    if not isinstance(b, Tensor) or a.shape != b.shape or a.dtype != b.dtype:
        return False
    x = np.asarray(a.detach().cpu().numpy(), dtype=np.float64)
    y = np.asarray(b.detach().cpu().numpy(), dtype=np.float64)
    return bool(np.allclose(x, y, rtol=rtol, atol=atol, equal_nan=True))


def _compare_outputs(func, traced, method, args, kwargs, tolerance) -> None:
    mine = pytree.flatten(_run(traced, args, kwargs))[0]
    theirs = pytree.flatten(func(*_clone(tuple(args)), **_clone(kwargs)))[0]
    for i, (a, b) in enumerate(zip(mine, theirs)):
        if not isinstance(a, Tensor) or _close(a, b, tolerance, 1e-5):
            continue
        _warn_nondeterministic(method.graph)
        warnings.warn(
            f"Output nr {i + 1}. of the traced function does not match the corresponding output "
            "of the Python function. Detailed error:\nTensor-likes are not close!",
            TracerWarning,
            stacklevel=5,
        )


def _run(traced, args, kwargs):
    return traced(*_clone(tuple(args)), **_clone(kwargs))


def _warn_nondeterministic(graph) -> None:
    nodes = [n for n in graph.all_nodes() if n.isNondeterministic()]
    if nodes:
        listed = "\n".join(_indent(repr(n)) for n in nodes[:20])
        warnings.warn(
            "Trace had nondeterministic nodes. Did you forget call .eval() on your model? "
            f"Nodes:\n{listed}\nThis may cause errors in trace checking. To disable trace "
            "checking, pass check_trace=False to ember.jit.trace()",
            TracerWarning,
            stacklevel=5,
        )
