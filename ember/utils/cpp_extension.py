"""Native code in a script, as ``torch.utils.cpp_extension``: ``load_inline`` and ``load``.

ember has no pybind11 and no ATen C++ API, so an extension is plain C or C++ with **C-level
functions over raw pointers and sizes**::

    EMBER_EXPORT void my_add(const float* a, const float* b, float* out, int64_t n) { ... }

``EMBER_EXPORT`` (from ``ember_extension.h``, which ``load_inline`` includes for you and ``load``
sources include themselves) is ``extern "C"`` in C++ and CUDA and empty in C: exported functions
have C linkage. The functions a module exposes are its ``EMBER_EXPORT`` ones, or those named by
``functions`` (C declarations, names, or a dict name -> declaration). cffi parses the declarations
and writes the glue; the system compiler (``$CC``/``$CXX``, ``nvcc`` for ``.cu``) builds one shared
library per (sources, flags), cached in the build directory, so an unchanged call reuses it.

The returned module's callables take ember tensors where the C function takes a pointer (a
contiguous tensor on the CPU whose dtype matches the pointer type is passed as its ``data_ptr()``;
``void*`` takes any dtype) and Python numbers where it takes a number; sizes are explicit
arguments. They are raw kernels: no autograd and no version-counter bump. To make one an op with
a gradient, register it through ``ember.library`` (see docs/plugins.md).
"""

from __future__ import annotations

import hashlib
import importlib.machinery
import importlib.util
import logging
import os
import re
import sys
import sysconfig
import types
from pathlib import Path

from . import _cpp_convert

__all__ = ["get_default_build_root", "load", "load_inline", "EMBER_EXTENSION_H"]

logger = logging.getLogger(__name__)

# Bumped when the glue or the header changes, so old builds are not reused.
_CONVENTION = "1"

EMBER_EXTENSION_H = """\
#ifndef EMBER_EXTENSION_H
#define EMBER_EXTENSION_H
/* ember's C-level extension convention: exported functions have C linkage. */
#ifdef __cplusplus
#include <cstddef>
#include <cstdint>
#define EMBER_EXPORT extern "C"
#else
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#define EMBER_EXPORT
#endif
#endif
"""

_EXPORT = re.compile(r"\bEMBER_EXPORT\b([^;{#]*?\))\s*[{;]", re.S)
_LOADED: dict = {}  # path of a built library -> its module (one import per process)


def get_default_build_root() -> str:
    """The folder under which extensions are built, one subfolder per extension name:
    ``$EMBER_EXTENSIONS_DIR`` when set, else ``~/.cache/ember_extensions`` (under
    ``$XDG_CACHE_HOME`` when set), as ``torch.utils.cpp_extension.get_default_build_root``."""
    root = os.environ.get("EMBER_EXTENSIONS_DIR")
    if not root:
        cache = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
        root = os.path.join(cache, "ember_extensions")
    return os.path.realpath(root)


def load_inline(
    name: str,
    cpp_sources,
    cuda_sources=None,
    sycl_sources=None,
    functions=None,
    extra_cflags=None,
    extra_cuda_cflags=None,
    extra_sycl_cflags=None,
    extra_ldflags=None,
    extra_include_paths=None,
    build_directory=None,
    verbose=False,
    with_cuda=None,
    with_sycl=None,
    is_python_module=True,
    with_pytorch_error_handling=True,
    keep_intermediates=True,
    use_pch=False,
    no_implicit_headers=False,
):
    """Build C++ (and CUDA) sources given as strings and load them, as PyTorch's ``load_inline``.

    Args:
        name: the extension's name, a Python identifier (its build folder is named after it).
        cpp_sources: a string or list of strings of C++, joined into ``main.cpp``, which starts
            with ``#include "ember_extension.h"`` unless ``no_implicit_headers``.
        cuda_sources: CUDA sources, joined into ``cuda.cu`` and built with ``nvcc``.
        functions: which functions the module exposes: None (every ``EMBER_EXPORT`` function),
            a declaration or name, a list of them, or a dict name -> declaration (or docstring).
        extra_cflags, extra_cuda_cflags, extra_ldflags, extra_include_paths: lists of flags
            and folders for the compiler, nvcc and the linker.
        build_directory: where to build; default ``get_default_build_root()/<name>``.
        verbose: log the build steps and print the compiler commands.
        with_cuda: link the CUDA runtime; default: whether there are CUDA sources.
        is_python_module: return the module (default); False loads the library into the
            process (``ctypes``, RTLD_GLOBAL) and returns None.
        keep_intermediates: keep the object files and generated glue.
        sycl_sources, extra_sycl_cflags, with_sycl, with_pytorch_error_handling, use_pch:
            PyTorch's; ember builds no SYCL and ignores the others.

    Returns:
        a module whose attributes are the exposed functions, plus ``ffi`` and ``lib`` (cffi's).

    Example:
        >>> src = 'EMBER_EXPORT void add(const float* a, const float* b, float* o, int64_t n)'
        >>> src += '{ for (int64_t i = 0; i < n; ++i) o[i] = a[i] + b[i]; }'
        >>> ext = load_inline("my_add", src)
        >>> ext.add(a, b, out, a.numel())
    """
    _refuse_sycl(name, sycl_sources, with_sycl)
    root = Path(build_directory or _build_directory(name, verbose))
    root.mkdir(parents=True, exist_ok=True)
    prelude = "" if no_implicit_headers else '#include "ember_extension.h"\n'
    sources = [_write_if_changed(root / "main.cpp", prelude + _joined(cpp_sources))]
    if cuda_sources:
        sources.append(_write_if_changed(root / "cuda.cu", prelude + _joined(cuda_sources)))
    return load(
        name,
        [str(s) for s in sources],
        extra_cflags=extra_cflags,
        extra_cuda_cflags=extra_cuda_cflags,
        extra_ldflags=extra_ldflags,
        extra_include_paths=extra_include_paths,
        build_directory=str(root),
        verbose=verbose,
        with_cuda=with_cuda,
        is_python_module=is_python_module,
        keep_intermediates=keep_intermediates,
        functions=functions,
    )


