/* Reductions and scans: sum, prod, amax, amin, all, any over any set of dims (ember_reduce);
 * max, min, argmax, argmin along one dim (ember_reduce_index); cumsum, cumprod (ember_scan).
 *
 * Each op is a few lines of vocabulary (accumulator type, identity, combination) from which
 * macros generate the loops for every dtype. Two drivers walk the strided N-d operands:
 * - reduce_plan/run_reduce: the kept dims are cut into blocks of outputs along one kept dim (the
 *   "vector" dim, the one with the smallest x stride). When that dim is x's innermost, a block
 *   accumulates whole rows of x into its outputs (vectorised across outputs: sum over dim 0 of
 *   a matrix); otherwise each output folds its own run of contiguous elements.
 * - run_lines: one loop per line along the dim, or along a chunk of the innermost other dim at
 *   once (the scan or the running extreme vectorised across lines).
 *
 * Determinism: how work is cut depends only on shapes and strides, never on the thread count,
 * and partial results combine in a fixed order, so results have the same bits on any number of
 * threads. Accuracy: sum and prod accumulate bool and integers in int64 (wrapping, as PyTorch)
 * and floats in double; runs combine pairwise over blocks of LANES running partials (numpy's
 * scheme, in double), except contiguous float32 and float64 runs of sum, which take PyTorch's
 * cascade in their own dtype (cascade.h: PyTorch's bits). Such a run reaches the cascade whole,
 * never cut into pieces, and threads itself when nothing else does.
 */
#include <stdlib.h>

#include "ember_cpu.h"
#include "api_reduce.h"
#include "cascade.h"

#define RD_CAT_(a, b) a##b
#define RD_CAT(a, b) RD_CAT_(a, b)

/* ---- vocabulary -------------------------------------------------------------------------------
 * Per op: ACC_op(T) the accumulator type, ID_op(T) its identity, VAL_op(T, x) a stored element
 * as an accumulator, COMB_op(T, a, b) the (associative, commutative) combination, which also
 * merges partial results.
 */
#define ISNAN_0(v) 0
#define ISNAN_1(v) ((v) != (v))
#define ISNAN(T, v) RD_CAT(ISNAN_, ISF_##T)(v)

#define SACC_0 int64_t
#define SACC_1 double
#define SACC(T) RD_CAT(SACC_, ISF_##T)

#define LO_b 0
#define LO_u8 0
#define LO_i8 INT8_MIN
#define LO_i16 INT16_MIN
#define LO_i32 INT32_MIN
#define LO_i64 INT64_MIN
#define LO_f16 (-INFINITY)
#define LO_bf16 (-INFINITY)
#define LO_f32 (-INFINITY)
#define LO_f64 (-INFINITY)
#define HI_b 1
#define HI_u8 UINT8_MAX
#define HI_i8 INT8_MAX
#define HI_i16 INT16_MAX
#define HI_i32 INT32_MAX
#define HI_i64 INT64_MAX
#define HI_f16 INFINITY
#define HI_bf16 INFINITY
#define HI_f32 INFINITY
#define HI_f64 INFINITY

#define ACC_sum(T) SACC(T)
#define ID_sum(T) 0
#define VAL_sum(T, x) ((SACC(T))LD_##T(x))
#define COMB_sum(T, a, b) ((a) + (b))

/* 1 where contiguous float32/float64 runs take cascade.h's sum (PyTorch's) instead of double
 * lanes */
#define CASCADE_sum 1
#define CASCADE_prod 0
#define CASCADE_amax 0
#define CASCADE_amin 0
#define CASCADE_all 0
#define CASCADE_any 0
#define HAS_CASCADE(OP, T) (CASCADE_##OP && (EMC_##T == EM_F32 || EMC_##T == EM_F64))

/* The cascade's sum of n contiguous elements of dtype d (float32 or float64) at x. */
static double cascade_run(int d, const char *x, int64_t n) {
    if (d == EM_F32) return cascade_sum_f32((const float *)x, n);
    return cascade_sum_f64((const double *)x, n);
}

#define ACC_prod(T) SACC(T)
#define ID_prod(T) 1
#define VAL_prod(T, x) ((SACC(T))LD_##T(x))
#define COMB_prod(T, a, b) ((a) * (b))

/* amax/amin propagate NaN: a NaN b always wins, a NaN a is never replaced. */
#define ACC_amax(T) CT_##T
#define ID_amax(T) LO_##T
#define VAL_amax(T, x) LD_##T(x)
#define COMB_amax(T, a, b) ((((b) > (a)) | ISNAN(T, b)) ? (b) : (a))

#define ACC_amin(T) CT_##T
#define ID_amin(T) HI_##T
#define VAL_amin(T, x) LD_##T(x)
#define COMB_amin(T, a, b) ((((b) < (a)) | ISNAN(T, b)) ? (b) : (a))

#define ACC_all(T) uint8_t
#define ID_all(T) 1
#define VAL_all(T, x) (LD_##T(x) != 0)
#define COMB_all(T, a, b) ((a) & (b))

#define ACC_any(T) uint8_t
#define ID_any(T) 0
#define VAL_any(T, x) (LD_##T(x) != 0)
#define COMB_any(T, a, b) ((a) | (b))

/* max/min/argmax/argmin: does v replace the running extreme b? Strict, so the first occurrence
 * wins; the first NaN wins and stays. */
#define BETTER_amax(T, v, b) (((v) > (b)) | (ISNAN(T, v) & !ISNAN(T, b)))
#define BETTER_amin(T, v, b) (((v) < (b)) | (ISNAN(T, v) & !ISNAN(T, b)))

