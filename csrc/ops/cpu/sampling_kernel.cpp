// CPU kernels of the bulk-sampling ops, parallel with at::parallel_for over the rows of Q @ A
// (select, uniform picks, column extraction) or over minibatches (LADIES' Q @ (A * A), the
// weighted picks, relabelling), i.e. over the rank's intra-op threads. Every output element is
// written by one thread in a fixed order, and the random numbers are keyed by row, not drawn
// from a stream: results do not depend on the thread count, and they equal the pure-torch
// reference (pyg_sar/ops/sampling_reference.py) bit for bit.
#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <torch/library.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <unordered_set>
#include <vector>

#include "../sampling.h"
#include "parallel.h"
#include "../sampling_math.h"

namespace pyg_sar {
namespace ops {

namespace {

namespace sm = sampling_math;

constexpr int64_t kSmallFanout = 64;  // up to here a linear scan finds repeated darts

at::Tensor exclusive_ptr(const std::vector<int64_t>& counts) {
  at::Tensor ptr = at::empty({int64_t(counts.size()) + 1}, at::kLong);
  int64_t* p = ptr.mutable_data_ptr<int64_t>();
  p[0] = 0;
  for (size_t i = 0; i < counts.size(); ++i) p[i + 1] = p[i] + counts[i];
  return ptr;
}

std::tuple<at::Tensor, at::Tensor> select_rows_cpu(const at::Tensor& rowptr_in,
                                                   const at::Tensor& rows_in) {
  const at::Tensor rowptr = rowptr_in.contiguous(), rows = rows_in.contiguous();
  const int64_t R = rows.numel();
  const int64_t* rp = rowptr.const_data_ptr<int64_t>();
  const int64_t* r = rows.const_data_ptr<int64_t>();
  std::vector<int64_t> counts(R);
  for (int64_t i = 0; i < R; ++i) counts[i] = rp[r[i] + 1] - rp[r[i]];
  at::Tensor out_ptr = exclusive_ptr(counts);
  const int64_t* op = out_ptr.const_data_ptr<int64_t>();
  at::Tensor pos = at::empty({op[R]}, at::kLong);
  int64_t* out = pos.mutable_data_ptr<int64_t>();
  at::parallel_for(0, R, grain_for(R, op[R], 1), [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      const int64_t start = rp[r[i]];
      for (int64_t e = op[i]; e < op[i + 1]; ++e) out[e] = start + (e - op[i]);
    }
  });
  return {out_ptr, pos};
}

// Uniform picks of one row with a large fanout: same acceptance rule, hashed membership.
void uniform_row_large(int64_t key, int64_t deg, int64_t fanout, int64_t* out) {
  std::unordered_set<int64_t> seen;
  seen.reserve(size_t(fanout) * 2);
  int64_t count = 0;
  for (int64_t t = 0; count < fanout; ++t) {
    const int64_t j = sm::uniform_pick(key, t, deg);
    if (seen.insert(j).second) out[count++] = j;
  }
  std::sort(out, out + fanout);
}

std::tuple<at::Tensor, at::Tensor> sample_uniform_cpu(const at::Tensor& rowptr_in,
                                                      const at::Tensor& rows_in,
                                                      const at::Tensor& keys_in, int64_t fanout) {
  const at::Tensor rowptr = rowptr_in.contiguous(), rows = rows_in.contiguous();
  const at::Tensor keys = keys_in.contiguous();
  const int64_t R = rows.numel();
  const int64_t* rp = rowptr.const_data_ptr<int64_t>();
  const int64_t* r = rows.const_data_ptr<int64_t>();
  const int64_t* kp = keys.const_data_ptr<int64_t>();
  std::vector<int64_t> counts(R);
  for (int64_t i = 0; i < R; ++i) {
    const int64_t deg = rp[r[i] + 1] - rp[r[i]];
    counts[i] = fanout < 0 ? deg : std::min(deg, fanout);
  }
  at::Tensor out_ptr = exclusive_ptr(counts);
  const int64_t* op = out_ptr.const_data_ptr<int64_t>();
  at::Tensor pos = at::empty({op[R]}, at::kLong);
  int64_t* out = pos.mutable_data_ptr<int64_t>();
  at::parallel_for(0, R, grain_for(R, 4 * op[R], 1), [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      const int64_t start = rp[r[i]], deg = rp[r[i] + 1] - start;
      int64_t* o = out + op[i];
      const int64_t n = op[i + 1] - op[i];
      if (n == deg) {
        for (int64_t j = 0; j < deg; ++j) o[j] = start + j;
        continue;
      }
      if (n <= kSmallFanout) {
        sm::uniform_row(kp[i], deg, n, o);
      } else {
        uniform_row_large(kp[i], deg, n, o);
      }
      for (int64_t j = 0; j < n; ++j) o[j] += start;
    }
  });
  return {out_ptr, pos};
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> ladies_weights_cpu(
    const at::Tensor& rowptr_in, const at::Tensor& col_in, const at::Tensor& values_in,
    const at::Tensor& rows_in, const at::Tensor& batch_ptr_in, int64_t num_cols) {
  const char* opname = "bulk_ladies_weights";
  const at::Tensor rowptr = rowptr_in.contiguous(), col = col_in.contiguous();
  const at::Tensor values = values_in.contiguous(), rows = rows_in.contiguous();
  const at::Tensor batch_ptr = batch_ptr_in.contiguous();
  const int64_t k = batch_ptr.numel() - 1;
  const int64_t* rp = rowptr.const_data_ptr<int64_t>();
  const int64_t* cp = col.const_data_ptr<int64_t>();
  const double* vp = values.const_data_ptr<double>();
  const int64_t* r = rows.const_data_ptr<int64_t>();
  const int64_t* bp = batch_ptr.const_data_ptr<int64_t>();
  std::vector<std::vector<int64_t>> cand(k);
  std::vector<std::vector<double>> weight(k);
  std::atomic<int64_t> bad_col{-1};
  at::parallel_for(0, k, 1, [&](int64_t begin, int64_t end) {
    // dense accumulator over the column space, reset through the touched list
    std::vector<double> acc(num_cols, 0.0);
    std::vector<uint8_t> used(num_cols, 0);
    for (int64_t b = begin; b < end; ++b) {
      std::vector<int64_t>& touched = cand[b];
      for (int64_t i = bp[b]; i < bp[b + 1]; ++i) {
        for (int64_t e = rp[r[i]]; e < rp[r[i] + 1]; ++e) {
          const int64_t c = cp[e];
          if (c < 0 || c >= num_cols) {
            bad_col.store(c);
            continue;
          }
          if (!used[c]) {
            used[c] = 1;
            touched.push_back(c);
          }
          acc[c] += vp[e] * vp[e];
        }
      }
      std::sort(touched.begin(), touched.end());
      std::vector<double>& w = weight[b];
      w.resize(touched.size());
      for (size_t j = 0; j < touched.size(); ++j) {
        w[j] = acc[touched[j]];
        acc[touched[j]] = 0.0;
        used[touched[j]] = 0;
      }
    }
  });
  TORCH_CHECK_VALUE(bad_col.load() == -1, opname, ": col values must lie in [0, num_cols) = [0, ",
                    num_cols, ") (got ", bad_col.load(), ")");
  std::vector<int64_t> counts(k);
  for (int64_t b = 0; b < k; ++b) counts[b] = int64_t(cand[b].size());
  at::Tensor ptr = exclusive_ptr(counts);
  const int64_t* p = ptr.const_data_ptr<int64_t>();
  at::Tensor cand_t = at::empty({p[k]}, at::kLong);
  at::Tensor weight_t = at::empty({p[k]}, at::kDouble);
  for (int64_t b = 0; b < k; ++b) {
    std::copy(cand[b].begin(), cand[b].end(), cand_t.mutable_data_ptr<int64_t>() + p[b]);
    std::copy(weight[b].begin(), weight[b].end(), weight_t.mutable_data_ptr<double>() + p[b]);
  }
  return {ptr, cand_t, weight_t};
}

// Weighted picks of one row (n > fanout positive entries), in rounds; see the reference.
void weighted_row(const double* w_in, int64_t n, int64_t key, int64_t fanout,
                  std::vector<double>& w, std::vector<double>& prefix, std::vector<int64_t>& hit,
                  std::vector<int64_t>& out) {
  w.assign(w_in, w_in + n);
  prefix.resize(n);
  hit.assign(n, -1);  // the round in which an entry was hit
  out.clear();
  std::vector<int64_t> round;
  int64_t thrown = 0;
  for (int64_t round_id = 0;; ++round_id) {
    if (int64_t(out.size()) >= fanout) break;
    double total = 0.0;
    int64_t last = -1;
    for (int64_t j = 0; j < n; ++j) {
      total += w[j];
      prefix[j] = total;
      if (w[j] > 0) last = j;
    }
    const int64_t need = fanout - int64_t(out.size());
    round.clear();
    for (int64_t t = thrown; t < thrown + need; ++t) {
      int64_t j = sm::upper_bound(prefix.data(), n, sm::dart(key, t) * total);
      j = std::min(j, last);
      if (hit[j] != round_id) {
        hit[j] = round_id;
        round.push_back(j);
      }
    }
    thrown += need;
    for (int64_t j : round) {
      w[j] = 0.0;
      out.push_back(j);
    }
  }
  std::sort(out.begin(), out.end());
}

std::tuple<at::Tensor, at::Tensor> sample_weighted_cpu(const at::Tensor& ptr_in,
                                                       const at::Tensor& weight_in,
                                                       const at::Tensor& keys_in,
                                                       int64_t fanout) {
  const int64_t R = ptr_in.numel() - 1;
  const at::Tensor ptr = ptr_in.contiguous(), weight = weight_in.contiguous();
  const at::Tensor keys = keys_in.contiguous();
  const int64_t* p = ptr.const_data_ptr<int64_t>();
  const double* wp = weight.const_data_ptr<double>();
  const int64_t* kp = keys.const_data_ptr<int64_t>();
  std::vector<std::vector<int64_t>> picks(R);
  at::parallel_for(0, R, 1, [&](int64_t begin, int64_t end) {
    std::vector<double> w, prefix;
    std::vector<int64_t> hit;
    for (int64_t i = begin; i < end; ++i) {
      const int64_t n = p[i + 1] - p[i];
      const double* row = wp + p[i];
      int64_t positive = 0;
      for (int64_t j = 0; j < n; ++j) positive += row[j] > 0;
      std::vector<int64_t>& out = picks[i];
      if (fanout < 0 || positive <= fanout) {
        for (int64_t j = 0; j < n; ++j) {
          if (row[j] > 0) out.push_back(j);
        }
      } else {
        weighted_row(row, n, kp[i], fanout, w, prefix, hit, out);
      }
      for (int64_t& j : out) j += p[i];
    }
  });
  std::vector<int64_t> counts(R);
  for (int64_t i = 0; i < R; ++i) counts[i] = int64_t(picks[i].size());
  at::Tensor out_ptr = exclusive_ptr(counts);
  const int64_t* op = out_ptr.const_data_ptr<int64_t>();
  at::Tensor pos = at::empty({op[R]}, at::kLong);
  for (int64_t i = 0; i < R; ++i) {
    std::copy(picks[i].begin(), picks[i].end(), pos.mutable_data_ptr<int64_t>() + op[i]);
  }
  return {out_ptr, pos};
}

std::tuple<at::Tensor, at::Tensor> extract_columns_cpu(
    const at::Tensor& rowptr_in, const at::Tensor& col_in, const at::Tensor& rows_in,
    const at::Tensor& row_batch_in, const at::Tensor& keep_ptr_in, const at::Tensor& keep_in,
    int64_t num_cols) {
  const at::Tensor rowptr = rowptr_in.contiguous(), col = col_in.contiguous();
  const at::Tensor rows = rows_in.contiguous(), row_batch = row_batch_in.contiguous();
  const at::Tensor keep_ptr = keep_ptr_in.contiguous(), keep = keep_in.contiguous();
  const int64_t R = rows.numel();
  const int64_t* rp = rowptr.const_data_ptr<int64_t>();
  const int64_t* cp = col.const_data_ptr<int64_t>();
  const int64_t* r = rows.const_data_ptr<int64_t>();
  const int64_t* rb = row_batch.const_data_ptr<int64_t>();
  const int64_t* kp = keep_ptr.const_data_ptr<int64_t>();
  const int64_t* kc = keep.const_data_ptr<int64_t>();
  auto kept = [&](int64_t i, int64_t e) {
    const int64_t b = rb[i];
    return sm::sorted_contains(kc + kp[b], kp[b + 1] - kp[b], cp[e]);
  };
  std::vector<int64_t> counts(R, 0);
  int64_t work = rp[rowptr.numel() - 1] / std::max<int64_t>(rowptr.numel() - 1, 1) * R;
  at::parallel_for(0, R, grain_for(R, 8 * work, 1), [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      int64_t c = 0;
      for (int64_t e = rp[r[i]]; e < rp[r[i] + 1]; ++e) c += kept(i, e);
      counts[i] = c;
    }
  });
  at::Tensor out_ptr = exclusive_ptr(counts);
  const int64_t* op = out_ptr.const_data_ptr<int64_t>();
  at::Tensor pos = at::empty({op[R]}, at::kLong);
  int64_t* out = pos.mutable_data_ptr<int64_t>();
  at::parallel_for(0, R, grain_for(R, 8 * work, 1), [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      int64_t o = op[i];
      for (int64_t e = rp[r[i]]; e < rp[r[i] + 1]; ++e) {
        if (kept(i, e)) out[o++] = e;
      }
    }
  });
  return {out_ptr, pos};
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> relabel_cpu(
    int64_t num_nodes, at::TensorList prev_nodes_in, at::TensorList prev_ptr_in,
    const at::Tensor& cand_in, const at::Tensor& cand_ptr_in) {
  const std::vector<at::Tensor> prev_nodes_v(prev_nodes_in.begin(), prev_nodes_in.end());
  const std::vector<at::Tensor> prev_ptr_v(prev_ptr_in.begin(), prev_ptr_in.end());
  std::vector<at::Tensor> prev_nodes, prev_ptr;
  for (size_t h = 0; h < prev_nodes_v.size(); ++h) {
    prev_nodes.push_back(prev_nodes_v[h].contiguous());
    prev_ptr.push_back(prev_ptr_v[h].contiguous());
  }
  const at::Tensor cand = cand_in.contiguous(), cand_ptr = cand_ptr_in.contiguous();
  const int64_t k = cand_ptr.numel() - 1;
  const int64_t* cp = cand.const_data_ptr<int64_t>();
  const int64_t* cpp = cand_ptr.const_data_ptr<int64_t>();
  at::Tensor local = at::empty({cand.numel()}, at::kLong);
  int64_t* lp = local.mutable_data_ptr<int64_t>();
  std::vector<std::vector<int64_t>> fresh(k);
  at::parallel_for(0, k, 1, [&](int64_t begin, int64_t end) {
    std::vector<int32_t> map(num_nodes, -1);  // node -> local id, reset after each minibatch
    for (int64_t b = begin; b < end; ++b) {
      int32_t next = 0;
      for (size_t h = 0; h < prev_nodes.size(); ++h) {
        const int64_t* nodes = prev_nodes[h].const_data_ptr<int64_t>();
        const int64_t* ptr = prev_ptr[h].const_data_ptr<int64_t>();
        for (int64_t i = ptr[b]; i < ptr[b + 1]; ++i) {
          if (map[nodes[i]] < 0) map[nodes[i]] = next;
          ++next;
        }
      }
      std::vector<int64_t>& out = fresh[b];
      for (int64_t i = cpp[b]; i < cpp[b + 1]; ++i) {
        int32_t& id = map[cp[i]];
        if (id < 0) {
          id = next++;
          out.push_back(cp[i]);
        }
        lp[i] = id;
      }
      for (size_t h = 0; h < prev_nodes.size(); ++h) {
        const int64_t* nodes = prev_nodes[h].const_data_ptr<int64_t>();
        const int64_t* ptr = prev_ptr[h].const_data_ptr<int64_t>();
        for (int64_t i = ptr[b]; i < ptr[b + 1]; ++i) map[nodes[i]] = -1;
      }
      for (int64_t v : out) map[v] = -1;
    }
  });
  std::vector<int64_t> counts(k);
  for (int64_t b = 0; b < k; ++b) counts[b] = int64_t(fresh[b].size());
  at::Tensor new_ptr = exclusive_ptr(counts);
  const int64_t* np = new_ptr.const_data_ptr<int64_t>();
  at::Tensor new_nodes = at::empty({np[k]}, at::kLong);
  for (int64_t b = 0; b < k; ++b) {
    std::copy(fresh[b].begin(), fresh[b].end(), new_nodes.mutable_data_ptr<int64_t>() + np[b]);
  }
  return {new_nodes, new_ptr, local};
}

// The kernels; SamplingOps has checked their arguments.
struct CpuKernels {
  static constexpr auto select_rows = &select_rows_cpu;
  static constexpr auto sample_uniform = &sample_uniform_cpu;
  static constexpr auto ladies_weights = &ladies_weights_cpu;
  static constexpr auto sample_weighted = &sample_weighted_cpu;
  static constexpr auto extract_columns = &extract_columns_cpu;
  static constexpr auto relabel = &relabel_cpu;
};

}  // namespace

TORCH_LIBRARY_IMPL(pyg_sar, CPU, m) { register_sampling_kernels<CpuKernels>(m); }

}  // namespace ops
}  // namespace pyg_sar
