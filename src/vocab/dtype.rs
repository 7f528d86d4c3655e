//! Element types and the promotion lattice bool < int32 < int64 < float32 < float64.
//! int64 combined with float32 gives float32 (the deep-learning default, not numpy's float64).

#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum DType {
    Float32,
    Float64,
    Int32,
    Int64,
    Bool,
}

impl DType {
    pub fn name(self) -> &'static str {
        match self {
            DType::Float32 => "float32",
            DType::Float64 => "float64",
            DType::Int32 => "int32",
            DType::Int64 => "int64",
            DType::Bool => "bool",
        }
    }

    pub fn from_name(name: &str) -> Option<DType> {
        match name {
            "float32" | "float" | "f4" => Some(DType::Float32),
            "float64" | "double" | "f8" => Some(DType::Float64),
            "int32" | "int" | "i4" => Some(DType::Int32),
            "int64" | "long" | "i8" => Some(DType::Int64),
            "bool" => Some(DType::Bool),
            _ => None,
        }
    }

    pub fn size_bytes(self) -> usize {
        match self {
            DType::Float32 | DType::Int32 => 4,
            DType::Float64 | DType::Int64 => 8,
            DType::Bool => 1,
        }
    }

    pub fn is_float(self) -> bool {
        matches!(self, DType::Float32 | DType::Float64)
    }

    pub fn is_int(self) -> bool {
        matches!(self, DType::Int32 | DType::Int64)
    }

    /// Position in the promotion lattice.
    fn rank(self) -> u8 {
        match self {
            DType::Bool => 0,
            DType::Int32 => 1,
            DType::Int64 => 2,
            DType::Float32 => 3,
            DType::Float64 => 4,
        }
    }

    /// The type two array operands are computed in.
    pub fn promote(self, other: DType) -> DType {
        if self.rank() >= other.rank() {
            self
        } else {
            other
        }
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
        for d in [
            DType::Float32,
            DType::Float64,
            DType::Int32,
            DType::Int64,
            DType::Bool,
        ] {
            assert_eq!(DType::from_name(d.name()), Some(d));
        }
        assert_eq!(DType::from_name("float"), Some(DType::Float32));
        assert_eq!(DType::from_name("f4"), Some(DType::Float32));
        assert_eq!(DType::from_name("double"), Some(DType::Float64));
        assert_eq!(DType::from_name("int"), Some(DType::Int32));
        assert_eq!(DType::from_name("long"), Some(DType::Int64));
        assert_eq!(DType::from_name("complex64"), None);
        assert_eq!(DType::Float64.size_bytes(), 8);
        assert_eq!(DType::Bool.size_bytes(), 1);
    }

    #[test]
    fn promotion_lattice() {
        assert_eq!(DType::Bool.promote(DType::Int32), DType::Int32);
        assert_eq!(DType::Int32.promote(DType::Int64), DType::Int64);
        assert_eq!(DType::Int64.promote(DType::Float32), DType::Float32);
        assert_eq!(DType::Float32.promote(DType::Float64), DType::Float64);
        assert_eq!(DType::Int32.to_float(), DType::Float32);
    }
}
