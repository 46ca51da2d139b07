"""``torch.library``'s custom-op API over ember.library's ops: ``custom_op``, ``infer_schema``,
``register_fake``, ``register_kernel`` and the ``CustomOpDef`` they build.

A custom op is a library op (ember/library.py) whose implementation is the decorated Python
function: it runs with gradients off and its tensor arguments detached (as torch runs a kernel
below autograd, so ``x.numpy()`` works), picked per device type (``register_kernel``), and
``jit.trace``, ``ember.compile`` and ``export`` keep the call as one opaque node, as they do for
every library op. ``register_fake`` gives its meta-tensor rule (the op's shape rule on the
``meta`` device); ``register_autograd`` its gradient (without one, the outputs of inputs that
require grad still require grad and ``backward`` raises PyTorch's error).

Supported: functional ops (``mutates_args=()``) returning a Tensor or a tuple of Tensors, which
is what ember's library ops are. An op that mutates its arguments or returns other types is
refused when it is defined, naming what is missing.
"""

from __future__ import annotations

import collections.abc
import inspect
import typing

from .dispatcher.kinds.library import _tensors  # the tensors of a call's arguments, lists flat

NO_FAKE = (
    "There was no fake impl registered for {op}. This is necessary for torch.compile/export/fx "
    "tracing to work. Please use `{name}.register_fake` to add an fake impl."
)
NO_FORMULA = (
    "Trying to backward through {ns}.{name}.default but no autograd formula was registered. "
    "Please use register_autograd to add one."
)
ALIASED = (
    "{name} (with implementation in {module}): The output of this custom operator (1) must not "
    "also be an input to this custom operator and (2) may not alias any inputs to this custom "
    "operator or other returns. The most common way to trigger this error is if we have y = "
    "custom_op(x) and y and x are the same Tensor. Please instead return a clone of the "
    "offending output tensor(s) (e.g. return x.clone()) or refactor the custom operator to not "
    "return y."
)


# ---- infer_schema ------------------------------------------------------------------------------
def _types():
    """``({annotation: schema type}, {return annotation: schema type})``, torch's tables."""
    from ._device import device
    from ._dtype import dtype
    from ._tensor import Tensor

    sequences = (typing.Sequence, typing.List, collections.abc.Sequence, list)  # noqa: UP006
    scalar = int | float | bool  # equal, and hashed alike, to typing.Union[int, float, bool]
    params: dict = {}

    def add(py, name: str, lists: bool = True) -> None:
        params[py] = name
        params[py | None] = f"{name}?"  # the same key as typing.Optional[py]
        if lists and py is not Tensor:
            for seq in sequences:
                params[seq[py]] = f"{name}[]"
                params[seq[py] | None] = f"{name}[]?"
        elif lists:
            for seq in sequences:
                params[seq[py]] = "Tensor[]"
                params[seq[py | None]] = "Tensor?[]"

    add(Tensor, "Tensor")
    add(int, "SymInt")
    add(float, "float")
    add(bool, "bool")
    add(scalar, "Scalar")
    add(str, "str", lists=False)
    add(dtype, "ScalarType", lists=False)
    add(device, "Device", lists=False)
    returns = {Tensor: "Tensor", typing.List[Tensor]: "Tensor[]", list[Tensor]: "Tensor[]"}  # noqa: UP006
    returns.update({int: "SymInt", float: "float", bool: "bool", scalar: "Scalar"})
    return params, returns


def _default(value, name: str, where: str) -> str:
    from ._dtype import dtype

    if value is None or isinstance(value, (bool, int, float)):
        return repr(value)
    if isinstance(value, str):
        return f'"{value}"'
    if isinstance(value, dtype):
        return str(value).rpartition(".")[2]
    raise ValueError(
        f"infer_schema(func): Parameter {name} has an unsupported default value type "
        f"{type(value)}. Please file an issue on GitHub so we can prioritize this. {where}"
    )


