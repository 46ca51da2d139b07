"""``DistributedDataParallel``: one process per replica, gradients averaged during backward."""

from __future__ import annotations

import contextlib

import ember
from ember import distributed as dist

from ..modules.module import Module
from ._buckets import DEFAULT_BUCKET_CAP_MB, FIRST_BUCKET_BYTES, MB, broadcast_coalesced
from ._reducer import Reducer


def _find_tensors(obj):
    if isinstance(obj, ember.Tensor):
        return [obj]
    if isinstance(obj, (list, tuple)):
        return [t for item in obj for t in _find_tensors(item)]
    if isinstance(obj, dict):
        return [t for item in obj.values() for t in _find_tensors(item)]
    return []


def _reached_leaves(outputs) -> set[int]:
    """ids of the leaf tensors the autograd graph of ``outputs`` reaches."""
    seen, found = set(), set()
    stack = []
    for t in outputs:
        if t.grad_fn is not None:
            stack.append(t.grad_fn)
        elif t.requires_grad:
            found.add(id(t))
    while stack:
        node = stack.pop()
        if node is None or id(node) in seen:
            continue
        seen.add(id(node))
        variable = getattr(node, "variable", None)
        if variable is not None:
            found.add(id(variable))
        stack.extend(edge[0] for edge in node.next_functions if edge[0] is not None)
    return found


