// Bulk sampling as sparse-matrix steps (Tripathy, Yelick and Buluc, MLSys 2024): the rows of
// Q @ A for the frontier of k minibatches, GraphSAGE's uniform and LADIES' weighted picks without
// replacement by dart throwing, LADIES' Q @ (A * A), per-minibatch column extraction and
// relabelling. C++ API and the argument checks every backend runs once. The adjacency is CSR
// (rowptr, col), each row's columns ascending; all indices are int64.
#pragma once

#include <ATen/ATen.h>
#include <torch/library.h>

#include <tuple>
#include <vector>

namespace pyg_sar {
namespace ops {

// Pattern of Q @ A: (out_ptr [R + 1], pos), pos the CSR positions of the edges of `rows`.
std::tuple<at::Tensor, at::Tensor> bulk_select_rows(const at::Tensor& rowptr,
                                                    const at::Tensor& rows);

// GraphSAGE: `fanout` distinct uniform picks per row (all when deg <= fanout or fanout < 0),
// row i keyed by row_keys[i]. (out_ptr [R + 1], pos), positions ascending within a row.
std::tuple<at::Tensor, at::Tensor> bulk_sample_uniform(const at::Tensor& rowptr,
                                                       const at::Tensor& rows,
                                                       const at::Tensor& row_keys,
                                                       int64_t fanout);

// LADIES: Q @ (A * A) with one row per minibatch (rows[batch_ptr[b]:batch_ptr[b + 1]]).
// (ptr [k + 1], cand, weight float64): each minibatch's columns ascending, squared values
// summed in the order of its rows and their edges.
std::tuple<at::Tensor, at::Tensor, at::Tensor> bulk_ladies_weights(
    const at::Tensor& rowptr, const at::Tensor& col, const at::Tensor& values,
    const at::Tensor& rows, const at::Tensor& batch_ptr, int64_t num_cols);

// `fanout` distinct picks per row of `weight` (float64), proportional to the weights, in
// rounds of dart throwing on the prefix sums. (out_ptr, pos into weight), ascending per row.
std::tuple<at::Tensor, at::Tensor> bulk_sample_weighted(const at::Tensor& ptr,
                                                        const at::Tensor& weight,
                                                        const at::Tensor& row_keys,
                                                        int64_t fanout);

// Edges of `rows` whose column is in keep_cols[keep_ptr[b]:keep_ptr[b + 1]] (ascending) for the
// row's minibatch b = row_batch[i]. (out_ptr [R + 1], pos).
std::tuple<at::Tensor, at::Tensor> bulk_extract_columns(const at::Tensor& rowptr,
                                                        const at::Tensor& col,
                                                        const at::Tensor& rows,
                                                        const at::Tensor& row_batch,
                                                        const at::Tensor& keep_ptr,
                                                        const at::Tensor& keep_cols,
                                                        int64_t num_cols);

// Per-minibatch local ids: minibatch b holds prev_nodes[h][prev_ptr[h][b]:prev_ptr[h][b + 1]]
// for h = 0, 1, ... (in local-id order); unseen candidates become new nodes in order of first
// appearance. (new_nodes, new_ptr [k + 1], cand_local).
std::tuple<at::Tensor, at::Tensor, at::Tensor> bulk_relabel(
    int64_t num_nodes, const std::vector<at::Tensor>& prev_nodes,
    const std::vector<at::Tensor>& prev_ptr, const at::Tensor& cand, const at::Tensor& cand_ptr);

// Argument checks (ValueError naming the op and the offending values). check_bulk_col checks
// shapes only: kernels that index with column values check each value as they read it.
void check_bulk_rows(const char* op, const at::Tensor& rowptr, const at::Tensor& rows);
void check_bulk_keys(const char* op, const at::Tensor& rows, const at::Tensor& row_keys);
void check_bulk_ptr(const char* op, const at::Tensor& ptr, int64_t total, const char* what);
void check_bulk_col(const char* op, const at::Tensor& rowptr, const at::Tensor& col,
                    int64_t num_cols);
void check_bulk_weight(const char* op, const at::Tensor& weight);
void check_bulk_relabel(int64_t num_nodes, const std::vector<at::Tensor>& prev_nodes,
                        const std::vector<at::Tensor>& prev_ptr, const at::Tensor& cand,
                        const at::Tensor& cand_ptr);

// All the checks of one op.
void check_bulk_select_rows_args(const at::Tensor& rowptr, const at::Tensor& rows);
void check_bulk_sample_uniform_args(const at::Tensor& rowptr, const at::Tensor& rows,
                                    const at::Tensor& row_keys);
void check_bulk_ladies_weights_args(const at::Tensor& rowptr, const at::Tensor& col,
                                    const at::Tensor& values, const at::Tensor& rows,
                                    const at::Tensor& batch_ptr, int64_t num_cols);
void check_bulk_sample_weighted_args(const at::Tensor& ptr, const at::Tensor& weight,
                                     const at::Tensor& row_keys);
void check_bulk_extract_columns_args(const at::Tensor& rowptr, const at::Tensor& col,
                                     const at::Tensor& rows, const at::Tensor& row_batch,
                                     const at::Tensor& keep_ptr, const at::Tensor& keep_cols,
                                     int64_t num_cols);

// Backend registration, shared by the CPU and CUDA kernels: the registered functions check the
// arguments once, then call the `Kernels` function of the same name and signature
// (select_rows, sample_uniform, sample_weighted, extract_columns; optionally ladies_weights and
// relabel, which a backend without them leaves out: pyg_sar.ops.sampling runs their pure-torch
// reference there).
template <typename Kernels>
struct SamplingOps {
  static std::tuple<at::Tensor, at::Tensor> select_rows(const at::Tensor& rowptr,
                                                        const at::Tensor& rows) {
    check_bulk_select_rows_args(rowptr, rows);
    return Kernels::select_rows(rowptr, rows);
  }

