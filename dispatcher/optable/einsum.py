"""einsum as PyTorch computes it (``at::native::einsum`` and ``sumproduct_pair`` in ATen's
Linear.cpp), so that its values, errors and backward graph are PyTorch's: each operand's
repeated labels taken as diagonals, missing labels unsqueezed, one permute per operand into the
order "output labels, then contracted labels"; then left to right, each pair summed over the
dims only it still has and multiplied as permute/reshape/bmm/view/permute (a mul when no dim is
summed); finally the contracted dims (size 1 by then) dropped with a view, or summed for one
operand. PyTorch takes an opt_einsum path for three operands or more when that package is
installed; ember contracts left to right, as PyTorch does without it."""

from __future__ import annotations

import ember

_LETTERS = 26
_ELLIPSIS = 2 * _LETTERS  # the code of "..." among the label codes [0, 52)


def _code(label: str) -> int:
    return ord(label) - ord("A") if label.isupper() else ord(label) - ord("a") + _LETTERS


def _label(code: int) -> str:
    return chr(code + ord("A")) if code < _LETTERS else chr(code - _LETTERS + ord("a"))


def _is_label(c: str) -> bool:
    return c.isascii() and c.isalpha()


def _ellipsis_at(text: str, i: int) -> bool:
    return i + 2 < len(text) and text[i + 1] == "." and text[i + 2] == "."


def _parse_operands(lhs: str, count: int) -> list:
    """Each operand's label codes (``_ELLIPSIS`` for "..."), PyTorch's checks and messages."""
    labels: list = [[]]
    ellipsis = False
    i = 0
    while i < len(lhs):
        c = lhs[i]
        current = len(labels) - 1
        if c == ".":
            if ellipsis:
                raise RuntimeError(
                    f"einsum(): found '.' for operand {current} for which an ellipsis was "
                    "already found"
                )
            if not _ellipsis_at(lhs, i):
                raise RuntimeError(
                    f"einsum(): found '.' for operand {current} that is not part of any ellipsis"
                )
            labels[-1].append(_ELLIPSIS)
            ellipsis = True
            i += 2
        elif c == ",":
            if len(labels) == count:
                raise RuntimeError(
                    "einsum(): fewer operands were provided than specified in the equation"
                )
            labels.append([])
            ellipsis = False
        elif c != " ":
            if not _is_label(c):
                raise RuntimeError(
                    f"einsum(): invalid subscript given at index {i} in the equation string, "
                    "subscripts must be in [a-zA-Z]"
                )
            labels[-1].append(_code(c))
        i += 1
    if len(labels) != count:
        raise RuntimeError("einsum(): more operands were provided than specified in the equation")
    return labels


def _count_labels(labels: list, operands: list) -> tuple:
    """(how many operands use each label, the most dims any ellipsis covers)."""
    counts = [0] * (2 * _LETTERS)
    ellipsis_dims = 0
    for i, (own, t) in enumerate(zip(labels, operands)):
        named = len(own) - own.count(_ELLIPSIS)
        for code in own:
            if code != _ELLIPSIS:
                counts[code] += 1
        has_ellipsis = _ELLIPSIS in own
        if has_ellipsis:
            ellipsis_dims = max(ellipsis_dims, t.ndim - named)
        if named > t.ndim if has_ellipsis else named != t.ndim:
            raise RuntimeError(
                f"einsum(): the number of subscripts in the equation ({named}) "
                + (
                    f"is more than the number of dimensions ({t.ndim}) for operand {i}"
                    if has_ellipsis
                    else f"does not match the number of dimensions ({t.ndim}) for operand {i} "
                    "and no ellipsis was given"
                )
            )
    return counts, ellipsis_dims


