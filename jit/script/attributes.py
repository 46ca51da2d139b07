"""Module state read and written at run time: ``self.training`` of user modules, attributes
that methods assign (``self.count += 1``) and ``ember.jit.Attribute`` values, as TorchScript's
``prim::GetAttr``/``prim::SetAttr`` on non-tensor attributes.

Parameters and buffers (the module's or a submodule's) that a method assigns become
``prim::SetTensorAttr`` writes into the slot, and their reads stay where the code reads them
rather than at the top of the graph (``written_tensors``, ``Unit.get_attr``).

Other plain attributes stay compile-time constants (see docs/jit.md). The values live on the
scripted module (copied from the original when scripting, as PyTorch copies them), are saved in
the archive's module tree and restored on load.
"""

from __future__ import annotations

import ast
import functools
import inspect
import textwrap
from typing import Any, NamedTuple

from .. import types as T
from ..ir import Value

READ, WRITE = "prim::ModuleAttr", "prim::SetModuleAttr"
_PLAIN = (bool, int, float, str, type(None))
# methods that update a list or dict in place (self.names.append(v) mutates self.names)
_MUTATORS = ("append", "extend", "insert", "pop", "reverse", "sort", "remove", "clear")


class Attribute(NamedTuple):
    """``self.names = ember.jit.Attribute([], List[str])``: an attribute of a scripted module
    with the given type (PyTorch's ``torch.jit.Attribute``; in eager code it is this pair)."""

    value: Any
    type: Any


def is_runtime(module, name: str) -> bool:
    """Read at run time: the training flag of a user module, an ``Attribute``, or an
    attribute that a method of the module's class assigns and that holds a plain value
    (others, such as functions, stay compile-time constants)."""
    value = module.__dict__.get(name)
    if isinstance(value, Attribute):
        return True
    if name == "training":
        return not _is_library_class(type(module))
    return name in assigned_attributes(type(module)) and _storable(value)


def _is_library_class(cls) -> bool:
    return (cls.__module__ or "").startswith(("ember.", "nn."))


@functools.cache
def assigned_attributes(cls) -> frozenset:
    """Names ``self.<name>`` is assigned to in the methods of ``cls`` other than __init__,
    or updated in place (``self.names.append(v)``, ``self.d[k] = v``, ``self.xs[0].append(v)``:
    lists and dicts are references)."""
    names = set()
    for fn in _methods(cls):
        for node in ast.walk(fn):
            if _is_self(node) and isinstance(node.ctx, ast.Store):
                names.add(node.attr)
                continue
            owner = None
            if isinstance(node, ast.Subscript) and isinstance(node.ctx, (ast.Store, ast.Del)):
                owner = node.value
            elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
                owner = node.func.value if node.func.attr in _MUTATORS else None
            while isinstance(owner, ast.Subscript):
                owner = owner.value
            if _is_self(owner):
                names.add(owner.attr)
    return frozenset(names)


def _is_self(node) -> bool:
    return (
        isinstance(node, ast.Attribute)
        and isinstance(node.value, ast.Name)
        and node.value.id == "self"
    )


def attribute_type(em, module, name: str, node):
    """The static type of a run-time attribute (``Attribute``'s type, else its value's)."""
    value = module.__dict__.get(name, getattr(module, name, None))
    if isinstance(value, Attribute):
        from .annotations import resolve

        return resolve(value.type, {})
    if not _storable(value):
        raise em.source.not_supported(
            f"attribute '{name}' is assigned in a method but holds a "
            f"{type(value).__name__}; scripted attributes hold bool, int, float, str, None or "
            "lists and dicts of them",
            node,
        )
    return T.type_of(value)


def plain_value(value):
    """The value a scripted module holds for an attribute (an ``Attribute``'s value)."""
    return value.value if isinstance(value, Attribute) else value


def _storable(value) -> bool:
    if isinstance(value, _PLAIN):
        return True
    if isinstance(value, list):  # non-empty: an empty list's type needs an Attribute
        return bool(value) and all(_storable(v) for v in value)
    if isinstance(value, dict):
        return bool(value) and all(isinstance(k, str) and _storable(v) for k, v in value.items())
    return False


