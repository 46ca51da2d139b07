"""Functions for tests/jit/test_script_scopes.py (issue 16's last script gaps: names crossing
the branches of an ``if`` or a loop body, ``hash()``, ``del`` of an attribute), written once
against a library: torch and ember script this same source."""
# ruff: noqa: UP006, UP035, UP045, F841 - typing.Tuple/Optional, as TorchScript sources spell
# them; unread variables are the point of some

from typing import Dict, List, Optional, Tuple


def refused(lib):
    """Both compilers refuse these with the same text."""

    def mixed(x, flag: bool):
        if flag:
            y = 1
        else:
            y = x
        return y

    def mixed_later(x, flag: bool):
        if flag:
            y = 1
            z = 2
        else:
            y = x + 1
            z = 3
        w = z
        return y + w

    def only_true(x, flag: bool):
        if flag:
            y = x + 1
        return y

    def only_false(x, flag: bool):
        if flag:
            pass
        else:
            y = x + 1
        return x * y

    def nested(x, a: bool, b: bool):
        if a:
            if b:
                y = 1.5
            else:
                y = 2
        else:
            y = 0.5
        return y

    def both_unmerged(x, a: bool):
        if a:
            y = 1
        else:
            y = x
        if a:
            y = 1.5
        return y

    def if_expression(x, flag: bool):
        y = 1 if flag else x
        return y

    def augmented_after_one_branch(x, flag: bool):
        if flag:
            y = 1
        y += 1
        return y

    def returns_differ(x, flag: bool):
        if flag:
            return 1
        return x

    def rebind_str(x, flag: bool):
        y = 1
        if flag:
            y = "a"
        return y

    def rebind_in_loop(x, n: int):
        y = x
        for _ in range(n):
            y = 1
        return y

    def del_attribute(x):
        del x.grad
        return x

    return {k: v for k, v in locals().items() if callable(v)}


def accepted(lib):
    """Both compile these; they run with the same results."""

    def mixed_unused(x, flag: bool):
        if flag:
            y = 1
        elif bool(x.sum() > 0):
            y = x
        else:
            y = x * 2
        return x * 2  # y is never read: no error

    def rebind_to_int(x, flag: bool):
        y = 1
        if flag:
            y = x
        return y

    def rebind_to_float(x, n: int):
        y = 1.5
        for _ in range(n):
            y = x * 2
        return y

    def annotated_optional(x, flag: bool):
        y: Optional[lib.Tensor] = None
        if flag:
            y = x + 1
        return y

    def hash_int(a: int) -> int:
        return hash(a)

    def hash_float(a: float) -> int:
        return hash(a)

    def hash_str(a: str) -> int:
        return hash(a)

    def hash_bool(a: bool) -> int:
        return hash(a)

    def hash_tuple(a: Tuple[int, float, str]) -> int:
        return hash(a)

    def hash_optional(a: Optional[int]) -> int:
        return hash(a)

    def hash_tensor(a, b) -> Tuple[bool, bool]:
        return hash(a) == hash(a), hash(a) == hash(b)

    def hash_device(name: str) -> int:
        return hash(lib.device(name))

    def hash_devices(x, kind: str, index: int) -> Tuple[int, int, int, int]:
        made = lib.device(f"{kind}:{index}")
        return hash(x.device), hash(made), hash(lib.device("cuda:1")), hash(lib.device(kind))

    return {k: v for k, v in locals().items() if callable(v)}


def unhashable(lib):
    """``hash()`` of values aten::hash does not hash (a script class even with ``__hash__``,
    lists, dicts, a tuple holding a list) compiles and fails when it runs; an explicit
    ``__hash__()`` is a method call. Each function with its argument."""

    @lib.jit.script
    class Keyed:
        def __init__(self, x: int):
            self.x = x

        def __hash__(self) -> int:
            return self.x * 7

    def hash_object(x: int) -> int:
        return hash(Keyed(x))

    def hash_method(x: int) -> int:
        return Keyed(x).__hash__()

    def hash_list(xs: List[int]) -> int:
        return hash(xs)

    def hash_dict(d: Dict[str, int]) -> int:
        return hash(d)

    def hash_nested(t: Tuple[int, List[int]]) -> int:
        return hash(t)

    def hash_complex(c: complex) -> int:
        return hash(c)

    def object_keys(x: int) -> int:
        d = {Keyed(x): 1}
        return len(d)

    def tuple_keys(x: int) -> int:
        d = {(x, x): 1}
        return len(d)

    def optional_keys(x: Optional[int]) -> int:
        d = {x: 1}
        return len(d)

    arguments = {
        "hash_list": [1, 2],
        "hash_dict": {"a": 1},
        "hash_nested": (1, [2]),
        "hash_complex": 1 + 2j,
    }
    named = {k: v for k, v in locals().items() if k.startswith("hash_") or k.endswith("_keys")}
    return {k: (v, arguments.get(k, 3)) for k, v in named.items()}


