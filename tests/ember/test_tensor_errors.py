"""Bad input gets the right exception type and a message naming the op, argument and shapes."""

from __future__ import annotations

import numpy as np
import pytest

import ember

ERRORS = [
    # scatter's index must fit in src, and in self apart from dim (checked in the core runner)
    (
        lambda: ember.zeros(3, 4).scatter(1, ember.zeros(2, 2, dtype=ember.int64), ember.ones(2)),
        RuntimeError,
        r"scatter\(\): Index tensor must have the same number of dimensions as src tensor",
    ),
    (
        lambda: ember.zeros(3, 4).scatter_add(
            1, ember.zeros(4, 2, dtype=ember.int64), ember.ones(4, 2)
        ),
        RuntimeError,
        r"scatter_add\(\): Expected index \[4, 2\] to be smaller than self \[3, 4\] apart from "
        r"dimension 1",
    ),
    # shapes
    (
        lambda: ember.ones(2, 3) + ember.ones(4),
        RuntimeError,
        r"add: shapes \[2, 3\], \[4\] are not broadcastable: size 4 vs 3 at dimension -1",
    ),
    (
        lambda: ember.mul(ember.ones(2, 3), ember.ones(3, 2)),
        RuntimeError,
        r"mul: shapes \[2, 3\], \[3, 2\] are not broadcastable",
    ),
    (
        lambda: ember.where(ember.ones(2) > 0, ember.ones(3), ember.ones(2)),
        RuntimeError,
        r"where: shapes \[2\], \[3\], \[2\] are not broadcastable",
    ),
    (
        lambda: ember.ones(2) == ember.ones(3),
        RuntimeError,
        r"eq: shapes \[2\], \[3\] are not broadcastable",
    ),
    (
        lambda: ember.ones(3).add_(ember.ones(2, 3)),
        RuntimeError,
        r"add_: output with shape \[3\] doesn't match the broadcast shape \[2, 3\]",
    ),
    (
        lambda: ember.ones(3).copy_(ember.ones(4)),
        RuntimeError,
        r"copy_\(\): the source of shape \[4\] can.t be broadcast to the destination of shape \[3",
    ),
    (
        lambda: ember.cat([ember.ones(2, 3), ember.ones(2, 4)]),
        RuntimeError,
        "cat\\(\\): Sizes of tensors must match except in dimension 0. Expected size 3 but got "
        "size 4 for tensor number 1",
    ),
    (
        lambda: ember.ones(6).view(4, 2),
        RuntimeError,
        r"view: shape '\[4, 2\]' is invalid for input of size 6",
    ),
    # dims
    (
        lambda: ember.ones(2, 3).transpose(0, 5),
        IndexError,
        r"transpose: Dimension out of range \(expected to be in range of \[-2, 1\], but got 5\)",
    ),
    (
        lambda: ember.cat([ember.ones(2), ember.ones(2)], 1),
        IndexError,
        r"cat: Dimension out of range",
    ),
    (lambda: ember.ones(2).size(1), IndexError, r"size\(\): Dimension out of range"),
    # dtypes and values
    (
        lambda: ember.arange(3).add_(1.5),
        RuntimeError,
        "add_: result type Float can't be cast to the desired output type Long",
    ),
    (
        lambda: ember.ones(2) & ember.ones(2),
        RuntimeError,
        r'"bitwise_and" not implemented for float32 \(supported: bool, int16',
    ),
    (lambda: -ember.tensor([True]), RuntimeError, '"neg" not implemented for bool'),
    (
        lambda: ember.tensor([2]) ** -1,
        RuntimeError,
        r"pow: Integers to negative integer powers are not allowed \(int64\)",
    ),
    (
        lambda: ember.tensor([1]) // 0,
        ZeroDivisionError,
        r"floor_divide: integer division by zero \(int64\)",
    ),
    (
        lambda: ember.ones(1).expand(3).add_(1),
        RuntimeError,
        "add_: unsupported operation: more than one element of the written-to tensor refers to a "
        "single memory location",
    ),
    (
        lambda: ember.ones(3).fill_(ember.ones(2)),
        RuntimeError,
        "fill_ only supports 0-dimension value tensor but got tensor with 1 dimensions",
    ),
    (
        lambda: ember.arange(3).requires_grad_(),
        RuntimeError,
        r"only Tensors of floating point dtype can require gradients \(got int64\)",
    ),
    (
        lambda: ember.clamp(ember.ones(2)),
        RuntimeError,
        "clamp: At least one of 'min' or 'max' must not be None",
    ),
    # argument types
    (
        lambda: ember.add(ember.ones(2), "a"),
        TypeError,
        r"add\(\): argument 'other' \(position 2\) must be Tensor, not str",
    ),
    (
        lambda: ember.add(None, ember.ones(2)),
        TypeError,
        r"add\(\): argument 'input' \(position 1\) must be Tensor, not NoneType",
    ),
    (
        lambda: ember.ones(2).add_("a"),
        TypeError,
        r"add_\(\): argument 'other' \(position 2\) must be Tensor, not str",
    ),
    (
        lambda: ember.clamp(ember.ones(2), "a"),
        TypeError,
        r"clamp\(\): argument 'min' \(position 2\) must be Tensor, not str",
    ),
    (
        lambda: ember.exp([1.0]),
        TypeError,
        r"exp\(\): argument 'input' \(position 1\) must be Tensor, not list",
    ),
    (lambda: ember.ones(2) + [1, 2], TypeError, r"unsupported operand type\(s\) for \+"),
    (lambda: ember.ones(2) < "a", TypeError, "'<' not supported"),
    (lambda: ember.ones(2).size("a"), TypeError, r"size\(\): argument 'dim' must be int, not str"),
    (lambda: ember.ones(2).unsqueeze(1.5), TypeError, "unsqueeze: dim must be an int, got float"),
    (
        lambda: ember.ones(2, 3).permute("a", "b"),
        TypeError,
        r"permute\(\): dims must be a sequence of ints",
    ),
    (
        lambda: setattr(ember.ones(2, requires_grad=True), "grad", ember.ones(3)),
        RuntimeError,
        r"assigned grad has data of a different size: \[3\] vs \[2\]",
    ),
    (
        lambda: setattr(ember.ones(2, requires_grad=True), "grad", 5),
        TypeError,
        "assigned grad expected to be a Tensor or None, got int",
    ),
]


