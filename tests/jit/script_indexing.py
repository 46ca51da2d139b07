"""Programs for tests/jit/test_script_indexing.py (issue 16): advanced indexing (tensor, list
and mask indices, reads, writes and augmented writes) and ``del`` of nested items; torch and
ember script this same source (no library calls, so no library parameter)."""
# ruff: noqa: UP006 - typing.List/Dict, as TorchScript sources spell them

from typing import Dict, List  # noqa: UP035


def by_tensor(x, idx):
    return x[idx]


def by_mask(x):
    return x[x > 0]


def by_list(x):
    return x[[0, 2]]


def mixed(x, idx):
    return x[:, idx] + x[1:, idx].sum()


def two_tensors(x, i, j):
    return x[i, j]


def with_none(x, idx):
    return x[None, idx]


def after_ellipsis(x, idx):
    return x[..., idx]


def put(x, idx, v):
    y = x.clone()
    y[idx] = v
    return y


def put_mask(x):
    y = x * 1
    y[y > 0] = 0.5
    return y


def put_columns(x, idx):
    y = x * 1
    y[:, idx] = 0.0
    return y


def put_then_read(x, idx):
    y = x * 1
    before = y.sum()
    y[idx] = 2.0
    return y.sum() - before  # the two sums must not be merged across the write


def aug(x, idx):
    y = x * 1
    y[idx] += 1
    return y


def del_nested(a: int) -> List[List[int]]:
    # built by append: torch.jit.script's result for a nested list literal keeps the deleted
    # item (its inner lists come back as copies), where Python and ember drop it
    xs: List[List[int]] = []
    xs.append([1, 2])
    xs.append([3, a, 4])
    del xs[1][0]
    return xs


def del_nested_dict(a: int) -> Dict[str, List[int]]:
    d = {"a": [1, 2, a]}
    del d["a"][0]
    return d


def del_slice(a: int) -> List[int]:
    xs = [1, 2, a, 4]
    del xs[1:3]
    return xs
