//! `Array`: a shape, a dtype and a device over a shared, lockable buffer.
//!
//! Every op here validates devices, shapes and dtypes first, charges the output's bytes to the
//! device ledger, and only then runs backend primitives. Buffers are always row-major; reshape
//! shares the buffer (like a numpy view), everything else writes a new one.
use super::device::Device;
use super::dtype::DType;
use super::engine::{DeviceCtx, TransferKind};
use super::error::{Result, RuntimeError};
use super::host::{HostData, Scalar};
use super::index::basic_view;
use super::memory::Charge;
use super::operand::{IndexItem, Operand};
use super::ops::{BinaryOp, FusedExpr, Patches, PoolKind, ReduceOp, UnaryOp};
use super::shape::{
    broadcast_shapes, broadcast_strides, checked_bytes, contiguous_strides, normalize_axes,
    normalize_axis, shape_compact, shape_tuple,
};
use super::timeline::{current_op, op_scope, Lane};
use super::Runtime;
use crate::backend::{BackendStorage, CpuStorage, MatmulLayout, Placement, Storage, StridedView};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock, RwLock, RwLockReadGuard, RwLockWriteGuard};
use std::time::Instant;

/// The bytes of one or more arrays (reshape shares them) and their claim on device memory.
#[derive(Debug)]
pub(crate) struct Buffer {
    storage: RwLock<Storage>,
    /// Held only for its drop, which returns the bytes to the device.
    _charge: Charge,
    ctx: Arc<DeviceCtx>,
    /// Stream position of the last queued write to this buffer (0 when none was queued). On a
    /// stream device the storage is only meaningful on the host once that position is done.
    write_seq: AtomicU64,
    /// Set when the queued job that computes or writes this buffer failed (a host allocation
    /// behind a simulated GPU): every later use raises this error instead of reading values.
    failed: OnceLock<RuntimeError>,
}

thread_local! {
    /// The error of the first failed buffer a job read (see `run_job`): work computed from a
    /// failed array fails with that array's error.
    static FAILED_READ: std::cell::RefCell<Option<RuntimeError>> = const { std::cell::RefCell::new(None) };
}

impl Drop for Buffer {
    fn drop(&mut self) {
        let storage = self.storage.get_mut().unwrap_or_else(|e| e.into_inner());
        // Most buffers are too small to keep: those are freed by the field's own drop, without
        // moving the storage out first (this runs once per temporary array).
        if !crate::backend::worth_recycling(storage) {
            return;
        }
        let storage = std::mem::replace(storage, Storage::Cpu(CpuStorage::F32(Vec::new())));
        crate::backend::recycle(storage);
    }
}

impl Buffer {
    /// The storage as it is now. Only for code that runs in stream order (inside a job, or on
    /// a synchronous device); host code uses `read_synced`.
    fn read(&self) -> RwLockReadGuard<'_, Storage> {
        if let Some(e) = self.failed.get() {
            FAILED_READ.with(|f| {
                f.borrow_mut().get_or_insert_with(|| e.clone());
            });
        }
        // A panic while writing cannot leave a half-typed buffer (writes are per element), so a
        // poisoned lock is still safe to use.
        self.storage.read().unwrap_or_else(|e| e.into_inner())
    }

    fn write(&self) -> RwLockWriteGuard<'_, Storage> {
        self.storage.write().unwrap_or_else(|e| e.into_inner())
    }

    /// Waits (uninterruptibly) for the queued writes of this buffer.
    fn settle(&self) {
        if let Some(stream) = &self.ctx.stream {
            // Without an interrupt flag the wait cannot fail.
            let _ = stream.wait(self.write_seq.load(Ordering::Acquire), None);
        }
    }

    /// Waits for the queued writes of this buffer; an interrupt ends the wait, and an error a
    /// queued job raised on this device is reported here.
    /// On a CUDA GPU it waits for the card's whole stream.
    fn settle_checked(&self) -> Result<()> {
        if let Some(stream) = &self.ctx.stream {
            stream.wait(
                self.write_seq.load(Ordering::Acquire),
                Some(&self.ctx.interrupt),
            )?;
            if let Some(e) = stream.take_error() {
                return Err(e);
            }
            if let Some(e) = self.failed.get() {
                return Err(e.clone());
            }
        }
        if self.ctx.placement.is_cuda() {
            self.ctx.placement.synchronize(&self.ctx.interrupt)?;
            if let Some(e) = self.ctx.take_deferred_error() {
                return Err(e);
            }
        }
        Ok(())
    }
}

pub(crate) use super::shape::Dims;

#[derive(Debug)]
struct ArrayInner {
    shape: Dims,
    dtype: DType,
    device: Device,
    buffer: BufferHome,
    /// How many in-place writes went through this array (PyTorch's version counter, per
    /// array object: a view written through counts on the view, as `.data` does in PyTorch).
    version: AtomicU32,
    /// Made by a transpose that reorders dims of more than one element: what PyTorch would
    /// hold as a view with other strides (the bytes here are row-major all the same).
    strided: AtomicBool,
}

/// Where an array's bytes are. A fresh array holds its buffer inline, so making one is a
/// single allocation; a view (reshape) keeps the array that owns the bytes alive instead.
#[derive(Debug)]
enum BufferHome {
    Own(Buffer),
    /// Always an array whose buffer is `Own` (views of views point at the owner).
    Shared(Arc<ArrayInner>),
}

impl ArrayInner {
    #[inline]
    fn buffer(&self) -> &Buffer {
        match &self.buffer {
            BufferHome::Own(buffer) => buffer,
            BufferHome::Shared(owner) => owner.buffer(),
        }
    }
}

/// An n-dimensional array on one device. `Clone` gives the same array (same identity).
#[derive(Clone)]
pub struct Array {
    inner: Arc<ArrayInner>,
}

impl std::fmt::Debug for Array {
    // The elements are left out: a debug print of a large array must stay short.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Array")
            .field("shape", &self.inner.shape)
            .field("dtype", &self.inner.dtype)
            .field("device", &self.inner.device)
            .finish()
    }
}

/// Charges `bytes` to the device. A stream device that is full first waits for its queue:
/// queued jobs hold the inputs and outputs of arrays the program has already dropped, and a
/// loop that outruns its device must not fail for memory it no longer uses.
fn charge(ctx: &Arc<DeviceCtx>, bytes: u64) -> Result<Charge> {
    match ctx.ledger.charge(bytes) {
        Err(RuntimeError::OutOfMemory { .. }) if ctx.stream.is_some() => {
            ctx.synchronize()?;
            ctx.ledger.charge(bytes)
        }
        other => other,
    }
}

/// An empty storage of `dtype`: what a queued output holds until its job runs.
fn placeholder(dtype: DType) -> Result<Storage> {
    Ok(Storage::Cpu(CpuStorage::full(0, 0.0, dtype)?))
}

/// Runs queued work, turning a panic into an error so the caller can still leave its output
/// in a readable state.
fn run_guarded<T>(device: Device, work: impl FnOnce() -> Result<T>) -> Result<T> {
    catch_unwind(AssertUnwindSafe(work)).unwrap_or_else(|panic| {
        Err(crate::backend::sim::panic_error(
            &device.to_string(),
            panic.as_ref(),
        ))
    })
}

/// Runs one queued job (`run_guarded`), and fails it with the stored error of any failed array
/// it read; an error names the job's device (a host allocation failing for a simulated GPU
/// reports that GPU, not cpu(0)).
fn run_job<T>(device: Device, work: impl FnOnce() -> Result<T>) -> Result<T> {
    FAILED_READ.with(|f| f.borrow_mut().take());
    let result = run_guarded(device, work);
    let failed_input = FAILED_READ.with(|f| f.borrow_mut().take());
    match (result, failed_input) {
        // Whatever it computed (or a panic on a failed input's placeholder) is void.
        (_, Some(e)) => Err(e),
        // The host's allocator names cpu(0); an error passed on from another device keeps its.
        (
            Err(RuntimeError::OutOfMemory {
                device: failed_on,
                requested,
                free,
                total,
                setting,
            }),
            _,
        ) if failed_on.is_cpu() => Err(RuntimeError::OutOfMemory {
            device,
            requested,
            free,
            total,
            setting,
        }),
        (r, _) => r,
    }
}

/// Charges the bytes for an array of `shape` and `dtype` on `ctx`'s device, then builds its
/// storage: on a synchronous device now, on a stream device as a queued job. The checks happen
/// before any work, on the caller's thread.
pub(crate) fn allocate(
    ctx: &Arc<DeviceCtx>,
    shape: impl Into<Dims>,
    dtype: DType,
    make: impl FnOnce() -> Result<Storage> + Send + 'static,
) -> Result<Array> {
    allocate_as(ctx, shape.into(), dtype, Some(current_op()), make)
}

/// [`allocate`], noted on the timeline under `label` (None: not noted, for the second half of
/// a copy, which the copy's own event covers).
fn allocate_as(
    ctx: &Arc<DeviceCtx>,
    shape: Dims,
    dtype: DType,
    label: Option<&'static str>,
    make: impl FnOnce() -> Result<Storage> + Send + 'static,
) -> Result<Array> {
    let n = super::shape::checked_numel(&shape)?;
    let bytes = checked_bytes(&shape, dtype.size_bytes())? as u64;
    let charge = charge(ctx, bytes)?;
    let lane = Lane::Device(ctx.device);
    let Some(stream) = &ctx.stream else {
        let start = Instant::now();
        let storage = make()?;
        if let Some(label) = label {
            ctx.timeline
                .done(lane, label, shape.clone(), bytes, start, start);
        }
        debug_assert_eq!(storage.dtype(), dtype);
        debug_assert_eq!(storage.len(), n);
        return Ok(Array::from_parts(ctx, shape, dtype, storage, charge));
    };
    let event = label.and_then(|label| ctx.timeline.queued(lane, label, shape.clone(), bytes));
    let timeline = Arc::clone(&ctx.timeline);
    let array = Array::from_parts(ctx, shape, dtype, placeholder(dtype)?, charge);
    let out = array.clone();
    let device = ctx.device;
    let job = Box::new(move || {
        let start = Instant::now();
        let result = run_job(device, make);
        timeline.ran(event, start);
        match result {
            Ok(storage) => {
                *out.inner.buffer().write() = storage;
                Ok(())
            }
            Err(e) => {
                // The array is marked failed: every later use raises `e`, and the next sync of
                // the device reports it too. Zeros (when they fit) only keep later kernels
                // that read it in bounds; their results fail with `e` as well (`run_job`).
                let _ = out.inner.buffer().failed.set(e.clone());
                if let Ok(zeros) = CpuStorage::full(n, 0.0, dtype) {
                    *out.inner.buffer().write() = Storage::Cpu(zeros);
                }
                Err(e)
            }
        }
    });
    let seq = stream.submit(job, &ctx.interrupt)?;
    array.inner.buffer().write_seq.store(seq, Ordering::Release);
    Ok(array)
}

/// [`allocate`] for an op with several outputs computed by one kernel call (batch norm's
/// output and statistics): every output is charged first, then one job (or one call) makes them
/// all; a failed job marks every output failed.
pub(crate) fn allocate_many<const K: usize>(
    ctx: &Arc<DeviceCtx>,
    outs: [(Dims, DType); K],
    make: impl FnOnce() -> Result<[Storage; K]> + Send + 'static,
) -> Result<[Array; K]> {
    let mut charges = Vec::with_capacity(K);
    let mut total = 0u64;
    for (shape, dtype) in &outs {
        super::shape::checked_numel(shape)?;
        let bytes = checked_bytes(shape, dtype.size_bytes())? as u64;
        total += bytes;
        charges.push(charge(ctx, bytes)?);
    }
    let lane = Lane::Device(ctx.device);
    let label = current_op();
    let first = outs.first().map(|o| o.0.clone()).unwrap_or_default();
    let Some(stream) = &ctx.stream else {
        let start = Instant::now();
        let storages = make()?;
        ctx.timeline.done(lane, label, first, total, start, start);
        let arrays: Vec<Array> = outs
            .into_iter()
            .zip(storages)
            .zip(charges)
            .map(|(((shape, dtype), storage), charge)| {
                debug_assert_eq!(storage.dtype(), dtype);
                Array::from_parts(ctx, shape, dtype, storage, charge)
            })
            .collect();
        return arrays
            .try_into()
            .map_err(|_| RuntimeError::Value("internal error: output count".into()));
    };
    let event = ctx.timeline.queued(lane, label, first, total);
    let timeline = Arc::clone(&ctx.timeline);
    let mut arrays = Vec::with_capacity(K);
    for ((shape, dtype), charge) in outs.into_iter().zip(charges) {
        arrays.push(Array::from_parts(
            ctx,
            shape,
            dtype,
            placeholder(dtype)?,
            charge,
        ));
    }
    let outs: Vec<Array> = arrays.clone();
    let device = ctx.device;
    let job = Box::new(move || {
        let start = Instant::now();
        let result = run_job(device, make);
        timeline.ran(event, start);
        match result {
            Ok(storages) => {
                for (out, storage) in outs.iter().zip(storages) {
                    *out.inner.buffer().write() = storage;
                }
                Ok(())
            }
            Err(e) => {
                for out in &outs {
                    let _ = out.inner.buffer().failed.set(e.clone());
                    if let Ok(zeros) = CpuStorage::full(out.size(), 0.0, out.dtype()) {
                        *out.inner.buffer().write() = Storage::Cpu(zeros);
                    }
                }
                Err(e)
            }
        }
    });
    let seq = stream.submit(job, &ctx.interrupt)?;
    for a in &arrays {
        a.inner.buffer().write_seq.store(seq, Ordering::Release);
    }
    arrays
        .try_into()
        .map_err(|_| RuntimeError::Value("internal error: output count".into()))
}