def _signature(fn):
    try:
        return inspect.signature(fn, eval_str=True)
    except (NameError, TypeError, SyntaxError):  # annotations naming what the module lacks
        return inspect.signature(fn)


def infer_schema(prototype_function, /, *, mutates_args, op_name: str | None = None) -> str:
    """The schema of ``prototype_function`` from its type annotations, as torch writes it:
    ``"(Tensor x, float scale=1.0) -> Tensor"`` (``op_name`` in front when given); the
    arguments in ``mutates_args`` (or every tensor, for ``"unknown"``) marked ``Tensor(aN!)``."""
    params_table, returns_table = _types()
    sig = _signature(prototype_function)
    where = f"Got func with signature {sig})"
    names = list(sig.parameters)
    if mutates_args != "unknown":
        mutates_args = {mutates_args} if isinstance(mutates_args, str) else set(mutates_args)
        unknown = mutates_args - set(names)
        if unknown:
            raise ValueError(
                f"infer_schema(func): {unknown} in mutates_args were not found in the custom "
                "op's signature. mutates_args should contain the names of all args that the "
                f"custom op mutates, or just the string 'unknown' if you don't know. {where}"
            )
    parts, star = [], False
    for index, (name, param) in enumerate(sig.parameters.items()):
        if param.kind not in (param.POSITIONAL_OR_KEYWORD, param.KEYWORD_ONLY):
            raise ValueError(f"infer_schema(func): We don't support varargs or varkwargs. {where}")
        if param.annotation is param.empty:
            raise ValueError(
                f"infer_schema(func): Parameter {name} must have a type annotation. {where}"
            )
        typ = params_table.get(param.annotation)
        if typ is None:
            raise ValueError(
                f"infer_schema(func): Parameter {name} has unsupported type "
                f"{param.annotation}. The valid types are: {list(params_table)}. {where}"
            )
        if typ.startswith("Tensor") and (mutates_args == "unknown" or name in mutates_args):
            typ = f"Tensor(a{index}!){typ[len('Tensor') :]}"
        elif mutates_args != "unknown" and name in mutates_args:
            raise ValueError(
                f"infer_schema(func): Parameter {name} is in mutable_args but only Tensors or "
                f"collections of Tensors can be mutated. {where}"
            )
        if param.kind == param.KEYWORD_ONLY and not star:
            parts.append("*")
            star = True
        text = f"{typ} {name}"
        if param.default is not param.empty:
            text += f"={_default(param.default, name, where)}"
        parts.append(text)
    returned = _returns(sig.return_annotation, returns_table, where)
    head = op_name or ""
    return f"{head}({', '.join(parts)}) -> {returned}"


def _returns(annotation, table: dict, where: str) -> str:
    if annotation is None or annotation is type(None):
        return "()"
    if typing.get_origin(annotation) is tuple:
        return f"({', '.join(_returns(a, table, where) for a in typing.get_args(annotation))})"
    found = table.get(annotation)
    if found is None:
        raise ValueError(
            f"infer_schema(func): Return has unsupported type {annotation}. The valid types "
            f"are: {table}. {where}"
        )
    return found


# ---- custom_op ---------------------------------------------------------------------------------
def _for_ember(schema: str, qualname: str) -> str:
    """The schema in ember's grammar (library.define's): SymInt is int; ScalarType and Device
    defaults become None (CustomOpDef puts the real default back). Mutation marks, and returns
    other than Tensors, are refused: ember's library ops are functional."""
    from .dispatcher.schema import _split_top

    arguments, _, returned = schema.partition(" -> ")
    returned = returned.strip()
    outputs = _split_top(returned[1:-1]) if returned.startswith("(") else [returned]
    if "!" in arguments or returned == "()" or any(o.strip() != "Tensor" for o in outputs):
        raise NotImplementedError(
            f"ember.library.custom_op('{qualname}'): schema '{schema}': ember supports custom "
            "ops that mutate none of their arguments (mutates_args=()) and return a Tensor or "
            "a tuple of Tensors"
        )
    parts = []
    for part in _split_top(arguments.strip()[1:-1]):
        decl, eq, default = part.partition("=")
        typ, _, name = decl.strip().partition(" ")
        typ = typ.replace("SymInt", "int")
        if eq and typ.rstrip("?") in ("ScalarType", "Device") and default != "None":
            typ, default = typ.rstrip("?") + "?", "None"
        parts.append(f"{typ} {name}" + (f"={default}" if eq else ""))
    return f"{qualname}({', '.join(parts)}) -> {returned}"


