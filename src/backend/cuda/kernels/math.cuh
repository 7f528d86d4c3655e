// Scalar helpers shared by elementwise.cu and the generated fused kernels (src/backend/cuda/fused.rs).
// ---- scalar ops ---------------------------------------------------------------------------
template <typename T> __device__ __forceinline__ T da_floor_div(T a, T b) {
    if (b == 0) return 0;
    T q = a / b;
    if ((a % b != 0) && ((a < 0) != (b < 0))) q -= 1;
    return q;
}
// NumPy's npy_floor_divide and npy_remainder (as the CPU kernels): through fmod, signed zeros.
template <typename F> __device__ __forceinline__ F da_float_floor_div(F a, F b) {
    if (b == (F)0) return a / b;
    F m = fmod(a, b);
    F div = (a - m) / b;
    if (m != (F)0 && ((b < (F)0) != (m < (F)0))) div -= (F)1;
    if (div == (F)0) return copysign((F)0, a / b);
    F f = floor(div);
    return (div - f > (F)0.5) ? f + (F)1 : f;
}
__device__ __forceinline__ float da_floor_div(float a, float b) { return da_float_floor_div<float>(a, b); }
__device__ __forceinline__ double da_floor_div(double a, double b) { return da_float_floor_div<double>(a, b); }

template <typename T> __device__ __forceinline__ T da_mod(T a, T b) {
    if (b == 0) return 0;
    T r = a % b;
    if (r != 0 && ((r < 0) != (b < 0))) r += b;
    return r;
}
template <typename F> __device__ __forceinline__ F da_float_mod(F a, F b) {
    F r = fmod(a, b);
    if (b == (F)0) return r;
    if (r == (F)0) return copysign((F)0, b);
    if ((r < (F)0) != (b < (F)0)) r += b;
    return r;
}
__device__ __forceinline__ float da_mod(float a, float b) { return da_float_mod<float>(a, b); }
__device__ __forceinline__ double da_mod(double a, double b) { return da_float_mod<double>(a, b); }

// Integer powers by squaring; negative exponents give the exact answers for 1 and -1, else 0.
template <typename T> __device__ __forceinline__ T da_pow(T a, T b) {
    if (b < 0) return a == 1 ? 1 : (a == -1 ? ((b & 1) ? -1 : 1) : 0);
    T result = 1;
    while (b > 0) {
        if (b & 1) result *= a;
        a *= a;
        b >>= 1;
    }
    return result;
}
__device__ __forceinline__ float da_pow(float a, float b) { return powf(a, b); }
__device__ __forceinline__ double da_pow(double a, double b) { return pow(a, b); }

// One name per math function for both float widths (the float versions carry an `f` suffix).
#define DA_MATH(FN)                                                                       \
    __device__ __forceinline__ float da_##FN(float x) { return FN##f(x); }               \
    __device__ __forceinline__ double da_##FN(double x) { return FN(x); }
DA_MATH(fabs)
DA_MATH(exp)
DA_MATH(log)
DA_MATH(log2)
DA_MATH(log10)
DA_MATH(sqrt)
DA_MATH(tanh)
DA_MATH(sin)
DA_MATH(cos)
DA_MATH(tan)
DA_MATH(floor)
DA_MATH(ceil)
DA_MATH(rint)
DA_MATH(trunc)

template <typename T> __device__ __forceinline__ bool da_isnan(T) { return false; }
__device__ __forceinline__ bool da_isnan(float x) { return isnan(x); }
__device__ __forceinline__ bool da_isnan(double x) { return isnan(x); }

// NumPy's `(a > b || isnan(a)) ? a : b`: of two zeros, the second.
template <typename T> __device__ __forceinline__ T da_max(T a, T b) { return (da_isnan(a) || a > b) ? a : b; }
template <typename T> __device__ __forceinline__ T da_min(T a, T b) { return (da_isnan(a) || a < b) ? a : b; }

template <typename T> __device__ __forceinline__ T da_sign(T x) { return x > 0 ? (T)1 : (x < 0 ? (T)-1 : x); }
template <typename T> __device__ __forceinline__ T da_abs(T x) { return x < 0 ? -x : x; }
template <typename T> __device__ __forceinline__ T da_relu(T x) { return x > 0 ? x : (T)0; }