def written_tensors(module) -> frozenset:
    """Qualified names of the parameters and buffers (of ``module`` or its submodules) that the
    methods of ``module``'s class assign (``self.w = t``, ``self.lin.bias = t``)."""
    from .._paths import parent

    found = set()
    for path in _assigned_paths(type(module)):
        try:
            owner, leaf = parent(module, path)
        except KeyError:
            continue
        if leaf in owner._parameters or leaf in owner._buffers:
            found.add(path)
    return frozenset(found)


def assigned_submodules(module) -> frozenset:
    """Qualified names of the submodule slots that the methods of ``module``'s class, or of
    its submodules' classes, assign (``self.lin = self.other``)."""
    from .._paths import parent

    found = set()
    for prefix, owner in module.named_modules():
        for path in _assigned_paths(type(owner)):
            try:
                holder, leaf = parent(owner, path)
            except KeyError:
                continue
            if leaf in holder._modules:
                found.add(f"{prefix}.{path}" if prefix else path)
    return frozenset(found)


def script_type_name(module) -> str:
    """TorchScript's name of a module's type in messages (``__torch__.<module>.<class>``)."""
    cls = type(module)
    return f"__torch__.{cls.__module__}.{cls.__name__}"


def same_script_type(a, b) -> bool:
    """Whether ``b`` may take ``a``'s slot: TorchScript gives two modules one type when their
    class, constants and attribute types agree. ember inlines a module's code with its plain
    attributes as constants, so here they must be equal, and the parameters, buffers and
    submodules (recursively) must have the same names."""
    if type(a) is not type(b):
        return False
    tables = ("_parameters", "_buffers", "_modules")
    if any(getattr(a, t).keys() != getattr(b, t).keys() for t in tables):
        return False
    if any((a._parameters[k] is None) != (b._parameters[k] is None) for k in a._parameters):
        return False
    plain_a, plain_b = _plain_attributes(a), _plain_attributes(b)
    if plain_a.keys() != plain_b.keys():
        return False
    for key, value in plain_a.items():
        other = plain_b[key]
        if value is not other and (type(value) is not type(other) or not _equal(value, other)):
            return False
    children = zip(a._modules.values(), b._modules.values())
    return all(_same_child(x, y) for x, y in children)


def _same_child(x, y) -> bool:
    if x is None or y is None:
        return x is y
    return same_script_type(x, y)


def _plain_attributes(module) -> dict:
    return {k: v for k, v in vars(module).items() if not k.startswith("_") and k != "training"}


def _equal(a, b) -> bool:
    try:
        return bool(a == b)
    except Exception:  # tensors and other values without a plain equality: only identity
        return False


@functools.cache
def _assigned_paths(cls) -> frozenset:
    """Dotted paths ``self.<a>.<b>`` is assigned to in the methods of ``cls`` but __init__."""
    paths = set()
    for fn in _methods(cls):
        for node in ast.walk(fn):
            if isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
                parts = [node.attr]
                owner = node.value
                while isinstance(owner, ast.Attribute):
                    parts.insert(0, owner.attr)
                    owner = owner.value
                if isinstance(owner, ast.Name) and owner.id == "self":
                    paths.add(".".join(parts))
    return frozenset(paths)


def _methods(cls):
    """The method definitions (but __init__) of ``cls`` and its user base classes."""
    for klass in cls.__mro__:
        if _is_library_class(klass) or klass is object:
            continue
        try:
            tree = ast.parse(textwrap.dedent(inspect.getsource(klass)))
        except (OSError, TypeError, SyntaxError):
            continue
        for fn in ast.walk(tree):
            if isinstance(fn, ast.FunctionDef) and fn.name != "__init__":
                yield fn


