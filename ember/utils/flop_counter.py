"""``FlopCounterMode``: count the floating-point operations of matrix products, convolutions
and attention run inside a block, per module (``torch.utils.flop_counter``).

The counting is a dispatch layer (``_flop_layer.py``) that sees every op call with its arguments
and result. Ember's composite ops run other ops inside (``linear`` -> ``addmm``, ``conv2d`` ->
``im2col`` and ``bmm``): the outermost call that has a formula is counted, once, as PyTorch counts
the one ATen op it runs. So the counts come out under PyTorch's op names: a ``conv2d`` as
``aten.convolution`` and its backward as ``aten.convolution_backward``.

Differences from PyTorch:

- The keys of ``get_flop_counts()`` are op names as PyTorch's table prints them (``"aten.mm"``),
  not op objects; ``custom_mapping`` and ``register_flop_formula`` take ember ops
  (``ember.ops.mm``, ``ember.ops.aten.mm``) or such names.
- ``scaled_dot_product_attention`` on CPU where PyTorch runs its CPU flash kernel (query, key
  and value of one head size, no dropout...) counts as
  ``aten._scaled_dot_product_flash_attention_for_cpu`` (and ``..._backward``) with the fused
  kernels' formulas; PyTorch has no formula for that kernel and counts 0 there. Elsewhere it
  runs PyTorch's math path and counts its ``bmm``s, as PyTorch does.
- ``conv3d``, ``conv_transpose1d`` and ``conv_transpose3d`` are functions over other ops in
  ember, not ops: they count as the matrix products they run (the same totals, other keys).
"""

from __future__ import annotations

import warnings
from collections import defaultdict
from collections.abc import Callable
from functools import wraps
from typing import Any

from ember._tensor import Tensor

from . import _flop_formulas as _f
from ._flop_formulas import conv_flop_count as conv_flop_count
from ._flop_formulas import sdpa_backward_flop_count as sdpa_backward_flop_count
from ._flop_formulas import sdpa_flop_count as sdpa_flop_count
from ._pytree import tree_flatten, tree_map, tree_unflatten
from .module_tracker import ModuleTracker

__all__ = ["FlopCounterMode", "register_flop_formula"]


def get_shape(i):
    return i.shape if isinstance(i, Tensor) else i


def shape_wrapper(f):
    """``f`` called with the shapes of the tensors it is given, and ``out_shape``."""

    @wraps(f)
    def nf(*args, out_val=None, **kwargs):
        args, kwargs, out_shape = tree_map(get_shape, (args, kwargs, out_val))
        return f(*args, out_shape=out_shape, **kwargs)

    return nf


def op_key(target) -> str:
    """The name an op's counts go under: ``"aten.mm"`` for ``ember.ops.mm``, ``"mm"`` or
    ``"aten.mm"``; ``"mylib.foo"`` for a library op ``mylib::foo``."""
    name = getattr(target, "name", target)
    if not isinstance(name, str) or target is None:
        raise ValueError(
            "register_flop_formula(targets): expected each target to be an ember op "
            f"(i.e. ember.ops.mm) or an op name, got {target} which is of type {type(target)}"
        )
    if "::" in name:
        return name.replace("::", ".")
    return name if "." in name else f"aten.{name}"


flop_registry: dict[str, Callable] = {}


def register_flop_formula(targets, get_raw: bool = False) -> Callable:
    """Register a FLOP formula for ``targets`` (an op, an op name, or a list of them).

    The formula is called with the shapes of the op's arguments and ``out_shape`` (with the
    arguments themselves and ``out_val`` when ``get_raw``). Ops that ember runs for PyTorch's
    (``conv2d`` for ``aten.convolution``) take ATen's arguments.

    Example:
        >>> @register_flop_formula(ember.ops.mylib.foo)
        ... def foo_flop(x_shape, out_shape=None, **kwargs):
        ...     return 2 * math.prod(x_shape)
    """

    def register_fun(flop_formula: Callable) -> Callable:
        if not get_raw:
            flop_formula = shape_wrapper(flop_formula)
        flat = targets if isinstance(targets, (list, tuple)) else [targets]
        for target in flat:
            key = op_key(target)
            if key in flop_registry:
                raise RuntimeError(f"duplicate registrations for {target}")
            flop_registry[key] = flop_formula
        return flop_formula

    return register_fun


