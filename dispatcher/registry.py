"""Kernel resolution: which function runs ``(op, device type, dtype)``.

Candidates are the serving backend's kernel table and kernels that op libraries register for the
device type; the highest priority wins. Without one, a composite decomposes (``None`` is returned),
and a primitive falls back to the CPU when the policy allows, else raises NotImplementedError naming
the op, the device, the dtype and who does implement it. Results are memoised on the op.
"""

from __future__ import annotations

import contextlib
import sys
import warnings
from collections import Counter

from .devices import REGISTRY, DeviceUnavailableError, on_reset

FALLBACK_COUNTS: Counter = Counter()
_WARNED: set = set()
on_reset(_WARNED.clear)  # a reset registry is a new configuration: warn about it afresh


class PerformanceWarning(UserWarning):
    """An op ran somewhere slower than asked (for example the CPU fallback)."""


class ExtraKernels:
    """Kernels added for ops by op libraries and ``ember.library.impl``, by device type."""

    def __init__(self):
        # (op name, device type) -> list of (priority, provider, {dtype name or "*": fn})
        self.entries: dict = {}

    def check(self, op_name: str, device_type: str, table: dict, provider: str, priority: int = 0):
        """Raise if ``table`` conflicts with another provider's kernels.

        Two providers may serve one key when they declare different priorities (the higher one
        wins); at the same priority a different function is a conflict, since nothing says which
        should run. The same function again is never one.
        """
        for other_priority, other, other_table in self.entries.get((op_name, device_type), ()):
            if other == provider or other_priority != priority:
                continue
            for key, fn in table.items():
                existing = other_table.get(key)
                if existing is not None and existing is not fn:
                    raise RuntimeError(
                        f"kernel for '{op_name}' on {device_type} ({key}) is registered by both "
                        f"'{other}' and '{provider}' (give one a higher priority to prefer it)"
                    )

    def add(self, op_name: str, device_type: str, table: dict, provider: str, priority: int = 0):
        """Register ``{dtype name or "*": fn}`` for ``op_name`` on ``device_type``.

        A provider registering again updates its own kernels and priority; conflicts with other
        providers are refused (see ``check``) and nothing of the refused table is kept.
        """
        self.check(op_name, device_type, table, provider, priority)
        entries = self.entries.setdefault((op_name, device_type), [])
        mine = next((i for i, entry in enumerate(entries) if entry[1] == provider), None)
        if mine is None:
            entries.append((priority, provider, dict(table)))
        else:
            entries[mine] = (priority, provider, {**entries[mine][2], **table})
        entries.sort(key=lambda item: -item[0])
        from .op import forget_kernels  # late: op imports this module

        forget_kernels(op_name)

    def find(self, op_name: str, device_type: str, dtype_name: str):
        for priority, provider, table in self.entries.get((op_name, device_type), ()):
            fn = table.get(dtype_name) or table.get("*")
            if fn is not None:
                return priority, provider, fn
        return None

    def device_types(self, op_name: str) -> set:
        return {dev for (name, dev) in self.entries if name == op_name}

    def providers(self, op_name: str) -> list[tuple[str, str, list]]:
        """``(device type, provider, dtype names)`` for every table registered for ``op_name``."""
        return [
            (dev, provider, sorted(table))
            for (name, dev), entries in sorted(self.entries.items())
            if name == op_name
            for _prio, provider, table in entries
        ]


EXTRA = ExtraKernels()


def backend_kernel(backend, op_name: str, dtype_name: str):
    table = backend.kernels.get(op_name)
    if not table:
        return None
    return table.get(dtype_name) or table.get("*")


def find_kernel(op, device_type: str, dtype):
    """``(fn, source)`` for the best native kernel, or ``(None, None)``."""
    backend = REGISTRY.backend(device_type)
    best = None
    fn = backend_kernel(backend, op.name, dtype.name)
    if fn is not None:
        best = (backend.priority, f"{backend.name} kernel", fn)
    extra = EXTRA.find(op.name, device_type, dtype.name)
    if extra is not None and (best is None or extra[0] > best[0]):
        best = (extra[0], f"{extra[1]} kernel", extra[2])
    if best is None:
        return None, None
    return best[2], best[1]


def resolve(op, device_type: str, dtype):
    """The kernel to call, or None when the op should decompose. Raises when there is neither."""
    fn, _source = find_kernel(op, device_type, dtype)
    if fn is not None:
        return fn
    if op.decomposition is not None:
        return None
    backend = REGISTRY.backend(device_type)
    if backend.fallback:
        cpu_fn, _ = find_kernel(op, "cpu", dtype)
        if cpu_fn is not None:
            return make_fallback(op, cpu_fn, device_type)
    raise NotImplementedError(_missing_message(op, device_type, dtype, backend))


