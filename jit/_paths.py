"""Qualified names (``"blocks.0.attn.weight"``) inside module trees."""

from __future__ import annotations


def parent(root, qualified: str, create: bool = False):
    """``(module, leaf name)`` holding ``qualified``; with ``create``, missing submodules on the
    way are added as empty modules."""
    from ember.nn.modules.module import Module

    *path, leaf = qualified.split(".")
    module = root
    for part in path:
        child = module._modules.get(part)
        if child is None:
            if not create:
                raise KeyError(f"no submodule {part!r} on the way to {qualified!r}")
            child = Module()
            module.add_module(part, child)
        module = child
    return module, leaf


def set_tensor(root, qualified: str, value) -> None:
    """``root.<qualified> = value`` into a parameter or buffer slot, whatever the tensor (a
    scripted method's assignment: TorchScript's slots are typed Tensor, not Parameter)."""
    module, leaf = parent(root, qualified)
    table = module._parameters if leaf in module._parameters else module._buffers
    table[leaf] = value


def set_module(root, qualified: str, module) -> None:
    """``root.<qualified> = module`` into a submodule slot (a scripted method's assignment; the
    compiler checked that the module has the slot's type)."""
    owner, leaf = parent(root, qualified)
    if leaf not in owner._modules or not hasattr(module, "_modules"):
        raise RuntimeError(f"{qualified!r} is not a submodule slot or the value not a module")
    owner._modules[leaf] = module


def tensor_at(root, qualified: str):
    """The parameter or buffer called ``qualified``."""
    module, leaf = parent(root, qualified)
    found = module._parameters.get(leaf)
    return found if found is not None else module._buffers[leaf]
