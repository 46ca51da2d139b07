"""Calls of library code as op-table nodes: binding Python arguments to an op's schema, and the
lowering of ``ember.*`` / ``F.*`` functions and tensor methods.

The op table is the vocabulary: a library function or tensor method whose name is an op's
name becomes that op's node, its arguments bound to the schema by position and keyword (the
schema's defaults fill the rest, as ``Op.__call__`` does). Arguments the Python function takes
and the op does not (``inplace=False``, ``_stacklevel``) must keep their default. The few
functions whose Python wrapper does more than pick an op (pooling geometry, factories, dtype
conversions) have an entry in ``SPECIAL``.
"""

from __future__ import annotations

import inspect

from ember import _dtype as dt
from ember.dispatcher.optable import OPS

from .. import types as T
from ..ir import Value
from ..ops import kind_of
from .sugar import PyObj, Sugar

_RETURNS = {
    "Tensor": T.Tensor,
    "Tensor[]": T.ListType(T.Tensor),
    "int": T.IntType,
    "float": T.FloatType,
    "bool": T.BoolType,
    "Scalar": T.NumberType,
    "int[]": T.ListType(T.IntType),
}
_MISSING = object()


class BindError(Exception):
    """Arguments that do not fit an op's schema (the caller adds file and line)."""


def emit_op(em, op, args: list, kwargs: dict, pyfn=None):
    """Insert ``op``'s node for a call with these argument values; returns its result value
    (a tuple value for ops with several results)."""
    inputs = bind(em, op, args, kwargs, pyfn)
    returns = op.schema.returns
    node = em.graph.insert(kind_of(op), inputs, num_outputs=len(returns))
    node.setSourceRange(em.where())
    for value, (type_text, _name) in zip(node.outputs(), returns):
        value.setType(_RETURNS.get(type_text, T.AnyType))
    if len(returns) == 1 and not op.schema.returns_tuple:
        return node.output()
    return em.tuple_value(node.outputs())


def bind(em, op, args: list, kwargs: dict, pyfn=None) -> list[Value]:
    """Node inputs for ``op(*args, **kwargs)``: every schema argument, positionally."""
    schema = op.schema.args
    kwargs = _drop_python_only(op, kwargs, pyfn)
    args = _pack_varargs(em, schema, list(args))
    if len(args) > len(schema):
        raise BindError(
            f"{op.name}() expected at most {len(schema)} argument(s) but received {len(args)}"
        )
    bound: list = list(args) + [_MISSING] * (len(schema) - len(args))
    for name, value in kwargs.items():
        index = next((i for i, a in enumerate(schema) if a.name == name), None)
        if index is None:
            raise BindError(f"{op.name}() got an unexpected keyword argument '{name}'")
        if bound[index] is not _MISSING:
            raise BindError(f"{op.name}() got multiple values for argument '{name}'")
        bound[index] = value
    inputs = []
    for arg, value in zip(schema, bound):
        if value is _MISSING:
            if not arg.has_default:
                raise BindError(f"{op.name}() is missing value for argument '{arg.name}'")
            default = arg.default
            value = em.constant(list(default) if isinstance(default, tuple) else default)
            inputs.append(value)  # the schema's own default (norm's p='fro'): not checked
            continue
        inputs.append(_check(em, op, arg, value))
    return inputs


def _check(em, op, arg, value) -> Value:
    if isinstance(value, Sugar):
        value = em.materialize(value)
    kind = value.type()
    if isinstance(kind, T.OptionalType) and arg.optional:
        kind = kind.elem  # None or a value: the op takes both
    if kind == T.NoneType:
        if arg.optional:
            return value
    elif arg.is_list:
        if isinstance(kind, (T.ListType, T.TupleType)) or kind in (T.IntType, T.AnyType):
            return value
    elif arg.type == "Tensor":
        if isinstance(kind, T.TensorType) or kind in _NUMBERS or kind == T.ComplexType:
            return value
    elif arg.type in ("int", "float", "Scalar"):
        scalar = arg.type == "Scalar" and (isinstance(kind, T.TensorType) or kind == T.ComplexType)
        if kind in _NUMBERS or scalar:
            return value
    elif arg.type == "bool":
        if kind in (T.BoolType, T.IntType):
            return value
    elif arg.type == "str":
        if kind == T.StrType:
            return value
    else:
        return value
    expected = f"{arg.type}{'[]' if arg.is_list else ''}{'?' if arg.optional else ''}"
    raise BindError(
        f"{op.name}(): expected a value of type '{expected}' for argument '{arg.name}' but "
        f"instead found type '{kind.annotation()}'"
    )


