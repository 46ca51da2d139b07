/* The binary elementwise loops, one per (binary.def row, dtype), and their table. Each has a
 * contiguous fast path, paths for a scalar operand (stride 0) that the compiler vectorises in the
 * AVX2 clone, and a general strided path. elementwise.c runs them. */
#include "elementwise_loops.h"

#define OP(name)
#define BINARY_LOOP(T, NAME, OUTK, ...) BINARY_LOOP_AS(EM_CLONES, T, NAME, OUTK, __VA_ARGS__)
#define BINARY_LOOP_WIDE(T, NAME, OUTK, ...) BINARY_LOOP_AS(EM_CLONES_WIDE, T, NAME, OUTK, __VA_ARGS__)
#define BINARY_LOOP_AS(CLONES, T, NAME, OUTK, ...)                                                \
    static CLONES void b_##NAME##_##T(int64_t n, char **ptrs, const int64_t *s, em_params *p) {    \
        typedef CT_##T ct;                                                                         \
        typedef ST_##T st;                                                                         \
        typedef OST_##OUTK(T) ot;                                                                  \
        const int64_t so = sizeof(ot), si = sizeof(st);                                            \
        if (s[0] == so && s[1] == si && s[2] == si) {                                              \
            ot *o = (ot *)ptrs[0];                                                                 \
            const st *A = (const st *)ptrs[1], *B = (const st *)ptrs[2];                           \
            for (int64_t i = 0; i < n; i++) {                                                      \
                ct a = LD_##T(A[i]);                                                               \
                ct b = LD_##T(B[i]);                                                               \
                o[i] = OSV_##OUTK(T, (__VA_ARGS__));                                               \
            }                                                                                      \
        } else if (s[0] == so && s[1] == si && s[2] == 0) {                                        \
            ot *o = (ot *)ptrs[0];                                                                 \
            const st *A = (const st *)ptrs[1];                                                     \
            const ct b = p->i[3] ? (ct)p->f[3] : LD_##T(*(const st *)ptrs[2]);                     \
            for (int64_t i = 0; i < n; i++) {                                                      \
                ct a = LD_##T(A[i]);                                                               \
                o[i] = OSV_##OUTK(T, (__VA_ARGS__));                                               \
            }                                                                                      \
        } else if (s[0] == so && s[1] == 0 && s[2] == si) {                                        \
            ot *o = (ot *)ptrs[0];                                                                 \
            const ct a = LD_##T(*(const st *)ptrs[1]);                                             \
            const st *B = (const st *)ptrs[2];                                                     \
            for (int64_t i = 0; i < n; i++) {                                                      \
                ct b = LD_##T(B[i]);                                                               \
                o[i] = OSV_##OUTK(T, (__VA_ARGS__));                                               \
            }                                                                                      \
        } else {                                                                                   \
            char *o = ptrs[0];                                                                     \
            const char *pa = ptrs[1], *pb = ptrs[2];                                               \
            for (int64_t i = 0; i < n; i++, o += s[0], pa += s[1], pb += s[2]) {                    \
                ct a = LD_##T(*(const st *)pa);                                                    \
                ct b = p->i[3] ? (ct)p->f[3] : LD_##T(*(const st *)pb);                            \
                *(ot *)o = OSV_##OUTK(T, (__VA_ARGS__));                                           \
            }                                                                                      \
        }                                                                                          \
    }
#define LOOP(NAME, FAM, OUTK, ...) EM_FOR_##FAM(BINARY_LOOP, NAME, OUTK, __VA_ARGS__)
#undef LOOPW
#define LOOPW(NAME, FAM, OUTK, ...) EM_FOR_##FAM(BINARY_LOOP_WIDE, NAME, OUTK, __VA_ARGS__)
#include "binary.def"
#undef LOOPW
#define LOOPW(...) LOOP(__VA_ARGS__)
#undef LOOP

/* pow by a Python scalar exponent of 2, 3, -1, -2, 0.5 or -0.5: products, reciprocals and roots,
 * as PyTorch's pow_tensor_scalar kernel computes them for float, double and bfloat16 (float16
 * keeps pow there, and here). They vectorise where libm's pow is a call per element: minGPT's
 * x ** 3 took 250x PyTorch's time. Loops of this file only, not .def rows: the other backends
 * generate pow from binary.def and need no special case. ember_binary picks them. */
#define EM_FOR_POW_SCALAR(M, ...) M(bf16, __VA_ARGS__) M(f32, __VA_ARGS__) M(f64, __VA_ARGS__)
EM_FOR_POW_SCALAR(BINARY_LOOP, pow_2, SAME, a * a)
EM_FOR_POW_SCALAR(BINARY_LOOP, pow_3, SAME, a * a * a)
EM_FOR_POW_SCALAR(BINARY_LOOP, pow_m1, SAME, 1 / a)
EM_FOR_POW_SCALAR(BINARY_LOOP, pow_m2, SAME, 1 / (a * a))
EM_FOR_POW_SCALAR(BINARY_LOOP, pow_half, SAME, sqrt(a))
EM_FOR_POW_SCALAR(BINARY_LOOP, pow_mhalf, SAME, 1 / sqrt(a))
#define POW_SCALAR(E, NAME) \
    {E, {[EM_BF16] = b_##NAME##_bf16, [EM_F32] = b_##NAME##_f32, [EM_F64] = b_##NAME##_f64}}
static const struct {
    double exponent;
    em_loop loop[EM_NDTYPES];
} POW_SCALAR_LOOPS[] = {
    POW_SCALAR(2, pow_2),     POW_SCALAR(3, pow_3),       POW_SCALAR(-1, pow_m1),
    POW_SCALAR(-2, pow_m2),   POW_SCALAR(0.5, pow_half),  POW_SCALAR(-0.5, pow_mhalf),
};
#undef POW_SCALAR

/* pow's loop for the scalar exponent e: a special one above, else `general`. */
em_loop em_pow_by_scalar(int dtype, double e, em_loop general) {
    for (size_t k = 0; k < sizeof POW_SCALAR_LOOPS / sizeof POW_SCALAR_LOOPS[0]; k++)
        if (e == POW_SCALAR_LOOPS[k].exponent && POW_SCALAR_LOOPS[k].loop[dtype])
            return POW_SCALAR_LOOPS[k].loop[dtype];
    return general;
}

#define LOOP(NAME, FAM, OUTK, ...) EM_FOR_##FAM(ENTRY_B, NAME)
#define ENTRY_B(T, NAME) [OPB_##NAME][EMC_##T] = b_##NAME##_##T,
const em_loop EM_BINARY_LOOPS[OPB_COUNT][EM_NDTYPES] = {
#include "binary.def"
};
#undef LOOP

#define LOOP(NAME, FAM, OUTK, ...) [OPB_##NAME] = EMO_##OUTK,
const uint8_t EM_BINARY_BOOL_OUT[OPB_COUNT] = {
#include "binary.def"
};
#undef LOOP
#undef OP
