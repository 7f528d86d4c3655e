//! Backends: where array bytes live and where kernels run.
//!
//! The seam, candle-style: [`Storage`] has one variant per backend and [`BackendStorage`] is the
//! small set of primitive ops (tinygrad-style) each backend implements: fill, cast, unary, binary
//! with broadcast strides, single-axis reduce, batched matmul, strided gather/scatter, concat, and
//! a fused elementwise expression (`FusedExpr`). Everything else (mean, norm, clip, stack, transpose, indexing, dot) is composed from these in
//! `runtime`, which also checks devices, shapes and dtypes before a backend sees any work, so a
//! backend may assume its inputs are valid and of one dtype.
//!
//! - `cpu`: the kernels, run on the calling thread.
//! - `sim`: simulated GPUs. Each has a worker thread with an ordered queue (a stream); its
//!   storage is `CpuStorage` charged to the GPU's own ledger, and the CPU kernels run on the
//!   worker instead of the caller.
//! - `cuda`: real NVIDIA GPUs. `Storage::Cuda` holds a device buffer; its ops queue NVRTC kernels
//!   and cuBLAS calls on the device's CUDA stream and return at once.
//!
//! A device says where its storage is made through a [`Placement`]: host memory (cpu(0) and the
//! simulated GPUs) or one CUDA GPU. The runtime creates every storage through its device's
//! placement, so two operands of one op are always of one backend.
//!
//! A new backend adds a `Storage` variant, implements `BackendStorage`, and extends the `match`es
//! below; runtime code does not change.
pub mod cpu;
pub mod cuda;
pub mod select;
pub mod sim;

use crate::vocab::error::{Result, RuntimeError};
use crate::vocab::{BinaryOp, DType, FusedExpr, HostData, ReduceOp, Scalar, UnaryOp};
pub use cpu::CpuStorage;
use cuda::CudaDevice;
pub use cuda::CudaStorage;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

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
/// `trans[0]` says the left matrices are stored as (k, m), `trans[1]` the right ones as (n, k):
/// a gradient's transposed operand is read in place instead of copied (float CPU only; other
/// backends are never handed a transposed layout).
#[derive(Clone, Debug, PartialEq)]
pub struct MatmulLayout {
    pub batch: usize,
    pub m: usize,
    pub k: usize,
    pub n: usize,
    pub lhs_offsets: Vec<usize>,
    pub rhs_offsets: Vec<usize>,
    pub trans: [bool; 2],
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
    /// A whole elementwise expression in one pass: `inputs` are float, of one dtype and `len`
    /// elements each; every op of `expr` fuses (`FusedExpr::fuses_*`). The result must equal
    /// the same ops run one at a time, bit for bit.
    fn fused(inputs: &[&Self], expr: &FusedExpr, len: usize) -> Result<Self>;
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
            (HostData::F16(a), HostData::F16(b)) => add(a, b, |x, y| x + y),
            (HostData::I8(a), HostData::I8(b)) => add(a, b, i8::wrapping_add),
            (HostData::I16(a), HostData::I16(b)) => add(a, b, i16::wrapping_add),
            (HostData::U8(a), HostData::U8(b)) => add(a, b, u8::wrapping_add),
            (HostData::U16(a), HostData::U16(b)) => add(a, b, u16::wrapping_add),
            (HostData::U32(a), HostData::U32(b)) => add(a, b, u32::wrapping_add),
            (HostData::U64(a), HostData::U64(b)) => add(a, b, u64::wrapping_add),
            _ => return Err(mismatch()),
        }
    }
    Ok(acc)
}

/// An array's bytes on whichever backend holds them.
#[derive(Debug)]
pub enum Storage {
    Cpu(CpuStorage),
    Cuda(CudaStorage),
}

/// The runtime never pairs storages of two backends (it refuses inputs on different devices
/// before any work), so meeting such a pair is a bug, reported rather than panicked on.
fn mixed_backends(op: &str) -> RuntimeError {
    RuntimeError::Value(format!(
        "internal error: {op} got operands from two different backends (host and CUDA); \
         please report this as a devarray bug"
    ))
}

