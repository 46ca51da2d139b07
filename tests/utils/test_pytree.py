"""ember.utils._pytree against torch.utils._pytree: the same leaves, specs (their reprs), trees
rebuilt, maps, registrations and errors, on the same trees."""

import collections

import numpy as np
import pytest

import ember
import ember.utils._pytree as ours

torch = pytest.importorskip("torch")
theirs = pytest.importorskip("torch.utils._pytree")

Point = collections.namedtuple("Point", ["x", "y"])

TREES = {
    "leaf": 7,
    "none": None,
    "tuple": (1, 2, (3,)),
    "empty": ((), [], {}),
    "list of dicts": [{"b": 1, "a": 2}, {"c": [3, 4]}],
    "namedtuple": Point(1, [2, (3, None)]),
    "ordereddict": collections.OrderedDict([("z", 1), ("y", (2, 3))]),
    "defaultdict": collections.defaultdict(list, {"k": [1, 2], "j": 3}),
    "deque": collections.deque([1, (2, 3)], maxlen=4),
    "mixed": {"p": Point((1, 2), {"q": None}), "d": collections.deque([4]), "s": "leaf"},
}


@pytest.mark.parametrize("name", sorted(TREES))
def test_flatten_unflatten_and_spec_as_torch(name):
    tree = TREES[name]
    leaves, spec = ours.tree_flatten(tree)
    t_leaves, t_spec = theirs.tree_flatten(tree)
    assert leaves == t_leaves
    assert repr(spec) == repr(t_spec)
    assert ours.treespec_pprint(spec) == theirs.treespec_pprint(t_spec)
    for attribute in ("num_leaves", "num_nodes", "num_children"):
        assert getattr(spec, attribute) == getattr(t_spec, attribute), attribute
    assert spec.is_leaf() == t_spec.is_leaf()
    rebuilt = ours.tree_unflatten(
        [leaf * 10 if isinstance(leaf, int) else leaf for leaf in leaves], spec
    )
    expected = theirs.tree_unflatten(
        [leaf * 10 if isinstance(leaf, int) else leaf for leaf in t_leaves], t_spec
    )
    assert rebuilt == expected
    assert type(rebuilt) is type(expected)
    assert ours.tree_leaves(tree) == theirs.tree_leaves(tree)
    assert list(ours.tree_iter(tree)) == list(theirs.tree_iter(tree))
    assert ours.tree_is_leaf(tree) == theirs.tree_is_leaf(tree)


@pytest.mark.parametrize("name", sorted(TREES))
def test_maps_and_predicates_as_torch(name):
    tree = TREES[name]

    def double(x):
        return x * 2

    def tagged(x):
        return (x, "seen")

    assert ours.tree_map(tagged, tree) == theirs.tree_map(tagged, tree)
    assert ours.tree_map_only(int, double, tree) == theirs.tree_map_only(int, double, tree)
    for predicate in (lambda x: x is None, lambda x: isinstance(x, int)):
        assert ours.tree_all(predicate, tree) == theirs.tree_all(predicate, tree)
        assert ours.tree_any(predicate, tree) == theirs.tree_any(predicate, tree)
        assert ours.tree_all_only(int, predicate, tree) == theirs.tree_all_only(
            int, predicate, tree
        )
        assert ours.tree_any_only(int, predicate, tree) == theirs.tree_any_only(
            int, predicate, tree
        )
    seen, t_seen = [], []
    assert ours.tree_map_(seen.append, tree) is tree
    theirs.tree_map_(t_seen.append, tree)
    assert seen == t_seen


def test_is_leaf_stops_the_walk():
    tree = {"a": (1, 2), "b": [(3, 4)]}

    def is_tuple(x):
        return isinstance(x, tuple)

    leaves, spec = ours.tree_flatten(tree, is_leaf=is_tuple)
    t_leaves, t_spec = theirs.tree_flatten(tree, is_leaf=is_tuple)
    assert leaves == t_leaves == [(1, 2), (3, 4)]
    assert repr(spec) == repr(t_spec)
    assert ours.tree_map(len, tree, is_leaf=is_tuple) == theirs.tree_map(
        len, tree, is_leaf=is_tuple
    )


def test_several_trees_mapped_with_the_first_as_prefix():
    first = {"a": 1, "b": (2, 3)}
    second = {"b": ([5], 6), "a": {"deep": 4}}

    def pair(x, y):
        return (x, y)

    assert ours.tree_map(pair, first, second) == theirs.tree_map(pair, first, second)
    mapping = collections.OrderedDict([("b", (7, 8)), ("a", 9)])
    assert ours.tree_map(pair, first, mapping) == theirs.tree_map(pair, first, mapping)


