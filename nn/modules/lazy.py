"""Lazy modules: layers whose input size (in_features, in_channels, num_features) is inferred
from their first input. Until then their parameters are ``UninitializedParameter``s; the first
forward materialises and initialises them, and the module becomes the plain layer
(``LazyLinear`` becomes ``Linear``), as in PyTorch. A state dict loads into a lazy module by
materialising its placeholders with the checkpoint's shapes first."""

from __future__ import annotations

import itertools

import ember

from ..parameter import UninitializedBuffer, UninitializedParameter, is_lazy
from .conv import Conv1d, Conv2d, Conv3d, ConvTranspose1d, ConvTranspose2d, ConvTranspose3d
from .instancenorm import InstanceNorm1d, InstanceNorm2d, InstanceNorm3d
from .linear import Linear
from .normalization import BatchNorm1d, BatchNorm2d, BatchNorm3d


class LazyModuleMixin:
    """Infers parameter shapes on the first forward (``initialize_parameters(*input)``), then
    drops its hook and turns into ``cls_to_become``."""

    cls_to_become = None

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._initialize_hook = self.register_forward_pre_hook(_infer_parameters, with_kwargs=True)

    def has_uninitialized_params(self) -> bool:
        """Whether some parameter or buffer of this module still lacks a shape."""
        return any(
            is_lazy(t) for t in itertools.chain(self._parameters.values(), self._buffers.values())
        )

    def initialize_parameters(self, *args, **kwargs) -> None:
        raise NotImplementedError(
            f"initialize_parameters is not implemented for {self.__class__.__name__}"
        )

    def _save_to_state_dict(self, destination, prefix, keep_vars) -> None:
        # placeholders are saved as they are (a detached copy would lose what they are)
        for name, param in self._parameters.items():
            if param is not None:
                keep = keep_vars or is_lazy(param)
                destination[prefix + name] = param if keep else param.detach()
        for name, buf in self._buffers.items():
            if buf is not None and name not in self._non_persistent_buffers_set:
                keep = keep_vars or is_lazy(buf)
                destination[prefix + name] = buf if keep else buf.detach()

    def _load_from_state_dict(self, state_dict, prefix, *args) -> None:
        # PyTorch's _lazy_load_hook: placeholders take the checkpoint's shapes, then load
        for name, tensor in itertools.chain(self._parameters.items(), self._buffers.items()):
            key = prefix + name
            if key in state_dict and is_lazy(tensor) and not is_lazy(state_dict[key]):
                with ember.no_grad():
                    tensor.materialize(state_dict[key].shape)
        super()._load_from_state_dict(state_dict, prefix, *args)

    def _replicate_for_data_parallel(self):
        raise RuntimeError(
            "Modules with uninitialized parameters can't be used with `DataParallel`. Run a "
            "dummy forward pass to correctly initialize the modules"
        )


def _infer_parameters(module, args, kwargs):
    module.initialize_parameters(*args, **kwargs)
    if module.has_uninitialized_params():
        raise RuntimeError(f"module {module._get_name()} has not been fully initialized")
    module._initialize_hook.remove()
    del module._initialize_hook
    if module.cls_to_become is not None:
        module.__class__ = module.cls_to_become


class LazyLinear(LazyModuleMixin, Linear):
    """A Linear whose ``in_features`` is the last dim of its first input."""

    cls_to_become = Linear

    def __init__(self, out_features: int, bias: bool = True, device=None, dtype=None):
        super().__init__(0, 0, False)
        self.weight = UninitializedParameter(device=device, dtype=dtype)
        self.out_features = out_features
        if bias:
            self.bias = UninitializedParameter(device=device, dtype=dtype)

    def reset_parameters(self) -> None:
        if not self.has_uninitialized_params() and self.in_features != 0:
            super().reset_parameters()

    def initialize_parameters(self, input) -> None:
        if self.has_uninitialized_params():
            with ember.no_grad():
                self.in_features = input.shape[-1]
                self.weight.materialize((self.out_features, self.in_features))
                if self.bias is not None:
                    self.bias.materialize((self.out_features,))
                self.reset_parameters()
        if self.in_features == 0:
            if input.shape[-1] != self.weight.shape[-1]:
                raise AssertionError(
                    f"The in_features inferred from input: {input.shape[-1]} is not equal to "
                    f"in_features from self.weight: {self.weight.shape[-1]}"
                )
            self.in_features = input.shape[-1]


