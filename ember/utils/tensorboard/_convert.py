"""Inputs to numpy (ember tensors, arrays, Python numbers) and image layouts to HWC, as
``torch.utils.tensorboard._convert_np`` and ``_utils`` do."""

import numpy as np


def make_np(x) -> np.ndarray:
    """An ember tensor, a numpy array or a Python/numpy scalar as a numpy array."""
    import ember

    if isinstance(x, np.ndarray):
        return x
    if np.isscalar(x):
        return np.array([x])
    if isinstance(x, ember.Tensor):
        if x.device.type == "meta":
            # PyTorch logs a random value for meta tensors rather than failing mid-training
            return np.random.randn(1)
        if x.dtype == ember.bfloat16:
            x = x.to(ember.float16)
        return x.detach().cpu().numpy()
    raise NotImplementedError(f"Got {type(x)}, but numpy array or torch tensor are expected.")


def make_grid(images: np.ndarray, ncols: int = 8) -> np.ndarray:
    """N1HW or N3HW images tiled into one CHW canvas, ``ncols`` per row."""
    if not isinstance(images, np.ndarray):
        raise AssertionError("plugin error, should pass numpy array here")
    if images.shape[1] == 1:
        images = np.concatenate([images, images, images], 1)
    if images.ndim != 4 or images.shape[1] != 3:
        raise AssertionError("Input should be a 4D numpy array with 3 channels")
    count, _, height, width = images.shape
    ncols = min(count, ncols)
    nrows = int(np.ceil(float(count) / ncols))
    canvas = np.zeros((3, height * nrows, width * ncols), dtype=images.dtype)
    for i in range(count):
        y, x = divmod(i, ncols)
        canvas[:, y * height : (y + 1) * height, x * width : (x + 1) * width] = images[i]
    return canvas


def convert_to_HWC(tensor: np.ndarray, input_format: str) -> np.ndarray:  # noqa: N802 (torch's name)
    """An image array in ``input_format`` (NCHW, NHWC, CHW, HWC, HW, ...) as HWC with 3 or 4
    channels; a batch becomes a grid."""
    if len(set(input_format)) != len(input_format):
        raise AssertionError(
            f"You can not use the same dimension shorthand twice. input_format: {input_format}"
        )
    if len(tensor.shape) != len(input_format):
        raise AssertionError(
            "size of input tensor and input format are different. "
            f"tensor shape: {tensor.shape}, input_format: {input_format}"
        )
    input_format = input_format.upper()
    if len(input_format) == 4:
        nchw = tensor.transpose([input_format.find(c) for c in "NCHW"])
        return make_grid(nchw).transpose(1, 2, 0)
    if len(input_format) == 3:
        hwc = tensor.transpose([input_format.find(c) for c in "HWC"])
        if hwc.shape[2] == 1:
            hwc = np.concatenate([hwc, hwc, hwc], 2)
        return hwc
    if len(input_format) == 2:
        hw = tensor.transpose([input_format.find(c) for c in "HW"])
        return np.stack([hw, hw, hw], 2)
    return tensor
