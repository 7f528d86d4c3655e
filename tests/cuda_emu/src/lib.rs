//! An emulated CUDA stack for CI machines without a GPU.
//!
//! One shared library stands in for libcuda (driver API), libcublas, libcurand and libnccl: a
//! test links it under each of their names and puts the directory on `LD_LIBRARY_PATH`, and
//! cudarc's dynamic loader opens it as the real thing. Kernels are the PTX that NVRTC really
//! produced, run by an interpreter (`ptx`), thread by thread.
//!
//! - `driver`: devices, contexts, device memory behind opaque pointers, streams on their own
//!   threads, events, modules and launches, and the exported `cu*` entry points.
//! - `ptx`: parser and interpreter.
//! - `blas`, `rand`, `nccl`: the library calls devarray makes, computed on the host.
//!
//! Settings (environment): `CUDA_EMU_DEVICES` (default 2), `CUDA_EMU_MEMORY` (per card, e.g.
//! `1G`, default 1 GiB), `CUDA_EMU_SM` (90 or 80, default 90), `CUDA_EMU_CHAOS=1` (streams delay
//! every job at random, pinned buffers are checked for reuse before their copy ran).
#![allow(non_snake_case, non_camel_case_types, clippy::missing_safety_doc)]

pub mod blas;
pub mod driver;
pub mod nccl;
pub mod ptx;
pub mod rand;

/// `CUresult` codes used here (values from cuda.h).
pub mod status {
    pub type CUresult = u32;
    pub const SUCCESS: CUresult = 0;
    pub const INVALID_VALUE: CUresult = 1;
    pub const OUT_OF_MEMORY: CUresult = 2;
    pub const NOT_INITIALIZED: CUresult = 3;
    pub const NO_DEVICE: CUresult = 100;
    pub const INVALID_DEVICE: CUresult = 101;
    pub const INVALID_IMAGE: CUresult = 200;
    pub const INVALID_CONTEXT: CUresult = 201;
    pub const INVALID_PTX: CUresult = 218;
    pub const INVALID_HANDLE: CUresult = 400;
    pub const NOT_FOUND: CUresult = 500;
    pub const NOT_READY: CUresult = 600;
    pub const ILLEGAL_ADDRESS: CUresult = 700;
    pub const LAUNCH_OUT_OF_RESOURCES: CUresult = 701;
    pub const PEER_ACCESS_ALREADY_ENABLED: CUresult = 704;
    pub const LAUNCH_FAILED: CUresult = 719;
    pub const NOT_SUPPORTED: CUresult = 801;
    pub const UNKNOWN: CUresult = 999;

    /// (name, description) as cuGetErrorName / cuGetErrorString give them.
    pub fn describe(code: CUresult) -> Option<(&'static str, &'static str)> {
        Some(match code {
            SUCCESS => ("CUDA_SUCCESS", "no error"),
            INVALID_VALUE => ("CUDA_ERROR_INVALID_VALUE", "invalid argument"),
            OUT_OF_MEMORY => ("CUDA_ERROR_OUT_OF_MEMORY", "out of memory"),
            NOT_INITIALIZED => ("CUDA_ERROR_NOT_INITIALIZED", "initialization error"),
            NO_DEVICE => ("CUDA_ERROR_NO_DEVICE", "no CUDA-capable device is detected"),
            INVALID_DEVICE => ("CUDA_ERROR_INVALID_DEVICE", "invalid device ordinal"),
            INVALID_IMAGE => ("CUDA_ERROR_INVALID_IMAGE", "device kernel image is invalid"),
            INVALID_CONTEXT => ("CUDA_ERROR_INVALID_CONTEXT", "invalid device context"),
            INVALID_PTX => ("CUDA_ERROR_INVALID_PTX", "a PTX JIT compilation failed"),
            INVALID_HANDLE => ("CUDA_ERROR_INVALID_HANDLE", "invalid resource handle"),
            NOT_FOUND => ("CUDA_ERROR_NOT_FOUND", "named symbol not found"),
            NOT_READY => ("CUDA_ERROR_NOT_READY", "device not ready"),
            ILLEGAL_ADDRESS => (
                "CUDA_ERROR_ILLEGAL_ADDRESS",
                "an illegal memory access was encountered",
            ),
            LAUNCH_OUT_OF_RESOURCES => (
                "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES",
                "too many resources requested for launch",
            ),
            PEER_ACCESS_ALREADY_ENABLED => (
                "CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED",
                "peer access is already enabled",
            ),
            LAUNCH_FAILED => ("CUDA_ERROR_LAUNCH_FAILED", "unspecified launch failure"),
            NOT_SUPPORTED => ("CUDA_ERROR_NOT_SUPPORTED", "operation not supported"),
            702 => (
                "CUDA_ERROR_LAUNCH_TIMEOUT",
                "the launch timed out and was terminated",
            ),
            UNKNOWN => ("CUDA_ERROR_UNKNOWN", "unknown error"),
            _ => return None,
        })
    }
}

/// The emulator's settings, read once from the environment.
#[derive(Clone, Debug)]
pub struct Config {
    pub devices: usize,
    pub memory: u64,
    pub sm: (i32, i32),
    pub chaos: bool,
}

impl Config {
    pub fn from_env() -> Config {
        let devices = std::env::var("CUDA_EMU_DEVICES")
            .ok()
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or(2);
        let memory = std::env::var("CUDA_EMU_MEMORY")
            .ok()
            .and_then(|v| parse_size(&v))
            .unwrap_or(1 << 30);
        let sm = match std::env::var("CUDA_EMU_SM").ok().as_deref().map(str::trim) {
            Some("80") => (8, 0),
            _ => (9, 0),
        };
        let chaos = std::env::var("CUDA_EMU_CHAOS").is_ok_and(|v| !v.is_empty() && v != "0");
        Config {
            devices,
            memory,
            sm,
            chaos,
        }
    }
}

/// "1G", "512M", "65536" (bytes).
pub fn parse_size(text: &str) -> Option<u64> {
    let text = text.trim();
    let (digits, unit) = match text.char_indices().find(|(_, c)| !c.is_ascii_digit()) {
        Some((at, _)) => text.split_at(at),
        None => (text, ""),
    };
    let value: u64 = digits.parse().ok()?;
    let scale: u64 = match unit
        .to_ascii_uppercase()
        .trim_end_matches("IB")
        .trim_end_matches('B')
    {
        "" => 1,
        "K" => 1 << 10,
        "M" => 1 << 20,
        "G" => 1 << 30,
        _ => return None,
    };
    value.checked_mul(scale)
}

/// A small deterministic generator (SplitMix64) for chaos delays and cuRAND.
pub fn splitmix(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    x ^ (x >> 31)
}

/// Prints a diagnostic: the driver's codes carry no text, so the reason goes to stderr.
pub fn report(message: &str) {
    eprintln!("cuda_emu: {message}");
}

#[cfg(test)]
mod tests {
    #[test]
    fn sizes() {
        assert_eq!(super::parse_size("1G"), Some(1 << 30));
        assert_eq!(super::parse_size("64MiB"), Some(64 << 20));
        assert_eq!(super::parse_size("123"), Some(123));
        assert_eq!(super::parse_size("x"), None);
    }
}
