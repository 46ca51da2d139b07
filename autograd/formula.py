"""How a formula saves what it needs at forward time and turns output grads into input grads.

A formula is ``fn(ctx, *grad_outputs) -> grads for the op's tensor arguments`` (one value per
Tensor / Tensor[] argument, in schema order; a single value when there is one). ``ctx`` exposes the
op's non-tensor arguments by schema name, the tensors the formula declared in ``save`` (``result``
is the op's output), ``needs_input_grad`` and ``meta(name)`` = (shape, dtype, device) of any tensor
argument. The engine then sums each grad down to its input's shape (broadcasting) and casts it to
the input's dtype and device, so formulas never deal with either.
"""

from __future__ import annotations

from ember._tensor import Tensor

from .node import SavedTensor


class Context:
    """What a formula sees of its forward call.

    ``_node`` is set only while the node applies the formula: a lasting reference would make a
    cycle (node -> ctx -> node) and keep every graph alive until the garbage collector runs.
    """

    __slots__ = ("_meta", "_node", "_saved", "_values", "needs_input_grad")

    def __init__(self, values: dict, meta: dict, needs_input_grad: tuple):
        self._node = None
        self._values = values
        self._saved: dict = {}
        self._meta = meta
        self.needs_input_grad = needs_input_grad

    def __getattr__(self, name: str):
        saved = self._saved.get(name)
        if saved is not None:
            if isinstance(saved, tuple):
                return [s.unpack(self._node) for s in saved]
            return saved.unpack(self._node)
        try:
            return self._values[name]
        except KeyError:
            op = self._node.op.name if self._node is not None else "an op"
            raise AttributeError(
                f"autograd formula of '{op}' reads '{name}', which it did not save"
            ) from None

    def meta(self, name: str) -> tuple:
        """(shape, dtype, device) of tensor argument ``name`` at forward time."""
        return self._meta[name]

    def shape(self, name: str = "input") -> tuple:
        return self._meta[name][0]

    def release(self) -> None:
        for saved in self._saved.values():
            for item in saved if isinstance(saved, tuple) else (saved,):
                item.tensor = None


class Formula:
    """A backward function plus the tensors it needs saved.

    ``save`` is a tuple of argument names (and/or "result"), or a dict ``{name: other}`` meaning
    "save ``name`` only when argument ``other`` needs a gradient" (``mul`` keeps ``input`` only to
    differentiate with respect to ``other``): less memory, and graphs that save nothing can be
    run backward twice, as in PyTorch.
    """

    __slots__ = ("fn", "save")

    def __init__(self, fn, save=()):
        self.fn = fn
        self.save = dict(save) if isinstance(save, dict) else dict.fromkeys(save)

    def context(self, op, args, inplace_originals: dict | None = None) -> Context:
        values, meta, needs = {}, {}, []
        saved = {}
        for i, arg in enumerate(op.schema.args):
            value = args[i] if i < len(args) else (arg.default if arg.has_default else None)
            if arg.is_tensor:
                if isinstance(value, (list, tuple)):
                    meta[arg.name] = [_meta(t) for t in value]
                    needs.append(any(_requires(t) for t in value))
                else:
                    meta[arg.name] = _meta(value) if isinstance(value, Tensor) else None
                    needs.append(_requires(value))
                    if not isinstance(value, Tensor):
                        values[arg.name] = value  # a Python scalar in a tensor position
                if arg.name in self.save and value is not None:
                    original = (inplace_originals or {}).get(arg.name, value)
                    kept = _save(original)
                    if kept is not None:
                        saved[arg.name] = kept
            else:
                values[arg.name] = value
        names = [a.name for a in op.schema.args if a.is_tensor]
        for name, condition in self.save.items():
            if condition is not None and name in saved and not needs[names.index(condition)]:
                del saved[name]
        ctx = Context(values, meta, tuple(needs))
        ctx._saved = saved
        return ctx

    def save_result(self, ctx: Context, out) -> None:
        if "result" in self.save:
            if isinstance(out, tuple):
                ctx._saved["result"] = tuple(SavedTensor(o, i) for i, o in enumerate(out))
            else:
                ctx._saved["result"] = SavedTensor(out, 0)

    def apply(self, node, grads: list) -> tuple:
        if all(g is None for g in grads):
            return (None,) * len(node.next_functions)
        ctx = node.ctx
        ctx._node = node
        try:
            result = self.fn(ctx, *grads)
        finally:
            ctx._node = None
        if not isinstance(result, tuple):
            result = (result,)
        flat = []
        for value in result:
            if isinstance(value, list):
                flat.extend(value)
            else:
                flat.append(value)
        if len(flat) != len(node.input_meta):
            raise RuntimeError(
                f"autograd formula of '{node.op.name}' returned {len(flat)} gradients for "
                f"{len(node.input_meta)} tensor inputs"
            )
        return tuple(
            None if (g is None or m is None) else fit(g, m) for g, m in zip(flat, node.input_meta)
        )


def _requires(t) -> bool:
    return isinstance(t, Tensor) and t._requires_grad


def _meta(t):
    if not isinstance(t, Tensor):
        return None
    return (t._shape, t._dtype, t._storage.device)


def _save(value):
    if isinstance(value, (list, tuple)):
        return tuple(SavedTensor(t) for t in value)
    return SavedTensor(value) if isinstance(value, Tensor) else None


def sum_to_shape(grad: Tensor, shape: tuple) -> Tensor:
    """Undo broadcasting: sum ``grad`` over the dims that were expanded to reach its shape."""
    if grad._shape == shape:
        return grad
    lead = len(grad._shape) - len(shape)
    dims = list(range(lead))
    for i, size in enumerate(shape):
        if size == 1 and grad._shape[lead + i] != 1:
            dims.append(lead + i)
    if dims:
        grad = grad.sum(dims, keepdim=True)
    return grad.reshape(shape) if grad._shape != shape else grad


def fit(grad, meta) -> Tensor:
    """``grad`` made to match an input's (shape, dtype, device)."""
    shape, dtype, device = meta
    if not isinstance(grad, Tensor):
        raise TypeError(f"autograd formula returned {type(grad).__name__}, expected a Tensor")
    if grad._shape != shape:
        grad = sum_to_shape(grad, shape)
    if grad._dtype is not dtype and dtype.is_floating_point:
        grad = grad.to(dtype)
    if grad._storage.device is not device:
        grad = grad.to(device)
    return grad
