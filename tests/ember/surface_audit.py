"""The names of issue 15's torch namespaces that ember lacks: every public name of each
namespace of the installed torch (its ``__all__``, else what torch defines there) against the
matching ``ember`` namespace. ``python -m tests.ember.surface_audit`` prints the report;
test_surface_audit.py fails on a missing name LEFT_OUT does not explain. ``torch.nn`` and
``torch.nn.functional`` are audited by tests/nn/coverage.py."""

from __future__ import annotations

import importlib
import types

NAMESPACES = [
    "torch.func", "torch.autograd", "torch.autograd.forward_ad", "torch.autograd.graph",
    "torch.autograd.function", "torch.autograd.profiler", "torch.utils.checkpoint",
    "torch.nn.utils", "torch.nn.utils.parametrize", "torch.nn.utils.parametrizations",
    "torch.nn.utils.prune", "torch.nn.utils.rnn", "torch.nn.utils.stateless",
    "torch.nn.utils.fusion", "torch.optim", "torch.optim.lr_scheduler", "torch.optim.swa_utils",
    "torch.testing", "torch.backends", "torch.functional", "torch.hub", "torch.serialization",
    "torch.__future__", "torch.utils.tensorboard", "torch.utils.benchmark",
    "torch.utils.cpp_extension", "torch.profiler",
]  # fmt: skip

# Names the issue lists that no ``__all__`` holds: (torch namespace, name).
ISSUE_NAMES = [
    ("torch", "use_deterministic_algorithms"), ("torch", "set_float32_matmul_precision"),
    ("torch", "load"), ("torch.utils", "swap_tensors"), ("torch.autograd", "Variable"),
    ("torch.Tensor", "register_post_accumulate_grad_hook"), ("torch.nn.Module", "to_empty"),
    ("torch.nn.utils", "skip_init"), ("torch.hub", "load"), ("torch.utils.benchmark", "Timer"),
    ("torch.utils.cpp_extension", "load_inline"), ("torch.utils.cpp_extension", "load"),
    ("torch.testing", "make_tensor"), ("torch.testing", "assert_close"),
    ("torch.backends.cuda.matmul", "allow_tf32"), ("torch.backends.cudnn", "deterministic"),
]  # fmt: skip

_NO_CUDA = "ember's CUDA backend has no cuDNN/flash/cuBLASLt attention or FFT plan cache to steer"
_CPP = "no ATen C++ API or pybind11 to build against: load/load_inline compile C functions (cffi)"
_NVPROF = "nvprof/NVTX/ITT ranges need NVIDIA's or Intel's profiler runtimes"
_BENCH = "Compare/Fuzzer/Callgrind tooling; ember has Timer, Measurement and TaskSpec"
_ENDIAN = "ember's checkpoints are little-endian zip files; no byte-order or CRC switches"

