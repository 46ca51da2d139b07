"""PyTorch's config modules as data: ``torch._dynamo.config``, ``torch._inductor.config`` and
``torch._functorch.config`` hold hundreds of settings, most of them for PyTorch's own code
generators. Programs set a few of them before calling ``torch.compile``; ember has every name
with PyTorch's default (compiler/torch_configs/*.txt, written from PyTorch by
tests/compile/torch_config_tables.py), so those programs run unchanged. The settings ember
acts on are read where they act (frame.py, options.py); docs/compile.md ("Surface") lists them.

``install`` turns a module into one of these: an unknown name raises PyTorch's AttributeError
(a typo is not silently a new setting), ``config.triton.cudagraphs`` reads the dotted key,
aliases (``cache_size_limit``) read and write their target, deprecated names warn as PyTorch's
do, and ``patch``, ``get_config_copy``, ``save_config``, ``load_config`` work as PyTorch's.
A setting ember cannot honour and that would change results (not only speed) warns when set.
"""

from __future__ import annotations

import ast
import contextlib
import copy
import functools
import os
import pickle
import sys
import types
import warnings
from dataclasses import dataclass

_FOLDER = os.path.join(os.path.dirname(__file__), "torch_configs")
_TYPES = {t.__name__: t for t in (bool, int, float, str, list, tuple, set, dict, type(None))}


@dataclass(frozen=True)
class Key:
    """One setting of a table: its default, the type ``ember.compile(options=...)`` checks
    (None: not checked, as PyTorch does not for its generic annotations), the name it aliases,
    why it is deprecated, and whether the listings show it (not an alias: PyTorch leaves out
    aliases, including those of another module's setting, which ember keeps here)."""

    default: object = None
    type: type | None = None
    alias: str | None = None
    deprecated: str | None = None
    listed: bool = True

    @property
    def option(self) -> bool:
        """Whether PyTorch lists it (``get_config_copy``, ``options=`` names)."""
        return self.listed and self.alias is None


def _parse(line: str) -> tuple[str, Key]:
    line, _, note = line.partition("  # ")
    deprecated = note.removeprefix("deprecated: ") if note.startswith("deprecated: ") else None
    listed = not note.startswith("alias of ")
    if " -> " in line:
        name, alias = line.split(" -> ")
        return name, Key(alias=alias, deprecated=deprecated)
    name, literal = line.split(" = ", 1)
    name, _, kind = name.partition(": ")
    return name, Key(ast.literal_eval(literal), _TYPES.get(kind), None, deprecated, listed)


@functools.cache
def table(name: str) -> dict[str, Key]:
    """The settings of PyTorch's ``torch._<name>.config``, by dotted name."""
    with open(os.path.join(_FOLDER, f"{name}.txt")) as f:
        rows = [line.rstrip("\n") for line in f if line.strip() and not line.startswith("#")]
    return dict(_parse(row) for row in rows)


class _Section:
    """``config.triton``: reads and writes the keys ``triton.<name>`` of its module."""

    def __init__(self, config, prefix: str):
        object.__setattr__(self, "_config", config)
        object.__setattr__(self, "_prefix", prefix)

    def __getattr__(self, name: str):
        return getattr(self._config, self._prefix + name)

    def __setattr__(self, name: str, value) -> None:
        setattr(self._config, self._prefix + name, value)

    def __delattr__(self, name: str) -> None:
        delattr(self._config, self._prefix + name)


