// Convolution and pooling windows (`Patches` in src/vocab/ops.rs): im2col and its adjoint, and
// pooling read in place (`Array::pool`) with its gradients.
// Entries, for f32 and f64: patches_<dtype>, patches_adjoint_<dtype>, patches_cols_<dtype>,
// patches_cols_adjoint_<dtype>, cols_to_batch_<dtype>, batch_to_cols_<dtype>, pool_max_<dtype>, pool_avg_<dtype>,
// pool_argmax_<dtype>, pool_max_grad_<dtype>, pool_avg_grad_<dtype>.
//
// patches: every window of a (planes, h, w) input laid out as (planes, kh*kw, ho, wo), `fill`
// where a window reaches into the padding; one thread per output element. A convolution then
// runs as one cuBLAS GEMM over it, a pooling as one axis reduction.
//
// patches_adjoint: the gradient of patches, gathered rather than scattered: one thread per input
// element sums the window taps that read it, in tap order (row-major over the kernel), which is
// the order the CPU backend adds them in; no atomics, so the result is deterministic.

// DaWindow (common.cuh) is the geometry.

// The adjoints' gather: the sum, in tap order, of the window outputs that read input (r, c);
// tap k's (Ho, Wo) plane starts at base + k * tap_stride (one sample's plane per tap, or one row
// of the batch-folded matrix).
template <typename T>
__device__ __forceinline__ T da_gather_taps(const T* base, i64 tap_stride, const DaWindow& p,
                                            i64 r, i64 c) {
    T sum = (T)0;
    for (i64 ki = 0; ki < p.kh; ++ki) {
        i64 y = r + p.ph - ki * p.dh;
        if (y < 0 || y % p.sh != 0 || y / p.sh >= p.ho) continue;
        i64 oh = y / p.sh;
        for (i64 kj = 0; kj < p.kw; ++kj) {
            i64 x = c + p.pw - kj * p.dw;
            if (x < 0 || x % p.sw != 0 || x / p.sw >= p.wo) continue;
            sum += base[(ki * p.kw + kj) * tap_stride + oh * p.wo + x / p.sw];
        }
    }
    return sum;
}

#define DA_WINDOW(T, TAG)                                                                    \
    extern "C" __global__ void patches_##TAG(T* __restrict__ out, const T* __restrict__ in,  \
                                             DaWindow p, double fill, i64 n) {               \
        DA_FOR_EACH(i, n) {                                                                  \
            i64 t = i;                                                                       \
            i64 ow = t % p.wo; t /= p.wo;                                                    \
            i64 oh = t % p.ho; t /= p.ho;                                                    \
            i64 kj = t % p.kw; t /= p.kw;                                                    \
            i64 ki = t % p.kh; t /= p.kh;                                                    \
            i64 r = oh * p.sh + ki * p.dh - p.ph;                                            \
            i64 c = ow * p.sw + kj * p.dw - p.pw;                                            \
            out[i] = (r >= 0 && r < p.h && c >= 0 && c < p.w)                                \
                ? in[(t * p.h + r) * p.w + c] : (T)fill;                                     \
        }                                                                                    \
    }                                                                                        \
    extern "C" __global__ void patches_adjoint_##TAG(T* __restrict__ out,                    \
                                                     const T* __restrict__ g, DaWindow p,    \
                                                     i64 n) {                                \
        DA_FOR_EACH(i, n) {                                                                  \
            i64 t = i;                                                                       \
            i64 c = t % p.w; t /= p.w;                                                       \
            i64 r = t % p.h; t /= p.h;                                                       \
            const T* plane = g + t * p.kh * p.kw * p.ho * p.wo;                              \
            out[i] = da_gather_taps(plane, p.ho * p.wo, p, r, c);                            \
        }                                                                                    \
    }

DA_WINDOW(float, f32)
DA_WINDOW(double, f64)