/* X(name, reduce op) for scans; X(name, extreme op, outputs before indices, dtype family). */
#define REDUCE_OPS(X) X(sum) X(prod) X(amax) X(amin) X(all) X(any)
#define SCAN_OPS(X) X(cumsum, sum) X(cumprod, prod)
#define INDEX_OPS(X)                                                                              \
    X(max, amax, 1, ALL) X(min, amin, 1, ALL) X(argmax, amax, 0, NUM) X(argmin, amin, 0, NUM)

/* ---- tuning (work splits depend on these and on shapes only) --------------------------------- */
#define LANES 16             /* running partials per contiguous run: independent chains
                              * that hide the add or compare-select latency */
#define PW_BLOCK 1024        /* elements per block; blocks then combine pairwise */
#define BW_OUTER 4096        /* outputs per block when rows are accumulated (whole rows stream
                              * from memory much faster than pieces of rows) */
#define BW_INNER 64          /* outputs per block when each output folds its own run */
#define MIN_BLOCKS 16        /* below this many blocks, the reduced elements are split too */
#define PIECE 65536          /* reduced elements per piece when splitting */
#define PARTIAL_BUDGET 65536 /* most partial accumulators held at once */
#define LINE_BW 1024         /* lines processed together by a scan or max/min loop */
#define GRAIN 32768          /* elements of work per dynamically scheduled grain of tasks */

static int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }
static int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }
static int64_t abs64(int64_t a) { return a < 0 ? -a : a; }

/* ---- reduction loops ----------------------------------------------------------------------------
 * init(acc, n): n identities. merge(dst, src, n): dst[j] = comb(dst[j], src[j]).
 * fold(acc, n, x, sx): *acc = comb(*acc, the n elements at x (byte stride sx)).
 * accum(acc, n, x, sx, m, rs): acc[j] = comb(acc[j], x[i][j]) over m rows (byte stride rs) of n
 *     elements (byte stride sx); rows go four at a time through registers, which quarters the
 *     accumulator traffic (a sum over dim 0 then runs at numpy's float speed, in double).
 * store(out, os, oc, acc, n): the accumulators into out (byte stride os) in dtype oc.
 * cascade_item: the element size where fold sums contiguous runs by cascade.h (whose bits depend
 *     on where a run starts and ends, so runs must reach it whole), else 0.
 */
typedef struct {
    int acc_size, cascade_item;
    void (*init)(char *acc, int64_t n);
    void (*merge)(char *dst, const char *src, int64_t n);
    void (*fold)(char *acc, int64_t n, const char *x, int64_t sx);
    void (*accum)(char *acc, int64_t n, const char *x, int64_t sx, int64_t m, int64_t rs);
    void (*store)(char *out, int64_t os, int oc, const char *acc, int64_t n);
} reducer;

#define AT_CONTIG(i) p_[i]
#define AT_STRIDED(i) (*(const st *)(x + (i) * sx))

/* `out` = the m elements from s read by ACCESS(i) (m <= PW_BLOCK), combined over LANES running
 * partials: independent chains the compiler vectorises. */
#define RD_BLOCK(T, OP, at, out, s, m, ACCESS)                                                    \
    do {                                                                                          \
        const int64_t start_ = (s), len_ = (m);                                                   \
        at lane_[LANES];                                                                          \
        for (int k_ = 0; k_ < LANES; k_++) lane_[k_] = ID_##OP(T);                                \
        int64_t i_ = 0;                                                                           \
        for (; i_ + LANES <= len_; i_ += LANES) {                                                 \
            /* Kept as a loop, it vectorises as an elementwise update of lane_; unrolled, GCC      \
             * cannot vectorise a chain of compare-selects (amax) and spills (sum). */            \
            _Pragma("GCC unroll 1")                                                              \
            for (int k_ = 0; k_ < LANES; k_++)                                                    \
                lane_[k_] = COMB_##OP(T, lane_[k_], VAL_##OP(T, ACCESS(start_ + i_ + k_)));       \
        }                                                                                         \
        for (; i_ < len_; i_++)                                                                   \
            lane_[0] = COMB_##OP(T, lane_[0], VAL_##OP(T, ACCESS(start_ + i_)));                  \
        for (int w_ = LANES / 2; w_ > 0; w_ /= 2)                                                 \
            for (int k_ = 0; k_ < w_; k_++) lane_[k_] = COMB_##OP(T, lane_[k_], lane_[k_ + w_]);  \
        out = lane_[0];                                                                           \
    } while (0)

/* `out` = the n elements read by ACCESS(i) combined: blocks of PW_BLOCK elements (RD_BLOCK),
 * combined pairwise by a binary counter over the block index (numpy's scheme). */
#define RD_PAIRWISE(T, OP, at, out, n, ACCESS)                                                    \
    do {                                                                                          \
        at stack_[64];                                                                            \
        int top_ = 0;                                                                             \
        for (int64_t s_ = 0, b_ = 0; s_ < (n); s_ += PW_BLOCK, b_++) {                            \
            at v_;                                                                                \
            RD_BLOCK(T, OP, at, v_, s_, min64(PW_BLOCK, (n) - s_), ACCESS);                       \
            for (int64_t c_ = b_; c_ & 1; c_ >>= 1, top_--) /* COMB reads its arguments twice */ \
                v_ = COMB_##OP(T, stack_[top_ - 1], v_);                                          \
            stack_[top_++] = v_;                                                                  \
        }                                                                                         \
        out = stack_[--top_];                                                                     \
        for (; top_ > 0; top_--) out = COMB_##OP(T, stack_[top_ - 1], out);                       \
    } while (0)

