"""PyTorch's compiler config modules on ember (compiler/config_module.py): the names and defaults
of ``torch._dynamo.config``, ``torch._inductor.config`` and ``torch._functorch.config``, their
errors and ``patch``; the settings ember acts on change what it does; ``_dynamo.optimize``,
``_dynamo.run`` and a gpt-fast-style preamble run."""

from __future__ import annotations

import logging
import os
import pickle
import warnings
from unittest import mock

import numpy as np
import pytest
import torch
import torch._functorch.config
import torch._inductor
import torch._inductor.config

import ember
import ember._functorch
import ember._inductor
import ember.nn as nn
from ember._dynamo import config as dynamo_config
from ember._dynamo.exc import FailOnRecompileLimitHit, RecompileError, Unsupported

from .torch_config_tables import FOLDER, MODULES, PORTABLE, _literal, torch_tables

PAIRS = {
    "dynamo": (dynamo_config, torch._dynamo.config),
    "inductor": (ember._inductor.config, torch._inductor.config),
    "functorch": (ember._functorch.config, torch._functorch.config),
}
EMBER_ONLY = {"dynamo": {"enabled"}, "inductor": set(), "functorch": set()}


def _f(x):
    return x.sin() * 2 + x.cos()


def _ours(message) -> str:
    """PyTorch's message about its module ``torch._x.config``, about ember's."""
    return str(message).replace("torch._", "ember._")


def _close(a, b):
    np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-6, atol=1e-6)


@pytest.fixture(autouse=True)
def _restore_configs():
    saved = {name: ours.get_config_copy() for name, (ours, _) in PAIRS.items()}
    yield
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for name, (ours, _) in PAIRS.items():
            ours.load_config(saved[name])
    ember.compiler.reset()


# ---- names and defaults ------------------------------------------------------------------------
@pytest.fixture(scope="module")
def plain_torch():
    """PyTorch's tables and defaults with no environment variable setting them (``CI`` does on
    CI machines), as ember's: see tests/compile/torch_config_tables.py."""
    return torch_tables()


@pytest.mark.parametrize("name", list(MODULES))
def test_stored_table_is_torchs(name, plain_torch):
    """The data file is what the generator writes from the installed PyTorch today."""
    with open(os.path.join(FOLDER, f"{name}.txt")) as f:
        stored = f.read().splitlines()
    assert stored[1:] == plain_torch[name]["lines"][1:], (
        "PyTorch's config changed: run python tests/compile/torch_config_tables.py"
    )


@pytest.mark.parametrize("name", list(MODULES))
def test_keys_and_defaults_match_torch(name, plain_torch):
    ours = PAIRS[name][0]
    got, want = ours.get_config_copy(), plain_torch[name]["defaults"]
    assert set(got) - EMBER_ONLY[name] == set(want)
    differ = {k for k in want if _literal(got[k]) != want[k]}
    assert differ == set(PORTABLE[name]) & differ  # only the machine-dependent ones
    for key in want:  # every name reads as an attribute too, sections included
        section, _, rest = key.rpartition(".")
        holder = getattr(ours, section) if section else ours
        assert getattr(holder, rest) == got[key]


@pytest.mark.parametrize("name", list(MODULES))
def test_unknown_names_raise_like_torch(name):
    ours, theirs = PAIRS[name]
    for action in (lambda c: c.no_such_setting, lambda c: setattr(c, "no_such_setting", 1)):
        with pytest.raises(AttributeError) as want:
            action(theirs)
        with pytest.raises(AttributeError) as got:
            action(ours)
        assert str(got.value) == _ours(want.value)
    assert not hasattr(ours, "no_such_setting")


def test_sections_and_aliases():
    inductor = ember._inductor.config
    inductor.triton.unique_kernel_names = True
    assert getattr(inductor, "triton.unique_kernel_names") is True
    with pytest.raises(AttributeError, match=r"ember._inductor.config.triton.nope does not exist"):
        inductor.triton.nope = 1
    dynamo_config.cache_size_limit = 3
    assert dynamo_config.recompile_limit == 3
    dynamo_config.accumulated_recompile_limit = 7
    assert dynamo_config.accumulated_cache_size_limit == 7
    assert "cache_size_limit" not in dynamo_config.get_config_copy()  # aliases not listed
    assert inductor.force_disable_caches is False  # torch.compiler.config's, kept here


def test_deprecated_names_warn_as_torch():
    # each warns once per process: forget earlier reads
    torch._dynamo.config._config["inline_inbuilt_nn_modules"]._deprecation_warned = False
    dynamo_config._warned.discard("inline_inbuilt_nn_modules")
    with pytest.warns(FutureWarning) as want:
        torch._dynamo.config.inline_inbuilt_nn_modules = True
    with pytest.warns(FutureWarning) as got:
        dynamo_config.inline_inbuilt_nn_modules = True
    assert str(got[0].message) == _ours(want[0].message)


