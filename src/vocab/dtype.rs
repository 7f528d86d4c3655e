//! Element types and their promotion. Categories rank bool < integer < float; within integers
//! NumPy's table holds (same signedness: the wider; mixed: a signed type wide enough for
//! both, float64 past int64), within floats the wider. An integer with a float gives the float
//! (int64 with float32 is float32: the deep-learning default, PyTorch's, not NumPy's float64;
//! the NumPy dialect applies `numpy_promote` instead).

#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum DType {
    Float32,
    Float64,
    Int32,
    Int64,
    Bool,
    Float16,
    Int8,
    Int16,
    UInt8,
    UInt16,
    UInt32,
    UInt64,
    BFloat16,
}

impl DType {
    /// Every dtype, the original five first.
    pub const ALL: [DType; 13] = [
        DType::Float32,
        DType::Float64,
        DType::Int32,
        DType::Int64,
        DType::Bool,
        DType::Float16,
        DType::Int8,
        DType::Int16,
        DType::UInt8,
        DType::UInt16,
        DType::UInt32,
        DType::UInt64,
        DType::BFloat16,
    ];

    pub fn name(self) -> &'static str {
        match self {
            DType::Float32 => "float32",
            DType::Float64 => "float64",
            DType::Int32 => "int32",
            DType::Int64 => "int64",
            DType::Bool => "bool",
            DType::Float16 => "float16",
            DType::Int8 => "int8",
            DType::Int16 => "int16",
            DType::UInt8 => "uint8",
            DType::UInt16 => "uint16",
            DType::UInt32 => "uint32",
            DType::UInt64 => "uint64",
            DType::BFloat16 => "bfloat16",
        }
    }

    pub fn from_name(name: &str) -> Option<DType> {
        match name {
            "float32" | "float" | "f4" => Some(DType::Float32),
            "float64" | "double" | "f8" => Some(DType::Float64),
            "int32" | "int" | "i4" => Some(DType::Int32),
            "int64" | "long" | "i8" => Some(DType::Int64),
            "bool" => Some(DType::Bool),
            "float16" | "half" | "f2" => Some(DType::Float16),
            "int8" | "i1" => Some(DType::Int8),
            "int16" | "short" | "i2" => Some(DType::Int16),
            "uint8" | "u1" => Some(DType::UInt8),
            "uint16" | "u2" => Some(DType::UInt16),
            "uint32" | "u4" => Some(DType::UInt32),
            "uint64" | "u8" => Some(DType::UInt64),
            "bfloat16" => Some(DType::BFloat16),
            _ => None,
        }
    }

    pub fn size_bytes(self) -> usize {
        match self {
            DType::Bool | DType::Int8 | DType::UInt8 => 1,
            DType::Float16 | DType::BFloat16 | DType::Int16 | DType::UInt16 => 2,
            DType::Float32 | DType::Int32 | DType::UInt32 => 4,
            DType::Float64 | DType::Int64 | DType::UInt64 => 8,
        }
    }

    pub fn is_float(self) -> bool {
        matches!(
            self,
            DType::Float16 | DType::BFloat16 | DType::Float32 | DType::Float64
        )
    }

    /// The 16-bit floats (float16, bfloat16): storage types whose arithmetic runs in float32
    /// and rounds back.
    pub fn is_half(self) -> bool {
        matches!(self, DType::Float16 | DType::BFloat16)
    }

    /// The dtypes the float kernels (fused expressions, im2col, pooling, batch norm) are
    /// written for; float16 computes through float32 and takes the composed paths.
    pub fn has_float_kernels(self) -> bool {
        matches!(self, DType::Float32 | DType::Float64)
    }

    /// Any integer type, signed or not (never bool).
    pub fn is_int(self) -> bool {
        !self.is_float() && self != DType::Bool
    }

    pub fn is_unsigned(self) -> bool {
        matches!(
            self,
            DType::UInt8 | DType::UInt16 | DType::UInt32 | DType::UInt64
        )
    }

    /// The integer type of `bits` bits and this signedness (None past 64).
    fn int_of(signed: bool, bits: usize) -> Option<DType> {
        Some(match (signed, bits) {
            (true, 8) => DType::Int8,
            (true, 16) => DType::Int16,
            (true, 32) => DType::Int32,
            (true, 64) => DType::Int64,
            (false, 8) => DType::UInt8,
            (false, 16) => DType::UInt16,
            (false, 32) => DType::UInt32,
            (false, 64) => DType::UInt64,
            _ => return None,
        })
    }

    /// NumPy's promotion of two integer types (`np.promote_types`): same signedness gives
    /// the wider; an unsigned with a signed gives a signed type holding both, float64 when
    /// none does (uint64 with any signed type).
    fn promote_ints(self, other: DType) -> DType {
        let (a, b) = (self.size_bytes() * 8, other.size_bytes() * 8);
        let (ua, ub) = (self.is_unsigned(), other.is_unsigned());
        if ua == ub {
            return if a >= b { self } else { other };
        }
        let (unsigned_bits, signed_bits) = if ua { (a, b) } else { (b, a) };
        if unsigned_bits < signed_bits {
            return DType::int_of(true, signed_bits).unwrap_or(DType::Float64);
        }
        DType::int_of(true, unsigned_bits * 2).unwrap_or(DType::Float64)
    }

    /// 0 bool, 1 integer, 2 float.
    pub fn category(self) -> u8 {
        if self == DType::Bool {
            0
        } else if self.is_float() {
            2
        } else {
            1
        }
    }

    /// The type two array operands are computed in (PyTorch's `result_type` for tensors).
    pub fn promote(self, other: DType) -> DType {
        if self == other {
            return self;
        }
        match (self.category(), other.category()) {
            (0, _) => other,
            (_, 0) => self,
            (1, 1) => self.promote_ints(other),
            // float16 with bfloat16: neither holds the other (PyTorch gives float32).
            (2, 2) if self.size_bytes() == other.size_bytes() => DType::Float32,
            (2, 2) => {
                if self.size_bytes() >= other.size_bytes() {
                    self
                } else {
                    other
                }
            }
            (2, _) => self,
            _ => other,
        }
    }

    /// NumPy 1.23's `np.promote_types`: as `promote`, except that an integer with a float
    /// gives a float wide enough for every value of both (int8 and float16 give float16,
    /// int16 and float16 float32, int32 or wider with any float float64).
    pub fn numpy_promote(self, other: DType) -> DType {
        let (int, float) = match (self.category(), other.category()) {
            (1, 2) => (self, other),
            (2, 1) => (other, self),
            _ => return self.promote(other),
        };
        let holds_int = match int.size_bytes() {
            1 => DType::Float16,
            2 => DType::Float32,
            _ => DType::Float64,
        };
        float.promote(holds_int)
    }

    /// The float type an integer or bool input is computed in by float-only ops (exp, true division).
    pub fn to_float(self) -> DType {
        if self.is_float() {
            self
        } else {
            DType::Float32
        }
    }
}

