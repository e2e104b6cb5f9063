/*
 * The SSE2 variant: two doubles per vector, no fused multiply-add (a * b + c
 * is a multiply then an add).  SSE2 is part of every x86-64 CPU, so this is
 * the floor on x86-64 when AVX2 is missing or turned off.  Compiled with
 * -msse2 only; the kernels are in kern_simd.h.
 */
#include <emmintrin.h>
#include <float.h>
#include <stddef.h>
#include <stdint.h>

#define GW_SIMD_W 2
typedef __m128d vd;
typedef __m128d vm;
typedef __m128i vi;

static inline vd vd_set1(double x) { return _mm_set1_pd(x); }
static inline vd vd_load(const double *p) { return _mm_loadu_pd(p); }
static inline void vd_store(double *p, vd v) { _mm_storeu_pd(p, v); }
static inline vd vd_add(vd a, vd b) { return _mm_add_pd(a, b); }
static inline vd vd_sub(vd a, vd b) { return _mm_sub_pd(a, b); }
static inline vd vd_mul(vd a, vd b) { return _mm_mul_pd(a, b); }
static inline vd vd_div(vd a, vd b) { return _mm_div_pd(a, b); }
static inline vd vd_fma(vd a, vd b, vd c) { return _mm_add_pd(_mm_mul_pd(a, b), c); }
static inline vd vd_min(vd a, vd b) { return _mm_min_pd(a, b); }
static inline vd vd_max(vd a, vd b) { return _mm_max_pd(a, b); }
static inline vd vd_and(vd v, vm m) { return _mm_and_pd(v, m); }
static inline vd vd_sel(vm m, vd a, vd b) { return _mm_or_pd(_mm_and_pd(m, a), _mm_andnot_pd(m, b)); }
static inline vm vm_and(vm a, vm b) { return _mm_and_pd(a, b); }
static inline vm vm_lt(vd a, vd b) { return _mm_cmplt_pd(a, b); }
static inline vm vm_gt(vd a, vd b) { return _mm_cmpgt_pd(a, b); }

static inline vm vm_finite(vd v)
{
	vd abs = _mm_andnot_pd(_mm_set1_pd(-0.0), v);
	return _mm_cmple_pd(abs, _mm_set1_pd(DBL_MAX));
}

static inline vd vd_iota(void) { return _mm_setr_pd(0.0, 1.0); }

static inline double vd_hsum(vd v)
{
	return _mm_cvtsd_f64(v) + _mm_cvtsd_f64(_mm_unpackhi_pd(v, v));
}

static inline double vd_hmin(vd v)
{
	return _mm_cvtsd_f64(_mm_min_sd(v, _mm_unpackhi_pd(v, v)));
}

static inline double vd_hmax(vd v)
{
	return _mm_cvtsd_f64(_mm_max_sd(v, _mm_unpackhi_pd(v, v)));
}

static inline vi vi_of(vd v) { return _mm_castpd_si128(v); }
static inline vd vd_of(vi v) { return _mm_castsi128_pd(v); }
static inline vi vi_set1(uint64_t x) { return _mm_set1_epi64x((long long)x); }
static inline vi vi_add(vi a, vi b) { return _mm_add_epi64(a, b); }
static inline vi vi_sub(vi a, vi b) { return _mm_sub_epi64(a, b); }
static inline vi vi_and(vi a, vi b) { return _mm_and_si128(a, b); }
static inline vi vi_or(vi a, vi b) { return _mm_or_si128(a, b); }
static inline vi vi_srl52(vi a) { return _mm_srli_epi64(a, 52); }

#include "kern_simd.h"

GW_SIMD_OPS(gw__kern_sse2_ops, "sse2");
