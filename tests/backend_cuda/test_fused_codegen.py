"""The fused-kernel generator of the GPU backends (ember_backend_gpu/fused), without a device.

The CUDA text of every kind of description (an elementwise chain with broadcast inputs, a
where with a -inf scalar, each row op, several stored outputs, a multi-tensor update) compiles
with nvcc for sm_80 and sm_90, as test_cuda_compile.py checks the codegen modules (PTX, NVVM's
optimiser off; one cubin through the runtime's own ``compile_module``); the OpenCL text builds
on PoCL when it is there. What the generator does not know (an op outside the table, a row op
mid-chain, a description field it does not read) gives None, so the chain runs op by op.
"""

from __future__ import annotations

import dataclasses
import subprocess

import pytest
from ember_backend_cuda import compiler
from ember_backend_gpu.codegen.prelude import prelude
from ember_backend_gpu.fused import chain, multi
from ember_backend_gpu.fused.dialect import CUDA, HIP

from ember.compiler.fusion import FusedInput, FusedKernel, FusedStep

NVCC = compiler.find_nvcc()
needs_nvcc = pytest.mark.skipif(NVCC is None, reason="nvcc (the CUDA toolkit) is not installed")


def _input(shape, full, dtype="float64"):
    strides, step = [0] * len(full), 1
    lead = len(full) - len(shape)
    for i in range(len(shape) - 1, -1, -1):
        strides[lead + i] = step if shape[i] != 1 else 0
        step *= shape[i]
    return FusedInput(dtype, tuple(shape), tuple(strides))


def _chain(row=None, dtype="float64", shape=(4, 6, 8), **params):
    """x * w + b, gelu (tanh), where(x > 0, ., -inf), then ``row`` (an op over the last dim)."""
    inputs = (_input(shape, shape, dtype), _input(shape[-1:], shape, dtype),
              _input((1, shape[-1]), shape, dtype))  # fmt: skip
    steps = [
        FusedStep("mul", (("input", 0), ("input", 1)), dtype),
        FusedStep("add", (("step", 0), ("input", 2)), dtype),
        FusedStep("gelu", (("step", 1),), dtype, {"approximate": "tanh"}),
        FusedStep("gt", (("input", 0), ("scalar", 0)), "bool"),
        FusedStep("where", (("step", 3), ("step", 2), ("scalar", float("-inf"))), dtype),
    ]
    outputs = (1, 4)
    if row == "layer_norm":
        steps.append(FusedStep(row, (("step", 4), ("input", 1), ("scalar", None)), dtype, params))
        outputs = (1, 5)
    elif row is not None:
        steps.append(FusedStep(row, (("step", 4),), dtype, params))
        outputs = (1, 5)
    return FusedKernel("cuda", shape, dtype, inputs, tuple(steps), outputs)


def _multi(dtype="float32"):
    """An Adam-like update over three tensors: p, g, m per tensor, two 0-d numbers."""
    flat = (sum((3, 500, 7)),)
    per, number = FusedInput(dtype, flat, (1,)), FusedInput(dtype, (), (0,))
    steps = (
        FusedStep("mul", (("input", 2), ("input", 3)), dtype),
        FusedStep("add", (("step", 0), ("input", 1)), dtype),
        FusedStep("mul", (("step", 1), ("input", 4)), dtype),
        FusedStep("sub", (("input", 0), ("step", 2)), dtype),
    )
    return FusedKernel("cuda", flat, dtype, (per, per, per, number, number), steps, (3, 1),
                       segments=(3, 500, 7), writes=(0, 2))  # fmt: skip


def _row_steps(dtype="float64", shape=(4, 6, 8)):
    """A layer norm by hand with its backward's addcmul: two row means in the middle (the
    second reading the first), per-row steps on them (``rsqrt(var + eps)``, stored), then
    element steps reading them (feature ``row_steps``)."""
    inputs = (_input(shape, shape, dtype), _input(shape, shape, dtype),
              _input(shape[-1:], shape, dtype))  # fmt: skip
    steps = (
        FusedStep("mean", (("input", 0),), dtype, {"keepdim": True}, row=True),
        FusedStep("sub", (("input", 0), ("step", 0)), dtype),
        FusedStep("mul", (("step", 1), ("step", 1)), dtype),
        FusedStep("mean", (("step", 2),), dtype, {"keepdim": True}, row=True),
        FusedStep("add", (("step", 3), ("scalar", 1e-5)), dtype, row=True),
        FusedStep("rsqrt", (("step", 4),), dtype, row=True),
        FusedStep("addcmul", (("input", 1), ("step", 1), ("step", 5)), dtype, {"value": -0.25}),
        FusedStep("mul", (("step", 6), ("input", 2)), dtype),
        FusedStep("amax", (("step", 7),), dtype, {"keepdim": True}, row=True),
        FusedStep("sub", (("step", 7), ("step", 8)), dtype),
    )
    return FusedKernel("cuda", shape, dtype, inputs, steps, (5, 9), features=("row_steps",))


