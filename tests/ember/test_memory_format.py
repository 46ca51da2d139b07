"""ember's memory format constants, against PyTorch's behaviour where values can be compared."""

from __future__ import annotations

import pickle
import re

import numpy as np
import pytest
import torch

import ember

NAMES = ("contiguous_format", "preserve_format", "channels_last", "channels_last_3d")


@pytest.mark.parametrize("name", NAMES)
def test_constants_are_named_and_pickle_as_themselves(name):
    value = getattr(ember, name)
    assert isinstance(value, ember.memory_format)
    assert repr(value) == f"ember.{name}" and str(getattr(torch, name)) == f"torch.{name}"
    assert pickle.loads(pickle.dumps(value)) is value


@pytest.mark.parametrize("name", NAMES)
def test_casts_take_any_memory_format_and_give_pytorchs_values(name):
    t = torch.arange(24.0).reshape(1, 2, 3, 4)
    if name == "channels_last_3d":
        t = t.unsqueeze(0)
    e = ember.tensor(t.numpy())
    got = e.double(memory_format=getattr(ember, name))
    want = t.double(memory_format=getattr(torch, name))
    assert got.dtype is ember.float64 and got.tolist() == want.tolist()
    moved = e.to("cpu", ember.int32, False, True, memory_format=getattr(ember, name))
    assert moved.dtype is ember.int32 and moved.tolist() == t.to(torch.int32).tolist()


def test_factories_keep_contiguous_formats_and_refuse_channels_last():
    assert ember.empty(2, 3, memory_format=ember.contiguous_format).shape == (2, 3)
    assert ember.zeros_like(ember.ones(2), memory_format=ember.preserve_format).tolist() == [0, 0]
    with pytest.raises(TypeError, match="channels_last is not supported"):
        ember.empty(1, 2, 3, 4, memory_format=ember.channels_last)


def test_a_non_format_is_refused():
    with pytest.raises(TypeError, match=r"must be torch\.memory_format, not str"):
        ember.ones(2).float(memory_format="contiguous")
    with pytest.raises(TypeError, match="invalid argument"):
        ember.ones(2).to(ember.float64, True, True, True)


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("call", ["contiguous", "clone", "torch.clone"])
def test_contiguous_and_clone_take_a_memory_format(name, call):
    """PyTorch's ``x.contiguous(memory_format=torch.channels_last)`` and ``x.clone(memory_format=
    ...)``, common in convolutional models, failed with an unexpected keyword argument: the
    format is a layout hint here, as for casts, and the values are PyTorch's."""
    t = torch.arange(24.0).reshape(1, 2, 3, 4).transpose(2, 3)
    if name == "channels_last_3d":
        t = t.unsqueeze(0)
    e = ember.tensor(t.numpy())
    fmt_e, fmt_t = getattr(ember, name), getattr(torch, name)
    if call == "torch.clone":
        ember_call = lambda: ember.clone(e, memory_format=fmt_e)  # noqa: E731
        torch_call = lambda: torch.clone(t, memory_format=fmt_t)  # noqa: E731
    else:
        ember_call = lambda: getattr(e, call)(memory_format=fmt_e)  # noqa: E731
        torch_call = lambda: getattr(t, call)(memory_format=fmt_t)  # noqa: E731
    try:
        want = torch_call()
    except RuntimeError as error:  # contiguous(preserve_format)
        with pytest.raises(RuntimeError, match=re.escape(str(error))):
            ember_call()
        return
    got = ember_call()
    assert got.shape == tuple(want.shape) and got.tolist() == want.tolist()
    with pytest.raises(TypeError, match=r"must be torch\.memory_format"):
        getattr(e, call if call != "torch.clone" else "clone")(memory_format="channels_last")


_CONVERSIONS = {
    "to": lambda a, lib, f: a.to(memory_format=f),
    "to-dtype": lambda a, lib, f: a.to(lib.float64, memory_format=f),
    "cast": lambda a, lib, f: a.double(memory_format=f),
    "contiguous": lambda a, lib, f: a.contiguous(memory_format=f),
    "clone": lambda a, lib, f: a.clone(memory_format=f),
    "twice": lambda a, lib, f: a.to(memory_format=f).contiguous(memory_format=f),
    "clone-of-it": lambda a, lib, f: a.to(memory_format=f).clone(memory_format=f),
    "and-back": lambda a, lib, f: a.to(memory_format=f).contiguous(),
    "and-back-to": lambda a, lib, f: a.to(memory_format=f).to(memory_format=lib.contiguous_format),
}


@pytest.mark.parametrize("shape", [(2, 3, 4, 5), (2, 1, 4, 1), (1, 2, 3, 4, 5)], ids=str)
@pytest.mark.parametrize("how", list(_CONVERSIONS))
def test_channels_last_conversions_give_pytorchs_strides(shape, how):
    """Explicit conversions lay the values out as PyTorch does (a model converted with
    ``x.to(memory_format=torch.channels_last)`` asserting ``is_contiguous(memory_format=...)``),
    and ``is_contiguous(memory_format=...)`` applies PyTorch's rule (size-1 dims fit any
    stride). Before, the strides stayed row-major and every format tested as contiguous."""
    name = "channels_last" if len(shape) == 4 else "channels_last_3d"
    t = torch.arange(float(np.prod(shape))).reshape(shape)
    e = ember.tensor(t.numpy())
    want = _CONVERSIONS[how](t, torch, getattr(torch, name))
    got = _CONVERSIONS[how](e, ember, getattr(ember, name))
    assert got.stride() == want.stride() and got.tolist() == want.tolist()
    for fmt in NAMES:
        assert got.is_contiguous(memory_format=getattr(ember, fmt)) == want.is_contiguous(
            memory_format=getattr(torch, fmt)
        ), fmt


def test_channels_last_rank_errors_and_gradients():
    for fmt in ("channels_last", "channels_last_3d"):
        for call in ("contiguous", "clone", "to"):
            t, e = torch.ones(2, 3, 4), ember.ones(2, 3, 4)
            with pytest.raises(RuntimeError) as want:
                getattr(t, call)(memory_format=getattr(torch, fmt))
            with pytest.raises(RuntimeError, match=re.escape(str(want.value))):
                getattr(e, call)(memory_format=getattr(ember, fmt))
    w = ember.randn(2, 3, 4, 5, requires_grad=True)
    (w.to(memory_format=ember.channels_last) * ember.arange(5.0)).sum().backward()
    np.testing.assert_array_equal(w.grad.numpy(), np.broadcast_to(np.arange(5.0), (2, 3, 4, 5)))
