// Data movement: fill, dtype casts, strided gather (transpose, slicing, broadcast materialising)
// and strided scatter (slice assignment, concat: each part is scattered into its window of the
// output). Entries: fill_<dtype>, cast_<from>_<to>, gather_<dtype>, scatter_<dtype>.

#define DA_FILL(T, TAG)                                                                     \
    extern "C" __global__ void fill_##TAG(T* __restrict__ out, T value, i64 n) {             \
        DA_FOR_EACH(i, n) out[i] = value;                                                   \
    }

// float16 is stored as its IEEE bits (u16) and converted in integer arithmetic, so no half
// instructions are needed.
__device__ __forceinline__ float da_half_to_float(u16 h) {
    unsigned int sign = ((unsigned int)h & 0x8000u) << 16;
    unsigned int exp = ((unsigned int)h >> 10) & 0x1fu;
    unsigned int mant = (unsigned int)h & 0x3ffu;
    if (exp == 0) {
        // Zero or subnormal: mant * 2^-24, exact in float.
        float f = (float)mant * 5.9604644775390625e-8f;
        return sign ? -f : f;
    }
    unsigned int bits = exp == 0x1fu ? (sign | 0x7f800000u | (mant << 13))
                                     : (sign | ((exp + 112u) << 23) | (mant << 13));
    return __int_as_float((int)bits);
}
// Round to nearest even, as NumPy's npy_float_to_half.
__device__ __forceinline__ u16 da_float_to_half(float f) {
    unsigned int x = (unsigned int)__float_as_int(f);
    unsigned int sign = (x >> 16) & 0x8000u;
    unsigned int ax = x & 0x7fffffffu;
    if (ax > 0x7f800000u) return (u16)(sign | 0x7e00u);
    if (ax >= 0x477ff000u) return (u16)(sign | 0x7c00u);  // 65520 and up round to infinity
    if (ax < 0x38800000u) {                                 // below 2^-14: subnormal or zero
        float q = rintf(__int_as_float((int)ax) * 16777216.0f);
        return (u16)(sign | (unsigned int)q);
    }
    unsigned int h = (((ax >> 23) - 112u) << 10) | ((ax & 0x7fffffu) >> 13);
    unsigned int rest = ax & 0x1fffu;
    if (rest > 0x1000u || (rest == 0x1000u && (h & 1u))) h += 1u;
    return (u16)(sign | h);
}
// double to half without double rounding: to float rounding toward zero with a sticky bit
// (round to odd), then to nearest even.
__device__ __forceinline__ u16 da_double_to_half(double d) {
    float f = __double2float_rz(d);
    if ((double)f != d && d == d && f == f) {
        f = __int_as_float(__float_as_int(f) | 1);
    }
    return da_float_to_half(f);
}

// Float to integer conversions as NumPy computes them on x86 (the CPU backend's
// `element::x86`): truncation; NaN and out-of-range values give the minimum of int32/int64;
// 8- and 16-bit types keep the low bits of the int32 conversion; uint32/uint64 subtract 2^31
// (2^63) from large values first. Integer to integer conversions wrap.
__device__ __forceinline__ i32 da_f2i32(double v) {
    return (v > -2147483649.0 && v < 2147483648.0) ? (i32)v : (i32)0x80000000u;
}
__device__ __forceinline__ i64 da_f2i64(double v) {
    return (v >= -9.223372036854776e18 && v < 9.223372036854776e18) ? (i64)v : (i64)0x8000000000000000ull;
}
__device__ __forceinline__ u32 da_f2u32(double v) {
    return (v < 2147483648.0 || v != v) ? (u32)da_f2i32(v) : ((u32)da_f2i32(v - 2147483648.0)) ^ 0x80000000u;
}
__device__ __forceinline__ u64 da_f2u64(double v) {
    return (v < 9.223372036854776e18 || v != v) ? (u64)da_f2i64(v)
                                                : ((u64)da_f2i64(v - 9.223372036854776e18)) ^ 0x8000000000000000ull;
}

