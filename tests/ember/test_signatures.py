"""The Python signatures of ember's public functions against PyTorch's, wherever PyTorch's is
introspectable (defined in Python): the same parameter names, kinds, order and defaults, so a
call written for torch binds the same way in ember. Builtins (``torch._C`` functions) have no
signature to compare; the ``(*args, **kwargs)`` wrappers of ``boolean_dispatch`` neither."""

from __future__ import annotations

import inspect

import pytest
import torch
import torch.nn.functional

import ember
import ember.nn.functional

NAMESPACES = {
    "": (ember, torch),
    "nn.functional.": (ember.nn.functional, torch.nn.functional),
    "linalg.": (ember.linalg, torch.linalg),
    "special.": (ember.special, torch.special),
    "fft.": (ember.fft, torch.fft),
}

# Names whose difference is deliberate, with why.
EXCEPTIONS = {
    # the compiler (compiler/) keeps its own options: no name=/recompile_limit=/
    # isolate_recompiles=/shapes_spec=, and 'ember' is its default backend, not inductor
    "compile": "ember.compiler's options",
}
_OPAQUE = "(*args, **kwargs)"


def _parameters(fn) -> list:
    """(name, kind, default) of each parameter; torch objects in defaults as ember's."""
    found = []
    for p in inspect.signature(fn).parameters.values():
        default = "<required>" if p.default is inspect.Parameter.empty else p.default
        if not isinstance(default, (str, int, float, bool, tuple, type(None))):
            default = repr(default).replace("torch.", "ember.")
        found.append((p.name, p.kind.name, default))
    return found


def _pairs():
    for prefix, (ours, theirs) in NAMESPACES.items():
        for name in sorted(dir(theirs)):
            want, got = getattr(theirs, name), getattr(ours, name, None)
            if name.startswith("_") or got is None or not inspect.isfunction(want):
                continue
            if not want.__module__.startswith("torch"):
                continue  # re-exported from elsewhere (typing, math...)
            if str(inspect.signature(want)) == _OPAQUE:
                continue
            yield prefix + name, want, got


PAIRS = list(_pairs())


def test_the_sweep_compares_enough_functions():
    # norm, split, einsum, cdist and the nn.functional layer: a sweep that finds nothing to
    # compare would pass vacuously
    names = {name for name, _, _ in PAIRS}
    assert {"norm", "split", "einsum", "cdist", "nn.functional.dropout"} <= names
    assert len(PAIRS) > 100  # 128 in PyTorch 2.13


@pytest.mark.parametrize("name, want, got", PAIRS, ids=[name for name, _, _ in PAIRS])
def test_signature_is_pytorchs(name, want, got):
    if name in EXCEPTIONS:
        assert _parameters(got) != _parameters(want), f"{name} now matches: drop its exception"
        return
    assert _parameters(got) == _parameters(want)


def test_norm_takes_out_positionally_before_dtype():
    values = [[3.0, 4.0], [1.0, 2.0]]
    x, t = ember.tensor(values), torch.tensor(values)
    out, want_out = ember.empty(2, dtype=ember.float64), torch.empty(2, dtype=torch.float64)
    got = ember.norm(x, 2, 1, False, out, ember.float64)
    want = torch.norm(t, 2, 1, False, want_out, torch.float64)
    assert got is out and got.tolist() == want.tolist() == want_out.tolist()


def test_split_names_its_tensor_tensor():
    got = ember.split(tensor=ember.arange(5), split_size_or_sections=2)
    want = torch.split(tensor=torch.arange(5), split_size_or_sections=2)
    assert [p.tolist() for p in got] == [p.tolist() for p in want]


@pytest.mark.parametrize(
    "args",
    [
        ("ij,jk->ik", "a", "b"),
        ("ij,jk", ["a", "b"]),
        ("a", [0, 1], "b", [1, 2], [0, 2]),
        ("a", [0, 27], "b", [27, 2]),
        ("a", [..., 1], "b", [1, 2]),
    ],
)
def test_einsum_takes_the_equation_and_the_sublist_forms(args):
    a = [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]
    b = [[1.0, 0.0, 2.0, 1.0], [0.0, 1.0, 1.0, 3.0], [2.0, 2.0, 0.0, 1.0]]

    def call(lib):
        tensors = {"a": lib.tensor(a), "b": lib.tensor(b)}
        fill = lambda v: tensors.get(v, v) if isinstance(v, str) and len(v) == 1 else v  # noqa: E731
        return lib.einsum(
            *(([fill(v) for v in arg] if arg == ["a", "b"] else fill(arg)) for arg in args)
        )

    assert call(ember).tolist() == call(torch).tolist()


@pytest.mark.parametrize("args", [(), ("ij",), ("a", [0, 60])])
def test_einsum_refuses_as_pytorch(args):
    def call(lib):
        return lib.einsum(*(lib.ones(2, 2) if a == "a" else a for a in args))

    with pytest.raises(ValueError) as want:
        call(torch)
    with pytest.raises(ValueError) as got:
        call(ember)
    assert str(got.value) == str(want.value)


def test_cdist_checks_compute_mode_as_pytorch():
    a, b = [[0.0, 1.0], [2.0, 3.0]], [[1.0, 1.0]]
    for mode in ("use_mm_for_euclid_dist", "donot_use_mm_for_euclid_dist"):
        got = ember.cdist(ember.tensor(a), ember.tensor(b), compute_mode=mode)
        want = torch.cdist(torch.tensor(a), torch.tensor(b), compute_mode=mode)
        torch.testing.assert_close(torch.from_numpy(got.numpy()), want)
    with pytest.raises(ValueError, match="None is not a valid value for compute_mode"):
        ember.cdist(ember.tensor(a), ember.tensor(b), compute_mode=None)
