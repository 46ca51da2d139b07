"""ember.profiler: a dispatch layer that counts and times every op inside the block."""

from __future__ import annotations

import os
import sys
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
    assert table.splitlines()[3].split()[0] == "region"
    assert len(table.splitlines()) == 3 + 2 + 2
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


@pytest.fixture
def quiet_gc():
    """Exact memory event lists: no cyclic garbage from earlier tests may be collected (and
    its storages' frees reported) in the middle of the profile."""
    import gc

    gc.collect()
    gc.disable()
    yield
    gc.enable()


@pytest.mark.usefixtures("quiet_gc")
def test_profile_memory_counts_the_bytes_each_op_allocates():
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
    # x + 1 and the softmax freed when their statements end, outside every op
    assert (events["[memory]"].cpu_memory_usage, events["[memory]"].count) == (-128, 2)
    assert "CPU Mem" in prof.key_averages().table()


@pytest.mark.usefixtures("quiet_gc")
def test_memory_of_a_composite_is_its_parts():
    """A storage is counted once, by the innermost op that created it."""
    x, w = ember.ones(8, 16), ember.ones(16, 4)
    with ember.profiler.profile(profile_memory=True) as prof:
        x @ w
    events = _by_key(prof)
    assert events["mm"].self_cpu_memory_usage == 8 * 4 * 4
    assert events["matmul"].cpu_memory_usage == 8 * 4 * 4
    assert events["matmul"].self_cpu_memory_usage == 0


def _memory_by_op(lib):
    x, w = lib.ones(8, 16), lib.ones(16, 4)
    with lib.profiler.profile(profile_memory=True, record_shapes=True) as prof:
        with lib.profiler.record_function("step"):
            y = x.exp()
            z = lib.mm(y, w)
            del y  # freed inside the region, outside any op: the region's self memory
            out = z.relu()
        del out  # freed outside every op: PyTorch's "[memory]" row
    events = prof.key_averages(group_by_input_shape=True)
    return {e.key.replace("aten::", ""): (e.cpu_memory_usage, e.self_cpu_memory_usage, e.count)
            for e in events}  # fmt: skip


@pytest.mark.usefixtures("quiet_gc")
def test_memory_allocations_and_frees_match_torch():
    import torch

    theirs, ours = _memory_by_op(torch), _memory_by_op(ember)
    for key in ("step", "exp", "mm", "[memory]"):
        assert ours[key] == theirs[key], key
    assert ours["step"] == (512 + 128 + 128 - 512, -512, 1)
    assert ours["relu"][0] == theirs["relu"][0] == 128  # torch's relu runs clamp_min inside
    assert ours["[memory]"] == (-128, -128, 1)


@pytest.mark.usefixtures("quiet_gc")
def test_memory_events_on_each_device(device, tmp_path):
    x = ember.ones(64, 64, device=device)
    with ember.profiler.profile(profile_memory=True) as prof:
        y = x * 2
        del y
    host = device == "cpu"
    (mul,) = [e for e in prof.key_averages() if e.key == "mul"]
    created = (mul.cpu_memory_usage, mul.device_memory_usage)
    assert created == ((64 * 64 * 4, 0) if host else (0, 64 * 64 * 4))
    memory = [e for e in _trace(prof, tmp_path)["traceEvents"] if e["name"] == "[memory]"]
    assert [e["args"]["Bytes"] for e in memory] == [64 * 64 * 4, -64 * 64 * 4]
    device_type = {"cpu": 0, "cuda": 1, "xpu": 12}.get(device, 20)
    assert {e["args"]["Device Type"] for e in memory} == {device_type}
    assert {e["args"]["Device Id"] for e in memory} == {-1 if host else 0}
    if not host:  # the caching allocator's reserve, which PyTorch reports for devices
        assert memory[0]["args"]["Total Reserved"] >= 64 * 64 * 4


@pytest.mark.usefixtures("quiet_gc")
def test_memory_reporting_is_off_outside_a_memory_profile():
    from ember.dispatcher import memory

    plain = ember.ones(300, 300)  # both allocation routes: small (malloc) and cached (1 MiB up)
    with ember.profiler.profile(profile_memory=True) as prof:
        small, large = ember.ones(4), ember.ones(600, 600)
        kept = ember.ones(5)
    assert memory._OBSERVER[0] is None
    with ember.profiler.profile(profile_memory=True) as later:
        del small, large
    del kept  # freed after every profile: nobody's event
    assert [e.nbytes for e in prof.saved.memory_events] == [16, 1440000, 20]
    assert [e.nbytes for e in later.saved.memory_events] == [-16, -1440000]
    with ember.profiler.profile() as prof:  # no profile_memory: nothing reported
        del plain
        ember.ones(600, 600)
    assert prof.saved.memory_events == []