class _LazyConvNd(LazyModuleMixin):
    """in_channels from the first input's channel dim (dim 1, or 0 when unbatched)."""

    def __init__(
        self,
        out_channels,
        kernel_size,
        stride=1,
        padding=0,
        dilation=1,
        groups=1,
        bias=True,
        padding_mode="zeros",
        device=None,
        dtype=None,
    ):
        # in_channels 0 and no bias: no tensor is made only to be replaced
        super().__init__(0, 0, kernel_size, stride, padding, dilation, groups, False, padding_mode)
        self._placeholders(out_channels, bias, device, dtype)

    def _placeholders(self, out_channels, bias, device, dtype) -> None:
        self.out_channels = out_channels
        self.weight = UninitializedParameter(device=device, dtype=dtype)
        if bias:
            self.bias = UninitializedParameter(device=device, dtype=dtype)

    def reset_parameters(self) -> None:
        if not self.has_uninitialized_params() and self.in_channels != 0:
            super().reset_parameters()

    def initialize_parameters(self, input, *args, **kwargs) -> None:
        if not self.has_uninitialized_params():
            return
        ranks = (self._dims + 1, self._dims + 2)
        if input.ndim not in ranks:
            raise RuntimeError(
                f"Expected {ranks[0]}D (unbatched) or {ranks[1]}D (batched) input to "
                f"{type(self).__name__}, but got input of size: {list(input.shape)}"
            )
        self.in_channels = input.shape[1] if input.ndim == ranks[1] else input.shape[0]
        if self.in_channels % self.groups:
            raise ValueError("in_channels must be divisible by groups")
        if self._transposed:
            shape = (self.in_channels, self.out_channels // self.groups)
        else:
            shape = (self.out_channels, self.in_channels // self.groups)
        with ember.no_grad():
            self.weight.materialize(shape + tuple(self.kernel_size))
            if self.bias is not None:
                self.bias.materialize((self.out_channels,))
            self.reset_parameters()


class _LazyConvTransposeNd(_LazyConvNd):
    def __init__(
        self,
        out_channels,
        kernel_size,
        stride=1,
        padding=0,
        output_padding=0,
        groups=1,
        bias=True,
        dilation=1,
        padding_mode="zeros",
        device=None,
        dtype=None,
    ):
        LazyModuleMixin.__init__(
            self,
            0,
            0,
            kernel_size,
            stride,
            padding,
            output_padding,
            groups,
            False,
            dilation,
            padding_mode,
        )
        self._placeholders(out_channels, bias, device, dtype)


class _LazyNorm(LazyModuleMixin):
    """num_features from the first input's dim 1; running statistics as placeholders too."""

    def __init__(
        self,
        eps=1e-5,
        momentum=0.1,
        affine=True,
        track_running_stats=True,
        device=None,
        dtype=None,
        *,
        bias=True,
    ):
        super().__init__(0, eps, momentum, False, False, device, dtype)
        self.affine, self.track_running_stats = affine, track_running_stats
        if affine:
            self.weight = UninitializedParameter(device=device, dtype=dtype)
            if bias:
                self.bias = UninitializedParameter(device=device, dtype=dtype)
        if track_running_stats:
            self.running_mean = UninitializedBuffer(device=device, dtype=dtype)
            self.running_var = UninitializedBuffer(device=device, dtype=dtype)
            self.num_batches_tracked = ember.tensor(0, dtype=ember.int64, device=device)

    def reset_parameters(self) -> None:
        if not self.has_uninitialized_params() and self.num_features != 0:
            super().reset_parameters()

    def initialize_parameters(self, input) -> None:
        if not self.has_uninitialized_params():
            return
        self.num_features = input.shape[1]
        with ember.no_grad():
            for name in ("weight", "bias", "running_mean", "running_var"):
                tensor = getattr(self, name, None)
                if is_lazy(tensor):
                    tensor.materialize((self.num_features,))
            self.reset_parameters()


def _lazy(name, lazy_base, base, what):
    return type(
        name,
        (lazy_base, base),
        {
            "cls_to_become": base,
            "__doc__": f"A {base.__name__} whose {what} comes from its first input.",
            "__module__": __name__,
        },
    )


LazyConv1d = _lazy("LazyConv1d", _LazyConvNd, Conv1d, "in_channels")
LazyConv2d = _lazy("LazyConv2d", _LazyConvNd, Conv2d, "in_channels")
LazyConv3d = _lazy("LazyConv3d", _LazyConvNd, Conv3d, "in_channels")
LazyConvTranspose1d = _lazy(
    "LazyConvTranspose1d", _LazyConvTransposeNd, ConvTranspose1d, "in_channels"
)
LazyConvTranspose2d = _lazy(
    "LazyConvTranspose2d", _LazyConvTransposeNd, ConvTranspose2d, "in_channels"
)
LazyConvTranspose3d = _lazy(
    "LazyConvTranspose3d", _LazyConvTransposeNd, ConvTranspose3d, "in_channels"
)
LazyBatchNorm1d = _lazy("LazyBatchNorm1d", _LazyNorm, BatchNorm1d, "num_features")
LazyBatchNorm2d = _lazy("LazyBatchNorm2d", _LazyNorm, BatchNorm2d, "num_features")
LazyBatchNorm3d = _lazy("LazyBatchNorm3d", _LazyNorm, BatchNorm3d, "num_features")
LazyInstanceNorm1d = _lazy("LazyInstanceNorm1d", _LazyNorm, InstanceNorm1d, "num_features")
LazyInstanceNorm2d = _lazy("LazyInstanceNorm2d", _LazyNorm, InstanceNorm2d, "num_features")
LazyInstanceNorm3d = _lazy("LazyInstanceNorm3d", _LazyNorm, InstanceNorm3d, "num_features")
