//! The CPU backend: host memory, typed vectors, kernels monomorphised per dtype.
mod element;
#[macro_use]
mod simd;
mod blas;
pub mod cancel;
pub mod conv_grad;
pub mod conv_winograd;
mod fused;
mod gemm;
pub mod kernels;
pub mod norm;
pub mod patches;
pub mod pool;
mod pooling;

pub use blas::describe as gemm_info;
mod vmath;

use super::{BackendStorage, MatmulLayout, StridedView};
use crate::vocab::error::{Result, RuntimeError};
use crate::vocab::{BinaryOp, DType, FusedExpr, HostData, Patches, PoolKind, ReduceOp, UnaryOp};
use element::{Element, Float, Num};
use kernels::{alloc, map1, map2};

/// Row-major elements of one array on the host.
#[derive(Clone, Debug, PartialEq)]
pub enum CpuStorage {
    F32(Vec<f32>),
    F64(Vec<f64>),
    I32(Vec<i32>),
    I64(Vec<i64>),
    Bool(Vec<bool>),
    F16(Vec<half::f16>),
    I8(Vec<i8>),
    I16(Vec<i16>),
    U8(Vec<u8>),
    U16(Vec<u16>),
    U32(Vec<u32>),
    U64(Vec<u64>),
    BF16(Vec<half::bf16>),
}

/// Runs `$body` with `$v` bound to the typed vector, whatever the dtype.
macro_rules! with_any {
    ($storage:expr, $v:ident => $body:expr) => {
        match $storage {
            CpuStorage::F32($v) => $body,
            CpuStorage::F64($v) => $body,
            CpuStorage::I32($v) => $body,
            CpuStorage::I64($v) => $body,
            CpuStorage::Bool($v) => $body,
            CpuStorage::F16($v) => $body,
            CpuStorage::I8($v) => $body,
            CpuStorage::I16($v) => $body,
            CpuStorage::U8($v) => $body,
            CpuStorage::U16($v) => $body,
            CpuStorage::U32($v) => $body,
            CpuStorage::U64($v) => $body,
            CpuStorage::BF16($v) => $body,
        }
    };
}

/// Runs `$body` with `$v` bound to the typed vector of an integer storage (every signed and
/// unsigned width); `$other` for floats and bool.
macro_rules! with_int {
    ($storage:expr, $v:ident => $body:expr, $rest:ident => $other:expr) => {
        match $storage {
            CpuStorage::I32($v) => $body,
            CpuStorage::I64($v) => $body,
            CpuStorage::I8($v) => $body,
            CpuStorage::I16($v) => $body,
            CpuStorage::U8($v) => $body,
            CpuStorage::U16($v) => $body,
            CpuStorage::U32($v) => $body,
            CpuStorage::U64($v) => $body,
            $rest => $other,
        }
    };
}

/// Runs `$body` with `$a` and `$b` bound to two storages' vectors of one dtype; `$other`
/// when the dtypes differ.
macro_rules! with_pair {
    ($pair:expr, ($a:ident, $b:ident) => $body:expr, $rest:pat => $other:expr) => {
        match $pair {
            (CpuStorage::F32($a), CpuStorage::F32($b)) => $body,
            (CpuStorage::F64($a), CpuStorage::F64($b)) => $body,
            (CpuStorage::I32($a), CpuStorage::I32($b)) => $body,
            (CpuStorage::I64($a), CpuStorage::I64($b)) => $body,
            (CpuStorage::Bool($a), CpuStorage::Bool($b)) => $body,
            (CpuStorage::F16($a), CpuStorage::F16($b)) => $body,
            (CpuStorage::I8($a), CpuStorage::I8($b)) => $body,
            (CpuStorage::I16($a), CpuStorage::I16($b)) => $body,
            (CpuStorage::U8($a), CpuStorage::U8($b)) => $body,
            (CpuStorage::U16($a), CpuStorage::U16($b)) => $body,
            (CpuStorage::U32($a), CpuStorage::U32($b)) => $body,
            (CpuStorage::U64($a), CpuStorage::U64($b)) => $body,
            (CpuStorage::BF16($a), CpuStorage::BF16($b)) => $body,
            $rest => $other,
        }
    };
}

// After `with_any!`, which it uses.
pub mod select;

