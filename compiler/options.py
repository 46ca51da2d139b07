"""Which backend and mode strings ``ember.compile`` accepts, and what each one does in ember.

PyTorch's names are accepted so that programs run unchanged; they map onto ember's paths:

- ``"ember"`` (default) and ``"inductor"``: capture, guards, replay of the graph's code.
- ``"eager"``, ``"aot_eager"``, ``"aot_eager_decomp_partition"``,
  ``"aot_eager_default_partitioner"`` (PyTorch's debugging backends): the same path, since
  ember's replay runs the recorded ops as they are.
- ``"cudagraphs"``: ``"ember"`` with ``mode="reduce-overhead"``.
- a callable (PyTorch's custom backends): not supported yet, ``NotImplementedError``.

``options`` are checked against ``torch._inductor.config``'s names and types as PyTorch checks
them (the table of config_module.py, the one ``ember._inductor.config`` holds);
``{"triton.cudagraphs": True}`` (or that global setting) is ``mode="reduce-overhead"``, as in
PyTorch.

Modes (``"default"``, ``"lite"``, ``"reduce-overhead"``, ``"max-autotune-no-cudagraphs"``,
``"max-autotune"``) are PyTorch's list; ``"reduce-overhead"`` replays into preallocated
buffers (overhead.py), the others run alike.
"""

from __future__ import annotations

from dataclasses import dataclass

from .exc import InvalidBackend

# list_backends() (PyTorch lists its non-experimental ones) and list_backends(None) (all)
BACKENDS = {"ember": "ember", "inductor": "ember", "cudagraphs": "ember"}
DEBUG_BACKENDS = {
    "eager": "eager",
    "aot_eager": "eager",
    "aot_eager_decomp_partition": "eager",
    "aot_eager_default_partitioner": "eager",
}
# PyTorch's modes and the inductor settings each one stands for (torch._inductor's
# list_mode_options); ember acts on triton.cudagraphs (its reduce-overhead path) alone
MODE_OPTIONS = {
    "default": {},
    "lite": {
        "fallback_by_default": True,
        "selective_decompose": True,
        "reorder_for_peak_memory": False,
        "reorder_for_compute_comm_overlap": False,
        "triton.reorder_for_reducing_graph_partitions": False,
        "use_pre_grad_passes": False,
        "use_joint_graph_passes": False,
        "use_post_grad_passes": False,
        "use_dce": False,
        "allow_buffer_reuse": False,
    },
    "reduce-overhead": {"triton.cudagraphs": True},
    "max-autotune-no-cudagraphs": {"max_autotune": True, "coordinate_descent_tuning": True},
    "max-autotune": {
        "max_autotune": True,
        "triton.cudagraphs": True,
        "coordinate_descent_tuning": True,
    },
}
MODES = tuple(MODE_OPTIONS)


@dataclass(frozen=True)
class Options:
    """What one ``ember.compile`` call asked for, validated."""

    backend: object  # "ember", "eager" or the user's callable
    backend_name: str
    mode: str
    options: dict
    fullgraph: bool
    dynamic: bool | None


def resolve(backend, mode, options, fullgraph: bool, dynamic) -> Options:
    """Validate ``ember.compile``'s arguments with PyTorch's errors."""
    if mode is not None and options is not None:
        raise RuntimeError(
            "Either mode or options can be specified, but both can't be specified at the same time."
        )
    if mode is None:
        mode = "default"
    if mode not in MODES:
        raise RuntimeError(f"Unrecognized mode={mode}, should be one of: {', '.join(MODES)}")
    options = check_options(options)
    if backend == "cudagraphs":
        mode = "reduce-overhead"
    if callable(backend):
        path, name = backend, getattr(backend, "__name__", type(backend).__name__)
    elif isinstance(backend, str) and backend in BACKENDS:
        path, name = BACKENDS[backend], backend
    elif isinstance(backend, str) and backend in DEBUG_BACKENDS:
        path, name = DEBUG_BACKENDS[backend], backend
    else:
        raise InvalidBackend(backend)
    if path == "ember" and mode == "default" and _cudagraphs(options):
        mode = "reduce-overhead"  # PyTorch's definition of that mode
    return Options(path, name, mode, options, bool(fullgraph), dynamic)


def check_options(options: dict | None) -> dict:
    """``options`` with PyTorch's names (``-`` read as ``_``), checked as PyTorch checks them
    against ``torch._inductor.config``: an unknown name or a value of the wrong type raises
    PyTorch's RuntimeError."""
    from .config_module import table

    keys = table("inductor")
    checked = {}
    for key, value in (options or {}).items():
        name = key.replace("-", "_")
        entry = keys.get(name)
        if entry is None or not entry.option:
            known = [k for k, e in keys.items() if e.option]
            raise RuntimeError(f"Unexpected optimization option {key}, known options are {known}")
        if entry.type is not None and not isinstance(value, entry.type):
            raise RuntimeError(
                f"Unexpected type of attr {key}, got {type(value).__name__} should be "
                f"{type(entry.default).__name__}"
            )
        checked[name] = value
    return checked


def _cudagraphs(options: dict) -> bool:
    """``triton.cudagraphs`` as the compile sees it: its options, else the global setting."""
    if "triton.cudagraphs" in options:
        return bool(options["triton.cudagraphs"])
    from ember._inductor import config

    return bool(config.triton.cudagraphs)


def list_backends(exclude_tags=("debug", "experimental")) -> list[str]:
    """The backend names ``ember.compile`` accepts (``exclude_tags=None``: debug ones too)."""
    names = set(BACKENDS)
    if exclude_tags is None or "debug" not in exclude_tags:
        names |= set(DEBUG_BACKENDS)
    return sorted(names)
