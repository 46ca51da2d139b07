"""Tensor indexing: an index's items compiled once, then basic indexing as views or advanced
indexing as one node.

Ints select, slices slice, None unsqueezes and after an ``...`` the items count from the last
dim (views, as PyTorch's basic indexing). An index holding a tensor or a list (``x[idx]``,
``x[x > 0]``, ``x[:, [0, 2]]``, ``x[idx] = v``, ``x[idx] += v``) is TorchScript's
``aten::index`` / ``aten::index_put_``: the whole index becomes one ``prim::index`` /
``prim::index_put_`` node, its items as inputs and their layout as a constant ``spec``
(jit/indexing.py), applied at run time by the tensor's own ``__getitem__``/``__setitem__``,
so masks, broadcasting and where the advanced dims go follow eager indexing exactly.
"""

from __future__ import annotations

import ast

from .. import types as T


class Item:
    """One compiled index item: ``code`` is jit/indexing.py's spec letter (``v`` a value,
    ``n`` None, ``e`` ``...``, ``s`` a slice of three values, ``a`` the full slice ``:``)."""

    def __init__(self, code: str, values=()):
        self.code, self.values = code, list(values)

    def is_advanced(self) -> bool:
        return self.code == "v" and isinstance(self.values[0].type(), (T.TensorType, T.ListType))


class TensorIndexing:
    def index_items(self, index) -> list[Item]:
        items = []
        for node in index.elts if isinstance(index, ast.Tuple) else [index]:
            if isinstance(node, ast.Slice):
                parts = [node.lower, node.upper, node.step]
                if parts == [None, None, None]:
                    items.append(Item("a"))
                    continue
                values = [self.constant(None) if p is None else self.value(p) for p in parts]
                if node.step is None:
                    values[2] = self.constant(1)
                items.append(Item("s", values))
            elif isinstance(node, ast.Constant) and node.value is None:
                items.append(Item("n"))
            elif isinstance(node, ast.Constant) and node.value is Ellipsis:
                items.append(Item("e"))
            else:
                items.append(Item("v", [self.value(node)]))
        return items

    def tensor_index(self, base, index, node):
        """``base[index]``: a view for basic indices, ``prim::index`` for advanced ones."""
        items = self.index_items(index)
        if self.advanced(items, node):
            spec, values = _layout(items, self.constant(None))
            args = [base, self.constant(spec), *values]
            return self.prim("prim::index", args, T.TensorType(base.type().dtype()))
        return self.basic_index(base, items, node)

    def tensor_index_put(self, base, index, value, node) -> None:
        """``base[index] = value``: ``copy_``/``fill_`` of the view for basic indices (as
        PyTorch does), ``prim::index_put_`` for advanced ones."""
        items = self.index_items(index)
        value = self.materialize(value)
        if self.advanced(items, node):
            spec, values = _layout(items, self.constant(None))
            args = [base, value, self.constant(spec), *values]
            self.graph.insert("prim::index_put_", args, num_outputs=0)
            return
        view = self.basic_index(base, items, node)
        if isinstance(value.type(), T.TensorType):
            self.call_op("copy_", [view, value], {})
        else:
            self.call_op("fill_", [view, value], {})

    def advanced(self, items, node) -> bool:
        """Whether the index is advanced; TorchScript refuses a tensor after ``...``."""
        found = [item.is_advanced() for item in items]
        codes = [item.code for item in items]
        if "e" in codes and any(found[codes.index("e") :]):
            raise self.source.error(
                "Ellipses followed by tensor indexing is currently not supported", node
            )
        return any(found)

    def basic_index(self, base, items, node):
        ellipsis = [i for i, item in enumerate(items) if item.code == "e"]
        if len(ellipsis) > 1:
            raise self.source.error("an index can only have a single ellipsis ('...')", node)
        head = items[: ellipsis[0]] if ellipsis else items
        tail = items[ellipsis[0] + 1 :] if ellipsis else []
        result, dim = base, 0
        for item in head:
            result, kept = self.index_item(result, item, dim)
            dim += kept
        kept_right = 0
        for item in reversed(tail):
            if item.code == "n":
                raise self.source.not_supported("None after '...' in an index", node)
            result, kept = self.index_item(result, item, -1 - kept_right)
            kept_right += kept
        return result

    def index_item(self, tensor, item: Item, dim: int):
        """One basic index item at ``dim``: (the result, 1 if the dim is kept else 0)."""
        if item.code == "a":
            return tensor, 1
        if item.code == "s":
            args = [tensor, self.constant(dim), *item.values]
            return self.call_op("slice", args, {}), 1
        if item.code == "n":
            return self.call_op("unsqueeze", [tensor, self.constant(dim)], {}), 1
        args = [tensor, self.constant(dim), item.values[0]]
        return self.call_op("select", args, {}), 0


def _layout(items, none) -> tuple[str, list]:
    """The spec string and the inputs of a ``prim::index`` node; a full slice ``:`` is a
    slice of three Nones."""
    spec, values = "", []
    for item in items:
        if item.code == "a":
            spec += "s"
            values += [none, none, none]
        else:
            spec += item.code
            values += item.values
    return spec, values
