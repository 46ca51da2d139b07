"""The ONNX exporter's errors and warnings, with PyTorch's class names and messages
(``torch.onnx.errors``)."""

from __future__ import annotations

__all__ = ["OnnxExporterError", "OnnxExporterWarning", "UnsupportedOperatorError"]


class OnnxExporterWarning(UserWarning):
    """Warnings in the ONNX exporter."""


class OnnxExporterError(RuntimeError):
    """Errors raised by the ONNX exporter; the base class of the others."""


class UnsupportedOperatorError(OnnxExporterError):
    """An op of the graph has no ONNX mapping at the requested opset.

    ``supported_version``: the first opset that has one, when a later opset does.
    """

    def __init__(self, name: str, version: int, supported_version: int | None) -> None:
        if supported_version is not None:
            msg = (
                f"Exporting the operator '{name}' to ONNX opset version {version} "
                "is not supported. Support for this operator was added in version "
                f"{supported_version}, try exporting with this version"
            )
        elif name.startswith(("ember::", "prim::")):
            msg = (
                f"Exporting the operator '{name}' to ONNX opset version {version} is not supported"
            )
        else:
            msg = (
                f"ONNX export failed on an operator with unrecognized namespace {name}. "
                "If you are trying to export a custom operator, make sure you registered it with "
                "the right domain and version."
            )
        super().__init__(msg)
        self.name = name
        self.version = version
        self.supported_version = supported_version
