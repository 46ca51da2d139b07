"""PyTorch's OpInfo database (``torch.testing._internal.common_methods_invocations.op_db``) as
the oracle: every record with CPU dtypes, on every test device, each sample input through the
same public name in ember (function, Tensor method, in-place method, operator, ``out=``),
compared in values, dtypes and shapes, and in input gradients for float64 samples.

Samples: every one PyTorch gives, for each record and dtype, on every device
(``EMBER_OPINFO_SAMPLES=N`` checks N per record and dtype, spread over the list, for a quick
local run).

Records that do not pass yet are rows of ``opinfo/xfails.py`` (strict: a row whose record
passes fails the run, so the table only shrinks). The pass counts, records and samples, are
printed at the end of the run (``opinfo/report.py``).
"""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("expecttest")  # imported by PyTorch's test suite

from torch.testing._internal.common_methods_invocations import op_db  # noqa: E402

from .opinfo import xfails  # noqa: E402
from .opinfo.report import KEY  # noqa: E402
from .opinfo.runner import RecordRun, record_id  # noqa: E402

RECORDS = [record for record in op_db if record.supported_dtypes("cpu")]
SHOWN = 8  # failing samples listed in a failure's message


@pytest.mark.parametrize("record", RECORDS, ids=record_id)
def test_opinfo(record, device, request, record_property):
    check_record(record, device, request, record_property)


def check_record(record, device: str, request, record_property) -> None:
    """Run every sample of ``record`` on ``device``; fail listing the samples that differ."""
    name = record_id(record)
    reason = xfails.reason(name, device)
    if reason:
        request.applymarker(pytest.mark.xfail(reason=reason, strict=True))
    run = RecordRun(record, device)
    outcome = run.run()
    record_property(KEY, (name, device, outcome.passed, outcome.samples))
    if outcome.failures:
        shown = "\n".join(outcome.failures[:SHOWN])
        more = len(outcome.failures) - SHOWN
        pytest.fail(
            f"{name} on {device}: {outcome.samples - outcome.passed} of {outcome.samples} "
            f"samples fail\n{shown}" + (f"\n... and {more} more" if more > 0 else ""),
            pytrace=False,
        )
