"""What TorchScript checks when a name crosses a block: a variable the two branches of an ``if``
leave with different types, or that one branch leaves undefined, is an error only where it is
read afterwards (``Unmerged``, raised with both places as TorchScript words it); assigning in an
inner block (a branch, a loop body) a name bound outside it keeps the outer type, converting a
tensor to an int or float as TorchScript's ``IntImplicit``/``FloatImplicit`` (``rebind``).

An unannotated parameter's type is written ``Tensor (inferred)`` in these messages, as
TorchScript writes it.
"""

from __future__ import annotations

from .. import types as T
from ..ir import Value
from .frontend import ScriptError

# Implicit conversions on assignment to a name with an outer type: (have, outer) -> prim.
_IMPLICIT = {
    ("tensor", T.IntType): "prim::IntImplicit",
    ("tensor", T.FloatType): "prim::FloatImplicit",
}
_IMPLICIT.update({(T.BoolType, T.IntType): "prim::int", (T.BoolType, T.FloatType): "prim::float"})


class Unmerged:
    """A name the branches of an ``if`` leave unusable: reading it raises ``text`` (the ``if``
    underlined) followed by the place of the read."""

    __slots__ = ("text",)

    def __init__(self, text: str):
        self.text = text

    def used(self, source, node) -> ScriptError:
        return ScriptError(f"{self.text}and was used here:\n{source.highlight(node)}")


class Scopes:
    """Emitter methods for names crossing blocks (see the module docstring)."""

    def shown(self, value) -> str:
        """A value's type as TorchScript's messages write it."""
        inferred = id(value) in self.inferred
        return value.type().annotation() + (" (inferred)" if inferred else "")

    def unmerged(self, message: str, stmt) -> Unmerged:
        return Unmerged(f"{message}:\n{self.source.span(stmt)}")

    def branch_mismatch(self, name: str, v0, v1, stmt) -> Unmerged:
        return self.unmerged(
            f"Type mismatch: {name} is set to type {self.shown(v0)} in the true branch and type "
            f"{self.shown(v1)} in the false branch",
            stmt,
        )

    def return_mismatch(self, v0, v1, stmt) -> ScriptError:
        """Returns of different types: TorchScript names the later return statement."""
        sites = [self.return_sites.get(id(v)) for v in (v0, v1)]
        known = [s for s in sites if s is not None]
        later = max(known, key=lambda s: (s.lineno, s.col_offset)) if known else stmt
        previous, this = (v1, v0) if later is sites[0] and later is not sites[1] else (v0, v1)
        return self.source.error(
            f"Previous return statement returned a value of type {self.shown(previous)} but "
            f"this return statement returns a value of type {self.shown(this)}",
            later,
        )

    def rebind(self, name: str, value, target):
        """``name = value`` in an inner block where ``name`` has an outer value: the value
        must fit the outer type, after TorchScript's implicit conversions."""
        outer = self.scopes[-1].get(name) if self.scopes else None
        if not isinstance(outer, Value) or not isinstance(value, Value):
            return value
        have, wanted = value.type(), self.declared.get(name, outer.type())
        if self.fits(have, wanted):
            return value
        key = "tensor" if isinstance(have, T.TensorType) else have
        prim = _IMPLICIT.get((key, wanted))
        if prim is not None:
            return self.prim(prim, [value], wanted)
        shown = self.shown(outer) if wanted == outer.type() else wanted.annotation()
        raise self.source.error(
            f"Variable '{name}' previously had type {shown} but is now being "
            f"assigned to a value of type {self.shown(value)}\n",
            target,
        )
