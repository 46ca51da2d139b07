"""``ember.jit.save`` / ``ember.jit.load``: a ScriptModule as an archive of data, no code.

The archive (``jit.archive``) holds ``model.json``: the module tree (submodule names, original
class names, training flags, parameter and buffer names and keys) and the methods (graph JSON of
``jit.graph_json`` plus input/output structure); and ``tensors.safetensors``: parameters,
buffers and the graphs' constant tensors.

Nothing is pickled and no Python source is stored: loading rebuilds graphs from JSON after the
archive's checks, validates every graph (ops that exist, values defined before use, attributes
that name parameters), and only then generates code from the graph with names of its own. A
corrupt or hostile archive raises ``ArchiveError`` naming the file and the problem.
"""

from __future__ import annotations

import io

from ember._device import device as Device
from ember._tensor import Tensor
from ember.dispatcher.memory import normalize_device
from ember.nn.parameter import Parameter

from . import pytree
from .archive import ArchiveError, read_archive, write_archive
from .graph_json import GraphFormatError, GraphReader, GraphWriter
from .graph_utils import all_values
from .script_module import Method, RecursiveScriptModule, ScriptFunction, ScriptModule

FORMAT = "ember.jit"


# ---- saving -------------------------------------------------------------------------------------
def save(m, f, _extra_files=None) -> None:
    """Save a ScriptModule or ScriptFunction to ``f`` (a path, replaced atomically, or a
    writable binary file).

    Args:
        m: what ``ember.jit.trace`` (or ``freeze``...) returned.
        f: a path or a binary file object.
        _extra_files: name -> bytes or str, stored beside the model (``load`` fills them back).

    Example:
        >>> ember.jit.save(ember.jit.trace(model, x), "model.pt")
    """
    if not isinstance(m, (ScriptModule, ScriptFunction)):
        raise TypeError(
            "ember.jit.save: expected a ScriptModule or ScriptFunction (from ember.jit.trace), "
            f"got {type(m).__name__}"
        )
    writer = GraphWriter()
    tensors: dict = {}
    if isinstance(m, ScriptFunction):
        model = {"kind": "function", "methods": {"forward": _method_json(m._method, writer)}}
    else:
        model = {"kind": "module", "module": _module_json(m, "", tensors, {}, writer)}
        model["methods"] = {name: _method_json(meth, writer) for name, meth in m._methods.items()}
    write_archive(f, FORMAT, model, {**tensors, **writer.tensors}, _extra_files)


def _method_json(method: Method, writer: GraphWriter) -> dict:
    return {
        "graph": writer.graph(method.graph),
        "in_spec": method.in_spec,
        "out_spec": method.out_spec,
    }


def _module_json(module, prefix: str, tensors: dict, seen: dict, writer) -> dict:
    """The module tree; each parameter and buffer names its key in the tensor file (a tensor
    reachable under two names, such as tied weights, is stored once). A submodule in a slot
    typed by an interface keeps its methods (``prim::CallInterface`` runs them)."""
    entry = {
        "type": getattr(module, "original_name", type(module).__name__),
        "training": bool(module.training),
        "parameters": {},
        "buffers": {},
        "non_persistent": sorted(module._non_persistent_buffers_set),
        "children": {},
        "attributes": {n: getattr(module, n) for n in sorted(_script_attributes(module))},
    }
    for kind, table in (("parameters", module._parameters), ("buffers", module._buffers)):
        for name, t in table.items():
            if t is None:
                entry[kind][name] = None
                continue
            key = seen.get(id(t))
            if key is None:
                key = seen[id(t)] = f"{prefix}{name}"
                tensors[key] = t
            entry[kind][name] = {"key": key, "requires_grad": bool(t.requires_grad)}
    called = module.__dict__.get("_interfaces", {})
    for name, child in module._modules.items():
        if child is None:
            entry["children"][name] = None
            continue
        entry["children"][name] = _module_json(child, f"{prefix}{name}.", tensors, seen, writer)
        if name in called and isinstance(child, ScriptModule):
            methods = child._methods.items()
            entry["children"][name]["methods"] = {n: _method_json(m, writer) for n, m in methods}
    return entry


def _script_attributes(module) -> set:
    """Non-tensor attributes scripted code reads or writes at run time (jit/script/attributes)."""
    return module.__dict__.get("_script_attributes", set())