def test_patch_restores():
    inductor = ember._inductor.config
    with inductor.patch(max_autotune=True, **{"triton.cudagraphs": True}):
        assert inductor.max_autotune and inductor.triton.cudagraphs
    assert not inductor.max_autotune and not inductor.triton.cudagraphs

    @dynamo_config.patch("recompile_limit", 2)
    def limited():
        return dynamo_config.recompile_limit

    assert limited() == 2 and dynamo_config.recompile_limit == 8
    with pytest.raises(ValueError), dynamo_config.patch({"verbose": True}):
        assert dynamo_config.verbose
        raise ValueError
    assert dynamo_config.verbose is False
    with pytest.raises(AttributeError), dynamo_config.patch(no_such_setting=1):
        pass
    with mock.patch.object(inductor.triton, "cudagraphs", True):  # deletes, then sets back
        assert inductor.triton.cudagraphs
    assert inductor.triton.cudagraphs is False


def test_save_and_load_config():
    saved = ember._functorch.config.save_config()
    ember._functorch.config.activation_memory_budget = 0.5
    ember._functorch.config.load_config(saved)
    assert ember._functorch.config.activation_memory_budget == 1.0
    assert pickle.loads(saved)["activation_memory_budget"] == 1.0


def test_setting_ember_cannot_honour_warns():
    with pytest.warns(UserWarning, match="NumPy's own dtypes"):
        dynamo_config.numpy_default_float = "float32"
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        dynamo_config.numpy_default_float = "float64"  # the default: nothing to warn about
        dynamo_config.capture_scalar_outputs = True  # results unchanged: accepted silently


def test_inductor_listings_match_torch():
    assert ember._inductor.list_options() == torch._inductor.list_options()
    assert ember._inductor.list_mode_options() == torch._inductor.list_mode_options()
    for mode in torch._inductor.list_mode_options():
        assert ember._inductor.list_mode_options(mode) == torch._inductor.list_mode_options(mode)
    with pytest.raises(RuntimeError) as want:
        torch._inductor.list_mode_options("fast")
    with pytest.raises(RuntimeError) as got:
        ember._inductor.list_mode_options("fast")
    assert str(got.value) == str(want.value)


# ---- ember.compile(options=...) checks against the same table ---------------------------------
@pytest.mark.parametrize(
    "options", [{"no_such_option": True}, {"max_autotune": 1}], ids=["unknown", "wrong-type"]
)
def test_options_errors_match_torch(options):
    with pytest.raises(RuntimeError) as want:
        torch.compile(lambda x: x + 1, options=options)(torch.ones(1))
    with pytest.raises(RuntimeError) as got:
        ember.compile(_f, options=options)
    assert str(got.value) == str(want.value)


def test_options_run_and_cudagraphs_is_reduce_overhead():
    from ember.compiler.options import resolve

    x = ember.randn(5)
    options = {"max-autotune": True, "epilogue_fusion": False, "cpp.simdlen": 8}
    _close(ember.compile(_f, options=options)(x), _f(x))
    assert resolve("inductor", None, options, False, None).options["max_autotune"] is True
    assert resolve("inductor", None, {"triton.cudagraphs": True}, False, None).mode == (
        "reduce-overhead"
    )
    assert resolve("inductor", None, None, False, None).mode == "default"
    ember._inductor.config.triton.cudagraphs = True
    assert resolve("inductor", None, None, False, None).mode == "reduce-overhead"
    assert resolve("eager", None, None, False, None).mode == "default"  # not inductor's path


# ---- the dynamo settings ember honours -------------------------------------------------------
def test_cache_size_limit_limits_recompiles(caplog):
    dynamo_config.cache_size_limit = 2  # PyTorch's older name
    compiled = ember.compile(_f, dynamic=False)
    with caplog.at_level(logging.WARNING, logger="ember._dynamo"):
        for n in (1, 2, 3, 4):
            x = ember.randn(n)
            _close(compiled(x), _f(x))
    assert compiled._count == 2
    assert "hit config.recompile_limit (2)" in caplog.text


def test_accumulated_recompile_limit_counts_every_compile_of_a_function(caplog):
    dynamo_config.accumulated_recompile_limit = 2
    first, second = ember.compile(_f, dynamic=False), ember.compile(_f, dynamic=False)
    x = ember.randn(3)
    first(x)
    second(x)
    y = ember.randn(4)
    with caplog.at_level(logging.WARNING, logger="ember._dynamo"):
        _close(second(y), _f(y))  # over the limit: eager
    assert (first._count, second._count) == (1, 1)
    assert "accumulated_recompile_limit (2)" in caplog.text
    ember.compiler.reset()  # forgets the counts, as PyTorch's reset
    second(ember.randn(4))
    assert second._count == 1


