/* The built-in matrix product, for what CLBlast does not cover: integer dtypes, machines without
 * CLBlast, and empty inner dimensions. kernels/linalg.py compiles one program per dtype (T).
 *
 * c[b, i, j] = sum_q a[b, i, q] * b[b, q, j] over (TILE x TILE) tiles staged in local memory;
 * every operand has its own batch, row and column strides (in elements; the output's column
 * stride is 1), so no operand needs packing. Accumulation: integers in int64 (wrapping, as the
 * CPU's C loop), float16/bfloat16/float32 in float, float64 in double.
 */
#define TILE 16
#if ISF(T)
#define ACC CT(T)
#else
#define ACC long
#endif

kernel void gemm(global ST(T) *c, long co, long cb, long cr,
                 global const ST(T) *a, long ao, long ab, long ar, long ac,
                 global const ST(T) *b, long bo, long bb, long br, long bc,
                 long n, long k, long p) {
    local ACC ta[TILE][TILE + 1];
    local ACC tb[TILE][TILE + 1];
    const int lr = get_local_id(1), lc = get_local_id(0);
    const long row = get_group_id(1) * TILE + lr, col = get_group_id(0) * TILE + lc;
    const long batch = get_group_id(2);
    const long abase = ao + batch * ab, bbase = bo + batch * bb;
    ACC acc = 0;
    for (long t = 0; t < k; t += TILE) {
        ta[lr][lc] = (row < n && t + lc < k) ? (ACC)LD(T, a, abase + row * ar + (t + lc) * ac) : 0;
        tb[lr][lc] = (t + lr < k && col < p) ? (ACC)LD(T, b, bbase + (t + lr) * br + col * bc) : 0;
        barrier(CLK_LOCAL_MEM_FENCE);
        for (int q = 0; q < TILE; q++) acc += ta[lr][q] * tb[q][lc];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (row < n && col < p) SV(T, c, co + batch * cb + row * cr + col, acc);
}
