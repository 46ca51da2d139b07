/* Thread control for OpenMP (a no-op build without it), and host addresses. */
#include "ember_cpu.h"
#include "api_core.h"

int ember_num_threads(void) {
#ifdef _OPENMP
    return omp_get_max_threads();
#else
    return 1;
#endif
}

void ember_set_num_threads(int n) {
#ifdef _OPENMP
    if (n > 0) omp_set_num_threads(n);
#else
    (void)n;
#endif
}

intptr_t ember_address(const char *buffer) {
    return (intptr_t)buffer;
}
