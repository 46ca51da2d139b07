"""In-place list and dict updates of scripted code (TorchScript's ``aten::append``,
``aten::_set_item``, ``aten::Delete``...): lists and dicts are references, as in Python, so an
update through any name or index (``xs[0].append(v)``, ``d["k"].append(v)``, ``ys = xs;
ys.append(v)``) is seen through every other.

``INPLACE`` maps each ``prim::`` kind to (function, number of outputs); the nodes write into
their first input (``Prim.writes``), which alias analysis (``jit/passes/alias.py``) extends to
every container of the graph.
"""

from __future__ import annotations


def _method(name: str):
    def run(items, *args):
        return getattr(items, name)(*args)

    run.__name__ = f"list_{name}_"
    return run


def _set_item(container, key, value) -> None:
    container[key] = value


def _delete_item(container, key) -> None:
    del container[key]


# kind -> (function, outputs): pop gives the item, the others nothing.
INPLACE = {
    **{
        f"prim::list_{name}_": (_method(name), 0)
        for name in ("append", "insert", "extend", "reverse", "sort", "remove", "clear")
    },
    "prim::list_pop_": (_method("pop"), 1),
    "prim::list_set_": (_set_item, 0),
    "prim::list_delete_": (_delete_item, 0),
    "prim::dict_set_": (_set_item, 0),
    "prim::dict_delete_": (_delete_item, 0),
}


def runtime_name(kind: str) -> str:
    """The ``_rt.<name>`` generated code calls for ``kind``."""
    return kind[len("prim::") :]
