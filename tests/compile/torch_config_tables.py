"""Writes compiler/torch_configs/*.txt from the installed PyTorch's config modules, and reads
the same text back for the tests: ``python tests/compile/torch_config_tables.py`` after a
PyTorch upgrade, then review the diff.

A line is ``name: type = default`` (a Python literal; the type only where PyTorch checks
``isinstance`` against it), ``name -> other`` for an alias, with ``  # deprecated: why`` after
either for a name PyTorch warns about; ``  # alias of module.name`` marks an alias of another
module's setting, kept as a setting here but, as in PyTorch, not listed.
"""

from __future__ import annotations

import importlib
import os
import typing

MODULES = {
    "dynamo": "torch._dynamo.config",
    "inductor": "torch._inductor.config",
    "functorch": "torch._functorch.config",
}
# defaults that depend on the machine (install paths, the working directory, the CPU count):
# written as these portable values and not compared with PyTorch's
PORTABLE = {
    "dynamo": {"base_dir": "", "debug_dir_root": "torch_compile_debug"},
    "inductor": {
        "cutlass.cutlass_dir": "",
        "cuda.cutlass_dir": "",
        "xpu.cutlass_dir": "",
        "compile_threads": 1,
    },
    "functorch": {},
}
_PLAIN_TYPES = (bool, int, float, str, list, tuple, set, dict, type(None))
FOLDER = os.path.join(os.path.dirname(__file__), "..", "..", "compiler", "torch_configs")


def _literal(value) -> str:
    if isinstance(value, set) and value:  # sorted: a set's order changes between runs
        return "{" + ", ".join(repr(v) for v in sorted(value)) + "}"
    return repr(value)


def lines(name: str) -> list[str]:
    """The table of torch's config module ``name`` as the lines of its file."""
    import torch

    module = importlib.import_module(MODULES[name])
    out = [
        f"# {MODULES[name]} of PyTorch {torch.__version__.split('+')[0]}: written by "
        "tests/compile/torch_config_tables.py (its docstring describes the lines)"
    ]
    for key, entry in module._config.items():
        if entry.alias is not None:
            target_module, target = entry.alias.rsplit(".", 1)
            if target_module == MODULES[name]:
                line = f"{key} -> {target}"
            else:  # another module's (torch.compiler.config): kept here, out of the listings
                value = getattr(importlib.import_module(target_module), target)
                line = f"{key}: {type(value).__name__} = {_literal(value)}"
                line += f"  # alias of {entry.alias}"
        else:
            value = PORTABLE[name].get(key, entry.default)
            kind = entry.value_type
            typed = typing.get_origin(kind) is None and kind in _PLAIN_TYPES
            line = f"{key}: {kind.__name__} = " if typed else f"{key} = "
            line += _literal(value)
        if entry.deprecated:
            line += f"  # deprecated: {entry.deprecation_message or ''}"
        out.append(line)
    return out


if __name__ == "__main__":
    for table in MODULES:
        with open(os.path.join(FOLDER, f"{table}.txt"), "w") as f:
            f.write("\n".join(lines(table)) + "\n")
