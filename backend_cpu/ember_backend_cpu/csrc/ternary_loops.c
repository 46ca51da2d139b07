/* The ternary elementwise loops, one per (ternary.def row, dtype), where's, and their table.
 * elementwise.c runs them. */
#include "elementwise_loops.h"

#define OP(name)
#define TERNARY_LOOP(T, NAME, OUTK, ...)                                                          \
    static EM_CLONES void t_##NAME##_##T(int64_t n, char **ptrs, const int64_t *s, em_params *p) { \
        typedef CT_##T ct;                                                                         \
        typedef ST_##T st;                                                                         \
        typedef OST_##OUTK(T) ot;                                                                  \
        (void)p;                                                                                   \
        const int64_t si = sizeof(st);                                                             \
        if (s[0] == (int64_t)sizeof(ot) && s[1] == si && s[2] == si && s[3] == si) {               \
            ot *o = (ot *)ptrs[0];                                                                 \
            const st *A = (const st *)ptrs[1], *B = (const st *)ptrs[2], *C = (const st *)ptrs[3]; \
            for (int64_t i = 0; i < n; i++) {                                                      \
                ct a = LD_##T(A[i]);                                                               \
                ct b = LD_##T(B[i]);                                                               \
                ct c = LD_##T(C[i]);                                                               \
                o[i] = OSV_##OUTK(T, (__VA_ARGS__));                                               \
            }                                                                                      \
        } else if (s[0] == (int64_t)sizeof(ot) && s[1] == si && s[2] == si && s[3] == 0) {         \
            /* a scalar third operand: lerp_(end, 0.1), addcmul_(t, scalar)... (optimizers) */     \
            ot *o = (ot *)ptrs[0];                                                                 \
            const st *A = (const st *)ptrs[1], *B = (const st *)ptrs[2];                           \
            const ct c = LD_##T(*(const st *)ptrs[3]);                                             \
            for (int64_t i = 0; i < n; i++) {                                                      \
                ct a = LD_##T(A[i]);                                                               \
                ct b = LD_##T(B[i]);                                                               \
                o[i] = OSV_##OUTK(T, (__VA_ARGS__));                                               \
            }                                                                                      \
        } else {                                                                                   \
            char *o = ptrs[0];                                                                     \
            const char *pa = ptrs[1], *pb = ptrs[2], *pc = ptrs[3];                                \
            for (int64_t i = 0; i < n; i++, o += s[0], pa += s[1], pb += s[2], pc += s[3]) {        \
                ct a = LD_##T(*(const st *)pa);                                                    \
                ct b = LD_##T(*(const st *)pb);                                                    \
                ct c = LD_##T(*(const st *)pc);                                                    \
                *(ot *)o = OSV_##OUTK(T, (__VA_ARGS__));                                           \
            }                                                                                      \
        }                                                                                          \
    }
#define LOOP(NAME, FAM, OUTK, ...) EM_FOR_##FAM(TERNARY_LOOP, NAME, OUTK, __VA_ARGS__)
#include "ternary.def"
#undef LOOP

/* where(cond, a, b): the condition is bool storage, a and b share the dtype. Both values are
 * loaded before the select so that it compiles to a blend, not a branch: a random mask made the
 * branchy loop mispredict half the time (relu's backward, where(x > 0, g, 0), ran 20x slower).
 * A scalar a or b (stride 0: where(mask, g, 0.0)) has its own loop so that it vectorises too. */
#define WHERE_LOOP(T, unused)                                                                     \
    static EM_CLONES void t_where_##T(int64_t n, char **ptrs, const int64_t *s, em_params *p) {    \
        typedef ST_##T st;                                                                         \
        (void)p;                                                                                   \
        const int64_t si = sizeof(st);                                                             \
        const uint8_t *cond = (const uint8_t *)ptrs[1];                                            \
        st *o = (st *)ptrs[0];                                                                     \
        if (s[0] == si && s[1] == 1 && (s[2] == si || s[2] == 0) && (s[3] == si || s[3] == 0)) {   \
            const st *A = (const st *)ptrs[2], *B = (const st *)ptrs[3];                           \
            if (s[2] && s[3])                                                                      \
                for (int64_t i = 0; i < n; i++) o[i] = cond[i] ? A[i] : B[i];                      \
            else if (s[2]) {                                                                       \
                const st b = *B;                                                                   \
                for (int64_t i = 0; i < n; i++) o[i] = cond[i] ? A[i] : b;                         \
            } else if (s[3]) {                                                                     \
                const st a = *A;                                                                   \
                for (int64_t i = 0; i < n; i++) o[i] = cond[i] ? a : B[i];                         \
            } else {                                                                               \
                const st a = *A, b = *B;                                                           \
                for (int64_t i = 0; i < n; i++) o[i] = cond[i] ? a : b;                            \
            }                                                                                      \
        } else {                                                                                   \
            const int64_t s0 = s[0], s1 = s[1], s2 = s[2], s3 = s[3];                              \
            char *po = ptrs[0];                                                                    \
            const char *pc = ptrs[1], *pa = ptrs[2], *pb = ptrs[3];                                \
            for (int64_t i = 0; i < n; i++, po += s0, pc += s1, pa += s2, pb += s3) {              \
                st pick[2] = {*(const st *)pb, *(const st *)pa}; /* indexed: no branch */          \
                *(st *)po = pick[*(const uint8_t *)pc != 0];                                       \
            }                                                                                      \
        }                                                                                          \
    }
EM_FOR_ALL(WHERE_LOOP, 0)

#define LOOP(NAME, FAM, OUTK, ...) EM_FOR_##FAM(ENTRY_T, NAME)
#define ENTRY_T(T, NAME) [OPT_##NAME][EMC_##T] = t_##NAME##_##T,
const em_loop EM_TERNARY_LOOPS[OPT_COUNT][EM_NDTYPES] = {
    EM_FOR_ALL(ENTRY_T, where)
#include "ternary.def"
};
#undef LOOP
#undef OP
