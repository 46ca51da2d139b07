"""``ember._functorch``: ``config``, PyTorch's ``torch._functorch.config`` settings (AOT
autograd's partitioner and caches), accepted so programs that set them run unchanged."""

from . import config

__all__ = ["config"]
