"""ember.nn: Module, Parameter, layers, losses, functional, init and utils."""

from . import attention, functional, init, parallel, utils
from .functional.linear_loss import LinearCrossEntropyOptions  # torch.nn's name for it
from .modules import *  # noqa: F403 - nn.modules lists the layers
from .modules import ACTIVATIONS, LOSSES
from .parallel import DataParallel
from .parameter import Buffer, Parameter, UninitializedBuffer, UninitializedParameter
