"""CUDA C++ kernel sources for ember, generated for a target: ``"cuda"`` or ``"hip"``.

No pycuda, no GPU: this package only produces text, so the ROCm plugin imports it as it is
(``from ember_backend_gpu.codegen import source, module_names``) and CI compiles every module
with nvcc and hiprtc. Kernels are grouped in *modules* (one compile unit each, compiled at first
use):

    >>> source("ew.add", "cuda")          # the complete text of one module
    >>> kernels("ew.add")                  # [(kernel name, pycuda argument format), ...]
    >>> module_of("em_ew_add_f32")         # "ew.add"

Each family file holds its module generators: ``elementwise`` (one description per op),
``copy`` (casts, fill, arange, linspace), ``reduce`` (reductions, index reductions, scans),
``index`` (gather/scatter...), ``sort``, ``random`` (Philox, docs/random.md), ``samplers``
(gamma, Poisson, binomial on Philox; also the OpenCL text of backend_intel), ``nn`` (softmax,
im2col/col2im, max pooling) and ``linalg`` (matrix products without cuBLAS).
"""

from __future__ import annotations

import functools

from . import amp, copy, elementwise, index, linalg, nn, random, reduce, samplers, sort
from .prelude import prelude

FAMILIES = (elementwise, copy, reduce, index, sort, random, samplers, nn, linalg, amp)


@functools.cache
def _generators() -> dict:
    found = {}
    for fam in FAMILIES:
        for name, make in fam.modules().items():
            if name in found:
                raise RuntimeError(f"kernel module {name!r} defined twice")
            found[name] = make
    return found


@functools.cache
def _module(name: str) -> tuple[str, tuple]:
    try:
        make = _generators()[name]
    except KeyError:
        raise KeyError(f"no kernel module {name!r}") from None
    body, kernels = make()
    return body, tuple(kernels)


def module_names() -> list[str]:
    """Every kernel module, in a stable order."""
    return sorted(_generators())


def source(name: str, target: str = "cuda") -> str:
    """The complete source of one kernel module for ``target``."""
    return prelude(target) + _module(name)[0]


def body(name: str) -> str:
    """A module's own text, without the prelude (an emulator supplies its own target lines)."""
    return _module(name)[0]


def kernels(name: str) -> tuple:
    """``((kernel name, pycuda argument format), ...)`` of one module."""
    return _module(name)[1]


@functools.cache
def _index() -> dict:
    found = {}
    for module in module_names():
        for kernel, fmt in kernels(module):
            if kernel in found:
                raise RuntimeError(f"kernel {kernel!r} in modules {found[kernel][0]} and {module}")
            found[kernel] = (module, fmt)
    return found


def module_of(kernel: str) -> str:
    return _index()[kernel][0]


def arg_format(kernel: str) -> str:
    return _index()[kernel][1]


def families() -> dict[str, list[str]]:
    """``{family: [module names]}``: modules grouped by their name's prefix ("ew", "reduce"...)."""
    found: dict[str, list[str]] = {}
    for name in module_names():
        found.setdefault(name.split(".")[0], []).append(name)
    return found


def family_source(names: list[str], target: str = "cuda") -> str:
    """One translation unit holding several modules (each in its own namespace, one prelude):
    the compile matrices in CI build a family at once instead of module by module."""
    parts = [prelude(target)]
    for k, name in enumerate(names):
        parts.append(f"// ---- module {name}\nnamespace em_module_{k} {{\n")
        parts.append(body(name))
        parts.append(f"\n}}  // namespace em_module_{k}\n")
    return "".join(parts)


def all_sources(target: str = "cuda") -> dict[str, str]:
    """``{module name: complete source}`` for every module."""
    return {name: source(name, target) for name in module_names()}
