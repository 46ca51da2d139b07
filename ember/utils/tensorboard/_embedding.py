"""``add_embedding``'s files for TensorBoard's projector (tensors.tsv, metadata.tsv, sprite.png,
projector_config.pbtxt), laid out as ``torch.utils.tensorboard._embedding`` lays them out and
written through tensorboard's gfile."""

import io
import math
import os

import numpy as np
from google.protobuf import text_format
from tensorboard.compat import tf
from tensorboard.plugins.projector.projector_config_pb2 import EmbeddingInfo, ProjectorConfig

from ._convert import make_grid, make_np


def _write(path, text_or_bytes):
    with tf.io.gfile.GFile(path, "wb") as f:
        f.write(tf.compat.as_bytes(text_or_bytes))


def _encode(rawstr):
    """A tag as one path component: %, / and \\ escaped, as PyTorch's ``_encode``."""
    for char in "%/\\":
        rawstr = rawstr.replace(char, f"%{ord(char):02x}")
    return rawstr


def _make_tsv(metadata, save_path, metadata_header=None):
    if not metadata_header:
        lines = [str(x) for x in metadata]
    else:
        if len(metadata_header) != len(metadata[0]):
            raise AssertionError("len of header must be equal to the number of columns in metadata")
        lines = ["\t".join(str(e) for e in row) for row in [metadata_header] + list(metadata)]
    _write(os.path.join(save_path, "metadata.tsv"), "\n".join(lines) + "\n")


def _make_sprite(label_img, save_path):
    """The label images tiled into a square grid, floats in [0, 1] scaled to uint8 PNG."""
    from PIL import Image

    nrow = math.ceil(label_img.shape[0] ** 0.5)
    grid_chw = make_grid(label_img, ncols=nrow)
    square_hwc = np.zeros((grid_chw.shape[2], grid_chw.shape[2], 3))
    square_hwc[: grid_chw.shape[1], :, :] = grid_chw.transpose(1, 2, 0)
    picture = Image.fromarray(np.uint8((square_hwc * 255).clip(0, 255)))
    with io.BytesIO() as buffer:
        picture.save(buffer, format="PNG")
        _write(os.path.join(save_path, "sprite.png"), buffer.getvalue())


def _make_mat(mat, save_path):
    lines = ["\t".join(str(i.item()) for i in row) + "\n" for row in mat]
    _write(os.path.join(save_path, "tensors.tsv"), "".join(lines))


def _embedding_info(metadata, label_img, subdir, global_step, tag):
    info = EmbeddingInfo()
    info.tensor_name = f"{tag}:{str(global_step).zfill(5)}"
    info.tensor_path = os.path.join(subdir, "tensors.tsv")
    if metadata is not None:
        info.metadata_path = os.path.join(subdir, "metadata.tsv")
    if label_img is not None:
        info.sprite.image_path = os.path.join(subdir, "sprite.png")
        info.sprite.single_image_dim.extend([label_img.shape[3], label_img.shape[2]])
    return info


def _prepare_dir(save_path):
    fs = tf.io.gfile
    if not fs.exists(save_path):
        fs.makedirs(save_path)
    elif fs.isdir(save_path):
        print("warning: Embedding dir exists, did you set global_step for add_embedding()?")
    else:
        raise NotADirectoryError(f"Path: `{save_path}` exists, but is a file. Cannot proceed.")


def write_embedding(logdir, config, mat, metadata, label_img, global_step, tag, metadata_header):
    """Write one embedding's files under ``logdir/<step>/<tag>`` and the projector config
    (``config`` is the writer's ``ProjectorConfig``, or None for a new one); returns the config."""
    mat = make_np(mat)
    label_img = None if label_img is None else make_np(label_img)
    global_step = 0 if global_step is None else global_step
    subdir = f"{str(global_step).zfill(5)}/{_encode(tag)}"
    save_path = os.path.join(logdir, subdir)
    _prepare_dir(save_path)
    if metadata is not None:
        if mat.shape[0] != len(metadata):
            raise AssertionError("#labels should equal with #data points")
        _make_tsv(metadata, save_path, metadata_header=metadata_header)
    if label_img is not None:
        if mat.shape[0] != label_img.shape[0]:
            raise AssertionError("#images should equal with #data points")
        _make_sprite(label_img, save_path)
    if mat.ndim != 2:
        raise AssertionError("mat should be 2D, where mat.size(0) is the number of data points")
    _make_mat(mat, save_path)
    config = ProjectorConfig() if config is None else config
    config.embeddings.extend([_embedding_info(metadata, label_img, subdir, global_step, tag)])
    _write(os.path.join(logdir, "projector_config.pbtxt"), text_format.MessageToString(config))
    return config
