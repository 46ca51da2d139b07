"""``ember.serialization.get_unsafe_globals_in_checkpoint``: the globals a checkpoint's pickle
names that a weights-only load would refuse, read statically (pickletools disassembles data.pkl;
nothing is imported or run), as PyTorch's."""

from __future__ import annotations

import io
import pickletools
import zipfile

from . import _safe_globals
from ._checkpoint_load import _Records
from ._checkpoint_pickle import torch_globals

_STRINGS = {"SHORT_BINUNICODE", "BINUNICODE", "BINUNICODE8", "UNICODE", "SHORT_BINSTRING"}


def globals_in_pickle(data: bytes) -> set[str]:
    """``module.name`` of every GLOBAL and STACK_GLOBAL in the pickle (a STACK_GLOBAL whose
    strings were pushed right before it; others are built at load time and cannot be seen)."""
    found, strings = set(), []
    for opcode, arg, _ in pickletools.genops(io.BytesIO(data)):
        if opcode.name == "GLOBAL":
            module, name = arg.split(" ", 1)
            found.add(f"{module}.{name}")
        elif opcode.name == "STACK_GLOBAL" and len(strings) >= 2:
            found.add(f"{strings[-2]}.{strings[-1]}")
        if opcode.name in _STRINGS:
            strings.append(arg)
        elif opcode.name not in ("MEMOIZE", "BINPUT", "LONG_BINPUT", "PUT"):
            strings.clear()
    return found


def get_unsafe_globals_in_checkpoint(f) -> list[str]:
    """The functions and classes a ``torch.save``/``ember.save`` checkpoint names that are not
    safe for ``weights_only`` loads (neither allowed by ember nor by ``add_safe_globals``), as
    ``"module.name"`` strings.

    Args:
        f: a path or a readable binary file object holding the checkpoint.

    Raises:
        ValueError: ``f`` is not a checkpoint, or is a TorchScript archive.
    """
    from .serialization import _file_name, _opened

    with _opened(f, "rb") as fileobj:
        if not zipfile.is_zipfile(fileobj):
            raise ValueError("Expected input to be a checkpoint returned by torch.save")
        fileobj.seek(0)
        with zipfile.ZipFile(fileobj) as zf:
            records = _Records(zf, _file_name(f))
            if records.info("constants.pkl", default_ok=True) is not None:
                raise ValueError(
                    "Expected input to be a checkpoint returned by torch.save but got a "
                    "torchscript checkpoint"
                )
            data = records.read("data.pkl")
    allowed = {f"{module}.{name}" for module, name in torch_globals(None, None, None)}
    return sorted(
        name
        for name in globals_in_pickle(data)
        if name not in allowed and _safe_globals.lookup(*name.rsplit(".", 1)) is None
    )
