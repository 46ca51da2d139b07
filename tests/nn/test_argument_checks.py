"""Arguments PyTorch refuses are refused by ember too, on every device, before any kernel runs:
the same exception type, and PyTorch's key phrase in the message.

Each case is one call written once for both libraries: ``call(f, t)`` where ``f`` is
``torch.nn.functional`` or ``ember.nn.functional`` and ``t(*shape)`` makes a random tensor of
that library (on the device under test for ember). The test first checks that PyTorch does
refuse the call with the phrase, so the table cannot drift from PyTorch.
"""

from __future__ import annotations

import pytest

import ember
import ember.nn.functional as EF

torch = pytest.importorskip("torch")
TF = torch.nn.functional

X4 = (1, 4, 5, 5)
W4 = (4, 4, 3, 3)

# id -> (call, key phrase of PyTorch's message)
CONV_CASES = {
    "conv2d negative padding": (
        lambda f, t: f.conv2d(t(*X4), t(*W4), padding=-1),
        "negative padding is not supported",
    ),
    "conv2d one negative padding": (
        lambda f, t: f.conv2d(t(*X4), t(*W4), padding=(1, -1)),
        "negative padding is not supported",
    ),
    "conv2d stride 0": (
        lambda f, t: f.conv2d(t(*X4), t(*W4), stride=0),
        "non-positive stride is not supported",
    ),
    "conv2d negative stride": (
        lambda f, t: f.conv2d(t(*X4), t(*W4), stride=(1, -1)),
        "non-positive stride is not supported",
    ),
    "conv2d dilation 0": (
        lambda f, t: f.conv2d(t(*X4), t(*W4), dilation=0),
        "dilation should be greater than zero, but got [0, 0]",
    ),
    "conv2d groups 0": (
        lambda f, t: f.conv2d(t(*X4), t(*W4), groups=0),
        "non-positive groups is not supported",
    ),
    "conv2d groups not dividing out channels": (
        lambda f, t: f.conv2d(t(1, 6, 5, 5), t(4, 2, 3, 3), groups=3),
        "expected weight to be divisible by 3 at dimension 0",
    ),
    "conv2d channels": (
        lambda f, t: f.conv2d(t(*X4), t(4, 3, 3, 3)),
        "expected input[1, 4, 5, 5] to have 3 channels, but got 4 channels instead",
    ),
    "conv2d 2-D input": (
        lambda f, t: f.conv2d(t(5, 5), t(*W4)),
        "Expected 3D (unbatched) or 4D (batched) input to conv2d",
    ),
    "conv2d 5-D input": (
        lambda f, t: f.conv2d(t(1, 1, 4, 5, 5), t(*W4)),
        "Expected 3D (unbatched) or 4D (batched) input to conv2d",
    ),
    "conv2d bias size": (
        lambda f, t: f.conv2d(t(*X4), t(*W4), t(3)),
        "expected bias to be 1-dimensional with 4 elements",
    ),
    "conv2d kernel larger than input": (
        lambda f, t: f.conv2d(t(1, 4, 2, 2), t(*W4)),
        "Kernel size can't be greater than actual input size",
    ),
    "conv2d stride of 3 values": (
        lambda f, t: f.conv2d(t(*X4), t(*W4), stride=(1, 1, 1)),
        "expected stride to be a single integer value or a list of 2 values",
    ),
    "conv2d same and strided": (
        lambda f, t: f.conv2d(t(*X4), t(*W4), padding="same", stride=2),
        "padding='same' is not supported for strided convolutions",
    ),
    "conv2d padding string": (
        lambda f, t: f.conv2d(t(*X4), t(*W4), padding="full"),
        "Invalid padding string",
    ),
    "conv1d negative padding": (
        lambda f, t: f.conv1d(t(1, 4, 5), t(4, 4, 3), padding=-1),
        "negative padding is not supported",
    ),
    "conv1d stride 0": (
        lambda f, t: f.conv1d(t(1, 4, 5), t(4, 4, 3), stride=0),
        "non-positive stride is not supported",
    ),
    "conv1d dilation 0": (
        lambda f, t: f.conv1d(t(1, 4, 5), t(4, 4, 3), dilation=0),
        "dilation should be greater than zero",
    ),
    "conv3d stride 0": (
        lambda f, t: f.conv3d(t(1, 2, 4, 4, 4), t(2, 2, 2, 2, 2), stride=0),
        "non-positive stride is not supported",
    ),
    "conv3d groups": (
        lambda f, t: f.conv3d(t(1, 4, 4, 4, 4), t(3, 2, 2, 2, 2), groups=2),
        "expected weight to be divisible by 2 at dimension 0",
    ),
    "conv_transpose2d output_padding >= stride": (
        lambda f, t: f.conv_transpose2d(t(*X4), t(*W4), stride=2, output_padding=2),
        "output padding must be smaller than either stride or dilation",
    ),
    "conv_transpose2d output_padding >= stride and dilation": (
        lambda f, t: f.conv_transpose2d(t(*X4), t(*W4), output_padding=(0, 1)),
        "output padding must be smaller than either stride or dilation",
    ),
    "conv_transpose2d negative output_padding": (
        lambda f, t: f.conv_transpose2d(t(*X4), t(*W4), output_padding=-1),
        "negative output_padding is not supported",
    ),
    "conv_transpose2d negative padding": (
        lambda f, t: f.conv_transpose2d(t(*X4), t(*W4), padding=-1),
        "negative padding is not supported",
    ),
    "conv_transpose2d stride 0": (
        lambda f, t: f.conv_transpose2d(t(*X4), t(*W4), stride=0),
        "non-positive stride is not supported",
    ),
    "conv_transpose2d dilation 0": (
        lambda f, t: f.conv_transpose2d(t(*X4), t(*W4), dilation=0),
        "dilation should be greater than zero",
    ),
    "conv_transpose2d groups 0": (
        lambda f, t: f.conv_transpose2d(t(*X4), t(*W4), groups=0),
        "non-positive groups is not supported",
    ),
    "conv_transpose2d groups not dividing": (
        lambda f, t: f.conv_transpose2d(t(1, 6, 5, 5), t(4, 2, 3, 3), groups=3),
        "expected weight to be divisible by 3 at dimension 0",
    ),
    "conv_transpose2d channels": (
        lambda f, t: f.conv_transpose2d(t(1, 6, 5, 5), t(4, 2, 3, 3), groups=2),
        "expected input[1, 6, 5, 5] to have 4 channels, but got 6 channels instead",
    ),
    "conv_transpose2d output too small": (
        lambda f, t: f.conv_transpose2d(t(1, 4, 1, 1), t(*W4), padding=2),
        "Output size is too small",
    ),
    "conv_transpose2d bias size": (
        lambda f, t: f.conv_transpose2d(t(*X4), t(*W4), t(3)),
        "expected bias to be 1-dimensional with 4 elements",
    ),
    "conv_transpose1d stride 0": (
        lambda f, t: f.conv_transpose1d(t(1, 4, 5), t(4, 4, 3), stride=0),
        "non-positive stride is not supported",
    ),
    "conv_transpose3d output_padding": (
        lambda f, t: f.conv_transpose3d(t(1, 2, 3, 3, 3), t(2, 2, 2, 2, 2), output_padding=1),
        "output padding must be smaller than either stride or dilation",
    ),
}

