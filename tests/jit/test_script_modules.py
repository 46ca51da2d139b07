"""ember.jit.script of modules: the pytorch/examples-style models (MLP, CNN, an LSTM cell
unrolled by a for loop over time steps) against eager ember and torch.jit.script on the same
source; module features (ModuleList, Sequential, constants, export/unused); save/load in a
fresh process; scripted and traced code calling each other."""

from __future__ import annotations

import io
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
import torch

import ember
from ember import safetensors

from .script_models import build, features, recurrent, transformer

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.filterwarnings("ignore:`torch.jit.script` is deprecated")
EMBER_MODELS = dict(zip(("mlp", "cnn", "lstm_loop"), build(ember)[:3]))
TORCH_MODELS = dict(zip(("mlp", "cnn", "lstm_loop"), build(torch)[:3]))
SHAPES = {
    "mlp": [(2, 8), (5, 8)],
    "cnn": [(2, 1, 14, 14), (1, 1, 14, 14)],
    "lstm_loop": [(6, 2, 3), (1, 4, 3)],
}
R = np.random.default_rng(1)


def pair(name):
    """The ember model and a torch model holding the same weights, both in eval mode."""
    mine = EMBER_MODELS[name]().eval()
    theirs = TORCH_MODELS[name]().eval()
    with torch.no_grad():
        for key, value in mine.state_dict().items():
            theirs.state_dict()[key].copy_(torch.from_numpy(value.numpy().copy()))
    return mine, theirs


def flat(tree):
    return ember.jit.pytree.flatten(tree)[0]


def assert_close(got, want):
    got, want = flat(got), flat(want)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g.detach().numpy(), w.detach().numpy(), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("name", sorted(EMBER_MODELS))
def test_model_matches_eager_and_torch_script(name):
    mine, theirs = pair(name)
    scripted, reference = ember.jit.script(mine), torch.jit.script(theirs)
    assert isinstance(scripted, ember.jit.RecursiveScriptModule)
    assert scripted.original_name == type(mine).__name__
    scripted.graph.lint()
    for shape in SHAPES[name]:
        x = R.standard_normal(shape).astype(np.float32)
        got = scripted(ember.tensor(x))
        assert_close(got, reference(torch.tensor(x)))
        assert_close(got, mine(ember.tensor(x)))


def test_lstm_loop_is_one_loop_over_time_with_state_input():
    mine, theirs = pair("lstm_loop")
    scripted = ember.jit.script(mine)
    loops = scripted.graph.findAllNodes("prim::Loop")
    assert len(loops) == 1
    assert "prim::GetAttr" in str(scripted.graph) and "ember::linear" in str(scripted.graph)
    xs = R.standard_normal((4, 2, 3)).astype(np.float32)
    h, c = (R.standard_normal((2, 5)).astype(np.float32) for _ in range(2))
    got = scripted(ember.tensor(xs), (ember.tensor(h), ember.tensor(c)))
    assert_close(
        got, torch.jit.script(theirs)(torch.tensor(xs), (torch.tensor(h), torch.tensor(c)))
    )


def test_parameters_are_shared_with_the_original_module():
    mine, _ = pair("mlp")
    scripted = ember.jit.script(mine)
    assert scripted.fc1.weight is mine.fc1.weight
    with ember.no_grad():
        mine.fc1.weight.mul_(0)
    x = ember.randn(2, 8)
    assert_close(scripted(x), mine(x))


def test_gradients_flow_through_a_scripted_module():
    mine, _ = pair("mlp")
    scripted = ember.jit.script(mine)
    x = ember.randn(3, 8)
    scripted(x).sum().backward()
    got = mine.fc1.weight.grad.numpy().copy()
    mine.zero_grad()
    mine(x).sum().backward()
    np.testing.assert_allclose(got, mine.fc1.weight.grad.numpy(), rtol=1e-5, atol=1e-6)


def test_module_features_match_torch_script():
    mine, theirs = features(ember)().eval(), features(torch)().eval()
    with torch.no_grad():
        for key, value in mine.state_dict().items():
            theirs.state_dict()[key].copy_(torch.from_numpy(value.numpy().copy()))
    scripted, reference = ember.jit.script(mine), torch.jit.script(theirs)
    x = R.standard_normal((3, 4)).astype(np.float32)
    assert_close(scripted(ember.tensor(x)), reference(torch.tensor(x)))
    assert_close(scripted.double(ember.tensor(x)), reference.double(torch.tensor(x)))
    assert scripted.method_names() == ["double", "forward"]
    assert "prim::Loop" not in str(scripted.graph)  # loops over modules unroll, as in TorchScript


