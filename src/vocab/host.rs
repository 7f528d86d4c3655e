//! Host-side copies of array data, used by display, `asnumpy` and creation from literals.
use super::dtype::DType;

/// A row-major host copy of an array's elements.
#[derive(Clone, Debug, PartialEq)]
pub enum HostData {
    F32(Vec<f32>),
    F64(Vec<f64>),
    I32(Vec<i32>),
    I64(Vec<i64>),
    Bool(Vec<bool>),
}

impl HostData {
    pub fn dtype(&self) -> DType {
        match self {
            HostData::F32(_) => DType::Float32,
            HostData::F64(_) => DType::Float64,
            HostData::I32(_) => DType::Int32,
            HostData::I64(_) => DType::Int64,
            HostData::Bool(_) => DType::Bool,
        }
    }

    pub fn len(&self) -> usize {
        match self {
            HostData::F32(v) => v.len(),
            HostData::F64(v) => v.len(),
            HostData::I32(v) => v.len(),
            HostData::I64(v) => v.len(),
            HostData::Bool(v) => v.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Element `i` as a language scalar (None when out of range).
    pub fn scalar_at(&self, i: usize) -> Option<Scalar> {
        Some(match self {
            HostData::F32(v) => Scalar::Float(f64::from(*v.get(i)?)),
            HostData::F64(v) => Scalar::Float(*v.get(i)?),
            HostData::I32(v) => Scalar::Int(i64::from(*v.get(i)?)),
            HostData::I64(v) => Scalar::Int(*v.get(i)?),
            HostData::Bool(v) => Scalar::Bool(*v.get(i)?),
        })
    }

    /// Every element widened to f64 (display helpers, tests).
    pub fn to_f64_vec(&self) -> Vec<f64> {
        match self {
            HostData::F32(v) => v.iter().map(|&x| f64::from(x)).collect(),
            HostData::F64(v) => v.clone(),
            HostData::I32(v) => v.iter().map(|&x| f64::from(x)).collect(),
            HostData::I64(v) => v.iter().map(|&x| x as f64).collect(),
            HostData::Bool(v) => v.iter().map(|&x| f64::from(u8::from(x))).collect(),
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
