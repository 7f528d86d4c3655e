//! One CUDA GPU: its context and stream, a caching memory pool budgeted to the card's memory,
//! NVRTC modules compiled on first use and cached for the process, and cuBLAS/cuRAND handles.
//!
//! Everything here runs only after `probe` found the driver and NVRTC; nothing is reachable on a
//! machine without them (see `devices()`).
use super::fused::{FusedCache, FusedKernel};
use super::kernels::{self, Module, Program};
use super::nvrtc::{self, Target};
use super::probe::probe;
use crate::vocab::{DType, Device, FusedExpr, Result, RuntimeError};
use cudarc::driver::sys as cu;
use cudarc::driver::{result as dr, CudaContext, CudaFunction, CudaModule, CudaStream};
use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};
use std::time::{Duration, Instant};

pub type DevicePtr = cu::CUdeviceptr;

/// How long an interruptible wait spins before it starts sleeping between polls.
const SPIN: Duration = Duration::from_millis(1);
/// The sleep between polls after that (an interrupt is seen within about this long).
const POLL: Duration = Duration::from_micros(200);

pub struct CudaDevice {
    pub ordinal: usize,
    pub name: String,
    pub total_memory: u64,
    pub compute_capability: (i32, i32),
    pub(crate) ctx: Arc<CudaContext>,
    pub(crate) stream: Arc<CudaStream>,
    target: Target,
    pool: Mutex<Pool>,
    modules: Mutex<HashMap<String, Arc<CudaModule>>>,
    fused: Mutex<FusedCache<FusedFunction>>,
    pub(crate) blas: Mutex<Option<super::blas::BlasHandle>>,
    pub(crate) rng: Mutex<Option<super::random::RngHandle>>,
    /// Pinned buffers for host copies, made on first use and kept (transfer.rs).
    pub(crate) staging: Mutex<Option<super::transfer::Staging>>,
}

impl std::fmt::Debug for CudaDevice {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "CudaDevice({}, {})", self.ordinal, self.name)
    }
}

static DEVICES: OnceLock<Vec<Arc<CudaDevice>>> = OnceLock::new();
static OPEN_ERRORS: OnceLock<Mutex<Vec<String>>> = OnceLock::new();

/// Every usable GPU, opened once per process. Empty without a driver or NVRTC.
pub fn devices() -> &'static [Arc<CudaDevice>] {
    DEVICES.get_or_init(|| {
        let mut out = Vec::new();
        for ordinal in 0..probe().device_count {
            match CudaDevice::open(ordinal) {
                Ok(device) => out.push(Arc::new(device)),
                Err(e) => lock(OPEN_ERRORS.get_or_init(Default::default)).push(e),
            }
        }
        out
    })
}

/// gpu(ordinal) as a CUDA device, or the runtime's "does not exist" error.
pub fn device(ordinal: usize) -> Result<Arc<CudaDevice>> {
    devices()
        .get(ordinal)
        .cloned()
        .ok_or(RuntimeError::NoSuchDevice {
            device: Device::gpu(ordinal),
            num_gpus: devices().len(),
        })
}

/// Devices that the driver reported but could not be opened, in words.
pub fn open_errors() -> Vec<String> {
    OPEN_ERRORS
        .get()
        .map(|errors| lock(errors).clone())
        .unwrap_or_default()
}

pub(crate) fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}

pub(crate) fn driver_error(what: &str, e: impl std::fmt::Debug) -> RuntimeError {
    RuntimeError::Value(format!("CUDA error in {what}: {e:?}"))
}

