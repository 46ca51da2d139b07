"""``return`` inside ``for``/``while`` loops, lowered as TorchScript's exit transform does.

A function whose loops return carries two extra variables: ``$did_return`` (bool, False at the
start) and ``$return`` (the value, ``prim::Uninitialized`` at the start). A ``return`` in a
loop sets both and clears the loop's continue flag, so the loop stops; the loops carry them
like any variable the body rebinds. After a statement that may have returned that way, the
rest of the block runs under ``prim::If($did_return)``: its true branch ends as a ``return``
(inside an enclosing loop: that loop stops too), its false branch is the rest. A function that
can fall off its end returns None there (so ``Optional[T]``, as in TorchScript).
"""

from __future__ import annotations

import ast

from .. import types as T

DID, VALUE = "$did_return", "$return"
# The type of ``$return`` before a return in a loop is compiled; a loop's carried value takes
# the type of what its body returns (unify treats PENDING as unknown).
PENDING = T._Named("Uninitialized")


def returns_in_loops(definition) -> bool:
    """Whether a function's body has a ``return`` inside a ``for``/``while`` loop."""
    return any(
        isinstance(node, (ast.For, ast.While)) and may_return(node) for node in ast.walk(definition)
    )


def may_return(stmt) -> bool:
    return isinstance(stmt, (ast.If, ast.For, ast.While, ast.With)) and any(
        isinstance(inner, ast.Return) for inner in ast.walk(stmt)
    )


def with_final_return(stmts, terminated: bool) -> list:
    """The body with TorchScript's implicit ``return None`` at a reachable end."""
    if terminated:
        return list(stmts)
    final = ast.Return(value=None)
    ast.copy_location(final, stmts[-1])
    return [*stmts, final]


class LoopReturns:
    """Mixin of ``Emitter``: the state and guards described in the module docstring."""

    def start_loop_returns(self) -> None:
        self.loop_returns = True
        self.env[DID] = self.constant(False)
        kind = self.return_type if self.return_type is not None else PENDING
        self.env[VALUE] = self.graph.insert("prim::Uninitialized").output().setType(kind)
        self.return_start = self.env[VALUE]

    def settle_return_start(self, kind) -> None:
        """The start value, when no compiled loop gave it a type (only unrolled loops
        returned), takes the function's result type (a PENDING type cannot be saved)."""
        if self.return_start.type() == PENDING:
            self.return_start.setType(kind)

    def return_in_loop(self, value) -> None:
        previous = getattr(self, "first_return", None)
        if previous is None:
            self.first_return = value.type()
        else:
            self.check_return_type(previous, value.type())
        self.env[VALUE] = value
        self.env[DID] = self.constant(True)
        if self.in_loop:
            self.env["$continue"] = self.constant(False)

    def carried_returns(self, stmt) -> list[str]:
        if not getattr(self, "loop_returns", False):
            return []
        return [DID, VALUE] if any(isinstance(n, ast.Return) for n in ast.walk(stmt)) else []

    def settle_return_type(self, block, node, carried: list[str]) -> None:
        """After a loop: its carried ``$return`` (and the start value) take the body's type."""
        if VALUE not in carried:
            return
        index = carried.index(VALUE)
        kind = list(block.outputs())[1 + index].type()
        if kind == PENDING:
            return
        start = list(node.inputs())[2 + index]
        for value in (start, list(block.inputs())[1 + index], list(node.outputs())[index]):
            if value.type() == PENDING:
                value.setType(kind)

    def guard_rest(self, stmt, emit_rest):
        """The rest of a block after ``stmt`` (which may have returned from a loop), compiled
        by ``emit_rest``, runs only when nothing returned; returns how the guarded block ends."""
        from .emitter import RETURN, _join

        node = self.graph.insert("prim::If", [self.env[DID]], num_outputs=0)
        node.setSourceRange(self.where(stmt))
        before, results = self.env, []
        for returned in (True, False):
            block = node.addBlock()
            self.env = dict(before)
            with self.graph.insert_point_guard(block):
                if returned:
                    if self.in_loop:
                        self.env["$continue"] = self.constant(False)
                    ended = RETURN
                else:
                    ended = emit_rest()
            results.append((block, self.env, ended))
        self.env = before
        _drop_differing_sugar(results[0][1], results[1][1])
        self.merge(node, before, results, stmt)
        ends = [r[2] for r in results]
        return _join(*ends) if all(ends) else None

    def check_return_type(self, previous, kind) -> None:
        from .frontend import ScriptError

        try:
            self.unify(previous, kind, VALUE, self.current)
        except ScriptError:
            raise self.source.error(
                f"Previous return statement returned a value of type {previous.annotation()} "
                f"but this return statement returns a value of type {kind.annotation()}",
                self.current,
            ) from None


def _drop_differing_sugar(returned: dict, rest: dict) -> None:
    """Compile-time bindings (an unrolled loop's module) the rest changed are not visible after
    the guard: only the returned value is."""
    from .sugar import Sugar

    for name in list(rest):
        if isinstance(rest[name], Sugar) and returned.get(name) is not rest[name]:
            rest.pop(name)
            returned.pop(name, None)