impl CpuStorage {
    /// The Frobenius norm of every element, as a 1-element storage (float dtypes only).
    pub fn norm2(&self) -> Result<CpuStorage> {
        match self {
            CpuStorage::F32(v) => Ok(CpuStorage::F32(vec![kernels::norm2(v)])),
            CpuStorage::F64(v) => Ok(CpuStorage::F64(vec![kernels::norm2(v)])),
            other => Err(internal(&format!(
                "norm of {} reached the kernel",
                other.dtype()
            ))),
        }
    }

    /// The bytes the buffer holds (its capacity, which may exceed its length).
    pub fn capacity_bytes(&self) -> usize {
        fn bytes<T>(v: &Vec<T>) -> usize {
            v.capacity().saturating_mul(std::mem::size_of::<T>())
        }
        with_any!(self, v => bytes(v))
    }
}

fn internal(what: &str) -> RuntimeError {
    RuntimeError::DType(format!(
        "internal error: {what}; please report this as a devarray bug"
    ))
}

fn fill<T: Element>(n: usize, value: T) -> Result<Vec<T>> {
    let mut v = alloc(n)?;
    v.resize(n, value);
    Ok(v)
}

fn cast_vec<T: Element, U: Element>(v: &[T]) -> Result<CpuStorage> {
    Ok(U::into_storage(map1(v, |x| x.cast::<U>())?))
}

fn cast_to<T: Element>(v: &[T], dtype: DType) -> Result<CpuStorage> {
    match dtype {
        DType::Float32 => cast_vec::<T, f32>(v),
        DType::Float64 => cast_vec::<T, f64>(v),
        DType::Int32 => cast_vec::<T, i32>(v),
        DType::Int64 => cast_vec::<T, i64>(v),
        DType::Bool => cast_vec::<T, bool>(v),
        DType::Float16 => cast_vec::<T, half::f16>(v),
        DType::BFloat16 => cast_vec::<T, half::bf16>(v),
        DType::Int8 => cast_vec::<T, i8>(v),
        DType::Int16 => cast_vec::<T, i16>(v),
        DType::UInt8 => cast_vec::<T, u8>(v),
        DType::UInt16 => cast_vec::<T, u16>(v),
        DType::UInt32 => cast_vec::<T, u32>(v),
        DType::UInt64 => cast_vec::<T, u64>(v),
    }
}

/// float16 computes in float32: the op runs on a float32 copy and a float32 result rounds
/// back to float16 (bool and index results stay as they are), as NumPy's half loops do.
/// An op of a 16-bit float storage (float16, bfloat16), computed in float32 and rounded back.
fn via_f32<T: Element>(
    v: &[T],
    op: impl FnOnce(&CpuStorage) -> Result<CpuStorage>,
) -> Result<CpuStorage> {
    let wide = cast_vec::<T, f32>(v)?;
    narrow_f32::<T>(op(&wide)?)
}

fn narrow_f32<T: Element>(out: CpuStorage) -> Result<CpuStorage> {
    match &out {
        CpuStorage::F32(r) => cast_vec::<f32, T>(r),
        _ => Ok(out),
    }
}

fn unary_num<T: Num>(v: &[T], op: UnaryOp) -> Result<CpuStorage> {
    let wrap = T::into_storage;
    Ok(match op {
        UnaryOp::Neg => wrap(map1(v, T::neg)?),
        UnaryOp::Abs => wrap(map1(v, T::abs)?),
        UnaryOp::Square => wrap(map1(v, |x| x.mul(x))?),
        UnaryOp::Relu => wrap(map1(v, |x| if x > T::zero() { x } else { T::zero() })?),
        UnaryOp::Sign => wrap(map1(v, T::sign)?),
        UnaryOp::Not => CpuStorage::Bool(map1(v, |x| !x.is_nonzero())?),
        op if op.is_rounding() => wrap(map1(v, |x| x)?),
        other => {
            return Err(internal(&format!(
                "{} reached an integer kernel",
                other.name()
            )))
        }
    })
}

fn unary_float<T: Float>(v: &[T], op: UnaryOp) -> Result<CpuStorage> {
    if op == UnaryOp::Not {
        return unary_num(v, op);
    }
    Ok(T::into_storage(fused::unary(v, op)?))
}

