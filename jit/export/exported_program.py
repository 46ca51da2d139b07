"""ExportedProgram: a module's forward as one graph of op-table ops, with its parameters,
buffers and constants lifted to inputs, a signature naming each input and output, and the
ranges of its dynamic dimensions (``torch.export.ExportedProgram``)."""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from ember.nn.modules.module import Module
from ember.nn.parameter import Parameter

from .. import pytree
from .._paths import parent, tensor_at
from ..fx.graph_module import GraphModule
from .dynamic_shapes import check_guards
from .to_fx import to_fx


class InputKind(Enum):
    USER_INPUT = 1
    PARAMETER = 2
    BUFFER = 3
    CONSTANT_TENSOR = 4
    CUSTOM_OBJ = 5
    TOKEN = 6


class OutputKind(Enum):
    USER_OUTPUT = 1
    LOSS_OUTPUT = 2
    BUFFER_MUTATION = 3
    GRADIENT_TO_PARAMETER = 4
    GRADIENT_TO_USER_INPUT = 5
    USER_INPUT_MUTATION = 6
    TOKEN = 7


@dataclass
class TensorArgument:
    name: str


@dataclass
class InputSpec:
    kind: InputKind
    arg: TensorArgument
    target: str | None
    persistent: bool | None = None


@dataclass
class OutputSpec:
    kind: OutputKind
    arg: TensorArgument
    target: str | None


class ExportGraphSignature:
    """What each input and output of the graph is."""

    def __init__(self, input_specs: list, output_specs: list):
        self.input_specs = input_specs
        self.output_specs = output_specs

    def _targets(self, kind) -> tuple:
        return tuple(s.target for s in self.input_specs if s.kind is kind)

    @property
    def parameters(self) -> tuple:
        return self._targets(InputKind.PARAMETER)

    @property
    def buffers(self) -> tuple:
        return self._targets(InputKind.BUFFER)

    @property
    def user_inputs(self) -> tuple:
        return tuple(s.arg.name for s in self.input_specs if s.kind is InputKind.USER_INPUT)

    @property
    def user_outputs(self) -> tuple:
        return tuple(s.arg.name for s in self.output_specs if s.kind is OutputKind.USER_OUTPUT)

    @property
    def inputs_to_parameters(self) -> dict:
        return {s.arg.name: s.target for s in self.input_specs if s.kind is InputKind.PARAMETER}

    @property
    def inputs_to_buffers(self) -> dict:
        return {s.arg.name: s.target for s in self.input_specs if s.kind is InputKind.BUFFER}

    def __str__(self) -> str:
        lines = ["", "# inputs"]
        for s in self.input_specs:
            line = f"{s.arg.name}: {s.kind.name}"
            if s.target is not None:
                line += f" target='{s.target}'"
            if s.persistent is not None:
                line += f" persistent={s.persistent}"
            lines.append(line)
        lines += ["", "# outputs"]
        lines += [f"{s.arg.name}: {s.kind.name}" for s in self.output_specs]
        return "\n".join(lines) + "\n"


class ExportedProgram:
    """The result of ``ember.export.export``; ``module()`` gives a runnable nn.Module."""

    def __init__(self, graph, signature, state_dict, constants, range_constraints, guards,
                 in_spec, out_spec, example_inputs=None, name="Module"):  # fmt: skip
        self._ir = graph  # the graph IR (ember.jit.ir), lifted inputs first
        self.graph_signature = signature
        self.state_dict = state_dict
        self.constants = constants
        self.range_constraints = range_constraints
        self._guards = guards  # (dynamic dims, static dims) checked by module()
        self._in_spec, self._out_spec = in_spec, out_spec
        self.example_inputs = example_inputs
        self._name = name
        self._graph_module = None

    @property
    def graph_module(self) -> GraphModule:
        if self._graph_module is None:
            names = [s.arg.name for s in self.graph_signature.input_specs]
            self._graph_module = GraphModule({}, to_fx(self._ir, names))
        return self._graph_module

    @property
    def graph(self):
        return self.graph_module.graph

    @property
    def call_spec(self):
        return self._in_spec, self._out_spec

    def parameters(self):
        yield from (self.state_dict[t] for t in self.graph_signature.parameters)

    def named_parameters(self):
        yield from ((t, self.state_dict[t]) for t in self.graph_signature.parameters)

    def buffers(self):
        yield from (
            self.state_dict[t] for t in self.graph_signature.buffers if t in self.state_dict
        )

    def run_decompositions(self, decomp_table=None):
        """The graph already holds op-table ops (composites stay one node, like conv2d)."""
        return self

    def __call__(self, *args, **kwargs):
        raise RuntimeError(
            "Unable to call ExportedProgram directly. You should use "
            "`exported_program.module()` instead."
        )

    def module(self) -> Module:
        """An nn.Module running the program, holding its parameters and buffers under their
        original names, checking the input shapes the export assumed."""
        return _ExportedModule(self)

    def __str__(self) -> str:
        code = self.graph_module.code.replace("def forward(self, ", "def forward(self, ", 1)
        body = "".join(f"        {line}\n" for line in code.splitlines())
        ranges = ", ".join(f"{k}: {v}" for k, v in self.range_constraints.items())
        return (
            f"ExportedProgram:\n    class GraphModule(ember.nn.Module):\n{body}\n"
            f"Graph signature: {_indent(str(self.graph_signature))}\n"
            f"Range constraints: {{{ranges}}}\n"
        )

    __repr__ = __str__


def _indent(text: str) -> str:
    return "\n".join("    " + line if line else line for line in text.splitlines())


class _ExportedModule(Module):
    """``ExportedProgram.module()``: the program with its state as a module's."""

    def __init__(self, program: ExportedProgram):
        super().__init__()
        object.__setattr__(self, "_program", program)
        for spec in program.graph_signature.input_specs:
            if spec.kind is InputKind.PARAMETER:
                _place(self, spec.target, program.state_dict[spec.target], True)
            elif spec.kind is InputKind.BUFFER:
                source = program.state_dict if spec.persistent else program.constants
                _place(self, spec.target, source[spec.target], False, spec.persistent)

    def forward(self, *args, **kwargs):
        program = self._program
        leaves, spec = pytree.flatten((tuple(args), dict(kwargs)))
        if spec != program._in_spec:
            raise TypeError("the exported module was called with arguments structured unlike "
                            "the example inputs of the export")  # fmt: skip
        check_guards(leaves, *program._guards)
        lifted = [self._lifted(s) for s in program.graph_signature.input_specs
                  if s.kind is not InputKind.USER_INPUT]  # fmt: skip
        flat = program.graph_module(*lifted, *leaves)
        return pytree.unflatten(list(flat), program._out_spec)

    def _lifted(self, spec):
        if spec.kind is InputKind.CONSTANT_TENSOR:
            return self._program.constants[spec.target]
        return tensor_at(self, spec.target)


def _place(root: Module, target: str, tensor, parameter: bool, persistent=True) -> None:
    module, leaf = parent(root, target, create=True)
    if parameter:
        module.register_parameter(
            leaf, tensor if isinstance(tensor, Parameter) else Parameter(tensor)
        )
    else:
        module.register_buffer(leaf, tensor, persistent=bool(persistent))
