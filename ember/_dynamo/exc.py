"""``ember._dynamo.exc``: the compiler's errors under PyTorch's module name."""

from ember.compiler.exc import (
    FailOnRecompileLimitHit,
    InvalidBackend,
    TorchDynamoException,
    TorchRuntimeError,
    UncapturedHigherOrderOpError,
    Unsupported,
)

__all__ = [
    "FailOnRecompileLimitHit",
    "InvalidBackend",
    "TorchDynamoException",
    "TorchRuntimeError",
    "UncapturedHigherOrderOpError",
    "Unsupported",
]