def test_fail_on_recompile_limit_hit_raises():
    dynamo_config.recompile_limit = 1
    dynamo_config.fail_on_cache_limit_hit = True  # the alias
    compiled = ember.compile(_f, dynamic=False)
    compiled(ember.randn(2))
    with pytest.raises(FailOnRecompileLimitHit, match="fail_on_recompile_limit_hit"):
        compiled(ember.randn(3))


def test_error_on_recompile_raises_with_the_reason():
    dynamo_config.error_on_recompile = True
    compiled = ember.compile(_f, dynamic=False)
    compiled(ember.randn(2))
    compiled(ember.randn(2))  # a replay is not a recompile
    with pytest.raises(RecompileError, match=r"size mismatch at index 0\. expected 2, actual 3"):
        compiled(ember.randn(3))


def test_automatic_dynamic_shapes_off_keeps_sizes_static():
    sizes = (2, 3, 4)
    default = ember.compile(_f)
    for n in sizes:
        default(ember.randn(n))
    assert default._count == 2  # the first size, then a dynamic graph
    dynamo_config.automatic_dynamic_shapes = False
    static = ember.compile(_f)
    for n in sizes:
        x = ember.randn(n)
        _close(static(x), _f(x))
    assert static._count == 3


def test_assume_static_by_default_off_starts_dynamic():
    dynamo_config.assume_static_by_default = False
    compiled = ember.compile(_f)
    for n in (2, 3, 4):
        x = ember.randn(n)
        _close(compiled(x), _f(x))
    assert compiled._count == 1


def test_disable_captures_nothing_new():
    compiled = ember.compile(_f, dynamic=False)
    x = ember.randn(3)
    compiled(x)
    dynamo_config.disable = True
    y = ember.randn(4)
    _close(compiled(y), _f(y))  # eager
    compiled(x)  # the cached graph still replays
    assert compiled._count == 1
    dynamo_config.disable = False
    compiled(ember.randn(4))
    assert compiled._count == 2


# ---- _dynamo.optimize and _dynamo.run ----------------------------------------------------------
def test_optimize_compiles():
    compiled = ember._dynamo.optimize("inductor")(_f)
    for _ in range(2):
        x = ember.randn(4)
        _close(compiled(x), _f(x))
    assert compiled._count == 1 and compiled._cache  # captured once, then replayed
    assert ember._dynamo.optimize("eager", disable=True)(_f) is _f
    module = ember._dynamo.optimize()(nn.Linear(3, 2))
    assert isinstance(module, ember._dynamo.OptimizedModule)


def test_optimize_nopython_is_fullgraph():
    def breaks(x):
        return x * x.sum().item()

    loose = ember._dynamo.optimize("inductor")(breaks)
    _close(loose(ember.ones(3)), breaks(ember.ones(3)))
    with pytest.raises(Unsupported):
        ember._dynamo.optimize("inductor", nopython=True)(breaks)(ember.ones(3))


def test_optimize_refuses_what_ember_cannot_do():
    with pytest.raises(NotImplementedError, match="guard callbacks"):
        ember._dynamo.optimize("inductor", guard_fail_fn=print)
    with pytest.raises(NotImplementedError, match="not blocks"), ember._dynamo.optimize():
        pass


def test_run_replays_without_capturing():
    compiled = ember.compile(_f, dynamic=False)
    x = ember.randn(3)
    compiled(x)
    with ember._dynamo.run():
        y = ember.randn(5)
        _close(compiled(y), _f(y))
        compiled(x)
    assert compiled._count == 1
    only_cached = ember._dynamo.run(compiled)
    _close(only_cached(y), _f(y))
    assert compiled._count == 1
    compiled(y)
    assert compiled._count == 2


# ---- a real program's preamble -----------------------------------------------------------------
def test_gpt_fast_style_preamble_runs():
    """What gpt-fast and nanoGPT-style scripts set before ``torch.compile(model)``."""
    import ember._inductor.config

    ember._inductor.config.coordinate_descent_tuning = True
    ember._inductor.config.triton.unique_kernel_names = True
    ember._inductor.config.fx_graph_cache = True
    ember._inductor.config.freezing = False
    ember._inductor.config.cpp.enable_kernel_profile = False
    ember._dynamo.config.capture_scalar_outputs = True
    ember._dynamo.config.optimize_ddp = False
    ember._dynamo.config.cache_size_limit = 16
    ember._dynamo.config.accumulated_cache_size_limit = 512
    ember._dynamo.config.verbose = True
    ember._dynamo.config.suppress_errors = False
    ember._functorch.config.activation_memory_budget = 0.5
    model = nn.Sequential(nn.Linear(8, 16), nn.GELU(), nn.Linear(16, 4))
    compiled = ember.compile(model, mode="max-autotune-no-cudagraphs")
    for n in (2, 3, 5):
        x = ember.randn(n, 8)
        _close(compiled(x), model(x))
