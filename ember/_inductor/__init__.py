"""``ember._inductor``: the names of PyTorch's ``torch._inductor`` that programs use before
compiling: ``config`` (its settings, PyTorch 2.13's names and defaults), ``list_options`` and
``list_mode_options``. ember compiles without inductor (docs/compile.md): the settings are
accepted so those programs run unchanged, and ``triton.cudagraphs`` alone changes what
ember does (it is ``mode="reduce-overhead"``)."""

from __future__ import annotations

import copy

from ember.compiler.options import MODE_OPTIONS

from . import config


def list_mode_options(mode: str | None = None, dynamic: bool | None = None) -> dict:
    """The inductor settings each ``ember.compile`` mode stands for (all modes when ``mode`` is
    None), PyTorch's values; an unknown mode raises PyTorch's RuntimeError.

    Example:
        >>> ember._inductor.list_mode_options("max-autotune")
        {'max_autotune': True, 'triton.cudagraphs': True, 'coordinate_descent_tuning': True}
    """
    if not mode:
        return copy.deepcopy(MODE_OPTIONS)
    if mode not in MODE_OPTIONS:
        raise RuntimeError(f"Unrecognized mode={mode}, should be one of: {', '.join(MODE_OPTIONS)}")
    return dict(MODE_OPTIONS[mode])


def list_options() -> list[str]:
    """The names ``ember.compile(options=...)`` accepts: ``config``'s settings."""
    return list(config.get_config_copy())


__all__ = ["config", "list_mode_options", "list_options"]