/// A one-element storage of `dtype` holding a Python scalar (broadcast with stride 0), made
/// where the array it combines with lives.
fn scalar_storage(placement: &Placement, value: Scalar, dtype: DType) -> Result<Storage> {
    match placement {
        Placement::Host => Ok(Storage::Cpu(CpuStorage::from_host(scalar_host(
            value, dtype,
        ))?)),
        // A fill kernel queues without waiting, where an upload would stop for the copy; it
        // takes an f64, which holds every scalar exactly except int64 beyond 2^53.
        Placement::Cuda(_) => match (value, dtype) {
            (Scalar::Int(i), DType::Int64) if i.unsigned_abs() > 1 << 53 => {
                placement.from_host(scalar_host(value, dtype))
            }
            _ => placement.full(1, scalar_fill_value(value, dtype), dtype),
        },
    }
}

/// The f64 that a fill of `dtype` turns into the same element `scalar_host` makes.
pub(super) fn scalar_fill_value(value: Scalar, dtype: DType) -> f64 {
    scalar_host(value, dtype)
        .to_f64_vec()
        .first()
        .copied()
        .unwrap_or(0.0)
}

/// The right side of `x[...] = value` once validated.
enum SetValue {
    Scalar(Storage),
    Array(Array),
}

/// How an operand enters a binary op once validated.
enum Side {
    Array(Array),
    Scalar(Scalar),
}

fn scalar_host(value: Scalar, dtype: DType) -> HostData {
    match (value, dtype) {
        (Scalar::Int(i), DType::Int64) => HostData::I64(vec![i]),
        (Scalar::Int(i), DType::Int32) => HostData::I32(vec![i as i32]),
        (Scalar::Bool(b), DType::Bool) => HostData::Bool(vec![b]),
        (s, DType::Float32) => HostData::F32(vec![s.as_f64() as f32]),
        (s, DType::Float64) => HostData::F64(vec![s.as_f64()]),
        (s, DType::Int32) => HostData::I32(vec![s.as_f64() as i32]),
        (s, DType::Int64) => HostData::I64(vec![s.as_f64() as i64]),
        (s, DType::Bool) => HostData::Bool(vec![s.as_f64() != 0.0]),
        // Python ints wrap into the small types (the dialects check the range first).
        (Scalar::Int(i), d) if d.is_int() => {
            HostData::from_le_bytes(&i.to_le_bytes()[..d.size_bytes()], d)
        }
        (s, d) => HostData::from_f64_values(&[s.as_f64()], d),
    }
}

/// The dtype a Python scalar leaves an array operation in: it never up-casts a float array, and a
/// float scalar with an integer array gives the default float.
fn dtype_with_scalar(array: DType, scalar: Scalar) -> DType {
    match scalar {
        Scalar::Float(_) => array.to_float(),
        Scalar::Int(_) if array == DType::Bool => DType::Int64,
        _ => array,
    }
}

/// The dtype `op` gives for two operands, each an array's dtype or a Python scalar (None for
/// two scalars or an op the dtypes refuse).
pub fn binary_result_dtype(
    op: BinaryOp,
    l: std::result::Result<DType, Scalar>,
    r: std::result::Result<DType, Scalar>,
) -> Option<DType> {
    let base = match (l, r) {
        (Ok(a), Ok(b)) => a.promote(b),
        (Ok(a), Err(s)) | (Err(s), Ok(a)) => dtype_with_scalar(a, s),
        (Err(_), Err(_)) => return None,
    };
    binary_dtypes(op, base).ok().map(|(_, out)| out)
}

/// (compute dtype, output dtype) of a binary op.
fn binary_dtypes(op: BinaryOp, base: DType) -> Result<(DType, DType)> {
    if op.is_bitwise() {
        if base.is_float() {
            return Err(RuntimeError::DType(format!(
                "{}: not defined for {base} operands; it takes bool or integer arrays (compare first, e.g. (x > 0) & (y > 0))",
                op.name()
            )));
        }
        return Ok((base, base));
    }
    if op.is_comparison() {
        return Ok((base, DType::Bool));
    }
    if op == BinaryOp::Div {
        let float = base.to_float();
        return Ok((float, float));
    }
    if base == DType::Bool {
        return Ok(match op {
            BinaryOp::Add | BinaryOp::Maximum => (DType::Bool, DType::Bool),
            BinaryOp::Mul | BinaryOp::Minimum => (DType::Bool, DType::Bool),
            _ => (DType::Int64, DType::Int64),
        });
    }
    Ok((base, base))
}

/// Bool add is logical or, bool multiply logical and.
fn bool_op(op: BinaryOp) -> BinaryOp {
    match op {
        BinaryOp::Add => BinaryOp::Or,
        BinaryOp::Mul => BinaryOp::And,
        other => other,
    }
}

impl Array {
    pub fn shape(&self) -> &[usize] {
        &self.inner.shape
    }

    pub fn ndim(&self) -> usize {
        self.inner.shape.len()
    }

    pub fn size(&self) -> usize {
        self.inner.shape.iter().product()
    }

    pub fn dtype(&self) -> DType {
        self.inner.dtype
    }

    pub fn device(&self) -> Device {
        self.inner.device
    }

    /// Identity, for the language's `is`.
    /// A number identifying this array (for `id()` and hashing by identity).
    pub fn id(&self) -> usize {
        Arc::as_ptr(&self.inner) as *const u8 as usize
    }

    /// How many handles share this array (views count their owner once each): autograd's
    /// tape compares it with its own references to find arrays only it still holds.
    pub fn holders(&self) -> usize {
        Arc::strong_count(&self.inner)
    }

    pub fn same(&self, other: &Array) -> bool {
        Arc::ptr_eq(&self.inner, &other.inner)
    }

    /// True when both arrays read the same bytes (one is a reshape of the other).
    /// How many in-place writes this array has had (what a backward checks its saved
    /// inputs against).
    pub fn version(&self) -> u32 {
        self.inner.version.load(Ordering::Relaxed)
    }

    /// Whether PyTorch would see this array as a non-contiguous view (`is_contiguous()`):
    /// the result of a transpose that reorders dims of more than one element.
    pub fn strided(&self) -> bool {
        self.inner.strided.load(Ordering::Relaxed)
    }

    /// Counts an in-place write made by drawing this array's values where the framework
    /// initializes in place (PyTorch's layers `uniform_` their fresh parameters).
    pub fn count_inplace_write(&self) {
        self.inner.version.fetch_add(1, Ordering::Relaxed);
    }

    pub fn shares_buffer(&self, other: &Array) -> bool {
        std::ptr::eq(self.inner.buffer(), other.inner.buffer())
    }

    pub fn nbytes(&self) -> usize {
        self.size() * self.dtype().size_bytes()
    }

    fn ctx(&self) -> &Arc<DeviceCtx> {
        &self.inner.buffer().ctx
    }

