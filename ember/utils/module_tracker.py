"""``ModuleTracker``: which ``nn.Module``s are running now, in the forward and the backward
(``torch.utils.module_tracker``).

It hangs on the global module forward hooks (``nn.modules.module.register_module_forward_*``)
and, for the backward, on multi-grad hooks over each module's inputs and outputs, as PyTorch's
does. PyTorch empties ``parents`` back to ``{"Global"}`` with an engine callback at the end of a
backward pass; ember's engine has no such callback, so the tracker notes the pass it last saw
and empties ``parents`` when it is next read outside that pass: what a reader sees is the same.
"""

from __future__ import annotations

import logging
import weakref

from ember._tensor import Tensor
from ember.autograd import engine
from ember.autograd.graph import register_multi_grad_hook
from ember.nn.modules.module import register_module_forward_hook, register_module_forward_pre_hook

from ._pytree import tree_flatten

logger = logging.getLogger(__name__)

__all__ = ["ModuleTracker"]


class ModuleTracker:
    """A context manager that tracks the ``nn.Module`` hierarchy during execution, so that other
    code can ask which modules are running (or running their backward).

    ``parents`` is the set of the fully qualified names (``Model.layers.0``, rooted at the
    class name of the outermost module) of the modules running now; never empty, it always holds
    ``"Global"``. ``is_bw`` says whether a backward pass is running.

    Example:
        >>> with ModuleTracker() as tracker:
        ...     def my_linear(m1, m2, bias):
        ...         print(f"Current modules: {tracker.parents}")
        ...         return ember.mm(m1, m2.t()) + bias
        ...     ember.nn.functional.linear = my_linear
        ...     mod(ember.rand(2, 2))
    """

    def __init__(self) -> None:
        self._parents = {"Global"}
        self._known_modules: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
        self._seen_modules: weakref.WeakSet = weakref.WeakSet()
        self._backward_pass: int | None = None  # the pass whose end empties parents (docstring)
        self._hooks: list = []

    @property
    def parents(self) -> set[str]:
        """The fully qualified names of the modules running now, and ``"Global"``."""
        if (
            self._backward_pass is not None
            and engine.current_graph_task_id() != self._backward_pass
        ):
            self._parents = {"Global"}
            self._backward_pass = None
        return self._parents

    @parents.setter
    def parents(self, value: set[str]) -> None:
        self._parents = value

    @property
    def is_bw(self) -> bool:
        """Whether a backward pass is running now."""
        return engine.current_graph_task_id() != -1

    def _maybe_set_engine_callback(self) -> None:
        if self._backward_pass is None:
            self._backward_pass = engine.current_graph_task_id()

    def _get_mod_name(self, mod) -> str:
        if mod not in self._known_modules:
            self._known_modules[mod] = type(mod).__name__
        mod_name = self._known_modules[mod]
        if mod not in self._seen_modules:
            for name, submod in mod.named_children():
                self._known_modules[submod] = f"{mod_name}.{name}"
                self._get_mod_name(submod)
            self._seen_modules.add(mod)
        return mod_name

    def _get_append_fn(self, name: str, is_bw: bool):
        def fn(*args) -> None:
            if is_bw:
                self._maybe_set_engine_callback()
            parents = self.parents
            if name in parents:
                logger.info(
                    "The module hierarchy tracking seems to be broken as this Module was already "
                    "entered. %s during %s",
                    name,
                    "backward" if is_bw else "forward",
                )
            parents.add(name)

        return fn

    def _get_pop_fn(self, name: str, is_bw: bool):
        def fn(*args) -> None:
            parents = self.parents
            if name in parents:
                parents.remove(name)
            else:
                logger.info(
                    "The Module hierarchy tracking is confused as we're exiting a Module that was "
                    "never entered. %s during %s",
                    name,
                    "backward" if is_bw else "forward",
                )

        return fn

    def _grad_hook(self, values, fn) -> None:
        """``fn`` once the gradients of the tensors in ``values`` that require grad are in."""
        tensors = [a for a in tree_flatten(values)[0] if isinstance(a, Tensor) and a.requires_grad]
        if tensors:
            self._hooks.append(register_multi_grad_hook(tensors, fn))

    def _fw_pre_hook(self, mod, input) -> None:
        name = self._get_mod_name(mod)
        self._get_append_fn(name, False)()
        self._grad_hook(input, self._get_pop_fn(name, True))

    def _fw_post_hook(self, mod, input, output) -> None:
        name = self._get_mod_name(mod)
        self._get_pop_fn(name, False)()
        self._grad_hook(output, self._get_append_fn(name, True))

    def __enter__(self) -> ModuleTracker:
        self._fw_pre_handle = register_module_forward_pre_hook(self._fw_pre_hook)
        self._fw_post_handle = register_module_forward_hook(self._fw_post_hook)
        return self

    def __exit__(self, *args) -> None:
        self._fw_pre_handle.remove()
        self._fw_post_handle.remove()
        for hook in self._hooks:
            hook.remove()
        self._hooks.clear()
