"""``DeviceMesh``: the job's ranks laid out as an n-d array, with one process group per mesh
dimension (``torch.distributed.device_mesh``).

A mesh keeps the root mesh's array of ranks and, per mesh dimension, the root dimensions it
spans: a dimension of the root is one of them, a submesh (``mesh["dp", "tp"]``) picks some,
and a flattened mesh (``mesh["dp", "cp"]._flatten()``) joins several into one. The process
groups are made when a mesh is initialised: for every dimension, one ``new_group`` per row of
ranks along it, on every rank and in the same order (``new_group``'s contract), keeping the
row that holds this rank.
"""

from __future__ import annotations

import math
import os
import warnings

import numpy as np

import ember

from . import _debug, _world
from ._group import ProcessGroup

__all__ = ["DeviceMesh", "init_device_mesh"]


def _coalesce(modes: list[tuple[int, int]]) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """``(sizes, strides)`` of a dimension's ``(size, stride)`` modes as PyTorch's layout keeps
    them: size-1 modes dropped, a mode merged into the previous one where they are contiguous."""
    merged: list[list[int]] = []
    for size, stride in modes:
        if size == 1:
            continue
        if merged and merged[-1][1] == size * stride:
            merged[-1] = [merged[-1][0] * size, stride]
        else:
            merged.append([size, stride])
    return tuple(m[0] for m in merged), tuple(m[1] for m in merged)


