"""nn.Module behaviour against PyTorch's: registration, traversal, state dicts (round trips, strict
errors and their messages), buffers, modes, conversions, hooks, repr, deepcopy, containers."""

from __future__ import annotations

import copy
import pickle

import numpy as np
import pytest

import ember

from .oracle import copy_state, to_ember, to_numpy

torch = pytest.importorskip("torch")


def build(nn):
    """The same nested model in either framework: every kind of member and container."""
    ones = (ember if nn is ember.nn else torch).ones

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = nn.Conv2d(2, 4, 3, padding=1)
            self.bn = nn.BatchNorm2d(4)
            self.register_buffer("scale", ones(4))
            self.register_buffer("cache", ones(2), persistent=False)
            self.gate = nn.Parameter(ones(4))

        def forward(self, x):
            return (
                self.bn(self.conv(x)) * self.gate.view(1, -1, 1, 1) * self.scale.view(1, -1, 1, 1)
            )

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.block = Block()
            self.heads = nn.ModuleList([nn.Linear(4, 3), nn.Linear(4, 2, bias=False)])
            self.extra = nn.ModuleDict({"act": nn.ReLU(), "drop": nn.Dropout(0.1)})
            self.seq = nn.Sequential(nn.Flatten(), nn.Identity())
            self.plist = nn.ParameterList([nn.Parameter(ones(2, 3)), nn.Parameter(ones(5))])
            self.pdict = nn.ParameterDict({"a": nn.Parameter(ones(1))})
            self.nothing = None

        def forward(self, x):
            x = self.extra["act"](self.block(x)).mean((2, 3))
            return self.heads[0](x).sum() + self.heads[1](x).sum() + self.plist[0].sum()

    return Net()


def test_names_and_shapes_match_torch():
    ours, theirs = build(ember.nn), build(torch.nn)

    def listing(items):
        return [(k, tuple(v.shape)) for k, v in items]

    assert listing(ours.named_parameters()) == listing(theirs.named_parameters())
    assert listing(ours.named_buffers()) == listing(theirs.named_buffers())
    assert listing(ours.state_dict().items()) == listing(theirs.state_dict().items())
    assert [k for k, _ in ours.named_modules()] == [k for k, _ in theirs.named_modules()]
    assert [k for k, _ in ours.named_children()] == [k for k, _ in theirs.named_children()]
    assert [type(m).__name__ for m in ours.modules()] == [
        type(m).__name__ for m in theirs.modules()
    ]
    assert [k for k, _ in ours.named_parameters(prefix="p", recurse=False)] == []
    assert [k for k, _ in ours.block.named_parameters("b", recurse=False)] == ["b.gate"]
    assert [k for k, _ in ours.named_modules(prefix="root")][:2] == ["root", "root.block"]


def test_repr_matches_torch():
    ours, theirs = build(ember.nn), build(torch.nn)
    assert repr(ours) == repr(theirs).replace("torch.", "ember.")


def test_state_dict_round_trip_with_torch(device, rng):
    theirs = build(torch.nn)
    for p in theirs.parameters():
        p.data.normal_()
    ours = build(ember.nn)
    copy_state(theirs, ours, device)
    for key, value in theirs.state_dict().items():
        np.testing.assert_array_equal(to_numpy(ours.state_dict()[key]), to_numpy(value), key)
    again = build(torch.nn)
    again.load_state_dict({k: torch.from_numpy(to_numpy(v)) for k, v in ours.state_dict().items()})
    for key, value in theirs.state_dict().items():
        np.testing.assert_array_equal(to_numpy(again.state_dict()[key]), to_numpy(value), key)


def test_state_dict_is_detached_unless_keep_vars():
    model = ember.nn.Linear(2, 3)
    state = model.state_dict()
    assert not state["weight"].requires_grad and type(state["weight"]) is ember.Tensor
    assert state["weight"].data_ptr() == model.weight.data_ptr()  # shares storage, like torch
    kept = model.state_dict(keep_vars=True)
    assert kept["weight"] is model.weight
    assert list(model.state_dict(prefix="m.")) == ["m.weight", "m.bias"]


def _messages(fn_ours, fn_theirs):
    with pytest.raises(RuntimeError) as ours:
        fn_ours()
    with pytest.raises(RuntimeError) as theirs:
        fn_theirs()
    return str(ours.value), str(theirs.value).replace("torch.", "ember.")


