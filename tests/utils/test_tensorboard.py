"""ember.utils.tensorboard.SummaryWriter against torch.utils.tensorboard.SummaryWriter: the same
calls into two directories, read back with tensorboard's own loaders and compared."""

import io
import os
import pathlib
import re
import socket
import subprocess
import sys

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")
pytest.importorskip("tensorboard")
pytest.importorskip("PIL")

from tensorboard.backend.event_processing.event_accumulator import EventAccumulator  # noqa: E402
from tensorboard.backend.event_processing.event_file_loader import EventFileLoader  # noqa: E402
from torch.utils.tensorboard import SummaryWriter as TorchWriter  # noqa: E402

from ember.utils.tensorboard import SummaryWriter  # noqa: E402

ACCUMULATE_ALL = {"scalars": 0, "histograms": 0, "images": 0, "tensors": 0}


def arrays(seed=0):
    rng = np.random.default_rng(seed)
    return {
        "normal": rng.standard_normal((4, 50)).astype(np.float32),
        "chw": rng.random((3, 8, 10)).astype(np.float32),
        "hwc_u8": rng.integers(0, 256, (6, 7, 3), dtype=np.uint8),
        "hw": rng.random((5, 9)),
        "nchw": rng.random((5, 1, 4, 6)).astype(np.float32),
        "nhwc": rng.random((3, 4, 6, 3)).astype(np.float32),
        "boxes": np.array([[1, 1, 6, 5], [2, 0, 9, 7]], dtype=np.float32),
        "sound": np.sin(np.arange(400) / 7).reshape(1, 400).astype(np.float32),
        "labels": rng.integers(0, 2, 60),
        "scores": rng.random(60),
        "vertices": rng.standard_normal((1, 4, 3)).astype(np.float32),
        "faces": np.array([[[0, 2, 3], [0, 3, 1], [0, 1, 2], [1, 3, 2]]], dtype=np.int32),
        "colors": rng.integers(0, 256, (1, 4, 3), dtype=np.int32),
    }


def log_everything(writer, to_tensor):
    """One program, written once, that runs against either library's writer."""
    a = {k: to_tensor(v) for k, v in arrays().items()}
    writer.add_scalar("loss", 0.5, 0)
    writer.add_scalar("loss", np.float64(0.25), 1)
    writer.add_scalar("loss", a["normal"][0, 0], 2)  # 0-d tensor
    writer.add_scalar("loss", a["normal"][0, :1], 3)  # one-element tensor
    writer.add_scalar("acc/new", 0.1234567891234, 4, new_style=True)
    writer.add_scalar("acc/double", 0.1234567891234, 4, new_style=True, double_precision=True)
    writer.add_scalars("run", {"sin": 0.5, "cos": a["normal"][1, 1]}, 5)
    writer.add_scalars("run/x", {"tan": 3}, 6)
    writer.add_histogram("w/tf", a["normal"], 0)
    writer.add_histogram("w/auto", a["normal"], 1, bins="auto")
    writer.add_histogram("w/ten", a["normal"], 2, bins=10)
    writer.add_histogram("w/fd", a["normal"][0], 3, bins="fd", max_bins=4)
    writer.add_histogram("w/max", a["normal"], 4, max_bins=7)
    writer.add_histogram("w/numpy", arrays()["hw"], 5)
    writer.add_histogram("w/bf16", a["normal"].bfloat16(), 6)  # numpy via float16, as PyTorch
    writer.add_histogram_raw("w/raw", 0.0, 3.0, 6, 9.0, 21.0, [1.0, 2.0, 3.0], [1, 2, 3], 7)
    writer.add_image("img/chw", a["chw"], 0)
    writer.add_image("img/hwc", a["hwc_u8"], 1, dataformats="HWC")
    writer.add_image("img/hw", a["hw"], 2, dataformats="HW")
    writer.add_images("img/nchw", a["nchw"], 3)
    writer.add_images("img/nhwc", a["nhwc"], 4, dataformats="NHWC")
    writer.add_text("note", "**hello** ünïcode", 7)
    log_media_and_plugins(writer, a)
    hp = {"lr": 0.1, "bsize": 16, "opt": "adam", "nesterov": True, "beta": a["normal"][0, 2:3]}
    hp["skipped"] = None
    domains = {"opt": ["adam", "sgd"], "bsize": [16, 32]}
    writer.add_hparams(hp, {"hparam/acc": 0.9}, domains, run_name="trial", global_step=8)
    writer.flush()


