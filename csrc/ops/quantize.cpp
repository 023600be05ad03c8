// Schemas, argument checks and dispatcher calls of the quantisation ops. Backend kernels register
// themselves in cpu/ and cuda/ (TORCH_LIBRARY_IMPL) and call the checks once.
#include "quantize.h"

#include <ATen/core/dispatch/Dispatcher.h>
#include <torch/library.h>

#include "checks.h"

namespace pyg_sar {
namespace ops {

namespace {

void check_bits(const char* op, int64_t bits) {
  TORCH_CHECK_VALUE(bits == 1 || bits == 2 || bits == 4 || bits == 8 || bits == 16, op,
                    ": bits must be one of (1, 2, 4, 8, 16) (got ", bits, ")");
}

void check_dtype(const char* op, at::ScalarType dtype, const char* what) {
  check_kernel_dtype(op, dtype, what);
}

}  // namespace

int64_t quantize_packed_bytes(int64_t count, int64_t bits) { return (count * bits + 7) / 8; }

int64_t quantize_row_bytes(int64_t count, int64_t bits, at::ScalarType dtype) {
  // the header (lo, step) is in the accumulator dtype: float32 for bfloat16 / float16 rows
  return quantize_packed_bytes(count, bits) +
         2 * static_cast<int64_t>(at::elementSize(accumulate_type(dtype)));
}

void check_quantize_encode(const at::Tensor& rows, int64_t bits) {
  const char* op = "quantize_encode";
  TORCH_CHECK_VALUE(rows.defined(), op, ": rows is undefined");
  TORCH_CHECK_VALUE(rows.dim() == 2, op, ": rows must be 2-D [R, D] (got shape ", rows.sizes(),
                    ")");
  check_dtype(op, rows.scalar_type(), "rows");
  check_bits(op, bits);
}

void check_quantize_decode(const at::Tensor& payload, int64_t bits, int64_t count,
                           at::ScalarType dtype) {
  const char* op = "quantize_decode";
  TORCH_CHECK_VALUE(payload.defined(), op, ": payload is undefined");
  check_bits(op, bits);
  check_dtype(op, dtype, "dtype");
  TORCH_CHECK_VALUE(count >= 0, op, ": count must be >= 0 (got ", count, ")");
  TORCH_CHECK_VALUE(payload.dim() == 2 && payload.scalar_type() == at::kByte, op,
                    ": payload must be a 2-D uint8 tensor (got ", payload.scalar_type(), " ",
                    payload.sizes(), ")");
  const int64_t want = quantize_row_bytes(count, bits, dtype);
  TORCH_CHECK_VALUE(payload.size(1) == want, op, ": payload rows must hold ", want,
                    " bytes for ", count, " values at ", bits, " bits in ", dtype, " (got ",
                    payload.size(1), ")");
}

at::Tensor quantize_encode(const at::Tensor& rows, int64_t bits, int64_t seed) {
  static auto op = c10::Dispatcher::singleton()
                       .findSchemaOrThrow("pyg_sar::quantize_encode", "")
                       .typed<decltype(quantize_encode)>();
  return op.call(rows, bits, seed);
}

at::Tensor quantize_decode(const at::Tensor& payload, int64_t bits, int64_t count,
                           at::ScalarType dtype) {
  static auto op = c10::Dispatcher::singleton()
                       .findSchemaOrThrow("pyg_sar::quantize_decode", "")
                       .typed<decltype(quantize_decode)>();
  return op.call(payload, bits, count, dtype);
}

TORCH_LIBRARY_FRAGMENT(pyg_sar, m) {
  m.def(TORCH_SELECTIVE_SCHEMA(
      "pyg_sar::quantize_encode(Tensor rows, int bits, int seed) -> Tensor payload"));
  m.def(TORCH_SELECTIVE_SCHEMA(
      "pyg_sar::quantize_decode(Tensor payload, int bits, int count, ScalarType dtype) "
      "-> Tensor rows"));
}

}  // namespace ops
}  // namespace pyg_sar
