"""The NCCL backend without a GPU: libnccl from the nvidia-nccl-cu12 wheel loads through cffi,
the enums and structs match the wheel's nccl.h, the dtype/op mapping is PyTorch's, and asking
for a communicator without a device fails with a clear error. (On a GPU machine the
collectives run: benchmarks/bench_distributed.py --nccl.)"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from ember.distributed.backends import _nccl_abi as abi
from ember.distributed.backends import nccl


@pytest.fixture(scope="module")
def lib():
    try:
        return abi.nccl()
    except OSError as exc:
        pytest.skip(f"libnccl is not installed (pip install 'ember[nccl]'): {exc}")


@pytest.fixture(scope="module")
def header(lib):
    for candidate in abi.nccl_candidates():
        path = Path(candidate).parents[1] / "include" / "nccl.h"
        if path.exists():
            return path.read_text()
    pytest.skip("nccl.h is not beside the library (a system libnccl without headers)")


def _enum(text: str, name: str) -> dict:
    body = re.search(r"typedef enum \{([^}]*)\}\s*" + name + ";", text).group(1)
    return {k: int(v) for k, v in re.findall(r"(nccl\w+)\s*=\s*(\d+)", body)}


def test_library_loads_and_reports_its_version(lib):
    ffi, nccl_lib = lib
    version = ffi.new("int *")
    assert nccl_lib.ncclGetVersion(version) == 0
    assert version[0] >= 21800  # 2.18: ncclCommGetAsyncError, ncclAvg, bfloat16


def test_enums_match_the_header(header):
    for table, name in (
        (abi.DATA_TYPES, "ncclDataType_t"),
        (abi.RED_OPS, "ncclRedOp_t"),
    ):
        declared = _enum(header, name)
        assert {k: declared[k] for k in table} == table
    results = _enum(header, "ncclResult_t")
    assert {v: k for k, v in results.items() if k != "ncclNumResults"} == abi.RESULTS


def test_unique_id_is_nccl_sized_and_made_without_a_gpu(lib, header):
    ffi, nccl_lib = lib
    size = int(re.search(r"#define NCCL_UNIQUE_ID_BYTES (\d+)", header).group(1))
    assert ffi.sizeof("ncclUniqueId") == size
    unique = ffi.new("ncclUniqueId *")
    assert nccl_lib.ncclGetUniqueId(unique) == 0
    assert any(bytes(ffi.buffer(unique)))


def test_error_strings(lib):
    with pytest.raises(RuntimeError, match="NCCL error in ncclAllReduce: ncclInvalidArgument"):
        nccl.check(4, "ncclAllReduce")


def test_dtype_and_op_mapping_is_torchs():
    comm = nccl.Communicator.__new__(nccl.Communicator)
    buf = nccl._Buffer(0, 4, "bool", 0, 0)
    assert comm._args(buf, "sum") == (abi.DATA_TYPES["ncclUint8"], abi.RED_OPS["ncclMax"])
    assert comm._args(buf, "product") == (abi.DATA_TYPES["ncclUint8"], abi.RED_OPS["ncclMin"])
    with pytest.raises(ValueError, match=r"Cannot use ReduceOp.AVG with NCCL on bool"):
        comm._args(buf, "avg")
    half = nccl._Buffer(0, 4, "bfloat16", 0, 0)
    assert comm._args(half, "avg") == (abi.DATA_TYPES["ncclBfloat16"], abi.RED_OPS["ncclAvg"])
    with pytest.raises(TypeError, match="NCCL has no int16"):
        comm._args(nccl._Buffer(0, 4, "int16", 0, 0), "sum")
    with pytest.raises(ValueError, match="BAND"):
        comm._args(nccl._Buffer(0, 4, "int32", 0, 0), "band")


def test_no_device_is_a_clear_error(lib):
    try:
        abi.cuda()
    except (OSError, RuntimeError) as exc:
        with pytest.raises(type(exc), match=r"CUDA driver|cuInit|GPU"):
            nccl.ember_collective_backend_create(
                {"rank": 0, "world_size": 1, "store": None, "timeout": 1.0, "device_index": 0}
            )
    else:
        pytest.skip("this machine has a CUDA driver: the no-device path is not reachable")
