#!/usr/bin/env bash
# The CUDA acceptance run, ON the GPU machine (device call: carry [".whl"], command
# `bash .whl/acceptance.sh 2>&1 | tee $OUT/run.log`): setup, bench_cuda.py, then the CUDA test
# suite in the time left of BUDGET seconds (default 470), logs and junit under $OUT.
# Seen on an H200 (2026-11-26): setup 89 s with the prebuilt CPU wheel, bench 58 s, the suite
# (tests/ops tests/autograd tests/nn tests/backend_cuda, -n 16) 126 s. 2026-11-27: setup 130 s
# (pycuda's build 116 s of it: on-device.sh returns its wheel in $OUT; carried in .whl/ it is
# skipped), bench 62 s, and that suite plus linalg, fft, complex, the samplers and the fused
# kernels 231 s.
set -o pipefail
SECONDS=0
bash .whl/on-device.sh > "$OUT/setup.log" 2>&1 || { tail -30 "$OUT/setup.log"; echo "SETUP FAILED"; exit 1; }
tail -4 "$OUT/setup.log"; echo "setup took $SECONDS s"
python3 -c "import torch, scipy, numpy; print('oracle: torch', torch.__version__, 'scipy', scipy.__version__, 'numpy', numpy.__version__)"
export PYTHONUNBUFFERED=1
timeout 150 python3 benchmarks/bench_cuda.py --repeat 3 2>&1 | tee "$OUT/bench.log"
# where the GPT step's time goes (host, kernels, which kernels), each library in its own process
# (PROFILE=0 skips it when device time is short)
[ "${PROFILE:-1}" = 0 ] || timeout 120 python3 benchmarks/cuda_step_profile.py 2>&1 | tee "$OUT/profile.log"
left=$((${BUDGET:-470} - SECONDS)); echo "tests get $left s"
EMBER_TEST_DEVICES=cuda timeout "$left" python3 -m pytest -v ${TESTS:-tests/ops tests/autograd tests/nn tests/backend_cuda} \
    -n 16 -p no:cacheprovider --timeout 90 -rfE --junitxml="$OUT/junit.xml" > "$OUT/tests.log" 2>&1
echo "pytest rc $? at $SECONDS s"
# -v names each failure as it happens, so a run cut short by the budget still says which
# (2026-11-27: -q left 81 anonymous F's when the timeout came before pytest's summary)
grep -E " (FAILED|ERROR) " "$OUT/tests.log" | sed 's/.*\(FAILED\|ERROR\) //' | sort -u > "$OUT/failed.txt"
# failures the image's older torch explains (older_oracle.txt) apart from the rest
grep -v '^#' .whl/older_oracle.txt | grep -v '^$' > /tmp/older_oracle
grep -F -f /tmp/older_oracle "$OUT/failed.txt" > "$OUT/failed_oracle.txt"
grep -v -F -f /tmp/older_oracle "$OUT/failed.txt" > "$OUT/failed_other.txt"
echo "$(wc -l < "$OUT/failed.txt") failed, $(wc -l < "$OUT/failed_oracle.txt") of them known" \
    "differences of the image's older torch (failed_oracle.txt); the others:"
cut -c1-200 "$OUT/failed_other.txt" | head -150
tail -2 "$OUT/tests.log"
