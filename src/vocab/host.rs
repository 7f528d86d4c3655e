//! Host-side copies of array data, used by display, `asnumpy` and creation from literals.
use super::dtype::DType;
pub use half::{bf16, f16};

/// A row-major host copy of an array's elements.
#[derive(Clone, Debug, PartialEq)]
pub enum HostData {
    F32(Vec<f32>),
    F64(Vec<f64>),
    I32(Vec<i32>),
    I64(Vec<i64>),
    Bool(Vec<bool>),
    F16(Vec<f16>),
    I8(Vec<i8>),
    I16(Vec<i16>),
    U8(Vec<u8>),
    U16(Vec<u16>),
    U32(Vec<u32>),
    U64(Vec<u64>),
    BF16(Vec<bf16>),
}

/// Runs `$body` with `$v` bound to the typed vector of a `HostData`, whatever the dtype.
#[macro_export]
macro_rules! host_any {
    ($data:expr, $v:ident => $body:expr) => {{
        use $crate::vocab::HostData as H;
        match $data {
            H::F32($v) => $body,
            H::F64($v) => $body,
            H::I32($v) => $body,
            H::I64($v) => $body,
            H::Bool($v) => $body,
            H::F16($v) => $body,
            H::I8($v) => $body,
            H::I16($v) => $body,
            H::U8($v) => $body,
            H::U16($v) => $body,
            H::U32($v) => $body,
            H::U64($v) => $body,
            H::BF16($v) => $body,
        }
    }};
}

/// An element type a `HostData` can hold: how it widens to the language's numbers and how a
/// number converts into it (as NumPy casts: floats truncate toward zero into integers, and
/// integers wrap).
pub trait HostElement: Copy + Send + Sync + 'static {
    const DTYPE: DType;
    fn host_f64(self) -> f64;
    fn host_scalar(self) -> Scalar;
    fn from_f64_cast(v: f64) -> Self;
    fn into_host(v: Vec<Self>) -> HostData;
}

macro_rules! host_int {
    ($t:ty, $d:expr, $variant:ident, $from_f64:expr) => {
        impl HostElement for $t {
            const DTYPE: DType = $d;
            fn host_f64(self) -> f64 {
                self as f64
            }
            fn host_scalar(self) -> Scalar {
                Scalar::Int(self as i64)
            }
            fn from_f64_cast(v: f64) -> Self {
                $from_f64(v)
            }
            fn into_host(v: Vec<Self>) -> HostData {
                HostData::$variant(v)
            }
        }
    };
}

/// Float to integer conversions as NumPy computes them on x86 (C casts compiled to
/// `cvttsd2si`): truncation toward zero; NaN and values out of range give the type's minimum
/// (int32, int64); 8- and 16-bit types take the low bits of the int32 conversion, unsigned
/// 32- and 64-bit ones convert values from 2^31 (2^63) up by subtracting it first.
/// `np.array([300.7, -1, 3e9]).astype(np.uint8)` is `[44, 255, 0]`.
pub mod x86 {
    #[inline(always)]
    pub fn to_i32(v: f64) -> i32 {
        if v > -2147483649.0 && v < 2147483648.0 {
            v as i32
        } else {
            i32::MIN
        }
    }
    #[inline(always)]
    pub fn to_i64(v: f64) -> i64 {
        if (-9.223372036854776e18..9.223372036854776e18).contains(&v) {
            v as i64
        } else {
            i64::MIN
        }
    }
    #[inline(always)]
    pub fn to_u32(v: f64) -> u32 {
        if v < 2147483648.0 || v.is_nan() {
            to_i32(v) as u32
        } else {
            (to_i32(v - 2147483648.0) as u32) ^ 0x8000_0000
        }
    }
    #[inline(always)]
    pub fn to_u64(v: f64) -> u64 {
        if v < 9.223372036854776e18 || v.is_nan() {
            to_i64(v) as u64
        } else {
            (to_i64(v - 9.223372036854776e18) as u64) ^ (1 << 63)
        }
    }
}