def _row_index(dtype="float64", shape=(6, 13)):
    """Cross-entropy's backward: full(0), scatter_add of one value per row at the row's
    index (int64, checked into the status word), then the log-softmax backward's row sum."""
    rows = (*shape[:-1], 1)
    inputs = (_input(rows, shape, "int64"), _input(rows, shape, dtype), _input(shape, shape, dtype))
    steps = (
        FusedStep("full", (), dtype, {"value": 0.0}),
        FusedStep("scatter_add", (("step", 0), ("input", 0), ("input", 1)), dtype),
        FusedStep("exp", (("input", 2),), dtype),
        FusedStep("sum", (("step", 1),), dtype, {"keepdim": True}, row=True),
        FusedStep("mul", (("step", 2), ("step", 3)), dtype),
        FusedStep("sub", (("step", 1), ("step", 4)), dtype),
    )
    features = ("row_index", "row_steps")
    return FusedKernel("cuda", shape, dtype, inputs, steps, (5,), features=features)


def _row_tail(dtype="float64", shape=(37, 13), stored=False):
    """Cross-entropy's forward: log_softmax, the target's mask, the gather at the masked
    target, the weighted negative, the two sums over every row and their quotient (feature
    ``row_tail``); ``stored``: the log-probabilities stored too (the backward saves them)."""
    rows = shape[:-1]
    inputs = (_input(shape, shape, dtype), FusedInput("int64", rows, (1, 0)))
    row = {"row": True}
    steps = (
        FusedStep("log_softmax", (("input", 0),), dtype),
        FusedStep("ne", (("input", 1), ("scalar", -100)), "bool", **row),
        FusedStep("bitwise_not", (("step", 1),), "bool", **row),
        FusedStep("where", (("step", 2), ("scalar", 0), ("input", 1)), "int64", **row),
        FusedStep("unsqueeze", (("step", 3),), "int64", **row),
        FusedStep("gather", (("step", 0), ("step", 4)), dtype, **row),
        FusedStep("squeeze", (("step", 5),), dtype, **row),
        FusedStep("_to_copy", (("step", 1),), dtype, **row),
        FusedStep("neg", (("step", 6),), dtype, **row),
        FusedStep("mul", (("step", 8), ("step", 7)), dtype, **row),
        FusedStep("sum", (("step", 9),), dtype, total=True),
        FusedStep("sum", (("step", 7),), dtype, total=True),
        FusedStep("div", (("step", 10), ("step", 11)), dtype, total=True),
    )
    outputs = (12, 0) if stored else (12,)
    return FusedKernel("cuda", shape, dtype, inputs, steps, outputs, features=("row_tail",))


ROWS = [
    ("sum", {"keepdim": False}),
    ("mean", {"keepdim": True}),
    ("amax", {"keepdim": True}),
    ("softmax", {}),
    ("log_softmax", {}),
    ("layer_norm", {"eps": 1e-5}),
]
DESCRIPTIONS = {
    "elementwise_f64": _chain(),
    "elementwise_f32": _chain(dtype="float32"),
    **{f"{row}_f32": _chain(row, "float32", **params) for row, params in ROWS},
    **{f"{row}_f64": _chain(row, **params) for row, params in ROWS},
    # rows of 300: a work-group per row, tree reductions in shared memory
    **{f"long_{row}_f64": _chain(row, shape=(4, 3, 300), **params) for row, params in ROWS},
    **{f"long_{row}_f32": _chain(row, "float32", (4, 3, 300), **params) for row, params in ROWS},
    # row statistics mid-chain and cross-entropy's one-hot gradient, short and long rows
    **{f"row_steps_{t}_{n}": _row_steps(t, (4, 3, n)) for t in ("float32", "float64")
       for n in (8, 300)},
    **{f"row_index_{t}_{n}": _row_index(t, (6, n)) for t in ("float32", "float64")
       for n in (13, 300)},
    **{f"row_tail_{t}_{n}_{k}": _row_tail(t, (37, n), k) for t in ("float32", "float64")
       for n in (13, 300) for k in (False, True)},
    # a size-generic program's chain: the sizes of the dynamic dims are kernel arguments
    "dynamic_batch_f64": dataclasses.replace(_chain(), dynamic=(0,)),
    "dynamic_two_dims_f32": dataclasses.replace(_chain(dtype="float32"), dynamic=(0, 1)),
}  # fmt: skip


