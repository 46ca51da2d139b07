"""Python side effects of a captured call: what a replay of its graph alone would skip.

A graph holds the call's tensor ops; a replay runs no Python, so a list append, an attribute
increment (``self.count += 1``) or a global rebinding done by the user's code would happen at
the capture only. Before a capture, what the user's code can reach from outside is
snapshotted shallowly (a container's items, an object's attributes, by identity): the call's
arguments, the compiled module and its submodules of the user's classes, and for the function
and every user function it names (the methods of a user's module class, a helper), the globals
and closure variables its code names (nested functions and comprehensions included). The
snapshots are compared when the capture ends; a change sends the guard set to the segments
(``segments.py``), which run the Python at every call, as eager does. Without a change, the
same lists become the entry's guards on later calls (``python_guards.py``).

Nothing is traced while the capture runs (a trace function would double its time), so what the
user's code reaches only through other objects (an attribute of an argument's attribute, a
global read by a function it gets as a value) is not watched, nor are changes below the first
level (an item of a list held in a watched dict). Objects made during the call (a local list of
outputs) are not watched: changing them is no side effect. Neither are ember's objects (an
optimizer, a ``Linear``: their compiled forms say how they change), nor the functions of the
standard library and installed packages (their caches are theirs).
"""

from __future__ import annotations

import collections
import os
import sysconfig
import types

from ember._tensor import Tensor

_LIBRARIES = (sysconfig.get_paths()["stdlib"], "<frozen")
_OPAQUE = (type, types.ModuleType, types.FunctionType, types.BuiltinFunctionType, Tensor)


def _snapshot(obj):
    """A shallow picture of ``obj`` (identities), or None when it is not watched."""
    if isinstance(obj, dict):
        return tuple([(k, id(v)) for k, v in obj.items()])
    if isinstance(obj, (list, collections.deque)):
        return tuple(map(id, obj))
    if isinstance(obj, set):
        return frozenset(map(id, obj))
    if isinstance(obj, bytearray):
        return bytes(obj)
    if isinstance(obj, _OPAQUE) or not hasattr(obj, "__dict__"):
        return None
    if _ours(type(obj).__module__):
        return None  # ember's objects (an optimizer, a Linear) change as their compiled forms say
    return tuple([(k, id(v)) for k, v in vars(obj).items()])


def _ours(module: str) -> bool:
    """ember's modules and its backends' (``ember_backend_cpu``...)."""
    return module.startswith("ember")


def library_file(filename: str) -> bool:
    """Whether code in ``filename`` is the standard library's or an installed package's."""
    return filename.startswith(_LIBRARIES) or "-packages" + os.sep in filename


def _user_function(fn) -> bool:
    """Whether ``fn`` is the user's: not ember's or its backends', not the standard library's
    or an installed package's."""
    code = getattr(fn, "__code__", None)
    if code is None or _ours(getattr(fn, "__module__", None) or ""):
        return False
    return not library_file(code.co_filename)


def _codes(code):
    """``code`` and the code objects nested in it (inner functions, comprehensions)."""
    yield code
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            yield from _codes(const)


class Watch:
    """The snapshots taken before one capture."""

    def __init__(self):
        self.objects: dict = {}  # id -> (object, what it is to the user, snapshot)
        self.names: dict = {}  # (id(globals), name) -> (globals, the bound value)
        self.cells: list = []  # (closure cell, name, its contents)
        self.functions: set = set()  # the code objects looked at

    def value(self, obj, label: str) -> None:
        """Watch ``obj``, and what it leads to: a user function's names, a module's tree."""
        from ember.nn.modules.module import Module

        if isinstance(obj, Module):
            self.module(obj)
        elif isinstance(obj, (types.FunctionType, types.MethodType)):
            self.function(obj)
        else:
            self.watch(obj, label)

    def module(self, module) -> None:
        from .guards import hook_tables

        modules = list(module.modules())
        for sub in modules:
            if not _ours(type(sub).__module__):
                self.watch(sub, f"module {type(sub).__name__}")
                self.methods(type(sub))
        for table in hook_tables(modules):  # a Linear's hooks too: they are the user's code
            self.watch(table, "hooks")
            for hook in table.values():
                self.value(hook, "hook")

    def methods(self, cls) -> None:
        """The functions of the user's classes in ``cls``'s MRO (``forward`` and what it
        calls on ``self``)."""
        for klass in cls.__mro__:
            if klass is not object and not _ours(klass.__module__):
                for attribute in vars(klass).values():
                    if isinstance(attribute, types.FunctionType):
                        self.function(attribute)

    def function(self, fn) -> None:
        owner = getattr(fn, "__self__", None)
        if owner is not None:
            self.value(owner, f"'{type(owner).__name__}' object")
        fn = getattr(fn, "__func__", fn)
        if not _user_function(fn) or fn.__code__ in self.functions:
            return
        self.functions.add(fn.__code__)
        g = fn.__globals__
        for code in _codes(fn.__code__):
            for name in code.co_names:
                if name in g:
                    self.names.setdefault((id(g), name), (g, g[name]))
                    self.value(g[name], f"global '{name}'")
        for name, cell in zip(fn.__code__.co_freevars, fn.__closure__ or ()):
            try:
                contents = cell.cell_contents
            except ValueError:  # not bound yet
                continue
            self.cells.append((cell, name, contents))
            self.value(contents, f"closure variable '{name}'")

    def watch(self, obj, label: str) -> None:
        if id(obj) in self.objects:
            return
        picture = _snapshot(obj)
        if picture is not None:
            self.objects[id(obj)] = (obj, label, picture)

    def changes(self) -> list[str]:
        found = [
            f"{label} ({type(obj).__name__}) changed"
            for obj, label, picture in self.objects.values()
            if _snapshot(obj) != picture
        ]
        found += [
            f"global '{name}' was rebound"
            for (_, name), (g, value) in self.names.items()
            if g.get(name) is not value
        ]
        for cell, name, contents in self.cells:
            try:
                if cell.cell_contents is not contents:
                    found.append(f"closure variable '{name}' was rebound")
            except ValueError:
                found.append(f"closure variable '{name}' was deleted")
        return found


def watch(fn, args: tuple, kwargs: dict, root) -> Watch:
    """The snapshots of what a call of ``fn`` (``root``'s, for a compiled module) can change."""
    found = Watch()
    if root is not None:
        found.module(root)
    found.function(fn)
    for i, arg in enumerate((*args, *kwargs.values())):
        found.value(arg, f"argument {i}")
    return found
