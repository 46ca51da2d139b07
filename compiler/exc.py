"""The errors ember.compile raises, under PyTorch's names (``torch._dynamo.exc``)."""

from __future__ import annotations


class TorchDynamoException(RuntimeError):  # noqa: N818 - PyTorch's name
    """Base of the compiler's errors (PyTorch's name, so ``except`` clauses carry over)."""


class Unsupported(TorchDynamoException):
    """A construct the capture cannot put in a graph; raised with ``fullgraph=True``, else the
    call runs eagerly from that point and ``explain()`` lists the reason.

    Attributes:
        gb_type: the short title (``"Data-dependent branching"``).
        explanation: why the construct cannot be captured.
        hints: what to change.
    """

    def __init__(self, msg: str, gb_type: str = "", explanation: str = "", hints=()):
        super().__init__(msg)
        self.msg = msg
        self.gb_type = gb_type
        self.explanation = explanation
        self.hints = list(hints)


class InvalidBackend(TorchDynamoException):
    def __init__(self, name) -> None:
        super().__init__(
            f"Invalid backend: {name!r}, see `ember._dynamo.list_backends()` for available "
            "backends."
        )


class FailOnRecompileLimitHit(TorchDynamoException):
    """``fullgraph=True`` and the function needed more graphs than the recompile limit."""


class UncapturedHigherOrderOpError(TorchDynamoException):
    """``cond``/``while_loop``/``map`` given functions they cannot take: branches or a body
    whose outputs differ in structure, alias or mutate their inputs, or return another type
    (compiler/control_flow.py; PyTorch raises it from its trace of the functions)."""


class TorchRuntimeError(TorchDynamoException):
    """A check on traced values failed (PyTorch's wrapper of the error met while running the
    graph on fake tensors): ``cond`` branches whose outputs differ in dtype, rank or device."""


class RecompileError(TorchDynamoException):
    """``ember._dynamo.config.error_on_recompile`` is set and a compiled function recompiles
    (the message names the guard failures)."""