POOL_CASES = {
    "max_pool2d pad over half the kernel": (
        lambda f, t: f.max_pool2d(t(*X4), 3, padding=2),
        "pad should be at most half of effective kernel size",
    ),
    "max_pool2d pad over half the undilated kernel": (
        lambda f, t: f.max_pool2d(t(1, 4, 9, 9), 3, padding=2, dilation=2),
        "pad should be smaller than or equal to half of kernel size",
    ),
    "max_pool2d stride 0": (
        lambda f, t: f.max_pool2d(t(*X4), 2, stride=0),
        "stride should not be zero",
    ),
    "max_pool2d negative stride": (
        lambda f, t: f.max_pool2d(t(*X4), 2, stride=-1),
        "stride should be greater than zero",
    ),
    "max_pool2d kernel 0": (
        lambda f, t: f.max_pool2d(t(*X4), 0, stride=1),
        "kernel size should be greater than zero",
    ),
    "max_pool2d dilation 0": (
        lambda f, t: f.max_pool2d(t(*X4), 2, dilation=0),
        "dilation should be greater than zero",
    ),
    "max_pool2d negative padding": (
        lambda f, t: f.max_pool2d(t(*X4), 2, padding=-1),
        "pad must be non-negative",
    ),
    "max_pool2d output too small": (
        lambda f, t: f.max_pool2d(t(1, 1, 1, 1), 2),
        "Output size is too small",
    ),
    "max_pool1d stride 0": (
        lambda f, t: f.max_pool1d(t(1, 4, 5), 2, stride=0),
        "stride",
    ),
    "avg_pool2d pad over half the kernel": (
        lambda f, t: f.avg_pool2d(t(*X4), 3, padding=2),
        "pad should be at most half of effective kernel size",
    ),
    "avg_pool2d stride 0": (
        lambda f, t: f.avg_pool2d(t(*X4), 2, stride=0),
        "stride should not be zero",
    ),
    "avg_pool2d kernel 0": (
        lambda f, t: f.avg_pool2d(t(*X4), 0, stride=1),
        "kernel size should be greater than zero",
    ),
    "avg_pool2d negative padding": (
        lambda f, t: f.avg_pool2d(t(*X4), 2, padding=-1),
        "pad must be non-negative",
    ),
    "avg_pool2d output too small": (
        lambda f, t: f.avg_pool2d(t(1, 1, 1, 1), 2),
        "Output size is too small",
    ),
    "avg_pool2d divisor 0": (
        lambda f, t: f.avg_pool2d(t(*X4), 2, divisor_override=0),
        "divisor must be not zero",
    ),
    "avg_pool1d pad over half the kernel": (
        lambda f, t: f.avg_pool1d(t(1, 4, 5), 2, padding=2),
        "pad should be at most half of effective kernel size",
    ),
    "adaptive_avg_pool2d negative size": (
        lambda f, t: f.adaptive_avg_pool2d(t(*X4), -1),
        "elements of output_size must be greater than or equal to 0",
    ),
    "adaptive_max_pool2d empty spatial dim": (
        lambda f, t: f.adaptive_max_pool2d(t(1, 2, 0, 4), 2),
        "Expected input to have non-zero size for non-batch dimensions",
    ),
    "unfold stride 0": (
        lambda f, t: f.unfold(t(*X4), 2, stride=0),
        "stride should be greater than zero, but got stride_height: 0 stride_width: 0",
    ),
    "unfold negative padding": (
        lambda f, t: f.unfold(t(*X4), 2, padding=-1),
        "padding should be non-negative",
    ),
    "unfold dilation 0": (
        lambda f, t: f.unfold(t(*X4), 2, dilation=0),
        "dilation should be greater than zero",
    ),
    "unfold kernel 0": (
        lambda f, t: f.unfold(t(*X4), 0),
        "kernel size should be greater than zero",
    ),
    "fold stride 0": (
        lambda f, t: f.fold(t(1, 16, 16), (5, 5), 2, stride=0),
        "stride should be greater than zero",
    ),
}


