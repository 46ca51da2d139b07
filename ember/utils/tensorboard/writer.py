"""``SummaryWriter`` and ``FileWriter`` with PyTorch's signatures: summaries go through the
``tensorboard`` package's ``EventFileWriter`` (its record format, CRCs and async queue)."""

import os
import time

from tensorboard.compat.proto import event_pb2
from tensorboard.compat.proto.event_pb2 import Event, SessionLog
from tensorboard.summary.writer.event_file_writer import EventFileWriter

from .summary import (
    audio,
    custom_scalars,
    histogram,
    histogram_raw,
    hparams,
    image,
    image_boxes,
    mesh,
    pr_curve,
    pr_curve_raw,
    scalar,
    tensor_proto,
    text,
    video,
)

__all__ = ["FileWriter", "SummaryWriter"]


class FileWriter:
    """Writes protocol buffers to one event file in ``log_dir``, asynchronously."""

    def __init__(self, log_dir, max_queue=10, flush_secs=120, filename_suffix="") -> None:
        self.event_writer = EventFileWriter(str(log_dir), max_queue, flush_secs, filename_suffix)

    def get_logdir(self):
        """The directory the event file is written to."""
        return self.event_writer.get_logdir()

    def add_event(self, event, step=None, walltime=None) -> None:
        """Write an ``Event`` stamped with ``walltime`` (default now) and ``step``."""
        event.wall_time = time.time() if walltime is None else walltime
        if step is not None:
            event.step = int(step)
        self.event_writer.add_event(event)

    def add_summary(self, summary, global_step=None, walltime=None) -> None:
        """Write a ``Summary`` wrapped in an ``Event``."""
        self.add_event(event_pb2.Event(summary=summary), global_step, walltime)

    def add_graph(self, graph_profile, walltime=None) -> None:
        """Write a ``(GraphDef, RunMetadata)`` pair as PyTorch does (run metadata tag step1)."""
        graph, stepstats = graph_profile
        self.add_event(event_pb2.Event(graph_def=graph.SerializeToString()), None, walltime)
        metadata = event_pb2.TaggedRunMetadata(
            tag="step1", run_metadata=stepstats.SerializeToString()
        )
        self.add_event(event_pb2.Event(tagged_run_metadata=metadata), None, walltime)

    def add_onnx_graph(self, graph, walltime=None) -> None:
        """Write a ``GraphDef`` (PyTorch writes an ONNX model's this way, without run metadata)."""
        self.add_event(event_pb2.Event(graph_def=graph.SerializeToString()), None, walltime)

    def flush(self) -> None:
        """Write pending events to disk."""
        self.event_writer.flush()

    def close(self) -> None:
        """Flush and close the event file."""
        self.event_writer.close()

    def reopen(self) -> None:
        """Open a new event file in the same directory after ``close()``."""
        self.event_writer.reopen()


def _default_log_dir(comment):
    import socket
    from datetime import datetime

    current_time = datetime.now().strftime("%b%d_%H-%M-%S")
    return os.path.join("runs", current_time + "_" + socket.gethostname() + comment)


def _tensorflow_bins():
    """TensorFlow's default histogram buckets: +-1e-12 growing by 10% up to 1e20, and 0."""
    v = 1e-12
    buckets = []
    while v < 1e20:
        buckets.append(v)
        v *= 1.1
    return [-b for b in reversed(buckets)] + [0] + buckets