def test_unused_method_raises_when_reached():
    # training: forward reaches the @unused method (self.training is read at run time)
    scripted, reference = ember.jit.script(features(ember)()), torch.jit.script(features(torch)())
    text = "This Python function is annotated to be ignored and cannot be run"
    with pytest.raises(RuntimeError, match=f"{text} .*not_scriptable"):
        scripted(ember.randn(2, 4))
    with pytest.raises(torch.jit.Error, match=text):
        reference(torch.randn(2, 4))
    scripted.eval()
    reference.eval()
    x = R.standard_normal((3, 4)).astype(np.float32)
    assert scripted(ember.tensor(x)).shape == tuple(reference(torch.tensor(x)).shape)


def test_non_constant_in_constants_is_refused_as_torch_does():
    class Bad(ember.nn.Module):
        __constants__ = ["table"]

        def __init__(self):
            super().__init__()
            self.table = {"a": 1}

        def forward(self, x):
            return x

    with pytest.raises(TypeError, match="is not a valid constant"):
        ember.jit.script(Bad())


def test_ignored_method_runs_python_and_is_not_saved(tmp_path):
    class WithIgnore(ember.nn.Module):
        def forward(self, x):
            return self.eager_only(x) + 1

        @ember.jit.ignore
        def eager_only(self, x) -> ember.Tensor:
            return ember.tensor(np.asarray(x.numpy()) * 3)

    scripted = ember.jit.script(WithIgnore())
    x = ember.randn(3)
    np.testing.assert_allclose(scripted(x).numpy(), x.numpy() * 3 + 1, rtol=1e-6)
    with pytest.raises(RuntimeError, match="can't save prim::PythonOp"):
        scripted.save(tmp_path / "m.pt")


def test_save_and_load_in_memory_keeps_control_flow():
    mine, _ = pair("lstm_loop")
    scripted = ember.jit.script(mine)
    buffer = io.BytesIO()
    ember.jit.save(scripted, buffer)
    loaded = ember.jit.load(io.BytesIO(buffer.getvalue()))
    xs = ember.randn(3, 2, 3)
    assert_close(loaded(xs), scripted(xs))  # the Optional state defaults to None
    state = (ember.randn(2, 5), ember.randn(2, 5))
    assert_close(loaded(xs, state), scripted(xs, state))
    assert len(loaded.graph.findAllNodes("prim::Loop")) == 1


def test_scripted_function_saves_and_loads():
    fn = ember.jit.script(build(ember)[3])
    buffer = io.BytesIO()
    fn.save(buffer)
    loaded = ember.jit.load(io.BytesIO(buffer.getvalue()))
    for sign in (1.0, -1.0):
        x, y = ember.full((3,), sign), ember.randn(3)
        assert_close(loaded(x, y)[0], fn(x, y)[0])
        assert loaded(x, y)[1] == fn(x, y)[1]


