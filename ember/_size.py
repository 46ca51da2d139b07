"""``ember.Size``: the type of ``Tensor.shape``, a tuple of ints like ``torch.Size``."""

from __future__ import annotations

import math


class Size(tuple):
    """A tensor shape. Behaves as a tuple; ``numel()`` is the product of its entries."""

    __slots__ = ()

    def numel(self) -> int:
        return math.prod(self)

    def __repr__(self) -> str:
        return f"ember.Size([{', '.join(str(s) for s in self)}])"

    def __getitem__(self, item):
        result = tuple.__getitem__(self, item)
        return Size(result) if isinstance(item, slice) else result

    def __add__(self, other):
        return Size(tuple.__add__(self, tuple(other)))
