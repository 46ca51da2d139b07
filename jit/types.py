"""The types of graph values: tensors with what is known of their shape, dtype, device and
``requires_grad``, and the Python scalars, containers and options ops take.

A ``TensorType`` dimension is an int (known), a string (a named symbolic size, such as an
``ember.export.Dim``) or None (unknown). Types are immutable and compare by value; each has a
JSON form (``to_json``/``from_json``) used by the serializer, and the annotation it shows in
generated code.
"""

from __future__ import annotations

from ember import _dtype as dt
from ember._device import device as Device

# TorchScript's names for scalar types, as graphs print them: Float(2, 3).
SCALAR_NAMES = {
    dt.bool_: "Bool",
    dt.uint8: "Byte",
    dt.int8: "Char",
    dt.int16: "Short",
    dt.int32: "Int",
    dt.int64: "Long",
    dt.float16: "Half",
    dt.bfloat16: "BFloat16",
    dt.float32: "Float",
    dt.float64: "Double",
}
DTYPES = {d.name: d for d in dt.ALL}


class Type:
    """Base of value types."""

    __slots__ = ()

    def __eq__(self, other) -> bool:
        return type(other) is type(self) and self._key() == other._key()

    def __hash__(self) -> int:
        return hash((type(self).__name__, self._key()))

    def _key(self):
        return ()

    def __repr__(self) -> str:
        return str(self)

    def annotation(self) -> str:
        return str(self)

    def to_json(self):
        raise NotImplementedError

    def kind(self) -> str:
        return type(self).__name__


class _Named(Type):
    """A type that is only a name: int, float, bool, str, NoneType, Device, ScalarType..."""

    __slots__ = ("name",)

    def __init__(self, name: str):
        self.name = name

    def _key(self):
        return self.name

    def __str__(self) -> str:
        return self.name

    def to_json(self):
        return self.name


IntType = _Named("int")
FloatType = _Named("float")
ComplexType = _Named("complex")  # TorchScript's complex (a Python complex at run time)
BoolType = _Named("bool")
StrType = _Named("str")
NoneType = _Named("NoneType")
DeviceObjType = _Named("Device")
ScalarTypeType = _Named("ScalarType")
GeneratorType = _Named("Generator")
NumberType = _Named("Scalar")  # int or float, known only at run time
AnyType = _Named("Any")
NAMED = {
    t.name: t
    for t in (
        IntType,
        FloatType,
        ComplexType,
        BoolType,
        StrType,
        NoneType,
        DeviceObjType,
        ScalarTypeType,
        GeneratorType,
        NumberType,
        AnyType,
    )
}


class TensorType(Type):
    """A tensor; any of its facts may be unknown (None)."""

    __slots__ = ("_device", "_dtype", "_requires_grad", "_sizes")

    def __init__(self, dtype=None, sizes=None, device=None, requires_grad=None):
        self._dtype = dtype
        self._sizes = None if sizes is None else tuple(sizes)
        self._device = None if device is None else Device(device)
        self._requires_grad = requires_grad

    @classmethod
    def of(cls, t) -> TensorType:
        """The exact type of tensor ``t``."""
        return cls(t._dtype, t._shape, t._storage.device, t._requires_grad)

    def _key(self):
        return (self._dtype, self._sizes, self._device, self._requires_grad)

    def dtype(self):
        return self._dtype

    scalarType = dtype  # noqa: N815 - TorchScript's name

    def sizes(self):
        return self._sizes

    def dim(self):
        return None if self._sizes is None else len(self._sizes)

    def device(self):
        return self._device

    def requires_grad(self):
        return self._requires_grad

    requiresGrad = requires_grad  # noqa: N815

    def is_complete(self) -> bool:
        """Whether dtype, device and every size are known integers."""
        return (
            self._dtype is not None
            and self._device is not None
            and self._sizes is not None
            and all(isinstance(s, int) for s in self._sizes)
        )

    def with_(self, **changes) -> TensorType:
        facts = {
            "dtype": self._dtype,
            "sizes": self._sizes,
            "device": self._device,
            "requires_grad": self._requires_grad,
        }
        facts.update(changes)
        return TensorType(**facts)

    def __str__(self) -> str:
        if self._dtype is None and self._sizes is None:
            return "Tensor"
        head = SCALAR_NAMES.get(self._dtype, "Tensor")
        parts = [] if self._sizes is None else ["*" if s is None else str(s) for s in self._sizes]
        if self._requires_grad:
            parts.append("requires_grad=1")
        if self._device is not None:
            parts.append(f"device={self._device}")
        return f"{head}({', '.join(parts)})"

    def annotation(self) -> str:
        return "Tensor"

    def to_json(self):
        return {
            "tensor": {
                "dtype": None if self._dtype is None else self._dtype.name,
                "sizes": None if self._sizes is None else list(self._sizes),
                "device": None if self._device is None else str(self._device),
                "requires_grad": self._requires_grad,
            }
        }


