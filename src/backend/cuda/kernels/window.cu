// Convolution and pooling windows (`Patches` in src/vocab/ops.rs): im2col and its adjoint.
// Entries: patches_<dtype> and patches_adjoint_<dtype> for f32 and f64.
//
// patches: every window of a (planes, h, w) input laid out as (planes, kh*kw, ho, wo), `fill`
// where a window reaches into the padding; one thread per output element. A convolution then
// runs as one cuBLAS GEMM over it, a pooling as one axis reduction.
//
// patches_adjoint: the gradient of patches, gathered rather than scattered: one thread per input
// element sums the window taps that read it, in tap order (row-major over the kernel), which is
// the order the CPU backend adds them in; no atomics, so the result is deterministic.

struct DaWindow {
    i64 h, w;      // input plane
    i64 kh, kw;    // kernel taps
    i64 sh, sw;    // stride
    i64 dh, dw;    // dilation
    i64 ph, pw;    // padding before the first row / column
    i64 ho, wo;    // output plane
};

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
            T sum = (T)0;                                                                    \
            for (i64 ki = 0; ki < p.kh; ++ki) {                                              \
                i64 y = r + p.ph - ki * p.dh;                                                \
                if (y < 0 || y % p.sh != 0 || y / p.sh >= p.ho) continue;                    \
                i64 oh = y / p.sh;                                                           \
                for (i64 kj = 0; kj < p.kw; ++kj) {                                          \
                    i64 x = c + p.pw - kj * p.dw;                                            \
                    if (x < 0 || x % p.sw != 0 || x / p.sw >= p.wo) continue;                \
                    sum += plane[((ki * p.kw + kj) * p.ho + oh) * p.wo + x / p.sw];          \
                }                                                                            \
            }                                                                                \
            out[i] = sum;                                                                    \
        }                                                                                    \
    }

DA_WINDOW(float, f32)
DA_WINDOW(double, f64)
