// CUDA kernels of the fused attention ops. No torch header: raw pointers and sizes, the per-edge
// arithmetic from gat_attention_math.h (the same the CPU kernels run), explicitly instantiated
// for float and double. Forward: one warp per destination row (GAT: lanes over the H * C
// features, each lane running the online softmax of its head; GATv2: lanes over heads, since
// the score of a head needs all of its channels). Backward: one thread per (destination, head)
// and per (source, head) of the transposed CSR, so every gradient element is written by one
// thread in a fixed edge order: deterministic, no atomics.
#include "gat_attention_kernel.cuh"

namespace pyg_sar {
namespace ops {
namespace cuda {

namespace {

namespace gm = gat_math;

constexpr int kThreads = 256;
constexpr int kWarp = 32;
constexpr int64_t kMaxBlocks = 65535;

int64_t num_blocks(int64_t work, int64_t per_block) {
  const int64_t b = (work + per_block - 1) / per_block;
  return b < 1 ? 1 : (b > kMaxBlocks ? kMaxBlocks : b);
}

template <typename T>
__device__ T dot(const T* a, const T* b, int64_t n) {
  T s = T(0);
  for (int64_t c = 0; c < n; ++c) s += a[c] * b[c];
  return s;
}

// GAT forward: warp per destination row; lane f of a feature chunk keeps the (m, l) of its head
// in registers (recomputed identically by the C lanes of a head) and its own accumulator.
// The row loop is warp-uniform (i depends on the warp only).
template <typename T>
__global__ void gat_forward_kernel(gm::Inputs<T> in, T* __restrict__ m, T* __restrict__ l,
                                   T* __restrict__ acc, int64_t num_dst) {
  const int lane = threadIdx.x % kWarp;
  const int64_t warps = int64_t(gridDim.x) * (blockDim.x / kWarp);
  const int64_t H = in.H, C = in.C, F = H * C;
  for (int64_t i = (blockIdx.x * int64_t(blockDim.x) + threadIdx.x) / kWarp; i < num_dst;
       i += warps) {
    const int64_t e0 = in.rowptr[i], e1 = in.rowptr[i + 1];
    if (e0 == e1) continue;
    // Uniform trip count over feature chunks so that __syncwarp is reached by every lane: all
    // lanes of a head read its initial (m, l) before the lane of its last channel writes them
    // (that lane sits in the last chunk touching the head).
    for (int64_t f0 = 0; f0 < F; f0 += kWarp) {
      const int64_t f = f0 + lane, h = f / C, c = f % C;
      const bool active = f < F;
      gm::OnlineSoftmax<T> st{T(0), T(0)};
      if (active) {
        st = gm::OnlineSoftmax<T>{m[i * H + h], l[i * H + h]};
        T a = acc[i * F + f];
        for (int64_t e = e0; e < e1; ++e) {
          const int64_t j = in.col[e];
          T w;
          a *= st.push(in.score(e, j, i, h), w);
          a += w * in.drop(j, i, h) * in.x_src[j * F + f];
        }
        acc[i * F + f] = a;
      }
      __syncwarp();
      if (active && c == C - 1) {
        m[i * H + h] = st.m;
        l[i * H + h] = st.l;
      }
    }
  }
}

// GATv2 forward: warp per destination row, lanes over heads; each lane updates acc[i, h, :].
template <typename T>
__global__ void gatv2_forward_kernel(gm::Inputs<T> in, T* __restrict__ m, T* __restrict__ l,
                                     T* __restrict__ acc, int64_t num_dst) {
  const int lane = threadIdx.x % kWarp;
  const int64_t warps = int64_t(gridDim.x) * (blockDim.x / kWarp);
  const int64_t H = in.H, C = in.C;
  for (int64_t i = (blockIdx.x * int64_t(blockDim.x) + threadIdx.x) / kWarp; i < num_dst;
       i += warps) {
    const int64_t e0 = in.rowptr[i], e1 = in.rowptr[i + 1];
    if (e0 == e1) continue;
    for (int64_t h = lane; h < H; h += kWarp) {
      gm::OnlineSoftmax<T> st{m[i * H + h], l[i * H + h]};
      T* a = acc + (i * H + h) * C;
      for (int64_t e = e0; e < e1; ++e) {
        const int64_t j = in.col[e];
        T w;
        const T rescale = st.push(in.score(e, j, i, h), w);
        const T wd = w * in.drop(j, i, h);
        const T* x = in.x_src + (j * H + h) * C;
        for (int64_t c = 0; c < C; ++c) a[c] = a[c] * rescale + wd * x[c];
      }
      m[i * H + h] = st.m;
      l[i * H + h] = st.l;
    }
  }
}

// Backward pass 1: one thread per (destination, head).
template <typename T>
__global__ void backward_dst_kernel(gm::Inputs<T> in, const T* __restrict__ go,
                                    const T* __restrict__ out, const T* __restrict__ m,
                                    const T* __restrict__ l, T* __restrict__ big_d,
                                    T* __restrict__ g_dst, T* __restrict__ g_edge,
                                    T* __restrict__ g_att_rows, int64_t num_dst) {
  const int64_t H = in.H, C = in.C;
  const bool v2 = in.att != nullptr;
  for (int64_t ih = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; ih < num_dst * H;
       ih += int64_t(gridDim.x) * blockDim.x) {
    const int64_t i = ih / H, h = ih % H;
    const T* g = go + ih * C;
    const T D = dot(g, out + ih * C, C);
    big_d[ih] = D;
    const int64_t e0 = in.rowptr[i], e1 = in.rowptr[i + 1];
    if (!v2) {
      T acc = T(0);
      for (int64_t e = e0; e < e1; ++e) {
        const int64_t j = in.col[e];
        const T pre = gm::gat_pre(in.a_src[j * H + h], in.a_dst[ih], in.a_edge, e * H + h);
        const T a = gm::attention(gm::leaky_relu(pre, in.slope), m[ih], l[ih]);
        const T ds = gm::score_grad(a, in.drop(j, i, h), dot(g, in.x_src + (j * H + h) * C, C), D);
        const T dpre = ds * gm::leaky_relu_grad(pre, in.slope);
        acc += dpre;
        if (g_edge != nullptr) g_edge[e * H + h] = dpre;
      }
      g_dst[ih] = acc;
      continue;
    }
    T* gd = g_dst + ih * C;
    T* gat = g_att_rows + ih * C;
    for (int64_t c = 0; c < C; ++c) gd[c] = gat[c] = T(0);
    const T* att = in.att + h * C;
    const T* xd = in.x_dst + ih * C;
    for (int64_t e = e0; e < e1; ++e) {
      const int64_t j = in.col[e];
      const T* xs = in.x_src + (j * H + h) * C;
      const T* xe = in.x_edge == nullptr ? nullptr : in.x_edge + (e * H + h) * C;
      const T a = gm::attention(in.score(e, j, i, h), m[ih], l[ih]);
      const T ds = gm::score_grad(a, in.drop(j, i, h), dot(g, xs, C), D);
      for (int64_t c = 0; c < C; ++c) {
        const T pre = gm::gatv2_pre(xs[c], xd[c], xe, c);
        const T gp = ds * att[c] * gm::leaky_relu_grad(pre, in.slope);
        gd[c] += gp;
        gat[c] += ds * gm::leaky_relu(pre, in.slope);
        if (g_edge != nullptr) g_edge[(e * H + h) * C + c] = gp;
      }
    }
  }
}

// Backward pass 2: one thread per (source row, head) over the transposed CSR.
template <typename T>
__global__ void backward_src_kernel(gm::Inputs<T> in, const int64_t* __restrict__ colptr,
                                    const int64_t* __restrict__ perm,
                                    const int64_t* __restrict__ row, const T* __restrict__ go,
                                    const T* __restrict__ m, const T* __restrict__ l,
                                    const T* __restrict__ big_d, T* __restrict__ g_x,
                                    T* __restrict__ g_asrc, int64_t num_src) {
  const int64_t H = in.H, C = in.C;
  const bool v2 = in.att != nullptr;
  for (int64_t jh = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; jh < num_src * H;
       jh += int64_t(gridDim.x) * blockDim.x) {
    const int64_t j = jh / H, h = jh % H;
    T* gx = g_x + jh * C;
    const T* xs = in.x_src + jh * C;
    for (int64_t c = 0; c < C; ++c) gx[c] = T(0);
    T gas = T(0);
    for (int64_t k = colptr[j]; k < colptr[j + 1]; ++k) {
      const int64_t e = perm[k], i = row[k], ih = i * H + h;
      const T* g = go + ih * C;
      const T drop = in.drop(j, i, h);
      if (!v2) {
        const T pre = gm::gat_pre(in.a_src[jh], in.a_dst[ih], in.a_edge, e * H + h);
        const T a = gm::attention(gm::leaky_relu(pre, in.slope), m[ih], l[ih]);
        gas += gm::score_grad(a, drop, dot(g, xs, C), big_d[ih]) *
               gm::leaky_relu_grad(pre, in.slope);
        for (int64_t c = 0; c < C; ++c) gx[c] += a * drop * g[c];
        continue;
      }
      const T* att = in.att + h * C;
      const T* xd = in.x_dst + ih * C;
      const T* xe = in.x_edge == nullptr ? nullptr : in.x_edge + (e * H + h) * C;
      const T a = gm::attention(in.score(e, j, i, h), m[ih], l[ih]);
      const T ds = gm::score_grad(a, drop, dot(g, xs, C), big_d[ih]);
      for (int64_t c = 0; c < C; ++c) {
        const T pre = gm::gatv2_pre(xs[c], xd[c], xe, c);
        gx[c] += ds * att[c] * gm::leaky_relu_grad(pre, in.slope) + a * drop * g[c];
      }
    }
    if (!v2) g_asrc[jh] = gas;
  }
}

}  // namespace

template <typename T>
cudaError_t launch_attention_forward(const gm::Inputs<T>& in, T* m, T* l, T* acc,
                                     int64_t num_dst, cudaStream_t stream) {
  if (num_dst == 0) return cudaSuccess;
  const int64_t blocks = num_blocks(num_dst * kWarp, kThreads);
  if (in.att == nullptr) {
    gat_forward_kernel<T><<<blocks, kThreads, 0, stream>>>(in, m, l, acc, num_dst);
  } else {
    gatv2_forward_kernel<T><<<blocks, kThreads, 0, stream>>>(in, m, l, acc, num_dst);
  }
  return cudaGetLastError();
}

template <typename T>
cudaError_t launch_attention_backward_dst(const gm::Inputs<T>& in, const T* grad_out,
                                          const T* out, const T* m, const T* l, T* big_d,
                                          T* grad_dst, T* grad_edge, T* grad_att_rows,
                                          int64_t num_dst, cudaStream_t stream) {
  if (num_dst * in.H == 0) return cudaSuccess;
  backward_dst_kernel<T><<<num_blocks(num_dst * in.H, kThreads), kThreads, 0, stream>>>(
      in, grad_out, out, m, l, big_d, grad_dst, grad_edge, grad_att_rows, num_dst);
  return cudaGetLastError();
}

template <typename T>
cudaError_t launch_attention_backward_src(const gm::Inputs<T>& in, const int64_t* colptr,
                                          const int64_t* perm, const int64_t* row,
                                          const T* grad_out, const T* m, const T* l,
                                          const T* big_d, T* grad_x, T* grad_a_src,
                                          int64_t num_src, cudaStream_t stream) {
  if (num_src * in.H == 0) return cudaSuccess;
  backward_src_kernel<T><<<num_blocks(num_src * in.H, kThreads), kThreads, 0, stream>>>(
      in, colptr, perm, row, grad_out, m, l, big_d, grad_x, grad_a_src, num_src);
  return cudaGetLastError();
}

#define PYG_SAR_INSTANTIATE_ATTENTION(T)                                                      \
  template cudaError_t launch_attention_forward<T>(const gm::Inputs<T>&, T*, T*, T*, int64_t, \
                                                   cudaStream_t);                            \
  template cudaError_t launch_attention_backward_dst<T>(const gm::Inputs<T>&, const T*,       \
                                                        const T*, const T*, const T*, T*, T*, \
                                                        T*, T*, int64_t, cudaStream_t);       \
  template cudaError_t launch_attention_backward_src<T>(                                     \
      const gm::Inputs<T>&, const int64_t*, const int64_t*, const int64_t*, const T*,        \
      const T*, const T*, const T*, T*, T*, int64_t, cudaStream_t);
PYG_SAR_INSTANTIATE_ATTENTION(float)
PYG_SAR_INSTANTIATE_ATTENTION(double)
#undef PYG_SAR_INSTANTIATE_ATTENTION

}  // namespace cuda
}  // namespace ops
}  // namespace pyg_sar