fn binary_num<T: Num>(
    a: &[T],
    sa: &[usize],
    b: &[T],
    sb: &[usize],
    shape: &[usize],
    op: BinaryOp,
) -> Result<CpuStorage> {
    let wrap = T::into_storage;
    let bools = CpuStorage::Bool;
    Ok(match op {
        BinaryOp::Add => wrap(map2(a, sa, b, sb, shape, T::add)?),
        BinaryOp::Sub => wrap(map2(a, sa, b, sb, shape, T::sub)?),
        BinaryOp::Mul => wrap(map2(a, sa, b, sb, shape, T::mul)?),
        BinaryOp::Div => wrap(map2(a, sa, b, sb, shape, T::div)?),
        BinaryOp::FloorDiv => wrap(map2(a, sa, b, sb, shape, T::floor_div)?),
        BinaryOp::Mod => wrap(map2(a, sa, b, sb, shape, T::modulo)?),
        BinaryOp::Pow => wrap(map2(a, sa, b, sb, shape, T::pow)?),
        BinaryOp::Maximum => wrap(map2(a, sa, b, sb, shape, T::maximum)?),
        BinaryOp::Minimum => wrap(map2(a, sa, b, sb, shape, T::minimum)?),
        BinaryOp::Eq => bools(map2(a, sa, b, sb, shape, |x, y| x == y)?),
        BinaryOp::Ne => bools(map2(a, sa, b, sb, shape, |x, y| x != y)?),
        BinaryOp::Lt => bools(map2(a, sa, b, sb, shape, |x, y| x < y)?),
        BinaryOp::Le => bools(map2(a, sa, b, sb, shape, |x, y| x <= y)?),
        BinaryOp::Gt => bools(map2(a, sa, b, sb, shape, |x, y| x > y)?),
        BinaryOp::Ge => bools(map2(a, sa, b, sb, shape, |x, y| x >= y)?),
        BinaryOp::And => wrap(map2(a, sa, b, sb, shape, T::bit_and)?),
        BinaryOp::Or => wrap(map2(a, sa, b, sb, shape, T::bit_or)?),
        BinaryOp::Xor => wrap(map2(a, sa, b, sb, shape, T::bit_xor)?),
    })
}

fn binary_bool(
    a: &[bool],
    sa: &[usize],
    b: &[bool],
    sb: &[usize],
    shape: &[usize],
    op: BinaryOp,
) -> Result<CpuStorage> {
    let f: fn(bool, bool) -> bool = match op {
        BinaryOp::And | BinaryOp::Minimum | BinaryOp::Mul => |x, y| x & y,
        BinaryOp::Or | BinaryOp::Maximum => |x, y| x | y,
        BinaryOp::Xor | BinaryOp::Ne => |x, y| x ^ y,
        BinaryOp::Eq => |x, y| x == y,
        BinaryOp::Lt => |x, y| !x & y,
        BinaryOp::Le => |x, y| x <= y,
        BinaryOp::Gt => |x, y| x & !y,
        BinaryOp::Ge => |x, y| x >= y,
        other => {
            return Err(internal(&format!(
                "{} reached the bool kernel",
                other.name()
            )))
        }
    };
    Ok(CpuStorage::Bool(map2(a, sa, b, sb, shape, f)?))
}

fn reduce_num<T: Num>(
    v: &[T],
    op: ReduceOp,
    outer: usize,
    len: usize,
    inner: usize,
) -> Result<CpuStorage> {
    use kernels::{reduce_arg, reduce_extreme, reduce_fold, reduce_sum, Extreme};
    let wrap = T::into_storage;
    Ok(match op {
        ReduceOp::Sum => wrap(reduce_sum(v, outer, len, inner)?),
        ReduceOp::Prod => wrap(reduce_fold(v, outer, len, inner, T::one(), T::mul)?),
        ReduceOp::Max => wrap(reduce_extreme(v, outer, len, inner, Extreme::Max)?),
        ReduceOp::Min => wrap(reduce_extreme(v, outer, len, inner, Extreme::Min)?),
        ReduceOp::ArgMax => CpuStorage::I64(reduce_arg(v, outer, len, inner, Extreme::Max)?),
        ReduceOp::ArgMin => CpuStorage::I64(reduce_arg(v, outer, len, inner, Extreme::Min)?),
        ReduceOp::Mean => return Err(internal("mean reached the backend")),
    })
}

fn matmul_int<T: Num>(a: &[T], b: &[T], l: &MatmulLayout) -> Result<CpuStorage> {
    if l.trans != [false, false] {
        return Err(internal("an integer matmul was given a transposed layout"));
    }
    let (m, k, n) = (l.m, l.k, l.n);
    let mut out = alloc(l.batch * m * n)?;
    for (&oa, &ob) in l.lhs_offsets.iter().zip(&l.rhs_offsets) {
        kernels::matmul_naive(&a[oa..oa + m * k], &b[ob..ob + k * n], m, k, n, &mut out);
    }
    Ok(T::into_storage(out))
}