_NUMBERS = (T.IntType, T.FloatType, T.BoolType, T.NumberType, T.AnyType)


def _pack_varargs(em, schema, args: list) -> list:
    """``x.view(a, b)`` / ``x.permute(0, 2, 1)``: trailing ints go into the list argument."""
    if len(args) <= len(schema):
        return args
    for i, arg in enumerate(schema):
        if arg.is_list and arg.type == "int" and i < len(args):
            packed = em.list_value(args[i:], T.IntType)
            return args[:i] + [packed]
    return args


def _drop_python_only(op, kwargs: dict, pyfn) -> dict:
    names = {a.name for a in op.schema.args}
    extra = [k for k in kwargs if k not in names]
    if not extra:
        return kwargs
    try:
        params = inspect.signature(pyfn).parameters if pyfn is not None else {}
    except (TypeError, ValueError):
        params = {}
    kept = dict(kwargs)
    for name in extra:
        param = params.get(name)
        value = kwargs[name]
        if param is None or param.default is inspect.Parameter.empty:
            continue  # bind() reports it
        if _constant(value, _MISSING) == param.default:
            del kept[name]
        else:
            raise BindError(
                f"{op.name}(): argument '{name}' is only supported at its default "
                f"({param.default!r}) in TorchScript"
            )
    return kept


def _constant(value, missing):
    if isinstance(value, Value) and value.node().kind() == "prim::Constant":
        return value.node()["value"]
    return missing


# ---- functions whose wrapper does more than choose an op ---------------------------------------
def _max_pool(n):
    def lower(em, args, kwargs, pyfn):
        from ember.nn.functional.pooling import _geometry

        bound = inspect.signature(pyfn).bind(*args, **kwargs)
        bound.apply_defaults()
        values = dict(bound.arguments)
        plain = {}
        for key in ("kernel_size", "stride", "padding", "dilation", "ceil_mode", "return_indices"):
            plain[key] = em.require_constant(values[key], f"max_pool{n}d's {key}")
        geometry = _geometry(f"max_pool{n}d", n, *(plain[k] for k in list(plain)[:4]))
        inputs = [values["input"], *(em.constant(list(g)) for g in geometry)]
        result = emit_op(
            em, OPS["max_pool2d_with_indices"], [*inputs, em.constant(plain["ceil_mode"])], {}
        )
        if plain["return_indices"]:
            return result
        return em.tuple_index(result, 0)

    return lower


_INTERPOLATE_RANK = {"linear": 1, "bilinear": 2, "bicubic": 2, "trilinear": 3}


_INTERPOLATE_ARGS = (
    "input",
    "size",
    "scale_factor",
    "mode",
    "align_corners",
    "recompute_scale_factor",
    "antialias",
)


def _interpolate(em, args, kwargs, pyfn):
    """One upsample node (the op interpolate calls eagerly) when the options are constants and
    fix the input's rank (scale factors stay scales: the scripted function resizes any input
    size by them); else ``prim::interpolate``, which calls eager ``F.interpolate`` with the
    run-time values, as TorchScript's interpolate branches on ``input.dim()`` when it runs: a
    rank known only then, ``mode="area"``, ``antialias=True``, ``recompute_scale_factor``,
    options computed at run time."""
    bound = inspect.signature(pyfn).bind(*args, **kwargs)
    bound.apply_defaults()
    values = dict(bound.arguments)
    lowered = _one_upsample(em, values)
    if lowered is not None:
        return lowered
    inputs = [_as_value(em, values[key]) for key in _INTERPOLATE_ARGS]
    return em.prim("prim::interpolate", inputs, T.Tensor)


def _as_value(em, value) -> Value:
    if isinstance(value, (Value, Sugar)):
        return em.materialize(value)
    return em.constant(value)  # a Python default from the signature


