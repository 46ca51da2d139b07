"""``export(..., verify=True)``: onnxruntime runs the exported model on the example inputs and
its outputs are compared with ember's."""

from __future__ import annotations

import numpy as np

from .. import pytree
from .errors import OnnxExporterError


def run_onnxruntime(model_bytes: bytes, feeds: dict) -> list:
    """The outputs of onnxruntime's CPU provider on ``feeds`` (name -> numpy array)."""
    try:
        import onnxruntime
    except ImportError as exc:
        raise ModuleNotFoundError(
            "verifying an exported model needs onnxruntime: pip install 'ember[onnx]'"
        ) from exc
    options = onnxruntime.SessionOptions()
    options.log_severity_level = 3
    session = onnxruntime.InferenceSession(model_bytes, options, providers=["CPUExecutionProvider"])
    return session.run(None, feeds)


def verify_outputs(proto, args, kwargs, expected, rtol=1e-3, atol=1e-5) -> None:
    leaves, _ = pytree.flatten((tuple(args), kwargs))
    names = [v.name for v in proto.graph.input]
    feeds = {name: leaf.detach().cpu().numpy() for name, leaf in zip(names, leaves)}
    got = run_onnxruntime(proto.SerializeToString(), feeds)
    want, _ = pytree.flatten(expected)
    for i, (a, b) in enumerate(zip(got, want)):
        b = b.detach().cpu().numpy()
        if a.shape != b.shape or not np.allclose(a, b, rtol=rtol, atol=atol, equal_nan=True):
            raise OnnxExporterError(
                f"ember.onnx.export(verify=True): output {i} differs from onnxruntime's "
                f"(shapes {b.shape} and {a.shape}, largest difference "
                f"{np.max(np.abs(a.astype(np.float64) - b)) if a.shape == b.shape else 'n/a'})"
            )