class SummaryWriter:
    """Writes scalars, histograms, images, text and hparams to event files in ``log_dir`` for
    TensorBoard, as ``torch.utils.tensorboard.SummaryWriter``.

    Args:
        log_dir: directory; default ``runs/<Mon DD_HH-MM-SS>_<hostname><comment>``.
        comment: suffix of the default ``log_dir`` (ignored when ``log_dir`` is given).
        purge_step: when resuming at this step, TensorBoard hides events at or after it.
        max_queue: pending events before an ``add_*`` call forces a flush.
        flush_secs: seconds between background flushes.
        filename_suffix: suffix of the event file names.

    Example::

        >>> with SummaryWriter("runs/exp1") as writer:
        ...     for step in range(3):
        ...         writer.add_scalar("loss", 1.0 / (step + 1), step)
    """

    def __init__(
        self, log_dir=None, comment="", purge_step=None, max_queue=10, flush_secs=120,
        filename_suffix="",
    ) -> None:  # fmt: skip
        self.log_dir = log_dir if log_dir else _default_log_dir(comment)
        self.purge_step = purge_step
        self.max_queue = max_queue
        self.flush_secs = flush_secs
        self.filename_suffix = filename_suffix
        self.file_writer = self.all_writers = None
        self._get_file_writer()
        self.default_bins = _tensorflow_bins()

    def _new_file_writer(self, log_dir):
        return FileWriter(log_dir, self.max_queue, self.flush_secs, self.filename_suffix)

    def _get_file_writer(self):
        """The default FileWriter, reopened after ``close()``."""
        if self.all_writers is None or self.file_writer is None:
            self.file_writer = self._new_file_writer(self.log_dir)
            self.all_writers = {self.file_writer.get_logdir(): self.file_writer}
            if self.purge_step is not None:
                step = self.purge_step
                self.file_writer.add_event(Event(step=step, file_version="brain.Event:2"))
                start = SessionLog(status=SessionLog.START)
                self.file_writer.add_event(Event(step=step, session_log=start))
                self.purge_step = None
        return self.file_writer

    def get_logdir(self):
        """The directory event files are written to."""
        return self.log_dir

    def add_hparams(
        self, hparam_dict, metric_dict, hparam_domain_discrete=None, run_name=None,
        global_step=None,
    ) -> None:  # fmt: skip
        """Log a run's hyperparameters and metrics for the HParams dashboard, in the
        subdirectory ``run_name`` (default: the current time)."""
        if type(hparam_dict) is not dict or type(metric_dict) is not dict:
            raise TypeError("hparam_dict and metric_dict should be dictionary.")
        summaries = hparams(hparam_dict, metric_dict, hparam_domain_discrete)
        logdir = os.path.join(self._get_file_writer().get_logdir(), run_name or str(time.time()))
        with SummaryWriter(log_dir=logdir) as w_hp:
            for summary in summaries:
                w_hp.file_writer.add_summary(summary, global_step)
            for k, v in metric_dict.items():
                w_hp.add_scalar(k, v, global_step)

    def add_scalar(
        self, tag, scalar_value, global_step=None, walltime=None, new_style=False,
        double_precision=False,
    ) -> None:  # fmt: skip
        """Log one number (a Python number, a one-element tensor or array) at ``global_step``;
        ``new_style`` stores it as a tensor (float64 with ``double_precision``)."""
        summary = scalar(tag, scalar_value, new_style=new_style, double_precision=double_precision)
        self._get_file_writer().add_summary(summary, global_step, walltime)

    def add_tensor(self, tag, tensor, global_step=None, walltime=None) -> None:
        """Log a whole ember tensor (its values and shape) under the ``tensor`` plugin."""
        self._get_file_writer().add_summary(tensor_proto(tag, tensor), global_step, walltime)

    def add_scalars(self, main_tag, tag_scalar_dict, global_step=None, walltime=None) -> None:
        """Log several numbers under ``main_tag``, each in its own run directory
        ``<log_dir>/<main_tag>_<tag>`` so that TensorBoard draws them on one chart."""
        walltime = time.time() if walltime is None else walltime
        fw_logdir = self._get_file_writer().get_logdir()
        for tag, scalar_value in tag_scalar_dict.items():
            fw_tag = fw_logdir + "/" + main_tag.replace("/", "_") + "_" + tag
            if fw_tag not in self.all_writers:
                self.all_writers[fw_tag] = self._new_file_writer(fw_tag)
            summary = scalar(main_tag, scalar_value)
            self.all_writers[fw_tag].add_summary(summary, global_step, walltime)

    def add_histogram(
        self, tag, values, global_step=None, bins="tensorflow", walltime=None, max_bins=None
    ) -> None:
        """Log the histogram of ``values``; ``bins`` is ``"tensorflow"`` (TensorFlow's
        exponential buckets) or anything ``numpy.histogram`` takes (``"auto"``, ``"fd"``, a count,
        edges)."""
        if isinstance(bins, str) and bins == "tensorflow":
            bins = self.default_bins
        summary = histogram(tag, values, bins, max_bins=max_bins)
        self._get_file_writer().add_summary(summary, global_step, walltime)

    def add_histogram_raw(
        self, tag, min, max, num, sum, sum_squares, bucket_limits, bucket_counts,
        global_step=None, walltime=None,
    ) -> None:  # fmt: skip
        """Log a histogram given by its statistics and buckets."""
        if len(bucket_limits) != len(bucket_counts):
            raise ValueError("len(bucket_limits) != len(bucket_counts), see the document.")
        summary = histogram_raw(tag, min, max, num, sum, sum_squares, bucket_limits, bucket_counts)
        self._get_file_writer().add_summary(summary, global_step, walltime)

    def add_image(self, tag, img_tensor, global_step=None, walltime=None, dataformats="CHW"):
        """Log one image (uint8 in [0, 255] or float in [0, 1]) laid out as ``dataformats``
        (``CHW``, ``HWC``, ``HW``); needs Pillow."""
        summary = image(tag, img_tensor, dataformats=dataformats)
        self._get_file_writer().add_summary(summary, global_step, walltime)

    def add_images(self, tag, img_tensor, global_step=None, walltime=None, dataformats="NCHW"):
        """Log a batch of images (``NCHW`` or ``NHWC``) tiled into one grid image."""
        summary = image(tag, img_tensor, dataformats=dataformats)
        self._get_file_writer().add_summary(summary, global_step, walltime)

    def add_image_with_boxes(
        self, tag, img_tensor, box_tensor, global_step=None, walltime=None, rescale=1,
        dataformats="CHW", labels=None,
    ) -> None:  # fmt: skip
        """Log one image with red boxes ``box_tensor`` (N, 4) as (xmin, ymin, xmax, ymax), each
        with its entry of ``labels`` (dropped unless there is one per box)."""
        if labels is not None:
            if isinstance(labels, str):
                labels = [labels]
            if len(labels) != box_tensor.shape[0]:
                labels = None
        summary = image_boxes(
            tag, img_tensor, box_tensor, rescale=rescale, dataformats=dataformats, labels=labels
        )
        self._get_file_writer().add_summary(summary, global_step, walltime)

    def add_figure(self, tag, figure, global_step=None, close=True, walltime=None) -> None:
        """Log a matplotlib figure (or a list of them, tiled) rendered as an image; needs
        matplotlib. ``close`` closes the figures afterwards."""
        from ._media import figure_to_image

        dataformats = "NCHW" if isinstance(figure, list) else "CHW"
        picture = figure_to_image(figure, close)
        self.add_image(tag, picture, global_step, walltime, dataformats=dataformats)

    def add_video(self, tag, vid_tensor, global_step=None, fps=4, walltime=None) -> None:
        """Log (N, T, C, H, W) clips (uint8 in [0, 255] or float in [0, 1]) as one animated GIF,
        the clips tiled per frame; needs moviepy."""
        self._get_file_writer().add_summary(video(tag, vid_tensor, fps), global_step, walltime)

    def add_audio(self, tag, snd_tensor, global_step=None, sample_rate=44100, walltime=None):
        """Log a (1, L) sound in [-1, 1] as a mono 16-bit WAV at ``sample_rate`` Hz."""
        summary = audio(tag, snd_tensor, sample_rate=sample_rate)
        self._get_file_writer().add_summary(summary, global_step, walltime)

    def add_text(self, tag, text_string, global_step=None, walltime=None) -> None:
        """Log a (markdown) string."""
        self._get_file_writer().add_summary(text(tag, text_string), global_step, walltime)

    def add_graph(self, model, input_to_model=None, verbose=False, use_strict_trace=True):
        """Log the graph of ``model`` traced with ``ember.jit.trace`` on ``input_to_model``."""
        from ._graph import graph

        self._get_file_writer().add_graph(graph(model, input_to_model, verbose, use_strict_trace))

    def add_onnx_graph(self, prototxt) -> None:
        """Log the graph of the ONNX model in the file ``prototxt`` (e.g. from
        ``ember.onnx.export``); the ``onnx`` package reads it."""
        from ._onnx_graph import load_onnx_graph

        self._get_file_writer().add_onnx_graph(load_onnx_graph(prototxt))

    def add_embedding(
        self, mat, metadata=None, label_img=None, global_step=None, tag="default",
        metadata_header=None,
    ) -> None:  # fmt: skip
        """Write an (N, D) embedding for the projector, with optional per-point ``metadata``
        (labels, or rows under ``metadata_header``) and ``label_img`` (N, C, H, W) sprites."""
        from ._embedding import write_embedding

        self._projector_config = write_embedding(
            self._get_file_writer().get_logdir(), getattr(self, "_projector_config", None), mat,
            metadata, label_img, global_step, tag, metadata_header,
        )  # fmt: skip

    def add_pr_curve(
        self, tag, labels, predictions, global_step=None, num_thresholds=127, weights=None,
        walltime=None,
    ) -> None:  # fmt: skip
        """Log the precision-recall curve of binary ``labels`` against ``predictions`` in
        [0, 1] over ``num_thresholds`` thresholds (at most 127)."""
        from ._convert import make_np

        labels, predictions = make_np(labels), make_np(predictions)
        summary = pr_curve(tag, labels, predictions, num_thresholds, weights)
        self._get_file_writer().add_summary(summary, global_step, walltime)

    def add_pr_curve_raw(
        self, tag, true_positive_counts, false_positive_counts, true_negative_counts,
        false_negative_counts, precision, recall, global_step=None, num_thresholds=127,
        weights=None, walltime=None,
    ) -> None:  # fmt: skip
        """Log a precision-recall curve given by its counts, precision and recall per
        threshold."""
        summary = pr_curve_raw(
            tag, true_positive_counts, false_positive_counts, true_negative_counts,
            false_negative_counts, precision, recall, num_thresholds, weights,
        )  # fmt: skip
        self._get_file_writer().add_summary(summary, global_step, walltime)

    def add_custom_scalars_multilinechart(self, tags, category="default", title="untitled"):
        """One custom-scalars chart drawing the scalar ``tags`` together."""
        layout = {category: {title: ["Multiline", tags]}}
        self._get_file_writer().add_summary(custom_scalars(layout))

    def add_custom_scalars_marginchart(self, tags, category="default", title="untitled"):
        """One custom-scalars chart: the value, lower and upper bound ``tags`` (exactly 3)."""
        if len(tags) != 3:
            raise AssertionError(f"Expected 3 tags, got {len(tags)}.")
        layout = {category: {title: ["Margin", tags]}}
        self._get_file_writer().add_summary(custom_scalars(layout))

    def add_custom_scalars(self, layout) -> None:
        """The custom-scalars dashboard's layout, ``{category: {chart: [kind, tags]}}`` with
        kind ``"Multiline"`` or ``"Margin"``; call once per writer."""
        self._get_file_writer().add_summary(custom_scalars(layout))

    def add_mesh(
        self, tag, vertices, colors=None, faces=None, config_dict=None, global_step=None,
        walltime=None,
    ) -> None:  # fmt: skip
        """Log a mesh or point cloud for the Mesh dashboard (Three.js): (B, N, 3) ``vertices``,
        optional ``colors`` and ``faces``, and Three.js settings in ``config_dict``."""
        summary = mesh(tag, vertices, colors, faces, config_dict)
        self._get_file_writer().add_summary(summary, global_step, walltime)

    def flush(self) -> None:
        """Write pending events of every run directory to disk."""
        if self.all_writers is None:
            return
        for writer in self.all_writers.values():
            writer.flush()

    def close(self) -> None:
        """Flush and close every event file; a later ``add_*`` opens a new one."""
        if self.all_writers is None:
            return
        for writer in self.all_writers.values():
            writer.flush()
            writer.close()
        self.file_writer = self.all_writers = None

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc_val, exc_tb):
        self.close()