def _one_upsample(em, values):
    """The upsample node for constant options that fix the rank, else None."""
    from ember.nn.functional.vision import _UPSAMPLE, _scales

    keys = ("size", "scale_factor", "mode", "align_corners", "recompute_scale_factor", "antialias")
    plain = {}
    for key in keys:
        value = values[key]
        if isinstance(value, PyObj):
            value = value.obj
        elif isinstance(value, (Value, Sugar)):
            if not em.is_constant(value):
                return None
            value = em.known(value)
        plain[key] = value
    mode, size, factor = plain["mode"], plain["size"], plain["scale_factor"]
    if mode not in _UPSAMPLE or plain["antialias"] or plain["recompute_scale_factor"]:
        return None
    if (size is None) == (factor is None):
        return None  # eager's error, when it runs
    # the op depends on the input's rank: the mode's, or the length of a per-dim size/scale
    given = size if size is not None else factor
    spatial = _INTERPOLATE_RANK.get(mode) or (len(given) if isinstance(given, (list, tuple)) else 0)
    if not spatial:
        return None
    if size is not None:
        sizes, factors = [size] * spatial if isinstance(size, int) else list(size), None
    else:
        sizes, factors = None, _scales(factor, False, spatial)
    op = OPS[_UPSAMPLE[mode].format(spatial)]
    inputs = [values["input"], em.constant(sizes)]
    if not mode.startswith("nearest"):
        inputs.append(em.constant(bool(plain["align_corners"])))
    return emit_op(em, op, [*inputs, em.constant(factors)], {})


def _dropout(em, args, kwargs, pyfn):
    bound = inspect.signature(pyfn).bind(*args, **kwargs)
    bound.apply_defaults()
    p = em.require_constant(bound.arguments["p"], "dropout's p")
    training = bound.arguments["training"]
    if isinstance(training, Value) and not em.is_constant(training):
        return _runtime_dropout(em, bound.arguments["input"], p, training)
    training = em.require_constant(training, "dropout's training")
    return dropout_nodes(em, bound.arguments["input"], p, training)


def module_dropout(em, ref, x, p: float):
    """Dropout of a library module (nn.Dropout, between RNN layers): its ``training`` flag read
    at run time, so ``scripted.train()``/``.eval()`` switch it as in PyTorch's scripted modules."""
    if not 0.0 <= p <= 1.0:
        raise BindError(f"dropout probability has to be between 0 and 1, but got {p}")
    if p == 0.0:
        return x
    return _runtime_dropout(em, x, p, em.read_attribute(ref, "training", None))


def _runtime_dropout(em, x, p: float, training: Value):
    """``F.dropout(x, p, self.training)`` with the flag known at run time: a ``prim::If``
    between the masked and the unchanged input."""
    node = em.graph.insert("prim::If", [training], num_outputs=0)
    for flag in (True, False):
        block = node.addBlock()
        with em.graph.insert_point_guard(block):
            block.registerOutput(em.materialize(dropout_nodes(em, x, p, flag)))
    return node.addOutput(x.type())


def dropout_nodes(em, x, p: float, training: bool):
    """Dropout as op nodes: identity in eval, else ``x * bernoulli(1 - p) / (1 - p)`` (the
    same distribution as eager dropout; ``inplace`` gives the same values, out of place)."""
    if not 0.0 <= p <= 1.0:
        raise BindError(f"dropout probability has to be between 0 and 1, but got {p}")
    if not training or p == 0.0:
        return x
    if p == 1.0:
        return emit_op(em, OPS["mul"], [x, em.constant(0.0)], {})
    mask = emit_op(em, OPS["bernoulli"], [x, em.constant(1.0 - p)], {})
    kept = emit_op(em, OPS["mul"], [x, mask], {})
    return emit_op(em, OPS["mul"], [kept, em.constant(1.0 / (1.0 - p))], {})


def _factory(fill):
    def lower(em, args, kwargs, pyfn):
        dtype = kwargs.pop("dtype", em.constant(None))
        device = kwargs.pop("device", em.constant(None))
        for key in ("requires_grad", "layout", "pin_memory", "out"):
            if key in kwargs and _constant(kwargs.pop(key), 0) not in (None, False):
                raise BindError(f"{pyfn.__name__}(): '{key}' is not supported in TorchScript")
        if kwargs:
            raise BindError(
                f"{pyfn.__name__}() got an unexpected keyword argument '{next(iter(kwargs))}'"
            )
        size = args[0] if len(args) == 1 else em.list_value(args, T.IntType)
        if _constant(dtype, 0) is None:
            dtype = em.constant(dt.get_default_dtype())
        return emit_op(
            em, OPS["full"], [size, em.constant(fill)], {"dtype": dtype, "device": device}
        )

    return lower


def _factory_like(fill):
    def lower(em, args, kwargs, pyfn):
        (source,) = args
        dtype = kwargs.pop("dtype", None) or em.prim("prim::dtype", [source], T.ScalarTypeType)
        device = kwargs.pop("device", None) or em.prim("prim::device", [source], T.DeviceObjType)
        size = em.prim("prim::shape", [source], T.ListType(T.IntType))
        return emit_op(
            em, OPS["full"], [size, em.constant(fill)], {"dtype": dtype, "device": device}
        )

    return lower


