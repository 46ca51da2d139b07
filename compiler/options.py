"""Which backend and mode strings ``ember.compile`` accepts, and what each one does in ember.

PyTorch's names are accepted so that programs run unchanged; they map onto ember's paths:

- ``"ember"`` (default) and ``"inductor"``: capture, guards, replay of the graph's code.
- ``"eager"``, ``"aot_eager"``, ``"aot_eager_decomp_partition"``,
  ``"aot_eager_default_partitioner"`` (PyTorch's debugging backends): the same path, since
  ember's replay runs the recorded ops as they are.
- ``"cudagraphs"``: ``"ember"`` with ``mode="reduce-overhead"``.
- a callable (PyTorch's custom backends): not supported yet, ``NotImplementedError``.

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
MODES = ("default", "lite", "reduce-overhead", "max-autotune-no-cudagraphs", "max-autotune")


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
    return Options(path, name, mode, dict(options or {}), bool(fullgraph), dynamic)


def list_backends(exclude_tags=("debug", "experimental")) -> list[str]:
    """The backend names ``ember.compile`` accepts (``exclude_tags=None``: debug ones too)."""
    names = set(BACKENDS)
    if exclude_tags is None or "debug" not in exclude_tags:
        names |= set(DEBUG_BACKENDS)
    return sorted(names)
