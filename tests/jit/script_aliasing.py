"""Functions for tests/jit/test_script_aliasing.py: lists and dicts updated through an index or
a second name, written once against a library (torch and ember script this same source).
TorchScript's lists and dicts are references, as Python's: every name sees every update."""
# ruff: noqa: UP006, UP035 - typing.List/Dict, as TorchScript sources spell them

from typing import Dict, List


def aliasing(lib):
    """name -> function of one int (``tensors``: of one tensor)."""

    def nested_append(n: int) -> List[List[int]]:
        xs: List[List[int]] = [lib.jit.annotate(List[int], [])]
        xs[0].append(1)
        for i in range(n):
            xs.append([i])
            xs[-1].append(i * 2)
        return xs

    def dict_append(n: int) -> Dict[str, List[int]]:
        d: Dict[str, List[int]] = {"k": lib.jit.annotate(List[int], [])}
        for i in range(n):
            d["k"].append(i)
        d["j"] = [n]
        d["j"].extend([1, 2])
        d["k"].append(-n)
        d["j"].insert(0, d["k"].pop())
        return d

    def nested_set(n: int) -> List[List[int]]:
        xs = [[0, 0], [0, 0]]
        xs[1][0] = n
        xs[0][1] += n
        return xs

    def second_name(n: int) -> List[int]:
        xs = [1, 2]
        ys = xs
        ys.append(n)
        xs.insert(0, -n)
        xs.reverse()
        return ys

    def element_alias(n: int) -> List[List[int]]:
        xs: List[List[int]] = [[1], [2]]
        first = xs[0]
        first.append(n)
        xs[1] = first
        xs[1].append(0)
        return xs

    def in_branch(n: int) -> List[int]:
        xs: List[int] = []
        ys = xs
        if n > 2:
            ys.append(n)
        else:
            ys.append(-1)
        while len(xs) < n:
            ys.append(len(xs))
        return xs

    def through_tuple(n: int) -> List[int]:
        pair = ([n], 1)
        pair[0].append(5)
        return pair[0]

    def dict_of_dicts(n: int) -> Dict[str, Dict[str, int]]:
        d: Dict[str, Dict[str, int]] = {"a": lib.jit.annotate(Dict[str, int], {})}
        inner = d["a"]
        inner["x"] = n
        d["a"]["y"] = n + 1
        del inner["x"]
        return d

    def delete_nested(n: int) -> List[List[int]]:
        xs = [[1, 2, 3], [n]]
        del xs[0][1]
        ys = xs[1]
        ys.clear()
        return xs

    def equal_literals(n: int) -> List[int]:
        a = [1, 2]
        b = [1, 2]
        a.append(n)
        return b

    def fresh_each_call(n: int) -> List[int]:
        xs = [1]
        xs.append(n)
        return xs

    def tensors(x):
        ts = [[x]]
        ts[0].append(x + 1)
        out = ts[0]
        out.append(x * 2)
        return lib.stack(ts[0])

    return {
        f.__name__: f
        for f in (
            nested_append,
            dict_append,
            nested_set,
            second_name,
            element_alias,
            in_branch,
            through_tuple,
            dict_of_dicts,
            delete_nested,
            equal_literals,
            fresh_each_call,
            tensors,
        )
    }


def history(lib):
    """A module whose list attribute is updated through an index in forward."""

    class History(lib.nn.Module):
        def __init__(self):
            super().__init__()
            self.seen: List[List[int]] = [[0], [0]]

        def forward(self, n: int) -> List[List[int]]:
            self.seen[n % 2].append(n)
            row = self.seen[0]
            row[0] += 1
            return self.seen

    return History()


def unmatched_literals():
    """Literals whose items do not fit the annotation (TorchScript refuses each)."""

    def nested_empty() -> List[List[int]]:
        xs: List[List[int]] = [[]]
        return xs

    def ints_as_floats() -> List[float]:
        xs: List[float] = [1, 2]
        return xs

    def dict_of_empty() -> Dict[str, List[int]]:
        d: Dict[str, List[int]] = {"k": [1], "j": []}
        return d

    def dict_of_ints() -> Dict[str, float]:
        d: Dict[str, float] = {"a": 1}
        return d

    return [nested_empty, ints_as_floats, dict_of_empty, dict_of_ints]
