"""PyTorch's other top-level functions that are another spelling of what ember has: the
in-place ops as functions (``torch.relu_(x)`` is ``x.relu_()``), aten's ``*_copy`` forms of
views (a view's values in new memory), the deprecated names scripts still call
(``torch.row_stack``, ``torch.chain_matmul``, ``torch.get_autocast_cpu_dtype``), small tensor
predicates (``is_same_size``, ``is_signed``), ``vander``, the ``frobenius_norm``/
``nuclear_norm`` entry points and the ``sym_*`` functions on Python numbers. ``FUNCTIONS``
and ``METHODS`` say where each goes; ember/__init__.py binds them."""

from __future__ import annotations

import builtins
import functools
import math
import sys
import warnings

# in-place ops PyTorch exports as top-level functions: each is its Tensor method
INPLACE = (
    "abs_", "acos_", "acosh_", "arccos_", "arccosh_", "arcsin_", "arcsinh_", "arctan_",
    "arctanh_", "as_strided_", "asin_", "asinh_", "atan_", "atanh_", "addmv_", "ceil_",
    "clamp_", "clamp_max_", "clamp_min_", "clip_", "conj_physical_", "cos_", "cosh_",
    "deg2rad_", "detach_", "erf_", "erfc_", "exp2_", "exp_", "expm1_", "fill_", "fix_",
    "floor_", "frac_", "gcd_", "i0_", "index_put_", "lcm_", "ldexp_", "log10_", "log1p_",
    "log2_", "log_", "logit_", "nan_to_num_", "neg_", "negative_", "rad2deg_", "reciprocal_",
    "relu_", "round_", "rsqrt_", "sigmoid_", "sin_", "sinc_", "sinh_", "sqrt_", "square_",
    "tan_", "tanh_", "trunc_", "xlogy_",
)  # fmt: skip
# in-place spellings of ALIASES (_frontends.py) that Tensor lacks: alias -> method
INPLACE_ALIASES = {
    "arccos_": "acos_", "arccosh_": "acosh_", "arcsin_": "asin_", "arcsinh_": "asinh_",
    "arctan_": "atan_", "arctanh_": "atanh_", "fix_": "trunc_", "negative_": "neg_",
    "absolute_": "abs_", "arctan2_": "atan2_", "divide_": "div_", "multiply_": "mul_",
    "subtract_": "sub_", "greater_": "gt_", "greater_equal_": "ge_", "less_": "lt_",
    "less_equal_": "le_", "not_equal_": "ne_",
}  # fmt: skip
# aten's copy forms of views: name -> the view function they copy
COPIES = {
    "select_copy": "select", "slice_copy": "_slice", "split_copy": "split",
    "split_with_sizes_copy": "split_with_sizes", "unsafe_split_with_sizes": "split_with_sizes",
    "view_as_real_copy": "view_as_real", "view_as_complex_copy": "view_as_complex",
    "detach_copy": "detach",
}  # fmt: skip


def _ember():
    return sys.modules["ember"]


def _method_call(name: str):
    def call(input, *args, **kwargs):
        return getattr(input, name)(*args, **kwargs)

    call.__name__ = call.__qualname__ = name
    call.__doc__ = f"``torch.{name}(input, ...)``: ``input.{name}(...)``."
    return call


def _slice(input, dim=0, start=None, end=None, step=1):
    index = [builtins.slice(None)] * input.ndim
    index[dim] = builtins.slice(start, end, step)
    return input[tuple(index)]


def _copy_of(name: str, view: str):
    def call(*args, **kwargs):
        found = _slice if view == "_slice" else getattr(_ember(), view)
        result = found(*args, **kwargs)
        if isinstance(result, (tuple, list)):
            return type(result)(t.clone() for t in result)
        return result.clone()

    call.__name__ = call.__qualname__ = name
    call.__doc__ = f"``torch.{name}``: the values of ``{view.lstrip('_')}`` in new memory."
    return call


def is_same_size(input, other) -> bool:
    return tuple(input.shape) == tuple(other.shape)


def is_signed(input) -> bool:
    """Whether the dtype holds negative numbers (floating, complex and signed integers)."""
    ember = _ember()
    return input.dtype not in (ember.bool, ember.uint8, ember.uint16, ember.uint32, ember.uint64)