def log_media_and_plugins(writer, a):
    writer.add_image_with_boxes("boxes/plain", a["chw"], a["boxes"], 0)
    writer.add_image_with_boxes("boxes/labels", a["chw"], a["boxes"], 1, labels=["cat", "dog"])
    writer.add_image_with_boxes("boxes/one", a["hwc_u8"], a["boxes"][:1], 2, rescale=2,
                                dataformats="HWC", labels="solo")  # fmt: skip
    writer.add_image_with_boxes("boxes/dropped", a["chw"], a["boxes"], 3, labels=["x"])
    writer.add_audio("sound/sine", a["sound"], 0)
    writer.add_audio("sound/loud", a["sound"] * 3, 1, sample_rate=8000)  # clipped
    writer.add_pr_curve("pr/default", a["labels"], a["scores"], 0)
    writer.add_pr_curve("pr/weighted", a["labels"], a["scores"], 1, num_thresholds=10,
                        weights=np.linspace(0, 1, 60))  # fmt: skip
    writer.add_pr_curve("pr/capped", a["labels"], a["scores"], 2, num_thresholds=500)
    counts = [np.arange(5.0) + i for i in range(4)]
    writer.add_pr_curve_raw("pr/raw", *counts, np.linspace(0, 1, 5), np.linspace(1, 0, 5), 3,
                            num_thresholds=5)  # fmt: skip
    writer.add_mesh("mesh/full", a["vertices"], colors=a["colors"], faces=a["faces"],
                    config_dict={"camera": {"cls": "PerspectiveCamera", "fov": 75}})  # fmt: skip
    writer.add_mesh("mesh/cloud", a["vertices"], global_step=4)
    writer.add_custom_scalars(
        {"A": {"lines": ["Multiline", ["loss", "acc/new"]]},
         "B": {"band": ["Margin", ["loss", "w/low", "w/high"]]}}
    )  # fmt: skip
    writer.add_custom_scalars_multilinechart(["loss", "acc/new"], category="C", title="t")
    writer.add_custom_scalars_marginchart(["loss", "w/low", "w/high"])


def ember_tensor(array):
    return ember.tensor(array)


def torch_tensor(array):
    return torch.tensor(array)


def events_by_run(root):
    """{run directory relative to root: [Event without wall_time]} over every event file."""
    runs = {}
    for directory, _, files in os.walk(root):
        for name in sorted(f for f in files if "tfevents" in f):
            events = list(EventFileLoader(os.path.join(directory, name)).Load())
            for event in events:
                event.wall_time = 0
            runs.setdefault(os.path.relpath(directory, root), []).extend(events)
    return runs


@pytest.fixture(scope="module")
def logdirs(tmp_path_factory):
    ours, theirs = tmp_path_factory.mktemp("ember"), tmp_path_factory.mktemp("torch")
    with SummaryWriter(str(ours)) as writer:
        log_everything(writer, ember_tensor)
    with TorchWriter(str(theirs)) as writer:
        log_everything(writer, torch_tensor)
    return ours, theirs


def test_events_match_torch_byte_for_byte(logdirs):
    ours, theirs = map(events_by_run, logdirs)
    assert sorted(ours) == sorted(theirs) == [".", "run_cos", "run_sin", "run_x_tan", "trial"]
    for run in theirs:
        assert len(ours[run]) == len(theirs[run]), run
        for mine, reference in zip(ours[run], theirs[run]):
            assert mine == reference, (run, mine, reference)


def accumulate(path):
    accumulator = EventAccumulator(str(path), size_guidance=ACCUMULATE_ALL)
    return accumulator.Reload()


def test_scalars_read_back(logdirs):
    ours, theirs = map(accumulate, logdirs)
    assert ours.Tags()["scalars"] == theirs.Tags()["scalars"] == ["loss"]
    expected = [(e.step, e.value) for e in theirs.Scalars("loss")]
    assert [(e.step, e.value) for e in ours.Scalars("loss")] == expected
    assert expected[:2] == [(0, 0.5), (1, 0.25)]
    assert expected[2][1] == np.float32(arrays()["normal"][0, 0])
    for tag in ("acc/new", "acc/double"):
        mine, reference = ours.Tensors(tag)[0].tensor_proto, theirs.Tensors(tag)[0].tensor_proto
        assert mine == reference
    assert ours.Tensors("acc/double")[0].tensor_proto.double_val == [0.1234567891234]
    sin = accumulate(logdirs[0] / "run_sin").Scalars("run")
    assert [(e.step, e.value) for e in sin] == [(5, 0.5)]


