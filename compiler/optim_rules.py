"""The elementwise updates of the optimizers without a ``fused=True`` op, as data.

One ``Rule`` per optimizer class (keyed by the class that defines ``step``): the
hyperparameters its plan guards, the state tensors it reads (named as the eager step names
them, so a state dict moves between eager and compiled),
the per-step numbers worked out in Python (learning rate, bias corrections: fed to the kernel
as 0-d tensors, so they change without a rebuild), and the update itself written out of place
in ember ops that the fusion scheduler fuses (compiler/fusion.py: add, mul, div, sqrt, where,
maximum...). optim_traced.py traces the update once per bucket and replays it. The formulas
follow each class's eager ``step`` (ember/optim), which follows PyTorch's single-tensor path;
``abs``/``sign`` are ``maximum``/``where``, the fusible forms, and ``addcmul``/``addcdiv`` are
written out, so results agree with eager to rounding, not bit for bit.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import ember
from ember.optim.adadelta import Adadelta
from ember.optim.adagrad import Adagrad
from ember.optim.adam import Adam
from ember.optim.adamax import Adamax
from ember.optim.asgd import ASGD
from ember.optim.nadam import NAdam
from ember.optim.optimizer import float32, lazy_state, scalar
from ember.optim.radam import RAdam
from ember.optim.rmsprop import RMSprop
from ember.optim.rprop import Rprop
from ember.optim.sgd import SGD


@dataclass(frozen=True)
class Rule:
    keys: tuple  # what the plan guards (floats: PyTorch's dynamic-after-one-change)
    states: tuple | Callable  # the state tensors' names (or group -> names), in update order
    numbers: Callable  # (group, step, first state dict) -> {name: float}, per call
    update: Callable  # (group, p, g, states dict, numbers dict) -> (new p, new states dict)
    init: Callable | None = None  # (optimizer, p, group) -> p's state, as the eager step makes
    # it (None: ``step`` 0 and zero tensors, ``lazy_state``)
    after: Callable | None = None  # (group, step, numbers) -> Python numbers of the state to
    # write after the call (NAdam's mu_product, ASGD's eta and mu)
    counts: bool = True  # the state keeps a ``step`` count (SGD's does not)
    first: Callable | None = None  # (optimizer, group) -> whether no state exists yet (SGD's
    # momentum buffers): the bucket's ``extra["is_first_step"]``, which its numbers read

    def names(self, group) -> tuple:
        return self.states(group) if callable(self.states) else self.states

    def create(self, opt, p, group) -> dict:
        if self.init is not None:
            return self.init(opt, p, group)
        return lazy_state(opt.state, p, *self.names(group))


def _grad(group, p, g, n, decay=True):
    """The gradient as ``grads_of`` makes it: negated to maximize, plus L2 weight decay."""
    if group.get("maximize"):
        g = -g
    if decay and group.get("weight_decay", 0) != 0:
        g = g + n["weight_decay"] * p
    return g


def _lerp(a, b, weight):
    return a + weight * (b - a)


# ---- RMSprop -----------------------------------------------------------------------------------
def _rmsprop_states(group):
    return (
        ("square_avg",)
        + ("momentum_buffer",) * (group["momentum"] > 0)
        + (("grad_avg",) if group["centered"] else ())
    )


def _rmsprop_numbers(group, step, state):
    alpha = group["alpha"]
    return {"lr": scalar(group["lr"]), "alpha": alpha, "one_m_alpha": 1 - alpha,
            "eps": group["eps"], "momentum": group["momentum"],
            "weight_decay": group["weight_decay"]}  # fmt: skip


def _rmsprop(group, p, g, s, n):
    g = _grad(group, p, g, n)
    new = {"square_avg": s["square_avg"] * n["alpha"] + n["one_m_alpha"] * g * g}
    if group["centered"]:
        new["grad_avg"] = _lerp(s["grad_avg"], g, n["one_m_alpha"])
        avg = (new["square_avg"] - new["grad_avg"] * new["grad_avg"]).sqrt() + n["eps"]
    else:
        avg = new["square_avg"].sqrt() + n["eps"]
    if group["momentum"] > 0:
        new["momentum_buffer"] = s["momentum_buffer"] * n["momentum"] + g / avg
        return p - n["lr"] * new["momentum_buffer"], new
    return p - n["lr"] * (g / avg), new


# ---- Adagrad -----------------------------------------------------------------------------------
def _adagrad_numbers(group, step, state):
    lr = scalar(group["lr"])
    return {"clr": lr / (1 + (step - 1) * group["lr_decay"]), "eps": group["eps"],
            "weight_decay": group["weight_decay"]}  # fmt: skip


def _adagrad(group, p, g, s, n):
    g = _grad(group, p, g, n)
    total = s["sum"] + g * g
    return p - n["clr"] * (g / (total.sqrt() + n["eps"])), {"sum": total}


# ---- Adamax ------------------------------------------------------------------------------------
def _adamax_numbers(group, step, state):
    beta1, beta2 = group["betas"]
    return {"one_m_beta1": 1 - beta1, "beta2": beta2, "eps": group["eps"],
            "clr": scalar(group["lr"]) / (1 - beta1**step),
            "weight_decay": group["weight_decay"]}  # fmt: skip


def _adamax(group, p, g, s, n):
    g = _grad(group, p, g, n)
    avg = _lerp(s["exp_avg"], g, n["one_m_beta1"])
    inf = ember.maximum(s["exp_inf"] * n["beta2"], ember.maximum(g, -g) + n["eps"])
    return p - n["clr"] * (avg / inf), {"exp_avg": avg, "exp_inf": inf}


# ---- NAdam -------------------------------------------------------------------------------------
def _nadam_numbers(group, step, state):
    lr = scalar(group["lr"])
    beta1, beta2 = group["betas"]
    psi = group["momentum_decay"]
    mu = beta1 * (1.0 - 0.5 * (0.96 ** (step * psi)))
    mu_next = beta1 * (1.0 - 0.5 * (0.96 ** ((step + 1) * psi)))
    product = float32(state["mu_product"] * float32(mu))
    decoupled = group["decoupled_weight_decay"]
    return {"lr": lr, "one_m_beta1": 1 - beta1, "beta2": beta2, "one_m_beta2": 1 - beta2,
            "bc2": 1 - beta2**step, "eps": group["eps"], "mu_product": product,
            "c_grad": lr * (1.0 - mu) / (1.0 - product),
            "c_avg": lr * mu_next / (1.0 - product * mu_next),
            "decay": 1 - lr * group["weight_decay"] if decoupled else 1.0,
            "weight_decay": 0 if decoupled else group["weight_decay"]}  # fmt: skip


def _decayed(group, p, n):
    """AdamW-style decoupled decay first (NAdam, RAdam with decoupled_weight_decay)."""
    if group["decoupled_weight_decay"] and group["weight_decay"] != 0:
        return p * n["decay"]
    return p


def _nadam(group, p, g, s, n):
    g = _grad(group, p, g, n, decay=not group["decoupled_weight_decay"])
    p = _decayed(group, p, n)
    avg = _lerp(s["exp_avg"], g, n["one_m_beta1"])
    sq = s["exp_avg_sq"] * n["beta2"] + n["one_m_beta2"] * g * g
    denom = (sq / n["bc2"]).sqrt() + n["eps"]
    p = p - n["c_grad"] * (g / denom) - n["c_avg"] * (avg / denom)
    return p, {"exp_avg": avg, "exp_avg_sq": sq}


# ---- RAdam -------------------------------------------------------------------------------------
def _radam_numbers(group, step, state):
    lr = scalar(group["lr"])
    beta1, beta2 = group["betas"]
    rho_inf = 2 / (1 - beta2) - 1
    bc2 = 1 - beta2**step
    rho_t = rho_inf - 2 * step * (beta2**step) / bc2
    # rectified (rho_t > 5): m̂·lr·sqrt(bc2)/(sqrt(v)+eps)·r_t, else m̂·lr: both as
    # m̂·lr·(k/(sqrt(v)+eps) + b), so the switch is two numbers, not a rebuild
    rect = rho_t > 5.0
    r = ((rho_t - 4) * (rho_t - 2) * rho_inf / ((rho_inf - 4) * (rho_inf - 2) * rho_t)) ** 0.5
    decoupled = group["decoupled_weight_decay"]
    return {"one_m_beta1": 1 - beta1, "beta2": beta2, "one_m_beta2": 1 - beta2,
            "clr": lr / (1 - beta1**step), "k": bc2**0.5 * r if rect else 0.0,
            "b": 0.0 if rect else 1.0, "eps": group["eps"],
            "decay": 1 - lr * group["weight_decay"] if decoupled else 1.0,
            "weight_decay": 0 if decoupled else group["weight_decay"]}  # fmt: skip


def _radam(group, p, g, s, n):
    g = _grad(group, p, g, n, decay=not group["decoupled_weight_decay"])
    p = _decayed(group, p, n)
    avg = _lerp(s["exp_avg"], g, n["one_m_beta1"])
    sq = s["exp_avg_sq"] * n["beta2"] + n["one_m_beta2"] * g * g
    scale = n["k"] / (sq.sqrt() + n["eps"]) + n["b"]
    return p - avg * n["clr"] * scale, {"exp_avg": avg, "exp_avg_sq": sq}


# ---- Adadelta ----------------------------------------------------------------------------------
def _adadelta_numbers(group, step, state):
    rho = group["rho"]
    return {"lr": scalar(group["lr"]), "rho": rho, "one_m_rho": 1 - rho, "eps": group["eps"],
            "weight_decay": group["weight_decay"]}  # fmt: skip


def _adadelta(group, p, g, s, n):
    g = _grad(group, p, g, n)
    sq = s["square_avg"] * n["rho"] + n["one_m_rho"] * g * g
    delta = (s["acc_delta"] + n["eps"]).sqrt() / (sq + n["eps"]).sqrt() * g
    acc = s["acc_delta"] * n["rho"] + n["one_m_rho"] * delta * delta
    return p - n["lr"] * delta, {"square_avg": sq, "acc_delta": acc}


# ---- ASGD --------------------------------------------------------------------------------------
def _asgd_numbers(group, step, state):
    eta = state["eta"]
    return {"decay": 1 - group["lambd"] * eta, "eta": eta, "mu": state["mu"],
            "weight_decay": group["weight_decay"]}  # fmt: skip


def _asgd(group, p, g, s, n):
    g = _grad(group, p, g, n)
    p = p * n["decay"] - n["eta"] * g
    return p, {"ax": s["ax"] + n["mu"] * (p - s["ax"])}


def _asgd_after(group, step, n):
    lr, lambd = scalar(group["lr"]), group["lambd"]
    return {"eta": float32(lr / ((1 + lambd * lr * step) ** group["alpha"])),
            "mu": float32(1 / max(1, step - group["t0"]))}  # fmt: skip


# ---- Rprop -------------------------------------------------------------------------------------
def _rprop_numbers(group, step, state):
    (minus, plus), (low, high) = group["etas"], group["step_sizes"]
    return {"minus": minus, "plus": plus, "low": low, "high": high, "one": 1.0, "zero": 0.0,
            "neg_one": -1.0}  # fmt: skip


def _rprop(group, p, g, s, n):
    g = -g if group["maximize"] else g
    prod = g * s["prev"]
    factor = ember.where(prod > 0, n["plus"], ember.where(prod < 0, n["minus"], n["one"]))
    size = ember.minimum(ember.maximum(s["step_size"] * factor, n["low"]), n["high"])
    g = ember.where(prod < 0, n["zero"], g)  # a flipped sign: skip now, forget it next step
    sign = ember.where(g > 0, n["one"], ember.where(g < 0, n["neg_one"], n["zero"]))
    return p - sign * size, {"prev": g, "step_size": size}


# ---- Adam, AdamW, SGD where the device has no fused op (xpu, CUDA) -----------------------------
def _adam_states(group):
    return _ADAM_STATE + ("max_exp_avg_sq",) * bool(group["amsgrad"])


def _adam_numbers(group, step, state):
    lr = scalar(group["lr"])
    beta1, beta2 = group["betas"]
    decoupled = group["decoupled_weight_decay"]
    return {"one_m_beta1": 1 - beta1, "beta2": beta2, "one_m_beta2": 1 - beta2,
            "bc2_sqrt": (1 - beta2**step) ** 0.5, "neg_step": -(lr / (1 - beta1**step)),
            "eps": group["eps"], "decay": 1 - lr * group["weight_decay"] if decoupled else 1.0,
            "weight_decay": 0 if decoupled else group["weight_decay"]}  # fmt: skip


def _adam(group, p, g, s, n):
    """Adam's eager step (ember/optim/adam.py): lerp_, mul_ and addcmul_, sqrt / bias
    correction + eps, addcdiv_ with -step_size, in its operand order."""
    g = _grad(group, p, g, n, decay=not group["decoupled_weight_decay"])
    p = _decayed(group, p, n)
    new = {"exp_avg": _lerp(s["exp_avg"], g, n["one_m_beta1"]),
           "exp_avg_sq": s["exp_avg_sq"] * n["beta2"] + n["one_m_beta2"] * g * g}  # fmt: skip
    sq = new["exp_avg_sq"]
    if group["amsgrad"]:
        sq = new["max_exp_avg_sq"] = ember.maximum(s["max_exp_avg_sq"], sq)
    denom = sq.sqrt() / n["bc2_sqrt"] + n["eps"]
    return p + n["neg_step"] * new["exp_avg"] / denom, new


def _adam_init(opt, p, group):
    state = opt._state_for(p, group["amsgrad"])
    if group["amsgrad"] and "max_exp_avg_sq" not in state:  # amsgrad turned on later
        state["max_exp_avg_sq"] = ember.zeros_like(p)
    return state


def _sgd_states(group):
    return ("momentum_buffer",) * (group["momentum"] != 0)


def _sgd_numbers(group, step, state):
    momentum, first = group["momentum"], state.get("is_first_step")
    return {"neg_lr": -scalar(group["lr"]), "weight_decay": group["weight_decay"],
            "momentum": momentum, "keep": 0.0 if first else momentum,
            "take": 1.0 if first else 1 - group["dampening"]}  # fmt: skip


def _sgd(group, p, g, s, n):
    """SGD's eager step (ember/optim/sgd.py): the first step's buffer is the gradient (a zero
    buffer kept 0 times plus the gradient taken once), later ones ``buf * m + g * (1 - d)``."""
    g = _grad(group, p, g, n)
    new = {}
    if group["momentum"] != 0:
        buf = new["momentum_buffer"] = s["momentum_buffer"] * n["keep"] + g * n["take"]
        g = g + buf * n["momentum"] if group["nesterov"] else buf
    return p + g * n["neg_lr"], new


def _sgd_init(opt, p, group):
    state = opt.state[p]
    if group["momentum"] != 0 and state.get("momentum_buffer") is None:
        state["momentum_buffer"] = ember.zeros_like(p)
    return state


def _sgd_first(opt, group) -> bool:
    return group["momentum"] != 0 and all(
        opt.state[p].get("momentum_buffer") is None for p in group["params"] if p.grad is not None
    )


def _own(opt, p, group):
    """The optimizer's own state initialiser (RMSprop, Adagrad)."""
    return opt._state_for(p, group)


