"""Glue for the random kernels (to be written)."""

from __future__ import annotations


def build(ffi, lib) -> dict:
    return {}
