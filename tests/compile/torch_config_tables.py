"""Writes compiler/torch_configs/*.txt from the installed PyTorch's config modules, and reads
the same text back for the tests: ``python tests/compile/torch_config_tables.py`` after a
PyTorch upgrade, then review the diff.

A line is ``name: type = default`` (a Python literal; the type only where PyTorch checks
``isinstance`` against it), ``name -> other`` for an alias, with ``  # deprecated: why`` after
either for a name PyTorch warns about; ``  # alias of module.name`` marks an alias of another
module's setting, kept as a setting here but, as in PyTorch, not listed.

PyTorch computes some defaults from the environment when it is imported (``CI`` turns
``error_on_custom_op_aliasing`` on; ``TORCHINDUCTOR_*`` and ``TORCH_*`` variables set others).
Ember reads none of them, so the tables hold PyTorch's defaults in an environment without those
variables: ``torch_tables`` imports PyTorch in such a subprocess, for the writer and the tests.
"""

from __future__ import annotations

import importlib
import json
import os
import subprocess
import sys
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


def literal_defaults(name: str) -> dict[str, str]:
    """``get_config_copy()`` of torch's config module ``name``, each value as ``_literal``."""
    module = importlib.import_module(MODULES[name])
    return {key: _literal(value) for key, value in module.get_config_copy().items()}


def _plain_environment() -> dict[str, str]:
    """This process's environment less the variables PyTorch's config defaults read."""
    read = ("TORCH", "PYTORCH")
    return {k: v for k, v in os.environ.items() if k != "CI" and not k.startswith(read)}


def torch_tables() -> dict[str, dict]:
    """Per module, its table lines and literal defaults as PyTorch has them when imported in a
    plain environment (a subprocess: a config module's defaults are fixed at import)."""
    done = subprocess.run(
        [sys.executable, __file__, "--json"],
        env=_plain_environment(),
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(done.stdout)


if __name__ == "__main__":
    if sys.argv[1:] == ["--json"]:
        tables = {n: {"lines": lines(n), "defaults": literal_defaults(n)} for n in MODULES}
        print(json.dumps(tables))
    else:
        for table, found in torch_tables().items():
            with open(os.path.join(FOLDER, f"{table}.txt"), "w") as f:
                f.write("\n".join(found["lines"]) + "\n")
