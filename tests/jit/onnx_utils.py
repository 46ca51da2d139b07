"""Helpers of the ONNX tests: export to bytes, run in onnxruntime, compare with ember."""

from __future__ import annotations

import io
import warnings

import numpy as np
import pytest

import ember
from ember.jit import pytree

onnx = pytest.importorskip("onnx", reason="ember.onnx's tests need 'ember[onnx]'")
onnxruntime = pytest.importorskip("onnxruntime", reason="ember.onnx's tests need 'ember[onnx]'")


def export_bytes(model, args, **options) -> bytes:
    buffer = io.BytesIO()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # TracerWarnings of the zoo, dynamic-axes name notes
        ember.onnx.export(model, args, buffer, **options)
    return buffer.getvalue()


def session(model_bytes: bytes):
    options = onnxruntime.SessionOptions()
    options.log_severity_level = 3
    return onnxruntime.InferenceSession(model_bytes, options, providers=["CPUExecutionProvider"])


def run(sess, args, extra: dict | None = None) -> list:
    leaves, _ = pytree.flatten(tuple(args))
    names = [i.name for i in sess.get_inputs()]
    feeds = {name: leaf.numpy() for name, leaf in zip(names, leaves)}
    feeds.update(extra or {})
    return sess.run(None, feeds)


def eager(model, args) -> list:
    with ember.no_grad():
        out = model(*args)
    leaves, _ = pytree.flatten(out)
    return [leaf.detach().numpy() for leaf in leaves]


def assert_close(got: list, want: list, rtol: float = 1e-4, atol: float = 1e-5) -> None:
    assert len(got) == len(want)
    for a, b in zip(got, want):
        assert a.shape == b.shape, (a.shape, b.shape)
        assert a.dtype == b.dtype, (a.dtype, b.dtype)
        np.testing.assert_allclose(a, b, rtol=rtol, atol=atol, equal_nan=True)


def check_model(model_bytes: bytes):
    proto = onnx.load_from_string(model_bytes)
    onnx.checker.check_model(proto, full_check=True)
    return proto
