/* The special functions of ember.special (special.c, ported from PyTorch's ATen/native/Math.h):
 * double in, double out; float16, bfloat16 and float evaluate through them and round once. */
#ifndef EMBER_SPECIAL_H
#define EMBER_SPECIAL_H

#include <stdint.h>

double em_sp_airy_ai(double x);
double em_sp_bessel_j0(double x);
double em_sp_bessel_j1(double x);
double em_sp_bessel_y0(double x);
double em_sp_bessel_y1(double x);
double em_sp_chebyshev_polynomial_t(double x, double n, int64_t limit);
double em_sp_chebyshev_polynomial_u(double x, double n, int64_t limit);
double em_sp_chebyshev_polynomial_v(double x, double n, int64_t limit);
double em_sp_chebyshev_polynomial_w(double x, double n, int64_t limit);
double em_sp_digamma(double x);
double em_sp_entr(double x);
double em_sp_erfcx(double x);
double em_sp_erfinv(double x);
double em_sp_hermite_polynomial_h(double x, double n, int64_t limit);
double em_sp_hermite_polynomial_he(double x, double n, int64_t limit);
double em_sp_i0(double x);
double em_sp_i0e(double x);
double em_sp_i1(double x);
double em_sp_i1e(double x);
double em_sp_igamma(double a, double x);
double em_sp_igammac(double a, double x);
double em_sp_laguerre_polynomial_l(double x, double n, int64_t limit);
double em_sp_legendre_polynomial_p(double x, double n, int64_t limit);
double em_sp_lgamma(double x);
double em_sp_log_ndtr(double x);
double em_sp_modified_bessel_i0(double x);
double em_sp_modified_bessel_i1(double x);
double em_sp_modified_bessel_k0(double x);
double em_sp_modified_bessel_k1(double x);
double em_sp_ndtr(double x);
double em_sp_ndtri(double x);
double em_sp_polygamma(double x, int64_t n);
float em_sp_polygamma_f32(float x, int64_t n); /* float32 storage: trigamma in float, as PyTorch */
double em_sp_scaled_modified_bessel_k0(double x);
double em_sp_scaled_modified_bessel_k1(double x);
double em_sp_shifted_chebyshev_polynomial_t(double x, double n, int64_t limit);
double em_sp_shifted_chebyshev_polynomial_u(double x, double n, int64_t limit);
double em_sp_shifted_chebyshev_polynomial_v(double x, double n, int64_t limit);
double em_sp_shifted_chebyshev_polynomial_w(double x, double n, int64_t limit);
double em_sp_sinc(double x);
double em_sp_spherical_bessel_j0(double x);
double em_sp_xlog1py(double x, double y);
double em_sp_zeta(double x, double q);

/* PyTorch gives NaN beyond degree 128 in float and 512 in double for the Hermite polynomials */
#define EM_SP_POLY(name, x, n) em_sp_##name((double)(x), (double)(n), sizeof(x) == 8 ? 512 : 128)

#endif
