"""Statements to IR: assignments, ``if`` as ``prim::If``, ``for``/``while`` as ``prim::Loop``,
``break``/``continue``/early ``return``, ``raise``/``assert``.

One ``Emitter`` compiles one function body into the graph at the current insertion point, with
an environment mapping names to graph values or compile-time values (``sugar``). Calls of
other scripted functions and submodules run a nested Emitter on the same graph (inlining, as
TorchScript's ``inlined_graph``).

Early exits are structured the way TorchScript's exit transform leaves them: when one branch
of an ``if`` ends in ``return``/``break``/``continue``/``raise`` and the other does not, the
statements after the ``if`` move into the other branch, so both branches end the same way and
the returned value (``$return``) or the loop's continue flag (``$continue``) is an output of the
``prim::If``.
"""

from __future__ import annotations

import ast

from .. import types as T
from ..ir import Value
from .classes import INPLACE_MAGIC
from .contexts import Contexts
from .expressions import Expressions
from .returns import PENDING, LoopReturns, may_return
from .scopes import Scopes, Unmerged
from .sugar import Sugar
from .unions import only_narrowed

RETURN, BREAK, CONTINUE, RAISE = "return", "break", "continue", "raise"
_MAX_TRIP = 9223372036854775807  # while loops: TorchScript's max trip count
_SIMPLE = (ast.Assign, ast.AnnAssign, ast.AugAssign, ast.Expr, ast.Pass)


def terminator(stmts) -> str | None:
    """How a statement list ends: return/break/continue/raise, or None (falls through)."""
    if not stmts:
        return None
    last = stmts[-1]
    if isinstance(last, ast.Return):
        return RETURN
    if isinstance(last, ast.Break):
        return BREAK
    if isinstance(last, ast.Continue):
        return CONTINUE
    if isinstance(last, ast.Raise):
        return RAISE
    if isinstance(last, ast.If):
        a, b = terminator(last.body), terminator(last.orelse)
        if a and b:
            return _join(a, b)
    return None


def _join(a: str, b: str) -> str:
    if a == RAISE:
        return b
    if b == RAISE:
        return a
    return a if a in (b, RETURN) else CONTINUE if BREAK not in (a, b) else BREAK