    /// The storage as it is now; only for code running in stream order (see `Buffer::read`).
    fn read(&self) -> RwLockReadGuard<'_, Storage> {
        self.inner.buffer().read()
    }

    /// Storage in `dtype`: the buffer itself when it already is, else a converted copy.
    fn storage_as(&self, dtype: DType) -> Result<StorageRef<'_>> {
        let guard = self.read();
        if guard.dtype() == dtype {
            Ok(StorageRef::Borrowed(guard))
        } else {
            Ok(StorageRef::Owned(guard.cast(dtype)?))
        }
    }

    /// A new array of the same device from a computed storage, charged to the device. `make`
    /// runs in stream order: now on a synchronous device, later on a stream device.
    fn derive(
        &self,
        shape: impl Into<Dims>,
        dtype: DType,
        make: impl FnOnce() -> Result<Storage> + Send + 'static,
    ) -> Result<Array> {
        allocate(self.ctx(), shape, dtype, make)
    }

    /// Writes into this array's buffer in stream order: now on a synchronous device, as a
    /// queued job on a stream device. `write` gets this array and takes the locks it needs.
    fn write_with(&self, write: impl FnOnce(&Array) -> Result<()> + Send + 'static) -> Result<()> {
        self.inner.version.fetch_add(1, Ordering::Relaxed);
        let ctx = self.ctx();
        let Some(stream) = &ctx.stream else {
            let start = Instant::now();
            let result = write(self);
            ctx.timeline.done(
                Lane::Device(ctx.device),
                current_op(),
                Dims::from_slice(self.shape()),
                self.nbytes() as u64,
                start,
                start,
            );
            return result;
        };
        let target = self.clone();
        let device = ctx.device;
        let event = ctx.timeline.queued(
            Lane::Device(device),
            current_op(),
            Dims::from_slice(self.shape()),
            self.nbytes() as u64,
        );
        let timeline = Arc::clone(&ctx.timeline);
        let seq = stream.submit(
            Box::new(move || {
                let start = Instant::now();
                let result = run_job(device, || write(&target));
                timeline.ran(event, start);
                if let Err(e) = &result {
                    // A half-done write leaves no trustworthy values.
                    let _ = target.inner.buffer().failed.set(e.clone());
                }
                result
            }),
            &ctx.interrupt,
        )?;
        self.inner.buffer().write_seq.store(seq, Ordering::Release);
        Ok(())
    }

    fn from_parts(
        ctx: &Arc<DeviceCtx>,
        shape: Dims,
        dtype: DType,
        storage: Storage,
        charge: Charge,
    ) -> Array {
        Array {
            inner: Arc::new(ArrayInner {
                shape,
                dtype,
                device: ctx.device,
                buffer: BufferHome::Own(Buffer {
                    storage: RwLock::new(storage),
                    _charge: charge,
                    ctx: Arc::clone(ctx),
                    write_seq: AtomicU64::new(0),
                    failed: OnceLock::new(),
                }),
                version: AtomicU32::new(0),
                strided: AtomicBool::new(false),
            }),
        }
    }

    /// Same buffer, new shape (used by reshape and stack).
    fn view_as(&self, shape: impl Into<Dims>) -> Array {
        Array {
            inner: Arc::new(ArrayInner {
                shape: shape.into(),
                dtype: self.inner.dtype,
                device: self.inner.device,
                buffer: BufferHome::Shared(match &self.inner.buffer {
                    BufferHome::Own(_) => Arc::clone(&self.inner),
                    BufferHome::Shared(owner) => Arc::clone(owner),
                }),
                version: AtomicU32::new(0),
                strided: AtomicBool::new(false),
            }),
        }
    }

    fn check_same_device(&self, other: &Array, op: &str) -> Result<()> {
        if self.device() != other.device() {
            return Err(RuntimeError::DeviceMismatch {
                op: op.to_string(),
                first: self.device(),
                second: other.device(),
            });
        }
        Ok(())
    }

    /// Writes `src` into a strided view of this array's buffer (crate-internal building block).
    pub(crate) fn scatter_view(
        &self,
        view: StridedView,
        src: Storage,
        src_strides: Vec<usize>,
    ) -> Result<()> {
        self.write_with(move |a| a.inner.buffer().write().scatter(&view, &src, &src_strides))
    }

    // ---- synchronising -------------------------------------------------------------------

    /// Blocks until every queued write of this array is done (MXNet's `wait_to_read`). An
    /// interrupt ends the wait early; an error a queued job raised on this device shows here.
    pub fn wait_to_read(&self) -> Result<()> {
        self.inner.buffer().settle_checked()
    }

    /// Counts a read of this array by the host (print, asnumpy, asscalar) as an implicit
    /// transfer when the array lives elsewhere.
    fn record_host_read(&self, bytes: u64, time: std::time::Duration) {
        let device = self.device();
        if !device.is_cpu() {
            let ctx = self.ctx();
            let host = Device::cpu(0);
            ctx.transfers
                .record(device, host, TransferKind::Implicit, bytes);
            ctx.transfers
                .add_time(device, host, TransferKind::Implicit, time);
            let started = Instant::now()
                .checked_sub(time)
                .unwrap_or_else(Instant::now);
            ctx.timeline.done(
                Lane::Copy {
                    from: device,
                    to: host,
                },
                "read",
                Dims::from_slice(self.shape()),
                bytes,
                started,
                started,
            );
        }
    }

    // ---- reading -------------------------------------------------------------------------

    /// A row-major host copy. Waits for the array's queued writes without giving up: use
    /// `try_to_host` where an interrupt or a queued error should be reported.
    /// A copy that fails (possible only on a CUDA GPU) gives zeros, and the error is kept for
    /// the device's next synchronising call.
    pub fn to_host(&self) -> HostData {
        self.inner.buffer().settle();
        let start = Instant::now();
        let host = self.read_host();
        self.record_host_read(self.nbytes() as u64, start.elapsed());
        host
    }

    /// A row-major host copy that the transfer ledger does not count: for rendering a value a
    /// second time right after `to_host` (the HTML beside the text form of one display).
    pub fn to_host_uncounted(&self) -> HostData {
        self.inner.buffer().settle();
        self.read_host()
    }

    /// The error that the queued job computing this array raised, once its work is done (it
    /// waits); None for an array with values. Rendering checks it first, so a failed array is
    /// never shown as zeros.
    pub fn failure(&self) -> Option<RuntimeError> {
        let buffer = self.inner.buffer();
        buffer.settle();
        buffer.failed.get().cloned()
    }

    /// The values on the host, or zeros (and a deferred error) when the copy fails.
    fn read_host(&self) -> HostData {
        if let Some(e) = self.inner.buffer().failed.get() {
            // A failed array has no values; callers that can raise check `failure` first.
            self.ctx().defer_error(e.clone());
            let zeros = CpuStorage::full(self.size(), 0.0, self.dtype());
            return zeros.map_or_else(|_| HostData::F32(Vec::new()), |z| z.to_host());
        }
        let copied = self.read().to_host();
        copied.unwrap_or_else(|e| {
            self.ctx().defer_error(e);
            let zeros = CpuStorage::full(self.size(), 0.0, self.dtype());
            zeros.map_or_else(|_| HostData::F32(Vec::new()), |z| z.to_host())
        })
    }

    /// A row-major host copy; an interrupt while waiting, or an error queued work raised on
    /// the array's device, is returned instead.
    pub fn try_to_host(&self) -> Result<HostData> {
        self.inner.buffer().settle_checked()?;
        let start = Instant::now();
        let host = self.read().to_host()?;
        self.record_host_read(self.nbytes() as u64, start.elapsed());
        Ok(host)
    }

    /// Hands the values to `sink` as little-endian bytes (bool as one byte), a chunk of at most
    /// `chunk_bytes` at a time, in row-major order: what saving streams to a file. A host array
    /// is read in place (no copy of the data); an array on a CUDA GPU is copied to the host
    /// first. Waits for queued writes as `try_to_host` does, reporting an interrupt or an error.
    pub fn write_le_bytes<E: From<RuntimeError>>(
        &self,
        chunk_bytes: usize,
        sink: &mut dyn FnMut(&[u8]) -> std::result::Result<(), E>,
    ) -> std::result::Result<(), E> {
        self.inner.buffer().settle_checked()?;
        let start = Instant::now();
        let guard = self.read();
        let result = match &*guard {
            Storage::Cpu(s) => cpu_le_chunks(s, chunk_bytes, sink),
            Storage::Cuda(_) => {
                drop(guard);
                let host = CpuStorage::from_host(self.read().to_host()?)?;
                cpu_le_chunks(&host, chunk_bytes, sink)
            }
        };
        self.record_host_read(self.nbytes() as u64, start.elapsed());
        result
    }

    /// The single element of a size-1 array.
    pub fn to_scalar(&self, op: &str) -> Result<Scalar> {
        let size = self.size();
        if size != 1 {
            let noun = if size == 1 { "element" } else { "elements" };
            return Err(RuntimeError::Value(format!(
                "{op}: the array has {size} {noun}; only a 1-element array converts to a scalar"
            )));
        }
        self.inner.buffer().settle_checked()?;
        // Only a read from another device is timed (a clock read costs more than this read).
        let start = (!self.device().is_cpu()).then(Instant::now);
        let value = self
            .read()
            .scalar_at(0)?
            .ok_or_else(|| RuntimeError::Value(format!("{op}: the array holds no element")))?;
        if let Some(start) = start {
            self.record_host_read(self.dtype().size_bytes() as u64, start.elapsed());
        }
        Ok(value)
    }

    // ---- moving --------------------------------------------------------------------------

    /// A copy on `device`, always in new memory. Copies between devices are recorded in the
    /// transfer ledger as explicit.
    pub fn copy_to(&self, rt: &Runtime, device: Device) -> Result<Array> {
        self.copy_to_as(rt, device, TransferKind::Explicit)
    }

    /// A host copy of this array for reading (asnumpy): recorded as an implicit transfer.
    pub fn to_host_array(&self, rt: &Runtime) -> Result<Array> {
        self.copy_to_as(rt, Device::cpu(0), TransferKind::Implicit)
    }

    fn copy_to_as(&self, rt: &Runtime, device: Device, kind: TransferKind) -> Result<Array> {
        let dst_ctx = rt.ctx(device)?;
        let shape = self.shape().to_vec();
        let dtype = self.dtype();
        let src = self.clone();
        if device == self.device() {
            let full = full_view(&shape);
            let _op = op_scope("copy");
            return allocate(&dst_ctx, shape, dtype, move || src.read().gather(&full));
        }
        let bytes = self.nbytes() as u64;
        let from = self.device();
        let log = Arc::clone(&dst_ctx.transfers);
        let lane = Lane::Copy { from, to: device };
        let dims = Dims::from_slice(&shape);
        match &self.ctx().stream {
            None => {
                // The source is synchronous (or a CUDA GPU, whose stream orders the copy after
                // its writes): copy now, on the calling thread, so later writes cannot reach
                // it. A copy to a CUDA GPU is made in the destination's memory right here.
                let start = Instant::now();
                let staged = dst_ctx.placement.copy_from(&src.read())?;
                let out = allocate_as(&dst_ctx, dims.clone(), dtype, None, move || Ok(staged))?;
                log.record(from, device, kind, bytes);
                log.add_time(from, device, kind, start.elapsed());
                dst_ctx
                    .timeline
                    .done(lane, "copy", dims, bytes, start, start);
                Ok(out)
            }
            Some(_) if dst_ctx.stream.is_none() => {
                // To a synchronous device: wait for the source, then copy now.
                let queued = Instant::now();
                src.inner.buffer().settle_checked()?;
                let start = Instant::now();
                let placement = dst_ctx.placement.clone();
                let out = allocate_as(&dst_ctx, dims.clone(), dtype, None, move || {
                    placement.copy_from(&src.read())
                })?;
                log.record(from, device, kind, bytes);
                log.add_time(from, device, kind, start.elapsed());
                dst_ctx
                    .timeline
                    .done(lane, "copy", dims, bytes, queued, start);
                Ok(out)
            }
            Some(_) => {
                let staged = self.stage_on_source_stream(device, kind)?;
                let out = allocate_as(&dst_ctx, dims, dtype, None, staged)?;
                log.record(from, device, kind, bytes);
                Ok(out)
            }
        }
    }

    /// The first half of a copy between two stream devices: a job on this array's stream reads
    /// it (after its pending writes) into a staging slot; the returned closure, run as a job on
    /// the destination stream, waits for that position and takes the result. Nothing stops on
    /// the host, and the ledger records `self.device() -> to` directly.
    fn stage_on_source_stream(
        &self,
        to: Device,
        kind: TransferKind,
    ) -> Result<impl FnOnce() -> Result<Storage> + Send + 'static> {
        let ctx = Arc::clone(self.ctx());
        let Some(stream) = ctx.stream.clone() else {
            return Err(RuntimeError::Value(format!(
                "internal error: {} has no stream to stage a copy on",
                ctx.device
            )));
        };
        let slot: Arc<Mutex<Option<Result<Storage>>>> = Arc::new(Mutex::new(None));
        let fill = Arc::clone(&slot);
        let src = self.clone();
        let from = ctx.device;
        let log = Arc::clone(&ctx.transfers);
        let timeline = Arc::clone(&ctx.timeline);
        let event = timeline.queued(
            Lane::Copy { from, to },
            "copy",
            Dims::from_slice(self.shape()),
            self.nbytes() as u64,
        );
        let seq = stream.submit(
            Box::new(move || {
                let start = Instant::now();
                let staged = run_job(from, || src.read().gather(&full_view(src.shape())));
                log.add_time(from, to, kind, start.elapsed());
                timeline.ran(event, start);
                let failed = staged.as_ref().err().cloned();
                *fill.lock().unwrap_or_else(|e| e.into_inner()) = Some(staged);
                // The destination reports a failed copy too; the source's sync reports it here.
                failed.map_or(Ok(()), Err)
            }),
            &ctx.interrupt,
        )?;
        Ok(move || {
            // Without an interrupt flag the wait cannot fail.
            let _ = stream.wait(seq, None);
            let staged = slot.lock().unwrap_or_else(|e| e.into_inner()).take();
            staged.unwrap_or_else(|| {
                Err(RuntimeError::Value(format!(
                    "internal error: the copy from {from} to {to} produced nothing"
                )))
            })
        })
    }

    /// Copies this array's values into `dst` (same shape; converted to `dst`'s dtype). The
    /// arrays may be on different devices; such a copy is recorded as an explicit transfer.
    pub fn copy_into(&self, dst: &Array) -> Result<()> {
        let _op = op_scope("copy");
        if self.shape() != dst.shape() {
            return Err(RuntimeError::Shape(format!(
                "copyto: the source has shape {} but the destination has shape {}; copy into an array of the same shape",
                shape_tuple(self.shape()),
                shape_tuple(dst.shape())
            )));
        }
        if self.shares_buffer(dst) {
            return Ok(());
        }
        let view = full_view(dst.shape());
        let strides = contiguous_strides(self.shape());
        let dtype = dst.dtype();
        let (from, to) = (self.device(), dst.device());
        if from == to {
            let src = self.clone();
            return dst.write_with(move |d| {
                let source = src.storage_as(dtype)?;
                d.inner.buffer().write().scatter(&view, &source, &strides)
            });
        }
        let bytes = self.nbytes() as u64;
        let log = Arc::clone(&self.ctx().transfers);
        let kind = TransferKind::Explicit;
        if self.ctx().stream.is_some() && dst.ctx().stream.is_some() {
            let staged = self.stage_on_source_stream(to, kind)?;
            dst.write_with(move |d| {
                let mut source = staged()?;
                if source.dtype() != dtype {
                    source = source.cast(dtype)?;
                }
                d.inner.buffer().write().scatter(&view, &source, &strides)
            })?;
            log.record(from, to, kind, bytes);
            return Ok(());
        }
        // One side is synchronous: take the source now (after its pending writes), into the
        // destination's memory.
        self.inner.buffer().settle_checked()?;
        let start = Instant::now();
        let source = {
            let guard = self.storage_as(dtype)?;
            dst.ctx().placement.copy_from(&guard)?
        };
        dst.write_with(move |d| d.inner.buffer().write().scatter(&view, &source, &strides))?;
        log.record(from, to, kind, bytes);
        log.add_time(from, to, kind, start.elapsed());
        Ok(())
    }

    /// This array when it is already on `device`, else a copy there.
    pub fn as_in_device(&self, rt: &Runtime, device: Device) -> Result<Array> {
        if self.device() == device {
            return Ok(self.clone());
        }
        self.copy_to(rt, device)
    }

    // ---- elementwise ---------------------------------------------------------------------

    pub fn unary(&self, op: UnaryOp) -> Result<Array> {
        let _op = op_scope(op.name());
        let dtype = self.dtype();
        let shape = self.shape().to_vec();
        if op == UnaryOp::Not {
            let x = self.clone();
            return self.derive(shape, DType::Bool, move || x.read().unary(op));
        }
        if dtype == DType::Bool {
            if op == UnaryOp::Neg {
                return Err(RuntimeError::DType(
                    "negative: not defined for bool arrays; use logical_not, or convert first with astype('int32')".into(),
                ));
            }
            if !op.is_float_only() && !op.is_rounding() {
                // abs, square, relu and sign map 0/1 to themselves.
                return self.astype(DType::Bool);
            }
        }
        let compute = if op.is_float_only() || (op.is_rounding() && dtype == DType::Bool) {
            dtype.to_float()
        } else {
            dtype
        };
        let x = self.clone();
        self.derive(shape, compute, move || x.storage_as(compute)?.unary(op))
    }

    /// The device context when ops on this array run right here, on the calling thread, in
    /// host memory (cpu(0)): no stream to queue on and no CUDA card.
    #[inline]
    fn host_sync_ctx(&self) -> Option<&Arc<DeviceCtx>> {
        let ctx = self.ctx();
        (ctx.stream.is_none() && !ctx.placement.is_cuda()).then_some(ctx)
    }

    /// A new array on a synchronous host device from a storage computed now, charged first
    /// (as `allocate` does) so a refused charge does no work.
    #[inline]
    fn make_now(
        ctx: &Arc<DeviceCtx>,
        shape: Dims,
        dtype: DType,
        size: usize,
        compute: impl FnOnce() -> Result<Storage>,
    ) -> Result<Array> {
        // `size` elements of an existing array: the byte count cannot overflow.
        let bytes = (size as u64).saturating_mul(dtype.size_bytes() as u64);
        let charge = charge(ctx, bytes)?;
        let storage = compute()?;
        debug_assert_eq!(storage.dtype(), dtype);
        debug_assert_eq!(storage.len(), size);
        Ok(Array::from_parts(ctx, shape, dtype, storage, charge))
    }

    /// The common small case of `binary`, straight to the kernel: operands on one synchronous
    /// host device, two arrays of one shape, or an array and a Python scalar, already in the
    /// dtype the op computes in. The general path would reach the same kernel branch (dense
    /// operands, or a dense one and a single element) with the same values, so the bits are
    /// the same; what is skipped is the stride and broadcast bookkeeping and the deferred
    /// closure. None (never an error) sends the op down the general path, which also reports
    /// every error.
    fn binary_direct(op: BinaryOp, lhs: Operand, rhs: Operand) -> Option<Result<Array>> {
        let (array, other, array_on_left) = match (lhs, rhs) {
            (Operand::Array(a), other) => (a, other, true),
            (other @ Operand::Scalar(_), Operand::Array(b)) => (b, other, false),
            (Operand::Scalar(_), Operand::Scalar(_)) => return None,
        };
        let dtype = array.dtype();
        let ctx = array.host_sync_ctx()?;
        let base = match other {
            Operand::Array(b) => {
                if b.dtype() != dtype || b.shape() != array.shape() || b.device() != array.device()
                {
                    return None;
                }
                dtype
            }
            Operand::Scalar(s) => dtype_with_scalar(dtype, s),
        };
        let (compute, out_dtype) = binary_dtypes(op, base).ok()?;
        if compute != dtype {
            return None;
        }
        let kernel_op = if compute == DType::Bool {
            bool_op(op)
        } else {
            op
        };
        let size = array.size();
        let shape = [size];
        let run = move || -> Result<Storage> {
            let guard = array.read();
            match other {
                Operand::Array(b) if array.shares_buffer(b) => {
                    // One lock for both sides, as in the general path.
                    guard.binary(&[1], &guard, &[1], &shape, kernel_op)
                }
                Operand::Array(b) => {
                    let b = b.read();
                    if array_on_left {
                        guard.binary(&[1], &b, &[1], &shape, kernel_op)
                    } else {
                        b.binary(&[1], &guard, &[1], &shape, kernel_op)
                    }
                }
                Operand::Scalar(s) => {
                    let scalar = scalar_storage(&ctx.placement, s, compute)?;
                    if array_on_left {
                        guard.binary(&[1], &scalar, &[0], &shape, kernel_op)
                    } else {
                        scalar.binary(&[0], &guard, &[1], &shape, kernel_op)
                    }
                }
            }
        };
        let out_shape = Dims::from_slice(array.shape());
        Some(Array::make_now(ctx, out_shape, out_dtype, size, run))
    }

    /// Elementwise binary op with numpy broadcasting; Python scalars broadcast on any device.
    pub fn binary(op: BinaryOp, lhs: Operand, rhs: Operand) -> Result<Array> {
        let _op = op_scope(op.name());
        if let Some(result) = Array::binary_direct(op, lhs, rhs) {
            return result;
        }
        Array::binary_general(op, lhs, rhs)
    }

    /// `binary` for every case: broadcasting, promotion, scalars, queued devices.
    fn binary_general(op: BinaryOp, lhs: Operand, rhs: Operand) -> Result<Array> {
        let (left, right) = match (lhs, rhs) {
            (Operand::Array(a), Operand::Array(b)) => {
                a.check_same_device(b, op.name())?;
                (Side::Array(a.clone()), Side::Array(b.clone()))
            }
            (Operand::Array(a), Operand::Scalar(s)) => (Side::Array(a.clone()), Side::Scalar(s)),
            (Operand::Scalar(s), Operand::Array(b)) => (Side::Scalar(s), Side::Array(b.clone())),
            (Operand::Scalar(_), Operand::Scalar(_)) => {
                return Err(RuntimeError::Value(format!(
                    "{}: needs at least one array operand",
                    op.name()
                )))
            }
        };
        let empty: &[usize] = &[];
        let (lshape, rshape) = match (&left, &right) {
            (Side::Array(a), Side::Array(b)) => (a.shape(), b.shape()),
            (Side::Array(a), Side::Scalar(_)) => (a.shape(), empty),
            (Side::Scalar(_), Side::Array(b)) => (empty, b.shape()),
            (Side::Scalar(_), Side::Scalar(_)) => (empty, empty),
        };
        let out_shape: Dims = if lshape == rshape {
            Dims::from_slice(lshape)
        } else {
            broadcast_shapes(lshape, rshape)?.into()
        };
        let base = match (&left, &right) {
            (Side::Array(a), Side::Array(b)) => a.dtype().promote(b.dtype()),
            (Side::Array(a), Side::Scalar(s)) | (Side::Scalar(s), Side::Array(a)) => {
                dtype_with_scalar(a.dtype(), *s)
            }
            (Side::Scalar(_), Side::Scalar(_)) => DType::Float32,
        };
        let (compute, out_dtype) = binary_dtypes(op, base)?;
        let kernel_op = if compute == DType::Bool {
            bool_op(op)
        } else {
            op
        };
        let owner = match (&left, &right) {
            (Side::Array(a), _) | (_, Side::Array(a)) => a.clone(),
            (Side::Scalar(_), Side::Scalar(_)) => return Err(two_scalars()),
        };
        let lstrides = broadcast_strides(lshape, &out_shape);
        let rstrides = broadcast_strides(rshape, &out_shape);
        let placement = owner.ctx().placement.clone();
        owner.derive(out_shape.clone(), out_dtype, move || {
            let (l, r) = match (&left, &right) {
                (Side::Array(a), Side::Array(b)) if a.shares_buffer(b) && a.dtype() == compute => {
                    // One lock for both sides: taking a read lock twice can deadlock a waiting writer.
                    let guard = a.read();
                    return guard.binary(&lstrides, &guard, &rstrides, &out_shape, kernel_op);
                }
                (Side::Array(a), Side::Array(b)) => {
                    (a.storage_as(compute)?, b.storage_as(compute)?)
                }
                (Side::Array(a), Side::Scalar(s)) => {
                    let scalar = scalar_storage(&placement, *s, compute)?;
                    (a.storage_as(compute)?, StorageRef::Owned(scalar))
                }
                (Side::Scalar(s), Side::Array(b)) => {
                    let scalar = scalar_storage(&placement, *s, compute)?;
                    (StorageRef::Owned(scalar), b.storage_as(compute)?)
                }
                (Side::Scalar(_), Side::Scalar(_)) => return Err(two_scalars()),
            };
            l.binary(&lstrides, &r, &rstrides, &out_shape, kernel_op)
        })
    }

    /// `x op= rhs`: computes, then writes the result back into this array's buffer (identity
    /// kept). The result is cast back to this array's dtype, so `int_array += 1.5` truncates.
    pub fn binary_inplace(&self, op: BinaryOp, rhs: Operand) -> Result<()> {
        let _op = op_scope(op.name());
        let result = Array::binary(op, Operand::Array(self), rhs)?;
        if result.shape() != self.shape() {
            return Err(RuntimeError::Shape(format!(
                "non-broadcastable output operand with shape {} doesn't match the broadcast shape {}",
                shape_compact(self.shape()),
                shape_compact(result.shape())
            )));
        }
        result.copy_into(self)
    }

    /// `expr` over `inputs` in one pass, or None when the one-op path must run instead: inputs
    /// on different devices, of different shapes or dtypes, not float, or a device that cannot
    /// fuse this expression. None is never an error: running the ops one by one then gives the
    /// result, or the error, exactly as written. `inputs` must be distinct buffers (the caller
    /// reads a repeated array through one `Input`).
    pub fn fused(expr: &FusedExpr, inputs: &[Array]) -> Result<Option<Array>> {
        let _op = op_scope("fused");
        let Some(first) = inputs.first() else {
            return Ok(None);
        };
        let dtype = first.dtype();
        let fits = dtype.has_float_kernels()
            && inputs.iter().all(|a| {
                a.device() == first.device() && a.dtype() == dtype && a.shape() == first.shape()
            })
            && inputs
                .iter()
                .enumerate()
                .all(|(i, a)| inputs[..i].iter().all(|b| !a.shares_buffer(b)))
            && first.ctx().placement.can_fuse(expr, dtype);
        if !fits {
            return Ok(None);
        }
        let len = first.size();
        let expr = expr.clone();
        let arrays = inputs.to_vec();
        first
            .derive(first.shape().to_vec(), dtype, move || {
                let guards: Vec<_> = arrays.iter().map(|a| a.read()).collect();
                let refs: Vec<&Storage> = guards.iter().map(|g| &**g).collect();
                Storage::fused(&refs, &expr, len)
            })
            .map(Some)
    }

    /// `act(self + b)` with `b` (one value per element of the last axis) added to every row:
    /// a dense layer's bias and activation over a batch in one pass on host devices, with the
    /// broadcast add's and the activation's values bit for bit. None where it does not apply
    /// (CUDA, other dtypes, shapes that are not rows of `b`): the caller composes the two ops.
    pub fn bias_act_rows(&self, b: &Array, act: UnaryOp) -> Result<Option<Array>> {
        let _op = op_scope("bias_act");
        let dtype = self.dtype();
        let fits = dtype.has_float_kernels()
            && b.dtype() == dtype
            && b.device() == self.device()
            && b.ndim() == 1
            && self.ndim() >= 1
            && self.shape().last() == Some(&b.size())
            && b.size() > 0
            && !self.shares_buffer(b)
            && FusedExpr::fuses_unary(act)
            && matches!(self.ctx().placement, Placement::Host);
        if !fits {
            return Ok(None);
        }
        let (z, bias) = (self.clone(), b.clone());
        self.derive(self.shape().to_vec(), dtype, move || {
            let (zg, bg) = (z.read(), bias.read());
            match (&*zg, &*bg) {
                (Storage::Cpu(zs), Storage::Cpu(bs)) => zs.bias_act_rows(bs, act),
                _ => None,
            }
            .ok_or_else(|| RuntimeError::Value("internal error: bias_act_rows on a device it does not run on; please report this as a devarray bug".into()))?
            .map(Storage::Cpu)
        })
        .map(Some)
    }

    // ---- reductions ----------------------------------------------------------------------

    /// The common case of `reduce`, straight to the kernel: all axes of an array on a
    /// synchronous host device, by an op that computes in the array's own dtype and cannot
    /// fail. The general path merges all axes into one run of `size` elements and makes the
    /// same single kernel call, so the bits are the same. None sends the op down that path.
    fn reduce_all_direct(&self, op: ReduceOp, keepdims: bool) -> Option<Result<Array>> {
        let dtype = self.dtype();
        let size = self.size();
        let plain = match op {
            ReduceOp::Sum | ReduceOp::Prod => true,
            // An empty max or min is an error, which the general path words.
            ReduceOp::Max | ReduceOp::Min => size > 0,
            ReduceOp::Mean | ReduceOp::ArgMax | ReduceOp::ArgMin => false,
        };
        if !plain || dtype == DType::Bool {
            return None;
        }
        let ctx = self.host_sync_ctx()?;
        let out_shape: Dims = if keepdims {
            std::iter::repeat_n(1, self.ndim()).collect()
        } else {
            Dims::new()
        };
        let run = || self.read().reduce(op, 1, size, 1);
        Some(Array::make_now(ctx, out_shape, dtype, 1, run))
    }

    pub fn reduce(&self, op: ReduceOp, axes: Option<&[isize]>, keepdims: bool) -> Result<Array> {
        let _op = op_scope(op.name());
        if axes.is_none() {
            if let Some(result) = self.reduce_all_direct(op, keepdims) {
                return result;
            }
        }
        self.reduce_general(op, axes, keepdims)
    }

    /// `reduce` for every case: any axes, every op and dtype, queued devices.
    fn reduce_general(
        &self,
        op: ReduceOp,
        axes: Option<&[isize]>,
        keepdims: bool,
    ) -> Result<Array> {
        let name = op.name();
        let is_arg = matches!(op, ReduceOp::ArgMax | ReduceOp::ArgMin);
        if is_arg && axes.is_some_and(|a| a.len() > 1) {
            return Err(RuntimeError::Value(format!(
                "{name}: takes one axis or None (all axes), not {}",
                axes.map_or(0, |a| a.len())
            )));
        }
        let selected = normalize_axes(axes, self.ndim(), name)?;
        let shape = self.shape();
        let count: usize = shape
            .iter()
            .zip(&selected)
            .filter(|(_, &s)| s)
            .map(|(&d, _)| d)
            .product();
        if count == 0
            && matches!(
                op,
                ReduceOp::Max | ReduceOp::Min | ReduceOp::ArgMax | ReduceOp::ArgMin
            )
        {
            let what = if matches!(op, ReduceOp::Max | ReduceOp::ArgMax) {
                "maximum"
            } else {
                "minimum"
            };
            return Err(RuntimeError::Value(format!(
                "{name}: zero-size array has no {what}; reduce over a non-empty axis or check the shape"
            )));
        }
        let out_shape: Dims = shape
            .iter()
            .zip(&selected)
            .filter_map(|(&d, &s)| match (s, keepdims) {
                (false, _) => Some(d),
                (true, true) => Some(1),
                (true, false) => None,
            })
            .collect();
        let dtype = self.dtype();
        // (dtype the kernel runs in, dtype of the result)
        let (compute, out_dtype) = match op {
            ReduceOp::Sum | ReduceOp::Prod if dtype == DType::Bool => (DType::Int64, DType::Int64),
            ReduceOp::Sum | ReduceOp::Prod => (dtype, dtype),
            // NumPy averages float16 in float32 and rounds once.
            ReduceOp::Mean if dtype == DType::Float16 => (DType::Float32, dtype),
            ReduceOp::Mean if dtype.is_float() => (dtype, dtype),
            ReduceOp::Mean => (DType::Float64, DType::Float32),
            ReduceOp::Max | ReduceOp::Min if dtype == DType::Bool => (DType::Int64, DType::Bool),
            ReduceOp::Max | ReduceOp::Min => (dtype, dtype),
            ReduceOp::ArgMax | ReduceOp::ArgMin if dtype == DType::Bool => {
                (DType::Int64, DType::Int64)
            }
            ReduceOp::ArgMax | ReduceOp::ArgMin => (dtype, DType::Int64),
        };
        let kernel_op = if op == ReduceOp::Mean {
            ReduceOp::Sum
        } else {
            op
        };
        // Merge runs of adjacent kept or reduced axes (size-1 axes do not matter): a row-major
        // buffer reduces a run in one pass, and numpy's pairwise sum sees the same blocks.
        let mut groups: smallvec::SmallVec<[(usize, bool); 4]> = smallvec::SmallVec::new();
        for (&d, &s) in shape.iter().zip(&selected) {
            if d == 1 {
                continue;
            }
            match groups.last_mut() {
                Some((size, sel)) if *sel == s => *size *= d,
                _ => groups.push((d, s)),
            }
        }
        let x = self.clone();
        let placement = self.ctx().placement.clone();
        self.derive(out_shape, out_dtype, move || {
            let source = x.storage_as(compute)?;
            let mut current: Option<Storage> = None;
            let total: usize = groups.iter().map(|g| g.0).product();
            if !groups.iter().any(|g| g.1) {
                current = Some(source.reduce(kernel_op, total, 1, 1)?);
            }
            while let Some(pos) = groups.iter().rposition(|g| g.1) {
                let outer: usize = groups[..pos].iter().map(|g| g.0).product();
                let inner: usize = groups[pos + 1..].iter().map(|g| g.0).product();
                let len = groups[pos].0;
                let input: &Storage = current.as_ref().unwrap_or(&source);
                current = Some(input.reduce(kernel_op, outer, len, inner)?);
                groups.remove(pos);
            }
            let mut result = match current {
                Some(r) => r,
                None => source.reduce(kernel_op, total, 1, 1)?,
            };
            if op == ReduceOp::Mean {
                let divisor = scalar_storage(&placement, Scalar::Int(count as i64), compute)?;
                let n = result.len();
                result = result.binary(&[1], &divisor, &[0], &[n], BinaryOp::Div)?;
            }
            if result.dtype() != out_dtype {
                result = result.cast(out_dtype)?;
            }
            Ok(result)
        })
    }

    // ---- linear algebra ------------------------------------------------------------------

    fn matmul_dtype(&self, other: &Array) -> DType {
        match self.dtype().promote(other.dtype()) {
            DType::Bool => DType::Int64,
            d => d,
        }
    }

    /// numpy matmul: 1-D operands gain and lose a unit axis; leading (batch) axes broadcast.
    pub fn matmul(&self, other: &Array) -> Result<Array> {
        let _op = op_scope("matmul");
        self.check_same_device(other, "matmul")?;
        if self.ndim() == 0 || other.ndim() == 0 {
            return Err(RuntimeError::Value(
                "matmul: a 0-d operand has no matrix axes; use * to multiply by a scalar".into(),
            ));
        }
        let a_vec = self.ndim() == 1;
        let b_vec = other.ndim() == 1;
        let a_shape: Vec<usize> = if a_vec {
            vec![1, self.shape()[0]]
        } else {
            self.shape().to_vec()
        };
        let b_shape: Vec<usize> = if b_vec {
            vec![other.shape()[0], 1]
        } else {
            other.shape().to_vec()
        };
        let (out_shape, layout) = self.matmul_layout(other, &a_shape, &b_shape, a_vec, b_vec)?;
        self.matmul_with(other, out_shape, layout)
    }

    /// `self @ other` with the last two axes of `self` (`trans[0]`) and/or `other` (`trans[1]`)
    /// swapped, as a gradient needs: on the CPU the swapped operand is read in place by the GEMM
    /// instead of being copied (elsewhere it is swapped first). Both operands are at least 2-d.
    pub fn matmul_t(&self, other: &Array, trans: [bool; 2]) -> Result<Array> {
        let _op = op_scope("matmul");
        let swap = |x: &Array| -> Result<Array> {
            let n = x.ndim() as isize;
            let mut axes: Vec<isize> = (0..n).collect();
            axes.swap((n - 1) as usize, (n - 2) as usize);
            x.transpose(Some(&axes))
        };
        let host_float = |x: &Array| x.dtype().has_float_kernels() && !x.ctx().placement.is_cuda();
        if self.ndim() < 2
            || other.ndim() < 2
            || !host_float(self)
            || !host_float(other)
            || self.dtype() != other.dtype()
        {
            let a = if trans[0] { swap(self)? } else { self.clone() };
            let b = if trans[1] {
                swap(other)?
            } else {
                other.clone()
            };
            return a.matmul(&b);
        }
        self.check_same_device(other, "matmul")?;
        let logical = |x: &Array, t: bool| {
            let mut s = x.shape().to_vec();
            let n = s.len();
            if t {
                s.swap(n - 1, n - 2);
            }
            s
        };
        let (a_shape, b_shape) = (logical(self, trans[0]), logical(other, trans[1]));
        let (out_shape, mut layout) =
            self.matmul_layout(other, &a_shape, &b_shape, false, false)?;
        layout.trans = trans;
        self.matmul_with(other, out_shape, layout)
    }

    /// The output shape and batch layout of `a_shape @ b_shape` (both at least 2-d; `a_vec` and
    /// `b_vec` say a 1-d operand was widened and its unit axis leaves the output).
    fn matmul_layout(
        &self,
        other: &Array,
        a_shape: &[usize],
        b_shape: &[usize],
        a_vec: bool,
        b_vec: bool,
    ) -> Result<(Vec<usize>, MatmulLayout)> {
        let (a_batch, a_mat) = a_shape.split_at(a_shape.len() - 2);
        let (b_batch, b_mat) = b_shape.split_at(b_shape.len() - 2);
        let (m, k, k2, n) = (a_mat[0], a_mat[1], b_mat[0], b_mat[1]);
        if k != k2 {
            return Err(RuntimeError::Shape(format!(
                "matmul: shapes {} and {} are not aligned: {k} (last axis of the first) != {k2} ({} of the second)",
                shape_compact(self.shape()),
                shape_compact(other.shape()),
                if b_vec { "its only axis" } else { "second-to-last axis" }
            )));
        }
        let batch_shape = broadcast_shapes(a_batch, b_batch).map_err(|_| {
            RuntimeError::Shape(format!(
                "matmul: batch axes of shapes {} and {} do not broadcast",
                shape_compact(self.shape()),
                shape_compact(other.shape())
            ))
        })?;
        let mut out_shape = batch_shape.clone();
        if !a_vec {
            out_shape.push(m);
        }
        if !b_vec {
            out_shape.push(n);
        }
        let batch: usize = batch_shape.iter().product();
        let a_strides = broadcast_strides(a_batch, &batch_shape);
        let b_strides = broadcast_strides(b_batch, &batch_shape);
        let mut lhs_offsets = Vec::with_capacity(batch);
        let mut rhs_offsets = Vec::with_capacity(batch);
        let zeros = vec![0isize; batch_shape.len()];
        let signed = |s: &[usize]| s.iter().map(|&x| x as isize).collect::<Vec<_>>();
        crate::backend::cpu::kernels::walk2(
            &batch_shape,
            &signed(&a_strides),
            0,
            &zeros,
            0,
            |i, _| lhs_offsets.push(i * m * k),
        );
        crate::backend::cpu::kernels::walk2(
            &batch_shape,
            &signed(&b_strides),
            0,
            &zeros,
            0,
            |i, _| rhs_offsets.push(i * k * n),
        );
        let layout = MatmulLayout {
            batch,
            m,
            k,
            n,
            lhs_offsets,
            rhs_offsets,
            trans: [false, false],
        };
        Ok((out_shape, layout))
    }

    fn matmul_with(
        &self,
        other: &Array,
        out_shape: Vec<usize>,
        layout: MatmulLayout,
    ) -> Result<Array> {
        let dtype = self.matmul_dtype(other);
        let (x, y) = (self.clone(), other.clone());
        self.derive(out_shape, dtype, move || {
            if x.shares_buffer(&y) && x.dtype() == dtype {
                let guard = x.read();
                return guard.matmul(&guard, &layout);
            }
            let a = x.storage_as(dtype)?;
            let b = y.storage_as(dtype)?;
            a.matmul(&b, &layout)
        })
    }

    /// MXNet's `nd.dot`: the last axis of `self` with the first axis of `other`
    /// (1-D with 1-D is the inner product, a 0-d array; a 0-d operand multiplies elementwise).
    pub fn dot(&self, other: &Array) -> Result<Array> {
        let _op = op_scope("dot");
        self.check_same_device(other, "dot")?;
        if self.ndim() == 0 || other.ndim() == 0 {
            return Array::binary(BinaryOp::Mul, Operand::Array(self), Operand::Array(other));
        }
        let k = self.shape()[self.ndim() - 1];
        let k2 = other.shape()[0];
        if k != k2 {
            return Err(RuntimeError::Shape(format!(
                "dot: shapes {} and {} are not aligned: {k} (last axis of the first) != {k2} (first axis of the second)",
                shape_compact(self.shape()),
                shape_compact(other.shape())
            )));
        }
        let lead = &self.shape()[..self.ndim() - 1];
        let trail = &other.shape()[1..];
        let m: usize = lead.iter().product();
        let n: usize = trail.iter().product();
        let out_shape: Vec<usize> = lead.iter().chain(trail).copied().collect();
        let layout = MatmulLayout {
            batch: 1,
            m,
            k,
            n,
            lhs_offsets: vec![0],
            rhs_offsets: vec![0],
            trans: [false, false],
        };
        self.matmul_with(other, out_shape, layout)
    }

    // ---- shape ---------------------------------------------------------------------------

    /// A new shape over the same buffer (no copy); one axis may be -1.
    pub fn reshape(&self, shape: &[isize]) -> Result<Array> {
        let size = self.size();
        let spelled = || {
            let parts: Vec<String> = shape.iter().map(|d| d.to_string()).collect();
            if parts.len() == 1 {
                format!("({},)", parts[0])
            } else {
                format!("({})", parts.join(", "))
            }
        };
        let mut unknown = None;
        let mut known = 1usize;
        for (i, &d) in shape.iter().enumerate() {
            if d == -1 {
                if unknown.is_some() {
                    return Err(RuntimeError::Value(format!(
                        "reshape: can only specify one unknown dimension (-1), got {}",
                        spelled()
                    )));
                }
                unknown = Some(i);
            } else if d < 0 {
                return Err(RuntimeError::Value(format!(
                    "reshape: negative dimension {d} in {}; use -1 for the one unknown dimension",
                    spelled()
                )));
            } else {
                known = known.checked_mul(d as usize).ok_or_else(|| {
                    RuntimeError::Value(format!("reshape: shape {} is too large", spelled()))
                })?;
            }
        }
        let mismatch = || {
            RuntimeError::Shape(format!(
                "reshape: cannot reshape array of shape {} (size {size}) into shape {}",
                shape_tuple(self.shape()),
                spelled()
            ))
        };
        // Inline for up to 4 axes: a reshape makes no heap allocation beyond its view.
        let mut resolved: Dims = shape.iter().map(|&d| d.max(0) as usize).collect();
        if let Some(i) = unknown {
            if known == 0 || size % known != 0 {
                return Err(mismatch());
            }
            resolved[i] = size / known;
        } else if known != size {
            return Err(mismatch());
        }
        Ok(self.view_as(resolved))
    }

    /// Permutes the axes (reversed when `axes` is None) into a new buffer.
    pub fn transpose(&self, axes: Option<&[isize]>) -> Result<Array> {
        let _op = op_scope("transpose");
        let ndim = self.ndim();
        let perm: Vec<usize> = match axes {
            None => (0..ndim).rev().collect(),
            Some(list) => {
                if list.len() != ndim {
                    return Err(RuntimeError::Value(format!(
                        "transpose: axes don't match array: got {} axes for an array of dimension {ndim}",
                        list.len()
                    )));
                }
                let mut seen = vec![false; ndim];
                let mut perm = Vec::with_capacity(ndim);
                for &a in list {
                    let axis = normalize_axis(a, ndim, "transpose")?;
                    if seen[axis] {
                        return Err(RuntimeError::Value(format!(
                            "transpose: axis {a} repeated; give each axis once"
                        )));
                    }
                    seen[axis] = true;
                    perm.push(axis);
                }
                perm
            }
        };
        let strides = contiguous_strides(self.shape());
        let view = StridedView {
            offset: 0,
            shape: perm.iter().map(|&p| self.shape()[p]).collect(),
            strides: perm.iter().map(|&p| strides[p] as isize).collect(),
        };
        // Dims of one element have no stride that matters (PyTorch's contiguity rule).
        let moved: Vec<usize> = (perm.iter().copied())
            .filter(|&p| self.shape().get(p).is_some_and(|&n| n > 1))
            .collect();
        let reorders = moved.windows(2).any(|w| w[0] > w[1]);
        let x = self.clone();
        let out = self.derive(view.shape.clone(), self.dtype(), move || {
            x.read().gather(&view)
        })?;
        out.inner.strided.store(reorders, Ordering::Relaxed);
        Ok(out)
    }

    // ---- indexing ------------------------------------------------------------------------

    /// `x[...]`: basic indexing, a bool mask, or an integer array along the first axis. Always
    /// returns a new array.
    pub fn index(&self, idx: &[IndexItem]) -> Result<Array> {
        let _op = op_scope("index");
        if let [IndexItem::Array(index)] = idx {
            return self.index_by_array(index);
        }
        let view = basic_view(self.shape(), idx)?;
        let x = self.clone();
        self.derive(view.shape.clone(), self.dtype(), move || {
            x.read().gather(&view)
        })
    }

    fn index_by_array(&self, index: &Array) -> Result<Array> {
        self.check_same_device(index, "index")?;
        let positions = self.array_index_rows(index)?;
        let row: usize = self.shape()[1..].iter().product();
        let mut out_shape = if index.dtype() == DType::Bool {
            vec![positions.len()]
        } else {
            index.shape().to_vec()
        };
        let tail = if index.dtype() == DType::Bool {
            &self.shape()[index.ndim()..]
        } else {
            &self.shape()[1..]
        };
        out_shape.extend_from_slice(tail);
        let unit = if index.dtype() == DType::Bool {
            tail.iter().product()
        } else {
            row
        };
        let x = self.clone();
        self.derive(out_shape, self.dtype(), move || {
            let guard = x.read();
            let parts: Vec<Storage> = positions
                .iter()
                .map(|&p| {
                    guard.gather(&StridedView {
                        offset: p * unit,
                        shape: vec![unit],
                        strides: vec![1],
                    })
                })
                .collect::<Result<_>>()?;
            if parts.is_empty() {
                return guard.gather(&StridedView {
                    offset: 0,
                    shape: vec![0],
                    strides: vec![1],
                });
            }
            let refs: Vec<&Storage> = parts.iter().collect();
            Storage::concat(&refs, &vec![unit; refs.len()], 1)
        })
    }

    /// Row numbers an integer or bool index array selects (rows of the first axis for integers,
    /// of the masked leading axes for a mask), checked against the shape.
    pub(crate) fn array_index_rows(&self, index: &Array) -> Result<Vec<usize>> {
        let host = index.try_to_host()?;
        if let HostData::Bool(mask) = &host {
            let lead = &self.shape()[..index.ndim().min(self.ndim())];
            if index.ndim() > self.ndim() || lead != index.shape() {
                return Err(RuntimeError::Index(format!(
                    "boolean index did not match indexed array: the mask has shape {} but the array {}",
                    shape_tuple(index.shape()),
                    shape_tuple(self.shape())
                )));
            }
            return Ok(mask
                .iter()
                .enumerate()
                .filter(|(_, &b)| b)
                .map(|(i, _)| i)
                .collect());
        }
        if index.dtype().is_float() {
            return Err(RuntimeError::Index(
                "arrays used as indices must be of integer or bool type; convert with astype('int64')".into(),
            ));
        }
        if self.ndim() == 0 {
            return Err(RuntimeError::Index(
                "too many indices for array: array is 0-dimensional".into(),
            ));
        }
        let dim = self.shape()[0];
        host.to_f64_vec()
            .iter()
            .map(|&f| {
                let i = f as i64;
                let r = if i < 0 { i + dim as i64 } else { i };
                if r < 0 || r >= dim as i64 {
                    Err(RuntimeError::Index(format!(
                        "index {i} is out of bounds for axis 0 with size {dim}"
                    )))
                } else {
                    Ok(r as usize)
                }
            })
            .collect()
    }

    /// `x[...] = value`: writes into this array's buffer (identity kept). The value broadcasts to
    /// the selection and is converted to this array's dtype.
    pub fn set_index(&self, idx: &[IndexItem], value: Operand) -> Result<()> {
        let _op = op_scope("setitem");
        // With an index array the value broadcasts to the whole selection, (rows, *row shape),
        // as NumPy's `x[idx] = values` does; row i then takes the value's row i.
        let mut selection: Option<Vec<usize>> = None;
        let views: Vec<StridedView> = if let [IndexItem::Array(index)] = idx {
            self.check_same_device(index, "setitem")?;
            let rows = self.array_index_rows(index)?;
            let unit: usize = if index.dtype() == DType::Bool {
                self.shape()[index.ndim()..].iter().product()
            } else {
                self.shape()[1..].iter().product()
            };
            let tail = if index.dtype() == DType::Bool {
                &self.shape()[index.ndim()..]
            } else {
                &self.shape()[1..]
            };
            selection = Some(
                std::iter::once(rows.len())
                    .chain(tail.iter().copied())
                    .collect(),
            );
            rows.iter()
                .map(|&r| StridedView {
                    offset: r * unit,
                    shape: tail.to_vec(),
                    strides: contiguous_strides(tail)
                        .iter()
                        .map(|&s| s as isize)
                        .collect(),
                })
                .collect()
        } else {
            vec![basic_view(self.shape(), idx)?]
        };
        let Some(first) = views.first() else {
            return Ok(());
        };
        let target_shape = first.shape.clone();
        let dtype = self.dtype();
        // The value is either a scalar now or an array read in stream order.
        let (value, strides) = match value {
            Operand::Scalar(s) => (
                SetValue::Scalar(scalar_storage(&self.ctx().placement, s, dtype)?),
                vec![0; target_shape.len()],
            ),
            Operand::Array(v) => {
                self.check_same_device(v, "setitem")?;
                let whole = selection.as_deref().unwrap_or(&target_shape);
                let fits = broadcast_shapes(v.shape(), whole)
                    .map(|s| s == whole)
                    .unwrap_or(false);
                if !fits {
                    return Err(RuntimeError::Shape(match &selection {
                        Some(sel) => format!(
                            "shape mismatch: value array of shape {} could not be broadcast to indexing result of shape {}",
                            shape_compact(v.shape()),
                            shape_compact(sel)
                        ),
                        None => format!(
                            "could not broadcast input array from shape {} into shape {}",
                            shape_compact(v.shape()),
                            shape_compact(&target_shape)
                        ),
                    }));
                }
                (
                    SetValue::Array(v.clone()),
                    broadcast_strides(v.shape(), whole).to_vec(),
                )
            }
        };
        // Per selected row: where its part of the value starts, and the strides within it.
        let per_row = match (&selection, &value) {
            (Some(_), SetValue::Array(_)) => Some(strides[0]),
            _ => None,
        };
        let row_strides: Vec<usize> = match per_row {
            Some(_) => strides[1..].to_vec(),
            None => strides,
        };
        self.write_with(move |target| {
            let source = match value {
                SetValue::Scalar(scalar) => scalar,
                SetValue::Array(v) => {
                    // A private copy, taken before the write lock: the value may overlap the
                    // selection (x[1:] = x[:-1]).
                    let guard = v.read();
                    if guard.dtype() == dtype {
                        guard.gather(&full_view(v.shape()))?
                    } else {
                        guard.cast(dtype)?
                    }
                }
            };
            let mut storage = target.inner.buffer().write();
            for (i, view) in views.iter().enumerate() {
                match per_row {
                    Some(step) => {
                        let row = source.gather(&StridedView {
                            offset: i * step,
                            shape: view.shape.clone(),
                            strides: row_strides.iter().map(|&s| s as isize).collect(),
                        })?;
                        let dense: Vec<usize> = contiguous_strides(&view.shape).to_vec();
                        storage.scatter(view, &row, &dense)?;
                    }
                    None => storage.scatter(view, &source, &row_strides)?,
                }
            }
            Ok(())
        })
    }

    // ---- joining -------------------------------------------------------------------------

    pub fn concat(arrays: &[Array], axis: isize) -> Result<Array> {
        let _op = op_scope("concat");
        concat_impl(arrays, axis, "concat")
    }

    /// Joins equal-shaped arrays along a new axis.
    pub fn stack(arrays: &[Array], axis: isize) -> Result<Array> {
        let _op = op_scope("stack");
        let Some(first) = arrays.first() else {
            return Err(RuntimeError::Value(
                "stack: needs at least one array".into(),
            ));
        };
        for (i, a) in arrays.iter().enumerate().skip(1) {
            first.check_same_device(a, "stack")?;
            if a.shape() != first.shape() {
                return Err(RuntimeError::Shape(format!(
                    "stack: all input arrays must have the same shape, but the array at index 0 has shape {} and the array at index {i} has shape {}",
                    shape_tuple(first.shape()),
                    shape_tuple(a.shape())
                )));
            }
        }
        let at = normalize_axis(axis, first.ndim() + 1, "stack")?;
        let expanded: Vec<Array> = arrays
            .iter()
            .map(|a| {
                let mut s = a.shape().to_vec();
                s.insert(at, 1);
                a.view_as(s)
            })
            .collect();
        concat_impl(&expanded, at as isize, "stack")
    }

    /// Whether `patches` and `patches_adjoint` run here: a 4-d float array (on the host, or a
    /// CUDA GPU through kernels/window.cu). Elsewhere callers compose the windows from strided
    /// slices.
    pub fn has_patches(&self) -> bool {
        self.dtype().has_float_kernels() && self.ndim() == 4
    }

    /// im2col: every window of `p` over axes 2 and 3 of this (N, C, H, W) array, as
    /// (N, C, kh*kw, Ho, Wo), `p.fill` where a window reaches into the padding. See `has_patches`.
    pub fn patches(&self, p: &Patches) -> Result<Array> {
        let &[n, c, h, w] = self.shape() else {
            return Err(patches_refused("patches", self));
        };
        if !self.has_patches() {
            return Err(patches_refused("patches", self));
        }
        let shape = vec![n, c, p.kernel[0] * p.kernel[1], p.out[0], p.out[1]];
        let (x, p) = (self.clone(), *p);
        self.derive(shape, self.dtype(), move || match &*x.read() {
            Storage::Cpu(s) => s
                .patches([h, w], &p)
                .ok_or_else(|| patches_refused("patches", &x))?
                .map(Storage::Cpu),
            Storage::Cuda(s) => s.patches([h, w], &p).map(Storage::Cuda),
        })
    }

    /// The adjoint of `patches` (its gradient): this (N, C, kh*kw, Ho, Wo) array summed back
    /// onto (N, C, h, w).
    pub fn patches_adjoint(&self, p: &Patches, hw: [usize; 2]) -> Result<Array> {
        let &[n, c, kk, ho, wo] = self.shape() else {
            return Err(patches_refused("patches_adjoint", self));
        };
        if kk != p.kernel[0] * p.kernel[1] || [ho, wo] != p.out || !self.dtype().has_float_kernels()
        {
            return Err(patches_refused("patches_adjoint", self));
        }
        let (g, p) = (self.clone(), *p);
        self.derive(vec![n, c, hw[0], hw[1]], self.dtype(), move || {
            match &*g.read() {
                Storage::Cpu(s) => s
                    .patches_adjoint(hw, &p)
                    .map(Storage::Cpu)
                    .ok_or_else(|| patches_refused("patches_adjoint", &g)),
                Storage::Cuda(s) => s.patches_adjoint(hw, &p).map(Storage::Cuda),
            }
        })
    }

    /// Whether `patches_cols` runs here: a 4-d float array on any device.
    pub fn has_patches_cols(&self) -> bool {
        self.has_patches()
    }

    /// Batch-folded im2col of this (N, C, H, W) array: (C*kh*kw, N*Ho*Wo), row (c, tap), column
    /// (n, oh, ow), so a convolution is one GEMM over the whole batch. See `has_patches_cols`.
    pub fn patches_cols(&self, p: &Patches) -> Result<Array> {
        let &[n, c, h, w] = self.shape() else {
            return Err(patches_refused("patches_cols", self));
        };
        if !self.has_patches_cols() {
            return Err(patches_refused("patches_cols", self));
        }
        let shape = vec![c * p.kernel[0] * p.kernel[1], n * p.out[0] * p.out[1]];
        let (x, p) = (self.clone(), *p);
        self.derive(shape, self.dtype(), move || match &*x.read() {
            Storage::Cpu(s) => s
                .patches_cols([n, c, h, w], &p)
                .ok_or_else(|| patches_refused("patches_cols", &x))?
                .map(Storage::Cpu),
            Storage::Cuda(s) => s.patches_cols([n, c, h, w], &p).map(Storage::Cuda),
        })
    }

    /// This (O, N*L) array (a batch-folded convolution's product) as (N, O, L), plus `bias`
    /// (O values, this array's dtype and device) per channel when given, then ReLU when `relu`:
    /// one pass for what a transpose, a broadcast add and an activation would do in three. Float
    /// arrays only.
    pub fn cols_to_batch(&self, n: usize, bias: Option<&Array>, relu: bool) -> Result<Array> {
        let &[o, nl] = self.shape() else {
            return Err(patches_refused("cols_to_batch", self));
        };
        let fits =
            |b: &Array| b.size() == o && b.dtype() == self.dtype() && b.device() == self.device();
        if n == 0 || nl % n != 0 || !self.dtype().has_float_kernels() || !bias.is_none_or(fits) {
            return Err(patches_refused("cols_to_batch", self));
        }
        let onl = [o, n, nl / n];
        let (y, b) = (self.clone(), bias.cloned());
        self.derive(onl.to_vec(), self.dtype(), move || {
            let yg = y.read();
            let bg = b.as_ref().map(|b| b.read());
            match (&*yg, bg.as_deref()) {
                (Storage::Cpu(ys), None) => ys.cols_to_batch(onl, None, relu),
                (Storage::Cpu(ys), Some(Storage::Cpu(bs))) => ys.cols_to_batch(onl, Some(bs), relu),
                (Storage::Cuda(ys), None) => {
                    return ys.cols_to_batch(onl, None, relu).map(Storage::Cuda)
                }
                (Storage::Cuda(ys), Some(Storage::Cuda(bs))) => {
                    return ys.cols_to_batch(onl, Some(bs), relu).map(Storage::Cuda)
                }
                _ => None,
            }
            .ok_or_else(|| patches_refused("cols_to_batch", &y))?
            .map(Storage::Cpu)
        })
    }

    /// The way back of `cols_to_batch`: this (N, O, ...) gradient as (O, N*L), L the product of
    /// the trailing axes, each value times `mask > 0` (1 or 0) when `mask` (the fused ReLU's
    /// output, same shape, dtype and device) is given. Float arrays only.
    pub fn batch_to_cols(&self, mask: Option<&Array>) -> Result<Array> {
        let _op = op_scope("batch_to_cols");
        let (n, o) = match self.shape() {
            [n, o, ..] => (*n, *o),
            _ => return Err(patches_refused("batch_to_cols", self)),
        };
        let total = self.size();
        let fits = |m: &Array| {
            m.shape() == self.shape() && m.dtype() == self.dtype() && m.device() == self.device()
        };
        if n == 0 || o == 0 || !self.dtype().has_float_kernels() || !mask.is_none_or(fits) {
            return Err(patches_refused("batch_to_cols", self));
        }
        let onl = [o, n, total / (n * o)];
        let (g, m) = (self.clone(), mask.cloned());
        self.derive(vec![o, total / o], self.dtype(), move || {
            let gg = g.read();
            let mg = m.as_ref().map(|m| m.read());
            match (&*gg, mg.as_deref()) {
                (Storage::Cpu(gs), None) => gs.batch_to_cols(onl, None),
                (Storage::Cpu(gs), Some(Storage::Cpu(ms))) => gs.batch_to_cols(onl, Some(ms)),
                (Storage::Cuda(gs), None) => return gs.batch_to_cols(onl, None).map(Storage::Cuda),
                (Storage::Cuda(gs), Some(Storage::Cuda(ms))) => {
                    return gs.batch_to_cols(onl, Some(ms)).map(Storage::Cuda)
                }
                _ => None,
            }
            .ok_or_else(|| patches_refused("batch_to_cols", &g))?
            .map(Storage::Cpu)
        })
    }

    /// The adjoint of `patches_cols` (its gradient): this (C*kh*kw, N*Ho*Wo) array summed back
    /// onto an (N, C, H, W) array of shape `nchw`.
    pub fn patches_cols_adjoint(&self, p: &Patches, nchw: [usize; 4]) -> Result<Array> {
        let [n, c, _, _] = nchw;
        let want = [c * p.kernel[0] * p.kernel[1], n * p.out[0] * p.out[1]];
        if self.shape() != want || !self.dtype().has_float_kernels() {
            return Err(patches_refused("patches_cols_adjoint", self));
        }
        let (g, p) = (self.clone(), *p);
        self.derive(nchw.to_vec(), self.dtype(), move || match &*g.read() {
            Storage::Cpu(s) => s
                .patches_cols_adjoint(nchw, &p)
                .map(Storage::Cpu)
                .ok_or_else(|| patches_refused("patches_cols_adjoint", &g)),
            Storage::Cuda(s) => s.patches_cols_adjoint(nchw, &p).map(Storage::Cuda),
        })
    }

    /// Whether `pool` and `pool_grad` read windows in place here: a 4-d float array on the
    /// host (cpu(0) or a simulated GPU) or a CUDA GPU (kernels/pool.cu).
    pub fn has_pool(&self) -> bool {
        self.has_patches()
    }

    /// Max or average pooling of this (N, C, H, W) array over the windows of `p` (padding
    /// before per `p.pad`, `p.fill` where a max window holds no input), as (N, C, Ho, Wo).
    pub fn pool(&self, p: &Patches, kind: PoolKind) -> Result<Array> {
        let _op = op_scope("pool");
        let &[n, c, h, w] = self.shape() else {
            return Err(patches_refused("pool", self));
        };
        if !self.has_pool() {
            return Err(patches_refused("pool", self));
        }
        let (x, p) = (self.clone(), *p);
        self.derive(
            vec![n, c, p.out[0], p.out[1]],
            self.dtype(),
            move || match &*x.read() {
                Storage::Cpu(s) => s
                    .pool([h, w], &p, kind)
                    .ok_or_else(|| patches_refused("pool", &x))?
                    .map(Storage::Cpu),
                Storage::Cuda(s) => s.pool([h, w], &p, kind).map(Storage::Cuda),
            },
        )
    }

    /// The gradient of `pool` with respect to this input, from the output gradient `g`.
    pub fn pool_grad(&self, g: &Array, p: &Patches, kind: PoolKind) -> Result<Array> {
        let _op = op_scope("pool_backward");
        let &[n, c, h, w] = self.shape() else {
            return Err(patches_refused("pool_backward", self));
        };
        if !self.has_pool() || g.shape() != [n, c, p.out[0], p.out[1]] || g.dtype() != self.dtype()
        {
            return Err(patches_refused("pool_backward", self));
        }
        self.check_same_device(g, "pool_backward")?;
        let (x, g, p) = (self.clone(), g.clone(), *p);
        self.derive(self.shape().to_vec(), self.dtype(), move || {
            match (&*x.read(), &*g.read()) {
                (Storage::Cpu(s), Storage::Cpu(gs)) => s
                    .pool_grad(gs, [h, w], &p, kind)
                    .ok_or_else(|| patches_refused("pool_backward", &x))?
                    .map(Storage::Cpu),
                (Storage::Cuda(s), Storage::Cuda(gs)) => {
                    s.pool_grad(gs, [h, w], &p, kind).map(Storage::Cuda)
                }
                _ => Err(patches_refused("pool_backward", &x)),
            }
        })
    }

    // ---- conversions ---------------------------------------------------------------------

    /// A converted copy (always new memory, like numpy's astype).
    pub fn astype(&self, dtype: DType) -> Result<Array> {
        let _op = op_scope("astype");
        let x = self.clone();
        self.derive(self.shape().to_vec(), dtype, move || {
            let guard = x.read();
            if guard.dtype() == dtype {
                guard.gather(&full_view(x.shape()))
            } else {
                guard.cast(dtype)
            }
        })
    }

    /// Limits values to [min, max], keeping the dtype.
    pub fn clip(&self, min: Option<f64>, max: Option<f64>) -> Result<Array> {
        let _op = op_scope("clip");
        if min.is_none() && max.is_none() {
            return Err(RuntimeError::Value(
                "clip: give at least one of min and max".into(),
            ));
        }
        if let (Some(lo), Some(hi)) = (min, max) {
            if lo > hi {
                return Err(RuntimeError::Value(format!(
                    "clip: min ({lo}) is greater than max ({hi})"
                )));
            }
        }
        let dtype = self.dtype();
        let shape = self.shape().to_vec();
        let n = self.size();
        let x = self.clone();
        let placement = self.ctx().placement.clone();
        self.derive(shape, dtype, move || {
            let mut current = {
                let guard = x.read();
                guard.gather(&full_view(x.shape()))?
            };
            for (bound, op) in [(min, BinaryOp::Maximum), (max, BinaryOp::Minimum)] {
                if let Some(b) = bound {
                    let s = scalar_storage(&placement, Scalar::Float(b), dtype)?;
                    let op = if dtype == DType::Bool {
                        bool_op(op)
                    } else {
                        op
                    };
                    current = current.binary(&[1], &s, &[0], &[n], op)?;
                }
            }
            Ok(current)
        })
    }

    /// Vector norms over `axes` (all when None): ord None or 2 is the L2 / Frobenius norm; 1, inf,
    /// -inf, 0 and other p > 0 are the usual vector norms. The result is floating point.
    pub fn norm(&self, ord: Option<f64>, axes: Option<&[isize]>, keepdims: bool) -> Result<Array> {
        let _op = op_scope("norm");
        let float = self.dtype().to_float();
        let x = if self.dtype() == float {
            self.clone()
        } else {
            self.astype(float)?
        };
        let single_axis = axes.map_or(self.ndim() <= 1, |a| a.len() == 1);
        let p = match ord {
            // The whole array: one pass (`Storage::norm2`) instead of square, sum, sqrt.
            None if axes.is_none() => {
                let shape: Dims = if keepdims {
                    std::iter::repeat_n(1, x.ndim()).collect()
                } else {
                    Dims::new()
                };
                let source = x.clone();
                return x.derive(shape, float, move || source.read().norm2());
            }
            None => {
                return x
                    .unary(UnaryOp::Square)?
                    .reduce(ReduceOp::Sum, axes, keepdims)?
                    .unary(UnaryOp::Sqrt)
            }
            Some(p) => p,
        };
        if !single_axis {
            return Err(RuntimeError::Value(format!(
                "norm: ord={p} needs a 1-D array or a single axis; over several axes only the Frobenius norm (ord=None) is supported"
            )));
        }
        let abs = x.unary(UnaryOp::Abs)?;
        if p == f64::INFINITY {
            abs.reduce(ReduceOp::Max, axes, keepdims)
        } else if p == f64::NEG_INFINITY {
            abs.reduce(ReduceOp::Min, axes, keepdims)
        } else if p == 0.0 {
            let nonzero = Array::binary(
                BinaryOp::Ne,
                Operand::Array(&x),
                Operand::Scalar(Scalar::Int(0)),
            )?;
            nonzero.astype(float)?.reduce(ReduceOp::Sum, axes, keepdims)
        } else if p == 1.0 {
            abs.reduce(ReduceOp::Sum, axes, keepdims)
        } else if p == 2.0 {
            x.unary(UnaryOp::Square)?
                .reduce(ReduceOp::Sum, axes, keepdims)?
                .unary(UnaryOp::Sqrt)
        } else if p > 0.0 && p.is_finite() {
            let powered = Array::binary(
                BinaryOp::Pow,
                Operand::Array(&abs),
                Operand::Scalar(Scalar::Float(p)),
            )?;
            let summed = powered.reduce(ReduceOp::Sum, axes, keepdims)?;
            Array::binary(
                BinaryOp::Pow,
                Operand::Array(&summed),
                Operand::Scalar(Scalar::Float(1.0 / p)),
            )
        } else {
            Err(RuntimeError::Value(format!(
                "norm: ord={p} is not supported; use None, 1, 2, inf, -inf, 0 or a positive p"
            )))
        }
    }
}

