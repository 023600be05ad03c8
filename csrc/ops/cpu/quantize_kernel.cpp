// CPU kernels of the quantisation ops: one pass over each row (min and max, then the codes with
// their keyed noise packed straight into the payload), at::parallel_for over the rows. The noise
// is keyed by (seed, row, column), not drawn from a stream, so the bytes do not depend on the
// thread count, and they equal the pure-torch reference (pyg_sar/ops/quantize_reference.py) bit
// for bit.
#include <ATen/ATen.h>
#include <ATen/Dispatch.h>
#include <ATen/Parallel.h>
#include <torch/library.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>
#include <vector>

#include "../quantize.h"
#include "parallel.h"

// Every product and sum is rounded on its own, as in the reference's separate torch ops: no
// contraction into fused multiply-adds even where FMA code generation is enabled (before the
// math header, so that its functions are compiled under it too).
// (Only where the compiler may emit FMAs: the optimize pragma costs vectorisation elsewhere.)
#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#elif defined(__GNUC__) && (defined(__FMA__) || defined(__aarch64__) || defined(__ARM_FEATURE_FMA))
#pragma GCC optimize("fp-contract=off")
#endif

#include "../quantize_math.h"

namespace pyg_sar {
namespace ops {

namespace {

namespace qm = quantize_math;

// Min and max of a row; NaN if the row holds one (as torch.aminmax). Eight independent lanes,
// which the compiler turns into vector min/max (one scalar chain of compares is the slowest
// part of an encode otherwise).
template <typename T>
void min_max(const T* x, int64_t n, T& lo, T& hi) {
  constexpr int kLanes = 8;
  T lo_l[kLanes], hi_l[kLanes];
  int nan_l[kLanes];
  for (int l = 0; l < kLanes; ++l) {
    lo_l[l] = hi_l[l] = x[0];
    nan_l[l] = 0;
  }
  int64_t c = 0;
  for (; c + kLanes <= n; c += kLanes) {
    for (int l = 0; l < kLanes; ++l) {
      const T v = x[c + l];
      nan_l[l] |= v != v;
      lo_l[l] = v < lo_l[l] ? v : lo_l[l];
      hi_l[l] = v > hi_l[l] ? v : hi_l[l];
    }
  }
  for (; c < n; ++c) {
    const T v = x[c];
    nan_l[0] |= v != v;
    lo_l[0] = v < lo_l[0] ? v : lo_l[0];
    hi_l[0] = v > hi_l[0] ? v : hi_l[0];
  }
  lo = lo_l[0];
  hi = hi_l[0];
  int nan = nan_l[0] | (x[0] != x[0]);
  for (int l = 1; l < kLanes; ++l) {
    nan |= nan_l[l];
    lo = lo_l[l] < lo ? lo_l[l] : lo;
    hi = hi_l[l] > hi ? hi_l[l] : hi;
  }
  if (nan) lo = hi = std::numeric_limits<T>::quiet_NaN();
}

// float32 codes, two values per hash. On x86-64 (GCC/clang with ifunc) also compiled for AVX2
// and picked at load time where the CPU has it: the loop, 64-bit hash products included,
// vectorises there (about 1.3x faster). "avx2" does not enable FMA, so nothing is contracted.
#if defined(__x86_64__) && defined(__GNUC__) && defined(__linux__)
#define PYG_SAR_AVX2_CLONE __attribute__((target_clones("avx2", "default")))
#else
#define PYG_SAR_AVX2_CLONE
#endif

PYG_SAR_AVX2_CLONE
void row_codes_f32(const float* x, int64_t n, float lo, float inv, uint64_t key, int64_t levels,
                   uint16_t* q) {
  const int64_t pairs = n / 2;
  for (int64_t t = 0; t < pairs; ++t) {
    const uint64_t h = qm::noise_bits(key, t);
    q[2 * t] = static_cast<uint16_t>(qm::code(x[2 * t], lo, inv, qm::uniform_f32(h, 0), levels));
    q[2 * t + 1] =
        static_cast<uint16_t>(qm::code(x[2 * t + 1], lo, inv, qm::uniform_f32(h, 1), levels));
  }
  if (n & 1) {
    const uint64_t h = qm::noise_bits(key, pairs);
    q[n - 1] = static_cast<uint16_t>(qm::code(x[n - 1], lo, inv, qm::uniform_f32(h, 0), levels));
  }
}

// Codes of a row into q[0, n): float32 values draw their noise in pairs from one hash.
template <typename T>
void row_codes(const T* x, int64_t n, T lo, T inv, uint64_t key, int64_t levels, uint16_t* q) {
  if constexpr (std::is_same_v<T, float>) {
    row_codes_f32(x, n, lo, inv, key, levels, q);
  } else {
    for (int64_t c = 0; c < n; ++c) {
      q[c] = static_cast<uint16_t>(
          qm::code(x[c], lo, inv, qm::uniform_f64(qm::noise_bits(key, c)), levels));
    }
  }
}

// Packs n codes (layout of quantize_math.h's unpack_code) into out[0, packed_bytes).
template <int BITS>
void pack_row(const uint16_t* q, int64_t n, uint8_t* out) {
  if constexpr (BITS == 8) {
    for (int64_t c = 0; c < n; ++c) out[c] = static_cast<uint8_t>(q[c]);
  } else if constexpr (BITS == 16) {
    for (int64_t c = 0; c < n; ++c) {
      const uint32_t v = q[c] ^ 0x8000u;  // int16(code - 32768), little-endian
      out[2 * c] = static_cast<uint8_t>(v & 0xFFu);
      out[2 * c + 1] = static_cast<uint8_t>(v >> 8);
    }
  } else {
    constexpr int kPer = 8 / BITS;
    const int64_t full = n / kPer;
    for (int64_t k = 0; k < full; ++k) {
      uint32_t byte = 0;
      for (int j = 0; j < kPer; ++j) byte |= uint32_t(q[k * kPer + j]) << (j * BITS);
      out[k] = static_cast<uint8_t>(byte);
    }
    if (full * kPer < n) {  // last byte: the codes left, zeros after them
      uint32_t byte = 0;
      for (int64_t c = full * kPer; c < n; ++c) {
        byte |= uint32_t(q[c]) << ((c - full * kPer) * BITS);
      }
      out[full] = static_cast<uint8_t>(byte);
    }
  }
}

template <typename T, int BITS>
void encode_row(const T* x, int64_t n, int64_t seed, int64_t row, uint16_t* q, uint8_t* out) {
  constexpr int64_t kLevels = (int64_t(1) << BITS) - 1;
  T lo = 0, hi = 0;
  if (n > 0) min_max(x, n, lo, hi);
  const T step = qm::row_step(lo, hi, kLevels);
  row_codes<T>(x, n, lo, T(1) / step, qm::row_key(seed, row), kLevels, q);
  pack_row<BITS>(q, n, out);
  const int64_t body = quantize_packed_bytes(n, BITS);
  std::memcpy(out + body, &lo, sizeof(T));
  std::memcpy(out + body + sizeof(T), &step, sizeof(T));
}

template <typename T, int BITS>
void decode_row(const uint8_t* in, int64_t n, T* x) {
  const int64_t body = quantize_packed_bytes(n, BITS);
  T lo, step;
  std::memcpy(&lo, in + body, sizeof(T));  // the header may sit at any byte offset
  std::memcpy(&step, in + body + sizeof(T), sizeof(T));
  if constexpr (BITS == 8) {
    for (int64_t c = 0; c < n; ++c) x[c] = qm::value<T>(in[c], lo, step);
  } else if constexpr (BITS == 16) {
    for (int64_t c = 0; c < n; ++c) x[c] = qm::value<T>(qm::unpack_code(in, c, 16), lo, step);
  } else {
    constexpr int kPer = 8 / BITS;
    constexpr uint32_t kMask = (1u << BITS) - 1u;
    const int64_t full = n / kPer;
    for (int64_t k = 0; k < full; ++k) {
      const uint32_t byte = in[k];
      for (int j = 0; j < kPer; ++j) {
        x[k * kPer + j] = qm::value<T>((byte >> (j * BITS)) & kMask, lo, step);
      }
    }
    for (int64_t c = full * kPer; c < n; ++c) {
      x[c] = qm::value<T>(qm::unpack_code(in, c, BITS), lo, step);
    }
  }
}

// Calls fn(std::integral_constant<int, bits>) for a runtime bit width (checked before).
template <typename Fn>
void with_bits(int64_t bits, Fn&& fn) {
  switch (bits) {
    case 1: return fn(std::integral_constant<int, 1>{});
    case 2: return fn(std::integral_constant<int, 2>{});
    case 4: return fn(std::integral_constant<int, 4>{});
    case 8: return fn(std::integral_constant<int, 8>{});
    default: return fn(std::integral_constant<int, 16>{});
  }
}

at::Tensor encode_cpu(const at::Tensor& rows, int64_t bits, int64_t seed) {
  const int64_t R = rows.size(0), n = rows.size(1);
  const int64_t width = quantize_row_bytes(n, bits, rows.scalar_type());
  at::Tensor payload = at::empty({R, width}, rows.options().dtype(at::kByte));
  uint8_t* out = payload.mutable_data_ptr<uint8_t>();
  AT_DISPATCH_FLOATING_TYPES(rows.scalar_type(), "quantize_encode", [&] {
    const scalar_t* x = rows.const_data_ptr<scalar_t>();
    with_bits(bits, [&](auto b) {
      at::parallel_for(0, R, grain_for(R, 0, n), [&](int64_t begin, int64_t end) {
        std::vector<uint16_t> q(n);  // one row's codes, reused by the task's rows
        for (int64_t r = begin; r < end; ++r) {
          encode_row<scalar_t, decltype(b)::value>(x + r * n, n, seed, r, q.data(),
                                                   out + r * width);
        }
      });
    });
  });
  return payload;
}

at::Tensor decode_cpu(const at::Tensor& payload, int64_t bits, int64_t count,
                      at::ScalarType dtype) {
  const int64_t R = payload.size(0), stride = payload.stride(0);
  at::Tensor rows = at::empty({R, count}, payload.options().dtype(dtype));
  const uint8_t* in = payload.const_data_ptr<uint8_t>();
  AT_DISPATCH_FLOATING_TYPES(dtype, "quantize_decode", [&] {
    scalar_t* x = rows.mutable_data_ptr<scalar_t>();
    with_bits(bits, [&](auto b) {
      at::parallel_for(0, R, grain_for(R, 0, count), [&](int64_t begin, int64_t end) {
        for (int64_t r = begin; r < end; ++r) {
          decode_row<scalar_t, decltype(b)::value>(in + r * stride, count, x + r * count);
        }
      });
    });
  });
  return rows;
}

struct CpuKernels {
  static constexpr auto encode = &encode_cpu;
  static constexpr auto decode = &decode_cpu;
};

}  // namespace

TORCH_LIBRARY_IMPL(pyg_sar, CPU, m) { register_quantize_kernels<CpuKernels>(m); }

}  // namespace ops
}  // namespace pyg_sar