impl std::fmt::Display for DType {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_aliases() {
        for d in DType::ALL {
            assert_eq!(DType::from_name(d.name()), Some(d));
        }
        assert_eq!(DType::from_name("float"), Some(DType::Float32));
        assert_eq!(DType::from_name("f4"), Some(DType::Float32));
        assert_eq!(DType::from_name("double"), Some(DType::Float64));
        assert_eq!(DType::from_name("int"), Some(DType::Int32));
        assert_eq!(DType::from_name("long"), Some(DType::Int64));
        assert_eq!(DType::from_name("half"), Some(DType::Float16));
        assert_eq!(DType::from_name("complex64"), None);
        assert_eq!(DType::Float64.size_bytes(), 8);
        assert_eq!(DType::Bool.size_bytes(), 1);
        assert_eq!(DType::Float16.size_bytes(), 2);
    }

    #[test]
    fn promotion_lattice() {
        assert_eq!(DType::Bool.promote(DType::Int32), DType::Int32);
        assert_eq!(DType::Int32.promote(DType::Int64), DType::Int64);
        assert_eq!(DType::Int64.promote(DType::Float32), DType::Float32);
        assert_eq!(DType::Float32.promote(DType::Float64), DType::Float64);
        assert_eq!(DType::Int32.to_float(), DType::Float32);
    }

    #[test]
    fn small_integer_and_half_promotion() {
        use DType::*;
        assert_eq!(UInt8.promote(Int8), Int16);
        assert_eq!(UInt8.promote(UInt8), UInt8);
        assert_eq!(UInt16.promote(Int16), Int32);
        assert_eq!(UInt8.promote(Int32), Int32);
        assert_eq!(UInt32.promote(Int32), Int64);
        assert_eq!(UInt64.promote(Int64), Float64);
        assert_eq!(UInt8.promote(UInt64), UInt64);
        assert_eq!(Float16.promote(Float32), Float32);
        assert_eq!(Int64.promote(Float16), Float16);
        assert_eq!(UInt8.numpy_promote(Float16), Float16);
        assert_eq!(Int16.numpy_promote(Float16), Float32);
        assert_eq!(Int32.numpy_promote(Float16), Float64);
        assert_eq!(Int64.numpy_promote(Float32), Float64);
        assert_eq!(Bool.numpy_promote(Float16), Float16);
        assert_eq!(BFloat16.promote(Float16), Float32);
        assert_eq!(BFloat16.promote(Float32), Float32);
        assert_eq!(Int64.promote(BFloat16), BFloat16);
    }
}
