"""``ember.nn.modules.utils``: the helpers custom layers import from ``torch.nn.modules.utils``,
compared with torch's on the argument kinds layers pass."""

import pytest
import torch.nn.modules.utils as theirs

import ember.nn.modules.utils as ours

CASES = [3, 2.5, (1, 2), [4, 5, 6], (7,), range(3)]


@pytest.mark.parametrize("name", ["_single", "_pair", "_triple", "_quadruple"])
@pytest.mark.parametrize("value", CASES, ids=repr)
def test_ntuple_helpers_match_torch(name, value):
    assert getattr(ours, name)(value) == getattr(theirs, name)(value)
    assert getattr(ours, name).__name__ == getattr(theirs, name).__name__


@pytest.mark.parametrize("padding,n", [((1, 2), 2), ((0, 3, 1), 1), ((), 2)])
def test_reverse_repeat_tuple_matches_torch(padding, n):
    assert ours._reverse_repeat_tuple(padding, n) == theirs._reverse_repeat_tuple(padding, n)


def test_a_custom_layer_written_with_pair_runs():
    import ember

    class Blur(ember.nn.Module):
        def __init__(self, kernel_size):
            super().__init__()
            self.kernel_size = ours._pair(kernel_size)

        def forward(self, x):
            return ember.nn.functional.avg_pool2d(x, self.kernel_size, stride=1)

    assert Blur(3)(ember.ones(1, 1, 5, 5)).shape == (1, 1, 3, 3)