/// The whole of a flat buffer of `len` elements.
fn flat_view(len: usize) -> StridedView {
    StridedView {
        offset: 0,
        shape: vec![len],
        strides: vec![1],
    }
}

impl Storage {
    pub fn dtype(&self) -> DType {
        match self {
            Storage::Cpu(s) => s.dtype(),
            Storage::Cuda(s) => s.dtype(),
        }
    }

    pub fn len(&self) -> usize {
        match self {
            Storage::Cpu(s) => s.len(),
            Storage::Cuda(s) => s.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// A host copy. On a CUDA GPU this waits for the queued work that writes the values, and
    /// can fail (a driver error, or no pinned memory for the staging buffer).
    pub fn to_host(&self) -> Result<HostData> {
        match self {
            Storage::Cpu(s) => Ok(s.to_host()),
            Storage::Cuda(s) => s.to_host(),
        }
    }

    pub fn scalar_at(&self, index: usize) -> Result<Option<Scalar>> {
        match self {
            Storage::Cpu(s) => Ok(s.scalar_at(index)),
            Storage::Cuda(s) => s.scalar_at(index),
        }
    }

    pub fn cast(&self, dtype: DType) -> Result<Storage> {
        match self {
            Storage::Cpu(s) => Ok(Storage::Cpu(s.cast(dtype)?)),
            Storage::Cuda(s) => Ok(Storage::Cuda(s.cast(dtype)?)),
        }
    }

    /// The Frobenius norm of all elements (float only), one element. The host computes it in
    /// one pass; CUDA composes it from its square, sum and square-root kernels.
    pub fn norm2(&self) -> Result<Storage> {
        match self {
            Storage::Cpu(s) => Ok(Storage::Cpu(s.norm2()?)),
            Storage::Cuda(s) => {
                let squares = s.unary(UnaryOp::Square)?;
                let sum = squares.reduce(ReduceOp::Sum, 1, s.len(), 1)?;
                Ok(Storage::Cuda(sum.unary(UnaryOp::Sqrt)?))
            }
        }
    }

    pub fn unary(&self, op: UnaryOp) -> Result<Storage> {
        match self {
            Storage::Cpu(s) => Ok(Storage::Cpu(s.unary(op)?)),
            Storage::Cuda(s) => Ok(Storage::Cuda(s.unary(op)?)),
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
            (Storage::Cuda(a), Storage::Cuda(b)) => Ok(Storage::Cuda(a.binary(
                strides,
                b,
                rhs_strides,
                shape,
                op,
            )?)),
            _ => Err(mixed_backends(op.name())),
        }
    }

    pub fn reduce(&self, op: ReduceOp, outer: usize, len: usize, inner: usize) -> Result<Storage> {
        match self {
            Storage::Cpu(s) => Ok(Storage::Cpu(s.reduce(op, outer, len, inner)?)),
            Storage::Cuda(s) => Ok(Storage::Cuda(s.reduce(op, outer, len, inner)?)),
        }
    }

    pub fn matmul(&self, rhs: &Storage, layout: &MatmulLayout) -> Result<Storage> {
        match (self, rhs) {
            (Storage::Cpu(a), Storage::Cpu(b)) => Ok(Storage::Cpu(a.matmul(b, layout)?)),
            (Storage::Cuda(a), Storage::Cuda(b)) => Ok(Storage::Cuda(a.matmul(b, layout)?)),
            _ => Err(mixed_backends("matmul")),
        }
    }

    pub fn gather(&self, view: &StridedView) -> Result<Storage> {
        match self {
            Storage::Cpu(s) => Ok(Storage::Cpu(s.gather(view)?)),
            Storage::Cuda(s) => Ok(Storage::Cuda(s.gather(view)?)),
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
            (Storage::Cuda(d), Storage::Cuda(s)) => d.scatter(view, s, src_strides),
            _ => Err(mixed_backends("assignment")),
        }
    }

    pub fn concat(parts: &[&Storage], chunks: &[usize], outer: usize) -> Result<Storage> {
        match one_backend(parts, "concat")? {
            Parts::Cpu(cpu) => Ok(Storage::Cpu(CpuStorage::concat(&cpu, chunks, outer)?)),
            Parts::Cuda(cuda) => Ok(Storage::Cuda(CudaStorage::concat(&cuda, chunks, outer)?)),
        }
    }

    pub fn fused(inputs: &[&Storage], expr: &FusedExpr, len: usize) -> Result<Storage> {
        match one_backend(inputs, "fused expression")? {
            Parts::Cpu(cpu) => Ok(Storage::Cpu(CpuStorage::fused(&cpu, expr, len)?)),
            Parts::Cuda(cuda) => Ok(Storage::Cuda(CudaStorage::fused(&cuda, expr, len)?)),
        }
    }
}

/// The inputs of a many-input op, all of one backend.
enum Parts<'a> {
    Cpu(Vec<&'a CpuStorage>),
    Cuda(Vec<&'a CudaStorage>),
}

fn one_backend<'a>(parts: &[&'a Storage], op: &str) -> Result<Parts<'a>> {
    if let Some(Storage::Cuda(_)) = parts.first() {
        let cuda = parts
            .iter()
            .map(|p| match p {
                Storage::Cuda(s) => Ok(s),
                Storage::Cpu(_) => Err(mixed_backends(op)),
            })
            .collect::<Result<_>>()?;
        return Ok(Parts::Cuda(cuda));
    }
    let cpu = parts
        .iter()
        .map(|p| match p {
            Storage::Cpu(s) => Ok(s),
            Storage::Cuda(_) => Err(mixed_backends(op)),
        })
        .collect::<Result<_>>()?;
    Ok(Parts::Cpu(cpu))
}