def _device_types(device_types) -> tuple | None:
    if device_types is None:
        return None
    return (device_types,) if isinstance(device_types, str) else tuple(device_types)


class CustomOpDef:
    """A custom op (``torch.library.CustomOpDef``): call it like its function; register kernels,
    a fake rule and a gradient on it. Also ``ember.ops.<namespace>.<name>``."""

    def __init__(self, namespace: str, name: str, schema: str, fn, device_types=None):
        from . import library

        self._namespace, self._name = namespace, name
        self._qualname = f"{namespace}::{name}"
        self._schema = schema
        self._init_fn = fn
        self._kernels: dict = {}
        self._default_types = _device_types(device_types)
        self._fake = None
        self._signature = inspect.signature(fn)
        self._function = library.define(
            _for_ember(schema, self._qualname),
            decomposition=self._run,
            provider=getattr(fn, "__module__", None) or "?",
        )
        op = library.find_op(self._qualname)
        # Defining it again (a notebook cell run twice) replaces the body, as in torch: define
        # returned the op the first definition made.
        op.decomposition = self._run
        self._op = self._ember_op = op  # library.find_op(self) finds the op
        _DEFS[self._qualname] = self
        self._positional = len(op.schema.positional)
        self._names = [arg.name for arg in op.schema.args]
        rewritten = {a.name for a in op.schema.args if a.type in ("ScalarType", "Device")}
        self._put_back = {  # ScalarType/Device defaults ember's grammar wrote as None
            name: param.default
            for name, param in self._signature.parameters.items()
            if name in rewritten and param.default not in (param.empty, None)
        }
        library.register_shape(self._qualname, self._shape_rule, provider=library.__name__)
        self._missing = op.formula = _no_formula(op, namespace, name)  # until register_autograd
        self.__wrapped__ = fn
        self.__name__ = name
        self.__doc__ = fn.__doc__

    def __repr__(self) -> str:
        return f"<CustomOpDef({self._qualname})>"

    def __call__(self, *args, **kwargs):
        return self._function(*args, **kwargs)

    # ---- what runs -------------------------------------------------------------------------
    def _arguments(self, args) -> tuple[list, dict]:
        """The op's positional-in-schema-order arguments as the user's function takes them."""
        values = dict(zip(self._names, args))
        for name, default in self._put_back.items():
            if values.get(name) is None:
                values[name] = default
        names = self._names
        positional = [values[n] for n in names[: self._positional]]
        return positional, {n: values[n] for n in names[self._positional :]}

    def _run(self, *args):
        """The op's body on the device of its tensor arguments: gradients off, tensors
        detached; outputs checked against the schema and for aliasing (torch's rule)."""
        from ._tensor import Tensor
        from .autograd import no_grad

        device_type = _device_of(args)
        fn = self._kernels.get(device_type)
        if fn is None and device_type == "meta" and self._fake is not None:
            fn = self._fake
        if fn is None and (self._default_types is None or device_type in self._default_types):
            fn = self._init_fn
        if fn is None:
            raise NotImplementedError(
                f"{self._qualname}: no kernel for device type '{device_type}' (it has "
                f"{sorted(self._kernels) or list(self._default_types or ())}); register one "
                f"with {self._name}.register_kernel('{device_type}')"
            )
        detached = [_detached(a) for a in args]
        positional, keywords = self._arguments(detached)
        with no_grad():
            out = fn(*positional, **keywords)
        outputs = out if isinstance(out, tuple) else (out,)
        expected = self._op.num_outputs
        if len(outputs) != expected or not all(isinstance(t, Tensor) for t in outputs):
            raise RuntimeError(
                f"{self._qualname}: its implementation returned {_kinds(out)}; the schema "
                f"'{self._schema}' returns {expected} Tensor(s)"
            )
        storages = {id(t._storage) for t in _tensors(detached)}
        seen: set = set()
        for t in outputs:
            if id(t._storage) in storages or id(t._storage) in seen:
                module = inspect.getmodule(self._init_fn)
                raise RuntimeError(ALIASED.format(name=self._name, module=module))
            seen.add(id(t._storage))
        return out

    def _shape_rule(self, *metas):
        """The library op's shape rule (used on the meta device): the fake impl on meta tensors."""
        if self._fake is None:
            raise RuntimeError(NO_FAKE.format(op=self, name=self._name))
        from ._factories import empty
        from .dispatcher.kinds.library import TensorMeta

        def meta_tensor(value):
            if isinstance(value, TensorMeta):
                return empty(value.shape, dtype=value.dtype, device="meta")
            if isinstance(value, list):
                return [meta_tensor(v) for v in value]
            return value

        from ._fake_impl import fake_impl_ctx

        positional, keywords = self._arguments([meta_tensor(m) for m in metas])
        with fake_impl_ctx(self._qualname):
            out = self._fake(*positional, **keywords)
        outputs = out if isinstance(out, tuple) else (out,)
        specs = [(tuple(t.shape), t.dtype) for t in outputs]
        return tuple(specs) if self._op.schema.returns_tuple else specs[0]

    # ---- registration ----------------------------------------------------------------------
    def register_kernel(self, device_types, fn=None, /):
        """Decorator: ``fn`` is the op's implementation on ``device_types``."""

        def register(fn):
            for device_type in _device_types(device_types):
                self._kernels[device_type] = fn
            return fn

        return register if fn is None else register(fn)

    def register_fake(self, fn, /):
        """``fn`` computes the outputs' metadata from meta tensors (the op on ``meta``)."""
        self._fake = fn
        return fn

    def register_vmap(self, func=None, /):
        """``func(info, in_dims, *args, **kwargs) -> (outputs, out_dims)`` computes the op on a
        batch once, instead of once per sample (torch's ``CustomOpDef.register_vmap``).
        ``in_dims`` has a batch dim or None per positional argument; ``info.batch_size`` and
        ``info.randomness`` describe the vmap. A decorator when ``func`` is None."""
        from .autograd import batch_rules

        kwarg_tensors = [a.name for a in self._op.schema.args if a.kwarg_only and a.is_tensor]
        if kwarg_tensors:
            raise NotImplementedError(
                f"register_vmap with kwarg-only Tensor args. In the original definition of the "
                f"op, please make your tensors not kwarg-only. Got: {self._schema}"
            )

        def register(func):
            self._vmap_fn = func
            batch_rules.set_rule(self._op, self._vmap_rule)
            return func

        return register if func is None else register(func)

    def _vmap_rule(self, op, args, level: int):
        """The op's batching rule once a vmap function is registered (autograd/batch_rules)."""
        from .autograd.function_vmap import call_vmap_rule

        positional, keywords = self._arguments(list(args))
        return call_vmap_rule(self._vmap_fn, positional, keywords, level)

    def register_autograd(self, backward, /, *, setup_context=None) -> None:
        """``backward(ctx, *grads)`` returns a gradient per argument; ``setup_context(ctx,
        inputs, output)`` saves what it needs (ember.library.register_autograd)."""
        from . import library

        library.register_autograd(
            self._qualname, backward, setup_context=setup_context,
            provider=getattr(backward, "__module__", None) or "?",
        )  # fmt: skip

    @property
    def _has_autograd(self) -> bool:
        return self._op.formula is not self._missing

    def register_autocast(self, device_type: str, cast_inputs) -> None:
        from . import library

        library.register_autocast(self._qualname, device_type, cast_inputs)


