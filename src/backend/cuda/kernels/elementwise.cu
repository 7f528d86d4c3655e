// Elementwise unary and binary ops. Semantics follow the CPU backend (src/backend/cpu/element.rs):
// floor division and modulo round toward negative infinity like Python, integer division by zero
// gives 0, max/min propagate NaN, round is half-to-even. Entry names are
// unary_<op>_<dtype> and binary_<op>_<dtype>[_contig]; src/backend/cuda/kernels.rs lists them.

// ---- kernel shapes ------------------------------------------------------------------------
#define DA_UNARY(NAME, TIN, TOUT, EXPR)                                                   \
    extern "C" __global__ void NAME(TOUT* __restrict__ out, const TIN* __restrict__ in, i64 n) { \
        DA_FOR_EACH(i, n) {                                                               \
            TIN x = in[i];                                                                \
            out[i] = (TOUT)(EXPR);                                                        \
        }                                                                                 \
    }

// Two kernels per op: a strided one for broadcasting and a contiguous one for same-shape
// operands (the common case, which then runs at copy bandwidth).
#define DA_BINARY(NAME, TIN, TOUT, EXPR)                                                  \
    extern "C" __global__ void NAME(TOUT* __restrict__ out, const TIN* __restrict__ lhs,  \
                                    const TIN* __restrict__ rhs, DaBroadcast l, i64 n) {  \
        DA_FOR_EACH(i, n) {                                                               \
            i64 rest = i, ia = 0, ib = 0;                                                 \
            _Pragma("unroll") for (int d = DA_MAX_DIMS - 1; d >= 0; --d) {                \
                if (d < l.rank) {                                                         \
                    i64 idx = rest % l.shape[d];                                          \
                    rest /= l.shape[d];                                                   \
                    ia += idx * l.lhs[d];                                                 \
                    ib += idx * l.rhs[d];                                                 \
                }                                                                         \
            }                                                                             \
            TIN a = lhs[ia];                                                              \
            TIN b = rhs[ib];                                                              \
            out[i] = (TOUT)(EXPR);                                                        \
        }                                                                                 \
    }                                                                                     \
    extern "C" __global__ void NAME##_contig(TOUT* __restrict__ out, const TIN* __restrict__ lhs, \
                                             const TIN* __restrict__ rhs, i64 n) {        \
        DA_FOR_EACH(i, n) {                                                               \
            TIN a = lhs[i];                                                               \
            TIN b = rhs[i];                                                               \
            out[i] = (TOUT)(EXPR);                                                        \
        }                                                                                 \
    }