def _factory(module, device=None):
    if module is torch:
        return lambda *shape: torch.randn(*shape)
    return lambda *shape: ember.randn(*shape, device=device)


def _refused(call, phrase: str, device: str, make=_factory) -> None:
    with pytest.raises(Exception) as theirs:
        call(TF, make(torch, None))
    assert phrase in str(theirs.value), f"the table's phrase is not PyTorch's: {theirs.value}"
    with pytest.raises(type(theirs.value)) as ours:
        call(EF, make(ember, device))
    assert phrase in str(ours.value), f"ember's message lacks PyTorch's {phrase!r}"


@pytest.mark.parametrize("case", CONV_CASES)
def test_conv_arguments_refused(case, device):
    _refused(*CONV_CASES[case], device)


@pytest.mark.parametrize("case", POOL_CASES)
def test_pool_and_unfold_arguments_refused(case, device):
    _refused(*POOL_CASES[case], device)


@pytest.mark.parametrize("device_op", ["im2col", "col2im", "max_pool2d_with_indices"])
def test_window_rows_check_before_kernels(device_op, device):
    """The op-table rows themselves (what any device's kernel would get) refuse dilation 0:
    the CPU kernel used to fail with "status 4" and the xpu one computed with it."""
    from ember.dispatcher.optable import OPS

    x = ember.randn(1, 4, 6, 6, device=device)
    calls = {
        "im2col": lambda: OPS["im2col"](x, (2, 2), (0, 0), (0, 0), (1, 1)),
        "col2im": lambda: OPS["col2im"](
            ember.randn(1, 16, 25, device=device), (6, 6), (2, 2), (0, 0), (0, 0), (1, 1)
        ),
        "max_pool2d_with_indices": lambda: OPS["max_pool2d_with_indices"](
            x, (2, 2), (2, 2), (0, 0), (0, 0), False
        ),
    }
    with pytest.raises(RuntimeError, match="dilation should be greater than zero"):
        calls[device_op]()


