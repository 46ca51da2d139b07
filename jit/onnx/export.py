"""``ember.onnx.export``: trace a model into the graph IR, write the IR as an ONNX model.

The route is PyTorch's TorchScript exporter's: the model runs once under the tracing layer
(``jit.tracer.capture``), the graph is optimised for inference (weights folded into constants
when ``do_constant_folding``), and each IR node becomes ONNX nodes by the mapping table
(``jit.onnx.table``). Parameters and buffers become initializers under their qualified names,
sizes the trace kept symbolic are computed in the graph, so inputs whose ``dynamic_axes`` are
named may take other sizes. The file passes ``onnx.checker.check_model(full_check=True)``.
"""

from __future__ import annotations

import contextlib
import enum
import warnings

from ember._tensor import Tensor
from ember.autograd import no_grad
from ember.nn.modules.module import Module

from .. import types as T
from .._paths import tensor_at
from ..tracer import _input_names, capture
from .builder import GraphBuilder, V, elem_type, onnx_module
from .convert import Converter
from .errors import OnnxExporterError
from .model import finish_model
from .table import expands

# PyTorch 2.13's TorchScript exporter: default opset 20; ember writes opset 17 and later.
DEFAULT_OPSET = 20
MIN_OPSET = 17
MAX_OPSET = 23


class TrainingMode(enum.IntEnum):
    """The mode the model is exported in (``torch.onnx.TrainingMode``)."""

    EVAL = 0
    PRESERVE = 1
    TRAINING = 2


class OperatorExportTypes(enum.IntEnum):
    """Only ``ONNX``: every op becomes standard ONNX ops (``torch.onnx.OperatorExportTypes``)."""

    ONNX = 0


_EXPORTING: list = []


def is_in_onnx_export() -> bool:
    """Whether an ``ember.onnx.export`` is running (``torch.onnx.is_in_onnx_export``)."""
    return bool(_EXPORTING)


def export(
    model,
    args=(),
    f=None,
    *,
    kwargs: dict | None = None,
    export_params: bool = True,
    verbose: bool = False,
    training: TrainingMode = TrainingMode.EVAL,
    input_names=None,
    output_names=None,
    operator_export_type: OperatorExportTypes = OperatorExportTypes.ONNX,
    opset_version: int | None = None,
    do_constant_folding: bool = True,
    dynamic_axes=None,
    keep_initializers_as_inputs: bool | None = None,
    custom_opsets: dict | None = None,
    export_modules_as_functions: bool = False,
    autograd_inlining: bool = True,
    dynamo: bool = False,
    external_data: bool = False,
    verify: bool = False,
) -> None:
    """Export ``model`` to an ONNX file, as ``torch.onnx.export`` does (its TorchScript route).

    Args:
        model: an ``nn.Module``, a traced ``ScriptModule`` or a function.
        args: the example inputs: a tensor or a tuple (nested tuples/lists of tensors); a dict
            as the last element holds keyword arguments.
        f: a path or a writable binary file.
        kwargs: keyword arguments of the model.
        export_params: store the parameters in the file (else they become graph inputs).
        verbose: print the exported graph.
        training: ``TrainingMode.EVAL`` (default: the model is exported in eval mode),
            ``PRESERVE`` or ``TRAINING``.
        input_names: names of the graph inputs, in order (then of the parameters when
            ``export_params=False``).
        output_names: names of the graph outputs, in order.
        opset_version: the ai.onnx opset, 17 to 23 (default 20, as PyTorch's).
        do_constant_folding: fold what does not depend on the inputs (weight transposes,
            batch norms into the convolutions before them, masks built from constants).
        dynamic_axes: ``{name: {axis: axis_name}}`` or ``{name: [axis, ...]}``: dims that may
            take other sizes; the others are fixed to the example's.
        keep_initializers_as_inputs: also list the parameters as graph inputs.
        custom_opsets: ``{domain: version}`` added to the model's opset imports.
        export_modules_as_functions: not supported (only False).
        autograd_inlining: accepted; traces hold no autograd functions to inline.
        dynamo: accepted for compatibility: ember has one exporter, through its graph IR.
        external_data: weights always go into the model file (models under 2 GB).
        verify: run the exported model in onnxruntime and compare with ember's outputs.

    Example:
        >>> ember.onnx.export(model, (x,), "model.onnx", input_names=["x"],
        ...                   output_names=["y"], dynamic_axes={"x": {0: "batch"}})
    """
    opset = _opset(opset_version)
    _check_options(operator_export_type, export_modules_as_functions)
    onnx = onnx_module()
    args, kwargs = _arguments(args, kwargs)
    with _export_mode(model, training), no_grad():
        root = model if isinstance(model, Module) else None
        captured = capture(model, args, kwargs, root=root, expand=expands)
        forward = model.forward if isinstance(model, Module) else model
        for value, name in zip(captured.graph.inputs(), _input_names(forward, captured.in_spec)):
            value.setDebugName(name)  # the parameters' names: x, hidden.0, hidden.1
        graph = _prepare(captured.graph, model, export_params, do_constant_folding)
        proto = _build(
            graph,
            model,
            opset,
            input_names=list(input_names or []),
            output_names=list(output_names or []),
            export_params=export_params,
            keep_initializers_as_inputs=bool(keep_initializers_as_inputs),
        )
    proto = finish_model(proto, opset, dynamic_axes or {}, custom_opsets or {})
    if verbose:
        print(onnx.helper.printable_graph(proto.graph))
    if f is not None:
        onnx.save(proto, f)
    if verify:
        from .verification import verify_outputs

        verify_outputs(proto, args, kwargs, captured.outputs)


