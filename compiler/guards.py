"""Guards: what a graph assumed about its call, as one hashable key per call.

A key holds grad mode, and per argument leaf: for a tensor its sizes, dtype, device and
``requires_grad``; for a Python scalar, string or None its value; for anything else its
identity. The modules a capture called are checked per cached entry (they are known only after
the capture): their Python scalar attributes (``training``, a flag or a size a ``forward`` reads)
must hold the values they had, as dynamo guards the attributes it read, and their other
attributes and submodules the same objects. The globals and closure variables the user's code
read are python_guards.py's. Comparing two keys
gives PyTorch's guard-failure text (``tensor 'x' size mismatch at index 0. expected 4, actual
8``).
"""

from __future__ import annotations

from operator import attrgetter

from ember._tensor import Tensor
from ember.autograd.grad_mode import THREAD as GRAD

from .python_guards import BY_VALUE as _SCALARS
from .python_guards import item_tuple, same

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


def _base_keys() -> frozenset:
    """The registries every Module has (``_parameters``, ``_modules``, the hook dicts): never
    rebound, so not worth an identity check per call."""
    global _BASE_KEYS
    if _BASE_KEYS is None:
        from ember.nn.modules.module import Module

        _BASE_KEYS = frozenset(k for k, v in Module().__dict__.items() if type(v) not in _SCALARS)
    return _BASE_KEYS


_BASE_KEYS: frozenset | None = None


# what a replay assumes of a parameter or buffer it reads through its module: a replacement of
# another shape, dtype or device (``lin.weight = Parameter(...)``, ``model.double()``) must
# capture again, since the programs allocate outputs of the captured sizes
_META = attrgetter("_shape", "_dtype", "_storage.device")


def _tensor_registries(d: dict) -> tuple:
    """Per ``_parameters``/``_buffers`` of a module: ``(registry, its length, its tensors'
    keys, getter of them, the tensors (held: their ids stay theirs), their ids, their metadata,
    getter of its None entries, those Nones)``. The length catches a tensor registered after
    the capture (``register_buffer`` in a later step), the ids a Parameter replaced by another
    of the same sizes (the replay holds the tensors it captured; ``p.data = ...`` keeps the
    object and is read at each call)."""
    found = []
    for registry in (d.get("_parameters"), d.get("_buffers")):
        if registry is None:
            continue
        tensors = tuple(k for k, v in registry.items() if v is not None)
        empty = tuple(k for k, v in registry.items() if v is None)
        getter = item_tuple(tensors)
        nones = item_tuple(empty) if empty else None
        held = getter(registry)
        found.append(
            (registry, len(registry), tensors, getter, held, tuple(map(id, held)),
             tuple(map(_META, held)), nones, nones(registry) if nones else None)
        )  # fmt: skip
    return tuple(found)


def module_probe(modules) -> list:
    """What ``probe_matches`` checks at each call, per module: its attribute count (a new
    attribute changes it), its Python scalar attributes by value (``training``, a flag or a size
    a ``forward`` reads, as dynamo guards the attributes it read), its other attributes (a
    tensor attribute, a function) and its submodules by identity (``model.act = nn.GELU()``),
    its parameters' and buffers' sizes, dtypes and devices (``_META``). Each entry ends with what
    ``module_failure`` needs to name the change."""
    base = _base_keys()
    probe = []
    for m in modules:
        d = m.__dict__
        names = tuple(k for k, v in d.items() if type(v) in _SCALARS)
        getter = item_tuple(names) if names else None
        others = tuple(k for k, v in d.items() if type(v) not in _SCALARS and k not in base)
        objects = item_tuple(others) if others else None
        held = objects(d) if objects else ()
        children = d.get("_modules") or None
        kids = tuple(children.values()) if children else ()
        probe.append(
            (m, len(d), getter, getter(d) if getter else None, objects, tuple(map(id, held)),
             children, tuple(map(id, kids)), _tensor_registries(d),
             (names, others, held, kids))
        )  # fmt: skip
    return probe


def probe_matches(probe) -> bool:
    try:
        for m, count, getter, values, objects, ids, children, kid_ids, tensors, _ in probe:
            d = m.__dict__
            if len(d) != count or (getter is not None and getter(d) != values):
                return False
            if objects is not None and tuple(map(id, objects(d))) != ids:
                return False
            if children is not None and tuple(map(id, children.values())) != kid_ids:
                return False
            for registry, size, _, found, _, held_ids, metas, nones, empty in tensors:
                if len(registry) != size:
                    return False
                held = found(registry)
                if tuple(map(id, held)) != held_ids or tuple(map(_META, held)) != metas:
                    return False
                if nones is not None and nones(registry) != empty:
                    return False
    except (KeyError, RuntimeError, AttributeError):  # an attribute deleted and another added;
        return False  # a scalar attribute now a tensor of several elements; a tensor now None
    return True


def module_failure(probe) -> str:
    """Which module attribute a failed probe found changed."""
    for m, count, _, values, _, _, children, _, tensors, (names, others, held, kids) in probe:
        d = m.__dict__
        name = type(m).__name__
        if len(d) != count:
            return f"{name}: its attributes changed (guarded: {count} attributes)"
        for key, old in zip(names, values or ()):
            if not same(old, d.get(key)):
                return f"{name}.{key} changed (guarded: {old!r})"
        for key, old in [*zip(others, held), *zip(children or (), kids)]:
            if (children if key in (children or ()) else d).get(key) is not old:
                return f"{name}.{key} changed (guarded by identity)"
        for registry, size, keys, _, _, held_ids, metas, _, _ in tensors:
            if len(registry) != size:
                return f"{name}: its parameters or buffers changed (guarded: {size} of them)"
            for key, held, old in zip(keys, held_ids, metas):
                now = registry.get(key)
                if id(now) != held:
                    return f"{name}.{key} changed (guarded by identity)"
                if _META(now) != old:
                    shape, dtype, device = old
                    guarded = f"size {list(shape)}, {dtype}, {device}"
                    return f"{name}.{key} changed (guarded: {guarded})"
    return "a module attribute changed"


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
