"""PyTorch as the oracle for ember.nn: same weights, same inputs, same upstream gradients.

Tests import ``torch`` through ``pytest.importorskip`` themselves; this module only touches torch
inside its functions, so importing it never fails.
"""

from __future__ import annotations

import numpy as np

import ember

# float32 results differ from PyTorch's by summation order only; float64 checks formulas tightly.
TOL = {"float32": {"rtol": 1e-4, "atol": 1e-5}, "float64": {"rtol": 1e-9, "atol": 1e-10}}


def to_numpy(t) -> np.ndarray:
    """A host copy of an ember or torch tensor."""
    if isinstance(t, ember.Tensor):
        return t.detach().cpu().numpy().copy()
    return t.detach().cpu().numpy().copy()


def to_ember(a, device="cpu", requires_grad: bool = False):
    """An ember tensor on ``device`` from a numpy array or a torch tensor."""
    array = a if isinstance(a, np.ndarray) else to_numpy(a)
    out = ember.from_numpy(np.array(array, order="C")).to(device)
    return out.requires_grad_() if requires_grad else out


def to_torch(a, requires_grad: bool = False):
    import torch

    array = a if isinstance(a, np.ndarray) else to_numpy(a)
    out = torch.from_numpy(np.array(array, order="C"))
    return out.requires_grad_() if requires_grad else out


def copy_state(theirs, ours, device="cpu") -> None:
    """Load a torch module's state dict (parameters and persistent buffers) into ours."""
    ours.load_state_dict({k: to_ember(v, device) for k, v in theirs.state_dict().items()})


def assert_close(ours, theirs, what: str = "", rtol=None, atol=None, dtype="float32") -> None:
    tol = dict(TOL[dtype])
    tol.update({k: v for k, v in (("rtol", rtol), ("atol", atol)) if v is not None})
    a, b = to_numpy(ours), to_numpy(theirs)
    assert a.shape == b.shape, f"{what}: shape {a.shape} != torch's {b.shape}"
    assert a.dtype == b.dtype, f"{what}: dtype {a.dtype} != torch's {b.dtype}"
    np.testing.assert_allclose(a, b, err_msg=what, equal_nan=True, **tol)


def flatten(value) -> list:
    """The tensors of a nested output (tuples/lists of tensors and Nones), in order."""
    if value is None:
        return []
    if isinstance(value, (tuple, list)):
        return [t for item in value for t in flatten(item)]
    return [value]


def _is_float(array) -> bool:
    return np.issubdtype(array.dtype, np.floating)


def run_both(ours, theirs, inputs, device, kwargs=None, rng=None, grad_inputs=True):
    """Forward both modules (or functions) on the same inputs, then backward the same random
    cotangents through every floating output. Returns ``(our leaves, their leaves, our outputs,
    their outputs)`` where leaves are the input tensors (float inputs require grad, unless
    ``grad_inputs`` is False or a list of flags, one per input)."""
    import torch

    rng = rng or np.random.default_rng(0)
    kwargs = kwargs or {}
    if not isinstance(grad_inputs, (list, tuple)):
        grad_inputs = [grad_inputs] * len(inputs)
    wants = [g and isinstance(a, np.ndarray) and _is_float(a) for a, g in zip(inputs, grad_inputs)]
    ours_in = [
        to_ember(a, device, w) if isinstance(a, np.ndarray) else a for a, w in zip(inputs, wants)
    ]
    theirs_in = [to_torch(a, w) if isinstance(a, np.ndarray) else a for a, w in zip(inputs, wants)]
    ours_kw = {
        k: to_ember(v, device) if isinstance(v, np.ndarray) else v for k, v in kwargs.items()
    }
    theirs_kw = {k: to_torch(v) if isinstance(v, np.ndarray) else v for k, v in kwargs.items()}
    ours_out, theirs_out = ours(*ours_in, **ours_kw), theirs(*theirs_in, **theirs_kw)
    ours_flat, theirs_flat = flatten(ours_out), flatten(theirs_out)
    assert len(ours_flat) == len(theirs_flat), "number of outputs differs from torch's"
    ours_loss, theirs_loss = None, None
    for a, b in zip(ours_flat, theirs_flat):
        if not (b.dtype.is_floating_point and b.requires_grad):
            continue
        cotangent = rng.standard_normal(tuple(b.shape)).astype(to_numpy(b).dtype)
        ours_term = (a * to_ember(cotangent, device)).sum()
        theirs_term = (b * torch.from_numpy(cotangent)).sum()
        ours_loss = ours_term if ours_loss is None else ours_loss + ours_term
        theirs_loss = theirs_term if theirs_loss is None else theirs_loss + theirs_term
    if theirs_loss is not None:
        ours_loss.backward()
        theirs_loss.backward()
    return ours_in, theirs_in, ours_out, theirs_out


def check_module(
    ours,
    theirs,
    inputs,
    device,
    kwargs=None,
    dtype="float32",
    rtol=None,
    atol=None,
    rng=None,
    grad_inputs=True,
):
    """Outputs, input gradients and parameter gradients of ``ours`` equal ``theirs``'s.

    ``ours`` and ``theirs`` are modules (their parameters are compared by name) or functions.
    ``inputs`` are numpy arrays (floating ones get gradients, unless ``grad_inputs`` says not)
    or other values passed as they are.
    """
    tol = {"dtype": dtype, "rtol": rtol, "atol": atol}
    ours_in, theirs_in, ours_out, theirs_out = run_both(
        ours, theirs, inputs, device, kwargs, rng, grad_inputs
    )
    for i, (a, b) in enumerate(zip(flatten(ours_out), flatten(theirs_out))):
        assert_close(a, b, f"output {i}", **tol)
    for i, (a, b) in enumerate(zip(ours_in, theirs_in)):
        if getattr(b, "grad", None) is not None:
            assert a.grad is not None, f"input {i} got no gradient"
            assert_close(a.grad, b.grad, f"gradient of input {i}", **tol)
    if isinstance(ours, ember.nn.Module):
        check_param_grads(ours, theirs, **tol)
    return ours_out, theirs_out


def check_param_grads(ours, theirs, dtype="float32", rtol=None, atol=None) -> None:
    theirs_params = dict(theirs.named_parameters())
    ours_params = dict(ours.named_parameters())
    assert list(ours_params) == list(theirs_params), "parameter names differ from torch's"
    for name, b in theirs_params.items():
        a = ours_params[name]
        if b.grad is None:
            assert a.grad is None, f"{name} has a gradient, torch's has none"
            continue
        assert a.grad is not None, f"{name} got no gradient"
        assert_close(a.grad, b.grad, f"gradient of {name}", rtol=rtol, atol=atol, dtype=dtype)


def pair(name: str, *args, device="cpu", dtype="float32", **kwargs):
    """``(ours, theirs)``: ``nn.<name>(*args, **kwargs)`` built in both frameworks, ours holding
    torch's weights (and buffers), both in ``dtype``."""
    import torch

    torch.manual_seed(0)
    theirs = getattr(torch.nn, name)(*args, **kwargs).to(getattr(torch, dtype))
    ours = getattr(ember.nn, name)(*args, **kwargs).to(getattr(ember, dtype))
    copy_state(theirs, ours, device)
    return ours.to(device), theirs
