//! Element traits: kernels are generic over these and monomorphised per dtype, so no element
//! goes through dynamic dispatch.
use super::CpuStorage;
use crate::vocab::DType;

pub trait Element: Copy + Send + Sync + PartialOrd + Default + std::fmt::Debug + 'static {
    const DTYPE: DType;
    fn from_f64(v: f64) -> Self;
    fn to_f64(self) -> f64;
    fn from_i64(v: i64) -> Self;
    fn to_i64(self) -> i64;
    fn is_nonzero(self) -> bool;
    fn into_storage(v: Vec<Self>) -> CpuStorage;
    fn slice(storage: &CpuStorage) -> Option<&[Self]>;
    fn slice_mut(storage: &mut CpuStorage) -> Option<&mut [Self]>;
    fn vec_mut(storage: &mut CpuStorage) -> Option<&mut Vec<Self>>;

    /// Conversion between element types: integers convert exactly through i64, the rest through f64
    /// (which is exact for every f32 and i32).
    #[inline(always)]
    fn cast<U: Element>(self) -> U {
        if Self::DTYPE.is_int() && U::DTYPE.is_int() {
            U::from_i64(self.to_i64())
        } else {
            U::from_f64(self.to_f64())
        }
    }
}

/// Arithmetic shared by the float and integer types. Integer ops wrap (numpy's behaviour) and
/// division by zero gives 0 instead of a panic.
pub trait Num: Element {
    fn zero() -> Self;
    fn one() -> Self;
    fn add(self, o: Self) -> Self;
    fn sub(self, o: Self) -> Self;
    fn mul(self, o: Self) -> Self;
    fn div(self, o: Self) -> Self;
    fn floor_div(self, o: Self) -> Self;
    /// Python's `%`: the result has the divisor's sign.
    fn modulo(self, o: Self) -> Self;
    fn pow(self, o: Self) -> Self;
    /// numpy's maximum/minimum: NaN wins.
    fn maximum(self, o: Self) -> Self;
    fn minimum(self, o: Self) -> Self;
    fn neg(self) -> Self;
    fn abs(self) -> Self;
    fn sign(self) -> Self;
    fn is_nan(self) -> bool;
    fn bit_and(self, o: Self) -> Self;
    fn bit_or(self, o: Self) -> Self;
    fn bit_xor(self, o: Self) -> Self;
}

pub trait Float: Num {
    /// exp of a whole block: the kernels' exp (one-op and fused alike) goes through this, so
    /// both give the same bits. float32 is vectorised (`vmath`); float64 is libm's.
    fn exp_inplace(buf: &mut [Self]);
    fn ln(self) -> Self;
    fn log2(self) -> Self;
    fn log10(self) -> Self;
    fn sqrt(self) -> Self;
    fn tanh(self) -> Self;
    fn sin(self) -> Self;
    fn cos(self) -> Self;
    fn tan(self) -> Self;
    fn floor(self) -> Self;
    fn ceil(self) -> Self;
    fn round_even(self) -> Self;
    fn trunc(self) -> Self;
    fn sigmoid(self) -> Self;
    fn recip(self) -> Self;
}

macro_rules! element_common {
    ($t:ty, $dtype:expr, $variant:ident) => {
        const DTYPE: DType = $dtype;
        #[inline(always)]
        fn into_storage(v: Vec<Self>) -> CpuStorage {
            CpuStorage::$variant(v)
        }
        #[inline(always)]
        fn slice(storage: &CpuStorage) -> Option<&[Self]> {
            match storage {
                CpuStorage::$variant(v) => Some(v),
                _ => None,
            }
        }
        #[inline(always)]
        fn slice_mut(storage: &mut CpuStorage) -> Option<&mut [Self]> {
            match storage {
                CpuStorage::$variant(v) => Some(v),
                _ => None,
            }
        }
        #[inline(always)]
        fn vec_mut(storage: &mut CpuStorage) -> Option<&mut Vec<Self>> {
            match storage {
                CpuStorage::$variant(v) => Some(v),
                _ => None,
            }
        }
    };
}

