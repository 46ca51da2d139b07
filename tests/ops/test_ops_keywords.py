"""``ember.ops.<op>`` called with keywords binds them by the schema, and
``ember.ops.aten.<op>.default`` is the op, as ``torch.ops.aten`` has them."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import ember


def test_keywords_bind_in_schema_order_with_defaults():
    values = np.arange(24.0).reshape(2, 3, 4)
    got = ember.ops.slice(ember.tensor(values), dim=2, start=1, step=2)
    want = torch.ops.aten.slice(torch.tensor(values), dim=2, start=1, step=2)
    np.testing.assert_array_equal(got.numpy(), want.numpy())


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"dims": 1}, "Unknown keyword argument 'dims' for operator 'aten::slice'"),
        ({"input": 1}, "Argument 'input' specified both as positional and keyword argument"),
    ],
)
def test_bad_keywords_raise_runtime_error(kwargs, message):
    # RuntimeError, as torch.ops.aten raises: the out= of an op without one is refused alike
    with pytest.raises(RuntimeError, match=message.replace("(", r"\(").replace(")", r"\)")):
        ember.ops.slice(ember.zeros(3), **kwargs)


def test_aten_namespace_and_default_overload_are_the_op():
    assert ember.ops.aten.slice is ember.ops.slice
    assert ember.ops.aten.slice.default is ember.ops.slice
    with pytest.raises(AttributeError, match=r"ember\.ops\.aten has no op 'no_such_op'"):
        ember.ops.aten.no_such_op  # noqa: B018
