"""Errors of ember.jit.script next to torch.jit.script's on the same source: the construct
outside the subset, the file, the line, the underlined source; and ember's own refusals
(library calls without an op-table lowering), which name the call."""

from __future__ import annotations

import re

import pytest
import torch

import ember
from ember.jit.frontend import NotSupportedError

from .script_models import errors

pytestmark = pytest.mark.filterwarnings("ignore:`torch.jit.script` is deprecated")
EMBER_ERRORS, TORCH_ERRORS = errors(ember), errors(torch)


def caught(script, fn) -> BaseException:
    with pytest.raises(Exception) as info:
        script(fn)
    return info.value


WORD_FOR_WORD = ["try_block", "global_statement", "lambda_call", "undefined_name"]
WORD_FOR_WORD += ["undefined_deep", "unrolled_break", "unrolled_continue", "bad_annotation"]
# constructs TorchScript names by their ast class, underlining the first character; varargs
# and keyword-only defaults underlined where TorchScript puts them
WORD_FOR_WORD += ["set_literal", "yield_statement", "walrus", "set_comprehension"]
WORD_FOR_WORD += ["star_args", "star_kwargs", "keyword_only_default"]


@pytest.mark.parametrize("name", WORD_FOR_WORD)
def test_error_is_torch_scripts_word_for_word(name):
    mine = caught(ember.jit.script, EMBER_ERRORS[name])
    theirs = caught(torch.jit.script, TORCH_ERRORS[name])
    assert [c.__name__ for c in type(mine).__mro__][:2] == [
        c.__name__ for c in type(theirs).__mro__
    ][:2] or (isinstance(mine, RuntimeError) and type(theirs) is RuntimeError)
    assert str(mine).strip("\n") == str(theirs).strip("\n")


def test_unsupported_nodes_are_not_supported_errors():
    error = caught(ember.jit.script, EMBER_ERRORS["try_block"])
    assert isinstance(error, NotSupportedError)
    assert isinstance(error, ember.jit.frontend.UnsupportedNodeError)
    assert 'script_models.py", line' in str(error) and "~~~ <--- HERE" in str(error)


def test_branch_type_mismatch_names_the_variable_and_types():
    mine = str(caught(ember.jit.script, EMBER_ERRORS["branch_types"]))
    theirs = str(caught(torch.jit.script, TORCH_ERRORS["branch_types"]))
    pattern = (
        r"Type mismatch: z is set to type Tensor.* in the true branch and type int in the false"
    )
    assert re.search(pattern, mine) and re.search(pattern, theirs)
    assert "if n > 0:" in mine


def test_unknown_annotation_names_the_type():
    mine = str(caught(ember.jit.script, EMBER_ERRORS["bad_annotation"]))
    theirs = str(caught(torch.jit.script, TORCH_ERRORS["bad_annotation"]))
    assert mine.startswith("Unknown type name 'NoSuchType'")
    assert theirs.strip("\n").startswith("Unknown type name 'NoSuchType'")


def test_library_call_without_lowering_names_the_call_and_line():
    def uses_numpy_bridge(x):
        return x.numpy()

    error = caught(ember.jit.script, uses_numpy_bridge)
    assert isinstance(error, NotSupportedError)
    assert "Tensor method 'numpy'" in str(error)
    assert re.search(r'test_script_errors.py", line \d+', str(error))
    assert "x.numpy()" in str(error)


def test_with_statement_on_an_unsupported_context_manager_is_refused():
    def with_profile(x):
        with ember.profiler.profile():
            return x * 2

    error = caught(ember.jit.script, with_profile)
    assert isinstance(error, NotSupportedError)
    assert "<class 'ember.profiler.profile'> is currently not supported in Torchscript" in str(
        error
    )
    assert "with ember.profiler.profile():" in str(error)


def test_wrong_argument_types_are_script_errors():
    def bad_call(x):
        return ember.cat(x, "dim")

    error = caught(ember.jit.script, bad_call)
    assert isinstance(error, RuntimeError)
    assert "cat(): expected a value of type 'Tensor[]' for argument 'tensors'" in str(error)


def test_no_source_is_an_os_error_as_in_torch():
    namespace = {}
    exec("def made(x):\n    return x\n", namespace)
    with pytest.raises(OSError, match="Can't get source for"):
        ember.jit.script(namespace["made"])


def test_break_in_a_module_list_loop_is_refused_as_torch_refuses_it():
    """A ``ModuleList`` loop is unrolled: TorchScript has no loop flag to clear there."""

    def module(lib):
        class Stack(lib.nn.Module):
            def __init__(self):
                super().__init__()
                self.layers = lib.nn.ModuleList([lib.nn.Linear(3, 3) for _ in range(3)])

            def forward(self, x):
                for layer in self.layers:
                    x = layer(x)
                    if x.sum() > 0:
                        break
                return x

        return Stack()

    mine = caught(ember.jit.script, module(ember))
    theirs = caught(torch.jit.script, module(torch))
    assert isinstance(mine, RuntimeError) and type(theirs) is RuntimeError
    assert str(mine).strip("\n") == str(theirs).strip("\n")
