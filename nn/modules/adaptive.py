"""AdaptiveLogSoftmaxWithLoss (Grave et al., "Efficient softmax approximation for GPUs"): a
head over the frequent classes plus one cluster token per tail, each tail a low-rank
projection; PyTorch's layout, so its state dicts load."""

from __future__ import annotations

from collections import namedtuple

import ember

from .. import functional as F
from .container import ModuleList, Sequential
from .linear import Linear
from .module import Module

_ASMoutput = namedtuple("_ASMoutput", ["output", "loss"])


class AdaptiveLogSoftmaxWithLoss(Module):
    """Log-probabilities of targets under the adaptive softmax, and their mean negative as the
    loss; ``log_prob`` gives every class's, ``predict`` the most likely class."""

    def __init__(
        self,
        in_features,
        n_classes,
        cutoffs,
        div_value=4.0,
        head_bias=False,
        device=None,
        dtype=None,
    ):
        super().__init__()
        cutoffs = list(cutoffs)
        if not cutoffs:
            raise ValueError("cutoffs should be a sequence of length larger than 0")
        if (
            cutoffs != sorted(cutoffs)
            or min(cutoffs) <= 0
            or max(cutoffs) > n_classes - 1
            or len(set(cutoffs)) != len(cutoffs)
            or any(int(c) != c for c in cutoffs)
        ):
            raise ValueError(
                "cutoffs should be a sequence of unique, positive integers sorted in an "
                "increasing order, where each value is between 1 and n_classes-1"
            )
        factory = {"device": device, "dtype": dtype}
        self.in_features, self.n_classes = in_features, n_classes
        self.cutoffs = cutoffs + [n_classes]
        self.div_value, self.head_bias = div_value, head_bias
        self.shortlist_size = self.cutoffs[0]
        self.n_clusters = len(self.cutoffs) - 1
        self.head_size = self.shortlist_size + self.n_clusters
        self.head = Linear(in_features, self.head_size, bias=head_bias, **factory)
        self.tail = ModuleList()
        for i in range(self.n_clusters):
            hidden = int(in_features // (div_value ** (i + 1)))
            size = self.cutoffs[i + 1] - self.cutoffs[i]
            self.tail.append(
                Sequential(
                    Linear(in_features, hidden, bias=False, **factory),
                    Linear(hidden, size, bias=False, **factory),
                )
            )

    def reset_parameters(self) -> None:
        self.head.reset_parameters()
        for i2h, h2o in self.tail:
            i2h.reset_parameters()
            h2o.reset_parameters()

    def forward(self, input_, target_):
        batched = _check(input_, target_)
        input = input_ if batched else input_.unsqueeze(0)
        target = target_ if batched else target_.unsqueeze(0)
        output = ember.zeros(target.shape[0], dtype=input.dtype, device=input.device)
        head_index = target
        edges = [0] + self.cutoffs
        for i in range(1, len(edges) - 1):
            mask = (target >= edges[i]) & (target < edges[i + 1])
            rows = mask.nonzero().reshape(-1)
            if rows.numel() == 0:
                continue
            cluster = F.log_softmax(self.tail[i - 1](input.index_select(0, rows)), dim=1)
            local = cluster.gather(1, (target[rows] - edges[i]).unsqueeze(1)).squeeze(1)
            output = output.index_add(0, rows, local)
            head_index = ember.where(mask, self.shortlist_size + i - 1, head_index)
        low, high = int(target.min()), int(target.max())
        if low < 0 or high >= self.n_classes:
            raise RuntimeError(
                f"Target values should be in [0, {self.n_classes - 1}], but values in range "
                f"[{low}, {high}] were found. "
            )
        head = F.log_softmax(self.head(input), dim=1)
        output = output + head.gather(1, head_index.unsqueeze(1)).squeeze(1)
        loss = (-output).mean()
        return _ASMoutput(output if batched else output.squeeze(0), loss)

    def _full_log_prob(self, input, head_output):
        head = F.log_softmax(head_output, dim=1)
        pieces = [head[:, : self.shortlist_size]]
        for i in range(self.n_clusters):
            cluster = F.log_softmax(self.tail[i](input), dim=1)
            pieces.append(cluster + head[:, self.shortlist_size + i].unsqueeze(1))
        return ember.cat(pieces, 1)

    def log_prob(self, input):
        """(N, n_classes) log-probabilities of every class."""
        return self._full_log_prob(input, self.head(input))

    def predict(self, input):
        """(N,) the most likely class of each row (the full softmax only where the head's
        best is a cluster token)."""
        head_output = self.head(input)
        output = head_output.argmax(1)
        outside = output >= self.shortlist_size
        if not bool(outside.any()):
            return output
        best = self._full_log_prob(input, head_output).argmax(1)
        return ember.where(outside, best, output)


def _check(input, target) -> bool:
    """PyTorch's shape checks; returns whether the input is batched."""
    if target.ndim == 1:
        if input.shape[0] != target.shape[0]:
            raise RuntimeError("Input and target should have the same size in the batch dimension.")
        if input.ndim != 2:
            raise RuntimeError(
                f"1D target tensor expects 2D input tensors, but found inputs with size "
                f"{list(input.shape)}"
            )
        return True
    if target.ndim == 0:
        if input.ndim != 1:
            raise RuntimeError(
                f"0D target tensor expects 1D input tensors, but found inputs with size "
                f"{list(input.shape)}"
            )
        return False
    raise RuntimeError("0D or 1D target tensor expected, multi-target not supported")
