"""Turning a list of samples into a batch (``default_collate``) and numpy into tensors.

Both follow PyTorch's rules: containers are rebuilt with the same type where it can be (a tuple of
fields comes back as a list, for compatibility), and the leaves are collated by the first entry
of ``default_collate_fn_map`` whose key matches the leaf's type.
"""

from __future__ import annotations

import collections.abc
import copy
import re

import numpy as np

from ... import _dtype
from ..._factories import as_tensor, tensor
from ..._tensor import Tensor
from ...dispatcher.optable import OPS

# numpy dtype codes collate cannot turn into tensors: bytes, str and object arrays.
_NP_STR_OBJ = re.compile(r"[SaUO]")

default_collate_err_msg_format = (
    "default_collate: batch must contain tensors, numpy arrays, numbers, dicts or lists; found {}"
)


def _rebuild_mapping(elem, values: dict):
    """A mapping of ``elem``'s type holding ``values`` (a plain dict if the type won't take it)."""
    try:
        if isinstance(elem, collections.abc.MutableMapping):
            clone = copy.copy(elem)
            clone.update(values)
            return clone
        return type(elem)(values)
    except TypeError:
        return values


def _rebuild_sequence(elem, values: list):
    """A sequence of ``elem``'s type holding ``values`` (a list if the type won't take it)."""
    try:
        if isinstance(elem, collections.abc.MutableSequence):
            clone = copy.copy(elem)
            for i, value in enumerate(values):
                clone[i] = value
            return clone
        return type(elem)(values)
    except TypeError:
        return values


def collate(batch, *, collate_fn_map: dict | None = None):
    """Collate ``batch`` (a list of samples) recursively, leaves by ``collate_fn_map``.

    Args:
        batch: samples of the same structure.
        collate_fn_map: leaf type (or tuple of types) -> ``fn(batch, *, collate_fn_map)``.
            An exact type match wins, then the first key the leaf is an instance of.

    Example:
        >>> def stack_tensors(batch, *, collate_fn_map):
        ...     return ember.stack(batch)
        >>> collate([(t1, 0), (t2, 1)], collate_fn_map={ember.Tensor: stack_tensors, int: ...})
    """
    elem = batch[0]
    if collate_fn_map is not None:
        found = collate_fn_map.get(type(elem))
        if found is None:
            found = next((f for t, f in collate_fn_map.items() if isinstance(elem, t)), None)
        if found is not None:
            return found(batch, collate_fn_map=collate_fn_map)
    if isinstance(elem, collections.abc.Mapping):
        values = {
            key: collate([d[key] for d in batch], collate_fn_map=collate_fn_map) for key in elem
        }
        return _rebuild_mapping(elem, values)
    if isinstance(elem, tuple) and hasattr(elem, "_fields"):  # namedtuple
        return type(elem)(*(collate(s, collate_fn_map=collate_fn_map) for s in zip(*batch)))
    if isinstance(elem, collections.abc.Sequence):
        size = len(elem)
        if any(len(sample) != size for sample in batch):
            raise RuntimeError("each element in list of batch should be of equal size")
        values = [collate(s, collate_fn_map=collate_fn_map) for s in zip(*batch)]
        if isinstance(elem, tuple):
            return values  # PyTorch returns a list here, and code relies on it
        return _rebuild_sequence(elem, values)
    raise TypeError(default_collate_err_msg_format.format(type(elem)))


def collate_tensor_fn(batch, *, collate_fn_map=None) -> Tensor:
    return OPS["stack"](list(batch), 0)


def collate_numpy_array_fn(batch, *, collate_fn_map=None):
    if _NP_STR_OBJ.search(batch[0].dtype.str) is not None:
        raise TypeError(default_collate_err_msg_format.format(batch[0].dtype))
    return collate([as_tensor(b) for b in batch], collate_fn_map=collate_fn_map)


def collate_numpy_scalar_fn(batch, *, collate_fn_map=None) -> Tensor:
    return as_tensor(np.asarray(batch))


def collate_float_fn(batch, *, collate_fn_map=None) -> Tensor:
    return tensor(batch, dtype=_dtype.float64)


def collate_int_fn(batch, *, collate_fn_map=None) -> Tensor:
    return tensor(batch)


def collate_str_fn(batch, *, collate_fn_map=None):
    return batch


# Leaf rules, in lookup order (bool is an int, so it lands in collate_int_fn, like in PyTorch).
default_collate_fn_map: dict = {
    Tensor: collate_tensor_fn,
    np.ndarray: collate_numpy_array_fn,
    (np.bool_, np.number, np.object_): collate_numpy_scalar_fn,
    float: collate_float_fn,
    int: collate_int_fn,
    str: collate_str_fn,
    bytes: collate_str_fn,
}


def default_collate(batch):
    """Stack a list of samples into a batch, keeping the samples' structure.

    Tensors are stacked along a new first dimension; numpy arrays become tensors first; Python
    floats become a float64 tensor, ints an int64 tensor; strings stay a list; dicts, namedtuples,
    tuples and lists are collated field by field (tuples come back as lists, like in PyTorch).

    Args:
        batch: a list of samples with the same structure.

    Returns:
        The batch.

    Example:
        >>> default_collate([(ember.tensor([1.0]), 0), (ember.tensor([2.0]), 1)])
        [tensor([[1.], [2.]]), tensor([0, 1])]
    """
    return collate(batch, collate_fn_map=default_collate_fn_map)


def default_convert(data):
    """Turn the numpy arrays and numpy scalars inside ``data`` into tensors, recursively.

    The collate function of a DataLoader without batching (``batch_size=None``). Other values,
    including tensors and numpy string/object arrays, are returned as they are.

    Args:
        data: one sample.

    Returns:
        The sample with the same structure (tuples come back as lists, like in PyTorch).

    Example:
        >>> default_convert({"x": np.zeros(2), "label": 1})
        {'x': tensor([0., 0.], dtype=ember.float64), 'label': 1}
    """
    if isinstance(data, Tensor):
        return data
    if isinstance(data, np.ndarray):
        return data if _NP_STR_OBJ.search(data.dtype.str) else as_tensor(data)
    if isinstance(data, (np.bool_, np.number)):
        return as_tensor(np.asarray(data))  # through an array, so the scalar's dtype is kept
    if isinstance(data, collections.abc.Mapping):
        return _rebuild_mapping(data, {key: default_convert(data[key]) for key in data})
    if isinstance(data, tuple) and hasattr(data, "_fields"):  # namedtuple
        return type(data)(*(default_convert(d) for d in data))
    if isinstance(data, tuple):
        return [default_convert(d) for d in data]
    if isinstance(data, collections.abc.Sequence) and not isinstance(data, (str, bytes)):
        return _rebuild_sequence(data, [default_convert(d) for d in data])
    return data