// The batch-folded layout (`Array::patches_cols`): an (N, C, H, W) input's windows as one
// (C*kh*kw, N*Ho*Wo) matrix, so a convolution is one GEMM over the whole batch; its adjoint
// (gathered per input element, taps in row-major order as above); and `cols_to_batch`, the
// (O, N*L) product laid out as (N, O, L) with the per-channel bias and a fused ReLU applied in the
// same pass, and `batch_to_cols`, its way back (times the ReLU's mask).
#define DA_BATCH_WINDOW(T, TAG)                                                              \
    extern "C" __global__ void patches_cols_##TAG(T* __restrict__ out,                       \
                                                  const T* __restrict__ in, DaWindow p,      \
                                                  i64 batch, i64 channels, double fill,      \
                                                  i64 n) {                                   \
        DA_FOR_EACH(i, n) {                                                                  \
            i64 t = i;                                                                       \
            i64 ow = t % p.wo; t /= p.wo;                                                    \
            i64 oh = t % p.ho; t /= p.ho;                                                    \
            i64 b = t % batch; t /= batch;                                                   \
            i64 kj = t % p.kw; t /= p.kw;                                                    \
            i64 ki = t % p.kh; t /= p.kh;                                                    \
            i64 r = oh * p.sh + ki * p.dh - p.ph;                                            \
            i64 c = ow * p.sw + kj * p.dw - p.pw;                                            \
            out[i] = (r >= 0 && r < p.h && c >= 0 && c < p.w)                                \
                ? in[((b * channels + t) * p.h + r) * p.w + c] : (T)fill;                    \
        }                                                                                    \
    }                                                                                        \
    extern "C" __global__ void patches_cols_adjoint_##TAG(T* __restrict__ out,               \
                                                          const T* __restrict__ g,           \
                                                          DaWindow p, i64 batch,             \
                                                          i64 channels, i64 n) {             \
        DA_FOR_EACH(i, n) {                                                                  \
            i64 t = i;                                                                       \
            i64 c = t % p.w; t /= p.w;                                                       \
            i64 r = t % p.h; t /= p.h;                                                       \
            i64 ch = t % channels; t /= channels;                                            \
            i64 cols = batch * p.ho * p.wo;                                                  \
            const T* rows = g + ch * p.kh * p.kw * cols + t * p.ho * p.wo;                   \
            out[i] = da_gather_taps(rows, cols, p, r, c);                                    \
        }                                                                                    \
    }                                                                                        \
    extern "C" __global__ void cols_to_batch_##TAG(T* __restrict__ out,                      \
                                                   const T* __restrict__ y,                  \
                                                   const T* __restrict__ bias, int has_bias, \
                                                   int relu, i64 channels, i64 batch,        \
                                                   i64 plane, i64 n) {                       \
        DA_FOR_EACH(i, n) {                                                                  \
            i64 t = i;                                                                       \
            i64 l = t % plane; t /= plane;                                                   \
            i64 o = t % channels; t /= channels;                                             \
            T v = y[(o * batch + t) * plane + l];                                            \
            if (has_bias) v = v + bias[o];                                                   \
            out[i] = (!relu || v > (T)0) ? v : (T)0;                                         \
        }                                                                                    \
    }                                                                                        \
    extern "C" __global__ void batch_to_cols_##TAG(T* __restrict__ out,                      \
                                                   const T* __restrict__ g,                  \
                                                   const T* __restrict__ mask, int has_mask, \
                                                   i64 channels, i64 batch, i64 plane,       \
                                                   i64 n) {                                  \
        DA_FOR_EACH(i, n) {                                                                  \
            i64 t = i;                                                                       \
            i64 l = t % plane; t /= plane;                                                   \
            i64 b = t % batch; t /= batch;                                                   \
            i64 at = (b * channels + t) * plane + l;                                         \
            out[i] = has_mask ? g[at] * (mask[at] > (T)0 ? (T)1 : (T)0) : g[at];             \
        }                                                                                    \
    }

DA_BATCH_WINDOW(float, f32)
DA_BATCH_WINDOW(double, f64)

// Pooling, one thread per output element, taps in row-major kernel order (the CPU's order, so
// both give the same bits). Max keeps the first maximum (NaN wins, the first NaN stays) and
// writes `fill` for a window wholly in the padding; average divides by the window's count
// clipped to the padded input (count_include_pad) or to the input.
__device__ __forceinline__ i64 da_avg_count(i64 o, i64 s, i64 k, i64 pad, i64 size, int inc) {
    i64 start = o * s - pad, end = start + k;
    i64 lo = inc ? -pad : 0, hi = inc ? size + pad : size;
    i64 n = (end < hi ? end : hi) - (start > lo ? start : lo);
    return n > 1 ? n : 1;
}

// The input index (within its plane) of output i's first maximum, or -1.
template <typename T>
__device__ __forceinline__ i64 da_pool_argmax(const T* plane, const DaWindow& p, i64 oh, i64 ow) {
    i64 at = -1;
    T best = (T)0;
    for (i64 ki = 0; ki < p.kh; ++ki) {
        i64 r = oh * p.sh + ki * p.dh - p.ph;
        if (r < 0 || r >= p.h) continue;
        for (i64 kj = 0; kj < p.kw; ++kj) {
            i64 c = ow * p.sw + kj * p.dw - p.pw;
            if (c < 0 || c >= p.w) continue;
            T v = plane[r * p.w + c];
            if (at < 0 || (!isnan(best) && (isnan(v) || v > best))) { best = v; at = r * p.w + c; }
        }
    }
    return at;
}