def _opset(opset_version) -> int:
    opset = DEFAULT_OPSET if opset_version is None else opset_version
    if not isinstance(opset, int) or not MIN_OPSET <= opset <= MAX_OPSET:
        raise ValueError(
            f"Unsupported ONNX opset version: {opset_version}. ember.onnx supports opset "
            f"versions {MIN_OPSET} to {MAX_OPSET}."
        )
    return opset


def _check_options(operator_export_type, export_modules_as_functions) -> None:
    if operator_export_type != OperatorExportTypes.ONNX:
        raise ValueError("ember.onnx.export supports operator_export_type=ONNX only")
    if export_modules_as_functions:
        raise OnnxExporterError(
            "ember.onnx.export does not support export_modules_as_functions (PyTorch deprecated "
            "it); export with export_modules_as_functions=False"
        )


def _arguments(args, kwargs):
    """PyTorch's conventions: a lone tensor is one argument; a trailing dict is keywords."""
    if isinstance(args, Tensor):
        args = (args,)
    args = tuple(args) if isinstance(args, (list, tuple)) else (args,)
    kwargs = dict(kwargs or {})
    if args and isinstance(args[-1], dict):
        kwargs = {**args[-1], **kwargs}
        args = args[:-1]
    return args, kwargs


@contextlib.contextmanager
def _export_mode(model, training: TrainingMode):
    """The model in the requested mode while it is traced; its own mode afterwards."""
    was = getattr(model, "training", None)
    if isinstance(model, Module) and training != TrainingMode.PRESERVE:
        model.train(training == TrainingMode.TRAINING)
    _EXPORTING.append(True)
    try:
        yield
    finally:
        _EXPORTING.pop()
        if isinstance(model, Module) and was is not None:
            model.train(was)


def _prepare(graph, model, export_params: bool, fold: bool):
    """Inference passes: with weights in the file and folding on, weights become constants
    and everything computed from constants alone is folded (so is conv + batch norm)."""
    from ..freezing import run_frozen_optimizations
    from ..passes.constant_fold import fold_constants
    from ..passes.freeze import inline_attributes

    if not fold:
        return graph
    if export_params and isinstance(model, Module) and not model.training:
        inline_attributes(graph, model)
        return run_frozen_optimizations(graph, optimize_numerics=True)
    return fold_constants(graph)


