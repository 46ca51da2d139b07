/* grid_sampler_2d and grid_sampler_3d, forward and backward (issue 20): one pass over the output
 * points, each reading its taps from the input and, backward, scattering into the input's
 * gradient and writing the grid's. The composite (nn/functional/grid.py) took some twenty ops per
 * call (coordinates, floors, masks, a gather per corner over all channels, products, sums) and
 * as many again in its backward. The loops, per dtype, are grid_sampler_impl.h; OpenMP shares out
 * output rows (the backward with an input gradient: samples, each owning its slice). */
#include <string.h>

#include "ember_cpu.h"
#include "api_grid.h"

enum { GS_BILINEAR = 0, GS_NEAREST = 1, GS_BICUBIC = 2 };
enum { GS_ZEROS = 0, GS_BORDER = 1, GS_REFLECTION = 2 };

/* past any input size: a float index beyond it is outside (2^62, exact in float) */
#define GS_BIG 4611686018427387904.0

typedef struct {
    int64_t n, c, id, ih, iw, od, oh, ow;
    int64_t is[5]; /* input strides (n, c, d, h, w) */
    int64_t gs[5]; /* grid strides (n, d, h, w, coord) */
    int64_t os[5]; /* output (forward, contiguous) or grad_output strides (n, c, d, h, w) */
    int dims, mode, padding, align;
} gs_geom;

#define GS_T float
#define GS_(name) gs_##name##_f32
#include "grid_sampler_impl.h"
#undef GS_T
#undef GS_

#define GS_T double
#define GS_(name) gs_##name##_f64
#include "grid_sampler_impl.h"
#undef GS_T
#undef GS_

static int unpack(gs_geom *g, int dims, const int64_t *geometry, int interpolation, int padding,
                  int align_corners) {
    if (dims != 2 && dims != 3) return 0;
    if (interpolation < 0 || interpolation > (dims == 2 ? GS_BICUBIC : GS_NEAREST)) return 0;
    if (padding < GS_ZEROS || padding > GS_REFLECTION) return 0;
    g->n = geometry[0];
    g->c = geometry[1];
    g->id = geometry[2];
    g->ih = geometry[3];
    g->iw = geometry[4];
    g->od = geometry[5];
    g->oh = geometry[6];
    g->ow = geometry[7];
    memcpy(g->is, geometry + 8, sizeof g->is);
    memcpy(g->gs, geometry + 13, sizeof g->gs);
    memcpy(g->os, geometry + 18, sizeof g->os);
    g->dims = dims;
    g->mode = interpolation;
    g->padding = padding;
    g->align = align_corners != 0;
    return 1;
}

int ember_grid_sampler(int dtype, int dims, intptr_t out, intptr_t input, intptr_t grid,
                       const int64_t *geometry, int interpolation, int padding,
                       int align_corners) {
    gs_geom g;
    if (!unpack(&g, dims, geometry, interpolation, padding, align_corners)) return EM_BAD_ARGUMENT;
    int64_t plane = g.od * g.oh * g.ow; /* the output: fresh, contiguous */
    int64_t contiguous[5] = {g.c * plane, plane, g.oh * g.ow, g.ow, 1};
    memcpy(g.os, contiguous, sizeof g.os);
    switch (dtype) {
    case EM_F32:
        gs_forward_f32(&g, (float *)out, (const float *)input, (const float *)grid);
        return EM_OK;
    case EM_F64:
        gs_forward_f64(&g, (double *)out, (const double *)input, (const double *)grid);
        return EM_OK;
    }
    return EM_UNSUPPORTED;
}

int ember_grid_sampler_backward(int dtype, int dims, intptr_t grad_input, intptr_t grad_grid,
                                intptr_t grad_output, intptr_t input, intptr_t grid,
                                const int64_t *geometry, int interpolation, int padding,
                                int align_corners) {
    gs_geom g;
    if (!unpack(&g, dims, geometry, interpolation, padding, align_corners)) return EM_BAD_ARGUMENT;
    switch (dtype) {
    case EM_F32:
        gs_backward_f32(&g, (float *)grad_input, (float *)grad_grid, (const float *)grad_output,
                        (const float *)input, (const float *)grid);
        return EM_OK;
    case EM_F64:
        gs_backward_f64(&g, (double *)grad_input, (double *)grad_grid,
                        (const double *)grad_output, (const double *)input, (const double *)grid);
        return EM_OK;
    }
    return EM_UNSUPPORTED;
}
