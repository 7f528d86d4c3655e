// Data movement: fill, dtype casts, strided gather (transpose, slicing, broadcast materialising)
// and strided scatter (slice assignment, concat: each part is scattered into its window of the
// output). Entries: fill_<dtype>, cast_<from>_<to>, gather_<dtype>, scatter_<dtype>.

#define DA_FILL(T, TAG)                                                                     \
    extern "C" __global__ void fill_##TAG(T* __restrict__ out, T value, i64 n) {             \
        DA_FOR_EACH(i, n) out[i] = value;                                                   \
    }

// Float to integer conversions saturate and map NaN to 0 (PTX cvt.rzi semantics), like Rust's
// `as` in the CPU backend; anything to bool is "not zero".
#define DA_CAST(FROM, FTAG, TO, TTAG)                                                       \
    extern "C" __global__ void cast_##FTAG##_##TTAG(TO* __restrict__ out, const FROM* __restrict__ in, i64 n) { \
        DA_FOR_EACH(i, n) out[i] = (TO)in[i];                                               \
    }
#define DA_CAST_TO_BOOL(FROM, FTAG)                                                         \
    extern "C" __global__ void cast_##FTAG##_bool(u8* __restrict__ out, const FROM* __restrict__ in, i64 n) { \
        DA_FOR_EACH(i, n) out[i] = in[i] != (FROM)0;                                        \
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
    DA_CAST_TO_BOOL(FROM, FTAG)

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
