"""The exceptions of ember.distributed, with ``torch.distributed``'s names and hierarchy."""

from __future__ import annotations


class DistError(RuntimeError):
    """Base of the errors ember.distributed raises."""


class DistBackendError(DistError):
    """A collective backend (MPI, NCCL) failed or timed out; the group is unusable after it."""


class DistNetworkError(DistError):
    """The rendezvous store could not be reached."""


class DistStoreError(DistError):
    """A store operation failed, or a key did not appear within the timeout."""