def test_histograms_read_back(logdirs):
    ours, theirs = map(accumulate, logdirs)
    tags = ["w/auto", "w/bf16", "w/fd", "w/max", "w/numpy", "w/raw", "w/ten", "w/tf"]
    assert sorted(ours.Tags()["histograms"]) == sorted(theirs.Tags()["histograms"]) == tags
    for tag in tags:
        (mine,), (reference,) = ours.Histograms(tag), theirs.Histograms(tag)
        assert mine.step == reference.step
        assert mine.histogram_value == reference.histogram_value, tag
    values = arrays()["normal"].astype(float).ravel()
    tf = ours.Histograms("w/tf")[0].histogram_value
    assert (tf.min, tf.max, tf.num, tf.sum) == (values.min(), values.max(), 200, values.sum())
    assert sum(tf.bucket) == 200 and len(tf.bucket) == len(tf.bucket_limit)


def test_images_read_back(logdirs):
    from PIL import Image

    ours, theirs = map(accumulate, logdirs)
    shapes = {"img/chw": (8, 10, 3), "img/hwc": (6, 7, 3), "img/hw": (5, 9, 3)}
    shapes |= {"img/nchw": (4, 30, 3), "img/nhwc": (4, 18, 3)}  # one row: up to 8 per row
    images = [t for t in ours.Tags()["images"] if t.startswith("img/")]
    assert images == [t for t in theirs.Tags()["images"] if t.startswith("img/")]
    assert sorted(images) == sorted(shapes)
    for tag, shape in shapes.items():
        (mine,), (reference,) = ours.Images(tag), theirs.Images(tag)
        assert (mine.step, mine.height, mine.width) == (reference.step, *shape[:2])
        decoded = np.asarray(Image.open(io.BytesIO(mine.encoded_image_string)))
        assert decoded.shape == shape
        assert mine.encoded_image_string == reference.encoded_image_string, tag
    hwc = np.asarray(Image.open(io.BytesIO(ours.Images("img/hwc")[0].encoded_image_string)))
    np.testing.assert_array_equal(hwc, arrays()["hwc_u8"])


def test_media_read_back(logdirs):
    import wave

    from PIL import Image

    ours, theirs = map(accumulate, logdirs)
    tags = ["boxes/dropped", "boxes/labels", "boxes/one", "boxes/plain"]
    assert sorted(t for t in ours.Tags()["images"] if t.startswith("boxes/")) == tags
    plain = np.asarray(Image.open(io.BytesIO(ours.Images("boxes/plain")[0].encoded_image_string)))
    assert tuple(plain[1, 3]) == (255, 0, 0)  # on the first box's top edge, drawn in red
    one = ours.Images("boxes/one")[0]
    assert (one.height, one.width) == (6, 7)  # the original size; the PNG is rescaled
    assert Image.open(io.BytesIO(one.encoded_image_string)).size == (14, 12)
    assert (
        sorted(ours.Tags()["audio"])
        == sorted(theirs.Tags()["audio"])
        == ["sound/loud", "sound/sine"]
    )
    loud = ours.Audio("sound/loud")[0]
    assert (loud.sample_rate, loud.length_frames, loud.content_type) == (8000, 400, "audio/wav")
    with wave.open(io.BytesIO(loud.encoded_audio_string)) as sound:
        samples = np.frombuffer(sound.readframes(400), dtype="<i2")
    expected = (np.clip(arrays()["sound"][0] * 3, -1, 1) * 32767).astype("<i2")
    np.testing.assert_array_equal(samples, expected)


