//! The host's memory as the kernel reports it, and the error for a host allocation the allocator
//! refused (backends raise it; the runtime's ledgers also read `host_memory`).
use super::device::Device;
use super::error::RuntimeError;

/// (MemAvailable, MemTotal) in bytes from /proc/meminfo, where the system has one.
pub fn host_memory() -> Option<(u64, u64)> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    let field = |name: &str| -> Option<u64> {
        let line = text.lines().find(|l| l.starts_with(name))?;
        let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
        kib.checked_mul(1024)
    };
    Some((field("MemAvailable:")?, field("MemTotal:")?))
}

/// The error for a host allocation the allocator refused.
pub fn host_out_of_memory(requested: u64) -> RuntimeError {
    let (free, total) = host_memory().unwrap_or((0, 0));
    RuntimeError::OutOfMemory {
        device: Device::cpu(0),
        requested,
        free,
        total,
        setting: None,
    }
}
