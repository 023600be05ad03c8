// Argument checks shared by every op family. Each raises ValueError (TORCH_CHECK_VALUE) or
// RuntimeError (TORCH_CHECK, for device mismatches, as ATen does) naming the op, the rule and the
// offending values.
//
// Checks of tensor *metadata* (dimensions, dtypes, devices, sizes) run on every call and cost
// nothing. Checks of tensor *values* (a CSR row pointer that starts at 0, ends at E and never
// decreases; indices within range; finite weights) never copy from the device to the host:
//  * CPU tensors are scanned in place, and the error names the offending values;
//  * CUDA tensors are checked by a reduction on the device whose verdict goes to
//    at::_assert_async, queued on the current stream before the kernel that would read out of
//    range. A violation stops the stream with a device-side assertion carrying the same message
//    (without the values, which would need a copy); a valid input never waits for the device.
#pragma once

#include <ATen/ATen.h>

#include <cstdint>
#include <string>

namespace pyg_sar {
namespace ops {

// `t` and `ref` on the same device (RuntimeError otherwise).
void check_same_device(const char* op, const at::Tensor& ref, const char* ref_name,
                       const at::Tensor& t, const char* name);

// float32 or float64 (ValueError otherwise).
void check_float_dtype(const char* op, const at::Tensor& t, const char* name);

// A defined, 1-D int64 tensor (ValueError otherwise).
void check_index(const char* op, const at::Tensor& t, const char* name);

// A CSR block: rowptr int64 [N + 1] with rowptr[0] == 0, non-decreasing, rowptr[N] == E; col
// int64 [E] with values in [0, num_src) (`num_src_name` says where num_src comes from).
void check_csr(const char* op, const at::Tensor& rowptr, const at::Tensor& col, int64_t num_src,
               const char* num_src_name);

// A pointer into `total` items: int64 [k + 1], ptr[0] == 0, ptr[k] == total, non-decreasing
// (`what` names the items).
void check_ptr(const char* op, const at::Tensor& ptr, const char* name, int64_t total,
               const char* what);

// rowptr[-1] == col.numel() (the edge count of a CSR whose other values are checked elsewhere).
void check_last_is_edge_count(const char* op, const at::Tensor& rowptr, const at::Tensor& col);

// Every value of the int64 tensor `t` lies in [lo, hi) (`range` spells the interval for the
// message, e.g. "[0, N) = [0, 7)").
void check_in_range(const char* op, const at::Tensor& t, const char* name, int64_t lo, int64_t hi,
                    const std::string& range);

// Every value of the float64 tensor `t` is finite and >= 0.
void check_finite_nonnegative(const char* op, const at::Tensor& t, const char* name);

}  // namespace ops
}  // namespace pyg_sar
