"""``ember.backends``: per-device-type switches, as ``torch.backends.cuda.matmul.allow_tf32``.

Each device type has one flat dict of flags (``FLAGS["cuda"]["matmul.allow_tf32"]``); the
attribute paths below read and write it, and the registry hands the same dict to the backend's
runtime as ``runtime.flags`` when it loads, so a change applies to the next kernel call. A new
switch is one entry in a ``Switches`` table.
"""

from __future__ import annotations

import sys

FLAGS: dict[str, dict] = {}


def flags(device_type: str) -> dict:
    """The live flag dict of a device type (what its runtime reads)."""
    return FLAGS.setdefault(device_type, {})


class Switches:
    """Attributes backed by ``flags(device_type)[prefix + name]``, with defaults."""

    def __init__(self, device_type: str, prefix: str, defaults: dict):
        object.__setattr__(self, "_where", (device_type, prefix, dict(defaults)))

    def __getattr__(self, name: str):
        device_type, prefix, defaults = self._where
        if name not in defaults:
            raise AttributeError(f"ember.backends has no switch {prefix}{name} ({device_type})")
        return flags(device_type).get(prefix + name, defaults[name])

    def __setattr__(self, name: str, value) -> None:
        device_type, prefix, defaults = self._where
        if name not in defaults:
            raise AttributeError(f"ember.backends has no switch {prefix}{name} ({device_type})")
        flags(device_type)[prefix + name] = type(defaults[name])(value)

    def __repr__(self) -> str:
        device_type, prefix, defaults = self._where
        values = ", ".join(f"{n}={getattr(self, n)!r}" for n in defaults)
        return f"<ember.backends switches {device_type}:{prefix} {values}>"


class _Cuda:
    # The cuBLAS runtime reads allow_tf32; the reduced-precision-reduction switches are accepted
    # so PyTorch scripts run, and are no-ops (ember's half/bfloat16 GEMMs accumulate in float32).
    matmul = Switches("cuda", "matmul.", {
        "allow_tf32": False,
        "allow_bf16_reduced_precision_reduction": True,
        "allow_fp16_reduced_precision_reduction": True,
    })  # fmt: skip

    # scaled_dot_product_attention's kernel choice (PyTorch keeps it here for every device):
    # ember's CPU attention runs PyTorch's flash or math path by these, which also decide the
    # graph's node and "No available kernel"; the GPU backends have one attention kernel.
    sdp = Switches("cuda", "sdp.", {"flash": True, "math": True, "mem_efficient": True,
                                    "cudnn": True})  # fmt: skip

    @staticmethod
    def is_built() -> bool:
        """Whether an ember CUDA backend is installed (``torch.backends.cuda.is_built``)."""
        import importlib.util

        return importlib.util.find_spec("ember_backend_cuda") is not None


def _sdp_accessors(kernel: str):
    """``enable_<kernel>_sdp(enabled)`` and ``<kernel>_sdp_enabled()``, torch.backends.cuda's
    pair for one attention kernel, over its ``sdp`` switch."""

    def enable(self, enabled: bool) -> None:
        setattr(self.sdp, kernel, enabled)

    def enabled(self) -> bool:
        return getattr(self.sdp, kernel)

    return enable, enabled


for _kernel in ("flash", "math", "mem_efficient", "cudnn"):
    _enable, _enabled = _sdp_accessors(_kernel)
    setattr(_Cuda, f"enable_{_kernel}_sdp", _enable)
    setattr(_Cuda, f"{_kernel}_sdp_enabled", _enabled)


class _Unused(Switches):
    """A PyTorch backend library ember does not use: flags accepted, ``is_available()`` False."""

    def is_available(self) -> bool:
        return False

    def is_built(self) -> bool:
        return False

    def version(self):
        return None


class _OpenMP:
    @staticmethod
    def is_available() -> bool:
        """Whether the CPU kernels were compiled with OpenMP (they call into ``GOMP_``)."""
        return _cpu_kernels_use_openmp()


def _cpu_kernels_use_openmp() -> bool:
    import glob
    import importlib.util

    spec = importlib.util.find_spec("ember_backend_cpu")
    if spec is None or not spec.submodule_search_locations:
        return False
    for path in glob.glob(f"{spec.submodule_search_locations[0]}/*.so"):
        with open(path, "rb") as f:
            if b"GOMP_" in f.read():
                return True
    return False


class _Cpu:
    @staticmethod
    def get_cpu_capability() -> str:
        """The vector instruction set the CPU kernels run ("AVX512", "AVX2" or "DEFAULT"), as
        torch.backends.cpu names it: ember's kernels carry AVX2 and AVX-512 clones
        (``target_clones``, ember_cpu.h) and the loader picks by the same CPU features."""
        return _cpu_capability(_cpu_flags())


# the x86-64-v4 and v3 levels' features: what __builtin_cpu_supports checks for the clones
_AVX512 = {"avx512f", "avx512bw", "avx512cd", "avx512dq", "avx512vl"}
_AVX2 = {"avx", "avx2", "fma", "bmi1", "bmi2", "f16c", "movbe", "abm"}  # abm: LZCNT


def _cpu_flags() -> set:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("flags"):
                    return set(line.split(":", 1)[1].split())
    except OSError:
        pass
    return set()


def _cpu_capability(flags: set) -> str:
    if flags >= _AVX512:
        return "AVX512"
    return "AVX2" if flags >= _AVX2 else "DEFAULT"


class _XNNPACK:
    """torch.backends.xnnpack: whether the XNNPACK engine is on (never: ember has none); the
    flag is read-only, as PyTorch's."""

    @property
    def enabled(self) -> bool:
        return False

    @enabled.setter
    def enabled(self, value) -> None:
        raise RuntimeError("Assignment not supported")


cpu = _Cpu()
cuda = _Cuda()
# Accepted so that PyTorch scripts setting them run; no ember backend uses cuDNN, MKL or Metal
# (mps), and ember's oneDNN matmul does not read the mkldnn switches: setting them changes nothing.
cudnn = _Unused("cuda", "cudnn.", {"enabled": True, "benchmark": False,
                                    "deterministic": False, "allow_tf32": True})  # fmt: skip
mkldnn = _Unused("cpu", "mkldnn.", {"enabled": True, "deterministic": False})
mkl = _Unused("cpu", "mkl.", {})
mps = _Unused("mps", "mps.", {})
openmp = _OpenMP()
xnnpack = _XNNPACK()

# Programs reach these as modules (`import torch.backends.cudnn as cudnn`, `from
# torch.backends import cuda`): each switch object is also importable under its dotted name.
SUBMODULES = ("cpu", "cuda", "cudnn", "mkldnn", "mkl", "mps", "openmp", "xnnpack")
for _name in SUBMODULES:
    sys.modules[f"{__name__}.{_name}"] = globals()[_name]
