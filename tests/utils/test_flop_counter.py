"""ember.utils.flop_counter and module_tracker against torch's: the same models with the same
weights in both libraries give the same totals, per-module counts (keys as torch's table prints
them) and tables, forward and forward+backward; ModuleTracker sees the same parents."""

import copy
import warnings

import numpy as np
import pytest

import ember
from ember.utils import flop_counter
from ember.utils.flop_counter import FlopCounterMode
from ember.utils.module_tracker import ModuleTracker

torch = pytest.importorskip("torch")
torch_flop_counter = pytest.importorskip("torch.utils.flop_counter")
torch_module_tracker = pytest.importorskip("torch.utils.module_tracker")

LIBS = {"torch": torch, "ember": ember}


def _named(counts: dict) -> dict:
    return {mod: {str(op): n for op, n in ops.items()} for mod, ops in counts.items()}


def _counted(lib, fn, **options):
    """``fn()`` under the library's FlopCounterMode: (total, counts by name, table)."""
    mode = torch_flop_counter.FlopCounterMode if lib is torch else FlopCounterMode
    with mode(display=False, **options) as counter:
        fn()
    return counter.get_total_flops(), _named(counter.get_flop_counts()), counter.get_table()


def _twins(build, *inputs):
    """The model ``build(lib)`` in both libraries with torch's weights, and ``inputs`` (numpy
    arrays; those named ``grad`` require grad) as each library's tensors."""
    theirs = build(torch)
    ours = build(ember)
    ours.load_state_dict(
        {k: ember.tensor(v.detach().numpy()) for k, v in theirs.state_dict().items()}
    )
    arrays = [
        np.random.default_rng(i).standard_normal(shape).astype(np.float32)
        for i, (shape, _) in enumerate(inputs)
    ]
    made = {}
    for name, lib, model in (("torch", torch, theirs), ("ember", ember, ours)):
        tensors = [lib.tensor(a).requires_grad_(grad) for a, (_, grad) in zip(arrays, inputs)]
        made[name] = (model, tensors)
    return made


def _compare(build, *inputs, backward: bool, **options):
    results = {}
    for name, (model, tensors) in _twins(build, *inputs).items():

        def step(model=model, tensors=tensors):
            out = model(*tensors)
            if backward:
                out.sum().backward()

        results[name] = _counted(LIBS[name], step, **options)
    assert results["ember"][0] == results["torch"][0]
    assert results["ember"][1] == results["torch"][1]
    assert results["ember"][2] == results["torch"][2]
    return results["ember"]


