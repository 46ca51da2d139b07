"""ember.nn: Module, Parameter, layers, losses, functional, init and utils."""

from . import functional, init, parallel, utils
from .modules import *  # noqa: F403 - nn.modules lists the layers
from .modules import ACTIVATIONS, LOSSES
from .parallel import DataParallel
from .parameter import Buffer, Parameter