host_int!(i32, DType::Int32, I32, x86::to_i32);
host_int!(i64, DType::Int64, I64, x86::to_i64);
host_int!(i8, DType::Int8, I8, |v| x86::to_i32(v) as i8);
host_int!(i16, DType::Int16, I16, |v| x86::to_i32(v) as i16);
host_int!(u8, DType::UInt8, U8, |v| x86::to_i32(v) as u8);
host_int!(u16, DType::UInt16, U16, |v| x86::to_i32(v) as u16);
host_int!(u32, DType::UInt32, U32, x86::to_u32);

impl HostElement for u64 {
    const DTYPE: DType = DType::UInt64;
    fn host_f64(self) -> f64 {
        self as f64
    }
    fn host_scalar(self) -> Scalar {
        Scalar::Int(self as i64)
    }
    fn from_f64_cast(v: f64) -> Self {
        x86::to_u64(v)
    }
    fn into_host(v: Vec<Self>) -> HostData {
        HostData::U64(v)
    }
}

impl HostElement for f32 {
    const DTYPE: DType = DType::Float32;
    fn host_f64(self) -> f64 {
        f64::from(self)
    }
    fn host_scalar(self) -> Scalar {
        Scalar::Float(f64::from(self))
    }
    fn from_f64_cast(v: f64) -> Self {
        v as f32
    }
    fn into_host(v: Vec<Self>) -> HostData {
        HostData::F32(v)
    }
}

impl HostElement for f64 {
    const DTYPE: DType = DType::Float64;
    fn host_f64(self) -> f64 {
        self
    }
    fn host_scalar(self) -> Scalar {
        Scalar::Float(self)
    }
    fn from_f64_cast(v: f64) -> Self {
        v
    }
    fn into_host(v: Vec<Self>) -> HostData {
        HostData::F64(v)
    }
}

impl HostElement for f16 {
    const DTYPE: DType = DType::Float16;
    fn host_f64(self) -> f64 {
        self.to_f64()
    }
    fn host_scalar(self) -> Scalar {
        Scalar::Float(self.to_f64())
    }
    fn from_f64_cast(v: f64) -> Self {
        f16::from_f64(v)
    }
    fn into_host(v: Vec<Self>) -> HostData {
        HostData::F16(v)
    }
}

impl HostElement for bf16 {
    const DTYPE: DType = DType::BFloat16;
    fn host_f64(self) -> f64 {
        self.to_f64()
    }
    fn host_scalar(self) -> Scalar {
        Scalar::Float(self.to_f64())
    }
    fn from_f64_cast(v: f64) -> Self {
        bf16::from_f64(v)
    }
    fn into_host(v: Vec<Self>) -> HostData {
        HostData::BF16(v)
    }
}

impl HostElement for bool {
    const DTYPE: DType = DType::Bool;
    fn host_f64(self) -> f64 {
        f64::from(u8::from(self))
    }
    fn host_scalar(self) -> Scalar {
        Scalar::Bool(self)
    }
    fn from_f64_cast(v: f64) -> Self {
        v != 0.0
    }
    fn into_host(v: Vec<Self>) -> HostData {
        HostData::Bool(v)
    }
}

impl HostData {
    pub fn dtype(&self) -> DType {
        fn of<T: HostElement>(_: &[T]) -> DType {
            T::DTYPE
        }
        host_any!(self, v => of(v))
    }

