"""Between torch and ember: sample values in, results out, and ember's callable for a record.

A record's variants are found by the public name PyTorch uses: ``torch.add`` is ``ember.add``,
``torch.Tensor.add_`` is the method ``add_``, ``torch.linalg.norm`` is ``ember.linalg.norm``.
Records whose op is a lambda of PyTorch's test suite (``lambda x, shape: x.view(shape)``) run
that same lambda with ``torch`` bound to ember, so the call is exactly the one PyTorch tests.
"""

from __future__ import annotations

import dataclasses
import functools
import types

import ml_dtypes
import numpy as np
import torch

import ember


class MissingError(Exception):
    """ember lacks a public name (or a value type) a record needs."""


def ember_dtype(d: torch.dtype):
    name = str(d).split(".")[-1]
    found = getattr(ember, name, None)
    if not isinstance(found, ember.dtype):
        raise MissingError(f"dtype torch.{name}")
    return found


def torch_dtype(d):
    return getattr(torch, d.name)


# torch dtypes numpy lacks (ml_dtypes has them): their bits cross as integers of the same size.
BITS = {
    torch.bfloat16: torch.int16,
    **dict.fromkeys(
        (
            torch.float8_e4m3fn,
            torch.float8_e5m2,
            torch.float8_e4m3fnuz,
            torch.float8_e5m2fnuz,
            torch.float8_e8m0fnu,
        ),
        torch.uint8,
    ),
}


def _name(d: torch.dtype) -> str:
    return str(d).removeprefix("torch.")


def _host_array(t: torch.Tensor) -> np.ndarray:
    t = t.detach().cpu().resolve_conj().resolve_neg()
    if t.dtype in BITS:  # numpy has no such dtype: the bits move, ml_dtypes reads them
        return t.view(BITS[t.dtype]).numpy().view(getattr(ml_dtypes, _name(t.dtype)))
    return t.numpy()


def tensor_to_ember(t: torch.Tensor, device: str):
    if t.layout != torch.strided:
        raise MissingError(f"{t.layout} tensors")
    if views_part_of_storage(t):
        made = _in_whole_storage(t, device)
    else:
        made = ember.tensor(_host_array(t).copy(), dtype=ember_dtype(t.dtype), device=device)
    if made._offset == 0 and not t.is_contiguous() and t.dim() > 1 and t.numel() > 1:
        # keep the sample's memory layout: the same strides over a storage of the same extent
        made = _strided_like(made, t, device)
    if t.requires_grad:
        made.requires_grad_(True)
    return made


def views_part_of_storage(t: torch.Tensor) -> bool:
    """Whether ``t`` starts past its storage's start (as_strided's partial views read the
    storage around the view): then the whole storage is converted, and viewed as ``t`` is."""
    if t.storage_offset() == 0 or t.dtype == torch.bfloat16 or t.is_conj() or t.is_neg():
        return False
    size = t.untyped_storage().nbytes() // t.element_size()
    return min(t.stride(), default=1) >= 0 and size <= 4 * t.numel() + 64


def _in_whole_storage(t: torch.Tensor, device: str):
    size = t.untyped_storage().nbytes() // t.element_size()
    whole = torch.as_strided(t.detach(), (size,), (1,), 0)
    base = ember.tensor(_host_array(whole).copy(), dtype=ember_dtype(t.dtype), device=device)
    return base.as_strided(tuple(t.shape), tuple(t.stride()), t.storage_offset())


def _strided_like(made, t: torch.Tensor, device: str):
    extent = 1 + sum((s - 1) * abs(st) for s, st in zip(t.shape, t.stride()))
    if any(st < 0 for st in t.stride()) or extent > 4 * t.numel() + 64:
        return made
    # made on the CPU and moved: devices fill no float8 or wide unsigned tensors in place
    base = ember.zeros(extent, dtype=made.dtype).to(device)
    view = base.as_strided(tuple(t.shape), tuple(t.stride()))
    view.copy_(made)
    return view


