/* The unary elementwise loops, one per (unary.def row, dtype), and their table. Each has a
 * contiguous fast path that the compiler vectorises (with the AVX-512 clone: the loops call
 * vmath.h's functions) and a general strided path. elementwise.c runs them. */
#include "elementwise_loops.h"

/* ---- loops --------------------------------------------------------------------------------- */
#define UNARY_LOOP(T, NAME, OUTK, ...)                                                            \
    static EM_CLONES_WIDE void u_##NAME##_##T(int64_t n, char **ptrs, const int64_t *s,            \
                                              em_params *p) {                                      \
        typedef CT_##T ct;                                                                         \
        typedef ST_##T st;                                                                         \
        typedef OST_##OUTK(T) ot;                                                                  \
        (void)p;                                                                                   \
        if (s[0] == (int64_t)sizeof(ot) && s[1] == (int64_t)sizeof(st)) {                          \
            ot *o = (ot *)ptrs[0];                                                                 \
            const st *px = (const st *)ptrs[1];                                                    \
            for (int64_t i = 0; i < n; i++) {                                                      \
                ct x = LD_##T(px[i]);                                                              \
                o[i] = OSV_##OUTK(T, (__VA_ARGS__));                                               \
            }                                                                                      \
        } else {                                                                                   \
            char *o = ptrs[0];                                                                     \
            const char *px = ptrs[1];                                                              \
            for (int64_t i = 0; i < n; i++, o += s[0], px += s[1]) {                               \
                ct x = LD_##T(*(const st *)px);                                                    \
                *(ot *)o = OSV_##OUTK(T, (__VA_ARGS__));                                           \
            }                                                                                      \
        }                                                                                          \
    }
#define OP(name)
#define LOOP(NAME, FAM, OUTK, ...) EM_FOR_##FAM(UNARY_LOOP, NAME, OUTK, __VA_ARGS__)
#include "unary.def"
#undef LOOP

#define LOOP(NAME, FAM, OUTK, ...) EM_FOR_##FAM(ENTRY_U, NAME)
#define ENTRY_U(T, NAME) [OPU_##NAME][EMC_##T] = u_##NAME##_##T,
const em_loop EM_UNARY_LOOPS[OPU_COUNT][EM_NDTYPES] = {
#include "unary.def"
};
#undef LOOP

#define LOOP(NAME, FAM, OUTK, ...) [OPU_##NAME] = EMO_##OUTK,
const uint8_t EM_UNARY_BOOL_OUT[OPU_COUNT] = {
#include "unary.def"
};
#undef LOOP
#undef OP
