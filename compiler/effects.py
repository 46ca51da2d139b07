"""Python side effects of a captured call: what a replay of its graph alone would skip.

A graph holds the call's tensor ops; a replay runs no Python, so a list append, an attribute
increment (``self.count += 1``) or a global rebinding done by the user's code would happen at
the capture only. While a capture runs, the user's frames (not ember's) are watched as they
start: the mutable objects they can reach from outside (their arguments, ``self``, the globals
and closure variables they name) are snapshotted shallowly (a container's items, an object's
attributes, by identity), and compared when the call ends. A change sends the guard set to
the segments (``segments.py``), which run the Python at every call, as eager does.

Objects made during the call (a local list of outputs) are not watched: changing them is no
side effect. Neither are the frames of ember, its backends, the standard library and installed
packages (their caches are theirs). Deeper changes (an item of a list inside a watched dict)
are not seen.
"""

from __future__ import annotations

import collections
import contextlib
import os
import sys
import sysconfig
import types

from ember._tensor import Tensor

_CONSTRUCTORS = frozenset({"__init__", "__new__", "__post_init__"})
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


class Watch:
    """The snapshots of one capture."""

    def __init__(self):
        self.objects: dict = {}  # id -> (object, what it is to the user, snapshot)
        self.names: dict = {}  # (id(globals), name) -> (globals, id of the bound value)

    def profile(self, frame, event, arg):
        if event != "call":
            return
        code = frame.f_code
        if _ours(frame.f_globals.get("__name__") or "") or code.co_name in _CONSTRUCTORS:
            return  # ember's own frames; an object being built is new
        if code.co_filename.startswith(_LIBRARIES) or "-packages" + os.sep in code.co_filename:
            return  # the standard library and installed packages keep caches of their own
        local = frame.f_locals
        count = code.co_argcount + code.co_kwonlyargcount
        for name in code.co_varnames[:count] + code.co_freevars:
            if name in local:
                self.watch(local[name], f"'{name}' of {code.co_name}")
        g = frame.f_globals
        for name in code.co_names:
            if name in g:
                self.names.setdefault((id(g), name), (g, id(g[name])))
                self.watch(g[name], f"global '{name}'")

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
            for (_, name), (g, ident) in self.names.items()
            if id(g.get(name)) != ident
        ]
        return found


@contextlib.contextmanager
def watching():
    """Watch the user's frames while the block runs; yields the ``Watch`` (None when another
    profiler is installed: it is left alone, and nothing is watched)."""
    if sys.getprofile() is not None:
        yield None
        return
    watch = Watch()
    sys.setprofile(watch.profile)
    try:
        yield watch
    finally:
        sys.setprofile(None)