/// binary() returns early when both operands are scalars; this only completes the match.
fn two_scalars() -> RuntimeError {
    RuntimeError::Value("binary op: needs at least one array operand".into())
}

/// Either the array's own locked buffer or a converted temporary.
enum StorageRef<'a> {
    Borrowed(RwLockReadGuard<'a, Storage>),
    Owned(Storage),
}

impl std::ops::Deref for StorageRef<'_> {
    type Target = Storage;
    fn deref(&self) -> &Storage {
        match self {
            StorageRef::Borrowed(g) => g,
            StorageRef::Owned(s) => s,
        }
    }
}

/// The whole of a row-major buffer of `shape`.
fn full_view(shape: &[usize]) -> StridedView {
    StridedView {
        offset: 0,
        shape: shape.to_vec(),
        strides: contiguous_strides(shape)
            .iter()
            .map(|&s| s as isize)
            .collect(),
    }
}

fn concat_impl(arrays: &[Array], axis: isize, op: &str) -> Result<Array> {
    let Some(first) = arrays.first() else {
        return Err(RuntimeError::Value(format!(
            "{op}: needs at least one array"
        )));
    };
    let ndim = first.ndim();
    if ndim == 0 {
        return Err(RuntimeError::Value(format!(
            "{op}: zero-dimensional arrays cannot be concatenated; use stack"
        )));
    }
    let at = normalize_axis(axis, ndim, op)?;
    let mut dtype = first.dtype();
    let mut out_shape = first.shape().to_vec();
    for (i, a) in arrays.iter().enumerate().skip(1) {
        first.check_same_device(a, op)?;
        if a.ndim() != ndim {
            return Err(RuntimeError::Shape(format!(
                "{op}: all the input arrays must have the same number of dimensions, but the array at index 0 has {ndim} dimension(s) and the array at index {i} has {} dimension(s)",
                a.ndim()
            )));
        }
        for d in 0..ndim {
            if d != at && a.shape()[d] != first.shape()[d] {
                return Err(RuntimeError::Shape(format!(
                    "{op}: all the input array dimensions except for the concatenation axis must match exactly, but along dimension {d}, the array at index 0 has size {} and the array at index {i} has size {}",
                    first.shape()[d],
                    a.shape()[d]
                )));
            }
        }
        out_shape[at] += a.shape()[at];
        dtype = dtype.promote(a.dtype());
    }
    let outer: usize = first.shape()[..at].iter().product();
    let chunks: Vec<usize> = arrays
        .iter()
        .map(|a| a.shape()[at..].iter().product())
        .collect();
    let arrays = arrays.to_vec();
    first.derive(out_shape, dtype, move || {
        let parts: Vec<StorageRef<'_>> = arrays
            .iter()
            .map(|a| a.storage_as(dtype))
            .collect::<Result<_>>()?;
        let refs: Vec<&Storage> = parts.iter().map(|p| &**p).collect();
        Storage::concat(&refs, &chunks, outer)
    })
}

