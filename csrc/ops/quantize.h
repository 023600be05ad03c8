// Stochastic-rounding quantisation of message rows (pyg_sar.compression.codecs.Quantize) as one
// pass over each row: per-row min and step, keyed rounding noise (quantize_math.h), bit packing.
// The payload of a row is its packed codes (packed_bytes(count, bits) bytes, layout of
// pyg_sar/compression/packing.py) followed by lo and step in the rows' dtype (float32 or
// float64), exactly what the pure-torch codec sends. C++ API and the argument checks every
// backend runs once.
#pragma once

#include <ATen/ATen.h>

#include <cstdint>

namespace pyg_sar {
namespace ops {

// rows [R, D] float32/float64 -> payload [R, quantize_row_bytes(D, bits, dtype)] uint8.
at::Tensor quantize_encode(const at::Tensor& rows, int64_t bits, int64_t seed);

// payload [R, quantize_row_bytes(count, bits, dtype)] uint8 -> rows [R, count] of dtype.
at::Tensor quantize_decode(const at::Tensor& payload, int64_t bits, int64_t count,
                           at::ScalarType dtype);

// Bytes of the packed codes of `count` values and of a whole payload row (codes + header).
int64_t quantize_packed_bytes(int64_t count, int64_t bits);
int64_t quantize_row_bytes(int64_t count, int64_t bits, at::ScalarType dtype);

// Argument checks (ValueError naming the op and the offending value).
void check_quantize_encode(const at::Tensor& rows, int64_t bits);
void check_quantize_decode(const at::Tensor& payload, int64_t bits, int64_t count,
                           at::ScalarType dtype);

}  // namespace ops
}  // namespace pyg_sar
