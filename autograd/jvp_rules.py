"""JVP rules: the tangent of an op's output from its inputs' tangents, beside the VJP formulas.

Most rules come from the op's row and its VJP formula (autograd/formulas.py), so an op with a
backward formula has a forward one without code here:

- ops linear in their float tensor arguments (views, sums, cat, gather, scatter, casts...) apply
  themselves to the tangents (``LINEAR``), and multilinear ones (mm, bmm) sum the op over each
  tangent in turn (product rule);
- elementwise ops have a diagonal Jacobian per input, so their VJP formula given a tangent as the
  output gradient *is* the JVP (``from_vjp``);
- plain composites decompose (their parts carry the tangents);
- the rest transpose their VJP formula, which is linear in the output gradient: the JVP is the
  gradient of ``<vjp(u), t>`` with respect to ``u`` (``transpose``, two backward passes);
- a few have explicit rules (``EXPLICIT``): cheaper than the transpose, or needing constants.

Complex tensors carry tangents as float ones do (PyTorch's convention): the holomorphic rows'
JVP is their formula before the conjugation that makes it a VJP (``from_vjp``), the transpose
works unchanged (the VJP is the real adjoint of the JVP), and the rows that are not holomorphic
(abs, angle, the real/complex views, eig) have explicit rules in autograd/complex_jvp.py.

A rule is ``rule(op, args, tangents, out)``: ``tangents`` aligned with ``args`` (None: zero, a
list for Tensor[] arguments); it returns the output's tangent (a tuple for tuple outputs).
"""

from __future__ import annotations

import ember as E
from ember._tensor import Tensor

from ..dispatcher.kinds.functional import call_decomposition, runs_decomposition
from ..dispatcher.opdef import Kind
from .complex_jvp import RULES as COMPLEX_RULES
from .forward_ad import STATE, copy_tangents, set_tangent, suspended, tangent_of

LINEAR = frozenset(
    "sum cumsum view reshape permute transpose t expand narrow slice select squeeze unsqueeze "  # noqa: SIM905
    "flatten unflatten diagonal movedim unfold _to_copy flip cat gather scatter scatter_add "
    "index_select index_add take put_ im2col col2im trace diag tril triu roll repeat tile clone "
    "contiguous _conj _neg_view".split()
)
MULTILINEAR = frozenset({"mm", "bmm", "mul", "dot", "mv", "outer", "matmul", "einsum"})


# ---- running an op with tangents -------------------------------------------------------------
def run_with_tangents(layer, op, args, level: int):
    """The forward-AD layer's work: the op below, then its output's tangent at ``level``."""
    rule = rule_for(op)
    if rule is decompose:
        return call_decomposition(op, args)  # the parts carry the tangents
    tangents = [_tangents(a, level) for a in args]
    with suspended(level):
        if op.mutates:
            return _inplace(layer, op, rule, args, tangents, level)
        out = _below(layer, op, args)
        if rule is None or not _any(tangents):
            return out
        tangent = rule(op, args, tangents, out)
    attach(out, tangent, level)
    return out


def _inplace(layer, op, rule, args, tangents, level: int):
    target = args[0]
    before = target.clone() if rule is not None else target
    _below(layer, op, args)
    if rule is not None and _any(tangents):
        base = op.inplace_of or op
        tangent = rule(base, [before, *args[1:]], tangents, target)
        if tangent is not None:
            _write_tangent(target, _fit(tangent, target), level)
    elif target.__dict__.get("_fw"):
        target.__dict__["_fw"].pop(level, None)  # overwritten by a non-differentiable op
    return target


def _write_tangent(target: Tensor, tangent: Tensor, level: int) -> None:
    """An in-place op's new tangent, written where it belongs, as in PyTorch: into the tangent
    of the view's base (the view's tangent is that region of it), and into an existing tangent
    in place, so that views of the tangent see the change."""
    from .batched import BatchedTensor

    root = target._base if target._base is not None else target
    if tangent.__class__ is BatchedTensor:  # batched tangents (jacfwd): the target's own only
        set_tangent(target, level, tangent)
        return
    whole = tangent_of(root, level)
    if whole is None or whole._stride != root._stride or _overlaps(whole):
        whole = _laid_out_like(root, whole)
        set_tangent(root, level, whole)
    if root is target:
        whole.copy_(tangent)
        return
    region = _region(whole, root, target)
    region.copy_(tangent)
    set_tangent(target, level, region)