Tensor = TensorType()  # nothing known


class _Of(Type):
    """A type of one element type: ``int[]`` / ``List[int]``, ``Tensor?`` / ``Optional[...]``."""

    __slots__ = ("elem",)
    tag = ""
    suffix = ""
    wrapper = ""

    def __init__(self, elem: Type):
        self.elem = elem

    def _key(self):
        return self.elem

    def __str__(self) -> str:
        return f"{self.elem.annotation()}{self.suffix}"

    def annotation(self) -> str:
        return f"{self.wrapper}[{self.elem.annotation()}]"

    def to_json(self):
        return {self.tag: self.elem.to_json()}


class ListType(_Of):
    __slots__ = ()
    tag, suffix, wrapper = "list", "[]", "List"


class OptionalType(_Of):
    __slots__ = ()
    tag, suffix, wrapper = "optional", "?", "Optional"


class UnionType(Type):
    """``Union[int, str]`` (and ``Optional`` of several types: NoneType is a member); a value
    of it is narrowed by ``isinstance``/``is None`` (``prim::unchecked_cast``)."""

    __slots__ = ("elems",)

    def __init__(self, elems):
        flat = []
        for e in elems:
            flat += e.elems if isinstance(e, UnionType) else [e]
        self.elems = tuple(sorted(dict.fromkeys(flat), key=_union_rank))

    def _key(self):
        return self.elems

    def __str__(self) -> str:
        return f"Union({', '.join(e.annotation() for e in self.elems)})"

    def annotation(self) -> str:
        return f"Union[{', '.join(e.annotation() for e in self.elems)}]"

    def to_json(self):
        return {"union": [e.to_json() for e in self.elems]}


def _union_rank(kind) -> int:
    """TorchScript orders a Union's members by their type kind (c10's TypeKind order)."""
    order = (TensorType, TupleType, ListType, DictType, NumberType, FloatType, IntType)
    order += (NoneType, StrType, GeneratorType, BoolType, OptionalType)
    for rank, entry in enumerate(order):
        if kind == entry or (isinstance(entry, type) and isinstance(kind, entry)):
            return rank
    return len(order)


def union_of(elems) -> Type:
    """The narrowest type holding ``elems``: one type, ``Optional[T]``, or a Union."""
    elems = list(dict.fromkeys(elems))
    rest = [e for e in elems if e != NoneType]
    if len(elems) == 1:
        return elems[0]
    if len(rest) == 1:
        return OptionalType(rest[0])
    return UnionType(elems)


class TupleType(Type):
    __slots__ = ("elems",)

    def __init__(self, elems):
        self.elems = tuple(elems)

    def _key(self):
        return self.elems

    def __str__(self) -> str:
        return f"({', '.join(e.annotation() for e in self.elems)})"

    def annotation(self) -> str:
        return f"Tuple[{', '.join(e.annotation() for e in self.elems)}]"

    def to_json(self):
        return {"tuple": [e.to_json() for e in self.elems]}


