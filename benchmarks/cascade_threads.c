/* The threaded float32 cascade sum (backend_cpu csrc/cascade.h) against other ways of sharing
 * its work among threads, alternated call by call so that other load on a shared machine hits
 * them alike (docs/performance_kernels.md, sum20d):
 * - ember:   cascade_sum_f32 as built (each thread one contiguous share of the top-level blocks);
 * - dynamic: the same blocks taken one at a time on a dynamic schedule (the code before sum20d);
 * - torch:   PyTorch's two_pass_reduction: one contiguous piece per thread (divup of n), each a
 *            one-thread cascade, the pieces' sums added by the cascade (its bits at T threads).
 * The first two give PyTorch's one-thread bits; the last line of each shows the result's bits.
 *
 *   cc -O3 -std=gnu11 -fwrapv -ffp-contract=off -fno-math-errno -fopenmp \
 *       -Ibackend_cpu/ember_backend_cpu/csrc benchmarks/cascade_threads.c -o /tmp/cascade_threads
 *   OMP_NUM_THREADS=2 GOMP_SPINCOUNT=30000 /tmp/cascade_threads [n=16777216] [calls=300] [offset=16]
 *
 * offset: bytes past a 64-byte line (numpy's arrays: 16). Prints GB/s read: the best call, the
 * 10th and 25th percentiles from the top, and the median. */
#include "ember_cpu.h"
#include "cascade.h"

#include <stdio.h>
#include <time.h>

typedef float (*sum_fn)(const float *, int64_t);

static float ember_sum(const float *p, int64_t n) { return cascade_sum_f32(p, n); }

static float dynamic_sum(const float *p, int64_t n) {
    const int64_t rows = n / f32_ROW;
    const int lp = cs_power(rows);
    const int64_t block = (int64_t)1 << (3 * lp), blocks = rows / block;
    if (blocks < 2 || !cs_can_thread(n)) return cascade_sum_f32(p, n);
    float(*part)[f32_ROW] = malloc(blocks * sizeof *part);
    const int wide = cs_wide(p);
#pragma omp parallel for schedule(dynamic)
    for (int64_t b = 0; b < blocks; b++) {
        float a[CS_LEVELS][f32_ROW] = {{0}};
        (wide ? cs_f32_wide_span : cs_f32_narrow_span)(a, p, b * block, (b + 1) * block, lp);
        memcpy(part[b], a[3], sizeof part[b]);
    }
    float acc[CS_LEVELS][f32_ROW] = {{0}};
    for (int64_t b = 0; b < blocks; b++)
        for (int e = 0; e < f32_ROW; e++) acc[3][e] += part[b][e];
    free(part);
    return (wide ? cs_f32_wide_sum : cs_f32_narrow_sum)(acc, p, n, blocks * block);
}

static float torch_sum(const float *p, int64_t n) {
    const int threads = omp_get_max_threads();
    if (threads < 2 || n < CS_PARALLEL_MIN) return cascade_sum_f32(p, n);
    const int64_t pieces = threads < (n + 32767) / 32768 ? threads : (n + 32767) / 32768;
    const int64_t piece = (n + pieces - 1) / pieces;
    float *part = calloc(threads, sizeof *part);
#pragma omp parallel
    {
        const int64_t t = omp_get_thread_num(), b = t * piece;
        if (t < pieces && b < n) /* inside a parallel region: one thread each */
            part[t] = cascade_sum_f32(p + b, b + piece < n ? piece : n - b);
    }
    const float s = cascade_sum_f32(part, threads);
    free(part);
    return s;
}

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + 1e-9 * t.tv_nsec;
}

static int by_time(const void *a, const void *b) {
    const double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv) {
    const int64_t n = argc > 1 ? atoll(argv[1]) : 1 << 24;
    const int calls = argc > 2 ? atoi(argv[2]) : 300, offset = argc > 3 ? atoi(argv[3]) : 16;
    char *raw = aligned_alloc(4096, ((n * 4 + 64) / 4096 + 1) * 4096);
    float *p = (float *)(raw + offset);
    uint64_t s = 88172645463325252ull; /* xorshift: values in [-0.5, 0.5) */
    for (int64_t i = 0; i < n; i++) {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        p[i] = (float)((double)(s >> 11) / 9007199254740992.0 - 0.5);
    }
    const char *names[] = {"ember", "dynamic", "torch"};
    const sum_fn fns[] = {ember_sum, dynamic_sum, torch_sum};
    enum { NV = 3 };
    double *times[NV];
    float result[NV];
    for (int v = 0; v < NV; v++) {
        times[v] = malloc(calls * sizeof(double));
        result[v] = fns[v](p, n); /* warm up */
    }
    for (int k = 0; k < calls; k++)
        for (int j = 0; j < NV; j++) {
            const int v = (j + k) % NV; /* each goes first in turn */
            const double start = now();
            fns[v](p, n);
            times[v][k] = now() - start;
        }
    printf("%lld floats at %d bytes past a line, %d threads, %d calls each\n", (long long)n,
           offset, omp_get_max_threads(), calls);
    for (int v = 0; v < NV; v++) {
        qsort(times[v], calls, sizeof(double), by_time);
        const double gb = n * 4 / 1e9;
        printf("%-8s GB/s best %6.1f  p10 %6.1f  p25 %6.1f  median %6.1f  sum %a\n", names[v],
               gb / times[v][0], gb / times[v][calls / 10], gb / times[v][calls / 4],
               gb / times[v][calls / 2], result[v]);
    }
    return 0;
}