#define STORE_AS(D)                                                                               \
    for (int64_t j = 0; j < n; j++) *(ST_##D *)(out + j * os) = SV_##D(a[j])

#define REDUCER(T, OP)                                                                            \
    typedef ACC_##OP(T) acc_##OP##_##T;                                                           \
    static void init_##OP##_##T(char *acc, int64_t n) {                                           \
        acc_##OP##_##T *a = (acc_##OP##_##T *)acc;                                                \
        for (int64_t j = 0; j < n; j++) a[j] = ID_##OP(T);                                        \
    }                                                                                             \
    static void merge_##OP##_##T(char *dst, const char *src, int64_t n) {                         \
        acc_##OP##_##T *a = (acc_##OP##_##T *)dst;                                                \
        const acc_##OP##_##T *b = (const acc_##OP##_##T *)src;                                    \
        for (int64_t j = 0; j < n; j++) a[j] = COMB_##OP(T, a[j], b[j]);                          \
    }                                                                                             \
    static EM_CLONES void fold_##OP##_##T(char *acc, int64_t n, const char *x, int64_t sx) {     \
        typedef acc_##OP##_##T at;                                                                \
        typedef ST_##T st;                                                                        \
        at total = *(at *)acc, part;                                                              \
        if (HAS_CASCADE(OP, T) && sx == (int64_t)sizeof(st)) {                                    \
            total = COMB_##OP(T, total, (at)cascade_run(EMC_##T, x, n));                          \
        } else if (n < LANES) {                                                                   \
            for (int64_t i = 0; i < n; i++)                                                       \
                total = COMB_##OP(T, total, VAL_##OP(T, AT_STRIDED(i)));                          \
        } else if (sx == (int64_t)sizeof(st)) {                                                   \
            const st *p_ = (const st *)x;                                                         \
            RD_PAIRWISE(T, OP, at, part, n, AT_CONTIG);                                           \
            total = COMB_##OP(T, total, part);                                                    \
        } else {                                                                                  \
            RD_PAIRWISE(T, OP, at, part, n, AT_STRIDED);                                          \
            total = COMB_##OP(T, total, part);                                                    \
        }                                                                                         \
        *(at *)acc = total;                                                                       \
    }                                                                                             \
    static EM_CLONES void accum_##OP##_##T(char *acc, int64_t n, const char *x, int64_t sx,       \
                                           int64_t m, int64_t rs) {                               \
        typedef ST_##T st;                                                                        \
        typedef acc_##OP##_##T at;                                                                \
        at *a = (at *)acc;                                                                        \
        int64_t i = 0;                                                                            \
        if (sx == (int64_t)sizeof(st)) {                                                          \
            for (; i + 4 <= m; i += 4) {                                                          \
                const st *p0 = (const st *)(x + i * rs), *p1 = (const st *)(x + (i + 1) * rs);    \
                const st *p2 = (const st *)(x + (i + 2) * rs);                                    \
                const st *p3 = (const st *)(x + (i + 3) * rs);                                    \
                for (int64_t j = 0; j < n; j++) { /* a chain: GCC vectorises it, not a tree */  \
                    at v = COMB_##OP(T, a[j], VAL_##OP(T, p0[j]));                                \
                    v = COMB_##OP(T, v, VAL_##OP(T, p1[j]));                                      \
                    v = COMB_##OP(T, v, VAL_##OP(T, p2[j]));                                      \
                    a[j] = COMB_##OP(T, v, VAL_##OP(T, p3[j]));                                   \
                }                                                                                 \
            }                                                                                     \
            for (; i < m; i++) {                                                                  \
                const st *p = (const st *)(x + i * rs);                                           \
                for (int64_t j = 0; j < n; j++) a[j] = COMB_##OP(T, a[j], VAL_##OP(T, p[j]));     \
            }                                                                                     \
        } else {                                                                                  \
            for (; i < m; i++) {                                                                  \
                const char *row = x + i * rs;                                                     \
                for (int64_t j = 0; j < n; j++)                                                   \
                    a[j] = COMB_##OP(T, a[j], VAL_##OP(T, *(const st *)(row + j * sx)));          \
            }                                                                                     \
        }                                                                                         \
    }                                                                                             \
    static void store_##OP##_##T(char *out, int64_t os, int oc, const char *acc, int64_t n) {    \
        const acc_##OP##_##T *a = (const acc_##OP##_##T *)acc;                                    \
        if (oc == EMC_##T) {                                                                      \
            STORE_AS(T);                                                                          \
        } else if (oc == EM_I64) {                                                                \
            STORE_AS(i64);                                                                        \
        } else {                                                                                  \
            STORE_AS(b);                                                                          \
        }                                                                                         \
    }
#define REDUCERS_FOR(OP) EM_FOR_ALL(REDUCER, OP)
REDUCE_OPS(REDUCERS_FOR)

