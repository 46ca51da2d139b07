"""An ember op library: ``ember.ops.example.fused_bias_gelu(input, bias, approximate="none")``.

Found through the entry point ``example`` in the group ``ember.ops`` (see pyproject.toml): ember
calls ``ember_op_library()`` the first time a script touches ``ember.ops.example``, so nobody
imports this package. Like a backend plugin it never imports ember; the kernel is compiled at
``pip install`` time (cffi, out-of-line API mode) and loaded on its first call.
"""

from __future__ import annotations

import pluggy

from . import fused_bias_gelu as fbg

__version__ = "0.1.0"
hookimpl = pluggy.HookimplMarker("ember")


@hookimpl
def ember_op_library():
    return [
        {
            "schema": "example::fused_bias_gelu(Tensor input, Tensor bias, *, "
            "str approximate='none') -> Tensor",
            "dtypes": ["float16", "bfloat16", "float32", "float64"],
            # C for float32 and float64; other dtypes and devices without a kernel decompose.
            "kernels": {"cpu": {"float32": fbg.kernel_f32, "float64": fbg.kernel_f64}},
            "shape": fbg.shape,
            "backward": fbg.backward,
            "setup_context": fbg.setup_context,
            "decomposition": fbg.decomposition,
            "reference": fbg.reference,
        }
    ]
