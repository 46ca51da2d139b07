"""How each loaded backend covers the op table: native kernel, decomposition, core, CPU fallback,
or missing. Used by ``python -m ember.plugins`` and by the coverage tests."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from . import registry
from .devices import REGISTRY

CATEGORIES = ("native", "decomposition", "core", "cpu fallback", "missing")


@dataclass
class Coverage:
    backend: str
    device_type: str
    status: dict = field(default_factory=dict)  # op name -> category

    @property
    def counts(self) -> Counter:
        return Counter(self.status.values())

    def ops(self, category: str) -> list[str]:
        return sorted(name for name, cat in self.status.items() if cat == category)


def _has_kernel(name: str, backend) -> bool:
    """A kernel in the backend's table or one an op library registered for its device type."""
    return name in backend.kernels or backend.device_type in registry.EXTRA.device_types(name)


def classify(op, backend, cpu_backend) -> str:
    """The category of ``op`` on ``backend`` (in-place variants follow their functional op)."""
    base = op.inplace_of or op
    if base.core:
        return "core"
    if _has_kernel(base.name, backend):
        return "native"
    if base.decomposition is not None:
        return "decomposition"
    if backend.fallback and cpu_backend is not None and _has_kernel(base.name, cpu_backend):
        return "cpu fallback"
    return "missing"


def coverage(device_type: str, ops: dict) -> Coverage:
    backend = REGISTRY.backend(device_type)
    try:
        cpu_backend = REGISTRY.backend("cpu")
    except RuntimeError:
        cpu_backend = None
    result = Coverage(backend.name, device_type)
    for name, op in ops.items():
        result.status[name] = classify(op, backend, cpu_backend)
    return result


def primitives(ops: dict) -> list[str]:
    """Ops a backend must implement to run every model natively: neither core nor composite
    (in-place variants use their functional op's kernel). Anything missing falls back to the
    CPU where the policy allows."""
    return sorted(
        name
        for name, op in ops.items()
        if op.inplace_of is None and not op.core and op.decomposition is None
    )


def fusable(ops: dict) -> list[str]:
    """Composites whose rows document a kernel: a backend may replace the decomposition."""
    return sorted(
        name
        for name, op in ops.items()
        if op.inplace_of is None and op.decomposition is not None and op.defn.kernel_args
    )
