"""The example plugins in ``examples/``, used as installed packages through their entry points only.

Each test runs a fresh interpreter, with autoload on and no user policy, against what pip
installed: nothing here imports the example packages. CI installs them; elsewhere these tests
skip and say how to install them.
"""

from __future__ import annotations

import importlib.metadata
import os
import re
import subprocess
import sys
import textwrap

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _needs(distribution: str, folder: str):
    try:
        importlib.metadata.distribution(distribution)
        missing = False
    except importlib.metadata.PackageNotFoundError:
        missing = True
    reason = f"{distribution} is not installed (pip install ./examples/{folder})"
    return pytest.mark.skipif(missing, reason=reason)


op_example = _needs("ember-op-example", "ember-op-example")
backend_example = _needs("ember-backend-ref", "ember-backend-example")


def run(code: str = "", *args: str, env: dict | None = None) -> str:
    """stdout of ``python -c code`` (or ``python *args``) in a clean environment, from a
    directory where the source tree's packages cannot shadow the installed ones."""
    environ = {k: v for k, v in os.environ.items() if not k.startswith("EMBER_")}
    environ.update(env or {})
    command = [sys.executable, *args] if args else [sys.executable, "-c", textwrap.dedent(code)]
    done = subprocess.run(
        command,
        capture_output=True,
        text=True,
        timeout=300,
        env=environ,
        cwd=os.path.dirname(ROOT),
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


@op_example
def test_op_example_is_found_differentiated_and_passes_opcheck():
    out = run(
        """
        import sys
        import ember
        import ember.library as L

        assert "ember_op_example" not in sys.modules
        fn = ember.ops.example.fused_bias_gelu
        assert "ember_op_example" in sys.modules  # the entry point loaded it on first access
        x = ember.randn(4, 8, requires_grad=True)
        b = ember.randn(8, requires_grad=True)
        y = fn(x, b)
        print(y.grad_fn.name())
        y.sum().backward()
        x2 = x.detach().requires_grad_(True)
        b2 = b.detach().requires_grad_(True)
        ember.nn.functional.gelu(x2 + b2).sum().backward()
        print(bool((y - ember.nn.functional.gelu(x + b)).abs().max() < 1e-6))
        pairs = ((x.grad, x2.grad), (b.grad, b2.grad))
        print(*(bool((g - g2).abs().max() < 1e-5) for g, g2 in pairs))
        f16 = ember.float16
        samples = [
            (ember.randn(3, 5), ember.randn(5)),
            (ember.randn(2, 3, 4, dtype=ember.float64), ember.randn(4, dtype=ember.float64)),
            ((ember.randn(6, 4), ember.randn(4)), {"approximate": "tanh"}),
            (ember.randn(5, 3).T, ember.randn(5)),  # strided input
            (ember.randn(0, 4), ember.randn(4)),
            (ember.randn(3, 4, dtype=f16), ember.randn(4, dtype=f16)),  # decomposes
        ]
        print(sorted(L.opcheck(fn, samples).items()))
        try:
            fn(ember.randn(3, 4), ember.randn(5))
        except RuntimeError as exc:
            print(exc)
        """
    )
    assert out.splitlines() == [
        "ExampleFusedBiasGeluBackward0",
        "True",
        "True True",
        "[('gradients', 'ok'), ('reference', 'ok'), ('schema', 'ok'), ('shape', 'ok')]",
        "fused_bias_gelu: bias must be 1-D with input.shape[-1] elements; got input [3, 4] and "
        "bias [5]",
    ]


@op_example
def test_op_example_in_the_plugins_report():
    report = run("", "-m", "ember.plugins")
    assert "example from ember-op-example 0.1.0 (ember_op_example): ok" in report
    assert "example::fused_bias_gelu  ember-op-example  yes" in report
    explained = run(
        "", "-m", "ember.plugins", "--explain", "example::fused_bias_gelu(cpu float32, cpu float32)"
    )
    assert explained == (
        "example::fused_bias_gelu(cpu float32): native ember-op-example kernel "
        "fused_bias_gelu_f32\n"
    )


@backend_example
def test_backend_example_serves_its_device_with_cpu_fallback():
    out = run(
        """
        import warnings
        import ember
        from ember.dispatcher.registry import PerformanceWarning

        x = ember.randn(3, device="ref")
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            y = x * 2 + x  # native ref kernels: no warning
        print(y.device, bool(((y - 3 * x).abs() < 1e-6).all().cpu().item()))
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            x.exp()
        print([str(w.message).split(";")[0] for w in caught])
        try:
            x.numpy()
        except TypeError as exc:
            print("numpy() refused")
        """
    )
    assert out.splitlines() == [
        "ref:0 True",
        "[\"'exp' has no ref kernel\"]",
        "numpy() refused",
    ]
    report = run("", "-m", "ember.plugins")
    assert re.search(
        r"\n  ref +0\.1\.0 +ember-backend-ref +ref +0 +ref: available \(1 device\)\n", report
    )
    assert "cpu fallback on ref (" in report


@backend_example
def test_backend_example_without_fallback_names_what_is_missing(tmp_path):
    policy = tmp_path / "plugins.toml"
    policy.write_text("[backends.ref]\nfallback = false\n")
    out = run(
        """
        import ember
        try:
            ember.ones(2, device="ref").exp()
        except NotImplementedError as exc:
            print(exc)
        """,
        env={"EMBER_PLUGINS_CONFIG": str(policy)},
    )
    assert out.startswith(
        "'exp' is not implemented for device 'ref' and dtype float32 (backend 'ref'). "
        "Implemented by: cpu (cpu: "
    )
    assert out.rstrip().endswith("CPU fallback is off for this backend (plugins.toml).")


@op_example
@backend_example
def test_op_example_on_the_backend_example_device():
    out = run(
        """
        import ember
        x = ember.randn(2, 4, device="ref", requires_grad=True)
        b = ember.zeros(4, device="ref")
        y = ember.ops.example.fused_bias_gelu(x, b, approximate="tanh")  # its decomposition
        y.sum().backward()
        print(y.device, x.grad.device)
        want = ember.nn.functional.gelu(x.detach().cpu(), approximate="tanh")
        print(bool((y.detach().cpu() - want).abs().max() < 1e-6))
        """
    )
    assert out.splitlines() == ["ref:0 ref:0", "True"]
