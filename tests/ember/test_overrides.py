"""ember.overrides against torch.overrides: the __torch_function__ protocol's helpers on a
tensor-like type of the user's, and the predicates on each library's own tensors."""

import pytest

import ember
import ember.overrides

torch = pytest.importorskip("torch")
LIBS = {"ember": ember, "torch": torch}


def tensor_like(lib):
    class Logged:
        calls: list = []

        def __init__(self, value):
            self.value = value

        @classmethod
        def __torch_function__(cls, func, types, args=(), kwargs=None):
            cls.calls.append((func.__name__, [t.__name__ for t in types], len(args)))
            if func.__name__ == "declined":
                return NotImplemented
            return ("handled", func.__name__)

    return Logged


def run_protocol(lib):
    overrides = lib.overrides
    Logged = tensor_like(lib)
    seen = []
    plain = lib.ones(2)
    seen.append(overrides.has_torch_function((plain, 1)))
    seen.append(overrides.has_torch_function((Logged(1), plain)))
    seen.append(overrides.has_torch_function_unary(Logged(1)))
    seen.append(overrides.has_torch_function_variadic(plain, Logged(2)))

    def dispatcher(a, b=None):
        return (a, b)

    @overrides.wrap_torch_function(dispatcher)
    def combine(a, b=None):
        return "plain"

    seen.append(combine(1, 2))
    seen.append(combine(Logged(1), b=3))
    seen.append(overrides.handle_torch_function(combine, (Logged(1),), Logged(1), 5))

    def declined(a):
        return a

    with pytest.raises(TypeError):
        overrides.handle_torch_function(declined, (Logged(1),), Logged(1))
    seen.append(Logged.calls)
    seen.append(
        [overrides.is_tensor_like(x) for x in (plain, lib.nn.Parameter(plain), 1, Logged(1))]
    )
    seen.append(
        [
            overrides.is_tensor_method_or_property(f)
            for f in (lib.Tensor.add, lib.add, lib.Tensor.sum, lib.nn.functional.relu)
        ]
    )
    return seen


def test_protocol_helpers_as_torch():
    assert run_protocol(ember) == run_protocol(torch)


def test_module_path():
    import importlib

    assert importlib.import_module("ember.overrides") is ember.overrides
    missing = set(torch.overrides.__all__) - set(dir(ember.overrides))
    # the override tables describe torch's own function list, and the two dispatch
    # re-entry helpers its C++ dispatcher; ember has neither
    assert missing <= {
        "get_ignored_functions",
        "get_overridable_functions",
        "get_testing_overrides",
        "resolve_name",
        "enable_reentrant_dispatch",
        "redispatch_function",
    }
