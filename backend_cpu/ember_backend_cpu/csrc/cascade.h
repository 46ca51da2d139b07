/* Sums of contiguous float32 and float64 runs with PyTorch's bits: its cascade_sum
 * (aten/src/ATen/native/cpu/SumKernel.cpp: vectorized_inner_sum, row_sum, multi_row_sum),
 * reproduced addition for addition. reduce.c takes it for sum (hence mean and nansum) of runs.
 *
 * The scheme. A run is read as rows of CS_ROW_BYTES: CS_ILP vectors of CS_VEC_BYTES, one
 * independent lane per position in the row (32 floats, 16 doubles). Each lane sums its column
 * through CS_LEVELS levels in the run's own dtype: level 0 adds 2^lp rows, then passes its sums
 * to level 1 and restarts; level 1 passes up every 2^lp of those, level 2 every 2^(2 lp), and
 * level 3 keeps the rest. lp = max(4, ceil(log2(rows)) / 4), so chains stay short however long
 * the run (the top level takes rows / 2^(3 lp) sums, 128 on a 16M float run). Then per lane the
 * levels bottom up, the whole vectors left over (fewer than CS_ILP) into the row's first vector,
 * the row's vectors into its first; last, one scalar chain: the elements left over (fewer than a
 * vector), then the first vector's lanes in order. Runs shorter than a vector: scalar lanes over
 * rows of CS_ILP elements, the leftover into lane 0, the lanes in order.
 *
 * The vector width is PyTorch's, not ours: 32 bytes on every x86 CPU. get_cpu_capability() says
 * AVX512 here, but SumKernel.cpp registers with REGISTER_DISPATCH, which (DispatchStub.h) gives
 * the AVX-512 build no kernel, so PyTorch runs its AVX2 one (8-float Vectorized), and its DEFAULT
 * build's Vectorized is 32 bytes too (ATEN_CPU_CAPABILITY=avx512/avx2/default: the same bits,
 * tests/backend_cpu/test_cascade_sum.py). Our builds
 * all hold these lanes: 8-float (or 4-double) vectors in the AVX2 and baseline clones, 16-float
 * vectors (two of PyTorch's per register, half the loads and adds) where the CPU has AVX-512.
 * Lanes never mix until the scalar end, and there is no FMA (-ffp-contract=off), so every build
 * gives the same bits.
 *
 * Threads. PyTorch splits a run among its threads (two_pass_reduction), so its bits move with
 * the thread count; ours do not: a long run's complete top-level blocks (2^(3 lp) rows) and the
 * complete level-1 units (2^(2 lp) rows) after them are what the serial order would add into
 * levels 3 and 2 as single sums, so threads compute those sums and one thread adds them in the
 * serial order, then does the rest of the rows. The result is PyTorch's one-thread sum, on any
 * number of threads. Each thread sums one contiguous share of those blocks, as each of PyTorch's
 * threads sums one piece: taken one at a time on a dynamic schedule, the blocks read 10-25%
 * slower at two threads (docs/performance_kernels.md, sum20d).
 */
#ifndef EMBER_CASCADE_H
#define EMBER_CASCADE_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define CS_VEC_BYTES 32 /* PyTorch's Vectorized<T> here: 8 floats, 4 doubles */
#define CS_ILP 4        /* vectors per row (row_sum's ilp_factor) */
#define CS_ROW_BYTES (CS_ILP * CS_VEC_BYTES)
#define CS_LEVELS 4    /* multi_row_sum's num_levels (CS_KERNEL's carries are written for 4) */
#define CS_MIN_POWER 4 /* level 0 adds at least 2^4 rows */

/* lp for a run of `rows` rows: max(4, ceil(log2(rows)) / CS_LEVELS), ceil(log2(r <= 2)) = 1. */
static inline int cs_power(int64_t rows) {
    const int ceil_log2 = rows <= 2 ? 1 : 64 - __builtin_clzll((uint64_t)rows - 1);
    return ceil_log2 / CS_LEVELS > CS_MIN_POWER ? ceil_log2 / CS_LEVELS : CS_MIN_POWER;
}

/* Inlined into each build, so that each compiles it at its own width. */
#define CS_INLINE static inline __attribute__((always_inline))

