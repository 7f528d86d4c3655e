// Reductions over the middle axis of a row-major (outer, len, inner) block, like the CPU backend's
// `reduce`. One thread per output element walks its `len` inputs: with inner > 1 neighbouring
// threads read neighbouring addresses, so the loads coalesce. When inner == 1 (reducing the last
// axis, e.g. a full sum) one block cooperates on each output through shared memory instead.
// Entries: reduce_<op>_<dtype> and reduce_<op>_<dtype>_rows; argmax/argmin write int64 indices
// of the first extreme element, NaN counting as the extreme like numpy.

#define DA_BLOCK 256

template <typename T> __device__ __forceinline__ bool da_is_nan(T) { return false; }
__device__ __forceinline__ bool da_is_nan(float x) { return isnan(x); }
__device__ __forceinline__ bool da_is_nan(double x) { return isnan(x); }

struct DaSum { template <typename T> __device__ static T init() { return (T)0; }
               template <typename T> __device__ static T step(T a, T b) { return a + b; } };
struct DaProd { template <typename T> __device__ static T init() { return (T)1; }
                template <typename T> __device__ static T step(T a, T b) { return a * b; } };
// Max/min start from the first element (no identity is needed) and keep NaN once seen.
struct DaMax { template <typename T> __device__ static T step(T a, T b) { return (da_is_nan(a) || a >= b) ? a : b; } };
struct DaMin { template <typename T> __device__ static T step(T a, T b) { return (da_is_nan(a) || a <= b) ? a : b; } };

// Is candidate `b` (later index) strictly better than `a`? NaN beats everything, first NaN wins.
template <bool MAX, typename T> __device__ __forceinline__ bool da_better(T b, T a) {
    if (da_is_nan(a)) return false;
    if (da_is_nan(b)) return true;
    return MAX ? (b > a) : (b < a);
}

#define DA_REDUCE_FOLD(NAME, T, OP, INIT_FIRST)                                             \
    extern "C" __global__ void NAME(T* __restrict__ out, const T* __restrict__ in,          \
                                    i64 outer, i64 len, i64 inner) {                        \
        DA_FOR_EACH(o, outer * inner) {                                                     \
            i64 base = (o / inner) * len * inner + (o % inner);                             \
            T acc = INIT_FIRST ? in[base] : OP::template init<T>();                         \
            for (i64 j = INIT_FIRST ? 1 : 0; j < len; ++j) acc = OP::step(acc, in[base + j * inner]); \
            out[o] = acc;                                                                   \
        }                                                                                   \
    }                                                                                       \
    extern "C" __global__ void NAME##_rows(T* __restrict__ out, const T* __restrict__ in,   \
                                           i64 outer, i64 len) {                            \
        __shared__ T partial[DA_BLOCK];                                                     \
        for (i64 row = blockIdx.x; row < outer; row += gridDim.x) {                         \
            const T* r = in + row * len;                                                    \
            /* Max/min start from the row's first element (len >= 1 for them: the runtime */ \
            /* refuses empty max/min), sum/prod from their identity. */                     \
            T acc = INIT_FIRST ? r[0] : OP::template init<T>();                             \
            for (i64 j = threadIdx.x; j < len; j += blockDim.x) acc = OP::step(acc, r[j]);  \
            partial[threadIdx.x] = acc;                                                     \
            __syncthreads();                                                                \
            for (int s = blockDim.x / 2; s > 0; s >>= 1) {                                  \
                if (threadIdx.x < s) partial[threadIdx.x] = OP::step(partial[threadIdx.x], partial[threadIdx.x + s]); \
                __syncthreads();                                                            \
            }                                                                               \
            if (threadIdx.x == 0) out[row] = partial[0];                                    \
            __syncthreads();                                                                \
        }                                                                                   \
    }

// Sum and prod have an identity; INIT_FIRST must be a constant so the dead branch folds away.
struct DaMaxI { template <typename T> __device__ static T init() { return (T)0; }
                template <typename T> __device__ static T step(T a, T b) { return DaMax::step(a, b); } };
struct DaMinI { template <typename T> __device__ static T init() { return (T)0; }
                template <typename T> __device__ static T step(T a, T b) { return DaMin::step(a, b); } };

#define DA_REDUCE_ARG(NAME, T, MAX)                                                         \
    extern "C" __global__ void NAME(i64* __restrict__ out, const T* __restrict__ in,        \
                                    i64 outer, i64 len, i64 inner) {                        \
        DA_FOR_EACH(o, outer * inner) {                                                     \
            i64 base = (o / inner) * len * inner + (o % inner);                             \
            T best = in[base];                                                              \
            i64 at = 0;                                                                     \
            for (i64 j = 1; j < len; ++j) {                                                 \
                T v = in[base + j * inner];                                                 \
                if (da_better<MAX>(v, best)) { best = v; at = j; }                          \
            }                                                                               \
            out[o] = at;                                                                    \
        }                                                                                   \
    }

#define DA_REDUCE_ALL(T, TAG)                                                               \
    DA_REDUCE_FOLD(reduce_sum_##TAG, T, DaSum, false)                                       \
    DA_REDUCE_FOLD(reduce_prod_##TAG, T, DaProd, false)                                     \
    DA_REDUCE_FOLD(reduce_max_##TAG, T, DaMaxI, true)                                       \
    DA_REDUCE_FOLD(reduce_min_##TAG, T, DaMinI, true)                                       \
    DA_REDUCE_ARG(reduce_argmax_##TAG, T, true)                                             \
    DA_REDUCE_ARG(reduce_argmin_##TAG, T, false)

DA_REDUCE_ALL(float, f32)
DA_REDUCE_ALL(double, f64)
DA_REDUCE_ALL(i32, i32)
DA_REDUCE_ALL(i64, i64)
DA_REDUCE_ALL(i8, i8)
DA_REDUCE_ALL(i16, i16)
DA_REDUCE_ALL(u8, u8)
DA_REDUCE_ALL(u16, u16)
DA_REDUCE_ALL(u32, u32)
DA_REDUCE_ALL(u64, u64)
// Bool sums are counted in int64 by the runtime (it casts first); max/min/arg work on bytes.
DA_REDUCE_FOLD(reduce_max_bool, u8, DaMaxI, true)
DA_REDUCE_FOLD(reduce_min_bool, u8, DaMinI, true)
DA_REDUCE_ARG(reduce_argmax_bool, u8, true)
DA_REDUCE_ARG(reduce_argmin_bool, u8, false)