def _build(
    graph, model, opset, *, input_names, output_names, export_params, keep_initializers_as_inputs
):
    """The ONNX GraphProto of ``graph`` (inputs, nodes, initializers, outputs)."""
    onnx = onnx_module()
    g = GraphBuilder(opset)
    values = graph.inputs()
    if len(input_names) > len(values) and export_params:
        raise ValueError(
            f"ember.onnx.export: {len(input_names)} input_names for a graph with "
            f"{len(values)} inputs"
        )
    inputs = [
        _input(g, value, input_names[i] if i < len(input_names) else None)
        for i, value in enumerate(values)
    ]
    extra_names = iter(input_names[len(values) :])
    attributes: dict = {}
    params: list = []

    def attribute(name: str) -> V:
        found = attributes.get(name)
        if found is None:
            tensor = tensor_at(model, name).detach()
            if export_params:
                proto = onnx.numpy_helper.from_array(tensor.cpu().numpy())
                found = g.initializer(proto, name, tensor.dtype, tensor.shape, exact=True)
            else:
                found = V(g.reserve(next(extra_names, name)), tensor.dtype, tensor.shape)
                params.append(found)
            attributes[name] = found
        return found

    outputs = Converter(g, attribute).run(graph, inputs)
    outputs = _name_outputs(g, outputs, output_names)
    graph_inputs = inputs + params
    if keep_initializers_as_inputs:
        graph_inputs += [V(t.name, None, None) for t in g.initializers]
    return onnx.helper.make_graph(
        g.nodes,
        "main_graph",
        [_value_info(v, g.initializers) for v in graph_inputs],
        [_value_info(v) for v in outputs],
        initializer=g.initializers,
    )


def _input(g, value, name: str | None) -> V:
    type_ = value.type()
    if not isinstance(type_, T.TensorType):
        raise OnnxExporterError(f"ember.onnx.export: graph input of type {type_} is not a tensor")
    return V(g.reserve(name or value.debugName()), type_.dtype(), type_.sizes())


def _name_outputs(g, outputs: list, names: list[str]) -> list[V]:
    """Give each output its name: the producing node's output is renamed when possible, an
    ``Identity`` is added when the value is an input, an initializer or already an output."""
    if len(names) > len(outputs):
        warnings.warn(
            f"ember.onnx.export: {len(names)} output_names for {len(outputs)} outputs",
            stacklevel=3,
        )
    produced = {name: node for node in g.nodes for name in node.output}
    done: list[V] = []
    for i, v in enumerate(outputs):
        if not isinstance(v, V):
            raise OnnxExporterError(
                f"ember.onnx.export: output {i} is not a tensor computed by the graph ({v!r})"
            )
        wanted = names[i] if i < len(names) else None
        taken = any(d.name == v.name for d in done)
        if v.name in produced and not taken:
            if wanted is not None and wanted != v.name:
                _rename(g, v.name, g.reserve(wanted))
                v = V(wanted, v.dtype, v.sizes)
        else:
            out = g.op("Identity", v, sizes=v.sizes)
            if wanted is not None:
                _rename(g, out.name, g.reserve(wanted))
                out = V(wanted, v.dtype, v.sizes)
            v = out
        done.append(v)
    return done


def _rename(g, old: str, new: str) -> None:
    for node in g.nodes:
        for i, name in enumerate(node.input):
            if name == old:
                node.input[i] = new
        for i, name in enumerate(node.output):
            if name == old:
                node.output[i] = new


def _value_info(v: V, initializers=()):
    onnx = onnx_module()
    if v.dtype is None:  # an initializer listed as an input
        tensor = next(t for t in initializers if t.name == v.name)
        return onnx.helper.make_tensor_value_info(v.name, tensor.data_type, list(tensor.dims))
    return onnx.helper.make_tensor_value_info(v.name, elem_type(v.dtype), v.sizes)
