"""ember.distributed.device_mesh against torch.distributed.device_mesh.

In one process, this process plays one rank of a world (ember over the in-memory backend,
torch over its "fake" one) and each rank's view of a mesh (rows, coordinates, groups and the
order they were made in, submeshes, repr, errors) is compared with torch's. A real 4-rank MPI
job (jobs/device_mesh.py) checks that collectives over each dimension's groups reach exactly
the ranks they should, and DDP over a mesh dimension.
"""

from __future__ import annotations

import json
import warnings

import pytest
import torch.distributed as tdist
from torch.distributed import device_mesh as tmesh
from torch.testing._internal.distributed.fake_pg import FakeStore

import ember.distributed as dist
from ember import nn
from ember.distributed import device_mesh as emesh

from .harness import mpi_or_skip, run_job
from .loopback import LoopbackPlugin

WORLD = 4  # ranks of the MPI job


@pytest.fixture
def worlds(backends):
    """``start(rank, size)``: join an ember and a torch world of ``size`` as rank ``rank``."""
    backends({"loopback": LoopbackPlugin()})

    def start(rank: int, size: int) -> None:
        dist.init_process_group("loopback", rank=rank, world_size=size)
        tdist.init_process_group("fake", rank=rank, world_size=size, store=FakeStore())

    yield start
    if tdist.is_initialized():
        tdist.destroy_process_group()


def group_id(group, module) -> int:
    """A group's number in creation order (ember's are ``group<n>``, the world
    ``default_pg``; torch's ``<n>``, the world ``0``)."""
    name = group.group_name
    return 0 if name == "default_pg" else int(str(name).removeprefix("group"))


def view(mesh, module) -> dict:
    """Everything one rank sees of ``mesh``; ``module`` is ember.distributed or torch's."""
    groups = mesh.get_all_groups() if mesh.get_coordinate() is not None else []
    return {
        "repr": repr(mesh),
        "device_type": mesh.device_type,
        "names": mesh.mesh_dim_names,
        "ndim": mesh.ndim,
        "shape": tuple(mesh.shape),
        "sizes": [mesh.size(), *[mesh.size(d) for d in range(mesh.ndim)]],
        "mesh": mesh.mesh.tolist() if mesh.get_coordinate() is not None else None,
        "coordinate": mesh.get_coordinate(),
        "rank": mesh.get_rank(),
        "groups": [module.get_process_group_ranks(g) for g in groups],
        "group_ids": [group_id(g, module) for g in groups],
        "local": [mesh.get_local_rank(d) for d in range(mesh.ndim)] if groups else [],
    }


def both(build):
    """``build(init_device_mesh, DeviceMesh)`` with ember's and with torch's, as views."""
    ours = build(emesh.init_device_mesh, emesh.DeviceMesh)
    theirs = build(tmesh.init_device_mesh, tmesh.DeviceMesh)
    return ours, theirs


def meshes_2d(init, mesh_class):
    mesh = init("cpu", (2, 2), mesh_dim_names=("dp", "tp"))
    flat = mesh._flatten()
    return {
        "world": init("cpu", (WORLD,)),
        "2d": mesh,
        "dp": mesh["dp"],
        "tp": mesh["tp"],
        "same": mesh["dp", "tp"],
        "flat": flat,
        "permuted": mesh_class("cpu", [[3, 1], [2, 0]], mesh_dim_names=("a", "b")),
        "half": init("cpu", (2,), mesh_dim_names=("h",)),
    }


def meshes_3d(init, mesh_class):
    mesh = init("cpu", (2, 2, 2), mesh_dim_names=("dp", "cp", "tp"))
    dp_cp = mesh["dp", "cp"]._flatten()
    dp_tp = mesh["dp", "tp"]._flatten()  # a strided dimension: layout (2, 2):(4, 1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # slicing a flattened name from the root: deprecated
        sliced = mesh["dp_cp", "tp"]
    return {
        "3d": mesh,
        "cp": mesh["cp"],
        "dp_tp": mesh["dp", "tp"],
        "cp_tp": mesh["cp", "tp"],
        "flat_dp_cp": dp_cp,
        "flat_dp_tp": dp_tp,
        "flat_sliced": sliced,
        "one_by_n": init("cpu", (1, 8), mesh_dim_names=("x", "y")),
    }


@pytest.mark.parametrize("rank", range(WORLD))
def test_2d_meshes_like_torch_on_every_rank(worlds, rank):
    worlds(rank, WORLD)
    ours, theirs = both(meshes_2d)
    for key in ours:
        assert view(ours[key], dist) == view(theirs[key], tdist), key
    assert ours["same"] is ours["2d"]
    assert ours["2d"].get_group("tp") is ours["tp"].get_group() is ours["2d"].get_group(1)
    assert ours["world"].get_group() is dist.group.WORLD