#define RED_CODE(OP) RED_##OP,
enum { REDUCE_OPS(RED_CODE) RED_COUNT };
#define RED_ENTRY(T, OP)                                                                          \
    [EMC_##T] = {sizeof(acc_##OP##_##T), HAS_CASCADE(OP, T) ? (int)sizeof(ST_##T) : 0,           \
                 init_##OP##_##T, merge_##OP##_##T, fold_##OP##_##T, accum_##OP##_##T,             \
                 store_##OP##_##T},
#define RED_ROW(OP) [RED_##OP] = {EM_FOR_ALL(RED_ENTRY, OP)},
static const reducer REDUCERS[RED_COUNT][EM_NDTYPES] = {REDUCE_OPS(RED_ROW)};

/* ---- line loops: f(n, B, ptrs, sd, sv) handles B lines of n elements along the dim; operand k
 * starts at ptrs[k], steps sd[k] bytes along the dim and sv[k] bytes from one line to the next. */
typedef void (*line_fn)(int64_t n, int64_t B, char **ptrs, const int64_t *sd, const int64_t *sv);

/* at = the index of the first extreme (OP: amax or amin; NaN counts as the extreme) of the n
 * elements read by ACCESS(i), in two vectorised passes: each block's extreme (remembering the
 * first block that holds the overall one), then that block's elements, tested 64 at a time
 * without branches. */
#define EXTREME_AT(T, OP, at, n, ACCESS)                                                          \
    do {                                                                                          \
        ct best_ = ID_##OP(T), v_;                                                                \
        int64_t from_ = 0;                                                                        \
        for (int64_t s_ = 0; s_ < (n); s_ += PW_BLOCK) {                                          \
            RD_BLOCK(T, OP, ct, v_, s_, min64(PW_BLOCK, (n) - s_), ACCESS);                       \
            if (BETTER_##OP(T, v_, best_)) {                                                      \
                best_ = v_;                                                                       \
                from_ = s_;                                                                       \
            }                                                                                     \
        }                                                                                         \
        const int nan_ = ISNAN(T, best_);                                                         \
        at = from_;                                                                               \
        for (int64_t s_ = from_; s_ < (n); s_ += 64) {                                            \
            int64_t e_ = min64(s_ + 64, (n)), i_ = s_;                                            \
            int hit_ = 0;                                                                         \
            for (; i_ < e_; i_++) {                                                               \
                ct u_ = LD_##T(ACCESS(i_));                                                       \
                hit_ |= (u_ == best_) | (nan_ & ISNAN(T, u_));                                    \
            }                                                                                     \
            if (!hit_) continue;                                                                  \
            for (i_ = s_; i_ < e_; i_++) {                                                        \
                ct u_ = LD_##T(ACCESS(i_));                                                       \
                if ((u_ == best_) | (nan_ & ISNAN(T, u_))) break;                                 \
            }                                                                                     \
            at = i_;                                                                              \
            break;                                                                                \
        }                                                                                         \
    } while (0)

/* Row i of B lines (byte stride XS, a constant on the contiguous path so that it vectorises)
 * into their running extremes best[] and indices at[]. */
#define EXTREME_ROW(T, OP, ROW, XS)                                                               \
    for (int64_t j = 0; j < B; j++) {                                                             \
        ct v = LD_##T(*(const st *)((ROW) + j * (XS)));                                           \
        int better = BETTER_##OP(T, v, best[j]);                                                  \
        best[j] = better ? v : best[j];                                                           \
        at[j] = better ? i : at[j];                                                               \
    }

/* ptrs: [values,] indices, x. NV is 1 with values (max/min), 0 without (argmax/argmin). */
#define INDEX_LINE(T, NAME, OP, NV)                                                               \
    static EM_CLONES void line_##NAME##_##T(int64_t n, int64_t B, char **ptrs, const int64_t *sd, \
                                            const int64_t *sv) {                                  \
        typedef CT_##T ct;                                                                        \
        typedef ST_##T st;                                                                        \
        const char *x = ptrs[NV + 1];                                                             \
        const int64_t sx = sd[NV + 1], xv = sv[NV + 1];                                           \
        if (B == 1) {                                                                             \
            int64_t at;                                                                           \
            if (sx == (int64_t)sizeof(st)) {                                                      \
                const st *p_ = (const st *)x;                                                     \
                EXTREME_AT(T, OP, at, n, AT_CONTIG);                                              \
            } else {                                                                              \
                EXTREME_AT(T, OP, at, n, AT_STRIDED);                                             \
            }                                                                                     \
            if (NV) *(st *)ptrs[0] = AT_STRIDED(at);                                              \
            *(int64_t *)ptrs[NV] = at;                                                            \
            return;                                                                               \
        }                                                                                         \
        ct best[LINE_BW];                                                                         \
        int64_t at[LINE_BW];                                                                      \
        for (int64_t j = 0; j < B; j++) {                                                         \
            best[j] = LD_##T(*(const st *)(x + j * xv));                                          \
            at[j] = 0;                                                                            \
        }                                                                                         \
        for (int64_t i = 1; i < n; i++) {                                                         \
            if (xv == (int64_t)sizeof(st)) {                                                      \
                EXTREME_ROW(T, OP, x + i * sx, (int64_t)sizeof(st));                              \
            } else {                                                                              \
                EXTREME_ROW(T, OP, x + i * sx, xv);                                               \
            }                                                                                     \
        }                                                                                         \
        for (int64_t j = 0; j < B; j++) {                                                         \
            if (NV) *(st *)(ptrs[0] + j * sv[0]) = SV_##T(best[j]);                               \
            *(int64_t *)(ptrs[NV] + j * sv[NV]) = at[j];                                          \
        }                                                                                         \
    }
#define INDEX_LINES_FOR(NAME, OP, NV, FAM) EM_FOR_##FAM(INDEX_LINE, NAME, OP, NV)
INDEX_OPS(INDEX_LINES_FOR)

/* Row i of B lines into their running values a[] and out (byte strides OS, XS: constants on the
 * contiguous path so that it vectorises). */
#define SCAN_ROW(T, OP, OUT, X, OS, XS)                                                           \
    for (int64_t j = 0; j < B; j++) {                                                             \
        a[j] = COMB_##OP(T, a[j], VAL_##OP(T, *(const st *)((X) + j * (XS))));                    \
        *(st *)((OUT) + j * (OS)) = SV_##T(a[j]);                                                 \
    }