def explain(op, device_type: str, dtype) -> str:
    """Which implementation a call would reach, and why (for ``ember.plugins --explain``)."""
    if op.core:
        return f"{op.name}: implemented by the ember core for every device (no kernel needed)"
    backend = REGISTRY.backend(device_type)
    fn, source = find_kernel(op, device_type, dtype)
    where = f"{device_type} {dtype.name}"
    if fn is not None:
        return f"{op.name}({where}): native {source} {getattr(fn, '__qualname__', fn)!s}"
    if op.decomposition is not None:
        return f"{op.name}({where}): no kernel; runs its decomposition into other ops"
    if backend.fallback and find_kernel(op, "cpu", dtype)[0] is not None:
        return (
            f"{op.name}({where}): no {backend.name} kernel; CPU fallback (plugins.toml allows it)"
        )
    return f"{op.name}({where}): NOT IMPLEMENTED. " + _missing_message(
        op, device_type, dtype, backend
    )


def _backends_to_name() -> dict:
    """Loaded backends, plus the CPU: it is always installed, and a device that tried nothing
    else yet would otherwise name no implementer at all."""
    found = REGISTRY.loaded_backends()
    if "cpu" not in found:
        with contextlib.suppress(DeviceUnavailableError):
            found["cpu"] = REGISTRY.backend("cpu")
    return found


def _missing_message(op, device_type: str, dtype, backend) -> str:
    providers = []
    for loaded in _backends_to_name().values():
        table = loaded.kernels.get(op.name)
        if table:
            providers.append(f"{loaded.name} ({loaded.device_type}: {', '.join(sorted(table))})")
    for dev, provider, dtypes in EXTRA.providers(op.name):
        providers.append(f"{provider} ({dev}: {', '.join(dtypes)})")
    who = "; ".join(providers) if providers else "no loaded backend"
    hint = ""
    if device_type != "cpu" and not backend.fallback:
        hint = " CPU fallback is off for this backend (plugins.toml)."
    return (
        f"'{op.name}' is not implemented for device '{device_type}' and dtype {dtype.name} "
        f"(backend '{backend.name}'). Implemented by: {who}.{hint}"
    )


def _user_stacklevel() -> int:
    """The ``stacklevel`` of the innermost caller outside ember, so that a warning points at the
    user's line however deep in runners, layers and nn modules it was raised."""
    frame, level = sys._getframe(2), 2  # 1 is the function that calls warnings.warn
    while frame is not None and _is_ember(frame.f_globals.get("__name__") or ""):
        frame, level = frame.f_back, level + 1
    return level


def _is_ember(module: str) -> bool:
    return module == "ember" or module.startswith("ember.")


def _to_cpu(arg, on_cpu: dict, tensor_type):
    """``arg`` with its tensors copied to the CPU once each (``on_cpu``: id -> (original, copy)).
    A plain function, not a closure: a recursive closure is a reference cycle that kept the
    originals alive until the next garbage collection."""
    if isinstance(arg, tensor_type):
        key = id(arg)
        if key not in on_cpu:
            on_cpu[key] = (arg, arg.cpu().contiguous())
        return on_cpu[key][1]
    if isinstance(arg, (list, tuple)) and any(isinstance(item, tensor_type) for item in arg):
        return [_to_cpu(item, on_cpu, tensor_type) for item in arg]  # Tensor[] (library ops)
    return arg


def make_fallback(op, cpu_kernel, device_type: str):
    """Wrap a CPU kernel: copy tensor arguments to the CPU, run, copy the outputs back."""
    n_out = op.num_outputs
    name = op.name

    def fallback(*args):
        from ember import _tensor  # late: the dispatcher does not import ember at load

        FALLBACK_COUNTS[name] += 1
        if name not in _WARNED and REGISTRY.policy.warn_fallback:
            _WARNED.add(name)
            warnings.warn(
                f"'{name}' has no {device_type} kernel; running it on the CPU (copies in and out). "
                "This warning is shown once per op.",
                PerformanceWarning,
                stacklevel=_user_stacklevel(),
            )
        on_cpu: dict = {}
        result = cpu_kernel(*(_to_cpu(arg, on_cpu, _tensor.Tensor) for arg in args))
        for original, copy in (
            on_cpu[id(a)] for a in args[:n_out] if isinstance(a, _tensor.Tensor)
        ):
            # The result lands in the output the runner allocated: a fresh tensor's version
            # stays where it was (copy_ counts a write; autograd would see a changed output).
            version = original._storage.version
            original.copy_(copy)
            original._storage.version = version
        return result

    fallback.__qualname__ = f"cpu_fallback[{name}]"
    return fallback


def clear_caches(ops) -> None:
    for op in ops:
        op.kernels.clear()