@pytest.mark.parametrize(
    "tree, other",
    [
        ((1, 2), [1, 2]),
        ((1, 2), (1, 2, 3)),
        ({"a": 1, "b": 2}, {"a": 1, "c": 2}),
        ({"a": 1}, {"a": 1, "b": 2, "c": 3}),
        (Point(1, 2), collections.namedtuple("Other", ["x", "y"])(1, 2)),
    ],
)
def test_prefix_mismatch_errors_as_torch(tree, other):
    with pytest.raises(ValueError) as expected:
        theirs.tree_structure(tree).flatten_up_to(other)
    with pytest.raises(ValueError) as got:
        ours.tree_structure(tree).flatten_up_to(other)
    assert str(got.value).split(";")[0] == str(expected.value).split(";")[0]
    if "keys" in str(expected.value) or "arity" in str(expected.value):
        assert str(got.value) == str(expected.value)


def test_unflatten_with_wrong_count_raises_as_torch():
    spec, t_spec = ours.tree_structure((1, (2, 3))), theirs.tree_structure((1, (2, 3)))
    with pytest.raises(ValueError) as expected:
        t_spec.unflatten([1, 2])
    with pytest.raises(ValueError) as got:
        spec.unflatten([1, 2])
    assert str(got.value) == str(expected.value)
    with pytest.raises(TypeError):
        ours.tree_unflatten([1], "not a spec")


class Pair:
    def __init__(self, left, right, tag):
        self.left, self.right, self.tag = left, right, tag

    def __eq__(self, other):
        return isinstance(other, Pair) and (self.left, self.right, self.tag) == (
            other.left,
            other.right,
            other.tag,
        )


def _flatten_pair(pair):
    return [pair.left, pair.right], pair.tag


def _unflatten_pair(values, tag):
    return Pair(*values, tag)


def test_registered_class_flattens_like_torch():
    ours.register_pytree_node(Pair, _flatten_pair, _unflatten_pair, serialized_type_name="t.Pair")
    theirs.register_pytree_node(Pair, _flatten_pair, _unflatten_pair, serialized_type_name="t.Pair")
    tree = {"x": Pair(1, (2, 3), "tag")}
    leaves, spec = ours.tree_flatten(tree)
    t_leaves, t_spec = theirs.tree_flatten(tree)
    assert leaves == t_leaves == [1, 2, 3]
    assert repr(spec) == repr(t_spec)
    assert ours.tree_map(str, tree) == theirs.tree_map(str, tree)
    with pytest.raises(ValueError) as expected:
        theirs.register_pytree_node(Pair, _flatten_pair, _unflatten_pair)
    with pytest.raises(ValueError) as got:
        ours.register_pytree_node(Pair, _flatten_pair, _unflatten_pair)
    assert str(got.value) == str(expected.value)
    with pytest.raises(ValueError) as expected:
        t_spec.flatten_up_to({"x": Pair(1, (2, 3), "other")})
    with pytest.raises(ValueError) as got:
        spec.flatten_up_to({"x": Pair(1, (2, 3), "other")})
    assert str(got.value).split(";")[0] == str(expected.value).split(";")[0]


def test_old_registration_name_warns():
    class Box:
        def __init__(self, value):
            self.value = value

    with pytest.warns(FutureWarning, match="register_pytree_node"):
        ours._register_pytree_node(Box, lambda b: ([b.value], None), lambda v, _: Box(*v))
    assert ours.tree_map(lambda x: x + 1, Box(1)).value == 2


def test_tensors_mapped_and_transforms_take_new_node_types():
    values = np.arange(6.0).reshape(2, 3)
    tree = collections.OrderedDict(w=ember.tensor(values), b=[ember.tensor(values[0])])
    doubled = ours.tree_map(lambda t: t * 2, tree)
    assert isinstance(doubled, collections.OrderedDict)
    np.testing.assert_array_equal(doubled["w"].numpy(), values * 2)
    # vmap over an OrderedDict argument, as torch.func does
    out = ember.func.vmap(lambda d: d["w"].sum() + d["b"][0].sum())(
        collections.OrderedDict(w=ember.tensor(values), b=[ember.tensor(values)])
    )
    t_out = torch.func.vmap(lambda d: d["w"].sum() + d["b"][0].sum())(
        collections.OrderedDict(w=torch.tensor(values), b=[torch.tensor(values)])
    )
    np.testing.assert_allclose(out.numpy(), t_out.numpy())


def test_module_path_and_names():
    import ember.utils

    assert ember.utils._pytree is ours
    missing = [name for name in theirs.__all__ if not hasattr(ours, name)]
    allowed = {  # the key-path API, spec serialization, structseq and type aliases: not yet
        "DumpableContext",
        "FlattenFn",
        "FromDumpableContextFn",
        "PyTreeSpec",
        "ToDumpableContextFn",
        "UnflattenFn",
        "is_structseq",
        "is_structseq_class",
        "is_structseq_instance",
        "key_get",
        "keystr",
        "tree_flatten_with_path",
        "tree_leaves_with_path",
        "tree_map_with_path",
        "treespec_dumps",
        "treespec_loads",
    }
    assert sorted(set(missing) - allowed) == []
