"""Public sub-namespaces made of op-table rows (``ember.linalg.solve`` is the row
``linalg_solve``): one function per entry of a ``{public name: row}`` table, named and placed
in its module as PyTorch's are, so a traceback or ``help()`` shows ``ember.linalg.solve``."""

from __future__ import annotations

from ember._bind import make_callable
from ember.dispatcher.optable import OPS


def export_rows(rows: dict[str, str], module_name: str, namespace: dict) -> None:
    """Define ``namespace[name]`` as the function of op ``row`` for each entry of ``rows``."""
    for name, row in rows.items():
        fn = make_callable(OPS[row], name, method=False)
        fn.__module__ = module_name
        namespace[name] = fn
