"""One check for the tests that compare an error with PyTorch's."""

from __future__ import annotations

import pytest


def assert_same_error(call_ember, call_torch, first_line: bool = False) -> None:
    """Both calls raise the same exception type with the same message ("torch" read as
    "ember"); ``first_line``: only the messages' first lines (PyTorch may add C++ context)."""
    with pytest.raises(Exception) as mine:
        call_ember()
    with pytest.raises(Exception) as theirs:
        call_torch()
    assert type(mine.value) is type(theirs.value)
    got, want = str(mine.value), str(theirs.value).replace("torch", "ember")
    if first_line:
        got, want = got.splitlines()[0], want.splitlines()[0]
    assert got == want
