// Schemas, argument checks and dispatcher calls of the bulk-sampling ops. Backend kernels
// register themselves in cpu/ and cuda/ (TORCH_LIBRARY_IMPL) through register_sampling_kernels,
// which runs the checks below once per call.
#include "sampling.h"

#include <string>

#include "checks.h"

#include <ATen/core/dispatch/Dispatcher.h>
#include <torch/library.h>

namespace pyg_sar {
namespace ops {

void check_bulk_rows(const char* op, const at::Tensor& rowptr, const at::Tensor& rows) {
  check_index(op, rowptr, "rowptr");
  check_index(op, rows, "rows");
  check_same_device(op, rowptr, "rowptr", rows, "rows");
  TORCH_CHECK_VALUE(rowptr.numel() >= 1, op, ": rowptr must have N + 1 >= 1 entries (got 0)");
  const int64_t n = rowptr.numel() - 1;
  check_in_range(op, rows, "rows", 0, n, "[0, N) = [0, " + std::to_string(n) + ")");
}

void check_bulk_keys(const char* op, const at::Tensor& rows, const at::Tensor& row_keys) {
  TORCH_CHECK_VALUE(row_keys.defined() && row_keys.scalar_type() == at::kLong &&
                        row_keys.dim() == 1 && row_keys.numel() == rows.numel(),
                    op, ": row_keys must be int64 of the shape of rows [", rows.numel(),
                    "] (got ", (row_keys.defined() ? row_keys.scalar_type() : at::kLong), " ",
                    (row_keys.defined() ? row_keys.sizes() : at::IntArrayRef{}), ")");
  check_same_device(op, rows, "rows", row_keys, "row_keys");
}

void check_bulk_ptr(const char* op, const at::Tensor& ptr, int64_t total, const char* what) {
  check_ptr(op, ptr, "ptr", total, what);
}

void check_bulk_col(const char* op, const at::Tensor& rowptr, const at::Tensor& col,
                    int64_t num_cols) {
  check_index(op, col, "col");
  check_same_device(op, rowptr, "rowptr", col, "col");
  check_last_is_edge_count(op, rowptr, col);
  TORCH_CHECK_VALUE(num_cols >= 0, op, ": num_cols must be >= 0 (got ", num_cols, ")");
  // The column values are checked by the kernels as they read them (an O(E) scan here would
  // cost more than sampling a frontier).
}

void check_bulk_weight(const char* op, const at::Tensor& weight) {
  TORCH_CHECK_VALUE(weight.defined() && weight.dim() == 1 &&
                        weight.scalar_type() == at::kDouble,
                    op, ": weight must be a 1-D float64 tensor (got ",
                    (weight.defined() ? weight.scalar_type() : at::kDouble), ")");
  check_finite_nonnegative(op, weight, "weights");
}

void check_bulk_relabel(int64_t num_nodes, const std::vector<at::Tensor>& prev_nodes,
                        const std::vector<at::Tensor>& prev_ptr, const at::Tensor& cand,
                        const at::Tensor& cand_ptr) {
  const char* op = "bulk_relabel";
  TORCH_CHECK_VALUE(num_nodes >= 0, op, ": num_nodes must be >= 0 (got ", num_nodes, ")");
  TORCH_CHECK_VALUE(prev_nodes.size() == prev_ptr.size(), op, ": ", prev_nodes.size(),
                    " node lists but ", prev_ptr.size(), " pointers");
  check_index(op, cand, "cand");
  check_bulk_ptr(op, cand_ptr, cand.numel(), "candidates");
  const int64_t k = cand_ptr.numel() - 1;
  const std::string range = "[0, num_nodes) = [0, " + std::to_string(num_nodes) + ")";
  check_in_range(op, cand, "cand", 0, num_nodes, range);
  for (size_t h = 0; h < prev_nodes.size(); ++h) {
    check_index(op, prev_nodes[h], "prev_nodes[h]");
    check_same_device(op, cand, "cand", prev_nodes[h], "prev_nodes[h]");
    TORCH_CHECK_VALUE(prev_ptr[h].numel() == k + 1, op, ": prev_ptr[", h, "] must have k + 1 = ",
                      k + 1, " entries (got ", prev_ptr[h].numel(), ")");
    check_bulk_ptr(op, prev_ptr[h], prev_nodes[h].numel(), "held nodes");
    check_in_range(op, prev_nodes[h], "prev_nodes", 0, num_nodes, range);
  }
}

void check_bulk_select_rows_args(const at::Tensor& rowptr, const at::Tensor& rows) {
  check_bulk_rows("bulk_select_rows", rowptr, rows);
}

void check_bulk_sample_uniform_args(const at::Tensor& rowptr, const at::Tensor& rows,
                                    const at::Tensor& row_keys) {
  check_bulk_rows("bulk_sample_uniform", rowptr, rows);
  check_bulk_keys("bulk_sample_uniform", rows, row_keys);
}

void check_bulk_ladies_weights_args(const at::Tensor& rowptr, const at::Tensor& col,
                                    const at::Tensor& values, const at::Tensor& rows,
                                    const at::Tensor& batch_ptr, int64_t num_cols) {
  const char* op = "bulk_ladies_weights";
  check_bulk_rows(op, rowptr, rows);
  check_bulk_col(op, rowptr, col, num_cols);
  check_bulk_ptr(op, batch_ptr, rows.numel(), "rows");
  TORCH_CHECK_VALUE(values.dim() == 1 && values.numel() == col.numel() &&
                        values.scalar_type() == at::kDouble,
                    op, ": values must be float64 [E] = [", col.numel(), "] (got ",
                    values.scalar_type(), " ", values.sizes(), ")");
}

void check_bulk_sample_weighted_args(const at::Tensor& ptr, const at::Tensor& weight,
                                     const at::Tensor& row_keys) {
  const char* op = "bulk_sample_weighted";
  check_bulk_weight(op, weight);
  check_bulk_ptr(op, ptr, weight.numel(), "weights");
  const int64_t R = ptr.numel() - 1;
  TORCH_CHECK_VALUE(row_keys.scalar_type() == at::kLong && row_keys.dim() == 1 &&
                        row_keys.numel() == R,
                    op, ": row_keys must be int64 [", R, "] (got ", row_keys.scalar_type(), " ",
                    row_keys.sizes(), ")");
}

void check_bulk_extract_columns_args(const at::Tensor& rowptr, const at::Tensor& col,
                                     const at::Tensor& rows, const at::Tensor& row_batch,
                                     const at::Tensor& keep_ptr, const at::Tensor& keep_cols,
                                     int64_t num_cols) {
  const char* op = "bulk_extract_columns";
  check_bulk_rows(op, rowptr, rows);
  check_bulk_col(op, rowptr, col, num_cols);
  TORCH_CHECK_VALUE(row_batch.scalar_type() == at::kLong && row_batch.dim() == 1 &&
                        row_batch.numel() == rows.numel(),
                    op, ": row_batch must be int64 of the shape of rows [", rows.numel(),
                    "] (got ", row_batch.scalar_type(), " ", row_batch.sizes(), ")");
  check_bulk_ptr(op, keep_ptr, keep_cols.numel(), "kept columns");
  const int64_t k = keep_ptr.numel() - 1;
  check_in_range(op, row_batch, "row_batch", 0, k, "[0, k) = [0, " + std::to_string(k) + ")");
}

std::tuple<at::Tensor, at::Tensor> bulk_select_rows(const at::Tensor& rowptr,
                                                    const at::Tensor& rows) {
  static auto op = c10::Dispatcher::singleton()
                       .findSchemaOrThrow("pyg_sar::bulk_select_rows", "")
                       .typed<decltype(bulk_select_rows)>();
  return op.call(rowptr, rows);
}

std::tuple<at::Tensor, at::Tensor> bulk_sample_uniform(const at::Tensor& rowptr,
                                                       const at::Tensor& rows,
                                                       const at::Tensor& row_keys,
                                                       int64_t fanout) {
  static auto op = c10::Dispatcher::singleton()
                       .findSchemaOrThrow("pyg_sar::bulk_sample_uniform", "")
                       .typed<decltype(bulk_sample_uniform)>();
  return op.call(rowptr, rows, row_keys, fanout);
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> bulk_ladies_weights(
    const at::Tensor& rowptr, const at::Tensor& col, const at::Tensor& values,
    const at::Tensor& rows, const at::Tensor& batch_ptr, int64_t num_cols) {
  static auto op = c10::Dispatcher::singleton()
                       .findSchemaOrThrow("pyg_sar::bulk_ladies_weights", "")
                       .typed<decltype(bulk_ladies_weights)>();
  return op.call(rowptr, col, values, rows, batch_ptr, num_cols);
}

std::tuple<at::Tensor, at::Tensor> bulk_sample_weighted(const at::Tensor& ptr,
                                                        const at::Tensor& weight,
                                                        const at::Tensor& row_keys,
                                                        int64_t fanout) {
  static auto op = c10::Dispatcher::singleton()
                       .findSchemaOrThrow("pyg_sar::bulk_sample_weighted", "")
                       .typed<decltype(bulk_sample_weighted)>();
  return op.call(ptr, weight, row_keys, fanout);
}

std::tuple<at::Tensor, at::Tensor> bulk_extract_columns(const at::Tensor& rowptr,
                                                        const at::Tensor& col,
                                                        const at::Tensor& rows,
                                                        const at::Tensor& row_batch,
                                                        const at::Tensor& keep_ptr,
                                                        const at::Tensor& keep_cols,
                                                        int64_t num_cols) {
  static auto op = c10::Dispatcher::singleton()
                       .findSchemaOrThrow("pyg_sar::bulk_extract_columns", "")
                       .typed<decltype(bulk_extract_columns)>();
  return op.call(rowptr, col, rows, row_batch, keep_ptr, keep_cols, num_cols);
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> bulk_relabel(
    int64_t num_nodes, const std::vector<at::Tensor>& prev_nodes,
    const std::vector<at::Tensor>& prev_ptr, const at::Tensor& cand, const at::Tensor& cand_ptr) {
  static auto op = c10::Dispatcher::singleton()
                       .findSchemaOrThrow("pyg_sar::bulk_relabel", "")
                       .typed<std::tuple<at::Tensor, at::Tensor, at::Tensor>(
                           int64_t, at::TensorList, at::TensorList, const at::Tensor&,
                           const at::Tensor&)>();
  return op.call(num_nodes, prev_nodes, prev_ptr, cand, cand_ptr);
}

TORCH_LIBRARY_FRAGMENT(pyg_sar, m) {
  m.def(TORCH_SELECTIVE_SCHEMA(
      "pyg_sar::bulk_select_rows(Tensor rowptr, Tensor rows) -> (Tensor out_ptr, Tensor pos)"));
  m.def(TORCH_SELECTIVE_SCHEMA(
      "pyg_sar::bulk_sample_uniform(Tensor rowptr, Tensor rows, Tensor row_keys, int fanout) "
      "-> (Tensor out_ptr, Tensor pos)"));
  m.def(TORCH_SELECTIVE_SCHEMA(
      "pyg_sar::bulk_ladies_weights(Tensor rowptr, Tensor col, Tensor values, Tensor rows, "
      "Tensor batch_ptr, int num_cols) -> (Tensor ptr, Tensor cand, Tensor weight)"));
  m.def(TORCH_SELECTIVE_SCHEMA(
      "pyg_sar::bulk_sample_weighted(Tensor ptr, Tensor weight, Tensor row_keys, int fanout) "
      "-> (Tensor out_ptr, Tensor pos)"));
  m.def(TORCH_SELECTIVE_SCHEMA(
      "pyg_sar::bulk_extract_columns(Tensor rowptr, Tensor col, Tensor rows, Tensor row_batch, "
      "Tensor keep_ptr, Tensor keep_cols, int num_cols) -> (Tensor out_ptr, Tensor pos)"));
  m.def(TORCH_SELECTIVE_SCHEMA(
      "pyg_sar::bulk_relabel(int num_nodes, Tensor[] prev_nodes, Tensor[] prev_ptr, "
      "Tensor cand, Tensor cand_ptr) -> (Tensor new_nodes, Tensor new_ptr, Tensor cand_local)"));
}

}  // namespace ops
}  // namespace pyg_sar
