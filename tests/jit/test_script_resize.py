"""``F.interpolate`` in scripted code beyond the one-upsample-node lowering: a rank known only
at run time (``nearest`` with one size or scale), ``mode="area"``, ``antialias=True``,
``recompute_scale_factor`` and options computed at run time run as eager ember does, and match
torch.jit.script of the same source, before and after save/load."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import ember

from .script_checks import roundtrip
from .script_resize import resizes
from .test_script import assert_same, to_lib

pytestmark = pytest.mark.filterwarnings("ignore:`torch.jit.script` is deprecated")
SHAPES = [(1, 2, 6), (2, 3, 6, 8), (1, 1, 4, 6, 8)]
FOUR_D = ("bilinear_antialias", "bicubic_antialias", "recomputed")  # these modes want 4-D
EXTRA = {
    "run_time_size": lambda rank: ([3] * rank, "nearest"),
    "run_time_scale": lambda rank: (2.0,) if rank == 1 else (None,),
}


def _calls(name):
    rng = np.random.default_rng(0)
    for shape in SHAPES:
        if name in FOUR_D and len(shape) != 4:
            continue
        extra = EXTRA.get(name, lambda rank: ())(len(shape) - 2)
        yield rng.standard_normal(shape).astype(np.float32), extra


@pytest.mark.parametrize("name", sorted(resizes(ember)))
def test_resizes_match_torch_script_and_eager(name):
    eager = resizes(ember)[name]
    mine = ember.jit.script(eager)
    theirs = torch.jit.script(resizes(torch)[name])
    mine.graph.lint()
    assert mine.graph.findAllNodes("prim::interpolate")
    loaded = roundtrip(mine)
    for x, extra in _calls(name):
        want = theirs(to_lib(x, torch), *extra)
        for fn in (mine, loaded, eager):
            assert_same(fn(to_lib(x, ember), *extra), want)


def test_run_time_mode_switches_like_eager():
    mine = ember.jit.script(resizes(ember)["run_time_size"])
    theirs = torch.jit.script(resizes(torch)["run_time_size"])
    x = np.random.default_rng(1).standard_normal((1, 2, 5, 4)).astype(np.float32)
    for mode in ("nearest", "bilinear", "bicubic", "area", "nearest-exact"):
        assert_same(mine(to_lib(x, ember), [7, 3], mode), theirs(to_lib(x, torch), [7, 3], mode))


def test_known_rank_keeps_one_upsample_node():
    scripted = ember.jit.script(ember.nn.Upsample(scale_factor=(2.0, 1.5)))
    kinds = [n.kind() for n in scripted.graph.nodes()]
    assert "ember::upsample_nearest2d" in kinds and "prim::interpolate" not in kinds


def test_upsample_module_of_unknown_rank_scripts_and_saves():
    scripted = roundtrip(ember.jit.script(ember.nn.Upsample(scale_factor=2.0)))
    theirs = torch.jit.script(torch.nn.Upsample(scale_factor=2.0))
    for x, _ in _calls("nearest_scale"):
        assert_same(scripted(to_lib(x, ember)), theirs(to_lib(x, torch)))


def test_wrong_rank_raises_eagers_error_when_it_runs():
    mine = ember.jit.script(resizes(ember)["bilinear_antialias"])
    x = ember.ones(1, 2, 6)
    with pytest.raises(Exception) as eager:
        resizes(ember)["bilinear_antialias"](x)
    with pytest.raises(type(eager.value), match="needs 4D input"):
        mine(x)
