"""Programs for tests/jit/test_script_unions.py (issue 16): what scripted code may do with a
Union or Any value before narrowing it (pass it on, print it, format it, put it in a
container, compute with a ``Union[int, float]``), ``isinstance`` narrowing of ``Any``, and what
torch.jit.script refuses (comparisons and ``in`` of unnarrowed values); torch and ember script
this same source (no library calls, so no library parameter)."""
# ruff: noqa: UP006, UP007 - typing.List/Dict/Tuple/Union, as TorchScript sources spell them

from typing import Any, Dict, List, Tuple, Union  # noqa: UP035


def u_str(x: Union[int, str]) -> str:
    return str(x) + f"<{x}>"


def u_list(x: Union[int, str]) -> List[Union[int, str]]:
    return [x, x]


def u_tuple(x: Union[int, str]) -> Tuple[Union[int, str], int]:
    return (x, 1)


def u_dict(x: Union[int, str]) -> Dict[str, Union[int, str]]:
    return {"a": x}


def u_pass(x: Union[int, str]) -> Union[int, str]:
    return u_tuple(x)[0]


def a_list(x: Any) -> List[Any]:
    return [x]


def a_str(x: Any) -> str:
    return str(x)


def a_isinstance(x: Any) -> float:
    if isinstance(x, int):
        return float(x + 1)
    if isinstance(x, (float, str)):
        return 0.5
    return -1.0


def a_is_none(x: Any) -> bool:
    return x is None


def num_neg(x: Union[int, float]) -> float:
    return -x


def num_abs(x: Union[int, float]) -> float:
    return abs(x) * 2


def num_compare(x: Union[int, float]) -> bool:
    return x < 2 and x >= -1


def num_max(x: Union[int, float]) -> float:
    return max(x, 1.5)


# refused by both: comparisons and `in` of a value no isinstance has narrowed
def u_eq(x: Union[int, str]) -> bool:
    return x == 1


def a_eq(x: Any) -> bool:
    return x == 1


def u_in(x: Union[int, str]) -> bool:
    return x in [1, 2]


def a_add(x: Any) -> int:
    return x + 1


def u_bool(x: Union[int, float]) -> int:
    if x:
        return 1
    return 0