macro_rules! float_element {
    ($t:ident, $dtype:expr, $variant:ident, $exp_inplace:expr) => {
        impl Element for $t {
            element_common!($t, $dtype, $variant);
            #[inline(always)]
            fn from_f64(v: f64) -> Self {
                v as $t
            }
            #[inline(always)]
            fn to_f64(self) -> f64 {
                self as f64
            }
            #[inline(always)]
            fn from_i64(v: i64) -> Self {
                v as $t
            }
            #[inline(always)]
            fn to_i64(self) -> i64 {
                self as i64
            }
            #[inline(always)]
            fn is_nonzero(self) -> bool {
                self != 0.0
            }
        }

        impl Num for $t {
            #[inline(always)]
            fn zero() -> Self {
                0.0
            }
            #[inline(always)]
            fn one() -> Self {
                1.0
            }
            #[inline(always)]
            fn add(self, o: Self) -> Self {
                self + o
            }
            #[inline(always)]
            fn sub(self, o: Self) -> Self {
                self - o
            }
            #[inline(always)]
            fn mul(self, o: Self) -> Self {
                self * o
            }
            #[inline(always)]
            fn div(self, o: Self) -> Self {
                self / o
            }
            #[inline(always)]
            fn floor_div(self, o: Self) -> Self {
                // NumPy's npy_floor_divide: through fmod, so `1 // 0.1 == 9`, and infinities
                // and signed zeros come out as NumPy's (`7 // -inf == -1`).
                if o == 0.0 {
                    return self / o;
                }
                let m = self % o;
                let mut div = (self - m) / o;
                if m != 0.0 && ((o < 0.0) != (m < 0.0)) {
                    div -= 1.0;
                }
                if div == 0.0 {
                    return (0.0 as Self).copysign(self / o);
                }
                let f = div.floor();
                if div - f > 0.5 {
                    f + 1.0
                } else {
                    f
                }
            }
            #[inline(always)]
            fn modulo(self, o: Self) -> Self {
                // NumPy's npy_remainder: a zero remainder takes the divisor's sign.
                let r = self % o;
                if o == 0.0 {
                    return r;
                }
                if r == 0.0 {
                    (0.0 as Self).copysign(o)
                } else if (r < 0.0) != (o < 0.0) {
                    r + o
                } else {
                    r
                }
            }
            #[inline(always)]
            fn pow(self, o: Self) -> Self {
                self.powf(o)
            }
            #[inline(always)]
            fn maximum(self, o: Self) -> Self {
                // NumPy's `(a > b || isnan(a)) ? a : b`: of two zeros, the second.
                if self.is_nan() || self > o {
                    self
                } else {
                    o
                }
            }
            #[inline(always)]
            fn minimum(self, o: Self) -> Self {
                if self.is_nan() || self < o {
                    self
                } else {
                    o
                }
            }
            #[inline(always)]
            fn neg(self) -> Self {
                -self
            }
            #[inline(always)]
            fn abs(self) -> Self {
                self.abs()
            }
            #[inline(always)]
            fn sign(self) -> Self {
                if self > 0.0 {
                    1.0
                } else if self < 0.0 {
                    -1.0
                } else {
                    self
                }
            }
            #[inline(always)]
            fn is_nan(self) -> bool {
                self.is_nan()
            }
            fn bit_and(self, o: Self) -> Self {
                $t::from_bits(self.to_bits() & o.to_bits())
            }
            fn bit_or(self, o: Self) -> Self {
                $t::from_bits(self.to_bits() | o.to_bits())
            }
            fn bit_xor(self, o: Self) -> Self {
                $t::from_bits(self.to_bits() ^ o.to_bits())
            }
        }

        impl Float for $t {
            fn exp_inplace(buf: &mut [Self]) {
                $exp_inplace(buf)
            }
            #[inline(always)]
            fn ln(self) -> Self {
                self.ln()
            }
            #[inline(always)]
            fn log2(self) -> Self {
                self.log2()
            }
            #[inline(always)]
            fn log10(self) -> Self {
                self.log10()
            }
            #[inline(always)]
            fn sqrt(self) -> Self {
                self.sqrt()
            }
            #[inline(always)]
            fn tanh(self) -> Self {
                self.tanh()
            }
            #[inline(always)]
            fn sin(self) -> Self {
                self.sin()
            }
            #[inline(always)]
            fn cos(self) -> Self {
                self.cos()
            }
            #[inline(always)]
            fn tan(self) -> Self {
                self.tan()
            }
            #[inline(always)]
            fn floor(self) -> Self {
                self.floor()
            }
            #[inline(always)]
            fn ceil(self) -> Self {
                self.ceil()
            }
            #[inline(always)]
            fn round_even(self) -> Self {
                self.round_ties_even()
            }
            #[inline(always)]
            fn trunc(self) -> Self {
                self.trunc()
            }
            #[inline(always)]
            fn sigmoid(self) -> Self {
                1.0 / (1.0 + (-self).exp())
            }
            #[inline(always)]
            fn recip(self) -> Self {
                1.0 / self
            }
        }
    };
}

