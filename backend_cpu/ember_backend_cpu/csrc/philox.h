/* Philox4x32-10 (Random123), shared by the fills (random.c) and the samplers (samplers.h).
 * The contract is ember's docs/random.md. The GPU backends compile this text too (see
 * samplers.h): they define EM_DEVICE_FN, their function qualifier, before it. */
#ifndef EMBER_CPU_PHILOX_H
#define EMBER_CPU_PHILOX_H
#include <stdint.h>

#define PHILOX_M0 0xD2511F53u
#define PHILOX_M1 0xCD9E8D57u
#define PHILOX_W0 0x9E3779B9u
#define PHILOX_W1 0xBB67AE85u
#define PHILOX_ROUNDS 10
#ifndef EM_DEVICE_FN
#define EM_DEVICE_FN static inline
#endif

EM_DEVICE_FN void philox10(uint32_t *x0, uint32_t *x1, uint32_t *x2, uint32_t *x3, uint32_t k0,
                           uint32_t k1) {
    for (int round = 0; round < PHILOX_ROUNDS; round++) {
        uint64_t p0 = (uint64_t)PHILOX_M0 * *x0;
        uint64_t p1 = (uint64_t)PHILOX_M1 * *x2;
        uint32_t y0 = (uint32_t)(p1 >> 32) ^ *x1 ^ k0;
        uint32_t y2 = (uint32_t)(p0 >> 32) ^ *x3 ^ k1;
        *x0 = y0;
        *x1 = (uint32_t)p1;
        *x2 = y2;
        *x3 = (uint32_t)p0;
        k0 += PHILOX_W0;
        k1 += PHILOX_W1;
    }
}
#endif
