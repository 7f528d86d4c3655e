//! cuRAND: uniform and normal samples generated on the device, on the device's stream.
use super::device::{driver_error, lock, CudaDevice, DevicePtr};
use crate::vocab::{DType, Result, RuntimeError};
use cudarc::curand::{result as rr, sys as rs};

pub struct RngHandle(rs::curandGenerator_t);

// SAFETY: used only under the device's rng mutex.
unsafe impl Send for RngHandle {}

impl Drop for RngHandle {
    fn drop(&mut self) {
        // SAFETY: created once, destroyed once.
        let _ = unsafe { rr::destroy_generator(self.0) };
    }
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Distribution {
    /// Samples in (0, 1]; the caller scales them to [low, high).
    StandardUniform,
    Normal {
        mean: f64,
        std: f64,
    },
}

fn with_generator<T>(
    device: &CudaDevice,
    seed: Option<u64>,
    f: impl FnOnce(rs::curandGenerator_t) -> Result<T>,
) -> Result<T> {
    // SAFETY: checking for the library is always safe.
    if !unsafe { rs::is_culib_present() } {
        return Err(RuntimeError::Value(
            "random arrays on a GPU need cuRAND (libcurand.so.10), which was not found: install the \
             CUDA libraries or `pip install nvidia-curand-cu12` and put it on LD_LIBRARY_PATH"
                .into(),
        ));
    }
    device.bind()?;
    let mut guard = lock(&device.rng);
    if guard.is_none() {
        let generator =
            rr::create_generator().map_err(|e| driver_error("curandCreateGenerator", e))?;
        let handle = RngHandle(generator);
        // SAFETY: both handles are live.
        unsafe { rr::set_stream(handle.0, device.stream.cu_stream() as _) }
            .map_err(|e| driver_error("curandSetStream", e))?;
        *guard = Some(handle);
    }
    let Some(handle) = guard.as_ref() else {
        return Err(RuntimeError::Value("cuRAND generator missing".into()));
    };
    if let Some(seed) = seed {
        // SAFETY: live generator.
        unsafe { rr::set_seed(handle.0, seed) }.map_err(|e| driver_error("curandSetSeed", e))?;
        // cuRAND keeps the offset that earlier samples advanced: without a rewind a reseed
        // would not repeat the sequence.
        // SAFETY: live generator.
        unsafe { rr::set_offset(handle.0, 0) }
            .map_err(|e| driver_error("curandSetGeneratorOffset", e))?;
    }
    f(handle.0)
}

/// `mx.random.seed` for this device.
pub fn seed(device: &CudaDevice, seed: u64) -> Result<()> {
    with_generator(device, Some(seed), |_| Ok(()))
}

/// Fills `count` elements at `out`. Normal generation needs an even count (cuRAND makes pairs),
/// so `out` must have room for `count` rounded up to even.
pub fn fill(
    device: &CudaDevice,
    out: DevicePtr,
    count: usize,
    dtype: DType,
    distribution: Distribution,
) -> Result<()> {
    with_generator(device, None, |generator| {
        let even = count + count % 2;
        // SAFETY: `out` holds at least `even` elements of `dtype` (the caller's contract).
        unsafe {
            match (dtype, distribution) {
                (DType::Float32, Distribution::StandardUniform) => {
                    rr::generate::uniform_f32(generator, out as *mut f32, count)
                }
                (DType::Float64, Distribution::StandardUniform) => {
                    rr::generate::uniform_f64(generator, out as *mut f64, count)
                }
                (DType::Float32, Distribution::Normal { mean, std }) => rr::generate::normal_f32(
                    generator,
                    out as *mut f32,
                    even,
                    mean as f32,
                    std as f32,
                ),
                (DType::Float64, Distribution::Normal { mean, std }) => {
                    rr::generate::normal_f64(generator, out as *mut f64, even, mean, std)
                }
                (other, _) => {
                    return Err(RuntimeError::DType(format!(
                        "random samples are float32 or float64, not {other}"
                    )))
                }
            }
        }
        .map_err(|e| driver_error("cuRAND generate", e))
    })
}
