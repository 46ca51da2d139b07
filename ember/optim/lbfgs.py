"""L-BFGS with an optional strong-Wolfe line search: ``torch.optim.LBFGS``.

A port of PyTorch's implementation (itself after minFunc). The scalars PyTorch keeps as 0-d
tensors (``ys``, ``ro``, ``H_diag``, the step ``t``, directional derivatives) are Python floats
here: the algorithm branches on them every iteration, so they are read on the host anyway.
"""

from __future__ import annotations

import math

import ember
from ember.autograd import enable_grad

from .optimizer import Optimizer, add_scaled_, check_nonnegative, scalar


def _cubic_interpolate(x1, f1, g1, x2, f2, g2, bounds=None):
    """Minimizer of the cubic through (x1, f1, g1) and (x2, f2, g2), clipped to ``bounds``."""
    if bounds is not None:
        xmin_bound, xmax_bound = bounds
    else:
        xmin_bound, xmax_bound = (x1, x2) if x1 <= x2 else (x2, x1)
    d1 = g1 + g2 - 3 * (f1 - f2) / (x1 - x2)
    d2_square = d1**2 - g1 * g2
    if d2_square < 0:
        return (xmin_bound + xmax_bound) / 2.0
    d2 = math.sqrt(d2_square)
    if x1 <= x2:
        min_pos = x2 - (x2 - x1) * ((g2 + d2 - d1) / (g2 - g1 + 2 * d2))
    else:
        min_pos = x1 - (x1 - x2) * ((g1 + d2 - d1) / (g1 - g2 + 2 * d2))
    return min(max(min_pos, xmin_bound), xmax_bound)


def _dot(a, b) -> float:
    return float(ember.dot(a, b))


def _abs_max(x) -> float:
    return float(x.abs().max())


class _Bracket:
    """The line search's bracketing interval: step sizes, losses, gradients and slopes."""

    def __init__(self, t, f, g, gtd):
        self.t, self.f, self.g, self.gtd = t, f, g, gtd

    def set(self, i, t, f, g, gtd):
        self.t[i], self.f[i], self.g[i], self.gtd[i] = t, f, g, gtd


def _strong_wolfe(obj_func, x, t, d, f, g, gtd, c1=1e-4, c2=0.9, tolerance_change=1e-9, max_ls=25):
    """Line search along ``d`` for a step ``t`` meeting the strong Wolfe conditions.

    Returns ``(f_new, g_new, t, evaluations)``.
    """
    d_norm = _abs_max(d)
    g = g.clone()
    f_new, g_new = obj_func(x, t, d)
    ls_func_evals = 1
    gtd_new = _dot(g_new, d)
    t_prev, f_prev, g_prev, gtd_prev = 0, f, g, gtd
    done = False
    ls_iter = 0
    bracket = None
    # Bracketing phase: grow t until an interval is known to contain an acceptable point.
    while ls_iter < max_ls:
        if f_new > (f + c1 * t * gtd) or (ls_iter > 1 and f_new >= f_prev):
            bracket = _Bracket(
                [t_prev, t], [f_prev, f_new], [g_prev, g_new.clone()], [gtd_prev, gtd_new]
            )
            break
        if abs(gtd_new) <= -c2 * gtd:
            bracket = _Bracket([t], [f_new], [g_new], [gtd_new])
            done = True
            break
        if gtd_new >= 0:
            bracket = _Bracket(
                [t_prev, t], [f_prev, f_new], [g_prev, g_new.clone()], [gtd_prev, gtd_new]
            )
            break
        min_step = t + 0.01 * (t - t_prev)
        max_step = t * 10
        tmp = t
        t = _cubic_interpolate(
            t_prev, f_prev, gtd_prev, t, f_new, gtd_new, bounds=(min_step, max_step)
        )
        t_prev, f_prev, g_prev, gtd_prev = tmp, f_new, g_new.clone(), gtd_new
        f_new, g_new = obj_func(x, t, d)
        ls_func_evals += 1
        gtd_new = _dot(g_new, d)
        ls_iter += 1
    if ls_iter == max_ls:
        bracket = _Bracket([0, t], [f, f_new], [g, g_new], [None, None])
    # Zoom phase: shrink the interval until the point satisfies the conditions.
    insuf_progress = False
    low, high = (0, 1) if bracket.f[0] <= bracket.f[-1] else (1, 0)
    while not done and ls_iter < max_ls:
        if abs(bracket.t[1] - bracket.t[0]) * d_norm < tolerance_change:
            break
        t = _cubic_interpolate(
            bracket.t[0], bracket.f[0], bracket.gtd[0], bracket.t[1], bracket.f[1], bracket.gtd[1]
        )
        t, insuf_progress = _safeguard(t, bracket.t, insuf_progress)
        f_new, g_new = obj_func(x, t, d)
        ls_func_evals += 1
        gtd_new = _dot(g_new, d)
        ls_iter += 1
        if f_new > (f + c1 * t * gtd) or f_new >= bracket.f[low]:
            bracket.set(high, t, f_new, g_new.clone(), gtd_new)
            low, high = (0, 1) if bracket.f[0] <= bracket.f[1] else (1, 0)
        else:
            if abs(gtd_new) <= -c2 * gtd:
                done = True
            elif gtd_new * (bracket.t[high] - bracket.t[low]) >= 0:
                bracket.set(high, bracket.t[low], bracket.f[low], bracket.g[low], bracket.gtd[low])
            bracket.set(low, t, f_new, g_new.clone(), gtd_new)
    return bracket.f[low], bracket.g[low], bracket.t[low], ls_func_evals