/* ptrs: out, x. The running value is the reduce op's accumulator (int64 or double). */
#define SCAN_LINE(T, NAME, OP)                                                                    \
    static EM_CLONES void line_##NAME##_##T(int64_t n, int64_t B, char **ptrs, const int64_t *sd, \
                                            const int64_t *sv) {                                  \
        typedef ACC_##OP(T) at;                                                                   \
        typedef ST_##T st;                                                                        \
        char *o = ptrs[0];                                                                        \
        const char *x = ptrs[1];                                                                  \
        if (B == 1) {                                                                             \
            at a = ID_##OP(T);                                                                    \
            for (int64_t i = 0; i < n; i++) {                                                     \
                a = COMB_##OP(T, a, VAL_##OP(T, *(const st *)(x + i * sd[1])));                   \
                *(st *)(o + i * sd[0]) = SV_##T(a);                                               \
            }                                                                                     \
            return;                                                                               \
        }                                                                                         \
        at a[LINE_BW];                                                                            \
        for (int64_t j = 0; j < B; j++) a[j] = ID_##OP(T);                                        \
        const int64_t one = sizeof(st);                                                           \
        const int contig = sv[0] == one && sv[1] == one;                                          \
        for (int64_t i = 0; i < n; i++) {                                                         \
            if (contig) {                                                                         \
                SCAN_ROW(T, OP, o + i * sd[0], x + i * sd[1], one, one);                          \
            } else {                                                                              \
                SCAN_ROW(T, OP, o + i * sd[0], x + i * sd[1], sv[0], sv[1]);                      \
            }                                                                                     \
        }                                                                                         \
    }
#define SCAN_LINES_FOR(NAME, OP) EM_FOR_NUM(SCAN_LINE, NAME, OP)
SCAN_OPS(SCAN_LINES_FOR)

#define LINE_CODE(NAME, ...) LN_##NAME,
enum { INDEX_OPS(LINE_CODE) INDEX_COUNT };
enum { SCAN_OPS(LINE_CODE) SCAN_COUNT };
#define LINE_ENTRY(T, NAME) [EMC_##T] = line_##NAME##_##T,
#define INDEX_ROW(NAME, OP, NV, FAM) [LN_##NAME] = {EM_FOR_##FAM(LINE_ENTRY, NAME)},
#define SCAN_ROW(NAME, OP) [LN_##NAME] = {EM_FOR_NUM(LINE_ENTRY, NAME)},
static const line_fn INDEX_LINES[INDEX_COUNT][EM_NDTYPES] = {INDEX_OPS(INDEX_ROW)};
static const line_fn SCAN_LINES[SCAN_COUNT][EM_NDTYPES] = {SCAN_OPS(SCAN_ROW)};
#define INDEX_NV(NAME, OP, NV, FAM) [LN_##NAME] = NV,
static const int INDEX_VALUES[INDEX_COUNT] = {INDEX_OPS(INDEX_NV)};

/* ---- walking the blocks ---------------------------------------------------------------------- */
#define WALK_OPS 3

/* A multi-index over `nd` dims with a pointer per operand, moved by seek (any position) and
 * next (one step, carrying). */
typedef struct {
    int nd, nops;
    int64_t shape[EM_MAX_DIMS];
    int64_t st[WALK_OPS][EM_MAX_DIMS];
    int64_t idx[EM_MAX_DIMS];
    char *base[WALK_OPS];
    char *ptr[WALK_OPS];
} walker;

static void walk_add(walker *w, int64_t size, const int64_t *strides) {
    for (int k = 0; k < w->nops; k++) w->st[k][w->nd] = strides[k];
    w->shape[w->nd++] = size;
}

static int64_t walk_size(const walker *w) {
    int64_t n = 1;
    for (int d = 0; d < w->nd; d++) n *= w->shape[d];
    return n;
}

static void walk_seek(walker *w, int64_t lin) {
    for (int k = 0; k < w->nops; k++) w->ptr[k] = w->base[k];
    for (int d = w->nd - 1; d >= 0; d--) {
        w->idx[d] = lin % w->shape[d];
        lin /= w->shape[d];
        for (int k = 0; k < w->nops; k++) w->ptr[k] += w->idx[d] * w->st[k][d];
    }
}

static void walk_next(walker *w) {
    for (int d = w->nd - 1; d >= 0; d--) {
        for (int k = 0; k < w->nops; k++) w->ptr[k] += w->st[k][d];
        if (++w->idx[d] < w->shape[d]) return;
        for (int k = 0; k < w->nops; k++) w->ptr[k] -= w->st[k][d] * w->shape[d];
        w->idx[d] = 0;
    }
}

/* Tasks per grain: threads take grains of consecutive tasks dynamically, so that a thread the
 * OS has descheduled (a loaded machine) does not hold the others up at the barrier. */
static int64_t grain_tasks(int64_t work_per_task) {
    return work_per_task >= GRAIN ? 1 : GRAIN / (work_per_task > 0 ? work_per_task : 1);
}

/* ---- the reduction driver -------------------------------------------------------------------- */
typedef struct {
    const reducer *r;
    int oc;                    /* output dtype code */
    int rows;                  /* 1: accumulate rows of x into a block; 0: fold each output's run */
    walker blocks;             /* kept dims, then the vector dim's chunks; operands out, x */
    int64_t nblocks;
    int64_t vlen, chunk;       /* vector dim length and outputs per block */
    int64_t vst[2];            /* vector dim byte strides of out and x */
    int chunk_dim;             /* the chunk index in `blocks`, -1 when there is one chunk */
    int nr;                    /* reduced dims outside the run, outermost first */
    int64_t rshape[EM_MAX_DIMS], rst[EM_MAX_DIMS];
    int64_t rlen, rstride;     /* the innermost reduced run */
    int64_t rtotal;            /* reduced elements per output */
    int64_t ppo, piece;        /* pieces per block and reduced elements per piece */
    int whole;                 /* runs reach fold whole (cascade.h): pieces are whole runs, and a
                                * lone run threads itself */
} plan;

