"""Programs for tests/jit/test_script_refine.py (issue 16): ``isinstance`` / ``is None``
refinement of Union and Optional values in all its forms, and class inheritance; torch and
ember script this same source (no tensors, so no library parameter)."""
# ruff: noqa: UP007, UP045 - typing.Optional/Union, as TorchScript sources spell them

from typing import Optional, Union


def isinst_and(x: Union[int, float], y: int) -> float:
    if isinstance(x, int) and y > 0:
        return float(x + y)
    return 1.5


def elif_chain(x: Union[int, float, str]) -> int:
    if isinstance(x, int):
        return x + 1
    elif isinstance(x, float):
        return 2
    else:
        return len(x)


def early_ret(x: Optional[int]) -> int:
    if x is None:
        return 0
    return x + 1


def assert_nn(x: Optional[int]) -> int:
    assert x is not None
    return x + 1


def isinst_tuple(x: Union[int, float, str]) -> int:
    if isinstance(x, (int, float)):
        return 1
    return 2


def not_isinst(x: Union[int, str]) -> int:
    if not isinstance(x, int):
        return len(x)
    return x


def unnarrowed_add(x: Union[int, float]) -> float:
    return x + 1


def early_isinst(x: Union[int, str]) -> int:
    if isinstance(x, str):
        return len(x)
    return x * 2


def opt_and(x: Optional[int], y: int) -> int:
    if x is not None and x > y:
        return x
    return y


def opt_or(x: Optional[int]) -> int:
    if x is None or x < 0:
        return 0
    return x


class Base:
    def __init__(self, a: int):
        self.a = a

    def get(self) -> int:
        return self.a


class Child(Base):
    def __init__(self, a: int):
        self.a = a

    def get2(self) -> int:
        return self.a * 2


def inherit(a: int) -> int:
    c = Child(a)
    return c.get2() + Base(a).get()


def inherited_method(a: int) -> int:
    return Child(a).get()  # Base's method: TorchScript compiles only the class's own methods


# magic methods: TorchScript desugars operators, len(), [] and `in` to them
class Vec:
    def __init__(self, x: int, y: int):
        self.x = x
        self.y = y

    def __add__(self, o: "Vec") -> "Vec":
        return Vec(self.x + o.x, self.y + o.y)

    def __len__(self) -> int:
        return 2

    def __getitem__(self, i: int) -> int:
        return self.x if i == 0 else self.y

    def __contains__(self, v: int) -> bool:
        return v == self.x or v == self.y

    def __eq__(self, o: "Vec") -> bool:
        return self.x == o.x and self.y == o.y

    def __lt__(self, o: "Vec") -> bool:
        return self.x < o.x


def magic_add(a: int) -> int:
    v = Vec(a, 1) + Vec(2, 3)
    return v.x * 10 + v.y


def magic_len(a: int) -> int:
    return len(Vec(a, 1))


def magic_getitem(a: int) -> int:
    return Vec(a, 7)[1] + Vec(a, 7)[0]


def magic_contains(a: int) -> bool:
    return a in Vec(3, 4) and (a + 1) not in Vec(3, 4)


def magic_eq(a: int) -> bool:
    return Vec(a, 1) == Vec(3, 1)


def magic_lt(a: int) -> bool:
    return Vec(a, 1) < Vec(3, 1)


# more forms: inherited __init__ (refused by both), Optional with a tuple, while on a narrowed
# Optional (refused by both: the loop's x is Optional again), __sub__/__ne__


class B:
    def __init__(self, a: int):
        self.a = a


class C(B):
    def twice(self) -> int:
        return self.a * 2


def inherited_init(a: int) -> int:
    return C(a).twice()


def opt_tuple(x: Optional[int]) -> int:
    if isinstance(x, (int, float)):
        return x + 1
    return -1


def union_assert_isinst(x: Union[int, str]) -> int:
    assert isinstance(x, int)
    return x + 1


def union_while(x: Optional[int]) -> int:
    n = 0
    while x is not None and x > 0:
        n += x
        x = x - 1
    return n


class V:
    def __init__(self, x: int):
        self.x = x

    def __sub__(self, o: "V") -> "V":
        return V(self.x - o.x)

    def __ne__(self, o: "V") -> bool:
        return self.x != o.x


def magic_sub(a: int) -> int:
    return (V(a) - V(1)).x


def magic_ne(a: int) -> bool:
    return V(a) != V(1)


# more magic methods torch.jit.script desugars to (__setitem__, __iadd__ with the __add__
# fallback, unary operators, int()/float()/bool()/str(), `if obj:`), a static method, and the
# reflected methods it refuses (`1 + obj` is the int's add even where __radd__ exists)
class Box:
    def __init__(self, x: int):
        self.xs: list[int] = [x, 2 * x]

    def __setitem__(self, i: int, v: int):
        self.xs[i] = v

    def __getitem__(self, i: int) -> int:
        return self.xs[i]

    def __iadd__(self, v: int) -> "Box":
        self.xs[0] += v
        return self

    def __neg__(self) -> "Box":
        return Box(-self.xs[0])

    def __invert__(self) -> int:
        return -self.xs[1]

    def __bool__(self) -> bool:
        return self.xs[0] > 0

    def __int__(self) -> int:
        return self.xs[0] + self.xs[1]

    def __float__(self) -> float:
        return self.xs[0] / 2

    def __str__(self) -> str:
        return "Box"

    def __radd__(self, o: int) -> int:
        return self.xs[0] + o

    @staticmethod
    def double(a: int) -> int:
        return a * 2

    def doubled(self) -> int:
        return Box.double(self.xs[0]) + 1


def magic_setitem(a: int) -> int:
    b = Box(a)
    b[1] = a + 5
    return b[0] * 100 + b[1]


def magic_iadd(a: int) -> int:
    b = Box(a)
    c = b
    b += 3
    return b[0] * 100 + c[0]


def magic_iadd_fallback(a: int) -> int:
    v = V(a)
    w = v
    v -= V(2)
    return v.x * 100 + w.x


def magic_unary(a: int) -> int:
    return (-Box(a))[0] * 100 + ~Box(a)


def magic_bool(a: int) -> int:
    if Box(a):
        return 1
    return 0


def magic_convert(a: int) -> float:
    return int(Box(a)) + float(Box(a)) + float(bool(Box(a)))


def magic_str(a: int) -> str:
    return str(Box(a)) + str(a)


def static_method(a: int) -> int:
    return Box(a).doubled() + Box.double(a)


def magic_radd(a: int) -> int:
    return a + Box(2)


def magic_rmul(a: int) -> int:
    return a * Box(2)


def magic_no_setitem(a: int) -> int:
    v = V(a)
    v[0] = 1
    return v.x


class Static:
    def __init__(self, x: int):
        self.x = x

    @staticmethod
    def double(a: int) -> int:
        return a * 2

    def doubled(self) -> int:
        return self.double(self.x)  # TorchScript finds static methods on the class only


def static_through_self(a: int) -> int:
    return Static(a).doubled()
