"""Functions for tests/jit/test_script_gaps.py (issue 16's next script gaps: ``return`` inside
loops, ``Tensor.tolist()``, ``Union``/``Any``), written once against a library: torch and ember
script this same source."""
# ruff: noqa: UP006, UP007, UP035, UP045 - typing.List/Optional/Union, as TorchScript sources
# spell them

from typing import Any, List, Optional, Union


def loop_returns(lib):
    """``return`` inside ``for``/``while`` loops, nested ifs and loops included."""

    def first_hit(x, n: int):
        for i in range(n):
            if i == 2:
                return x + i
        y = x * 2
        return y

    def falls_off(x, n: int):
        for i in range(n):
            if i == 2:
                return x

    def nested_loops(x, n: int) -> int:
        i = 0
        while i < n:
            for j in range(i):
                if j == 3:
                    return i * 10 + j
            i += 1
        return -1

    def over_list(xs: List[float], t: float) -> int:
        for i, v in enumerate(xs):
            if v > t:
                if v > 2 * t:
                    return -i
                return i
        return len(xs)

    def while_true(x):
        while True:
            x = x * 2
            if bool(x.sum() > 100):
                return x

    def loop_in_branch(x, n: int, c: bool):
        if c:
            for i in range(n):
                if i == 3:
                    return x - 1
        z = x + 1
        return z

    def annotated(n: int) -> Optional[int]:
        for i in range(n):
            if i * i > 10:
                return i
        return None

    def one_trip(x, n: int):
        for _ in range(n):
            return x + 1
        return x

    def after_break(x, n: int):
        total = x * 0
        for i in range(n):
            if i == 5:
                break
            total = total + x
            if bool(total.sum() > 6):
                return total * 10
        return total

    return {
        f.__name__: f
        for f in (
            first_hit,
            falls_off,
            nested_loops,
            over_list,
            while_true,
            loop_in_branch,
            annotated,
            one_trip,
            after_break,
        )
    }


def early_exit_stack(lib):
    """A ``ModuleList`` loop (unrolled) that returns early: later layers run only when the
    earlier ones did not return."""

    class Stack(lib.nn.Module):
        def __init__(self):
            super().__init__()
            self.layers = lib.nn.ModuleList([lib.nn.Linear(2, 2) for _ in range(3)])

        def forward(self, x, limit: float):
            for layer in self.layers:
                x = layer(x)
                if bool(x.abs().sum() > limit):
                    return x * 0
            return x

    return Stack()


def tolists(lib):
    """``Tensor.tolist()`` under an annotation (TorchScript's prim::tolist)."""

    def floats(x) -> List[float]:
        y: List[float] = x.tolist()
        y.append(0.5)
        return y

    def int_rows(x) -> List[List[int]]:
        y: List[List[int]] = x.tolist()
        y.append([len(y)])
        return y

    def returned(x) -> List[bool]:
        return x.tolist()

    def scalar(x) -> float:
        y: float = x.tolist()
        return y * 2

    def complexes(x) -> List[List[complex]]:
        y: List[List[complex]] = x.tolist()
        return y

    return {f.__name__: f for f in (floats, int_rows, returned, scalar, complexes)}


def unions(lib):
    """``Union``/``Optional`` of several types narrowed by ``isinstance``/``is None``, and
    ``Any`` passed through."""

    Tensor = lib.Tensor

    def describe(x: Union[int, float, Tensor], y: Optional[Union[int, str]]) -> float:
        if isinstance(x, int):
            a = float(x + 1)
        elif isinstance(x, float):
            a = x * 2.0
        else:
            a = float(x.sum().item())
        if y is None:
            return a
        if isinstance(y, str):
            return a + len(y)
        return a + y

    def doubled(x: Union[int, str]) -> Union[int, str]:
        if isinstance(x, int):
            return x * 2
        return x + "!"

    def passed(x: Any, n: int) -> Any:
        if n > 0:
            return x
        return n

    def tensor_or_list(x: Union[List[int], Tensor], scale: float):
        if isinstance(x, Tensor):
            return x * scale
        return lib.zeros(len(x)) + scale

    return {f.__name__: f for f in (describe, doubled, passed, tensor_or_list)}


def searching_module(lib):
    """A module whose forward calls a function that returns from a loop (inlined) and returns
    from a ``while`` inside a ``for`` itself."""

    def find(xs: List[int], t: int) -> int:
        for i, v in enumerate(xs):
            if v == t:
                return i
        return -1

    class Search(lib.nn.Module):
        def forward(self, x, xs: List[int]):
            k = find(xs, 3)
            out = x
            for j in range(4):
                out = out + k
                if j == k:
                    while True:
                        out = out * 2
                        if bool(out.sum() > 50):
                            return out
            return out - 1

    return Search()


class Scaled:
    """A plain class a scripted function takes and returns (fields inferred from __init__)."""

    def __init__(self, factor: int, weight):
        self.factor = factor
        self.weight = weight

    def apply(self, x):
        return x * self.weight * self.factor


def numbers_and_objects(lib):
    """``Union[int, float]`` in arithmetic (TorchScript's Scalar, converted back to int or
    float where a type asks), and user-class objects as a scripted function's input and
    output."""

    def doubled(x: Union[int, float]) -> float:
        return x * 2.0

    def bumped(x: Union[int, float]) -> int:
        return x + 1

    def mixed(x: Union[int, float], n: int) -> float:
        y = -x * n
        return float(y) / 4

    def applied(s: Scaled, x):
        return s.apply(x) + s.factor

    def made(factor: int, weight) -> Scaled:
        return Scaled(factor + 1, weight * 2)

    return {f.__name__: f for f in (doubled, bumped, mixed, applied, made)}
