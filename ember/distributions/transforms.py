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
from ._transforms_matrix import CorrCholeskyTransform, PositiveDefiniteTransform
from ._transforms_simplex import LowerCholeskyTransform, SoftmaxTransform, StickBreakingTransform
from ._transforms_structured import (
    CatTransform,
    CumulativeDistributionTransform,
    ReshapeTransform,
    StackTransform,
)

__all__ = [
    "AbsTransform",
    "AffineTransform",
    "CatTransform",
    "ComposeTransform",
    "CorrCholeskyTransform",
    "CumulativeDistributionTransform",
    "ExpTransform",
    "IndependentTransform",
    "LowerCholeskyTransform",
    "PositiveDefiniteTransform",
    "PowerTransform",
    "ReshapeTransform",
    "SigmoidTransform",
    "SoftmaxTransform",
    "SoftplusTransform",
    "StackTransform",
    "StickBreakingTransform",
    "TanhTransform",
    "Transform",
    "identity_transform",
]