@pytest.mark.parametrize("rank", [0, 5])
def test_3d_slices_and_flattens_like_torch(worlds, rank):
    worlds(rank, 8)
    ours, theirs = both(meshes_3d)
    for key in ours:
        assert view(ours[key], dist) == view(theirs[key], tdist), key
    assert "stride=((4, 1),)" in repr(ours["flat_dp_tp"])


def test_equality_and_hash_like_torch(worlds):
    worlds(1, WORLD)

    def pairs(init, mesh_class):
        mesh = init("cpu", (2, 2), mesh_dim_names=("dp", "tp"))
        other = init("cpu", (2, 2), mesh_dim_names=("dp", "tp"))
        flat = init("cpu", (WORLD,))
        return [
            (mesh, other),
            (mesh["dp"], other["dp"]),
            (mesh["dp"], mesh["tp"]),
            (mesh, init("cpu", (2, 2))),
            (flat, init("cpu", (WORLD,))),
            (flat, mesh_class("cpu", [0, 1, 2, 3])),
            (flat, mesh_class("cpu", [1, 0, 2, 3])),
            (flat, mesh_class("cuda", [0, 1, 2, 3], _init_backend=False)),
            (mesh, "mesh"),
        ]

    ours, theirs = both(pairs)
    assert [a == b for a, b in ours] == [a == b for a, b in theirs]
    assert [a == b for a, b in ours][:3] == [True, True, False]
    for a, b in ours:
        if a == b:
            assert hash(a) == hash(b)
    assert len({ours[0][0], ours[0][1], ours[2][1]}) == 2


ERRORS = {
    "bigger_than_world": lambda init, mesh_class: init("cpu", (3, 3)),
    "repeated_names": lambda init, mesh_class: init("cpu", (2, 2), mesh_dim_names=("a", "a")),
    "names_length": lambda init, mesh_class: init("cpu", (2, 2), mesh_dim_names=("a",)),
    "group_of_2d": lambda init, mesh_class: init("cpu", (2, 2)).get_group(),
    "local_rank_of_2d": lambda init, mesh_class: init("cpu", (2, 2)).get_local_rank(),
    "unknown_slice": lambda init, mesh_class: _named(init)["xx"],
    "unknown_group": lambda init, mesh_class: _named(init).get_group("xx"),
    "slice_unnamed": lambda init, mesh_class: init("cpu", (WORLD,))["a"],
    "slice_out_of_order": lambda init, mesh_class: _named(init)["tp", "dp"],
    "flatten_unnamed": lambda init, mesh_class: init("cpu", (WORLD,))._flatten(),
    "flatten_to_existing_name": lambda init, mesh_class: _named(init)._flatten("dp"),
    "flatten_name_reused": lambda init, mesh_class: _flatten_twice(_named(init)),
    "override_unknown_key": lambda init, mesh_class: init(
        "cpu", (2, 2), mesh_dim_names=("dp", "tp"), backend_override={"x": "mpi"}
    ),
    "override_twice": lambda init, mesh_class: init(
        "cpu", (2, 2), mesh_dim_names=("dp", "tp"), backend_override={0: "a", "dp": "b"}
    ),
    "override_length": lambda init, mesh_class: mesh_class(
        "cpu", [0, 1], backend_override=((None, None),) * 2
    ),
    "no_mesh": lambda init, mesh_class: mesh_class("cpu"),
}


def _named(init):
    return init("cpu", (2, 2), mesh_dim_names=("dp", "tp"))


def _flatten_twice(mesh):
    mesh["dp"]._flatten("x")
    return mesh["tp"]._flatten("x")


def _raised(call):
    try:
        call()
    except Exception as exc:
        return type(exc), exc.args
    return None


@pytest.mark.parametrize("case", ERRORS)
def test_errors_like_torch(worlds, case):
    worlds(0, WORLD)
    ours, theirs = both(lambda init, mesh_class: _raised(lambda: ERRORS[case](init, mesh_class)))
    assert theirs is not None and ours == theirs


def test_errors_where_ember_differs(worlds):
    worlds(3, WORLD)
    with pytest.raises(RuntimeError, match=r"Device type with index.*'ember.device'"):
        emesh.init_device_mesh("cpu:0", (WORLD,))
    with pytest.raises(RuntimeError, match="mesh_shape and mesh_dim_names should have same"):
        emesh.DeviceMesh("cpu", [[0, 1], [2, 3]], mesh_dim_names=("a",))  # torch: IndexError
    half = emesh.init_device_mesh("cpu", (2,))
    assert half.get_coordinate() is None
    with pytest.raises(RuntimeError, match=r"rank 3 is not in DeviceMesh\(\(2,\).*no process"):
        half.get_group()  # torch: IndexError