class ConfigModule(types.ModuleType):
    """A module of settings (see the module docstring). Plain settings live in the module's
    ``__dict__``, so reading one is an ordinary module attribute read (the compiler reads some
    at each call); aliases, deprecated and unknown names miss it and reach ``_missing``, the
    module's ``__getattr__`` (a ``__getattr__`` on the class would slow every read ninefold)."""

    _keys: dict[str, Key] = {}
    _name = ""  # the name messages give (``ember._dynamo.config``)
    _unhonoured: dict[str, str] = {}  # name -> why ember cannot honour a non-default value
    _slow: dict[str, object] = {}  # deprecated names' values

    def _missing(self, name: str):
        key = self._keys.get(name)
        if key is None or name.startswith("__"):
            raise AttributeError(f"{self._name}.{name} does not exist")
        self._warn_deprecated(name, key)
        if key.alias is not None:
            return getattr(self, key.alias)
        if name not in self._slow:  # deleted (unittest.mock.patch deletes, then sets)
            raise AttributeError(f"{self._name}.{name} does not exist")
        return self._slow[name]

    def __setattr__(self, name: str, value) -> None:
        key = self._keys.get(name)
        if key is None:
            if name.startswith("__"):  # the import system's __spec__, __file__...
                return super().__setattr__(name, value)
            raise AttributeError(f"{self._name}.{name} does not exist")
        self._warn_deprecated(name, key)
        if key.alias is not None:
            return setattr(self, key.alias, value)
        why = self._unhonoured.get(name)
        if why is not None and value != key.default:
            warnings.warn(f"{self._name}.{name}={value!r}: {why}", UserWarning, stacklevel=2)
        if key.deprecated is not None:
            self._slow[name] = value
        else:
            super().__setattr__(name, value)

    def __delattr__(self, name: str) -> None:
        key = self._keys.get(name)
        if key is None:
            raise AttributeError(f"{self._name}.{name} does not exist")
        if key.alias is not None:
            return delattr(self, key.alias)
        self._slow.pop(name, None)
        self.__dict__.pop(name, None)

    def _warn_deprecated(self, name: str, key: Key) -> None:
        if key.deprecated is not None and name not in self._warned:
            self._warned.add(name)
            message = f"{self._name}.{name} is deprecated"
            if key.deprecated:
                message += f" and {key.deprecated}"
            message += ". It will be removed in a future version of PyTorch."
            warnings.warn(message, FutureWarning, stacklevel=3)

    # ---- PyTorch's ConfigModule methods ------------------------------------------------------
    def get_type(self, name: str):
        """The type a value of ``name`` must have (``object`` where PyTorch checks none)."""
        return self._keys[name].type or object

    def get_config_copy(self) -> dict:
        """Every setting's current value, by dotted name (aliases left out, as PyTorch's)."""
        values = {**self.__dict__, **self._slow}  # deprecated names: no warning here
        names = [name for name, key in self._keys.items() if key.option and name in values]
        return copy.deepcopy({name: values[name] for name in names})

    to_dict = get_config_copy

    def save_config(self) -> bytes:
        return pickle.dumps(self.get_config_copy(), protocol=2)

    def load_config(self, saved) -> None:
        """Restore settings from ``save_config()``'s bytes or ``get_config_copy()``'s dict."""
        for name, value in (saved if isinstance(saved, dict) else pickle.loads(saved)).items():
            if name in self._keys:
                setattr(self, name, value)
            else:
                warnings.warn(
                    f"key {name} with value {value} is not understood by this config", stacklevel=2
                )

    def patch(self, arg1=None, arg2=None, **kwargs) -> _Patch:
        """Change settings for a ``with`` block or during each call of a decorated function:
        ``config.patch("name", value)``, ``config.patch(name=value)`` or
        ``config.patch({"name": value})``. Unknown names raise AttributeError on entry."""
        if arg1 is None:
            changes = kwargs
        elif arg2 is not None:
            changes = {arg1: arg2}
        else:
            changes = arg1
        if not isinstance(changes, dict) or (arg1 is not None and kwargs):
            raise AssertionError("patch takes patch(name, value), patch(dict) or patch(**kwargs)")
        return _Patch(self, changes)


class _Patch(contextlib.ContextDecorator):
    """What ``config.patch(...)`` returns: a context manager and a decorator."""

    def __init__(self, config: ConfigModule, changes: dict):
        self.config = config
        self.changes = changes
        self.priors: list[dict] = []

    def __enter__(self) -> None:
        prior = {name: getattr(self.config, name) for name in self.changes}
        for name, value in self.changes.items():
            setattr(self.config, name, value)
        self.priors.append(prior)

    def __exit__(self, *exc) -> None:
        for name, value in self.priors.pop().items():
            setattr(self.config, name, value)


def install(module_name: str, table_name: str, extra: dict | None = None,
            unhonoured: dict | None = None) -> ConfigModule:  # fmt: skip
    """Make ``sys.modules[module_name]`` a ConfigModule holding PyTorch's ``table_name``
    settings at their defaults, plus ember's own ``extra`` ones (name -> default); its
    messages name it ``ember._<table_name>.config``, PyTorch's name with ember's prefix."""
    module = sys.modules[module_name]
    keys = dict(table(table_name))
    keys.update({name: Key(value) for name, value in (extra or {}).items()})
    attrs = {
        "_keys": keys,
        "_name": f"ember._{table_name}.config",
        "_unhonoured": dict(unhonoured or {}),
        "_slow": {},
        "_warned": set(),
    }
    module.__class__ = type("ConfigModule", (ConfigModule,), attrs)
    types.ModuleType.__setattr__(module, "__getattr__", module._missing)
    for name, key in keys.items():
        if key.alias is not None:
            continue
        value = copy.deepcopy(key.default)
        if key.deprecated is not None:
            module._slow[name] = value
        else:
            types.ModuleType.__setattr__(module, name, value)
        if "." in name:
            section = name.split(".")[0]
            types.ModuleType.__setattr__(module, section, _Section(module, section + "."))
    return module
