"""The guards on the modules a capture called, checked at every call of its entry.

Per module: its attribute count (a new attribute changes it), its Python scalar attributes by
value (``training``, a flag or a size a ``forward`` reads, as dynamo guards the attributes it
read), its other attributes (a tensor attribute, a function) and its submodules by identity
(``model.act = nn.GELU()``), its parameters and buffers by identity and their sizes, dtypes and
devices (a replacement of another shape, ``model.double()``: the programs allocate outputs of
the captured sizes, so they must capture again).

``ModuleProbe`` writes these checks as one generated function of straight-line comparisons, as
dynamo compiles its guards: walking a table of per-module tuples cost 130k instructions per call
of a 9-module MLP (an itemgetter or a lambda per registry, a ``map`` per tuple, 10-tuple
unpacking), a fifth of its compiled forward; the generated checks cost a sixth of that.
"""

from __future__ import annotations

from operator import attrgetter

from .python_guards import BY_VALUE as _SCALARS
from .python_guards import same

_META = attrgetter("_shape", "_dtype", "_storage.device")

# What a changed attribute can raise on the way: a key deleted (another added: same count), a
# scalar attribute now a tensor of several elements (its truth value), a tensor now None.
_CHANGED = (KeyError, RuntimeError, AttributeError)


def _base_keys() -> frozenset:
    """The registries every Module has (``_parameters``, ``_modules``, the hook dicts): never
    rebound, so not worth an identity check per call."""
    global _BASE_KEYS
    if _BASE_KEYS is None:
        from ember.nn.modules.module import Module

        _BASE_KEYS = frozenset(k for k, v in Module().__dict__.items() if type(v) not in _SCALARS)
    return _BASE_KEYS


_BASE_KEYS: frozenset | None = None


class _Writer:
    """The generated function's lines and the objects they name (its globals)."""

    def __init__(self):
        self.lines: list[str] = []
        self.names: dict = {"_CHANGED": _CHANGED}

    def name(self, value, prefix: str) -> str:
        name = f"{prefix}{len(self.names)}"
        self.names[name] = value
        return name

    def fail_if(self, condition: str) -> None:
        self.lines.append(f"        if {condition}: return False")

    def module(self, m, base: frozenset) -> None:
        d = m.__dict__
        self.lines.append(f"        d = {self.name(m, 'm')}.__dict__")
        self.fail_if(f"len(d) != {len(d)}")
        scalars = [k for k, v in d.items() if type(v) in _SCALARS]
        if scalars:  # one tuple comparison: identity first, so a NaN attribute still matches
            read = "".join(f"d[{k!r}], " for k in scalars)
            self.fail_if(f"({read}) != {self.name(tuple(d[k] for k in scalars), 'v')}")
        for k, v in d.items():
            if type(v) not in _SCALARS and k not in base:
                self.fail_if(f"d[{k!r}] is not {self.name(v, 'o')}")
        children = d.get("_modules")
        if children:  # in order: Sequential runs its children as they are listed
            ids = self.name(tuple(map(id, children.values())), "k")
            self.fail_if(f"tuple(map(id, {self.name(children, 'c')}.values())) != {ids}")
            self.name(tuple(children.values()), "h")  # held: their ids stay theirs
        for registry in (d.get("_parameters"), d.get("_buffers")):
            if registry is not None:
                self.registry(registry)

    def registry(self, registry: dict) -> None:
        self.lines.append(f"        r = {self.name(registry, 'r')}")
        self.fail_if(f"len(r) != {len(registry)}")
        for k, t in registry.items():
            if t is None:
                self.fail_if(f"r[{k!r}] is not None")
                continue
            self.lines.append(f"        t = r[{k!r}]")
            meta = self.name(_META(t), "s")
            self.fail_if(
                f"t is not {self.name(t, 't')} or (t._shape, t._dtype, t._storage.device) != {meta}"
            )

    def function(self):
        body = self.lines or ["        pass"]  # no modules: nothing to check
        source = "\n".join(["def check():", "    try:", *body, "    except _CHANGED:",
                            "        return False", "    return True"])  # fmt: skip
        exec(compile(source, "<ember.compile module guards>", "exec"), self.names)
        return self.names["check"]


class ModuleProbe:
    """The checks on ``modules`` as they are now: calling it says whether they still hold;
    ``failure()`` names the first change (the recompile reason)."""

    __slots__ = ("check", "modules", "states")

    def __init__(self, modules):
        base = _base_keys()
        writer = _Writer()
        for m in modules:
            writer.module(m, base)
        self.check = writer.function()
        self.modules = list(modules)
        self.states = [self._state(m, base) for m in modules]

    @staticmethod
    def _state(m, base: frozenset) -> tuple:
        d = m.__dict__
        scalars = {k: v for k, v in d.items() if type(v) in _SCALARS}
        held = {k: v for k, v in d.items() if type(v) not in _SCALARS and k not in base}
        held.update(d.get("_modules") or {})
        tensors = [dict(r) for r in (d.get("_parameters"), d.get("_buffers")) if r is not None]
        metas = [{k: _META(t) for k, t in r.items() if t is not None} for r in tensors]
        return len(d), scalars, held, tensors, metas

    def __call__(self) -> bool:
        return self.check()

    def failure(self) -> str:
        for m, (count, scalars, held, tensors, metas) in zip(self.modules, self.states):
            d = m.__dict__
            name = type(m).__name__
            if len(d) != count:
                return f"{name}: its attributes changed (guarded: {count} attributes)"
            for key, old in scalars.items():
                if not same(old, d.get(key)):
                    return f"{name}.{key} changed (guarded: {old!r})"
            children = d.get("_modules") or {}
            for key, old in held.items():
                if (d.get(key) if key in d else children.get(key)) is not old:
                    return f"{name}.{key} changed (guarded by identity)"
            registries = [r for r in (d.get("_parameters"), d.get("_buffers")) if r is not None]
            for registry, old, old_metas in zip(registries, tensors, metas):
                found = self._tensor_failure(name, registry, old, old_metas)
                if found:
                    return found
        return "a module attribute changed"

    @staticmethod
    def _tensor_failure(name: str, registry: dict, old: dict, metas: dict) -> str | None:
        if len(registry) != len(old):
            return f"{name}: its parameters or buffers changed (guarded: {len(old)} of them)"
        for key, tensor in old.items():
            now = registry.get(key)
            if now is not tensor:
                return f"{name}.{key} changed (guarded by identity)"
            if tensor is not None and _META(now) != metas[key]:
                shape, dtype, device = metas[key]
                return f"{name}.{key} changed (guarded: size {list(shape)}, {dtype}, {device})"
        return None
