"""``ember.testing``: PyTorch's ``torch.testing`` helpers, ``assert_close`` and ``make_tensor``."""

from ._comparison import assert_close
from ._creation import make_tensor

__all__ = ["assert_close", "make_tensor"]