impl CpuStorage {
    fn dtype_mismatch(&self, other: &CpuStorage) -> RuntimeError {
        internal(&format!(
            "operands reached the CPU kernel as {} and {}",
            self.dtype(),
            other.dtype()
        ))
    }
}

impl BackendStorage for CpuStorage {
    fn dtype(&self) -> DType {
        match self {
            CpuStorage::F32(_) => DType::Float32,
            CpuStorage::F64(_) => DType::Float64,
            CpuStorage::I32(_) => DType::Int32,
            CpuStorage::I64(_) => DType::Int64,
            CpuStorage::Bool(_) => DType::Bool,
            CpuStorage::F16(_) => DType::Float16,
            CpuStorage::BF16(_) => DType::BFloat16,
            CpuStorage::I8(_) => DType::Int8,
            CpuStorage::I16(_) => DType::Int16,
            CpuStorage::U8(_) => DType::UInt8,
            CpuStorage::U16(_) => DType::UInt16,
            CpuStorage::U32(_) => DType::UInt32,
            CpuStorage::U64(_) => DType::UInt64,
        }
    }

    fn len(&self) -> usize {
        with_any!(self, v => v.len())
    }

    fn full(n: usize, value: f64, dtype: DType) -> Result<Self> {
        fn filled<T: Element>(n: usize, value: f64) -> Result<CpuStorage> {
            Ok(T::into_storage(fill(n, T::from_f64(value))?))
        }
        match dtype {
            // Integer fills keep every int64 exactly (a fill value past 2^53 is already
            // rounded; `scalar_storage` uploads those instead).
            DType::Int32 => Ok(CpuStorage::I32(fill(n, value as i32)?)),
            DType::Int64 => Ok(CpuStorage::I64(fill(n, value as i64)?)),
            DType::Float32 => filled::<f32>(n, value),
            DType::Float64 => filled::<f64>(n, value),
            DType::Bool => filled::<bool>(n, value),
            DType::Float16 => filled::<half::f16>(n, value),
            DType::BFloat16 => filled::<half::bf16>(n, value),
            DType::Int8 => filled::<i8>(n, value),
            DType::Int16 => filled::<i16>(n, value),
            DType::UInt8 => filled::<u8>(n, value),
            DType::UInt16 => filled::<u16>(n, value),
            DType::UInt32 => filled::<u32>(n, value),
            DType::UInt64 => filled::<u64>(n, value),
        }
    }

    fn from_host(data: HostData) -> Result<Self> {
        Ok(match data {
            HostData::F32(v) => CpuStorage::F32(v),
            HostData::F64(v) => CpuStorage::F64(v),
            HostData::I32(v) => CpuStorage::I32(v),
            HostData::I64(v) => CpuStorage::I64(v),
            HostData::Bool(v) => CpuStorage::Bool(v),
            HostData::F16(v) => CpuStorage::F16(v),
            HostData::BF16(v) => CpuStorage::BF16(v),
            HostData::I8(v) => CpuStorage::I8(v),
            HostData::I16(v) => CpuStorage::I16(v),
            HostData::U8(v) => CpuStorage::U8(v),
            HostData::U16(v) => CpuStorage::U16(v),
            HostData::U32(v) => CpuStorage::U32(v),
            HostData::U64(v) => CpuStorage::U64(v),
        })
    }

    fn to_host(&self) -> HostData {
        match self {
            CpuStorage::F32(v) => HostData::F32(v.clone()),
            CpuStorage::F64(v) => HostData::F64(v.clone()),
            CpuStorage::I32(v) => HostData::I32(v.clone()),
            CpuStorage::I64(v) => HostData::I64(v.clone()),
            CpuStorage::Bool(v) => HostData::Bool(v.clone()),
            CpuStorage::F16(v) => HostData::F16(v.clone()),
            CpuStorage::BF16(v) => HostData::BF16(v.clone()),
            CpuStorage::I8(v) => HostData::I8(v.clone()),
            CpuStorage::I16(v) => HostData::I16(v.clone()),
            CpuStorage::U8(v) => HostData::U8(v.clone()),
            CpuStorage::U16(v) => HostData::U16(v.clone()),
            CpuStorage::U32(v) => HostData::U32(v.clone()),
            CpuStorage::U64(v) => HostData::U64(v.clone()),
        }
    }

    fn scalar_at(&self, index: usize) -> Option<crate::vocab::Scalar> {
        use crate::vocab::HostElement;
        with_any!(self, v => v.get(index).map(|x| x.host_scalar()))
    }

