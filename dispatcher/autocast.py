"""The Autocast dispatch layer (priority 200) and autocast's thread-local state.

Inside ``ember.autocast(device_type)``, a call of an op with an entry in the autocast policy
(``optable/autocast_policy.py``) has its floating tensor arguments on that device type cast as the
entry says (to the autocast dtype, to float32, or to the widest of them), then runs below this
layer with autocast off, as PyTorch's ``ExcludeDispatchKeyGuard`` does: a composite's parts keep
the dtypes its entry chose. The casts are ordinary ``_to_copy`` calls above the Autograd layer, so
autograd records them and saves the op's inputs in the cast dtype (activations in bfloat16 take
half the memory).

Casts of float32 leaves that require grad (the parameters) to the autocast dtype are cached until
the outermost autocast region exits, so a weight used by several layers is cast once.

The state is thread-local like PyTorch's. The layer is in the stack while some thread has autocast
on, and answers False at once for threads that do not.
"""

from __future__ import annotations

import threading

from ember import _dtype as dt
from ember._tensor import Tensor

from .layers import STACK, Layer
from .optable import OPS
from .optable.autocast_policy import (
    DEFAULT_DTYPES,
    FALLBACK_DTYPE,
    NAMES,
    Cast,
    policy_table,
)

BANNED_MESSAGE = (
    "ember.nn.functional.binary_cross_entropy and ember.nn.BCELoss are unsafe to autocast.\n"
    "Many models use a sigmoid layer right before the binary cross entropy layer.\n"
    "In this case, combine the two layers using "
    "ember.nn.functional.binary_cross_entropy_with_logits\n"
    "or ember.nn.BCEWithLogitsLoss.  binary_cross_entropy_with_logits and BCEWithLogits are\n"
    "safe to autocast."
)


class _State(threading.local):
    def __init__(self):
        self.enabled: dict = {}  # device type -> True, for the device types with autocast on
        self.on = False  # bool(enabled): the one attribute the layer reads for every op
        self.dtypes: dict = dict(DEFAULT_DTYPES)
        self.cache_enabled = True
        self.nesting = 0
        self.counted = False  # whether this thread keeps the layer installed


STATE = _State()

# ---- the layer's presence in the stack -------------------------------------------------------
_LOCK = threading.Lock()
_THREADS_ON = [0]  # threads with autocast on somewhere


def _count(state: _State) -> None:
    """Keep the layer installed exactly while some thread has autocast on."""
    want = bool(state.enabled)
    if want == state.counted:
        return
    with _LOCK:
        state.counted = want
        _THREADS_ON[0] += 1 if want else -1
        if _THREADS_ON[0] > 0:
            STACK.install(LAYER)
        else:
            STACK.remove(LAYER)


# ---- the state API (ember.is_autocast_enabled, ...) --------------------------------------------
def is_autocast_enabled(device_type: str = "cuda") -> bool:
    """Whether autocast is on for ``device_type`` in this thread (PyTorch's default: cuda)."""
    return device_type in STATE.enabled


def set_autocast_enabled(device_type, enabled=None) -> None:
    """Turn autocast on or off for ``device_type`` in this thread; ``set_autocast_enabled(True)``
    alone means cuda, as in PyTorch."""
    if enabled is None:
        device_type, enabled = "cuda", device_type
    if not isinstance(enabled, bool):
        raise TypeError(
            f"set_autocast_enabled(): argument 'enabled' must be bool, not {type(enabled).__name__}"
        )
    state = STATE
    current = dict(state.enabled)
    if enabled:
        current[device_type] = True
    else:
        current.pop(device_type, None)
    state.enabled = current
    state.on = bool(current)
    _count(state)


def get_autocast_dtype(device_type: str):
    """The dtype autocast casts to on ``device_type`` (bfloat16 on cpu, float16 on cuda/xpu)."""
    return STATE.dtypes.get(device_type, FALLBACK_DTYPE)


def set_autocast_dtype(device_type: str, dtype) -> None:
    STATE.dtypes[device_type] = dtype


def is_autocast_cache_enabled() -> bool:
    return STATE.cache_enabled


def set_autocast_cache_enabled(enabled: bool) -> None:
    STATE.cache_enabled = bool(enabled)


def autocast_increment_nesting() -> int:
    STATE.nesting += 1
    return STATE.nesting


def autocast_decrement_nesting() -> int:
    STATE.nesting -= 1
    return STATE.nesting


# ---- the cast cache ----------------------------------------------------------------------------
# id(source) -> (source, cast). Process-wide like PyTorch's; the source is held so that its id
# cannot be reused by another tensor while the entry lives.
_CACHE: dict = {}
_CACHE_LOCK = threading.Lock()


def clear_autocast_cache() -> None:
    """Forget the cached weight casts (the outermost ``autocast`` does it on exit)."""
    with _CACHE_LOCK:
        _CACHE.clear()


_CASTABLE = frozenset((dt.float16, dt.bfloat16, dt.float32))  # float64 is never cast


