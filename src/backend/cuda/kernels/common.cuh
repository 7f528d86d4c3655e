// Shared by every devarray kernel source: prepended by the launch code (NVRTC gets one string, so
// no include paths or system headers are needed).
typedef unsigned char u8;
typedef long long i64;
typedef int i32;
typedef signed char i8;
typedef short i16;
typedef unsigned short u16;
typedef unsigned int u32;
typedef unsigned long long u64;

// Arrays up to this many dimensions; the runtime rejects higher ranks before any launch.
#define DA_MAX_DIMS 8

// A strided view: element `idx` is at offset + sum(idx[d] * strides[d]). Passed by value.
struct DaView {
    i64 offset;
    i32 rank;
    i64 shape[DA_MAX_DIMS];
    i64 strides[DA_MAX_DIMS];
};

// Two operands broadcast to one shape: strides of 0 repeat an axis.
struct DaBroadcast {
    i32 rank;
    i64 shape[DA_MAX_DIMS];
    i64 lhs[DA_MAX_DIMS];
    i64 rhs[DA_MAX_DIMS];
};

// A convolution or pooling window over (h, w) planes (`Patches` in src/vocab/ops.rs), used by
// window.cu.
struct DaWindow {
    i64 h, w;      // input plane
    i64 kh, kw;    // kernel taps
    i64 sh, sw;    // stride
    i64 dh, dw;    // dilation
    i64 ph, pw;    // padding before the first row / column
    i64 ho, wo;    // output plane
};

// Grid-stride loop: any grid size covers any n.
#define DA_FOR_EACH(i, n) \
    for (i64 i = (i64)blockIdx.x * blockDim.x + threadIdx.x; i < (n); i += (i64)blockDim.x * gridDim.x)

__device__ __forceinline__ i64 da_view_offset(const DaView& v, i64 linear) {
    i64 at = v.offset;
#pragma unroll
    for (int d = DA_MAX_DIMS - 1; d >= 0; --d) {
        if (d < v.rank) {
            i64 idx = linear % v.shape[d];
            linear /= v.shape[d];
            at += idx * v.strides[d];
        }
    }
    return at;
}