/* CS_KERNEL(NAME, T, W, ATTRS): the scheme over vectors of W elements, compiled with ATTRS:
 * - void NAME_span(acc, p, i, end, lp): rows [i, end) of the run at p into the levels
 *   acc[CS_LEVELS][row], carrying as the serial loop does at row index i (a span may start
 *   wherever the serial loop has just carried);
 * - T NAME_sum(upper, p, n, first): the sum of the n elements at p, given the levels after rows
 *   [0, first) (upper; NULL when first is 0: all zero), in registers from there on.
 * Vectors stay inside: passed by value they change the ABI between widths. */
#define CS_KERNEL(NAME, T, W, ATTRS)                                                              \
    typedef T NAME##_vec __attribute__((vector_size((W) * sizeof(T))));                           \
    typedef T NAME##_torch_vec __attribute__((vector_size(CS_VEC_BYTES)));                        \
    enum { NAME##_ROW = CS_ROW_BYTES / sizeof(T), NAME##_NV = NAME##_ROW / (W) };                 \
                                                                                                  \
    /* up += low, low = 0: a level passes its sums one level up */                                \
    CS_INLINE void NAME##_carry(NAME##_vec *up, NAME##_vec *low) {                                \
        for (int v = 0; v < NAME##_NV; v++) {                                                     \
            up[v] += low[v];                                                                      \
            low[v] = (NAME##_vec){0};                                                             \
        }                                                                                         \
    }                                                                                             \
                                                                                                  \
    CS_INLINE void NAME##_levels(NAME##_vec a[][NAME##_NV], const T *p, int64_t i, int64_t end,   \
                                 int lp) {                                                        \
        const int64_t step = (int64_t)1 << lp, mask = step - 1;                                   \
        const T *row = p + i * NAME##_ROW;                                                        \
        for (; i + step <= end; i += step) {                                                      \
            const T *stop = row + step * NAME##_ROW;                                              \
            for (; row < stop; row += NAME##_ROW) /* unrolled, it streams 20% slower */          \
                for (int v = 0; v < NAME##_NV; v++) {                                             \
                    NAME##_vec x;                                                                 \
                    memcpy(&x, row + v * (W), sizeof x);                                          \
                    a[0][v] += x;                                                                 \
                }                                                                                 \
            /* level j - 1 passes up at every multiple of step^(j - 1) rows (constant indices:    \
             * the levels stay in registers) */                                                   \
            NAME##_carry(a[1], a[0]);                                                             \
            if (!((i + step) & (mask << lp))) {                                                   \
                NAME##_carry(a[2], a[1]);                                                         \
                if (!((i + step) & (mask << 2 * lp))) NAME##_carry(a[3], a[2]);                   \
            }                                                                                     \
        }                                                                                         \
        for (; i < end; i++, row += NAME##_ROW) /* the run's last rows, fewer than a step */      \
            for (int v = 0; v < NAME##_NV; v++) {                                                 \
                NAME##_vec x;                                                                     \
                memcpy(&x, row + v * (W), sizeof x);                                              \
                a[0][v] += x;                                                                     \
            }                                                                                     \
    }                                                                                             \
                                                                                                  \
    static ATTRS void NAME##_span(T acc[][NAME##_ROW], const T *p, int64_t i, int64_t end,        \
                                  int lp) {                                                       \
        NAME##_vec a[CS_LEVELS][NAME##_NV];                                                       \
        memcpy(a, acc, sizeof a);                                                                 \
        NAME##_levels(a, p, i, end, lp);                                                          \
        memcpy(acc, a, sizeof a);                                                                 \
    }                                                                                             \
                                                                                                  \
    static ATTRS T NAME##_sum(T upper[][NAME##_ROW], const T *p, int64_t n, int64_t first) {      \
        enum { VEC = CS_VEC_BYTES / sizeof(T) };                                                  \
        NAME##_vec a[CS_LEVELS][NAME##_NV];                                                       \
        for (int j = 0; j < CS_LEVELS; j++) /* not `= {0}`: GCC zeroes that by rep stos */       \
            for (int v = 0; v < NAME##_NV; v++) {                                                 \
                NAME##_vec x = {0}; /* by copies: `a` stays in registers */                      \
                if (upper) memcpy(&x, upper[j] + v * (W), sizeof x);                              \
                a[j][v] = x;                                                                      \
            }                                                                                     \
        const int64_t vecs = n / VEC, rows = vecs / CS_ILP;                                       \
        NAME##_levels(a, p, first, rows, cs_power(rows));                                         \
        for (int v = 0; v < NAME##_NV; v++) /* levels bottom up */                                \
            for (int j = 1; j < CS_LEVELS; j++) a[0][v] += a[j][v];                               \
        NAME##_torch_vec lane[CS_ILP], x;                                                         \
        for (int v = 0; v < NAME##_NV; v++) {                                                     \
            NAME##_vec l = a[0][v];                                                               \
            memcpy((char *)lane + v * sizeof l, &l, sizeof l);                                    \
        }                                                                                         \
        for (int64_t v = rows * CS_ILP; v < vecs; v++) { /* whole vectors left over */            \
            memcpy(&x, p + v * VEC, sizeof x);                                                    \
            lane[0] += x;                                                                         \
        }                                                                                         \
        for (int v = 1; v < CS_ILP; v++) lane[0] += lane[v];                                      \
        T s = 0;                                                                                  \
        for (int64_t i = vecs * VEC; i < n; i++) s += p[i]; /* elements left over */              \
        for (int k = 0; k < VEC; k++) s += lane[0][k];                                            \
        return s;                                                                                 \
    }

/* Where threads pay: a run of at least this many elements, cut into at least two tasks. */
#define CS_PARALLEL_MIN EM_PARALLEL_THRESHOLD

/* Whether a run of n elements goes to threads: large enough, more than one thread allowed, and
 * not already inside a parallel region (a row of a multi-row sum). */
static inline int cs_can_thread(int64_t n) {
#ifdef _OPENMP
    return n >= CS_PARALLEL_MIN && omp_get_max_threads() > 1 && !omp_in_parallel();
#else
    (void)n;
    return 0;
#endif
}

/* The calling thread's rank in its team; the team's size (one thread without OpenMP). */
static inline int64_t cs_team(int64_t *rank) {
#ifdef _OPENMP
    *rank = omp_get_thread_num();
    return omp_get_num_threads();
#else
    *rank = 0;
    return 1;
#endif
}

/* Whether the AVX-512 build may run: the CPU has it and EMBER_CPU_AVX512=0 does not turn it off
 * (the tests compare the builds' bits that way). */
static int cs_wide_allowed(void) {
    static int allowed = -1; /* a benign race: every thread finds the same */
    if (allowed < 0) {
        const char *off = getenv("EMBER_CPU_AVX512");
        allowed = EM_CPU_WIDE() && !(off && strcmp(off, "0") == 0);
    }
    return allowed;
}

/* The build for a run at p: AVX-512 where it may run and p is on a 64-byte line. Elsewhere
 * (numpy's arrays start 16 bytes past a line) every 64-byte load would straddle two lines, and
 * the 8-float build streams faster: 45-48 GB/s against 42-43 on one Zen 5 core (64 MB at 16
 * bytes past a line; on aligned data the AVX-512 build reads 48-54 against 48-52). */
static inline int cs_wide(const void *p) {
    return (uintptr_t)p % 64 == 0 && cs_wide_allowed();
}

/* The first thread task (cs_threads_*: `blocks` top-level blocks of 2^(3 lp) rows, then level-1
 * units of 2^(2 lp) rows) that starts at or after row r. */
static inline int64_t cs_task_at(int64_t r, int64_t blocks, int lp) {
    const int64_t unit = (int64_t)1 << (2 * lp), block = unit << lp;
    if (r <= blocks * block) return (r + block - 1) / block;
    return blocks + (r - blocks * block + unit - 1) / unit;
}

/* CS_SUM(T, SFX): T cascade_sum_SFX(p, n), the sum of the n contiguous T at p, from the kernels
 * cs_SFX_narrow and cs_SFX_wide. */
#define CS_SUM(T, SFX)                                                                            \
    enum { SFX##_ROW = CS_ROW_BYTES / sizeof(T), SFX##_VEC = CS_VEC_BYTES / sizeof(T) };          \
    typedef struct {                                                                              \
        void (*span)(T acc[][SFX##_ROW], const T *p, int64_t i, int64_t end, int lp);            \
        T (*sum)(T upper[][SFX##_ROW], const T *p, int64_t n, int64_t first);                     \
    } cs_##SFX##_kernel;                                                                          \
                                                                                                  \
    /* Fewer elements than a vector: scalar_inner_sum's row_sum, whose levels never carry. */     \
    static T cs_short_##SFX(const T *p, int64_t n) {                                              \
        T lane[CS_ILP] = {0};                                                                     \
        int64_t i = 0;                                                                            \
        for (; i + CS_ILP <= n; i += CS_ILP)                                                      \
            for (int k = 0; k < CS_ILP; k++) lane[k] += p[i + k];                                 \
        for (; i < n; i++) lane[0] += p[i];                                                       \
        T s = lane[0];                                                                            \
        for (int k = 1; k < CS_ILP; k++) s += lane[k];                                            \
        return s;                                                                                 \
    }                                                                                             \
                                                                                                  \
    /* Levels 2 and 3 (in acc, zeroed here) after the rows [0, returned) that threads summed    \
     * (see the scheme above); 0 where threads do not pay. Each thread takes one contiguous      \
     * share of the tasks, cut by rows (cs_task_at), as PyTorch gives each thread one piece.    \
     */                                                                                           \
    static int64_t cs_threads_##SFX(const cs_##SFX##_kernel *k, T acc[][SFX##_ROW], const T *p,   \
                                    int64_t rows, int lp) {                                       \
        if (!cs_can_thread(rows * SFX##_ROW)) return 0;                                           \
        const int64_t unit = (int64_t)1 << (2 * lp), block = unit << lp;                          \
        const int64_t blocks = rows / block, units = (rows - blocks * block) / unit;              \
        const int64_t tasks = blocks + units, covered = blocks * block + units * unit;            \
        T(*part)[SFX##_ROW] = tasks >= 2 ? malloc(tasks * sizeof *part) : NULL;                   \
        if (!part) return 0; /* one thread: the same sum */                                      \
        _Pragma("omp parallel")                                                                   \
        {                                                                                         \
            int64_t me;                                                                           \
            const int64_t nt = cs_team(&me);                                                      \
            const int64_t end = cs_task_at(covered * (me + 1) / nt, blocks, lp);                  \
            for (int64_t t = cs_task_at(covered * me / nt, blocks, lp); t < end; t++) {           \
                T a[CS_LEVELS][SFX##_ROW] = {{0}};                                                \
                const int top = t < blocks;                                                       \
                const int64_t start = top ? t * block : blocks * block + (t - blocks) * unit;     \
                k->span(a, p, start, start + (top ? block : unit), lp);                           \
                memcpy(part[t], a[top ? 3 : 2], sizeof part[t]);                                  \
            }                                                                                     \
        }                                                                                         \
        memset(acc, 0, CS_LEVELS * sizeof *acc);                                                  \
        for (int64_t t = 0; t < tasks; t++)                                                       \
            for (int e = 0; e < SFX##_ROW; e++) acc[t < blocks ? 3 : 2][e] += part[t][e];         \
        free(part);                                                                               \
        return covered;                                                                           \
    }                                                                                             \
                                                                                                  \
    static T cascade_sum_##SFX(const T *p, int64_t n) {                                           \
        static const cs_##SFX##_kernel narrow = {cs_##SFX##_narrow_span, cs_##SFX##_narrow_sum}; \
        static const cs_##SFX##_kernel wide = {cs_##SFX##_wide_span, cs_##SFX##_wide_sum};       \
        if (n < SFX##_VEC) return cs_short_##SFX(p, n);                                           \
        const cs_##SFX##_kernel *k = cs_wide(p) ? &wide : &narrow;                                \
        const int64_t rows = n / SFX##_VEC / CS_ILP;                                              \
        T upper[CS_LEVELS][SFX##_ROW];                                                            \
        const int64_t first = cs_threads_##SFX(k, upper, p, rows, cs_power(rows));                \
        return k->sum(first ? upper : NULL, p, n, first);                                         \
    }

CS_KERNEL(cs_f32_narrow, float, 8, EM_CLONES)
CS_KERNEL(cs_f32_wide, float, 16, EM_TARGET_WIDE)
CS_KERNEL(cs_f64_narrow, double, 4, EM_CLONES)
CS_KERNEL(cs_f64_wide, double, 8, EM_TARGET_WIDE)
CS_SUM(float, f32)
CS_SUM(double, f64)

#endif
