// Stochastic-rounding quantisation of message rows (pyg_sar.compression.codecs.Quantize) as one
// pass over each row: per-row min and step, keyed rounding noise (quantize_math.h), bit packing.
// The payload of a row is its packed codes (packed_bytes(count, bits) bytes, layout of
// pyg_sar/compression/packing.py) followed by lo and step in the rows' dtype (float32 or
// float64), exactly what the pure-torch codec sends. C++ API, argument checks and the
// registration every backend shares (the checks run once per call).
#pragma once

#include <ATen/ATen.h>
#include <torch/library.h>

#include "checks.h"

#include <cstdint>

namespace pyg_sar {
namespace ops {

// rows [R, D] (float32, float64, bfloat16, float16) -> payload
// [R, quantize_row_bytes(D, bits, dtype)] uint8.
at::Tensor quantize_encode(const at::Tensor& rows, int64_t bits, int64_t seed);

// payload [R, quantize_row_bytes(count, bits, dtype)] uint8 -> rows [R, count] of dtype.
at::Tensor quantize_decode(const at::Tensor& payload, int64_t bits, int64_t count,
                           at::ScalarType dtype);

// Bytes of the packed codes of `count` values and of a whole payload row (codes + header, the
// header in dtype's accumulator dtype).
int64_t quantize_packed_bytes(int64_t count, int64_t bits);
int64_t quantize_row_bytes(int64_t count, int64_t bits, at::ScalarType dtype);

// Argument checks (ValueError naming the op and the offending value).
void check_quantize_encode(const at::Tensor& rows, int64_t bits);
void check_quantize_decode(const at::Tensor& payload, int64_t bits, int64_t count,
                           at::ScalarType dtype);

// Backend registration, shared by the CPU and CUDA kernels: the registered functions check the
// arguments once and call `Kernels`, which provides
//   static at::Tensor encode(const at::Tensor& rows, int64_t bits, int64_t seed);  // contiguous
//   static at::Tensor decode(const at::Tensor& payload, int64_t bits, int64_t count,
//                            at::ScalarType dtype);  // payload rows contiguous (any row stride)
//
// bfloat16 / float16 rows are quantised in float32, their accumulator dtype: encode widens them
// (exactly) and produces the bytes of rows.float(), header in float32; decode to such a dtype
// decodes in float32 and rounds once to it. The kernels themselves see float32 / float64 only.
template <typename Kernels>
struct QuantizeOps {
  static at::Tensor encode(const at::Tensor& rows, int64_t bits, int64_t seed) {
    check_quantize_encode(rows, bits);
    const at::ScalarType acc = accumulate_type(rows.scalar_type());
    return Kernels::encode(rows.contiguous().to(acc), bits, seed);
  }

  static at::Tensor decode(const at::Tensor& payload, int64_t bits, int64_t count,
                           at::ScalarType dtype) {
    check_quantize_decode(payload, bits, count, dtype);
    // a chunk of a larger receive buffer keeps its row stride; only a row's bytes must be adjacent
    const at::ScalarType acc = accumulate_type(dtype);
    at::Tensor rows = Kernels::decode(payload.stride(1) == 1 ? payload : payload.contiguous(),
                                      bits, count, acc);
    return acc == dtype ? rows : rows.to(dtype);
  }
};

// Registers `Kernels` (see QuantizeOps) for the dispatch key of the enclosing TORCH_LIBRARY_IMPL.
template <typename Kernels>
void register_quantize_kernels(torch::Library& m) {
  m.impl(TORCH_SELECTIVE_NAME("pyg_sar::quantize_encode"), TORCH_FN(QuantizeOps<Kernels>::encode));
  m.impl(TORCH_SELECTIVE_NAME("pyg_sar::quantize_decode"), TORCH_FN(QuantizeOps<Kernels>::decode));
}

}  // namespace ops
}  // namespace pyg_sar
