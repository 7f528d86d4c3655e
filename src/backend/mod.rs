//! Backends: where array bytes live and where kernels run.
//!
//! The seam, candle-style: [`Storage`] has one variant per backend and [`BackendStorage`] is the
//! small set of primitive ops (tinygrad-style) each backend implements: fill, cast, unary, binary
//! with broadcast strides, single-axis reduce, batched matmul, strided gather/scatter, concat.
//! Everything else (mean, norm, clip, stack, transpose, indexing, dot) is composed from these in
//! `runtime`, which also checks devices, shapes and dtypes before a backend sees any work, so a
//! backend may assume its inputs are valid and of one dtype.
//!
//! - `cpu`: the kernels, run on the calling thread.
//! - `sim`: simulated GPUs. Each has a worker thread with an ordered queue (a stream); its
//!   storage is `CpuStorage` charged to the GPU's own ledger, and the CPU kernels run on the
//!   worker instead of the caller.
//! - (later) `cuda`: a `Storage::Cuda` variant holding device buffers, with NVRTC kernels and cuBLAS for
//!   the same primitive list.
//!
//! A new backend adds a `Storage` variant, implements `BackendStorage`, and extends the `match`es
//! below; runtime code does not change.
pub mod cpu;
pub mod cuda;
pub mod sim;

use crate::runtime::error::Result;
use crate::runtime::{BinaryOp, DType, HostData, ReduceOp, Scalar, UnaryOp};
pub use cpu::CpuStorage;

/// A strided window into a row-major buffer: element `idx` is at `offset + sum(idx[d] * strides[d])`.
/// Strides may be negative (slices with a negative step).
#[derive(Clone, Debug, PartialEq)]
pub struct StridedView {
    pub offset: usize,
    pub shape: Vec<usize>,
    pub strides: Vec<isize>,
}

/// A batch of row-major (m, k) x (k, n) products; batch `i` reads its left matrix at
/// `lhs_offsets[i]` and its right one at `rhs_offsets[i]` (offsets repeat for broadcast batches).
#[derive(Clone, Debug, PartialEq)]
pub struct MatmulLayout {
    pub batch: usize,
    pub m: usize,
    pub k: usize,
    pub n: usize,
    pub lhs_offsets: Vec<usize>,
    pub rhs_offsets: Vec<usize>,
}

/// The primitive ops every backend implements. Inputs are row-major and already validated.
pub trait BackendStorage: Sized + Send + Sync {
    fn dtype(&self) -> DType;
    fn len(&self) -> usize;
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    fn full(n: usize, value: f64, dtype: DType) -> Result<Self>;
    fn from_host(data: HostData) -> Result<Self>;
    fn to_host(&self) -> HostData;
    fn scalar_at(&self, index: usize) -> Option<Scalar>;
    fn cast(&self, dtype: DType) -> Result<Self>;
    /// Same dtype out, except `Not` (bool). Float-only ops only ever see float inputs.
    fn unary(&self, op: UnaryOp) -> Result<Self>;
    /// Both operands have one dtype and are broadcast to `shape` by their strides (0 = repeat).
    fn binary(
        &self,
        strides: &[usize],
        rhs: &Self,
        rhs_strides: &[usize],
        shape: &[usize],
        op: BinaryOp,
    ) -> Result<Self>;
    /// Reduces the middle axis of a row-major (outer, len, inner) block. Never `Mean`.
    fn reduce(&self, op: ReduceOp, outer: usize, len: usize, inner: usize) -> Result<Self>;
    fn matmul(&self, rhs: &Self, layout: &MatmulLayout) -> Result<Self>;
    fn gather(&self, view: &StridedView) -> Result<Self>;
    /// Writes `src`, broadcast to `view.shape` by `src_strides`, into the view.
    fn scatter(&mut self, view: &StridedView, src: &Self, src_strides: &[usize]) -> Result<()>;
    /// Joins parts that each contribute `chunks[i]` contiguous elements per outer step.
    fn concat(parts: &[&Self], chunks: &[usize], outer: usize) -> Result<Self>;
}

/// Sums same-shape arrays held on several devices; afterwards every part holds the sum (the
/// gradient all-reduce of data-parallel training). CUDA implements it with NCCL
/// (`cuda::CudaAllReduce`); any backend can use [`HostAllReduce`].
pub trait AllReduce<S> {
    fn all_reduce_sum(&self, parts: &mut [S]) -> Result<()>;
}

/// The fallback: copy every part to the host, sum there, write the sum back.
#[derive(Clone, Copy, Debug, Default)]
pub struct HostAllReduce;

