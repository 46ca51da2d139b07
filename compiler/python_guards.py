"""Guards on the Python a capture read beyond its arguments: globals, closure variables, the
user's objects they lead to.

A replay runs none of the user's Python, so a graph keeps what its capture saw: a float global
baked in as a constant, the tensor a global named, the branch a flag chose, the function a
global held. Before each capture ``effects.watch`` lists what the user's code can reach (the
globals and closure cells its functions name, the user's objects those lead to); after a capture
without side effects these guards keep that list and check at every call that each name and
cell still holds the object the capture saw, as dynamo's guards on ``G['scale']`` do. A
rebinding to an equal ``int``, ``float``, ``bool``, ``str`` or ``None`` still matches (dynamo
guards those by value); anything else is compared by identity. A failure recompiles.

A user object reached that way (a config object a ``forward`` reads ``cfg.dropout`` from) is
guarded on its attributes, and a list or dict on its items (``SCALES[0] = 5.0``), by the same
rule, when it holds at most ``MAX_ATTRIBUTES`` of them; larger ones, tuples and sets by their
binding only (dynamo guards the items it read). The modules' own attributes are
``module_probe.ModuleProbe``'s.
"""

from __future__ import annotations

import dis
from operator import attrgetter, itemgetter

from ember.nn.modules.module import Module

from .effects import _codes as effects_codes

MAX_ATTRIBUTES = 32
BY_VALUE = frozenset({int, float, bool, str, complex, type(None)})
_CONTENTS = attrgetter("cell_contents")


def same(old, new) -> bool:
    """Whether ``new`` still satisfies a guard on ``old``: the same object, or an equal value
    of the same scalar type."""
    return old is new or (type(old) is type(new) and type(old) in BY_VALUE and old == new)


def item_tuple(keys: tuple):
    """An ``itemgetter`` that returns a tuple for any number of keys."""
    if len(keys) > 1:
        return itemgetter(*keys)
    return itemgetter(keys[0], keys[0]) if keys else (lambda mapping: ())


def _text(label: str, value) -> str:
    if type(value) in BY_VALUE:
        return f"{label} == {value!r}"
    return f"___check_obj_id({label}, {id(value)})"


class NameGroup:
    """Names in one mapping (a module's globals, an object's ``__dict__``), checked together:
    the objects the capture saw are held, so their ids stay theirs."""

    __slots__ = ("getter", "ids", "keys", "labels", "mapping", "size", "values")

    def __init__(self, mapping: dict, keys: tuple, labels: tuple, size: int | None):
        self.mapping = mapping
        self.keys = keys
        self.labels = labels
        self.size = size  # the mapping's length, where a new key matters (an object's attributes)
        self.getter = item_tuple(keys)
        self.values = self.getter(mapping)
        self.ids = tuple(map(id, self.values))

    def failure(self) -> str | None:
        if self.size is not None and len(self.mapping) != self.size:
            return f"len({self.labels[0].rsplit('.', 1)[0]}.__dict__) == {self.size}"
        for key, label, value in zip(self.keys, self.labels, self.values):
            try:
                now = self.mapping[key]
            except (KeyError, IndexError):
                now = _EMPTY
            if not same(value, now):
                return _text(label, value)
        return None


