"""More of the TorchScript subset real models use (issue 16's script gaps), written once
against a library: ``isinstance`` refinement, ``del``, ``math.*`` of run-time numbers,
f-strings, ``str.format`` and string methods, ``jit.is_tracing``, ``assert``."""
# ruff: noqa: UP006, UP032, UP035, UP045 - typing.List/Optional and str.format, as TorchScript
# sources spell them

import math
from typing import Dict, List, NamedTuple, Optional, Tuple


def constructs(lib):
    Tensor = lib.Tensor

    class Pair(NamedTuple):
        a: Tensor
        n: int
        label: str = "pair"

    @lib.jit.script
    class Tracker:
        def __init__(self, start: int, x):
            self.value = start
            self.history: List[int] = []
            self.total = x * 0

        def push(self, by: int, x) -> int:
            self.value += by
            self.history.append(self.value)
            self.total = self.total + x
            return self.value

    def user_class(x, n: int):
        tracker = Tracker(n, x)
        last = 0
        for i in range(3):
            last = tracker.push(i, x)
            if tracker.value > 7:
                break
        return tracker.total * tracker.value, tracker.history, last

    def named_tuples(x, n: int) -> Pair:
        p = Pair(x, n)
        q = Pair(p.a * p.n, n=p[1] + 1, label=p.label + "!")
        a, k, _ = q
        return Pair(a + k, k, q.label)

    def isinstance_refine(x, k: Optional[int], w: Optional[float] = None):
        if isinstance(k, int):
            x = x * k
        if not isinstance(w, float):
            return x
        return x + w

    def del_name(x, xs: List[int], d: Dict[str, int]):
        y = x * 2
        z = y + 1
        del y
        del xs[0], d["a"]
        del xs[-1]
        return z, xs, d

    def math_runtime(x, a: float, n: int):
        scale = math.exp(a) + math.tanh(a) + math.atan2(a, 2.0) + math.pow(a, n)
        ints = math.floor(a * 10) + math.ceil(a) + math.gcd(n, 6) + math.factorial(n)
        return x * scale, math.log(a), ints, math.isnan(a), math.fabs(-a) + math.pi

    def strings(name: str, n: int, a: float):
        first = f"{name}-{n}: {a}"
        second = "{} and {}".format(name, [n, n])
        parts = name.split("-")
        return (
            first + "!" + second,
            str(a) + str(n),
            "/".join(parts).upper(),
            name.startswith("a"),
            name.replace("-", "_").find("_"),
        )

    def iteration_forms(pairs: List[Tuple[Tensor, int]], d: Dict[str, Tensor]):
        acc = pairs[0][0] * 0
        for t, k in pairs:
            acc = acc + t * k
        for i, (t, k) in enumerate(pairs):
            acc = acc + t * (k + i)
        for key in d:
            acc = acc + d[key]
        for key, value in d.items():
            acc = acc * value.sum() if key == "scale" else acc
        squares = [k * k for _, k in pairs]
        return acc, squares, [t.sum() for t in d.values()]

    def tracing_flag(x):
        if lib.jit.is_tracing():
            return x
        return x + 1

    def assert_checks(x, n: int, names: List[str]):
        assert n > 0, "n must be positive"
        assert len(names) == n
        return x * n

    def list_methods(xs: List[int], k: int, x):
        ys = xs.copy()
        ys.insert(0, k)
        ys.extend([1, 2])
        last = ys.pop()
        first = ys.pop(0)
        ys.reverse()
        zs = ys.copy()
        zs.sort()
        ys[0] += 10
        ys[1] = -1
        zs.remove(zs[0])
        for i in range(len(zs)):
            zs[i] = zs[i] * 2
            if zs[i] > 100:
                zs.clear()
                break
        x[0] += k
        sums = sum(ys) + abs(min(ys) - k) + max(xs) + xs.index(xs[-1]) + xs.count(1)
        return ys, zs, last, first, sums, x

    return {
        "list_methods": list_methods,
        "isinstance_refine": isinstance_refine,
        "del_name": del_name,
        "math_runtime": math_runtime,
        "strings": strings,
        "tracing_flag": tracing_flag,
        "iteration_forms": iteration_forms,
        "assert_checks": assert_checks,
        "named_tuples": named_tuples,
        "user_class": user_class,
    }


def stateful(lib):
    """Modules whose scripted code reads and writes module state at run time."""
    nn = lib.nn
    F = lib.nn.functional

    class Counter(nn.Module):
        def __init__(self):
            super().__init__()
            self.calls = 0
            self.scale = 0.5
            self.log = lib.jit.Attribute([], List[str])
            self.register_buffer("steps", lib.zeros(1))

        def forward(self, x):
            self.calls += 1
            self.steps += 1
            self.log.append(f"call {self.calls}")
            if self.calls > 2:
                self.scale = self.scale * 2
            return x * self.scale + self.steps, len(self.log)

    class Modal(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(4, 4)

        def forward(self, x):
            y = F.dropout(self.fc(x), 0.5, self.training)
            if self.training:
                return y * 0.0
            return y + 1

    return {"counter": Counter, "modal": Modal}
