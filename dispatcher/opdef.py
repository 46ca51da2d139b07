"""The row type of the op table, and the vocabularies its columns use."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from enum import Enum

from ember import _dtype as dt


class Kind(Enum):
    """How the dispatcher prepares a call before the kernel (and how tests sample inputs)."""

    ELEMENTWISE = "elementwise"
    REDUCTION = "reduction"
    SCAN = "scan"
    VIEW = "view"
    MATMUL = "matmul"
    CONV = "conv"
    INDEX = "index"
    SORT = "sort"
    RANDOM = "random"
    FACTORY = "factory"
    COPY = "copy"
    SHAPE = "shape"  # cat, stack, flip, roll...: data movement without arithmetic
    NN = "nn"  # softmax, norms, pooling, losses
    LIBRARY = "library"  # third-party ops (ember.library): outputs come from their shape rule
    LINALG = "linalg"  # factorizations and solves (ember.linalg): LAPACK-style kernels
    FOREACH = "foreach"  # one call over a list of tensors (GradScaler's fused unscale)
    FFT = "fft"  # discrete Fourier transforms (complex tensors as their real view)


class Promotion(Enum):
    """PyTorch's ELEMENTWISE_TYPE_PROMOTION_KIND, plus the reduction cases."""

    DEFAULT = "default"  # compute and return the promoted dtype
    INT_TO_FLOAT = "int_to_float"  # like DEFAULT, but integers and bool become the default float
    ALWAYS_BOOL = "always_bool"  # compute in the promoted dtype, return bool
    # sum/prod/cumsum: bool and integers accumulate in int64; elementwise (square): bool only
    BOOL_TO_LONG = "bool_to_long"
    KEEP = "keep"  # no promotion: the input's dtype (views, data movement)
    LONG = "long"  # always int64 (argmax, nonzero)
    UINT64 = "uint64"  # always uint64 (hash_tensor's bit patterns)
    FLOAT_ONLY = "float_only"  # no promotion; floating inputs only (mean, softmax)


@dataclass(frozen=True)
class Out:
    """How an op's public function checks its ``out=`` tensors (PyTorch's rules vary by family).

    Attributes:
        dtype: ``"cast"``: the result's dtype must be castable to out's (TensorIterator ops:
            ``add(ints, ints, out=floats)`` is fine); ``"same"``: out's dtype must be the
            result's, for the elementwise ops PyTorch keeps in one dtype (neg, floor, where...);
            ``"exact"``: the same rule for the others (matmul, sort, gather...), each with
            PyTorch's wording; ``"from_out"``: out's dtype is what the op computes in, its
            ``dtype`` argument (sum, cumsum, the factories). Or a function of the call's
            arguments giving one of these, where PyTorch's overloads differ (clamp_min casts
            for a tensor bound, keeps the dtype for a number).
        overlap: which overlap of out with an input is refused: ``"partial"`` (out may be an
            input exactly, ``add(x, 1, out=x)``), ``"any"`` (index ops, cat), or None (PyTorch
            does not check).
        reads: where PyTorch's out= path writes from intermediates rather than the arguments
            (a composite), a function of the call's arguments giving, per output, the tensors
            that output is checked against (diff of order 2 reads a fresh difference, none of
            the arguments; unbind_copy copies each piece into its out); None: the arguments.
        message: PyTorch's own words for a ``"same"``/``"exact"`` refusal, where it has them
            (``{name}``, ``{got}``, ``{want}``: the function and the two dtypes' names).
    """

    dtype: str | Callable[..., str] = "cast"
    overlap: str | None = "partial"
    reads: Callable[..., tuple] | None = None
    message: str | None = None


OUT_ELEMENTWISE = Out("cast", "partial")
OUT_SAME_DTYPE = Out("same", "partial")
OUT_EXACT = Out("exact", None)
OUT_INDEX = Out("exact", "any")
OUT_FROM_OUT = Out("from_out", None)