class _Layout:
    """Where each label and the ellipsis dims go in the aligned operands: the output's dims
    first (``out_dims`` of them), then the contracted ones (``dims`` in all)."""

    def __init__(self, equation: str, counts: list, ellipsis_dims: int):
        self.index = [-1] * (2 * _LETTERS)
        self.ellipsis = 0
        position = 0
        arrow = equation.find("->")
        ellipsis_out = arrow < 0
        if arrow < 0:  # implicit output: the ellipsis, then the labels used once, in code order
            position = ellipsis_dims
            for code, n in enumerate(counts):
                if n == 1:
                    self.index[code] = position
                    position += 1
        else:
            rhs, start = equation[arrow + 2 :], arrow + 2
            i = 0
            while i < len(rhs):
                c = rhs[i]
                if c == ".":
                    if ellipsis_out:
                        raise RuntimeError(
                            "einsum(): found '.' for output but an ellipsis (...) was already found"
                        )
                    if not _ellipsis_at(rhs, i):
                        raise RuntimeError(
                            "einsum(): found '.' for output that is not part of any ellipsis (...)"
                        )
                    self.ellipsis, position, ellipsis_out = position, position + ellipsis_dims, True
                    i += 2
                elif c != " ":
                    position = self._output_label(c, start + i, counts, position)
                i += 1
        self.out_dims = position
        if not ellipsis_out:  # an ellipsis missing from the output is summed
            self.ellipsis, position = position, position + ellipsis_dims
        for code, n in enumerate(counts):
            if n > 0 and self.index[code] == -1:
                self.index[code] = position
                position += 1
        self.dims = position

    def _output_label(self, c: str, at: int, counts: list, position: int) -> int:
        if not _is_label(c):
            raise RuntimeError(
                f"einsum(): invalid subscript given at index {at} in the equation string, "
                "subscripts must be in [a-zA-Z]"
            )
        code = _code(c)
        if counts[code] == 0 or self.index[code] != -1:
            problem = (
                "appears more than once in the output"
                if self.index[code] > -1
                else "does not appear in the equation for any input operand"
            )
            raise RuntimeError(f"einsum(): output subscript {c} {problem}")
        self.index[code] = position
        return position + 1


class _Sizes:
    """The size each label and ellipsis dim broadcasts to, and per aligned dim how many operands
    have it larger than 1 (a dim can be summed once one operand is left with it)."""

    def __init__(self, layout: _Layout, ellipsis_dims: int):
        self.label = [1] * (2 * _LETTERS)
        self.ellipsis = [1] * ellipsis_dims
        self.counts = [0] * layout.dims

    def see(self, sizes: list, key: int, size: int, position: int, message) -> None:
        """Operand dim of ``size`` under label (or ellipsis dim) ``key``, aligned at
        ``position``: it must broadcast with the sizes seen before (``message(seen)`` if not)."""
        if size == 1:
            return
        if sizes[key] not in (1, size):
            raise RuntimeError(message(sizes[key]))
        sizes[key] = size
        self.counts[position] += 1


def _align(i: int, t, own: list, layout: _Layout, sizes: _Sizes):
    """Operand ``i`` with its diagonals taken, missing labels unsqueezed and permuted to the
    layout's order (PyTorch permutes even when the order is already right: its graph shows it)."""
    permutation = [-1] * layout.dims
    dim = 0
    for code in own:
        if code == _ELLIPSIS:
            first = len(sizes.ellipsis) - (t.ndim - (len(own) - 1))
            for j in range(first, len(sizes.ellipsis)):
                size = t.shape[dim]
                sizes.see(
                    sizes.ellipsis,
                    j,
                    size,
                    layout.ellipsis + j,
                    lambda seen, dim=dim, size=size: (
                        f"einsum(): dimension {dim} covered by ellipsis in operand {i}has size "
                        f"{size} which does not broadcast with previously seen ellipsis with "
                        f"size {seen} for the respective dimension"
                    ),
                )
                permutation[layout.ellipsis + j] = dim
                dim += 1
        elif permutation[layout.index[code]] == -1:
            size = t.shape[dim]
            sizes.see(
                sizes.label,
                code,
                size,
                layout.index[code],
                lambda seen, size=size, code=code: (
                    f"einsum(): subscript {_label(code)} has size {size} for operand {i} which "
                    f"does not broadcast with previously seen size {seen}"
                ),
            )
            permutation[layout.index[code]] = dim
            dim += 1
        else:  # a repeated label: its diagonal, where the label first was
            before = permutation[layout.index[code]]
            if t.shape[dim] != t.shape[before]:
                raise RuntimeError(
                    f"einsum(): subscript {_label(code)} is repeated for operand {i} but the "
                    f"sizes don't match, {t.shape[dim]} != {t.shape[before]}"
                )
            t = t.diagonal(0, before, dim).movedim(-1, before)
    for k, value in enumerate(permutation):
        if value == -1:
            t = t.unsqueeze(dim)
            permutation[k] = dim
            dim += 1
    return t.permute(permutation)


