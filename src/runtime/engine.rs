//! The engine: what each device brings to an op (its memory ledger, its stream when it runs
//! asynchronously, its random generator) and the transfer ledger shared by all devices.
//!
//! Ordering rules (see ARCHITECTURE.md, "Devices and the engine"):
//! - Work on one device runs in submission order on its stream, so same-device dependencies
//!   need no bookkeeping.
//! - A copy between two asynchronous devices is two jobs: the source stream reads the source
//!   (after its pending writes, in its own order) into a staging buffer, and the destination
//!   stream's job first waits for that source position, then writes. Every wait is for a job
//!   submitted earlier, so the waits can never form a cycle.
//! - The CPU is synchronous: a copy to the host waits for the source's pending writes first.
use super::device::Device;
use super::error::{Result, RuntimeError};
use super::memory::DeviceLedger;
use super::random::DeviceRng;
use super::timeline::Timeline;
use crate::backend::sim::Stream;
use crate::backend::Placement;
use std::collections::HashMap;
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

/// Everything an op needs from its device.
pub(crate) struct DeviceCtx {
    pub device: Device,
    pub ledger: Arc<DeviceLedger>,
    /// The device's queue; None for a synchronous device (the CPU).
    pub stream: Option<Arc<Stream>>,
    pub rng: Arc<Mutex<DeviceRng>>,
    pub transfers: Arc<TransferLog>,
    /// When each op and copy ran (`%timeline`); shared by every device.
    pub timeline: Arc<Timeline>,
    /// The session's interrupt flag: blocking waits give up when it is set.
    pub interrupt: Arc<AtomicBool>,
    /// Where this device's storage is made: the host (cpu(0), simulated GPUs) or a CUDA GPU,
    /// whose own stream makes its work asynchronous without `stream`.
    pub placement: Placement,
    /// An error met where it could not be returned (a failed read for display, which shows
    /// zeros); the next synchronising call on this device reports it.
    pub deferred_error: Mutex<Option<RuntimeError>>,
}

impl std::fmt::Debug for DeviceCtx {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DeviceCtx")
            .field("device", &self.device)
            .field("stream", &self.stream.is_some())
            .field("cuda", &self.placement.is_cuda())
            .finish()
    }
}

impl DeviceCtx {
    /// Waits for every job queued on this device and reports the first error one raised.
    /// On a CUDA GPU it waits for the card's stream.
    pub fn synchronize(&self) -> Result<()> {
        if let Some(stream) = &self.stream {
            stream.wait(stream.last_submitted(), Some(&self.interrupt))?;
            if let Some(e) = stream.take_error() {
                return Err(e);
            }
        }
        self.placement.synchronize(&self.interrupt)?;
        self.take_deferred_error().map_or(Ok(()), Err)
    }

    /// Keeps `error` for the next synchronising call (the first one kept wins).
    pub fn defer_error(&self, error: RuntimeError) {
        self.deferred_error
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get_or_insert(error);
    }

    pub fn take_deferred_error(&self) -> Option<RuntimeError> {
        self.deferred_error
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take()
    }
}

/// A point in a device's queue (a CUDA event): its time is set when the work queued before
/// it has finished.
#[derive(Clone, Debug)]
pub struct Marker {
    pub device: Device,
    pub(crate) seq: u64,
    pub(crate) time: Arc<std::sync::OnceLock<std::time::Instant>>,
}

impl Marker {
    /// When the work before the marker finished; None while it runs.
    pub fn time(&self) -> Option<std::time::Instant> {
        self.time.get().copied()
    }
}

/// Whether the program asked for the copy (copyto, as_in_context, `@`) or it happened because
/// a value was read on the host (print, asnumpy, asscalar/item).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum TransferKind {
    Explicit,
    Implicit,
}

impl TransferKind {
    pub fn name(self) -> &'static str {
        match self {
            TransferKind::Explicit => "explicit",
            TransferKind::Implicit => "implicit",
        }
    }
}

/// Copies in one direction of one kind since the last reset.
#[derive(Clone, Debug, PartialEq)]
pub struct TransferRecord {
    pub from: Device,
    pub to: Device,
    pub kind: TransferKind,
    pub count: u64,
    pub bytes: u64,
    /// Time spent copying (queued copies add theirs when they run).
    pub time: Duration,
}