def _no_formula(op, namespace: str, name: str):
    from .autograd.library import LibraryFormula

    def backward(ctx, *grads):
        raise RuntimeError(NO_FORMULA.format(ns=namespace, name=name))

    return LibraryFormula(op, backward)


def _device_of(args) -> str:
    found = _tensors(args)
    return found[0].device.type if found else "cpu"


def _detached(value):
    from ._tensor import Tensor

    if isinstance(value, Tensor):
        return value.detach() if value.requires_grad else value
    if isinstance(value, (list, tuple)) and any(isinstance(v, Tensor) for v in value):
        return [_detached(v) for v in value]
    return value


def _kinds(out) -> str:
    items = out if isinstance(out, tuple) else (out,)
    return f"({', '.join(type(v).__name__ for v in items)})"


def custom_op(name: str, fn=None, /, *, mutates_args, device_types=None, schema=None, tags=None):
    """``torch.library.custom_op``: define ``namespace::name`` from a Python function (as a
    decorator, or given ``fn``); its schema comes from the annotations unless ``schema`` says
    it. Returns a ``CustomOpDef``."""
    del tags  # torch's dispatcher tags; ember has no tag-driven behaviour

    def define(fn):
        namespace, opname = name.split("::")
        text = schema or infer_schema(fn, mutates_args=mutates_args)
        return CustomOpDef(namespace, opname, text, fn, device_types)

    return define if fn is None else define(fn)


