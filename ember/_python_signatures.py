"""Functions whose public signature is PyTorch's Python wrapper's (``torch/functional.py``)
rather than its ATen schema's, which the op table keeps: ``torch.norm`` takes ``out``
positionally before ``dtype``, ``torch.split`` names its tensor ``tensor``. The op-table rows
stay as they are (their argument names are what the autograd formulas save)."""

from __future__ import annotations

from .dispatcher.optable import OPS
from .dispatcher.out import call_op


def norm(input, p="fro", dim=None, keepdim=False, out=None, dtype=None):
    """The ``p``-norm of ``input`` over ``dim`` (every element by default; ``'fro'`` and
    ``'nuc'`` for matrices), in ``dtype`` if given.

    Example:
        >>> ember.norm(ember.tensor([3.0, 4.0]))
        tensor(5.)
    """
    args = (input, p, dim, keepdim, dtype)
    if out is not None:
        return call_op(OPS["norm"], out, args, None)
    return OPS["norm"](*args)


def split(tensor, split_size_or_sections, dim=0):
    """``tensor`` cut along ``dim`` into pieces of ``split_size_or_sections`` (an int: equal
    pieces, the last smaller; a list: those sizes). The pieces are views.

    Example:
        >>> [p.tolist() for p in ember.split(ember.arange(5), 2)]
        [[0, 1], [2, 3], [4]]
    """
    return OPS["split"](tensor, split_size_or_sections, dim)


FUNCTIONS = {"norm": norm, "split": split}
METHODS: dict = {}
