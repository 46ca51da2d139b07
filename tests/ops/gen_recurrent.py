"""Sample generator of the recurrent rows (lstm, gru, rnn_tanh, rnn_relu):
dispatcher/optable/recurrent.py."""

from __future__ import annotations

from .sampling import Sample, arr

GATES = {"lstm": 4, "gru": 3, "rnn_tanh": 1, "rnn_relu": 1}
# (steps, batch, input, hidden, layers, bidirectional, batch_first, bias, projection)
# The first two are small enough for the gradient checks (tests/autograd/cases.py: under 96
# input elements for an LSTM).
CASES = (
    (2, 2, 2, 2, 1, False, False, True, 0),
    (2, 1, 2, 2, 1, True, True, False, 0),
    (3, 2, 4, 3, 1, False, False, True, 0),
    (2, 3, 2, 3, 2, True, True, False, 0),
    (4, 1, 3, 4, 2, False, False, True, 2),
)


def _weight(dtype, shape, rng):
    """PyTorch's initial range for a hidden size of 4: tanh and sigmoid stay off saturation and
    relu's states stay small, so float32 rounding does not compound over the steps."""
    return arr(dtype, shape, rng, low=-0.5, high=0.5)


def recurrent(op, dtype, device, rng):
    """Stacked, bidirectional, batch-first and bias-free layers; an LSTM projection."""
    gates = GATES[op.name]
    for steps, batch, width, hidden, layers, bidirectional, batch_first, bias, proj in CASES:
        if proj and op.name != "lstm":
            continue
        directions = 2 if bidirectional else 1
        real = proj or hidden
        params = []
        for layer in range(layers):
            for _ in range(directions):
                inputs = width if layer == 0 else real * directions
                params += [_weight(dtype, (gates * hidden, inputs), rng),
                           _weight(dtype, (gates * hidden, real), rng)]  # fmt: skip
                if bias:
                    params += [_weight(dtype, (gates * hidden,), rng) for _ in range(2)]
                if proj:
                    params.append(_weight(dtype, (proj, hidden), rng))
        shape = (batch, steps, width) if batch_first else (steps, batch, width)
        h0 = arr(dtype, (layers * directions, batch, real), rng)
        c0 = arr(dtype, (layers * directions, batch, hidden), rng)
        hx = [h0, c0] if op.name == "lstm" else h0
        yield Sample(
            (arr(dtype, shape, rng), hx, params, bias, layers, 0.0, False, bidirectional,
             batch_first)
        )  # fmt: skip


GENERATORS = {"recurrent": recurrent}
