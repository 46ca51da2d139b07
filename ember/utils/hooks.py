"""``ember.utils.hooks``: the hook handle under torch.utils.hooks's path."""

from .._hooks import RemovableHandle

__all__ = ["RemovableHandle"]