/// Whether `recycle` would keep this storage's buffer (a cheap check for the common small one).
#[inline]
pub fn worth_recycling(storage: &Storage) -> bool {
    match storage {
        Storage::Cpu(s) => cpu::pool::worth_keeping(s),
        Storage::Cuda(_) => false,
    }
}

/// Called when an array's storage is dropped: large host buffers are kept for reuse
/// (`cpu::pool`); CUDA buffers go back to the device's own pool as they drop.
pub fn recycle(storage: Storage) {
    if let Storage::Cpu(s) = storage {
        cpu::pool::recycle(s);
    }
}

/// Gives every buffer kept for reuse back to the operating system.
pub fn release_spare_buffers() {
    cpu::pool::release();
}

/// Has the host allocator keep freed memory for reuse until `release_spare_buffers`.
pub fn hold_freed_memory() {
    cpu::pool::hold_freed_memory();
}

/// Where a device makes its storage: host memory (cpu(0) and simulated GPUs) or one CUDA GPU.
/// Every storage the runtime creates for a device comes from its placement, which is what keeps
/// the backends of one op's operands equal.
#[derive(Clone, Debug)]
pub enum Placement {
    Host,
    Cuda(Arc<CudaDevice>),
}

impl Placement {
    /// Whether `expr` over `dtype` inputs runs as one kernel here (the runtime otherwise runs
    /// its ops one by one). The host fuses every tree of fusable ops; CUDA generates C source,
    /// which has no literal for an infinite or NaN scalar.
    pub fn can_fuse(&self, expr: &FusedExpr, dtype: DType) -> bool {
        match self {
            Placement::Host => matches!(dtype, DType::Float32 | DType::Float64),
            Placement::Cuda(_) => cuda::fused::fusable_inputs(expr, dtype).is_some(),
        }
    }

    /// `n` elements of `dtype`, all `value` (converted as a cast would).
    pub fn full(&self, n: usize, value: f64, dtype: DType) -> Result<Storage> {
        match self {
            Placement::Host => Ok(Storage::Cpu(CpuStorage::full(n, value, dtype)?)),
            Placement::Cuda(device) => {
                Ok(Storage::Cuda(CudaStorage::full(device, n, value, dtype)?))
            }
        }
    }

    /// Host values placed here (an upload for a GPU; no copy for the host).
    pub fn from_host(&self, data: HostData) -> Result<Storage> {
        match self {
            Placement::Host => Ok(Storage::Cpu(CpuStorage::from_host(data)?)),
            Placement::Cuda(device) => Ok(Storage::Cuda(CudaStorage::from_host(device, &data)?)),
        }
    }