def test_with_stack_records_the_callers_line():
    def model(x):
        return x * 2  # the line recorded

    with ember.profiler.profile(with_stack=True) as prof:
        model(ember.ones(2))
    (mul,) = [e for e in prof.key_averages(group_by_stack_n=1) if e.key == "mul"]
    assert mul.stack[0].endswith(": model")
    assert __file__.endswith(mul.stack[0].split("(")[0])  # without its sys.path folder


def test_call_stacks_match_torch(tmp_path):
    """Each op's call site, as torch writes it with experimental_config(verbose=True): frames
    named alike, innermost first, in the trace's "Call stack" and the op's ``stack``."""
    import torch
    from torch.profiler import _ExperimentalConfig

    def model(x):
        return x * 2

    stacks, traced = [], []
    for lib, extra in (
        (torch, {"experimental_config": _ExperimentalConfig(verbose=True)}),
        (ember, {}),
    ):
        with lib.profiler.profile(with_stack=True, **extra) as prof:
            model(lib.ones(2))
        (mul,) = [e for e in prof.events() if e.key.removeprefix("aten::") == "mul"]
        stacks.append(mul.stack[:2])
        event = next(e for e in _complete(_trace(prof, tmp_path)) if e["name"].endswith("mul"))
        traced.append(event["args"]["Call stack"].split(";")[:2])
    assert stacks[1] == stacks[0] == traced[0] == traced[1]
    assert stacks[1][0].endswith(": model")


def _python_calls(lib, tmp_path):
    import json

    def inner(x):
        return len([x]) and x * 2

    def outer(x):
        return inner(x) + inner(x)

    x = lib.ones(3)
    with lib.profiler.profile(with_stack=True) as prof:
        outer(x)
    path = tmp_path / f"{lib.__name__}.json"
    prof.export_chrome_trace(str(path))
    doc = json.loads(path.read_text())
    calls = [e for e in doc["traceEvents"] if e.get("cat") == "python_function"]
    ids = {e["args"]["Python id"]: e for e in calls}
    mine = [e for e in calls if e["name"].endswith((": outer", ": inner", "function len>"))]

    def parent(e):
        up = ids.get(e["args"]["Python parent id"])
        return up["name"].rsplit("/", 1)[-1] if up else None

    return [(e["name"].rsplit("/", 1)[-1], parent(e)) for e in mine], doc, prof


def test_with_stack_python_calls_match_torch(tmp_path):
    import torch

    theirs, _, _ = _python_calls(torch, tmp_path)
    ours, doc, prof = _python_calls(ember, tmp_path)
    assert ours == theirs
    assert [name.split("): ")[-1] for name, _ in ours] == [
        "outer",
        "inner",
        "<built-in function len>",
        "inner",
        "<built-in function len>",
    ]
    assert doc["with_stack"] == 1
    # ops nest in their Python callers; ember's internals (kernels, dispatch) are not calls
    calls = [e for e in doc["traceEvents"] if e.get("cat") == "python_function"]
    assert not any("ember" in e["name"] and "test_profiler" not in e["name"] for e in calls)
    mul = next(e for e in _complete(doc) if e["name"] == "mul")
    inner = next(e for e in calls if e["name"].endswith(": inner"))
    assert inner["ts"] <= mul["ts"] and mul["ts"] + mul["dur"] <= inner["ts"] + inner["dur"]
    rows = {e.key: e for e in prof.key_averages()}
    (inner_row,) = [e for k, e in rows.items() if k.endswith(": inner")]
    assert inner_row.count == 2 and inner_row.self_cpu_time_total < inner_row.cpu_time_total
    assert sys.getprofile() is None


def test_with_flops_counts_matrix_products():
    x, w = ember.ones(8, 16), ember.ones(16, 4)
    with ember.profiler.profile(with_flops=True) as prof:
        ember.mm(x, w)
        ember.bmm(ember.ones(3, 8, 16), ember.ones(3, 16, 4))
    events = _by_key(prof)
    assert events["mm"].flops == 2 * 8 * 16 * 4
    assert events["bmm"].flops == 3 * 2 * 8 * 16 * 4
    table = prof.key_averages().table(sort_by="flops", row_limit=2)
    assert _headers(table)[-1].strip() == "Total KFLOPs"  # scaled by the smallest, as torch
    assert [line.split()[-1] for line in table.splitlines()[3:5]] == ["3.072", "1.024"]


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


