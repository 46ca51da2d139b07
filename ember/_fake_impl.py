"""The context of a custom op's fake impl: what ``ember.library.get_ctx()`` returns while the
fake impl runs (``CustomOpDef._shape_rule``), None elsewhere, as torch's ``get_ctx`` does outside
one (torch/_library/fake_impl.py).

Ember's fake impls run on meta tensors with concrete shapes: there are no symbolic sizes, so an
output size that depends on the input values (``ctx.new_dynamic_size()``) is refused with torch's
exception for an op with a data-dependent output shape.
"""

from __future__ import annotations

import contextlib
import threading
import warnings


class DynamicOutputShapeException(RuntimeError):  # noqa: N818 (torch's name)
    """``torch._subclasses.fake_tensor.DynamicOutputShapeException``: the output shape of op
    ``func`` depends on its input data, which a fake impl cannot know."""

    def __init__(self, func: str, message: str | None = None):
        super().__init__(message or f"{func}: its output shape depends on its input data")
        self.func = func


class FakeImplCtx:
    """``torch.library.get_ctx()`` inside a fake impl (``torch._library.fake_impl.FakeImplCtx``)."""

    def __init__(self, op: str):
        self._op = op

    def create_unbacked_symint(self, *, min=2, max=None):
        warnings.warn(
            "`create_unbacked_symint` is deprecated, please use `new_dynamic_size` instead",
            FutureWarning,
            stacklevel=2,
        )
        return self.new_dynamic_size(min=min, max=max)

    def new_dynamic_size(self, *, min=0, max=None):
        """torch: a symbolic size for a data-dependent output dim. Ember has none: raises."""
        raise DynamicOutputShapeException(
            self._op,
            f"{self._op}: ctx.new_dynamic_size(min={min}, max={max}) asks for a data-dependent "
            "output size, but ember's fake impls run on meta tensors with concrete shapes and "
            "ember has no data-dependent (symbolic) sizes. Compute the output shape from the "
            "input shapes, or leave the fake impl out so the op runs only on real tensors.",
        )


_STATE = threading.local()


def get_ctx() -> FakeImplCtx | None:
    """The FakeImplCtx of the fake impl running on this thread; None outside one."""
    return getattr(_STATE, "ctx", None)


@contextlib.contextmanager
def fake_impl_ctx(op: str):
    """While the fake impl of custom op ``op`` (its qualified name) runs."""
    previous = get_ctx()
    _STATE.ctx = FakeImplCtx(op)
    try:
        yield _STATE.ctx
    finally:
        _STATE.ctx = previous
