"""The ``Optimizer`` base class: parameter groups, per-parameter state, state dicts, step hooks.

Subclasses implement ``step``; the base wraps every subclass's ``step`` (``__init_subclass__``) so
that it runs under ``no_grad``, calls the registered step hooks, and marks the optimizer as
stepped for the learning-rate schedulers' call-order warning.

Scalar state that PyTorch keeps as a 0-d tensor (Adam's ``step``...) is a Python float in the
live ``state``: bumping a tensor would cost a dispatched op per parameter per step. ``state_dict``
exports it as a 0-d float32 tensor, PyTorch's layout, and ``load_state_dict`` takes either.
"""

from __future__ import annotations

import functools
import struct
import warnings
from collections import OrderedDict, defaultdict
from collections.abc import Callable
from copy import deepcopy
from typing import Any

import ember
from ember._hooks import RemovableHandle
from ember._tensor import Tensor
from ember.autograd import enable_grad, no_grad

_HOOK_TABLES = (
    "_optimizer_step_pre_hooks",
    "_optimizer_step_post_hooks",
    "_optimizer_state_dict_pre_hooks",
    "_optimizer_state_dict_post_hooks",
    "_optimizer_load_state_dict_pre_hooks",
    "_optimizer_load_state_dict_post_hooks",
)

# State entries that are Python floats here and 0-d float32 tensors in PyTorch's state dicts
# (NAdam's mu_product, ASGD's eta and mu besides every optimizer's step).
SCALAR_STATE_KEYS = ("step", "mu_product", "eta", "mu")


class _Required:
    """Marks a default that every parameter group must give (PyTorch's ``required``)."""

    def __repr__(self) -> str:
        return "<required parameter>"


required = _Required()


def check_nonnegative(**values) -> None:
    """PyTorch's argument checks: ``ValueError("Invalid <what>: <value>")`` for a negative one."""
    for name, value in values.items():
        if name == "lr" and isinstance(value, Tensor) and value.numel() != 1:
            raise ValueError("Tensor lr must be 1-element")
        if not value >= 0.0:
            what = {"lr": "learning rate", "eps": "epsilon value"}.get(name, f"{name} value")
            raise ValueError(f"Invalid {what}: {value}")


def check_betas(betas) -> None:
    """PyTorch's ``Invalid beta parameter at index i`` checks (each beta in [0, 1))."""
    for index, beta in enumerate(betas):
        if not 0.0 <= beta < 1.0:
            raise ValueError(f"Invalid beta parameter at index {index}: {beta}")


def adam_family_defaults(*, lr, betas, eps, weight_decay, nonnegative=(), **rest) -> dict:
    """The defaults dict of an Adam-style optimizer, after PyTorch's checks in PyTorch's order
    (lr, eps, betas, weight_decay, then the ``nonnegative`` names of ``rest``); ``rest`` keeps
    the order given, which is the order of the group's keys in ``state_dict()``."""
    check_nonnegative(lr=lr, eps=eps)
    check_betas(betas)
    check_nonnegative(weight_decay=weight_decay, **{name: rest[name] for name in nonnegative})
    return {"lr": lr, "betas": betas, "eps": eps, "weight_decay": weight_decay, **rest}


def float32(value: float) -> float:
    """``value`` rounded to float32: scalar state PyTorch keeps in 0-d float32 tensors
    (NAdam's mu_product, ASGD's eta) rounds each step, and the trajectory follows it."""
    return struct.unpack("f", struct.pack("f", value))[0]


def scalar(value) -> float:
    """A hyper-parameter as a Python float (a 1-element tensor lr is read once per step)."""
    return value.item() if isinstance(value, Tensor) else value


def add_scaled(a: Tensor, b: Tensor, alpha: float) -> Tensor:
    """``a + alpha * b`` in one op (``add(..., alpha=)`` would multiply first, as a second op)."""
    return a.add(b) if alpha == 1 else a.addcmul(b, alpha)


def add_scaled_(a: Tensor, b: Tensor, alpha: float) -> Tensor:
    """In-place ``a += alpha * b`` in one op."""
    return a.add_(b) if alpha == 1 else a.addcmul_(b, alpha)


