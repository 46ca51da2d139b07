"""The ModelProto around the graph: opset imports, dynamic axes, output shapes, the check.

Input dims are the example's, except those ``dynamic_axes`` names (``dim_param``); output shapes
come from ONNX shape inference over the finished graph (so sizes that follow a dynamic input
stay symbolic), with ``dynamic_axes`` names on top.
"""

from __future__ import annotations

import warnings

import ember

from .builder import onnx_module


def finish_model(graph, opset: int, dynamic_axes: dict, custom_opsets: dict):
    """The checked ModelProto of ``graph``: opset imports, IR version, named dynamic dims."""
    onnx = onnx_module()
    inputs = [v.name for v in graph.input]
    outputs = [v.name for v in graph.output]
    axes = normalize_dynamic_axes(dynamic_axes, inputs, outputs)
    for value in graph.input:
        _name_dims(value, axes.get(value.name, {}))
    opsets = [onnx.helper.make_opsetid("", opset)]
    opsets += [onnx.helper.make_opsetid(domain, v) for domain, v in custom_opsets.items()]
    model = onnx.helper.make_model(
        graph,
        opset_imports=opsets,
        producer_name="ember",
        producer_version=ember.__version__,
    )
    model.ir_version = onnx.helper.find_min_ir_version_for(opsets, ignore_unknown=True)
    _output_shapes(model, axes)
    onnx.checker.check_model(model, full_check=True)
    return model


def normalize_dynamic_axes(dynamic_axes: dict, inputs: list, outputs: list) -> dict:
    """PyTorch's rules: keys name inputs or outputs (a warning otherwise); a list of axes gets
    the names ``<key>_dynamic_axes_<i>``."""
    valid = set(inputs) | set(outputs)
    result: dict = {}
    for key, value in dynamic_axes.items():
        if key not in valid:
            warnings.warn(
                f"Provided key {key} for dynamic axes is not a valid input/output name",
                stacklevel=4,
            )
        if isinstance(value, (list, tuple)):
            warnings.warn(
                "No names were found for specified dynamic axes of provided input."
                "Automatically generated names will be applied to each dynamic axes of input "
                f"{key}",
                stacklevel=4,
            )
            named: dict = {}
            for i, axis in enumerate(value):
                if not isinstance(axis, int):
                    raise ValueError("The type of axis index is expected to be an integer")
                if axis in named:
                    warnings.warn(
                        f"Duplicate dynamic axis index {axis} was provided for input {key}.",
                        stacklevel=4,
                    )
                else:
                    named[axis] = f"{key}_dynamic_axes_{i + 1}"
            value = named
        result[key] = dict(value)
    return result


def _name_dims(value, names: dict) -> None:
    dims = value.type.tensor_type.shape.dim
    for axis, name in names.items():
        if not -len(dims) <= axis < len(dims):
            raise ValueError(
                f"dynamic_axes: axis {axis} of '{value.name}' is out of range for its "
                f"{len(dims)} dims"
            )
        dim = dims[axis]
        dim.Clear()
        dim.dim_param = name


def _output_shapes(model, axes: dict) -> None:
    """Outputs get the shapes inference derives; the traced ones where it derives none."""
    onnx = onnx_module()
    traced = {}
    for value in model.graph.output:
        traced[value.name] = onnx.TypeProto()
        traced[value.name].CopyFrom(value.type)
        value.type.tensor_type.ClearField("shape")
    try:
        inferred = onnx.shape_inference.infer_shapes(model, strict_mode=False, data_prop=True)
        found = {v.name: v.type for v in inferred.graph.output}
    except Exception:  # inference gave up: keep the traced shapes
        found = {}
    for value in model.graph.output:
        better = found.get(value.name)
        if better is None or not better.tensor_type.HasField("shape"):
            better = traced[value.name]
        value.type.tensor_type.shape.CopyFrom(better.tensor_type.shape)
        _name_dims(value, axes.get(value.name, {}))
