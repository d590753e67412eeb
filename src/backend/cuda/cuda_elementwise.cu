/* cuda_elementwise.cu — SwiGLU and GeGLU forward/backward, dropout, scaling and the residual add on
 * bf16, f32 math.
 *
 * Mirrors backend/cpu/cpu_elementwise.c: silu(g) = g·σ(g), d silu/dg = σ(g)(1 + g(1 − σ(g)));
 * gelu_tanh(g) = g/2·(1 + tanh(u)), u = √(2/π)(g + 0.044715g³), and its derivative as there;
 * dropout keeps element i when fl_rng_uniform(*stream, i) >= p — the same counter-based hash as
 * common/rng.h, so the mask is the CPU's bit for bit. SwiGLU reads the fused gate/up rows
 * [gate (FF) | up (FF)]; dropout and the add take a row stride for their strided operand. Each op
 * is a small functor over the contiguous index i = row·cols + col, run by one grid-stride kernel:
 * 8 elements (16 bytes) per step when every pointer is 16-byte aligned and every row width and
 * stride a multiple of 8 (so the 8 stay in one row), the ragged tail one at a time. */
#include "backend/cuda/cuda_common.cuh"

template <int W> __device__ __forceinline__ void load_w(const bf16 *p, float *f) {
    if (W == 8) bf16x8_to_float(*(const bf16x8 *)p, f);
    else f[0] = __bfloat162float(*p);
}
template <int W> __device__ __forceinline__ void store_w(bf16 *p, const float *f) {
    if (W == 8) *(bf16x8 *)p = float_to_bf16x8(f);
    else *p = __float2bfloat16_rn(f[0]);
}

/* element i = n·FF + f of an (N, FF) matrix -> its offset in (N, 2FF) gate/up rows */
__device__ __forceinline__ size_t gate_at(size_t i, int FF) { return i / FF * 2 * FF + i % FF; }
/* element i = r·cols + c -> its offset in rows of stride ld */
__device__ __forceinline__ size_t strided_at(size_t i, int cols, int ld) { return i / cols * ld + i % cols; }

struct swiglu_fwd_op {
    bf16 *out; const bf16 *gate_up; int FF;
    template <int W> __device__ void apply(size_t i) const {
        float g[W], u[W], o[W];
        size_t gi = gate_at(i, FF);
        load_w<W>(gate_up + gi, g); load_w<W>(gate_up + gi + FF, u);
#pragma unroll
        for (int k = 0; k < W; k++) o[k] = g[k] / (1.0f + expf(-g[k])) * u[k];
        store_w<W>(out + i, o);
    }
};

struct swiglu_bwd_op {
    bf16 *dgate_up; const bf16 *dout, *gate_up; int FF;
    template <int W> __device__ void apply(size_t i) const {
        float g[W], u[W], d[W], dg[W], du[W];
        size_t gi = gate_at(i, FF);
        load_w<W>(gate_up + gi, g); load_w<W>(gate_up + gi + FF, u); load_w<W>(dout + i, d);
#pragma unroll
        for (int k = 0; k < W; k++) {
            float sig = 1.0f / (1.0f + expf(-g[k]));
            dg[k] = d[k] * u[k] * sig * (1.0f + g[k] * (1.0f - sig));
            du[k] = d[k] * g[k] * sig;
        }
        store_w<W>(dgate_up + gi, dg); store_w<W>(dgate_up + gi + FF, du);
    }
};

#define GELU_K0 0.7978845608028654f /* √(2/π) */
#define GELU_K1 0.044715f

struct geglu_fwd_op {
    bf16 *out; const bf16 *gate_up; int FF;
    template <int W> __device__ void apply(size_t i) const {
        float g[W], u[W], o[W];
        size_t gi = gate_at(i, FF);
        load_w<W>(gate_up + gi, g); load_w<W>(gate_up + gi + FF, u);
#pragma unroll
        for (int k = 0; k < W; k++)
            o[k] = 0.5f * g[k] * (1.0f + tanhf(GELU_K0 * (g[k] + GELU_K1 * g[k] * g[k] * g[k]))) * u[k];
        store_w<W>(out + i, o);
    }
};

struct geglu_bwd_op {
    bf16 *dgate_up; const bf16 *dout, *gate_up; int FF;
    template <int W> __device__ void apply(size_t i) const {
        float g[W], u[W], d[W], dg[W], du[W];
        size_t gi = gate_at(i, FF);
        load_w<W>(gate_up + gi, g); load_w<W>(gate_up + gi + FF, u); load_w<W>(dout + i, d);
#pragma unroll
        for (int k = 0; k < W; k++) {
            float t = tanhf(GELU_K0 * (g[k] + GELU_K1 * g[k] * g[k] * g[k]));
            float dact = 0.5f * (1.0f + t) + 0.5f * g[k] * (1.0f - t * t) * GELU_K0 * (1.0f + 3.0f * GELU_K1 * g[k] * g[k]);
            dg[k] = d[k] * u[k] * dact;
            du[k] = d[k] * 0.5f * g[k] * (1.0f + t);
        }
        store_w<W>(dgate_up + gi, dg); store_w<W>(dgate_up + gi + FF, du);
    }
};

struct scale_2d_op {
    bf16 *x; float alpha; int cols, ld;
    template <int W> __device__ void apply(size_t i) const {
        float a[W];
        size_t xi = strided_at(i, cols, ld);
        load_w<W>(x + xi, a);
#pragma unroll
        for (int k = 0; k < W; k++) a[k] *= alpha;
        store_w<W>(x + xi, a);
    }
};

