"""ember.nn: Module, Parameter, layers, losses, functional, init and utils."""

from . import functional, init, utils
from .modules import *  # noqa: F403 - nn.modules lists the layers
from .modules import ACTIVATIONS, LOSSES
from .parameter import Buffer, Parameter