def test_init_device_mesh_starts_the_default_group(backends, monkeypatch):
    backends({"loopback": LoopbackPlugin()})
    monkeypatch.setenv("RANK", "0")
    monkeypatch.setenv("WORLD_SIZE", "1")
    assert not dist.is_initialized()
    mesh = dist.init_device_mesh("cpu", (1,))
    assert dist.is_initialized() and mesh.get_group() is dist.group.WORLD
    assert dist.DeviceMesh is emesh.DeviceMesh and tdist.DeviceMesh is tmesh.DeviceMesh


def test_ddp_device_mesh_errors_like_torch(worlds):
    worlds(0, WORLD)
    mesh = emesh.init_device_mesh("cpu", (2, 2), mesh_dim_names=("dp", "tp"))
    ddp = nn.parallel.DistributedDataParallel
    with pytest.raises(RuntimeError, match="Cannot specify both process_group and device_mesh"):
        ddp(nn.Linear(2, 1), process_group=dist.group.WORLD, device_mesh=mesh["dp"])
    with pytest.raises(RuntimeError, match=r"Only 1D device mesh is supported, but got Device"):
        ddp(nn.Linear(2, 1), device_mesh=mesh)


# -- a real 4-rank job -----------------------------------------------------------------------


@pytest.fixture(scope="module")
def ranks(tmp_path_factory):
    mpi_or_skip()
    out = tmp_path_factory.mktemp("device_mesh")
    done, _ = run_job("device_mesh.py", WORLD, out, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    return [json.loads((out / f"rank{r}.json").read_text()) for r in range(WORLD)]


def mask(ranks) -> int:
    return sum(2**r for r in ranks)


def test_1d_mesh_over_the_world(ranks):
    for r, seen in enumerate(ranks):
        expected = {"mesh": [0, 1, 2, 3], "coordinate": [r], "groups": [15], "local": [r]}
        assert seen["1d"] == expected
        assert seen["flat"] == expected  # dp x tp flattened: the world again


def test_2d_mesh_reduces_along_rows_and_columns(ranks):
    for r, seen in enumerate(ranks):
        row, column = divmod(r, 2)
        dp, tp = mask([column, column + 2]), mask([2 * row, 2 * row + 1])
        assert seen["2d"] == {
            "mesh": [[0, 1], [2, 3]],
            "coordinate": [row, column],
            "groups": [dp, tp],
            "local": [row, column],
        }
        assert seen["2d_by_name"] == [dp, tp]
        assert seen["dp_tp"] == seen["2d"]
        assert seen["dp"] == {
            "mesh": [column, column + 2],
            "coordinate": [row],
            "groups": [dp],
            "local": [row],
        }
        assert seen["tp"] == {
            "mesh": [2 * row, 2 * row + 1],
            "coordinate": [column],
            "groups": [tp],
            "local": [column],
        }


def test_explicit_permuted_mesh(ranks):
    layout = [[3, 1], [2, 0]]
    for r, seen in enumerate(ranks):
        i, j = next((i, j) for i in range(2) for j in range(2) if layout[i][j] == r)
        column, row = [layout[0][j], layout[1][j]], layout[i]
        assert seen["permuted"]["coordinate"] == [i, j]
        assert seen["permuted"]["groups"] == [mask(column), mask(row)]
        # the rank in a group is its place among the group's sorted ranks, as in torch
        assert seen["permuted"]["local"] == [sorted(column).index(r), sorted(row).index(r)]


def test_mesh_smaller_than_the_world(ranks):
    for r, seen in enumerate(ranks):
        if r < 2:
            assert seen["half"] == {"coordinate": [r], "group": 3}
        else:
            assert seen["half"] == {"coordinate": None}


def test_ddp_over_a_mesh_dimension(ranks):
    """DDP(device_mesh=mesh["dp"]): parameters from the dp group's first rank, gradients
    averaged over the dp group only (rank r's input is r + 1)."""
    for r, seen in enumerate(ranks):
        column = r % 2
        assert seen["ddp_synced"] == ranks[column]["ddp_initial"]
        expected = ((column + 1) + (column + 3)) / 2
        assert seen["ddp_grad"] == [[expected, expected]]
    assert ranks[0]["ddp_initial"] != ranks[1]["ddp_initial"]
