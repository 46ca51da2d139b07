"""The ONNX exporter: the graph IR written as an ONNX model (``ember.onnx``).

``export`` traces the model (``jit.tracer.capture``), ``convert`` walks the graph, ``table``
maps each op-table op to ONNX ops (rules in ``symbolic/``), ``model`` finishes and checks the
ModelProto. The ``onnx`` package is imported when exporting, not here.
"""

from __future__ import annotations

from . import errors
from .errors import OnnxExporterError, OnnxExporterWarning, UnsupportedOperatorError
from .export import (
    DEFAULT_OPSET,
    OperatorExportTypes,
    TrainingMode,
    export,
    is_in_onnx_export,
)

__all__ = [
    "DEFAULT_OPSET",
    "OnnxExporterError",
    "OnnxExporterWarning",
    "OperatorExportTypes",
    "TrainingMode",
    "UnsupportedOperatorError",
    "errors",
    "export",
    "is_in_onnx_export",
]
