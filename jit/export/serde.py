"""``ember.export.save`` / ``load``: an ExportedProgram in the archive of ``jit.archive``
(graph JSON, signature, range constraints and guards as JSON; state as safetensors)."""

from __future__ import annotations

import math

from .. import pytree
from ..archive import read_archive, write_archive
from ..graph_json import GraphFormatError, GraphReader, GraphWriter
from .dynamic_shapes import DynamicDim, ValueRange
from .exported_program import (
    ExportedProgram,
    ExportGraphSignature,
    InputKind,
    InputSpec,
    OutputKind,
    OutputSpec,
    TensorArgument,
)

FORMAT = "ember.export"


def save(ep: ExportedProgram, f, *, extra_files=None) -> None:
    """Write ``ep`` to ``f`` (a path, replaced atomically, or a binary file)."""
    if not isinstance(ep, ExportedProgram):
        raise TypeError(f"ember.export.save: expected an ExportedProgram, got {type(ep).__name__}")
    writer = GraphWriter()
    found, ranges, static = ep._guards
    model = {
        "kind": "exported_program",
        "name": ep._name,
        "graph": writer.graph(ep._ir),
        "inputs": [_input_json(s) for s in ep.graph_signature.input_specs],
        "outputs": [[s.kind.name, s.arg.name] for s in ep.graph_signature.output_specs],
        "ranges": {k: v.to_json() for k, v in ranges.items()},
        "dynamic": [[d.leaf, d.dim, d.symbol, d.path] for d in found],
        "static": [[leaf, dim, size, path] for (leaf, dim), (size, path) in static.items()],
        "in_spec": ep._in_spec,
        "out_spec": ep._out_spec,
    }
    tensors = {f"state.{k}": v for k, v in ep.state_dict.items()}
    tensors.update({f"constant.{k}": v for k, v in ep.constants.items()})
    write_archive(f, FORMAT, model, {**tensors, **writer.tensors}, extra_files)


def _input_json(spec: InputSpec) -> list:
    return [spec.kind.name, spec.arg.name, spec.target, spec.persistent]


def load(f, *, extra_files=None, expected_opset_version=None) -> ExportedProgram:
    """Read what ``ember.export.save`` wrote; every part is checked before use."""
    with read_archive(f, FORMAT, "ember.export.load") as archive:
        try:
            program = _program(archive)
        except (GraphFormatError, ValueError, TypeError, KeyError, IndexError) as exc:
            raise archive.fail(
                f"malformed exported program ({type(exc).__name__}: {exc})"
            ) from None
        archive.extra(extra_files)
    return program


def _program(archive) -> ExportedProgram:
    model, tensors = archive.model, archive.tensors
    expected = {"format", "version", "tensors", "kind", "name", "graph", "inputs", "outputs",
                "ranges", "dynamic", "static", "in_spec", "out_spec"}  # fmt: skip
    if set(model) != expected or model["kind"] != "exported_program":
        raise ValueError("unexpected fields")
    graph = GraphReader({k: v for k, v in tensors.items() if k.startswith("constants.")}).graph(
        model["graph"]
    )
    inputs = [_input_spec(entry) for entry in model["inputs"]]
    outputs = [
        OutputSpec(OutputKind[kind], TensorArgument(_text(name)), None)
        for kind, name in model["outputs"]
    ]
    if len(inputs) != len(graph.inputs()) or len(outputs) != len(graph.outputs()):
        raise ValueError("the signature does not match the graph")
    state, constants = {}, {}
    for spec in inputs:
        if spec.kind is InputKind.USER_INPUT:
            continue
        source = tensors.get(f"state.{spec.target}")
        if source is not None:
            state[spec.target] = source
        else:
            constants[spec.target] = tensors[f"constant.{spec.target}"]
    for spec in (model["in_spec"], model["out_spec"]):
        pytree.check_spec(spec)
    users = sum(s.kind is InputKind.USER_INPUT for s in inputs)
    if pytree.num_leaves(model["in_spec"]) != users:
        raise ValueError("the input structure does not match the graph")
    ranges = {_text(k): _range(v) for k, v in model["ranges"].items()}
    found = [DynamicDim(_int(leaf), _int(dim), _symbol(s, ranges), _text(path))
             for leaf, dim, s, path in model["dynamic"]]  # fmt: skip
    static = {(_int(leaf), _int(dim)): (_int(size), _text(path))
              for leaf, dim, size, path in model["static"]}  # fmt: skip
    signature = ExportGraphSignature(inputs, outputs)
    guards = (found, ranges, static)
    specs = (model["in_spec"], model["out_spec"])
    return ExportedProgram(graph, signature, state, constants, ranges, guards, *specs, None,
                           _text(model["name"]))  # fmt: skip


def _input_spec(entry) -> InputSpec:
    kind, name, target, persistent = entry
    if target is not None:
        target = _text(target)
    if persistent is not None and not isinstance(persistent, bool):
        raise TypeError("persistent must be a bool")
    return InputSpec(InputKind[kind], TensorArgument(_text(name)), target, persistent)


def _text(value) -> str:
    if not isinstance(value, str) or len(value) > 1000:
        raise TypeError(f"expected a short string, got {type(value).__name__}")
    return value


def _int(value) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise TypeError(f"expected a non-negative int, got {value!r}")
    return value


def _range(value) -> ValueRange:
    lower, upper = value
    return ValueRange(_int(lower), math.inf if upper is None else _int(upper))


def _symbol(name, ranges: dict) -> str:
    if name not in ranges:
        raise KeyError(f"dynamic dim symbol {name!r} has no range")
    return name
