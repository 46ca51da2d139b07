"""Guards: what a graph assumed about its call, as one hashable key per call.

A key holds grad mode, and per argument leaf: for a tensor its sizes, dtype, device and
``requires_grad``; for a Python scalar, string or None its value; for anything else its
identity. The modules a capture called are checked per cached entry (they are known only after
the capture) by module_probe.py, the globals and closure variables the user's code read by
python_guards.py, the hooks its modules ran by ``HookGuard`` (below). Comparing two keys gives
PyTorch's guard-failure text (``tensor 'x' size mismatch at index 0. expected 4, actual 8``).
"""

from __future__ import annotations

from ember._tensor import Tensor
from ember.autograd.grad_mode import THREAD as GRAD

_BY_VALUE = (int, float, bool, str, type(None))


# id(device) -> device: keys hold the device's id (devices are interned; hashing the object
# costs a Python call per tensor per call), messages need the device back
DEVICES: dict = {}


def tensor_key(t: Tensor) -> tuple:
    return (t._shape, t._dtype, id(t._storage.device), t._requires_grad)


def fast_key(args: tuple):
    """The key of a call whose arguments are all tensors, or None (the hot path)."""
    try:
        leaves = tuple(
            [(t._shape, t._dtype, id(t._storage.device), t._requires_grad) for t in args]
        )
    except AttributeError:
        return None
    return (len(args), (GRAD.mode.enabled, leaves))


def remember_devices(leaves) -> None:
    for leaf in leaves:
        if isinstance(leaf, Tensor):
            device = leaf._storage.device
            DEVICES[id(device)] = device


def leaf_key(leaf):
    if isinstance(leaf, Tensor):
        return tensor_key(leaf)
    if isinstance(leaf, _BY_VALUE):
        return (type(leaf), leaf)
    return ("id", id(leaf))


def call_key(leaves: list, dynamic: dict | None = None) -> tuple:
    """The guard key; ``dynamic`` (``{leaf position: dims}``) leaves those dims' sizes out,
    except 0 and 1 (specialised, as PyTorch does: broadcasting differs there)."""
    keys = list(map(leaf_key, leaves))
    for i, dims in (dynamic or {}).items():
        if i < len(keys) and len(keys[i]) == 4:
            shape, *rest = keys[i]
            masked = tuple(-1 if d in dims and n > 1 else n for d, n in enumerate(shape))
            keys[i] = (masked, *rest)
    return (GRAD.mode.enabled, tuple(keys))


# A module's hook tables, and the global backward hooks every module runs.
HOOK_TABLES = ("_forward_pre_hooks", "_forward_hooks", "_backward_pre_hooks", "_backward_hooks")


def hook_tables(modules) -> list:
    """Every hook table the calls of ``modules`` run (hooks are Python a replay skips)."""
    from ember.autograd import module_hooks

    found = [module_hooks.GLOBAL_BACKWARD_PRE_HOOKS, module_hooks.GLOBAL_BACKWARD_HOOKS]
    found += [m.__dict__[name] for m in modules for name in HOOK_TABLES if name in m.__dict__]
    return found


def backward_hooks(modules, root=None) -> bool:
    """Whether a call of ``modules`` (and ``root``'s tree) runs module backward hooks."""
    from ember.autograd import module_hooks

    if module_hooks.GLOBAL_BACKWARD_HOOKS or module_hooks.GLOBAL_BACKWARD_PRE_HOOKS:
        return True
    found = list(modules) + (list(root.modules()) if root is not None else [])
    return any(m._backward_hooks or m._backward_pre_hooks for m in found)


class HookGuard:
    """The hooks of an entry's modules as its capture ran them (a hook registered after it,
    or removed, changes what a call does: dynamo guards the hook tables too). Registering or
    removing any hook bumps ``_Handle.changes``; only then are the tables compared."""

    __slots__ = ("changes", "hooks", "tables")

    def __init__(self, modules):
        from ember.nn.modules.module import _Handle

        self.tables = hook_tables(modules)
        self.hooks = self._hooks()
        self.changes = _Handle.changes

    def _hooks(self) -> tuple:
        return tuple([(k, id(h)) for table in self.tables for k, h in table.items()])

    def __call__(self) -> bool:
        from ember.nn.modules.module import _Handle

        if _Handle.changes == self.changes:
            return True
        if self._hooks() != self.hooks:
            return False
        self.changes = _Handle.changes  # another module's hooks changed
        return True


def describe(key: tuple, names: list) -> list[str]:
    """The guards of ``key`` as text lines (``EMBER_LOGS=guards``)."""
    grad, leaves = key
    lines = [f"GLOBAL_STATE: grad_mode == {grad}"]
    for name, leaf in zip(names, leaves):
        if len(leaf) == 4:
            shape, dtype, device, requires_grad = leaf
            device = DEVICES.get(device, device)
            size = ", ".join(str(n) if n >= 0 else "s" for n in shape)  # s: symbolic (dynamic)
            lines.append(
                f"TENSOR_MATCH: {name!r} size=[{size}] dtype={dtype} device={device} "
                f"requires_grad={requires_grad}"
            )
        elif leaf[0] == "id":
            lines.append(f"ID_MATCH: {name!r}")
        else:
            lines.append(f"CONSTANT_MATCH: {name!r} == {leaf[1]!r}")
    return lines


def failures(expected: tuple, actual: tuple, names: list) -> list[str]:
    """Why ``actual`` does not match the guards of ``expected`` (PyTorch's wording)."""
    if expected[0] != actual[0]:
        return [f"GLOBAL_STATE changed: grad_mode (expected {expected[0]}, actual {actual[0]})"]
    if len(expected[1]) != len(actual[1]):
        return [f"len(args) == {len(expected[1])} (actual {len(actual[1])})"]
    out = []
    for name, old, new in zip(names, expected[1], actual[1]):
        if old != new:
            out.append(_leaf_failure(name, old, new))
    return out


def _leaf_failure(name: str, old, new) -> str:
    if len(old) != 4 or len(new) != 4:
        if old[0] == "id" or new[0] == "id":
            return f"ID_MATCH: ___check_obj_id({name}) failed"
        return f"{name} == {old[1]!r} (actual {new[1]!r})"
    (shape, dtype, device, grad), (shape2, dtype2, device2, _grad) = old, new
    if len(shape) != len(shape2):
        return f"tensor {name!r} rank mismatch. expected {len(shape)}, actual {len(shape2)}"
    for index, (a, b) in enumerate(zip(shape, shape2)):
        if a != b:
            return f"tensor {name!r} size mismatch at index {index}. expected {a}, actual {b}"
    if dtype != dtype2:
        return f"tensor {name!r} dtype mismatch. expected {dtype}, actual {dtype2}"
    if device != device2:
        device, device2 = DEVICES.get(device, device), DEVICES.get(device2, device2)
        return f"tensor {name!r} device mismatch. expected {device}, actual {device2}"
    return f"tensor {name!r} requires_grad mismatch. expected requires_grad={int(grad)}"