class DistributedDataParallel(Module):
    """Data parallelism across processes: each rank runs ``module`` on its share of the batch
    and gradients are averaged across ranks during backward (``torch.nn.parallel.
    DistributedDataParallel``).

    At construction rank 0's parameters and buffers are broadcast to every rank. Gradients go
    into buckets of ``bucket_cap_mb`` (parameters in reverse order, rebuilt after the first
    iteration in the order gradients became ready), and each bucket is all-reduced as soon as
    it is complete, overlapping backward.

    Args:
        module: the model (same architecture on every rank).
        device_ids: ``[device index]`` for a single-device cuda/xpu module, None on the CPU.
        output_device: accepted for compatibility (outputs stay where the module puts them).
        broadcast_buffers: broadcast rank 0's buffers before every forward.
        process_group: the group to average over (default: the world).
        device_mesh: a 1-d ``DeviceMesh`` whose group to average over (instead of
            ``process_group``), e.g. ``mesh["dp"]``.
        bucket_cap_mb: the bucket size (default 25, with a 1 MiB first bucket).
        find_unused_parameters: find, after each forward, the parameters the output does not
            depend on; they count as ready with a zero gradient (``.grad`` is left alone where
            no rank used them).
        gradient_as_bucket_view: ``.grad`` of each parameter is a view into its bucket.
        static_graph: the set of used parameters is the same every iteration (found once).
        init_sync: broadcast rank 0's state at construction.

    Example:
        >>> model = DistributedDataParallel(Net())
        >>> loss = model(x_shard).sum(); loss.backward()   # .grad is the average over ranks
        >>> with model.no_sync():                          # accumulate locally, no all-reduce
        ...     model(x2).sum().backward()
    """

    def __init__(
        self,
        module,
        device_ids=None,
        output_device=None,
        dim: int = 0,
        broadcast_buffers=None,
        init_sync: bool = True,
        process_group=None,
        bucket_cap_mb=None,
        find_unused_parameters: bool = False,
        check_reduction: bool = False,
        gradient_as_bucket_view: bool = False,
        static_graph: bool = False,
        device_mesh=None,
        **_unsupported,
    ):
        super().__init__()
        if not dist.is_initialized():
            raise ValueError(
                "Default process group has not been initialized, please make sure to call "
                "init_process_group."
            )
        self.module = module
        if process_group is not None and device_mesh is not None:
            raise RuntimeError("Cannot specify both process_group and device_mesh arguments.")
        if device_mesh is not None:
            if device_mesh.ndim != 1:
                raise RuntimeError(f"Only 1D device mesh is supported, but got {device_mesh}.")
            self.device_mesh = device_mesh
            process_group = device_mesh.get_group(mesh_dim=0)
        self.process_group = process_group or dist.group.WORLD
        # Rank 0 of the group is the authority (PyTorch's), which is not world rank 0 in a
        # group such as a mesh's dimension.
        self._src_rank = dist.get_global_rank(self.process_group, 0)
        self.device_ids, self.output_device, self.dim = (
            self._devices(module, device_ids),
            output_device,
            dim,
        )
        self.broadcast_buffers = True if broadcast_buffers is None else broadcast_buffers
        self.find_unused_parameters, self.static_graph = find_unused_parameters, static_graph
        self.gradient_as_bucket_view = gradient_as_bucket_view
        self.require_backward_grad_sync = True
        self.require_forward_param_sync = True
        self._module_parameters = list(
            dict.fromkeys(p for p in module.parameters() if p.requires_grad)
        )
        self.modules_buffers = list(module.buffers())
        self._verify_same_model()
        if init_sync:
            broadcast_coalesced(
                list(module.parameters()) + self.modules_buffers, self._src_rank, self.process_group
            )
        cap = DEFAULT_BUCKET_CAP_MB if bucket_cap_mb is None else bucket_cap_mb
        first = FIRST_BUCKET_BYTES if bucket_cap_mb is None else int(cap * MB)
        self.bucket_bytes_cap = int(cap * MB)
        options = {
            "find_unused_parameters": find_unused_parameters,
            "static_graph": static_graph,
            "gradient_as_bucket_view": gradient_as_bucket_view,
        }
        self.reducer = Reducer(
            self._module_parameters, self.process_group, self.bucket_bytes_cap, first, options
        )
        self._static_unused: set[int] | None = None

    @staticmethod
    def _devices(module, device_ids):
        types = {p.device.type for p in module.parameters()}
        if device_ids and types <= {"cpu"}:
            raise ValueError(
                "DistributedDataParallel device_ids and output_device arguments only work with "
                f"single-device GPU modules or CPU modules, but got device_ids {device_ids}, "
                f"and module parameters on {sorted(types)}."
            )
        if device_ids and len(device_ids) > 1:
            raise ValueError("device_ids can only be None or contain a single element.")
        return list(device_ids) if device_ids else None

    def _verify_same_model(self) -> None:
        """Every rank must hold the same parameter shapes (PyTorch checks this too)."""
        shapes = [tuple(p.shape) for p in self.module.parameters()]
        everyone = [None] * dist.get_world_size(self.process_group)
        dist.all_gather_object(everyone, shapes, group=self.process_group)
        mine = dist.get_rank(self.process_group)
        for rank, theirs in enumerate(everyone):
            if theirs != shapes:
                raise RuntimeError(
                    f"DDP expects same model across all ranks, but Rank {mine} "
                    f"has {len(shapes)} params with shapes {shapes}, while rank {rank} has "
                    f"{len(theirs)} params with shapes {theirs}."
                )

    def _move_inputs(self, inputs, kwargs):
        if not self.device_ids:
            return inputs, kwargs
        device = ember.device(self._module_parameters[0].device.type, self.device_ids[0])

        def move(x):
            if isinstance(x, ember.Tensor):
                return x.to(device)
            if isinstance(x, (list, tuple)):
                return type(x)(move(v) for v in x)
            if isinstance(x, dict):
                return {k: move(v) for k, v in x.items()}
            return x

        return move(inputs), move(kwargs)

    def forward(self, *inputs, **kwargs):
        grad_sync = ember.is_grad_enabled() and self.require_backward_grad_sync
        if grad_sync:
            self.reducer.prepare_for_forward()
        if self.broadcast_buffers and self.require_forward_param_sync and self.modules_buffers:
            broadcast_coalesced(self.modules_buffers, self._src_rank, self.process_group)
        inputs, kwargs = self._move_inputs(inputs, kwargs)
        output = self.module(*inputs, **kwargs)
        self.require_forward_param_sync = grad_sync
        if grad_sync:
            self.reducer.prepare_for_backward(self._unused(output))
        return output

    def _unused(self, output) -> set[int]:
        if not self.find_unused_parameters and not self.static_graph:
            return set()
        if self.static_graph and self._static_unused is not None:
            return self._static_unused
        reached = _reached_leaves(_find_tensors(output))
        unused = {i for i, p in enumerate(self._module_parameters) if id(p) not in reached}
        if self.static_graph:
            self._static_unused = unused
        return unused

    @contextlib.contextmanager
    def no_sync(self):
        """Gradients of backward passes of forwards run inside accumulate locally; the next
        synchronised backward all-reduces the accumulated gradients."""
        previous = self.require_backward_grad_sync
        self.require_backward_grad_sync = False
        try:
            yield
        finally:
            self.require_backward_grad_sync = previous
