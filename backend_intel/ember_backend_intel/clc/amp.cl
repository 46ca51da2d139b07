/* GradScaler's kernels. The glue defines T, the gradients' dtype token.
 *
 * amp_unscale: the gradients of one dtype that live in one buffer, in one launch: spans holds
 * (element offset, count) pairs, one per gradient; work-item (i, s) walks span s from i in steps
 * of the grid's width. Every element is multiplied by inv_scale (in float, double for float64;
 * left as it is when inv_scale is 1), and found_inf becomes 1 when an element is inf or NaN
 * (racing work-items all write the same 1).
 *
 * amp_update_scale: one work-item updates the scale and the growth tracker, as PyTorch's kernel
 * (products in em_real: double where the device has it).
 */

#ifdef T
__kernel void amp_unscale(__global ST(T) *x, __global const long *spans, __global float *found,
                          long found_at, __global const float *inv, long inv_at) {
    const long s = get_global_id(1);
    const long start = spans[2 * s], count = spans[2 * s + 1];
    const CT(T) scale = (CT(T))inv[inv_at];
    int bad = 0;
    for (long i = get_global_id(0); i < count; i += get_global_size(0)) {
        CT(T) v = LD(T, x, start + i);
        bad |= !isfinite(v);
        if (scale != (CT(T))1) SV(T, x, start + i, v * scale);
    }
    if (bad) found[found_at] = 1.0f;
}
#endif

__kernel void amp_update_scale(__global float *scale, long scale_at, __global int *tracker,
                               long tracker_at, __global const float *found, long found_at,
                               em_real growth, em_real backoff, long interval) {
    if (found[found_at] != 0.0f) {
        scale[scale_at] = (float)(scale[scale_at] * backoff);
        tracker[tracker_at] = 0;
        return;
    }
    const int successful = tracker[tracker_at] + 1;
    if (successful == interval) {
        const float grown = (float)(scale[scale_at] * growth);
        if (isfinite(grown)) scale[scale_at] = grown; /* never past float32's range to inf */
        tracker[tracker_at] = 0;
    } else {
        tracker[tracker_at] = successful;
    }
}
