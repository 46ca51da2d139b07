"""The ``fused=True`` path of Adam, AdamW and SGD: PyTorch's checks, then one call of the fused
op (``ember._fused_adam_``/``_fused_adamw_``/``_fused_sgd_``) per device and dtype group.

As in PyTorch, a GradScaler that sees ``_step_supports_amp_scaling`` hands the optimizer its
``grad_scale`` and ``found_inf`` as attributes; the op unscales the gradients itself and skips
the update when ``found_inf`` is 1 (the step counters are then decremented back).
"""

from __future__ import annotations

import ember

# PyTorch's list (torch.utils._foreach_utils._get_fused_kernels_supported_devices), for its message
_PYTORCH_FUSED_DEVICES = ["mps", "cuda", "xpu", "hpu", "cpu", "mtia", "privateuseone"]


def check_options(fused, foreach, differentiable) -> None:
    """The constructor's checks of ``torch.optim.Adam/SGD``."""
    if fused:
        if differentiable:
            raise RuntimeError("`fused` does not support `differentiable`")
        if foreach:
            raise RuntimeError("`fused` and `foreach` cannot be `True` together.")


def check_params(params) -> None:
    """``check_param`` of each parameter, once per dtype (dtypes are singletons)."""
    seen = set()
    for p in params:
        if p._dtype not in seen:
            check_param(p)
            seen.add(p._dtype)


def check_param(p) -> None:
    """``_device_dtype_check_for_fused``: floating point tensors only (ember's devices all run
    the fused ops: a device without a kernel runs the op's decomposition)."""
    if not p.dtype.is_floating_point or p.dtype.is_complex:
        raise RuntimeError(
            "`fused=True` requires all the params to be floating point Tensors of supported "
            f"devices: {_PYTORCH_FUSED_DEVICES} but {p.dtype} and {p.device.type}"
        )


def groups(*lists):
    """The lists split by (device, dtype) of the first list's tensors, in first-seen order."""
    first = lists[0]
    if first:  # the usual case, one group: no key per tensor
        device, dtype = first[0]._storage.device, first[0]._dtype
        if all(t._storage.device is device and t._dtype is dtype for t in first):
            return [lists]
    found: dict = {}
    for items in zip(*lists):
        key = (str(items[0].device), items[0].dtype)
        bucket = found.setdefault(key, tuple([] for _ in lists))
        for target, item in zip(bucket, items):
            target.append(item)
    return list(found.values())


def amp_args(optimizer, device):
    """``(grad_scale, found_inf)`` set by a GradScaler, moved to ``device``; Nones otherwise."""
    scale = getattr(optimizer, "grad_scale", None)
    found = getattr(optimizer, "found_inf", None)
    return (
        None if scale is None else scale.to(device),
        None if found is None else found.to(device),
    )


def step_tensor(p):
    """A fused optimizer's step counter: a float32 scalar tensor on the parameter's device."""
    return ember.zeros((), dtype=ember.float32, device=p.device)


# The dtypes whose fused SGD step gives the per-parameter loop's bits: the kernel computes in the
# parameters' own type without fma, as the loop's ops do; float16/bfloat16 would round once
# per step there and once per op in the loop.
_LOOP_BITS = frozenset(("float32", "float64"))


def sgd_loop_lists(group, states):
    """``sgd_lists``' lists when SGD's per-parameter loop over ``group`` (``fused`` off) may
    run as one ``_fused_sgd_`` call, else None: CPU parameters of one float32/float64 dtype
    with gradients like them, no ``differentiable`` step, and momentum buffers all present or
    all still to make. Its results are the loop's to the bit (tests/optim/
    test_sgd_loop_fused.py); it spends one call where the loop spends two or three ops per
    parameter (issue 20: the per-op overhead)."""
    if group["differentiable"]:
        return None
    device = dtype = None
    for p in group["params"]:
        g = p._grad
        if g is None:
            continue
        if dtype is None:
            dtype, device = p._dtype, p._storage.device
            if device.type != "cpu" or dtype.name not in _LOOP_BITS:
                return None
        if p._dtype is not dtype or g._dtype is not dtype:
            return None
        if p._storage.device is not device or g._storage.device is not device:
            return None
    if dtype is None:
        return None
    params, bufs, first = sgd_lists(states, group)
    if group["momentum"] != 0 and not first and any(b is None for b in bufs):
        return None  # some buffers made, some not: the loop makes each as it goes
    return params, bufs, first


def sgd_lists(states, group):
    """``(params, momentum buffers, first)`` of an SGD group: the parameters with gradients
    (checked), their buffers, and whether no buffer exists yet (then fresh ones, which the op
    fills with the gradients on this first step)."""
    params = [p for p in group["params"] if p._grad is not None]
    check_params(params)
    if group["momentum"] == 0:  # no buffers: no state lookups (a Python hash per tensor)
        return params, [None] * len(params), False
    bufs = [states[p].get("momentum_buffer") for p in params]
    first = all(b is None for b in bufs)
    if first:
        bufs = [ember.empty_like(p.grad) for p in params]
    return params, bufs, first
