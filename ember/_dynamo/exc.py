"""``ember._dynamo.exc``: the compiler's errors under PyTorch's module name."""

from ember.compiler.exc import (
    FailOnRecompileLimitHit,
    InvalidBackend,
    RecompileError,
    TorchDynamoException,
    TorchRuntimeError,
    UncapturedHigherOrderOpError,
    Unsupported,
)

__all__ = [
    "FailOnRecompileLimitHit",
    "InvalidBackend",
    "RecompileError",
    "TorchDynamoException",
    "TorchRuntimeError",
    "UncapturedHigherOrderOpError",
    "Unsupported",
]