def test_load_state_dict_strict_errors_match_torch():
    ours, theirs = ember.nn.Linear(2, 3), torch.nn.Linear(2, 3)
    bad_ours = {"weight": ember.zeros(3, 2), "extra": ember.zeros(1), "other.x": ember.zeros(1)}
    bad_theirs = {"weight": torch.zeros(3, 2), "extra": torch.zeros(1), "other.x": torch.zeros(1)}
    a, b = _messages(
        lambda: ours.load_state_dict(bad_ours), lambda: theirs.load_state_dict(bad_theirs)
    )
    assert a == b
    assert 'Missing key(s) in state_dict: "bias"' in a and '"extra", "other.x"' in a


def test_load_state_dict_size_mismatch_names_the_key():
    ours, theirs = build(ember.nn), build(torch.nn)
    state_ours = dict(ours.state_dict())
    state_theirs = dict(theirs.state_dict())
    state_ours["heads.0.weight"] = ember.zeros(3, 5)
    state_theirs["heads.0.weight"] = torch.zeros(3, 5)
    a, b = _messages(
        lambda: ours.load_state_dict(state_ours, strict=False),
        lambda: theirs.load_state_dict(state_theirs, strict=False),
    )
    assert a == b
    assert "size mismatch for heads.0.weight" in a and "[3, 5]" in a and "[3, 4]" in a


def test_load_state_dict_not_strict_returns_keys():
    ours, theirs = build(ember.nn), build(torch.nn)
    state_ours = {k: v for k, v in ours.state_dict().items() if not k.startswith("block.bn")}
    state_theirs = {k: v for k, v in theirs.state_dict().items() if not k.startswith("block.bn")}
    state_ours["block.unknown"] = ember.zeros(1)
    state_theirs["block.unknown"] = torch.zeros(1)
    result_ours = ours.load_state_dict(state_ours, strict=False)
    result_theirs = theirs.load_state_dict(state_theirs, strict=False)
    assert result_ours.missing_keys == result_theirs.missing_keys
    assert result_ours.unexpected_keys == result_theirs.unexpected_keys
    assert repr(ember.nn.Linear(2, 2).load_state_dict(ember.nn.Linear(2, 2).state_dict())) == (
        repr(torch.nn.Linear(2, 2).load_state_dict(torch.nn.Linear(2, 2).state_dict()))
    )


def test_load_state_dict_copies_values_keeps_identity(device):
    model = ember.nn.Linear(2, 3).to(device)
    weight = model.weight
    model.load_state_dict({"weight": ember.ones(3, 2), "bias": ember.zeros(3)})
    assert model.weight is weight and float(model.weight.sum()) == 6.0
    assert model.weight.requires_grad and model.weight.device.type == device
    model.load_state_dict({"weight": ember.full((3, 2), 2.0), "bias": ember.zeros(3)}, assign=True)
    assert model.weight is not weight and isinstance(model.weight, ember.nn.Parameter)
    assert model.weight.requires_grad


def test_load_state_dict_rejects_non_mappings():
    with pytest.raises(TypeError, match="state_dict"):
        ember.nn.Linear(2, 2).load_state_dict([("weight", ember.zeros(2, 2))])


def test_buffers_persistent_and_not():
    module = ember.nn.Module()
    module.register_buffer("kept", ember.zeros(2))
    module.register_buffer("scratch", ember.ones(2), persistent=False)
    module.marked = ember.nn.Buffer(ember.ones(3), persistent=False)
    module.plain = ember.nn.Buffer(ember.ones(1))
    module.register_buffer("empty", None)
    assert [k for k, _ in module.named_buffers()] == ["kept", "scratch", "marked", "plain"]
    assert list(module.state_dict()) == ["kept", "plain"]
    assert type(module.marked) is ember.Tensor
    module.kept = ember.full((2,), 3.0)  # a plain tensor assigned to a buffer name replaces it
    assert float(module.state_dict()["kept"].sum()) == 6.0
    del module.scratch
    assert "scratch" not in dict(module.named_buffers())
    with pytest.raises(TypeError, match="buffer"):
        module.kept = 3
    with pytest.raises(KeyError, match="already exists"):
        module.register_buffer("training", ember.zeros(1))


def test_parameter_registration_rules():
    module = ember.nn.Module()
    module.weight = ember.nn.Parameter(ember.zeros(2))
    with pytest.raises(TypeError, match="weight"):
        module.weight = ember.zeros(2)
    module.weight = None
    assert module.weight is None and list(module.named_parameters()) == []
    with pytest.raises(TypeError, match="Parameter or None"):
        module.register_parameter("w", ember.zeros(1))
    with pytest.raises(KeyError, match=r'"\."'):
        module.register_parameter("a.b", None)

    class Early(ember.nn.Module):
        def __init__(self):
            self.w = ember.nn.Parameter(ember.zeros(1))

    with pytest.raises(AttributeError, match=r"before Module\.__init__"):
        Early()
    with pytest.raises(AttributeError, match="no attribute 'missing'"):
        _ = module.missing


