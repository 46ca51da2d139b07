"""DDP's reducer: gradients into buckets, each bucket all-reduced as soon as it is complete.

As PyTorch's C++ reducer: a parameter's post-accumulate-grad hook copies its ``.grad`` (divided
by the world size) into its slot of a flat bucket; when every slot of a bucket is filled, the
bucket's all-reduce starts asynchronously, in bucket order on every rank (so collectives
match), while backward goes on. When the last bucket has started, the reducer waits for them
all and writes the averages back into ``.grad`` (or ``.grad`` already is a view of the bucket,
with ``gradient_as_bucket_view``). After the first iteration the buckets are rebuilt in the
order the gradients became ready, when the graph is known not to vary.
"""

from __future__ import annotations

import sys

import ember
from ember import distributed as dist

from ._buckets import assign_buckets


class Bucket:
    """Parameters whose gradients travel in one flat tensor."""

    def __init__(self, params, indices: list[int]):
        self.indices = indices
        first = params[indices[0]]
        total = sum(params[i].numel() for i in indices)
        self.flat = ember.zeros(total, dtype=first.dtype, device=first.device)
        self.views = {}
        offset = 0
        for i in indices:
            n = params[i].numel()
            self.views[i] = self.flat[offset : offset + n].view(params[i].shape)
            offset += n
        self.pending = len(indices)
        self.work = None


class Reducer:
    """Buckets, hooks and per-iteration state of one DistributedDataParallel."""

    def __init__(self, params, group, bucket_bytes, first_bucket_bytes, options):
        self.params = params
        self.group = group
        self.world = dist.get_world_size(group)
        self.bucket_bytes, self.first_bucket_bytes = bucket_bytes, first_bucket_bytes
        self.find_unused = options["find_unused_parameters"]
        self.static_graph = options["static_graph"]
        self.as_view = options["gradient_as_bucket_view"]
        self.index = {id(p): i for i, p in enumerate(params)}
        limits = [sys.maxsize]
        if self.find_unused and not self.static_graph:
            limits = [bucket_bytes]
            if first_bucket_bytes < bucket_bytes:
                limits = [first_bucket_bytes, bucket_bytes]
        self._build(list(reversed(assign_buckets(params, limits))))
        self.rebuilt = not (self.static_graph or not self.find_unused)
        self.ready_order: list[int] = []
        self.expect_hooks = False
        self.unused: set[int] = set()
        self.unused_marked = False
        self.done: set[int] = set()
        self.next_bucket = 0
        self.handles = [
            p.register_post_accumulate_grad_hook(lambda _p, i=i: self.mark_ready(i))
            for i, p in enumerate(params)
        ]

    def _build(self, buckets: list[list[int]]) -> None:
        self.buckets = [Bucket(self.params, b) for b in buckets]
        self.where = {i: b for b, bucket in enumerate(self.buckets) for i in bucket.indices}
        if self.as_view:
            for bucket in self.buckets:
                for i, view in bucket.views.items():
                    grad = self.params[i].grad
                    if grad is not None:
                        view.copy_(grad)
                        self.params[i].grad = view

    # ---- forward side ------------------------------------------------------------------------
    def prepare_for_forward(self) -> None:
        if self.expect_hooks and any(b.pending < len(b.indices) for b in self.buckets):
            missing = sorted(i for b in self.buckets for i in b.indices if i not in self.done)
            raise RuntimeError(
                "Expected to have finished reduction in the prior iteration before starting a "
                "new one. This error indicates that your module has parameters that were not "
                "used in producing loss. You can enable unused parameter detection by passing "
                "the keyword argument `find_unused_parameters=True` to "
                "`ember.nn.parallel.DistributedDataParallel`, and by making sure all `forward` "
                "function outputs participate in calculating loss.\nParameter indices which did "
                f"not receive grad for rank {dist.get_rank(self.group)}: "
                + " ".join(map(str, missing))
            )
        if not self.rebuilt and self.ready_order:
            limits = [self.first_bucket_bytes, self.bucket_bytes]
            order = self.ready_order + [i for i in range(len(self.params)) if i not in self.done]
            self._build(assign_buckets(self.params, limits, order))
            self.rebuilt = True

    def prepare_for_backward(self, unused: set[int]) -> None:
        """A synced backward follows: reset the buckets; ``unused`` get no gradient here."""
        self.expect_hooks = True
        self.unused, self.unused_marked = unused, False
        self.done: set[int] = set()
        self.next_bucket = 0
        for bucket in self.buckets:
            bucket.pending, bucket.work = len(bucket.indices), None

    # ---- backward side -----------------------------------------------------------------------
    def mark_ready(self, index: int) -> None:
        """The post-accumulate-grad hook of parameter ``index``."""
        if not self.expect_hooks or index in self.done:
            return
        if not self.unused_marked:  # PyTorch marks unused parameters at the first hook
            self.unused_marked = True
            for i in sorted(self.unused):
                self._ready(i, None)
        self._ready(index, self.params[index].grad)

    def _ready(self, index: int, grad) -> None:
        self.done.add(index)
        if not self.rebuilt:
            self.ready_order.append(index)
        bucket = self.buckets[self.where[index]]
        view = bucket.views[index]
        with ember.no_grad():
            if grad is None:
                view.zero_()
            elif grad is not view:
                view.copy_(grad)
            view.div_(self.world)
        bucket.pending -= 1
        while self.next_bucket < len(self.buckets) and self.buckets[self.next_bucket].pending == 0:
            launched = self.buckets[self.next_bucket]
            launched.work = dist.all_reduce(launched.flat, group=self.group, async_op=True)
            self.next_bucket += 1
        if self.next_bucket == len(self.buckets):
            self._finalize()

    def _finalize(self) -> None:
        used = None
        if self.find_unused:
            local = ember.ones(len(self.params), dtype=ember.int32)
            for i in self.unused:
                local[i] = 0
            dist.all_reduce(local, op=dist.ReduceOp.MAX, group=self.group)
            used = local.tolist()
        for bucket in self.buckets:
            bucket.work.wait()
        with ember.no_grad():
            for bucket in self.buckets:
                for i, view in bucket.views.items():
                    if used is not None and not used[i]:
                        continue  # unused on every rank: .grad stays as it was
                    self._write_grad(self.params[i], view)
        self.expect_hooks = False

    def _write_grad(self, param, view) -> None:
        if self.as_view:
            param.grad = view
        elif param.grad is None:
            param.grad = view.clone()
        else:
            param.grad.copy_(view)

    def remove_hooks(self) -> None:
        for handle in self.handles:
            handle.remove()
