"""``with_stack=True``: the Python calls a profile sees, as PyTorch's Python tracer records them.

A ``sys.setprofile`` hook (installed only while a ``with_stack`` profile records, on the thread
that started it) turns each call of a Python function, and each call of a builtin, made outside
ember's own modules into an event of the Recorder, category ``python_function``: the calls nest
with the ops (an op's Python callers enclose it in the trace, as in Perfetto's view of PyTorch's
traces), and they get rows of their own in ``key_averages`` with self times, as PyTorch's do.
Names are PyTorch's: ``path/file.py(first line): function`` with the ``sys.path`` prefix cut,
``<built-in function len>`` for builtins. Frames already open when recording starts (the
``with`` block's own) start then, at their current line, and all open calls end when it stops.
"""

from __future__ import annotations

import functools
import os
import site
import sys
import sysconfig
import weakref


@functools.cache
def _prefixes() -> tuple[str, ...]:
    """PyTorch's ``_prefix_regex``: the site and sys.path folders, longest first."""
    raw = site.getsitepackages() + sys.path + [site.getuserbase(), site.getusersitepackages()]
    raw.append(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    return tuple(p + os.sep for p in sorted({os.path.abspath(p) for p in raw}, reverse=True))


def short_path(path: str) -> str:
    """A source file as PyTorch's profiler names it: without its ``sys.path`` folder."""
    for prefix in _prefixes():
        if path.startswith(prefix):
            return path[len(prefix) :]
    return path


def _ours(frame) -> bool:
    """ember's own frames (its modules and the op functions generated into them) are the
    profiler's business, not the user's call stack."""
    module = frame.f_globals.get("__name__", "")
    return module == "ember" or module.startswith("ember.")


# A storage freed by the user's ``del`` reports through a weakref finalizer: ember's, not a call.
_FINALIZER = weakref.finalize.__call__.__code__


def _library_folders() -> tuple[str, ...]:
    """Where installed code lives (the standard library, site-packages, ember's backends):
    code there that ember calls is part of the op, code the user wrote is the user's."""
    paths = {sysconfig.get_path(name) for name in ("stdlib", "platstdlib", "purelib", "platlib")}
    paths.update(site.getsitepackages())
    paths.update(_plugin_folders())
    return tuple(os.path.abspath(p) + os.sep for p in paths if p)


def _plugin_folders() -> set:
    """The package folders of ember's installed plugins, wherever they live: an editable
    install (``pip install -e ./backend_cpu``) keeps a backend's kernels outside site-packages,
    and they are still the op's code, not the user's."""
    from importlib import metadata, util

    from .dispatcher.plugins import BACKENDS_GROUP, OPS_GROUP

    found = set()
    for group in (BACKENDS_GROUP, OPS_GROUP):
        for entry in metadata.entry_points(group=group):
            top = entry.module.partition(".")[0]
            try:
                spec = util.find_spec(top)
            except (ImportError, ValueError):
                continue
            for folder in (spec.submodule_search_locations or ()) if spec else ():
                found.add(folder)
    return found


class PythonTracer:
    """Feeds a Recorder the Python calls of the thread it was started on.

    A call inside an op (anything ember calls: kernels, the standard library) belongs to the op
    and is hidden, as PyTorch's C++ ops hide theirs; user code an op calls back (a module's
    ``forward``, a hook) is recorded again."""

    def __init__(self, recorder):
        self.recorder = recorder
        self.library = _library_folders()
        self.names: dict = {}  # code object -> event name
        self.user: dict = {}  # code object -> whether it is the user's (not installed) code
        # per open call: [is a builtin call, frame, name (None: hidden), start]
        self.open: list = []
        self.previous = None

    def _name(self, code, line: int | None = None) -> str:
        name = self.names.get(code) if line is None else None
        if name is None:
            name = f"{short_path(code.co_filename)}({line or code.co_firstlineno}): {code.co_name}"
            if line is None:
                self.names[code] = name
        return name

    def _is_user(self, code) -> bool:
        user = self.user.get(code)
        if user is None:
            path = os.path.abspath(code.co_filename)
            user = self.user[code] = not path.startswith(self.library)
        return user

    def _hidden(self, frame, builtin: bool) -> bool:
        if builtin:
            return _ours(frame) or bool(self.open and self.open[-1][2] is None)
        if _ours(frame) or frame.f_code is _FINALIZER:
            return True
        inside = bool(self.open and self.open[-1][2] is None)
        return inside and not self._is_user(frame.f_code)

    def _push(self, builtin: bool, frame, name) -> None:
        if self._hidden(frame, builtin):
            self.open.append([builtin, frame, None, None])
        else:
            self.open.append([builtin, frame, name(), self.recorder.enter_python()])

    def stack(self) -> tuple:
        """The recorded calls open now, innermost first: an op's call stack."""
        return tuple(entry[2] for entry in reversed(self.open) if entry[2] is not None)

    def _pop(self) -> None:
        _, _, name, start = self.open.pop()
        if name is not None:
            self.recorder.leave(name, start, (), None, "python_function")

    def start(self) -> None:
        """Open the frames already on the stack (outermost first), then hook new calls."""
        frames, frame = [], sys._getframe(0)
        while frame is not None:
            frames.append(frame)
            frame = frame.f_back
        for frame in reversed(frames):
            self._push(False, frame, lambda f=frame: self._name(f.f_code, f.f_lineno))
        self.previous = sys.getprofile()
        sys.setprofile(self._hook)

    def stop(self) -> None:
        """Unhook (giving back any profile function there was), and end every call still
        open, innermost first."""
        sys.setprofile(self.previous)
        while self.open:
            self._pop()

    def _hook(self, frame, event: str, arg) -> None:
        if event == "call":
            self._push(False, frame, lambda: self._name(frame.f_code))
        elif event == "c_call":
            self._push(True, frame, lambda: repr(arg))
        elif event == "return":
            # Close the frame's call (and anything left open inside it); a frame that returns
            # without having been seen (one below where recording started) closes nothing.
            for i in range(len(self.open) - 1, -1, -1):
                entry = self.open[i]
                if entry[1] is frame and not entry[0]:
                    while len(self.open) > i:
                        self._pop()
                    break
        elif self.open and self.open[-1][0] and self.open[-1][1] is frame:  # c_return, c_exception
            self._pop()

    def name_call(self, frame, name: str) -> bool:
        """Record the open call of ``frame`` (hidden so far: ember's own) as ``name``, from now
        until it returns: how a module call becomes its ``nn.Module`` scope."""
        for entry in reversed(self.open):
            if entry[1] is frame and not entry[0]:
                entry[2], entry[3] = name, self.recorder.enter_python()
                return True
        return False
