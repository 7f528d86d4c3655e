//! Devices, arrays, dtypes and op dispatch.
//!
//! - [`Runtime`] is one session's device table: a memory ledger and a random generator per device.
//!   It is a cheap `Clone` handle and is never process-global, so tests can run many sessions.
//! - [`Array`] ops check devices, shapes and dtypes before any work, then call the primitive ops of
//!   the backend that holds the data (`crate::backend`).
//!
//! Simulated GPUs run their work asynchronously, one ordered queue per device
//! (`crate::backend::sim`); `engine` holds what each device brings to an op and the transfer
//! ledger. ARCHITECTURE.md ("Devices and the engine") says how work is ordered and where it
//! synchronises.
//!
//! Without simulated GPUs, the GPUs are the machine's CUDA devices (`crate::backend::cuda`):
//! their storage is `Storage::Cuda`, made through the device's `Placement`, and their work is
//! asynchronous on each card's CUDA stream (so the engine gives them no `Stream` of its own).
//! A machine without a driver has none, and nothing else changes.
pub mod array;
pub mod engine;
pub mod index;
pub mod load_file;
pub mod memory;
pub mod operand;
pub mod random;
pub mod save_file;
pub mod shape;
pub mod timeline;

// The shared vocabulary (`crate::vocab`) is part of the runtime's API: layers above name it here.
pub use crate::vocab::{
    bf16, f16, BinaryOp, DType, Device, DeviceKind, FusedExpr, HostData, Patches, PoolKind,
    ReduceOp, Result, RuntimeError, Scalar, UnaryOp,
};
pub use crate::vocab::{device, dtype, error, host, ops};
pub use array::{binary_result_dtype, check_positions, Array};
pub use engine::{TransferKind, TransferRecord};
pub use operand::{IndexItem, Operand};

use crate::backend::cuda::{self, CudaDevice, CudaStorage};
use crate::backend::sim::Stream;
use crate::backend::{BackendStorage, CpuStorage, Placement, Storage};
use engine::{DeviceCtx, TransferLog};
use memory::{Budget, DeviceLedger};
use random::DeviceRng;
use shape::{checked_numel, shape_tuple};
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex};

/// Which GEMM computes large float products on the CPU: the system OpenBLAS when it is installed,
/// else the `gemm` crate (one line, for `devarray --version`). Loads OpenBLAS if it is not yet.
pub fn cpu_gemm_info() -> String {
    crate::backend::cpu::gemm_info()
}

/// Runs `f` with `flag` as the interrupt flag that CPU kernels on this thread check between
/// blocks (a session lends its flag for the length of an evaluation).
pub fn interruptible<R>(flag: &Arc<AtomicBool>, f: impl FnOnce() -> R) -> R {
    crate::backend::cpu::cancel::interruptible(flag, f)
}

/// Kernel threads of each simulated GPU: every core. A GPU working alone (one-GPU training,
/// most programs) then runs at the machine's full speed; GPUs busy at the same time share the
/// cores through the OS scheduler, so their work overlaps and the total is the same as with
/// the cores split among them. The count is fixed per process, never chosen per job, because
/// kernels split their work by it (`rayon::current_num_threads`): results never depend on how
/// the GPUs' work happened to interleave. `DEVARRAY_SIM_GPU_THREADS` overrides it (e.g. 1 with
/// two GPUs on two cores: each GPU on a core of its own, so two GPUs' independent work finishes
/// in the time of one, as on real cards, and one GPU alone has only half the machine).
pub fn sim_gpu_threads() -> usize {
    if let Some(n) = std::env::var(SIM_GPU_THREADS_VAR)
        .ok()
        .and_then(|v| v.trim().parse::<usize>().ok())
        .filter(|n| *n > 0)
    {
        return n;
    }
    std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get)
}

pub const SIM_GPU_THREADS_VAR: &str = "DEVARRAY_SIM_GPU_THREADS";

/// Default memory of a simulated GPU (`DEVARRAY_SIM_GPU_MEMORY`).
pub const DEFAULT_SIM_GPU_MEMORY: u64 = 4 << 30;

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RuntimeConfig {
    /// Number of simulated GPUs, gpu(0)..gpu(n-1).
    pub sim_gpus: usize,
    /// Memory budget of each simulated GPU, in bytes.
    pub sim_gpu_memory: u64,
    /// Memory budget of cpu(0) for arrays, in bytes; `None` is no limit beyond the machine's.
    pub cpu_memory: Option<u64>,
}