def test_parameter_basics():
    p = ember.nn.Parameter(ember.ones(2, 2))
    assert p.requires_grad and isinstance(p, ember.Tensor) and p.is_leaf
    assert not ember.nn.Parameter(ember.ones(1), requires_grad=False).requires_grad
    assert repr(p) == repr(torch.nn.Parameter(torch.ones(2, 2))).replace("torch.", "ember.")
    assert ember.nn.Parameter().shape == (0,)
    q = ember.nn.Parameter(p)
    assert type(q) is ember.nn.Parameter and q.data_ptr() == p.data_ptr()


def test_train_eval_and_their_effects(device, rng):
    model = ember.nn.Sequential(ember.nn.BatchNorm1d(3), ember.nn.Dropout(0.5)).to(device)
    assert model.training and all(m.training for m in model.modules())
    x = to_ember(rng.standard_normal((8, 3)).astype(np.float32) * 2 + 1, device)
    train_out = model(x)
    assert bool((train_out == 0).any())  # dropout active
    assert int(model[0].num_batches_tracked) == 1
    assert model.eval() is model and not any(m.training for m in model.modules())
    a, b = model(x), model(x)
    assert bool((a == b).all()) and int(model[0].num_batches_tracked) == 1
    expected = (x - model[0].running_mean) / ember.sqrt(model[0].running_var + 1e-5)
    np.testing.assert_allclose(to_numpy(a), to_numpy(expected), rtol=1e-5, atol=1e-6)
    model.train()
    assert model[1].training
    with pytest.raises(ValueError, match="boolean"):
        model.train("yes")


def test_to_dtype_keeps_parameter_identity(device):
    model = ember.nn.Sequential(ember.nn.Linear(2, 3), ember.nn.BatchNorm1d(3))
    model(ember.randn(4, 2)).sum().backward()
    weight, grad = model[0].weight, model[0].weight.grad
    assert model.to(ember.float64) is model
    assert model[0].weight is weight and weight.dtype == ember.float64
    assert isinstance(weight, ember.nn.Parameter) and weight.requires_grad
    assert weight.grad.dtype == ember.float64 and grad is not None
    assert model[1].running_mean.dtype == ember.float64
    assert model[1].num_batches_tracked.dtype == ember.int64  # integers are not cast
    model.to(device)
    assert model[0].weight is weight and weight.device.type == device
    model.float().cpu()
    assert weight.dtype == ember.float32 and weight.device.type == "cpu"
    model.to(ember.zeros(1, dtype=ember.float64, device=device))
    assert weight.dtype == ember.float64 and weight.device.type == device
    model.to(device=device, dtype=ember.float32)
    assert weight.dtype == ember.float32
    with pytest.raises(TypeError, match="floating point"):
        model.to(ember.int64)
    model.half()
    assert weight.dtype == ember.float16
    model.double()
    assert weight.dtype == ember.float64


def test_zero_grad():
    model = ember.nn.Linear(2, 3)
    model(ember.randn(4, 2)).sum().backward()
    grad = model.weight.grad
    model.zero_grad(set_to_none=False)
    assert model.weight.grad is grad and float(grad.abs().sum()) == 0.0
    model.zero_grad()
    assert model.weight.grad is None and model.bias.grad is None


def test_apply_requires_grad_and_traversal_order():
    ours, theirs = build(ember.nn), build(torch.nn)
    seen_ours, seen_theirs = [], []
    ours.apply(lambda m: seen_ours.append(type(m).__name__))
    theirs.apply(lambda m: seen_theirs.append(type(m).__name__))
    assert seen_ours == seen_theirs
    assert ours.requires_grad_(False) is ours
    assert not any(p.requires_grad for p in ours.parameters())
    ours.requires_grad_()
    assert all(p.requires_grad for p in ours.parameters())
    assert ours.get_submodule("heads.1") is ours.heads[1]
    assert ours.get_parameter("block.gate") is ours.block.gate
    assert ours.get_buffer("block.scale") is ours.block.scale
    with pytest.raises(AttributeError, match=r"has no (attribute|submodule) `missing`"):
        ours.get_submodule("heads.missing")


