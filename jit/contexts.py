"""Library context managers in scripted code at run time: ``with ember.autocast("cpu"):``
and ``with ember.profiler.record_function("name"):`` are ``prim::enter`` (which builds the
context manager named by its first input from the rest and enters it) and ``prim::exit``.
Only the context managers in ``CONTEXTS`` can be named, so a loaded graph can enter nothing
else."""

from __future__ import annotations


def contexts() -> dict:
    """name -> the context manager class, as torch.jit.script accepts them."""
    import ember
    from ember import profiler

    return {"autocast": ember.autocast, "record_function": profiler.record_function}


def enter(name: str, *args):
    manager = contexts()[name](*args)
    manager.__enter__()
    return manager


def exit_(manager) -> None:
    manager.__exit__(None, None, None)
