// Schemas, argument checks and dispatcher calls of the bulk-sampling ops. Backend kernels
// register themselves in cpu/ and cuda/ (TORCH_LIBRARY_IMPL) and call the checks once.
#include "sampling.h"

#include <ATen/core/dispatch/Dispatcher.h>
#include <torch/library.h>

namespace pyg_sar {
namespace ops {

namespace {

void check_index(const char* op, const at::Tensor& t, const char* name) {
  TORCH_CHECK_VALUE(t.defined(), op, ": ", name, " is undefined");
  TORCH_CHECK_VALUE(t.dim() == 1, op, ": ", name, " must be 1-D (got shape ", t.sizes(), ")");
  TORCH_CHECK_VALUE(t.scalar_type() == at::kLong, op, ": ", name, " must be int64 (got ",
                    t.scalar_type(), ")");
}

void check_same_device(const char* op, const at::Tensor& a, const char* an, const at::Tensor& b,
                       const char* bn) {
  TORCH_CHECK_VALUE(a.device() == b.device(), op, ": ", an, " and ", bn,
                    " must be on the same device (got ", a.device(), " and ", b.device(), ")");
}

std::pair<int64_t, int64_t> min_max(const at::Tensor& t) {
  auto [lo, hi] = at::aminmax(t);
  return {lo.item<int64_t>(), hi.item<int64_t>()};
}

}  // namespace

void check_bulk_rows(const char* op, const at::Tensor& rowptr, const at::Tensor& rows) {
  check_index(op, rowptr, "rowptr");
  check_index(op, rows, "rows");
  check_same_device(op, rowptr, "rowptr", rows, "rows");
  TORCH_CHECK_VALUE(rowptr.numel() >= 1, op, ": rowptr must have N + 1 >= 1 entries (got 0)");
  const int64_t n = rowptr.numel() - 1;
  if (rows.numel() > 0) {
    auto [lo, hi] = min_max(rows);
    TORCH_CHECK_VALUE(lo >= 0 && hi < n, op, ": rows must lie in [0, N) = [0, ", n,
                      ") (got min ", lo, ", max ", hi, ")");
  }
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
  check_index(op, ptr, "ptr");
  TORCH_CHECK_VALUE(ptr.numel() >= 1, op, ": ptr must have k + 1 >= 1 entries (got 0)");
  const int64_t k = ptr.numel() - 1;
  const at::Tensor first_last = at::stack({ptr[0], ptr[k]}).cpu();
  const int64_t first = first_last[0].item<int64_t>(), last = first_last[1].item<int64_t>();
  TORCH_CHECK_VALUE(first == 0 && last == total, op, ": ptr must run from 0 to the number of ",
                    what, " ", total, " (got ", first, " .. ", last, ")");
  if (k > 0) {
    TORCH_CHECK_VALUE((ptr.narrow(0, 1, k) >= ptr.narrow(0, 0, k)).all().item<bool>(), op,
                      ": ptr must be non-decreasing");
  }
}

void check_bulk_col(const char* op, const at::Tensor& rowptr, const at::Tensor& col,
                    int64_t num_cols) {
  check_index(op, col, "col");
  check_same_device(op, rowptr, "rowptr", col, "col");
  const int64_t last = rowptr[rowptr.numel() - 1].item<int64_t>();
  TORCH_CHECK_VALUE(last == col.numel(), op, ": rowptr[-1] = ", last,
                    " must equal the number of edges col.numel() = ", col.numel());
  TORCH_CHECK_VALUE(num_cols >= 0, op, ": num_cols must be >= 0 (got ", num_cols, ")");
  // The column values are checked by the kernels as they read them (an O(E) scan here would
  // cost more than sampling a frontier).
}

void check_bulk_weight(const char* op, const at::Tensor& weight) {
  TORCH_CHECK_VALUE(weight.defined() && weight.dim() == 1 &&
                        weight.scalar_type() == at::kDouble,
                    op, ": weight must be a 1-D float64 tensor (got ",
                    (weight.defined() ? weight.scalar_type() : at::kDouble), ")");
  if (weight.numel() > 0) {
    TORCH_CHECK_VALUE((weight.isfinite() & (weight >= 0)).all().item<bool>(), op,
                      ": weights must be finite and >= 0");
  }
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
  auto in_range = [&](const at::Tensor& t, const char* name) {
    if (t.numel() == 0) return;
    auto [lo, hi] = min_max(t);
    TORCH_CHECK_VALUE(lo >= 0 && hi < num_nodes, op, ": ", name, " must lie in [0, num_nodes) "
                      "= [0, ", num_nodes, ") (got min ", lo, ", max ", hi, ")");
  };
  in_range(cand, "cand");
  for (size_t h = 0; h < prev_nodes.size(); ++h) {
    check_index(op, prev_nodes[h], "prev_nodes[h]");
    check_same_device(op, cand, "cand", prev_nodes[h], "prev_nodes[h]");
    TORCH_CHECK_VALUE(prev_ptr[h].numel() == k + 1, op, ": prev_ptr[", h, "] must have k + 1 = ",
                      k + 1, " entries (got ", prev_ptr[h].numel(), ")");
    check_bulk_ptr(op, prev_ptr[h], prev_nodes[h].numel(), "held nodes");
    in_range(prev_nodes[h], "prev_nodes");
  }
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