# x.new_zeros(size)...: the fill of each (new_full's comes second; new_empty's values are
# unspecified, zeros here)
NEW_FACTORIES = {"new_zeros": 0.0, "new_ones": 1.0, "new_empty": 0.0, "new_full": None}


def new_factory(em, source, name: str, args: list, kwargs: dict):
    """``source.new_zeros(size, dtype=None, device=None)``: ``full`` with the source's dtype
    and device unless given."""
    fill = NEW_FACTORIES[name]
    if fill is None:
        if len(args) != 2:
            raise BindError("new_full() expects a size and a fill value")
        *args, fill = args
    dtype = kwargs.pop("dtype", None) or em.prim("prim::dtype", [source], T.ScalarTypeType)
    device = kwargs.pop("device", None) or em.prim("prim::device", [source], T.DeviceObjType)
    if kwargs or not args:
        raise BindError(f"{name}() takes a size and optional dtype and device")
    size = args[0] if len(args) == 1 else em.list_value(args, T.IntType)
    fill = fill if isinstance(fill, Value) else em.constant(fill)
    return emit_op(em, OPS["full"], [size, fill], {"dtype": dtype, "device": device})


def _embedding(em, args, kwargs, pyfn):
    from .modules import embedding_nodes

    bound = inspect.signature(pyfn).bind(*args, **kwargs)
    if em.require_constant(bound.arguments.get("max_norm"), "embedding's max_norm") is not None:
        raise BindError("embedding with max_norm isn't supported by ember.jit.script")
    return embedding_nodes(em, bound.arguments["input"], bound.arguments["weight"])


def _device(em, args, kwargs, pyfn):
    """``ember.device("cuda:1")`` / ``ember.device("cuda", 1)``: a constant when its arguments
    are, else ``prim::Device`` (TorchScript's ``aten::device``)."""
    values = [em.materialize(a) for a in [*args, *kwargs.values()]]
    if all(em.is_constant(v) for v in values):
        return em.constant(pyfn(*(em.known(v) for v in values)))
    return em.prim("prim::Device", values, T.DeviceObjType)


def _special_functions() -> dict:
    import ember
    import ember.nn.functional as F

    table = {
        F.max_pool2d: _max_pool(2),
        F.dropout: _dropout,
        F.interpolate: _interpolate,
        F.embedding: _embedding,
        ember.device: _device,
        ember.zeros: _factory(0.0),
        ember.ones: _factory(1.0),
        ember.zeros_like: _factory_like(0.0),
        ember.ones_like: _factory_like(1.0),
    }
    return table


_SPECIAL: dict = {}


def special(fn):
    """The lowering of a library function with its own rule, or None."""
    if not _SPECIAL:
        _SPECIAL.update(_special_functions())
    try:
        return _SPECIAL.get(fn)
    except TypeError:  # unhashable callables
        return None


def library_op(fn, args=(), kwargs=None):
    """The op a public ``ember``/``ember.nn.functional`` function stands for, by its name."""
    module = getattr(fn, "__module__", "") or ""
    if not (module == "ember" or module.startswith("ember.")):
        return None
    return overload(getattr(fn, "__name__", ""), args, kwargs or {})


# max(x) / max(x, dim) / max(x, other): PyTorch's overloads are separate rows here.
_OVERLOADS = {"max": ("amax", "maximum"), "min": ("amin", "minimum")}


def overload(name: str, args, kwargs: dict):
    """The op for a call of ``name`` with these arguments (the receiver first), or None."""
    found = _OVERLOADS.get(name)
    if found is not None:
        whole, elementwise = found
        if len(args) == 1 and not kwargs:
            return OPS[whole]
        if (
            len(args) == 2
            and isinstance(args[1], Value)
            and isinstance(args[1].type(), T.TensorType)
        ):
            return OPS[elementwise]
        if "other" in kwargs:
            return OPS[elementwise]
    return OPS.get(name)


# Tensor methods that convert dtypes: x.float() is x.to(ember.float32).
CASTS = {
    "float": dt.float32,
    "double": dt.float64,
    "half": dt.float16,
    "bfloat16": dt.bfloat16,
    "long": dt.int64,
    "int": dt.int32,
    "short": dt.int16,
    "bool": dt.bool_,
    "byte": dt.uint8,
}