/// The integer dtypes, signed and unsigned: everything but the methods where a sign matters
/// (`floor_div`, `modulo`, `pow`, `abs`, `sign`), which each caller passes in `$signed`.
macro_rules! integer_element {
    ($t:ident, $dtype:expr, $variant:ident, $from_f64:expr, { $($signed:tt)* }) => {
        impl Element for $t {
            element_common!($t, $dtype, $variant);
            #[inline(always)]
            fn from_f64(v: f64) -> Self {
                $from_f64(v)
            }
            #[inline(always)]
            fn to_f64(self) -> f64 {
                self as f64
            }
            #[inline(always)]
            fn from_i64(v: i64) -> Self {
                v as $t
            }
            #[inline(always)]
            fn to_i64(self) -> i64 {
                self as i64
            }
            #[inline(always)]
            fn is_nonzero(self) -> bool {
                self != 0
            }
        }

        impl Num for $t {
            #[inline(always)]
            fn zero() -> Self {
                0
            }
            #[inline(always)]
            fn one() -> Self {
                1
            }
            #[inline(always)]
            fn add(self, o: Self) -> Self {
                self.wrapping_add(o)
            }
            #[inline(always)]
            fn sub(self, o: Self) -> Self {
                self.wrapping_sub(o)
            }
            #[inline(always)]
            fn mul(self, o: Self) -> Self {
                self.wrapping_mul(o)
            }
            #[inline(always)]
            fn div(self, o: Self) -> Self {
                self.floor_div(o)
            }
            #[inline(always)]
            fn maximum(self, o: Self) -> Self {
                self.max(o)
            }
            #[inline(always)]
            fn minimum(self, o: Self) -> Self {
                self.min(o)
            }
            #[inline(always)]
            fn neg(self) -> Self {
                self.wrapping_neg()
            }
            #[inline(always)]
            fn is_nan(self) -> bool {
                false
            }
            #[inline(always)]
            fn bit_and(self, o: Self) -> Self {
                self & o
            }
            #[inline(always)]
            fn bit_or(self, o: Self) -> Self {
                self | o
            }
            #[inline(always)]
            fn bit_xor(self, o: Self) -> Self {
                self ^ o
            }
            $($signed)*
        }
    };
}

