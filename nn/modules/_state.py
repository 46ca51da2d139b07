"""The state-dict half of ``nn.Module``: saving parameters and persistent buffers by dotted
name, and loading them back with PyTorch's key checks, messages and override points."""

from __future__ import annotations

from collections import OrderedDict, namedtuple
from collections.abc import Mapping

from ember._tensor import Tensor

from ..parameter import Parameter

_EXTRA_STATE = "_extra_state"


class _IncompatibleKeys(namedtuple("IncompatibleKeys", ["missing_keys", "unexpected_keys"])):
    __slots__ = ()

    def __repr__(self) -> str:
        if not self.missing_keys and not self.unexpected_keys:
            return "<All keys matched successfully>"
        return super().__repr__()

    __str__ = __repr__


class StateDict:
    """``state_dict`` / ``load_state_dict`` for Module (which supplies ``_parameters``,
    ``_buffers``, ``_non_persistent_buffers_set``, ``_modules`` and ``_state_dict_hooks``)."""

    def get_extra_state(self):
        """State beyond parameters and buffers; a subclass that overrides this (and
        ``set_extra_state``) has it saved under ``<prefix>_extra_state``."""
        raise RuntimeError(
            "Reached a code path in Module.get_extra_state() that should never be called."
        )

    def set_extra_state(self, state) -> None:
        raise RuntimeError(
            "Reached a code path in Module.set_extra_state() that should never be called."
        )

    def _has_extra_state(self) -> bool:
        return type(self).get_extra_state is not StateDict.get_extra_state

    def _save_to_state_dict(self, destination, prefix: str, keep_vars: bool) -> None:
        """This module's own parameters and persistent buffers (PyTorch's override point)."""
        for name, param in self._parameters.items():
            if param is not None:
                destination[prefix + name] = param if keep_vars else param.detach()
        for name, buf in self._buffers.items():
            if buf is not None and name not in self._non_persistent_buffers_set:
                destination[prefix + name] = buf if keep_vars else buf.detach()
        if self._has_extra_state():
            destination[prefix + _EXTRA_STATE] = self.get_extra_state()

    def state_dict(self, *args, destination=None, prefix: str = "", keep_vars: bool = False):
        """Parameters and persistent buffers by dotted name (detached unless ``keep_vars``)."""
        if args:
            destination = args[0] if len(args) > 0 else destination
            prefix = args[1] if len(args) > 1 else prefix
            keep_vars = args[2] if len(args) > 2 else keep_vars
        if destination is None:
            destination = OrderedDict()
        self._save_to_state_dict(destination, prefix, keep_vars)
        for name, module in self._modules.items():
            if module is not None:
                module.state_dict(
                    destination=destination, prefix=prefix + name + ".", keep_vars=keep_vars
                )
        for hook in self._state_dict_hooks.values():
            replaced = hook(self, destination, prefix, {})  # PyTorch's (module, sd, prefix, meta)
            if replaced is not None:
                destination = replaced
        return destination

    # ---- state-dict hooks (PyTorch's; weight_norm and spectral_norm convert old keys) ---------
    def _register_state_dict_hook(self, hook):
        """``hook(module, state_dict, prefix, local_metadata)`` after this module's state_dict;
        may return a replacement dict."""
        from .module import _Handle

        handle = _Handle(self._state_dict_hooks)
        self._state_dict_hooks[handle.id] = hook
        return handle

    register_state_dict_post_hook = _register_state_dict_hook

    def _register_load_state_dict_pre_hook(self, hook, with_module: bool = False):
        """``hook(state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
        error_msgs)`` (with ``module`` first when ``with_module``) before this module loads its
        own entries; it may rewrite ``state_dict``."""
        from .module import _Handle

        hooks = self.__dict__.setdefault("_load_state_dict_pre_hooks", OrderedDict())
        handle = _Handle(hooks)
        hooks[handle.id] = (hook, with_module)  # the module is passed at call time (deepcopy)
        return handle

    def register_load_state_dict_pre_hook(self, hook):
        """``hook(module, state_dict, prefix, local_metadata, strict, missing_keys,
        unexpected_keys, error_msgs)`` before this module loads its own entries."""
        return self._register_load_state_dict_pre_hook(hook, with_module=True)

    def _load_from_state_dict(
        self, state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys, error_msgs
    ) -> None:
        """Load this module's own parameters and persistent buffers, collecting missing and
        unexpected keys and error messages (PyTorch's override point, same arguments)."""
        local = {k: v for k, v in self._parameters.items() if v is not None}
        local.update(
            (k, v)
            for k, v in self._buffers.items()
            if v is not None and k not in self._non_persistent_buffers_set
        )
        assign = local_metadata.get("assign_to_params_buffers", False)
        for name, current in local.items():
            key = prefix + name
            if key in state_dict:
                self._load_one(name, key, current, state_dict[key], assign, error_msgs)
            elif strict:
                missing_keys.append(key)
        extra_key = prefix + _EXTRA_STATE
        if self._has_extra_state():
            if extra_key in state_dict:
                self.set_extra_state(state_dict[extra_key])
            elif strict:
                missing_keys.append(extra_key)
        elif strict and extra_key in state_dict:
            unexpected_keys.append(extra_key)
        if not strict:
            return
        for key in state_dict:
            if key.startswith(prefix) and key != extra_key:
                head, dot, _ = key[len(prefix) :].partition(".")
                if head not in (self._modules if dot else local):
                    unexpected_keys.append(key)

    def _load_one(self, name, key, current, value, assign, error_msgs) -> None:
        from ember.autograd import no_grad

        if not isinstance(value, Tensor):
            error_msgs.append(
                f'While copying the parameter named "{key}", expected ember.Tensor or '
                f"Tensor-like object from checkpoint but received {type(value)}"
            )
            return
        if current.ndim == 0 and tuple(value.shape) == (1,):
            value = value[0]  # checkpoints from before 0-dim tensors, as PyTorch accepts
        if value.shape != current.shape:
            error_msgs.append(
                f"size mismatch for {key}: copying a param with shape {value.shape} from "
                f"checkpoint, the shape in current model is {current.shape}."
            )
            return
        if assign:
            if name in self._parameters:
                value = Parameter(value, requires_grad=current.requires_grad)
            setattr(self, name, value)
            return
        try:
            with no_grad():
                current.copy_(value)
        except Exception as exc:  # reported with every other problem, as PyTorch does
            error_msgs.append(
                f'While copying the parameter named "{key}", whose dimensions in the model are '
                f"{current.shape} and whose dimensions in the checkpoint are {value.shape}, an "
                f"exception occurred : {exc.args}."
            )

    def load_state_dict(self, state_dict, strict: bool = True, assign: bool = False):
        """Copy parameters and buffers from ``state_dict`` (or assign them, with ``assign``).

        Returns ``(missing_keys, unexpected_keys)``; with ``strict`` (default) either being
        non-empty raises RuntimeError listing them. Shape mismatches always raise, naming the key.
        """
        if not isinstance(state_dict, Mapping):
            raise TypeError(f"Expected state_dict to be dict-like, got {type(state_dict)}.")
        missing, unexpected, errors = [], [], []
        metadata = getattr(state_dict, "_metadata", None) or {}

        def load(module, prefix: str) -> None:
            local_metadata = dict(metadata.get(prefix[:-1], {}))
            if assign:
                local_metadata["assign_to_params_buffers"] = True
            for hook, with_module in module.__dict__.get("_load_state_dict_pre_hooks", {}).values():
                args = (state_dict, prefix, local_metadata, True, missing, unexpected, errors)
                hook(module, *args) if with_module else hook(*args)
            module._load_from_state_dict(
                state_dict, prefix, local_metadata, True, missing, unexpected, errors
            )
            for name, child in module._modules.items():
                if child is not None:
                    load(child, prefix + name + ".")

        state_dict = OrderedDict(state_dict)  # modules may add defaults (BatchNorm's counter)
        load(self, "")
        if strict:
            for label, keys in (("Unexpected", unexpected), ("Missing", missing)):
                if keys:
                    listed = ", ".join(f'"{k}"' for k in keys)
                    errors.insert(0, f"{label} key(s) in state_dict: {listed}. ")
        if errors:
            raise RuntimeError(
                f"Error(s) in loading state_dict for {type(self).__name__}:\n\t"
                + "\n\t".join(errors)
            )
        return _IncompatibleKeys(missing, unexpected)
