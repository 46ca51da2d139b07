"""The survey of the limited dtypes (test_limited_dtypes.py): what ember does not match yet."""

from __future__ import annotations

KNOWN_GAPS: dict = {}
DEVICE_REFUSES = (NotImplementedError,)