# id -> (call(m, f, v): m is torch or ember, f its nn.functional, v(values) a tensor of it;
#        PyTorch's key phrase)
NAN = float("nan")
INF = float("inf")
PROBABILITY_CASES = {
    "multinomial negative": (
        lambda m, f, v: m.multinomial(v([0.5, -0.1, 0.6]), 1),
        "probability tensor contains either `inf`, `nan` or element < 0",
    ),
    "multinomial nan": (
        lambda m, f, v: m.multinomial(v([[0.5, 0.5], [0.5, NAN]]), 1, True),
        "probability tensor contains either `inf`, `nan` or element < 0",
    ),
    "multinomial inf": (
        lambda m, f, v: m.multinomial(v([0.5, INF]), 1),
        "probability tensor contains either `inf`, `nan` or element < 0",
    ),
    "multinomial all zero": (
        lambda m, f, v: m.multinomial(v([0.0, 0.0]), 1, True),
        "invalid multinomial distribution (sum of probabilities <= 0)",
    ),
    "multinomial a zero row": (
        lambda m, f, v: m.multinomial(v([[0.2, 0.3], [0.0, 0.0]]), 1),
        "invalid multinomial distribution (sum of probabilities <= 0)",
    ),
    "multinomial more than categories": (
        lambda m, f, v: m.multinomial(v([0.5, 0.5]), 3),
        "cannot sample n_sample > prob_dist.size(-1) samples without replacement",
    ),
    "multinomial no samples": (
        lambda m, f, v: m.multinomial(v([0.5, 0.5]), 0),
        "cannot sample n_sample <= 0 samples",
    ),
    "multinomial 3-D": (
        lambda m, f, v: m.multinomial(v([[[0.5, 0.5]]]), 1),
        "prob_dist must be 1 or 2 dim",
    ),
    "bernoulli above 1": (
        lambda m, f, v: m.bernoulli(v([0.5, 1.5])),
        "Expected p_in >= 0 && p_in <= 1 to be true, but got false",
    ),
    "bernoulli below 0": (
        lambda m, f, v: m.bernoulli(v([[0.5], [-0.5]])),
        "Expected p_in >= 0 && p_in <= 1 to be true, but got false",
    ),
    "bernoulli nan": (
        lambda m, f, v: m.bernoulli(v([0.5, NAN])),
        "Expected p_in >= 0 && p_in <= 1 to be true, but got false",
    ),
    "bernoulli float p": (
        lambda m, f, v: m.bernoulli(v([0.0, 0.0]), p=1.5),
        "expects p to be in [0, 1], but got p=1.5",
    ),
    "bernoulli_ float p": (
        lambda m, f, v: v([0.0, 0.0]).bernoulli_(1.5),
        "expects p to be in [0, 1], but got p=1.5",
    ),
    "bernoulli_ tensor p": (
        lambda m, f, v: v([0.0, 0.0]).bernoulli_(v([0.5, -1.0])),
        "Expected p_in >= 0 && p_in <= 1 to be true, but got false",
    ),
    "dropout above 1": (
        lambda m, f, v: f.dropout(v([1.0, 2.0]), 1.5),
        "dropout probability has to be between 0 and 1, but got 1.5",
    ),
    "dropout below 0": (
        lambda m, f, v: f.dropout(v([1.0, 2.0]), -0.1, training=False),
        "dropout probability has to be between 0 and 1, but got -0.1",
    ),
}


@pytest.mark.parametrize("case", PROBABILITY_CASES)
def test_probability_arguments_refused(case, device):
    """Sampling from impossible probabilities is refused as PyTorch refuses it (these checks
    read the whole tensor, with one reduction, as PyTorch's do)."""
    call, phrase = PROBABILITY_CASES[case]
    _refused(lambda f, v: call(torch if f is TF else ember, f, v), phrase, device, _values)


def _values(module, device=None):
    if module is torch:
        return lambda values: torch.tensor(values)
    return lambda values: ember.tensor(values, device=device)