def deleting_module(lib):
    class Deletes(lib.nn.Module):
        def __init__(self):
            super().__init__()
            self.x = 1

        def forward(self, a):
            del self.x
            return a

    return Deletes()


def attribute_modules(lib):
    """Modules whose methods assign attributes TorchScript refuses to assign."""

    class NewAttribute(lib.nn.Module):
        def forward(self, a):
            self.nothere = 1
            return a

    class WrongType(lib.nn.Module):
        def __init__(self):
            super().__init__()
            self.count = 0

        def forward(self, a):
            self.count = 1.5
            return a

    return {"new": NewAttribute, "wrong_type": WrongType}


def tensor_slot_modules(lib):
    """Modules whose methods assign parameters, buffers and a submodule's parameter, which
    TorchScript allows: the slot holds the new tensor from then on."""

    class Counts(lib.nn.Module):
        def __init__(self):
            super().__init__()
            self.count = 0
            self.scale = 1.0
            self.register_buffer("total", lib.zeros(3, dtype=lib.float64))

        def forward(self, a):
            for _ in range(2):
                self.total = self.total + a  # read again on each iteration
            self.count += 1
            self.scale = self.scale * 2
            return self.total * self.count

    class ReplacesWeight(lib.nn.Module):
        def __init__(self):
            super().__init__()
            self.weight = lib.nn.Parameter(lib.ones(3, dtype=lib.float64))

        def forward(self, a):
            before = self.weight * 1
            self.weight = a * 2
            return before + self.weight

    class SetsSubmoduleBias(lib.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = lib.nn.Linear(3, 3).double()

        def forward(self, a, flag: bool):
            if flag:
                self.lin.bias = a
            return self.lin(a)

    class MakesParameter(lib.nn.Module):
        def __init__(self):
            super().__init__()
            self.weight = lib.nn.Parameter(lib.ones(3))

        def forward(self, a):
            self.weight = lib.nn.Parameter(a)
            return a

    class AssignsInt(lib.nn.Module):
        def __init__(self):
            super().__init__()
            self.weight = lib.nn.Parameter(lib.ones(3))

        def forward(self, a):
            self.weight = 1
            return a

    return {
        "counts": Counts,
        "replaces_weight": ReplacesWeight,
        "sets_submodule_bias": SetsSubmoduleBias,
        "makes_parameter": MakesParameter,
        "assigns_int": AssignsInt,
    }


def submodule_modules(lib):
    """Modules whose methods assign submodule slots: TorchScript allows a module of the slot's
    type (the slot's calls run it from then on) and refuses anything else."""

    class Swaps(lib.nn.Module):
        """Both modules read before either store; calls through the slot after it."""

        def __init__(self):
            super().__init__()
            self.lin = lib.nn.Linear(3, 3).double()
            self.other = lib.nn.Linear(3, 3).double()

        def forward(self, a, flag: bool):
            if flag:
                self.lin, self.other = self.other, self.lin
            return self.lin(a) + 2 * self.other(a)

    class Nested(lib.nn.Module):
        """A user submodule whose own method reassigns a slot of its own."""

        def __init__(self):
            super().__init__()
            self.inner = Swaps()
            self.spare = lib.nn.Linear(3, 3).double()

        def forward(self, a, flag: bool):
            self.inner.lin = self.spare
            return self.inner(a, flag)

    def replaced_by(make_other):
        class Replaced(lib.nn.Module):
            def __init__(self):
                super().__init__()
                self.lin = lib.nn.Linear(3, 3)
                self.other = make_other()

            def forward(self, a):
                self.lin = self.other
                return self.lin(a)

        return Replaced

    class ByNone(lib.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = lib.nn.Linear(3, 3)

        def forward(self, a):
            self.lin = None
            return a

    class ByNew(ByNone):
        def forward(self, a):
            self.lin = lib.nn.Linear(3, 3)
            return self.lin(a)

    return {
        "swaps": Swaps,
        "nested": Nested,
        "other_sizes": replaced_by(lambda: lib.nn.Linear(3, 4)),
        "other_class": replaced_by(lib.nn.ReLU),
        "none": ByNone,
        "new": ByNew,
    }
