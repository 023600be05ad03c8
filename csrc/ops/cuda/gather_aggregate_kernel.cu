// CUDA kernels of gather_aggregate. No torch header: raw pointers and sizes, templated on the
// scalar type of x and the reduce, explicitly instantiated for float, double, __nv_bfloat16 and
// __half; x is widened on load and everything else is in A = acc_t<T> (float for the half types). Every output element
// is computed by one thread (or one warp) in a fixed edge order, so results are deterministic.
#include "gather_aggregate_kernel.cuh"

#include <type_traits>

namespace pyg_sar {
namespace ops {
namespace cuda {

namespace {

namespace gam = gather_aggregate_math;

constexpr int kThreads = 256;
constexpr int64_t kMaxBlocks = 65535;

int64_t num_blocks(int64_t work, int64_t per_block) {
  const int64_t b = (work + per_block - 1) / per_block;
  return b < 1 ? 1 : (b > kMaxBlocks ? kMaxBlocks : b);
}

// One thread per output element (i, f); consecutive threads read consecutive features of a row.
template <typename T, typename A, Reduce R>
__global__ void forward_kernel(const int64_t* __restrict__ rowptr,
                               const int64_t* __restrict__ col, const T* __restrict__ x,
                               const A* __restrict__ weight, A* __restrict__ out,
                               int64_t* __restrict__ arg, int64_t num_dst, int64_t F) {
  const int64_t total = num_dst * F;
  for (int64_t idx = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; idx < total;
       idx += int64_t(gridDim.x) * blockDim.x) {
    const int64_t i = idx / F, f = idx % F;
    const int64_t e0 = rowptr[i], e1 = rowptr[i + 1];
    if constexpr (gam::kHasArg<R>) {
      if (e0 == e1) {
        out[idx] = A(0);
        arg[idx] = -1;
        continue;
      }
      A best = gam::message(widen(x[col[e0] * F + f]), gam::edge_weight(weight, e0));
      int64_t win = e0;
      for (int64_t e = e0 + 1; e < e1; ++e) {
        const A v = gam::message(widen(x[col[e] * F + f]), gam::edge_weight(weight, e));
        if (gam::replaces<R>(v, best)) {
          best = v;
          win = e;
        }
      }
      out[idx] = best;
      arg[idx] = win;
    } else {
      A acc = A(0);
      for (int64_t e = e0; e < e1; ++e) {
        acc += gam::message(widen(x[col[e] * F + f]), gam::edge_weight(weight, e));
      }
      out[idx] = gam::finalize<R>(acc, e1 - e0);
    }
  }
}

// One thread per grad_x element (s, f), over the edges of source s in ascending position.
template <typename A, Reduce R>
__global__ void grad_x_kernel(const int64_t* __restrict__ rowptr,
                              const int64_t* __restrict__ colptr,
                              const int64_t* __restrict__ perm, const int64_t* __restrict__ row,
                              const A* __restrict__ grad_out, const A* __restrict__ weight,
                              const int64_t* __restrict__ arg, A* __restrict__ grad_x,
                              int64_t num_src, int64_t F) {
  const int64_t total = num_src * F;
  for (int64_t idx = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; idx < total;
       idx += int64_t(gridDim.x) * blockDim.x) {
    const int64_t s = idx / F, f = idx % F;
    A acc = A(0);
    for (int64_t k = colptr[s]; k < colptr[s + 1]; ++k) {
      const int64_t e = perm[k], i = row[e];
      if constexpr (gam::kHasArg<R>) {
        if (arg[i * F + f] == e) {
          acc += gam::message(grad_out[i * F + f], gam::edge_weight(weight, e));
        }
      } else {
        const A c = gam::message(gam::message_grad_scale<R, A>(rowptr[i + 1] - rowptr[i]),
                                 gam::edge_weight(weight, e));
        acc += c * grad_out[i * F + f];
      }
    }
    grad_x[idx] = acc;
  }
}

// One warp per edge: lanes stride over features, then a fixed shuffle tree.
template <typename T, typename A, Reduce R>
__global__ void grad_weight_kernel(const int64_t* __restrict__ rowptr,
                                   const int64_t* __restrict__ col,
                                   const int64_t* __restrict__ row, const T* __restrict__ x,
                                   const A* __restrict__ grad_out,
                                   const int64_t* __restrict__ arg, A* __restrict__ grad_weight,
                                   int64_t num_edges, int64_t F) {
  const int lane = threadIdx.x % 32;
  const int64_t warps_per_grid = int64_t(gridDim.x) * (blockDim.x / 32);
  for (int64_t e = (blockIdx.x * int64_t(blockDim.x) + threadIdx.x) / 32; e < num_edges;
       e += warps_per_grid) {
    const int64_t i = row[e];
    const T* xr = x + col[e] * F;
    const A* go = grad_out + i * F;
    A acc = A(0);
    for (int64_t f = lane; f < F; f += 32) {
      if constexpr (gam::kHasArg<R>) {
        if (arg[i * F + f] == e) acc += widen(xr[f]) * go[f];
      } else {
        acc += widen(xr[f]) * go[f];
      }
    }
    for (int offset = 16; offset > 0; offset /= 2) {
      acc += __shfl_down_sync(0xffffffffu, acc, offset);
    }
    if (lane == 0) {
      if constexpr (!gam::kHasArg<R>) {
        acc *= gam::message_grad_scale<R, A>(rowptr[i + 1] - rowptr[i]);
      }
      grad_weight[e] = acc;
    }
  }
}

// Calls f with the reduce as a compile-time constant.
template <typename F>
void with_reduce(Reduce reduce, F&& f) {
  switch (reduce) {
    case Reduce::kSum: f(std::integral_constant<Reduce, Reduce::kSum>{}); break;
    case Reduce::kMean: f(std::integral_constant<Reduce, Reduce::kMean>{}); break;
    case Reduce::kMax: f(std::integral_constant<Reduce, Reduce::kMax>{}); break;
    case Reduce::kMin: f(std::integral_constant<Reduce, Reduce::kMin>{}); break;
  }
}

}  // namespace

template <typename T>
cudaError_t launch_gather_aggregate_forward(Reduce reduce, const int64_t* rowptr,
                                            const int64_t* col, const T* x,
                                            const acc_t<T>* weight, acc_t<T>* out, int64_t* arg,
                                            int64_t num_dst, int64_t num_feat,
                                            cudaStream_t stream) {
  if (num_dst * num_feat == 0) return cudaSuccess;
  with_reduce(reduce, [&](auto r) {
    forward_kernel<T, acc_t<T>, decltype(r)::value>
        <<<num_blocks(num_dst * num_feat, kThreads), kThreads, 0, stream>>>(
            rowptr, col, x, weight, out, arg, num_dst, num_feat);
  });
  return cudaGetLastError();
}

template <typename T>
cudaError_t launch_gather_aggregate_grad_x(Reduce reduce, const int64_t* rowptr,
                                           const int64_t* colptr, const int64_t* perm,
                                           const int64_t* row, const acc_t<T>* grad_out,
                                           const acc_t<T>* weight, const int64_t* arg,
                                           acc_t<T>* grad_x, int64_t num_src, int64_t num_feat,
                                           cudaStream_t stream) {
  if (num_src * num_feat == 0) return cudaSuccess;
  with_reduce(reduce, [&](auto r) {
    grad_x_kernel<acc_t<T>, decltype(r)::value>
        <<<num_blocks(num_src * num_feat, kThreads), kThreads, 0, stream>>>(
            rowptr, colptr, perm, row, grad_out, weight, arg, grad_x, num_src, num_feat);
  });
  return cudaGetLastError();
}

template <typename T>
cudaError_t launch_gather_aggregate_grad_weight(Reduce reduce, const int64_t* rowptr,
                                                const int64_t* col, const int64_t* row,
                                                const T* x, const acc_t<T>* grad_out,
                                                const int64_t* arg, acc_t<T>* grad_weight,
                                                int64_t num_edges, int64_t num_feat,
                                                cudaStream_t stream) {
  if (num_edges == 0) return cudaSuccess;
  with_reduce(reduce, [&](auto r) {
    grad_weight_kernel<T, acc_t<T>, decltype(r)::value>
        <<<num_blocks(num_edges * 32, kThreads), kThreads, 0, stream>>>(
            rowptr, col, row, x, grad_out, arg, grad_weight, num_edges, num_feat);
  });
  return cudaGetLastError();
}

PYG_SAR_GATHER_AGGREGATE_LAUNCHERS(, float)
PYG_SAR_GATHER_AGGREGATE_LAUNCHERS(, double)
PYG_SAR_GATHER_AGGREGATE_LAUNCHERS(, __nv_bfloat16)
PYG_SAR_GATHER_AGGREGATE_LAUNCHERS(, __half)
#undef PYG_SAR_GATHER_AGGREGATE_LAUNCHERS

}  // namespace cuda
}  // namespace ops
}  // namespace pyg_sar
