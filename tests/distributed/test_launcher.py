"""emberrun's pieces without starting jobs: torchrun's flags and environment, the MPI
launcher's command line (as root, oversubscribed, with a hostfile; Open MPI and MPICH)."""

from __future__ import annotations

import pytest

from ember.distributed import _mpirun, run


def _args(*argv):
    return run.parser().parse_args([*argv, "train.py", "--lr", "0.1"])


def test_torchrun_flags_and_spellings():
    args = _args(
        "--nproc_per_node", "3", "--nnodes", "2", "--node-rank", "1", "--master_port", "1234"
    )
    assert (args.nproc_per_node, args.nnodes, args.node_rank, args.master_port) == (
        "3",
        "2",
        1,
        1234,
    )
    assert args.training_script == "train.py" and args.training_script_args == ["--lr", "0.1"]
    env = run._environment(args, 3, 2)
    assert env["WORLD_SIZE"] == "6" and env["LOCAL_WORLD_SIZE"] == "3"
    assert env["GROUP_RANK"] == "1" and env["MASTER_PORT"] == "1234"
    assert env["MASTER_ADDR"] == "127.0.0.1"


def test_rdzv_endpoint_and_standalone():
    env = run._environment(_args("--rdzv-endpoint", "node7:4567"), 1, 1)
    assert (env["MASTER_ADDR"], env["MASTER_PORT"]) == ("node7", "4567")
    env = run._environment(_args("--standalone"), 1, 1)
    assert env["MASTER_ADDR"] == "127.0.0.1" and int(env["MASTER_PORT"]) > 0


def test_elastic_ranges_are_refused():
    assert run._nnodes("2:2") == 2
    with pytest.raises(ValueError, match="elastic ranges are not supported"):
        run._nnodes("1:4")


def test_rank_entry_point_argv():
    assert run._rank_argv(_args()) == ["-m", "ember.distributed._rank", "train.py", "--lr", "0.1"]
    assert run._rank_argv(_args("-m"))[2:4] == ["-m", "train.py"]
    assert run._rank_argv(_args("--no-python"))[2:4] == ["--exec", "train.py"]


@pytest.mark.parametrize("kind", ["openmpi", "mpich"])
@pytest.mark.parametrize("root", [True, False])
def test_mpi_launcher_command(monkeypatch, kind, root):
    monkeypatch.setattr(_mpirun, "flavor", lambda launcher: kind)
    monkeypatch.setattr(_mpirun.os, "geteuid", lambda: 0 if root else 1000)
    env = {"MASTER_PORT": "29500", "RANK_HINT": "x"}
    single = _mpirun.command("mpirun", 4, 4, env, None, ["python"])
    multi = _mpirun.command("mpirun", 8, 4, env, "hosts", ["python"])
    assert single[:3] == ["mpirun", "-n", "4"] and single[-1] == "python"
    if kind == "openmpi":
        assert ("--allow-run-as-root" in single) == root
        assert "--oversubscribe" in single and "--oversubscribe" not in multi
        assert multi[multi.index("--hostfile") + 1] == "hosts"
        assert "ppr:4:node" in multi and "MASTER_PORT=29500" in single
    else:
        assert "--allow-run-as-root" not in single
        assert multi[multi.index("-f") + 1] == "hosts" and multi[multi.index("-ppn") + 1] == "4"
        assert single[single.index("MASTER_PORT") + 1] == "29500"


def test_installed_mpi_launcher_flavor():
    launcher = _mpirun.find_launcher()
    if launcher is None:
        pytest.skip("no MPI launcher installed: pip install 'ember[distributed]'")
    assert _mpirun.flavor(launcher) in ("openmpi", "mpich")