# ---- loading ------------------------------------------------------------------------------------
def load(f, map_location=None, _extra_files=None) -> RecursiveScriptModule:
    """Load what ``ember.jit.save`` wrote; no Python class of the model is needed.

    Args:
        f: a path or a readable binary file object.
        map_location: a device (or string) to put every tensor on; default: where it was saved.
        _extra_files: a dict whose keys name extra files to read; their contents fill it.

    Returns:
        a ``RecursiveScriptModule`` (a saved function loads as a module whose ``forward`` it is).

    Example:
        >>> model = ember.jit.load("model.pt", map_location="cpu")
    """
    if map_location is not None and not isinstance(map_location, (str, Device)):
        raise TypeError(
            f"map_location should be a string or a device, got {type(map_location).__name__}"
        )
    with read_archive(f, FORMAT, "ember.jit.load", map_location) as archive:
        target = None if map_location is None else normalize_device(map_location)
        module = _Loader(archive.model, archive.tensors, archive.what, target).module()
        archive.extra(_extra_files)
    return module


class _Loader:
    """Builds the module tree and the methods from validated JSON."""

    def __init__(self, model: dict, tensors: dict, what, device=None):
        self.model, self.tensors, self.what, self.device = model, tensors, what, device
        self.params: dict = {}  # tensor key -> Parameter
        self.state_names: set = {"training"}  # qualified names of run-time module attributes
        self.module_names: set = set()  # qualified names of the submodules
        self.reader = GraphReader({k: v for k, v in tensors.items() if k.startswith("constants.")})

    def fail(self, message: str):
        return ArchiveError(f"{self.what}: {message}")

    def module(self) -> RecursiveScriptModule:
        kind = self.model.get("kind")
        if kind == "module":
            root = RecursiveScriptModule()
            self.fill(root, self.model.get("module"), 0)
        elif kind == "function":
            root = RecursiveScriptModule("function")
        else:
            raise self.fail(f"unknown archive kind {kind!r}")
        methods = self.model.get("methods")
        if not isinstance(methods, dict) or (kind == "function" and "forward" not in methods):
            raise self.fail("malformed methods")
        names = {name for name, _ in root.named_parameters(remove_duplicate=False)}
        names |= {name for name, _ in root.named_buffers(remove_duplicate=False)}
        for name, entry in methods.items():
            root._add_method(self.method(name, entry, names))
        return root

    def method(self, name, entry, attr_names: set) -> Method:
        if not isinstance(name, str) or not name.isidentifier() or name.startswith("_"):
            raise self.fail(f"malformed method name {name!r}")
        if not isinstance(entry, dict) or set(entry) != {"graph", "in_spec", "out_spec"}:
            raise self.fail(f"malformed method {name}")
        try:
            graph = self.reader.graph(entry["graph"])
            pytree.check_spec(entry["in_spec"])
            pytree.check_spec(entry["out_spec"])
        except (GraphFormatError, ValueError, RecursionError) as exc:
            raise self.fail(f"method {name}: {exc}") from None
        if pytree.num_leaves(entry["in_spec"]) != len(graph.inputs()):
            raise self.fail(f"method {name}: the input structure does not match the graph")
        if pytree.num_leaves(entry["out_spec"]) != len(graph.outputs()):
            raise self.fail(f"method {name}: the output structure does not match the graph")
        for node in graph.findAllNodes("prim::GetAttr"):
            if node["name"] not in attr_names:
                raise self.fail(f"method {name} reads {node['name']!r}, which the module lacks")
        for kinds, names in (
            (("prim::ModuleAttr", "prim::SetModuleAttr"), self.state_names),
            (("prim::GetModule", "prim::SetModule", "prim::CallInterface"), self.module_names),
        ):
            for node in (n for kind in kinds for n in graph.findAllNodes(kind)):
                if node["name"] not in names:
                    raise self.fail(f"method {name} uses {node['name']!r}, which the module lacks")
        for node in graph.findAllNodes("prim::CallInterface"):
            called = node["method"]
            if not isinstance(called, str) or not called.isidentifier() or called[0] == "_":
                raise self.fail(f"method {name} calls a malformed method name {called!r}")
        if self.device is not None:
            retarget_devices(graph, self.device)
        return Method(name, graph, entry["in_spec"], entry["out_spec"])

    def fill(self, module: ScriptModule, entry, depth: int, prefix: str = "") -> None:
        fields = {"type", "training", "parameters", "buffers", "non_persistent", "children"}
        optional = {"attributes", "methods"}
        if depth > 100 or not isinstance(entry, dict) or set(entry) - optional != fields:
            raise self.fail("malformed module tree")
        self.state_names.add(f"{prefix}training")
        if not isinstance(entry["type"], str) or not isinstance(entry["training"], bool):
            raise self.fail("malformed module tree")
        object.__setattr__(module, "original_name", entry["type"][:200])
        object.__setattr__(module, "training", entry["training"])
        try:
            for name, value in _items(entry.get("attributes", {})):
                self.attribute(module, name, value)
                self.state_names.add(prefix + name)
            for name, info in _items(entry["parameters"]):
                module.register_parameter(name, self.parameter(info))
            for name, info in _items(entry["buffers"]):
                persistent = name not in (entry["non_persistent"] or ())
                module.register_buffer(name, self.tensor(info), persistent=persistent)
            for name, child in _items(entry["children"]):
                made = None if child is None else RecursiveScriptModule()
                module.add_module(name, made)
                if made is not None:
                    self.module_names.add(prefix + name)
                    self.fill(made, child, depth + 1, f"{prefix}{name}.")
        except (KeyError, TypeError, ValueError, AttributeError, RuntimeError) as exc:
            raise self.fail(f"malformed module tree ({exc})") from None
        if "methods" in entry:
            self.own_methods(module, entry["methods"], prefix)

    def own_methods(self, module, methods, prefix: str) -> None:
        """The methods of a submodule in an interface slot: their names are its own."""
        if not isinstance(methods, dict):
            raise self.fail("malformed methods")
        outer = self.state_names, self.module_names
        self.state_names = {n[len(prefix) :] for n in outer[0] if n.startswith(prefix)}
        self.module_names = {n[len(prefix) :] for n in outer[1] if n.startswith(prefix)}
        names = {name for name, _ in module.named_parameters(remove_duplicate=False)}
        names |= {name for name, _ in module.named_buffers(remove_duplicate=False)}
        try:
            for name, entry in methods.items():
                module._add_method(self.method(name, entry, names))
        finally:
            self.state_names, self.module_names = outer

    def attribute(self, module, name, value) -> None:
        """A run-time attribute: a plain JSON value under a name no module member has."""
        if not isinstance(name, str) or not name.isidentifier() or name.startswith("_"):
            raise self.fail(f"malformed attribute name {name!r}")
        if hasattr(type(module), name) or name in module.__dict__:
            raise self.fail(f"attribute {name!r} would shadow a module member")
        object.__setattr__(module, name, value)
        module.__dict__.setdefault("_script_attributes", set()).add(name)

    def tensor(self, info) -> Tensor | None:
        if info is None:
            return None
        if not isinstance(info, dict) or not isinstance(info.get("key"), str):
            raise self.fail("malformed tensor entry")
        found = self.tensors.get(info["key"])
        if found is None or info["key"].startswith("constants."):
            raise self.fail(f"unknown tensor {info['key']!r}")
        return found

    def parameter(self, info):
        t = self.tensor(info)
        if t is None:
            return None
        shared = self.params.get(info["key"])
        if shared is None:  # tied weights: one Parameter under both names, as saved
            shared = Parameter(t, requires_grad=bool(info.get("requires_grad", True)))
            self.params[info["key"]] = shared
        return shared


def retarget_devices(graph, device) -> None:
    """Put a graph on ``device`` (``map_location``): the constants given to ``Device``
    arguments of ops (``ember.rand(..., device=x.device)`` baked in by the trace), any other
    device constant, and the devices in value types."""
    from .passes.shape_prop import device_constants
    from .types import TensorType

    device_args = device_constants(graph)
    for node in graph.findAllNodes("prim::Constant"):
        value = node["value"]
        if isinstance(value, Device) or (node in device_args and value is not None):
            node.setAttr("value", device)
    for value in all_values(graph):
        if isinstance(value.type(), TensorType) and value.type().device() is not None:
            value.setType(value.type().with_(device=device))


def _items(table):
    if not isinstance(table, dict):
        raise TypeError("expected an object")
    return list(table.items())


# In-memory round trips (tests, copy): bytes -> module.
def loads(data: bytes, map_location=None) -> RecursiveScriptModule:
    return load(io.BytesIO(data), map_location)