/// Little-endian bytes of `storage`, `chunk_bytes` at a time (one reused buffer).
fn cpu_le_chunks<E>(
    storage: &CpuStorage,
    chunk_bytes: usize,
    sink: &mut dyn FnMut(&[u8]) -> std::result::Result<(), E>,
) -> std::result::Result<(), E> {
    fn chunks<T: Copy, const N: usize, E>(
        v: &[T],
        chunk_bytes: usize,
        bytes: fn(T) -> [u8; N],
        sink: &mut dyn FnMut(&[u8]) -> std::result::Result<(), E>,
    ) -> std::result::Result<(), E> {
        let per_chunk = (chunk_bytes / N).max(1);
        let mut buf = Vec::with_capacity(per_chunk.min(v.len()) * N);
        for part in v.chunks(per_chunk) {
            buf.clear();
            for &x in part {
                buf.extend_from_slice(&bytes(x));
            }
            sink(&buf)?;
        }
        Ok(())
    }
    match storage {
        CpuStorage::F32(v) => chunks(v, chunk_bytes, f32::to_le_bytes, sink),
        CpuStorage::F64(v) => chunks(v, chunk_bytes, f64::to_le_bytes, sink),
        CpuStorage::I32(v) => chunks(v, chunk_bytes, i32::to_le_bytes, sink),
        CpuStorage::I64(v) => chunks(v, chunk_bytes, i64::to_le_bytes, sink),
        CpuStorage::Bool(v) => chunks(v, chunk_bytes, |b: bool| [u8::from(b)], sink),
        CpuStorage::F16(v) => chunks(v, chunk_bytes, crate::vocab::f16::to_le_bytes, sink),
        CpuStorage::BF16(v) => chunks(v, chunk_bytes, crate::vocab::bf16::to_le_bytes, sink),
        CpuStorage::I8(v) => chunks(v, chunk_bytes, i8::to_le_bytes, sink),
        CpuStorage::I16(v) => chunks(v, chunk_bytes, i16::to_le_bytes, sink),
        CpuStorage::U8(v) => chunks(v, chunk_bytes, u8::to_le_bytes, sink),
        CpuStorage::U16(v) => chunks(v, chunk_bytes, u16::to_le_bytes, sink),
        CpuStorage::U32(v) => chunks(v, chunk_bytes, u32::to_le_bytes, sink),
        CpuStorage::U64(v) => chunks(v, chunk_bytes, u64::to_le_bytes, sink),
    }
}