impl<S: BackendStorage> AllReduce<S> for HostAllReduce {
    fn all_reduce_sum(&self, parts: &mut [S]) -> Result<()> {
        let hosts: Vec<HostData> = parts.iter().map(|p| p.to_host()).collect();
        let sum = host_sum(&hosts)?;
        for part in parts.iter_mut() {
            *part = S::from_host(sum.clone())?;
        }
        Ok(())
    }
}

/// Elementwise sum of same-length, same-dtype host arrays (bool sums saturate to true).
pub fn host_sum(parts: &[HostData]) -> Result<HostData> {
    use crate::runtime::RuntimeError;
    let Some(first) = parts.first() else {
        return Err(RuntimeError::Value("all_reduce: no arrays to sum".into()));
    };
    let mismatch = || {
        RuntimeError::Shape("all_reduce: every array must have the same size and dtype".to_string())
    };
    fn add<T: Copy>(acc: &mut [T], more: &[T], f: impl Fn(T, T) -> T) {
        for (a, &b) in acc.iter_mut().zip(more) {
            *a = f(*a, b);
        }
    }
    let mut acc = first.clone();
    for part in &parts[1..] {
        if part.len() != acc.len() {
            return Err(mismatch());
        }
        match (&mut acc, part) {
            (HostData::F32(a), HostData::F32(b)) => add(a, b, |x, y| x + y),
            (HostData::F64(a), HostData::F64(b)) => add(a, b, |x, y| x + y),
            (HostData::I32(a), HostData::I32(b)) => add(a, b, i32::wrapping_add),
            (HostData::I64(a), HostData::I64(b)) => add(a, b, i64::wrapping_add),
            (HostData::Bool(a), HostData::Bool(b)) => add(a, b, |x, y| x | y),
            _ => return Err(mismatch()),
        }
    }
    Ok(acc)
}

/// An array's bytes on whichever backend holds them.
#[derive(Debug)]
pub enum Storage {
    Cpu(CpuStorage),
}

impl Storage {
    pub fn dtype(&self) -> DType {
        match self {
            Storage::Cpu(s) => s.dtype(),
        }
    }

    pub fn len(&self) -> usize {
        match self {
            Storage::Cpu(s) => s.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn to_host(&self) -> HostData {
        match self {
            Storage::Cpu(s) => s.to_host(),
        }
    }

    pub fn scalar_at(&self, index: usize) -> Option<Scalar> {
        match self {
            Storage::Cpu(s) => s.scalar_at(index),
        }
    }

    pub fn cast(&self, dtype: DType) -> Result<Storage> {
        match self {
            Storage::Cpu(s) => Ok(Storage::Cpu(s.cast(dtype)?)),
        }
    }

    pub fn unary(&self, op: UnaryOp) -> Result<Storage> {
        match self {
            Storage::Cpu(s) => Ok(Storage::Cpu(s.unary(op)?)),
        }
    }

    pub fn binary(
        &self,
        strides: &[usize],
        rhs: &Storage,
        rhs_strides: &[usize],
        shape: &[usize],
        op: BinaryOp,
    ) -> Result<Storage> {
        match (self, rhs) {
            (Storage::Cpu(a), Storage::Cpu(b)) => Ok(Storage::Cpu(a.binary(
                strides,
                b,
                rhs_strides,
                shape,
                op,
            )?)),
        }
    }

    pub fn reduce(&self, op: ReduceOp, outer: usize, len: usize, inner: usize) -> Result<Storage> {
        match self {
            Storage::Cpu(s) => Ok(Storage::Cpu(s.reduce(op, outer, len, inner)?)),
        }
    }

    pub fn matmul(&self, rhs: &Storage, layout: &MatmulLayout) -> Result<Storage> {
        match (self, rhs) {
            (Storage::Cpu(a), Storage::Cpu(b)) => Ok(Storage::Cpu(a.matmul(b, layout)?)),
        }
    }

    pub fn gather(&self, view: &StridedView) -> Result<Storage> {
        match self {
            Storage::Cpu(s) => Ok(Storage::Cpu(s.gather(view)?)),
        }
    }

    pub fn scatter(
        &mut self,
        view: &StridedView,
        src: &Storage,
        src_strides: &[usize],
    ) -> Result<()> {
        match (self, src) {
            (Storage::Cpu(d), Storage::Cpu(s)) => d.scatter(view, s, src_strides),
        }
    }

    pub fn concat(parts: &[&Storage], chunks: &[usize], outer: usize) -> Result<Storage> {
        let cpu: Vec<&CpuStorage> = parts
            .iter()
            .map(|p| match p {
                Storage::Cpu(s) => s,
            })
            .collect();
        Ok(Storage::Cpu(CpuStorage::concat(&cpu, chunks, outer)?))
    }
}
