"""``nn.Module``: the base class of every layer and model, with PyTorch's behaviour."""

from __future__ import annotations

import inspect
import itertools
import re
import warnings
from collections import OrderedDict

from ember import _profiler_modules as _scopes
from ember._hooks import RemovableHandle
from ember._tensor import Tensor
from ember.autograd import module_hooks as _bw

from ..parameter import Buffer, Parameter
from ._state import StateDict


class _Handle(RemovableHandle):
    """Removes one hook from its table (and from the tables of its options)."""

    _ids = itertools.count()
    # hooks registered or removed on any module: a compiled entry rechecks its modules' hooks
    # only when this moved (compiler/guards.py, HookGuard)
    changes = 0

    def __init__(self, table: dict, *option_sets: set):
        self.table, self.option_sets = table, option_sets
        self.id = next(self._ids)
        _Handle.changes += 1

    def remove(self) -> None:
        self.table.pop(self.id, None)
        for options in self.option_sets:
            options.discard(self.id)
        _Handle.changes += 1


# The forward hooks of every module, run before each module's own (PyTorch's global hooks).
GLOBAL_FORWARD_PRE_HOOKS: OrderedDict = OrderedDict()
GLOBAL_FORWARD_HOOKS: OrderedDict = OrderedDict()
_GLOBAL_WITH_KWARGS: set = set()
_GLOBAL_ALWAYS_CALLED: set = set()


def register_module_forward_pre_hook(hook):
    """A forward pre-hook of every module, ``hook(module, args)``, run before the module's own;
    may return replacement args. PyTorch's, meant for debugging and profiling."""
    handle = _Handle(GLOBAL_FORWARD_PRE_HOOKS)
    GLOBAL_FORWARD_PRE_HOOKS[handle.id] = hook
    return handle


def register_module_forward_hook(hook, *, with_kwargs: bool = False, always_call: bool = False):
    """A forward hook of every module, ``hook(module, args, output)`` (``with_kwargs``:
    ``hook(module, args, kwargs, output)``), run before the module's own; may return a
    replacement output. With ``always_call`` it also runs when forward raises."""
    handle = _Handle(GLOBAL_FORWARD_HOOKS, _GLOBAL_WITH_KWARGS, _GLOBAL_ALWAYS_CALLED)
    GLOBAL_FORWARD_HOOKS[handle.id] = hook
    if with_kwargs:
        _GLOBAL_WITH_KWARGS.add(handle.id)
    if always_call:
        _GLOBAL_ALWAYS_CALLED.add(handle.id)
    return handle


def register_module_full_backward_hook(hook):
    """A full backward hook of every module (run before the module's own); PyTorch's, meant for
    debugging and profiling."""
    _bw.choose_kind(None, full=True)
    handle = _Handle(_bw.GLOBAL_BACKWARD_HOOKS)
    _bw.GLOBAL_BACKWARD_HOOKS[handle.id] = hook
    return handle


def register_module_backward_hook(hook):
    """Deprecated (use ``register_module_full_backward_hook``): a legacy backward hook of every
    module."""
    _bw.choose_kind(None, full=False)
    handle = _Handle(_bw.GLOBAL_BACKWARD_HOOKS)
    _bw.GLOBAL_BACKWARD_HOOKS[handle.id] = hook
    return handle


def register_module_full_backward_pre_hook(hook):
    """A backward pre-hook of every module (run before the module's own)."""
    handle = _Handle(_bw.GLOBAL_BACKWARD_PRE_HOOKS)
    _bw.GLOBAL_BACKWARD_PRE_HOOKS[handle.id] = hook
    return handle


# Errors a layer's forward raises for bad input; the innermost library layer adds its name.
_LAYER_ERRORS = (RuntimeError, ValueError, IndexError, AssertionError)


