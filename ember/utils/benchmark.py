"""``ember.utils.benchmark``: ``Timer`` and ``Measurement`` with ``torch.utils.benchmark``'s API.

``Timer`` runs a Python statement through ``timeit`` (synchronizing CUDA around each timing when
it is available, as PyTorch's default timer does) and returns a ``Measurement`` whose statistics
(median, mean, iqr, significant figures) follow PyTorch's definitions, with linear-interpolated
quantiles over the per-run times.
"""

from __future__ import annotations

import contextlib
import dataclasses
import math
import timeit

import numpy as np

import ember

__all__ = ["Measurement", "TaskSpec", "Timer"]

_IQR_WARN_THRESHOLD = 0.1
_IQR_GROSS_WARN_THRESHOLD = 0.25
_MIN_CONFIDENCE_INTERVAL = 25e-9
_MAX_SIGNIFICANT_FIGURES = 4


def _default_timer() -> float:
    if ember.cuda.is_available():
        ember.cuda.synchronize()
    return timeit.default_timer()


@dataclasses.dataclass(frozen=True)
class TaskSpec:
    """What was timed: the statement, its setup and its labels."""

    stmt: str
    setup: str
    global_setup: str = ""
    label: str | None = None
    sub_label: str | None = None
    description: str | None = None
    env: str | None = None
    num_threads: int = 1

    @property
    def title(self) -> str:
        """``label: sub_label`` when labelled, else the statement."""
        if self.label is not None:
            return self.label + (f": {self.sub_label}" if self.sub_label else "")
        if "\n" not in self.stmt:
            return self.stmt + (f": {self.sub_label}" if self.sub_label else "")
        return f"stmt:{f' ({self.sub_label})' if self.sub_label else ''}\n" + self.stmt


