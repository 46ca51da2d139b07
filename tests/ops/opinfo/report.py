"""The pytest plugin that prints the OpInfo pass counts at the end of a run.

Each OpInfo test attaches ``("opinfo", (record, device, passed samples, samples, samples not
run))`` to its report (``record_property``); under xdist the reports reach the controller with
it, so the counts cover every worker. Registered from tests/conftest.py; it imports nothing heavy.
"""

from __future__ import annotations

KEY = "opinfo"
_SEEN: dict = {}  # (record, device) -> (outcome, passed samples, samples)


def pytest_runtest_logreport(report) -> None:
    if report.when != "call":
        return
    for name, value in report.user_properties:
        if name == KEY:
            record, device, passed, samples, not_run = value
            if hasattr(report, "wasxfail"):
                outcome = "xfail" if report.skipped else "xpass"
            else:
                outcome = report.outcome
            _SEEN[(record, device)] = (outcome, passed, samples, not_run)


def summary_lines() -> list[str]:
    lines = []
    for device in sorted({device for _, device in _SEEN}):
        rows = [v for (_, d), v in _SEEN.items() if d == device]
        count = {k: sum(1 for r in rows if r[0] == k) for k in ("passed", "xfail", "failed")}
        passed = sum(r[1] for r in rows)
        samples = sum(r[2] for r in rows)
        not_run = sum(r[3] for r in rows)
        over = f", {not_run} over the device's size limit not run" if not_run else ""
        share = 100.0 * count["passed"] / max(len(rows), 1)
        lines.append(
            f"OpInfo on {device}: {count['passed']}/{len(rows)} records pass ({share:.1f}%), "
            f"{count['xfail']} xfail, {count['failed']} fail; "
            f"{passed}/{samples} samples pass{over}"
        )
    return lines


def pytest_terminal_summary(terminalreporter) -> None:
    lines = summary_lines()
    if lines:
        terminalreporter.section("OpInfo pass count")
        for line in lines:
            terminalreporter.write_line(line)