    fn cast(&self, dtype: DType) -> Result<Self> {
        with_any!(self, v => cast_to(v, dtype))
    }

    fn unary(&self, op: UnaryOp) -> Result<Self> {
        with_int!(self, v => unary_num(v, op), other => match other {
            CpuStorage::F32(v) => unary_float(v, op),
            CpuStorage::F64(v) => unary_float(v, op),
            CpuStorage::F16(v) => via_f32(v, |w| w.unary(op)),
            CpuStorage::BF16(v) => via_f32(v, |w| w.unary(op)),
            CpuStorage::Bool(v) if op == UnaryOp::Not => Ok(CpuStorage::Bool(map1(v, |x| !x)?)),
            _ => Err(internal(&format!("{} reached the bool kernel", op.name()))),
        })
    }

    fn binary(
        &self,
        strides: &[usize],
        rhs: &Self,
        rhs_strides: &[usize],
        shape: &[usize],
        op: BinaryOp,
    ) -> Result<Self> {
        use CpuStorage::*;
        match (self, rhs) {
            (F32(a), F32(b)) => binary_num(a, strides, b, rhs_strides, shape, op),
            (F64(a), F64(b)) => binary_num(a, strides, b, rhs_strides, shape, op),
            (Bool(a), Bool(b)) => binary_bool(a, strides, b, rhs_strides, shape, op),
            (F16(a), F16(b)) => {
                let (a, b) = (cast_vec::<_, f32>(a)?, cast_vec::<_, f32>(b)?);
                narrow_f32::<half::f16>(a.binary(strides, &b, rhs_strides, shape, op)?)
            }
            (BF16(a), BF16(b)) => {
                let (a, b) = (cast_vec::<_, f32>(a)?, cast_vec::<_, f32>(b)?);
                narrow_f32::<half::bf16>(a.binary(strides, &b, rhs_strides, shape, op)?)
            }
            (I32(a), I32(b)) => binary_num(a, strides, b, rhs_strides, shape, op),
            (I64(a), I64(b)) => binary_num(a, strides, b, rhs_strides, shape, op),
            (I8(a), I8(b)) => binary_num(a, strides, b, rhs_strides, shape, op),
            (I16(a), I16(b)) => binary_num(a, strides, b, rhs_strides, shape, op),
            (U8(a), U8(b)) => binary_num(a, strides, b, rhs_strides, shape, op),
            (U16(a), U16(b)) => binary_num(a, strides, b, rhs_strides, shape, op),
            (U32(a), U32(b)) => binary_num(a, strides, b, rhs_strides, shape, op),
            (U64(a), U64(b)) => binary_num(a, strides, b, rhs_strides, shape, op),
            _ => Err(self.dtype_mismatch(rhs)),
        }
    }

    fn reduce(&self, op: ReduceOp, outer: usize, len: usize, inner: usize) -> Result<Self> {
        with_int!(self, v => reduce_num(v, op, outer, len, inner), other => match other {
            CpuStorage::F32(v) => reduce_num(v, op, outer, len, inner),
            CpuStorage::F64(v) => reduce_num(v, op, outer, len, inner),
            CpuStorage::F16(v) => via_f32(v, |w| w.reduce(op, outer, len, inner)),
            CpuStorage::BF16(v) => via_f32(v, |w| w.reduce(op, outer, len, inner)),
            _ => Err(internal("a bool reduction reached the backend")),
        })
    }

    fn matmul(&self, rhs: &Self, layout: &MatmulLayout) -> Result<Self> {
        use CpuStorage::*;
        match (self, rhs) {
            (F32(a), F32(b)) => Ok(F32(gemm::gemm_batched(a, b, layout)?)),
            (F64(a), F64(b)) => Ok(F64(gemm::gemm_batched(a, b, layout)?)),
            // float16 products accumulate in float32 and round once.
            (F16(a), F16(b)) => {
                let (a, b) = (cast_vec::<_, f32>(a)?, cast_vec::<_, f32>(b)?);
                narrow_f32::<half::f16>(a.matmul(&b, layout)?)
            }
            (BF16(a), BF16(b)) => {
                let (a, b) = (cast_vec::<_, f32>(a)?, cast_vec::<_, f32>(b)?);
                narrow_f32::<half::bf16>(a.matmul(&b, layout)?)
            }
            (I32(a), I32(b)) => matmul_int(a, b, layout),
            (I64(a), I64(b)) => matmul_int(a, b, layout),
            (I8(a), I8(b)) => matmul_int(a, b, layout),
            (I16(a), I16(b)) => matmul_int(a, b, layout),
            (U8(a), U8(b)) => matmul_int(a, b, layout),
            (U16(a), U16(b)) => matmul_int(a, b, layout),
            (U32(a), U32(b)) => matmul_int(a, b, layout),
            (U64(a), U64(b)) => matmul_int(a, b, layout),
            _ => Err(self.dtype_mismatch(rhs)),
        }
    }