class _Shim(types.ModuleType):
    """``torch`` (or ``torch.nn``...) as seen by a PyTorch test lambda: ember's names."""

    def __init__(self, target, path: str):
        super().__init__(path)
        self._target = target
        self._path = path

    def __getattr__(self, name: str):
        if name == "Tensor" and self._target is ember:
            return ember.Tensor
        found = getattr(self._target, name, None)
        if found is None:
            raise MissingError(f"{self._path}.{name}")
        if isinstance(found, types.ModuleType):
            return _Shim(found, f"{self._path}.{name}")
        return found


TORCH_SHIM = _Shim(ember, "ember")


class Converter:
    """torch values to ember values on one device, keeping aliasing (the same torch tensor
    twice is the same ember tensor twice) and the pairs of leaves for gradients."""

    def __init__(self, device: str):
        self.device = device
        self.memo: dict = {}
        self.leaves: list = []  # (torch leaf, ember leaf) that require grad

    def __call__(self, value):
        if isinstance(value, torch.Tensor):
            key = id(value)
            if key not in self.memo:
                made = tensor_to_ember(value, self.device)
                self.memo[key] = (value, made)
                if value.requires_grad:
                    self.leaves.append((value, made))
            return self.memo[key][1]
        if isinstance(value, torch.Size):
            return ember.Size(value)
        if isinstance(value, (list, tuple)):
            items = [self(v) for v in value]
            return type(value)(items) if type(value) in (list, tuple) else type(value)(*items)
        if isinstance(value, dict):
            return {k: self(v) for k, v in value.items()}
        if isinstance(value, torch.dtype):
            return ember_dtype(value)
        if isinstance(value, torch.device) or (isinstance(value, str) and value == "cpu"):
            return self.device  # the samples name the CPU: the run's device stands for it
        if isinstance(value, (torch.memory_format, torch.layout)):
            name = str(value).split(".")[-1]
            if not hasattr(ember, name):
                raise MissingError(f"torch.{name}")
            return getattr(ember, name)
        if isinstance(value, torch.Generator):
            raise MissingError("torch.Generator arguments")
        if isinstance(value, torch.nn.Module):
            return module_to_ember(value)
        if dataclasses.is_dataclass(value) and not isinstance(value, type):
            return self._options(value)
        return value

    def _options(self, value):
        """A torch.nn options dataclass (LinearCrossEntropyOptions) as ember.nn's of the same
        name, its fields converted (a torch dtype field becomes ember's)."""
        name = type(value).__name__
        cls = getattr(ember.nn, name, None)
        if cls is None:
            raise MissingError(f"ember.nn.{name}")
        fields = {f.name: self(getattr(value, f.name)) for f in dataclasses.fields(value)}
        return cls(**fields)


def module_to_ember(module: torch.nn.Module):
    """A stateless torch Module argument (a loss's ``distance_function=PairwiseDistance()``) as
    ember's Module of the same name with the same settings (its plain attributes)."""
    name = type(module).__name__
    if next(module.parameters(), None) is not None or next(module.buffers(), None) is not None:
        raise MissingError(f"torch Module arguments with parameters or buffers ({name})")
    cls = getattr(ember.nn, name, None)
    if cls is None:
        raise MissingError(f"ember.nn.{name}")
    made = cls()
    for key, value in vars(module).items():
        if not key.startswith("_") and isinstance(value, (bool, int, float, str, type(None))):
            setattr(made, key, value)
    return made.train(module.training)


def to_torch(value):
    """An ember result as torch values, for ``torch.testing.assert_close``."""
    if isinstance(value, ember.Tensor):
        host = value.detach().cpu().resolve_conj().resolve_neg()  # the values, bits applied
        array = np.array(host.numpy(), order="C")  # keeps 0-d arrays 0-d
        wide = getattr(torch, array.dtype.name)
        if wide in BITS:
            return torch.from_numpy(array.view(_name(BITS[wide]))).view(wide)
        return torch.from_numpy(array)
    if isinstance(value, ember.Size):
        return torch.Size(value)
    if isinstance(value, ember.dtype):
        return torch_dtype(value)
    if isinstance(value, (list, tuple)):
        return [to_torch(v) for v in value]
    return value


