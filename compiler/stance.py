"""``ember.compiler.set_stance``: PyTorch's ``torch.compiler.set_stance``, the compiler's stance
for every compiled function, as a function, a context manager or a decorator.

- ``"default"``: capture, guard and replay as usual;
- ``"force_eager"``: every compiled function runs its Python eagerly (nothing captured, no
  cached graph used);
- ``"eager_on_recompile"``: a call whose guards match a cached entry replays it; a call that
  would capture runs eagerly instead (a new size in a loop does not pay a capture);
- ``"fail_on_recompile"``: a call that would capture raises PyTorch's RuntimeError, naming the
  guard failures when entries exist (a test that the warm loop never recompiles);
- ``"eager_then_compile"`` (and ``"aot_eager_then_compile"``, the same here: ember has no AOT
  eager path of its own): each compiled function's first call under it runs eagerly, later
  calls compile.

``force_backend`` (with ``"default"`` only, as PyTorch's) is validated as ``ember.compile``'s
``backend`` is (an unknown name raises ``InvalidBackend``); every backend name takes ember's one
path (docs/compile.md, "Surface"), so it changes nothing else. ``skip_guard_eval_unsafe`` is
accepted and guards are still checked: it is PyTorch's way to skip its slower guards, and
ember's cached entries are found by one hashed key.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

from . import options

STANCES = frozenset({
    "default", "force_eager", "eager_on_recompile", "fail_on_recompile", "eager_then_compile",
    "aot_eager_then_compile",
})  # fmt: skip
_THEN_COMPILE = frozenset({"eager_then_compile", "aot_eager_then_compile"})


@dataclass(frozen=True)
class DynamoStance:
    stance: str = "default"
    skip_guard_eval_unsafe: bool = False
    backend: object = None


DEFAULT = DynamoStance()
CURRENT = [DEFAULT]  # frame.CompiledFunction reads CURRENT[0] at each call


def _swap(stance: DynamoStance) -> DynamoStance:
    from .region import is_compiling

    if is_compiling():
        raise RuntimeError("attempted to set_stance in a torch.compile region")
    prior = CURRENT[0]
    CURRENT[0] = stance
    return prior


class set_stance:  # noqa: N801 - PyTorch's name
    """Set the compiler's stance now (and back on leaving a ``with`` block), or, used as a
    decorator, during each call of the decorated function. See the module's docstring."""

    def __init__(self, stance: str = "default", *, skip_guard_eval_unsafe: bool = False,
                 force_backend=None):  # fmt: skip
        if force_backend is not None and stance != "default":
            raise RuntimeError("non-default stance cannot have force_backend set")
        if force_backend is not None:  # an unknown name raises as ember.compile's would
            options.resolve(force_backend, None, None, False, None)
        self.stance = DynamoStance(stance, skip_guard_eval_unsafe, force_backend)
        self.prev = _swap(self.stance)

    def __call__(self, fn):
        _swap(self.prev)  # as a decorator it applies during the calls only

        @functools.wraps(fn)
        def with_stance(*args, **kwargs):
            prior = _swap(self.stance)
            try:
                return fn(*args, **kwargs)
            finally:
                _swap(prior)

        return with_stance

    def __enter__(self) -> None:
        _swap(self.stance)

    def __exit__(self, *exc) -> None:
        _swap(self.prev)


def runs_eagerly(compiled) -> bool:
    """Whether this call of ``compiled`` (a CompiledFunction) runs its Python eagerly under
    the current, non-default stance."""
    stance = CURRENT[0]
    name = stance.stance
    if name == "force_eager":
        return True
    if name in _THEN_COMPILE:
        first = not compiled._called_under_stance
        compiled._called_under_stance = True
        return first
    if name not in STANCES:
        raise RuntimeError(f"invalid torch.compile stance '{stance}'")
    return False


def refuses_capture(compiled, reasons: list) -> bool:
    """At a call that would capture: True when the stance runs it eagerly instead; raises
    under ``"fail_on_recompile"``."""
    name = CURRENT[0].stance
    if name == "eager_on_recompile":
        return True
    if name == "fail_on_recompile":
        code = getattr(compiled._fn, "__code__", None)
        message = "Detected recompile when torch.compile stance is 'fail_on_recompile'. "
        if code is not None:
            message += (
                f"filename: '{code.co_filename}', function name: '{code.co_name}', "
                f"line number: {code.co_firstlineno}"
            )
        if reasons:
            failures = "\n".join(f"    - {compiled._count - 1}/0: {r}" for r in reasons)
            message += f"\n    triggered by the following guard failure(s):\n{failures}"
        raise RuntimeError(message)
    return False