def _eligible(t, device_type: str) -> bool:
    return t._dtype in _CASTABLE and t._storage.device.type == device_type


def cached_cast(to, t, device_type: str):
    """Tensor ``t`` as dtype ``to`` when autocast may cast it, else ``t`` itself."""
    if not _eligible(t, device_type) or t._dtype is to:
        return t
    cacheable = (
        to is get_autocast_dtype(device_type)
        and t._dtype is dt.float32
        and t._requires_grad
        and t._grad_fn is None
        and t._base is None
        and STATE.cache_enabled
    )
    if not cacheable:
        return OPS["_to_copy"](t, to, t._storage.device, False)
    with _CACHE_LOCK:
        found = _CACHE.get(id(t))
        if found is not None and found[0] is t and found[1]._dtype is to:
            return found[1]
    cast = OPS["_to_copy"](t, to, t._storage.device, False)
    with _CACHE_LOCK:
        _CACHE[id(t)] = (t, cast)
    return cast


def _cast_all(to, args, device_type: str) -> tuple:
    out = []
    for arg in args:
        if isinstance(arg, Tensor):
            arg = cached_cast(to, arg, device_type)
        elif arg.__class__ is list or arg.__class__ is tuple:
            arg = [cached_cast(to, a, device_type) if isinstance(a, Tensor) else a for a in arg]
        out.append(arg)
    return tuple(out)


def _tensors(args):
    for arg in args:
        if isinstance(arg, Tensor):
            yield arg
        elif arg.__class__ is list or arg.__class__ is tuple:
            yield from (a for a in arg if isinstance(a, Tensor))


def _promote_type(args, device_type: str, lower):
    """PyTorch's ``promote_type``: float32 if any eligible input is float32, else ``lower``."""
    current = lower
    for t in _tensors(args):
        if not _eligible(t, device_type):
            continue
        if t._dtype is dt.float32:
            current = dt.float32
        elif t._dtype is not lower and current is not dt.float32:
            raise RuntimeError(
                f"autocast: unexpected floating dtype {t._dtype.name} among the inputs of an op "
                f"that promotes in {lower.name} autocast on {device_type}"
            )
    return current


_DTYPE_ARG: dict = {}  # op name -> index of its ``dtype`` argument


def _with_float32_dtype(op, args, device_type: str) -> tuple:
    """fp32_set_opt_dtype / fp32_append_dtype: ``dtype=float32`` unless the call gave one, when
    the first argument is eligible (otherwise unchanged, so the op's own promotion decides)."""
    first = args[0] if args else None
    if not isinstance(first, Tensor) or not _eligible(first, device_type):
        return args
    index = _DTYPE_ARG.get(op.name)
    if index is None:
        names = [a.name for a in op.schema.args]
        index = _DTYPE_ARG[op.name] = names.index("dtype") if "dtype" in names else -1
    if index < 0:  # no dtype argument: cast the inputs instead
        return _cast_all(dt.float32, args, device_type)
    if len(args) <= index:
        args = args + tuple(a.default for a in op.schema.args[len(args) : index + 1])
    if args[index] is not None:
        return args
    return args[:index] + (dt.float32,) + args[index + 1 :]


def _cast_args(policy, op, args, device_type: str) -> tuple:
    if policy is Cast.LOWER:
        return _cast_all(get_autocast_dtype(device_type), args, device_type)
    if policy is Cast.FP32:
        return _cast_all(dt.float32, args, device_type)
    if policy is Cast.PROMOTE:
        to = _promote_type(args, device_type, get_autocast_dtype(device_type))
        return _cast_all(to, args, device_type)
    if policy is Cast.FP32_SET_OPT_DTYPE or policy is Cast.FP32_APPEND_DTYPE:
        return _with_float32_dtype(op, args, device_type)
    if policy is Cast.BANNED:
        raise RuntimeError(BANNED_MESSAGE)
    if policy is Cast.OPAQUE:
        return args
    return _cast_all(policy, args, device_type)  # a library op's cast_inputs dtype


def _device_type(args) -> str | None:
    """The device type whose autocast governs the call: the first tensor's, preferring a
    non-CPU one (zero-dim CPU tensors ride along with tensors of any device)."""
    found = None
    for t in _tensors(args):
        kind = t._storage.device.type
        if kind != "cpu":
            return kind
        found = kind
    return found


class AutocastLayer(Layer):
    name = "autocast"
    priority = 200

    def wants(self, op, args) -> bool:
        return STATE.on and op.name in NAMES

    def handle(self, op, args):
        state = STATE
        device_type = _device_type(args)
        policy = None
        if device_type in state.enabled:
            policy = policy_table(device_type).get(op.name)
        if policy is None:
            return op.redispatch(self, args)
        args = _cast_args(policy, op, args, device_type)
        enabled = state.enabled
        state.enabled, state.on = {}, False
        try:
            return op.redispatch(self, args)
        finally:
            state.enabled, state.on = enabled, True


LAYER = AutocastLayer()
