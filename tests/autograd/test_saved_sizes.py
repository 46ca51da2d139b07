"""``grad_fn._saved_<argument>_sym_sizes`` and ``_sym_numel`` against PyTorch's: the same
attribute names on the same nodes, with the input sizes the node was made from, and none on
nodes whose PyTorch counterpart saves no sizes."""

from __future__ import annotations

import pytest
import torch

import ember


def _inputs(lib):
    gen = torch.Generator().manual_seed(0)
    x = torch.randn(2, 3, 4, dtype=torch.float64, generator=gen)
    m = torch.randn(3, 4, dtype=torch.float64, generator=gen)
    if lib is ember:
        x, m = ember.tensor(x.numpy()), ember.tensor(m.numpy())
    return x.requires_grad_(), m.requires_grad_(), lib.tensor([1, 0])


# (name, call): the same expression in both libraries, whose grad_fn is compared
CASES = [
    ("sum", lambda lib, x, m, i: x.sum()),
    ("sum_dim", lambda lib, x, m, i: x.sum(1)),
    ("sum_dims_keepdim", lambda lib, x, m, i: x.sum((0, 2), keepdim=True)),
    ("mean", lambda lib, x, m, i: x.mean()),
    ("mean_dim", lambda lib, x, m, i: x.mean(1)),
    ("expand", lambda lib, x, m, i: m.expand(2, 3, 4)),
    ("expand_as", lambda lib, x, m, i: m.expand_as(x)),
    ("view", lambda lib, x, m, i: x.view(6, 4)),
    ("reshape", lambda lib, x, m, i: x.reshape(4, 6)),
    ("flatten", lambda lib, x, m, i: x.flatten()),
    ("permute", lambda lib, x, m, i: x.permute(2, 0, 1)),
    ("movedim", lambda lib, x, m, i: x.movedim(0, 2)),
    ("sum_to_size", lambda lib, x, m, i: x.sum_to_size(1, 3, 1)),
    ("select", lambda lib, x, m, i: x.select(1, 2)),
    ("slice", lambda lib, x, m, i: x[:, 1:3]),
    ("narrow", lambda lib, x, m, i: x.narrow(2, 1, 2)),
    ("index_select", lambda lib, x, m, i: x.index_select(1, i)),
    ("squeeze", lambda lib, x, m, i: x[:, :1].squeeze(1)),
    ("squeeze_all", lambda lib, x, m, i: x[:1].squeeze()),
    ("repeat", lambda lib, x, m, i: m.repeat(2, 1)),
    ("max_dim", lambda lib, x, m, i: x.max(1)[0]),
    ("min_dim", lambda lib, x, m, i: x.min(1)[0]),
    ("median_dim", lambda lib, x, m, i: x.median(1)[0]),
    ("nanmedian_dim", lambda lib, x, m, i: x.nanmedian(1)[0]),
    ("mode", lambda lib, x, m, i: x.mode(1)[0]),
    ("kthvalue", lambda lib, x, m, i: x.kthvalue(1, 1)[0]),
    ("topk", lambda lib, x, m, i: x.topk(2, 1)[0]),
    ("sort", lambda lib, x, m, i: x.sort(1)[0]),
    ("diagonal", lambda lib, x, m, i: m.diagonal()),
    ("unfold", lambda lib, x, m, i: m.unfold(1, 2, 1)),
    ("split", lambda lib, x, m, i: x.split(1, 1)[0]),
    ("split_with_sizes", lambda lib, x, m, i: x.split([1, 2], 1)[0]),
    ("trace", lambda lib, x, m, i: m[:, :3].trace()),
    ("mm", lambda lib, x, m, i: m @ m.t()),
    ("addmm", lambda lib, x, m, i: lib.addmm(m[:, :3], m, m.t())),
    ("mul", lambda lib, x, m, i: x * m),
    ("transpose", lambda lib, x, m, i: x.transpose(0, 2)),
    # single sizes (_sym_argsize_<dim>)
    ("im2col", lambda lib, x, m, i: lib.nn.functional.unfold(x.unsqueeze(0), 2)),
    ("addbmm", lambda lib, x, m, i: lib.addbmm(m[:, :3], x, x.transpose(1, 2))),
    ("embedding", lambda lib, x, m, i: lib.nn.functional.embedding(i, m)),
]
SUFFIXES = ("_sym_sizes", "_sym_numel")


def _saved_sizes(node) -> dict:
    return {
        a: getattr(node, a)
        for a in dir(node)
        if a.startswith("_saved_") and (a.endswith(SUFFIXES) or "_sym_argsize_" in a)
    }


@pytest.mark.parametrize("name, call", CASES, ids=[name for name, _ in CASES])
def test_saved_sizes_are_pytorchs(name, call):
    want_node = call(torch, *_inputs(torch)).grad_fn
    got_node = call(ember, *_inputs(ember)).grad_fn
    assert got_node.name() == want_node.name()
    want = _saved_sizes(want_node)
    got = {attribute: getattr(got_node, attribute) for attribute in want}
    assert got == want
    for attribute in (
        "_saved_self_sym_sizes",
        "_saved_self_sym_numel",
        "_saved_other_sym_sizes",
        "_saved_self_sym_argsize_0",
        "_saved_self_sym_argsize_minus_3",
    ):
        if attribute not in want:  # none where PyTorch's node has none
            with pytest.raises(AttributeError, match=attribute):
                getattr(got_node, attribute)


def test_sizes_are_tuples_of_ints():
    x = ember.ones(2, 3, requires_grad=True)
    sizes = x.sum().grad_fn._saved_self_sym_sizes
    assert type(sizes) is tuple and all(type(s) is int for s in sizes)
    assert type(x.mean().grad_fn._saved_self_sym_numel) is int
