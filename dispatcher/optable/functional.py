"""nn.functional ops with rows of their own: linear, convolutions, attention, group_norm and the
losses. Each is a composite over other rows; its code lives in ``ember.nn.functional`` (see
``kinds/functional.py``), and the public ``ember.nn.functional.<name>`` calls the row.

They are rows because PyTorch's autocast lists name them (``linear`` runs in the lower
precision with its bias, ``cross_entropy_loss`` in float32), and the lists are data keyed by op
name (``autocast_policy.py``). Names are PyTorch's aten names where they differ from the
functional (``cross_entropy_loss``). ``function=False``: the public entry points stay in
``nn.functional`` (legacy ``size_average``/``reduce`` arguments are resolved there).
"""

from __future__ import annotations

from ember import _dtype as dt

from ..kinds import functional as run
from ..opdef import DTYPES_ALL, DTYPES_FLOAT, DTYPES_NUMERIC, Kind, OpDef, Promotion
from . import _np_functional as ref

# PyTorch's CPU kernels compute these in integers too, exactly (integer GEMM, the window
# ops' integer paths): the decompositions do the same (ember's int64 matmul is exact).
_INTEGRAL = {
    "linear": DTYPES_NUMERIC,
    "bilinear": DTYPES_NUMERIC,
    "conv1d": DTYPES_FLOAT | {dt.int64},
    "conv2d": DTYPES_FLOAT | {dt.int64},
    "conv_transpose2d": DTYPES_FLOAT | {dt.int64},
    "cosine_embedding_loss": DTYPES_ALL,
}


def _row(schema: str, kind: Kind, module: str, samples: str, notes: str = "", **extra) -> OpDef:
    name = schema.split("(", 1)[0]
    return OpDef(
        schema,
        kind,
        getattr(ref, name),
        dtypes=_INTEGRAL.get(name, DTYPES_FLOAT),
        decomposition=run.from_nn(module, f"_{name}"),
        runner=run.run,
        function=False,
        method=False,
        samples=samples,
        notes=notes,
        **extra,
    )


ROWS = [
    _row("linear(Tensor input, Tensor weight, Tensor? bias=None) -> Tensor",
         Kind.MATMUL, "linear", "linear", "nn.functional.linear"),
    _row("bilinear(Tensor input1, Tensor input2, Tensor weight, Tensor? bias=None) -> Tensor",
         Kind.MATMUL, "linear", "bilinear", "nn.functional.bilinear"),
    _row("conv1d(Tensor input, Tensor weight, Tensor? bias=None, int[1] stride=1, "
         "int[1] padding=0, int[1] dilation=1, int groups=1) -> Tensor",
         Kind.CONV, "conv", "conv1d", "padding may also be 'same' or 'valid'"),
    _row("conv2d(Tensor input, Tensor weight, Tensor? bias=None, int[2] stride=1, "
         "int[2] padding=0, int[2] dilation=1, int groups=1) -> Tensor",
         Kind.CONV, "conv", "conv2d", "padding may also be 'same' or 'valid'"),
    _row("conv_transpose2d(Tensor input, Tensor weight, Tensor? bias=None, int[2] stride=1, "
         "int[2] padding=0, int[2] output_padding=0, int groups=1, int[2] dilation=1) -> Tensor",
         Kind.CONV, "conv", "conv_transpose2d"),
    _row("scaled_dot_product_attention(Tensor query, Tensor key, Tensor value, "
         "Tensor? attn_mask=None, float dropout_p=0.0, bool is_causal=False, *, "
         "float? scale=None, bool enable_gqa=False) -> Tensor",
         Kind.NN, "attention", "attention"),
    _row("group_norm(Tensor input, int num_groups, Tensor? weight=None, Tensor? bias=None, "
         "float eps=1e-05) -> Tensor",
         Kind.NN, "normalization", "group_norm"),
    _row("cosine_similarity(Tensor x1, Tensor x2, int dim=1, float eps=1e-08) -> Tensor",
         Kind.NN, "loss", "pair_loss"),
    _row("mse_loss(Tensor input, Tensor target, str reduction='mean', Tensor? weight=None) "
         "-> Tensor", Kind.NN, "loss", "pair_loss"),
    _row("l1_loss(Tensor input, Tensor target, str reduction='mean', Tensor? weight=None) "
         "-> Tensor", Kind.NN, "loss", "pair_loss"),
    _row("smooth_l1_loss(Tensor input, Tensor target, str reduction='mean', float beta=1.0) "
         "-> Tensor", Kind.NN, "loss", "pair_loss"),
    _row("huber_loss(Tensor input, Tensor target, str reduction='mean', float delta=1.0, "
         "Tensor? weight=None) -> Tensor", Kind.NN, "loss", "pair_loss"),
    _row("kl_div(Tensor input, Tensor target, str reduction='mean', bool log_target=False) "
         "-> Tensor", Kind.NN, "loss", "kl_div"),
    _row("binary_cross_entropy(Tensor input, Tensor target, Tensor? weight=None, "
         "str reduction='mean') -> Tensor", Kind.NN, "loss", "probability_loss",
         "banned under cuda/xpu autocast, as in PyTorch"),
    _row("binary_cross_entropy_with_logits(Tensor input, Tensor target, Tensor? weight=None, "
         "Tensor? pos_weight=None, str reduction='mean') -> Tensor",
         Kind.NN, "loss", "probability_loss"),
    _row("nll_loss(Tensor input, Tensor target, Tensor? weight=None, str reduction='mean', "
         "int ignore_index=-100) -> Tensor", Kind.NN, "_nll", "class_loss",
         "PyTorch's nll_loss and nll_loss2d in one row (any number of trailing dims), over "
         "nll_loss_forward (optable/loss_nll.py)"),
    _row("cross_entropy_loss(Tensor input, Tensor target, Tensor? weight=None, "
         "str reduction='mean', int ignore_index=-100, float label_smoothing=0.0) -> Tensor",
         Kind.NN, "cross_entropy_loss", "class_loss", "nn.functional.cross_entropy"),
    _row("cosine_embedding_loss(Tensor input1, Tensor input2, Tensor target, float margin=0.0, "
         "str reduction='mean') -> Tensor", Kind.NN, "loss", "cosine_embedding_loss",
         promotion=Promotion.INT_TO_FLOAT),
]  # fmt: skip
