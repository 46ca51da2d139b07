"""``ember.export.export``: capture a module's forward with the tracing layer, lift its state
to graph inputs, and check that the dimensions marked dynamic really are.

The check traces a second time with every dynamic dim at another size in its range: a program
that read a dynamic size into Python (a branch, a loop count, a baked-in reshape) records a
different graph, and the export fails naming the dims, as PyTorch's does.
"""

from __future__ import annotations

import contextlib
import inspect

from ember._tensor import Tensor
from ember.autograd import no_grad
from ember.nn.modules.module import Module

from .. import pytree
from .._paths import tensor_at
from ..trace import canonical_text
from ..tracer import capture
from .dynamic_shapes import ConstraintViolationError, perturbed, resolve
from .exported_program import (
    ExportedProgram,
    ExportGraphSignature,
    InputKind,
    InputSpec,
    OutputKind,
    OutputSpec,
    TensorArgument,
)


def export(mod, args, kwargs=None, *, dynamic_shapes=None, strict: bool = False,
           preserve_module_call_signature=()) -> ExportedProgram:  # fmt: skip
    """Export ``mod``'s forward on example inputs to an ``ExportedProgram``.

    Args:
        mod: an ``nn.Module``.
        args: a tuple of example positional arguments (tensors, nested tuples/lists/dicts).
        kwargs: example keyword arguments.
        dynamic_shapes: per argument (a dict by name, or a tuple in order), ``{dim: Dim}`` for
            the dims that may vary (``ember.export.Dim("batch", min=1, max=64)``).

    Example:
        >>> batch = ember.export.Dim("batch", max=64)
        >>> ep = ember.export.export(model, (x,), dynamic_shapes={"x": {0: batch}})
        >>> ep.module()(ember.randn(7, 3))
    """
    if not isinstance(mod, Module):
        raise ValueError(f"Expected `mod` to be an instance of `ember.nn.Module`, got {type(mod)}.")
    if not isinstance(args, tuple):
        raise ValueError(
            f"Expecting `args` to be a tuple of example positional inputs, got {type(args)}"
        )
    kwargs = dict(kwargs or {})
    names = _argument_names(mod)
    found, ranges = resolve(dynamic_shapes, args, kwargs, names)
    with _tracing():
        captured = capture(mod, args, kwargs, root=mod, strict=False)
        _check_dynamic(mod, args, kwargs, captured.graph, found, ranges)
    graph = captured.graph
    user_names = _user_input_names(graph, captured.in_spec, names)
    signature, state, constants = _lift(graph, mod, user_names)
    _mark_symbols(graph, signature, found)
    leaves = pytree.flatten((tuple(args), kwargs))[0]
    static = _static_dims(leaves, found, captured.in_spec, names)
    return ExportedProgram(
        graph, signature, state, constants, ranges, (found, ranges, static),
        captured.in_spec, captured.out_spec, (args, kwargs), type(mod).__name__,
    )  # fmt: skip


_depth = [0]  # export() calls under way (ember.compiler.is_exporting)


def exporting() -> bool:
    """Whether ``export`` is tracing a module now."""
    return _depth[0] > 0


@contextlib.contextmanager
def _tracing():
    _depth[0] += 1
    try:
        yield
    finally:
        _depth[0] -= 1


def _argument_names(mod) -> list[str]:
    try:
        return [p.name for p in inspect.signature(mod.forward).parameters.values()]
    except (TypeError, ValueError):
        return []


def _user_input_names(graph, in_spec, names) -> list[str]:
    out = []
    for path in pytree.leaf_paths(in_spec):
        group, position, *rest = path.split(".")
        head = names[int(position)] if group == "0" and int(position) < len(names) else position
        out.append("_".join([head, *rest]))
    return out


def _check_dynamic(mod, args, kwargs, graph, found, ranges) -> None:
    """Trace again one size above and one below: the graph must not change."""
    if not found:
        return
    for step in (1, -1):
        probe = perturbed(args, kwargs, found, ranges, step)
        if probe is None:
            continue
        try:
            with no_grad():
                again = capture(mod, *probe, root=mod, strict=False)
            failure = None
        except Exception as exc:  # the program does not run at another size at all
            again, failure = None, f"{type(exc).__name__}: {exc}"
        if again is None or canonical_text(again.graph) != canonical_text(graph):
            _violation(args, kwargs, found, failure)


