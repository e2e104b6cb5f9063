/*
 * The NEON (Advanced SIMD) variant for AArch64: two doubles per vector,
 * fused multiply-add.  Advanced SIMD is part of every AArch64 application
 * core (Grace's Neoverse V2 included), so no extra compile flags are needed;
 * the kernels are in kern_simd.h.
 */
#include <arm_neon.h>
#include <float.h>
#include <stddef.h>
#include <stdint.h>

#define GW_SIMD_W 2
typedef float64x2_t vd;
typedef uint64x2_t vm;
typedef uint64x2_t vi;

static inline vd vd_set1(double x) { return vdupq_n_f64(x); }
static inline vd vd_load(const double *p) { return vld1q_f64(p); }
static inline void vd_store(double *p, vd v) { vst1q_f64(p, v); }
static inline vd vd_add(vd a, vd b) { return vaddq_f64(a, b); }
static inline vd vd_sub(vd a, vd b) { return vsubq_f64(a, b); }
static inline vd vd_mul(vd a, vd b) { return vmulq_f64(a, b); }
static inline vd vd_div(vd a, vd b) { return vdivq_f64(a, b); }
static inline vd vd_fma(vd a, vd b, vd c) { return vfmaq_f64(c, a, b); }
static inline vd vd_min(vd a, vd b) { return vminq_f64(a, b); }
static inline vd vd_max(vd a, vd b) { return vmaxq_f64(a, b); }
static inline vd vd_and(vd v, vm m) { return vreinterpretq_f64_u64(vandq_u64(vreinterpretq_u64_f64(v), m)); }
static inline vd vd_sel(vm m, vd a, vd b) { return vbslq_f64(m, a, b); }
static inline vm vm_and(vm a, vm b) { return vandq_u64(a, b); }
static inline vm vm_lt(vd a, vd b) { return vcltq_f64(a, b); }
static inline vm vm_gt(vd a, vd b) { return vcgtq_f64(a, b); }
static inline vm vm_finite(vd v) { return vcleq_f64(vabsq_f64(v), vdupq_n_f64(DBL_MAX)); }

static inline vd vd_iota(void)
{
	static const double iota[2] = { 0.0, 1.0 };
	return vld1q_f64(iota);
}

static inline double vd_hsum(vd v) { return vgetq_lane_f64(v, 0) + vgetq_lane_f64(v, 1); }
static inline double vd_hmin(vd v) { return vminvq_f64(v); }
static inline double vd_hmax(vd v) { return vmaxvq_f64(v); }

static inline vi vi_of(vd v) { return vreinterpretq_u64_f64(v); }
static inline vd vd_of(vi v) { return vreinterpretq_f64_u64(v); }
static inline vi vi_set1(uint64_t x) { return vdupq_n_u64(x); }
static inline vi vi_add(vi a, vi b) { return vaddq_u64(a, b); }
static inline vi vi_sub(vi a, vi b) { return vsubq_u64(a, b); }
static inline vi vi_and(vi a, vi b) { return vandq_u64(a, b); }
static inline vi vi_or(vi a, vi b) { return vorrq_u64(a, b); }
static inline vi vi_srl52(vi a) { return vshrq_n_u64(a, 52); }

#include "kern_simd.h"

GW_SIMD_OPS(gw__kern_neon_ops, "neon");
