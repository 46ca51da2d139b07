#!/usr/bin/env bash
# Issue 20's CPU benchmarks on the GPU machine's idle host, pinned to two cores: a quiet stand-in
# for the loaded 2-core development machine (another CPU: compare ratios, and name it). Run after
# on-device.sh in a device call; the log goes to $OUT/host_bench.log. PyTorch here is the image's
# CUDA build running on the CPU, the same CPU kernels as its CPU build.
set -o pipefail
export PYTHONUNBUFFERED=1
log="${OUT:-/tmp}/host_bench.log"
{
    lscpu | grep -E "^Model name|^CPU\(s\)"
    grep -qw avx512f /proc/cpuinfo && echo "AVX-512: yes" || echo "AVX-512: no"
    python3 -c "import torch; print('torch', torch.__version__)"
} | tee "$log"
run() {  # seconds, then the command: pinned to cores 0 and 1
    local seconds=$1
    shift
    echo "+ $*" | tee -a "$log"
    timeout "$seconds" taskset -c 0,1 "$@" 2>&1 | tee -a "$log"
}
run 60 python3 benchmarks/bench_overhead.py --threads 1 --repeat 5 --libs ember,torch
run 60 python3 benchmarks/bench_ops.py --repeat 5 --threads 2 --libs ember,torch --only "x + y,sum,a * b"
run "${TRAINING_SECONDS:-150}" python3 benchmarks/bench_training.py --steps 10 --threads 1 2 \
    --models ${MODELS:-mlp mingpt gpt_written}