impl Default for RuntimeConfig {
    fn default() -> Self {
        RuntimeConfig {
            sim_gpus: 0,
            sim_gpu_memory: DEFAULT_SIM_GPU_MEMORY,
            cpu_memory: None,
        }
    }
}

/// Whose generator the initializers draw from ([`Runtime::uniform`], [`Runtime::normal`]): MXNet's
/// legacy sampler, MXNet numpy mode's (its initializers call `mx.np.random.*` once `npx.set_np()`
/// is on), or PyTorch's CPU generator (its `nn.init` functions).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Sampler {
    MxNet = 0,
    MxNumpy = 1,
    Torch = 2,
}

struct RuntimeInner {
    config: RuntimeConfig,
    sampler: std::sync::atomic::AtomicU8,
    cpu: Arc<DeviceCtx>,
    gpus: Vec<Arc<DeviceCtx>>,
    transfers: Arc<TransferLog>,
    timeline: Arc<timeline::Timeline>,
    interrupt: Arc<AtomicBool>,
}

/// One session's devices. Clone shares the same devices.
#[derive(Clone)]
pub struct Runtime {
    inner: Arc<RuntimeInner>,
}

fn clock_seed() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0)
}

impl std::fmt::Debug for Runtime {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Runtime")
            .field("config", &self.inner.config)
            .finish()
    }
}

impl Runtime {
    pub fn new(config: RuntimeConfig) -> Runtime {
        // Unseeded sessions start from the clock, like MXNet's.
        let seed = clock_seed();
        let transfers = Arc::new(TransferLog::default());
        let timeline = Arc::new(timeline::Timeline::default());
        let interrupt = Arc::new(AtomicBool::new(false));
        let ctx = |device: Device,
                   budget: Option<Budget>,
                   stream: Option<Arc<Stream>>,
                   placement: Placement| {
            Arc::new(DeviceCtx {
                device,
                ledger: DeviceLedger::new(device, budget),
                stream,
                rng: Arc::new(Mutex::new(DeviceRng::new(seed))),
                transfers: Arc::clone(&transfers),
                timeline: Arc::clone(&timeline),
                interrupt: Arc::clone(&interrupt),
                placement,
                deferred_error: Mutex::new(None),
            })
        };
        let gpus = if config.sim_gpus > 0 {
            // A simulated GPU whose worker thread cannot start runs synchronously: slower to
            // overlap, identical in results.
            let threads = sim_gpu_threads();
            (0..config.sim_gpus)
                .map(|i| {
                    let device = Device::gpu(i);
                    let stream = Stream::start_with_threads(&device.to_string(), Some(threads))
                        .map(Arc::new);
                    let budget = Budget {
                        bytes: config.sim_gpu_memory,
                        setting: Some("DEVARRAY_SIM_GPU_MEMORY"),
                    };
                    ctx(device, Some(budget), stream, Placement::Host)
                })
                .collect()
        } else {
            // gpu(i) is the i-th card that opened. The count is checked first: it is 0 without
            // a driver and never panics, and only then are contexts opened (once per process).
            let cards: &[Arc<CudaDevice>] = if cuda::device_count() > 0 {
                cuda::devices()
            } else {
                &[]
            };
            cards
                .iter()
                .enumerate()
                .map(|(i, card)| {
                    ctx(
                        Device::gpu(i),
                        Some(Budget {
                            bytes: card.total_memory,
                            setting: None,
                        }),
                        None,
                        Placement::Cuda(Arc::clone(card)),
                    )
                })
                .collect()
        };
        let cpu_budget = config.cpu_memory.map(|bytes| Budget {
            bytes,
            setting: Some("DEVARRAY_CPU_MEMORY"),
        });
        let cpu = ctx(Device::cpu(0), cpu_budget, None, Placement::Host);
        Runtime {
            inner: Arc::new(RuntimeInner {
                sampler: std::sync::atomic::AtomicU8::new(Sampler::MxNet as u8),
                cpu,
                gpus,
                config,
                transfers,
                timeline,
                interrupt,
            }),
        }
    }

