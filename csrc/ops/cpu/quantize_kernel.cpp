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

#include "../quantize.h"

// Every product and sum is rounded on its own, as in the reference's separate torch ops: no
// contraction into fused multiply-adds even where FMA code generation is enabled (before the
// math header, so that its functions are compiled under it too).
#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#elif defined(__GNUC__)
#pragma GCC optimize("fp-contract=off")
#endif

#include "../quantize_math.h"

namespace pyg_sar {
namespace ops {

namespace {

namespace qm = quantize_math;

// Rows per task so that a task handles about GRAIN_SIZE values.
int64_t grain(int64_t count) {
  return std::max<int64_t>(1, at::internal::GRAIN_SIZE / std::max<int64_t>(count, 1));
}

// Min and max of a row; NaN if the row holds one (as torch.aminmax).
template <typename T>
void min_max(const T* x, int64_t n, T& lo, T& hi) {
  lo = x[0];
  hi = x[0];
  bool nan = false;
  for (int64_t c = 0; c < n; ++c) {
    const T v = x[c];
    nan |= v != v;
    lo = v < lo ? v : lo;
    hi = v > hi ? v : hi;
  }
  if (nan) lo = hi = std::numeric_limits<T>::quiet_NaN();
}

template <typename T>
void encode_row(const T* x, int64_t n, int bits, int64_t seed, int64_t row, uint8_t* out) {
  const int64_t levels = (int64_t(1) << bits) - 1;
  T lo = 0, hi = 0;
  if (n > 0) min_max(x, n, lo, hi);
  const T step = qm::row_step(lo, hi, levels);
  const T inv = T(1) / step;
  const uint64_t key = qm::row_key(seed, row);
  auto code = [&](int64_t c) { return qm::code(x[c], lo, inv, qm::uniform<T>(key, c), levels); };
  const int64_t body = quantize_packed_bytes(n, bits);
  if (bits == 8) {
    for (int64_t c = 0; c < n; ++c) out[c] = static_cast<uint8_t>(code(c));
  } else if (bits == 16) {
    for (int64_t c = 0; c < n; ++c) {
      const uint32_t q = code(c) ^ 0x8000u;  // int16(code - 32768), little-endian
      out[2 * c] = static_cast<uint8_t>(q & 0xFFu);
      out[2 * c + 1] = static_cast<uint8_t>(q >> 8);
    }
  } else {
    const int per = 8 / bits;
    const int64_t full = n / per;
    for (int64_t k = 0; k < full; ++k) {
      uint32_t byte = 0;
      for (int j = 0; j < per; ++j) byte |= code(k * per + j) << (j * bits);
      out[k] = static_cast<uint8_t>(byte);
    }
    if (full < body) {  // last byte: the codes left, zeros after them
      uint32_t byte = 0;
      for (int64_t c = full * per; c < n; ++c) byte |= code(c) << ((c - full * per) * bits);
      out[full] = static_cast<uint8_t>(byte);
    }
  }
  std::memcpy(out + body, &lo, sizeof(T));
  std::memcpy(out + body + sizeof(T), &step, sizeof(T));
}

template <typename T>
void decode_row(const uint8_t* in, int64_t n, int bits, T* x) {
  const int64_t body = quantize_packed_bytes(n, bits);
  T lo, step;
  std::memcpy(&lo, in + body, sizeof(T));  // the header may sit at any byte offset
  std::memcpy(&step, in + body + sizeof(T), sizeof(T));
  if (bits == 8) {
    for (int64_t c = 0; c < n; ++c) x[c] = qm::value<T>(in[c], lo, step);
  } else {
    for (int64_t c = 0; c < n; ++c) x[c] = qm::value<T>(qm::unpack_code(in, c, bits), lo, step);
  }
}

at::Tensor encode_cpu(const at::Tensor& rows_in, int64_t bits, int64_t seed) {
  check_quantize_encode(rows_in, bits);
  const at::Tensor rows = rows_in.contiguous();
  const int64_t R = rows.size(0), n = rows.size(1);
  const int64_t width = quantize_row_bytes(n, bits, rows.scalar_type());
  at::Tensor payload = at::empty({R, width}, rows.options().dtype(at::kByte));
  uint8_t* out = payload.mutable_data_ptr<uint8_t>();
  AT_DISPATCH_FLOATING_TYPES(rows.scalar_type(), "quantize_encode", [&] {
    const scalar_t* x = rows.const_data_ptr<scalar_t>();
    at::parallel_for(0, R, grain(n), [&](int64_t begin, int64_t end) {
      for (int64_t r = begin; r < end; ++r) {
        encode_row<scalar_t>(x + r * n, n, int(bits), seed, r, out + r * width);
      }
    });
  });
  return payload;
}

at::Tensor decode_cpu(const at::Tensor& payload_in, int64_t bits, int64_t count,
                      at::ScalarType dtype) {
  check_quantize_decode(payload_in, bits, count, dtype);
  // a chunk of a larger receive buffer keeps its row stride; only the bytes of a row must be
  // adjacent
  const at::Tensor payload = payload_in.stride(1) == 1 ? payload_in : payload_in.contiguous();
  const int64_t R = payload.size(0), stride = payload.stride(0);
  at::Tensor rows = at::empty({R, count}, payload.options().dtype(dtype));
  const uint8_t* in = payload.const_data_ptr<uint8_t>();
  AT_DISPATCH_FLOATING_TYPES(dtype, "quantize_decode", [&] {
    scalar_t* x = rows.mutable_data_ptr<scalar_t>();
    at::parallel_for(0, R, grain(count), [&](int64_t begin, int64_t end) {
      for (int64_t r = begin; r < end; ++r) {
        decode_row<scalar_t>(in + r * stride, count, int(bits), x + r * count);
      }
    });
  });
  return rows;
}

}  // namespace

TORCH_LIBRARY_IMPL(pyg_sar, CPU, m) {
  m.impl(TORCH_SELECTIVE_NAME("pyg_sar::quantize_encode"), TORCH_FN(encode_cpu));
  m.impl(TORCH_SELECTIVE_NAME("pyg_sar::quantize_decode"), TORCH_FN(decode_cpu));
}

}  // namespace ops
}  // namespace pyg_sar