def test_plugins_read_back(logdirs):
    from tensorboard.plugins.custom_scalar import layout_pb2
    from tensorboard.util import tensor_util

    ours, theirs = map(accumulate, logdirs)
    for tag in ("pr/default", "pr/weighted", "pr/capped", "pr/raw", "mesh/full_VERTEX"):
        assert ours.Tensors(tag)[0].tensor_proto == theirs.Tensors(tag)[0].tensor_proto, tag
    curve = tensor_util.make_ndarray(ours.Tensors("pr/default")[0].tensor_proto)
    labels = arrays()["labels"]
    assert curve.shape == (6, 127)
    assert (curve[0, 0], curve[1, 0]) == (labels.sum(), len(labels) - labels.sum())  # tp, fp
    assert tensor_util.make_ndarray(ours.Tensors("pr/capped")[0].tensor_proto).shape == (6, 127)
    mesh_tags = {"mesh/full_VERTEX", "mesh/full_FACE", "mesh/full_COLOR", "mesh/cloud_VERTEX"}
    assert mesh_tags <= set(ours.Tags()["tensors"])
    faces = tensor_util.make_ndarray(ours.Tensors("mesh/full_FACE")[0].tensor_proto)
    np.testing.assert_array_equal(faces, arrays()["faces"])
    layouts = ours.Tensors("custom_scalars__config__")
    assert len(layouts) == 3
    layout = layout_pb2.Layout.FromString(layouts[0].tensor_proto.string_val[0])
    assert [c.title for c in layout.category] == ["A", "B"]
    assert layout.category[1].chart[0].margin.series[0].upper == "w/high"


def test_text_and_hparams_read_back(logdirs):
    ours, theirs = map(accumulate, logdirs)
    (mine,), (reference,) = ours.Tensors("note/text_summary"), theirs.Tensors("note/text_summary")
    assert mine.tensor_proto == reference.tensor_proto
    assert mine.tensor_proto.string_val == ["**hello** ünïcode".encode()]
    from tensorboard.plugins.hparams import plugin_data_pb2

    trial = EventAccumulator(str(logdirs[0] / "trial")).Reload()
    content = trial.PluginTagToContent("hparams")
    start = plugin_data_pb2.HParamsPluginData.FromString(content["_hparams_/session_start_info"])
    hparams = start.session_start_info.hparams
    assert set(hparams) == {"lr", "bsize", "opt", "nesterov", "beta"}
    assert (hparams["lr"].number_value, hparams["opt"].string_value) == (0.1, "adam")
    assert hparams["beta"].number_value == np.float32(arrays()["normal"][0, 2])
    assert [(e.step, e.value) for e in trial.Scalars("hparam/acc")] == [(8, np.float32(0.9))]


def test_default_log_dir_purge_step_and_reopen(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    writer = SummaryWriter(comment="_lr0.1")
    pattern = r"runs/[A-Z][a-z]{2}\d\d_\d\d-\d\d-\d\d_" + re.escape(socket.gethostname() + "_lr0.1")
    assert re.fullmatch(pattern, writer.get_logdir())
    writer.close()
    writer.close()  # twice is fine, as in PyTorch
    ours, theirs = tmp_path / "ember", tmp_path / "torch"
    for cls, path in ((SummaryWriter, ours), (TorchWriter, theirs)):
        writer = cls(path, purge_step=5, filename_suffix=".x")
        writer.add_scalar("s", 1.0, 5)
        writer.close()
        writer.add_scalar("s", 2.0, 6)  # after close: a new event file, as PyTorch does
        writer.close()
    assert all(name.endswith(".x") for name in os.listdir(ours))
    assert events_by_run(ours) == events_by_run(theirs)


def test_errors_match_torch(tmp_path):
    cases = [
        lambda w: w.add_scalar("s", np.zeros(3)),
        lambda w: w.add_hparams([1], {}),
        lambda w: w.add_hparams({"a": [1]}, {}),
        lambda w: w.add_hparams({"a": 1}, {}, {"a": ["x"]}),
        lambda w: w.add_histogram("h", np.zeros(0)),
        lambda w: w.add_histogram("h", [1.0, 2.0]),  # lists are not converted, as in PyTorch
        lambda w: w.add_image("i", np.zeros((2, 3)), dataformats="HWC"),
        lambda w: w.add_histogram_raw("h", 0, 1, 1, 1, 1, [1.0], [1, 2]),
        lambda w: w.add_audio("a", np.zeros((2, 3))),
        lambda w: w.add_custom_scalars_marginchart(["a", "b"]),
        lambda w: w.add_custom_scalars({"c": {"t": ["Margin", ["a"]]}}),
        lambda w: w.add_image_with_boxes("i", np.zeros((3, 4, 4)), np.zeros(4)),
    ]
    with SummaryWriter(tmp_path / "e") as ours, TorchWriter(tmp_path / "t") as theirs:
        for case in cases:
            with pytest.raises(Exception) as expected:
                case(theirs)
            with pytest.raises(expected.type) as got:
                case(ours)
            assert str(got.value).split() == str(expected.value).split()


def test_ember_imports_without_tensorboard():
    code = (
        "import sys; sys.modules['tensorboard'] = None\n"
        "import ember, ember.utils\n"
        "try:\n    import ember.utils.tensorboard\n"
        "except ImportError as e:\n    print('ImportError:', e)\n"
    )
    root = pathlib.Path(__file__).resolve().parents[2]
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=root, capture_output=True, text=True, check=True
    )
    assert "ImportError: TensorBoard logging requires TensorBoard" in result.stdout