/// `patches` reached with an array it does not handle: callers check `has_patches` first.
fn patches_refused(op: &str, a: &Array) -> RuntimeError {
    RuntimeError::Value(format!(
        "internal error: {op} of a {} array of shape {} on {}; please report it",
        a.dtype(),
        shape_tuple(a.shape()),
        a.device()
    ))
}

mod batch_norm;
mod conv_grad;
pub mod conv_winograd;
mod select;
pub use batch_norm::BatchNormOutputs;
pub use select::check_positions;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runtime::RuntimeConfig;

    /// Elements as exact bit patterns (NaN compares equal to the same NaN), with the dtype.
    fn bits(a: &Array) -> (DType, Vec<u64>) {
        let raw = match a.to_host() {
            HostData::F32(v) => v.iter().map(|x| u64::from(x.to_bits())).collect(),
            HostData::F64(v) => v.iter().map(|x| x.to_bits()).collect(),
            HostData::I32(v) => v.iter().map(|&x| x as u64).collect(),
            HostData::I64(v) => v.iter().map(|&x| x as u64).collect(),
            HostData::Bool(v) => v.iter().map(|&x| u64::from(x)).collect(),
            other => other.to_f64_vec().iter().map(|x| x.to_bits()).collect(),
        };
        (a.dtype(), raw)
    }

    /// An outcome comparable across the two paths: the array's shape and bits, or the error.
    fn outcome(
        result: Result<Array>,
    ) -> std::result::Result<(Vec<usize>, DType, Vec<u64>), String> {
        result
            .map(|a| {
                let (dtype, raw) = bits(&a);
                (a.shape().to_vec(), dtype, raw)
            })
            .map_err(|e| format!("{}: {e}", e.ename()))
    }

    fn assert_paths_agree(op: BinaryOp, lhs: Operand, rhs: Operand, what: &str) {
        let fast = outcome(Array::binary(op, lhs, rhs));
        let general = outcome(Array::binary_general(op, lhs, rhs));
        assert_eq!(fast, general, "{} on {what}", op.name());
    }

    /// Small arrays of every dtype, with the awkward values: NaN, infinities, -0.0, zero
    /// divisors, negatives for floor division and modulo, integer extremes.
    fn samples(rt: &Runtime, shape: &[usize]) -> Vec<Array> {
        let n: usize = shape.iter().product();
        let pool = [
            1.5,
            -2.0,
            0.0,
            -0.0,
            f64::NAN,
            f64::INFINITY,
            -7.0,
            3.0,
            2147483647.0,
            1e300,
        ];
        let floats: Vec<f64> = (0..n).map(|i| pool[i % pool.len()]).collect();
        let ints: Vec<f64> = (0..n).map(|i| [3.0, -7.0, 0.0, 2.0, -1.0][i % 5]).collect();
        let cpu = Device::cpu(0);
        let make = |data: &[f64], dtype| rt.from_f64(data.to_vec(), shape, dtype, cpu).unwrap();
        vec![
            make(&floats, DType::Float32),
            make(&floats, DType::Float64),
            make(&ints, DType::Int32),
            make(&ints, DType::Int64),
            make(&ints, DType::Bool),
        ]
    }

    #[test]
    fn direct_binary_matches_the_general_path() {
        let rt = Runtime::new(RuntimeConfig::default());
        let scalars = [
            Scalar::Int(2),
            Scalar::Int(0),
            Scalar::Int(-3),
            Scalar::Int(1 << 40),
            Scalar::Float(0.5),
            Scalar::Float(f64::NAN),
            Scalar::Bool(true),
        ];
        for shape in [&[3][..], &[], &[2, 3], &[0], &[1, 1]] {
            let arrays = samples(&rt, shape);
            let others = samples(&rt, shape);
            for op in BinaryOp::ALL {
                for a in &arrays {
                    // Same shape: same dtype (direct) and mixed dtypes (general either way).
                    for b in &others {
                        let what = format!("{shape:?} {} and {}", a.dtype(), b.dtype());
                        assert_paths_agree(op, Operand::Array(a), Operand::Array(b), &what);
                    }
                    // One buffer on both sides.
                    let what = format!("{shape:?} {} with itself", a.dtype());
                    assert_paths_agree(op, Operand::Array(a), Operand::Array(a), &what);
                    for s in scalars {
                        let what = format!("{shape:?} {} and {s:?}", a.dtype());
                        assert_paths_agree(op, Operand::Array(a), Operand::Scalar(s), &what);
                        assert_paths_agree(op, Operand::Scalar(s), Operand::Array(a), &what);
                    }
                }
            }
        }
    }

    #[test]
    fn direct_binary_leaves_broadcasting_and_errors_to_the_general_path() {
        let rt = Runtime::new(RuntimeConfig::default());
        let row = samples(&rt, &[3]);
        let grid = samples(&rt, &[2, 3]);
        let wrong = samples(&rt, &[4]);
        for op in [BinaryOp::Add, BinaryOp::Div, BinaryOp::And, BinaryOp::Lt] {
            for (a, b) in row.iter().zip(&grid) {
                assert_paths_agree(op, Operand::Array(a), Operand::Array(b), "broadcast");
                assert_paths_agree(op, Operand::Array(b), Operand::Array(a), "broadcast");
            }
            for (a, b) in row.iter().zip(&wrong) {
                assert_paths_agree(op, Operand::Array(a), Operand::Array(b), "mismatch");
            }
        }
        let floats = &row[0];
        let err = Array::binary(
            BinaryOp::And,
            Operand::Array(floats),
            Operand::Array(floats),
        )
        .unwrap_err();
        assert_eq!(
            err.to_string(),
            "bitwise_and: not defined for float32 operands; it takes bool or integer arrays (compare first, e.g. (x > 0) & (y > 0))"
        );
        let err = Array::binary(
            BinaryOp::Add,
            Operand::Array(&row[0]),
            Operand::Array(&wrong[0]),
        )
        .unwrap_err();
        assert_eq!(
            err.to_string(),
            "operands could not be broadcast together with shapes (3,) (4,)"
        );
    }

    #[test]
    fn direct_binary_is_charged_and_released() {
        let rt = Runtime::new(RuntimeConfig::default());
        let a = rt.full(&[3], 1.0, DType::Float32, Device::cpu(0)).unwrap();
        let ctx = rt.ctx(Device::cpu(0)).unwrap();
        let (used, live) = (ctx.ledger.used(), ctx.ledger.live());
        let c = Array::binary(BinaryOp::Add, Operand::Array(&a), Operand::Array(&a)).unwrap();
        assert_eq!(ctx.ledger.used(), used + 12);
        assert_eq!(ctx.ledger.live(), live + 1);
        drop(c);
        assert_eq!((ctx.ledger.used(), ctx.ledger.live()), (used, live));
    }

    #[test]
    fn direct_reduce_matches_the_general_path() {
        let rt = Runtime::new(RuntimeConfig::default());
        let ops = [
            ReduceOp::Sum,
            ReduceOp::Prod,
            ReduceOp::Max,
            ReduceOp::Min,
            ReduceOp::Mean,
            ReduceOp::ArgMax,
            ReduceOp::ArgMin,
        ];
        for shape in [&[3][..], &[], &[2, 3], &[0], &[1, 1], &[0, 3], &[200]] {
            for a in samples(&rt, shape) {
                for op in ops {
                    for keepdims in [false, true] {
                        let fast = outcome(a.reduce(op, None, keepdims));
                        let general = outcome(a.reduce_general(op, None, keepdims));
                        let what = format!("{} of {shape:?} {}", op.name(), a.dtype());
                        assert_eq!(fast, general, "{what} keepdims={keepdims}");
                    }
                }
            }
        }
    }

    #[test]
    fn reshape_views_keep_the_values_and_the_errors() {
        let rt = Runtime::new(RuntimeConfig::default());
        let a = rt
            .from_f64(
                (0..6).map(f64::from).collect(),
                &[2, 3],
                DType::Int64,
                Device::cpu(0),
            )
            .unwrap();
        let v = a.reshape(&[3, -1]).unwrap();
        assert_eq!(v.shape(), &[3, 2]);
        assert!(v.shares_buffer(&a));
        assert_eq!(v.to_host().to_f64_vec(), vec![0., 1., 2., 3., 4., 5.]);
        let long = a.reshape(&[1, 1, 1, 1, 6, 1]).unwrap();
        assert_eq!(long.shape(), &[1, 1, 1, 1, 6, 1]);
        assert_eq!(
            a.reshape(&[4, -1]).unwrap_err().to_string(),
            "reshape: cannot reshape array of shape (2, 3) (size 6) into shape (4, -1)"
        );
    }

    #[test]
    fn broadcast_strides_for_every_kind_of_axis() {
        let cases: &[(&[usize], &[usize], &[usize])] = &[
            (&[3], &[3], &[1]),
            (&[], &[2, 3], &[0, 0]),
            (&[1, 3], &[4, 3], &[0, 1]),
            (&[4, 1], &[4, 3], &[1, 0]),
            (&[2, 1, 5], &[7, 2, 6, 5], &[0, 5, 0, 1]),
            (&[0, 3], &[0, 3], &[3, 1]),
        ];
        for &(shape, out, want) in cases {
            assert_eq!(
                broadcast_strides(shape, out).as_slice(),
                want,
                "{shape:?} -> {out:?}"
            );
        }
    }
}
