"""Guards: what a graph assumed about its call, as one hashable key per call.

A key holds grad mode, and per argument leaf: for a tensor its sizes, dtype, device and
``requires_grad``; for a Python scalar, string or None its value; for anything else its
identity. The modules a capture called are checked per cached entry (they are known only after
the capture): their Python scalar attributes (``training``, a flag or a size a ``forward`` reads)
must hold the values they had, as dynamo guards the attributes it read. Comparing two keys
gives PyTorch's guard-failure text (``tensor 'x' size mismatch at index 0. expected 4, actual
8``).
"""

from __future__ import annotations

from operator import itemgetter

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


_SCALARS = frozenset({int, float, bool, str, type(None)})


def module_state(modules) -> tuple:
    """Each module's Python scalar attributes, ``training`` among them."""
    return tuple(
        [tuple([(k, v) for k, v in m.__dict__.items() if type(v) in _SCALARS]) for m in modules]
    )


def module_probe(modules) -> list:
    """What ``probe_matches`` checks at each call, cheaper than recomputing ``module_state``:
    per module its attribute count (a new attribute changes it) and the values of its Python
    scalar attributes read by one ``itemgetter``."""
    probe = []
    for m in modules:
        names = [k for k, v in m.__dict__.items() if type(v) in _SCALARS]
        getter = itemgetter(*names) if names else None
        values = getter(m.__dict__) if getter else None
        probe.append((m, len(m.__dict__), getter, values))
    return probe


def probe_matches(probe) -> bool:
    try:
        for m, count, getter, values in probe:
            d = m.__dict__
            if len(d) != count or (getter is not None and getter(d) != values):
                return False
    except KeyError:  # an attribute was deleted and another added
        return False
    return True


def module_failure(modules, expected: tuple) -> str:
    for module, old, new in zip(modules, expected, module_state(modules)):
        if old != new:
            changed = sorted(set(old) ^ set(new))
            name = changed[0][0] if changed else "?"
            return f"{type(module).__name__}.{name} changed (guarded: {dict(old).get(name)!r})"
    return "a module attribute changed"


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
