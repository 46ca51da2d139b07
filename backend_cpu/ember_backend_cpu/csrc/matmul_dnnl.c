/* bfloat16 and float32 products through oneDNN's matmul primitive.
 *
 * float32: oneDNN's kernels run on the GNU OpenMP pool that ember's other kernels use. OpenBLAS
 * runs a second pool of its own, and on two cores the two fought: a GEMM waited for a core that
 * a spinning OpenMP worker held, and OpenMP workers that slept instead paid a futex wake-up on
 * every elementwise op. With one pool the workers can spin briefly between ops, as PyTorch's
 * do. oneDNN's AVX-512 brgemm is also faster at linear-layer sizes: 128x784x512 on two threads
 * took 240 us, OpenBLAS 450 us, PyTorch (MKL) 550 us. A layout it has no real kernel for (its
 * reference loop) goes to OpenBLAS.
 *
 * OpenBLAS has no bfloat16 GEMM, so matmul.c converts bf16 operands to float32 for sgemm: a
 * bf16 product then costs what a float32 one does, where PyTorch's CPU autocast runs its
 * products in oneDNN (avx512_bf16 / AMX dot products on bf16 pairs, accumulating in float32),
 * 2-2.5x faster than sgemm at linear-layer sizes. oneDNN is the library PyTorch uses for this,
 * so ember uses it too, from the onednn-cpu-gomp wheel (GNU OpenMP: the same thread pool as
 * ember's kernels, so ember.set_num_threads governs it). As with OpenBLAS, nothing links
 * against it: the Python glue dlopens libdnnl and hands the entry points over
 * (ember_matmul_set_dnnl); without it, bf16 products stay on the sgemm path.
 *
 * Building a primitive costs far more than small products, so each thread keeps the primitives
 * it built, keyed by dtype, sizes and strides (a training step repeats the same few shapes). A
 * layout oneDNN cannot take (negative strides...), or a CPU where it has no native bf16 kernel
 * (is_native_bf16), is remembered as refused and goes to the sgemm path.
 */
#include "ember_cpu.h"
#include "matmul_dnnl.h"

#include <stdlib.h>
#include <string.h>

/* The parts of oneDNN's C API (dnnl.h, v3) used here; handles are opaque pointers. */
typedef void *dnnl_handle;
typedef int64_t dnnl_dims[12];
typedef struct {
    int arg;
    dnnl_handle memory;
} dnnl_exec_arg;
enum { DNNL_CPU = 1, DNNL_IN_ORDER = 1, DNNL_BF16 = 2, DNNL_F32 = 3, DNNL_QUERY_IMPL_INFO_STR = 8 };
enum { DNNL_ARG_SRC = 1, DNNL_ARG_DST = 17, DNNL_ARG_WEIGHTS = 33 };

static struct {
    int (*engine_create)(dnnl_handle *, int, size_t);
    int (*stream_create)(dnnl_handle *, dnnl_handle, unsigned);
    int (*md_create)(dnnl_handle *, int, const int64_t *, int, const int64_t *);
    int (*md_destroy)(dnnl_handle);
    int (*matmul_pd_create)(dnnl_handle *, dnnl_handle, dnnl_handle, dnnl_handle, dnnl_handle,
                            dnnl_handle, dnnl_handle);
    int (*pd_query)(dnnl_handle, int, int, void *);
    int (*pd_destroy)(dnnl_handle);
    int (*primitive_create)(dnnl_handle *, dnnl_handle);
    int (*execute)(dnnl_handle, dnnl_handle, int, const dnnl_exec_arg *);
    int (*memory_create)(dnnl_handle *, dnnl_handle, dnnl_handle, void *);
    int (*set_handle)(dnnl_handle, void *);
    dnnl_handle engine;
} dnnl;

/* Streams are not to be shared between threads; each thread makes its own on first use. */
static _Thread_local dnnl_handle stream;

enum { DNNL_NSYMBOLS = 11 };

int ember_matmul_set_dnnl(const intptr_t *fns, int count) {
    memset(&dnnl, 0, sizeof dnnl);
    if (count == 0) return EM_OK; /* switched off (tests of the sgemm path) */
    if (count != DNNL_NSYMBOLS) return EM_BAD_ARGUMENT;
    for (int i = 0; i < count; i++)
        if (!fns[i]) return EM_OK; /* a symbol missing: stay on the sgemm path */
    void **slot = (void **)&dnnl;
    for (int i = 0; i < count; i++) slot[i] = (void *)fns[i];
    if (dnnl.engine_create(&dnnl.engine, DNNL_CPU, 0)) {
        memset(&dnnl, 0, sizeof dnnl);
        return EM_UNSUPPORTED;
    }
    return EM_OK;
}

/* A product's shape and layout: what decides which primitive runs it. */
typedef struct {
    int64_t dtype, batch, n, k, p, sa[3], sb[3];
} dnnl_key;

typedef struct {
    dnnl_key key;
    dnnl_handle primitive, a, b, out; /* primitive NULL: refused, use sgemm */
} dnnl_entry;

/* Per thread, so no lock: a step has a handful of shapes; when full, the oldest slot goes. */
#define DNNL_CACHE 64
static _Thread_local dnnl_entry cache[DNNL_CACHE];
static _Thread_local int cache_used, cache_next;