    fn gather(&self, view: &StridedView) -> Result<Self> {
        with_any!(self, v => Ok(Element::into_storage(kernels::gather(
            v,
            view.offset,
            &view.shape,
            &view.strides
        )?)))
    }

    fn scatter(&mut self, view: &StridedView, src: &Self, src_strides: &[usize]) -> Result<()> {
        let (o, sh, st) = (view.offset, &view.shape, &view.strides);
        with_pair!((self, src), (d, s) => kernels::scatter(d, o, sh, st, s, src_strides),
            (dst, src) => return Err(dst.dtype_mismatch(src)));
        Ok(())
    }

    fn concat(parts: &[&Self], chunks: &[usize], outer: usize) -> Result<Self> {
        let Some(first) = parts.first() else {
            return Err(internal("concat of no parts"));
        };
        fn join<T: Element>(
            first: &[T],
            parts: &[&CpuStorage],
            chunks: &[usize],
            outer: usize,
        ) -> Result<CpuStorage> {
            let _ = first;
            Ok(T::into_storage(kernels::concat(
                &typed_parts(parts)?,
                chunks,
                outer,
            )?))
        }
        with_any!(*first, v => join(v, parts, chunks, outer))
    }

    fn fused(inputs: &[&Self], expr: &FusedExpr, len: usize) -> Result<Self> {
        let Some(first) = inputs.first() else {
            return Err(internal("fused expression with no inputs"));
        };
        Ok(match first.dtype() {
            DType::Float32 => CpuStorage::F32(fused::fused(&typed_parts(inputs)?, expr, len)?),
            DType::Float64 => CpuStorage::F64(fused::fused(&typed_parts(inputs)?, expr, len)?),
            other => return Err(internal(&format!("fused expression over {other}"))),
        })
    }
}

/// The element slices of storages the runtime guarantees are of one dtype.
fn typed_parts<'a, T: Element>(parts: &[&'a CpuStorage]) -> Result<Vec<&'a [T]>> {
    parts
        .iter()
        .map(|p| T::slice(p).ok_or_else(|| internal("the inputs of one op differ in dtype")))
        .collect()
}

impl CpuStorage {
    /// `act(self + b)` with `b` added to every row (`fused::bias_act_rows`); float dtypes of
    /// one kind only (None otherwise).
    pub fn bias_act_rows(&self, b: &CpuStorage, act: UnaryOp) -> Option<Result<CpuStorage>> {
        match (self, b) {
            (CpuStorage::F32(z), CpuStorage::F32(b)) => {
                Some(fused::bias_act_rows(z, b, act).map(CpuStorage::F32))
            }
            (CpuStorage::F64(z), CpuStorage::F64(b)) => {
                Some(fused::bias_act_rows(z, b, act).map(CpuStorage::F64))
            }
            _ => None,
        }
    }

    /// im2col over planes of `hw` (see `Patches`); float dtypes only (None otherwise).
    pub fn patches(&self, hw: [usize; 2], p: &Patches) -> Option<Result<CpuStorage>> {
        match self {
            CpuStorage::F32(v) => {
                Some(patches::patches(v, hw, p, p.fill as f32).map(CpuStorage::F32))
            }
            CpuStorage::F64(v) => Some(patches::patches(v, hw, p, p.fill).map(CpuStorage::F64)),
            _ => None,
        }
    }

    /// The adjoint of `patches`: sums windows back onto planes of `hw`; float dtypes only.
    pub fn patches_adjoint(&self, hw: [usize; 2], p: &Patches) -> Option<CpuStorage> {
        match self {
            CpuStorage::F32(v) => Some(CpuStorage::F32(patches::patches_adjoint(v, hw, p, 0.0))),
            CpuStorage::F64(v) => Some(CpuStorage::F64(patches::patches_adjoint(v, hw, p, 0.0))),
            _ => None,
        }
    }