/// The signed integers: floor division and a modulo with the divisor's sign (Python's), and
/// NumPy's answers for division by zero and negative powers.
macro_rules! int_element {
    ($t:ident, $dtype:expr, $variant:ident, $from_f64:expr) => {
        integer_element!($t, $dtype, $variant, $from_f64, {
            #[inline(always)]
            fn floor_div(self, o: Self) -> Self {
                if o == 0 {
                    return 0;
                }
                let q = self.wrapping_div(o);
                if (self.wrapping_rem(o) != 0) && ((self < 0) != (o < 0)) {
                    q.wrapping_sub(1)
                } else {
                    q
                }
            }
            #[inline(always)]
            fn modulo(self, o: Self) -> Self {
                if o == 0 {
                    return 0;
                }
                let r = self.wrapping_rem(o);
                if r != 0 && ((r < 0) != (o < 0)) {
                    r + o
                } else {
                    r
                }
            }
            #[inline(always)]
            fn pow(self, o: Self) -> Self {
                if o < 0 {
                    // numpy refuses negative integer powers; 1 and -1 are the only exact answers.
                    return match self {
                        1 => 1,
                        -1 => {
                            if o % 2 == 0 {
                                1
                            } else {
                                -1
                            }
                        }
                        _ => 0,
                    };
                }
                self.wrapping_pow(u32::try_from(o).unwrap_or(u32::MAX))
            }
            #[inline(always)]
            fn abs(self) -> Self {
                self.wrapping_abs()
            }
            #[inline(always)]
            fn sign(self) -> Self {
                self.signum()
            }
        });
    };
}

float_element!(f32, DType::Float32, F32, super::vmath::exp_f32_inplace);
float_element!(f64, DType::Float64, F64, |buf: &mut [f64]| buf
    .iter_mut()
    .for_each(|x| *x = x.exp()));
int_element!(i32, DType::Int32, I32, x86::to_i32);
int_element!(i64, DType::Int64, I64, x86::to_i64);
int_element!(i8, DType::Int8, I8, |v| x86::to_i32(v) as i8);
int_element!(i16, DType::Int16, I16, |v| x86::to_i32(v) as i16);

pub use crate::vocab::host::x86;

/// The unsigned integers: as `int_element`, without signs (negation wraps, abs and a
/// negative power cannot occur).
macro_rules! uint_element {
    ($t:ident, $dtype:expr, $variant:ident, $from_f64:expr) => {
        integer_element!($t, $dtype, $variant, $from_f64, {
            #[inline(always)]
            fn floor_div(self, o: Self) -> Self {
                self.checked_div(o).unwrap_or(0)
            }
            #[inline(always)]
            fn modulo(self, o: Self) -> Self {
                self.checked_rem(o).unwrap_or(0)
            }
            #[inline(always)]
            fn pow(self, o: Self) -> Self {
                self.wrapping_pow(u32::try_from(o).unwrap_or(u32::MAX))
            }
            #[inline(always)]
            fn abs(self) -> Self {
                self
            }
            #[inline(always)]
            fn sign(self) -> Self {
                Self::from(self != 0)
            }
        });
    };
}
uint_element!(u8, DType::UInt8, U8, |v| x86::to_i32(v) as u8);
uint_element!(u16, DType::UInt16, U16, |v| x86::to_i32(v) as u16);
uint_element!(u32, DType::UInt32, U32, x86::to_u32);
uint_element!(u64, DType::UInt64, U64, x86::to_u64);

/// float16 is a storage type: its arithmetic runs in float32 and rounds back (NumPy's half
/// loops do the same), so it needs only `Element`.
impl Element for half::f16 {
    element_common!(half::f16, DType::Float16, F16);
    #[inline(always)]
    fn from_f64(v: f64) -> Self {
        half::f16::from_f64(v)
    }
    #[inline(always)]
    fn to_f64(self) -> f64 {
        self.to_f64()
    }
    #[inline(always)]
    fn from_i64(v: i64) -> Self {
        half::f16::from_f64(v as f64)
    }
    #[inline(always)]
    fn to_i64(self) -> i64 {
        x86::to_i64(self.to_f64())
    }
    #[inline(always)]
    fn is_nonzero(self) -> bool {
        self.to_f32() != 0.0
    }
    #[inline(always)]
    fn cast<U: Element>(self) -> U {
        U::from_f64(self.to_f64())
    }
}