def test_shared_parameters_and_modules_are_listed_once():
    shared = ember.nn.Linear(2, 2)
    model = ember.nn.Sequential(shared, ember.nn.ReLU(), shared)
    theirs_shared = torch.nn.Linear(2, 2)
    theirs = torch.nn.Sequential(theirs_shared, torch.nn.ReLU(), theirs_shared)
    assert len(list(model.parameters())) == len(list(theirs.parameters())) == 2
    assert [k for k, _ in model.named_modules()] == [k for k, _ in theirs.named_modules()]
    assert [k for k, _ in model.named_modules(remove_duplicate=False)] == [
        k for k, _ in theirs.named_modules(remove_duplicate=False)
    ]
    assert list(model.state_dict()) == list(theirs.state_dict())
    assert [k for k, _ in model.named_parameters(remove_duplicate=False)] == [
        k for k, _ in theirs.named_parameters(remove_duplicate=False)
    ]


def test_forward_hooks():
    model = ember.nn.Linear(2, 2)
    calls = []

    def pre(module, args):
        calls.append("pre")
        return (args[0] * 0,)

    def post(module, args, output):
        calls.append("post")
        return output + 1

    h1 = model.register_forward_pre_hook(pre)
    h2 = model.register_forward_hook(post)
    out = model(ember.ones(1, 2))
    np.testing.assert_allclose(out.detach().numpy(), model.bias.detach().numpy()[None] + 1)
    assert calls == ["pre", "post"]
    h1.remove()
    h2.remove()
    np.testing.assert_allclose(
        model(ember.ones(1, 2)).detach().numpy(),
        (model.weight.sum(1) + model.bias).detach().numpy()[None],
        rtol=1e-6,
    )
    with model.register_forward_hook(post):
        calls.clear()
        model(ember.ones(1, 2))
    model(ember.ones(1, 2))
    assert calls == ["post"]


def test_forward_hooks_with_kwargs_prepend_and_always_call():
    class Scale(ember.nn.Module):
        def forward(self, x, factor=1.0):
            if factor < 0:
                raise ValueError("negative")
            return x * factor

    module, order = Scale(), []

    def pre_kw(m, args, kwargs):
        order.append("kw")
        return args, {**kwargs, "factor": 3.0}

    module.register_forward_pre_hook(pre_kw, with_kwargs=True)
    module.register_forward_pre_hook(lambda m, a: order.append("first"), prepend=True)
    module.register_forward_hook(lambda m, a, kw, out: out + kw["factor"], with_kwargs=True)
    assert float(module(ember.ones(1), factor=2.0)) == 6.0
    assert order == ["first", "kw"]
    failures = []
    broken = Scale()
    broken.register_forward_hook(lambda m, a, out: failures.append(out), always_call=True)
    with pytest.raises(ValueError):
        broken(ember.ones(1), factor=-1.0)
    assert failures == [None]


