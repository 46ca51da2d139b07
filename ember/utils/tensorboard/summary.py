"""Summary protobufs as ``torch.utils.tensorboard.summary`` builds them: scalars, histograms,
images, text and hparams, each a ``tensorboard.compat.proto`` ``Summary`` (media in ``_media``,
plugin summaries in ``_plugins``, re-exported here under PyTorch's names)."""

import io

import numpy as np
from tensorboard.compat.proto.summary_pb2 import HistogramProto, Summary, SummaryMetadata
from tensorboard.compat.proto.tensor_pb2 import TensorProto
from tensorboard.compat.proto.tensor_shape_pb2 import TensorShapeProto
from tensorboard.plugins.text.plugin_data_pb2 import TextPluginData

from ._convert import convert_to_HWC, make_np
from ._hparams import hparams
from ._media import audio, image_boxes, video
from ._plugins import (
    compute_curve,
    custom_scalars,
    mesh,
    pr_curve,
    pr_curve_raw,
    tensor_proto,
)

__all__ = [
    "audio",
    "compute_curve",
    "custom_scalars",
    "hparams",
    "histogram",
    "histogram_raw",
    "image",
    "image_boxes",
    "make_histogram",
    "mesh",
    "pr_curve",
    "pr_curve_raw",
    "scalar",
    "tensor_proto",
    "text",
    "video",
]


def scalar(name, tensor, collections=None, new_style=False, double_precision=False):
    """A ``Summary`` with one scalar: ``simple_value``, or a tensor (float, or double with
    ``double_precision``) under the scalars plugin when ``new_style``."""
    tensor = make_np(tensor).squeeze()
    if tensor.ndim != 0:
        raise AssertionError(
            "Tensor should contain one element (0 dimensions). "
            f"Was given size: {tensor.size} and {tensor.ndim} dimensions."
        )
    value = float(tensor)
    if not new_style:
        return Summary(value=[Summary.Value(tag=name, simple_value=value)])
    if double_precision:
        proto = TensorProto(double_val=[value], dtype="DT_DOUBLE")
    else:
        proto = TensorProto(float_val=[value], dtype="DT_FLOAT")
    metadata = SummaryMetadata(plugin_data=SummaryMetadata.PluginData(plugin_name="scalars"))
    return Summary(value=[Summary.Value(tag=name, tensor=proto, metadata=metadata)])


def histogram_raw(name, min, max, num, sum, sum_squares, bucket_limits, bucket_counts):
    """A ``Summary`` with a histogram given by its statistics and buckets."""
    hist = HistogramProto(
        min=min, max=max, num=num, sum=sum, sum_squares=sum_squares,
        bucket_limit=bucket_limits, bucket=bucket_counts,
    )  # fmt: skip
    return Summary(value=[Summary.Value(tag=name, histo=hist)])


def histogram(name, values, bins, max_bins=None):
    """A ``Summary`` with the histogram of ``values`` (``bins`` as ``numpy.histogram``'s)."""
    values = make_np(values)
    hist = make_histogram(values.astype(float), bins, max_bins)
    return Summary(value=[Summary.Value(tag=name, histo=hist)])


def _subsample(counts, limits, max_bins):
    """Merge neighbouring buckets so that at most ``max_bins`` remain (TensorFlow's rule)."""
    subsampling = len(counts) // max_bins
    remainder = len(counts) % subsampling
    if remainder != 0:
        counts = np.pad(counts, pad_width=[[0, subsampling - remainder]], mode="constant")
    counts = counts.reshape(-1, subsampling).sum(axis=-1)
    new_limits = np.empty((counts.size + 1,), limits.dtype)
    new_limits[:-1] = limits[:-1:subsampling]
    new_limits[-1] = limits[-1]
    return counts, new_limits


def make_histogram(values, bins, max_bins=None):
    """A ``HistogramProto`` of ``values``, trimmed to the non-empty bucket range plus one empty
    bucket on the left, as TensorFlow's histogram.cc does."""
    if values.size == 0:
        raise ValueError("The input has no element.")
    values = values.reshape(-1)
    counts, limits = np.histogram(values, bins=bins)
    if max_bins is not None and len(counts) > max_bins:
        counts, limits = _subsample(counts, limits, max_bins)
    cum_counts = np.cumsum(np.greater(counts, 0))
    start, end = np.searchsorted(cum_counts, [0, cum_counts[-1] - 1], side="right")
    start, end = int(start), int(end) + 1
    counts = counts[start - 1 : end] if start > 0 else np.concatenate([[0], counts[:end]])
    limits = limits[start : end + 1]
    if counts.size == 0 or limits.size == 0:
        raise ValueError("The histogram is empty, please file a bug report.")
    return HistogramProto(
        min=values.min(), max=values.max(), num=len(values), sum=values.sum(),
        sum_squares=values.dot(values), bucket_limit=limits.tolist(), bucket=counts.tolist(),
    )  # fmt: skip


def image(tag, tensor, rescale=1, dataformats="NCHW"):
    """A ``Summary`` with a PNG image: uint8 values kept, floats in [0, 1] scaled by 255,
    clipped to [0, 255]; a batch is tiled into a grid."""
    tensor = convert_to_HWC(make_np(tensor), dataformats)
    scale_factor = 1 if tensor.dtype == np.uint8 else 255
    tensor = (tensor.astype(np.float32) * scale_factor).clip(0, 255).astype(np.uint8)
    return Summary(value=[Summary.Value(tag=tag, image=make_image(tensor, rescale=rescale))])


def make_image(tensor, rescale=1, rois=None, labels=None):
    """An HWC uint8 array as a PNG ``Summary.Image`` (Pillow encodes it), with the boxes
    ``rois`` (N, 4) drawn on it when given."""
    from PIL import Image

    height, width, channel = tensor.shape
    picture = Image.fromarray(tensor)
    if rois is not None:
        from ._media import draw_boxes

        picture = draw_boxes(picture, rois, labels=labels)
    size = (int(width * rescale), int(height * rescale))
    picture = picture.resize(size, Image.Resampling.LANCZOS)
    output = io.BytesIO()
    picture.save(output, format="PNG")
    return Summary.Image(
        height=height, width=width, colorspace=channel, encoded_image_string=output.getvalue()
    )


def text(tag, text):
    """A ``Summary`` with one string under the text plugin (tag ``<tag>/text_summary``)."""
    content = TextPluginData(version=0).SerializeToString()
    plugin_data = SummaryMetadata.PluginData(plugin_name="text", content=content)
    tensor = TensorProto(
        dtype="DT_STRING",
        string_val=[text.encode(encoding="utf_8")],
        tensor_shape=TensorShapeProto(dim=[TensorShapeProto.Dim(size=1)]),
    )
    metadata = SummaryMetadata(plugin_data=plugin_data)
    return Summary(
        value=[Summary.Value(tag=tag + "/text_summary", metadata=metadata, tensor=tensor)]
    )
