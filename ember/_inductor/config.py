"""``ember._inductor.config``: PyTorch 2.13's ``torch._inductor.config``, every name with
PyTorch's default (compiler/torch_configs/inductor.txt, the table ``ember.compile(options=...)``
checks names against).

ember acts on ``triton.cudagraphs``: True, a compile without a mode runs as
``mode="reduce-overhead"`` (PyTorch's definition of that mode; on CPU, as PyTorch's, the
outputs are not overwritten). The rest tune inductor's code generation, autotuning, caches
and debug output (``coordinate_descent_tuning``, ``max_autotune``, ``freezing``,
``fx_graph_cache``, ``cpp.*``, ``triton.*``...): accepted, no effect, as PyTorch itself ignores
the Triton ones on CPU. ember's compiled results equal eager ones, as ``fallback_random=True``
and ``emulate_precision_casts=True`` ask. ``nan_asserts`` warns when set: ember does not check
compiled outputs for NaN.
"""

from ember.compiler.config_module import install

install(
    __name__,
    "inductor",
    unhonoured={"nan_asserts": "ember does not check compiled outputs for NaN or infinity"},
)