# fmt: off
_ADAM_STATE = ("exp_avg", "exp_avg_sq")
RULES = {
    RMSprop: Rule(("lr", "alpha", "eps", "weight_decay", "momentum", "centered", "maximize"),
                  _rmsprop_states, _rmsprop_numbers, _rmsprop, _own),
    Adagrad: Rule(("lr", "lr_decay", "eps", "weight_decay", "maximize"), ("sum",),
                  _adagrad_numbers, _adagrad, _own),
    Adamax: Rule(("lr", "betas", "eps", "weight_decay", "maximize"), ("exp_avg", "exp_inf"),
                 _adamax_numbers, _adamax),
    NAdam: Rule(("lr", "betas", "eps", "weight_decay", "momentum_decay",
                 "decoupled_weight_decay", "maximize"), _ADAM_STATE, _nadam_numbers, _nadam,
                lambda opt, p, group: lazy_state(opt.state, p, *_ADAM_STATE, mu_product=1.0),
                lambda group, step, n: {"mu_product": n["mu_product"]}),
    RAdam: Rule(("lr", "betas", "eps", "weight_decay", "decoupled_weight_decay", "maximize"),
                _ADAM_STATE, _radam_numbers, _radam),
    Adadelta: Rule(("lr", "rho", "eps", "weight_decay", "maximize"), ("square_avg", "acc_delta"),
                   _adadelta_numbers, _adadelta),
    ASGD: Rule(("lr", "lambd", "alpha", "t0", "weight_decay", "maximize"), ("ax",),
               _asgd_numbers, _asgd,
               lambda opt, p, group: opt._state_for(p, scalar(group["lr"])), _asgd_after),
    Rprop: Rule(("lr", "etas", "step_sizes", "maximize"), ("prev", "step_size"),
                _rprop_numbers, _rprop,
                lambda opt, p, group: opt._state_for(p, p.grad, group["lr"])),
}
# Adam/AdamW and SGD have fused ops (``_fused_adam_``...: compiler/optim_step.py); these rules
# serve the devices whose backend has no kernel for them, so the step is one generated kernel
_ADAM_KEYS = ("lr", "betas", "eps", "weight_decay", "amsgrad", "maximize", "decoupled_weight_decay")
FUSED_OP_RULES = {
    Adam: Rule(_ADAM_KEYS, _adam_states, _adam_numbers, _adam, _adam_init),
    SGD: Rule(("lr", "momentum", "dampening", "weight_decay", "nesterov", "maximize"),
              _sgd_states, _sgd_numbers, _sgd, _sgd_init, counts=False, first=_sgd_first),
}
# fmt: on