impl CudaDevice {
    fn open(ordinal: usize) -> std::result::Result<CudaDevice, String> {
        let ctx = CudaContext::new(ordinal).map_err(|e| format!("gpu({ordinal}): {e:?}"))?;
        let name = ctx.name().unwrap_or_else(|_| "NVIDIA GPU".into());
        let total_memory = ctx
            .total_mem()
            .map_err(|e| format!("gpu({ordinal}): {e:?}"))? as u64;
        let compute_capability = ctx
            .compute_capability()
            .map_err(|e| format!("gpu({ordinal}): {e:?}"))?;
        let stream = ctx
            .new_stream()
            .map_err(|e| format!("gpu({ordinal}): {e:?}"))?;
        let archs = nvrtc::supported_archs().unwrap_or_default();
        let target = choose_target(
            compute_capability,
            probe().driver_version,
            probe().nvrtc_version,
            &archs,
        )
        .map_err(|e| format!("gpu({ordinal}) ({name}): {e}"))?;
        Ok(CudaDevice {
            ordinal,
            name,
            total_memory,
            compute_capability,
            ctx,
            stream,
            target,
            pool: Mutex::new(Pool::new(total_memory)),
            modules: Mutex::new(HashMap::new()),
            fused: Mutex::new(FusedCache::default()),
            blas: Mutex::new(None),
            rng: Mutex::new(None),
            staging: Mutex::new(None),
        })
    }

    pub fn device(&self) -> Device {
        Device::gpu(self.ordinal)
    }

    /// What NVRTC compiles this card's kernels to (PTX or a cubin, and for which architecture).
    pub fn target(&self) -> Target {
        self.target
    }

    /// Bytes held by live buffers (the pool's cache is not counted: it is reused first).
    pub fn memory_used(&self) -> u64 {
        lock(&self.pool).in_use
    }

    pub(crate) fn bind(&self) -> Result<()> {
        self.ctx
            .bind_to_thread()
            .map_err(|e| driver_error("binding the context", e))
    }

    /// Waits for everything queued on this device.
    pub fn synchronize(&self) -> Result<()> {
        self.stream
            .synchronize()
            .map_err(|e| driver_error("synchronize", e))
    }

    /// Waits for everything queued on this device, giving up (with `Interrupted`, clearing the
    /// flag) when `interrupt` is set; the queued work carries on. It polls an event: briefly
    /// spinning keeps short waits as fast as a blocking sync, then it sleeps between looks.
    pub fn synchronize_interruptible(&self, interrupt: &AtomicBool) -> Result<()> {
        self.bind()?;
        let done = self
            .stream
            .record_event(Some(cu::CUevent_flags::CU_EVENT_DISABLE_TIMING))
            .map_err(|e| driver_error("recording an event", e))?;
        let start = Instant::now();
        loop {
            if done
                .try_is_complete()
                .map_err(|e| driver_error("synchronize", e))?
            {
                return Ok(());
            }
            if interrupt.swap(false, Ordering::SeqCst) {
                return Err(RuntimeError::Interrupted);
            }
            if start.elapsed() < SPIN {
                std::thread::yield_now();
            } else {
                std::thread::sleep(POLL);
            }
        }
    }

    // ---- memory ----------------------------------------------------------------------------

    /// A buffer of at least `bytes` from the pool; OutOfMemory names the device, the request and
    /// what is free, like every device's budget error.
    pub fn alloc(self: &Arc<Self>, bytes: usize) -> Result<DeviceBuffer> {
        let size = Pool::round(bytes);
        let mut pool = lock(&self.pool);
        let oom = |pool: &Pool| RuntimeError::OutOfMemory {
            device: self.device(),
            requested: bytes as u64,
            free: pool.budget.saturating_sub(pool.in_use),
            total: pool.budget,
            setting: None,
        };
        if pool.in_use.saturating_add(size as u64) > pool.budget {
            return Err(oom(&pool));
        }
        let ptr = match pool.take_cached(size) {
            Some(ptr) => ptr,
            None => {
                self.bind()?;
                // SAFETY: the context is bound; the size is non-zero (rounded up).
                match unsafe { dr::malloc_sync(size) } {
                    Ok(ptr) => ptr,
                    Err(_) => {
                        // The cache holds memory the driver could use: give it back and retry.
                        pool.release_cache();
                        // SAFETY: as above.
                        unsafe { dr::malloc_sync(size) }.map_err(|_| oom(&pool))?
                    }
                }
            }
        };
        pool.in_use += size as u64;
        Ok(DeviceBuffer {
            device: Arc::clone(self),
            ptr,
            bytes,
            size,
        })
    }

    // ---- kernels ---------------------------------------------------------------------------

    /// The compiled entry `name` of a fixed module (compiled for this device on first use). Its
    /// source text is built only on that first use: this runs on every launch.
    pub fn function(&self, module: Module, name: &str) -> Result<CudaFunction> {
        let loaded = lock(&self.modules).get(module.name()).map(Arc::clone);
        match loaded {
            Some(loaded) => function_of(&loaded, name),
            None => self.function_in(&module.program(), name),
        }
    }

