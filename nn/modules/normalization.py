"""BatchNorm1d/2d/3d, LayerNorm, GroupNorm, RMSNorm."""

from __future__ import annotations

import ember

from .. import functional as F
from .. import init
from ..parameter import Parameter
from .module import Module


class _Normalization(Module):
    """A normalisation with an optional elementwise ``weight`` (ones) and ``bias`` (zeros)."""

    def _affine(self, affine: bool, bias: bool | None, shape: tuple, device, dtype) -> None:
        """Register ``weight`` and ``bias`` (None when switched off; no bias at all when
        ``bias`` is None, as RMSNorm has none)."""
        factory = {"device": device, "dtype": dtype}
        self.register_parameter(
            "weight", Parameter(ember.ones(*shape, **factory)) if affine else None
        )
        if bias is not None:
            on = affine and bias
            self.register_parameter(
                "bias", Parameter(ember.zeros(*shape, **factory)) if on else None
            )

    def reset_parameters(self) -> None:
        if self.weight is not None:
            init.ones_(self.weight)
        if getattr(self, "bias", None) is not None:
            init.zeros_(self.bias)


class _BatchNorm(_Normalization):
    _input_dims = (2, 3)
    _op_name = "batch_norm"

    def __init__(
        self,
        num_features,
        eps=1e-5,
        momentum=0.1,
        affine=True,
        track_running_stats=True,
        device=None,
        dtype=None,
        *,
        bias=True,
    ):
        super().__init__()
        self.num_features, self.eps, self.momentum = num_features, eps, momentum
        self.affine, self.track_running_stats = affine, track_running_stats
        self._affine(affine, bias, (num_features,), device, dtype)
        factory = {"device": device, "dtype": dtype}
        if track_running_stats:
            self.register_buffer("running_mean", ember.zeros(num_features, **factory))
            self.register_buffer("running_var", ember.ones(num_features, **factory))
            self.register_buffer("num_batches_tracked", ember.tensor(0, device=device))
        else:
            self.register_buffer("running_mean", None)
            self.register_buffer("running_var", None)
            self.register_buffer("num_batches_tracked", None)

    def _load_from_state_dict(self, state_dict, prefix, *args) -> None:
        # Checkpoints from before the counter existed lack it; PyTorch keeps the current one.
        key = prefix + "num_batches_tracked"
        if self.track_running_stats and key not in state_dict:
            state_dict[key] = self.num_batches_tracked
        super()._load_from_state_dict(state_dict, prefix, *args)

    def reset_running_stats(self) -> None:
        if self.track_running_stats:
            self.running_mean.zero_()
            self.running_var.fill_(1)
            self.num_batches_tracked.zero_()

    def reset_parameters(self) -> None:
        self.reset_running_stats()
        super().reset_parameters()

    def _check_input_dim(self, input) -> None:
        if input.ndim not in self._input_dims:
            raise ValueError(
                f"expected {' or '.join(f'{d}D' for d in self._input_dims)} input (got "
                f"{input.ndim}D input)"
            )

    def forward(self, input):
        self._check_input_dim(input)
        if input.shape[1] != self.num_features:
            raise RuntimeError(
                f"running_mean should contain {input.shape[1]} elements not {self.num_features} "
                f"(input has {input.shape[1]} channels in dim 1)"
            )
        momentum = self.momentum
        if self.training and self.track_running_stats:
            with ember.no_grad():
                self.num_batches_tracked.add_(1)
            if momentum is None:  # cumulative moving average
                momentum = 1.0 / float(self.num_batches_tracked.item())
        use_batch = self.training or not self.track_running_stats
        return F.batch_norm(
            input,
            self.running_mean if not self.training or self.track_running_stats else None,
            self.running_var if not self.training or self.track_running_stats else None,
            self.weight,
            self.bias,
            use_batch,
            momentum if momentum is not None else 0.0,
            self.eps,
        )

    def extra_repr(self) -> str:
        return (
            f"{self.num_features}, eps={self.eps}, momentum={self.momentum}, "
            f"affine={self.affine}, bias={self.bias is not None}, "
            f"track_running_stats={self.track_running_stats}"
        )


class BatchNorm1d(_BatchNorm):
    """Batch normalisation over (N, C) or (N, C, L)."""

    _input_dims = (2, 3)


class BatchNorm2d(_BatchNorm):
    """Batch normalisation over (N, C, H, W)."""

    _input_dims = (4,)


class BatchNorm3d(_BatchNorm):
    """Batch normalisation over (N, C, D, H, W)."""

    _input_dims = (5,)


def _shape(normalized_shape):
    return (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)


class LayerNorm(_Normalization):
    """Normalise over the trailing ``normalized_shape`` dims, with optional affine parameters."""

    def __init__(
        self,
        normalized_shape,
        eps=1e-5,
        elementwise_affine=True,
        bias=True,
        device=None,
        dtype=None,
    ):
        super().__init__()
        self.normalized_shape = _shape(normalized_shape)
        self.eps, self.elementwise_affine = eps, elementwise_affine
        self._affine(elementwise_affine, bias, self.normalized_shape, device, dtype)

    def forward(self, input):
        return F.layer_norm(input, self.normalized_shape, self.weight, self.bias, self.eps)

    def extra_repr(self) -> str:
        return (
            f"{self.normalized_shape}, eps={self.eps}, "
            f"elementwise_affine={self.elementwise_affine}, bias={self.bias is not None}"
        )


class RMSNorm(_Normalization):
    """Scale by the root mean square over the trailing ``normalized_shape`` dims."""

    def __init__(
        self, normalized_shape, eps=None, elementwise_affine=True, device=None, dtype=None
    ):
        super().__init__()
        self.normalized_shape = _shape(normalized_shape)
        self.eps, self.elementwise_affine = eps, elementwise_affine
        self._affine(elementwise_affine, None, self.normalized_shape, device, dtype)

    def forward(self, x):
        return F.rms_norm(x, self.normalized_shape, self.weight, self.eps)

    def extra_repr(self) -> str:
        return (
            f"{self.normalized_shape}, eps={self.eps}, elementwise_affine={self.elementwise_affine}"
        )


class GroupNorm(_Normalization):
    """Normalise groups of channels of each sample."""

    def __init__(
        self, num_groups, num_channels, eps=1e-5, affine=True, device=None, dtype=None, *, bias=True
    ):
        super().__init__()
        if num_channels % num_groups:
            raise ValueError(
                f"num_channels ({num_channels}) must be divisible by num_groups ({num_groups})"
            )
        self.num_groups, self.num_channels = num_groups, num_channels
        self.eps, self.affine = eps, affine
        self._affine(affine, bias, (num_channels,), device, dtype)

    def forward(self, input):
        return F.group_norm(input, self.num_groups, self.weight, self.bias, self.eps)

    def extra_repr(self) -> str:
        return (
            f"{self.num_groups}, {self.num_channels}, eps={self.eps}, affine={self.affine}, "
            f"bias={self.bias is not None}"
        )