class NamedTupleType(TupleType):
    """A ``typing.NamedTuple`` class in scripted code: a tuple whose items have names. ``cls``
    is the Python class when known (results are made of it), None after loading."""

    __slots__ = ("cls", "fields", "name")

    def __init__(self, name: str, fields, elems, cls=None):
        super().__init__(elems)
        self.name, self.fields, self.cls = name, tuple(fields), cls

    def _key(self):
        return (self.name, self.fields, self.elems)

    def annotation(self) -> str:
        return self.name

    def to_json(self):
        return {"named_tuple": [self.name, list(self.fields), [e.to_json() for e in self.elems]]}

    def make(self, values):
        """The result object: the class, else a ``collections.namedtuple`` of the same name."""
        cls = self.cls
        if cls is None:
            cls = self.cls = _namedtuple(self.name, self.fields)
        return cls(*values)


def has_named_tuple(kind) -> bool:
    if isinstance(kind, NamedTupleType):
        return True
    if isinstance(kind, TupleType):
        return any(has_named_tuple(e) for e in kind.elems)
    if isinstance(kind, (ListType, OptionalType)):
        return has_named_tuple(kind.elem)
    return False


def rebuild_named_tuples(value, kind):
    """A result with its NamedTuple items made of their classes (the graph holds tuples)."""
    if value is None:
        return None
    if isinstance(kind, OptionalType):
        return rebuild_named_tuples(value, kind.elem)
    if isinstance(kind, ListType):
        return [rebuild_named_tuples(v, kind.elem) for v in value]
    if isinstance(kind, TupleType):
        items = [rebuild_named_tuples(v, k) for v, k in zip(value, kind.elems)]
        return kind.make(items) if isinstance(kind, NamedTupleType) else tuple(items)
    return value


def _namedtuple(name: str, fields):
    import collections

    return collections.namedtuple(name, fields)


class ClassType(Type):
    """A user class in scripted code: named fields of fixed types (filled while ``__init__``
    compiles; ``complete`` after it). ``cls`` is the Python class when known."""

    __slots__ = ("cls", "complete", "fields", "name")

    def __init__(self, name: str, fields: dict, cls=None, complete: bool = False):
        self.name, self.fields, self.cls, self.complete = name, fields, cls, complete

    def _key(self):
        return self.name

    def __str__(self) -> str:
        return self.name

    def annotation(self) -> str:
        return self.name

    def qualified_name(self) -> str:
        """TorchScript's name of the class in messages: ``__torch__.<module>.<name>``."""
        module = getattr(self.cls, "__module__", "__main__")
        return "__torch__." + ("" if module == "__main__" else f"{module}.") + self.name

    def to_json(self):
        return {"class": [self.name, [[k, v.to_json()] for k, v in self.fields.items()]]}


class DictType(Type):
    """``Dict[str, Tensor]``: keys of one type, values of one type (scripted code)."""

    __slots__ = ("key", "value")

    def __init__(self, key: Type, value: Type):
        if not (isinstance(key, TensorType) or key in _DICT_KEYS):  # TorchScript's DictType
            name = key.qualified_name() if isinstance(key, ClassType) else str(key)
            raise RuntimeError(
                f"Cannot create dict for key type '{name}', only int, float, complex, Tensor, "
                "device and string keys are supported"
            )
        self.key, self.value = key, value

    def _key(self):
        return (self.key, self.value)

    def __str__(self) -> str:
        return f"Dict({self.key.annotation()}, {self.value.annotation()})"

    def annotation(self) -> str:
        return f"Dict[{self.key.annotation()}, {self.value.annotation()}]"

    def to_json(self):
        return {"dict": [self.key.to_json(), self.value.to_json()]}


_DICT_KEYS = (IntType, FloatType, ComplexType, BoolType, StrType, DeviceObjType, AnyType)


