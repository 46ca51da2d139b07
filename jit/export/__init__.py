"""ember.export: a module's forward as an ``ExportedProgram`` (``torch.export``): one graph of
op-table ops with parameters, buffers and constants lifted to inputs, a signature, and range
constraints for the dimensions marked dynamic with ``Dim``. ``save``/``load`` use the archive of
``ember.jit`` (JSON graph + safetensors; no pickle, no code)."""

from __future__ import annotations

import sys
import types

from .dynamic_shapes import ConstraintViolationError, Dim, ValueRange, dims
from .export import export
from .exported_program import (
    ExportedProgram,
    ExportGraphSignature,
    InputKind,
    InputSpec,
    OutputKind,
    OutputSpec,
    TensorArgument,
)
from .serde import load, save

__all__ = [
    "ConstraintViolationError",
    "Dim",
    "ExportGraphSignature",
    "ExportedProgram",
    "InputKind",
    "InputSpec",
    "OutputKind",
    "OutputSpec",
    "TensorArgument",
    "ValueRange",
    "dims",
    "export",
    "load",
    "save",
]


class _ExportPackage(types.ModuleType):
    """``ember.jit.export`` names both this package (``ember.export``'s implementation) and
    PyTorch's ``@torch.jit.export`` decorator; calling the package is the decorator."""

    def __call__(self, fn):
        from ..script.api import export as decorator

        return decorator(fn)


sys.modules[__name__].__class__ = _ExportPackage