@pytest.mark.parametrize("call, error, message", ERRORS)
def test_error(call, error, message):
    with pytest.raises(error, match=message):
        call()


NUMPY_OPERANDS = [
    (lambda x: x * np.sqrt(2.0), "float32", 2.0**0.5),
    (lambda x: np.float32(2) * x, "float32", 2.0),
    (lambda x: x + np.int64(1), "float32", 2.0),
    (lambda x: np.int64(2) - x, "float32", 1.0),
    (lambda x: x ** np.float32(2), "float32", 1.0),
    (lambda x: x < np.float64(3), "bool", True),
    (lambda x: np.float64(3) < x, "bool", False),
    (lambda x: x + np.ones(2), "float64", 2.0),
    (lambda x: np.ones(2) + x, "float64", 2.0),
    (lambda x: x.to(ember.float16) * np.float64(2), "float16", 2.0),
    (lambda x: x.to(ember.int32) * np.int64(2), "int32", 2),
]


@pytest.mark.parametrize("expression, dtype, value", NUMPY_OPERANDS)
def test_numpy_operands_give_tensors(expression, dtype, value):
    """numpy scalars act as Python scalars and arrays as tensors, as in PyTorch; the result is
    never a numpy array."""
    result = expression(ember.ones(2))
    assert isinstance(result, ember.Tensor)
    assert result.dtype is getattr(ember, dtype)
    assert result.tolist() == pytest.approx([value, value])


def test_numpy_scalars_in_place_and_in_functions():
    x = ember.ones(2)
    x += np.float32(1)
    x.clamp_(0, np.int64(1))
    assert x.tolist() == [1.0, 1.0]
    assert ember.where(x > 0, np.float64(3), x).tolist() == [3.0, 3.0]
    assert np.add(ember.ones(2), 1).tolist() == [2.0, 2.0]  # numpy's own functions still work