/* A [batch, rows, cols] descriptor; a broadcast operand (batch stride 0) is one matrix, which
 * oneDNN's matmul broadcasts over the batch itself. */
static dnnl_handle describe(int dtype, int64_t batch, int64_t rows, int64_t cols, const int64_t *s) {
    dnnl_dims dims = {s[0] == 0 ? 1 : batch, rows, cols};
    dnnl_dims strides = {s[0] == 0 ? rows * cols : s[0], s[1], s[2]};
    dnnl_handle md = NULL;
    int type = dtype == EM_BF16 ? DNNL_BF16 : DNNL_F32;
    return dnnl.md_create(&md, 3, dims, type, strides) ? NULL : md;
}

/* Whether the primitive oneDNN chose multiplies bf16 natively: a brgemm kernel for avx512_bf16
 * or AMX ("brg:avx512_core_bf16", "brg:avx512_core_amx"). Elsewhere oneDNN has a reference
 * loop (AVX2) or a JIT kernel emulating bf16 ("gemm:jit:bf16" on AVX-512 without bf16), 2.6x
 * slower than sgemm on float32 copies (measured with ONEDNN_MAX_CPU_ISA=AVX512_CORE). */
static int is_native_bf16(dnnl_handle pd) {
    const char *impl = NULL;
    if (dnnl.pd_query(pd, DNNL_QUERY_IMPL_INFO_STR, 0, &impl) || !impl) return 0;
    return strncmp(impl, "brg", 3) == 0 && (strstr(impl, "bf16") || strstr(impl, "amx"));
}

/* Whether oneDNN has a real kernel for this product: for bfloat16 a native one (above); for
 * float32 anything but its reference loop. */
static int is_fast(int dtype, dnnl_handle pd) {
    if (dtype == EM_BF16) return is_native_bf16(pd);
    const char *impl = NULL;
    if (dnnl.pd_query(pd, DNNL_QUERY_IMPL_INFO_STR, 0, &impl) || !impl) return 0;
    return strncmp(impl, "ref", 3) != 0;
}

static void build(dnnl_entry *e) {
    const dnnl_key *key = &e->key;
    const int64_t so[3] = {key->n * key->p, key->p, 1};
    int dtype = (int)key->dtype;
    dnnl_handle ma = describe(dtype, key->batch, key->n, key->k, key->sa);
    dnnl_handle mb = describe(dtype, key->batch, key->k, key->p, key->sb);
    dnnl_handle mo = describe(dtype, key->batch, key->n, key->p, so);
    dnnl_handle pd = NULL;
    if (ma && mb && mo && !dnnl.matmul_pd_create(&pd, dnnl.engine, ma, mb, NULL, mo, NULL) &&
        is_fast(dtype, pd) && !dnnl.primitive_create(&e->primitive, pd)) {
        if (dnnl.memory_create(&e->a, ma, dnnl.engine, NULL) ||
            dnnl.memory_create(&e->b, mb, dnnl.engine, NULL) ||
            dnnl.memory_create(&e->out, mo, dnnl.engine, NULL))
            e->primitive = NULL; /* refused (the few bytes of a failed entry stay) */
    }
    if (pd) dnnl.pd_destroy(pd);
    if (ma) dnnl.md_destroy(ma);
    if (mb) dnnl.md_destroy(mb);
    if (mo) dnnl.md_destroy(mo);
}

static dnnl_entry *lookup(const dnnl_key *key) {
    for (int i = 0; i < cache_used; i++)
        if (!memcmp(&cache[i].key, key, sizeof *key)) return &cache[i];
    /* Evicting leaks the old primitive's handles on purpose: destroying them needs four more
     * entry points, and a model has far fewer than DNNL_CACHE product shapes. */
    dnnl_entry *e = &cache[cache_next];
    cache_next = (cache_next + 1) % DNNL_CACHE;
    if (cache_used < DNNL_CACHE) cache_used++;
    memset(e, 0, sizeof *e);
    e->key = *key;
    build(e);
    return e;
}

int em_matmul_dnnl(int dtype, int64_t batch, int64_t n, int64_t k, int64_t p, void *out,
                   const void *a, const int64_t *sa, const void *b, const int64_t *sb) {
    if ((dtype != EM_BF16 && dtype != EM_F32) || !dnnl.engine) return EM_UNSUPPORTED;
    if (!stream && dnnl.stream_create(&stream, dnnl.engine, DNNL_IN_ORDER)) return EM_UNSUPPORTED;
    dnnl_key key = {dtype, batch, n, k, p, {sa[0], sa[1], sa[2]}, {sb[0], sb[1], sb[2]}};
    if (batch == 1) key.sa[0] = key.sb[0] = 0; /* one matrix: the batch stride means nothing */
    dnnl_entry *e = lookup(&key);
    if (!e->primitive) return EM_UNSUPPORTED;
    dnnl.set_handle(e->a, (void *)a);
    dnnl.set_handle(e->b, (void *)b);
    dnnl.set_handle(e->out, out);
    dnnl_exec_arg args[3] = {{DNNL_ARG_SRC, e->a}, {DNNL_ARG_WEIGHTS, e->b}, {DNNL_ARG_DST, e->out}};
    /* An in-order CPU stream runs the primitive before execute returns: no wait needed. */
    return dnnl.execute(e->primitive, stream, 3, args) ? EM_UNSUPPORTED : EM_OK;
}