SCHEDULES = [
    dict(wait=2, warmup=1, active=3, repeat=2, skip_first=1),
    dict(wait=1, warmup=1, active=2),
    dict(wait=0, warmup=2, active=1, repeat=3),
    dict(wait=3, warmup=1, active=2, repeat=1, skip_first=2, skip_first_wait=1),
    dict(wait=2, warmup=1, active=1, skip_first_wait=1),
    dict(wait=1, warmup=0, active=1, repeat=2),
]


@pytest.mark.parametrize("settings", SCHEDULES)
def test_schedule_matches_torch(settings):
    import torch

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # warmup=0 warns in both
        ours = ember.profiler.schedule(**settings)
        theirs = torch.profiler.schedule(**settings)
    assert [ours(i).name for i in range(30)] == [theirs(i).name for i in range(30)]


def test_schedule_refusals_and_warning_match_torch():
    import torch

    for lib in (torch, ember):
        with pytest.warns(UserWarning, match="won't be using warmup"):
            lib.profiler.schedule(wait=1, warmup=0, active=1)
    messages = []
    for lib in (torch, ember):
        with pytest.raises(AssertionError) as info:
            lib.profiler.schedule(wait=1, warmup=1, active=0)
        messages.append(str(info.value))
        with pytest.raises(AssertionError, match="Step must be non-negative"):
            lib.profiler.schedule(wait=1, warmup=1, active=1)(-1)
    assert messages[0] == messages[1]


def test_what_ember_cannot_record_is_warned():
    activity = ember.profiler.ProfilerActivity
    with pytest.warns(UserWarning, match="device ops as their host calls"):
        ember.profiler.profile(activities=[activity.CPU, activity.CUDA])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ember.profiler.profile(activities=[activity.CPU], record_shapes=True)


def test_unknown_arguments_are_refused():
    with pytest.raises(TypeError, match="record_shape"):
        ember.profiler.profile(record_shape=True)


# ---- the table's layout, as PyTorch's -----------------------------------------------------
def _headers(table: str) -> list[str]:
    return [h for h in table.splitlines()[1].strip().split("  ") if h.strip()]


@pytest.mark.parametrize(
    "options, grouping",
    [
        ({}, {}),
        ({"profile_memory": True, "record_shapes": True}, {"group_by_input_shape": True}),
        ({"with_stack": True}, {"group_by_stack_n": 2}),
    ],
)
def test_table_columns_match_torch(options, grouping):
    import torch

    tables, keys = [], []
    for lib in (torch, ember):
        x = lib.ones(4, 4)
        with lib.profiler.profile(**options) as prof:
            (x + 1).sum()
        tables.append(prof.key_averages(**grouping).table(sort_by="cpu_time_total", row_limit=1))
        keys.append({e.key for e in prof.key_averages()})
    theirs, ours = ([h.strip() for h in _headers(t)] for t in tables)
    if options.get("with_stack"):
        # torch attaches call sites to ops only with experimental_config verbose=True; ember
        # always does, so its table has PyTorch's Source Location column: each frame on a line.
        assert ours == [*theirs, "Source Location"]
        # with_stack records the Python calls, as torch: the frames open around the block (the
        # same here), named alike; the top row is one of them, with no call site (then a blank).
        calls = {key for key in keys[1] if "): " in key}
        assert calls and calls <= keys[0]
        top = tables[1].splitlines()[3][: len(tables[1].split("  ")[0])].strip()
        assert top in {key if len(key) < 52 else key[:52] + "..." for key in calls}  # trimmed
        assert len(tables[1].splitlines()) == 3 + 2 + 2
    else:
        assert ours == theirs
        assert len(tables[1].splitlines()) == 3 + 1 + 2  # rules and headers, one row, the total


# ---- record_function as a decorator, and the Chrome trace ---------------------------------
def _trace(prof, tmp_path, name="trace.json"):
    import json

    path = tmp_path / name
    prof.export_chrome_trace(str(path))
    return json.loads(path.read_text())


def _complete(doc):
    return [e for e in doc["traceEvents"] if e["ph"] == "X"]


