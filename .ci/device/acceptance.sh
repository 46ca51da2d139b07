#!/usr/bin/env bash
# The CUDA acceptance run, ON the GPU machine (device call: carry [".whl"], command
# `bash .whl/acceptance.sh 2>&1 | tee $OUT/run.log`): setup, bench_cuda.py, then the CUDA test
# suite in the time left of BUDGET seconds (default 470), logs and junit under $OUT.
# Seen on an H200 (2026-11-26): setup 89 s with the prebuilt CPU wheel, bench 58 s, the suite
# (tests/ops tests/autograd tests/nn tests/backend_cuda, -n 16) 126 s.
set -o pipefail
SECONDS=0
bash .whl/on-device.sh > "$OUT/setup.log" 2>&1 || { tail -30 "$OUT/setup.log"; echo "SETUP FAILED"; exit 1; }
tail -4 "$OUT/setup.log"; echo "setup took $SECONDS s"
export PYTHONUNBUFFERED=1
timeout 150 python3 benchmarks/bench_cuda.py --repeat 3 2>&1 | tee "$OUT/bench.log"
left=$((${BUDGET:-470} - SECONDS)); echo "tests get $left s"
EMBER_TEST_DEVICES=cuda timeout "$left" python3 -m pytest -q -v ${TESTS:-tests/ops tests/autograd tests/nn tests/backend_cuda} \
    -n 16 -p no:cacheprovider --timeout 90 -rfE --junitxml="$OUT/junit.xml" > "$OUT/tests.log" 2>&1
echo "pytest rc $? at $SECONDS s"
grep -E "^FAILED|^ERROR" "$OUT/tests.log" | sort -u | cut -c1-220 | head -150
tail -2 "$OUT/tests.log"