class PythonGuards:
    """The checks of one cache entry; calling it says whether they all hold."""

    __slots__ = ("cell_ids", "cell_names", "cell_values", "cells", "checks", "groups")

    def __init__(self, groups: list, cells: list):
        self.groups = groups
        # the groups' fields flattened: the per-call loop makes no method calls
        self.checks = tuple((g.mapping, g.size, g.getter, g.ids, g.values) for g in groups)
        self.cells = tuple(cell for cell, _, _ in cells)
        self.cell_names = tuple(name for _, name, _ in cells)
        self.cell_values = tuple(value for _, _, value in cells)
        self.cell_ids = tuple(map(id, self.cell_values))

    def __call__(self) -> bool:
        try:
            for mapping, size, getter, ids, values in self.checks:
                if size is not None and len(mapping) != size:
                    return False
                current = getter(mapping)
                if tuple(map(id, current)) != ids and not all(map(same, values, current)):
                    return False
        except (KeyError, IndexError):  # a name deleted, a list shortened
            return False
        if self.cells:
            try:
                current = tuple(map(_CONTENTS, self.cells))
            except ValueError:  # a cell was emptied (``del`` of the variable)
                return False
            if tuple(map(id, current)) != self.cell_ids:
                return all(map(same, self.cell_values, current))
        return True

    def failure(self) -> str | None:
        """The first guard that fails, in dynamo's wording (None when all hold)."""
        for group in self.groups:
            found = group.failure()
            if found is not None:
                return found
        for cell, name, value in zip(self.cells, self.cell_names, self.cell_values):
            try:
                now = cell.cell_contents
            except ValueError:
                now = _EMPTY
            if not same(value, now):
                return _text(f"closure variable {name!r}", value)
        return None

    def describe(self) -> list[str]:
        """Each guard as a line of ``EMBER_LOGS=guards``."""
        lines = []
        for group in self.groups:
            for label, value in zip(group.labels, group.values):
                kind = "CONSTANT_MATCH" if type(value) in BY_VALUE else "ID_MATCH"
                lines.append(f"{kind}: {_text(label, value)}")
        for name, value in zip(self.cell_names, self.cell_values):
            kind = "CONSTANT_MATCH" if type(value) in BY_VALUE else "ID_MATCH"
            lines.append(f"{kind}: {_text(f'closure variable {name!r}', value)}")
        return lines


_EMPTY = object()


_LOADS = frozenset({"LOAD_GLOBAL", "LOAD_NAME"})
_LOADED: dict = {}  # code object -> the global names its bytecode loads (nested code included)


def _loaded_globals(codes) -> set:
    """The names the functions' code loads as globals. ``co_names`` (what the side-effect
    watch looks at) also holds attribute names: ``self.out`` would guard a global ``out``,
    which a script's loop at module level rebinds at every step."""
    found: set = set()
    for code in codes:
        names = _LOADED.get(code)
        if names is None:
            names = _LOADED[code] = frozenset(
                ins.argval
                for inner in effects_codes(code)
                for ins in dis.get_instructions(inner)
                if ins.opname in _LOADS
            )
        found |= names
    return found


def from_watch(watch) -> PythonGuards | None:
    """The guards on what ``watch`` (effects.Watch, unchanged by its capture) saw; None when
    it saw nothing to guard."""
    loaded = _loaded_globals(watch.functions)
    by_globals: dict = {}
    for (_, name), (g, _value) in watch.names.items():
        if name in loaded:
            by_globals.setdefault(id(g), (g, []))[1].append(name)
    groups = [
        NameGroup(g, tuple(names), tuple(f"G[{name!r}]" for name in names), None)
        for g, names in by_globals.values()
    ]
    for obj, label, _picture in watch.objects.values():
        if label.startswith("global '"):  # dynamo's spelling: G['name']
            if label[8:-1] not in loaded:
                continue  # reached through an attribute name, not a global load
            label = f"G[{label[7:]!s}]"
        if type(obj) in (list, dict):  # a global list of sizes, a dict of options
            if label.startswith("argument") or not 0 < len(obj) <= MAX_ATTRIBUTES:
                continue  # an argument's items are in the call's guard key
            keys = tuple(obj) if type(obj) is dict else tuple(range(len(obj)))
            labels = tuple(f"{label}[{key!r}]" for key in keys)
            groups.append(NameGroup(obj, keys, labels, len(obj)))
            continue
        attributes = getattr(obj, "__dict__", None)
        if isinstance(obj, Module) or not isinstance(attributes, dict):
            continue  # a module: module_probe.ModuleProbe
        if 0 < len(attributes) <= MAX_ATTRIBUTES:
            keys = tuple(attributes)
            labels = tuple(f"{label}.{key}" for key in keys)
            groups.append(NameGroup(attributes, keys, labels, len(attributes)))
    if not groups and not watch.cells:
        return None
    return PythonGuards(groups, watch.cells)
