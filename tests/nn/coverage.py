"""How much of torch.nn ember.nn covers: every nn.Module class and every nn.functional
function of the installed PyTorch, against ember's. ``python -m tests.nn.coverage`` prints the
counts and what is missing; test_coverage.py fails on anything missing that EXCLUDED does not
explain."""

from __future__ import annotations

import types

# What ember leaves out on purpose, as data: name -> why.
EXCLUDED: dict = {}


def torch_classes() -> list:
    import torch

    nn = torch.nn
    return sorted(
        n
        for n in dir(nn)
        if isinstance(getattr(nn, n), type) and issubclass(getattr(nn, n), nn.Module)
    )


def torch_functions() -> list:
    import torch

    functional = torch.nn.functional
    return sorted(
        n
        for n in dir(functional)
        if not n.startswith("_")
        and callable(getattr(functional, n))
        and not isinstance(getattr(functional, n), (type, types.ModuleType))
    )


def missing(names, namespace) -> list:
    return [n for n in names if not hasattr(namespace, n)]


def main() -> None:
    import ember

    for label, names, namespace in (
        ("nn classes", torch_classes(), ember.nn),
        ("nn.functional functions", torch_functions(), ember.nn.functional),
    ):
        absent = missing(names, namespace)
        print(f"{label}: {len(names) - len(absent)} of {len(names)}")
        for name in absent:
            print(f"  missing {name}: {EXCLUDED.get(name, 'not implemented')}")


if __name__ == "__main__":
    main()
