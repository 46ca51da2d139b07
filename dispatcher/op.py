"""The runtime form of an op-table row: the object every ``ember.*`` function calls."""

from __future__ import annotations

import weakref

from . import registry
from . import schema as schema_mod
from .devices import on_reset
from .layers import STACK
from .opdef import Kind, OpDef

# Kinds the core implements for every device without a kernel (pure metadata).
CORE_KINDS = (Kind.VIEW,)

# Every op ever built (table and library ops), so a registry reset can forget their kernel memos:
# after a reset the serving backend, its kernels and the fallback policy may all differ.
_ALL_OPS: weakref.WeakSet = weakref.WeakSet()


def forget_kernels(name: str | None = None) -> None:
    """Drop the memoised kernels of the op called ``name`` (of every op when None)."""
    for op in list(_ALL_OPS):
        if name is None or op.name == name:
            op.kernels.clear()
            op.fast.clear()


on_reset(forget_kernels)


class Op:
    """A callable op. ``op(*args)`` runs the layer stack, then the Backend layer.

    Arguments arrive positionally in schema order (the generated ``ember.*`` functions and Tensor
    methods fill in defaults), so no layer parses keywords on the hot path.
    """

    __slots__ = (
        "__weakref__",
        "core",
        "decomposition",
        "defn",
        "dtypes",
        "fast",
        "formula",
        "info",
        "inplace_of",
        "kernels",
        "kind",
        "mutates",
        "name",
        "num_outputs",
        "out",
        "promotion",
        "recorder",
        "runner",
        "schema",
        "tensor_positions",
        "twins",
    )

    def __init__(self, defn: OpDef, runner, name: str | None = None, inplace_of: Op | None = None):
        parsed = schema_mod.parse(defn.schema)
        self.defn = defn
        self.schema = parsed
        self.name = name or parsed.qualified_name
        self.kind = defn.kind
        self.promotion = defn.promotion
        self.dtypes = defn.dtypes
        self.runner = runner
        self.decomposition = defn.decomposition
        self.kernels: dict = {}  # (device type, dtype) -> kernel or None (decompose); memo
        # dtype -> prepared call data for the runner's fast path (see kinds/elementwise.binary)
        self.fast: dict = {}
        self.formula = None  # set by autograd's formula table
        # autograd's straight-line recording of this op's calls (autograd/recorder.py), or None
        self.recorder = None
        self.num_outputs = sum(1 for typ, _ in parsed.returns if typ.startswith("Tensor"))
        self.tensor_positions = parsed.tensor_positions
        self.core = defn.core or (defn.kind in CORE_KINDS and defn.decomposition is None)
        self.inplace_of = inplace_of
        # PyTorch's convention: a trailing underscore writes into the first argument.
        self.mutates = self.name.endswith("_") and not self.name.startswith("_")
        self.info: dict = dict(defn.attrs)  # static data for the runner (elementwise arity...)
        self.out = defn.out_rule  # the public function's out= rule (dispatcher/out.py), or None
        # kinds/twin.Twins when the row takes limited dtypes through a twin (optable/limited.py)
        self.twins = None
        _ALL_OPS.add(self)

    def __call__(self, *args, **kwargs):
        if kwargs:  # ember.ops.slice(x, dim=1, start=2), as torch.ops.aten takes them
            args = self.bind_keywords(args, kwargs)
        try:
            for layer in STACK.layers:
                if layer.wants(self, args):
                    return layer.handle(self, args)
            try:  # the Backend layer (see backend()), inlined: hot path
                return self.runner(self, *args)
            except NotImplementedError as error:  # a try costs nothing until it catches
                return self.refused(args, error)
        except (AttributeError, TypeError) as error:
            self.argument_error(args, error)
            raise

    @property
    def default(self) -> Op:
        """The op's one overload (``ember.ops.aten.add.default``, as torch.ops.aten spells it)."""
        return self

    def bind_keywords(self, args: tuple, kwargs: dict) -> tuple:
        """The positional arguments of a call with keywords, in schema order: those not given
        take their schema defaults; PyTorch's RuntimeErrors (torch.ops.aten's) for unknown,
        repeated or missing ones."""
        where = f"for operator 'aten::{self.name}'. Schema: {self.schema.text}"
        given = len(args)
        for arg in self.schema.args[:given]:
            if arg.name in kwargs:
                raise RuntimeError(
                    f"Argument '{arg.name}' specified both as positional and keyword argument. "
                    f"Schema: {self.schema.text}"
                )
        bound = list(args)
        for arg in self.schema.args[given:]:
            if arg.name in kwargs:
                bound.append(kwargs.pop(arg.name))
            elif arg.has_default:
                bound.append(arg.default)
            else:
                raise RuntimeError(
                    f"aten::{self.name}() is missing value for argument '{arg.name}'. "
                    f"Declaration: {self.schema.text}"
                )
        if kwargs:
            raise RuntimeError(f"Unknown keyword argument '{next(iter(kwargs))}' {where}")
        return tuple(bound)

    def argument_error(self, args, error: Exception) -> None:
        """Raise PyTorch's TypeError when ``error`` (from a runner) comes from an argument of the
        wrong type; return when it does not (the caller re-raises ``error``).

        A list where the schema says Tensor fails deep inside a runner ("'list' object has no
        attribute '_shape'"): say which argument, as PyTorch does. Callers ask in an ``except``
        clause, so the common path pays nothing."""
        from .kinds._common import bad_tensor_argument

        found = bad_tensor_argument(self, args, error)
        if found is not None:
            raise found from None

    def refused(self, args, error: NotImplementedError):
        """What follows the runner's refusal (``error``) of ``args``: re-raise it, or, for a row
        that takes PyTorch's limited dtypes (float8, uint16/32/64) through a twin dtype
        (``kinds/twin.py``), run the twin computation when such a dtype was refused.

        Every caller of ``runner`` sends its NotImplementedError here: the twin costs nothing
        on the hot path of the ops it covers (mul, eq, where, sum...), not even a frame."""
        if self.twins is None:
            raise error
        return self.twins.run(self, args, error)

    def redispatch(self, current, args):
        """Continue below ``current``: the next lower active layer, or the Backend layer."""
        priority = current.priority
        for layer in STACK.layers:
            if layer.priority < priority and layer.wants(self, args):
                return layer.handle(self, args)
        return self.backend(args)

    def backend(self, args):
        """The Backend layer: prepare the call and run the kernel (or the decomposition)."""
        try:
            return self.runner(self, *args)
        except NotImplementedError as error:
            return self.refused(args, error)

    def kernel(self, device_type: str, dtype):
        """The kernel for ``(device type, dtype)``; None means "decompose". Memoised."""
        key = (device_type, dtype)
        try:
            return self.kernels[key]
        except KeyError:
            found = registry.resolve(self, device_type, dtype)
            self.kernels[key] = found
            return found

    def __repr__(self) -> str:
        return f"<op {self.name}: {self.schema.text}>"
