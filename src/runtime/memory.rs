//! Per-device memory accounting. Every buffer holds a [`Charge`] against its device's ledger and
//! gives it back when the last array using the buffer goes, so `memory_used` and `live_arrays`
//! are always current. A ledger with a [`Budget`] (a simulated or real GPU, or the host when
//! `DEVARRAY_CPU_MEMORY` is set) refuses requests that do not fit; the host ledger also checks
//! large requests against the kernel's MemAvailable. Host buffers kept for reuse
//! (`backend::cpu::pool`) hold no charge, so they count as free.
use crate::vocab::memory::host_memory;
use crate::vocab::{Device, DeviceKind, Result, RuntimeError};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;

/// Host requests below this size skip the /proc/meminfo check: it costs a file read.
const HOST_CHECK_BYTES: u64 = 64 << 20;

/// A device's memory limit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Budget {
    pub bytes: u64,
    /// The environment variable a user raises the limit with, named in the out-of-memory error.
    pub setting: Option<&'static str>,
}

#[derive(Debug)]
pub struct DeviceLedger {
    device: Device,
    budget: Option<Budget>,
    used: AtomicU64,
    /// The most `used` has been since the last `reset_peak` (budgeted ledgers only: the host's
    /// path stays one atomic add).
    peak: AtomicU64,
    live: AtomicUsize,
}

impl DeviceLedger {
    pub fn new(device: Device, budget: Option<Budget>) -> Arc<Self> {
        Arc::new(DeviceLedger {
            device,
            budget,
            used: AtomicU64::new(0),
            peak: AtomicU64::new(0),
            live: AtomicUsize::new(0),
        })
    }

    pub fn device(&self) -> Device {
        self.device
    }

    pub fn used(&self) -> u64 {
        self.used.load(Ordering::Relaxed)
    }

    /// The most bytes in use at once since the ledger began or `reset_peak` (what
    /// `torch.cuda.max_memory_allocated` reports); budgeted devices only, else `used`.
    pub fn peak(&self) -> u64 {
        match self.budget {
            Some(_) => self.peak.load(Ordering::Relaxed).max(self.used()),
            None => self.used(),
        }
    }

    /// Starts the peak again from what is in use now.
    pub fn reset_peak(&self) {
        self.peak.store(self.used(), Ordering::Relaxed);
    }

    pub fn live(&self) -> usize {
        self.live.load(Ordering::Relaxed)
    }

    /// The budget of a budgeted device, or the host's total memory.
    pub fn total(&self) -> Option<u64> {
        self.budget
            .map(|b| b.bytes)
            .or_else(|| host_memory().map(|(_, total)| total))
    }

    /// Reserves `bytes` for a new buffer, or says why it cannot.
    pub fn charge(self: &Arc<Self>, bytes: u64) -> Result<Charge> {
        match self.budget {
            Some(budget) => self.reserve_within(budget, bytes)?,
            // The unlimited path stays one atomic add: it is on every host allocation.
            None => {
                self.used.fetch_add(bytes, Ordering::Relaxed);
            }
        }
        if bytes >= HOST_CHECK_BYTES && self.device.kind == DeviceKind::Cpu {
            if let Some((available, total)) = host_memory() {
                if bytes > available {
                    self.used.fetch_sub(bytes, Ordering::Relaxed);
                    return Err(RuntimeError::OutOfMemory {
                        device: self.device,
                        requested: bytes,
                        free: available,
                        total,
                        setting: None,
                    });
                }
            }
        }
        self.live.fetch_add(1, Ordering::Relaxed);
        Ok(Charge {
            ledger: Arc::clone(self),
            bytes,
        })
    }