class DeviceMesh:
    """The ranks of the job as an n-d array; collectives run along one dimension of it.

    Every rank runs the same program (SPMD) and must build the same meshes in the same order:
    building one creates process groups, which every rank of the world takes part in.

    Args:
        device_type: the device type of the tensors the mesh's groups carry (``"cpu"``,
            ``"cuda"``...).
        mesh: an n-d array (nested lists, numpy array or ember tensor) of world ranks.
        mesh_dim_names: a unique name per dimension, for slicing (``mesh["tp"]``).
        backend_override: per dimension, ``(backend, options)`` for its groups (``(None,
            None)``: the default group's backend).

    Example:
        >>> mesh = DeviceMesh("cpu", [[0, 1], [2, 3]], mesh_dim_names=("dp", "tp"))
        >>> dist.all_reduce(t, group=mesh.get_group("tp"))   # ranks {0, 1} and {2, 3}
    """

    def __init__(
        self,
        device_type: str,
        mesh=None,
        *,
        mesh_dim_names: tuple[str, ...] | None = None,
        backend_override: tuple | None = None,
        _init_backend: bool = True,
        _rank: int | None = None,
        _root_mesh: DeviceMesh | None = None,
        _dims: tuple[tuple[int, ...], ...] | None = None,
    ) -> None:
        if mesh is not None:
            if _dims is not None or _root_mesh is not None:
                raise TypeError("Cannot provide _layout and/or _rank_map if passing explicit mesh")
            if isinstance(mesh, ember.Tensor):
                mesh = mesh.detach().cpu().numpy()
            self._rank_map = np.array(mesh, dtype=np.int64)
            _dims = tuple((d,) for d in range(self._rank_map.ndim))
        elif _dims is None or _root_mesh is None:
            raise TypeError("The mesh argument is required except for PRIVATE USAGE ONLY!")
        else:
            self._rank_map = _root_mesh._rank_map
        self._device_type = device_type
        self._dims = tuple(tuple(d) for d in _dims)
        self._root_mesh = _root_mesh
        self._mesh_dim_names = tuple(mesh_dim_names) if mesh_dim_names else None
        if self._mesh_dim_names is not None and len(self._mesh_dim_names) != len(self._dims):
            raise RuntimeError(_length_message(self._mesh_dim_names, self._rank_map.shape))
        self._layout = tuple(self._dim_layout(d) for d in self._dims)
        self._flatten_mapping: dict[str, DeviceMesh] = {}
        self._dim_groups: list[ProcessGroup] = []
        if backend_override is None:
            backend_override = ((None, None),) * self.ndim
        elif len(backend_override) != self.ndim:
            raise ValueError(
                "backend_override should have the same length as the number of mesh dimensions, "
                f"but got {len(backend_override)} and {self.ndim}."
            )
        if _init_backend:
            self._setup_world_and_device()
            self._dim_groups = self._init_process_groups(backend_override)
        self._rank = _world.current().rank if _rank is None else _rank
        self._coordinate = self._find_coordinate()
        self._hash: int | None = None

    # -- layout ---------------------------------------------------------------------------

    def _dim_layout(self, root_dims: tuple[int, ...]):
        shape = self._rank_map.shape
        modes = [(shape[d], math.prod(shape[d + 1 :])) for d in root_dims]
        return _coalesce(modes)

    def _rows(self, dims: tuple[tuple[int, ...], ...]) -> np.ndarray:
        """The root's ranks as ``(rows, *sizes of dims)``: one row per mesh of these dims."""
        used = [d for group in dims for d in group]
        others = [d for d in range(self._rank_map.ndim) if d not in used]
        sizes = [math.prod(self._rank_map.shape[d] for d in group) for group in dims]
        return self._rank_map.transpose(others + used).reshape(-1, *sizes)

    def _my_row(self) -> np.ndarray | None:
        rows = self._rows(self._dims)
        if len(rows) == 1:
            return rows[0]
        rank = _world.current().rank
        for row in rows:
            if (row == rank).any():
                return row
        return None

    def _find_coordinate(self) -> tuple[int, ...] | None:
        row = self._my_row()
        found = [] if row is None else np.argwhere(row == self._rank)
        return tuple(int(i) for i in found[0]) if len(found) else None

    # -- process groups -------------------------------------------------------------------

    def _setup_world_and_device(self) -> None:
        if not _world.is_initialized():
            _world.init_process_group()
        world_size = _world.get_world_size()
        if self.size() > world_size:
            raise RuntimeError(
                f"Mesh should not be bigger than default world size {world_size}, but found "
                f"{self.size()} ranks!"
            )
        handle = getattr(ember, self._device_type, None)
        hooks = ("is_initialized", "set_device", "device_count")
        if self._device_type == "cpu" or not all(hasattr(handle, n) for n in hooks):
            return
        if handle.is_initialized():  # the user chose this process's device: keep it
            return
        if "LOCAL_RANK" in os.environ:
            handle.set_device(int(os.environ["LOCAL_RANK"]))
            return
        per_host = handle.device_count()
        if per_host == 0:
            return
        warnings.warn(
            f"No {self._device_type} device was selected before the DeviceMesh was made and "
            "LOCAL_RANK is not set: DeviceMesh uses device global_rank % devices_per_host, "
            "assuming every host has as many devices. Select the device (or start with "
            "emberrun) before making the mesh.",
            stacklevel=3,
        )
        if world_size > per_host and world_size % per_host != 0:
            raise RuntimeError(
                f"DeviceMesh only support homogeneous hardware, but found {world_size} ranks and "
                f"{per_host} {self._device_type} devices!"
            )
        handle.set_device(_world.get_rank() % per_host)

    def _init_process_groups(self, backend_override) -> list[ProcessGroup]:
        groups = [self._init_one_group(d, backend_override[i]) for i, d in enumerate(self._dims)]
        mine = [g for g in groups if g is not None]
        return mine if len(mine) == len(groups) else []

    def _init_one_group(self, dims: tuple[int, ...], override) -> ProcessGroup | None:
        """This rank's group along the mesh dimension spanning root ``dims``; every rank makes
        every row's group, in row order."""
        backend, options = override
        world = _world.current()
        rows = self._rows((dims,))
        if rows.shape[1] == world.size and backend is None and options is None:
            return world.default_pg
        timeout = getattr(options, "_timeout", None)
        mine = None
        for row in rows:
            ranks = row.tolist()
            group = _world.new_group(ranks=ranks, timeout=timeout, backend=backend)
            if world.rank in ranks:
                mine = group
        return mine

    def get_group(self, mesh_dim: int | str | None = None) -> ProcessGroup:
        """This rank's process group along ``mesh_dim`` (an index or a name; None on a 1-d
        mesh): the ranks of the mesh that differ from this one in that coordinate only."""
        if self.ndim > 1 and mesh_dim is None:
            raise RuntimeError(
                f"Found the DeviceMesh have {self.ndim} dimensions",
                "Optional kwarg `mesh_dim` needs to be specified when device_mesh.ndim > 1.",
                "If you want to get the list of all the ProcessGroups in the DeviceMesh,"
                "please use `get_all_groups()` instead.",
            )
        flattened = self._get_root_mesh()._flatten_mapping
        if isinstance(mesh_dim, str) and mesh_dim in flattened:
            return flattened[mesh_dim].get_group()
        index = 0 if mesh_dim is None else mesh_dim
        if isinstance(index, str):
            index = self._get_mesh_dim_by_name(index)
        if not self._dim_groups:
            raise RuntimeError(
                f"rank {self._rank} is not in {self} (ranks {self._rank_map.ravel().tolist()}): "
                "it has no process group along its dimensions"
            )
        return self._dim_groups[index]

    def get_all_groups(self) -> list[ProcessGroup]:
        """The process groups of every mesh dimension, in order."""
        return [self.get_group(i) for i in range(self.ndim)]

    # -- properties and ranks -------------------------------------------------------------

    @property
    def device_type(self) -> str:
        return self._device_type

    @property
    def mesh(self):
        """The ranks of this mesh as an int32 tensor (for a submesh: the one holding this
        rank)."""
        row = self._my_row()
        if row is None:
            raise RuntimeError(
                "In order to get the mesh Tensor of a DeviceMesh it needs to either have all its "
                "original dimensions (e.g., no slicing) or it needs to contain the local rank"
            )
        return ember.tensor(row.tolist(), dtype=ember.int32)

    @property
    def mesh_dim_names(self) -> tuple[str, ...] | None:
        return self._mesh_dim_names

    @property
    def ndim(self) -> int:
        return len(self._dims)

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(math.prod(sizes) for sizes, _ in self._layout)

    def size(self, mesh_dim: int | None = None) -> int:
        """The number of ranks along ``mesh_dim``, or in the whole mesh."""
        return math.prod(self.shape) if mesh_dim is None else self.shape[mesh_dim]

    def get_rank(self) -> int:
        """This process's global rank."""
        return _world.get_rank()

    def get_local_rank(self, mesh_dim: int | str | None = None) -> int:
        """This rank's rank in its group along ``mesh_dim`` (None on a 1-d mesh).

        Example:
            >>> mesh = init_device_mesh("cpu", (2, 2), mesh_dim_names=("dp", "tp"))
            >>> mesh.get_local_rank("tp")   # rank 3: 1 (its tp group is ranks 2, 3)
        """
        if self.ndim > 1 and mesh_dim is None:
            raise RuntimeError(
                f"Found the DeviceMesh have {self.ndim} dimensions",
                "Optional kwarg `mesh_dim` needs to be specified when device_mesh.ndim > 1.",
            )
        return _world.get_rank(self.get_group(0 if mesh_dim is None else mesh_dim))

    def get_coordinate(self) -> tuple[int, ...] | None:
        """This rank's index along every mesh dimension; None if it is not in the mesh."""
        return self._coordinate

    # -- slicing and flattening -----------------------------------------------------------

    def _get_root_mesh(self) -> DeviceMesh:
        return self._root_mesh if self._root_mesh is not None else self

    def _get_mesh_dim_by_name(self, mesh_dim_name: str) -> int:
        if not self._mesh_dim_names:
            raise KeyError("No `mesh_dim_names` found.")
        if mesh_dim_name not in self._mesh_dim_names:
            raise KeyError(
                f"Mesh dimension '{mesh_dim_name}' does not exist.",
                f"Available mesh dimensions are: mesh_dim_names={self._mesh_dim_names}",
            )
        return self._mesh_dim_names.index(mesh_dim_name)

    def __getitem__(self, mesh_dim_names: str | tuple[str, ...]) -> DeviceMesh:
        """The submesh of the named dimensions, in mesh order, with their process groups.

        Example:
            >>> mesh = init_device_mesh("cpu", (2, 2), mesh_dim_names=("dp", "tp"))
            >>> mesh["tp"].mesh   # rank 3: tensor([2, 3], dtype=ember.int32)
        """
        if not self._mesh_dim_names:
            raise RuntimeError("Cannot slice a DeviceMesh without mesh_dim_names!")
        names = (mesh_dim_names,) if isinstance(mesh_dim_names, str) else tuple(mesh_dim_names)
        if names == self._mesh_dim_names:
            return self
        sources = self._slice_sources(names)
        dims = tuple(source._dims[source._mesh_dim_names.index(n)] for n, source in sources)
        submesh = DeviceMesh(
            self._device_type,
            mesh_dim_names=names,
            _root_mesh=self._get_root_mesh(),
            _dims=dims,
            _init_backend=False,
        )
        if self._dim_groups:
            submesh._dim_groups = [source.get_group(n) for n, source in sources]
        return submesh

    def _slice_sources(self, names: tuple[str, ...]) -> list[tuple[str, DeviceMesh]]:
        """``(name, the mesh whose dimension it is)`` per name, checked as PyTorch does."""
        flattened = self._flatten_mapping if self == self._get_root_mesh() else {}
        valid = [*self._mesh_dim_names, *flattened]
        if not all(n in valid for n in names):
            raise KeyError(
                f"Invalid mesh_dim_names {names} specified. Valid mesh_dim_names are {valid}."
            )
        sources = []
        for name in names:
            if name in self._mesh_dim_names:
                sources.append((name, self))
            else:
                warnings.warn(
                    "Slicing a flattened dim from root mesh will be deprecated in PT 2.11. "
                    "Users need to bookkeep the flattened mesh directly. ",
                    stacklevel=3,
                )
                sources.append((name, flattened[name]))
        root_dims = [d for n, s in sources for d in s._dims[s._mesh_dim_names.index(n)]]
        if root_dims != sorted(root_dims):
            raise KeyError(
                f"Invalid mesh_dim_names {names} specified. "
                "Mesh dim indices should be in ascending order."
            )
        if len(set(root_dims)) != len(root_dims):
            raise RuntimeError(f"Slicing overlapping dim_names {names} is not allowed.")
        return sources

    def _flatten(self, mesh_dim_name: str | None = None, backend_override=None) -> DeviceMesh:
        """This mesh as a 1-d mesh named ``mesh_dim_name`` (default: the names joined by
        ``_``), with its own process groups; every rank must call it. The root mesh can then
        be sliced by that name."""
        if not self._mesh_dim_names:
            raise RuntimeError("Cannot flatten a DeviceMesh without mesh_dim_names!")
        name = mesh_dim_name or "_".join(self._mesh_dim_names)
        if self.ndim == 1 and name in self._mesh_dim_names:
            return self
        root = self._get_root_mesh()
        if name in (root._mesh_dim_names or ()):
            raise ValueError(
                f"{name} already exists for submesh of the {root}. ",
                f"The mesh_dim_names of submesh and flattened mesh are {root._mesh_dim_names}. "
                "Please specify another valid mesh_dim_name.",
            )
        dims = (tuple(d for group in self._dims for d in group),)
        existing = root._flatten_mapping.get(name)
        if existing is not None:
            if existing._layout == (self._dim_layout(dims[0]),):
                return existing
            raise ValueError(
                f"Flatten mesh with mesh_dim_name {name} has been created before, "
                "Please specify another valid mesh_dim_name."
            )
        flat = DeviceMesh(
            root._device_type,
            mesh_dim_names=(name,),
            backend_override=(_backend_config(backend_override),),
            _root_mesh=root,
            _dims=dims,
        )
        root._flatten_mapping[name] = flat
        return flat

    # -- identity -------------------------------------------------------------------------

    def _hash_key(self) -> tuple:
        rank_map = tuple(self._rank_map.ravel().tolist())
        return rank_map, self._layout, self._device_type, self._mesh_dim_names

    def __hash__(self) -> int:
        if self._hash is None:
            self._hash = hash(self._hash_key())
        return self._hash

    def __eq__(self, other: object) -> bool:
        if self is other:
            return True
        if not isinstance(other, DeviceMesh):
            return False
        return self._hash_key() == other._hash_key()

    def __repr__(self) -> str:
        if self._mesh_dim_names:
            sizes = ", ".join(f"{k}={v}" for k, v in zip(self._mesh_dim_names, self.shape))
            sizes = f"({sizes})"
        else:
            sizes = f"{self.shape}"
        stride = tuple(s[0] if len(s) == 1 else s for _, s in self._layout)
        text = f"DeviceMesh({sizes}, '{self._device_type}', stride={stride}"
        if _debug.enabled():
            text += f", Mesh: {self.mesh.tolist()}"
        return f"{text})"