// Loads widen every element to double (floats), i64 or u64 (integers); stores convert from
// those, so one cast kernel is a load and a store.
__device__ __forceinline__ double da_ld_f32(float x) { return x; }
__device__ __forceinline__ double da_ld_f64(double x) { return x; }
__device__ __forceinline__ double da_ld_f16(u16 x) { return da_half_to_float(x); }
// bfloat16 is the high half of a float32's bits, decoded in arithmetic (no byte moves: the
// emulator has no `prmt`).
__device__ __forceinline__ double da_ld_bf16(u16 x) {
    unsigned int exp = ((unsigned int)x >> 7) & 0xffu;
    unsigned int mant = (unsigned int)x & 0x7fu;
    double m;
    if (exp == 0xffu) {
        m = mant ? __longlong_as_double(0x7ff8000000000000ll) : __longlong_as_double(0x7ff0000000000000ll);
    } else if (exp == 0) {
        m = (double)mant * 9.183549615799121e-41;  // mant * 2^-133
    } else {
        m = ldexp((double)(mant | 0x80u), (int)exp - 134);
    }
    return ((unsigned int)x & 0x8000u) ? -m : m;
}
__device__ __forceinline__ i64 da_ld_i32(i32 x) { return x; }
__device__ __forceinline__ i64 da_ld_i64(i64 x) { return x; }
__device__ __forceinline__ i64 da_ld_i8(i8 x) { return x; }
__device__ __forceinline__ i64 da_ld_i16(i16 x) { return x; }
__device__ __forceinline__ u64 da_ld_u8(u8 x) { return x; }
__device__ __forceinline__ u64 da_ld_u16(u16 x) { return x; }
__device__ __forceinline__ u64 da_ld_u32(u32 x) { return x; }
__device__ __forceinline__ u64 da_ld_u64(u64 x) { return x; }
__device__ __forceinline__ u64 da_ld_bool(u8 x) { return x != 0; }

#define DA_STORE_INT(T, TAG, FROM_FLOAT)                                                     \
    __device__ __forceinline__ T da_st_##TAG(double v) { return (T)FROM_FLOAT(v); }         \
    __device__ __forceinline__ T da_st_##TAG(i64 v) { return (T)v; }                        \
    __device__ __forceinline__ T da_st_##TAG(u64 v) { return (T)v; }
#define DA_STORE_FLOAT(T, TAG)                                                               \
    __device__ __forceinline__ T da_st_##TAG(double v) { return (T)v; }                     \
    __device__ __forceinline__ T da_st_##TAG(i64 v) { return (T)v; }                        \
    __device__ __forceinline__ T da_st_##TAG(u64 v) { return (T)v; }
DA_STORE_INT(i32, i32, da_f2i32)
DA_STORE_INT(i64, i64, da_f2i64)
DA_STORE_INT(i8, i8, da_f2i32)
DA_STORE_INT(i16, i16, da_f2i32)
DA_STORE_INT(u8, u8, da_f2i32)
DA_STORE_INT(u16, u16, da_f2i32)
DA_STORE_INT(u32, u32, da_f2u32)
DA_STORE_INT(u64, u64, da_f2u64)
DA_STORE_FLOAT(float, f32)
DA_STORE_FLOAT(double, f64)
__device__ __forceinline__ u16 da_st_f16(double v) { return da_double_to_half(v); }
__device__ __forceinline__ u16 da_st_f16(i64 v) { return da_double_to_half((double)v); }
__device__ __forceinline__ u16 da_st_f16(u64 v) { return da_double_to_half((double)v); }
// To float32, then to the nearest bfloat16, ties to even (NaN stays a quiet NaN).
__device__ __forceinline__ u16 da_float_to_bf16(float f) {
    unsigned int x = (unsigned int)__float_as_int(f);
    unsigned int sign = (x >> 16) & 0x8000u;
    if (f != f) return (u16)(sign | 0x7fc0u);
    unsigned int r = (x & 0x7fffffffu) + 0x7fffu + ((x >> 16) & 1u);
    return (u16)(sign | ((r >> 16) & 0x7fffu));
}
__device__ __forceinline__ u16 da_st_bf16(double v) { return da_float_to_bf16((float)v); }
__device__ __forceinline__ u16 da_st_bf16(i64 v) { return da_float_to_bf16((float)v); }
__device__ __forceinline__ u16 da_st_bf16(u64 v) { return da_float_to_bf16((float)v); }
__device__ __forceinline__ u8 da_st_bool(double v) { return v != 0.0; }
__device__ __forceinline__ u8 da_st_bool(i64 v) { return v != 0; }
__device__ __forceinline__ u8 da_st_bool(u64 v) { return v != 0; }

