"""The op schema parser."""

from __future__ import annotations

import pytest

from ember.dispatcher.optable import OPS
from ember.dispatcher.schema import SchemaError, parse, python_signature


def test_simple_schema():
    s = parse("add(Tensor input, Tensor other, *, Scalar alpha=1) -> Tensor")
    assert s.name == "add" and s.namespace is None and s.qualified_name == "add"
    assert [a.name for a in s.args] == ["input", "other", "alpha"]
    assert [a.type for a in s.args] == ["Tensor", "Tensor", "Scalar"]
    assert [a.kwarg_only for a in s.args] == [False, False, True]
    assert [a.has_default for a in s.args] == [False, False, True]
    assert s.args[2].default == 1
    assert s.returns == (("Tensor", None),) and not s.returns_tuple
    assert s.tensor_positions == (0, 1)
    assert [a.name for a in s.positional] == ["input", "other"]


def test_namespaced_name():
    s = parse("myns::fused_bias_gelu(Tensor x, Tensor bias) -> Tensor")
    assert (s.namespace, s.name, s.qualified_name) == (
        "myns",
        "fused_bias_gelu",
        "myns::fused_bias_gelu",
    )


@pytest.mark.parametrize(
    "decl, base, is_list, optional",
    [
        ("Tensor x", "Tensor", False, False),
        ("Tensor? x", "Tensor", False, True),
        ("Tensor[] x", "Tensor", True, False),
        ("Tensor?[] x", "Tensor", True, True),
        ("int[] x", "int", True, False),
        ("int[2] x", "int", True, False),
        ("int[]? x", "int", True, True),
        ("ScalarType? x", "ScalarType", False, True),
        ("Device? x", "Device", False, True),
        ("Generator? x", "Generator", False, True),
        ("str x", "str", False, False),
        ("float x", "float", False, False),
        ("bool x", "bool", False, False),
    ],
)
def test_types(decl, base, is_list, optional):
    arg = parse(f"f({decl}) -> Tensor").args[0]
    assert (arg.type, arg.is_list, arg.optional) == (base, is_list, optional)
    assert arg.is_tensor is (base == "Tensor")


@pytest.mark.parametrize(
    "default, value",
    [
        ("None", None),
        ("True", True),
        ("False", False),
        ("inf", float("inf")),
        ("-inf", -float("inf")),
        ("-1", -1),
        ("0.5", 0.5),
        ("1e-5", 1e-5),
        ("'fro'", "fro"),
        ('"mean"', "mean"),
        ("[0, 1]", [0, 1]),
        ("(2, 3)", [2, 3]),  # tuples become lists, like lists
        ("[]", []),
    ],
)
def test_defaults(default, value):
    arg = parse(f"f(Tensor x, Scalar? y={default}) -> Tensor").args[1]
    assert arg.default == value and type(arg.default) is type(value)


def test_commas_inside_defaults_and_quotes():
    s = parse("f(Tensor x, int[] dims=[0, 1], str sep=', ', *, int k=2) -> Tensor")
    assert [a.name for a in s.args] == ["x", "dims", "sep", "k"]
    assert s.args[1].default == [0, 1] and s.args[2].default == ", "


def test_tuple_returns():
    s = parse("max(Tensor input, int dim, bool keepdim=False) -> (Tensor values, Tensor indices)")
    assert s.returns_tuple
    assert s.returns == (("Tensor", "values"), ("Tensor", "indices"))
    assert parse("unbind(Tensor input, int dim=0) -> Tensor[]").returns == (("Tensor[]", None),)
    assert parse("g(Tensor x) -> ()").returns == ()


def test_no_arguments_and_whitespace():
    s = parse("  f (  ) ->  Tensor  ")
    assert s.args == () and s.returns == (("Tensor", None),)
    s = parse("f(Tensor  x ,\n   int   y = 3) -> Tensor")
    assert [(a.name, a.default) for a in s.args[1:]] == [("y", 3)]


@pytest.mark.parametrize(
    "text, message",
    [
        ("add(Tensor x, Tensor y)", "schema must look like 'name(Type arg, ...) -> Ret'"),
        ("add Tensor x -> Tensor", "schema must look like"),
        ("1add(Tensor x) -> Tensor", "schema must look like"),
        ("f(Tensor x) ->", "schema must look like"),
        ("f(Tensorr x) -> Tensor", "unknown type 'Tensorr'"),
        ("f(Tensor(a!) x) -> Tensor", "unknown type 'Tensor(a!)'"),
        ("f(Tensor) -> Tensor", "argument 'Tensor' must be 'Type name'"),
        ("f(Tensor x y) -> Tensor", "argument 'Tensor x y' must be 'Type name'"),
        ("f(Tensor x, , int y) -> Tensor", "argument '' must be 'Type name'"),
        ("f(Tensor x, int x) -> Tensor", "argument 'x' appears twice"),
        ("f(Tensor x, int y=foo) -> Tensor", "bad default 'foo'"),
        ("f(Tensor x, int y=[1,) -> Tensor", "bad default"),
        ("f(Tensor x, int y=1, int z) -> Tensor", "argument 'z' without a default follows"),
        (
            "f(Tensor x, int y=None) -> Tensor",
            "defaults to None but its type 'int' is not optional",
        ),
        ("f(Tensor x) -> Tnsor", "unknown type 'Tnsor'"),
        ("f(Tensor x) -> Tensor out", "return 'Tensor out' must be 'Type'"),
        ("f(Tensor x) -> (Tensor a, Tensor b c)", "return 'Tensor b c' must be 'Type'"),
        ("f(Tensor x) -> (Tensor a, Bogus b)", "unknown type 'Bogus'"),
    ],
)
def test_errors_quote_the_schema(text, message):
    with pytest.raises(SchemaError) as info:
        parse(text)
    assert message in str(info.value)
    assert text in str(info.value)
    assert isinstance(info.value, ValueError)


def test_keyword_only_arguments_may_skip_defaults():
    s = parse("f(Tensor x, int k=1, *, int j, bool flag=False) -> Tensor")
    assert [(a.name, a.kwarg_only, a.has_default) for a in s.args] == [
        ("x", False, False),
        ("k", False, True),
        ("j", True, False),
        ("flag", True, True),
    ]


def test_python_signature():
    s = parse("s(Tensor input, int[]? dim=None, bool k=False, *, ScalarType? dtype=None) -> Tensor")
    assert python_signature(s) == "input, dim=None, k=False, *, dtype=None"
    assert python_signature(s, first="self") == "self, dim=None, k=False, *, dtype=None"
    s = parse("f(Tensor x, int[] dims=[0, 1], str mode='a') -> Tensor")
    assert python_signature(s) == "x, dims=[0, 1], mode='a'"


def test_every_op_in_the_table_parses_back():
    for name, op in OPS.items():
        again = parse(op.schema.text)
        assert again == op.schema, name
        assert op.name == again.qualified_name