def test_record_function_as_decorator_nests_in_the_trace(tmp_path):
    @ember.profiler.record_function("step")
    def step(x, depth):
        y = x * 2
        return step(y, depth - 1) if depth else y.sum()

    x = ember.ones(3)
    with ember.profiler.profile() as prof:
        step(x, 1)
    assert _by_key(prof)["step"].count == 2
    events = _complete(_trace(prof, tmp_path))
    outer, inner = [e for e in events if e["name"] == "step"]
    assert outer["cat"] == "user_annotation" and outer["ts"] <= inner["ts"]
    for child in [inner] + [e for e in events if e["cat"] == "cpu_op"]:
        # Perfetto nests an event in the one whose [ts, ts + dur] holds it, on the same thread.
        assert (
            outer["ts"] <= child["ts"] and child["ts"] + child["dur"] <= outer["ts"] + outer["dur"]
        )
        assert child["tid"] == outer["tid"] and child["pid"] == outer["pid"]


@pytest.mark.usefixtures("quiet_gc")
def test_chrome_trace_has_torchs_structure(tmp_path):
    import torch

    docs = []
    for lib in (torch, ember):
        x = lib.ones(4, 4)
        with (
            lib.profiler.profile(record_shapes=True, profile_memory=True) as prof,
            lib.profiler.record_function("block"),
        ):
            (x + 1).sum()
        docs.append(_trace(prof, tmp_path, f"{lib.__name__}.json"))
    theirs, ours = docs
    assert set(theirs) - {"trace_id"} <= set(ours)
    assert (ours["record_shapes"], ours["profile_memory"], ours["with_stack"]) == (1, 1, 0)
    for event in ours["traceEvents"]:
        assert {"ph", "name", "pid", "tid", "ts"} <= set(event)
        assert event["ph"] in ("M", "X", "i")
    (add,) = [e for e in _complete(ours) if e["name"] == "add"]
    (their_add,) = [e for e in _complete(theirs) if e["name"] == "aten::add"]
    assert add["cat"] == their_add["cat"] == "cpu_op"
    assert add["dur"] >= 0 and isinstance(add["ts"], float)
    # torch's add also lists its alpha, and wraps the Python 1 in a long tensor ember doesn't make
    assert add["args"]["Input Dims"] == their_add["args"]["Input Dims"][:2]
    assert set(add["args"]) == set(their_add["args"]) - {"Sequence number", "Fwd thread id"}
    assert add["args"]["Input type"] == ["float", "Scalar"]
    assert their_add["args"]["Input type"][0] == "float"
    block = [e for e in _complete(ours) if e["name"] == "block"]
    assert block[0]["cat"] == "user_annotation"
    memory = [e for e in ours["traceEvents"] if e["name"] == "[memory]"]
    their_memory = [e for e in theirs["traceEvents"] if e["name"] == "[memory]"]
    # The add's result, the sum's, then their frees when the statement ends; torch also
    # allocates (and frees) the Python 1 wrapped in a tensor, then cast to float.
    assert [e["args"]["Bytes"] for e in memory] == [64, 4, -64, -4]
    assert [e["args"]["Total Allocated"] for e in memory] == [64, 68, 4, 0]
    their_bytes = [e["args"]["Bytes"] for e in their_memory]
    assert [b for b in their_bytes if abs(b) == 64] == [64, -64]
    assert their_bytes[-3:] == [4, -64, -4]
    assert set(memory[0]["args"]) == set(their_memory[0]["args"])
    assert memory[0]["cat"] == their_memory[0]["cat"] and memory[0]["s"] == "t"
    frees = {e["args"]["Addr"]: e["ts"] for e in memory if e["args"]["Bytes"] < 0}
    for event in memory[:2]:  # each free names the address its allocation reported
        assert frees[event["args"]["Addr"]] > event["ts"]


_INPUT_ARGS = ("Concrete Inputs", "Input type", "Input Strides", "Input Dims")