def graph_summary(path):
    """(IO nodes, compute nodes) of the logged GraphDef: compute nodes as (module scope, op name
    without its namespace, output shapes); constants and attribute reads differ by design."""
    graph_def = accumulate(path).Graph()
    io_nodes, compute = [], []
    for node in graph_def.node:
        shapes = [[d.size for d in s.dim] for s in node.attr["_output_shapes"].list.shape]
        if node.op == "IO Node":
            io_nodes.append((node.name, shapes))
        elif not node.op.startswith("prim::"):
            compute.append((node.name.rsplit("/", 1)[0], node.op.split("::")[1], shapes))
    return io_nodes, compute


@pytest.mark.filterwarnings("ignore:`torch.jit.trace")
def test_add_graph_matches_torch_structure(tmp_path):
    def build(nn):
        class Block(nn.Module):
            def __init__(self):
                super().__init__()
                self.fc = nn.Sequential(nn.Linear(4, 3), nn.Tanh())
                self.act = nn.ReLU()

            def forward(self, x):
                return self.act(self.fc(x)) * 2

        return Block()

    for nn, path, writer_cls, x in (
        (ember.nn, tmp_path / "e", SummaryWriter, ember.randn(2, 4)),
        (torch.nn, tmp_path / "t", TorchWriter, torch.randn(2, 4)),
    ):
        model = build(nn)
        with writer_cls(path) as writer:
            writer.add_graph(model, x)
        assert model.training  # traced in eval mode, then restored
    ours, theirs = graph_summary(tmp_path / "e"), graph_summary(tmp_path / "t")
    assert ours[0] == theirs[0] == [("input/x", [[2, 4]]), ("output/output.1", [[2, 3]])]
    assert ours[1] == theirs[1]
    assert [(scope, op) for scope, op, _ in ours[1]] == [
        ("Block/Sequential[fc]/Linear[0]", "linear"),
        ("Block/Sequential[fc]/Tanh[1]", "tanh"),
        ("Block/ReLU[act]", "relu"),
        ("Block", "mul"),
    ]


def projector_files(root):
    """{relative path: bytes} of every file but the event files."""
    files = {}
    for directory, _, names in os.walk(root):
        for name in names:
            if "tfevents" not in name:
                path = os.path.join(directory, name)
                files[os.path.relpath(path, root)] = pathlib.Path(path).read_bytes()
    return files


def test_add_embedding_files_match_torch(tmp_path):
    rng = np.random.default_rng(1)
    mat = rng.standard_normal((5, 3)).astype(np.float32)
    images = rng.random((5, 3, 4, 4)).astype(np.float32)
    rows = [[i, f"c{i % 2}"] for i in range(5)]
    for cls, to_tensor, path in (
        (SummaryWriter, ember_tensor, tmp_path / "e"),
        (TorchWriter, torch_tensor, tmp_path / "t"),
    ):
        with cls(path) as writer:
            writer.add_embedding(
                to_tensor(mat), metadata=list("abcde"), label_img=to_tensor(images)
            )
            writer.add_embedding(mat, rows, global_step=3, tag="a/b", metadata_header=["i", "c"])
    ours, theirs = projector_files(tmp_path / "e"), projector_files(tmp_path / "t")
    expected = {"projector_config.pbtxt", "00003/a%2fb/metadata.tsv", "00003/a%2fb/tensors.tsv"}
    expected |= {f"00000/default/{name}" for name in ("metadata.tsv", "sprite.png", "tensors.tsv")}
    assert set(ours) == set(theirs) == expected
    for name in expected:
        assert ours[name] == theirs[name], name
    with SummaryWriter(tmp_path / "bad") as writer, pytest.raises(AssertionError, match="#labels"):
        writer.add_embedding(mat, metadata=["x"])