def _overlaps(t: Tensor) -> bool:
    return any(step == 0 and size > 1 for size, step in zip(t._shape, t._stride))


def _laid_out_like(root: Tensor, values) -> Tensor:
    """Zeros (or ``values``) with ``root``'s strides, so that any view geometry of ``root``
    names the same elements in it."""
    low = sum(min(0, (n - 1) * s) for n, s in zip(root._shape, root._stride) if n)
    high = sum(max(0, (n - 1) * s) for n, s in zip(root._shape, root._stride) if n)
    size = high - low + 1 if all(root._shape) else 0
    buffer = E.zeros(size, dtype=root.dtype, device=root.device)
    out = buffer.as_strided(root._shape, root._stride, -low)
    if values is not None:
        out.copy_(values)
    return out


def _region(whole: Tensor, root: Tensor, target: Tensor) -> Tensor:
    """The part of ``whole`` (laid out like ``root``) that ``target``, a view of ``root``,
    names; a real view of a complex root (``view_as_real``, ``.real``) in real units."""
    if root._dtype.is_complex and not target._dtype.is_complex:
        start = 2 * (whole._offset - root._offset) + target._offset
        return E.view_as_real(whole.resolve_conj()).as_strided(target._shape, target._stride, start)
    start = whole._offset + target._offset - root._offset
    return whole.as_strided(target._shape, target._stride, start)


def _below(layer, op, args):
    """The op with the level being handled suspended: other levels' tangents still propagate
    (nested jvp), then the layers below."""
    if layer.wants(op, args):
        return layer.handle(op, args)
    return op.redispatch(layer, args)


def _tangents(a, level: int):
    if isinstance(a, Tensor):
        return tangent_of(a, level)
    if a.__class__ is list or a.__class__ is tuple:
        found = [tangent_of(t, level) if isinstance(t, Tensor) else None for t in a]
        return found if any(t is not None for t in found) else None
    return None


def _any(tangents) -> bool:
    return any(t is not None for t in tangents)


def attach(out, tangent, level: int) -> None:
    """Give ``out`` (a tensor or a tuple of them) its tangent, and share it with the copy the
    autograd layer saved of ``out`` (backward formulas read it: forward-over-reverse)."""
    if isinstance(out, Tensor):
        if tangent is not None and _differentiable(out):
            set_tangent(out, level, _fit(tangent, out))
            _share_with_saved(out, 0)
        return
    if isinstance(out, (tuple, list)):
        tangents = tangent if isinstance(tangent, (tuple, list)) else (tangent,)
        for i, (o, t) in enumerate(zip(out, tangents)):
            if isinstance(o, Tensor) and t is not None and _differentiable(o):
                set_tangent(o, level, _fit(t, o))
                _share_with_saved(o, i)


def _differentiable(t: Tensor) -> bool:
    """Float and complex tensors carry tangents (PyTorch's rule for dual tensors)."""
    return t._dtype.is_floating_point or t._dtype.is_complex


def _fit(tangent: Tensor, like: Tensor) -> Tensor:
    if tangent._shape != like._shape:
        tangent = tangent.expand(like._shape)
    if tangent._dtype is not like._dtype and not (
        tangent._dtype.is_complex and not like._dtype.is_complex
    ):  # a complex tangent of a real output is kept whole, as PyTorch keeps it
        tangent = tangent.to(like._dtype)
    return tangent


def _share_with_saved(out: Tensor, index: int) -> None:
    node = out._grad_fn
    saved = getattr(getattr(node, "ctx", None), "_saved", None)
    if not isinstance(saved, dict) or "result" not in saved:
        return
    found = saved["result"]
    items = found if isinstance(found, tuple) else (found,)
    if index < len(items) and items[index].tensor is not None:
        items[index].tensor.__dict__["_fw"] = out.__dict__["_fw"]


# ---- derived rules ---------------------------------------------------------------------------
def _slots(args):
    """(position, index in a Tensor[] or None, value) of every float or complex tensor
    argument."""
    for i, a in enumerate(args):
        if isinstance(a, Tensor):
            if _differentiable(a):
                yield i, None, a
        elif a.__class__ is list or a.__class__ is tuple:
            for j, t in enumerate(a):
                if isinstance(t, Tensor) and _differentiable(t):
                    yield i, j, t


def _tangent_at(tangents, i, j):
    t = tangents[i] if i < len(tangents) else None
    if j is None or t is None:
        return t
    return t[j]