def load(
    name: str,
    sources,
    extra_cflags=None,
    extra_cuda_cflags=None,
    extra_sycl_cflags=None,
    extra_ldflags=None,
    extra_include_paths=None,
    build_directory=None,
    verbose=False,
    with_cuda=None,
    with_sycl=None,
    is_python_module=True,
    is_standalone=False,
    keep_intermediates=True,
    *,
    functions=None,
):
    """Build C/C++/CUDA source files and load them, as PyTorch's ``load``.

    Sources include ``ember_extension.h`` themselves (it is on the include path) and export
    their functions with ``EMBER_EXPORT``; ``functions`` (an ember addition) selects or declares
    them as in ``load_inline``. The other arguments are ``load_inline``'s; ``is_standalone``
    (an executable) is not supported. The build is reused while the sources' contents, the
    declarations and the flags are unchanged (headers they include are not tracked).
    """
    _refuse_sycl(name, None, with_sycl)
    if is_standalone:
        raise NotImplementedError("ember.utils.cpp_extension.load: is_standalone is not supported")
    if not name.isidentifier():
        raise ValueError(f"extension name must be a Python identifier, got {name!r}")
    paths = [Path(s).resolve() for s in ([sources] if isinstance(sources, str) else sources)]
    missing = [str(p) for p in paths if not p.is_file()]
    if missing:
        raise FileNotFoundError(f"extension '{name}': source files not found: {missing}")
    texts = {p: p.read_text() for p in paths}
    declarations = _declarations(name, functions, texts)
    cuda = any(p.suffix == ".cu" for p in paths) if with_cuda is None else with_cuda
    spec = _Spec(
        name,
        paths,
        declarations,
        list(extra_cflags or []),
        list(extra_cuda_cflags or []),
        list(extra_ldflags or []),
        [str(Path(p).resolve()) for p in extra_include_paths or []],
        bool(cuda),
    )
    root = Path(build_directory or _build_directory(name, verbose))
    library = _build_or_reuse(spec, texts, root, verbose, keep_intermediates)
    if not is_python_module:
        import ctypes

        ctypes.CDLL(str(library), mode=ctypes.RTLD_GLOBAL)
        return None
    if verbose:
        logger.info("Loading extension module %s...", name)
    return _module(spec, library)


class _Spec:
    """What a build depends on, besides the sources' contents."""

    def __init__(self, name, paths, declarations, cflags, cuda_cflags, ldflags, includes, cuda):
        self.name = name
        self.paths = paths
        self.declarations = declarations  # {function name: (declaration, docstring or None)}
        self.cflags = cflags
        self.cuda_cflags = cuda_cflags
        self.ldflags = ldflags
        self.includes = includes
        self.cuda = cuda

    def key(self, texts: dict) -> str:
        digest = hashlib.sha256()
        parts = [_CONVENTION, sys.implementation.cache_tag, _ext_suffix(), str(self.cuda)]
        parts += [os.environ.get("CC", "cc"), os.environ.get("CXX", "c++")]
        parts += [f"{p.name}\0{texts[p]}" for p in self.paths]
        parts += [decl for decl, _ in self.declarations.values()]
        parts += self.cflags + ["\1"] + self.cuda_cflags + ["\1"] + self.ldflags + self.includes
        for part in parts:
            digest.update(part.encode() + b"\0")
        return digest.hexdigest()[:16]


def _refuse_sycl(name, sycl_sources, with_sycl) -> None:
    if sycl_sources or with_sycl:
        raise NotImplementedError(f"extension '{name}': ember builds no SYCL sources")


def _joined(sources) -> str:
    return sources if isinstance(sources, str) else "\n".join(sources)


def _write_if_changed(path: Path, text: str) -> Path:
    if not path.is_file() or path.read_text() != text:
        path.write_text(text)
    return path