    /// Chooses the generator [`Self::uniform`] and [`Self::normal`] draw from.
    pub fn set_sampler(&self, sampler: Sampler) {
        self.inner
            .sampler
            .store(sampler as u8, std::sync::atomic::Ordering::Relaxed);
    }

    pub fn sampler(&self) -> Sampler {
        match self
            .inner
            .sampler
            .load(std::sync::atomic::Ordering::Relaxed)
        {
            1 => Sampler::MxNumpy,
            2 => Sampler::Torch,
            _ => Sampler::MxNet,
        }
    }

    pub fn config(&self) -> &RuntimeConfig {
        &self.inner.config
    }

    pub fn num_gpus(&self) -> usize {
        self.inner.gpus.len()
    }

    /// Every device that exists: cpu(0), then the GPUs.
    pub fn devices(&self) -> Vec<Device> {
        std::iter::once(Device::cpu(0))
            .chain((0..self.num_gpus()).map(Device::gpu))
            .collect()
    }

    fn state(&self, device: Device) -> Result<&Arc<DeviceCtx>> {
        match device.kind {
            DeviceKind::Cpu if device.id == 0 => Ok(&self.inner.cpu),
            DeviceKind::Cpu => Err(RuntimeError::Value(format!(
                "{device} does not exist: the host is one device, cpu(0); use cpu()"
            ))),
            DeviceKind::Gpu => self
                .inner
                .gpus
                .get(device.id)
                .ok_or(RuntimeError::NoSuchDevice {
                    device,
                    num_gpus: self.num_gpus(),
                }),
        }
    }

    fn all_states(&self) -> impl Iterator<Item = &Arc<DeviceCtx>> {
        std::iter::once(&self.inner.cpu).chain(&self.inner.gpus)
    }

    /// Blocks until every device has finished its queued work (`waitall`). An interrupt ends
    /// the wait early (the work carries on); the first error queued work raised is returned.
    pub fn synchronize(&self) -> Result<()> {
        let mut first_error = None;
        for state in self.all_states() {
            match state.synchronize() {
                Err(RuntimeError::Interrupted) => return Err(RuntimeError::Interrupted),
                Err(e) => {
                    first_error.get_or_insert(e);
                }
                Ok(()) => {}
            }
        }
        first_error.map_or(Ok(()), Err)
    }

    /// The flag that interrupts blocking waits (the session's interrupt handle shares it).
    pub fn interrupt_flag(&self) -> Arc<AtomicBool> {
        Arc::clone(&self.inner.interrupt)
    }

    /// True for a device that runs its work on a queue (a simulated GPU, or a CUDA GPU's
    /// stream).
    pub fn is_async(&self, device: Device) -> bool {
        self.state(device)
            .is_ok_and(|s| s.stream.is_some() || s.placement.is_cuda())
    }

