"""Advanced tensor indexing in scripted code at run time: ``x[idx]``, ``x[mask]``,
``x[:, [0, 2]]`` (``prim::index``) and ``x[idx] = v`` (``prim::index_put_``), TorchScript's
``aten::index`` / ``aten::index_put_``.

The index is rebuilt from the node's inputs and applied with ``Tensor.__getitem__`` /
``__setitem__``, so scripted code indexes exactly as eager code does (numpy's rules, masks,
gradients). ``spec`` says how the inputs make the index, one character per item: ``v`` one
input as it is (an int, a tensor, a list), ``n`` None, ``e`` ``...``, ``s`` a slice of the
next three inputs.
"""

from __future__ import annotations


def key(spec: str, values) -> tuple:
    items, values = [], iter(values)
    for code in spec:
        if code == "v":
            items.append(next(values))
        elif code == "n":
            items.append(None)
        elif code == "e":
            items.append(Ellipsis)
        else:
            items.append(slice(next(values), next(values), next(values)))
    return tuple(items)


def index(tensor, spec: str, *values):
    return tensor[key(spec, values)]


def index_put_(tensor, value, spec: str, *values) -> None:
    tensor[key(spec, values)] = value
