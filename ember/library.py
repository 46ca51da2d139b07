"""Third-party ops: define an op, give it kernels per device, a shape rule and a gradient.

Example:
    >>> import ember, ember.library as L
    >>> L.define("mylib::scale(Tensor x, float factor) -> Tensor", dtypes=[ember.float32])
    >>> L.register_shape("mylib::scale", lambda x, factor: x)  # out shaped like x
    >>> @L.impl("mylib::scale", "cpu")
    ... def scale_cpu(out, x, factor): ...  # kernel(out, *inputs, *params), like built-in ops
    >>> def setup(ctx, inputs, output):
    ...     ctx.factor = inputs[1]
    >>> L.register_autograd("mylib::scale", lambda ctx, g: g * ctx.factor, setup_context=setup)
    >>> ember.ops.mylib.scale(ember.ones(3, requires_grad=True), 2.0)

A defined op is a dispatcher ``Op``: calls go through the layer stack (autograd records it),
kernels are chosen per device type and dtype with the built-in ops' rules (decomposition, CPU
fallback), and ``python -m ember.plugins`` lists it. Packages register ops without importing
ember through the ``ember.ops`` entry-point group: their ``ember_op_library()`` hook returns
definitions (see ``ember.dispatcher.hookspecs``), loaded on first access of ``ember.ops.<ns>``.
"""

from __future__ import annotations

import sys
import threading
import traceback
import warnings
from collections.abc import Callable

from . import _dtype as dt
from . import _opcheck
from ._bind import make_callable
from ._custom_op import (
    CustomOpDef,
    _custom,
    custom_op,
    infer_schema,
    register_fake,
    register_kernel,
)
from ._fake_impl import get_ctx
from ._opcheck import OpCheckError
from .dispatcher import registry
from .dispatcher import schema as schema_mod
from .dispatcher.devices import REGISTRY
from .dispatcher.kinds import library as runner
from .dispatcher.kinds.library import TensorMeta
from .dispatcher.op import Op
from .dispatcher.opdef import DTYPES_ALL, Kind, OpDef
from .dispatcher.optable import OPS
from .dispatcher.plugins import root_cause

__all__ = [
    "CustomOpDef",
    "OpCheckError",
    "TensorMeta",
    "custom_op",
    "define",
    "get_ctx",
    "impl",
    "impl_abstract",
    "infer_schema",
    "opcheck",
    "register_autocast",
    "register_autograd",
    "register_fake",
    "register_kernel",
    "register_shape",
    "register_vmap",
]


def opcheck(op, *args, **kwargs) -> dict:
    """Check a library op on sample inputs (ember/_opcheck.py: ``opcheck(op, samples, *,
    rtol, atol, check_grad)``), or a ``custom_op`` as ``torch.library.opcheck(op, args,
    kwargs=None, *, test_utils, raise_exception, rtol, atol)`` does (ember/_custom_op.py)."""
    from . import _custom_op

    if isinstance(op, CustomOpDef):
        return _custom_op.opcheck(op, *args, **kwargs)
    return _opcheck.opcheck(op, *args, **kwargs)


def impl_abstract(qualname, func=None, *, lib=None, _stacklevel=1):
    """Deprecated: ``torch.library.impl_abstract`` was renamed to ``register_fake`` (which this
    calls, with a FutureWarning as torch's does)."""
    warnings.warn(
        "`torch.library.impl_abstract` was renamed to `torch.library.register_fake`. Please use "
        "that instead; we will remove `torch.library.impl_abstract` in a future version of "
        "PyTorch.",
        FutureWarning,
        stacklevel=2,
    )
    return register_fake(qualname, func, lib=lib, _stacklevel=_stacklevel)


