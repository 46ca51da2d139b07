"""Plugin summaries as ``torch.utils.tensorboard.summary`` builds them: precision-recall curves,
custom-scalar layouts, meshes and whole tensors, each a tensor under the plugin's name with the
plugin's own metadata protobuf (from the ``tensorboard`` package)."""

import json
import struct

import numpy as np
from tensorboard.compat.proto.summary_pb2 import Summary, SummaryMetadata
from tensorboard.compat.proto.tensor_pb2 import TensorProto
from tensorboard.compat.proto.tensor_shape_pb2 import TensorShapeProto
from tensorboard.plugins.custom_scalar import layout_pb2
from tensorboard.plugins.pr_curve.plugin_data_pb2 import PrCurvePluginData

from ._convert import make_np

_MINIMUM_COUNT = 1e-7
_MAX_THRESHOLDS = 127  # PyTorch caps the count: more breaks the plugin's protobuf


def _np(value):
    """Ember tensors as numpy; anything else (arrays, lists, numbers) as numpy takes it."""
    import ember

    return make_np(value) if isinstance(value, ember.Tensor) else value


def _float_matrix(data: np.ndarray) -> TensorProto:
    dims = [TensorShapeProto.Dim(size=size) for size in data.shape]
    return TensorProto(
        dtype="DT_FLOAT", float_val=data.reshape(-1).tolist(),
        tensor_shape=TensorShapeProto(dim=dims),
    )  # fmt: skip


def _pr_summary(tag, data: np.ndarray, num_thresholds: int) -> Summary:
    content = PrCurvePluginData(version=0, num_thresholds=num_thresholds).SerializeToString()
    plugin_data = SummaryMetadata.PluginData(plugin_name="pr_curves", content=content)
    metadata = SummaryMetadata(plugin_data=plugin_data)
    return Summary(value=[Summary.Value(tag=tag, metadata=metadata, tensor=_float_matrix(data))])


def pr_curve_raw(tag, tp, fp, tn, fn, precision, recall, num_thresholds=127, weights=None):
    """A ``Summary`` with a precision-recall curve given by its six per-threshold series."""
    num_thresholds = min(num_thresholds, _MAX_THRESHOLDS)
    data = np.stack([_np(series) for series in (tp, fp, tn, fn, precision, recall)])
    return _pr_summary(tag, data, num_thresholds)


def pr_curve(tag, labels, predictions, num_thresholds=127, weights=None):
    """A ``Summary`` with the precision-recall curve of binary ``labels`` against
    ``predictions`` in [0, 1]."""
    num_thresholds = min(num_thresholds, _MAX_THRESHOLDS)
    data = compute_curve(labels, predictions, num_thresholds=num_thresholds, weights=weights)
    return _pr_summary(tag, data, num_thresholds)


def compute_curve(labels, predictions, num_thresholds=None, weights=None):
    """(tp, fp, tn, fn, precision, recall) per threshold, as TensorBoard's pr_curve plugin
    computes them: predictions bucketed, then reverse cumulative sums."""
    weights = 1.0 if weights is None else _np(weights)
    bucket_indices = np.int32(np.floor(predictions * (num_thresholds - 1)))
    float_labels = labels.astype(np.float64)
    histogram_range = (0, num_thresholds - 1)
    tp_buckets, _ = np.histogram(
        bucket_indices, bins=num_thresholds, range=histogram_range,
        weights=float_labels * weights,
    )  # fmt: skip
    fp_buckets, _ = np.histogram(
        bucket_indices, bins=num_thresholds, range=histogram_range,
        weights=(1.0 - float_labels) * weights,
    )  # fmt: skip
    tp = np.cumsum(tp_buckets[::-1])[::-1]
    fp = np.cumsum(fp_buckets[::-1])[::-1]
    tn = fp[0] - fp
    fn = tp[0] - tp
    precision = tp / np.maximum(_MINIMUM_COUNT, tp + fp)
    recall = tp / np.maximum(_MINIMUM_COUNT, tp + fn)
    return np.stack((tp, fp, tn, fn, precision, recall))


def _chart(title, properties):
    kind, tags = properties[0], properties[1]
    if kind == "Margin":
        if len(tags) != 3:
            raise AssertionError("len(tags) != 3")
        series = layout_pb2.MarginChartContent.Series(value=tags[0], lower=tags[1], upper=tags[2])
        return layout_pb2.Chart(title=title, margin=layout_pb2.MarginChartContent(series=[series]))
    content = layout_pb2.MultilineChartContent(tag=tags)
    return layout_pb2.Chart(title=title, multiline=content)


