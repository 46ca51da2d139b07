/* ember_matmul's three float32 paths for small stacked products, alternated in one process
 * (load on a shared machine moves them alike): the direct loop (matmul.c, "small float
 * products"), oneDNN and OpenBLAS, over a grid of batch x n x k x p with b contiguous or
 * transposed (as k.transpose(-2, -1)); the median thread-CPU (1 thread) or wall (more threads)
 * microseconds of a call. Prints one line per shape and, per multiply-adds-a-matrix bucket, the
 * median ratio loop / best other path: the loop's threshold is the largest bucket it wins
 * (docs/eager_overhead.md, round 12). The library needs libpython's symbols:
 *
 *   gcc -O2 -o small_matmul_grid benchmarks/small_matmul_grid.c -Wl,--no-as-needed -ldl \
 *       -L$PYLIB -lpython3.11 -Wl,-rpath,$PYLIB
 *   OMP_NUM_THREADS=1 ./small_matmul_grid KERNELS.so libscipy_openblas.so libdnnl.so
 */
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

typedef int (*matmul_fn)(int, int64_t, int64_t, int64_t, int64_t, intptr_t, intptr_t,
                         const int64_t *, intptr_t, const int64_t *);
static const char *DNNL[] = {"dnnl_engine_create", "dnnl_stream_create",
                             "dnnl_memory_desc_create_with_strides", "dnnl_memory_desc_destroy",
                             "dnnl_matmul_primitive_desc_create", "dnnl_primitive_desc_query",
                             "dnnl_primitive_desc_destroy", "dnnl_primitive_create",
                             "dnnl_primitive_execute", "dnnl_memory_create",
                             "dnnl_memory_set_data_handle"};
static matmul_fn matmul;
static void (*set_small)(int64_t, int64_t);
static int (*set_dnnl)(const intptr_t *, int);
static intptr_t dnnl_fns[11];
static int wall;

static double now(void) {
    struct timespec t;
    clock_gettime(wall ? CLOCK_MONOTONIC : CLOCK_THREAD_CPUTIME_ID, &t);
    return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}
static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Variant 0: the loop; 1: oneDNN; 2: OpenBLAS. */
static void choose(int variant) {
    set_small(variant == 0 ? 1 << 20 : 0, 65536);
    set_dnnl(dnnl_fns, variant == 1 ? 11 : 0);
}

#define REPS 15
static void measure(int64_t batch, int64_t n, int64_t k, int64_t p, int trans, float *a,
                    float *b, float *c, double *median) {
    int64_t sa[3] = {n * k, k, 1};
    int64_t sb[3] = {k * p, trans ? 1 : p, trans ? k : 1};
    double work = (double)batch * n * k * p;
    int inner = work < 1e5 ? (int)(1e5 / work) + 1 : 1;
    double t[3][REPS];
    for (int r = 0; r < REPS; r++)
        for (int v = 0; v < 3; v++) {
            choose(v);
            matmul(8, batch, n, k, p, (intptr_t)c, (intptr_t)a, sa, (intptr_t)b, sb);
            double s = now();
            for (int i = 0; i < inner; i++)
                matmul(8, batch, n, k, p, (intptr_t)c, (intptr_t)a, sa, (intptr_t)b, sb);
            t[v][r] = (now() - s) / inner;
        }
    for (int v = 0; v < 3; v++) {
        qsort(t[v], REPS, sizeof(double), cmp);
        median[v] = t[v][REPS / 2];
    }
}

int main(int argc, char **argv) {
    if (argc < 4) {
        fprintf(stderr, "usage: %s KERNELS.so OPENBLAS.so DNNL.so [wall]\n", argv[0]);
        return 2;
    }
    wall = argc > 4;
    void *h = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL), *blas = dlopen(argv[2], RTLD_NOW),
         *dnnl = dlopen(argv[3], RTLD_NOW);
    if (!h || !blas || !dnnl) {
        puts(dlerror());
        return 1;
    }
    matmul = (matmul_fn)dlsym(h, "ember_matmul");
    set_small = (void (*)(int64_t, int64_t))dlsym(h, "ember_matmul_set_small");
    set_dnnl = (int (*)(const intptr_t *, int))dlsym(h, "ember_matmul_set_dnnl");
    void (*set_blas)(intptr_t, intptr_t, intptr_t) =
        (void (*)(intptr_t, intptr_t, intptr_t))dlsym(h, "ember_matmul_set_blas");
    set_blas((intptr_t)dlsym(blas, "scipy_cblas_sgemm"), (intptr_t)dlsym(blas, "scipy_cblas_dgemm"),
             (intptr_t)dlsym(blas, "scipy_openblas_set_num_threads"));
    for (int i = 0; i < 11; i++) dnnl_fns[i] = (intptr_t)dlsym(dnnl, DNNL[i]);

    static const int64_t batches[] = {1, 16, 192, 512}, sides[] = {2, 6, 16, 32, 64};
    enum { NB = 4, NS = 5, BUCKETS = 8 };
    /* buckets of multiply-adds a matrix: <=64, <=256, <=1024, <=4096, <=16384, ... */
    double ratios[BUCKETS][NB * NS * NS * NS * 2];
    int counts[BUCKETS] = {0};
    float *a = malloc(sizeof(float) << 21), *b = malloc(sizeof(float) << 21),
          *c = malloc(sizeof(float) << 21);
    for (int i = 0; i < 1 << 21; i++) a[i] = b[i] = (float)(i % 7) - 3;
    printf("%6s %3s %3s %3s %5s %9s %9s %9s\n", "batch", "n", "k", "p", "b", "loop", "onednn",
           "openblas");
    for (int ib = 0; ib < NB; ib++)
        for (int in = 0; in < NS; in++)
            for (int ik = 0; ik < NS; ik++)
                for (int ip = 0; ip < NS; ip++)
                    for (int trans = 0; trans < 2; trans++) {
                        int64_t batch = batches[ib], n = sides[in], k = sides[ik], p = sides[ip];
                        int64_t work = n * k * p;
                        if (work > 65536 || batch * work > (1 << 24)) continue;
                        double m[3];
                        measure(batch, n, k, p, trans, a, b, c, m);
                        printf("%6ld %3ld %3ld %3ld %5s %9.2f %9.2f %9.2f\n", (long)batch,
                               (long)n, (long)k, (long)p, trans ? "T" : "N", m[0], m[1], m[2]);
                        int bucket = 0;
                        while (bucket < BUCKETS - 1 && work > (64L << (2 * bucket))) bucket++;
                        ratios[bucket][counts[bucket]++] = m[0] / (m[1] < m[2] ? m[1] : m[2]);
                    }
    printf("\nmultiply-adds a matrix: median (min, max) of loop / best of oneDNN and OpenBLAS\n");
    for (int i = 0; i < BUCKETS; i++) {
        if (!counts[i]) continue;
        qsort(ratios[i], counts[i], sizeof(double), cmp);
        printf("<= %6ld: %.2f (%.2f, %.2f) over %d shapes\n", 64L << (2 * i),
               ratios[i][counts[i] / 2], ratios[i][0], ratios[i][counts[i] - 1], counts[i]);
    }
    return 0;
}