def _source(d, dialect):
    return chain.source(d, dialect, chain.sizes_of(d))


def test_dynamic_sizes_are_arguments():
    """A description with dynamic dims: the element count and the outer size and strides are
    ``em_<i>`` arguments, the row length a constant, the same text for every batch; a row
    kernel with a dynamic dim is declined."""
    d = DESCRIPTIONS["dynamic_batch_f64"]
    text, _work, _lanes = _source(d, CUDA)
    assert "em_i64 em_0" in text and "i < em_0" in text
    other = dataclasses.replace(_chain(shape=(9, 6, 8)), dynamic=(0,))
    assert _source(other, CUDA)[0] == text
    assert chain.source(d, CUDA) is None  # no sizes: never a fixed-size kernel for it
    rows = dataclasses.replace(DESCRIPTIONS["softmax_f64"], dynamic=(0,))
    assert chain.sizes_of(rows) is None and chain.source(rows, CUDA) is None


def _texts(dialect) -> dict:
    found = {name: _source(d, dialect)[0] for name, d in DESCRIPTIONS.items()}
    found["multi_f32"] = multi.source(_multi(), dialect)
    found["multi_f64"] = multi.source(_multi("float64"), dialect)
    return found


@needs_nvcc
def test_generated_cuda_compiles_for_sm80_and_sm90(tmp_path):
    """Every text in one translation unit (each in its own namespace), as the codegen check."""
    parts = [prelude("cuda")]
    for k, (name, text) in enumerate(_texts(CUDA).items()):
        assert text is not None, name
        text = text.replace(" em_fused", f" em_fused_{k}_")  # kernels are extern "C"
        parts.append(f"// ---- {name}\nnamespace em_fused_{k} {{\n{text}}}\n")
    src = tmp_path / "fused.cu"
    src.write_text("".join(parts))
    gencode = [f"-gencode=arch=compute_{a},code=compute_{a}" for a in ("80", "90")]
    command = [NVCC, "-fatbin", *gencode, *compiler.OPTIONS, "-Xcicc", "-O0", "-o",
               str(tmp_path / "fused.fatbin"), str(src)]  # fmt: skip
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr[-4000:]


@needs_nvcc
def test_one_fused_module_builds_a_cubin(tmp_path, monkeypatch):
    """What the runtime does at the first replay: prelude + text through compile_module."""
    monkeypatch.setenv("EMBER_CUDA_CACHE", str(tmp_path))
    text, _work, _lanes = chain.source(DESCRIPTIONS["softmax_f32"], CUDA)
    binary = compiler.compile_module(prelude("cuda") + text, "sm_80")
    assert binary[:4] == b"\x7fELF"


def test_hip_text_is_the_cuda_text():
    """HIP compiles the CUDA dialect (hiprtc takes CUDA syntax; the prelude differs)."""
    assert _texts(HIP) == _texts(CUDA)


def test_opencl_text_builds_on_pocl():
    cl = pytest.importorskip("pyopencl")
    from ember_backend_gpu.fused.dialect import OPENCL_HEAD
    from ember_backend_intel import fused as xpu_fused
    from ember_backend_intel.programs import source

    try:
        device = cl.get_platforms()[0].get_devices()[0]
    except Exception as exc:  # no OpenCL runtime on this machine
        pytest.skip(f"no OpenCL device: {exc}")
    context = cl.Context([device])
    head = "#define EM_FP64 1\n" + source("ember.h") + source("ewmath.cl") + OPENCL_HEAD
    for d in DESCRIPTIONS.values():
        text, _work, _lanes = _source(d, xpu_fused.dialect())
        cl.Program(context, head + text).build()
    for d in (_multi(), _multi("float64")):
        cl.Program(context, head + multi.source(d, xpu_fused.dialect(), slots=3)).build()


