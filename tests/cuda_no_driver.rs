//! The CUDA backend on a machine without an NVIDIA driver (this CI machine): probing never
//! panics, no CUDA device is reported, and asking for gpu(0) is a clear error. On a machine with
//! a driver the assertions that depend on its absence are skipped.
use devarray::backend::cuda;
use devarray::runtime::{DType, Device, Runtime, RuntimeConfig};

fn no_driver() -> bool {
    !cuda::probe().driver_present
}

#[test]
fn probing_never_panics_and_counts_no_gpus() {
    let probe = cuda::probe();
    // Twice: the probe is cached and cheap.
    assert_eq!(cuda::device_count(), cuda::probe().device_count);
    if no_driver() {
        assert_eq!(cuda::device_count(), 0);
        assert!(cuda::devices().is_empty());
        assert_eq!(probe.driver_version, None);
        assert_eq!(
            cuda::notes(),
            ["no NVIDIA driver (libcuda.so.1 was not found), so there are no CUDA GPUs"]
        );
    }
}

#[test]
fn asking_for_a_cuda_gpu_without_a_driver_is_a_clear_error() {
    if !no_driver() {
        return;
    }
    let err = cuda::device(0).expect_err("no driver, no gpu(0)");
    assert_eq!(
        err.to_string(),
        "gpu(0) does not exist: this machine has no GPU; try_gpu(0) falls back to cpu(0). To simulate GPUs, start devarray with --sim-gpus 2 or set DEVARRAY_SIM_GPUS=2"
    );
}

#[test]
fn the_runtime_sees_no_gpu_and_refuses_gpu0() {
    if !no_driver() {
        return;
    }
    let runtime = Runtime::new(RuntimeConfig::default());
    assert_eq!(runtime.num_gpus(), 0);
    let err = runtime
        .ones(&[2, 3], DType::Float32, Device::gpu(0))
        .expect_err("gpu(0) must not exist");
    assert!(err
        .to_string()
        .starts_with("gpu(0) does not exist: this machine has no GPU"));
}
