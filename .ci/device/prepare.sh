#!/usr/bin/env bash
# Run HERE, from the project root, before a device call: ../shared/gpu/prepare.sh (the wheels the
# GPU machine's image lacks, pycuda's source), then the test-only expecttest wheel, the CPU
# backend built as a Python 3.12 wheel (the image's Python; its C build is serial and took
# three minutes of device time when built there) and this folder's scripts, all into .whl/
# (git-ignored, carried with carry: [".whl"]).
set -euo pipefail
bash ../shared/gpu/prepare.sh
python3 -m pip download -q --no-deps --only-binary=:all: -d .whl expecttest
# scipy: the CPU backend's FFT kernels run on its pocketfft binding, and the image has no scipy
# (35 MB: with the rest, .whl stays under the device call's 64 MiB carry).
python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 \
    --platform manylinux_2_28_x86_64 -d .whl scipy
# The first interpreter that runs: a pyenv shim can be on PATH without a 3.12 selected.
py312=""
for candidate in "$(command -v python3.12 || true)" /root/.pyenv/versions/3.12*/bin/python; do
    if [ -n "$candidate" ] && "$candidate" -c "" 2>/dev/null; then py312=$candidate; break; fi
done
if [ -n "$py312" ]; then
    venv=$(mktemp -d)
    "$py312" -m venv "$venv" && "$venv/bin/pip" install -q cffi setuptools wheel
    "$venv/bin/pip" wheel -q --no-deps --no-build-isolation -w .whl ./backend_cpu
else
    echo "! no Python 3.12 here: on-device.sh builds the CPU backend there (about 3 minutes)" >&2
fi
cp .ci/device/on-device.sh .ci/device/acceptance.sh .ci/device/host_benchmarks.sh .ci/device/older_oracle.txt .whl/
ls -la .whl
