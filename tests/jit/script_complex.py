"""Functions for tests/jit/test_script_complex.py: complex numbers in scripted code
(``complex(a, b)``, arithmetic, ``.real``/``.imag``, comparisons, complex arguments and
results), written once against a library (torch and ember script this same source)."""
# ruff: noqa: UP006, UP035 - typing.List/Tuple, as TorchScript sources spell them

from typing import Dict, List, Tuple


def complexes(lib):
    """name -> (function, arguments)."""

    def build(a: float, b: float) -> complex:
        return complex(a, b)

    def build_ints(a: int, b: int) -> complex:
        return complex(a, b)

    def arithmetic(z: complex, w: complex) -> Tuple[complex, complex, complex, complex]:
        return z + w, z - w, z * w, z / w

    def mixed(z: complex, f: float, i: int, b: bool) -> List[complex]:
        return [z + f, f - z, z * i, i + z, z - i, f * z, -z, z**f, z**z, z * b]

    def compare(z: complex, w: complex, f: float) -> Tuple[bool, bool, bool]:
        return z == w, z != w, z == f

    def accumulate(n: int) -> complex:
        z = complex(1.0, 0.0)
        for k in range(n):
            z = z * complex(0.0, 1.0) + k
        return z

    def in_branch(z: complex, flag: bool) -> complex:
        if flag:
            z = z + 1.0
        else:
            z = z * complex(1)
        return z

    def containers(z: complex, w: complex) -> Tuple[List[complex], Dict[str, complex]]:
        zs = [z, w]
        zs.append(z + w)
        return zs, {"first": zs[0], "sum": zs[0] + zs[1]}

    def absolute(z: complex) -> float:
        return abs(z)

    def as_text(z: complex) -> str:
        return str(z) + "|" + f"{z * 2.0}"

    def with_tensor(x, z: complex):
        return x * z + z

    def tensor_parts(x):
        y = x * complex(1.0, 2.0)
        return y.real, y.imag

    return {
        "build": (build, (1.5, -2.0)),
        "build_ints": (build_ints, (3, 4)),
        "arithmetic": (arithmetic, (1 + 2j, 3 - 1j)),
        "mixed": (mixed, (1 + 2j, 0.5, 3, True)),
        "compare": (compare, (1 + 2j, 1 + 2j, 1.0)),
        "accumulate": (accumulate, (5,)),
        "in_branch": (in_branch, (1 + 2j, False)),
        "absolute": (absolute, (3 + 4j,)),
        "containers": (containers, (1 + 2j, 0.5 - 1j)),
        "as_text": (as_text, (1.5 - 2j,)),
        "with_tensor": (with_tensor, ("tensor", 1 - 2j)),
        "tensor_parts": (tensor_parts, ("tensor",)),
    }


def python_only():
    """Complex arithmetic whose results TorchScript types as float (``i / z``, ``z ** 2``,
    ``z / f``, ``2 ** z``; run alone, they fail an internal assert): ember gives Python's
    values."""

    def divisions(z: complex, f: float, i: int) -> List[complex]:
        return [i / z, z**2, z / f, 2**z, z / 2]

    return divisions


def refused():
    """Complex code torch.jit.script refuses: attributes of a complex, ordering."""

    def parts(z: complex) -> float:
        return z.real

    def conjugate(z: complex) -> complex:
        return z.conjugate()

    return [parts, conjugate]