# PyTorch's module-level formulas are the registered ones: over shapes, given ``out_val``
mm_flop = shape_wrapper(_f.mm_flop)
addmm_flop = shape_wrapper(_f.addmm_flop)
bmm_flop = shape_wrapper(_f.bmm_flop)
baddbmm_flop = shape_wrapper(_f.baddbmm_flop)
_scaled_mm_flop = shape_wrapper(_f._scaled_mm_flop)
conv_flop = shape_wrapper(_f.conv_flop)
conv_backward_flop = shape_wrapper(_f.conv_backward_flop)
sdpa_flop = shape_wrapper(_f.sdpa_flop)
sdpa_backward_flop = shape_wrapper(_f.sdpa_backward_flop)

_CONVOLUTIONS = (
    "aten.convolution",
    "aten._convolution",
    "aten.cudnn_convolution",
    "aten.convolution_overrideable",
    "aten._slow_conv2d_forward",
)
_ATTENTION = (
    "efficient_attention",
    "flash_attention",
    "cudnn_attention",
    "flash_attention_for_cpu",
)
_TABLE = {
    "aten.mm": mm_flop,
    "aten.addmm": addmm_flop,
    "aten.bmm": bmm_flop,
    "aten.baddbmm": baddbmm_flop,
    "aten._scaled_mm": _scaled_mm_flop,
    **dict.fromkeys(_CONVOLUTIONS, conv_flop),
    "aten.convolution_backward": conv_backward_flop,
    **{f"aten._scaled_dot_product_{name}": sdpa_flop for name in _ATTENTION},
    **{f"aten._scaled_dot_product_{name}_backward": sdpa_backward_flop for name in _ATTENTION},
}
flop_registry.update(_TABLE)


def normalize_tuple(x):
    return x if isinstance(x, tuple) else (x,)


suffixes = ["", "K", "M", "B", "T"]