def _custom(op) -> CustomOpDef | None:
    """The CustomOpDef behind ``op`` (itself, or its qualified name), else None."""
    if isinstance(op, CustomOpDef):
        return op
    return _DEFS.get(op) if isinstance(op, str) else None


_DEFS: dict = {}  # qualified name -> CustomOpDef, for the module-level register_* functions


def register_fake(op, fn=None, /, *, lib=None, _stacklevel=1):
    """``torch.library.register_fake(op)``: decorator (or call with ``fn``) registering the fake
    impl of a custom op, by object or qualified name."""
    del lib, _stacklevel
    target = _custom(op)
    if target is None:
        raise ValueError(f"register_fake({op!r}): not a custom op made with custom_op")
    return target.register_fake if fn is None else target.register_fake(fn)


def register_kernel(op, device_types, fn=None, /, *, lib=None):
    """``torch.library.register_kernel``: a custom op's implementation on ``device_types``."""
    del lib
    target = _custom(op)
    if target is None:
        raise ValueError(f"register_kernel({op!r}): not a custom op made with custom_op")
    return target.register_kernel(device_types, fn)


# ---- opcheck -----------------------------------------------------------------------------------
TESTS = (
    "test_schema",
    "test_autograd_registration",
    "test_faketensor",
    "test_aot_dispatch_dynamic",
)