def _length_message(names, shape) -> str:
    return (
        "mesh_shape and mesh_dim_names should have same length! "
        f"Found len(mesh_dim_names): {len(names)} and len(mesh_shape):{len(shape)}."
    )


def _backend_config(value) -> tuple:
    """``(backend, options)`` from a backend name, options, a pair, or None."""
    if value is None:
        return (None, None)
    if isinstance(value, str):
        return (value, None)
    return tuple(value) if isinstance(value, tuple) else (None, value)


def _normalize_backend_override(override: dict, ndim: int, names) -> tuple:
    """``{dim index or name: backend or (backend, options)}`` as one ``(backend, options)``
    per dimension."""
    override = dict(override)
    names = tuple(names or ())
    result = []
    for index in range(ndim):
        name = names[index] if index < len(names) else None
        if name is not None and name in override:
            if index in override:
                raise RuntimeError(
                    f"Found redundant dim index {index} and name {name} in backend_override"
                )
            value = override.pop(name)
        elif index in override:
            value = override.pop(index)
        else:
            value = None
        result.append(_backend_config(value))
    if override:
        raise RuntimeError(
            f"Found invalid keys in backend_override: got {list(override.keys())}, "
            f"expected integers in range [0, {ndim}) or one of {names}"
        )
    return tuple(result)