def test_record_shapes_trace_args_match_torch(tmp_path):
    """Ops whose argument lists are the same in both libraries: the same four lists."""
    import torch

    docs = []
    for lib in (torch, ember):
        x = lib.ones(3, 4)
        with lib.profiler.profile(record_shapes=True) as prof:
            lib.clamp(x, 0.5)
            x.t().transpose(0, 1)
            lib.cat([x, x.t().t()], 1)
            x.pow(2)
            lib.full((2,), 2.0)
        docs.append(_trace(prof, tmp_path, f"{lib.__name__}.json"))
    theirs, ours = ({e["name"].removeprefix("aten::"): e for e in _complete(d)} for d in docs)
    for name in ("clamp", "transpose", "cat", "pow"):
        mine, reference = ours[name]["args"], theirs[name]["args"]
        assert [mine[k] for k in _INPUT_ARGS] == [reference[k] for k in _INPUT_ARGS], name
        assert list(mine).index("Concrete Inputs") < list(mine).index("Input Dims")
    assert ours["transpose"]["args"]["Input Strides"] == [[1, 4], [], []]  # the input's view
    assert ours["cat"]["args"]["Input Dims"] == [[[3, 4], [3, 4]], []]
    assert ours["full"]["args"]["Concrete Inputs"][:2] == ["[2]", "2."]


def test_chrome_trace_gz_and_tensorboard_handler(tmp_path):
    import gzip
    import json

    sched = ember.profiler.schedule(wait=1, warmup=1, active=1, repeat=2)
    x = ember.ones(2)
    handler = ember.profiler.tensorboard_trace_handler(str(tmp_path / "tb"), "worker0", True)
    with ember.profiler.profile(schedule=sched, on_trace_ready=handler) as prof:
        for _ in range(8):
            x + 1
            prof.step()
    files = sorted((tmp_path / "tb").iterdir())
    assert len(files) == 2  # one per active span
    for path in files:
        name, stamp, *rest = path.name.split(".")
        assert name == "worker0" and stamp.isdigit() and rest == ["pt", "trace", "json", "gz"]
        with gzip.open(path, "rt") as file:
            doc = json.load(file)
        assert [e["name"] for e in _complete(doc)] == ["add"]
    plain = ember.profiler.tensorboard_trace_handler(str(tmp_path / "plain"))
    plain(prof)
    (path,) = (tmp_path / "plain").iterdir()
    assert path.name.endswith(".pt.trace.json") and json.loads(path.read_text())["traceEvents"]


def test_export_stacks_writes_flame_graph_lines(tmp_path):
    def inner(x):
        return x.exp()

    def outer(x):
        return inner(x) * 2

    x = ember.ones(64)
    with ember.profiler.profile(with_stack=True) as prof:
        outer(x)
    path = tmp_path / "stacks.txt"
    prof.export_stacks(str(path), "self_cpu_time_total")
    innermost = {}
    for line in path.read_text().splitlines():
        frames, value = line.rsplit(" ", 1)  # outermost first; then whole microseconds
        assert int(value) > 0 and " " not in frames
        innermost[frames.split(";")[-1].split(":_")[-1]] = frames.split(";")
    assert set(innermost) >= {"inner", "outer"}  # exp's call site, then mul's
    assert innermost["inner"][-2].endswith(":_outer")
    assert __file__.replace(" ", "_").endswith(innermost["inner"][-1].split("(")[0])
    with pytest.raises(ValueError, match="metric should be one of"):
        prof.export_stacks(str(path), "cpu_time_total")


def test_table_layout_options_match_torch():
    import torch

    tables = []
    for lib in (torch, ember):
        x = lib.ones(4, 4)
        with lib.profiler.profile() as prof, lib.profiler.record_function("r" * 70):
            x + 1
        events = prof.key_averages()
        tables.append(events.table(sort_by="cpu_time_total", row_limit=1, header="hdr"))
        assert "r" * 70 not in events.table(sort_by="cpu_time_total")  # cut to 52 + "..."
        assert ("r" * 52 + "...") in events.table(sort_by="cpu_time_total")
        for unit in ("s", "ms", "us"):
            row = events.table(sort_by="cpu_time_total", row_limit=1, time_unit=unit)
            assert row.splitlines()[3].split()[2].endswith(unit)
        assert len(events.table(row_limit=0).splitlines()) == 3 + 2  # no rows, as torch
    ours, theirs = tables[1].splitlines(), tables[0].splitlines()
    assert ours[1] == theirs[1] == "hdr" and set(ours[0]) == set(theirs[0]) == {"="}
    assert len(ours[0]) == len(ours[2].rstrip())
    assert ours[5].split()[0] == theirs[5].split()[0] == "r" * 52 + "..."