def register_vmap(op, func=None, /, *, lib=None):
    """``torch.library.register_vmap``: ``func(info, in_dims, *args, **kwargs) -> (outputs,
    out_dims)`` is how ``ember.func.vmap`` runs the custom op ``op`` (the op or its qualified
    name) on a batch, once per vmap call instead of once per sample. A decorator when ``func``
    is None. See ``CustomOpDef.register_vmap``.

    Example:
        >>> @ember.library.register_vmap("mylib::numpy_mul")
        ... def numpy_mul_vmap(info, in_dims, x, y):
        ...     x = x.movedim(in_dims[0], -1) if in_dims[0] is not None else x.unsqueeze(-1)
        ...     y = y.movedim(in_dims[1], -1) if in_dims[1] is not None else y.unsqueeze(-1)
        ...     return (x * y).movedim(-1, 0), 0
    """
    del lib
    target = _custom(op)
    if target is None:
        raise ValueError(f"register_vmap({op!r}): not a custom op made with custom_op")
    return target.register_vmap(func)


# Keys of an op definition returned by an ``ember_op_library()`` hook.
DEFINITION_KEYS = frozenset(
    (
        "schema",
        "kernels",
        "shape",
        "backward",
        "setup_context",
        "reference",
        "decomposition",
        "dtypes",
        "differentiable",
        "priority",
        "autocast",
    )
)


class Library:
    """The third-party ops of this process and who registered what."""

    def __init__(self):
        self.ops: dict = {}  # qualified name -> Op
        self.functions: dict = {}  # qualified name -> the ``ember.ops.<ns>.<name>`` function
        self.claims: dict = {}  # (qualified name, what) -> (provider, value)
        self.namespaces: dict = {}  # namespace -> ember.ops.Namespace
        self.loaded_host = None  # the plugin host whose op libraries were loaded
        self.lock = threading.RLock()

    def provider(self, name: str) -> str | None:
        claim = self.claims.get((name, "schema"))
        return claim[0] if claim else None


LIBRARY = Library()


def _caller_module() -> str:
    """The module that called the public function: the default provider name."""
    return sys._getframe(2).f_globals.get("__name__", "?")


def _claim(name: str, what: str, value, provider: str, check_only: bool = False) -> bool:
    """Record that ``provider`` registers ``value`` as the ``what`` of op ``name``.

    Returns False when the same value is already there (a no-op); raises when another provider
    registered something else. A provider may replace its own shape rule or formula, not its
    schema.
    """
    current = LIBRARY.claims.get((name, what))
    if current is not None:
        if current[1] == value:
            return False
        if what == "schema" and current[0] == provider:  # callers hold the old op's function
            raise RuntimeError(f"op '{name}' is already defined by '{provider}' as '{current[1]}'")
        if current[0] != provider:
            raise RuntimeError(
                f"the {what} of op '{name}' is registered by both '{current[0]}' and "
                f"'{provider}'; uninstall or disable one of them"
            )
    if not check_only:
        LIBRARY.claims[(name, what)] = (provider, value)
    return True


def _dtype_names(dtypes) -> list[str]:
    names = []
    for d in dtypes:
        found = d if isinstance(d, dt.dtype) else dt.ALIASES.get(d) or dt._BY_NAME.get(d)
        if found is None:
            raise ValueError(f"unknown dtype {d!r} (expected an ember dtype or its name)")
        names.append(found.name)
    return names


def _parse(schema: str):
    parsed = schema_mod.parse(schema)
    name = parsed.qualified_name
    if parsed.namespace is None:
        raise ValueError(f"a library op needs a namespace, 'ns::{parsed.name}(...)': '{schema}'")
    if parsed.namespace in OPS:
        raise ValueError(f"namespace '{parsed.namespace}' of '{name}' is the name of an ember op")
    if parsed.name.endswith("_"):
        raise ValueError(f"'{name}': in-place library ops are not supported; define it functional")
    bad = [typ for typ, _ in parsed.returns if typ != "Tensor"]
    if bad:
        raise ValueError(f"'{name}' must return Tensor or a tuple of Tensors, not {bad}")
    return parsed