@dataclasses.dataclass
class Measurement:
    """Timings of one task: ``raw_times`` (seconds per block) of ``number_per_run`` runs each."""

    number_per_run: int
    raw_times: list
    task_spec: TaskSpec
    metadata: dict | None = None

    def __getattr__(self, name):  # stmt, label, ... as PyTorch's Measurement forwards them
        if name in {f.name for f in dataclasses.fields(TaskSpec)} | {"title"}:
            return getattr(self.task_spec, name)
        raise AttributeError(name)

    @property
    def times(self) -> list:
        """Seconds per run of each block."""
        return [t / self.number_per_run for t in self.raw_times]

    def _quantile(self, q: float) -> float:
        return float(np.quantile(np.asarray(self.times, dtype=np.float64), q))

    @property
    def median(self) -> float:
        return self._quantile(0.5)

    @property
    def mean(self) -> float:
        return float(np.mean(self.times))

    @property
    def iqr(self) -> float:
        return self._quantile(0.75) - self._quantile(0.25)

    @property
    def has_warnings(self) -> bool:
        return bool(self.raw_times) and not self.meets_confidence(_IQR_WARN_THRESHOLD)

    def meets_confidence(self, threshold: float = _IQR_WARN_THRESHOLD) -> bool:
        return self.iqr / self.median < threshold

    @property
    def significant_figures(self) -> int:
        """Rough count of trustworthy digits of the median, PyTorch's estimate (1 to 4)."""
        ordered = sorted(self.times)
        n = len(ordered)
        middle = ordered[n // 4 : math.ceil(3 * n / 4)]
        std = float(np.std(middle))
        interval = max(1.96 * std / math.sqrt(len(middle)), _MIN_CONFIDENCE_INTERVAL)
        figures = math.floor(math.log10(self.median / interval))
        return min(max(figures, 1), _MAX_SIGNIFICANT_FIGURES)

    def __repr__(self) -> str:
        scale, unit = next((s, u) for s, u in ((1, "s"), (1e-3, "ms"), (1e-6, "us"), (1e-9, "ns"))
                           if self.median >= s or u == "ns")  # fmt: skip
        lines = [object.__repr__(self), self.title]
        if self.description:
            lines.append(self.description)
        if self.setup and self.setup != "pass":
            lines.append(f"setup: {self.setup}")
        n = len(self.times)
        if n > 1:
            lines.append(f"  Median: {self.median / scale:.2f} {unit}")
            low, high = self._quantile(0.25) / scale, self._quantile(0.75) / scale
            lines.append(f"  IQR:    {self.iqr / scale:.2f} {unit} ({low:.2f} to {high:.2f})")
        else:
            lines.append(f"  {self.median / scale:.2f} {unit}")
        runs = "measurements" if n > 1 else "measurement"
        threads = "thread" if self.num_threads == 1 else "threads"
        per = " per measurement" if n > 1 else " "  # PyTorch's wording, spaces included
        lines.append(f"  {n} {runs}, {self.number_per_run} runs{per}, {self.num_threads} {threads}")
        if self.has_warnings:
            gross = not self.meets_confidence(_IQR_GROSS_WARN_THRESHOLD)
            lines.append(
                f"  WARNING: Interquartile range is {self.iqr / self.median * 100:.1f}% of the "
                "median measurement.\n           "
                + (
                    "This suggests significant environmental influence."
                    if gross
                    else "This could indicate system fluctuation."
                )
            )
        return "\n".join(lines)


@contextlib.contextmanager
def _threads(n: int):
    before = ember.get_num_threads()
    ember.set_num_threads(n)
    try:
        yield
    finally:
        ember.set_num_threads(before)


class Timer:
    """Time ``stmt`` after ``setup``, as ``torch.utils.benchmark.Timer``.

    Example:
        >>> Timer("x + y", globals={"x": ember.ones(8), "y": ember.ones(8)}).blocked_autorange()
    """

    def __init__(self, stmt="pass", setup="pass", global_setup="", timer=_default_timer,
                 globals=None, label=None, sub_label=None, description=None, env=None,
                 num_threads=1, language="python"):  # fmt: skip
        if str(getattr(language, "value", language)).lower() not in ("python", "py"):
            raise ValueError(f"Invalid language `{language}`: ember's Timer runs Python only.")
        self._globals = dict(globals or {})
        self._globals.setdefault("ember", ember)
        self._task_spec = TaskSpec(stmt, setup, global_setup, label, sub_label, description,
                                   env, num_threads)  # fmt: skip
        self._timer = timeit.Timer(stmt=stmt, setup=setup, timer=timer, globals=self._globals)

    def _timeit(self, number: int) -> float:
        return max(self._timer.timeit(number), 1e-9)  # a 0 would divide the overhead ratio

    def timeit(self, number: int = 1000000) -> Measurement:
        """One block of ``number`` runs, after a warm-up of ``number // 100``."""
        with _threads(self._task_spec.num_threads):
            self._timeit(max(number // 100, 2))
            return Measurement(number, [self._timeit(number)], self._task_spec)

    def repeat(self, repeat: int = -1, number: int = -1):
        raise NotImplementedError("See `Timer.blocked_autorange.`")

    def autorange(self, callback=None):
        raise NotImplementedError("See `Timer.blocked_autorange.`")

    def _block_size(self, min_run_time: float) -> int:
        """Runs per block so the timer's own overhead is negligible (PyTorch's estimate)."""
        overhead = float(np.median([self._timeit(0) for _ in range(5)]))
        number = 1
        while True:
            taken = self._timeit(number)
            if (overhead / taken <= 1e-4 and taken >= min_run_time / 1000) or taken > min_run_time:
                return number
            if number * 10 > 2147483647:
                return number
            number *= 10

    def _loop(self, number, stop, min_run_time, max_run_time=None, callback=None) -> list:
        total, times, can_stop = 0.0, [], False
        while total < min_run_time or not can_stop:
            spent = self._timeit(number)
            times.append(spent)
            total += spent
            if callback:
                callback(number, spent)
            can_stop = stop(times)
            if max_run_time and total > max_run_time:
                break
        return times

    def blocked_autorange(self, callback=None, min_run_time: float = 0.2) -> Measurement:
        """Blocks of runs until ``min_run_time`` seconds are spent; reports per-run times."""
        with _threads(self._task_spec.num_threads):
            number = self._block_size(min_run_time)
            times = self._loop(number, lambda _: True, min_run_time, callback=callback)
        return Measurement(number, times, self._task_spec)

    def adaptive_autorange(self, threshold: float = 0.1, *, min_run_time: float = 0.01,
                           max_run_time: float = 10.0, callback=None) -> Measurement:  # fmt: skip
        """Blocks until the IQR is under ``threshold`` of the median (or ``max_run_time``)."""
        with _threads(self._task_spec.num_threads):
            number = self._block_size(0.05)

            def stop(times):
                return len(times) > 3 and Measurement(
                    number, times, self._task_spec).meets_confidence(threshold)  # fmt: skip

            times = self._loop(number, stop, min_run_time, max_run_time, callback)
        return Measurement(number, times, self._task_spec)
