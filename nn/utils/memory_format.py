"""convert_conv2d/3d_weight_memory_format (torch.nn.utils): PyTorch re-lays convolution
weights out as channels-last for its cuDNN kernels. ember tensors are contiguous row-major
(its convolutions are im2col + matmul, indifferent to the layout), so torch.channels_last and
torch.contiguous_format leave the weights as they are; the module is returned."""

from __future__ import annotations

from ..modules.conv import Conv2d, Conv3d, ConvTranspose2d, ConvTranspose3d


def _convert(module, kinds, memory_format):
    if isinstance(module, kinds):
        module.weight.data = module.weight.detach().contiguous()
    for child in module.children():
        _convert(child, kinds, memory_format)
    return module


def convert_conv2d_weight_memory_format(module, memory_format):
    return _convert(module, (Conv2d, ConvTranspose2d), memory_format)


def convert_conv3d_weight_memory_format(module, memory_format):
    return _convert(module, (Conv3d, ConvTranspose3d), memory_format)