def advance_step(state: dict) -> float:
    """``state["step"]`` plus one, stored back, as a Python float. A tensor step (a state_dict's,
    as ``swap_in_optimizer_params_and_state`` installs it) is incremented in place and read back
    as PyTorch's non-capturable path reads it: the bias corrections stay in double, and the
    caller's tensor sees the new step."""
    step = state["step"]
    if isinstance(step, Tensor):
        step.add_(1)
        return float(step.item())
    state["step"] = step + 1.0
    return state["step"]


def grads_of(group: dict, weight_decay: float = 0):
    """``(param, grad)`` for the group's parameters that have a gradient, the gradient negated
    when the group maximizes and with ``weight_decay * param`` added (L2) when given."""
    maximize = group.get("maximize", False)
    for p in group["params"]:
        grad = p.grad
        if grad is None:
            continue
        if maximize:
            grad = -grad
        if weight_decay != 0:
            grad = add_scaled(grad, p, weight_decay)
        yield p, grad


def lazy_state(states, p: Tensor, *buffers: str, **scalars) -> dict:
    """``states[p]``, created on first use: ``step`` 0, the given scalars, and a zero tensor
    like ``p`` for each name in ``buffers`` (PyTorch's lazy per-parameter state)."""
    state = states[p]
    if not state:
        state["step"] = 0.0
        state.update(scalars)
        for name in buffers:
            state[name] = ember.zeros_like(p)
    return state


def run_closure(closure):
    """The closure's loss, evaluated with gradients on (``step`` itself runs under no_grad)."""
    if closure is None:
        return None
    with enable_grad():
        return closure()


def _hooked_step(step):
    @functools.wraps(step)
    def wrapper(self, *args, **kwargs):
        if self._in_step:  # a subclass's step calling super().step(): hooks already ran
            return step(self, *args, **kwargs)
        for hook in tuple(self._optimizer_step_pre_hooks.values()):
            result = hook(self, args, kwargs)
            if result is not None:
                args, kwargs = result
        self._in_step = True
        try:
            with no_grad():
                out = step(self, *args, **kwargs)
        finally:
            self._in_step = False
        self._opt_called = True
        for hook in tuple(self._optimizer_step_post_hooks.values()):
            hook(self, args, kwargs)
        return out

    wrapper._hooked = True
    return wrapper


