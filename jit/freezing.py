"""``ember.jit.freeze`` and ``ember.jit.optimize_for_inference``: graphs for inference only.

Freezing turns the parameters and buffers a graph reads into constants (except the preserved
ones) and runs the passes that then apply: constant folding (weight transposes, batch-norm
statistics into a scale and a shift), common subexpressions, dead code and, with
``optimize_numerics``, batch norms folded into the convolutions before them.
``optimize_for_inference`` freezes when needed, then runs the same passes to a fixed point.
"""

from __future__ import annotations

import contextlib

from ._paths import parent
from .passes.constant_fold import fold_constants
from .passes.conv_bn import fold_conv_batch_norm
from .passes.cse import eliminate_common_subexpressions
from .passes.dce import eliminate_dead_code
from .passes.freeze import inline_attributes, inline_module_state
from .passes.shape_prop import propagate_shapes
from .script_module import Method, RecursiveScriptModule, ScriptModule


def freeze(mod, preserved_attrs=None, optimize_numerics: bool = True):
    """A copy of ``mod`` whose graphs read its weights as constants.

    Args:
        mod: a ScriptModule in eval mode.
        preserved_attrs: attribute names (``"fc.weight"``) and method names to keep.
        optimize_numerics: also run passes that change results by rounding (conv-bn folding).

    Returns:
        a frozen ``RecursiveScriptModule`` (without the inlined parameters and buffers).
    """
    if not isinstance(mod, ScriptModule):
        raise RuntimeError(
            "Freezing expects a ScriptModule as input. Please use ember.jit.trace to get one "
            f"from your nn.Module ({type(mod).__name__})."
        )
    if mod.training:
        raise RuntimeError(
            "Freezing is currently only implemented for modules in eval mode. Please call "
            ".eval() on your module before freezing."
        )
    preserved = set(preserved_attrs or ())
    methods = {n: m for n, m in mod._methods.items() if n == "forward" or n in preserved}
    # slots the graphs assign (self.total = ...) stay slots, as PyTorch keeps mutated attributes
    preserved |= {
        node["name"]
        for method in methods.values()
        for node in method.graph.findAllNodes("prim::SetTensorAttr")
    }
    # submodule slots the graphs read or reassign (self.lin = self.other): their tensors stay
    # slots too, since which module a slot holds is known only when the graph runs
    moved = {
        node["name"]
        for method in methods.values()
        for kind in ("prim::GetModule", "prim::SetModule")
        for node in method.graph.findAllNodes(kind)
    }
    frozen = RecursiveScriptModule(mod.original_name)
    frozen.train(False)
    for name in moved:
        parent(frozen, f"{name}._", create=True)
    for name, tensor in [*mod.named_parameters(), *mod.named_buffers()]:
        if name in preserved or any(name.startswith(f"{m}.") for m in moved):
            preserved.add(name)
            _register(frozen, name, tensor)
    for name, method in methods.items():
        graph = inline_attributes(method.graph.copy(), mod, preserved)
        for qualified in inline_module_state(graph, mod):
            _keep_state(frozen, mod, qualified)
        run_frozen_optimizations(graph, optimize_numerics)
        frozen._add_method(Method(name, graph, method.in_spec, method.out_spec))
    object.__setattr__(frozen, "_frozen", True)
    return frozen


def _keep_state(frozen, mod, qualified: str) -> None:
    """An attribute the frozen graph writes (``self.count += 1``) stays one."""
    owner, leaf = parent(mod, qualified)
    target, _ = parent(frozen, qualified, create=True)
    object.__setattr__(target, leaf, getattr(owner, leaf))
    target.__dict__.setdefault("_script_attributes", set()).add(leaf)


def run_frozen_optimizations(graph, optimize_numerics: bool = True):
    """The passes a frozen graph gets, repeated until nothing changes; then the value types
    are derived again (constants no longer require grad)."""
    for _ in range(8):
        before = _size(graph)
        fold_constants(graph)
        eliminate_common_subexpressions(graph)
        if optimize_numerics:
            fold_conv_batch_norm(graph)
        eliminate_dead_code(graph)
        if _size(graph) == before:
            break
    _refresh_types(graph)
    return graph


def _refresh_types(graph) -> None:
    """Types from the op table's rules (meta tensors), where the input types are complete."""
    from .types import TensorType

    if all(isinstance(v.type(), TensorType) and v.type().is_complete() for v in graph.inputs()):
        # A graph valid only for its traced sizes keeps its traced types.
        with contextlib.suppress(Exception):
            propagate_shapes(graph)


def optimize_for_inference(mod, other_methods=None):
    """Freeze ``mod`` (if it is not frozen yet) and optimise its graphs for inference.

    Args:
        mod: a ScriptModule.
        other_methods: names of methods besides ``forward`` to keep and optimise.
    """
    if not isinstance(mod, ScriptModule):
        raise RuntimeError(
            "optimize_for_inference expects a ScriptModule as input. Please use ember.jit.trace "
            f"to get one from your nn.Module ({type(mod).__name__})."
        )
    if not getattr(mod, "_frozen", False):
        mod = freeze(mod.eval(), preserved_attrs=other_methods)
    for method in mod._methods.values():
        run_frozen_optimizations(method.graph)
        method.recompile()
    return mod


def _size(graph) -> int:
    return sum(1 for _ in graph.all_nodes())


def _register(module, qualified: str, tensor) -> None:
    from ember.nn.parameter import Parameter

    module, leaf = parent(module, qualified, create=True)
    if isinstance(tensor, Parameter):
        module.register_parameter(leaf, tensor)
    else:
        module.register_buffer(leaf, tensor)
