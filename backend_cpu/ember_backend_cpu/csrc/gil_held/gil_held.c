/* The eager hot path's small C calls, made without releasing the GIL (docs/eager_overhead.md).
 *
 * cffi's generated wrappers release the GIL around every C call and have no per-function
 * switch. On a 16-element add that release and retake (PyEval_SaveThread, PyEval_RestoreThread,
 * the GIL's mutex and condition variable) costs about 400 instructions per call, more than the
 * loop itself, and the add makes two such calls (its output's address and the loop). This
 * separate module is the cffi source whose wrappers keep the GIL: the macros they use are
 * emptied below, before cffi emits the wrappers. An entry whose work is large enough that
 * other Python threads (a DataLoader's, say) should run meanwhile releases the GIL itself, as
 * numpy's ufunc loops do above a few hundred elements. The loops stay in _kernels:
 * ember_held_bind gives this module their addresses once, when the backend loads (held.py). */

#undef Py_BEGIN_ALLOW_THREADS
#undef Py_END_ALLOW_THREADS
#define Py_BEGIN_ALLOW_THREADS {
#define Py_END_ALLOW_THREADS }
/* Nor do they keep errno for ffi.errno: no entry here sets it. */
#undef _cffi_restore_errno
#undef _cffi_save_errno
#define _cffi_restore_errno() ((void)0)
#define _cffi_save_errno() ((void)0)

#include <stdint.h>

/* Loops of at most this many elements run with the GIL held: a few microseconds at most (an
 * erf or pow of 1024 floats), against the ~0.1 us a release and retake costs. */
#define HELD_MAX_ELEMENTS 1024

typedef int (*binary_contig_fn)(int, intptr_t, intptr_t, intptr_t, int64_t);
typedef int (*unary_contig_fn)(int, intptr_t, intptr_t, int64_t);

static binary_contig_fn binary_contig;
static unary_contig_fn unary_contig;

void ember_held_bind(intptr_t binary, intptr_t unary) {
    binary_contig = (binary_contig_fn)binary;
    unary_contig = (unary_contig_fn)unary;
}

int ember_held_binary_contig(int key, intptr_t out, intptr_t a, intptr_t b, int64_t n) {
    if (n <= HELD_MAX_ELEMENTS) return binary_contig(key, out, a, b, n);
    PyThreadState *state = PyEval_SaveThread();
    int status = binary_contig(key, out, a, b, n);
    PyEval_RestoreThread(state);
    return status;
}

int ember_held_unary_contig(int key, intptr_t out, intptr_t x, int64_t n) {
    if (n <= HELD_MAX_ELEMENTS) return unary_contig(key, out, x, n);
    PyThreadState *state = PyEval_SaveThread();
    int status = unary_contig(key, out, x, n);
    PyEval_RestoreThread(state);
    return status;
}

intptr_t ember_held_address(const char *buffer) {
    return (intptr_t)buffer;
}

int ember_held_max_elements(void) {
    return HELD_MAX_ELEMENTS;
}
