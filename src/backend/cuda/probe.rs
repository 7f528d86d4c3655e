//! What CUDA this machine has, found without ever letting cudarc panic.
//!
//! With dynamic loading, the first call into a library that is not installed panics inside
//! cudarc. So every library is looked for (`is_culib_present`) before anything else, once per
//! process, and the rest of the backend only runs when the driver and NVRTC are there.
use cudarc::driver::sys as cu;
use std::sync::OnceLock;

/// The result of looking for CUDA, computed once per process.
#[derive(Clone, Debug, PartialEq)]
pub struct Probe {
    pub driver_present: bool,
    pub nvrtc_present: bool,
    pub cublas_present: bool,
    pub curand_present: bool,
    pub nccl_present: bool,
    /// CUDA version the driver supports, e.g. (12, 8).
    pub driver_version: Option<(i32, i32)>,
    pub nvrtc_version: Option<(i32, i32)>,
    /// GPUs the driver reports (0 when anything needed is missing).
    pub device_count: usize,
    /// Why there are no CUDA devices, or what limits them, in words.
    pub notes: Vec<String>,
}

static PROBE: OnceLock<Probe> = OnceLock::new();

/// This process's probe (computed on first use).
pub fn probe() -> &'static Probe {
    PROBE.get_or_init(run_probe)
}

fn run_probe() -> Probe {
    // SAFETY: each call only tries to dlopen a library by its usual names.
    let (driver_present, cublas_present, curand_present, nccl_present) = unsafe {
        (
            cu::is_culib_present(),
            cudarc::cublas::sys::is_culib_present(),
            cudarc::curand::sys::is_culib_present(),
            cudarc::nccl::sys::is_culib_present(),
        )
    };
    let nvrtc_present = super::nvrtc::is_available();
    let mut probe = Probe {
        driver_present,
        nvrtc_present,
        cublas_present,
        curand_present,
        nccl_present,
        driver_version: None,
        nvrtc_version: None,
        device_count: 0,
        notes: Vec::new(),
    };
    if nvrtc_present {
        probe.nvrtc_version = super::nvrtc::version().ok();
    }
    if !driver_present {
        probe.notes.push(
            "no NVIDIA driver (libcuda.so.1 was not found), so there are no CUDA GPUs".into(),
        );
        return probe;
    }
    // SAFETY: libcuda is present (checked above); the out-pointers are valid.
    let count = unsafe {
        if cu::cuInit(0) != cu::CUresult::CUDA_SUCCESS {
            probe.notes.push(
                "the NVIDIA driver is installed but did not initialise (cuInit failed): check \
                 nvidia-smi and that /dev/nvidia* are accessible"
                    .into(),
            );
            return probe;
        }
        let mut version = 0;
        if cu::cuDriverGetVersion(&mut version) == cu::CUresult::CUDA_SUCCESS {
            probe.driver_version = Some((version / 1000, (version % 1000) / 10));
        }
        let mut count = 0;
        if cu::cuDeviceGetCount(&mut count) != cu::CUresult::CUDA_SUCCESS {
            count = 0;
        }
        usize::try_from(count).unwrap_or(0)
    };
    probe.notes.extend(version_notes(
        probe.driver_version,
        probe.nvrtc_version,
        nvrtc_present,
    ));
    for (present, what) in [
        (
            cublas_present,
            "cuBLAS (libcublas.so.12), needed for matmul",
        ),
        (
            curand_present,
            "cuRAND (libcurand.so.10), needed for random arrays",
        ),
    ] {
        if !present && count > 0 {
            probe.notes.push(format!(
                "{what}, was not found: install the CUDA libraries or the nvidia-*-cu12 wheels and put them on LD_LIBRARY_PATH"
            ));
        }
    }
    // Kernels cannot be built without NVRTC, so the GPUs are not usable at all.
    probe.device_count = if nvrtc_present { count } else { 0 };
    probe
}

/// Mismatches between the driver and the runtime compiler, in words.
pub fn version_notes(
    driver: Option<(i32, i32)>,
    nvrtc: Option<(i32, i32)>,
    nvrtc_present: bool,
) -> Vec<String> {
    let mut notes = Vec::new();
    if !nvrtc_present {
        notes.push(
            "the NVIDIA driver is present but NVRTC (libnvrtc.so.12) is not, so no kernel can be \
             compiled and the GPUs are not used: install the CUDA toolkit or `pip install \
             nvidia-cuda-nvrtc-cu12` and put its lib directory on LD_LIBRARY_PATH"
                .into(),
        );
        return notes;
    }
    if let (Some((dmaj, dmin)), Some((nmaj, nmin))) = (driver, nvrtc) {
        if (nmaj, nmin) > (dmaj, dmin) {
            notes.push(format!(
                "NVRTC {nmaj}.{nmin} is newer than the driver's CUDA {dmaj}.{dmin}: its PTX would be \
                 rejected, so kernels are compiled to machine code (cubin) instead; update the \
                 driver to use PTX"
            ));
        }
        if nmaj < 12 {
            notes.push(format!(
                "NVRTC {nmaj}.{nmin} is older than CUDA 12, which devarray is built for: install \
                 a CUDA 12 NVRTC"
            ));
        }
    }
    notes
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn version_mismatch_is_reported_in_words() {
        assert_eq!(
            version_notes(Some((12, 4)), Some((12, 9)), true),
            vec!["NVRTC 12.9 is newer than the driver's CUDA 12.4: its PTX would be rejected, so kernels are compiled to machine code (cubin) instead; update the driver to use PTX".to_string()]
        );
        assert!(version_notes(Some((12, 9)), Some((12, 8)), true).is_empty());
        assert!(
            version_notes(Some((12, 9)), None, false)[0].contains("NVRTC (libnvrtc.so.12) is not")
        );
    }
}
