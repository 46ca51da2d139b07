"""A non-Tensor where an op's schema says Tensor raises PyTorch's TypeError naming the op, the
argument and its position ("add(): argument 'other' (position 2) must be Tensor, not list"),
never an AttributeError from deep inside a runner; and ember.nn layers say the same."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import ember
from ember.dispatcher.optable import OPS
from tests.ops import checks
from tests.ops.samples import generator_name, samples

# (op, argument): where ember deliberately takes more than a Tensor, with the reason.
TAKES_DATA = {
    ("copy_", "src"): "copy_ converts any data to the destination's dtype (setitem relies on it)",
}


def _cases():
    """(op name, argument position) for every required Tensor argument of every sampled op."""
    found = []
    for name, op in sorted(OPS.items()):
        if generator_name(op) is None or not checks.accepted_dtypes(op):
            continue
        for i, arg in enumerate(op.schema.args):
            if arg.is_tensor and not arg.is_list and (op.name, arg.name) not in TAKES_DATA:
                found.append((name, i))
    return found


def _first_sample(op):
    dtypes = checks.accepted_dtypes(op)
    dtype = ember.float32 if ember.float32 in dtypes else dtypes[0]
    found = samples(op, dtype, "cpu", np.random.default_rng(0))
    return list(found[0].ember_args("cpu")) if found else None


@pytest.mark.parametrize("name, position", _cases(), ids=lambda v: str(v))
def test_a_list_where_the_schema_says_tensor_is_a_type_error(name, position):
    """Generated from the op table: every op, every Tensor argument."""
    op = OPS[name]
    args = _first_sample(op)
    if args is None or position >= len(args) or not isinstance(args[position], ember.Tensor):
        pytest.skip("the first sample leaves this optional argument out")
    value = args[position]
    args[position] = value.tolist() if value.ndim else [value.item()]
    arg = op.schema.args[position]
    message = (
        f"{op.name}(): argument '{arg.name}' (position {position + 1}) must be Tensor, not list"
    )
    with pytest.raises(TypeError) as info:
        op(*args)
    assert str(info.value) == message


SAME_AS_TORCH = [
    ("add-input", lambda m, t: m.add([1.0], t)),
    ("add-other", lambda m, t: m.add(t, [1.0])),
    ("sum", lambda m, t: m.sum([1.0])),
    ("matmul-number", lambda m, t: m.matmul(2.0, t)),
    ("mul-dict", lambda m, t: m.mul(t, {})),
    ("exp-str", lambda m, t: m.exp("x")),
    ("softmax", lambda m, t: m.softmax([1.0], 0)),
]


@pytest.mark.parametrize("make", [c[1] for c in SAME_AS_TORCH], ids=[c[0] for c in SAME_AS_TORCH])
def test_message_is_torchs(make):
    with pytest.raises(TypeError) as theirs:
        make(torch, torch.ones(2))
    with pytest.raises(TypeError) as ours:
        make(ember, ember.ones(2))
    assert str(ours.value) == str(theirs.value)


def test_numbers_stay_accepted_where_ember_takes_them():
    x = ember.ones(2)
    assert ember.add(x, 2.0).tolist() == [3.0, 3.0]
    assert ember.where(x > 0, x, 0.0).tolist() == [1.0, 1.0]


def test_tensor_lists_name_the_element():
    x = ember.ones(2)
    with pytest.raises(TypeError, match=r"expected Tensor as element 1 in argument 0"):
        ember.cat([x, [1.0]])
    with pytest.raises(TypeError, match=r"expected Tensor as element 1 in argument 0"):
        ember.stack([x, 3])


def test_other_errors_pass_through_unchanged():
    """Only a non-Tensor argument is blamed; an op's own TypeError is not rewritten."""
    with pytest.raises(TypeError, match="size must be a sequence of ints"):
        ember.ones(2, 3).view("a")
    with pytest.raises(IndexError, match="Dimension out of range"):
        ember.ones(2).sum(3)


LAYERS = [
    ("Linear", lambda m: m.nn.Linear(2, 2)),
    ("ReLU", lambda m: m.nn.ReLU()),
    ("GELU", lambda m: m.nn.GELU()),
    ("Sigmoid", lambda m: m.nn.Sigmoid()),
    ("LayerNorm", lambda m: m.nn.LayerNorm(2)),
    ("RMSNorm", lambda m: m.nn.RMSNorm(2)),
    ("Dropout", lambda m: m.nn.Dropout()),
    ("Sequential", lambda m: m.nn.Sequential(m.nn.Linear(2, 2))),
]


@pytest.mark.parametrize("make", [c[1] for c in LAYERS], ids=[c[0] for c in LAYERS])
def test_layers_given_a_list_say_what_torch_says(make):
    with pytest.raises(TypeError) as theirs:
        make(torch)([1.0, 2.0])
    with pytest.raises(TypeError) as ours:
        make(ember)([1.0, 2.0])
    assert str(ours.value) == str(theirs.value)


OTHER_LAYERS = [
    ("Conv2d", lambda: ember.nn.Conv2d(1, 1, 1), "conv2d"),
    ("BatchNorm1d", lambda: ember.nn.BatchNorm1d(2), "batch_norm"),
    ("GroupNorm", lambda: ember.nn.GroupNorm(1, 2), "group_norm"),
    ("MaxPool2d", lambda: ember.nn.MaxPool2d(2), "max_pool2d"),
    ("AdaptiveAvgPool2d", lambda: ember.nn.AdaptiveAvgPool2d(1), "adaptive_avg_pool2d"),
    ("Flatten", lambda: ember.nn.Flatten(), "flatten"),
    ("Softmax", lambda: ember.nn.Softmax(0), "softmax"),
    ("LSTM", lambda: ember.nn.LSTM(2, 2), "lstm"),
    ("MSELoss", lambda: ember.nn.MSELoss(), "mse_loss"),
]


@pytest.mark.parametrize(
    "make, op", [c[1:] for c in OTHER_LAYERS], ids=[c[0] for c in OTHER_LAYERS]
)
def test_every_layer_given_a_list_raises_type_error(make, op):
    """torch's own wording varies here (some of its layers fail with AttributeError)."""
    layer = make()
    args = ([1.0, 2.0], ember.ones(2)) if op == "mse_loss" else ([1.0, 2.0],)
    with pytest.raises(TypeError, match=r"must be Tensor, not list"):
        layer(*args)


def test_a_wrong_call_of_a_layer_keeps_its_own_error():
    with pytest.raises(TypeError, match="missing 1 required positional argument: 'input2'"):
        ember.nn.Bilinear(2, 2, 2)([1.0, 2.0])


def test_user_modules_keep_their_errors():
    class Mine(ember.nn.Module):
        def forward(self, x):
            return x.shape

    with pytest.raises(AttributeError, match="'list' object has no attribute 'shape'"):
        Mine()([1.0])


def test_a_number_is_blamed_only_when_it_caused_the_error():
    """scatter takes a number for src; a bad dim must not be reported as a bad src."""
    x, index = ember.zeros(2, 3), ember.tensor([[0, 1, 0]])
    with pytest.raises(TypeError) as info:
        ember.scatter(x, "a", index, 1.0)
    assert "argument 'src'" not in str(info.value)
    with pytest.raises(TypeError, match=r"matmul\(\): argument 'input' \(position 1\) must be"):
        ember.matmul(2.0, x)
