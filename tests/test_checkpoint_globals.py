"""ember.serialization.get_unsafe_globals_in_checkpoint against torch's on the same files:
checkpoints written by either library, with a class a weights-only load refuses, after
add_safe_globals, and a file that is not a checkpoint."""

from __future__ import annotations

import collections
import io

import pytest
import torch

import ember
from ember.serialization import get_unsafe_globals_in_checkpoint


class Config:
    """A user class: a weights-only load refuses it unless it is allowed."""

    def __init__(self):
        self.lr = 0.1


def _saved(lib) -> io.BytesIO:
    buffer = io.BytesIO()
    state = {
        "w": lib.randn(2),
        "p": lib.nn.Parameter(lib.ones(2)),
        "cfg": Config(),
        "od": collections.OrderedDict(a=1),
        "dtype": lib.float16,
        "size": lib.Size([2]),
    }
    lib.save(state, buffer)
    return buffer


def _both(buffer):
    buffer.seek(0)
    ours = get_unsafe_globals_in_checkpoint(buffer)
    buffer.seek(0)
    return ours, sorted(torch.serialization.get_unsafe_globals_in_checkpoint(buffer))


@pytest.mark.parametrize("writer", [ember, torch], ids=["ember-saved", "torch-saved"])
def test_the_refused_class_is_named_as_torch_names_it(writer):
    ours, theirs = _both(_saved(writer))
    assert ours == theirs == [f"{__name__}.Config"]


@pytest.mark.parametrize("writer", [ember, torch], ids=["ember-saved", "torch-saved"])
def test_allowed_globals_are_not_listed(writer):
    buffer = _saved(writer)
    with ember.serialization.safe_globals([Config]), torch.serialization.safe_globals([Config]):
        assert _both(buffer) == ([], [])


def test_a_file_that_is_not_a_checkpoint_is_refused_as_torch_refuses_it():
    with pytest.raises(ValueError) as theirs:
        torch.serialization.get_unsafe_globals_in_checkpoint(io.BytesIO(b"not a zip"))
    with pytest.raises(ValueError, match=str(theirs.value)):
        get_unsafe_globals_in_checkpoint(io.BytesIO(b"not a zip"))