class ModuleState:
    """Emitter methods reading and writing run-time attributes."""

    def submodule(self, ref, name: str):
        """``self.<name>`` of a submodule: its ref, with its run-time value when the compiled
        module reassigns submodule slots (``Unit.moved``)."""
        from .interfaces import slot_interface
        from .sugar import ModuleRef

        child = ModuleRef(ref.module._modules[name], ref.qualified(name))
        child.interface = slot_interface(ref.module, name)
        if self.unit.moved:
            child.runtime = self.module_value(child)
        return child

    def module_value(self, ref) -> Value:
        if ref.runtime is None:
            node = self.graph.insert("prim::GetModule", [], name=ref.prefix)
            ref.runtime = node.output().setType(T.AnyType).setDebugName(ref.prefix)
        return ref.runtime

    def assign_submodule(self, ref, name: str, value, statement) -> None:
        """``self.lin = self.other``: TorchScript allows it when both have one type (the
        slot's calls then run the other module); anything else is its type error."""
        from .sugar import ModuleRef

        slot = ref.module._modules[name]
        if (
            isinstance(value, ModuleRef)
            and slot is not None
            and same_script_type(slot, value.module)
        ):
            source = self.module_value(value)
            self.graph.insert("prim::SetModule", [source], num_outputs=0, name=ref.qualified(name))
            return
        if isinstance(value, ModuleRef):
            got = script_type_name(value.module)
            if slot is not None and got == script_type_name(slot):  # same class, other constants
                got += " (with other constants, parameters or submodules)"
        else:
            got = self.materialize(value).type().annotation()
        expected = "NoneType" if slot is None else script_type_name(slot)
        raise self.source.error(
            f"Wrong type for attribute assignment. Expected {expected} but got {got}", statement
        )

    def assign_tensor(self, qualified: str, value, statement) -> None:
        """``self.w = t`` on a parameter or buffer: the slot holds ``t`` from then on (reads of
        it are where the code reads, see ``Unit.get_attr``)."""
        value = self.materialize(value)
        if not isinstance(value.type(), T.TensorType):
            raise self.source.error(
                "Wrong type for attribute assignment. Expected Tensor but got "
                f"{value.type().annotation()}",
                statement,
            )
        self.graph.insert("prim::SetTensorAttr", [value], num_outputs=0, name=qualified)

    def read_attribute(self, ref, name: str, node):
        kind = attribute_type(self, ref.module, name, node)
        value = self.graph.insert(READ, [], name=ref.qualified(name)).output().setType(kind)
        return value

    def assign_attribute(self, target, value) -> None:
        """``self.x = v``: a ``prim::SetModuleAttr`` of a run-time attribute."""
        ref = self.expr(target.value)
        name = target.attr
        if isinstance(ref, Value) and isinstance(ref.type(), T.ClassType):
            return self.set_object_attribute(ref, name, value, target)
        module = getattr(ref, "module", None)
        if module is None:
            raise self.source.not_supported("assignment to attributes of non-modules", target)
        statement = self.current  # TorchScript underlines the whole assignment
        if not hasattr(module, name):
            raise self.source.error(
                f"Tried to set nonexistent attribute: {name}. Did you forget to initialize it "
                "in __init__()?",
                statement,
            )
        if name in module._parameters or name in module._buffers:
            return self.assign_tensor(ref.qualified(name), value, statement)
        if name in module._modules:
            return self.assign_submodule(ref, name, value, statement)
        if not is_runtime(module, name):
            raise self.source.not_supported(
                f"assignment to attribute '{name}' (scripted attributes hold bool, int, float, "
                "str, None or non-empty lists and dicts of them; declare others with "
                "ember.jit.Attribute(value, type))",
                target,
            )
        kind = attribute_type(self, module, name, target)
        value = self.materialize(value)
        if not self.fits(value.type(), kind) and not self.is_empty_list(value):
            raise self.source.error(
                "Wrong type for attribute assignment. Expected "
                f"{kind.annotation()} but got {value.type().annotation()}",
                statement,
            )
        value = self.coerce(value, kind, target)
        self.graph.insert(WRITE, [value], num_outputs=0, name=ref.qualified(name))
