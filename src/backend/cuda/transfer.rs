//! Copies between the host and a GPU through pinned staging buffers, and between GPUs (peer to
//! peer where the cards can reach each other, through the host otherwise). Events order the work
//! of two devices' streams.
use super::device::{driver_error, lock, CudaDevice, DevicePtr};
use crate::vocab::Result;
use cudarc::driver::{result as dr, sys as cu, CudaEvent};
use std::sync::Arc;

/// Transfers are staged in pieces of this size, so a huge array needs no huge pinned buffer.
const STAGING_BYTES: usize = 16 << 20;

/// Page-locked host memory (the DMA engine reads it directly, at full bus speed).
struct Pinned {
    ptr: *mut u8,
    bytes: usize,
}

// SAFETY: the memory is owned by this value alone and only used under the device's staging
// mutex.
unsafe impl Send for Pinned {}

impl Pinned {
    fn new(bytes: usize) -> Result<Pinned> {
        // SAFETY: the caller bound a context; the flags ask for plain portable pinned memory.
        let ptr = unsafe { dr::malloc_host(bytes.max(1), cu::CU_MEMHOSTALLOC_PORTABLE) }
            .map_err(|e| driver_error("allocating pinned host memory", e))?;
        Ok(Pinned {
            ptr: ptr.cast(),
            bytes,
        })
    }

    fn slice(&mut self, len: usize) -> &mut [u8] {
        // SAFETY: ptr points to `bytes` bytes we own; len <= bytes at every call site.
        unsafe { std::slice::from_raw_parts_mut(self.ptr, len.min(self.bytes)) }
    }
}

impl Drop for Pinned {
    fn drop(&mut self) {
        // SAFETY: allocated by malloc_host; callers synchronise before dropping.
        let _ = unsafe { dr::free_host(self.ptr.cast()) };
    }
}

/// A device's two staging buffers, kept for its lifetime: page-locking memory costs
/// milliseconds per call, and with two buffers the host copy into one overlaps the DMA of the
/// other. Every transfer waits for its DMA before it releases them.
pub struct Staging([Pinned; 2]);

fn staging(slot: &mut Option<Staging>) -> Result<&mut [Pinned; 2]> {
    if slot.is_none() {
        *slot = Some(Staging([
            Pinned::new(STAGING_BYTES)?,
            Pinned::new(STAGING_BYTES)?,
        ]));
    }
    match slot {
        Some(Staging(buffers)) => Ok(buffers),
        None => Err(crate::vocab::RuntimeError::Value(
            "pinned staging buffers missing".into(),
        )),
    }
}

/// memcpy of a staging piece, split across the cores when it is large: one core cannot keep
/// up with the copy engine.
fn copy_bytes(dst: &mut [u8], src: &[u8]) {
    use rayon::prelude::*;
    const PART: usize = 2 << 20;
    if src.len() >= 2 * PART {
        dst.par_chunks_mut(PART)
            .zip(src.par_chunks(PART))
            .for_each(|(d, s)| d.copy_from_slice(s));
    } else {
        dst.copy_from_slice(src);
    }
}

fn record(device: &CudaDevice) -> Result<CudaEvent> {
    device
        .stream
        .record_event(Some(cu::CUevent_flags::CU_EVENT_DISABLE_TIMING))
        .map_err(|e| driver_error("recording an event", e))
}

fn wait(event: CudaEvent) -> Result<()> {
    event
        .synchronize()
        .map_err(|e| driver_error("synchronize", e))
}

pub fn host_to_device(device: &Arc<CudaDevice>, src: &[u8], dst: DevicePtr) -> Result<()> {
    if src.is_empty() {
        return Ok(());
    }
    device.bind()?;
    let mut slot = lock(&device.staging);
    let buffers = staging(&mut slot)?;
    drained(device, stage_in(device, buffers, src, dst))
}

pub fn device_to_host(device: &Arc<CudaDevice>, src: DevicePtr, dst: &mut [u8]) -> Result<()> {
    if dst.is_empty() {
        return Ok(());
    }
    device.bind()?;
    let mut slot = lock(&device.staging);
    let buffers = staging(&mut slot)?;
    drained(device, stage_out(device, buffers, src, dst))
}

/// A transfer that failed part-way may leave a DMA using the staging buffers: wait for the
/// device before the next transfer reuses them.
fn drained(device: &CudaDevice, result: Result<()>) -> Result<()> {
    if result.is_err() {
        let _ = device.synchronize();
    }
    result
}