    pub fn len(&self) -> usize {
        host_any!(self, v => v.len())
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Element `i` as a language scalar (None when out of range).
    pub fn scalar_at(&self, i: usize) -> Option<Scalar> {
        host_any!(self, v => v.get(i).map(|x| x.host_scalar()))
    }

    /// Every element widened to f64 (display helpers, tests).
    pub fn to_f64_vec(&self) -> Vec<f64> {
        host_any!(self, v => v.iter().map(|x| x.host_f64()).collect())
    }

    /// Values given as f64 (from literals) converted to `dtype` as NumPy casts them.
    pub fn from_f64_values(values: &[f64], dtype: DType) -> HostData {
        fn conv<T: HostElement>(values: &[f64]) -> HostData {
            T::into_host(values.iter().map(|&x| T::from_f64_cast(x)).collect())
        }
        match dtype {
            DType::Float32 => conv::<f32>(values),
            DType::Float64 => conv::<f64>(values),
            DType::Int32 => conv::<i32>(values),
            DType::Int64 => conv::<i64>(values),
            DType::Bool => conv::<bool>(values),
            DType::Float16 => conv::<f16>(values),
            DType::BFloat16 => conv::<bf16>(values),
            DType::Int8 => conv::<i8>(values),
            DType::Int16 => conv::<i16>(values),
            DType::UInt8 => conv::<u8>(values),
            DType::UInt16 => conv::<u16>(values),
            DType::UInt32 => conv::<u32>(values),
            DType::UInt64 => conv::<u64>(values),
        }
    }

    /// Raw little-endian bytes as stored in `.npy`, safetensors and `.params` files.
    pub fn to_le_bytes(&self) -> Vec<u8> {
        match self {
            HostData::F32(v) => v.iter().flat_map(|x| x.to_le_bytes()).collect(),
            HostData::F64(v) => v.iter().flat_map(|x| x.to_le_bytes()).collect(),
            HostData::I32(v) => v.iter().flat_map(|x| x.to_le_bytes()).collect(),
            HostData::I64(v) => v.iter().flat_map(|x| x.to_le_bytes()).collect(),
            HostData::Bool(v) => v.iter().map(|&x| u8::from(x)).collect(),
            HostData::F16(v) => v.iter().flat_map(|x| x.to_le_bytes()).collect(),
            HostData::BF16(v) => v.iter().flat_map(|x| x.to_le_bytes()).collect(),
            HostData::I8(v) => v.iter().flat_map(|x| x.to_le_bytes()).collect(),
            HostData::I16(v) => v.iter().flat_map(|x| x.to_le_bytes()).collect(),
            HostData::U8(v) => v.clone(),
            HostData::U16(v) => v.iter().flat_map(|x| x.to_le_bytes()).collect(),
            HostData::U32(v) => v.iter().flat_map(|x| x.to_le_bytes()).collect(),
            HostData::U64(v) => v.iter().flat_map(|x| x.to_le_bytes()).collect(),
        }
    }

    /// Elements of `dtype` read from little-endian bytes (a whole number of elements; a
    /// trailing partial element is ignored).
    pub fn from_le_bytes(bytes: &[u8], dtype: DType) -> HostData {
        macro_rules! read {
            ($t:ty, $variant:ident) => {
                HostData::$variant(
                    bytes
                        .chunks_exact(std::mem::size_of::<$t>())
                        .map(|c| <$t>::from_le_bytes(c.try_into().unwrap_or_default()))
                        .collect(),
                )
            };
        }
        match dtype {
            DType::Float32 => read!(f32, F32),
            DType::Float64 => read!(f64, F64),
            DType::Int32 => read!(i32, I32),
            DType::Int64 => read!(i64, I64),
            DType::Bool => HostData::Bool(bytes.iter().map(|&b| b != 0).collect()),
            DType::Float16 => read!(f16, F16),
            DType::BFloat16 => read!(bf16, BF16),
            DType::Int8 => read!(i8, I8),
            DType::Int16 => read!(i16, I16),
            DType::UInt8 => HostData::U8(bytes.to_vec()),
            DType::UInt16 => read!(u16, U16),
            DType::UInt32 => read!(u32, U32),
            DType::UInt64 => read!(u64, U64),
        }
    }
}

/// A language scalar: Python's bool, int and float.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Scalar {
    Bool(bool),
    Int(i64),
    Float(f64),
}

impl Scalar {
    pub fn as_f64(self) -> f64 {
        match self {
            Scalar::Bool(b) => f64::from(u8::from(b)),
            Scalar::Int(i) => i as f64,
            Scalar::Float(f) => f,
        }
    }
}