# What ember leaves out, as data: "namespace.name" -> why.
LEFT_OUT = {
    "torch.func.rearrange": "einops-style rearrange inside vmap; not implemented (docs/func.md)",
    "torch.autograd.NestedIOFunction": "legacy nested-IO Function base, deprecated in torch",
    "torch.autograd.function.NestedIOFunction": "legacy nested-IO Function base",
    "torch.autograd.function.BackwardCFunction": "torch's C++ glue class behind Function nodes",
    "torch.autograd.function.FunctionMeta": "torch's metaclass; ember's Function needs none",
    "torch.autograd.function.InplaceFunction": "legacy Function base with an inplace flag",
    "torch.autograd.enforce_grad_layout_policy": "torch's gradient stride-layout policy switch",
    "torch.autograd.set_multithreading_enabled": "backward runs on the calling thread, no workers",
    "torch.autograd.graph.region_activation_memory_budget": "torch.compile memory budget region",
    "torch.autograd.graph.set_override_stale_capture_stream": "CUDA-graph capture streams",
    "torch.autograd.graph.set_warn_on_accumulate_grad_stream_mismatch": "CUDA stream checks",
    "torch.autograd.profiler.EnforceUnique": "torch-internal helper of the legacy profiler",
    "torch.autograd.profiler.FunctionEvent": "ember keeps per-key averages, not per-call events",
    "torch.autograd.profiler.KinetoStepTracker": "Kineto's global step counter (torch-internal)",
    "torch.autograd.profiler.MemRecordsAcc": "torch-internal helper of the legacy profiler",
    "torch.autograd.profiler.emit_itt": _NVPROF,
    "torch.autograd.profiler.emit_nvtx": _NVPROF,
    "torch.autograd.profiler.load_nvprof": _NVPROF,
    "torch.autograd.profiler.parse_nvprof_trace": _NVPROF,
    "torch.utils.checkpoint.GraphExecGroup": "torch 2.13's grouped backward graph execution",
    "torch.utils.checkpoint.SAC_IGNORED_OPS": "aten op set; ember's policies see ember.ops",
    "torch.testing.FileCheck": "TorchScript's C++ IR pattern checker",
    "torch.testing.assert_allclose": "deprecated in torch since 1.12 for assert_close",
    "torch.backends.cusparselt": "no cuSPARSELt in ember's CUDA backend",
    "torch.backends.kleidiai": "no KleidiAI (Arm) kernels",
    "torch.backends.mha": "no fused MultiheadAttention fast path to switch off",
    "torch.backends.miopen": "ember's ROCm backend does not use MIOpen",
    "torch.backends.nnpack": "no NNPACK",
    "torch.backends.opt_einsum": "einsum contracts in the given order (no opt_einsum planner)",
    "torch.backends.python_native": "torch's Python-native kernel override registry",
    "torch.backends.quantized": "no quantized engines (fbgemm/qnnpack)",
    "torch.serialization.LoadEndianness": _ENDIAN,
    "torch.serialization.get_default_load_endianness": _ENDIAN,
    "torch.serialization.set_default_load_endianness": _ENDIAN,
    "torch.serialization.get_crc32_options": _ENDIAN,
    "torch.serialization.set_crc32_options": _ENDIAN,
    "torch.serialization.get_default_mmap_options": "mmap=True maps copy-on-write, no other flag",
    "torch.serialization.set_default_mmap_options": "mmap=True maps copy-on-write, no other flag",
    "torch.serialization.SourceChangeWarning": "ember does not pickle module source code",
    "torch.serialization.StorageType": "torch's legacy typed-storage stand-in",
    "torch.serialization.check_module_version_greater_or_equal": "torch-internal helper",
    "torch.serialization.default_restore_location": "torch's location-tag registry",
    "torch.serialization.location_tag": "torch's location-tag registry",
    "torch.serialization.register_package": "torch's location-tag registry",
    "torch.serialization.normalize_storage_type": "torch's legacy typed storages",
    "torch.serialization.storage_to_tensor_type": "torch's legacy typed storages",
    "torch.serialization.validate_cuda_device": "torch-internal helper of map_location",
    "torch.serialization.validate_hpu_device": "no HPU devices",
    "torch.serialization.mkdtemp": "a tempfile helper torch re-exports by accident",
    "torch.utils.benchmark.CallgrindStats": _BENCH,
    "torch.utils.benchmark.Colorize": _BENCH,
    "torch.utils.benchmark.Compare": _BENCH,
    "torch.utils.benchmark.CopyIfCallgrind": _BENCH,
    "torch.utils.benchmark.FunctionCount": _BENCH,
    "torch.utils.benchmark.FunctionCounts": _BENCH,
    "torch.utils.benchmark.FuzzedParameter": _BENCH,
    "torch.utils.benchmark.FuzzedSparseTensor": _BENCH,
    "torch.utils.benchmark.FuzzedTensor": _BENCH,
    "torch.utils.benchmark.Fuzzer": _BENCH,
    "torch.utils.benchmark.Language": "Timer runs Python statements only (no C++ timing)",
    "torch.utils.benchmark.ParameterAlias": _BENCH,
    "torch.utils.benchmark.ordered_unique": "internal helper of torch's benchmark utils",
    "torch.utils.benchmark.select_unit": "internal helper of torch's benchmark utils",
    "torch.utils.benchmark.set_torch_threads": "internal helper of torch's benchmark utils",
    "torch.utils.benchmark.timer": "torch's submodule re-exported by name",
    "torch.utils.benchmark.trim_sigfig": "internal helper of torch's benchmark utils",
    "torch.utils.benchmark.unit_to_english": "internal helper of torch's benchmark utils",
    "torch.utils.benchmark.utils": "torch's submodule folder",
    "torch.utils.cpp_extension.BuildExtension": _CPP,
    "torch.utils.cpp_extension.CUDAExtension": _CPP,
    "torch.utils.cpp_extension.CppExtension": _CPP,
    "torch.utils.cpp_extension.SyclExtension": _CPP,
    "torch.utils.cpp_extension.check_compiler_is_gcc": _CPP,
    "torch.utils.cpp_extension.check_compiler_ok_for_platform": _CPP,
    "torch.utils.cpp_extension.get_compiler_abi_compatibility_and_version": _CPP,
    "torch.utils.cpp_extension.get_cxx_compiler": _CPP,
    "torch.utils.cpp_extension.include_paths": _CPP,
    "torch.utils.cpp_extension.library_paths": _CPP,
    "torch.utils.cpp_extension.is_ninja_available": "the compilers run as subprocesses, no ninja",
    "torch.utils.cpp_extension.verify_ninja_availability": "the compilers run as subprocesses",
    "torch.utils.cpp_extension.remove_extension_h_precompiler_headers": _CPP,
    "torch.profiler.DeviceType": "torch's C++ device-type enum (ember's devices are strings)",
    "torch.profiler.ExecutionTraceObserver": "PyTorch's execution-graph trace (Chakra format)",
}


