"""The ``*_copy`` forms of PyTorch's views (expand_copy, permute_copy, view_copy...): the view,
then a fresh tensor of its values. One row each, derived from the view's own row (schema,
reference, samples), so the two never drift apart."""

from __future__ import annotations

import dataclasses

import numpy as np

import ember

from ..opdef import OUT_EXACT, Kind, OpDef, Out
from . import view as _view

# Views whose copies PyTorch has (as_strided_copy waits for a numpy reference of as_strided).
COPIED_VIEWS = (
    "expand",
    "permute",
    "t",
    "transpose",
    "diagonal",
    "narrow",
    "squeeze",
    "unsqueeze",
    "view",
    "unbind",
    "unfold",
)


def _fresh(result):
    """A contiguous tensor of ``result``'s values that shares no memory with it."""
    if isinstance(result, (tuple, list)):
        return tuple(_fresh(t) for t in result)
    packed = result.contiguous()
    return packed.clone() if packed is result else packed


def _copy_of(name: str):
    def copy(*args):
        return _fresh(getattr(ember.ops, name)(*args))

    copy.__name__ = f"{name}_copy"
    return copy


def _np_copy_of(reference):
    def copy(*args):
        result = reference(*args)
        if isinstance(result, (tuple, list)):
            return tuple(np.array(r) for r in result)
        return np.array(result)

    return copy


def _pieces_of(name: str):
    """The reads of a list copy's out=: PyTorch copies each piece of the view into its out
    (``out[i].copy_(piece[i])``), so out[i] may be that piece exactly, not overlap it partly."""

    def reads(*args):
        return tuple((piece,) for piece in getattr(ember.ops, name)(*args))

    return reads


def _out_rule(name: str, view_row: OpDef) -> Out:
    """A copy writes out= from a fresh tensor (no overlap check), a list copy piece by piece."""
    if view_row.schema.rsplit("->", 1)[1].strip() == "Tensor[]":
        return Out("exact", "partial", reads=_pieces_of(name))
    return OUT_EXACT


def _copy_row(view_row: OpDef) -> OpDef:
    name = view_row.schema.split("(", 1)[0]
    return dataclasses.replace(
        view_row,
        schema=f"{name}_copy(" + view_row.schema.split("(", 1)[1],
        kind=Kind.COPY,
        reference=_np_copy_of(view_row.reference),
        decomposition=_copy_of(name),
        runner=None,
        kernel_args="",
        samples="copy_of_view",
        method=name == "narrow",  # the one PyTorch also binds as a Tensor method
        function=True,
        varargs=None,
        out=_out_rule(name, view_row),
        notes=f"{name}, then a contiguous copy of its values",
    )


_BY_NAME = {row.schema.split("(", 1)[0]: row for row in _view.ROWS}

ROWS = [
    *(_copy_row(_BY_NAME[name]) for name in COPIED_VIEWS),
    OpDef(
        "alias_copy(Tensor input) -> Tensor",
        Kind.COPY,
        np.array,
        decomposition=lambda x: _fresh(x),
        method=False,
        samples="unary",
        out=OUT_EXACT,
    ),
]
