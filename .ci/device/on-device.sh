#!/usr/bin/env bash
# Copy of ../shared/gpu/on-device.sh, adapted: installs into the image's python3 (a venv made from
# it would not see torch, which lives in the image's own venv), builds pycuda while ember and its
# plugins install, and takes the CPU backend as a wheel built here with Python 3.12 (its serial
# C build took most of the first run's setup).
set -euo pipefail
export PIP_NO_INDEX=1 PIP_DISABLE_PIP_VERSION_CHECK=1
command -v nvcc >/dev/null || export PATH=/usr/local/cuda/bin:$PATH
cuda=$(dirname "$(dirname "$(command -v nvcc)")")
export CUDA_ROOT=$cuda PATH=$cuda/bin:$PATH
echo "python3: $(command -v python3) nvcc: $(command -v nvcc)"
python3 -m pip install -q --no-deps .whl/*.whl
mkdir -p /tmp/pycuda-src && tar xzf .whl/pycuda-*.tar.gz -C /tmp/pycuda-src
src=$(echo /tmp/pycuda-src/pycuda-*)
printf '\n[build_ext]\nparallel = 16\n' >> "$src/setup.cfg"
start=$SECONDS
# pycuda as a wheel: it comes back in $OUT, and a later session that carries it in .whl/ skips
# the two-minute build (the image's CUDA and Python are the same from one loan to the next).
if ls .whl/pycuda-*.whl >/dev/null 2>&1; then
    true &
else
    (python3 -m pip wheel -q --no-deps --no-build-isolation -w /tmp/pycuda-wheel "$src" &&
        python3 -m pip install -q --no-deps /tmp/pycuda-wheel/pycuda-*.whl &&
        cp /tmp/pycuda-wheel/pycuda-*.whl "${OUT:-/tmp}/") > /tmp/pycuda.log 2>&1 &
fi
pycuda=$!
if ls .whl/ember_backend_cpu-*.whl >/dev/null 2>&1; then cpu=(); else cpu=(./backend_cpu); fi
python3 -m pip install -q --no-deps --no-build-isolation "${cpu[@]}" ./backend_gpu ./backend_cuda .
echo "ember installed at $((SECONDS - start)) s"
wait $pycuda || { tail -20 /tmp/pycuda.log; exit 1; }
echo "pycuda built in $((SECONDS - start)) s"
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv
python3 -c "import ember; print('cuda available:', ember.cuda.is_available(), ember.cuda.get_device_name(0) if ember.cuda.is_available() else ember.cuda.unavailable_reason())"
# Every plugin must load: a backend that fails to import (scipy 1.18 renamed the FFT binding the
# CPU kernels used, 2026-11-27) fails every test after setup; stop here instead, with the reason.
python3 -c "
import ember
for device in ('cpu', 'cuda'):
    ember.ones(2, device=device).sum().item()
print('cpu and cuda backends load')"
