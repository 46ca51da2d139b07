"""Batch norm folded into the convolution before it (placeholder until the pattern lands)."""

from __future__ import annotations


def fold_conv_batch_norm(graph):
    return graph
