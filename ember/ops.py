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


NAMESPACES: dict = {}


def __getattr__(name: str):
    found = OPS.get(name)
    if found is not None:
        return found
    if name in NAMESPACES:
        return NAMESPACES[name]
    from .library import load_op_libraries

    load_op_libraries()
    if name in NAMESPACES:
        return NAMESPACES[name]
    raise AttributeError(f"ember.ops has no op or namespace '{name}'")


def __dir__():
    return sorted(OPS) + sorted(NAMESPACES)