def opcheck(op, args, kwargs=None, *, test_utils=TESTS, raise_exception=True, rtol=None, atol=None):
    """``torch.library.opcheck`` for a custom op: ``{test: "SUCCESS" or the error}``.

    test_schema: the call leaves its tensor arguments unchanged (the op mutates none) and
    returns what the schema says; test_autograd_registration: outputs require grad when an input
    does; test_faketensor: the fake impl's outputs on meta tensors have the real shapes and
    dtypes; test_aot_dispatch_dynamic: ``ember.compile(fullgraph=True)`` of the call gives the
    eager values, and the eager gradients where the op has a formula and an input requires grad.
    """
    from ._opcheck import OpCheckError

    target = _custom(op)
    kwargs = kwargs or {}
    tests = (test_utils,) if isinstance(test_utils, str) else tuple(test_utils)
    unknown = sorted(set(tests) - set(TESTS))
    if unknown:
        raise ValueError(f"opcheck: unknown test_utils {unknown}; expected some of {list(TESTS)}")
    report: dict = {}
    for test in tests:
        try:
            globals()[f"_{test}"](target, args, kwargs, rtol, atol)
            report[test] = "SUCCESS"
        except Exception as exc:
            error = OpCheckError(f"opcheck({target._qualname}): {test} failed: {exc}")
            if raise_exception:
                raise error from exc
            report[test] = error
    return report


def _tensors_in(value) -> list:
    """The tensors in nested lists, tuples and dicts (ember.utils._pytree's leaves)."""
    from ._tensor import Tensor
    from .utils._pytree import tree_leaves

    return [leaf for leaf in tree_leaves(value) if isinstance(leaf, Tensor)]


def _test_schema(op, args, kwargs, rtol, atol) -> None:
    import numpy as np

    inputs = _tensors_in((args, kwargs))
    before = [t.detach().cpu().numpy().copy() for t in inputs]
    op(*args, **kwargs)
    for index, (t, old) in enumerate(zip(inputs, before)):
        if not np.array_equal(t.detach().cpu().numpy(), old, equal_nan=True):
            raise AssertionError(
                f"tensor argument {index} was mutated, but the op was defined with "
                f"mutates_args=() (schema {op._schema})"
            )


def _test_autograd_registration(op, args, kwargs, rtol, atol) -> None:
    needs = any(t.requires_grad for t in _tensors_in((args, kwargs)))
    outputs = _tensors_in(op(*args, **kwargs))
    if needs and not all(t.requires_grad for t in outputs if t.is_floating_point()):
        raise AssertionError("an input requires grad but the outputs do not")


def _test_faketensor(op, args, kwargs, rtol, atol) -> None:
    from ._tensor import Tensor

    def meta(value):
        if isinstance(value, Tensor):
            return value.detach().to("meta")
        if isinstance(value, (list, tuple)):
            return type(value)(meta(v) for v in value)
        return value

    real = _tensors_in(op(*args, **kwargs))
    fake = _tensors_in(op(*meta(list(args)), **{k: meta(v) for k, v in kwargs.items()}))
    got = [(tuple(t.shape), t.dtype) for t in fake]
    want = [(tuple(t.shape), t.dtype) for t in real]
    if got != want:
        raise AssertionError(f"the fake impl gives {got}, the op gives {want}")


def _test_aot_dispatch_dynamic(op, args, kwargs, rtol, atol) -> None:
    import numpy as np

    import ember

    def close(a, b, what):
        a, b = a.detach().cpu().numpy(), b.detach().cpu().numpy()
        if not np.allclose(a, b, rtol=rtol or 1e-5, atol=atol or 1e-6, equal_nan=True):
            raise AssertionError(f"compiled {what} differ from eager's")

    compiled = ember.compile(lambda *a, **k: op(*a, **k), fullgraph=True)
    leaves = [t for t in _tensors_in((args, kwargs)) if t.requires_grad]
    grads = {}
    for name, fn in (("eager", op), ("compiled", compiled)):
        outputs = _tensors_in(fn(*args, **kwargs))
        grads[name] = (outputs, None)
        if leaves and op._has_autograd:
            total = sum(o.sum() for o in outputs if o.requires_grad)
            grads[name] = (outputs, ember.autograd.grad(total, leaves, allow_unused=True))
    for (a, ga), (b, gb) in [(grads["eager"], grads["compiled"])]:
        for x, y in zip(a, b):
            close(x, y, "outputs")
        for x, y in zip(ga or (), gb or ()):
            if x is not None and y is not None:
                close(x, y, "gradients")
