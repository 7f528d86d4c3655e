// Batch normalization over a row-major (n, c, inner) block, axis 1 the channel, as the CPU
// backend computes it (src/backend/cpu/norm.rs): sums in double, the statistics in two passes
// over the channel (mean, then squared deviations).
// Entries, for f32 and f64:
//   bn_stats_<t>:     one block per channel: mean, biased variance, 1/sqrt(var + eps);
//   bn_running_<t>:   the same three from given running statistics, one thread per channel;
//   bn_forward_<t>:   y = ((x - mean) * invstd) * gamma + beta, one thread per element;
//   bn_grad_sums_<t>: one block per channel: dbeta = sum(g), dgamma = sum(g * (x - mean)) * invstd,
//                     and the coefficients (a, b, k) of dx = g * a - b - (x - mean) * k;
//   bn_backward_<t>:  dx from those coefficients, one thread per element.
// The block reductions are fixed trees over DA_BLOCK threads, so results do not depend on timing.

#define DA_BLOCK 256

// Sum of `v` over the block; every thread gets the total. `partial` holds DA_BLOCK doubles.
__device__ __forceinline__ double da_block_sum(double v, double* partial) {
    partial[threadIdx.x] = v;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s) partial[threadIdx.x] += partial[threadIdx.x + s];
        __syncthreads();
    }
    double total = partial[0];
    __syncthreads();
    return total;
}

#define DA_NORM(T, TAG)                                                                      \
    extern "C" __global__ void bn_stats_##TAG(T* __restrict__ mean, T* __restrict__ var,     \
                                              T* __restrict__ invstd, const T* __restrict__ x, \
                                              i64 n, i64 c, i64 inner, double eps) {         \
        __shared__ double partial[DA_BLOCK];                                                 \
        i64 m = n * inner;                                                                   \
        double count = m > 0 ? (double)m : 1.0;                                              \
        for (i64 ch = blockIdx.x; ch < c; ch += gridDim.x) {                                 \
            double s = 0.0;                                                                  \
            for (i64 j = threadIdx.x; j < m; j += blockDim.x)                                \
                s += (double)x[((j / inner) * c + ch) * inner + j % inner];                  \
            double mu = da_block_sum(s, partial) / count;                                    \
            double q = 0.0;                                                                  \
            for (i64 j = threadIdx.x; j < m; j += blockDim.x) {                              \
                double t = (double)x[((j / inner) * c + ch) * inner + j % inner] - mu;       \
                q += t * t;                                                                  \
            }                                                                                \
            double v = da_block_sum(q, partial) / count;                                     \
            if (threadIdx.x == 0) {                                                          \
                mean[ch] = (T)mu;                                                            \
                var[ch] = (T)v;                                                              \
                invstd[ch] = (T)(1.0 / sqrt(v + eps));                                       \
            }                                                                                \
        }                                                                                    \
    }                                                                                        \
    extern "C" __global__ void bn_running_##TAG(T* __restrict__ mean, T* __restrict__ var,   \
                                                T* __restrict__ invstd,                      \
                                                const T* __restrict__ rmean,                 \
                                                const T* __restrict__ rvar, double eps, i64 c) { \
        DA_FOR_EACH(ch, c) {                                                                 \
            mean[ch] = rmean[ch];                                                            \
            var[ch] = rvar[ch];                                                              \
            invstd[ch] = (T)(1.0 / sqrt((double)rvar[ch] + eps));                            \
        }                                                                                    \
    }                                                                                        \
    extern "C" __global__ void bn_forward_##TAG(T* __restrict__ y, const T* __restrict__ x,  \
                                                const T* __restrict__ mean,                  \
                                                const T* __restrict__ invstd,                \
                                                const T* __restrict__ gamma,                 \
                                                const T* __restrict__ beta,                  \
                                                i64 c, i64 inner, i64 n) {                   \
        DA_FOR_EACH(i, n) {                                                                  \
            i64 ch = (i / inner) % c;                                                        \
            /* Rounded after each step, as the CPU computes it. */                           \
            T t = da_mul_##TAG(x[i] - mean[ch], invstd[ch]);                               \
            y[i] = da_mul_##TAG(t, gamma[ch]) + beta[ch];                                  \
        }                                                                                    \
    }                                                                                        \
    extern "C" __global__ void bn_grad_sums_##TAG(T* __restrict__ dgamma,                    \
                                                  T* __restrict__ dbeta,                     \
                                                  T* __restrict__ coef,                      \
                                                  const T* __restrict__ x,                   \
                                                  const T* __restrict__ g,                   \
                                                  const T* __restrict__ mean,                \
                                                  const T* __restrict__ invstd,              \
                                                  const T* __restrict__ gamma,               \
                                                  i64 n, i64 c, i64 inner, int batch_stats) { \
        __shared__ double partial[DA_BLOCK];                                                 \
        i64 m = n * inner;                                                                   \
        double count = m > 0 ? (double)m : 1.0;                                              \
        for (i64 ch = blockIdx.x; ch < c; ch += gridDim.x) {                                 \
            double mu = (double)mean[ch];                                                    \
            double sg = 0.0, sgc = 0.0;                                                      \
            for (i64 j = threadIdx.x; j < m; j += blockDim.x) {                              \
                i64 at = ((j / inner) * c + ch) * inner + j % inner;                         \
                double gv = (double)g[at];                                                   \
                sg += gv;                                                                    \
                sgc += gv * ((double)x[at] - mu);                                            \
            }                                                                                \
            sg = da_block_sum(sg, partial);                                                  \
            sgc = da_block_sum(sgc, partial);                                                \
            if (threadIdx.x == 0) {                                                          \
                double s = (double)invstd[ch];                                               \
                double a = (double)gamma[ch] * s;                                            \
                dbeta[ch] = (T)sg;                                                           \
                dgamma[ch] = (T)(sgc * s);                                                   \
                coef[3 * ch] = (T)a;                                                         \
                coef[3 * ch + 1] = batch_stats ? (T)(a * sg / count) : (T)0;                 \
                coef[3 * ch + 2] = batch_stats ? (T)(a * sgc * s * s / count) : (T)0;        \
            }                                                                                \
        }                                                                                    \
    }                                                                                        \
    extern "C" __global__ void bn_backward_##TAG(T* __restrict__ dx, const T* __restrict__ x, \
                                                 const T* __restrict__ g,                    \
                                                 const T* __restrict__ mean,                 \
                                                 const T* __restrict__ coef,                 \
                                                 i64 c, i64 inner, i64 n, int batch_stats) { \
        DA_FOR_EACH(i, n) {                                                                  \
            i64 ch = (i / inner) % c;                                                        \
            T a = da_mul_##TAG(g[i], coef[3 * ch]);                                        \
            dx[i] = batch_stats                                                              \
                ? (a - coef[3 * ch + 1]) - da_mul_##TAG(x[i] - mean[ch], coef[3 * ch + 2]) \
                : a;                                                                         \
        }                                                                                    \
    }

// Products rounded on their own (no contraction into an FMA), so a card gives the CPU's bits.
#define da_mul_f32(a, b) __fmul_rn((a), (b))
#define da_mul_f64(a, b) __dmul_rn((a), (b))

DA_NORM(float, f32)
DA_NORM(double, f64)
