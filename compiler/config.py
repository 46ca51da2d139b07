"""Compiler settings: PyTorch 2.13's ``torch._dynamo.config``, every name with PyTorch's default
(compiler/torch_configs/dynamo.txt; ``ember._dynamo.config`` is this module).

Set them as attributes (``ember._dynamo.config.recompile_limit = 16``) or for a block
(``with ember._dynamo.config.patch(automatic_dynamic_shapes=False):``). An unknown name
raises AttributeError, as PyTorch's does. ember acts on:

- ``recompile_limit`` (alias ``cache_size_limit``): guard sets one compiled function keeps
  before new ones run eagerly, with a warning;
- ``accumulated_recompile_limit`` (alias ``accumulated_cache_size_limit``): the same cap over
  every compiled function of one code object (a function compiled twice, a module class);
- ``fail_on_recompile_limit_hit`` (alias ``fail_on_cache_limit_hit``): hitting a limit raises
  ``FailOnRecompileLimitHit`` instead;
- ``error_on_recompile``: a recompile raises ``RecompileError`` naming the guard failures;
- ``automatic_dynamic_shapes``: False, ``dynamic=None`` never makes a changed size symbolic;
- ``assume_static_by_default``: False, ``dynamic=None`` starts symbolic, as ``dynamic=True``;
- ``disable``: compiled functions capture nothing new (cached graphs still replay);
- ``enabled`` (ember's own): False, every compiled function runs eagerly.

The others are accepted and change nothing: they tune PyTorch's bytecode tracer, guards,
caches, logging or code generators, which ember does not have; ember's results equal eager
PyTorch's whatever they say. The few whose purpose is to make compiled results differ from
eager (``numpy_default_float``...) warn when set, since ember cannot honour them.
"""

from __future__ import annotations

from .config_module import install

_NUMPY = "ember runs NumPy code in compiled functions as NumPy runs it, with NumPy's own dtypes"
UNHONOURED = {
    "numpy_default_float": _NUMPY,
    "numpy_default_complex": _NUMPY,
    "numpy_default_int": _NUMPY,
    "replay_side_effects": "ember's compiled functions always apply their Python side effects",
    "side_effect_replay_policy": (
        "ember applies Python side effects and logs them (EMBER_LOGS=graph_breaks); it does not "
        "warn or raise for them"
    ),
}

install(__name__, "dynamo", extra={"enabled": True}, unhonoured=UNHONOURED)
