"""Programs for tests/jit/test_script_contexts.py (issue 16): ``with`` statements beyond grad
mode (objects with ``__enter__``/``__exit__``, autocast, record_function, several items,
``as``); each takes the library (ember or torch) so both script the same source."""

from typing import Any, List  # noqa: UP035 - typing.List, as TorchScript sources spell it


class Counter:
    def __init__(self, n: int):
        self.n = n
        self.entered = 0
        self.exited = 0

    def __enter__(self) -> int:
        self.entered += 1
        return self.n * 2

    def __exit__(self, kind: Any, value: Any, trace: Any):
        self.exited += 10


def user_context(n: int) -> int:
    c = Counter(n)
    with c as v:
        inside = c.entered * 100 + c.exited + v
    return inside * 1000 + c.entered * 100 + c.exited


def user_context_no_as(n: int) -> int:
    c = Counter(n)
    with c:
        n = n + c.entered
    return n * 100 + c.exited


def user_context_return(n: int) -> int:
    c = Counter(n)
    with c as v:
        return v + c.exited  # __exit__ runs after the value is taken


def two_user_contexts(n: int) -> int:
    a, b = Counter(n), Counter(n + 1)
    with a as x, b as y:
        total = x + y + a.exited + b.exited
    return total * 100 + a.exited + b.exited


class Logged:
    def __init__(self, n: int):
        self.n = n
        self.log: List[int] = []  # noqa: UP006

    def __enter__(self) -> int:
        self.log.append(self.n)  # append to an object's list field
        return self.n * 2

    def __exit__(self, kind: Any, value: Any, trace: Any):
        self.log.append(-1)


def logged_context(n: int) -> List[int]:  # noqa: UP006
    c = Logged(n)
    with c as v:
        c.log.append(v)
    return c.log


def library(lib):
    def with_autocast(x):
        with lib.autocast("cpu"):
            y = x @ x
        return y, (x @ x).dtype == x.dtype

    def with_autocast_dtype(x):
        with lib.autocast("cpu", dtype=lib.bfloat16, enabled=True):
            y = x @ x
        return y

    def with_record_function(x):
        with lib.autograd.profiler.record_function("scaled"):
            y = x * 2
        return y

    def with_two_items(x):
        with lib.no_grad(), lib.autograd.profiler.record_function("scaled"):
            y = x * 2
        return y, y.requires_grad

    def with_no_grad_as(x):
        with lib.no_grad() as g:
            y = x * 2
        return y, g is None

    def with_record_function_as(x):
        with lib.autograd.profiler.record_function("scaled") as rf:  # noqa: F841
            y = x * 2
        with lib.profiler.record_function("shifted") as other:  # noqa: F841
            y = y + 1
        return y

    def with_autocast_as(x):
        with lib.autocast("cpu", dtype=lib.bfloat16) as cast:  # noqa: F841
            y = x @ x
        return y

    def with_cpu_amp_autocast(x):
        with lib.cpu.amp.autocast():
            y = x @ x
        with lib.cpu.amp.autocast(enabled=False):
            z = x @ x
        return y, z

    def with_no_grad_in_a_loop(x):
        for i in range(4):
            with lib.no_grad():
                x = x * 2
                if i == 1:
                    break
        return x, x.requires_grad

    def with_return_inside_nested(x):
        with lib.autograd.profiler.record_function("outer"):
            for i in range(x.size(0) + 2):
                with lib.no_grad():
                    if i == 2:
                        return x * i
        return x

    return {
        "with_record_function_as": with_record_function_as,
        "with_autocast_as": with_autocast_as,
        "with_cpu_amp_autocast": with_cpu_amp_autocast,
        "with_no_grad_in_a_loop": with_no_grad_in_a_loop,
        "with_return_inside_nested": with_return_inside_nested,
        "with_autocast": with_autocast,
        "with_autocast_dtype": with_autocast_dtype,
        "with_record_function": with_record_function,
        "with_two_items": with_two_items,
        "with_no_grad_as": with_no_grad_as,
    }
