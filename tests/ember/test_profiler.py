"""ember.profiler: a dispatch layer that counts and times every op inside the block."""

from __future__ import annotations

import warnings

import pytest

import ember
from ember.dispatcher.layers import STACK


def _by_key(prof):
    return {event.key: event for event in prof.key_averages()}


def test_counts_forward_and_backward_ops_and_leaves_the_stack_clean():
    x = ember.randn(4, 5, requires_grad=True)
    before = STACK.layers
    with ember.profiler.profile() as prof:
        for _ in range(3):
            y = (x * 2).sum()
        y.backward()
    assert STACK.layers == before
    events = _by_key(prof)
    assert events["mul"].count >= 3  # three forwards, plus any the backward formula ran
    assert events["sum"].count == 3
    assert all(e.self_cpu_time_total <= e.cpu_time_total + 1e-9 for e in events.values())
    assert all(e.self_cpu_time_total >= 0 for e in events.values())


def test_self_time_excludes_nested_ops_and_regions():
    with ember.profiler.profile() as prof, ember.profiler.record_function("region"):
        ember.ones(3) + 1
        ember.ones(3).exp()
    events = _by_key(prof)
    region = events["region"]
    assert region.count == 1
    assert region.self_cpu_time_total < region.cpu_time_total
    # Everything ran inside the region, so the self times add up to its total (microseconds).
    all_self = sum(e.self_cpu_time_total for e in events.values())
    assert abs(all_self - region.cpu_time_total) < 0.01
    table = prof.key_averages().table(sort_by="cpu_time_total", row_limit=2)
    assert table.splitlines()[2].startswith("region")
    assert "Self CPU time total" in table


def test_record_function_without_profile_is_a_no_op():
    with ember.profiler.record_function("nothing"):
        assert (ember.ones(2) * 3).tolist() == [3.0, 3.0]


# ---- PyTorch's options: each honoured, or refused with a warning ---------------------------
def test_record_shapes_groups_by_input_shape():
    with ember.profiler.profile(record_shapes=True) as prof:
        ember.ones(2, 3) + 1
        ember.ones(2, 3) + 1
        ember.ones(4) + 1
    adds = [e for e in prof.key_averages(group_by_input_shape=True) if e.key == "add"]
    assert sorted((e.input_shapes[0], e.count) for e in adds) == [([2, 3], 2), ([4], 1)]
    assert _by_key(prof)["add"].count == 3  # without grouping, one row per op
    assert "Input Shapes" in prof.key_averages(group_by_input_shape=True).table()


def test_grouping_by_what_was_not_recorded_raises():
    with ember.profiler.profile() as prof:
        ember.ones(2) + 1
    with pytest.raises(RuntimeError, match="record_shapes=True"):
        prof.key_averages(group_by_input_shape=True)
    with pytest.raises(RuntimeError, match="with_stack=True"):
        prof.key_averages(group_by_stack_n=1)


def test_profile_memory_counts_the_bytes_each_op_creates():
    x = ember.ones(4, 4)
    with ember.profiler.profile(profile_memory=True) as prof:
        x + 1  # 64 new bytes
        x.view(16)  # a view: nothing new
        x.add_(1)  # in place: nothing new
        ember.nn.functional.softmax(x, 0)
    events = _by_key(prof)
    assert events["add"].self_cpu_memory_usage == 64
    assert events["add"].cpu_memory_usage == 64
    assert events["view"].cpu_memory_usage == 0
    assert events["add_"].cpu_memory_usage == 0
    for event in events.values():
        assert event.cpu_memory_usage >= event.self_cpu_memory_usage >= 0
    assert "CPU Mem" in prof.key_averages().table()


def test_memory_of_a_composite_is_its_parts():
    """A storage is counted once, by the innermost op that created it."""
    x, w = ember.ones(8, 16), ember.ones(16, 4)
    with ember.profiler.profile(profile_memory=True) as prof:
        x @ w
    events = _by_key(prof)
    assert events["mm"].self_cpu_memory_usage == 8 * 4 * 4
    assert events["matmul"].cpu_memory_usage == 8 * 4 * 4
    assert events["matmul"].self_cpu_memory_usage == 0


def test_with_stack_records_the_callers_line():
    def model(x):
        return x * 2  # the line recorded

    with ember.profiler.profile(with_stack=True) as prof:
        model(ember.ones(2))
    (mul,) = [e for e in prof.key_averages(group_by_stack_n=1) if e.key == "mul"]
    assert mul.stack[0].startswith(__file__)
    assert mul.stack[0].endswith(": model")


def test_with_flops_counts_matrix_products():
    x, w = ember.ones(8, 16), ember.ones(16, 4)
    with ember.profiler.profile(with_flops=True) as prof:
        ember.mm(x, w)
        ember.bmm(ember.ones(3, 8, 16), ember.ones(3, 16, 4))
    events = _by_key(prof)
    assert events["mm"].flops == 2 * 8 * 16 * 4
    assert events["bmm"].flops == 3 * 2 * 8 * 16 * 4
    assert "Total MFLOPs" in prof.key_averages().table()


def test_schedule_records_active_steps_and_calls_on_trace_ready():
    seen = []

    def ready(prof):
        seen.append(_by_key(prof)["add"].count)

    sched = ember.profiler.schedule(wait=1, warmup=1, active=2, repeat=2)
    prof = ember.profiler.profile(schedule=sched, on_trace_ready=ready)
    before = STACK.layers
    with prof:
        for step in range(10):
            for _ in range(step + 1):
                ember.ones(1) + 1
            if step in (0, 1):  # wait and warmup: nothing installed
                assert STACK.layers == before
            prof.step()
    assert seen == [3 + 4, 7 + 8]  # steps 2-3 and 6-7
    assert _by_key(prof)["add"].count == 15  # the last saved span
    assert STACK.layers == before


def test_on_trace_ready_without_schedule_runs_once_at_exit():
    seen = []
    with ember.profiler.profile(on_trace_ready=seen.append) as prof:
        ember.ones(1) + 1
        assert seen == []
    assert seen == [prof]


def test_schedule_matches_torch():
    import torch

    ours = ember.profiler.schedule(wait=2, warmup=1, active=3, repeat=2, skip_first=1)
    theirs = torch.profiler.schedule(wait=2, warmup=1, active=3, repeat=2, skip_first=1)
    assert [ours(i).name for i in range(20)] == [theirs(i).name for i in range(20)]


def test_what_ember_cannot_record_is_warned():
    activity = ember.profiler.ProfilerActivity
    with pytest.warns(UserWarning, match="device ops as their host calls"):
        ember.profiler.profile(activities=[activity.CPU, activity.CUDA])
    with pytest.warns(UserWarning, match="with_modules not supported"):
        ember.profiler.profile(with_modules=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ember.profiler.profile(activities=[activity.CPU], record_shapes=True)


def test_unknown_arguments_are_refused():
    with pytest.raises(TypeError, match="record_shape"):
        ember.profiler.profile(record_shape=True)
