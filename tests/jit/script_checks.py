"""Helpers the script tests share: save/load round trips and refusals compared with
torch.jit.script's."""

from __future__ import annotations

import io

import pytest
import torch

import ember


def roundtrip(scripted):
    """``scripted`` saved with ember.jit.save and loaded back."""
    buffer = io.BytesIO()
    ember.jit.save(scripted, buffer)
    return ember.jit.load(io.BytesIO(buffer.getvalue()))


def first_line(error) -> str:
    return str(error).strip().splitlines()[0]


def refused_alike(mine, theirs, shown=first_line) -> None:
    """Scripting ``mine`` with ember and ``theirs`` with torch both raise RuntimeError with the
    same text (as ``shown`` presents it: the first line by default)."""
    with pytest.raises(RuntimeError) as their_error:
        torch.jit.script(theirs)
    with pytest.raises(RuntimeError) as my_error:
        ember.jit.script(mine)
    assert shown(my_error.value) == shown(their_error.value)