class Optimizer:
    """Base class for all optimizers, like ``torch.optim.Optimizer``.

    Args:
        params: an iterable of Tensors, of ``(name, Tensor)`` pairs, or of dicts (parameter
            groups: ``{"params": [...], "lr": ...}``) with per-group options.
        defaults: default values of the optimization options, used for every group that does
            not set them.
    """

    _in_step = False
    _opt_called = False

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        step = cls.__dict__.get("step")
        if step is not None and not getattr(step, "_hooked", False):
            cls.step = _hooked_step(step)

    def __init__(self, params, defaults: dict[str, Any]) -> None:
        self.defaults = defaults
        self._add_hook_tables()
        if isinstance(params, Tensor):
            raise TypeError(
                "params argument given to the optimizer should be an iterable of Tensors or "
                f"dicts, but got {type(params).__name__}"
            )
        self.state: defaultdict = defaultdict(dict)
        self.param_groups: list[dict[str, Any]] = []
        param_groups = list(params)
        if not param_groups:
            raise ValueError("optimizer got an empty parameter list")
        if not isinstance(param_groups[0], dict):
            param_groups = [{"params": param_groups}]
        for group in param_groups:
            self.add_param_group(group)

    def __getstate__(self) -> dict[str, Any]:
        return {"defaults": self.defaults, "state": self.state, "param_groups": self.param_groups}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._add_hook_tables()  # an unpickled optimizer has none

    def _add_hook_tables(self) -> None:
        for name in _HOOK_TABLES:
            self.__dict__.setdefault(name, OrderedDict())

    def __repr__(self) -> str:
        lines = [f"{type(self).__name__} ("]
        for i, group in enumerate(self.param_groups):
            lines.append(f"Parameter Group {i}")
            lines.extend(f"    {key}: {group[key]}" for key in sorted(group) if key != "params")
        lines.append(")")
        return "\n".join(lines)

    # ---- parameter groups --------------------------------------------------------------------
    def add_param_group(self, param_group: dict[str, Any]) -> None:
        """Add a parameter group (a dict with ``"params"`` and optional per-group options).

        Useful when fine-tuning: frozen layers can be made trainable and added as training goes.
        """
        if not isinstance(param_group, dict):
            raise TypeError(f"param_group must be a dict, but got {type(param_group).__name__}")
        params = param_group["params"]
        if isinstance(params, Tensor):
            params = [params]
        elif isinstance(params, set):
            raise TypeError(
                "optimizer parameters need to be organized in ordered collections, but the "
                "ordering of tensors in sets will change between runs. Please use a list instead."
            )
        tensors, names = [], []
        for param in params:
            if isinstance(param, tuple):
                names.append(param[0])
                param = param[1]
            tensors.append(param)
        param_group["params"] = tensors
        if names:
            if len(names) != len(tensors):
                raise ValueError(
                    "all optimizer params should be with/without names. Some param names are "
                    "missing"
                )
            param_group["param_names"] = names
        for param in tensors:
            if not isinstance(param, Tensor):
                raise TypeError(
                    "optimizer can only optimize Tensors, but one of the params is "
                    f"{type(param).__name__}"
                )
            if not (param.is_leaf or param.retains_grad):
                raise ValueError("can't optimize a non-leaf Tensor")
        for name, default in self.defaults.items():
            if default is required and name not in param_group:
                raise ValueError(
                    "parameter group didn't specify a value of required optimization "
                    f"parameter {name}"
                )
            param_group.setdefault(name, default)
        if len({id(p) for p in tensors}) != len(tensors):
            warnings.warn(
                "optimizer contains a parameter group with duplicate parameters; in future, "
                "this will cause an error",
                stacklevel=3,
            )
        seen: set[int] = set()
        for group in self.param_groups:
            seen.update(id(p) for p in group["params"])
            if ("param_names" in param_group) != ("param_names" in group):
                which = "with names" if "param_names" in param_group else "without names"
                raise ValueError(
                    "all optimizer param groups should be with/without names. "
                    f"cannot add param group {which} to the optimizer"
                )
        if any(id(p) in seen for p in tensors):
            raise ValueError("some parameters appear in more than one parameter group")
        self.param_groups.append(param_group)

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Reset the gradients of all optimized tensors.

        Args:
            set_to_none: set ``.grad`` to None instead of filling it with zeros (less memory,
                and optimizers skip parameters whose grad is None).
        """
        for group in self.param_groups:
            for p in group["params"]:
                grad = p.grad
                if grad is None:
                    continue
                if set_to_none:
                    p.grad = None
                    continue
                if grad.grad_fn is not None:
                    grad.detach_()
                else:
                    grad.requires_grad_(False)
                grad.zero_()

    def step(self, closure: Callable[[], Any] | None = None):
        """Perform a single optimization step; ``closure`` re-evaluates the model, returns loss."""
        raise NotImplementedError

    # ---- hooks -------------------------------------------------------------------------------
    def register_step_pre_hook(self, hook) -> RemovableHandle:
        """``hook(optimizer, args, kwargs)`` before each step; may return new ``(args, kwargs)``."""
        return _register(self._optimizer_step_pre_hooks, hook)

    def register_step_post_hook(self, hook) -> RemovableHandle:
        """``hook(optimizer, args, kwargs)`` after each step."""
        return _register(self._optimizer_step_post_hooks, hook)

    def register_state_dict_pre_hook(self, hook, prepend: bool = False) -> RemovableHandle:
        """``hook(optimizer)`` before ``state_dict`` builds its result."""
        return _register(self._optimizer_state_dict_pre_hooks, hook, prepend)

    def register_state_dict_post_hook(self, hook, prepend: bool = False) -> RemovableHandle:
        """``hook(optimizer, state_dict)``, may return a replacement state dict."""
        return _register(self._optimizer_state_dict_post_hooks, hook, prepend)

    def register_load_state_dict_pre_hook(self, hook, prepend: bool = False) -> RemovableHandle:
        """``hook(optimizer, state_dict)`` before loading, may return a replacement state dict."""
        return _register(self._optimizer_load_state_dict_pre_hooks, hook, prepend)

    def register_load_state_dict_post_hook(self, hook, prepend: bool = False) -> RemovableHandle:
        """``hook(optimizer)`` after loading."""
        return _register(self._optimizer_load_state_dict_post_hooks, hook, prepend)

    # ---- state dicts -------------------------------------------------------------------------
    def state_dict(self) -> dict[str, Any]:
        """The optimizer's state as ``{"state": {id: {...}}, "param_groups": [{..., "params":
        [ids]}]}``, PyTorch's layout: parameters are referred to by integer ids, numbered in
        group order; state tensors are the live ones (not copies), like PyTorch's.
        """
        for hook in self._optimizer_state_dict_pre_hooks.values():
            hook(self)
        ids: dict[int, int] = {}
        groups = []
        for group in self.param_groups:
            packed = {key: value for key, value in group.items() if key != "params"}
            for p in group["params"]:
                ids.setdefault(id(p), len(ids))
            packed["params"] = [ids[id(p)] for p in group["params"]]
            groups.append(packed)
        state = {
            (ids[id(key)] if isinstance(key, Tensor) else key): _export_state(value)
            for key, value in self.state.items()
        }
        result = {"state": state, "param_groups": groups}
        for hook in self._optimizer_state_dict_post_hooks.values():
            replaced = hook(self, result)
            if replaced is not None:
                result = replaced
        return result

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Load a state from ``state_dict()``; tensors are copied, cast to each parameter's dtype
        (floating parameters) and device, so the optimizer never aliases the given dict.

        Raises:
            ValueError: when the number of groups or of parameters in a group differ.
        """
        state_dict = state_dict.copy()
        for hook in self._optimizer_load_state_dict_pre_hooks.values():
            replaced = hook(self, state_dict)
            if replaced is not None:
                state_dict = replaced
        groups = self.param_groups
        saved_groups = deepcopy(state_dict["param_groups"])
        if len(groups) != len(saved_groups):
            raise ValueError("loaded state dict has a different number of parameter groups")
        for group, saved in zip(groups, saved_groups):
            if len(group["params"]) != len(saved["params"]):
                raise ValueError(
                    "loaded state dict contains a parameter group that doesn't match the size "
                    "of optimizer's group"
                )
        id_map = {
            saved_id: p
            for saved, group in zip(saved_groups, groups)
            for saved_id, p in zip(saved["params"], group["params"])
        }
        state: defaultdict = defaultdict(dict)
        for key, value in state_dict["state"].items():
            if key in id_map:
                param = id_map[key]
                state[param] = _import_state(param, value)
            else:
                state[key] = value
        for group, saved in zip(groups, saved_groups):
            saved["params"] = group["params"]
            if "param_names" in group and "param_names" not in saved:
                saved["param_names"] = group["param_names"]
        self.__setstate__({"state": state, "param_groups": saved_groups})
        for hook in self._optimizer_load_state_dict_post_hooks.values():
            hook(self)


def _register(hooks: OrderedDict, hook, prepend: bool = False) -> RemovableHandle:
    handle = RemovableHandle(hooks)
    hooks[handle.id] = hook
    if prepend:
        hooks.move_to_end(handle.id, last=False)
    return handle


def _export_state(entry):
    if not isinstance(entry, dict):
        return entry
    return {
        key: ember.tensor(float(value), dtype=ember.float32)
        if key in SCALAR_STATE_KEYS and not isinstance(value, Tensor)
        else value
        for key, value in entry.items()
    }


def _import_state(param: Tensor, value, key=None):
    """A deep copy of ``value`` with tensors on ``param``'s device (and dtype, if floating)."""
    if isinstance(value, Tensor):
        if key in SCALAR_STATE_KEYS:
            return float(value.item())
        dtype = param.dtype if param.is_floating_point() else value.dtype
        return value.to(dtype=dtype, device=param.device, copy=True)
    if isinstance(value, dict):
        return {k: _import_state(param, v, k) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(_import_state(param, v) for v in value)
    return value
