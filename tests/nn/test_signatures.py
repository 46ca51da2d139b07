"""The nn API's names, argument order and defaults against PyTorch's, read from the signatures:
a script that passes arguments by position or relies on a default must get the same thing."""

from __future__ import annotations

import importlib
import inspect

import pytest

import ember

from . import coverage

torch = pytest.importorskip("torch")

# Every class and function torch.nn has (coverage.py lists them from the installed PyTorch).
LAYERS = coverage.torch_classes()
FUNCTIONAL = [n for n in coverage.torch_functions() if n not in coverage.EXCLUDED]

INIT = [
    "uniform_",
    "normal_",
    "zeros_",
    "ones_",
    "constant_",
    "xavier_uniform_",
    "xavier_normal_",
    "kaiming_uniform_",
    "kaiming_normal_",
    "trunc_normal_",
    "orthogonal_",
    "calculate_gain",
]

# torch.nn.utils and its submodules' public functions and classes ("module.name" for those in
# a submodule); the submodules themselves are namespaces, not callables.
_UTIL_MODULES = ("rnn", "parametrize", "parametrizations", "prune", "stateless")
UTILS = [
    n
    for n in torch.nn.utils.__all__
    if n not in _UTIL_MODULES and callable(getattr(torch.nn.utils, n))
]


def _public(module) -> list:
    """A module's __all__, or (prune has none) the names it defines itself."""
    names = getattr(module, "__all__", None) or [
        n
        for n in dir(module)
        if not n.startswith("_")
        and getattr(getattr(module, n), "__module__", "") == module.__name__
    ]
    return [n for n in names if callable(getattr(module, n))]


UTILS += [
    f"{m}.{n}"
    for m in _UTIL_MODULES
    for n in _public(importlib.import_module(f"torch.nn.utils.{m}"))
]

# Arguments PyTorch has that ember leaves out on purpose, as data: (name, argument) -> why.
OMITTED = {
    ("normalize", "out"): "no out= tensors in ember.nn.functional",
}


# Builtins whose docstrings give no signature line: the arguments their docs describe.
UNDOCUMENTED = {
    "conv_tbc": "input, weight, bias, pad=0",
    "has_torch_function": "relevant_args",
    "has_torch_function_unary": "input",
    "has_torch_function_variadic": "*args",
}


def _documented(fn, name=None):
    """A stand-in with the signature a builtin's docstring opens with (torch's C functions have
    no inspectable signature; their docs start ``conv2d(input, weight, ...) -> Tensor``)."""
    name = name or fn.__name__
    namespace = {}
    if name in UNDOCUMENTED:
        exec(f"def stand_in({UNDOCUMENTED[name]}): pass", namespace)
        return namespace["stand_in"]
    doc = fn.__doc__ or ""
    start = doc.index(name + "(") + len(name) + 1
    depth, end = 1, start
    while depth:
        depth += {"(": 1, ")": -1}.get(doc[end], 0)
        end += 1
    exec(f"def stand_in({' '.join(doc[start : end - 1].split())}): pass", namespace)
    return namespace["stand_in"]


def _parameters(fn, name=None):
    """(name, default) of the arguments a caller can pass, in order; *args/**kwargs excluded."""
    try:
        signature = inspect.signature(fn)
    except (TypeError, ValueError):
        signature = inspect.signature(_documented(fn, name))
    return [
        (p.name, p.default if p.default is not inspect.Parameter.empty else "<required>")
        for p in signature.parameters.values()
        if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD) and p.name != "self"
    ]


def _same(ours, theirs, label):
    theirs_params = [(n, d) for n, d in _parameters(theirs, label) if (label, n) not in OMITTED]
    ours_params = _parameters(ours)
    names = [n for n, _ in theirs_params]
    assert [n for n, _ in ours_params][: len(names)] == names, f"{label}: argument names/order"
    for (name, default), (_, ours_default) in zip(theirs_params, ours_params):
        if isinstance(default, (bool, int, float, str, type(None), tuple)):
            assert ours_default == default, f"{label}: default of {name}"
            assert isinstance(ours_default, bool) == isinstance(default, bool), f"{label}: {name}"


@pytest.mark.parametrize("name", LAYERS)
def test_layer_constructor(name):
    ours, theirs = getattr(ember.nn, name), getattr(torch.nn, name)
    _same(ours, theirs, name)


@pytest.mark.parametrize("name", LAYERS)
def test_layer_forward(name):
    ours, theirs = getattr(ember.nn, name).forward, getattr(torch.nn, name).forward
    if name in ("ModuleList", "ModuleDict", "ParameterList", "ParameterDict"):
        return
    _same(ours, theirs, f"{name}.forward")


@pytest.mark.parametrize("name", FUNCTIONAL)
def test_functional(name):
    _same(getattr(ember.nn.functional, name), getattr(torch.nn.functional, name), name)


@pytest.mark.parametrize("name", INIT)
def test_init(name):
    _same(getattr(ember.nn.init, name), getattr(torch.nn.init, name), name)


def _dotted(root, name):
    for part in name.split("."):
        root = getattr(root, part)
    return root


@pytest.mark.parametrize("name", UTILS)
def test_utils(name):
    _same(_dotted(ember.nn.utils, name), _dotted(torch.nn.utils, name), name)


@pytest.mark.parametrize(
    "method",
    [
        "state_dict",
        "load_state_dict",
        "named_parameters",
        "named_buffers",
        "named_modules",
        "named_children",
        "parameters",
        "buffers",
        "children",
        "modules",
        "train",
        "eval",
        "zero_grad",
        "apply",
        "requires_grad_",
        "to",
        "register_buffer",
        "register_parameter",
        "add_module",
        "register_forward_pre_hook",
        "register_forward_hook",
        "get_submodule",
        "get_parameter",
        "get_buffer",
    ],
)
def test_module_methods(method):
    ours, theirs = getattr(ember.nn.Module, method), getattr(torch.nn.Module, method)
    if method in ("to", "state_dict"):  # overloads written as *args in both
        return
    _same(ours, theirs, f"Module.{method}")