def init_device_mesh(
    device_type: str,
    mesh_shape: tuple[int, ...],
    *,
    mesh_dim_names: tuple[str, ...] | None = None,
    backend_override: dict | None = None,
) -> DeviceMesh:
    """A ``DeviceMesh`` of shape ``mesh_shape`` over world ranks ``0 .. prod(mesh_shape) - 1``
    in row-major order, initialising the default process group if needed.

    Args:
        device_type: ``"cpu"``, ``"cuda"``, ``"xpu"``... (a type, without an index).
        mesh_shape: the mesh's shape; its product is at most the world size.
        mesh_dim_names: a unique name per dimension.
        backend_override: ``{dim index or name: backend, or (backend, options)}`` for the
            groups of some dimensions.

    Returns:
        The mesh, with a process group per dimension.

    Example:
        >>> mesh = init_device_mesh("cpu", (2, 2), mesh_dim_names=("dp", "tp"))
        >>> dist.all_reduce(t, group=mesh.get_group("dp"))   # ranks {0, 2} and {1, 3}
    """
    if mesh_dim_names is not None:
        if len(set(mesh_dim_names)) != len(mesh_dim_names):
            raise RuntimeError(
                "Each mesh_dim_name must be unique. "
                f"Found repeated mesh_dim_name in mesh_dim_names {mesh_dim_names}"
            )
        if len(mesh_shape) != len(mesh_dim_names):
            raise RuntimeError(_length_message(mesh_dim_names, mesh_shape))
    overrides = None
    if backend_override is not None:
        overrides = _normalize_backend_override(backend_override, len(mesh_shape), mesh_dim_names)
    if device_type and not device_type.isalpha():
        raise RuntimeError(
            f"Device type with index is not supported but got {device_type}. ",
            "If you maintained an 'ember.device' object, it's recommended to pass in "
            "'device.type'.",
        )
    ranks = np.arange(math.prod(mesh_shape)).reshape(tuple(mesh_shape))
    return DeviceMesh(device_type, ranks, mesh_dim_names=mesh_dim_names, backend_override=overrides)