def _replace(call: list, i, j, value) -> None:
    if j is None:
        call[i] = value
    else:
        call[i] = list(call[i])
        call[i][j] = value


def linear(op, args, tangents, out):
    """The op itself on the tangents (zeros for float inputs without one)."""
    call = list(args)
    for i, j, a in _slots(args):
        t = _tangent_at(tangents, i, j)
        _replace(call, i, j, E.zeros_like(a) if t is None else t)
    if op.mutates:
        call[0] = call[0].clone()  # the target's tangent may be shared
    return op(*call)


def multilinear(op, args, tangents, out):
    """Product rule: the op with one argument replaced by its tangent, summed over them."""
    total = None
    for i, j, _ in _slots(args):
        t = _tangent_at(tangents, i, j)
        if t is None:
            continue
        call = list(args)
        _replace(call, i, j, t)
        term = op(*call)
        total = term if total is None else total + term
    return total


class _Ctx:
    """What a VJP formula reads of its forward call, for ``from_vjp`` (no saving needed)."""

    def __init__(self, op, args, out, needs):
        self._op = op
        self._position = {a.name: i for i, a in enumerate(op.schema.args)}
        self._args = list(args)
        self.result = out
        self.needs_input_grad = needs

    def __getattr__(self, name):
        position = self._position.get(name)
        if position is None:
            raise AttributeError(name)
        if position < len(self._args):
            return self._args[position]
        arg = self._op.schema.args[position]
        return arg.default if arg.has_default else None

    def meta(self, name):
        t = getattr(self, name)
        return (t._shape, t._dtype, t.device) if isinstance(t, Tensor) else None

    def shape(self, name="input"):
        return getattr(self, name)._shape

    def strides_of(self, name):
        return getattr(self, name)._stride


def from_vjp(op, args, tangents, out):
    """Elementwise ops: the VJP formula with the tangent as the output gradient, per input.

    For complex tensors the VJP is the conjugate of the derivative (PyTorch's convention), so
    the holomorphic rows' formulas are used unwrapped (autograd/complex_formulas.py): ``t *
    f'(z)``, the JVP; the rows that are not holomorphic have explicit rules or are their own
    adjoint (sgn, conj)."""
    fn = getattr(op.formula.fn, "__wrapped__", op.formula.fn)
    positions = op.schema.tensor_positions
    total = None
    for k, position in enumerate(positions):
        t = tangents[position] if position < len(tangents) else None
        if t is None:
            continue
        needs = tuple(m == k for m in range(len(positions)))
        grads = fn(_Ctx(op, args, out, needs), t)
        grads = grads if isinstance(grads, tuple) else (grads,)
        term = grads[k]
        if term is not None:
            total = term if total is None else total + term
    return total


def transpose(op, args, tangents, out):
    """Any op with a VJP formula: J t is the gradient of ``<vjp(u), t>`` with respect to u."""
    from .engine import grad
    from .grad_mode import enable_grad

    call, leaves, given = list(args), [], []
    keep = False  # record the JVP when something outside differentiates it (reverse over forward)
    for i, j, a in _slots(args):
        t = _tangent_at(tangents, i, j)
        if t is None:
            continue
        keep = keep or a.requires_grad or t.requires_grad
        if a.requires_grad:
            leaf = a.view_as(a)
        else:
            leaf = a.detach().requires_grad_()
            copy_tangents(a, leaf)  # other levels' tangents still flow (nested jvp)
        _replace(call, i, j, leaf)
        leaves.append(leaf)
        given.append(t)
    with enable_grad():
        if op.mutates:
            call[0] = call[0].clone()
        result = op(*call)
        outs = [o for o in (result if isinstance(result, tuple) else (result,))]
        floats = [o for o in outs if isinstance(o, Tensor) and _differentiable(o)]
        dummies = [E.zeros_like(o).requires_grad_() for o in floats]
        grads = grad(floats, leaves, dummies, create_graph=True, allow_unused=True)
        pairs = [(g, t) for g, t in zip(grads, given) if g is not None and g.requires_grad]
        if not pairs:
            found = [None] * len(dummies)
        else:
            found = grad([g for g, _ in pairs], dummies, [t for _, t in pairs], create_graph=keep,
                         allow_unused=True)  # fmt: skip
    found = [E.zeros_like(o) if f is None else f for f, o in zip(found, floats)]
    if not isinstance(result, tuple):
        return found[0]
    it = iter(found)
    return tuple(next(it) if isinstance(o, Tensor) and _differentiable(o) else None
                 for o in outs)  # fmt: skip