    /// How the device is provided: "host", "simulated" or "cuda".
    pub fn backend_name(&self, device: Device) -> &'static str {
        if device.is_cpu() {
            return "host";
        }
        match self.state(device).map(|s| &s.placement) {
            Ok(Placement::Cuda(_)) => "cuda",
            _ => "simulated",
        }
    }

    /// The card's name for a CUDA GPU (e.g. "NVIDIA H100 80GB HBM3"); None for other devices.
    pub fn device_name(&self, device: Device) -> Option<String> {
        match &self.state(device).ok()?.placement {
            Placement::Cuda(card) => Some(card.name.clone()),
            Placement::Host => None,
        }
    }

    /// The transfer ledger since the last reset: one record per direction and kind.
    pub fn transfers(&self) -> Vec<TransferRecord> {
        self.inner.transfers.snapshot()
    }

    /// Starts a new cell on the timeline: the frontends call it before running each cell.
    pub fn timeline_begin_cell(&self) {
        self.inner.timeline.begin_cell();
    }

    /// The timeline of the current cell (`current`) or of the one before it.
    pub fn timeline(&self, current: bool) -> timeline::CellTimeline {
        self.inner.timeline.cell(current)
    }

    /// Waits for one device's queued work (`torch.cuda.synchronize(device)`) and reports the
    /// first error it raised.
    pub fn synchronize_device(&self, device: Device) -> Result<()> {
        self.state(device)?.synchronize()
    }

    /// Queues a marker on `device` (a CUDA event's `record`): it notes the time when the work
    /// queued before it has finished. On a synchronous device that is now.
    pub fn record_marker(&self, device: Device) -> Result<engine::Marker> {
        let ctx = self.state(device)?;
        let time = Arc::new(std::sync::OnceLock::new());
        let seq = match &ctx.stream {
            Some(stream) => {
                let mark = Arc::clone(&time);
                stream.submit(
                    Box::new(move || {
                        let _ = mark.set(std::time::Instant::now());
                        Ok(())
                    }),
                    &ctx.interrupt,
                )?
            }
            None => {
                // A CUDA GPU's stream: the time is taken once its work is done.
                ctx.placement.synchronize(&ctx.interrupt)?;
                let _ = time.set(std::time::Instant::now());
                0
            }
        };
        Ok(engine::Marker { device, seq, time })
    }

    /// Whether `device` has finished all its queued work (a stream's `query()`).
    pub fn is_idle(&self, device: Device) -> Result<bool> {
        let ctx = self.state(device)?;
        Ok(ctx
            .stream
            .as_ref()
            .is_none_or(|s| s.completed() >= s.last_submitted()))
    }

    /// Waits until the work queued before `marker` has finished.
    pub fn wait_marker(&self, marker: &engine::Marker) -> Result<()> {
        let ctx = self.state(marker.device)?;
        if let Some(stream) = &ctx.stream {
            stream.wait(marker.seq, Some(&ctx.interrupt))?;
        }
        Ok(())
    }

    pub fn reset_transfers(&self) {
        self.inner.transfers.reset();
    }

    /// (bytes copied into, bytes copied out of) `device` since the session started.
    pub fn bytes_copied(&self, device: Device) -> (u64, u64) {
        self.inner.transfers.totals(device)
    }

    /// Ok when arrays can live on `device`.
    pub fn check_device(&self, device: Device) -> Result<()> {
        self.state(device).map(|_| ())
    }

    pub(crate) fn ctx(&self, device: Device) -> Result<Arc<DeviceCtx>> {
        Ok(Arc::clone(self.state(device)?))
    }

    /// Bytes held by live arrays on `device` (0 for a device that does not exist).
    pub fn memory_used(&self, device: Device) -> u64 {
        self.state(device).map_or(0, |s| s.ledger.used())
    }

    /// The most bytes live arrays held on `device` at once since it started or since
    /// `reset_peak_memory` (for a device without a budget, what is used now).
    pub fn memory_peak(&self, device: Device) -> u64 {
        self.state(device).map_or(0, |s| s.ledger.peak())
    }

    /// Starts `device`'s peak again from what is in use now.
    pub fn reset_peak_memory(&self, device: Device) {
        if let Ok(s) = self.state(device) {
            s.ledger.reset_peak();
        }
    }

    /// Buffers alive on `device` (reshapes share one).
    pub fn live_arrays(&self, device: Device) -> usize {
        self.state(device).map_or(0, |s| s.ledger.live())
    }

    /// The device's memory: its budget, or the host's total for cpu(0).
    pub fn memory_total(&self, device: Device) -> Option<u64> {
        self.state(device).ok().and_then(|s| s.ledger.total())
    }

    /// `mx.random.seed`: reseeds every device's generator. A stream device reseeds in stream
    /// order, so samples queued before the call still come from the old sequence.
    pub fn seed(&self, seed: u64) {
        for state in self.all_states() {
            let rng = Arc::clone(&state.rng);
            let reseed = move || {
                rng.lock().unwrap_or_else(|e| e.into_inner()).reseed(seed);
            };
            if let Placement::Cuda(card) = &state.placement {
                // cuRAND's seed is host-side state read when a generation is queued, so it
                // takes effect in program order on the card's stream. The generator belongs to
                // the card, which every session in this process shares. A failure here (no
                // cuRAND) shows again, with its remedy, when a sample is drawn.
                let _ = cuda::random::seed(card, seed);
                continue;
            }
            match &state.stream {
                Some(stream) => {
                    let queued = stream.submit(
                        Box::new(move || {
                            reseed();
                            Ok(())
                        }),
                        &AtomicBool::new(false),
                    );
                    if queued.is_err() {
                        // The worker is gone; nothing can sample on it anyway.
                        state
                            .rng
                            .lock()
                            .unwrap_or_else(|e| e.into_inner())
                            .reseed(seed);
                    }
                }
                None => reseed(),
            }
        }
    }

    // ---- creation ------------------------------------------------------------------------

    fn create(
        &self,
        shape: &[usize],
        dtype: DType,
        device: Device,
        make: impl FnOnce(usize, &Placement) -> Result<Storage> + Send + 'static,
    ) -> Result<Array> {
        let ctx = self.ctx(device)?;
        let n = checked_numel(shape)?;
        let placement = ctx.placement.clone();
        array::allocate(&ctx, shape.to_vec(), dtype, move || make(n, &placement))
    }

    pub fn full(&self, shape: &[usize], value: f64, dtype: DType, device: Device) -> Result<Array> {
        let _op = timeline::op_scope("full");
        self.create(shape, dtype, device, move |n, placement| {
            placement.full(n, value, dtype)
        })
    }

    pub fn zeros(&self, shape: &[usize], dtype: DType, device: Device) -> Result<Array> {
        self.full(shape, 0.0, dtype, device)
    }

    pub fn ones(&self, shape: &[usize], dtype: DType, device: Device) -> Result<Array> {
        self.full(shape, 1.0, dtype, device)
    }

    /// From flattened literal values (`array([[1, 2], [3, 4]])`), converted to `dtype`.
    pub fn from_f64(
        &self,
        data: Vec<f64>,
        shape: &[usize],
        dtype: DType,
        device: Device,
    ) -> Result<Array> {
        let _op = timeline::op_scope("array");
        let n = checked_numel(shape)?;
        if n != data.len() {
            return Err(RuntimeError::Shape(format!(
                "array: {} values do not fill shape {} ({n} elements)",
                data.len(),
                shape_tuple(shape)
            )));
        }
        self.create(shape, dtype, device, move |_, placement| {
            // Converted on the host, so every device rounds literals identically.
            let host = HostData::F64(data);
            let storage = CpuStorage::from_host(host)?;
            placement.adopt(Storage::Cpu(if dtype == DType::Float64 {
                storage
            } else {
                storage.cast(dtype)?
            }))
        })
    }

    pub fn from_host(&self, data: HostData, shape: &[usize], device: Device) -> Result<Array> {
        let _op = timeline::op_scope("array");
        let n = checked_numel(shape)?;
        if n != data.len() {
            return Err(RuntimeError::Shape(format!(
                "array: {} values do not fill shape {} ({n} elements)",
                data.len(),
                shape_tuple(shape)
            )));
        }
        let dtype = data.dtype();
        self.create(shape, dtype, device, move |_, placement| {
            placement.from_host(data)
        })
    }

    /// Evenly spaced values in [start, stop).
    pub fn arange(
        &self,
        start: f64,
        stop: f64,
        step: f64,
        dtype: DType,
        device: Device,
    ) -> Result<Array> {
        let _op = timeline::op_scope("arange");
        if step == 0.0 {
            return Err(RuntimeError::Value("arange: step must not be zero".into()));
        }
        if !(start.is_finite() && stop.is_finite() && step.is_finite()) {
            return Err(RuntimeError::Value(
                "arange: start, stop and step must be finite numbers".into(),
            ));
        }
        let count = ((stop - start) / step).ceil().max(0.0);
        if count > (usize::MAX / 16) as f64 {
            return Err(RuntimeError::Value(format!(
                "arange: {count} elements are too many; use a larger step or a smaller range"
            )));
        }
        let n = count as usize;
        self.create(&[n], dtype, device, move |n, placement| {
            let mut values = crate::backend::cpu::kernels::alloc::<f64>(n)?;
            values.extend((0..n).map(|i| start + i as f64 * step));
            let storage = CpuStorage::from_host(HostData::F64(values))?;
            placement.adopt(Storage::Cpu(if dtype == DType::Float64 {
                storage
            } else {
                storage.cast(dtype)?
            }))
        })
    }

    /// An n x m matrix with ones on diagonal k (k > 0 above the main one).
    pub fn eye(&self, n: usize, m: usize, k: i64, dtype: DType, device: Device) -> Result<Array> {
        let _op = timeline::op_scope("eye");
        let out = self.zeros(&[n, m], dtype, device)?;
        let first_row = if k < 0 { k.unsigned_abs() as usize } else { 0 };
        let first_col = if k > 0 { k as usize } else { 0 };
        let len = n.saturating_sub(first_row).min(m.saturating_sub(first_col));
        if len > 0 {
            let view = crate::backend::StridedView {
                offset: first_row * m + first_col,
                shape: vec![len],
                strides: vec![(m + 1) as isize],
            };
            let one = self.ctx(device)?.placement.full(1, 1.0, dtype)?;
            out.scatter_view(view, one, vec![0])?;
        }
        Ok(out)
    }

    #[allow(clippy::too_many_arguments)]
    fn sample(
        &self,
        op: &str,
        shape: &[usize],
        dtype: DType,
        device: Device,
        draw32: impl FnMut(&mut random::Mt19937) -> f32 + Send + 'static,
        draw64: impl FnMut(&mut random::Mt19937) -> f64 + Send + 'static,
        on_cuda: impl FnOnce(&Arc<CudaDevice>, usize) -> Result<CudaStorage> + Send + 'static,
    ) -> Result<Array> {
        self.sample_with(
            op,
            shape,
            dtype,
            device,
            move |rng, n, out| rng.sample(n, out, draw32),
            move |rng, n, out| rng.sample(n, out, draw64),
            on_cuda,
        )
    }

    /// A sampling op whose fill functions see the device's whole generator (MXNet's engines
    /// and PyTorch's generator) and the number of values.
    #[allow(clippy::too_many_arguments)]
    fn sample_with(
        &self,
        op: &str,
        shape: &[usize],
        dtype: DType,
        device: Device,
        fill32: impl FnOnce(&mut DeviceRng, usize, &mut Vec<f32>) + Send + 'static,
        fill64: impl FnOnce(&mut DeviceRng, usize, &mut Vec<f64>) + Send + 'static,
        on_cuda: impl FnOnce(&Arc<CudaDevice>, usize) -> Result<CudaStorage> + Send + 'static,
    ) -> Result<Array> {
        if !dtype.is_float() {
            return Err(RuntimeError::DType(format!(
                "{op}: dtype {dtype} is not supported; sample float32 or float64 and convert with astype"
            )));
        }
        if dtype == DType::Float16 {
            // Drawn in float32 and rounded (CUDA's `on_cuda` does the same itself).
            return self
                .sample_with(op, shape, DType::Float32, device, fill32, fill64, on_cuda)?
                .astype(DType::Float16);
        }
        // Drawn in stream order, so seeds and samples interleave as the program wrote them.
        let rng = Arc::clone(&self.state(device)?.rng);
        self.create(shape, dtype, device, move |n, placement| {
            // A CUDA GPU draws on the card (cuRAND): its own sequence, not MXNet's CPU one.
            if let Placement::Cuda(card) = placement {
                return Ok(Storage::Cuda(on_cuda(card, n)?));
            }
            let mut rng = rng.lock().unwrap_or_else(|e| e.into_inner());
            Ok(Storage::Cpu(if dtype == DType::Float32 {
                let mut out = crate::backend::cpu::kernels::alloc(n)?;
                fill32(&mut rng, n, &mut out);
                CpuStorage::F32(out)
            } else {
                let mut out = crate::backend::cpu::kernels::alloc(n)?;
                fill64(&mut rng, n, &mut out);
                CpuStorage::F64(out)
            }))
        })
    }

    /// PyTorch's `torch.rand`/`uniform_`: its CPU generator's values (on every device here).
    pub fn torch_uniform(
        &self,
        low: f64,
        high: f64,
        shape: &[usize],
        dtype: DType,
        device: Device,
    ) -> Result<Array> {
        let _op = timeline::op_scope("uniform");
        if low.is_nan() || high.is_nan() || low > high {
            return Err(RuntimeError::Value(format!(
                "uniform_ expects to return a [from, to) range, but found from={low} > to={high}"
            )));
        }
        let (lo, hi) = (low as f32, high as f32);
        self.sample_with(
            "rand",
            shape,
            dtype,
            device,
            move |rng, n, out| rng.torch.fill_uniform_f32(n, lo, hi, out),
            move |rng, n, out| rng.torch.fill_uniform_f64(n, low, high, out),
            move |card, n| CudaStorage::uniform(card, n, low, high, dtype),
        )
    }

    /// PyTorch's `torch.randn`/`normal_`: its CPU generator's values (on every device here).
    pub fn torch_normal(
        &self,
        mean: f64,
        std: f64,
        shape: &[usize],
        dtype: DType,
        device: Device,
    ) -> Result<Array> {
        let _op = timeline::op_scope("normal");
        if std.is_nan() || std < 0.0 {
            return Err(RuntimeError::Value(format!(
                "normal expects std >= 0.0, but found std {std}"
            )));
        }
        self.sample_with(
            "randn",
            shape,
            dtype,
            device,
            move |rng, n, out| rng.torch.fill_normal_f32(n, mean as f32, std as f32, out),
            move |rng, n, out| rng.torch.fill_normal_f64(n, mean, std, out),
            move |card, n| CudaStorage::normal(card, n, mean, std, dtype),
        )
    }

    /// One `random64()` of PyTorch's CPU generator, as `torch.empty((), dtype=torch.int64)
    /// .random_()` draws it (reduced to [0, 2^63)): what a DataLoader's iterator and a
    /// RandomSampler take from the default generator, so later draws stay in step with PyTorch.
    pub fn torch_int64_draw(&self) -> Result<i64> {
        let rng = Arc::clone(&self.state(Device::cpu(0))?.rng);
        let mut rng = rng.lock().unwrap_or_else(|e| e.into_inner());
        Ok((rng.torch.random64() % (1u64 << 63)) as i64)
    }

    /// Runs `draw` on PyTorch's generator of `device` (the samplers PyTorch writes over its
    /// `random()`/`random64()`: `randperm`, `bernoulli`, `multinomial`), in stream order.
    pub fn with_torch_gen<T>(
        &self,
        device: Device,
        draw: impl FnOnce(&mut random::TorchGen) -> T,
    ) -> Result<T> {
        let rng = Arc::clone(&self.state(device)?.rng);
        let mut rng = rng.lock().unwrap_or_else(|e| e.into_inner());
        Ok(draw(&mut rng.torch))
    }

    /// PyTorch's `torch.randint(low, high, size)`: `random() % range + low` (`random64()` when
    /// the range needs more than 32 bits), as its CPU generator computes it.
    pub fn torch_randint(
        &self,
        low: i64,
        high: i64,
        shape: &[usize],
        dtype: DType,
        device: Device,
    ) -> Result<Array> {
        let _op = timeline::op_scope("randint");
        if low >= high {
            return Err(RuntimeError::Value(format!(
                "random_ expects 'from' to be less than 'to', but got from={low} >= to={high}"
            )));
        }
        if dtype == DType::Bool {
            return Err(RuntimeError::DType(format!(
                "randint: dtype {dtype} is not supported"
            )));
        }
        let range = high.wrapping_sub(low) as u64;
        let rng = Arc::clone(&self.state(device)?.rng);
        // Drawn in stream order, as the float samplers are.
        self.create(shape, dtype, device, move |n, placement| {
            let values: Vec<i64> = {
                let mut rng = rng.lock().unwrap_or_else(|e| e.into_inner());
                (0..n)
                    .map(|_| {
                        let r = if range >= 1 << 32 {
                            rng.torch.random64() % range
                        } else {
                            u64::from(rng.torch.random()) % range
                        };
                        low.wrapping_add(r as i64)
                    })
                    .collect()
            };
            placement.from_host(match dtype {
                DType::Int64 => HostData::I64(values),
                other => {
                    let wide: Vec<f64> = values.iter().map(|&v| v as f64).collect();
                    HostData::from_f64_values(&wide, other)
                }
            })
        })
    }

    /// MXNet numpy mode's `np.random.uniform`: its sequential engine, in float32.
    pub fn np_uniform(
        &self,
        low: f64,
        high: f64,
        shape: &[usize],
        dtype: DType,
        device: Device,
    ) -> Result<Array> {
        let _op = timeline::op_scope("uniform");
        if low.is_nan() || high.is_nan() || low > high {
            return Err(RuntimeError::Value(format!(
                "uniform: low ({low}) must be less than or equal to high ({high})"
            )));
        }
        let (lo, hi) = (low as f32, high as f32);
        self.sample_with(
            "uniform",
            shape,
            dtype,
            device,
            move |rng, n, out| out.extend((0..n).map(|_| lo + (hi - lo) * rng.np.canonical_f32())),
            move |rng, n, out| {
                out.extend((0..n).map(|_| f64::from(lo + (hi - lo) * rng.np.canonical_f32())))
            },
            move |card, n| CudaStorage::uniform(card, n, low, high, dtype),
        )
    }

    /// MXNet numpy mode's `np.random.normal`: its sequential engine, one distribution object
    /// per call (both values of each pair used), sampled in float32 and converted.
    pub fn np_normal(
        &self,
        loc: f64,
        scale: f64,
        shape: &[usize],
        dtype: DType,
        device: Device,
    ) -> Result<Array> {
        let _op = timeline::op_scope("normal");
        if scale.is_nan() || scale < 0.0 {
            return Err(RuntimeError::Value(format!(
                "normal: scale ({scale}) must be non-negative"
            )));
        }
        let (mean, std) = (loc as f32, scale as f32);
        let standard = |rng: &mut DeviceRng, n: usize| {
            let mut z: Vec<f32> = Vec::with_capacity(n);
            rng.np.normal_pairs_f32(n, &mut z);
            z
        };
        self.sample_with(
            "normal",
            shape,
            dtype,
            device,
            move |rng, n, out| out.extend(standard(rng, n).into_iter().map(|z| z * std + mean)),
            move |rng, n, out| {
                out.extend(
                    standard(rng, n)
                        .into_iter()
                        .map(|z| f64::from(z * std + mean)),
                )
            },
            move |card, n| CudaStorage::normal(card, n, loc, scale, dtype),
        )
    }

    /// Uniform samples for an initializer, from the generator [`Self::set_sampler`] chose.
    pub fn uniform(
        &self,
        low: f64,
        high: f64,
        shape: &[usize],
        dtype: DType,
        device: Device,
    ) -> Result<Array> {
        let _op = timeline::op_scope("uniform");
        match self.sampler() {
            Sampler::MxNet => self.mx_uniform(low, high, shape, dtype, device),
            Sampler::MxNumpy => self.np_uniform(low, high, shape, dtype, device),
            Sampler::Torch => self.torch_uniform(low, high, shape, dtype, device),
        }
    }

    /// Normal samples for an initializer, from the generator [`Self::set_sampler`] chose.
    pub fn normal(
        &self,
        loc: f64,
        scale: f64,
        shape: &[usize],
        dtype: DType,
        device: Device,
    ) -> Result<Array> {
        let _op = timeline::op_scope("normal");
        match self.sampler() {
            Sampler::MxNet => self.mx_normal(loc, scale, shape, dtype, device),
            Sampler::MxNumpy => self.np_normal(loc, scale, shape, dtype, device),
            Sampler::Torch => self.torch_normal(loc, scale, shape, dtype, device),
        }
    }

    /// Uniform samples in [low, high), bit-identical to MXNet 1.9.1's legacy sampler on the CPU.
    pub fn mx_uniform(
        &self,
        low: f64,
        high: f64,
        shape: &[usize],
        dtype: DType,
        device: Device,
    ) -> Result<Array> {
        let _op = timeline::op_scope("uniform");
        if low.is_nan() || high.is_nan() || low > high {
            return Err(RuntimeError::Value(format!(
                "uniform: low ({low}) must be less than or equal to high ({high})"
            )));
        }
        // MXNet passes the bounds as float and computes low + (high - low) * u.
        let (lo, hi) = (low as f32, high as f32);
        self.sample(
            "uniform",
            shape,
            dtype,
            device,
            move |e| lo + (hi - lo) * e.canonical_f32(),
            move |e| f64::from(lo) + f64::from(hi - lo) * e.canonical_f64(),
            move |card, n| CudaStorage::uniform(card, n, low, high, dtype),
        )
    }

    /// Normal samples, bit-identical to MXNet 1.9.1's legacy sampler on the CPU.
    pub fn mx_normal(
        &self,
        loc: f64,
        scale: f64,
        shape: &[usize],
        dtype: DType,
        device: Device,
    ) -> Result<Array> {
        let _op = timeline::op_scope("normal");
        if scale.is_nan() || scale < 0.0 {
            return Err(RuntimeError::Value(format!(
                "normal: scale ({scale}) must be non-negative"
            )));
        }
        let (mean, std) = (loc as f32, scale as f32);
        self.sample(
            "normal",
            shape,
            dtype,
            device,
            move |e| e.normal_f32() * std + mean,
            move |e| e.normal_f64() * f64::from(std) + f64::from(mean),
            move |card, n| CudaStorage::normal(card, n, loc, scale, dtype),
        )
    }
}

#[cfg(test)]
mod tests;