/* Reduced dims (strides already made positive: the order of a reduction does not matter):
 * sorted outermost first, neighbours merged. Returns the count; 0 when nothing is reduced. */
static int normalise_reduced(int nr, int64_t *shape, int64_t *st) {
    for (int i = 1; i < nr; i++) {
        for (int j = i; j > 0 && st[j] > st[j - 1]; j--) {
            int64_t s = st[j], n = shape[j];
            st[j] = st[j - 1];
            shape[j] = shape[j - 1];
            st[j - 1] = s;
            shape[j - 1] = n;
        }
    }
    int out = 0;
    for (int i = 1; i < nr; i++) {
        if (st[out] == st[i] * shape[i]) {
            shape[out] *= shape[i];
            st[out] = st[i];
        } else {
            out++;
            shape[out] = shape[i];
            st[out] = st[i];
        }
    }
    return nr ? out + 1 : 0;
}

/* Fill `pl` for x (shape, byte strides xs, base *xb) reduced over the `reduced` dims into out
 * (byte strides os, base *ob). Returns 0 when the output is empty. */
static int reduce_plan(plan *pl, int ndim, const int64_t *shape, char **ob, const int64_t *os,
                       char **xb, const int64_t *xs, uint64_t reduced) {
    int nk = 0, nr = 0, empty = 0;
    int64_t kshape[EM_MAX_DIMS], kst[EM_MAX_DIMS][2];
    for (int d = 0; d < ndim; d++) {
        int64_t n = shape[d], s = xs[d];
        if ((reduced >> d) & 1) {
            empty |= n == 0;
            if (n <= 1) continue;
            if (s < 0) {
                *xb += (n - 1) * s;
                s = -s;
            }
            pl->rshape[nr] = n;
            pl->rst[nr++] = s;
        } else {
            if (n == 0) return 0;
            if (n == 1) continue;
            kshape[nk] = n;
            kst[nk][0] = os[d];
            kst[nk++][1] = s;
        }
    }
    nr = normalise_reduced(nr, pl->rshape, pl->rst);
    pl->rtotal = 1;
    for (int d = 0; d < nr; d++) pl->rtotal *= pl->rshape[d];
    if (empty) pl->rtotal = 0;
    pl->rlen = nr ? pl->rshape[nr - 1] : 1;
    pl->rstride = nr ? pl->rst[nr - 1] : 0;
    pl->nr = nr ? nr - 1 : 0;

    /* The vector dim: the kept dim x moves along fastest. */
    int v = -1;
    for (int d = 0; d < nk; d++)
        if (v < 0 || abs64(kst[d][1]) <= abs64(kst[v][1])) v = d;
    pl->rows = v >= 0 && (nr == 0 || abs64(kst[v][1]) < pl->rstride);
    pl->vlen = 1;
    pl->vst[0] = pl->vst[1] = 0;
    if (v >= 0) {
        pl->vlen = kshape[v];
        pl->vst[0] = kst[v][0];
        pl->vst[1] = kst[v][1];
        if (pl->rows && pl->vst[1] < 0) { /* walk x forwards so that rows load contiguously */
            *xb += (pl->vlen - 1) * pl->vst[1];
            *ob += (pl->vlen - 1) * pl->vst[0];
            pl->vst[0] = -pl->vst[0];
            pl->vst[1] = -pl->vst[1];
        }
    }
    pl->whole = !pl->rows && pl->r->cascade_item && pl->rstride == pl->r->cascade_item;
    int64_t width = pl->rows ? BW_OUTER : BW_INNER;
    if (pl->whole) /* about PIECE elements per block, so that long runs spread over threads */
        width = min64(BW_INNER, pl->rtotal < PIECE ? PIECE / (pl->rtotal ? pl->rtotal : 1) : 1);
    int64_t nchunks = ceil_div(pl->vlen, width);
    pl->chunk = ceil_div(pl->vlen, nchunks);

    walker *w = &pl->blocks;
    w->nd = 0;
    w->nops = 2;
    w->base[0] = *ob;
    w->base[1] = *xb;
    for (int d = 0; d < nk; d++)
        if (d != v) walk_add(w, kshape[d], kst[d]);
    pl->chunk_dim = -1;
    if (nchunks > 1) {
        int64_t step[2] = {pl->chunk * pl->vst[0], pl->chunk * pl->vst[1]};
        pl->chunk_dim = w->nd;
        walk_add(w, nchunks, step);
    }
    pl->nblocks = walk_size(w);

    /* Few blocks: split each block's reduced elements into pieces (so that threads share a
     * full reduction), combined afterwards in a fixed tree. */
    pl->ppo = 1;
    if (pl->nblocks < MIN_BLOCKS && pl->rtotal > 0) {
        int64_t want = ceil_div(pl->chunk * pl->rtotal, PIECE);
        int64_t cap = PARTIAL_BUDGET / (pl->nblocks * pl->chunk);
        pl->ppo = min64(min64(want, cap > 1 ? cap : 1), pl->rtotal);
    }
    pl->piece = pl->rtotal ? ceil_div(pl->rtotal, pl->ppo) : 1;
    if (pl->whole) /* rtotal is a multiple of rlen: pieces start at runs */
        pl->piece = ceil_div(pl->piece, pl->rlen) * pl->rlen;
    pl->ppo = pl->rtotal ? ceil_div(pl->rtotal, pl->piece) : 1;
    return 1;
}