def test_loaded_in_a_fresh_process_without_the_classes(tmp_path):
    """The subprocess imports ember only: the models' source is not importable there."""
    tensors = {}
    for name in sorted(EMBER_MODELS):
        mine, _ = pair(name)
        ember.jit.script(mine).save(tmp_path / f"{name}.pt")
        x = ember.tensor(R.standard_normal(SHAPES[name][1]).astype(np.float32))
        tensors[f"{name}.in"] = x
        for i, out in enumerate(flat(mine(x))):
            tensors[f"{name}.out.{i}"] = out.detach().contiguous()
    safetensors.save_file(tensors, tmp_path / "io.safetensors")
    script = textwrap.dedent(
        f"""
        import sys
        import numpy as np
        import ember
        from ember import safetensors
        from ember.jit import pytree
        io = safetensors.load_file("io.safetensors")
        for name in {sorted(EMBER_MODELS)!r}:
            model = ember.jit.load(f"{{name}}.pt")
            outs = pytree.flatten(model(io[f"{{name}}.in"]))[0]
            for i, out in enumerate(outs):
                want = io[f"{{name}}.out.{{i}}"].numpy()
                np.testing.assert_allclose(out.detach().numpy(), want, rtol=1e-5, atol=1e-5)
        assert "script_models" not in sys.modules
        print("ok")
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script],
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "ok"


def test_script_calls_traced_and_trace_calls_scripted():
    MLP = build(ember)[0]

    class Outer(ember.nn.Module):
        def __init__(self):
            super().__init__()
            self.inner = ember.jit.trace(MLP().eval(), ember.randn(2, 8))
            self.post = ember.nn.Linear(4, 2)

        def forward(self, x):
            y = self.inner(x)
            if y.sum() > 0:
                y = y * 2
            return self.post(y)

    outer = Outer().eval()
    scripted = ember.jit.script(outer)
    x = ember.randn(3, 8)
    assert_close(scripted(x), outer(x))
    assert 'name="inner.fc1.weight"' in str(scripted.graph)

    class Wrapper(ember.nn.Module):
        def __init__(self):
            super().__init__()
            self.body = ember.jit.script(MLP().eval())

        def forward(self, x):
            return self.body(x) + 1

    wrapper = Wrapper()
    traced = ember.jit.trace(wrapper, ember.randn(2, 8))
    assert_close(traced(x), wrapper(x))
    assert 'name="body.fc1.weight"' in str(traced.graph)


def test_submodules_have_graphs_of_their_own():
    mine, theirs = pair("cnn")
    scripted, reference = ember.jit.script(mine), torch.jit.script(theirs)
    x = R.standard_normal((2, 1, 14, 14)).astype(np.float32)
    assert_close(scripted.conv1(ember.tensor(x)), reference.conv1(torch.tensor(x)))
    assert "ember::conv2d" in str(scripted.conv1.graph)


@pytest.mark.parametrize(
    "make",
    [lambda lib: lib.nn.Conv2d(2, 3, 3, padding=1), lambda lib: lib.nn.Linear(3, 2)],
    ids=["conv2d", "linear"],
)
def test_an_ember_layer_scripts_alone(make):
    mine, theirs = make(ember), make(torch)
    with torch.no_grad():
        for key, value in mine.state_dict().items():
            theirs.state_dict()[key].copy_(torch.from_numpy(value.numpy().copy()))
    shape = (1, 2, 5, 5) if isinstance(mine, ember.nn.Conv2d) else (4, 3)
    x = R.standard_normal(shape).astype(np.float32)
    assert_close(ember.jit.script(mine)(ember.tensor(x)), torch.jit.script(theirs)(torch.tensor(x)))


def test_dropout_in_training_keeps_or_scales_each_element():
    mine, _ = pair("cnn")
    mine.train()
    scripted = ember.jit.script(mine)
    assert "ember::bernoulli" in str(scripted.graph)
    x = ember.ones(20000)
    out = ember.jit.script(ember.nn.Dropout(0.25))(x).numpy()
    kept = out[out != 0]
    np.testing.assert_allclose(kept, np.full_like(kept, 1 / 0.75), rtol=1e-6)
    assert abs((out == 0).mean() - 0.25) < 0.02


def test_module_dict_items_unroll_like_torch_script():
    def make(lib):
        class Heads(lib.nn.Module):
            def __init__(self):
                super().__init__()
                self.heads = lib.nn.ModuleDict({"a": lib.nn.Linear(3, 2), "b": lib.nn.Linear(3, 2)})

            def forward(self, x):
                out = lib.zeros(x.size(0), 2)
                for name, head in self.heads.items():
                    out = out + head(x) * (2.0 if name == "a" else 1.0)
                return out

        return Heads().eval()

    mine, theirs = make(ember), make(torch)
    with torch.no_grad():
        for key, value in mine.state_dict().items():
            theirs.state_dict()[key].copy_(torch.from_numpy(value.numpy().copy()))
    x = R.standard_normal((4, 3)).astype(np.float32)
    assert_close(ember.jit.script(mine)(ember.tensor(x)), torch.jit.script(theirs)(torch.tensor(x)))


@pytest.mark.parametrize(
    "make, shape, integer",
    [
        (lambda lib: lib.nn.BatchNorm2d(3), (2, 3, 4, 5), False),
        (lambda lib: lib.nn.BatchNorm1d(3), (4, 3), False),
        (lambda lib: lib.nn.BatchNorm1d(3, affine=False), (4, 3, 6), False),
        (lambda lib: lib.nn.Embedding(10, 4), (2, 7), True),
        (lambda lib: lib.nn.AdaptiveAvgPool2d((2, 3)), (2, 3, 7, 5), False),
        (lambda lib: lib.nn.AdaptiveAvgPool2d(1), (2, 3, 4, 4), False),
    ],
    ids=[
        "batch_norm2d",
        "batch_norm1d",
        "batch_norm1d_3d_no_affine",
        "embedding",
        "adaptive_avg_pool2d",
        "global_avg_pool",
    ],
)
def test_lowered_layers_match_torch_script(make, shape, integer):
    mine, theirs = make(ember), make(torch)
    with torch.no_grad():
        for key, value in mine.state_dict().items():
            data = value.numpy().copy()
            if key.endswith(("running_mean", "running_var", "weight", "bias")):
                data = (R.random(data.shape) + 0.5).astype(data.dtype)
                value.copy_(ember.tensor(data))
            theirs.state_dict()[key].copy_(torch.from_numpy(data))
    mine.eval(), theirs.eval()
    x = R.integers(0, 10, shape) if integer else R.standard_normal(shape).astype(np.float32)
    assert_close(ember.jit.script(mine)(ember.tensor(x)), torch.jit.script(theirs)(torch.tensor(x)))


@pytest.mark.parametrize(
    "kwargs",
    [{}, {"momentum": None}, {"track_running_stats": False}, {"affine": False, "momentum": 0.3}],
    ids=["default", "cumulative", "batch_stats_only", "no_affine"],
)
def test_batch_norm_follows_train_and_eval_as_torch_script(kwargs):
    """Scripted BatchNorm reads ``training`` at run time: batch statistics and the running
    update (momentum, or the cumulative average for None) in train(), the running statistics in
    eval(); the archive keeps it."""
    mine, theirs = ember.nn.BatchNorm2d(3, **kwargs), torch.nn.BatchNorm2d(3, **kwargs)
    scripted, reference = ember.jit.script(mine), torch.jit.script(theirs)
    for step, mode in enumerate((True, True, False, True, False)):
        scripted.train(mode), reference.train(mode)
        x = R.standard_normal((4, 3, 5, 5)).astype(np.float32)
        assert_close(scripted(ember.tensor(x)), reference(torch.tensor(x)))
        for name, buffer in reference.named_buffers():
            assert_close(getattr(scripted, name), buffer)
        if step == 1:
            buffer = io.BytesIO()
            scripted.save(buffer)
            scripted = ember.jit.load(io.BytesIO(buffer.getvalue()))


@pytest.mark.parametrize("kind", ["LSTM", "GRU", "RNN"])
def test_recurrent_language_model_matches_torch_script(kind):
    mine, theirs = recurrent(ember, kind), recurrent(torch, kind)
    with torch.no_grad():
        for key, value in mine.state_dict().items():
            theirs.state_dict()[key].copy_(torch.from_numpy(value.numpy().copy()))
    scripted, reference = ember.jit.script(mine), torch.jit.script(theirs)
    assert len(scripted.graph.findAllNodes("prim::Loop")) == 2  # one time loop per layer
    for batch, steps in ((3, 5), (1, 2)):
        tokens = R.integers(0, 20, (batch, steps))
        states = [R.standard_normal((2, batch, 12)).astype(np.float32) for _ in range(2)]
        if kind == "LSTM":
            args_e = (ember.tensor(tokens), tuple(ember.tensor(s) for s in states))
            args_t = (torch.tensor(tokens), tuple(torch.tensor(s) for s in states))
        else:
            args_e = (ember.tensor(tokens), ember.tensor(states[0]))
            args_t = (torch.tensor(tokens), torch.tensor(states[0]))
        got = scripted(*args_e)
        assert_close(got, reference(*args_t))
        assert_close(got, mine(*args_e))


@pytest.mark.parametrize(
    "make",
    [lambda lib: lib.nn.GRU(4, 6), lambda lib: lib.nn.RNN(4, 6, nonlinearity="relu")],
    ids=["gru", "rnn_relu"],
)
def test_recurrent_layer_alone_with_default_state(make):
    mine, theirs = make(ember), make(torch)
    with torch.no_grad():
        for key, value in mine.state_dict().items():
            theirs.state_dict()[key].copy_(torch.from_numpy(value.numpy().copy()))
    x = R.standard_normal((7, 2, 4)).astype(np.float32)
    # eager torch: torch.jit.script(nn.GRU) has no callable forward (its forward is overloaded)
    assert_close(ember.jit.script(mine)(ember.tensor(x)), theirs(torch.tensor(x)))


@pytest.mark.parametrize("name", sorted(EMBER_MODELS))
def test_freeze_and_optimize_for_inference_keep_outputs(name):
    mine, _ = pair(name)
    scripted = ember.jit.script(mine)
    x = ember.tensor(R.standard_normal(SHAPES[name][0]).astype(np.float32))
    for transform in (ember.jit.freeze, ember.jit.optimize_for_inference):
        optimized = transform(scripted)
        assert not optimized.graph.findAllNodes("prim::GetAttr")  # weights are constants
        assert_close(optimized(x), mine(x))


def test_exported_methods_survive_save_and_load():
    module = features(ember)().eval()
    scripted = ember.jit.script(module)
    buffer = io.BytesIO()
    scripted.save(buffer)
    loaded = ember.jit.load(io.BytesIO(buffer.getvalue()))
    x = ember.randn(2, 4)
    assert loaded.method_names() == ["double", "forward"]
    assert_close(loaded.double(x), module.double(x))


def test_transformer_encoder_with_masks_matches_torch_script():
    mine, theirs = transformer(ember), transformer(torch)
    with torch.no_grad():
        for key, value in mine.state_dict().items():
            theirs.state_dict()[key].copy_(torch.from_numpy(value.numpy().copy()))
    scripted, reference = ember.jit.script(mine), torch.jit.script(theirs)
    x = R.standard_normal((2, 5, 16)).astype(np.float32)
    causal = np.triu(np.full((5, 5), -np.inf, np.float32), 1)
    padding = np.array([[False] * 5, [False] * 3 + [True] * 2])
    for masks in ((), (causal,), (None, padding)):
        got = scripted(ember.tensor(x), *(m if m is None else ember.tensor(m) for m in masks))
        want = reference(torch.tensor(x), *(m if m is None else torch.tensor(m) for m in masks))
        np.testing.assert_allclose(
            got.detach().numpy(), want.detach().numpy(), rtol=1e-4, atol=1e-5
        )


def test_multihead_attention_weights_match_torch():
    mine, theirs = ember.nn.MultiheadAttention(8, 2), torch.nn.MultiheadAttention(8, 2)
    with torch.no_grad():
        for key, value in mine.state_dict().items():
            theirs.state_dict()[key].copy_(torch.from_numpy(value.numpy().copy()))
    mine.eval(), theirs.eval()
    q, kv = R.standard_normal((3, 2, 8)).astype(np.float32), R.standard_normal((4, 2, 8))
    kv = kv.astype(np.float32)
    got = ember.jit.script(mine)(ember.tensor(q), ember.tensor(kv), ember.tensor(kv))
    want = theirs(torch.tensor(q), torch.tensor(kv), torch.tensor(kv))
    assert_close(got, want)


def test_tracing_keeps_the_control_flow_of_scripted_code():
    class Gate(ember.nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = ember.nn.Linear(3, 3)

        def forward(self, x):
            y = self.fc(x)
            if y.sum() > 0:
                return y * 2
            return -y

    class Outer(ember.nn.Module):
        def __init__(self):
            super().__init__()
            self.gate = ember.jit.script(Gate())

        def forward(self, x):
            return self.gate(x) + 1

    outer = Outer()
    traced = ember.jit.trace(outer, ember.randn(2, 3))
    assert traced.graph.findNode("prim::If") is not None  # as PyTorch's tracer keeps it
    signs = set()
    base = ember.randn(2, 3) * 100  # x and -x: the linear part dominates the bias
    for x in (base, -base):
        signs.add(bool(outer.gate.fc(x).sum() > 0))
        assert_close(traced(x), outer(x))
    assert signs == {True, False}

    @ember.jit.script
    def clip(x, limit: float):
        while x.abs().max() > limit:
            x = x * 0.5
        return x

    def uses_clip(x):
        return clip(x, 1.0) * 3

    traced_fn = ember.jit.trace(uses_clip, ember.randn(4) * 10)
    assert traced_fn.graph.findNode("prim::Loop") is not None
    for scale in (0.1, 100.0):
        x = ember.randn(4) * scale
        assert_close(traced_fn(x), uses_clip(x))
