"""Module interfaces and function overloads for tests/jit/test_script_interfaces.py, written
once: the test runs this file twice, as a module whose global ``lib`` is torch and as one whose
``lib`` is ember (TorchScript resolves interface annotations and overloads by module-level
names, so these cannot be local to a factory)."""
# ruff: noqa: UP006, UP035, F811 - typing.List, as TorchScript sources spell it; overloads
# redefine their name, as TorchScript wants them

from typing import List

lib = globals()["lib"]  # set by the test before this module runs
Tensor = lib.Tensor
nn = lib.nn


@lib.jit.interface
class Scaler(nn.Module):
    def forward(self, x: Tensor, k: int) -> Tensor:
        pass


class Twice(nn.Module):
    def forward(self, x: Tensor, k: int) -> Tensor:
        return x * 2 * k


class Shift(nn.Module):
    def __init__(self):
        super().__init__()
        self.bias = nn.Parameter(lib.full((1,), 0.5))

    def forward(self, x: Tensor, k: int) -> Tensor:
        return x + self.bias + k


class Wrong(nn.Module):
    def forward(self, x: Tensor) -> Tensor:
        return x


class Owner(nn.Module):
    impl: Scaler

    def __init__(self, impl):
        super().__init__()
        self.impl = impl
        self.lin = nn.Linear(2, 2)

    def forward(self, x: Tensor) -> Tensor:
        y = self.impl(self.lin(x), 3)
        return self.impl(y, 1)


@lib.jit.interface
class Adder:
    def add(self, a: int) -> int:
        pass


@lib.jit.script
class Plus:
    def __init__(self, n: int):
        self.n = n

    def add(self, a: int) -> int:
        return a + self.n


@lib.jit.script
class Times:
    def __init__(self, n: int):
        self.n = n

    def add(self, a: int) -> int:
        return a * self.n


def apply(obj: Adder, a: int) -> int:
    return obj.add(a)


def adders(n: int) -> List[int]:
    return [apply(Plus(n), 5), apply(Times(n), 5)]


@lib.jit._overload
def double(x: int) -> int: ...


@lib.jit._overload
def double(x: float) -> float: ...


@lib.jit._overload
def double(x: Tensor) -> Tensor: ...


@lib.jit._overload
def double(x: List[int]) -> List[int]: ...


def double(x):
    if isinstance(x, int):
        return x * 2
    return x + x


def doubles(t: Tensor, n: int, f: float):
    return double(t), double(n), double([n, 1]), double(f), double(True)


def no_overload(s: str):
    return double(s)


class Scales(nn.Module):
    @lib.jit._overload_method
    def scale(self, x: int) -> int: ...

    @lib.jit._overload_method
    def scale(self, x: Tensor) -> Tensor: ...

    def scale(self, x):
        return x * 3

    def forward(self, x: Tensor, n: int):
        return self.scale(x), self.scale(n)