def define(
    schema: str,
    *,
    dtypes=None,
    reference: Callable | None = None,
    decomposition: Callable | None = None,
    differentiable: bool = True,
    provider: str | None = None,
):
    """Define an op ``ember.ops.<ns>.<name>`` from its schema.

    Args:
        schema: ``"ns::name(Tensor x, *, float alpha=1.0) -> Tensor"`` (PyTorch's grammar).
        dtypes: dtypes the op accepts (ember dtypes or names); every dtype when None.
        reference: a numpy function taking the same arguments (arrays for tensors), used by
            ``opcheck`` to check values.
        decomposition: the op written in ember ops, used on devices without a kernel for it
            (and differentiated through when the op has no formula).
        differentiable: False for ops without gradients (their outputs never require grad).
        provider: who registers it, named in conflict messages (default: the calling module).

    Returns:
        the function ``ember.ops.<ns>.<name>``, taking the schema's arguments and defaults.

    Defining the same schema again is a no-op; a different one under the same name is refused.
    """
    provider = provider or _caller_module()
    parsed = _parse(schema)
    name = parsed.qualified_name
    with LIBRARY.lock:
        if not _claim(name, "schema", parsed.text, provider):
            return LIBRARY.functions[name]
        allowed = frozenset(dt._by_name(n) for n in _dtype_names(dtypes)) if dtypes else None
        defn = OpDef(
            parsed.text,
            Kind.LIBRARY,
            reference,
            dtypes=allowed or DTYPES_ALL,
            differentiable=differentiable,
            decomposition=decomposition,
            runner=runner.run,
            method=False,
            notes=f"provided by {provider}",
        )
        op = Op(defn, runner.run)
        function = make_callable(op, parsed.name, method=False)
        function.__qualname__ = f"ops.{parsed.namespace}.{parsed.name}"
        LIBRARY.ops[name] = op
        LIBRARY.functions[name] = function
        _namespace(parsed.namespace)._ops[parsed.name] = function
    return function


def _namespace(name: str):
    from .ops import Namespace

    found = LIBRARY.namespaces.get(name)
    if found is None:
        found = LIBRARY.namespaces[name] = Namespace(name)
    return found


def find_op(name) -> Op:
    """The Op for a qualified name, an ``ember.ops`` function or an Op (loading op libraries
    when the name is not known yet); KeyError names what exists."""
    if isinstance(name, Op):
        return name
    found = getattr(name, "_ember_op", None)
    if found is not None:
        return found
    op = OPS.get(name) or LIBRARY.ops.get(name)
    if op is None and "::" in str(name):
        load_op_libraries()
        op = LIBRARY.ops.get(name)
    if op is None:
        known = ", ".join(sorted(LIBRARY.ops)) or "none"
        raise KeyError(f"no op named '{name}' (library ops: {known}); define it first")
    return op


def _library_op(name, what: str) -> Op:
    op = find_op(name)
    if op.kind is not Kind.LIBRARY:
        raise ValueError(f"'{op.name}' is a built-in op; its {what} lives in the op table")
    return op


def impl(name, device_type: str, dtypes=None, *, priority: int = 0, provider: str | None = None):
    """Decorator: register ``fn`` as the kernel of op ``name`` on ``device_type``.

    Works for library ops and for built-in ops on a device whose backend lacks them. The kernel
    is called as ``kernel(*outs, *inputs, *params)``: outputs allocated by the op's shape rule,
    tensor inputs contiguous on the device (built-in ops: see their row's ``kernel_args``).

    Args:
        name: qualified op name (or the op's function).
        device_type: ``"cpu"``, ``"cuda"``...; need not be available on this machine.
        dtypes: the dtypes this kernel handles (names or dtypes); every dtype when None.
        priority: between kernels for one key, the higher runs; at equal priority two
            providers' different kernels conflict. A backend's own kernel has its priority.
        provider: named in conflict messages (default: the kernel's module).
    """
    op = find_op(name)
    keys = ["*"] if dtypes is None else _dtype_names(dtypes)
    outside = sorted(set(keys) - {d.name for d in op.dtypes} - {"*"})
    if outside:
        raise ValueError(f"'{op.name}' does not accept {outside}: a kernel for them never runs")

    def register(fn):
        if not callable(fn):
            raise TypeError(f"kernel for '{op.name}' on {device_type} must be callable: {fn!r}")
        table = dict.fromkeys(keys, fn)
        registry.EXTRA.add(op.name, device_type, table, provider or fn.__module__, priority)
        return fn

    return register


