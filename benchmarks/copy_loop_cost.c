/* ember_copy of two builds of the CPU kernels, alternated in one process (load on a shared
 * machine moves both alike): the median thread-CPU nanoseconds of a call, for minGPT's strided
 * float32 copies (docs/eager_overhead.md, round 10). The library needs libpython's symbols:
 *
 *   gcc -O2 -o copy_loop_cost benchmarks/copy_loop_cost.c -Wl,--no-as-needed -ldl \
 *       -L$PYLIB -lpython3.11 -Wl,-rpath,$PYLIB
 *   OMP_NUM_THREADS=1 ./copy_loop_cost OLD/_kernels.abi3.so NEW/_kernels.abi3.so
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>
typedef int (*copy_fn)(int, int, int64_t, int, const int64_t *, intptr_t, const int64_t *, intptr_t, const int64_t *);
static double now(void) { struct timespec t; clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t); return t.tv_sec * 1e9 + t.tv_nsec; }
static int cmp(const void *a, const void *b) { double x = *(double *)a, y = *(double *)b; return x < y ? -1 : x > y; }
int main(int argc, char **argv) {
    void *h[2]; copy_fn f[2];
    for (int i = 0; i < 2; i++) { h[i] = dlopen(argv[1 + i], RTLD_NOW | RTLD_LOCAL); if (!h[i]) { puts(dlerror()); return 1; } f[i] = (copy_fn)dlsym(h[i], "ember_copy"); }
    float *src = malloc(1 << 22), *dst = malloc(1 << 22);
    for (int i = 0; i < (1 << 20); i++) src[i] = (float)i;
    struct { const char *name; int nd; int64_t shape[4], ss[4]; } cases[] = {
        {"heads (64,6,3,16) from (64,3,6,16).transpose(1,2)", 4, {64, 6, 3, 16}, {288, 16, 96, 1}},
        {"qkv (64,3,6,16) from (64,6,3,16).transpose(1,2)", 4, {64, 3, 6, 16}, {288, 16, 48, 1}},
        {"t2d (48,144) from (144,48).t()", 2, {48, 144}, {1, 48}},
        {"att^T (192,6,6) from transpose(-2,-1)", 3, {192, 6, 6}, {36, 1, 6}},
    };
    for (int c = 0; c < 4; c++) {
        double t[2][301];
        for (int r = 0; r < 301; r++)
            for (int k = 0; k < 2; k++) {
                double s = now();
                for (int j = 0; j < 20; j++) f[k](8, 8, 0, cases[c].nd, cases[c].shape, (intptr_t)dst, NULL, (intptr_t)src, cases[c].ss);
                t[k][r] = (now() - s) / 20;
            }
        qsort(t[0], 301, sizeof(double), cmp); qsort(t[1], 301, sizeof(double), cmp);
        printf("%-52s old %8.0f ns  new %8.0f ns\n", cases[c].name, t[0][150], t[1][150]);
    }
    return 0;
}