def _ember_name(namespace: str) -> str:
    return "ember" + namespace[len("torch") :]


def _lookup(path: str):
    """The object at a dotted path (a module, then attributes), or None."""
    parts = path.split(".")
    for i in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:i]))
        except ImportError:
            continue
        for part in parts[i:]:
            obj = getattr(obj, part, None)
        return obj
    return None


def torch_names(namespace: str) -> list[str]:
    """A namespace's ``__all__``, else the public names torch defines there (its own
    submodules included, re-exported helpers from elsewhere not)."""
    module = importlib.import_module(namespace)
    if hasattr(module, "__all__"):
        return sorted(module.__all__)
    names = []
    for name in dir(module):
        value = getattr(module, name)
        if name.startswith("_"):
            continue
        if isinstance(value, types.ModuleType):
            if value.__name__ == f"{namespace}.{name}":
                names.append(name)
        elif str(getattr(value, "__module__", "")).startswith("torch"):
            names.append(name)
    return sorted(names)


def missing() -> dict[str, list[str]]:
    """namespace -> the torch names its ember namespace lacks."""
    out = {}
    for namespace in NAMESPACES:
        ours = _lookup(_ember_name(namespace))
        out[namespace] = [n for n in torch_names(namespace) if not hasattr(ours, n)]
    for namespace, name in ISSUE_NAMES:
        if not hasattr(_lookup(_ember_name(namespace)), name):
            out.setdefault(namespace, []).append(name)
    return out


if __name__ == "__main__":
    for namespace, names in missing().items():
        count = len(torch_names(namespace)) if namespace in NAMESPACES else 0
        print(f"{namespace}: {count - len(names)}/{count} names")
        for name in names:
            print(f"    {name}: {LEFT_OUT.get(f'{namespace}.{name}', 'NOT EXPLAINED')}")
