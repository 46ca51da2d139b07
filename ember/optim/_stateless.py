"""``swap_in_optimizer_params_and_state``: run an optimizer's API on other parameters and state
for the duration of a ``with`` block, as torch 2.13's ``torch.optim`` does (its checks and
messages; torch/optim/_stateless.py)."""

from __future__ import annotations

import contextlib
from collections import defaultdict
from typing import Any, NamedTuple

from ember._tensor import Tensor

_NAME = "swap_in_optimizer_params_and_state"


class _GroupSwapIn(NamedTuple):
    live_group: dict  # optimizer.param_groups[i], changed in place during the block
    swapin_group: dict  # the state_dict's group: hyperparameters and packed parameter ids
    swapin_params: list  # the parameters to use, in the order of swapin_group["params"]


def _checked_state(state: Any) -> dict:
    if not isinstance(state, dict):
        raise RuntimeError(
            f"{_NAME} requires swapin_optim_state['state'] to be a dict mapping packed "
            f"parameter ids to per-param state dicts, got {type(state).__name__}."
        )
    if any(isinstance(k, Tensor) for k in state):
        raise RuntimeError(
            f"{_NAME} requires optimizer.state_dict()-style state keyed by packed parameter ids."
        )
    if any(isinstance(k, int) and not isinstance(v, dict) for k, v in state.items()):
        raise RuntimeError(
            f"{_NAME} requires per-parameter optimizer state entries to be dictionaries."
        )
    return state


def _checked_groups(optimizer, groups: Any) -> list:
    if not isinstance(groups, list):
        raise RuntimeError(
            f"{_NAME} requires swapin_optim_state['param_groups'] to be a list of param-group "
            f"dicts, got {type(groups).__name__}."
        )
    if len(optimizer.param_groups) != len(groups):
        raise RuntimeError(
            "swapin_optim_state has a different number of parameter groups than the live optimizer."
        )
    return groups


def _checked_group(index: int, live: dict, group: Any) -> list:
    """The packed parameter ids of one swap-in group, after checking it against the live one."""
    if not isinstance(group, dict):
        raise RuntimeError(f"{_NAME} requires each optimizer param group to be a dictionary.")
    ids = group.get("params")
    if not isinstance(ids, list) or not all(isinstance(i, int) for i in ids):
        raise RuntimeError(
            f"{_NAME} requires optimizer.state_dict()-style param_groups[*]['params'] entries "
            "keyed by packed parameter ids."
        )
    if len(live["params"]) != len(ids):
        raise RuntimeError(
            f"swapin_optim_state param group {index} has a different number of params than "
            "the live optimizer param group."
        )
    swapin_only = [k for k in group if k not in live]
    live_only = [k for k in live if k not in group]
    if swapin_only or live_only:
        raise RuntimeError(
            f"{_NAME} requires optimizer.state_dict()-style param group keys to exactly match "
            f"the live optimizer group keys for group {index}. Keys only in swap-in: "
            f"{swapin_only}. Keys only in live: {live_only}."
        )
    return ids


def _prepare(optimizer, parameters: dict, optim_state: dict):
    if not optimizer.state:
        raise RuntimeError(f"{_NAME} requires initialized optimizer state.")
    if not isinstance(optim_state, dict):
        raise RuntimeError(f"{_NAME} requires a DCP-style optimizer state_dict.")
    state = _checked_state(optim_state.get("state"))
    groups = _checked_groups(optimizer, optim_state.get("param_groups"))
    flat, offset, seen, infos = list(parameters.values()), 0, set(), []
    for index, (live, group) in enumerate(zip(optimizer.param_groups, groups, strict=True)):
        ids = _checked_group(index, live, group)
        seen.update(ids)
        end = offset + len(ids)
        if end > len(flat):
            raise RuntimeError(
                f"{_NAME} requires the explicit parameter state to match "
                "optimizer.param_groups ordering."
            )
        infos.append(_GroupSwapIn(live, group, flat[offset:end]))
        offset = end
    extra = [k for k in state if k not in seen]
    if extra:
        raise RuntimeError(
            f"{_NAME} requires swapin_optim_state['state'] to be keyed only by packed parameter "
            f"ids from param_groups[*]['params']; got extra keys {extra!r}."
        )
    return state, infos


@contextlib.contextmanager
def swap_in_optimizer_params_and_state(
    optimizer, swapin_parameters: dict, swapin_optim_state: dict
):
    """Temporarily replace ``optimizer``'s parameters and state with ``swapin_parameters`` (in
    the order of the optimizer's parameters) and ``swapin_optim_state`` (an
    ``optimizer.state_dict()``-shaped dict), restoring both on exit. In-place changes to the
    supplied state tensors stay; other changes made during the block are dropped.

    Example:
        >>> with ember.optim.swap_in_optimizer_params_and_state(opt, params, state):
        ...     opt.step()  # steps ``params`` with ``state``; opt is unchanged afterwards
    """
    state, infos = _prepare(optimizer, swapin_parameters, swapin_optim_state)
    original_state = optimizer.state
    snapshots = [dict(g) for g in optimizer.param_groups]  # keeps each params list's identity
    try:
        swapped: defaultdict = defaultdict(dict)
        for info in infos:
            info.live_group["params"] = info.swapin_params
            for key, value in info.swapin_group.items():
                if key != "params":
                    info.live_group[key] = value
            for param, packed in zip(info.swapin_params, info.swapin_group["params"], strict=True):
                swapped[param] = dict(state.get(packed, {}))
        optimizer.state = swapped
        yield
    finally:
        for group, snapshot in zip(optimizer.param_groups, snapshots, strict=True):
            group.clear()
            group.update(snapshot)
        optimizer.state = original_state