def _build_directory(name: str, verbose: bool) -> str:
    root = get_default_build_root()
    if verbose:
        logger.info("Using %s as ember extensions root...", root)
    return os.path.join(root, name)


def _ext_suffix() -> str:
    return sysconfig.get_config_var("EXT_SUFFIX") or ".so"


def _declarations(name: str, functions, texts: dict) -> dict:
    """``{function: (C declaration, docstring)}`` from ``functions`` and the sources' exports."""
    exported = {}
    for text in texts.values():
        for match in _EXPORT.finditer(text):
            decl = " ".join(match.group(1).split())
            exported[_function_name(name, decl)] = decl
    if functions is None:
        if not exported:
            raise ValueError(
                f"extension '{name}' exports no functions: mark them EMBER_EXPORT in the "
                "sources or pass functions= (C declarations)"
            )
        return {fn: (decl, None) for fn, decl in exported.items()}
    items = functions.items() if isinstance(functions, dict) else _listed(functions)
    found = {}
    for key, value in items:
        if _is_declaration(key, value):
            decl = " ".join(value.strip().rstrip(";").split())
            fn = _function_name(name, decl)
            if key is not None and key != fn:
                raise ValueError(f"extension '{name}': functions[{key!r}] declares '{fn}'")
            found[fn] = (decl, None)
        elif key in exported:
            found[key] = (exported[key], value)
        else:
            raise ValueError(
                f"extension '{name}': no EMBER_EXPORT function '{key}' in the sources "
                f"(exported: {sorted(exported)}); give its C declaration instead"
            )
    return found


def _is_declaration(key, value) -> bool:
    """A list item with parentheses, or a dict value declaring its key (else a docstring)."""
    if value is None or "(" not in value:
        return False
    return key is None or re.search(rf"\b{re.escape(key)}\s*\(", value) is not None


def _listed(functions):
    """``(name or None, declaration or None)`` pairs of a string or list of strings."""
    for item in [functions] if isinstance(functions, str) else functions:
        yield (None, item) if "(" in item else (item.strip(), None)


def _function_name(name: str, decl: str) -> str:
    match = re.search(r"([A-Za-z_]\w*)\s*\(", decl)
    if match is None:
        raise ValueError(f"extension '{name}': not a C function declaration: {decl!r}")
    return match.group(1)


def _build_or_reuse(spec: _Spec, texts: dict, root: Path, verbose, keep) -> Path:
    if os.name == "nt":
        raise NotImplementedError("ember.utils.cpp_extension builds on Linux and macOS only")
    import fcntl

    root.mkdir(parents=True, exist_ok=True)
    module_name = f"{spec.name}_{spec.key(texts)}"
    library = root / (module_name + _ext_suffix())
    with open(root / "lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # another process may be building the same extension
        if library.is_file():
            log = logger.info if verbose else logger.debug
            log(
                "No modifications detected for re-loaded extension module %s, skipping build "
                "step...",
                spec.name,
            )
            return library
        if verbose:
            logger.info("Building extension module %s...", spec.name)
        _write_if_changed(root / "ember_extension.h", EMBER_EXTENSION_H)
        from . import _cpp_build

        _cpp_build.build(spec, module_name, root, library, verbose, keep)
        _remove_stale(root, spec.name, library)
    return library


def _remove_stale(root: Path, name: str, keep: Path) -> None:
    """Delete the libraries of older versions of ``name`` (a loaded one stays mapped)."""
    pattern = re.compile(re.escape(name) + r"_[0-9a-f]{16}\.")
    for path in root.iterdir():
        if path != keep and path.is_file() and pattern.match(path.name):
            path.unlink(missing_ok=True)


def _module(spec: _Spec, library: Path) -> types.ModuleType:
    found = _LOADED.get(library)
    if found is not None:
        return found
    module_name = library.name[: -len(_ext_suffix())]
    loader = importlib.machinery.ExtensionFileLoader(module_name, str(library))
    raw = importlib.util.module_from_spec(importlib.util.spec_from_loader(module_name, loader))
    try:
        loader.exec_module(raw)
    except ImportError as exc:
        raise RuntimeError(_load_error(spec.name, exc)) from exc
    module = types.ModuleType(spec.name, f"ember extension '{spec.name}' ({library})")
    module.__file__ = str(library)
    module.ffi, module.lib = raw.ffi, raw.lib
    for fn, (decl, doc) in spec.declarations.items():
        wrapped = _cpp_convert.wrap(spec.name, fn, decl, raw.ffi, raw.lib, doc, spec.cuda)
        setattr(module, fn, wrapped)
    _LOADED[library] = module
    return module


def _load_error(name: str, exc: ImportError) -> str:
    message = f"Error loading extension '{name}': {exc}"
    if "undefined symbol" in str(exc):
        message += (
            '\nexported functions need C linkage: define them EMBER_EXPORT (extern "C") with '
            "exactly the declared signature"
        )
    return message