def _trace_ready_calls(lib, settings, steps, **options):
    """(step_num, adds recorded) at each on_trace_ready call."""
    seen = []

    def ready(prof):
        adds = [e.count for e in prof.key_averages() if e.key in ("add", "aten::add")]
        seen.append((prof.step_num, sum(adds)))

    x = lib.ones(2)
    sched = lib.profiler.schedule(**settings) if settings else None
    with lib.profiler.profile(schedule=sched, on_trace_ready=ready, **options) as prof:
        for _ in range(steps):
            x + 1
            prof.step()
    return seen


@pytest.mark.parametrize(
    "settings",
    [
        dict(wait=1, warmup=1, active=2),
        dict(wait=1, warmup=1, active=2, repeat=1),
        dict(wait=2, warmup=2, active=1, skip_first=1),
        None,
    ],
)
def test_step_drives_on_trace_ready_as_torch(settings):
    import torch

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "Profiler clears events at the end of each cycle"
        for steps, acc_events in ((0, False), (3, False), (7, False), (7, True)):
            ours = _trace_ready_calls(ember, settings, steps, acc_events=acc_events)
            theirs = _trace_ready_calls(torch, settings, steps, acc_events=acc_events)
            assert ours == theirs, (settings, steps, acc_events)


def test_second_cycle_warns_once_unless_acc_events():
    message = "Profiler clears events at the end of each cycle"
    ember.profiler._WARNINGS_SHOWN.clear()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        _trace_ready_calls(ember, dict(wait=0, warmup=1, active=1), 6, acc_events=True)
        assert not [w for w in caught if message in str(w.message)]
        for _ in range(2):
            _trace_ready_calls(ember, dict(wait=0, warmup=1, active=1), 6)
    assert len([w for w in caught if message in str(w.message)]) == 1


def _properly_nested(events) -> bool:
    """Perfetto draws the complete events of one thread as a stack of slices: any two must be
    disjoint or one inside the other."""
    open_ends: list[float] = []
    for event in sorted(events, key=lambda e: (e["ts"], -e["dur"])):
        while open_ends and open_ends[-1] <= event["ts"]:
            open_ends.pop()
        if open_ends and event["ts"] + event["dur"] > open_ends[-1]:
            return False
        open_ends.append(event["ts"] + event["dur"])
    return True


def test_recipe_training_step_trace_is_well_formed(tmp_path):
    """The profiler recipe's program: a model's forward and backward in a named region."""
    model = ember.nn.Sequential(ember.nn.Linear(8, 16), ember.nn.ReLU(), ember.nn.Linear(16, 2))
    x = ember.randn(4, 8)
    activities = [ember.profiler.ProfilerActivity.CPU]
    with (
        ember.profiler.profile(activities=activities, record_shapes=True) as prof,
        ember.profiler.record_function("model_inference"),
    ):
        model(x).sum().backward()
    doc = _trace(prof, tmp_path)
    events = _complete(doc)
    assert _properly_nested(events)
    assert _properly_nested([{"ts": 0.0, "dur": 2.0}, {"ts": 1.0, "dur": 2.0}]) is False
    (region,) = [e for e in events if e["name"] == "model_inference"]
    assert region["dur"] == max(e["dur"] for e in events)
    names = {e["name"] for e in events}
    assert {"linear", "relu", "sum"} <= names
    assert len(events) == sum(e.count for e in prof.key_averages())
    table = prof.key_averages(group_by_input_shape=True).table(
        sort_by="cpu_time_total", row_limit=10
    )
    assert table.splitlines()[3].split()[0] == "model_inference"
    assert len(table.splitlines()) == 3 + 10 + 2


def test_supported_activities_and_kineto_available_as_torch_on_a_cpu_machine():
    import torch

    theirs = {a.name for a in torch.profiler.supported_activities()}
    assert "CPU" in theirs  # and CUDA where torch has CUPTI; ember times device ops on the host
    assert {a.name for a in ember.profiler.supported_activities()} == {"CPU"}
    assert ember.profiler.kineto_available() is torch.profiler.kineto_available() is True
    assert ember.autograd.profiler.EventList is ember.profiler.EventList


def test_plugin_code_is_the_ops_wherever_it_is_installed():
    # An editable install keeps a backend's kernels outside site-packages: they are still hidden
    # inside the op, not recorded as the user's Python calls.
    import ember_backend_cpu

    from ember._profiler_python import _library_folders

    folder = os.path.abspath(ember_backend_cpu.__path__[0]) + os.sep
    assert any(folder.startswith(prefix) for prefix in _library_folders())