fn stage_in(
    device: &CudaDevice,
    buffers: &mut [Pinned; 2],
    src: &[u8],
    dst: DevicePtr,
) -> Result<()> {
    // pending[b]: the DMA still reading buffer b.
    let mut pending: [Option<CudaEvent>; 2] = [None, None];
    for (i, piece) in src.chunks(STAGING_BYTES).enumerate() {
        let b = i % 2;
        if let Some(event) = pending[b].take() {
            wait(event)?;
        }
        copy_bytes(buffers[b].slice(piece.len()), piece);
        let at = dst + (i * STAGING_BYTES) as u64;
        // SAFETY: `at` has room for the piece (the destination holds src.len() bytes).
        unsafe {
            dr::memcpy_htod_async(at, buffers[b].slice(piece.len()), device.stream.cu_stream())
        }
        .map_err(|e| driver_error("copying to the GPU", e))?;
        pending[b] = Some(record(device)?);
    }
    // The buffers serve the next transfer: release them only once the DMA has read them.
    for event in pending.into_iter().flatten() {
        wait(event)?;
    }
    Ok(())
}

fn stage_out(
    device: &CudaDevice,
    buffers: &mut [Pinned; 2],
    src: DevicePtr,
    dst: &mut [u8],
) -> Result<()> {
    let pieces: Vec<&mut [u8]> = dst.chunks_mut(STAGING_BYTES).collect();
    let count = pieces.len();
    // The DMA of piece i runs while piece i - 1 is copied out of the other buffer. The stream
    // runs in order, so the first event also waits for the kernels that wrote `src`.
    let mut previous: Option<(CudaEvent, &mut [u8])> = None;
    for (i, piece) in pieces.into_iter().enumerate() {
        let b = i % 2;
        let at = src + (i * STAGING_BYTES) as u64;
        // SAFETY: `at` holds at least piece.len() bytes.
        unsafe {
            dr::memcpy_dtoh_async(buffers[b].slice(piece.len()), at, device.stream.cu_stream())
        }
        .map_err(|e| driver_error("copying from the GPU", e))?;
        let event = record(device)?;
        if let Some((done, out)) = previous.replace((event, piece)) {
            wait(done)?;
            copy_bytes(out, buffers[1 - b].slice(out.len()));
        }
    }
    if let Some((done, out)) = previous {
        wait(done)?;
        copy_bytes(out, buffers[(count - 1) % 2].slice(out.len()));
    }
    Ok(())
}

/// Can `from`'s memory be read by `to` directly? Enables access the first time it is asked.
fn peer_access(from: &CudaDevice, to: &CudaDevice) -> bool {
    let mut can = 0;
    // SAFETY: both devices are live; the out-pointer is valid.
    let ok =
        unsafe { cu::cuDeviceCanAccessPeer(&mut can, to.ctx.cu_device(), from.ctx.cu_device()) };
    if ok != cu::CUresult::CUDA_SUCCESS || can == 0 {
        return false;
    }
    if to.bind().is_err() {
        return false;
    }
    // SAFETY: both contexts are live; "already enabled" is success for our purpose.
    let enabled = unsafe { cu::cuCtxEnablePeerAccess(from.ctx.cu_ctx(), 0) };
    matches!(
        enabled,
        cu::CUresult::CUDA_SUCCESS | cu::CUresult::CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED
    )
}

/// Copies `bytes` from one GPU to another, ordered after the work that wrote the source and
/// before any later reuse of the source buffer.
pub fn device_to_device(
    from: &Arc<CudaDevice>,
    src: DevicePtr,
    to: &Arc<CudaDevice>,
    dst: DevicePtr,
    bytes: usize,
) -> Result<()> {
    if bytes == 0 {
        return Ok(());
    }
    if Arc::ptr_eq(from, to) {
        from.bind()?;
        // SAFETY: both ranges are live buffers of at least `bytes` on this device.
        return unsafe { dr::memcpy_dtod_async(dst, src, bytes, from.stream.cu_stream()) }
            .map_err(|e| driver_error("copying on the GPU", e));
    }
    if !peer_access(from, to) {
        let mut host = vec![0u8; bytes];
        device_to_host(from, src, &mut host)?;
        return host_to_device(to, &host, dst);
    }
    // The destination stream waits for everything queued on the source so far...
    let ready = from
        .stream
        .record_event(None)
        .map_err(|e| driver_error("recording an event", e))?;
    to.stream
        .wait(&ready)
        .map_err(|e| driver_error("waiting for an event", e))?;
    to.bind()?;
    // SAFETY: both buffers are live and hold `bytes`; the contexts are the buffers' owners.
    unsafe {
        dr::memcpy_peer_async(
            to.ctx.cu_ctx(),
            dst,
            from.ctx.cu_ctx(),
            src,
            bytes,
            to.stream.cu_stream(),
        )
    }
    .map_err(|e| driver_error("copying between GPUs", e))?;
    // ...and the source stream waits for the copy, so the source block cannot be reused by its
    // pool while the copy still reads it.
    let copied = to
        .stream
        .record_event(None)
        .map_err(|e| driver_error("recording an event", e))?;
    from.stream
        .wait(&copied)
        .map_err(|e| driver_error("waiting for an event", e))
}
