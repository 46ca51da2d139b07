"""Transforms between constrained and unconstrained spaces, as torch.distributions.transforms."""

from ._transform import ComposeTransform, IndependentTransform, Transform, identity_transform
from ._transforms_elementwise import (
    AbsTransform,
    AffineTransform,
    ExpTransform,
    PowerTransform,
    SigmoidTransform,
    SoftplusTransform,
    TanhTransform,
)
from ._transforms_simplex import LowerCholeskyTransform, SoftmaxTransform, StickBreakingTransform

__all__ = [
    "AbsTransform",
    "AffineTransform",
    "ComposeTransform",
    "ExpTransform",
    "IndependentTransform",
    "LowerCholeskyTransform",
    "PowerTransform",
    "SigmoidTransform",
    "SoftmaxTransform",
    "SoftplusTransform",
    "StickBreakingTransform",
    "TanhTransform",
    "Transform",
    "identity_transform",
]
