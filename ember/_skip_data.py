"""``ember.serialization.skip_data``, PyTorch's: inside it ``save`` writes every storage record's
header and reserves its bytes without writing them (zeros, CRC 0, as ``torch.save`` does), so a
later pass can fill them in place; ``load`` builds tensors over uninitialised storages instead
of reading the records."""

from __future__ import annotations

import threading


class _State(threading.local):
    def __init__(self) -> None:
        self.skip_data = False
        self.materialize_fake_tensors = False


STATE = _State()


class skip_data:  # noqa: N801 - PyTorch's name
    """Context manager that skips writing/reading storage bytes for ``ember.save`` /
    ``ember.load``.

    Saving, storages are still recorded, but the space their bytes would take is left empty (a
    separate pass can write them). Loading, tensors are built as the checkpoint says over
    storages that are not filled from it.

    Args:
        materialize_fake_tensors: PyTorch's switch for FakeTensors on save; ember has no fake
            tensors, so it changes nothing (kept for the signature).

    Example:
        >>> with ember.serialization.skip_data():
        ...     ember.save(model.state_dict(), "layout.pt")
    """

    def __init__(self, materialize_fake_tensors: bool = False):
        self.materialize_fake_tensors = materialize_fake_tensors

    def __enter__(self):
        self._old = (STATE.skip_data, STATE.materialize_fake_tensors)
        STATE.skip_data = True
        STATE.materialize_fake_tensors = self.materialize_fake_tensors

    def __exit__(self, type, value, tb):
        STATE.skip_data, STATE.materialize_fake_tensors = self._old


def active() -> bool:
    return STATE.skip_data
