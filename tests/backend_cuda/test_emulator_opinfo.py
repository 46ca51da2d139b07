"""PyTorch's OpInfo records (tests/ops/test_opinfo.py) on the CUDA emulator
(EMBER_CUDA_EMULATOR=1): every sample of every record through the CUDA backend's generated
kernels and glue, compiled for the host, so CI without a GPU gives the cuda device the coverage
cpu, xpu and ref get. The xfail table is the same (rows ``name@cuda`` where the device differs).

Every sample took 163 s of wall time with ``-n 2`` on CI's 2-core machine (2026-11-27).
"""

from __future__ import annotations

import shutil

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("expecttest")  # imported by PyTorch's test suite

from tests.ops.opinfo.runner import record_id  # noqa: E402
from tests.ops.test_opinfo import RECORDS, check_record  # noqa: E402

pytestmark = [
    pytest.mark.skipif(shutil.which("g++") is None, reason="g++ builds the emulator"),
    pytest.mark.usefixtures("emulated_cuda"),
]


@pytest.mark.parametrize("record", RECORDS, ids=record_id)
def test_opinfo_on_the_emulator(record, request, record_property):
    check_record(record, "cuda", request, record_property)