def _shapes(value):
    if isinstance(value, Tensor):
        return str(list(value.shape))
    if isinstance(value, (tuple, list)) and any(isinstance(v, Tensor) for v in value):
        return "(" + ", ".join(_shapes(v) for v in value) + ")"
    return None


def _name_layer(module, args, exc) -> None:
    """Prefix the message of ``exc``, raised inside a layer of ember.nn, with that layer (as its
    repr shows it) and the shapes of its inputs. Layers around it leave the message alone, and
    so do containers (``_names_errors = False``: an error inside is a member's) and
    user-defined modules, whose errors are their own."""
    if getattr(exc, "_ember_layer", False) or not type(module)._names_errors:
        return
    if not type(module).__module__.startswith("ember.nn."):
        return
    if not exc.args or not isinstance(exc.args[0], str):
        return
    extra = module.extra_repr()
    name = module._get_name()
    if not module._modules and "\n" not in extra:
        name += f"({extra})"
    shapes = [s for s in map(_shapes, args) if s is not None]
    if shapes:
        plural = "s" if len(shapes) > 1 else ""
        name += f" got input{plural} of shape{plural} {', '.join(shapes)}"
    exc.args = (f"{name}: {exc.args[0]}",) + exc.args[1:]
    exc._ember_layer = True


_WORDS = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")


def _refuse_non_tensor(module, args, kwargs) -> None:
    """An ember.nn layer given a list (say) fails deep inside with an AttributeError; raise what
    PyTorch says instead: "linear(): argument 'input' (position 1) must be Tensor, not list".
    The functional's name is the class's ``_op_name``, else its own in snake case (MaxPool2d:
    max_pool2d, MSELoss: mse_loss)."""
    cls = type(module)
    if not cls._names_errors or not cls.__module__.startswith("ember.nn."):
        return
    if not args or isinstance(args[0], Tensor):
        return
    try:  # a call that does not fit forward's signature says so itself ("missing argument")
        inspect.signature(module.forward).bind(*args, **kwargs)
    except TypeError:
        return
    name = cls._op_name or _WORDS.sub("_", cls.__name__).lower()
    raise TypeError(
        f"{name}(): argument 'input' (position 1) must be Tensor, not {type(args[0]).__name__}"
    )


def _addindent(text: str, spaces: int) -> str:
    lines = text.split("\n")
    if len(lines) == 1:
        return text
    rest = (" " * spaces + line if line.strip() else "" for line in lines[1:])
    return lines[0] + "\n" + "\n".join(rest)


