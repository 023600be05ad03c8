// Task sizes of the CPU kernels' at::parallel_for loops.
#pragma once

#include <ATen/Parallel.h>

#include <algorithm>
#include <cstdint>

namespace pyg_sar {
namespace ops {

// Rows per parallel task, so that a task does about at::internal::GRAIN_SIZE element updates:
// `num_rows` rows share `num_items` items (edges), each costing `work_per_item` updates.
inline int64_t grain_for(int64_t num_rows, int64_t num_items, int64_t work_per_item) {
  const int64_t per_row =
      (num_items / std::max<int64_t>(num_rows, 1) + 1) * std::max<int64_t>(work_per_item, 1);
  return std::max<int64_t>(1, at::internal::GRAIN_SIZE / per_row);
}

}  // namespace ops
}  // namespace pyg_sar
