"""Building an ONNX graph: values with the facts rules need, nodes, constants, casts.

``GraphBuilder`` is what PyTorch's symbolic functions call ``g``: ``g.op("Add", a, b)`` appends
a node and returns its output. A ``V`` is one ONNX value: its name, its ember dtype (so rules
cast by PyTorch's promotion results) and the sizes the trace saw (rank and the dims a rule may
treat as static, such as channel counts; never a dim that is dynamic). The ``onnx`` package is
imported here, on first use, so that ``import ember.onnx`` works without it.
"""

from __future__ import annotations

import math

import numpy as np

from ember import _dtype as dt

from .errors import OnnxExporterError, UnsupportedOperatorError

INT64_MAX = 9223372036854775807
INT64_MIN = -9223372036854775808

# ember dtype name -> onnx.TensorProto element type name
_ELEM = {
    "bool": "BOOL",
    "uint8": "UINT8",
    "int8": "INT8",
    "int16": "INT16",
    "int32": "INT32",
    "int64": "INT64",
    "float16": "FLOAT16",
    "bfloat16": "BFLOAT16",
    "float32": "FLOAT",
    "float64": "DOUBLE",
}
INSTALL_HINT = (
    "ember.onnx.export needs the onnx package: pip install 'ember[onnx]' (onnx, onnxruntime)"
)


def onnx_module():
    """The ``onnx`` package, or an error that says what to install."""
    try:
        import onnx
    except ImportError as exc:
        raise ModuleNotFoundError(INSTALL_HINT) from exc
    return onnx


def elem_type(dtype) -> int:
    """The ``onnx.TensorProto`` element type of an ember dtype."""
    return getattr(onnx_module().TensorProto, _ELEM[dtype.name])


class V:
    """One ONNX value. ``sizes``: the traced sizes (None when unknown); ``rank`` follows.
    ``traced``: for sizes computed at run time, the int (or ints) they were in the trace."""

    __slots__ = ("dtype", "name", "sizes", "traced")

    def __init__(self, name: str, dtype=None, sizes=None, traced=None):
        self.name = name
        self.dtype = dtype
        self.sizes = None if sizes is None else tuple(sizes)
        self.traced = traced

    @property
    def rank(self) -> int:
        if self.sizes is None:
            raise OnnxExporterError(f"ONNX export: the rank of value '{self.name}' is unknown")
        return len(self.sizes)

    def __repr__(self) -> str:
        return f"V({self.name}, {self.dtype}, {self.sizes})"


_SAME = object()
_ELEMENTWISE = {
    "Add",
    "Sub",
    "Mul",
    "Div",
    "Mod",
    "Max",
    "Min",
    "Neg",
    "Abs",
    "Cast",
    "Not",
}  # default output dtype: the first input's


def static_int(value):
    """A Python int, or the traced int of a size V; None when not known."""
    if isinstance(value, V):
        return value.traced if isinstance(value.traced, int) else None
    return value if isinstance(value, int) else None


