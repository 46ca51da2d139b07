"""Every op as a callable, by name: ``ember.ops.add``, ``ember.ops._to_copy``, and third-party
ops by namespace: ``ember.ops.myns.fused_bias_gelu`` (op libraries load on first access)."""

from __future__ import annotations

from .dispatcher.optable import OPS


class Namespace:
    """The ops of one third-party namespace (``ember.ops.<ns>``)."""

    def __init__(self, name: str):
        self._name = name
        self._ops: dict = {}

    def __getattr__(self, name: str):
        try:
            return self.__dict__["_ops"][name]
        except KeyError:
            raise AttributeError(f"ember.ops.{self._name} has no op '{name}'") from None

    def __dir__(self):
        return sorted(self._ops)

    def __repr__(self) -> str:
        return f"<ember.ops.{self._name}: {', '.join(sorted(self._ops))}>"


class _Aten:
    """``ember.ops.aten.<op>`` and its ``.default`` overload: the op itself, as PyTorch's test
    code calls ``torch.ops.aten.<op>.default`` (ember ops have one overload each)."""

    def __getattr__(self, name: str):
        found = OPS.get(name)
        if found is None:
            raise AttributeError(f"ember.ops.aten has no op '{name}'")
        return found

    def __dir__(self):
        return sorted(OPS)


aten = _Aten()


def __getattr__(name: str):
    found = OPS.get(name)
    if found is not None:
        return found
    if name.startswith("__"):  # import machinery and copy/pickle probes: not namespaces
        raise AttributeError(name)
    from . import library  # late: it needs the whole of ember

    library.load_op_libraries()
    found = library.LIBRARY.namespaces.get(name)
    if found is not None:
        return found
    raise AttributeError(f"ember.ops has no op or namespace '{name}'" + _broken_libraries())


def _broken_libraries() -> str:
    from .dispatcher.devices import REGISTRY
    from .dispatcher.plugins import OPS_GROUP

    broken = [r for r in REGISTRY.host.records(OPS_GROUP) if not r.ok]
    if not broken:
        return ""
    lines = [f"  {r.name} ({r.distribution or r.target}): {r.error}" for r in broken]
    return "; these op libraries failed to load:\n" + "\n".join(lines)


def __dir__():
    from . import library

    return sorted(OPS) + sorted(library.LIBRARY.namespaces)