struct dropout_op {
    bf16 *out; const bf16 *inp; float p, keep_scale; const uint64_t *key_ptr; int cols, ld;
    template <int W> __device__ void apply(size_t i) const {
        float x[W];
        uint64_t key = *key_ptr; /* device memory: a recorded step draws the new micro-batch's mask */
        load_w<W>(inp + strided_at(i, cols, ld), x);
#pragma unroll
        for (int k = 0; k < W; k++) x[k] = fl_rng_uniform_dev(key, i + k) >= p ? x[k] * keep_scale : 0.0f;
        store_w<W>(out + i, x);
    }
};

struct add_op {
    bf16 *acc; const bf16 *x; int cols, ld;
    template <int W> __device__ void apply(size_t i) const {
        float a[W], b[W];
        size_t ai = strided_at(i, cols, ld);
        load_w<W>(acc + ai, a); load_w<W>(x + i, b);
#pragma unroll
        for (int k = 0; k < W; k++) a[k] += b[k];
        store_w<W>(acc + ai, a);
    }
};

struct scale_rows_op {
    bf16 *x; const float *w; int cols;
    template <int W> __device__ void apply(size_t i) const { /* W consecutive elements lie in one row (cols % W == 0) */
        float a[W];
        load_w<W>(x + i, a);
        float s = w[i / (size_t)cols];
#pragma unroll
        for (int k = 0; k < W; k++) a[k] *= s;
        store_w<W>(x + i, a);
    }
};

template <typename Op>
__global__ void elementwise_kernel(Op op, size_t N, int vec) {
    size_t tid = (size_t)blockIdx.x * blockDim.x + threadIdx.x, stride = (size_t)gridDim.x * blockDim.x;
    size_t body = vec ? N / 8 * 8 : 0;
    for (size_t g = tid; g < body / 8; g += stride) op.template apply<8>(g * 8);
    for (size_t i = body + tid; i < N; i += stride) op.template apply<1>(i);
}

template <typename Op> static void elementwise_launch(const Op &op, size_t N, int vec, cudaStream_t stream) {
    if (!N) return;
    unsigned blocks = fl_cuda_grid_1d(N, 256, vec ? 8 : 1, (unsigned)fl_cuda.prop.multiProcessorCount * 16);
    elementwise_kernel<Op><<<blocks ? blocks : 1, 256, 0, stream>>>(op, N, vec);
    CUDA_LAUNCH_CHECK();
}

void swiglu_forward(bf16 *out, const bf16 *gate_up, size_t N, int FF, cudaStream_t stream) {
    swiglu_fwd_op op = {out, gate_up, FF};
    elementwise_launch(op, N * (size_t)FF, FF % 8 == 0 && fl_aligned16(out, gate_up), stream);
}

void swiglu_backward(bf16 *dgate_up, const bf16 *dout, const bf16 *gate_up, size_t N, int FF, cudaStream_t stream) {
    swiglu_bwd_op op = {dgate_up, dout, gate_up, FF};
    elementwise_launch(op, N * (size_t)FF, FF % 8 == 0 && fl_aligned16(dgate_up, dout, gate_up), stream);
}

void geglu_forward(bf16 *out, const bf16 *gate_up, size_t N, int FF, cudaStream_t stream) {
    geglu_fwd_op op = {out, gate_up, FF};
    elementwise_launch(op, N * (size_t)FF, FF % 8 == 0 && fl_aligned16(out, gate_up), stream);
}

void geglu_backward(bf16 *dgate_up, const bf16 *dout, const bf16 *gate_up, size_t N, int FF, cudaStream_t stream) {
    geglu_bwd_op op = {dgate_up, dout, gate_up, FF};
    elementwise_launch(op, N * (size_t)FF, FF % 8 == 0 && fl_aligned16(dgate_up, dout, gate_up), stream);
}

void scale_2d(bf16 *x, float alpha, size_t rows, int cols, int ld, cudaStream_t stream) {
    scale_2d_op op = {x, alpha, cols, ld};
    elementwise_launch(op, rows * (size_t)cols, cols % 8 == 0 && ld % 8 == 0 && fl_aligned16(x), stream);
}

void dropout(bf16 *out, const bf16 *inp, float p, const uint64_t *stream_key, size_t rows, int cols, int ld_inp,
             cudaStream_t stream) {
    dropout_op op = {out, inp, p, 1.0f / (1.0f - p), stream_key, cols, ld_inp};
    elementwise_launch(op, rows * (size_t)cols, cols % 8 == 0 && ld_inp % 8 == 0 && fl_aligned16(out, inp), stream);
}

void scale_rows(bf16 *x, const float *w, size_t rows, int cols, cudaStream_t stream) {
    scale_rows_op op = {x, w, cols};
    elementwise_launch(op, rows * (size_t)cols, cols % 8 == 0 && fl_aligned16(x), stream);
}

void add_inplace(bf16 *acc, const bf16 *x, size_t rows, int cols, int ld_acc, cudaStream_t stream) {
    add_op op = {acc, x, cols, ld_acc};
    elementwise_launch(op, rows * (size_t)cols, cols % 8 == 0 && ld_acc % 8 == 0 && fl_aligned16(acc, x), stream);
}
