"""``ember.onnx``: export models to ONNX (``torch.onnx``); the implementation lives in
``ember.jit.onnx``, beside the graph IR it writes out. Exporting needs ``pip install
'ember[onnx]'`` (onnx, onnxruntime); importing this module does not."""

from __future__ import annotations

from .jit.onnx import *  # noqa: F403 - the public names of ember.jit.onnx, listed there
from .jit.onnx import __all__  # noqa: F401