#define DA_POOL(T, TAG)                                                                      \
    extern "C" __global__ void pool_max_##TAG(T* __restrict__ out, const T* __restrict__ in, \
                                              DaWindow p, double fill, i64 n) {              \
        DA_FOR_EACH(i, n) {                                                                  \
            i64 ow = i % p.wo, oh = (i / p.wo) % p.ho, plane = i / (p.wo * p.ho);            \
            const T* src = in + plane * p.h * p.w;                                           \
            i64 at = da_pool_argmax(src, p, oh, ow);                                         \
            out[i] = at < 0 ? (T)fill : src[at];                                             \
        }                                                                                    \
    }                                                                                        \
    extern "C" __global__ void pool_argmax_##TAG(i64* __restrict__ out,                      \
                                                 const T* __restrict__ in, DaWindow p, i64 n) { \
        DA_FOR_EACH(i, n) {                                                                  \
            i64 ow = i % p.wo, oh = (i / p.wo) % p.ho, plane = i / (p.wo * p.ho);            \
            out[i] = da_pool_argmax(in + plane * p.h * p.w, p, oh, ow);                      \
        }                                                                                    \
    }                                                                                        \
    extern "C" __global__ void pool_avg_##TAG(T* __restrict__ out, const T* __restrict__ in, \
                                              DaWindow p, int inc, i64 n) {                  \
        DA_FOR_EACH(i, n) {                                                                  \
            i64 ow = i % p.wo, oh = (i / p.wo) % p.ho, plane = i / (p.wo * p.ho);            \
            const T* src = in + plane * p.h * p.w;                                           \
            T sum = (T)0;                                                                    \
            for (i64 ki = 0; ki < p.kh; ++ki) {                                              \
                i64 r = oh * p.sh + ki * p.dh - p.ph;                                        \
                if (r < 0 || r >= p.h) continue;                                             \
                for (i64 kj = 0; kj < p.kw; ++kj) {                                          \
                    i64 c = ow * p.sw + kj * p.dw - p.pw;                                    \
                    if (c < 0 || c >= p.w) continue;                                         \
                    sum += src[r * p.w + c];                                                 \
                }                                                                            \
            }                                                                                \
            i64 k = da_avg_count(oh, p.sh, p.kh, p.ph, p.h, inc)                             \
                  * da_avg_count(ow, p.sw, p.kw, p.pw, p.w, inc);                            \
            out[i] = sum / (T)k;                                                             \
        }                                                                                    \
    }                                                                                        \
    /* Gradients gathered per input element over the windows that read it, in tap order */   \
    /* (the order the CPU adds them in): no atomics, deterministic. */                       \
    extern "C" __global__ void pool_max_grad_##TAG(T* __restrict__ dx,                       \
                                                   const T* __restrict__ g,                  \
                                                   const i64* __restrict__ arg, DaWindow p,  \
                                                   i64 n) {                                  \
        DA_FOR_EACH(i, n) {                                                                  \
            i64 c = i % p.w, r = (i / p.w) % p.h, plane = i / (p.w * p.h);                   \
            i64 base = plane * p.ho * p.wo;                                                  \
            T sum = (T)0;                                                                    \
            for (i64 ki = 0; ki < p.kh; ++ki) {                                              \
                i64 y = r + p.ph - ki * p.dh;                                                \
                if (y < 0 || y % p.sh != 0 || y / p.sh >= p.ho) continue;                    \
                for (i64 kj = 0; kj < p.kw; ++kj) {                                          \
                    i64 x = c + p.pw - kj * p.dw;                                            \
                    if (x < 0 || x % p.sw != 0 || x / p.sw >= p.wo) continue;                \
                    i64 o = base + (y / p.sh) * p.wo + x / p.sw;                             \
                    if (arg[o] == r * p.w + c) sum += g[o];                                  \
                }                                                                            \
            }                                                                                \
            dx[i] = sum;                                                                     \
        }                                                                                    \
    }                                                                                        \
    extern "C" __global__ void pool_avg_grad_##TAG(T* __restrict__ dx,                       \
                                                   const T* __restrict__ g, DaWindow p,      \
                                                   int inc, i64 n) {                         \
        DA_FOR_EACH(i, n) {                                                                  \
            i64 c = i % p.w, r = (i / p.w) % p.h, plane = i / (p.w * p.h);                   \
            i64 base = plane * p.ho * p.wo;                                                  \
            T sum = (T)0;                                                                    \
            for (i64 ki = 0; ki < p.kh; ++ki) {                                              \
                i64 y = r + p.ph - ki * p.dh;                                                \
                if (y < 0 || y % p.sh != 0 || y / p.sh >= p.ho) continue;                    \
                i64 oh = y / p.sh;                                                           \
                for (i64 kj = 0; kj < p.kw; ++kj) {                                          \
                    i64 x = c + p.pw - kj * p.dw;                                            \
                    if (x < 0 || x % p.sw != 0 || x / p.sw >= p.wo) continue;                \
                    i64 ow = x / p.sw;                                                       \
                    i64 k = da_avg_count(oh, p.sh, p.kh, p.ph, p.h, inc)                     \
                          * da_avg_count(ow, p.sw, p.kw, p.pw, p.w, inc);                    \
                    sum += g[base + oh * p.wo + ow] / (T)k;                                  \
                }                                                                            \
            }                                                                                \
            dx[i] = sum;                                                                     \
        }                                                                                    \
    }

DA_POOL(float, f32)
DA_POOL(double, f64)