  static std::tuple<at::Tensor, at::Tensor> sample_uniform(const at::Tensor& rowptr,
                                                           const at::Tensor& rows,
                                                           const at::Tensor& row_keys,
                                                           int64_t fanout) {
    check_bulk_sample_uniform_args(rowptr, rows, row_keys);
    return Kernels::sample_uniform(rowptr, rows, row_keys, fanout);
  }

  static std::tuple<at::Tensor, at::Tensor, at::Tensor> ladies_weights(
      const at::Tensor& rowptr, const at::Tensor& col, const at::Tensor& values,
      const at::Tensor& rows, const at::Tensor& batch_ptr, int64_t num_cols) {
    check_bulk_ladies_weights_args(rowptr, col, values, rows, batch_ptr, num_cols);
    return Kernels::ladies_weights(rowptr, col, values, rows, batch_ptr, num_cols);
  }

  static std::tuple<at::Tensor, at::Tensor> sample_weighted(const at::Tensor& ptr,
                                                            const at::Tensor& weight,
                                                            const at::Tensor& row_keys,
                                                            int64_t fanout) {
    check_bulk_sample_weighted_args(ptr, weight, row_keys);
    return Kernels::sample_weighted(ptr, weight, row_keys, fanout);
  }

  static std::tuple<at::Tensor, at::Tensor> extract_columns(
      const at::Tensor& rowptr, const at::Tensor& col, const at::Tensor& rows,
      const at::Tensor& row_batch, const at::Tensor& keep_ptr, const at::Tensor& keep_cols,
      int64_t num_cols) {
    check_bulk_extract_columns_args(rowptr, col, rows, row_batch, keep_ptr, keep_cols, num_cols);
    return Kernels::extract_columns(rowptr, col, rows, row_batch, keep_ptr, keep_cols, num_cols);
  }

  static std::tuple<at::Tensor, at::Tensor, at::Tensor> relabel(int64_t num_nodes,
                                                                at::TensorList prev_nodes,
                                                                at::TensorList prev_ptr,
                                                                const at::Tensor& cand,
                                                                const at::Tensor& cand_ptr) {
    check_bulk_relabel(num_nodes, prev_nodes.vec(), prev_ptr.vec(), cand, cand_ptr);
    return Kernels::relabel(num_nodes, prev_nodes, prev_ptr, cand, cand_ptr);
  }
};

// Registers `Kernels` (see SamplingOps) for the dispatch key of the enclosing TORCH_LIBRARY_IMPL.
template <typename Kernels>
void register_sampling_kernels(torch::Library& m) {
  using Ops = SamplingOps<Kernels>;
  m.impl(TORCH_SELECTIVE_NAME("pyg_sar::bulk_select_rows"), TORCH_FN(Ops::select_rows));
  m.impl(TORCH_SELECTIVE_NAME("pyg_sar::bulk_sample_uniform"), TORCH_FN(Ops::sample_uniform));
  m.impl(TORCH_SELECTIVE_NAME("pyg_sar::bulk_sample_weighted"), TORCH_FN(Ops::sample_weighted));
  m.impl(TORCH_SELECTIVE_NAME("pyg_sar::bulk_extract_columns"), TORCH_FN(Ops::extract_columns));
  if constexpr (requires { Kernels::ladies_weights; }) {
    m.impl(TORCH_SELECTIVE_NAME("pyg_sar::bulk_ladies_weights"), TORCH_FN(Ops::ladies_weights));
  }
  if constexpr (requires { Kernels::relabel; }) {
    m.impl(TORCH_SELECTIVE_NAME("pyg_sar::bulk_relabel"), TORCH_FN(Ops::relabel));
  }
}

}  // namespace ops
}  // namespace pyg_sar