def _safeguard(t, ts, insuf_progress):
    """Keep the zoom's trial point away from the interval's ends (PyTorch's rule)."""
    hi, lo = max(ts), min(ts)
    eps = 0.1 * (hi - lo)
    if min(hi - t, t - lo) < eps:
        if insuf_progress or t >= hi or t <= lo:
            t = hi - eps if abs(t - hi) < abs(t - lo) else lo + eps
            return t, False
        return t, True
    return t, False


class LBFGS(Optimizer):
    """Implements L-BFGS, like ``torch.optim.LBFGS`` (one parameter group; ``step`` needs a
    closure that re-evaluates the model and returns the loss).

    Args:
        params: parameters to optimize.
        lr: learning rate (default: 1).
        max_iter: maximal number of iterations per optimization step (default: 20).
        max_eval: maximal number of function evaluations per step (default: max_iter * 1.25).
        tolerance_grad: termination tolerance on first order optimality (default: 1e-7).
        tolerance_change: termination tolerance on function value/parameter changes
            (default: 1e-9).
        history_size: update history size (default: 100).
        line_search_fn: either ``"strong_wolfe"`` or None (default: None).

    Example:
        >>> opt = ember.optim.LBFGS(model.parameters(), line_search_fn="strong_wolfe")
        >>> def closure():
        ...     opt.zero_grad()
        ...     loss = loss_fn(model(x), y)
        ...     loss.backward()
        ...     return loss
        >>> opt.step(closure)
    """

    def __init__(
        self,
        params,
        lr: float = 1,
        max_iter: int = 20,
        max_eval: int | None = None,
        tolerance_grad: float = 1e-7,
        tolerance_change: float = 1e-9,
        history_size: int = 100,
        line_search_fn: str | None = None,
    ) -> None:
        check_nonnegative(lr=lr)
        if max_eval is None:
            max_eval = max_iter * 5 // 4
        defaults = {
            "lr": lr,
            "max_iter": max_iter,
            "max_eval": max_eval,
            "tolerance_grad": tolerance_grad,
            "tolerance_change": tolerance_change,
            "history_size": history_size,
            "line_search_fn": line_search_fn,
        }
        super().__init__(params, defaults)
        if len(self.param_groups) != 1:
            raise ValueError("LBFGS doesn't support per-parameter options (parameter groups)")
        self._params = self.param_groups[0]["params"]

    def _gather_flat_grad(self):
        views = []
        for p in self._params:
            if p.grad is None:
                views.append(ember.zeros((p.numel(),), dtype=p.dtype, device=p.device))
            else:
                views.append(p.grad.reshape(-1))
        return ember.cat(views, 0)

    def _add_grad(self, step_size, update) -> None:
        offset = 0
        for p in self._params:
            numel = p.numel()
            add_scaled_(p, update[offset : offset + numel].view_as(p), step_size)
            offset += numel

    def _clone_param(self):
        return [p.clone() for p in self._params]

    def _set_param(self, params_data) -> None:
        for p, pdata in zip(self._params, params_data):
            p.copy_(pdata)

    def _directional_evaluate(self, closure, x, t, d):
        self._add_grad(t, d)
        loss = float(closure())
        flat_grad = self._gather_flat_grad()
        self._set_param(x)
        return loss, flat_grad

    def _direction(self, state, flat_grad, history_size):
        """The quasi-Newton direction (two-loop recursion), updating the curvature history."""
        if state["n_iter"] == 1:
            state.update(old_dirs=[], old_stps=[], ro=[], H_diag=1)
            return flat_grad.neg()
        old_dirs, old_stps, ro = state["old_dirs"], state["old_stps"], state["ro"]
        y = flat_grad.sub(state["prev_flat_grad"])
        s = state["d"].mul(state["t"])
        ys = _dot(y, s)
        if ys > 1e-10:
            if len(old_dirs) == history_size:
                old_dirs.pop(0)
                old_stps.pop(0)
                ro.pop(0)
            old_dirs.append(y)
            old_stps.append(s)
            ro.append(1.0 / ys)
            state["H_diag"] = ys / _dot(y, y)
        if "al" not in state:
            state["al"] = [None] * history_size
        al = state["al"]
        q = flat_grad.neg()
        for i in range(len(old_dirs) - 1, -1, -1):
            al[i] = _dot(old_stps[i], q) * ro[i]
            add_scaled_(q, old_dirs[i], -al[i])
        r = q.mul(state["H_diag"])
        for i in range(len(old_dirs)):
            be_i = _dot(old_dirs[i], r) * ro[i]
            add_scaled_(r, old_stps[i], al[i] - be_i)
        return r

    def step(self, closure):
        """Perform a single optimization step (several iterations; ``closure`` is required)."""
        closure = enable_grad()(closure)
        group = self.param_groups[0]
        lr = scalar(group["lr"])
        max_iter = group["max_iter"]
        max_eval = group["max_eval"]
        tolerance_grad = group["tolerance_grad"]
        tolerance_change = group["tolerance_change"]
        line_search_fn = group["line_search_fn"]
        if line_search_fn not in (None, "strong_wolfe"):
            raise RuntimeError("only 'strong_wolfe' is supported")

        state = self.state[self._params[0]]
        state.setdefault("func_evals", 0)
        state.setdefault("n_iter", 0)
        orig_loss = closure()
        loss = float(orig_loss)
        current_evals = 1
        state["func_evals"] += 1
        flat_grad = self._gather_flat_grad()
        if _abs_max(flat_grad) <= tolerance_grad:
            return orig_loss

        n_iter = 0
        while n_iter < max_iter:
            n_iter += 1
            state["n_iter"] += 1
            d = self._direction(state, flat_grad, group["history_size"])
            if state.get("prev_flat_grad") is None:
                state["prev_flat_grad"] = flat_grad.clone()
            else:
                state["prev_flat_grad"].copy_(flat_grad)
            prev_loss = loss
            state["prev_loss"] = loss
            if state["n_iter"] == 1:
                t = min(1.0, 1.0 / float(flat_grad.abs().sum())) * lr
            else:
                t = lr
            gtd = _dot(flat_grad, d)
            state["d"], state["t"] = d, t
            if gtd > -tolerance_change:
                break

            ls_func_evals = 0
            if line_search_fn is not None:
                x_init = self._clone_param()

                def obj_func(x, t, d):
                    return self._directional_evaluate(closure, x, t, d)

                loss, flat_grad, t, ls_func_evals = _strong_wolfe(
                    obj_func, x_init, t, d, loss, flat_grad, gtd, max_ls=max_eval - current_evals
                )
                state["t"] = t
                self._add_grad(t, d)
                opt_cond = _abs_max(flat_grad) <= tolerance_grad
            else:
                self._add_grad(t, d)
                opt_cond = False
                if n_iter != max_iter:
                    loss = float(closure())
                    flat_grad = self._gather_flat_grad()
                    opt_cond = _abs_max(flat_grad) <= tolerance_grad
                    ls_func_evals = 1
            current_evals += ls_func_evals
            state["func_evals"] += ls_func_evals

            if n_iter == max_iter or current_evals >= max_eval or opt_cond:
                break
            if _abs_max(d.mul(t)) <= tolerance_change:
                break
            if abs(loss - prev_loss) < tolerance_change:
                break
        return orig_loss