def test_short_rows_take_a_work_item_long_ones_a_group():
    text, work, lanes = chain.source(DESCRIPTIONS["softmax_f64"], CUDA)
    assert (work, lanes) == (4 * 6, 0) and "__syncthreads" not in text
    text, work, lanes = chain.source(DESCRIPTIONS["long_softmax_f64"], CUDA)
    assert (work, lanes) == (4 * 3, 256) and "__syncthreads" in text
    assert chain.source(DESCRIPTIONS["elementwise_f64"], CUDA)[1:] == (4 * 6 * 8, 0)


def test_row_steps_run_one_pass_per_statistic():
    """Two means and a max, then the value that reads the max: four passes over the row, the
    per-row steps between them once per row; a long row folds each statistic across the
    work-group."""
    text, work, lanes = chain.source(DESCRIPTIONS["row_steps_float64_8"], CUDA)
    assert (work, lanes) == (12, 0) and text.count("for (em_i64 j = 0; j < 8; j++)") == 4
    assert "o0[r] = s5;" in text and "__syncthreads" not in text
    text, work, lanes = chain.source(DESCRIPTIONS["row_steps_float64_300"], CUDA)
    assert (work, lanes) == (12, 256) and text.count("em_red[lid] = a") == 3
    assert "if (lid == 0) o0[r] = s5;" in text
    text, _work, _lanes = chain.source(DESCRIPTIONS["row_index_float64_13"], CUDA)
    assert "int *em_st" in text and "EM_INDEX_OUT_OF_RANGE" in text and "j == v0" in text


def test_row_tail_sums_every_row_in_a_second_kernel():
    """The rows write their values into columns; one group adds them (no atomics): the same
    order at every call. Unstored log-probabilities go to scratch rows."""
    text, work, lanes = chain.source(DESCRIPTIONS["row_tail_float64_300_False"], CUDA)
    assert (work, lanes) == (37, 256) and "EM_KERNEL em_fused_total(" in text
    assert "em_y[r * 300 + g5]" in text and "atomic" not in text
    text, _work, _lanes = chain.source(DESCRIPTIONS["row_tail_float64_13_True"], CUDA)
    assert "double *em_y" not in text and "o1[r * 13 + g5]" in text
    d = DESCRIPTIONS["row_tail_float64_13_False"]
    assert chain.source(dataclasses.replace(d, features=()), CUDA) is None


def test_what_the_generator_does_not_know_gives_none():
    d = DESCRIPTIONS["elementwise_f64"]
    unknown_op = dataclasses.replace(
        d, steps=(*d.steps[:-1], FusedStep("cross_entropy", (("step", 3),), "float64"))
    )
    assert chain.source(unknown_op, CUDA) is None
    row = DESCRIPTIONS["softmax_f64"]
    mid_chain = dataclasses.replace(
        row, steps=(*row.steps, FusedStep("exp", (("step", 5),), "float64")), outputs=(6,)
    )
    assert chain.source(mid_chain, CUDA) is None  # a row op read by later steps
    assert chain.source(dataclasses.replace(d, dtype="float16"), CUDA) is None
    odd = dataclasses.replace(d.steps[2], params={"approximate": "tanh", "alpha": 2.0})
    steps = (*d.steps[:2], odd, *d.steps[3:])  # a parameter the generator does not bind
    assert chain.source(dataclasses.replace(d, steps=steps), CUDA) is None

    @dataclasses.dataclass(frozen=True)
    class Later(FusedKernel):  # a description grown by a later fusion feature
        reductions: tuple = ()

    fields = {f.name: getattr(d, f.name) for f in dataclasses.fields(d)}
    assert chain.source(Later(**fields), CUDA) is not None  # the new field unset: understood
    assert chain.source(Later(**fields, reductions=((2, "sum"),)), CUDA) is None
    later = dataclasses.replace(DESCRIPTIONS["row_steps_float64_8"], features=("row_later",))
    assert chain.source(later, CUDA) is None  # a feature it does not know: declined