def register_shape(name, fn: Callable, *, provider: str | None = None) -> None:
    """Set the shape rule of library op ``name``: how its outputs are allocated.

    ``fn`` takes the op's arguments with tensors replaced by ``TensorMeta`` (shape, dtype,
    device; no data) and returns, per output, ``(shape, dtype)`` or a TensorMeta to copy (a
    tuple of them when the op returns several). Raise for arguments the op refuses.
    """
    op = _library_op(name, "shape rule")
    with LIBRARY.lock:
        if _claim(op.name, "shape rule", fn, provider or getattr(fn, "__module__", "?")):
            op.info["shape"] = fn


def register_autograd(
    name, backward: Callable, *, setup_context: Callable | None = None, provider=None
) -> None:
    """Give library op ``name`` a gradient, in PyTorch's ``torch.library`` convention.

    ``setup_context(ctx, inputs, output)`` runs after the forward and keeps what the backward
    needs (``ctx.save_for_backward(*tensors)``, attributes for the rest); ``backward(ctx,
    *grads)`` returns a gradient per argument (None for non-tensors) written in ember ops, so it
    runs on every device and can itself be differentiated.
    """
    from .autograd.library import LibraryFormula

    op = _library_op(name, "formula")
    with LIBRARY.lock:
        if _claim(op.name, "autograd formula", backward, provider or backward.__module__):
            op.formula = LibraryFormula(op, backward, setup_context)


def register_autocast(name, device_type: str, cast_inputs, *, provider=None) -> None:
    """Give library op ``name`` an autocast rule on ``device_type``, as
    ``torch.library.register_autocast``: inside ``ember.autocast(device_type)`` its floating
    tensor inputs on that device are cast to ``cast_inputs`` and it runs with autocast off.

    ``cast_inputs`` is a dtype, or a built-in policy by name: ``"lower_precision_fp"`` (the
    region's autocast dtype), ``"fp32"``, ``"promote"`` (the widest input).
    """
    from .dispatcher.optable import autocast_policy

    op = _library_op(name, "autocast rule")
    cast = _autocast_cast(op.name, cast_inputs)
    with LIBRARY.lock:
        who = provider or _caller_module()
        if _claim(op.name, f"autocast rule on {device_type}", cast, who):
            autocast_policy.register(op.name, device_type, cast)


def _autocast_cast(name: str, cast_inputs):
    from .dispatcher.optable.autocast_policy import Cast

    if isinstance(cast_inputs, dt.dtype) and cast_inputs.is_floating_point:
        return cast_inputs
    if isinstance(cast_inputs, str):
        for cast in Cast:
            if cast.value == cast_inputs and cast not in (Cast.BANNED, Cast.OPAQUE):
                return cast
    known = ", ".join(c.value for c in Cast if c not in (Cast.BANNED, Cast.OPAQUE))
    raise ValueError(
        f"register_autocast('{name}'): cast_inputs must be a floating dtype or one of {known}, "
        f"got {cast_inputs!r}"
    )


# ---- entry points ----------------------------------------------------------------------------
def load_op_libraries() -> None:
    """Register the ops of every installed ``ember.ops`` plugin, once per plugin host.

    A plugin whose hook fails, or whose definitions are malformed or conflict with ops already
    registered, is recorded as broken with the reason (``python -m ember.plugins`` shows it) and
    registers nothing.
    """
    host = REGISTRY.host
    with LIBRARY.lock:
        if LIBRARY.loaded_host is host:
            return
        LIBRARY.loaded_host = host  # before loading: a plugin importing ember.ops re-enters
        for record, definitions in host.op_libraries():
            provider = record.distribution or record.name
            try:
                register_definitions(definitions, provider)
            except Exception as exc:
                record.error = root_cause(exc)
                record.error_detail = "".join(traceback.format_exception(exc))