/* acc (B accumulators) = the block's outputs over reduced elements [p * piece, (p + 1) * piece). */
static void reduce_piece(const plan *pl, char *acc, int64_t B, const char *x, int64_t p) {
    const reducer *r = pl->r;
    r->init(acc, B);
    int64_t a = p * pl->piece, e = min64(a + pl->piece, pl->rtotal);
    if (a >= e) return;
    int64_t row = a / pl->rlen, col = a % pl->rlen, off = 0, idx[EM_MAX_DIMS];
    for (int d = pl->nr - 1; d >= 0; d--) {
        idx[d] = row % pl->rshape[d];
        row /= pl->rshape[d];
        off += idx[d] * pl->rst[d];
    }
    while (a < e) {
        int64_t m = min64(pl->rlen - col, e - a);
        const char *px = x + off + col * pl->rstride;
        if (pl->rows) {
            r->accum(acc, B, px, pl->vst[1], m, pl->rstride);
        } else {
            for (int64_t j = 0; j < B; j++)
                r->fold(acc + j * r->acc_size, m, px + j * pl->vst[1], pl->rstride);
        }
        a += m;
        col = 0;
        for (int d = pl->nr - 1; d >= 0; d--) {
            off += pl->rst[d];
            if (++idx[d] < pl->rshape[d]) break;
            off -= pl->rst[d] * pl->rshape[d];
            idx[d] = 0;
        }
    }
}

static int64_t block_width(const plan *pl, const walker *w) {
    int64_t c = pl->chunk_dim >= 0 ? w->idx[pl->chunk_dim] : 0;
    return min64(pl->chunk, pl->vlen - c * pl->chunk);
}

static void run_reduce(const plan *pl) {
    const reducer *r = pl->r;
    const int64_t asz = r->acc_size, ppo = pl->ppo, tasks = pl->nblocks * ppo;
    char *partials = ppo > 1 ? malloc(tasks * pl->chunk * asz) : NULL;
    if (ppo > 1 && !partials) { /* out of memory: one piece per block, same result but rounding */
        plan whole = *pl;
        whole.ppo = 1;
        whole.piece = pl->rtotal;
        run_reduce(&whole);
        return;
    }
    const int64_t per = grain_tasks(pl->chunk * pl->piece), grains = ceil_div(tasks, per);
    const int64_t work = pl->nblocks * pl->chunk * pl->rtotal;
    /* Few long whole runs: one at a time, each cascade spread over the threads. */
    const int runs_thread = pl->whole && ppo == 1 && pl->nblocks < MIN_BLOCKS;
    const int parallel = grains > 1 && work >= EM_PARALLEL_THRESHOLD && !runs_thread;
#pragma omp parallel for schedule(dynamic) if (parallel)
    for (int64_t g = 0; g < grains; g++) {
        const int64_t lo = g * per, hi = min64(lo + per, tasks);
        walker w = pl->blocks;
        double buffer[BW_OUTER]; /* accumulators are at most 8 bytes */
        walk_seek(&w, lo / ppo);
        for (int64_t t = lo; t < hi; t++) {
            if (t > lo && t % ppo == 0) walk_next(&w);
            int64_t B = block_width(pl, &w);
            char *acc = partials ? partials + t * pl->chunk * asz : (char *)buffer;
            reduce_piece(pl, acc, B, w.ptr[1], t % ppo);
            if (!partials) r->store(w.ptr[0], pl->vst[0], pl->oc, acc, B);
        }
    }
    if (!partials) return;
    walker w = pl->blocks;
    walk_seek(&w, 0);
    for (int64_t b = 0; b < pl->nblocks; b++, walk_next(&w)) {
        int64_t B = block_width(pl, &w);
        char *first = partials + b * ppo * pl->chunk * asz;
        for (int64_t step = 1; step < ppo; step *= 2)
            for (int64_t p = 0; p + step < ppo; p += 2 * step)
                r->merge(first + p * pl->chunk * asz, first + (p + step) * pl->chunk * asz, B);
        r->store(w.ptr[0], pl->vst[0], pl->oc, first, B);
    }
    free(partials);
}

/* ---- the line driver ------------------------------------------------------------------------- */
/* Run f over every line along dim d. bst: nops rows of byte strides; x is the last operand. */
static int run_lines(line_fn f, int nops, int ndim, const int64_t *shape, char **base,
                     int64_t bst[][EM_MAX_DIMS], int d) {
    int64_t sd[WALK_OPS] = {0}, sv[WALK_OPS] = {0};
    if (ndim == 0) {
        f(1, 1, base, sd, sv);
        return EM_OK;
    }
    for (int e = 0; e < ndim; e++)
        if (shape[e] == 0) return EM_OK;
    const int xi = nops - 1;
    const int64_t n = shape[d];
    for (int k = 0; k < nops; k++) sd[k] = bst[k][d];
    /* Lines go together along the other dim x moves along fastest, unless that is d itself. */
    int v = -1;
    for (int e = 0; e < ndim; e++)
        if (e != d && shape[e] > 1 && (v < 0 || abs64(bst[xi][e]) <= abs64(bst[xi][v]))) v = e;
    if (v >= 0 && n > 1 && abs64(sd[xi]) < abs64(bst[xi][v])) v = -1;

    walker w;
    w.nd = 0;
    w.nops = nops;
    int64_t col[WALK_OPS];
    for (int k = 0; k < nops; k++) w.base[k] = base[k];
    for (int e = 0; e < ndim; e++) {
        if (e == d || e == v || shape[e] == 1) continue;
        for (int k = 0; k < nops; k++) col[k] = bst[k][e];
        walk_add(&w, shape[e], col);
    }
    int64_t vlen = 1, chunk = 1, nchunks = 1;
    if (v >= 0) {
        vlen = shape[v];
        for (int k = 0; k < nops; k++) sv[k] = bst[k][v];
        nchunks = ceil_div(vlen, LINE_BW);
        chunk = ceil_div(vlen, nchunks);
        if (nchunks > 1) {
            for (int k = 0; k < nops; k++) col[k] = chunk * sv[k];
            walk_add(&w, nchunks, col);
        }
    }
    const int64_t tasks = walk_size(&w), per = grain_tasks(chunk * n);
    const int64_t grains = ceil_div(tasks, per);
    const int parallel = grains > 1 && tasks * chunk * n >= EM_PARALLEL_THRESHOLD;
#pragma omp parallel for schedule(dynamic) if (parallel)
    for (int64_t g = 0; g < grains; g++) {
        const int64_t lo = g * per, hi = min64(lo + per, tasks);
        walker mine = w;
        walk_seek(&mine, lo);
        for (int64_t t = lo; t < hi; t++) {
            if (t > lo) walk_next(&mine);
            int64_t c = nchunks > 1 ? mine.idx[mine.nd - 1] : 0;
            f(n, min64(chunk, vlen - c * chunk), mine.ptr, sd, sv);
        }
    }
    return EM_OK;
}