    /// `storage` moved here: itself when it already lives here, else a copy.
    pub fn adopt(&self, storage: Storage) -> Result<Storage> {
        match (self, storage) {
            (Placement::Host, Storage::Cpu(s)) => Ok(Storage::Cpu(s)),
            (Placement::Cuda(device), Storage::Cuda(s)) if Arc::ptr_eq(device, s.device()) => {
                Ok(Storage::Cuda(s))
            }
            (_, other) => self.copy_from(&other),
        }
    }

    /// A copy of `src` (a whole row-major buffer) in new memory here: host to host, upload,
    /// download, or GPU to GPU (peer to peer where the cards allow it).
    pub fn copy_from(&self, src: &Storage) -> Result<Storage> {
        match (self, src) {
            (Placement::Host, Storage::Cpu(s)) => Ok(Storage::Cpu(s.gather(&flat_view(s.len()))?)),
            (Placement::Host, Storage::Cuda(s)) => {
                Ok(Storage::Cpu(CpuStorage::from_host(s.to_host()?)?))
            }
            (Placement::Cuda(device), Storage::Cpu(s)) => {
                Ok(Storage::Cuda(CudaStorage::from_host(device, &s.to_host())?))
            }
            (Placement::Cuda(device), Storage::Cuda(s)) => {
                Ok(Storage::Cuda(s.copy_to_device(device)?))
            }
        }
    }

    /// Waits for the work queued on this placement's own queue (a CUDA stream); the host and the
    /// simulated GPUs have none here (a simulated GPU's queue is the runtime's `Stream`). A set
    /// `interrupt` flag ends the wait early with `Interrupted`; the queued work carries on.
    pub fn synchronize(&self, interrupt: &AtomicBool) -> Result<()> {
        match self {
            Placement::Host => Ok(()),
            Placement::Cuda(device) => device.synchronize_interruptible(interrupt),
        }
    }

    pub fn is_cuda(&self) -> bool {
        matches!(self, Placement::Cuda(_))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_placement_makes_cpu_storage() {
        let host = Placement::Host;
        assert!(!host.is_cuda());
        let full = host.full(3, 2.5, DType::Float32).unwrap();
        assert_eq!(full.to_host().unwrap(), HostData::F32(vec![2.5; 3]));
        let data = host.from_host(HostData::I64(vec![1, -2])).unwrap();
        assert_eq!(data.to_host().unwrap(), HostData::I64(vec![1, -2]));
        assert_eq!(data.scalar_at(1).unwrap(), Some(Scalar::Int(-2)));
        assert_eq!(data.scalar_at(2).unwrap(), None);
        assert!(host.synchronize(&AtomicBool::new(true)).is_ok());
    }

    #[test]
    fn adopt_keeps_host_storage_and_copy_from_makes_new_memory() {
        let host = Placement::Host;
        let source = Storage::Cpu(CpuStorage::F32(vec![1.0, 2.0, 3.0]));
        let copy = host.copy_from(&source).unwrap();
        assert_eq!(copy.to_host().unwrap(), source.to_host().unwrap());
        let adopted = host.adopt(source).unwrap();
        assert!(matches!(adopted, Storage::Cpu(CpuStorage::F32(ref v)) if v == &[1.0, 2.0, 3.0]));
    }

    #[test]
    fn concat_of_host_parts_and_of_nothing() {
        let a = Storage::Cpu(CpuStorage::I32(vec![1, 2]));
        let b = Storage::Cpu(CpuStorage::I32(vec![3]));
        let joined = Storage::concat(&[&a, &b], &[2, 1], 1).unwrap();
        assert_eq!(joined.to_host().unwrap(), HostData::I32(vec![1, 2, 3]));
        assert!(Storage::concat(&[], &[], 1).is_err());
    }

    #[test]
    fn mixed_backend_message_names_the_op() {
        assert_eq!(
            mixed_backends("add").to_string(),
            "internal error: add got operands from two different backends (host and CUDA); \
             please report this as a devarray bug"
        );
    }
}
