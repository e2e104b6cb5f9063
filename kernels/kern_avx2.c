/*
 * The AVX2+FMA variant: four doubles per vector, fused multiply-add.
 * Compiled with -mavx2 -mfma (this file only); gw_kern_init() picks it only
 * when the CPU and OS support both.  The kernels themselves are in
 * kern_simd.h; this file maps its vector operations to AVX2 intrinsics.
 */
#include <float.h>
#include <immintrin.h>
#include <stddef.h>
#include <stdint.h>

#define GW_SIMD_W 4
typedef __m256d vd;
typedef __m256d vm;
typedef __m256i vi;

static inline vd vd_set1(double x) { return _mm256_set1_pd(x); }
static inline vd vd_load(const double *p) { return _mm256_loadu_pd(p); }
static inline void vd_store(double *p, vd v) { _mm256_storeu_pd(p, v); }
static inline vd vd_add(vd a, vd b) { return _mm256_add_pd(a, b); }
static inline vd vd_sub(vd a, vd b) { return _mm256_sub_pd(a, b); }
static inline vd vd_mul(vd a, vd b) { return _mm256_mul_pd(a, b); }
static inline vd vd_div(vd a, vd b) { return _mm256_div_pd(a, b); }
static inline vd vd_fma(vd a, vd b, vd c) { return _mm256_fmadd_pd(a, b, c); }
static inline vd vd_min(vd a, vd b) { return _mm256_min_pd(a, b); }
static inline vd vd_max(vd a, vd b) { return _mm256_max_pd(a, b); }
static inline vd vd_and(vd v, vm m) { return _mm256_and_pd(v, m); }
static inline vd vd_sel(vm m, vd a, vd b) { return _mm256_blendv_pd(b, a, m); }
static inline vm vm_and(vm a, vm b) { return _mm256_and_pd(a, b); }
static inline vm vm_lt(vd a, vd b) { return _mm256_cmp_pd(a, b, _CMP_LT_OQ); }
static inline vm vm_gt(vd a, vd b) { return _mm256_cmp_pd(a, b, _CMP_GT_OQ); }

static inline vm vm_finite(vd v)
{
	vd abs = _mm256_andnot_pd(_mm256_set1_pd(-0.0), v);
	return _mm256_cmp_pd(abs, _mm256_set1_pd(DBL_MAX), _CMP_LE_OQ);
}

static inline vd vd_iota(void) { return _mm256_setr_pd(0.0, 1.0, 2.0, 3.0); }

static inline double vd_hsum(vd v)
{
	double l[4];
	_mm256_storeu_pd(l, v);
	return ((l[0] + l[1]) + l[2]) + l[3];
}

static inline double vd_hmin(vd v)
{
	__m128d m = _mm_min_pd(_mm256_castpd256_pd128(v), _mm256_extractf128_pd(v, 1));
	return _mm_cvtsd_f64(_mm_min_sd(m, _mm_unpackhi_pd(m, m)));
}

static inline double vd_hmax(vd v)
{
	__m128d m = _mm_max_pd(_mm256_castpd256_pd128(v), _mm256_extractf128_pd(v, 1));
	return _mm_cvtsd_f64(_mm_max_sd(m, _mm_unpackhi_pd(m, m)));
}

static inline vi vi_of(vd v) { return _mm256_castpd_si256(v); }
static inline vd vd_of(vi v) { return _mm256_castsi256_pd(v); }
static inline vi vi_set1(uint64_t x) { return _mm256_set1_epi64x((long long)x); }
static inline vi vi_add(vi a, vi b) { return _mm256_add_epi64(a, b); }
static inline vi vi_sub(vi a, vi b) { return _mm256_sub_epi64(a, b); }
static inline vi vi_and(vi a, vi b) { return _mm256_and_si256(a, b); }
static inline vi vi_or(vi a, vi b) { return _mm256_or_si256(a, b); }
static inline vi vi_srl52(vi a) { return _mm256_srli_epi64(a, 52); }

#include "kern_simd.h"

GW_SIMD_OPS(gw__kern_avx2_ops, "avx2");