    /// The batch-folded im2col of (N, C, h, w) `nchw` (see `patches::patches_cols`); float
    /// dtypes only.
    pub fn patches_cols(&self, nchw: [usize; 4], p: &Patches) -> Option<Result<CpuStorage>> {
        match self {
            CpuStorage::F32(v) => {
                Some(patches::patches_cols(v, nchw, p, p.fill as f32).map(CpuStorage::F32))
            }
            CpuStorage::F64(v) => {
                Some(patches::patches_cols(v, nchw, p, p.fill).map(CpuStorage::F64))
            }
            _ => None,
        }
    }

    /// (O, N*L) as (N, O, L) plus an optional per-channel `bias` of the same dtype, then ReLU
    /// when `relu` (see `patches::cols_to_batch`); float dtypes only.
    pub fn cols_to_batch(
        &self,
        onl: [usize; 3],
        bias: Option<&CpuStorage>,
        relu: bool,
    ) -> Option<Result<CpuStorage>> {
        match (self, bias) {
            (CpuStorage::F32(v), None) => {
                Some(patches::cols_to_batch(v, onl, None, relu).map(CpuStorage::F32))
            }
            (CpuStorage::F32(v), Some(CpuStorage::F32(b))) => {
                Some(patches::cols_to_batch(v, onl, Some(b), relu).map(CpuStorage::F32))
            }
            (CpuStorage::F64(v), None) => {
                Some(patches::cols_to_batch(v, onl, None, relu).map(CpuStorage::F64))
            }
            (CpuStorage::F64(v), Some(CpuStorage::F64(b))) => {
                Some(patches::cols_to_batch(v, onl, Some(b), relu).map(CpuStorage::F64))
            }
            _ => None,
        }
    }

    /// (N, O, L) as (O, N*L), masked by a ReLU output of the same dtype when given (see
    /// `patches::batch_to_cols`); float dtypes only.
    pub fn batch_to_cols(
        &self,
        onl: [usize; 3],
        mask: Option<&CpuStorage>,
    ) -> Option<Result<CpuStorage>> {
        match (self, mask) {
            (CpuStorage::F32(v), None) => {
                Some(patches::batch_to_cols(v, onl, None).map(CpuStorage::F32))
            }
            (CpuStorage::F32(v), Some(CpuStorage::F32(m))) => {
                Some(patches::batch_to_cols(v, onl, Some(m)).map(CpuStorage::F32))
            }
            (CpuStorage::F64(v), None) => {
                Some(patches::batch_to_cols(v, onl, None).map(CpuStorage::F64))
            }
            (CpuStorage::F64(v), Some(CpuStorage::F64(m))) => {
                Some(patches::batch_to_cols(v, onl, Some(m)).map(CpuStorage::F64))
            }
            _ => None,
        }
    }

    /// The adjoint of `patches_cols`, back onto (N, C, h, w) `nchw`; float dtypes only.
    pub fn patches_cols_adjoint(&self, nchw: [usize; 4], p: &Patches) -> Option<CpuStorage> {
        match self {
            CpuStorage::F32(v) => Some(CpuStorage::F32(patches::patches_cols_adjoint(
                v, nchw, p, 0.0,
            ))),
            CpuStorage::F64(v) => Some(CpuStorage::F64(patches::patches_cols_adjoint(
                v, nchw, p, 0.0,
            ))),
            _ => None,
        }
    }

    /// A batch-folded convolution's input gradient for this weight (O, C*kh*kw) and the
    /// gradient `g` (O, N*L) of the same float dtype, `per` samples at a time
    /// (`conv_grad.rs`); None for other dtypes.
    pub fn conv_input_grad(
        &self,
        g: &CpuStorage,
        nchw: [usize; 4],
        o: usize,
        p: &Patches,
        per: usize,
    ) -> Option<Result<CpuStorage>> {
        match (self, g) {
            (CpuStorage::F32(w), CpuStorage::F32(g)) => {
                Some(conv_grad::conv_input_grad(w, g, nchw, o, p, per).map(CpuStorage::F32))
            }
            (CpuStorage::F64(w), CpuStorage::F64(g)) => {
                Some(conv_grad::conv_input_grad(w, g, nchw, o, p, per).map(CpuStorage::F64))
            }
            _ => None,
        }
    }

    /// Max or average pooling of planes of `hw` read in place (`Array::pool`); float dtypes
    /// only (None otherwise).
    pub fn pool(&self, hw: [usize; 2], p: &Patches, kind: PoolKind) -> Option<Result<CpuStorage>> {
        match self {
            CpuStorage::F32(v) => Some(pooling::pool(v, hw, p, kind).map(CpuStorage::F32)),
            CpuStorage::F64(v) => Some(pooling::pool(v, hw, p, kind).map(CpuStorage::F64)),
            _ => None,
        }
    }