def get_suffix_str(number) -> str:
    """The suffix of the order of magnitude of ``number``, with some overflow: 1.01B shows as
    1001M, not 1.001B."""
    index = max(0, min(len(suffixes) - 1, (len(str(number)) - 2) // 3))
    return suffixes[index]


def convert_num_with_suffix(number, suffix: str) -> str:
    index = suffixes.index(suffix)
    value = f"{number / 1000**index:.3f}"
    return value + suffixes[index]


def convert_to_percent_str(num, denom) -> str:
    if denom == 0:
        return "0%"
    return f"{num / denom:.2%}"


def _pytreeify_preserve_structure(f):
    @wraps(f)
    def nf(args):
        flat_args, spec = tree_flatten(args)
        out = f(*flat_args)
        return tree_unflatten(out, spec)

    return nf


class FlopCounterMode:
    """A context manager that counts the FLOPs of the ops run inside it, per module.

    Counts go to every module running the op (forward or backward), by the fully qualified names
    ``ModuleTracker`` gives, and to ``"Global"``. On exit it prints the table of
    ``get_table()`` unless ``display`` is False.

    Args:
        mods: not needed any more (PyTorch warns as well); modules are found as they run.
        depth: how deep into the module tree the printed table goes.
        display: print the table on exit.
        custom_mapping: ``{op or op name: formula}``, formulas taking shapes (see
            ``register_flop_formula``; one with ``_get_raw = True`` takes the values).

    Example:
        >>> with FlopCounterMode(display=False) as flop_counter:
        ...     mod(x).sum().backward()
        >>> flop_counter.get_total_flops()
    """

    def __init__(
        self,
        mods=None,
        depth: int = 2,
        display: bool = True,
        custom_mapping: dict[Any, Any] | None = None,
    ) -> None:
        self.flop_counts: dict[str, dict[Any, int]] = defaultdict(lambda: defaultdict(int))
        self.depth = depth
        self.display = display
        self.mode = None
        if custom_mapping is None:
            custom_mapping = {}
        if mods is not None:
            warnings.warn(
                "mods argument is not needed anymore, you can stop passing it", stacklevel=2
            )
        self.custom_keys = frozenset(op_key(k) for k in custom_mapping)
        self.flop_registry = {
            **flop_registry,
            **{
                op_key(k): v if getattr(v, "_get_raw", False) else shape_wrapper(v)
                for k, v in custom_mapping.items()
            },
        }
        self.mod_tracker = ModuleTracker()

    def get_total_flops(self) -> int:
        return sum(self.flop_counts["Global"].values())

    def get_flop_counts(self) -> dict[str, dict[Any, int]]:
        """Return the flop counts as a dictionary of dictionaries.

        Returns:
            dict: ``{module name: {op name: flops}}``, with ``"Global"`` for the whole block.
        """
        return {k: dict(v) for k, v in self.flop_counts.items()}

    def get_table(self, depth=None) -> str:
        """The counts as PyTorch's table: each module to ``depth`` with its ops, FLOPs and share
        of the total (``Global`` first when modules do not hold all of it)."""
        if depth is None:
            depth = self.depth
        if depth is None:
            depth = 999999
        import tabulate

        tabulate.PRESERVE_WHITESPACE = True
        header = ["Module", "FLOP", "% Total"]
        values = []
        global_flops = self.get_total_flops()
        global_suffix = get_suffix_str(global_flops)
        is_global_subsumed = False

        def process_mod(mod_name, depth):
            nonlocal is_global_subsumed
            total_flops = sum(self.flop_counts[mod_name].values())
            is_global_subsumed |= total_flops >= global_flops
            padding = " " * depth
            values = [
                [
                    padding + mod_name,
                    convert_num_with_suffix(total_flops, global_suffix),
                    convert_to_percent_str(total_flops, global_flops),
                ]
            ]
            for k, v in self.flop_counts[mod_name].items():
                values.append(
                    [
                        padding + " - " + str(k),
                        convert_num_with_suffix(v, global_suffix),
                        convert_to_percent_str(v, global_flops),
                    ]
                )
            return values

        for mod in sorted(self.flop_counts.keys()):
            if mod == "Global":
                continue
            mod_depth = mod.count(".") + 1
            if mod_depth > depth:
                continue
            values.extend(process_mod(mod, mod_depth - 1))
        # "Global" only when some FLOPs are outside every module shown
        if "Global" in self.flop_counts and not is_global_subsumed:
            for value in values:
                value[0] = " " + value[0]
            values = process_mod("Global", 0) + values
        if len(values) == 0:
            values = [["Global", "0", "0%"]]
        return tabulate.tabulate(values, headers=header, colalign=("left", "right", "right"))

    # Not reentrant, as PyTorch's.
    def __enter__(self) -> FlopCounterMode:
        from ._flop_layer import FlopCounting

        self.flop_counts.clear()
        self.mod_tracker.__enter__()
        self.mode = FlopCounting.enter(self)
        return self

    def __exit__(self, *args):
        if self.mode is None:
            raise AssertionError("Internal error: FlopCounter.__exit__ called but mode is None")
        self.mode.exit()
        self.mode = None
        self.mod_tracker.__exit__()
        if self.display:
            print(self.get_table(self.depth))
        return False

    def _count_flops(self, func_packet, out, args, kwargs):
        if func_packet in self.flop_registry:
            flop_count_func = self.flop_registry[func_packet]
            flop_count = flop_count_func(*args, **kwargs, out_val=out)
            for par in set(self.mod_tracker.parents):
                self.flop_counts[par][func_packet] += flop_count
        return out
