"""ember.nn.parallel: data parallelism (``DistributedDataParallel`` over ember.distributed)."""

from .data_parallel import DataParallel
from .distributed import DistributedDataParallel

__all__ = ["DataParallel", "DistributedDataParallel"]
