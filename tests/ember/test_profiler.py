"""ember.profiler: a dispatch layer that counts and times every op inside the block."""

from __future__ import annotations

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
