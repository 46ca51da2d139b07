"""``SyncBatchNorm``: batch normalisation whose statistics span every rank's batch."""

from __future__ import annotations

import ember

from .normalization import _BatchNorm


class _AllReduceSum(ember.autograd.Function):
    """Sum over the ranks; the gradient is summed over the ranks too (every rank's loss
    depends on the sum)."""

    @staticmethod
    def forward(ctx, tensor, group):
        from ember import distributed as dist

        ctx.group = group
        out = tensor.clone()
        dist.all_reduce(out, group=group)
        return out

    @staticmethod
    def backward(ctx, grad):
        from ember import distributed as dist

        grad = grad.clone()
        dist.all_reduce(grad, group=ctx.group)
        return grad, None


class SyncBatchNorm(_BatchNorm):
    """Batch normalisation over (N, C, *) inputs with mean and variance over the batches of all
    ranks of ``process_group`` (``torch.nn.SyncBatchNorm``), in training; the same as
    BatchNorm in eval mode or on one rank. Ranks may hold batches of different sizes.

    Args:
        num_features: C.
        eps, momentum, affine, track_running_stats, device, dtype, bias: as BatchNorm's.
        process_group: the ranks to synchronise (default: the world).

    Example:
        >>> model = nn.SyncBatchNorm.convert_sync_batchnorm(model)
    """

    _input_dims = tuple(range(2, 33))  # any (N, C, *) input

    def __init__(
        self, num_features, eps=1e-5, momentum=0.1, affine=True, track_running_stats=True,
        process_group=None, device=None, dtype=None, *, bias=True,
    ):  # fmt: skip
        super().__init__(
            num_features, eps, momentum, affine, track_running_stats, device, dtype, bias=bias
        )
        self.process_group = process_group

    def _world(self) -> int:
        from ember import distributed as dist

        return dist.get_world_size(self.process_group) if dist.is_initialized() else 1

    def forward(self, input):
        if input.ndim < 2:
            raise ValueError(f"expected at least 2D input (got {input.ndim}D input)")
        if not self.training or self._world() == 1:
            return self._local(input)
        momentum = self.momentum
        if self.track_running_stats:
            with ember.no_grad():
                self.num_batches_tracked.add_(1)
            if momentum is None:
                momentum = 1.0 / float(self.num_batches_tracked.item())
        dims = [0] + list(range(2, input.ndim))
        shape = [1, input.shape[1]] + [1] * (input.ndim - 2)
        count = ember.tensor([float(input.numel() // input.shape[1])], dtype=input.dtype)
        count = _AllReduceSum.apply(count.to(input.device), self.process_group)
        mean = _AllReduceSum.apply(input.sum(dims), self.process_group) / count
        centred = input - mean.view(shape)
        var = _AllReduceSum.apply((centred * centred).sum(dims), self.process_group) / count
        if self.track_running_stats:
            with ember.no_grad():
                n = float(count.item())
                self.running_mean.lerp_(mean.detach(), momentum)
                self.running_var.lerp_(var.detach() * (n / (n - 1)), momentum)
        scale = ember.rsqrt(var + self.eps)
        if self.weight is not None:
            scale = scale * self.weight
        out = centred * scale.view(shape)
        return out if self.bias is None else out + self.bias.view(shape)

    def _local(self, input):
        return _BatchNorm.forward(self, input)

    @classmethod
    def convert_sync_batchnorm(cls, module, process_group=None):
        """``module`` with every BatchNorm layer replaced by a SyncBatchNorm holding the same
        parameters and running statistics (returns the new module when ``module`` itself is
        one)."""
        output = module
        if isinstance(module, _BatchNorm) and not isinstance(module, SyncBatchNorm):
            output = cls(
                module.num_features, module.eps, module.momentum, module.affine,
                module.track_running_stats, process_group,
            )  # fmt: skip
            with ember.no_grad():
                if module.affine:
                    output.weight = module.weight
                    output.bias = module.bias
                if module.track_running_stats:
                    output.running_mean = module.running_mean
                    output.running_var = module.running_var
                    output.num_batches_tracked = module.num_batches_tracked
            output.training = module.training
        for name, child in module.named_children():
            output.add_module(name, cls.convert_sync_batchnorm(child, process_group))
        return output
