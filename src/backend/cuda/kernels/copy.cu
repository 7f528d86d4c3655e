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
