// Per-value arithmetic of stochastic-rounding quantisation (pyg_sar.compression.codecs.Quantize),
// shared by the CPU and CUDA kernels and bit-identical to the pure-torch reference
// (pyg_sar/ops/quantize_reference.py). Torch-free.
//
// Row r of a message keyed by `seed` draws its rounding noise for value c from a counter-based
// hash (SplitMix64, the samplers' sampling_math.h): row_key = mix64(seed ^ mix64(r + GOLDEN)),
// h = mix64(row_key + (t + 1) * GOLDEN), u its top 53 bits for float64 (t = c) and, for float32,
// 24 bits of its upper (even c) or lower (odd c) half (t = c / 2): exact in the dtype, in [0, 1).
// A code is floor((x - lo) * inv + u) clamped to
// [0, levels], every operation rounded on its own (no fused multiply-add: see mul_rn/add_rn),
// which is what the reference's separate torch ops compute.
#pragma once

#include <cstdint>

#include "host_device.h"
#include "sampling_math.h"

namespace pyg_sar {
namespace ops {
namespace quantize_math {

// The key of row `row` under the message's noise seed (sampling_rng.combine).
PYG_SAR_HOST_DEVICE uint64_t row_key(int64_t seed, int64_t row) {
  using sampling_math::kGolden;
  using sampling_math::mix64;
  return mix64(static_cast<uint64_t>(seed) ^ mix64(static_cast<uint64_t>(row) + kGolden));
}

// The hash of noise counter t of a row: float32 values c = 2t and 2t + 1 share one (24 bits
// each, from its upper and lower halves), float64 value c uses counter c (53 bits).
PYG_SAR_HOST_DEVICE uint64_t noise_bits(uint64_t key, int64_t t) {
  return sampling_math::mix64(key + (static_cast<uint64_t>(t) + 1u) * sampling_math::kGolden);
}

PYG_SAR_HOST_DEVICE float uniform_f32(uint64_t h, int64_t col) {
  const uint32_t b = (col & 1) ? static_cast<uint32_t>((h >> 8) & 0xFFFFFFu)
                               : static_cast<uint32_t>(h >> 40);
  return static_cast<float>(b) * 0x1.0p-24f;
}

PYG_SAR_HOST_DEVICE double uniform_f64(uint64_t h) {
  return static_cast<double>(h >> 11) * 0x1.0p-53;
}

template <typename T>
PYG_SAR_HOST_DEVICE T uniform(uint64_t key, int64_t col);

template <>
PYG_SAR_HOST_DEVICE float uniform<float>(uint64_t key, int64_t col) {
  return uniform_f32(noise_bits(key, col >> 1), col);
}

template <>
PYG_SAR_HOST_DEVICE double uniform<double>(uint64_t key, int64_t col) {
  return uniform_f64(noise_bits(key, col));
}

// Products and sums rounded one at a time. nvcc fuses a * b + c into an FMA unless told not to
// (the _rn intrinsics never fuse); host compilers fuse only with FMA code generation enabled
// (-mfma / -march=native, which setup.py does not pass) and the kernel file turns contraction
// off explicitly on top.
PYG_SAR_HOST_DEVICE float mul_rn(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fmul_rn(a, b);
#else
  return a * b;
#endif
}
PYG_SAR_HOST_DEVICE double mul_rn(double a, double b) {
#if defined(__CUDA_ARCH__)
  return __dmul_rn(a, b);
#else
  return a * b;
#endif
}
PYG_SAR_HOST_DEVICE float add_rn(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fadd_rn(a, b);
#else
  return a + b;
#endif
}
PYG_SAR_HOST_DEVICE double add_rn(double a, double b) {
#if defined(__CUDA_ARCH__)
  return __dadd_rn(a, b);
#else
  return a + b;
#endif
}

// Step of a row: (hi - lo) / levels, or 1 for a constant row (all its codes are then 0).
template <typename T>
PYG_SAR_HOST_DEVICE T row_step(T lo, T hi, int64_t levels) {
  const T step = (hi - lo) / static_cast<T>(levels);
  return step > T(0) ? step : T(1);
}

// The code of x (a NaN maps to 0: its row's header carries the NaN, so it decodes to NaN).
// Branch-free: the clamps are min/max selects (codes are random, so branches would mispredict),
// and truncation of the clamped value equals floor for values >= 0.
template <typename T>
PYG_SAR_HOST_DEVICE uint32_t code(T x, T lo, T inv, T u, int64_t levels) {
  const T v = add_rn(mul_rn(x - lo, inv), u);
  const T top = static_cast<T>(levels);
  T f = v >= T(0) ? v : T(0);  // also NaN -> 0
  f = f < top ? f : top;
  return static_cast<uint32_t>(f);
}

// The value a code decodes to: code * step + lo.
template <typename T>
PYG_SAR_HOST_DEVICE T value(uint32_t q, T lo, T step) {
  return add_rn(mul_rn(static_cast<T>(q), step), lo);
}

// Code j of a packed row (bits < 8: code j sits in byte j / per at bit (j % per) * bits;
// bits 16: two bytes, little-endian, holding code ^ 0x8000, i.e. the int16 code - 32768).
PYG_SAR_HOST_DEVICE uint32_t unpack_code(const uint8_t* body, int64_t j, int bits) {
  if (bits == 8) return body[j];
  if (bits == 16) {
    return (static_cast<uint32_t>(body[2 * j]) | (static_cast<uint32_t>(body[2 * j + 1]) << 8)) ^
           0x8000u;
  }
  const int per = 8 / bits;
  return (body[j / per] >> ((j % per) * bits)) & ((1u << bits) - 1u);
}

}  // namespace quantize_math
}  // namespace ops
}  // namespace pyg_sar