class FakeClip:
    """moviepy 1.x's ImageSequenceClip as PyTorch calls it, writing the frames it was given
    (raw bytes after a header) instead of a GIF: the test checks what reaches the encoder."""

    def __init__(self, frames, fps):
        self.frames, self.fps = np.stack(frames), fps

    def write_gif(self, filename, verbose=True, logger="bar"):
        header = f"{self.fps}:{self.frames.shape}:{self.frames.dtype}\n".encode()
        pathlib.Path(filename).write_bytes(header + self.frames.tobytes())


@pytest.fixture
def fake_moviepy(monkeypatch):
    import types

    editor = types.ModuleType("moviepy.editor")
    editor.ImageSequenceClip = FakeClip
    package = types.ModuleType("moviepy")
    package.editor = editor
    monkeypatch.setitem(sys.modules, "moviepy", package)
    monkeypatch.setitem(sys.modules, "moviepy.editor", editor)


def test_add_tensor_matches_torch(tmp_path):
    from tensorboard.util import tensor_util

    base = np.random.default_rng(3).standard_normal((2, 3)) * 4
    dtypes = ["float32", "float64", "float16", "bfloat16", "int8", "uint8", "int16", "int32"]
    dtypes += ["int64", "bool"]
    for cls, lib, path in (
        (SummaryWriter, ember, tmp_path / "e"),
        (TorchWriter, torch, tmp_path / "t"),
    ):
        with cls(path) as writer:
            for step, name in enumerate(dtypes):
                values = lib.tensor(base > 0 if name == "bool" else base)
                writer.add_tensor(f"t/{name}", values.to(getattr(lib, name)), step)
    assert events_by_run(tmp_path / "e") == events_by_run(tmp_path / "t")
    proto = accumulate(tmp_path / "e").Tensors("t/float64")[0].tensor_proto
    np.testing.assert_array_equal(tensor_util.make_ndarray(proto), base)


def test_add_video_matches_torch(tmp_path, fake_moviepy):
    rng = np.random.default_rng(2)
    clips = {
        "float": rng.random((3, 2, 3, 4, 5)).astype(np.float32),  # 3 clips: padded to 4
        "uint8": rng.integers(0, 256, (1, 3, 1, 2, 2), dtype=np.uint8),
        "grid": rng.random((8, 1, 3, 2, 3)),
    }
    for cls, to_tensor, path in (
        (SummaryWriter, ember_tensor, tmp_path / "e"),
        (TorchWriter, torch_tensor, tmp_path / "t"),
    ):
        with cls(path) as writer:
            for step, (tag, clip) in enumerate(clips.items()):
                writer.add_video(tag, to_tensor(clip), step, fps=step + 2)
    ours, theirs = events_by_run(tmp_path / "e"), events_by_run(tmp_path / "t")
    assert ours == theirs
    (grid,) = accumulate(tmp_path / "e").Images("grid")
    assert (grid.height, grid.width) == (4, 12)  # 8 clips: 2 rows of 4
    assert grid.encoded_image_string.startswith(b"4:(1, 4, 12, 3):uint8\n")


def test_add_video_and_figure_need_their_packages(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "moviepy", None)
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    with SummaryWriter(tmp_path) as writer:
        with pytest.raises(ImportError, match=r"add_video needs package moviepy"):
            writer.add_video("v", np.zeros((1, 1, 3, 2, 2)))
        with pytest.raises(ImportError, match=r"add_figure needs package matplotlib"):
            writer.add_figure("f", object())


def test_add_figure_matches_torch(tmp_path):
    matplotlib = pytest.importorskip("matplotlib")  # in the tensorboard extra
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    def figure(seed):
        fig = plt.figure(figsize=(2, 1.5), dpi=40)
        plt.plot(np.random.default_rng(seed).random(10))
        return fig

    for cls, path in ((SummaryWriter, tmp_path / "e"), (TorchWriter, tmp_path / "t")):
        with cls(path) as writer:
            writer.add_figure("one", figure(0), 0)
            kept = figure(1)
            writer.add_figure("many", [kept, figure(2)], 1, close=False)
            assert plt.fignum_exists(kept.number)
            plt.close("all")
    assert events_by_run(tmp_path / "e") == events_by_run(tmp_path / "t")
    (many,) = accumulate(tmp_path / "e").Images("many")
    assert (many.height, many.width) == (60, 160)  # two 80x60 figures side by side