    /// The gradient of `pool` for this input and the output gradient `g` (same float dtype).
    pub fn pool_grad(
        &self,
        g: &CpuStorage,
        hw: [usize; 2],
        p: &Patches,
        kind: PoolKind,
    ) -> Option<Result<CpuStorage>> {
        match (self, g) {
            (CpuStorage::F32(x), CpuStorage::F32(g)) => {
                Some(pooling::pool_grad(x, g, hw, p, kind).map(CpuStorage::F32))
            }
            (CpuStorage::F64(x), CpuStorage::F64(g)) => {
                Some(pooling::pool_grad(x, g, hw, p, kind).map(CpuStorage::F64))
            }
            _ => None,
        }
    }

    /// Batch norm's forward over (n, c, inner) (`norm::Dims`): the output and the per-channel
    /// mean, biased variance and 1/sqrt(var + eps) it used, from the batch or, given, from
    /// `running` (mean, var). Every storage is of this one float dtype (None otherwise).
    pub fn batch_norm(
        &self,
        d: norm::Dims,
        running: Option<(&CpuStorage, &CpuStorage)>,
        gamma: &CpuStorage,
        beta: &CpuStorage,
        eps: f64,
    ) -> Option<Result<[CpuStorage; 4]>> {
        fn run<T: Float>(
            x: &[T],
            d: norm::Dims,
            running: Option<(&[T], &[T])>,
            gamma: &[T],
            beta: &[T],
            eps: f64,
        ) -> Result<[CpuStorage; 4]> {
            let stats: Vec<(f64, f64)> = match running {
                Some((m, v)) => m
                    .iter()
                    .zip(v)
                    .map(|(a, b)| (a.to_f64(), b.to_f64()))
                    .collect(),
                None => norm::stats(x, d),
            };
            let mean: Vec<T> = stats.iter().map(|s| T::from_f64(s.0)).collect();
            let var: Vec<T> = stats.iter().map(|s| T::from_f64(s.1)).collect();
            let invstd: Vec<T> = stats
                .iter()
                .map(|s| T::from_f64(1.0 / (s.1 + eps).sqrt()))
                .collect();
            let y = norm::normalize(x, d, &mean, &invstd, gamma, beta)?;
            Ok([y, mean, var, invstd].map(T::into_storage))
        }
        fn typed<T: Float>(
            x: &[T],
            d: norm::Dims,
            running: Option<(&CpuStorage, &CpuStorage)>,
            gamma: &CpuStorage,
            beta: &CpuStorage,
            eps: f64,
        ) -> Option<Result<[CpuStorage; 4]>> {
            let running = match running {
                Some((m, v)) => Some((T::slice(m)?, T::slice(v)?)),
                None => None,
            };
            Some(run(x, d, running, T::slice(gamma)?, T::slice(beta)?, eps))
        }
        match self {
            CpuStorage::F32(x) => typed(x, d, running, gamma, beta, eps),
            CpuStorage::F64(x) => typed(x, d, running, gamma, beta, eps),
            _ => None,
        }
    }

    /// Batch norm's backward (see `norm::backward`): (dx, dgamma, dbeta) from this input, the
    /// output gradient `g` and the saved mean and 1/sqrt(var + eps); one float dtype throughout.
    #[allow(clippy::too_many_arguments)]
    pub fn batch_norm_backward(
        &self,
        g: &CpuStorage,
        d: norm::Dims,
        mean: &CpuStorage,
        invstd: &CpuStorage,
        gamma: &CpuStorage,
        batch_stats: bool,
    ) -> Option<Result<[CpuStorage; 3]>> {
        fn typed<T: Float>(
            x: &[T],
            g: &CpuStorage,
            d: norm::Dims,
            [mean, invstd, gamma]: [&CpuStorage; 3],
            batch_stats: bool,
        ) -> Option<Result<[CpuStorage; 3]>> {
            let r = norm::backward(
                x,
                T::slice(g)?,
                d,
                T::slice(mean)?,
                T::slice(invstd)?,
                T::slice(gamma)?,
                batch_stats,
            );
            Some(r.map(|r| [r.dx, r.dgamma, r.dbeta].map(T::into_storage)))
        }
        let saved = [mean, invstd, gamma];
        match self {
            CpuStorage::F32(x) => typed(x, g, d, saved, batch_stats),
            CpuStorage::F64(x) => typed(x, g, d, saved, batch_stats),
            _ => None,
        }
    }
}
