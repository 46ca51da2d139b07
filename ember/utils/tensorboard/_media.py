"""Media summaries as ``torch.utils.tensorboard.summary`` builds them: images with boxes drawn
(Pillow), videos as GIFs (moviepy), audio as 16-bit WAV (the standard library's ``wave``), and
matplotlib figures rendered to images."""

import io
import tempfile
import wave

import numpy as np
from tensorboard.compat.proto.summary_pb2 import Summary

from ._convert import convert_to_HWC, make_np


def _scale_factor(array: np.ndarray) -> int:
    """uint8 images are already in [0, 255]; anything else is taken to be in [0, 1]."""
    return 1 if array.dtype == np.uint8 else 255


def _draw_single_box(image, xmin, ymin, xmax, ymax, display_str, color="black", thickness=2):
    from PIL import ImageDraw, ImageFont

    font = ImageFont.load_default()
    draw = ImageDraw.Draw(image)
    left, right, top, bottom = xmin, xmax, ymin, ymax
    corners = [(left, top), (left, bottom), (right, bottom), (right, top), (left, top)]
    draw.line(corners, width=thickness, fill=color)
    if display_str:
        _left, _top, _right, _bottom = font.getbbox(display_str)
        text_width, text_height = _right - _left, _bottom - _top
        margin = np.ceil(0.05 * text_height)
        box = [(left, bottom - text_height - 2 * margin), (left + text_width, bottom)]
        draw.rectangle(box, fill=color)
        origin = (left + margin, bottom - text_height - margin)
        draw.text(origin, display_str, fill="black", font=font)
    return image


def draw_boxes(image, boxes, labels=None):
    """Red ``(xmin, ymin, xmax, ymax)`` boxes on a PIL image, each with its label if given."""
    for i in range(boxes.shape[0]):
        label = None if labels is None else labels[i]
        x0, y0, x1, y1 = boxes[i, 0], boxes[i, 1], boxes[i, 2], boxes[i, 3]
        image = _draw_single_box(image, x0, y0, x1, y1, display_str=label, color="Red")
    return image


def image_boxes(tag, tensor_image, tensor_boxes, rescale=1, dataformats="CHW", labels=None):
    """A ``Summary`` with one PNG image and boxes drawn on it."""
    from .summary import make_image

    tensor_image = convert_to_HWC(make_np(tensor_image), dataformats)
    tensor_boxes = make_np(tensor_boxes)
    tensor_image = tensor_image.astype(np.float32) * _scale_factor(tensor_image)
    picture = make_image(
        tensor_image.clip(0, 255).astype(np.uint8), rescale=rescale, rois=tensor_boxes,
        labels=labels,
    )  # fmt: skip
    return Summary(value=[Summary.Value(tag=tag, image=picture)])


def prepare_video(video: np.ndarray) -> np.ndarray:
    """(N, T, C, H, W) -> (T, H', W', C): the N clips tiled into a grid per frame, the batch
    padded with black clips to a power of two (PyTorch's ``_prepare_video``)."""
    b, t, c, h, w = video.shape
    if video.dtype == np.uint8:
        video = np.float32(video) / 255.0
    if b & (b - 1):  # not a power of two
        padding = int(2 ** b.bit_length() - b)
        video = np.concatenate((video, np.zeros(shape=(padding, t, c, h, w))), axis=0)
    n_rows = 2 ** ((b.bit_length() - 1) // 2)
    n_cols = video.shape[0] // n_rows
    video = np.reshape(video, (n_rows, n_cols, t, c, h, w))
    video = np.transpose(video, axes=(2, 0, 4, 1, 5, 3))
    return np.reshape(video, (t, n_rows * h, n_cols * w, c))


def video(tag, tensor, fps=4):
    """A ``Summary`` with an animated GIF of (N, T, C, H, W) frames (moviepy encodes it)."""
    frames = prepare_video(make_np(tensor))
    frames = (frames.astype(np.float32) * _scale_factor(frames)).clip(0, 255).astype(np.uint8)
    return Summary(value=[Summary.Value(tag=tag, image=make_video(frames, fps))])


def _moviepy():
    try:
        import moviepy
    except ImportError as error:
        raise ImportError(
            "add_video needs package moviepy (pip install moviepy) to encode the GIF"
        ) from error
    try:  # moviepy 1.x, which PyTorch uses
        from moviepy import editor
    except ImportError:
        editor = moviepy  # moviepy 2.x exports the clips at the top level
    if not hasattr(editor, "ImageSequenceClip"):
        raise ImportError(
            "moviepy is installed, but has no ImageSequenceClip: some packages could be "
            "missing [imageio, requests]"
        )
    return editor


def make_video(frames: np.ndarray, fps) -> Summary.Image:
    """(T, H, W, C) uint8 frames as a GIF ``Summary.Image``."""
    clip = _moviepy().ImageSequenceClip(list(frames), fps=fps)
    _, height, width, channels = frames.shape
    with tempfile.NamedTemporaryFile(suffix=".gif") as file:
        try:
            clip.write_gif(file.name, verbose=False, logger=None)
        except TypeError:  # moviepy 2.x has no verbose argument
            clip.write_gif(file.name, logger=None)
        file.seek(0)
        encoded = file.read()
    return Summary.Image(
        height=height, width=width, colorspace=channels, encoded_image_string=encoded
    )


def audio(tag, tensor, sample_rate=44100):
    """A ``Summary`` with mono 16-bit WAV audio of samples in [-1, 1] (clipped, with PyTorch's
    printed warning, when outside)."""
    array = make_np(tensor).squeeze()
    if abs(array).max() > 1:
        print("warning: audio amplitude out of range, auto clipped.")
        array = array.clip(-1, 1)
    if array.ndim != 1:
        raise AssertionError("input tensor should be 1 dimensional.")
    array = (array * np.iinfo(np.int16).max).astype("<i2")
    buffer = io.BytesIO()
    with wave.open(buffer, "wb") as wave_write:
        wave_write.setnchannels(1)
        wave_write.setsampwidth(2)
        wave_write.setframerate(sample_rate)
        wave_write.writeframes(array.data)
    sound = Summary.Audio(
        sample_rate=sample_rate, num_channels=1, length_frames=array.shape[-1],
        encoded_audio_string=buffer.getvalue(), content_type="audio/wav",
    )  # fmt: skip
    return Summary(value=[Summary.Value(tag=tag, audio=sound)])


def figure_to_image(figures, close=True):
    """Matplotlib figure(s) rendered by the Agg canvas as CHW (a list: NCHW) uint8 arrays."""
    try:
        import matplotlib.backends.backend_agg as backend_agg
        import matplotlib.pyplot as plt
    except ImportError as error:
        raise ImportError(
            "add_figure needs package matplotlib (pip install matplotlib) to render figures"
        ) from error

    def render_to_rgb(figure):
        canvas = backend_agg.FigureCanvasAgg(figure)
        canvas.draw()
        data = np.frombuffer(canvas.buffer_rgba(), dtype=np.uint8)
        width, height = figure.canvas.get_width_height()
        image_chw = np.moveaxis(data.reshape([height, width, 4])[:, :, 0:3], 2, 0)
        if close:
            plt.close(figure)
        return image_chw

    if isinstance(figures, list):
        return np.stack([render_to_rgb(figure) for figure in figures])
    return render_to_rgb(figures)