    /// The kernel for a fused expression over `dtype` inputs, compiled on its first launch and
    /// then found by the expression's structure (no source text is built again). None when the
    /// expression does not fuse here.
    pub fn fused_function(&self, expr: &FusedExpr, dtype: DType) -> Result<Option<FusedFunction>> {
        if let Some(found) = lock(&self.fused).get(expr, dtype) {
            return Ok(Some(found));
        }
        let Some(kernel) = FusedKernel::new(expr.clone(), dtype) else {
            return Ok(None);
        };
        let entry = kernel.entry();
        let compiled = FusedFunction {
            function: self.function_in(&kernel.program(), &entry)?,
            entry: entry.into(),
            inputs: kernel.inputs,
        };
        lock(&self.fused).insert(expr, dtype, compiled.clone());
        Ok(Some(compiled))
    }

    /// Looks `name` up in `program`, compiling and loading the program once per process.
    pub fn function_in(&self, program: &Program, name: &str) -> Result<CudaFunction> {
        let module = {
            let mut modules = lock(&self.modules);
            match modules.get(&program.name) {
                Some(module) => Arc::clone(module),
                None => {
                    let image = nvrtc::compile(&program.name, &program.source, self.target, &[])
                        .map_err(RuntimeError::Value)?;
                    let ptx = match self.target {
                        Target::Ptx { .. } => {
                            cudarc::nvrtc::Ptx::from_src(String::from_utf8(image).map_err(
                                |_| RuntimeError::Value("NVRTC returned non-text PTX".into()),
                            )?)
                        }
                        Target::Cubin { .. } => cudarc::nvrtc::Ptx::from_binary(image),
                    };
                    let module = self
                        .ctx
                        .load_module(ptx)
                        .map_err(|e| driver_error(&format!("loading {}.cu", program.name), e))?;
                    modules.insert(program.name.clone(), Arc::clone(&module));
                    module
                }
            }
        };
        function_of(&module, name)
    }
}

/// A compiled fused kernel: the function, its entry name (for errors) and how many inputs it
/// takes.
#[derive(Clone, Debug)]
pub struct FusedFunction {
    pub function: CudaFunction,
    pub entry: Arc<str>,
    pub inputs: usize,
}

fn function_of(module: &Arc<CudaModule>, name: &str) -> Result<CudaFunction> {
    if name.contains('\0') {
        return Err(RuntimeError::Value(format!("bad kernel name {name:?}")));
    }
    module
        .load_function(name)
        .map_err(|e| driver_error(&format!("looking up kernel {name}"), e))
}

/// The launch shape for `n` elements with the grid-stride kernels: enough blocks to fill the
/// card, never more than needed.
pub fn launch_config(n: usize) -> cudarc::driver::LaunchConfig {
    let blocks = n.div_ceil(kernels::BLOCK as usize).clamp(1, 65_535) as u32;
    cudarc::driver::LaunchConfig {
        grid_dim: (blocks, 1, 1),
        block_dim: (kernels::BLOCK, 1, 1),
        shared_mem_bytes: 0,
    }
}

/// PTX for the device's architecture when the driver can JIT what this NVRTC emits, else a
/// cubin (machine code needs no JIT). Architectures newer than NVRTC knows get PTX for the
/// newest one it knows, which the driver compiles forward.
pub fn choose_target(
    capability: (i32, i32),
    driver: Option<(i32, i32)>,
    nvrtc: Option<(i32, i32)>,
    supported: &[i32],
) -> std::result::Result<Target, String> {
    let arch = capability.0 * 10 + capability.1;
    let nvrtc_newer = matches!((driver, nvrtc), (Some(d), Some(n)) if n > d);
    if supported.is_empty() || supported.contains(&arch) {
        let (major, minor) = capability;
        return Ok(if nvrtc_newer {
            Target::Cubin { major, minor }
        } else {
            Target::Ptx { major, minor }
        });
    }
    let best = supported.iter().copied().filter(|&a| a <= arch).max();
    match best {
        Some(best) if !nvrtc_newer => Ok(Target::Ptx {
            major: best / 10,
            minor: best % 10,
        }),
        Some(_) => Err(format!(
            "compute capability {}.{} is newer than NVRTC supports and NVRTC is newer than the \
             driver: install an NVRTC that matches the driver",
            capability.0, capability.1
        )),
        None => Err(format!(
            "compute capability {}.{} is older than NVRTC supports (oldest sm_{})",
            capability.0,
            capability.1,
            supported.iter().min().copied().unwrap_or(0)
        )),
    }
}

