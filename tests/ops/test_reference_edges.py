"""The op table's numpy references on the edges numpy reads differently from PyTorch: 0-d
inputs with dim 0 or -1, negative dims that a reference must wrap before it adds a dim, and a
-1 size among 0 elements (numpy finds it ambiguous; PyTorch infers it within the dim). Each case
is checked three ways: the reference, ember and PyTorch agree."""

from __future__ import annotations

import numpy as np
import pytest

import ember
from ember.dispatcher.optable import OPS

torch = pytest.importorskip("torch")

# (op, input shape, arguments after the input)
CASES = [
    ("unfold", (3, 4), (-1, 2, 1)),
    ("unfold", (3, 4), (-2, 2, 2)),
    ("unfold", (), (0, 0, 1)),
    ("unfold", (), (-1, 1, 2)),
    ("flatten", (0, 2), ()),
    ("flatten", (2, 0, 3), (1, 2)),
    ("flatten", (0, 2, 3), (1, 2)),
    ("unflatten", (0,), (0, (-1,))),
    ("unflatten", (0, 4), (1, (2, -1))),
    ("unflatten", (4, 0), (0, (2, -1))),
    ("swapaxes", (), (0, -1)),
    ("swapdims", (), (-1, 0)),
    ("transpose", (), (0, 0)),
    ("squeeze", (), (0,)),
    ("squeeze", (), ((-1,),)),
    ("movedim", (), (0, -1)),
]


def _torch_call(name, x, args):
    if name == "squeeze" and isinstance(args[0], tuple):
        return x.squeeze(args[0])
    return getattr(x, name)(*args)


@pytest.mark.parametrize("name, shape, args", CASES, ids=lambda v: repr(v))
def test_reference_agrees_with_ember_and_torch(name, shape, args):
    values = np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape)
    want = _torch_call(name, torch.from_numpy(values.copy()), args).numpy()
    reference = np.asarray(OPS[name].defn.reference(values, *args))
    ours = OPS[name](ember.from_numpy(values.copy()), *args).numpy()
    for what, got in (("reference", reference), ("ember", ours)):
        assert got.shape == want.shape, f"{name}{args} on {shape}: {what} shape {got.shape}"
        assert np.array_equal(got, want), f"{name}{args} on {shape}: {what} values"
