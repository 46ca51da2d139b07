"""The numbers hip.py declares (cffi ABI mode has no headers) against the installed
hip_runtime_api.h, when a header and a C++ compiler are there (Debian's libamdhip64-dev, which
hipcc brings): error codes, memcpy kinds, event flags, device attributes, launch-buffer markers,
the offset of gcnArchName in hipDeviceProp_t and the IPC handle's size and flag."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from ember_backend_rocm import hip

HEADER = Path("/usr/include/hip/hip_runtime_api.h")
PROGRAM = r"""
#include <hip/hip_runtime_api.h>
#include <cstddef>
#include <cstdio>
int main() {
    printf("%d %d %d %d\n", hipErrorOutOfMemory, hipErrorNoDevice, hipErrorInvalidDevice,
           hipErrorNotReady);
    printf("%d %d %d\n", hipMemcpyHostToDevice, hipMemcpyDeviceToHost, hipMemcpyDeviceToDevice);
    printf("%d %d\n", hipEventBlockingSync, hipEventDisableTiming);
    printf("%d %d %d\n", hipDeviceAttributeComputeCapabilityMajor,
           hipDeviceAttributeComputeCapabilityMinor, hipDeviceAttributeMultiprocessorCount);
    printf("%zu %zu\n", offsetof(hipDeviceProp_t, gcnArchName), sizeof(hipDeviceProp_t));
    printf("%zu %zu %zu\n", (size_t)HIP_LAUNCH_PARAM_BUFFER_POINTER,
           (size_t)HIP_LAUNCH_PARAM_BUFFER_SIZE, (size_t)HIP_LAUNCH_PARAM_END);
    printf("%zu %d\n", sizeof(hipIpcMemHandle_t), (int)hipIpcMemLazyEnablePeerAccess);
}
"""


def test_declared_values_match_the_header(tmp_path):
    compiler = shutil.which("g++") or shutil.which("c++")
    if not HEADER.is_file() or compiler is None:
        pytest.skip("no HIP header (libamdhip64-dev) or no C++ compiler to check against")
    (tmp_path / "abi.cpp").write_text(PROGRAM)
    build = subprocess.run([compiler, "-D__HIP_PLATFORM_AMD__", "-o", str(tmp_path / "abi"),
                            str(tmp_path / "abi.cpp")], capture_output=True, text=True)  # fmt: skip
    assert build.returncode == 0, build.stderr
    lines = subprocess.run([str(tmp_path / "abi")], capture_output=True, text=True).stdout
    values = [[int(x) for x in line.split()] for line in lines.splitlines()]
    assert values[0] == [hip.OUT_OF_MEMORY, hip.NO_DEVICE, hip.INVALID_DEVICE, hip.NOT_READY]
    assert values[1] == [hip.MEMCPY["htod"], hip.MEMCPY["dtoh"], hip.MEMCPY["dtod"]]
    assert values[2] == [hip.EVENT_BLOCKING_SYNC, hip.EVENT_DISABLE_TIMING]
    assert values[3] == list(hip.ATTRIBUTE.values())
    assert values[4][0] == hip.ARCH_OFFSET and values[4][1] <= hip.PROPS_BYTES
    assert values[5] == [hip.LAUNCH_BUFFER_POINTER, hip.LAUNCH_BUFFER_SIZE, hip.LAUNCH_END]
    assert values[6] == [hip.IPC_HANDLE_SIZE, hip.IPC_LAZY_ENABLE_PEER_ACCESS]
