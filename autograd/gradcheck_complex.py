"""gradcheck for complex inputs and outputs: the function seen through real views.

A complex input ``z`` becomes the real tensor ``view_as_real(z)`` (``[..., 2]``) that the wrapped
function turns back into ``z`` with ``view_as_complex``; a complex output becomes its real view.
The real Jacobian of that map is what central differences measure, and autograd's gradient
reaches the real view through view_as_complex's backward only if the complex formulas follow
PyTorch's convention (conjugate Wirtinger derivatives): so checking the real map checks them.
"""

from __future__ import annotations

from ember._tensor import Tensor


def _is_complex(x) -> bool:
    return isinstance(x, Tensor) and x.dtype.is_complex


def as_real_problem(func, inputs: tuple):
    """``(func, inputs)`` with complex tensors replaced by real views; unchanged when none."""
    import ember

    if not any(_is_complex(x) for x in inputs) and not any(
        _is_complex(o) for o in _results(func(*inputs))
    ):
        return func, inputs
    real_inputs = tuple(
        ember.view_as_real(x.detach().resolve_conj()).clone().requires_grad_(x.requires_grad)
        if _is_complex(x)
        else x
        for x in inputs
    )
    was_complex = tuple(_is_complex(x) for x in inputs)

    def real_func(*args):
        args = tuple(ember.view_as_complex(a) if c else a for a, c in zip(args, was_complex))
        outs = tuple(
            ember.view_as_real(o.resolve_conj()) if _is_complex(o) else o
            for o in _results(func(*args))
        )
        return outs[0] if len(outs) == 1 else outs

    return real_func, real_inputs


def _results(out) -> tuple:
    return tuple(out) if isinstance(out, (tuple, list)) else (out,)