    /// Adds `bytes` to what is used if the total stays within `budget`, atomically, so two
    /// threads cannot both take the last free bytes.
    fn reserve_within(&self, budget: Budget, bytes: u64) -> Result<()> {
        let mut used = self.used.load(Ordering::Relaxed);
        loop {
            let after = used.checked_add(bytes).filter(|&a| a <= budget.bytes);
            let Some(after) = after else {
                return Err(RuntimeError::OutOfMemory {
                    device: self.device,
                    requested: bytes,
                    free: budget.bytes.saturating_sub(used),
                    total: budget.bytes,
                    setting: budget.setting,
                });
            };
            match self
                .used
                .compare_exchange_weak(used, after, Ordering::Relaxed, Ordering::Relaxed)
            {
                Ok(_) => {
                    self.peak.fetch_max(after, Ordering::Relaxed);
                    return Ok(());
                }
                Err(now) => used = now,
            }
        }
    }
}

/// Bytes held against a ledger; returned on drop.
#[derive(Debug)]
pub struct Charge {
    ledger: Arc<DeviceLedger>,
    bytes: u64,
}

impl Charge {
    pub fn ledger(&self) -> &Arc<DeviceLedger> {
        &self.ledger
    }
}

impl Drop for Charge {
    fn drop(&mut self) {
        self.ledger.used.fetch_sub(self.bytes, Ordering::Relaxed);
        self.ledger.live.fetch_sub(1, Ordering::Relaxed);
    }
}

/// Frees the large host buffers kept for reuse (`backend::cpu::pool`): called when a program
/// returns to the user, so an idle session holds only what its arrays need.
pub fn release_spare_buffers() {
    crate::backend::release_spare_buffers();
}

/// Keeps the memory a program frees for its next buffers (no fresh zeroed pages each training
/// step) until `release_spare_buffers`; called when a session starts.
pub fn hold_freed_memory() {
    crate::backend::hold_freed_memory();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn budget_is_enforced_and_returned() {
        let budget = Budget {
            bytes: 1000,
            setting: Some("DEVARRAY_SIM_GPU_MEMORY"),
        };
        let ledger = DeviceLedger::new(Device::gpu(0), Some(budget));
        let a = ledger.charge(600).unwrap();
        assert_eq!(ledger.used(), 600);
        assert_eq!(ledger.live(), 1);
        let err = ledger.charge(600).unwrap_err();
        assert_eq!(
            err,
            RuntimeError::OutOfMemory {
                device: Device::gpu(0),
                requested: 600,
                free: 400,
                total: 1000,
                setting: Some("DEVARRAY_SIM_GPU_MEMORY"),
            }
        );
        drop(a);
        assert_eq!(ledger.used(), 0);
        assert_eq!(ledger.live(), 0);
        assert!(ledger.charge(1000).is_ok());
    }

    #[test]
    fn host_budget_is_enforced_and_returned() {
        let budget = Budget {
            bytes: 100,
            setting: Some("DEVARRAY_CPU_MEMORY"),
        };
        let ledger = DeviceLedger::new(Device::cpu(0), Some(budget));
        let a = ledger.charge(60).unwrap();
        let b = ledger.charge(40).unwrap();
        assert_eq!(ledger.total(), Some(100));
        let err = ledger.charge(1).unwrap_err();
        assert_eq!(
            err,
            RuntimeError::OutOfMemory {
                device: Device::cpu(0),
                requested: 1,
                free: 0,
                total: 100,
                setting: Some("DEVARRAY_CPU_MEMORY"),
            }
        );
        // A request beyond what any counter can hold is refused, not wrapped.
        drop(b);
        assert!(ledger.charge(u64::MAX).is_err());
        assert_eq!((ledger.used(), ledger.live()), (60, 1));
        drop(a);
        assert_eq!((ledger.used(), ledger.live()), (0, 0));
    }

    #[test]
    fn host_refuses_more_than_available() {
        let ledger = DeviceLedger::new(Device::cpu(0), None);
        if host_memory().is_some() {
            let err = ledger.charge(u64::MAX / 2).unwrap_err();
            assert_eq!(err.ename(), "OutOfMemoryError");
        }
    }
}
