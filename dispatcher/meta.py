"""The ``meta`` device: tensors with a shape, strides, dtype and device but no memory.

PyTorch's fake tensors. The core serves this device itself, whatever plugins are installed (see
``devices.BUILTIN``): every op runs its ordinary runner, so the output's shape, dtype and strides
come from the very rules that real devices use (promotion, broadcasting, each kind's shape rule,
decompositions), and then a kernel that does nothing. The graph IR's shape propagation runs
graphs on meta tensors for that reason (``ember.jit``), and ``nn.Module.to_empty`` builds modules
without allocating their parameters.

What a meta tensor cannot give is data: copying out of one, ``.item()``, and ops whose output
shape depends on the values (``nonzero``...) raise, naming the op.
"""

from __future__ import annotations

from .plugins import BACKENDS_GROUP, PluginRecord

DEVICE_TYPE = "meta"

# Ops whose output *shape* depends on the input values: no data-independent rule exists, so they
# refuse meta tensors (PyTorch has no meta kernel for them either). Op name -> what depends on what.
VALUES_SHAPE = "its output shape depends on the input values"
DATA_DEPENDENT = {
    "nonzero": VALUES_SHAPE,
    "masked_select": VALUES_SHAPE,
    "_unique2": VALUES_SHAPE,
    "bincount": "its output length is the largest input value plus one",
    "linalg_lstsq": "the shape of its residuals depends on the rank of the input",
}


class MetaRuntime:
    """Memory that is never allocated: storages have a size and no address."""

    cache_min_bytes = float("inf")  # no caching allocator: nothing to cache
    host_memory = False
    indexed = False  # ``meta`` has no device index, like ``cpu``

    def device_count(self) -> int:
        return 1

    def device_name(self, index=None) -> str:
        return "meta (shapes and dtypes only, no data)"

    def alloc(self, nbytes: int, index=None):
        return None

    def free(self, handle, index=None) -> None:
        pass

    def address(self, handle):
        return None

    def copy_in(self, handle, byte_offset: int, src, index=None, **_options) -> None:
        pass  # moving to meta keeps the metadata and drops the values, as in PyTorch

    def copy_out(self, dst, handle, byte_offset: int, index=None, **_options) -> None:
        raise NotImplementedError(
            "Cannot copy out of meta tensor; no data! Please use nn.Module.to_empty() instead of "
            "nn.Module.to() when moving a module from meta to a different device."
        )

    def copy_between(self, dst, dst_offset, src, src_offset, nbytes, index=None) -> None:
        pass

    def synchronize(self, index=None) -> None:
        pass


def _nothing(*_args):
    return None


def refuse(name: str):
    """A function that raises, for an op of DATA_DEPENDENT called with meta tensors."""

    def kernel(*_args):
        raise NotImplementedError(
            f"'{name}' can't run on the meta device: {DATA_DEPENDENT[name]}, and meta tensors "
            "have no values"
        )

    kernel.__qualname__ = f"meta.refused[{name}]"
    return kernel


class MetaKernels(dict):
    """A kernel table with an entry for every op, library ops included: metadata was already
    computed by the op's runner, so the kernel has nothing left to do."""

    _ANY = {"*": _nothing}

    def get(self, name, default=None):
        if name in DATA_DEPENDENT:
            return {"*": refuse(name)}
        return self._ANY

    def __contains__(self, name) -> bool:
        return True

    def __getitem__(self, name):
        return self.get(name)


def load_backend(policy):
    """The DeviceBackend serving ``meta`` (called by the registry on first use)."""
    from .devices import DeviceBackend

    record = PluginRecord(
        DEVICE_TYPE,
        BACKENDS_GROUP,
        __name__,
        info={"device_types": [DEVICE_TYPE], "priority": 0, "description": __doc__.split("\n")[0]},
    )
    backend = DeviceBackend(
        DEVICE_TYPE, record, 0, {"runtime": MetaRuntime(), "kernels": {}}, policy
    )
    backend.kernels = MetaKernels()
    backend.fallback = False  # there is no data to run a CPU kernel on
    return backend