def from_json(data) -> Type:
    """The type a ``to_json`` form describes; ValueError for anything else."""
    if isinstance(data, str):
        found = NAMED.get(data)
        if found is None:
            raise ValueError(f"unknown type name {data!r}")
        return found
    if not isinstance(data, dict) or len(data) != 1:
        raise ValueError(f"malformed type {data!r}")
    ((tag, body),) = data.items()
    if tag == "tensor":
        return _tensor_from_json(body)
    if tag == "list":
        return ListType(from_json(body))
    if tag == "optional":
        return OptionalType(from_json(body))
    if tag == "dict" and isinstance(body, list) and len(body) == 2:
        return DictType(from_json(body[0]), from_json(body[1]))
    if tag == "tuple" and isinstance(body, list):
        return TupleType(from_json(item) for item in body)
    if tag == "union" and isinstance(body, list) and len(body) >= 2:
        return UnionType(from_json(item) for item in body)
    if tag == "class" and isinstance(body, list) and len(body) == 2:
        name, fields = body
        if not isinstance(name, str) or not isinstance(fields, list):
            raise ValueError(f"malformed class type {data!r}")
        if not all(isinstance(f, list) and len(f) == 2 and isinstance(f[0], str) for f in fields):
            raise ValueError(f"malformed class type {data!r}")
        return ClassType(name, {k: from_json(v) for k, v in fields}, complete=True)
    if tag == "named_tuple" and isinstance(body, list) and len(body) == 3:
        name, fields, elems = body
        names = [name, *fields] if isinstance(fields, list) else [None]
        if not all(isinstance(n, str) and n.isidentifier() for n in names):
            raise ValueError(f"malformed named tuple type {data!r}")
        if not isinstance(elems, list) or len(elems) != len(fields):
            raise ValueError(f"malformed named tuple type {data!r}")
        return NamedTupleType(name, fields, [from_json(item) for item in elems])
    raise ValueError(f"malformed type {data!r}")


def _tensor_from_json(body) -> TensorType:
    if not isinstance(body, dict) or set(body) - {"dtype", "sizes", "device", "requires_grad"}:
        raise ValueError(f"malformed tensor type {body!r}")
    dtype = body.get("dtype")
    if dtype is not None and dtype not in DTYPES:
        raise ValueError(f"unknown dtype {dtype!r}")
    sizes = body.get("sizes")
    if sizes is not None and (not isinstance(sizes, list) or not all(map(_is_dim, sizes))):
        raise ValueError(f"malformed sizes {sizes!r}")
    device = body.get("device")
    if device is not None and not isinstance(device, str):
        raise ValueError(f"malformed device {device!r}")
    grad = body.get("requires_grad")
    if grad is not None and not isinstance(grad, bool):
        raise ValueError(f"malformed requires_grad {grad!r}")
    return TensorType(
        None if dtype is None else DTYPES[dtype],
        sizes,
        None if device is None else Device(device),
        grad,
    )


def _is_dim(size) -> bool:
    if size is None or isinstance(size, str):
        return True
    return isinstance(size, int) and not isinstance(size, bool) and size >= 0


def type_of(value) -> Type:
    """The type of a Python value as a graph sees it (constants, outputs)."""
    from ember._tensor import Tensor as EmberTensor

    if isinstance(value, EmberTensor):
        return TensorType.of(value)
    if value is None:
        return NoneType
    if isinstance(value, bool):
        return BoolType
    if isinstance(value, int):
        return IntType
    if isinstance(value, float):
        return FloatType
    if isinstance(value, complex):
        return ComplexType
    if isinstance(value, str):
        return StrType
    if isinstance(value, dt.dtype):
        return ScalarTypeType
    if isinstance(value, Device):
        return DeviceObjType
    if isinstance(value, list):
        return ListType(_common(type_of(v) for v in value))
    if isinstance(value, tuple):
        return TupleType(type_of(v) for v in value)
    from ember._random import Generator

    if isinstance(value, Generator):
        return GeneratorType
    return AnyType


def _common(types) -> Type:
    """The element type of a list: ``Tensor`` for tensors, Any for mixed scalars."""
    found = None
    for t in types:
        t = Tensor if isinstance(t, TensorType) else t  # a list's tensors vary: no details
        if found is None:
            found = t
        elif found != t:
            return AnyType
    return found or AnyType