// ---- the caching pool ----------------------------------------------------------------------

/// Freed blocks are kept by size and reused; the budget is the card's memory. Blocks go back to
/// the cache when their array is dropped: every use is on the device's one stream (peer copies
/// make the source stream wait, see transfer.rs), so a later use of a reused block is ordered
/// after the last use of its previous owner.
struct Pool {
    budget: u64,
    in_use: u64,
    cached: BTreeMap<usize, Vec<DevicePtr>>,
}

impl Pool {
    fn new(budget: u64) -> Pool {
        Pool {
            budget,
            in_use: 0,
            cached: BTreeMap::new(),
        }
    }

    /// Size classes: 512-byte steps below 1 MiB, 1 MiB steps above (bounded waste, high reuse).
    fn round(bytes: usize) -> usize {
        let step = if bytes < (1 << 20) { 512 } else { 1 << 20 };
        bytes.max(1).div_ceil(step).saturating_mul(step)
    }

    fn take_cached(&mut self, size: usize) -> Option<DevicePtr> {
        let blocks = self.cached.get_mut(&size)?;
        let ptr = blocks.pop();
        if blocks.is_empty() {
            self.cached.remove(&size);
        }
        ptr
    }

    fn release_cache(&mut self) {
        for ptr in std::mem::take(&mut self.cached).into_values().flatten() {
            // SAFETY: every cached block came from malloc_sync and is owned by no buffer.
            let _ = unsafe { dr::free_sync(ptr) };
        }
    }
}

/// Device memory owned by one array; returns to its device's pool on drop.
pub struct DeviceBuffer {
    pub(crate) device: Arc<CudaDevice>,
    pub(crate) ptr: DevicePtr,
    /// Bytes asked for (what the array uses).
    pub(crate) bytes: usize,
    /// Bytes reserved (its size class).
    size: usize,
}

impl std::fmt::Debug for DeviceBuffer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "DeviceBuffer({} bytes on gpu({}))",
            self.bytes, self.device.ordinal
        )
    }
}

impl DeviceBuffer {
    pub fn ptr(&self) -> DevicePtr {
        self.ptr
    }

    pub fn device(&self) -> &Arc<CudaDevice> {
        &self.device
    }
}

impl Drop for DeviceBuffer {
    fn drop(&mut self) {
        let mut pool = lock(&self.device.pool);
        pool.in_use = pool.in_use.saturating_sub(self.size as u64);
        pool.cached.entry(self.size).or_default().push(self.ptr);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn size_classes() {
        assert_eq!(Pool::round(0), 512);
        assert_eq!(Pool::round(12), 512);
        assert_eq!(Pool::round(513), 1024);
        assert_eq!(Pool::round((1 << 20) + 1), 2 << 20);
    }

    #[test]
    fn targets() {
        let archs = [75, 80, 86, 89, 90];
        assert_eq!(
            choose_target((8, 0), Some((12, 8)), Some((12, 8)), &archs),
            Ok(Target::Ptx { major: 8, minor: 0 })
        );
        // NVRTC newer than the driver: its PTX would be rejected, so machine code.
        assert_eq!(
            choose_target((9, 0), Some((12, 4)), Some((12, 9)), &archs),
            Ok(Target::Cubin { major: 9, minor: 0 })
        );
        // A card newer than NVRTC: PTX for the newest known arch, JIT-compiled forward.
        assert_eq!(
            choose_target((12, 0), Some((12, 8)), Some((12, 8)), &archs),
            Ok(Target::Ptx { major: 9, minor: 0 })
        );
        assert!(choose_target((5, 0), None, None, &archs)
            .unwrap_err()
            .contains("older than NVRTC supports"));
    }
}