#define DA_CAST(FROM, FTAG, TO, TTAG)                                                       \
    extern "C" __global__ void cast_##FTAG##_##TTAG(TO* __restrict__ out, const FROM* __restrict__ in, i64 n) { \
        DA_FOR_EACH(i, n) out[i] = da_st_##TTAG(da_ld_##FTAG(in[i]));                        \
    }

// The dtypes added after the first five take their fill value as the bits of one element
// in the low bytes of a u64.
#define DA_FILL_BITS(T, TAG)                                                                \
    extern "C" __global__ void fill_##TAG(T* __restrict__ out, u64 bits, i64 n) {           \
        union { u64 b; T v; } u;                                                            \
        u.b = bits;                                                                         \
        DA_FOR_EACH(i, n) out[i] = u.v;                                                     \
    }

#define DA_MOVE(T, TAG)                                                                     \
    extern "C" __global__ void gather_##TAG(T* __restrict__ out, const T* __restrict__ in,  \
                                            DaView src, i64 n) {                            \
        DA_FOR_EACH(i, n) out[i] = in[da_view_offset(src, i)];                              \
    }                                                                                       \
    /* dst view gets src (row-major, broadcast to dst's shape by src_strides). */           \
    extern "C" __global__ void scatter_##TAG(T* __restrict__ out, DaView dst,               \
                                             const T* __restrict__ in, DaView src, i64 n) { \
        DA_FOR_EACH(i, n) out[da_view_offset(dst, i)] = in[da_view_offset(src, i)];         \
    }

#define DA_ALL_CASTS_FROM(FROM, FTAG)                                                       \
    DA_CAST(FROM, FTAG, float, f32)                                                         \
    DA_CAST(FROM, FTAG, double, f64)                                                        \
    DA_CAST(FROM, FTAG, i32, i32)                                                           \
    DA_CAST(FROM, FTAG, i64, i64)                                                           \
    DA_CAST(FROM, FTAG, u8, bool)                                                           \
    DA_CAST(FROM, FTAG, u16, f16)                                                           \
    DA_CAST(FROM, FTAG, i8, i8)                                                             \
    DA_CAST(FROM, FTAG, i16, i16)                                                           \
    DA_CAST(FROM, FTAG, u8, u8)                                                             \
    DA_CAST(FROM, FTAG, u16, u16)                                                           \
    DA_CAST(FROM, FTAG, u32, u32)                                                           \
    DA_CAST(FROM, FTAG, u64, u64)                                                           \
    DA_CAST(FROM, FTAG, u16, bf16)