def vander(x, N=None, increasing=False):  # noqa: N803 - PyTorch's keyword
    """Columns ``x ** (N-1) ... x ** 0`` (``increasing``: the other way), as ``torch.vander``."""
    if x.ndim != 1:
        raise RuntimeError("x must be a one-dimensional tensor.")
    ember = _ember()
    n = x.shape[0] if N is None else N
    if n < 0:
        raise RuntimeError("N must be non-negative.")
    powers = ember.arange(n, device=x.device)
    if not increasing:
        powers = powers.flip(0)
    return x.unsqueeze(-1) ** powers


def chain_matmul(*matrices, out=None):
    """The product of 2-D ``matrices`` (PyTorch's deprecated ``chain_matmul``, with its
    warning), composed from ``matmul``, so it runs on every device and differentiates."""
    warnings.warn(
        "ember.chain_matmul is deprecated and will be removed in a future PyTorch release. Use "
        "ember.linalg.multi_dot instead, which accepts a list of two or more tensors rather "
        "than multiple parameters.",
        UserWarning,
        stacklevel=2,
    )
    if not matrices:
        raise RuntimeError("chain_matmul(): Expected one or more matrices")
    for m in matrices:
        if m.dim() != 2:
            raise RuntimeError(f"Tensor dimension is {m.dim()}, expected 2 instead.")
    ember = _ember()
    result = matrices[0].clone() if len(matrices) == 1 else functools.reduce(ember.matmul, matrices)
    if out is not None:
        out.copy_(result)
        return out
    return result


def _left_for_jit(name: str, replacement: str) -> None:
    warnings.warn(
        f"at::{name} is deprecated and it is just left for JIT compatibility. It will be "
        f"removed in a future PyTorch release. Please use `{replacement}` instead",
        UserWarning,
        stacklevel=3,
    )


def frobenius_norm(input, dim, keepdim=False, *, out=None):
    _left_for_jit("frobenius_norm", "linalg.vector_norm(A, 2., dim, keepdim)")
    return _ember().linalg.vector_norm(input, 2, dim, keepdim, out=out)


def nuclear_norm(input, dim=None, keepdim=False, *, out=None):
    """``nuclear_norm(input, keepdim=False)`` or ``nuclear_norm(input, dim, keepdim=False)``."""
    _left_for_jit("nuclear_norm", "linalg.matrix_norm(A, 'nuc', dim, keepdim)")
    if isinstance(dim, bool):
        dim, keepdim = None, dim
    dims = (-2, -1) if dim is None else tuple(dim)
    return _ember().linalg.matrix_norm(input, "nuc", dims, keepdim, out=out)


def get_autocast_cpu_dtype():
    return _ember().get_autocast_dtype("cpu")


def get_autocast_gpu_dtype():
    return _ember().get_autocast_dtype("cuda")


def set_autocast_cpu_dtype(dtype):
    _ember().set_autocast_dtype("cpu", dtype)


def set_autocast_gpu_dtype(dtype):
    _ember().set_autocast_dtype("cuda", dtype)


def is_autocast_cpu_enabled() -> bool:
    return _ember().is_autocast_enabled("cpu")


def set_autocast_cpu_enabled(enabled: bool) -> None:
    _ember().set_autocast_enabled("cpu", enabled)


def is_anomaly_enabled() -> bool:
    return _ember().autograd.is_anomaly_enabled()


def sym_int(a):
    return int(a)


def sym_float(a):
    return float(a)


def sym_max(a, b):
    """``max`` that, as PyTorch's, gives a float when either argument is one."""
    found = builtins.max(a, b)
    return float(found) if isinstance(a, float) or isinstance(b, float) else found


def sym_min(a, b):
    """``min`` that, as PyTorch's, gives a float when either argument is one."""
    found = builtins.min(a, b)
    return float(found) if isinstance(a, float) or isinstance(b, float) else found


def sym_not(a):
    return not a


def sym_ite(b, t, f):
    return t if b else f


def sym_sqrt(a):
    return math.sqrt(a)


def sym_sum(*args):
    """``sum``; takes ``sym_sum([a, b, c])`` and ``sym_sum(a, b, c)``, as PyTorch's."""
    if len(args) == 1 and isinstance(args[0], (list, tuple)):
        args = args[0]
    return builtins.sum(args)


def fork(func, *args, **kwargs):
    return _ember().jit.fork(func, *args, **kwargs)


def wait(future):
    return _ember().jit.wait(future)


def to_dlpack(tensor):
    from .utils.dlpack import to_dlpack as convert

    return convert(tensor)


