//! The CUDA backend: real NVIDIA GPUs through cudarc, loaded dynamically at run time.
//!
//! - `probe`: finds the driver and libraries before any cudarc call (a missing library makes
//!   cudarc panic), reads versions and says what is missing in words.
//! - `kernels` + `kernels/*.cu`: the kernel sources and the table of entry names.
//! - `nvrtc`: compiles them for the device's architecture on first use.
//! - `device`: one context, stream, caching memory pool, module cache, cuBLAS and cuRAND handle
//!   per GPU; `storage`: device buffers and the primitive ops; `transfer`: pinned staging, peer
//!   copies and events; `allreduce`: summing arrays across GPUs.
pub mod allreduce;
pub mod blas;
pub mod device;
pub mod fused;
pub mod kernels;
pub mod nvrtc;
pub mod probe;
pub mod random;
pub mod select;
pub mod storage;
pub mod transfer;

pub use allreduce::CudaAllReduce;
pub use device::{device, devices, CudaDevice};
pub use storage::CudaStorage;

pub use probe::{probe, Probe};

/// How many CUDA GPUs this process can use: 0 without a driver or NVRTC, never a panic.
pub fn device_count() -> usize {
    probe().device_count
}

/// Why there are no CUDA GPUs (or what limits them), for `%devices` and error messages.
pub fn notes() -> &'static [String] {
    &probe().notes
}
