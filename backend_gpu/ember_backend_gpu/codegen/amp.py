"""GradScaler's kernels: the non-finite check and unscale over a list of gradients, and the
scale update. One module, ``amp``.

The unscale takes up to AMP_LIST gradients of one dtype per launch, their addresses and sizes
passed by value in the kernel's arguments (PyTorch's multi_tensor_apply does the same): block
row y walks gradient y with a grid stride. Values are multiplied in the compute type (float for
float16/bfloat16, double for float64) and rounded back once; inv_scale 1 leaves them as they
are; any inf or NaN sets found_inf to 1 (racing threads all store the same 1).
"""

from __future__ import annotations

from .dtypes import family
from .prelude import traits

AMP_LIST = 32  # gradients per launch
UNSCALE_ARGS = f"{AMP_LIST}P{AMP_LIST}qqPP"  # all 8-byte: no padding to agree on
UPDATE_ARGS = "PPPddq"

COMMON = rf"""
struct em_amp_list {{
    char *ptr[{AMP_LIST}];
    em_i64 n[{AMP_LIST}];
    em_i64 count;
}};

template <class T>
EM_DEV void em_amp_unscale(const em_amp_list &l, float *found, const float *inv) {{
    typedef typename T::ct ct;
    typedef typename T::st st;
    const ct scale = (ct)*inv;
    for (em_i64 t = blockIdx.y; t < l.count; t += gridDim.y) {{
        st *x = (st *)l.ptr[t];
        int bad = 0;
        for (em_i64 i = (em_i64)blockIdx.x * blockDim.x + threadIdx.x; i < l.n[t];
             i += (em_i64)gridDim.x * blockDim.x) {{
            const ct v = T::ld(x[i]);
            bad |= !isfinite(v);
            if (scale != (ct)1) x[i] = T::sv(v * scale);
        }}
        if (bad) *found = 1.0f;
    }}
}}

EM_KERNEL em_amp_update_scale(float *scale, int *tracker, const float *found, double growth,
                              double backoff, em_i64 interval) {{
    if (blockIdx.x != 0 || threadIdx.x != 0) return;
    if (*found != 0.0f) {{
        *scale = (float)(*scale * backoff);
        *tracker = 0;
        return;
    }}
    const int successful = *tracker + 1;
    if (successful == interval) {{
        const float grown = (float)(*scale * growth);
        if (isfinite(grown)) *scale = grown; /* never past float32's range to inf */
        *tracker = 0;
    }} else {{
        *tracker = successful;
    }}
}}
"""


def _module() -> tuple[str, list]:
    parts, kernels = [COMMON], [("em_amp_update_scale", UPDATE_ARGS)]
    for d in family("FLOAT"):
        parts.append(
            f"EM_KERNEL em_amp_unscale_{d.token}(em_amp_list l, float *found, const float *inv) "
            f"{{\n    em_amp_unscale<{traits(d.token)}>(l, found, inv);\n}}\n"
        )
        kernels.append((f"em_amp_unscale_{d.token}", UNSCALE_ARGS))
    return "".join(parts), kernels


def modules() -> dict:
    return {"amp": _module}