def decompose(op, args, tangents, out):  # marker: run_with_tangents decomposes instead
    raise AssertionError("decompose is handled before the op runs")


# ---- explicit rules ---------------------------------------------------------------------------
def _softmax(op, args, tangents, out):
    t, dim = tangents[0], args[1]
    return out * (t - (t * out).sum(dim, keepdim=True))


def _log_softmax(op, args, tangents, out):
    t, dim = tangents[0], args[1]
    return t - (E.exp(out) * t).sum(dim, keepdim=True)


def _picked_by_indices(op, args, tangents, out):
    """max/min along a dim and sort: the tangent at the chosen positions (values only)."""
    t = tangents[0]
    indices = out[1]
    dim = args[1] if len(args) > 1 else -1
    if not len(t._shape):
        return (t, None)
    keepdim = op.name in ("sort",) or (len(args) > 2 and args[2] is True)
    picked = indices if keepdim else indices.unsqueeze(dim)
    found = t.gather(dim, picked)
    return (found if keepdim else found.squeeze(dim), None)


def _max_pool2d(op, args, tangents, out):
    t, indices = tangents[0], out[1]
    flat = t.flatten(-2).gather(-1, indices.flatten(-2))
    return (flat.view(out[0]._shape), None)


def _constant_pad(op, args, tangents, out):
    return E.ops.constant_pad_nd(tangents[0], args[1], 0)


def _copy(op, args, tangents, out):
    t = tangents[1] if len(tangents) > 1 else None
    return E.zeros_like(out) if t is None else t.to(out.dtype).expand(out._shape).clone()


def _zero(op, args, tangents, out):
    return E.zeros_like(out)


def _fill(op, args, tangents, out):
    t = tangents[1] if len(tangents) > 1 else None
    return E.zeros_like(out) if t is None else t.expand(out._shape).clone()


def _complex(op, args, tangents, out):
    """complex(real, imag) is linear in its two real parts."""
    parts = [t if t is not None else E.zeros_like(a) for a, t in zip(args[:2], tangents[:2])]
    return E.complex(*parts).expand(out._shape).clone()


def _polar(op, args, tangents, out):
    """d(abs * e^(i angle)) = e^(i angle) d(abs) + i out d(angle)."""
    result = E.zeros_like(out)
    if tangents[0] is not None:
        result = result + E.polar(E.ones_like(args[0]), args[1]) * tangents[0]
    if len(tangents) > 1 and tangents[1] is not None:
        result = result + E.complex(-E.imag(out), E.real(out)) * tangents[1]
    return result


EXPLICIT = {
    "complex": _complex,
    "polar": _polar,
    "softmax": _softmax,
    "log_softmax": _log_softmax,
    "max": _picked_by_indices,
    "min": _picked_by_indices,
    "sort": _picked_by_indices,
    "max_pool2d_with_indices": _max_pool2d,
    "constant_pad_nd": _constant_pad,
    "copy_": _copy,
    "fill_": _fill,
    "zero_": _zero,
    "as_strided": transpose,  # a tangent's layout may differ from its primal's
    "layer_norm": transpose,
}
EXPLICIT.update(COMPLEX_RULES)


def derive(op):
    """The JVP rule of ``op`` (None: not differentiable, its outputs get no tangent)."""
    base = op.inplace_of or op
    name = base.name
    if name in EXPLICIT:
        return EXPLICIT[name]
    if name in MULTILINEAR and base.decomposition is None:
        return multilinear
    if name in LINEAR and (base.decomposition is None or base.defn.runner is not None):
        return linear
    if base.formula is not None and base.kind is Kind.ELEMENTWISE:
        return from_vjp
    if runs_decomposition(base):
        return decompose
    if base.formula is not None:
        return transpose
    if not base.defn.differentiable or base.kind in (Kind.FACTORY, Kind.RANDOM):
        return None
    raise RuntimeError(
        f"the forward derivative for '{op.name}' is not implemented (add a JVP rule to "
        "autograd/jvp_rules.py)"
    )


_RULES: dict = {}


def rule_for(op):
    found = _RULES.get(op, _RULES)
    if found is _RULES:
        found = derive(op)
        _RULES[op] = found
    return found


__all__ = ["EXPLICIT", "LINEAR", "MULTILINEAR", "STATE", "derive", "rule_for", "run_with_tangents"]