class GraphBuilder:
    """The nodes, initializers and names of the ONNX graph being built.

    Attributes:
        opset: the ai.onnx opset version targeted.
        kind: the IR node kind being converted (errors name it).
        node: the IR node being converted (rules read its output types).
    """

    def __init__(self, opset: int):
        self.opset = opset
        self.onnx = onnx_module()
        self.nodes: list = []
        self.initializers: list = []
        self.kind = ""
        self.node = None
        self.scope = ""
        self._names: set[str] = set()
        self._constants: dict = {}
        self._shapes: dict[str, V] = {}

    # ---- names ---------------------------------------------------------------------------
    def fresh(self, hint: str) -> str:
        """A value name not used yet, from ``hint``."""
        name = hint
        count = 0
        while name in self._names or not name:
            count += 1
            name = f"{hint}_{count}" if hint else f"v_{count}"
        self._names.add(name)
        return name

    def reserve(self, name: str) -> str:
        """Claim ``name`` exactly (graph inputs, parameters); an error if taken."""
        if name in self._names:
            raise OnnxExporterError(f"ONNX export: the name '{name}' is given to two values")
        self._names.add(name)
        return name

    # ---- nodes ---------------------------------------------------------------------------
    def op(self, op_type: str, *inputs, outputs: int = 1, dtype=_SAME, sizes=None, **attrs):
        """Append an ``op_type`` node; returns its output V (a tuple when ``outputs`` > 1).

        ``inputs``: V (None for a skipped optional input). ``dtype``: of every output (default:
        the first input's). ``attrs``: ONNX attributes (None values are left out).
        """
        names = ["" if x is None else x.name for x in inputs]
        while names and not names[-1]:  # trailing optional inputs are left out, not ""
            names.pop()
        if dtype is _SAME:
            dtype = next((x.dtype for x in inputs if x is not None), None)
        if sizes is None and op_type in _ELEMENTWISE and all(x.sizes == () for x in inputs):
            sizes = ()  # arithmetic on sizes stays 0-d
        outs = [V(self.fresh(f"{op_type}_out"), dtype, sizes) for _ in range(outputs)]
        attrs = {k: v for k, v in attrs.items() if v is not None}
        node_name = self.fresh(f"{self.scope}/{op_type}" if self.scope else op_type)
        self.nodes.append(
            self.onnx.helper.make_node(
                op_type, names, [o.name for o in outs], name=node_name, **attrs
            )
        )
        return outs[0] if outputs == 1 else tuple(outs)

    def require(self, version: int) -> None:
        """Raise for the op being converted when the opset is below ``version``."""
        if self.opset < version:
            raise UnsupportedOperatorError(self.kind, self.opset, version)

    def unsupported(self, why: str = ""):
        """The error for an op (or an argument of it) that ONNX cannot express."""
        error = UnsupportedOperatorError(self.kind, self.opset, None)
        if why:
            error.args = (f"{error.args[0]}: {why}",)
        return error

    # ---- constants -----------------------------------------------------------------------
    def const(self, value, dtype) -> V:
        """A constant of ``dtype`` (Python number, nested list or numpy array)."""
        array = np.asarray(value, dtype=dtype.np)
        key = (dtype.name, array.shape, array.tobytes())
        found = self._constants.get(key)
        if found is not None:
            return found
        tensor = self.onnx.numpy_helper.from_array(array)
        if array.size > 16:
            v = self.initializer(tensor, "const", dtype, array.shape)
        else:
            v = self.op("Constant", value=tensor, dtype=dtype, sizes=array.shape)
        self._constants[key] = v
        return v

    def const_tensor(self, tensor, hint: str) -> V:
        """A constant ember tensor of the graph (a frozen weight, a mask built from constants)."""
        array = tensor.detach().cpu().numpy()
        proto = self.onnx.numpy_helper.from_array(array)
        return self.initializer(proto, hint, tensor.dtype, array.shape)

    def initializer(self, tensor_proto, hint: str, dtype, sizes, exact: bool = False) -> V:
        name = self.reserve(hint) if exact else self.fresh(hint)
        tensor_proto.name = name
        self.initializers.append(tensor_proto)
        return V(name, dtype, sizes)

    def ints(self, values) -> V:
        """A 1-D int64 tensor from ints, a list holding V scalars, or a V (0-d or 1-D)."""
        if isinstance(values, V):
            if values.sizes is not None and len(values.sizes) == 0:
                return self.unsqueeze(self.cast(values, dt.int64), 0)
            return self.cast(values, dt.int64)
        if isinstance(values, int):
            values = [values]
        values = list(values)
        if all(isinstance(x, int) for x in values):
            return self.const(values, dt.int64)
        pieces = [self.ints(x) for x in values]
        out = self.op("Concat", *pieces, axis=0, dtype=dt.int64, sizes=(len(values),))
        traced = [static_int(x) for x in values]
        out.traced = None if None in traced else traced
        return out

    def size_of_list(self, sizes: V, i: int) -> V:
        """Entry ``i`` of a 1-D int64 tensor of sizes, as a 0-d tensor."""
        return self.op("Gather", sizes, self.const(i, dt.int64), axis=0, sizes=())

    def scalar(self, value, dtype) -> V:
        """A 0-d tensor of ``dtype`` from a Python number or a V."""
        if isinstance(value, V):
            if value.sizes is not None and len(value.sizes) == 1:
                value = self.op("Squeeze", value, self.const([0], dt.int64))
            return self.cast(value, dtype)
        return self.const(value, dtype)

    def tensor(self, value, dtype) -> V:
        """An operand of ``dtype``: a V cast to it, or a Python number as a constant."""
        if isinstance(value, V):
            return self.cast(value, dtype)
        if isinstance(value, float) and not math.isfinite(value) and dtype.category != dt.FLOATING:
            raise self.unsupported(f"{value} does not fit {dtype}")
        return self.const(value, dtype)

    # ---- common nodes --------------------------------------------------------------------
    def cast(self, v: V, dtype) -> V:
        if v.dtype is dtype or dtype is None:
            return v
        return self.op("Cast", v, to=elem_type(dtype), dtype=dtype, sizes=v.sizes)

    def unsqueeze(self, v: V, axes) -> V:
        axes = [axes] if isinstance(axes, int) else list(axes)
        sizes = None
        if v.sizes is not None:
            sizes = list(v.sizes)
            for axis in sorted(a % (len(sizes) + len(axes)) for a in axes):
                sizes.insert(axis, 1)
        return self.op("Unsqueeze", v, self.const(axes, dt.int64), sizes=sizes)

    def shape(self, v: V) -> V:
        """``Shape(v)``, made once per value."""
        found = self._shapes.get(v.name)
        if found is None:
            rank = None if v.sizes is None else (len(v.sizes),)
            found = self.op("Shape", v, dtype=dt.int64, sizes=rank)
            self._shapes[v.name] = found
        return found

    def size(self, v: V, dim: int) -> V:
        """The size of dim ``dim`` of ``v``: a 0-d int64 tensor."""
        if dim < 0:
            dim += v.rank
        return self.op("Gather", self.shape(v), self.const(dim, dt.int64), axis=0, sizes=())

    def dims(self, v: V, start: int, end: int | None = None) -> V:
        """Sizes ``start:end`` of ``v`` as a 1-D int64 tensor."""
        return self.op("Shape", v, start=start, end=end, dtype=dt.int64)

    def out_dtype(self, i: int = 0):
        """The dtype of the IR node's output ``i``, as the trace recorded it."""
        return self.node.outputsAt(i).type().dtype()

    def out_sizes(self, i: int = 0):
        return self.node.outputsAt(i).type().sizes()
