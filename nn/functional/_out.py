"""``out=`` of the functionals PyTorch binds from ATen (``F.gelu(x, out=y)``): the call as
usual, then dispatcher/out.py's checks and copy by the out rule of the op the functional
runs (PyTorch records no graph for them, so inputs that require grad are refused)."""

from __future__ import annotations

from ember.dispatcher import out as _out_arg
from ember.dispatcher.optable import OPS


def into(name: str, op_name: str, out, inputs: tuple, compute):
    """``compute()``, written into ``out`` when one is given, by ``OPS[op_name]``'s rule."""
    if out is None:
        return compute()
    return _out_arg.call(name, OPS[op_name], out, inputs, compute)