DA_FILL(float, f32)
DA_FILL(double, f64)
DA_FILL(i32, i32)
DA_FILL(i64, i64)
DA_FILL(u8, bool)
DA_ALL_CASTS_FROM(float, f32)
DA_ALL_CASTS_FROM(double, f64)
DA_ALL_CASTS_FROM(i32, i32)
DA_ALL_CASTS_FROM(i64, i64)
DA_ALL_CASTS_FROM(u8, bool)
DA_MOVE(float, f32)
DA_MOVE(double, f64)
DA_MOVE(i32, i32)
DA_MOVE(i64, i64)
DA_MOVE(u8, bool)
DA_FILL_BITS(u16, f16)
DA_FILL_BITS(i8, i8)
DA_FILL_BITS(i16, i16)
DA_FILL_BITS(u8, u8)
DA_FILL_BITS(u16, u16)
DA_FILL_BITS(u32, u32)
DA_FILL_BITS(u64, u64)
DA_FILL_BITS(u16, bf16)
DA_ALL_CASTS_FROM(u16, f16)
DA_ALL_CASTS_FROM(i8, i8)
DA_ALL_CASTS_FROM(i16, i16)
DA_ALL_CASTS_FROM(u8, u8)
DA_ALL_CASTS_FROM(u16, u16)
DA_ALL_CASTS_FROM(u32, u32)
DA_ALL_CASTS_FROM(u64, u64)
DA_ALL_CASTS_FROM(u16, bf16)
DA_MOVE(u16, f16)
DA_MOVE(i8, i8)
DA_MOVE(i16, i16)
DA_MOVE(u8, u8)
DA_MOVE(u16, u16)
DA_MOVE(u32, u32)
DA_MOVE(u64, u64)
DA_MOVE(u16, bf16)

// Selection along one axis by an int64 index array (runtime/array/select.rs), an array seen as
// (outer, len, inner). take_along: out[o, j, k] = in[o, index[o, j, k], k], one thread per
// output element. scatter_along: out[o, index[o, j, k], k] = (or +=) in[o, j, k], one thread
// per (o, k) lane walking j in order, so repeated positions resolve as on the CPU (the last
// write wins; sums are added in index order) and need no atomics. The runtime checks every
// position first; a position out of range is clamped (take) or skipped (scatter) here, never
// read or written out of bounds.
#define DA_SELECT(T, TAG)                                                                   \
    extern "C" __global__ void take_along_##TAG(T* __restrict__ out, const T* __restrict__ in, \
                                                const i64* __restrict__ index, i64 src_len, \
                                                i64 len, i64 inner, i64 n) {                \
        DA_FOR_EACH(i, n) {                                                                 \
            i64 k = i % inner;                                                              \
            i64 o = i / (inner * len);                                                      \
            i64 p = index[i];                                                               \
            if (p < 0) p += src_len;                                                        \
            p = p < 0 ? 0 : (p >= src_len ? src_len - 1 : p);                               \
            out[i] = in[(o * src_len + p) * inner + k];                                     \
        }                                                                                   \
    }                                                                                       \
    extern "C" __global__ void scatter_along_##TAG(T* __restrict__ out,                     \
                                                   const i64* __restrict__ index,           \
                                                   const T* __restrict__ in, i64 dst_len,   \
                                                   i64 len, i64 inner, i64 lanes, i32 add) { \
        DA_FOR_EACH(l, lanes) {                                                             \
            i64 o = l / inner, k = l % inner;                                               \
            for (i64 j = 0; j < len; ++j) {                                                 \
                i64 at = (o * len + j) * inner + k;                                         \
                i64 p = index[at];                                                          \
                if (p < 0) p += dst_len;                                                    \
                if (p < 0 || p >= dst_len) continue;                                        \
                T* d = &out[(o * dst_len + p) * inner + k];                                 \
                *d = add ? (T)(*d + in[at]) : in[at];                                       \
            }                                                                               \
        }                                                                                   \
    }

DA_SELECT(float, f32)
DA_SELECT(double, f64)
DA_SELECT(i32, i32)
DA_SELECT(i64, i64)
DA_SELECT(u8, bool)
// float16 is moved as its bits (a scatter that adds goes through float32: select.rs).
DA_SELECT(u16, f16)
DA_SELECT(i8, i8)
DA_SELECT(i16, i16)
DA_SELECT(u8, u8)
DA_SELECT(u16, u16)
DA_SELECT(u32, u32)
DA_SELECT(u64, u64)
DA_SELECT(u16, bf16)