def custom_scalars(layout):
    """The custom-scalars dashboard's layout: ``{category: {chart: [kind, tags]}}`` with kind
    ``"Multiline"`` or ``"Margin"`` (value, lower, upper tags)."""
    categories = [
        layout_pb2.Category(title=category, chart=[_chart(t, p) for t, p in charts.items()])
        for category, charts in layout.items()
    ]
    proto = layout_pb2.Layout(category=categories)
    plugin_data = SummaryMetadata.PluginData(plugin_name="custom_scalars")
    tensor = TensorProto(
        dtype="DT_STRING", string_val=[proto.SerializeToString()],
        tensor_shape=TensorShapeProto(),
    )  # fmt: skip
    value = Summary.Value(
        tag="custom_scalars__config__", tensor=tensor,
        metadata=SummaryMetadata(plugin_data=plugin_data),
    )  # fmt: skip
    return Summary(value=[value])


def _mesh_value(name, display_name, description, tensor, content_type, components, config):
    from tensorboard.plugins.mesh import metadata

    array = np.asarray(_np(tensor))
    tensor_metadata = metadata.create_summary_metadata(
        name, display_name, content_type, components, list(array.shape), description,
        json_config=config,
    )  # fmt: skip
    proto = _float_matrix(array)
    tag = metadata.get_instance_name(name, content_type)
    return Summary.Value(tag=tag, tensor=proto, metadata=tensor_metadata)


def mesh(tag, vertices, colors, faces, config_dict, display_name=None, description=None):
    """A ``Summary`` with a mesh or point cloud: one (B, N, 3) tensor each for the vertices,
    faces and colors given, and the Three.js ``config_dict`` as JSON."""
    from tensorboard.plugins.mesh import metadata
    from tensorboard.plugins.mesh.plugin_data_pb2 import MeshPluginData

    config = "{}" if config_dict is None else json.dumps(config_dict, sort_keys=True)
    parts = [
        (vertices, MeshPluginData.VERTEX),
        (faces, MeshPluginData.FACE),
        (colors, MeshPluginData.COLOR),
    ]
    parts = [part for part in parts if part[0] is not None]
    components = metadata.get_components_bitmask([kind for _, kind in parts])
    values = [
        _mesh_value(tag, display_name, description, tensor, kind, components, config)
        for tensor, kind in parts
    ]
    return Summary(value=values)


def _half_bits(values) -> list[int]:
    """PyTorch's ``half_to_int``: each value's float32 bit pattern, stored in ``half_val``."""
    return [struct.unpack("i", struct.pack("f", v))[0] for v in values]


# ember dtype name -> (TensorProto dtype, value field, half-precision packing), as PyTorch maps
_TENSOR_TYPES = {
    "float16": ("DT_HALF", "half_val", True),
    "bfloat16": ("DT_BFLOAT16", "half_val", True),
    "float32": ("DT_FLOAT", "float_val", False),
    "float64": ("DT_DOUBLE", "double_val", False),
    "int8": ("DT_INT8", "int_val", False),
    "uint8": ("DT_UINT8", "uint32_val", False),
    "int16": ("DT_INT16", "int_val", False),
    "int32": ("DT_INT32", "int_val", False),
    "int64": ("DT_INT64", "int64_val", False),
    "complex64": ("DT_COMPLEX64", "scomplex_val", False),
    "complex128": ("DT_COMPLEX128", "dcomplex_val", False),
    "bool": ("DT_BOOL", "bool_val", False),
}


def tensor_proto(tag, tensor):
    """A ``Summary`` with the whole tensor under the ``tensor`` plugin (``add_tensor``)."""
    if tensor.numel() * tensor.dtype.itemsize >= (1 << 31):
        raise ValueError("tensor is bigger than protocol buffer's hard limit of 2GB in size")
    if tensor.dtype.name not in _TENSOR_TYPES:
        raise ValueError(f"{tag} has unsupported tensor dtype {tensor.dtype}")
    dtype, field, half = _TENSOR_TYPES[tensor.dtype.name]
    array = make_np(tensor)
    if array.dtype.kind == "c":  # real and imaginary parts interleaved, as view_as_real
        array = np.stack([array.real, array.imag], axis=-1)
    values = array.reshape(-1).tolist()
    shape = TensorShapeProto(dim=[TensorShapeProto.Dim(size=size) for size in tensor.shape])
    proto = TensorProto(
        dtype=dtype, tensor_shape=shape, **{field: _half_bits(values) if half else values}
    )
    metadata = SummaryMetadata(plugin_data=SummaryMetadata.PluginData(plugin_name="tensor"))
    return Summary(value=[Summary.Value(tag=tag, metadata=metadata, tensor=proto)])
