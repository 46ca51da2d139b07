"""GraphModule: an nn.Module whose ``forward`` is the Python generated from its ``graph``.

Holds the submodules, parameters and buffers the graph reads (copied by reference from the
root it was traced from). Editing ``graph`` and calling ``recompile()`` regenerates ``forward``.
"""

from __future__ import annotations

import copy
import itertools
import linecache
import types

from ember.nn.modules.module import Module
from ember.nn.parameter import Parameter

from .._paths import parent
from .graph import Graph

_COUNTER = itertools.count()


def _copy_attr(source, target, qualified: str, flat: bool = False) -> None:
    """Put ``source``'s attribute at ``qualified`` on ``target`` (creating empty modules on
    the way); ``flat``: ``source`` holds the leaf directly."""
    *path, leaf = qualified.split(".")
    for part in path:
        source = source if flat else getattr(source, part)
        child = target._modules.get(part) if isinstance(target, Module) else None
        if child is None:
            child = Module()
            target.add_module(part, child)
        target = child
    value = getattr(source, leaf)
    if isinstance(value, Module):
        target.add_module(leaf, value)
    elif isinstance(value, Parameter):
        target.register_parameter(leaf, value)
    elif leaf in getattr(source, "_buffers", {}):
        target.register_buffer(leaf, value)
    else:
        object.__setattr__(target, leaf, value)


class GraphModule(Module):
    """A module generated from an fx Graph (``torch.fx.GraphModule``)."""

    def __init__(self, root, graph: Graph, class_name: str = "GraphModule"):
        super().__init__()
        object.__setattr__(self, "_class_name", class_name)
        if isinstance(root, Module):
            object.__setattr__(self, "training", root.training)
            for node in graph.nodes:
                if node.op in ("get_attr", "call_module"):
                    _copy_attr(root, self, node.target)
        elif isinstance(root, dict):  # qualified target -> object
            for name, value in root.items():
                _copy_attr(_Holder({name.rsplit(".", 1)[-1]: value}), self, name, flat=True)
        else:
            raise RuntimeError("Unsupported type " + str(root) + " passed for root!")
        self.graph = graph

    @property
    def graph(self) -> Graph:
        return self.__dict__["_graph"]

    @graph.setter
    def graph(self, g: Graph) -> None:
        object.__setattr__(self, "_graph", g)
        g.owning_module = self
        self.recompile()

    @property
    def code(self) -> str:
        return self.__dict__["_code"]

    def recompile(self):
        """Regenerate ``forward`` from ``graph`` (after editing the graph)."""
        python = self.graph.python_code("self")
        filename = f"<eval_with_key>.{next(_COUNTER)}"
        linecache.cache[filename] = (len(python.src), None, python.src.splitlines(True), filename)
        namespace = dict(python.globals)
        exec(compile(python.src, filename, "exec"), namespace)  # the source is generated here
        object.__setattr__(self, "_code", python.src)
        object.__setattr__(self, "forward", types.MethodType(namespace["forward"], self))
        return python

    def print_readable(self, print_output: bool = True) -> str:
        text = f"class {self._class_name}(ember.nn.Module):\n" + "".join(
            f"    {line}\n" for line in self.code.splitlines()
        )
        if print_output:
            print(text)
        return text

    def _get_name(self) -> str:
        return self._class_name

    def __repr__(self) -> str:
        return super().__repr__() + "\n\n\n" + self.code

    def add_submodule(self, target: str, m: Module) -> bool:
        module, leaf = parent(self, target, create=True)
        module.add_module(leaf, m)
        return True

    def delete_submodule(self, target: str) -> bool:
        try:
            module, leaf = parent(self, target)
        except KeyError:
            return False
        return module._modules.pop(leaf, None) is not None

    def __deepcopy__(self, memo):
        copied_graph = Graph()
        output = copied_graph.graph_copy(self.graph, {})
        copied_graph.output(output)
        fake = Module()
        for name, child in self._modules.items():
            fake.add_module(name, copy.deepcopy(child, memo))
        for name, param in self._parameters.items():
            fake.register_parameter(name, copy.deepcopy(param, memo))
        for name, buf in self._buffers.items():
            fake.register_buffer(name, copy.deepcopy(buf, memo))
        return GraphModule(fake, copied_graph, self._class_name)


class _Holder:
    """A dict root seen as an object with attributes."""

    def __init__(self, mapping: dict):
        self.mapping = mapping

    def __getattr__(self, name):
        try:
            return self.__dict__["mapping"][name]
        except KeyError:
            raise AttributeError(name) from None