# The out= rule of each kind's public functions; rows override it (``out=None``: no out=, as for
# relu and argsort). Views, copies and layouts never take out= in PyTorch.
OUT_BY_KIND = {
    Kind.ELEMENTWISE: OUT_ELEMENTWISE,
    Kind.REDUCTION: Out("cast", None),
    Kind.SCAN: Out("from_out", "partial"),
    Kind.MATMUL: OUT_EXACT,
    Kind.INDEX: OUT_INDEX,
    Kind.SORT: Out("exact", "partial"),
    Kind.FACTORY: OUT_FROM_OUT,
    Kind.LINALG: OUT_EXACT,
}
BY_KIND = "by kind"  # OpDef.out's default: OUT_BY_KIND's entry for the row's kind

DTYPES_ALL = frozenset(dt.ALL)
DTYPES_FLOAT = frozenset(dt.FLOATS)
DTYPES_INT = frozenset(dt.INTS)
DTYPES_INT_BOOL = frozenset(dt.INTS + (dt.bool_,))
DTYPES_NUMERIC = frozenset(dt.INTS + dt.FLOATS)

# Default comparison tolerances for tests, per dtype: (rtol, atol). Rows may override.
TOLERANCES = {
    dt.float16: (1e-3, 1e-3),
    dt.bfloat16: (1.6e-2, 1e-2),
    dt.float32: (1.3e-6, 1e-5),
    dt.float64: (1e-7, 1e-7),
}


@dataclass(frozen=True)
class OpDef:
    """One op: everything the dispatcher, the API generator, autograd and the tests need.

    Attributes:
        schema: PyTorch-style schema string; its name is the op's name.
        kind: how calls are prepared (see Kind).
        promotion: type-promotion rule (see Promotion).
        reference: numpy implementation taking the same arguments (arrays for tensors).
        dtypes: dtypes the op is defined for (a backend may implement fewer).
        differentiable: False for ops with no gradient (comparisons, argmax, integer results).
        decomposition: for composites, a function over other ember ops (None: a primitive).
        runner: the dispatcher function that prepares the call and invokes the kernel; defaults
            to the kind's.
        core: implemented by the core for every device, over other ops' kernels (views, cat,
            flip...): no kernel of its own, and so never missing on a backend.
        kernel_args: the kernel's calling convention, for plugin authors (docs/plugins.md).
        shape: shape rule ``(*args) -> shape`` when the kind's default does not apply.
        method: also bound as a Tensor method.
        inplace: also defines ``name_`` (elementwise ops).
        function: also exposed as ``ember.<name>`` (False for Tensor-only methods).
        frontend: the public ``ember.<name>`` (and method) is hand-written in
            ``ember/_frontends.py`` (argument overloads); the op stays callable as ``ember.ops``.
        samples: name of the sample-input generator the generated tests use.
        tolerances: per-dtype (rtol, atol) overrides for tests.
        domain: (low, high) for sampled inputs of partial functions (log, sqrt, acos).
        attrs: static data for the runner (elementwise arity, whether a reduction has an
            identity...), copied to ``Op.info``.
        out: the ``out=`` rule of the public function (see Out); None when PyTorch's function
            takes no out=. Defaults to the kind's (OUT_BY_KIND).
        varargs: the ``int[]`` argument that Tensor methods also accept unpacked
            (``x.view(2, 3)`` as well as ``x.view((2, 3))``).
        notes: anything a reader of the table should know.
    """

    schema: str
    kind: Kind
    reference: Callable | None
    promotion: Promotion = Promotion.DEFAULT
    dtypes: frozenset = DTYPES_ALL
    differentiable: bool = True
    decomposition: Callable | None = None
    runner: Callable | None = None
    core: bool = False
    kernel_args: str = ""
    shape: Callable | None = None
    method: bool = True
    inplace: bool = False
    function: bool = True
    frontend: bool = False
    samples: str | None = None
    tolerances: dict = field(default_factory=dict)
    domain: tuple | None = None
    attrs: dict = field(default_factory=dict)
    varargs: str | None = None
    out: Out | str | None = BY_KIND
    notes: str = ""

    @property
    def is_composite(self) -> bool:
        return self.decomposition is not None

    @property
    def out_rule(self) -> Out | None:
        """The row's out= rule, the kind's default resolved."""
        return OUT_BY_KIND.get(self.kind) if self.out == BY_KIND else self.out

    def tolerance(self, d) -> tuple[float, float]:
        return self.tolerances.get(d, TOLERANCES.get(d, (0.0, 0.0)))