def normalise_torch(value):
    """torch results in the same shape ``to_torch`` gives (named tuples and tuples as lists), on
    the CPU as ``to_torch``'s are (where torch has CUDA, samples such as full_like's
    ``device='cuda'`` leave its result there)."""
    if isinstance(value, torch.Tensor):
        return value.detach().cpu()
    if isinstance(value, (list, tuple)) and not isinstance(value, torch.Size):
        return [normalise_torch(v) for v in value]
    return value


# ---- the ember callable of each variant ------------------------------------------------------
def _from_test_suite(fn) -> bool:
    return getattr(fn, "__module__", "") and fn.__module__.startswith("torch.testing")


def rebind(fn):
    """A PyTorch test-suite function with ``torch`` meaning ember (same code, same closure)."""
    scope = dict(fn.__globals__)
    scope["torch"] = TORCH_SHIM
    made = types.FunctionType(fn.__code__, scope, fn.__name__, fn.__defaults__, fn.__closure__)
    made.__kwdefaults__ = fn.__kwdefaults__
    return made


def _public(path: str):
    """``ember.<path>`` (dotted: ``nn.functional.relu``, ``linalg.norm``), else None."""
    found = ember
    for part in path.split("."):
        found = getattr(found, part, None)
        if found is None:
            return None
    return found


def _method(name: str):
    def call(self, *args, **kwargs):
        bound = getattr(self, name, None)
        if bound is None:
            raise MissingError(f"Tensor.{name}")
        return bound(*args, **kwargs)

    call.__name__ = name
    return call


def function_variant(record):
    fn = record.op
    if _from_test_suite(fn):
        return rebind(fn)
    if isinstance(fn, torch._ops.OpOverload | torch._ops.OpOverloadPacket):
        # torch.ops.aten.<op>: ember's every-op namespace, ember.ops.<op>
        name = fn._opname if isinstance(fn, torch._ops.OpOverload) else fn._qualified_op_name
        found = getattr(ember.ops, name.split("::")[-1], None)
        if found is None:
            raise MissingError(f"ember.ops.{name.split('::')[-1]}")
        return found
    # records named by their full path (``torch._scaled_mm``) are ember's same name
    found = _public(record.name.removeprefix("torch."))
    if callable(found):  # not ember.cfloat, the dtype, for the record of Tensor.cfloat
        return found
    if hasattr(ember.Tensor, record.name):
        return _method(record.name)
    raise MissingError(f"ember.{record.name}")


def variant(fn):
    """ember's form of one of a record's variants (a torch callable), or None."""
    if fn is None:
        return None
    if isinstance(fn, functools.partial):  # F.relu with inplace=True, for one
        return functools.partial(variant(fn.func), *fn.args, **fn.keywords)
    if _from_test_suite(fn):
        return rebind(fn)
    if getattr(fn, "__module__", None) in ("_operator", "operator"):
        return fn  # operator.add works on ember tensors as it does on torch's
    module = getattr(fn, "__module__", None) or ""
    qualname = getattr(fn, "__qualname__", "")
    if module.startswith("torch.nn.functional"):
        found = _public(f"nn.functional.{fn.__name__}")
        if found is None:
            raise MissingError(f"ember.nn.functional.{fn.__name__}")
        return found
    if qualname.startswith(("Tensor.", "TensorBase.")) or type(fn).__name__ in (
        "method_descriptor",
        "wrapper_descriptor",
        "getset_descriptor",
    ):
        return _method(fn.__name__)
    found = _public(fn.__name__)
    if found is None:
        raise MissingError(f"ember.{fn.__name__}")
    return found