class Emitter(Expressions, Contexts, LoopReturns, Scopes):
    """Compiles statements of one function into ``graph`` (see the module docstring)."""

    def __init__(self, unit, source, graph, env: dict, self_ref=None, in_loop=False):
        self.unit = unit  # the compilation: caches, the stack of functions being inlined
        self.source = source
        self.graph = graph
        self.env = env
        self.self_ref = self_ref
        self.in_loop = in_loop
        self.unrolling = False  # directly in an unrolled loop's body (no prim::Loop between)
        self.current = None  # the ast node being compiled (errors, source ranges)
        self.return_type = None
        self.loop_returns = False  # the function returns from a loop (returns.py)
        self.scopes: list[dict] = []  # the names bound outside each enclosing block (scopes.py)
        self.inferred: set = set()  # ids of the unannotated tensor parameters
        self.return_sites: dict = {}  # id of a returned value -> its return statement
        self.declared: dict = {}  # name -> the type its annotated assignment gave it

    # ---- statement lists --------------------------------------------------------------------
    def body(self, stmts) -> str | None:
        for i, stmt in enumerate(stmts):
            if isinstance(stmt, ast.If):
                a, b = terminator(stmt.body), terminator(stmt.orelse)
                rest = stmts[i + 1 :]
                if rest and (a is None) != (b is None):
                    body = stmt.body if a else stmt.body + rest
                    orelse = stmt.orelse if b else stmt.orelse + rest
                    return self.if_(stmt, body, orelse)
                ended = self.if_(stmt, stmt.body, stmt.orelse)
            else:
                ended = self.statement(stmt)
            if ended:
                return ended
            rest = stmts[i + 1 :]
            if self.loop_returns and may_return(stmt) and (rest or self.in_loop):
                return self.guard_rest(stmt, lambda rest=rest: self.body(rest))
        return None

    def statement(self, stmt) -> str | None:
        self.current = stmt
        method = getattr(self, f"stmt_{type(stmt).__name__}", None)
        if method is None:
            raise self.source.unsupported(stmt)
        return method(stmt)

    # ---- simple statements ------------------------------------------------------------------
    def stmt_Pass(self, stmt):  # noqa: N802
        return None

    def stmt_Expr(self, stmt):  # noqa: N802
        value = stmt.value
        if isinstance(value, ast.Constant) and isinstance(value.value, str):
            return None  # a docstring
        self.expr(value)
        return None

    def stmt_Assign(self, stmt):  # noqa: N802
        value = self.expr(stmt.value)
        for target in stmt.targets:
            self.assign(target, value)

    def stmt_AnnAssign(self, stmt):  # noqa: N802
        if stmt.value is None:
            raise self.source.not_supported("declarations without a value aren't supported", stmt)
        wanted = self.annotation(stmt.annotation)
        if isinstance(stmt.target, ast.Name):
            self.declared[stmt.target.id] = wanted
        self.assign(stmt.target, self.expr(stmt.value, wanted), wanted)

    def stmt_AugAssign(self, stmt):  # noqa: N802
        target = stmt.target
        if isinstance(target, ast.Name):
            current = self.name(target.id, target)
        elif isinstance(target, (ast.Attribute, ast.Subscript)):
            current = self.expr(target)
        else:
            raise self.source.not_supported("augmented assignment to this target", stmt)
        other = self.expr(stmt.value)
        value = self.magic(current, INPLACE_MAGIC.get(type(stmt.op), ""), [other], stmt)
        if value is None:
            # x[idx] += v with an advanced index: the read is a copy, so add and write back
            copied = isinstance(current, Value) and current.node().kind() == "prim::index"
            value = self.binary(stmt.op, current, other, stmt, inplace=not copied)
        if not isinstance(target, ast.Name) and value.node().kind().endswith("_"):
            return None  # self.buf += v, x[i] += v: the in-place op wrote into the tensor
        self.assign(target, value)

    def assign(self, target, value, wanted=None) -> None:
        if isinstance(target, ast.Name):
            if isinstance(value, Value):
                if wanted is not None:
                    value = self.coerce(value, wanted, target)
                else:
                    value = self.rebind(target.id, value, target)
                if not value.hasDebugName():
                    value.setDebugName(target.id)
            self.env[target.id] = value
        elif isinstance(target, ast.Subscript):
            self.assign_item(target, value)
        elif isinstance(target, ast.Attribute):
            self.assign_attribute(target, value)
        elif isinstance(target, (ast.Tuple, ast.List)):
            items = self.unpack(value, len(target.elts), target)
            for elt, item in zip(target.elts, items):
                self.assign(elt, item)
        else:
            raise self.source.not_supported(
                f"assignment to {type(target).__name__.lower()} targets isn't supported", target
            )

    def assign_item(self, target, value) -> None:
        """``x[i, 1:] = v`` writes into the tensor (``copy_``/``fill_`` of the view, as PyTorch
        does); ``xs[i] = v`` / ``d[k] = v`` write into the list or dict (lists.py)."""
        base = self.expr(target.value)
        if isinstance(base, Value) and isinstance(base.type(), T.TensorType):
            return self.tensor_index_put(base, target.slice, value, target)
        if isinstance(base, Value) and isinstance(base.type(), T.ClassType):  # obj.__setitem__
            key = self.value(target.slice)
            if self.magic(base, "__setitem__", [key, value], target) is None:
                raise self.no_attribute(base.type(), "__setitem__", self.current)
            return None
        kind = base.type() if isinstance(base, Value) else None
        if not isinstance(kind, (T.ListType, T.DictType)):
            raise self.source.not_supported(
                "assignment to subscripts is supported on tensors, lists and dicts", target
            )
        return self.set_item(base, target, value)

    def stmt_Delete(self, stmt):  # noqa: N802
        """``del name`` unbinds the name (a later read is an undefined value, as TorchScript);
        ``del xs[i]`` / ``del d[k]`` remove the item from the list or dict."""
        for target in stmt.targets:
            if isinstance(target, ast.Subscript):
                self.delete_item(target)
                continue
            if not isinstance(target, ast.Name):
                raise self.source.error(
                    "del statements are only supported for deleting list and dict items and "
                    "variables",
                    target,
                )
            if target.id not in self.env:
                raise self.source.error(f"undefined value {target.id}", target)
            del self.env[target.id]

    def stmt_Return(self, stmt):  # noqa: N802
        value = (
            self.constant(None) if stmt.value is None else self.expr(stmt.value, self.return_type)
        )
        value = self.materialize(value)
        if self.return_type is not None:
            value = self.coerce(value, self.return_type, stmt)
        self.return_sites[id(value)] = stmt
        if self.loop_returns:
            self.return_in_loop(value)
        else:
            self.env["$return"] = value
        return RETURN

    def stmt_Break(self, stmt):  # noqa: N802
        self.refuse_in_unrolled(stmt)
        if not self.in_loop:
            raise self.source.error("'break' outside loop", stmt)
        self.env["$continue"] = self.constant(False)
        return BREAK

    def stmt_Continue(self, stmt):  # noqa: N802
        self.refuse_in_unrolled(stmt)
        if not self.in_loop:
            raise self.source.error("'continue' not properly in loop", stmt)
        return CONTINUE

    def refuse_in_unrolled(self, stmt) -> None:
        """An unrolled loop has no loop-continue flag to clear: TorchScript refuses there."""
        if self.unrolling:
            raise self.source.error(
                "Because we emit iteration over modulelists or tuples as unrolled loops, we do "
                "not support break or continue inside the body of these loops",
                stmt,
            )

    def stmt_Raise(self, stmt):  # noqa: N802
        message = "Exception"
        exc = stmt.exc
        if isinstance(exc, ast.Call) and isinstance(exc.func, ast.Name):
            text = ""
            if exc.args and isinstance(exc.args[0], ast.Constant):
                text = str(exc.args[0].value)
            elif exc.args:  # an f-string or another str value: the message is built when raised
                text = self.to_text(self.expr(exc.args[0]))
                prefix = self.constant(f"{exc.func.id}: ")
                text = self.prim("prim::add", [prefix, text], T.StrType)
            message = (
                text
                if isinstance(text, Value)
                else (f"{exc.func.id}: {text}" if text else exc.func.id)
            )
        elif isinstance(exc, ast.Name):
            message = exc.id
        if not isinstance(message, Value):
            message = self.constant(message)
        self.graph.insert("prim::RaiseException", [message], num_outputs=0)
        return RAISE

    def stmt_Assert(self, stmt):  # noqa: N802
        # `assert x is not None` / `assert isinstance(x, int)` narrow x after it, as in TorchScript
        cond, refine_true, _ = self.condition_with_refinement(stmt.test)
        text = "AssertionError: "
        if stmt.msg is not None:
            if not isinstance(stmt.msg, ast.Constant):
                raise self.source.not_supported("assert messages must be constant strings", stmt)
            text += str(stmt.msg.value)
        known = self.known(cond)
        if known is not True:
            node = self.graph.insert("prim::If", [cond], num_outputs=0)
            node.addBlock()
            with self.graph.insert_point_guard(node.addBlock()):
                self.graph.insert("prim::RaiseException", [self.constant(text)], num_outputs=0)
        self.env.update(refine_true)
        return None

    # ---- if ---------------------------------------------------------------------------------
    def if_(self, stmt, body, orelse) -> str | None:
        self.current = stmt
        cond, refine_true, refine_false = self.condition_with_refinement(stmt.test)
        known = self.known(cond)
        if known is not None:  # metaprogramming on constants: only the branch taken exists
            self.env.update(refine_true if known else refine_false)
            return self.body(body if known else orelse)
        node = self.graph.insert("prim::If", [cond], num_outputs=0)
        node.setSourceRange(self.where(stmt))
        before = self.env
        results = []
        for stmts, refine in ((body, refine_true), (orelse, refine_false)):
            block = node.addBlock()
            self.env = dict(before)
            self.env.update(refine)
            self.scopes.append(before)
            with self.graph.insert_point_guard(block):
                ended = self.body(stmts)
            self.scopes.pop()
            results.append((block, self.env, ended))
        self.env = before
        self.merge(node, before, results, stmt)
        ends = [r[2] for r in results]
        return _join(*ends) if all(ends) else None

    def merge(self, node, before: dict, results, stmt) -> None:
        """Names bound differently by the branches become outputs of the ``prim::If``."""
        (b0, env0, end0), (b1, env1, end1) = results
        names = [n for n in dict.fromkeys([*env0, *env1]) if env0.get(n) is not env1.get(n)]
        for name in names:
            v0 = env0.get(name) if end0 != RAISE else None
            v1 = env1.get(name) if end1 != RAISE else None
            # unmerged by an inner if: undefined on that path, as TorchScript has it
            v0, v1 = (None if isinstance(v, Unmerged) else v for v in (v0, v1))
            if (end0 == RAISE and v1 is not None) or (end1 == RAISE and v0 is not None):
                live = v0 if v1 is None else v1
                if isinstance(live, Sugar):
                    self.env[name] = live
                    continue
                v0 = v0 if v0 is not None else self.uninitialized(b0, live.type())
                v1 = v1 if v1 is not None else self.uninitialized(b1, live.type())
            if v0 is None or v1 is None:  # defined on one path only: an error where it is read
                self.env.pop(name, None)
                if not name.startswith("$") and (v0, v1) != (None, None):
                    missing = "true" if v0 is None else "false"
                    text = f"{name} is not defined in the {missing} branch"
                    self.env[name] = self.unmerged(text, stmt)
                continue
            if isinstance(v0, Sugar) or isinstance(v1, Sugar):
                if v0 == v1:
                    self.env[name] = v0
                    continue
                raise self.source.error(
                    f"{name} is bound to different compile-time values in the branches", stmt
                )
            if only_narrowed(before.get(name), (v0, v1)):
                self.env[name] = before[name]
                continue
            kind = self.unified(v0.type(), v1.type(), name)
            if kind is None and name == "$return":
                raise self.return_mismatch(v0, v1, stmt)
            if kind is None:
                self.env[name] = self.branch_mismatch(name, v0, v1, stmt)
                continue
            b0.registerOutput(v0)
            b1.registerOutput(v1)
            out = node.addOutput(kind)
            if not name.startswith("$"):
                out.setDebugName(name)
            self.env[name] = out

    def uninitialized(self, block, kind) -> Value:
        with self.graph.insert_point_guard(block):
            return self.graph.insert("prim::Uninitialized").output().setType(kind)

    def unify(self, a, b, name: str, stmt):
        kind = self.unified(a, b, name)
        if kind is not None:
            return kind
        what = "the value returned" if name == "$return" else name
        raise self.source.error(
            f"Type mismatch: {what} is set to type {a.annotation()} in the true branch and "
            f"type {b.annotation()} in the false branch",
            stmt,
        )

    def unified(self, a, b, name: str):
        """The type of a name the two paths give types ``a`` and ``b`` (None: none)."""
        if a == b or b == PENDING:
            return a
        if a == PENDING:
            return b
        declared = self.return_type if name == "$return" else None
        if declared is not None and self.fits(a, declared) and self.fits(b, declared):
            return declared  # Union/Any/Optional results: the declared type
        if isinstance(a, T.TensorType) and isinstance(b, T.TensorType):
            return T.Tensor
        if T.NumberType in (a, b) and {a, b} <= {T.NumberType, T.IntType, T.FloatType}:
            return T.NumberType  # int and float are subtypes of TorchScript's Scalar
        if a == T.NoneType or b == T.NoneType:
            other = b if a == T.NoneType else a
            return other if isinstance(other, T.OptionalType) else T.OptionalType(other)
        if (isinstance(a, T.OptionalType) and a.elem == b) or (
            isinstance(b, T.OptionalType) and b.elem == a
        ):
            return a if isinstance(a, T.OptionalType) else b
        return None

    # ---- loops ------------------------------------------------------------------------------
    def stmt_While(self, stmt):  # noqa: N802
        if stmt.orelse:
            raise self.source.not_supported("else branches of while loops aren't supported", stmt)
        cond = self.condition(stmt.test)
        if self.known(cond) is False:
            return None
        trip = self.constant(_MAX_TRIP)

        def next_cond(flag):
            test = self.condition(stmt.test)
            return test if self.known(flag) is True else self.and_values(flag, lambda: test)

        self.loop(stmt, trip, cond, lambda counter: None, stmt.body, next_cond)
        return None

    def stmt_For(self, stmt):  # noqa: N802
        if stmt.orelse:
            raise self.source.not_supported("else branches of for loops aren't supported", stmt)
        iterable = self.expr(stmt.iter)
        plan = self.iteration(iterable, stmt.iter)
        if plan.unrolled is not None:
            return self.unrolled(stmt, plan.unrolled)
        self.loop(
            stmt,
            plan.trip,
            self.constant(True),
            lambda i: self.assign(stmt.target, plan.item(i)),
            stmt.body,
            None,
        )
        return None

    def unrolled(self, stmt, items) -> None:
        for index, item in enumerate(items):
            self.assign(stmt.target, item)
            saved, self.unrolling = self.unrolling, True
            try:
                ended = self.body(stmt.body)
            finally:
                self.unrolling = saved
            if ended:
                return ended
            if self.loop_returns and may_return(stmt) and index + 1 < len(items):
                remaining = items[index + 1 :]
                return self.guard_rest(stmt, lambda rest=remaining: self.unrolled(stmt, rest))
        return None

    def loop(self, stmt, trip, cond, bind_target, stmts, next_cond) -> None:
        assigned = _assigned_names(stmt)
        carried = [n for n in assigned if isinstance(self.env.get(n), Value)]
        carried += self.carried_returns(stmt)
        node = self.graph.insert(
            "prim::Loop", [trip, cond, *(self.env[n] for n in carried)], num_outputs=0
        )
        node.setSourceRange(self.where(stmt))
        block = node.addBlock()
        counter = block.addInput("i", T.IntType)
        before = self.env
        self.env = dict(before)
        for name in carried:
            self.env[name] = block.addInput(name, before[name].type())
        saved_loop, self.in_loop = self.in_loop, True
        saved_unrolling, self.unrolling = self.unrolling, False
        self.scopes.append(before)
        with self.graph.insert_point_guard(block):
            self.env["$continue"] = self.constant(True)
            bind_target(counter)
            ended = self.body(stmts)
            flag = self.env["$continue"] if ended != RAISE else self.constant(False)
            block.registerOutput(flag if next_cond is None else next_cond(flag))
            for name in carried:
                value = self.env.get(name)
                if not isinstance(value, Value):
                    raise self.source.error(
                        f"{name} is not defined at the end of the loop body", stmt
                    )
                self.unify(before[name].type(), value.type(), name, stmt)
                block.registerOutput(value)
        self.scopes.pop()
        self.in_loop = saved_loop
        self.unrolling = saved_unrolling
        self.env = before
        for name in carried:
            self.env[name] = node.addOutput(before[name].type()).setDebugName(name)
        self.settle_return_type(block, node, carried)


def _assigned_names(stmt) -> list[str]:
    """Names a loop (its target and body) binds, in order of appearance (lists, dicts and
    tensors updated in place are not rebound)."""
    names = []
    for node in ast.walk(stmt):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.append(node.id)
    return list(dict.fromkeys(names))