// ---- instantiations -----------------------------------------------------------------------
#define DA_UNARY_FLOAT(T, TAG)                                                         \
    DA_UNARY(unary_negative_##TAG, T, T, -x)                                              \
    DA_UNARY(unary_abs_##TAG, T, T, da_fabs(x))                                           \
    DA_UNARY(unary_exp_##TAG, T, T, da_exp(x))                                            \
    DA_UNARY(unary_log_##TAG, T, T, da_log(x))                                            \
    DA_UNARY(unary_log2_##TAG, T, T, da_log2(x))                                          \
    DA_UNARY(unary_log10_##TAG, T, T, da_log10(x))                                        \
    DA_UNARY(unary_sqrt_##TAG, T, T, da_sqrt(x))                                          \
    DA_UNARY(unary_square_##TAG, T, T, x * x)                                             \
    DA_UNARY(unary_tanh_##TAG, T, T, da_tanh(x))                                          \
    DA_UNARY(unary_sigmoid_##TAG, T, T, (T)1 / ((T)1 + da_exp(-x)))                       \
    DA_UNARY(unary_relu_##TAG, T, T, da_relu(x))                                          \
    DA_UNARY(unary_sin_##TAG, T, T, da_sin(x))                                            \
    DA_UNARY(unary_cos_##TAG, T, T, da_cos(x))                                            \
    DA_UNARY(unary_tan_##TAG, T, T, da_tan(x))                                            \
    DA_UNARY(unary_sign_##TAG, T, T, da_sign(x))                                          \
    DA_UNARY(unary_floor_##TAG, T, T, da_floor(x))                                        \
    DA_UNARY(unary_ceil_##TAG, T, T, da_ceil(x))                                          \
    DA_UNARY(unary_round_##TAG, T, T, da_rint(x))                                         \
    DA_UNARY(unary_trunc_##TAG, T, T, da_trunc(x))                                        \
    DA_UNARY(unary_reciprocal_##TAG, T, T, (T)1 / x)                                      \
    DA_UNARY(unary_logical_not_##TAG, T, u8, x == (T)0)

#define DA_UNARY_INT(T, TAG)                                                              \
    DA_UNARY(unary_negative_##TAG, T, T, (T)(0 - x))                                      \
    DA_UNARY(unary_abs_##TAG, T, T, da_abs(x))                                            \
    DA_UNARY(unary_square_##TAG, T, T, x * x)                                             \
    DA_UNARY(unary_relu_##TAG, T, T, da_relu(x))                                          \
    DA_UNARY(unary_sign_##TAG, T, T, da_sign(x))                                          \
    DA_UNARY(unary_floor_##TAG, T, T, x)                                                  \
    DA_UNARY(unary_ceil_##TAG, T, T, x)                                                   \
    DA_UNARY(unary_round_##TAG, T, T, x)                                                  \
    DA_UNARY(unary_trunc_##TAG, T, T, x)                                                  \
    DA_UNARY(unary_logical_not_##TAG, T, u8, x == 0)

DA_UNARY_FLOAT(float, f32)
DA_UNARY_FLOAT(double, f64)
DA_UNARY_INT(i32, i32)
DA_UNARY_INT(i64, i64)
DA_UNARY(unary_logical_not_bool, u8, u8, x == 0)

#define DA_COMPARE(T, TAG)                                                                \
    DA_BINARY(binary_equal_##TAG, T, u8, a == b)                                          \
    DA_BINARY(binary_not_equal_##TAG, T, u8, a != b)                                      \
    DA_BINARY(binary_less_##TAG, T, u8, a < b)                                            \
    DA_BINARY(binary_less_equal_##TAG, T, u8, a <= b)                                     \
    DA_BINARY(binary_greater_##TAG, T, u8, a > b)                                         \
    DA_BINARY(binary_greater_equal_##TAG, T, u8, a >= b)                                  \
    DA_BINARY(binary_maximum_##TAG, T, T, da_max(a, b))                                   \
    DA_BINARY(binary_minimum_##TAG, T, T, da_min(a, b))

#define DA_ARITH(T, TAG)                                                                  \
    DA_BINARY(binary_add_##TAG, T, T, a + b)                                              \
    DA_BINARY(binary_subtract_##TAG, T, T, a - b)                                         \
    DA_BINARY(binary_multiply_##TAG, T, T, a * b)                                         \
    DA_BINARY(binary_floor_divide_##TAG, T, T, da_floor_div(a, b))                        \
    DA_BINARY(binary_mod_##TAG, T, T, da_mod(a, b))                                       \
    DA_BINARY(binary_power_##TAG, T, T, da_pow(a, b))

#define DA_BITWISE(T, TAG)                                                                \
    DA_BINARY(binary_bitwise_and_##TAG, T, T, a & b)                                      \
    DA_BINARY(binary_bitwise_or_##TAG, T, T, a | b)                                       \
    DA_BINARY(binary_bitwise_xor_##TAG, T, T, a ^ b)

DA_ARITH(float, f32)
DA_ARITH(double, f64)
DA_ARITH(i32, i32)
DA_ARITH(i64, i64)
// True division: integers are converted to float by the runtime before they get here.
DA_BINARY(binary_divide_f32, float, float, a / b)
DA_BINARY(binary_divide_f64, double, double, a / b)
DA_COMPARE(float, f32)
DA_COMPARE(double, f64)
DA_COMPARE(i32, i32)
DA_COMPARE(i64, i64)
DA_COMPARE(u8, bool)
DA_BITWISE(i32, i32)
DA_BITWISE(i64, i64)
DA_BITWISE(u8, bool)
// The small and unsigned integers (float16 computes in float32: the runtime casts around).
#define DA_INT_ALL(T, TAG) DA_UNARY_INT(T, TAG) DA_ARITH(T, TAG) DA_COMPARE(T, TAG) DA_BITWISE(T, TAG)
DA_INT_ALL(i8, i8)
DA_INT_ALL(i16, i16)
DA_INT_ALL(u8, u8)
DA_INT_ALL(u16, u16)
DA_INT_ALL(u32, u32)
DA_INT_ALL(u64, u64)