class Module(StateDict):
    """Base class for neural network layers and models.

    Assign ``Parameter``s, ``Buffer``s and sub-``Module``s as attributes in ``__init__`` and define
    ``forward``; calling the module runs the forward hooks around ``forward``.

    Example:
        >>> class Net(ember.nn.Module):
        ...     def __init__(self):
        ...         super().__init__()
        ...         self.fc = ember.nn.Linear(4, 2)
        ...     def forward(self, x):
        ...         return self.fc(x).relu()
    """

    training: bool
    _names_errors = True  # see _name_layer; containers of other modules set it False
    _op_name: str | None = None  # the functional a layer's errors name (see _refuse_non_tensor)

    def __init__(self, *args, **kwargs) -> None:
        if args or kwargs:
            raise TypeError(
                f"{type(self).__name__}.__init__() got unexpected arguments: Module.__init__ takes "
                "none (call super().__init__() without arguments)"
            )
        setattr_ = object.__setattr__
        setattr_(self, "training", True)
        setattr_(self, "_parameters", {})
        setattr_(self, "_buffers", {})
        setattr_(self, "_non_persistent_buffers_set", set())
        setattr_(self, "_modules", {})
        setattr_(self, "_forward_pre_hooks", OrderedDict())
        setattr_(self, "_forward_hooks", OrderedDict())
        setattr_(self, "_forward_pre_hooks_with_kwargs", set())
        setattr_(self, "_forward_hooks_with_kwargs", set())
        setattr_(self, "_forward_hooks_always_called", set())
        setattr_(self, "_backward_hooks", OrderedDict())
        setattr_(self, "_backward_pre_hooks", OrderedDict())
        setattr_(self, "_is_full_backward_hook", None)
        setattr_(self, "_state_dict_hooks", OrderedDict())

    def forward(self, *args, **kwargs):
        raise NotImplementedError(
            f'Module [{type(self).__name__}] is missing the "forward" function'
        )

    _compiled_call_impl = None  # set by compile(): the compiled call replaces this one

    def __call__(self, *args, **kwargs):
        if _scopes.RECORDERS:  # a profile records nn.Module scopes (ember/_profiler_modules.py)
            return _scopes.call(self, args, kwargs)
        compiled = self._compiled_call_impl
        if compiled is not None:
            return compiled(*args, **kwargs)
        return self._call_impl(*args, **kwargs)

    def _call_impl(self, *args, **kwargs):
        try:
            if not (
                self._forward_pre_hooks
                or self._forward_hooks
                or self._backward_hooks
                or self._backward_pre_hooks
                or _bw.GLOBAL_BACKWARD_HOOKS
                or _bw.GLOBAL_BACKWARD_PRE_HOOKS
                or GLOBAL_FORWARD_PRE_HOOKS
                or GLOBAL_FORWARD_HOOKS
            ):
                return self.forward(*args, **kwargs)
            return self._call_with_hooks(args, kwargs)
        except _LAYER_ERRORS as exc:
            _name_layer(self, args, exc)
            raise
        except (AttributeError, TypeError) as exc:
            if "must be Tensor" not in str(exc):  # else an op inside already named the argument
                _refuse_non_tensor(self, args, kwargs)
            raise

    # ---- registration -----------------------------------------------------------------------
    def _check_name(self, name: str, kind: str) -> None:
        if not isinstance(name, str):
            raise TypeError(f"{kind} name should be a string, got {type(name).__name__}")
        if "." in name or name == "":
            raise KeyError(f'{kind} name can\'t contain "." and can\'t be empty, got "{name}"')

    def register_parameter(self, name: str, param) -> None:
        """Add a parameter (or None) under ``name``."""
        if "_parameters" not in self.__dict__:
            raise AttributeError("cannot assign parameter before Module.__init__() call")
        self._check_name(name, "parameter")
        if hasattr(self, name) and name not in self._parameters:
            raise KeyError(f"attribute '{name}' already exists")
        if param is not None and not isinstance(param, Parameter):
            raise TypeError(
                f"cannot assign '{type(param).__name__}' object to parameter '{name}' "
                "(ember.nn.Parameter or None required)"
            )
        self._parameters[name] = param

    def register_buffer(self, name: str, tensor, persistent: bool = True) -> None:
        """Add a buffer (state that is not a parameter, e.g. BatchNorm's running mean)."""
        if "_buffers" not in self.__dict__:
            raise AttributeError("cannot assign buffer before Module.__init__() call")
        self._check_name(name, "buffer")
        if hasattr(self, name) and name not in self._buffers:
            raise KeyError(f"attribute '{name}' already exists")
        if tensor is not None and not isinstance(tensor, Tensor):
            raise TypeError(
                f"cannot assign '{type(tensor).__name__}' object to buffer '{name}' "
                "(ember.Tensor or None required)"
            )
        if isinstance(tensor, Buffer):
            persistent = tensor.__dict__.get("persistent", persistent)
            tensor = tensor.as_subclass(Tensor)
        self._buffers[name] = tensor
        if persistent:
            self._non_persistent_buffers_set.discard(name)
        else:
            self._non_persistent_buffers_set.add(name)

    def add_module(self, name: str, module) -> None:
        """Add a child module under ``name``."""
        if module is not None and not isinstance(module, Module):
            raise TypeError(f"{type(module).__name__} is not a Module subclass")
        self._check_name(name, "module")
        if hasattr(self, name) and name not in self._modules:
            raise KeyError(f"attribute '{name}' already exists")
        self._modules[name] = module

    register_module = add_module

    def __setattr__(self, name: str, value) -> None:
        params = self.__dict__.get("_parameters")
        if isinstance(value, Parameter):
            if params is None:
                raise AttributeError("cannot assign parameters before Module.__init__() call")
            self._remove_from(name, self.__dict__, self._buffers, self._modules)
            self.register_parameter(name, value)
            return
        if params is not None and name in params:
            if value is not None:
                raise TypeError(
                    f"cannot assign '{type(value).__name__}' as parameter '{name}' "
                    "(ember.nn.Parameter or None expected)"
                )
            self.register_parameter(name, value)
            return
        modules = self.__dict__.get("_modules")
        if isinstance(value, Module):
            if modules is None:
                raise AttributeError("cannot assign module before Module.__init__() call")
            self._remove_from(name, self.__dict__, self._parameters, self._buffers)
            modules[name] = value
            return
        if modules is not None and name in modules:
            if value is not None:
                raise TypeError(
                    f"cannot assign '{type(value).__name__}' as child module '{name}' "
                    "(ember.nn.Module or None expected)"
                )
            modules[name] = value
            return
        buffers = self.__dict__.get("_buffers")
        if isinstance(value, Buffer):
            self._remove_from(name, self.__dict__, self._parameters, self._modules)
            self.register_buffer(name, value)
            return
        if buffers is not None and name in buffers:
            if value is not None and not isinstance(value, Tensor):
                raise TypeError(
                    f"cannot assign '{type(value).__name__}' as buffer '{name}' "
                    "(ember.Tensor or None expected)"
                )
            buffers[name] = value
            return
        object.__setattr__(self, name, value)

    @staticmethod
    def _remove_from(name, *tables) -> None:
        for table in tables:
            if name in table:
                del table[name]

    def __getattr__(self, name: str):
        state = self.__dict__
        for table in ("_parameters", "_buffers", "_modules"):
            found = state.get(table)
            if found is not None and name in found:
                return found[name]
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def __delattr__(self, name: str) -> None:
        for table in (self._parameters, self._buffers, self._modules):
            if name in table:
                del table[name]
                self._non_persistent_buffers_set.discard(name)
                return
        object.__delattr__(self, name)

    def __dir__(self):
        keys = set(super().__dir__())
        keys |= set(self._parameters) | set(self._buffers) | set(self._modules)
        return sorted(keys)

    # ---- traversal ----------------------------------------------------------------------------
    def _named_members(self, get_members, prefix="", recurse=True, remove_duplicate=True):
        seen = set()
        modules = (
            self.named_modules(prefix=prefix, remove_duplicate=remove_duplicate)
            if recurse
            else [(prefix, self)]
        )
        for module_prefix, module in modules:
            for name, value in get_members(module):
                if value is None or (remove_duplicate and id(value) in seen):
                    continue
                if remove_duplicate:
                    seen.add(id(value))
                yield (module_prefix + ("." if module_prefix else "") + name), value

    def named_parameters(
        self, prefix: str = "", recurse: bool = True, remove_duplicate: bool = True
    ):
        yield from self._named_members(
            lambda m: m._parameters.items(), prefix, recurse, remove_duplicate
        )

    def parameters(self, recurse: bool = True):
        for _, param in self.named_parameters(recurse=recurse):
            yield param

    def named_buffers(self, prefix: str = "", recurse: bool = True, remove_duplicate: bool = True):
        yield from self._named_members(
            lambda m: m._buffers.items(), prefix, recurse, remove_duplicate
        )

    def buffers(self, recurse: bool = True):
        for _, buf in self.named_buffers(recurse=recurse):
            yield buf

    def named_children(self):
        seen = set()
        for name, module in self._modules.items():
            if module is not None and id(module) not in seen:
                seen.add(id(module))
                yield name, module

    def children(self):
        for _, module in self.named_children():
            yield module

    def named_modules(self, memo=None, prefix: str = "", remove_duplicate: bool = True):
        if memo is None:
            memo = set()
        if remove_duplicate and id(self) in memo:
            return
        if remove_duplicate:
            memo.add(id(self))
        yield prefix, self
        for name, module in self._modules.items():
            if module is None:
                continue
            sub = prefix + ("." if prefix else "") + name
            yield from module.named_modules(memo, sub, remove_duplicate)

    def modules(self, remove_duplicate: bool = True):
        for _, module in self.named_modules(remove_duplicate=remove_duplicate):
            yield module

    def get_submodule(self, target: str):
        module = self
        for part in target.split(".") if target else []:
            if part not in module._modules:
                raise AttributeError(f"{type(module).__name__} has no submodule `{part}`")
            module = module._modules[part]
        return module

    def get_parameter(self, target: str):
        path, _, name = target.rpartition(".")
        module = self.get_submodule(path)
        if name not in module._parameters:
            raise AttributeError(f"`{name}` is not an nn.Parameter of {type(module).__name__}")
        return module._parameters[name]

    def get_buffer(self, target: str):
        path, _, name = target.rpartition(".")
        module = self.get_submodule(path)
        if name not in module._buffers:
            raise AttributeError(f"`{name}` is not a buffer of {type(module).__name__}")
        return module._buffers[name]

    # ---- modes and conversions ----------------------------------------------------------------
    def compile(self, *args, **kwargs) -> None:
        """Compile this module's calls in place with ``ember.compile`` (same arguments); the
        module keeps its class, attributes and ``state_dict`` keys."""
        from ember.compiler.api import compile_module

        compile_module(self, *args, **kwargs)

    def train(self, mode: bool = True):
        if not isinstance(mode, bool):
            raise ValueError("training mode is expected to be boolean")
        for module in self.modules():
            object.__setattr__(module, "training", mode)
        return self

    def eval(self):
        return self.train(False)

    def requires_grad_(self, requires_grad: bool = True):
        for param in self.parameters():
            param.requires_grad_(requires_grad)
        return self

    def zero_grad(self, set_to_none: bool = True) -> None:
        for param in self.parameters():
            if param.grad is None:
                continue
            if set_to_none:
                param.grad = None
            else:
                param.grad.detach_()
                param.grad.zero_()

    def _apply(self, fn):
        """Apply ``fn`` to every parameter, gradient and buffer, keeping Parameter objects."""
        from ember.__future__ import convert_parameter
        from ember.autograd import no_grad

        for module in self.children():
            module._apply(fn)
        for key, param in list(self._parameters.items()):
            if param is not None:  # .data, swap or overwrite: ember.__future__'s switches
                convert_parameter(self._parameters, key, fn)
        for name, buf in self._buffers.items():
            if buf is not None:
                with no_grad():
                    self._buffers[name] = fn(buf)
        return self

    def apply(self, fn):
        """Call ``fn(module)`` on every submodule (children first) and on self."""
        for module in self.children():
            module.apply(fn)
        fn(self)
        return self

    def to(self, *args, **kwargs):
        """Move and/or cast parameters and buffers: ``to(device)``, ``to(dtype)``, ``to(t)``."""
        from ember._frontends import _to_args

        dtype, device, *_ = _to_args(None, args, dict(kwargs))
        if dtype is not None and not dtype.is_floating_point:
            raise TypeError(
                "nn.Module.to only accepts floating point or complex dtypes, but got desired "
                f"dtype={dtype}"
            )

        def convert(t):
            target = dtype if (dtype is not None and t.is_floating_point()) else None
            return t.to(device=device or t.device, dtype=target or t.dtype)

        return self._apply(convert)

    def to_empty(self, *, device, recurse: bool = True):
        """Move parameters and buffers to ``device`` without copying their values (they are
        uninitialised there): how a module built on the ``meta`` device gets real memory."""
        import ember

        def empty_on(t):
            return ember.empty_like(t, device=device)

        if recurse:
            return self._apply(empty_on)
        for param in self._parameters.values():
            if param is not None:
                param.data = empty_on(param)
        for name, buf in self._buffers.items():
            if buf is not None:
                self._buffers[name] = empty_on(buf)
        return self

    def cpu(self):
        return self.to("cpu")

    def cuda(self, device=None):
        return self.to(device if device is not None else "cuda")

    def xpu(self, device=None):
        return self.to(device if device is not None else "xpu")

    def type(self, dst_type):
        return self._apply(lambda t: t.to(dst_type) if t.is_floating_point() else t)

    def float(self):
        import ember

        return self.to(ember.float32)

    def double(self):
        import ember

        return self.to(ember.float64)

    def half(self):
        import ember

        return self.to(ember.float16)

    def bfloat16(self):
        import ember

        return self.to(ember.bfloat16)

    # ---- hooks ----------------------------------------------------------------------------------
    def register_forward_pre_hook(self, hook, *, prepend: bool = False, with_kwargs: bool = False):
        """``hook(module, args)`` before forward; may return replacement args. With
        ``with_kwargs``: ``hook(module, args, kwargs)`` returning None or ``(args, kwargs)``."""
        handle = _Handle(self._forward_pre_hooks, self._forward_pre_hooks_with_kwargs)
        self._forward_pre_hooks[handle.id] = hook
        if with_kwargs:
            self._forward_pre_hooks_with_kwargs.add(handle.id)
        if prepend:
            self._forward_pre_hooks.move_to_end(handle.id, last=False)
        return handle

    def register_forward_hook(
        self, hook, *, prepend: bool = False, with_kwargs: bool = False, always_call: bool = False
    ):
        """``hook(module, args, output)`` after forward; may return a replacement output. With
        ``with_kwargs``: ``hook(module, args, kwargs, output)``; with ``always_call`` it also runs
        (with output None) when forward raises."""
        handle = _Handle(
            self._forward_hooks, self._forward_hooks_with_kwargs, self._forward_hooks_always_called
        )
        self._forward_hooks[handle.id] = hook
        if with_kwargs:
            self._forward_hooks_with_kwargs.add(handle.id)
        if always_call:
            self._forward_hooks_always_called.add(handle.id)
        if prepend:
            self._forward_hooks.move_to_end(handle.id, last=False)
        return handle

    def register_full_backward_pre_hook(self, hook, prepend: bool = False):
        """``hook(module, grad_output)`` when the gradients of the module's outputs are known,
        before those of its inputs are computed; may return replacement ``grad_output``."""
        handle = _Handle(self._backward_pre_hooks)
        self._backward_pre_hooks[handle.id] = hook
        if prepend:
            self._backward_pre_hooks.move_to_end(handle.id, last=False)
        return handle

    def register_full_backward_hook(self, hook, prepend: bool = False):
        """``hook(module, grad_input, grad_output)`` when the gradients of the module's
        positional inputs are computed (of its outputs when no input requires grad); may return
        replacement ``grad_input``. The forward sees views of the inputs, the caller views of
        the outputs (ember.autograd.module_hooks)."""
        _bw.choose_kind(self, full=True)
        handle = _Handle(self._backward_hooks)
        self._backward_hooks[handle.id] = hook
        if prepend:
            self._backward_hooks.move_to_end(handle.id, last=False)
        return handle

    def register_backward_hook(self, hook):
        """Deprecated (use ``register_full_backward_hook``): ``hook(module, grad_input,
        grad_output)`` on the node of the output's last op, so ``grad_input`` are that op's
        input gradients; warns where they differ from the module's, as PyTorch."""
        _bw.choose_kind(self, full=False)
        handle = _Handle(self._backward_hooks)
        self._backward_hooks[handle.id] = hook
        return handle

    def _call_with_hooks(self, args, kwargs):
        for hook_id, hook in [*GLOBAL_FORWARD_PRE_HOOKS.items(), *self._forward_pre_hooks.items()]:
            if hook_id in self._forward_pre_hooks_with_kwargs:
                replaced = hook(self, args, kwargs)
                if replaced is not None:
                    if not (isinstance(replaced, tuple) and len(replaced) == 2):
                        raise RuntimeError(
                            "forward pre-hook must return None or a tuple of (new_args, "
                            f"new_kwargs), but got {replaced}."
                        )
                    args, kwargs = replaced
            else:
                replaced = hook(self, args)
                if replaced is not None:
                    args = replaced if isinstance(replaced, tuple) else (replaced,)
        backward_hook = None
        full, legacy, pre = _bw.split_hooks(self)
        if full or pre:
            backward_hook = _bw.BackwardHook(self, full, pre)
            args = backward_hook.setup_input_hook(args)
        called = set()
        result = None
        forward_hooks = [*GLOBAL_FORWARD_HOOKS.items(), *self._forward_hooks.items()]
        try:
            result = self.forward(*args, **kwargs)
            for hook_id, hook in forward_hooks:
                called.add(hook_id)
                replaced = self._run_forward_hook(hook_id, hook, args, kwargs, result)
                if replaced is not None:
                    result = replaced
            if backward_hook is not None:
                result = backward_hook.setup_output_hook(result)
            if legacy:
                _bw.attach_legacy(self, legacy, args, result)
        except Exception:
            always = self._forward_hooks_always_called | _GLOBAL_ALWAYS_CALLED
            for hook_id, hook in forward_hooks:
                if hook_id in always and hook_id not in called:
                    try:
                        self._run_forward_hook(hook_id, hook, args, kwargs, result)
                    except Exception as exc:  # the forward's own error is the one to raise
                        warnings.warn(
                            "forward hook with ``always_call=True`` raised an exception that was "
                            f"silenced as another error was raised in forward: {exc}",
                            stacklevel=3,
                        )
            raise
        return result

    def _run_forward_hook(self, hook_id, hook, args, kwargs, result):
        if hook_id in self._forward_hooks_with_kwargs or hook_id in _GLOBAL_WITH_KWARGS:
            return hook(self, args, kwargs, result)
        return hook(self, args, result)

    # ---- repr -----------------------------------------------------------------------------------
    def extra_repr(self) -> str:
        return ""

    def _get_name(self) -> str:
        return type(self).__name__

    def __repr__(self) -> str:
        extra = self.extra_repr()
        lines = extra.split("\n") if extra else []
        for name, module in self._modules.items():
            lines.append(f"({name}): " + _addindent(repr(module), 2))
        head = self._get_name() + "("
        if not lines:
            return head + ")"
        if len(lines) == 1 and not self._modules:
            return head + lines[0] + ")"
        return head + "\n  " + "\n  ".join(lines) + "\n)"

    def __setstate__(self, state):
        self.__dict__.update(state)
        for name in (
            "_forward_pre_hooks_with_kwargs",
            "_forward_hooks_with_kwargs",
            "_forward_hooks_always_called",
        ):
            self.__dict__.setdefault(name, set())
        for name in ("_backward_hooks", "_backward_pre_hooks"):
            self.__dict__.setdefault(name, OrderedDict())
        self.__dict__.setdefault("_is_full_backward_hook", None)

    def share_memory(self):
        """Move every parameter, gradient and buffer to shared memory (``Tensor.share_memory_``),
        in place: processes forked afterwards train the same weights."""
        for t in itertools.chain(self.parameters(), self.buffers()):
            t.share_memory_()
            if t.grad is not None:
                t.grad.share_memory_()
        return self