#[derive(Debug, Default)]
struct LogState {
    records: Vec<TransferRecord>,
    /// Bytes copied into and out of each device since the session started (never reset).
    totals: HashMap<Device, (u64, u64)>,
}

/// The session's transfer ledger.
#[derive(Debug, Default)]
pub struct TransferLog {
    state: Mutex<LogState>,
}

fn device_order(d: Device) -> (u8, usize) {
    (u8::from(!d.is_cpu()), d.id)
}

impl TransferLog {
    fn lock(&self) -> MutexGuard<'_, LogState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Counts one copy of `bytes` from `from` to `to` (its time is added with `add_time`).
    pub fn record(&self, from: Device, to: Device, kind: TransferKind, bytes: u64) {
        let mut state = self.lock();
        match state
            .records
            .iter_mut()
            .find(|r| r.from == from && r.to == to && r.kind == kind)
        {
            Some(r) => {
                r.count += 1;
                r.bytes += bytes;
            }
            None => state.records.push(TransferRecord {
                from,
                to,
                kind,
                count: 1,
                bytes,
                time: Duration::ZERO,
            }),
        }
        state.totals.entry(to).or_default().0 += bytes;
        state.totals.entry(from).or_default().1 += bytes;
    }

    /// Adds the time a copy took. A copy that finishes after a reset adds nothing.
    pub fn add_time(&self, from: Device, to: Device, kind: TransferKind, time: Duration) {
        let mut state = self.lock();
        if let Some(r) = state
            .records
            .iter_mut()
            .find(|r| r.from == from && r.to == to && r.kind == kind)
        {
            r.time += time;
        }
    }

    /// The records, ordered by source, destination, then kind.
    pub fn snapshot(&self) -> Vec<TransferRecord> {
        let mut records = self.lock().records.clone();
        records.sort_by_key(|r| (device_order(r.from), device_order(r.to), r.kind));
        records
    }

    pub fn reset(&self) {
        self.lock().records.clear();
    }

    /// (bytes copied in, bytes copied out) of `device` since the session started.
    pub fn totals(&self, device: Device) -> (u64, u64) {
        self.lock().totals.get(&device).copied().unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_merge_by_direction_and_kind_and_reset_keeps_totals() {
        let log = TransferLog::default();
        let (cpu, g0, g1) = (Device::cpu(0), Device::gpu(0), Device::gpu(1));
        log.record(g0, g1, TransferKind::Explicit, 24);
        log.record(cpu, g0, TransferKind::Explicit, 8);
        log.record(cpu, g0, TransferKind::Explicit, 8);
        log.record(g0, cpu, TransferKind::Implicit, 4);
        log.add_time(cpu, g0, TransferKind::Explicit, Duration::from_micros(3));
        let snap = log.snapshot();
        let summary: Vec<(String, String, TransferKind, u64, u64)> = snap
            .iter()
            .map(|r| {
                (
                    r.from.to_string(),
                    r.to.to_string(),
                    r.kind,
                    r.count,
                    r.bytes,
                )
            })
            .collect();
        assert_eq!(
            summary,
            vec![
                (
                    "cpu(0)".into(),
                    "gpu(0)".into(),
                    TransferKind::Explicit,
                    2,
                    16
                ),
                (
                    "gpu(0)".into(),
                    "cpu(0)".into(),
                    TransferKind::Implicit,
                    1,
                    4
                ),
                (
                    "gpu(0)".into(),
                    "gpu(1)".into(),
                    TransferKind::Explicit,
                    1,
                    24
                ),
            ]
        );
        assert_eq!(snap[0].time, Duration::from_micros(3));
        log.reset();
        assert!(log.snapshot().is_empty());
        assert_eq!(log.totals(g0), (16, 28));
        assert_eq!(log.totals(g1), (24, 0));
        // Time for a copy counted before the reset is dropped, not misfiled.
        log.add_time(g0, g1, TransferKind::Explicit, Duration::from_secs(1));
        assert!(log.snapshot().is_empty());
    }
}