# ---- models, written once for both libraries ---------------------------------------------------
def mlp(lib):
    nn = lib.nn

    class MLP(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc1 = nn.Linear(8, 16)
            self.act = nn.ReLU()
            self.body = nn.Sequential(nn.Linear(16, 16), nn.Tanh(), nn.Linear(16, 4, bias=False))

        def forward(self, x):
            return self.body(self.act(self.fc1(x)))

    return MLP()


def cnn(lib):
    nn = lib.nn

    class CNN(nn.Module):
        def __init__(self):
            super().__init__()
            self.features = nn.Sequential(
                nn.Conv2d(3, 6, 3, padding=1), nn.ReLU(), nn.ConvTranspose2d(6, 4, 2, stride=2)
            )
            self.temporal = nn.Conv1d(4, 2, 3, stride=2)
            self.head = nn.Linear(2 * 31, 5)

        def forward(self, x):
            x = self.features(x)
            x = self.temporal(x.flatten(2)[:, :, :64])
            return self.head(x.flatten(1))

    return CNN()


def block(lib):
    nn = lib.nn
    functional = lib.nn.functional

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.ln = nn.LayerNorm(16)
            self.qkv = nn.Linear(16, 48)
            self.proj = nn.Linear(16, 16)
            self.mlp = nn.Sequential(nn.Linear(16, 32), nn.GELU(), nn.Linear(32, 16))

        def forward(self, x):
            b, t, c = x.shape
            q, k, v = (
                z.view(b, t, 2, 8).transpose(1, 2) for z in self.qkv(self.ln(x)).split(16, dim=2)
            )
            y = functional.scaled_dot_product_attention(q, k, v, is_causal=True)
            x = x + self.proj(y.transpose(1, 2).reshape(b, t, c))
            return x + self.mlp(x)

    return Block()


def _math_sdpa(lib):
    """torch's CPU flash attention has no formula (it counts 0): compare on the math path."""
    return lib.nn.attention.sdpa_kernel(lib.nn.attention.SDPBackend.MATH)


@pytest.mark.parametrize("backward", [False, True], ids=["forward", "backward"])
@pytest.mark.parametrize("input_grad", [False, True], ids=["input", "input_grad"])
def test_mlp(backward, input_grad):
    total, counts, _ = _compare(mlp, ((4, 8), input_grad), backward=backward)
    assert total > 0 and set(counts) == {"Global", "MLP", "MLP.fc1", "MLP.body", "MLP.body.0",
                                         "MLP.body.2"}  # fmt: skip


@pytest.mark.parametrize("backward", [False, True], ids=["forward", "backward"])
@pytest.mark.parametrize("input_grad", [False, True], ids=["input", "input_grad"])
def test_cnn(backward, input_grad):
    _, counts, _ = _compare(cnn, ((2, 3, 4, 4), input_grad), backward=backward)
    assert "aten.convolution" in counts["CNN.features.2"]
    assert ("aten.convolution_backward" in counts["CNN.temporal"]) == backward


@pytest.mark.parametrize("backward", [False, True], ids=["forward", "backward"])
def test_transformer_block(backward):
    with _math_sdpa(torch), _math_sdpa(ember):
        _, counts, _ = _compare(block, ((2, 5, 16), True), backward=backward)
    assert "aten.bmm" in counts["Block"]


@pytest.mark.parametrize("depth", [0, 1, 2, 3])
def test_depth(depth):
    _compare(mlp, ((4, 8), False), backward=True, depth=depth)


def test_flash_attention_counts_torch_fused_formulas():
    """Where torch's CPU build runs its flash kernel (0 FLOPs there: no formula), ember counts
    it with torch's fused-attention formulas under the kernel's name; the rest as torch."""
    results = {}
    for name, (model, (x,)) in _twins(block, ((2, 5, 16), True)).items():
        results[name] = _counted(LIBS[name], lambda model=model, x=x: model(x).sum().backward())
    theirs, ours = results["torch"][1], results["ember"][1]
    shape = (2, 2, 5, 8)
    forward = torch_flop_counter.sdpa_flop_count(shape, shape, shape)
    backward = torch_flop_counter.sdpa_backward_flop_count(shape, shape, shape, shape)
    kernel = "aten._scaled_dot_product_flash_attention_for_cpu"
    for mod in ("Global", "Block"):
        expected = dict(theirs[mod], **{kernel: forward, f"{kernel}_backward": backward})
        assert ours[mod] == expected
    assert results["ember"][0] == results["torch"][0] + forward + backward


# ---- single ops, each counted once however ember decomposes it ---------------------------------
F_CASES = {
    "linear": (lambda m, x, w, b: m.nn.functional.linear(x, w, b), [(3, 8), (4, 8), (4,)]),
    "linear_3d": (lambda m, x, w, b: m.nn.functional.linear(x, w, b), [(2, 3, 8), (4, 8), (4,)]),
    "linear_no_bias": (lambda m, x, w: m.nn.functional.linear(x, w), [(2, 3, 8), (4, 8)]),
    "matmul_3d_2d": (lambda m, a, b: m.matmul(a, b), [(2, 3, 8), (8, 5)]),
    "matmul_4d": (lambda m, a, b: m.matmul(a, b), [(2, 1, 4, 5), (3, 5, 6)]),
    "matmul_vector": (lambda m, a, b: m.matmul(a, b), [(3, 4, 5), (5,)]),
    "mv": (lambda m, a, b: m.mv(a, b), [(4, 5), (5,)]),
    "dot": (lambda m, a, b: m.dot(a, b), [(5,), (5,)]),
    "bmm": (lambda m, a, b: m.bmm(a, b), [(3, 4, 5), (3, 5, 6)]),
    "baddbmm": (lambda m, c, a, b: m.baddbmm(c, a, b), [(3, 4, 6), (3, 4, 5), (3, 5, 6)]),
    "addbmm": (lambda m, c, a, b: m.addbmm(c, a, b), [(4, 6), (3, 4, 5), (3, 5, 6)]),
    "einsum": (lambda m, a, b: m.einsum("bij,bjk->bik", a, b), [(3, 4, 5), (3, 5, 6)]),
    "conv2d_strided": (
        lambda m, x, w, b: m.nn.functional.conv2d(x, w, b, stride=2, dilation=2, padding=1),
        [(2, 3, 9, 9), (4, 3, 3, 3), (4,)],
    ),
    "conv2d_groups": (
        lambda m, x, w: m.nn.functional.conv2d(x, w, groups=3),
        [(2, 6, 5, 5), (9, 2, 3, 3)],
    ),
    "conv2d_unbatched": (lambda m, x, w: m.nn.functional.conv2d(x, w), [(3, 5, 5), (4, 3, 3, 3)]),
    "conv1d_same": (
        lambda m, x, w: m.nn.functional.conv1d(x, w, padding="same"),
        [(2, 3, 9), (4, 3, 3)],
    ),
    "conv_transpose2d": (
        lambda m, x, w, b: m.nn.functional.conv_transpose2d(
            x, w, b, stride=2, groups=2, output_padding=1, padding=1
        ),
        [(2, 4, 5, 5), (4, 3, 3, 3), (6,)],
    ),
    "sdpa_math": (
        lambda m, q, k, v: m.nn.functional.scaled_dot_product_attention(q, k, v),
        [(2, 2, 5, 4), (2, 2, 6, 4), (2, 2, 6, 3)],
    ),
}


@pytest.mark.parametrize("backward", [False, True], ids=["forward", "backward"])
@pytest.mark.parametrize("case", sorted(F_CASES))
def test_ops(case, backward):
    fn, shapes = F_CASES[case]
    arrays = [
        np.random.default_rng(i).standard_normal(s).astype(np.float32) for i, s in enumerate(shapes)
    ]
    results = {}
    for name, lib in LIBS.items():
        tensors = [lib.tensor(a).requires_grad_() for a in arrays]

        def step(lib=lib, tensors=tensors):
            out = fn(lib, *tensors)
            if backward:
                out.sum().backward()

        results[name] = _counted(lib, step)
    assert results["ember"][:2] == results["torch"][:2]


# ---- options ------------------------------------------------------------------------------------
def _one_flop(*args, out_shape=None, **kwargs):
    return 1


def _raw_numel(x, *args, out_val=None, **kwargs):
    return x.numel() + out_val.numel()


_raw_numel._get_raw = True


def test_custom_mapping():
    """A formula for an op without one, one over a registered op, and a raw one."""
    arrays = [np.ones((3, 4), np.float32), np.ones((4, 5), np.float32)]
    results = {}
    for name, lib in LIBS.items():
        ops = lib.ops.aten
        mapping = {ops.mm: _one_flop, ops.relu: _one_flop, ops.tanh: _raw_numel}
        a, b = (lib.tensor(x) for x in arrays)
        results[name] = _counted(lib, lambda a=a, b=b, lib=lib: lib.mm(a, b).relu().tanh(),
                                 custom_mapping=mapping)  # fmt: skip
    assert results["ember"] == results["torch"]
    assert results["ember"][1]["Global"] == {"aten.mm": 1, "aten.relu": 1, "aten.tanh": 30}


def test_custom_mapping_of_a_composite_counts_it_once():
    """A formula for ember's linear (a composite over addmm) counts it, not the addmm inside."""
    x, w, b = ember.ones(3, 8), ember.ones(4, 8), ember.ones(4)
    with FlopCounterMode(display=False, custom_mapping={ember.ops.linear: _one_flop}) as counter:
        ember.nn.functional.linear(x, w, b)
    assert counter.get_flop_counts() == {"Global": {"aten.linear": 1}}


def test_mods_argument_warns_as_torch():
    with pytest.warns(UserWarning, match="mods argument is not needed anymore"):
        FlopCounterMode(mods=ember.nn.Linear(2, 2), display=False)


def test_display_prints_the_table(capsys):
    printed = {}
    for name, (model, (x,)) in _twins(mlp, ((4, 8), False)).items():
        mode = torch_flop_counter.FlopCounterMode if name == "torch" else FlopCounterMode
        with mode(depth=1):
            model(x)
        printed[name] = capsys.readouterr().out
    assert printed["ember"] == printed["torch"]
    assert "aten.addmm" in printed["ember"]


def test_counts_stop_at_exit_and_nest():
    a, b = ember.ones(3, 4, requires_grad=True), ember.ones(4, 5)
    with FlopCounterMode(display=False) as outer:
        with FlopCounterMode(display=False) as inner:
            out = ember.mm(a, b)
        ember.mm(a, b)
    out.sum().backward()  # after exit: not counted
    assert inner.get_total_flops() == 120
    assert outer.get_total_flops() == 240


def test_register_flop_formula():
    key = "aten.cholesky"
    try:
        flop_counter.register_flop_formula(ember.ops.cholesky)(_one_flop)
        with pytest.raises(RuntimeError, match="duplicate registrations"):
            flop_counter.register_flop_formula([ember.ops.cholesky])(_one_flop)
        with FlopCounterMode(display=False) as counter:
            ember.ops.cholesky(ember.eye(3))
        assert counter.get_flop_counts() == {"Global": {key: 1}}
    finally:
        flop_counter.flop_registry.pop(key, None)
    with pytest.raises(ValueError, match="expected each target"):
        flop_counter.register_flop_formula(3)(_one_flop)


def test_formula_functions_are_torch_s():
    names = ["mm_flop", "addmm_flop", "bmm_flop", "baddbmm_flop", "conv_flop", "sdpa_flop"]
    shapes = {
        "mm_flop": ((3, 4), (4, 5)),
        "addmm_flop": ((5,), (3, 4), (4, 5)),
        "bmm_flop": ((2, 3, 4), (2, 4, 5)),
        "baddbmm_flop": ((2, 3, 5), (2, 3, 4), (2, 4, 5)),
        "conv_flop": ((2, 3, 8, 8), (4, 3, 3, 3), None, 1, 0, 1, False),
        "sdpa_flop": ((2, 2, 5, 4), (2, 2, 6, 4), (2, 2, 6, 3)),
    }
    for name in names:
        ours, theirs = getattr(flop_counter, name), getattr(torch_flop_counter, name)
        out = (2, 4, 6, 6) if name == "conv_flop" else None
        assert ours(*shapes[name], out_val=out) == theirs(*shapes[name], out_val=out), name
    args = ((2, 4, 6, 6), (2, 3, 8, 8), (4, 3, 3, 3), None, 1, 0, 1, True, 0, 1, [True, True])
    outs = ((2, 3, 8, 8), (4, 3, 3, 3), None)
    assert flop_counter.conv_backward_flop(*args, out_val=outs) == (
        torch_flop_counter.conv_backward_flop(*args, out_val=outs)
    )
    for number in (0, 999, 1_000_000, 1_010_000_000, 12_345_678_901_234):
        suffix = torch_flop_counter.get_suffix_str(number)
        assert flop_counter.get_suffix_str(number) == suffix
        assert flop_counter.convert_num_with_suffix(number, suffix) == (
            torch_flop_counter.convert_num_with_suffix(number, suffix)
        )


# ---- ModuleTracker ------------------------------------------------------------------------------
def _hierarchy(lib, tracker_class):
    """torch's test_module_tracker: the parents seen in forwards and in backward hooks."""
    seen_fw, seen_bw = [], []
    nn = lib.nn
    tracker = tracker_class()

    class Foo(nn.Module):
        def forward(self, x):
            x = x["a"].relu_()
            seen_fw.append((copy.copy(tracker.parents), tracker.is_bw))
            x.register_hook(
                lambda grad: seen_bw.append((copy.copy(tracker.parents), tracker.is_bw))
            )
            return {"a": lib.mm(x, x)}

    class Mod(nn.Module):
        def __init__(self):
            super().__init__()
            self.a = Foo()
            self.b = nn.ModuleDict({"nest": Foo()})
            self.c = nn.ModuleList([Foo()])

        def forward(self, x):
            x = self.c[0](x)
            return self.b["nest"](self.a(x))

    mod = Mod()
    with tracker:
        for _ in range(2):
            mod({"a": lib.randn(10, 10, requires_grad=True).clone()})["a"].sum().backward()
    after = copy.copy(tracker.parents)
    return seen_fw, seen_bw, after


def test_module_tracker_parents_forward_and_backward():
    ours = _hierarchy(ember, ModuleTracker)
    theirs = _hierarchy(torch, torch_module_tracker.ModuleTracker)
    assert ours == theirs
    assert ({"Global", "Mod", "Mod.b.nest"}, True) in ours[1]
    assert ours[2] == {"Global"}


def test_module_tracker_hooks_are_removed():
    tracker_hooks = ember.nn.modules.module.GLOBAL_FORWARD_PRE_HOOKS
    before = dict(tracker_hooks)
    with warnings.catch_warnings(), ModuleTracker() as tracker:
        ember.nn.Linear(2, 2)(ember.ones(1, 2))
        assert len(tracker_hooks) == len(before) + 1
    assert tracker_hooks == before and tracker.parents == {"Global"}


def _after_backward(lib, tracker_class):
    """A module whose input needs no gradient is entered in the backward and never left: the
    end of the pass empties ``parents``."""
    seen = []
    model = lib.nn.Sequential(lib.nn.Linear(2, 2))
    with tracker_class() as tracker:
        out = model(lib.ones(1, 2))
        out.register_hook(lambda grad: seen.append(copy.copy(tracker.parents)))
        model[0].weight.register_hook(lambda grad: seen.append(copy.copy(tracker.parents)))
        out.sum().backward()
        seen.append(copy.copy(tracker.parents))
    return seen


def test_module_tracker_parents_after_backward():
    ours = _after_backward(ember, ModuleTracker)
    assert ours == _after_backward(torch, torch_module_tracker.ModuleTracker)
    assert ours[1] == {"Global", "Sequential", "Sequential.0"} and ours[2] == {"Global"}
