"""The handle every hook registration returns (``torch.utils.hooks.RemovableHandle``).

Kept free of ember imports so that autograd and nn, which load early, can subclass it: their
handles remove from their own tables, and ``isinstance(h, RemovableHandle)`` holds for all."""

from __future__ import annotations

import itertools
import weakref
from collections import OrderedDict

_ids = itertools.count()


class RemovableHandle:
    """Removes the hook stored under ``self.id`` in ``hooks_dict`` (and in ``extra_dict``, a
    dict or a list of them) when ``remove()`` runs or its ``with`` block ends. The dicts are
    held weakly, as PyTorch's, so a handle does not keep a dead module's hooks alive."""

    def __init__(self, hooks_dict, *, extra_dict=None) -> None:
        self.hooks_dict_ref = weakref.ref(hooks_dict)
        self.id = next(_ids)
        extras = [extra_dict] if isinstance(extra_dict, dict) else extra_dict or []
        self.extra_dict_ref = tuple(weakref.ref(d) for d in extras)

    def remove(self) -> None:
        for ref in (self.hooks_dict_ref, *self.extra_dict_ref):
            table = ref()
            if table is not None:
                table.pop(self.id, None)

    def __getstate__(self):
        return (self.hooks_dict_ref(), self.id, tuple(ref() for ref in self.extra_dict_ref))

    def __setstate__(self, state) -> None:
        hooks, self.id, extras = state
        # a dict that was gone when pickled comes back as a dead reference
        self.hooks_dict_ref = weakref.ref(OrderedDict() if hooks is None else hooks)
        self.extra_dict_ref = tuple(weakref.ref(d) for d in extras if d is not None)

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.remove()