def register_definitions(definitions, provider: str) -> list:
    """Register a plugin's op definitions (dicts, see the ``ember_op_library`` hook) as one
    unit: everything is checked before anything is registered. Returns the op functions."""
    checked = [_check_definition(d, provider) for d in definitions]
    names = [parsed.qualified_name for parsed, _ in checked]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise ValueError(f"op library '{provider}' defines {twice} more than once")
    functions = []
    for parsed, d in checked:
        functions.append(
            define(
                parsed.text,
                dtypes=d.get("dtypes"),
                reference=d.get("reference"),
                decomposition=d.get("decomposition"),
                differentiable=d.get("differentiable", True),
                provider=provider,
            )
        )
        name = parsed.qualified_name
        if d.get("shape") is not None:
            register_shape(name, d["shape"], provider=provider)
        if d.get("backward") is not None:
            register_autograd(
                name, d["backward"], setup_context=d.get("setup_context"), provider=provider
            )
        for device_type, table in (d.get("kernels") or {}).items():
            registry.EXTRA.add(name, device_type, _keyed(table), provider, d.get("priority", 0))
        for device_type, cast in (d.get("autocast") or {}).items():
            register_autocast(name, device_type, cast, provider=provider)
    return functions


def _keyed(table: dict) -> dict:
    """A plugin's ``{dtype or "*": fn}`` with dtype aliases ("float") as ember's names."""
    return {key if key == "*" else _dtype_names([key])[0]: fn for key, fn in table.items()}


def _check_definition(d, provider: str):
    """``(parsed schema, d)``, or an error saying what is wrong with definition ``d``."""
    if not isinstance(d, dict) or not isinstance(d.get("schema"), str):
        raise TypeError(f"op library '{provider}': a definition must be a dict with a 'schema'")
    unknown = sorted(set(d) - DEFINITION_KEYS)
    parsed = _parse(d["schema"])
    name = parsed.qualified_name
    if unknown:
        raise ValueError(f"'{name}': unknown keys {unknown} (known: {sorted(DEFINITION_KEYS)})")
    kernels = d.get("kernels") or {}
    if not kernels and d.get("decomposition") is None:
        raise ValueError(f"'{name}' has no kernels and no decomposition: nothing could run it")
    if kernels and d.get("shape") is None:
        raise ValueError(f"'{name}' has kernels but no 'shape' rule to allocate their outputs")
    if d.get("backward") is None and d.get("differentiable", True) and not d.get("decomposition"):
        raise ValueError(f"'{name}' has no 'backward'; give one or set 'differentiable': False")
    allowed = set(_dtype_names(d["dtypes"])) if d.get("dtypes") else {x.name for x in dt.ALL}
    _claim(name, "schema", parsed.text, provider, check_only=True)
    for what, key in (("shape rule", "shape"), ("autograd formula", "backward")):
        if d.get(key) is not None:
            _claim(name, what, d[key], provider, check_only=True)
    for device_type, table in kernels.items():
        if not isinstance(table, dict) or not all(callable(fn) for fn in table.values()):
            raise TypeError(f"'{name}': kernels[{device_type!r}] must map dtypes to functions")
        outside = sorted(set(_dtype_names(k for k in table if k != "*")) - allowed)
        if outside:
            raise ValueError(f"'{name}' has {device_type} kernels for dtypes it excludes {outside}")
        registry.EXTRA.check(name, device_type, _keyed(table), provider, d.get("priority", 0))
    for cast in (d.get("autocast") or {}).values():
        _autocast_cast(name, cast)
    return parsed, d