def _contract(a, b, layout: _Layout, counts: list):
    """a and b multiplied, the dims no other operand has summed: first those only one of them
    has (a sum each), then the shared ones (in the product)."""
    sum_dims, a_dims, b_dims = [], [], []
    for dim in range(layout.out_dims, layout.dims):
        if a.shape[dim] != 1 and b.shape[dim] != 1:
            counts[dim] -= 1
            if counts[dim] == 1:
                sum_dims.append(dim)
                counts[dim] = 0
        elif counts[dim] == 1:
            if a.shape[dim] != 1:
                a_dims.append(dim)
                counts[dim] = 0
            elif b.shape[dim] != 1:
                b_dims.append(dim)
                counts[dim] = 0
    if a_dims:
        a = a.sum(a_dims, True)
    if b_dims:
        b = b.sum(b_dims, True)
    return _sumproduct_pair(a, b, sum_dims)


def _sumproduct_pair(left, right, sum_dims: list):
    """``(left * right).sum(sum_dims, keepdim=True)`` as one bmm over permuted, folded operands
    (the two have the same rank, broadcast dims of size 1)."""
    if not sum_dims:
        return left * right
    summed = set(sum_dims)
    lro, lo, ro = [], [], []
    sum_size = 1
    for i in range(left.ndim):
        in_left, in_right = left.shape[i] != 1, right.shape[i] != 1
        if i in summed:
            if in_left and in_right:
                if left.shape[i] != right.shape[i]:
                    raise RuntimeError("non-broadcast dimensions must match")
                sum_size *= left.shape[i]
            elif in_left:
                left = left.sum(i, True)
            elif in_right:
                right = right.sum(i, True)
        elif in_left and in_right:
            if left.shape[i] != right.shape[i]:
                raise RuntimeError("non-broadcast dimensions must match")
            lro.append(i)
        elif in_left:
            lo.append(i)
        else:
            ro.append(i)
    lro_size = _product(left.shape[d] for d in lro)
    lo_size = _product(left.shape[d] for d in lo)
    ro_size = _product(right.shape[d] for d in ro)
    out_size = [left.shape[d] for d in lro + lo] + [1] * len(sum_dims)
    out_size += [right.shape[d] for d in ro]
    order = lro + lo + sum_dims + ro
    operm = [0] * len(order)
    for position, d in enumerate(order):
        operm[d] = position
    left = left.permute(order).reshape(lro_size, lo_size, sum_size)
    right = right.permute(lro + sum_dims + ro + lo).reshape(lro_size, sum_size, ro_size)
    return ember.bmm(left, right).view(out_size).permute(operm)


def _product(sizes) -> int:
    result = 1
    for n in sizes:
        result *= n
    return result


def einsum(equation: str, tensors):
    operands = list(tensors)
    if not operands:
        raise RuntimeError("einsum(): must provide at least one operand")
    arrow = equation.find("->")
    labels = _parse_operands(equation if arrow < 0 else equation[:arrow], len(operands))
    counts, ellipsis_dims = _count_labels(labels, operands)
    layout = _Layout(equation, counts, ellipsis_dims)
    sizes = _Sizes(layout, ellipsis_dims)
    ops = [_align(i, t, own, layout, sizes) for i, (t, own) in enumerate(zip(operands, labels))]
    while len(ops) > 1:  # left to right: the product replaces the first two
        ops[:2] = [_contract(ops[0], ops[1], layout, sizes.counts)]
    result = ops[0]
    if layout.dims == layout.out_dims:
        return result
    if len(operands) > 1:  # the contracted dims are all 1 by now
        return result.view(list(result.shape[: layout.out_dims]))
    return result.sum(list(range(layout.out_dims, layout.dims)))
