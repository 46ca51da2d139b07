"""``ember._logging.set_logs``: PyTorch's ``torch._logging.set_logs`` over ember.compile's log
artifacts (compiler/logs.py, the ``EMBER_LOGS`` switch).

Scripts turn on dynamo's logs with ``torch._logging.set_logs(graph_breaks=True,
recompiles=True)``; the same call, spelled with ember, turns on ember's artifacts of the same
meaning. Like PyTorch's, a call sets every artifact it does not name back to off. PyTorch's
artifacts without an ember counterpart (bytecode, Triton kernels, DDP graphs...) are accepted
and warned about once each, since nothing will print for them; component levels (``dynamo``,
``inductor``, ``all``...) set the level of ember's compiler loggers.
"""

from __future__ import annotations

import logging
import warnings

# PyTorch's artifact -> ember's (compiler/logs.py ARTIFACTS)
ARTIFACTS = {
    "graph": "graphs",
    "graph_code": "graphs",
    "graph_code_verbose": "graphs",
    "aot_graphs": "graphs",
    "aot_joint_graph": "graphs",
    "graph_breaks": "graph_breaks",
    "side_effects": "graph_breaks",  # ember logs a capture's side effects as its break
    "guards": "guards",
    "recompiles": "recompiles",
    "recompiles_verbose": "recompiles",
    "output_code": "fusion",  # the generated fused kernels
    "kernel_code": "fusion",
    "fusion": "fusion",
    "schedule": "fusion",
    "ir_post_fusion": "fusion",
}
WITHOUT_COUNTERPART = frozenset({
    "bytecode", "ddp_graphs", "graph_sizes", "trace_source", "trace_call", "trace_bytecode",
    "perf_hints", "pre_grad_graphs", "post_grad_graphs", "ir_pre_fusion", "onnx_diagnostics",
    "overlap", "cudagraphs", "sym_node", "compiled_autograd", "compiled_autograd_verbose",
    "cudagraph_static_inputs", "benchmarking", "autotuning", "incremental",
    "graph_region_expansion", "inductor_metrics", "hierarchical_compile",
    "compute_dependencies", "caching",
})  # fmt: skip
# PyTorch's components (a logging level each) -> ember's loggers they reach
COMPONENTS = {
    "all": ("ember.compiler", "ember._dynamo"),
    "dynamo": ("ember.compiler", "ember._dynamo"),
    "aot": ("ember.compiler",),
    "inductor": ("ember.compiler",),
    "dynamic": ("ember.compiler",),
    "autograd": (),
    "distributed": (),
    "c10d": (),
    "ddp": (),
    "fsdp": (),
    "dtensor": (),
    "onnx": (),
    "export": (),
}
_WARNED: set = set()


def set_logs(*, modules: dict | None = None, **settings) -> None:
    """Turn ember.compile's log artifacts on or off with PyTorch's keyword names, e.g.
    ``set_logs(graph_breaks=True, recompiles=True, guards=True)``; ``set_logs()`` turns every
    one off. ``modules``: ``{logger name: level}``, as PyTorch's."""
    from ember.compiler import logs

    on = set()
    for name, value in settings.items():
        if name in COMPONENTS:
            if value is not None:
                for logger in COMPONENTS[name]:
                    logging.getLogger(logger).setLevel(int(value))
        elif name in ARTIFACTS:
            if value:
                on.add(ARTIFACTS[name])
        elif name in WITHOUT_COUNTERPART:
            if value and name not in _WARNED:
                _WARNED.add(name)
                warnings.warn(
                    f"set_logs: ember has no '{name}' artifact (it has "
                    f"{', '.join(logs.ARTIFACTS)}); nothing is logged for it",
                    stacklevel=2,
                )
        else:
            raise TypeError(f"set_logs() got an unexpected keyword argument '{name}'")
    for name, level in (modules or {}).items():
        logging.getLogger(name).setLevel(logging.INFO if level is True else int(level))
    logs.set_logs(**{artifact: artifact in on for artifact in logs.ARTIFACTS})