def _violation(args, kwargs, found, failure) -> None:
    symbols = sorted({d.symbol for d in found})
    marked = ", ".join(d.path for d in found)
    leaves = pytree.flatten((tuple(args), kwargs))[0]
    sizes = ", ".join(f"{d.path} = {leaves[d.leaf].shape[d.dim]}" for d in found)
    raise ConstraintViolationError(
        f"Constraints violated ({', '.join(symbols)})! You marked {marked} as dynamic but your "
        f"code specialized it to be a constant ({sizes}): tracing at another size records a "
        "different program (Python control flow or a size read into Python). Mark the dims "
        "static (Dim.STATIC), or make the code size-independent."
        + (f" At another size it fails: {failure}" if failure else "")
    )


def _lift(graph, mod, user_names: list[str]):
    """Parameters, buffers and constant tensors become the first inputs, PyTorch's order."""
    params = {name for name, _ in mod.named_parameters(remove_duplicate=False)}
    persistent = set(mod.state_dict())
    specs = {InputKind.PARAMETER: [], InputKind.BUFFER: [], InputKind.CONSTANT_TENSOR: []}
    lifted, state, constants = [], {}, {}
    for node in list(graph.all_nodes()):
        if node.kind() == "prim::GetAttr":
            target = node["name"]
            kind = InputKind.PARAMETER if target in params else InputKind.BUFFER
            prefix = "p_" if kind is InputKind.PARAMETER else "b_"
            value = tensor_at(mod, target)
            if kind is InputKind.PARAMETER or target in persistent:
                state[target] = value
            else:
                constants[target] = value
            spec = InputSpec(
                kind,
                TensorArgument(prefix + target.replace(".", "_")),
                target,
                None if kind is InputKind.PARAMETER else target in persistent,
            )
        elif node.kind() == "prim::Constant" and isinstance(node["value"], Tensor):
            target = f"lifted_tensor_{len(specs[InputKind.CONSTANT_TENSOR])}"
            constants[target] = node["value"]
            spec = InputSpec(InputKind.CONSTANT_TENSOR, TensorArgument(f"c_{target}"), target)
        else:
            continue
        specs[spec.kind].append(spec)
        lifted.append((spec, node))
    ordered = specs[InputKind.PARAMETER] + specs[InputKind.BUFFER]
    ordered += specs[InputKind.CONSTANT_TENSOR]
    for position, spec in enumerate(ordered):
        node = next(n for s, n in lifted if s is spec)
        value = graph.block().insertInput(position, spec.arg.name, node.output().type())
        node.output().replaceAllUsesWith(value)
        node.destroy()
    user = [InputSpec(InputKind.USER_INPUT, TensorArgument(n), None) for n in user_names]
    for value, spec in zip(graph.inputs()[len(ordered) :], user):
        value.setDebugName(spec.arg.name)
    outputs = [OutputSpec(OutputKind.USER_OUTPUT, TensorArgument(f"output_{i}"), None)
               for i in range(len(graph.outputs()))]  # fmt: skip
    return ExportGraphSignature(ordered + user, outputs), state, constants


def _mark_symbols(graph, signature, found) -> None:
    """Graph input types with the dynamic dims as their symbols: ``Float(s0, 3)``."""
    first_user = len(signature.input_specs) - len(signature.user_inputs)
    for d in found:
        value = graph.inputs()[first_user + d.leaf]
        sizes = list(value.type().sizes())
        sizes[d.dim] = d.symbol
        value.setType(value.type().with_(sizes=tuple(sizes)))


def _static_dims(leaves, found, in_spec, names) -> dict:
    dynamic = {(d.leaf, d.dim) for d in found}
    paths = _user_input_names(None, in_spec, names)
    static = {}
    for index, leaf in enumerate(leaves):
        if isinstance(leaf, Tensor):
            for dim, size in enumerate(leaf.shape):
                if (index, dim) not in dynamic:
                    static[(index, dim)] = (size, f"{paths[index]}.size()[{dim}]")
    return static