/* ---- entry points ---------------------------------------------------------------------------- */
static int valid_dtype(int d) { return d >= 0 && d < EM_NDTYPES; }

#define NAME_OF(NAME, ...) #NAME ","
const char *ember_reduce_names(int family) {
    switch (family) {
    case 0: return REDUCE_OPS(NAME_OF) "";
    case 1: return INDEX_OPS(NAME_OF) "";
    case 2: return SCAN_OPS(NAME_OF) "";
    default: return "";
    }
}

int ember_reduce_supports(int family, int op, int dtype) {
    if (!valid_dtype(dtype) || op < 0) return 0;
    switch (family) {
    case 0: return op < RED_COUNT && REDUCERS[op][dtype].fold != NULL;
    case 1: return op < INDEX_COUNT && INDEX_LINES[op][dtype] != NULL;
    case 2: return op < SCAN_COUNT && SCAN_LINES[op][dtype] != NULL;
    default: return 0;
    }
}

int ember_reduce(int op, int dtype, int ndim, const int64_t *shape, intptr_t out, int out_dtype,
                 const int64_t *so, intptr_t x, const int64_t *sx, uint64_t reduced) {
    if (op < 0 || op >= RED_COUNT || !valid_dtype(dtype) || ndim < 0 || ndim > EM_MAX_DIMS)
        return EM_BAD_ARGUMENT;
    if (out_dtype != dtype && out_dtype != EM_I64 && out_dtype != EM_BOOL) return EM_UNSUPPORTED;
    plan pl;
    pl.r = &REDUCERS[op][dtype];
    pl.oc = out_dtype;
    if (!pl.r->fold) return EM_UNSUPPORTED;
    int64_t os[EM_MAX_DIMS], xs[EM_MAX_DIMS];
    em_byte_strides(ndim, shape, so, em_itemsize(out_dtype), os);
    em_byte_strides(ndim, shape, sx, em_itemsize(dtype), xs);
    char *ob = (char *)out, *xb = (char *)x;
    if (reduce_plan(&pl, ndim, shape, &ob, os, &xb, xs, reduced)) run_reduce(&pl);
    return EM_OK;
}

int ember_reduce_index(int op, int dtype, int ndim, const int64_t *shape, intptr_t values,
                       intptr_t indices, const int64_t *so, intptr_t x, const int64_t *sx,
                       int dim) {
    if (op < 0 || op >= INDEX_COUNT || !valid_dtype(dtype) || ndim < 0 || ndim > EM_MAX_DIMS ||
        dim < 0 || (ndim > 0 && dim >= ndim))
        return EM_BAD_ARGUMENT;
    line_fn f = INDEX_LINES[op][dtype];
    if (!f) return EM_UNSUPPORTED;
    const int nv = INDEX_VALUES[op];
    int64_t bst[WALK_OPS][EM_MAX_DIMS];
    char *base[WALK_OPS] = {(char *)values, (char *)indices, (char *)x};
    if (!nv) {
        base[0] = base[1];
        base[1] = base[2];
    }
    if (nv) em_byte_strides(ndim, shape, so, em_itemsize(dtype), bst[0]);
    em_byte_strides(ndim, shape, so, 8, bst[nv]);
    em_byte_strides(ndim, shape, sx, em_itemsize(dtype), bst[nv + 1]);
    return run_lines(f, nv + 2, ndim, shape, base, bst, dim);
}

int ember_scan(int op, int dtype, int ndim, const int64_t *shape, intptr_t out,
               const int64_t *so, intptr_t x, const int64_t *sx, int dim) {
    if (op < 0 || op >= SCAN_COUNT || !valid_dtype(dtype) || ndim < 0 || ndim > EM_MAX_DIMS ||
        dim < 0 || (ndim > 0 && dim >= ndim))
        return EM_BAD_ARGUMENT;
    line_fn f = SCAN_LINES[op][dtype];
    if (!f) return EM_UNSUPPORTED;
    int64_t bst[WALK_OPS][EM_MAX_DIMS];
    char *base[WALK_OPS] = {(char *)out, (char *)x, NULL};
    em_byte_strides(ndim, shape, so, em_itemsize(dtype), bst[0]);
    em_byte_strides(ndim, shape, sx, em_itemsize(dtype), bst[1]);
    return run_lines(f, 2, ndim, shape, base, bst, dim);
}