def adjoint(input):
    """The conjugate transpose of the last two dims, a view (``Tensor.mH``)."""
    return input.mH


def convolution(input, weight, bias, stride, padding, dilation, transposed, output_padding,
                groups):  # fmt: skip
    """aten's one convolution entry: ``conv{1,2,3}d`` or ``conv_transpose{1,2,3}d`` by the
    weight's rank and ``transposed``."""
    functional = _ember().nn.functional
    dims = weight.ndim - 2
    if transposed:
        return getattr(functional, f"conv_transpose{dims}d")(
            input, weight, bias, stride, padding, output_padding, groups, dilation
        )
    return getattr(functional, f"conv{dims}d")(
        input, weight, bias, stride, padding, dilation, groups
    )


def _inplace_dropout(name: str):
    def call(input, p, train):
        if not train:
            return input
        return input.copy_(getattr(_ember(), name)(input, p, train))

    call.__name__ = call.__qualname__ = f"{name}_"
    call.__doc__ = f"``torch.{name}_``: ``torch.{name}`` written into the input."
    return call


def embedding_renorm_(weight, indices, max_norm, norm_type):
    """Rows of ``weight`` that ``indices`` name, scaled in place to norm at most ``max_norm``
    (``nn.functional.embedding``'s ``max_norm``), as aten's."""
    ember = _ember()
    with ember.no_grad():
        rows = ember.unique(indices.reshape(-1))
        norms = ember.linalg.vector_norm(weight[rows], norm_type, dim=1, keepdim=True)
        scale = ember.where(norms > max_norm, max_norm / (norms + 1e-7), ember.ones_like(norms))
        weight[rows] = weight[rows] * scale
    return weight


def norm_except_dim(v, pow=2, dim=0):
    """The ``pow``-norm over every dim but ``dim``, kept as size-1 dims (``weight_norm``'s);
    ``dim=-1``: over all."""
    if dim == -1:
        return _ember().linalg.vector_norm(v, pow)
    others = [d for d in range(v.ndim) if d != dim]
    return _ember().linalg.vector_norm(v, pow, dim=others, keepdim=True)


DROPOUTS = ("dropout", "alpha_dropout", "feature_dropout", "feature_alpha_dropout")
FUNCTIONS = {
    **{name: _method_call(name) for name in INPLACE},
    **{name: _copy_of(name, view) for name, view in COPIES.items()},
    "is_same_size": is_same_size,
    "is_signed": is_signed,
    "get_device": _method_call("get_device"),
    "row_stack": lambda tensors, *, out=None: _ember().vstack(tensors, out=out),
    "vander": vander,
    "chain_matmul": chain_matmul,
    "frobenius_norm": frobenius_norm,
    "nuclear_norm": nuclear_norm,
    "get_autocast_cpu_dtype": get_autocast_cpu_dtype,
    "get_autocast_gpu_dtype": get_autocast_gpu_dtype,
    "set_autocast_cpu_dtype": set_autocast_cpu_dtype,
    "set_autocast_gpu_dtype": set_autocast_gpu_dtype,
    "is_autocast_cpu_enabled": is_autocast_cpu_enabled,
    "set_autocast_cpu_enabled": set_autocast_cpu_enabled,
    "is_anomaly_enabled": is_anomaly_enabled,
    "sym_int": sym_int,
    "sym_float": sym_float,
    "sym_max": sym_max,
    "sym_min": sym_min,
    "sym_not": sym_not,
    "sym_ite": sym_ite,
    "sym_sqrt": sym_sqrt,
    "sym_sum": sym_sum,
    "fork": fork,
    "wait": wait,
    "to_dlpack": to_dlpack,
    "adjoint": adjoint,
    "ger": lambda input, vec2, *, out=None: _ember().outer(input, vec2, out=out),
    "convolution": convolution,
    **{f"{name}_": _inplace_dropout(name) for name in DROPOUTS},
    "embedding_renorm_": embedding_renorm_,
    "native_channel_shuffle": lambda input, groups: _ember().channel_shuffle(input, groups),
    "norm_except_dim": norm_except_dim,
}
METHODS = {"is_signed": is_signed, "adjoint": adjoint}


def bind_inplace_aliases(tensor_type) -> None:
    """The in-place alias methods (``x.fix_()``, ``x.arccos_()``) where Tensor lacks them."""
    for alias, target in INPLACE_ALIASES.items():
        if not hasattr(tensor_type, alias):
            setattr(tensor_type, alias, getattr(tensor_type, target))