/// bfloat16 too: a storage type computed in float32 (PyTorch's CPU kernels do the same).
impl Element for half::bf16 {
    element_common!(half::bf16, DType::BFloat16, BF16);
    #[inline(always)]
    fn from_f64(v: f64) -> Self {
        half::bf16::from_f64(v)
    }
    #[inline(always)]
    fn to_f64(self) -> f64 {
        self.to_f64()
    }
    #[inline(always)]
    fn from_i64(v: i64) -> Self {
        half::bf16::from_f64(v as f64)
    }
    #[inline(always)]
    fn to_i64(self) -> i64 {
        x86::to_i64(self.to_f64())
    }
    #[inline(always)]
    fn is_nonzero(self) -> bool {
        self.to_f32() != 0.0
    }
    #[inline(always)]
    fn cast<U: Element>(self) -> U {
        U::from_f64(self.to_f64())
    }
}

impl Element for bool {
    element_common!(bool, DType::Bool, Bool);
    #[inline(always)]
    fn from_f64(v: f64) -> Self {
        v != 0.0
    }
    #[inline(always)]
    fn to_f64(self) -> f64 {
        f64::from(u8::from(self))
    }
    #[inline(always)]
    fn from_i64(v: i64) -> Self {
        v != 0
    }
    #[inline(always)]
    fn to_i64(self) -> i64 {
        i64::from(self)
    }
    #[inline(always)]
    fn is_nonzero(self) -> bool {
        self
    }
}

#[cfg(test)]
mod tests {
    use super::x86;
    use super::Element;

    #[test]
    fn float_to_int_casts_are_numpys_on_x86() {
        // `np.array([300.7, -1.0, 3e9, -3e9, 1e10, nan, inf, -0.5, 255.9, 65536.5, 1e20, -1e20])
        //  .astype(t)` on numpy 1.23.5, x86-64.
        let v = [
            300.7,
            -1.0,
            3e9,
            -3e9,
            1e10,
            f64::NAN,
            f64::INFINITY,
            -0.5,
            255.9,
            65536.5,
            1e20,
            -1e20,
        ];
        let u8s: Vec<u8> = v.iter().map(|&x| u8::from_f64(x)).collect();
        assert_eq!(u8s, [44, 255, 0, 0, 0, 0, 0, 0, 255, 0, 0, 0]);
        let i16s: Vec<i16> = v.iter().map(|&x| i16::from_f64(x)).collect();
        assert_eq!(i16s, [300, -1, 0, 0, 0, 0, 0, 0, 255, 0, 0, 0]);
        let i32s: Vec<i32> = v.iter().map(|&x| x86::to_i32(x)).collect();
        let min = i32::MIN;
        assert_eq!(
            i32s,
            [300, -1, min, min, min, min, min, 0, 255, 65536, min, min]
        );
        let u32s: Vec<u32> = v.iter().map(|&x| x86::to_u32(x)).collect();
        assert_eq!(
            u32s,
            [
                300, 4294967295, 3000000000, 2147483648, 0, 2147483648, 0, 0, 255, 65536, 0,
                2147483648
            ]
        );
        let u64s: Vec<u64> = v.iter().map(|&x| x86::to_u64(x)).collect();
        assert_eq!(
            u64s,
            [
                300,
                18446744073709551615,
                3000000000,
                18446744070709551616,
                10000000000,
                9223372036854775808,
                0,
                0,
                255,
                65536,
                0,
                9223372036854775808
            ]
        );
    }

    #[test]
    fn integer_casts_wrap_and_half_rounds_to_nearest_even() {
        assert_eq!(300i64.cast::<u8>(), 44);
        assert_eq!((-1i32).cast::<u16>(), 65535);
        assert_eq!(u64::MAX.cast::<i64>(), -1);
        assert_eq!(half::f16::from_f64(0.1).to_bits(), 0x2e66);
        // 2049 is halfway between 2048 and 2050: to even.
        assert_eq!(2049.0f64.cast::<half::f16>().to_f64(), 2048.0);
        assert_eq!(65520.0f64.cast::<half::f16>().to_f64(), f64::INFINITY);
        assert_eq!(half::f16::from_f64(300.7).cast::<u8>(), 44);
    }
}