def test_extra_repr_and_nested_repr():
    class Custom(ember.nn.Module):
        def __init__(self):
            super().__init__()
            self.inner = ember.nn.Linear(1, 1)

        def extra_repr(self):
            return "alpha=1,\nbeta=2"

    class TorchCustom(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.inner = torch.nn.Linear(1, 1)

        def extra_repr(self):
            return "alpha=1,\nbeta=2"

    assert repr(Custom()).replace("Custom", "X") == repr(TorchCustom()).replace("TorchCustom", "X")
    assert repr(ember.nn.Module()) == "Module()"


def test_deepcopy_and_pickle():
    model = build(ember.nn)
    model.tied = model.heads[0]
    clone = copy.deepcopy(model)
    for (name, a), (_, b) in zip(model.named_parameters(), clone.named_parameters()):
        assert a is not b and a.data_ptr() != b.data_ptr(), name
        np.testing.assert_array_equal(a.detach().numpy(), b.detach().numpy())
        assert type(b) is ember.nn.Parameter and b.requires_grad == a.requires_grad
    assert clone.tied is clone.heads[0]
    with ember.no_grad():
        clone.heads[0].weight.fill_(0)
    assert float(model.heads[0].weight.abs().sum()) > 0
    assert clone.block.cache.shape == (2,)  # non-persistent buffers are copied too


def test_pickle_round_trip():
    model = ember.nn.Sequential(ember.nn.Conv2d(2, 3, 3), ember.nn.BatchNorm2d(3))
    model.register_buffer("cache", ember.ones(2), persistent=False)
    model.register_forward_hook(_double)
    again = pickle.loads(pickle.dumps(model))
    assert list(again.state_dict()) == list(model.state_dict())
    for key, value in model.state_dict().items():
        np.testing.assert_array_equal(to_numpy(again.state_dict()[key]), to_numpy(value))
    assert again.cache.shape == (2,) and type(again[0].weight) is ember.nn.Parameter
    x = ember.randn(1, 2, 5, 5)
    np.testing.assert_allclose(to_numpy(again(x)), to_numpy(model(x)), rtol=1e-6)


def _double(module, args, output):
    return output * 2


def test_module_init_rejects_arguments():
    with pytest.raises(TypeError, match="unexpected"):
        ember.nn.Module(3)
    with pytest.raises(NotImplementedError, match="forward"):
        ember.nn.Module()(ember.ones(1))


# ---- containers ------------------------------------------------------------------------------
def test_sequential():
    a, b, c = ember.nn.Linear(2, 3), ember.nn.ReLU(), ember.nn.Linear(3, 1)
    seq = ember.nn.Sequential(a, b, c)
    assert len(seq) == 3 and seq[0] is a and seq[-1] is c and list(seq) == [a, b, c]
    assert isinstance(seq[1:], ember.nn.Sequential) and list(seq[1:]) == [b, c]
    assert list(seq[1:]._modules) == ["1", "2"]  # slices keep the names, like torch
    seq.append(ember.nn.Tanh())
    assert len(seq) == 4
    del seq[1]
    assert list(seq._modules) == ["0", "1", "2"] and seq[1] is c
    seq.insert(1, b)
    assert seq[1] is b and len(seq) == 4
    seq[0] = ember.nn.Identity()
    assert isinstance(seq[0], ember.nn.Identity)
    with pytest.raises(IndexError, match="out of range"):
        seq[9]
    named = ember.nn.Sequential({"first": a, "second": b})
    assert list(dict(named.named_children())) == ["first", "second"]
    assert seq.extend([ember.nn.ReLU()]) is seq and len(seq) == 5
    x = ember.randn(4, 2)
    np.testing.assert_allclose(
        ember.nn.Sequential(a, b, c)(x).detach().numpy(), c(b(a(x))).detach().numpy()
    )


def test_module_list_and_dict():
    layers = ember.nn.ModuleList([ember.nn.Linear(1, 1) for _ in range(3)])
    assert len(layers) == 3 and len(list(layers.parameters())) == 6
    layers.append(ember.nn.ReLU())
    layers += [ember.nn.Tanh()]
    assert len(layers) == 5 and isinstance(layers[-1], ember.nn.Tanh)
    layers.insert(0, ember.nn.Identity())
    assert isinstance(layers[0], ember.nn.Identity) and list(layers._modules)[-1] == "5"
    del layers[0]
    assert isinstance(layers[0], ember.nn.Linear)
    assert isinstance(layers[1:3], ember.nn.ModuleList) and len(layers[1:3]) == 2
    with pytest.raises(IndexError):
        layers[10]
    table = ember.nn.ModuleDict({"a": ember.nn.ReLU()})
    table["b"] = ember.nn.Linear(1, 1)
    table.update([("c", ember.nn.Tanh())])
    assert list(table) == ["a", "b", "c"] and "b" in table and len(table) == 3
    assert list(table.keys()) == ["a", "b", "c"]
    assert isinstance(table.pop("a"), ember.nn.ReLU) and len(table) == 2
    assert [k for k, _ in table.named_parameters()] == ["b.weight", "b.bias"]


def test_parameter_list_and_dict():
    plist = ember.nn.ParameterList([ember.ones(2), ember.nn.Parameter(ember.zeros(3))])
    assert all(isinstance(p, ember.nn.Parameter) for p in plist)
    plist.append(ember.ones(1))
    assert len(plist) == 3 and [k for k, _ in plist.named_parameters()] == ["0", "1", "2"]
    assert plist[-1].shape == (1,)
    pdict = ember.nn.ParameterDict({"w": ember.ones(2), "b": ember.zeros(1)})
    assert list(pdict) == ["b", "w"]  # a plain dict is taken sorted, as in torch
    pdict["a"] = ember.nn.Parameter(ember.zeros(1))
    assert list(pdict) == ["b", "w", "a"] and isinstance(pdict["w"], ember.nn.Parameter)
    theirs = torch.nn.ParameterList(
        [torch.ones(2), torch.nn.Parameter(torch.zeros(3)), torch.ones(1)]
    )
    assert repr(plist) == repr(theirs).replace("torch.", "ember.")
    theirs_dict = torch.nn.ParameterDict({"w": torch.ones(2), "b": torch.zeros(1)})
    theirs_dict["a"] = torch.nn.Parameter(torch.zeros(1))
    assert repr(pdict) == repr(theirs_dict).replace("torch.", "ember.")
