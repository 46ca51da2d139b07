"""PyTorch's OpInfo database (``torch.testing._internal.common_methods_invocations.op_db``) as
the oracle: every record with CPU dtypes, on every test device, each sample input through the
same public name in ember (function, Tensor method, in-place method, operator, ``out=``),
compared in values, dtypes and shapes, and in input gradients for float64 samples.

Samples: every one PyTorch gives, for each record and dtype, on cpu; at most 64 of them,
spread over the list, on the other devices (``runner.DEVICE_SAMPLE_LIMIT``); on the fallback
device ``ref``, whose kernels are cpu's behind a copy, the third of the records of
``tests/conftest.py``'s share (``EMBER_OPINFO_SAMPLES=all`` checks every sample everywhere,
``EMBER_OPINFO_SAMPLES=N`` N per record and dtype, for a quick local run).

Records that do not pass yet are rows of ``opinfo/xfails.py`` (strict: a row whose record
passes fails the run, so the table only shrinks). The pass counts, records and samples, are
printed at the end of the run (``opinfo/report.py``).
"""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("expecttest")  # imported by PyTorch's test suite

from torch.testing._internal.common_methods_invocations import op_db  # noqa: E402

from ..conftest import FALLBACK_DEVICES, device_op_params  # noqa: E402
from .opinfo import xfails  # noqa: E402
from .opinfo.report import KEY  # noqa: E402
from .opinfo.runner import COMPLEX_DTYPES, RecordRun, record_id  # noqa: E402

RECORDS = [record for record in op_db if record.supported_dtypes("cpu")]
COMPLEX_RECORDS = [r for r in RECORDS if set(COMPLEX_DTYPES) & r.supported_dtypes("cpu")]
SHOWN = 8  # failing samples listed in a failure's message


def _every_record(device, full) -> bool:
    return device not in FALLBACK_DEVICES


@pytest.mark.parametrize("device, record", device_op_params(RECORDS, record_id, _every_record))
def test_opinfo(record, device, request, record_property):
    check_record(record, device, request, record_property)


@pytest.mark.parametrize(
    "device, record", device_op_params(COMPLEX_RECORDS, record_id, _every_record)
)
def test_opinfo_complex(record, device, request, record_property):
    check_record(record, device, request, record_property, complex_dtypes=True)


def check_record(record, device: str, request, record_property, complex_dtypes=False) -> None:
    """Run every sample of ``record`` on ``device`` (in its real dtypes, or in complex128);
    fail listing the samples that differ."""
    name = record_id(record)
    reason = (xfails.complex_reason if complex_dtypes else xfails.reason)(name, device)
    if reason:
        request.applymarker(pytest.mark.xfail(reason=reason, strict=True))
    run = RecordRun(record, device, list(COMPLEX_DTYPES) if complex_dtypes else None)
    outcome = run.run()
    shown_device = f"{device} in complex128" if complex_dtypes else device
    record_property(KEY, (name, shown_device, outcome.passed, outcome.samples, outcome.over_limit))
    if outcome.failures:
        shown = "\n".join(outcome.failures[:SHOWN])
        more = len(outcome.failures) - SHOWN
        pytest.fail(
            f"{name} on {device}: {outcome.samples - outcome.passed} of {outcome.samples} "
            f"samples fail\n{shown}" + (f"\n... and {more} more" if more > 0 else ""),
            pytrace=False,
        )
