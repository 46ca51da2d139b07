/* A list of contiguous tensors walked as one iteration space: each tensor is cut into chunks of
 * a fixed number of elements and the chunks of the whole list are numbered in order, so one
 * OpenMP loop over chunk numbers spreads a model's hundreds of small tensors over the threads
 * (one parallel region per list, not one per tensor). Used by the GradScaler unscale (amp.c) and
 * the fused optimizer steps (optim.c). */
#ifndef EMBER_CPU_TENSOR_LIST_H
#define EMBER_CPU_TENSOR_LIST_H

#include <stdint.h>
#include <stdlib.h>

typedef struct {
    int64_t count;  /* tensors in the list */
    int64_t chunks; /* chunks over all of them */
    int64_t total;  /* elements over all of them */
    int64_t chunk;  /* elements per chunk (the last chunk of a tensor may hold fewer) */
    int64_t *first; /* first[i]: number of tensor i's first chunk; first[count] == chunks */
} em_chunk_plan;

/* Fills `plan` for `count` tensors of sizes[i] elements; 0 on success, -1 when out of memory. */
static inline int em_chunk_plan_init(em_chunk_plan *plan, int64_t count, const int64_t *sizes,
                                     int64_t chunk) {
    plan->first = malloc((size_t)(count + 1) * sizeof(int64_t));
    if (!plan->first) return -1;
    plan->count = count;
    plan->chunk = chunk;
    plan->total = 0;
    plan->first[0] = 0;
    for (int64_t i = 0; i < count; i++) {
        plan->first[i + 1] = plan->first[i] + (sizes[i] + chunk - 1) / chunk;
        plan->total += sizes[i];
    }
    plan->chunks = plan->first[count];
    return 0;
}

/* The tensor holding chunk c (the last i with first[i] <= c), its first element in *start and
 * the chunk's length in *n. */
static inline int64_t em_chunk_locate(const em_chunk_plan *plan, const int64_t *sizes, int64_t c,
                                      int64_t *start, int64_t *n) {
    int64_t lo = 0, hi = plan->count - 1;
    while (lo < hi) {
        int64_t mid = (lo + hi + 1) / 2;
        if (plan->first[mid] <= c) lo = mid;
        else hi = mid - 1;
    }
    *start = (c - plan->first[lo]) * plan->chunk;
    *n = sizes[lo] - *start < plan->chunk ? sizes[lo] - *start : plan->chunk;
    return lo;
}

static inline void em_chunk_plan_free(em_chunk_plan *plan) { free(plan->first); }

#endif
