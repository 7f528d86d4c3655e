//! The exported driver entry points (the subset devarray's backend reaches through cudarc, plus
//! their obvious neighbours). Signatures follow cuda.h; handles are opaque integers.
use super::stream::Event;
use super::{emu, lock, Module};
use crate::ptx;
use crate::status::*;
use crate::{report, Config};
use std::ffi::{c_char, c_int, c_uint, c_void, CStr};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::Ordering;
use std::sync::Arc;

/// The CUDA version this driver reports (12.9: not older than the NVRTC wheel CI installs, so
/// the backend loads PTX rather than cubins, which the emulator cannot run).
pub const DRIVER_VERSION: c_int = 12090;

/// Runs an entry point; a panic inside becomes CUDA_ERROR_UNKNOWN instead of unwinding into C.
pub(crate) fn guard(f: impl FnOnce() -> Result<(), CUresult>) -> CUresult {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(Ok(())) => SUCCESS,
        Ok(Err(code)) => code,
        Err(_) => {
            report("internal panic (a bug in the emulator)");
            UNKNOWN
        }
    }
}

unsafe fn out<T>(ptr: *mut T, value: T) -> Result<(), CUresult> {
    if ptr.is_null() {
        return Err(INVALID_VALUE);
    }
    ptr.write(value);
    Ok(())
}

fn card_index(dev: c_int) -> Result<usize, CUresult> {
    usize::try_from(dev)
        .ok()
        .filter(|&d| d < emu().cards.len())
        .ok_or(INVALID_DEVICE)
}

// ---- init, devices --------------------------------------------------------------------------

#[no_mangle]
pub unsafe extern "C" fn cuInit(_flags: c_uint) -> CUresult {
    guard(|| {
        if emu().cards.is_empty() {
            return Err(NO_DEVICE);
        }
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuDriverGetVersion(version: *mut c_int) -> CUresult {
    guard(|| out(version, DRIVER_VERSION))
}

#[no_mangle]
pub unsafe extern "C" fn cuDeviceGetCount(count: *mut c_int) -> CUresult {
    guard(|| out(count, emu().cards.len() as c_int))
}

#[no_mangle]
pub unsafe extern "C" fn cuDeviceGet(device: *mut c_int, ordinal: c_int) -> CUresult {
    guard(|| out(device, card_index(ordinal)? as c_int))
}

#[no_mangle]
pub unsafe extern "C" fn cuDeviceGetName(name: *mut c_char, len: c_int, dev: c_int) -> CUresult {
    guard(|| {
        card_index(dev)?;
        let (major, minor) = emu().config.sm;
        let text = format!("Emulated CUDA GPU (sm_{major}{minor})\0");
        let n = usize::try_from(len).map_err(|_| INVALID_VALUE)?;
        if name.is_null() || n == 0 {
            return Err(INVALID_VALUE);
        }
        let bytes = text.as_bytes();
        let k = bytes.len().min(n);
        std::ptr::copy_nonoverlapping(bytes.as_ptr(), name.cast(), k);
        *name.add(k - 1) = 0;
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuDeviceTotalMem_v2(bytes: *mut usize, dev: c_int) -> CUresult {
    guard(|| {
        card_index(dev)?;
        out(bytes, emu().config.memory as usize)
    })
}

/// An sm_90's (or sm_80's) attributes, H100/A100-like.
pub fn attribute(config: &Config, attr: c_int) -> Option<c_int> {
    let sm90 = config.sm == (9, 0);
    Some(match attr {
        1 => 1024,                             // max threads per block
        2 | 3 => 1024,                         // max block dim x, y
        4 => 64,                               // max block dim z
        5 => i32::MAX,                         // max grid dim x
        6 | 7 => 65_535,                       // max grid dim y, z
        8 => ptx::exec::SHARED_LIMIT as c_int, // shared memory per block
        9 => 65_536,                           // constant memory
        10 => 32,                              // warp size
        12 => 65_536,                          // registers per block
        13 => 1_755_000,                       // clock rate (kHz)
        16 => {
            if sm90 {
                132
            } else {
                108
            }
        } // multiprocessors
        19 | 31 | 41 | 83 => 1,                // map host memory, concurrent kernels, UVA, managed
        38 => {
            if sm90 {
                50 << 20
            } else {
                40 << 20
            }
        } // L2 cache
        39 => 2048,                            // threads per multiprocessor
        40 => 2,                               // async copy engines
        75 => config.sm.0,
        76 => config.sm.1,
        81 => {
            if sm90 {
                233_472
            } else {
                167_936
            }
        } // shared memory per multiprocessor
        82 => 65_536,
        97 => {
            if sm90 {
                232_448
            } else {
                166_912
            }
        } // opt-in shared memory per block
        // Stream-ordered allocation is not emulated: cudarc then uses cuMemAlloc/cuMemFree.
        115 => 0,
        _ => return None,
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuDeviceGetAttribute(
    value: *mut c_int,
    attr: c_int,
    dev: c_int,
) -> CUresult {
    guard(|| {
        card_index(dev)?;
        match attribute(&emu().config, attr) {
            Some(v) => out(value, v),
            None => {
                report(&format!(
                    "cuDeviceGetAttribute: attribute {attr} is not emulated"
                ));
                Err(INVALID_VALUE)
            }
        }
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuDeviceGetUuid(uuid: *mut [u8; 16], dev: c_int) -> CUresult {
    guard(|| {
        let d = card_index(dev)?;
        let mut id = *b"cuda_emu-card-00";
        id[15] = b'0' + (d % 10) as u8;
        out(uuid, id)
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuDeviceGetUuid_v2(uuid: *mut [u8; 16], dev: c_int) -> CUresult {
    cuDeviceGetUuid(uuid, dev)
}

#[no_mangle]
pub unsafe extern "C" fn cuDeviceCanAccessPeer(
    can: *mut c_int,
    dev: c_int,
    peer: c_int,
) -> CUresult {
    guard(|| {
        let (a, b) = (card_index(dev)?, card_index(peer)?);
        out(can, c_int::from(a != b))
    })
}

// ---- contexts -------------------------------------------------------------------------------

#[no_mangle]
pub unsafe extern "C" fn cuDevicePrimaryCtxRetain(ctx: *mut u64, dev: c_int) -> CUresult {
    guard(|| {
        let d = card_index(dev)?;
        emu().cards[d].retained.fetch_add(1, Ordering::SeqCst);
        out(ctx, super::ctx_handle(d))
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuDevicePrimaryCtxRelease_v2(dev: c_int) -> CUresult {
    guard(|| {
        let d = card_index(dev)?;
        let card = &emu().cards[d];
        card.retained
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
            .map(|_| ())
            .map_err(|_| INVALID_CONTEXT)
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuCtxSetCurrent(ctx: u64) -> CUresult {
    guard(|| {
        if ctx == 0 {
            super::set_current(None);
            return Ok(());
        }
        let d = super::ctx_ordinal(ctx).ok_or(INVALID_CONTEXT)?;
        super::set_current(Some(d));
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuCtxGetCurrent(ctx: *mut u64) -> CUresult {
    guard(|| out(ctx, super::current().map_or(0, super::ctx_handle)))
}

#[no_mangle]
pub unsafe extern "C" fn cuCtxGetDevice(dev: *mut c_int) -> CUresult {
    guard(|| out(dev, super::current().ok_or(INVALID_CONTEXT)? as c_int))
}

#[no_mangle]
pub unsafe extern "C" fn cuCtxSynchronize() -> CUresult {
    guard(|| {
        let d = super::current().ok_or(INVALID_CONTEXT)?;
        emu().synchronize_card(d);
        emu().card().map(|_| ())
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuCtxEnablePeerAccess(peer_ctx: u64, _flags: c_uint) -> CUresult {
    guard(|| {
        let me = super::current().ok_or(INVALID_CONTEXT)?;
        let peer = super::ctx_ordinal(peer_ctx).ok_or(INVALID_CONTEXT)?;
        if peer == me {
            return Err(INVALID_DEVICE);
        }
        if !lock(&emu().cards[me].peers).insert(peer) {
            return Err(PEER_ACCESS_ALREADY_ENABLED);
        }
        Ok(())
    })
}

// ---- memory ---------------------------------------------------------------------------------

#[no_mangle]
pub unsafe extern "C" fn cuMemAlloc_v2(ptr: *mut u64, bytes: usize) -> CUresult {
    guard(|| {
        let e = emu();
        let card = e.card()?;
        // Chaos: fresh memory is garbage, as on a card that reuses freed pages.
        let fill = e.config.chaos.then_some(0xA5);
        let p = e.memory.alloc(card.ordinal, bytes, e.config.memory, fill)?;
        out(ptr, p)
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuMemFree_v2(ptr: u64) -> CUresult {
    guard(|| {
        let e = emu();
        if ptr == 0 {
            return Ok(());
        }
        // Freeing synchronises with the card's queued work, as the real driver does.
        if let Some(d) = super::memory::Memory::card_of(ptr).filter(|&d| d < e.cards.len()) {
            e.synchronize_card(d);
        }
        e.memory.free(ptr)
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuMemGetInfo_v2(free: *mut usize, total: *mut usize) -> CUresult {
    guard(|| {
        let e = emu();
        let card = e.card()?;
        let used = e.memory.used(card.ordinal);
        out(free, e.config.memory.saturating_sub(used) as usize)?;
        out(total, e.config.memory as usize)
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuMemHostAlloc(
    ptr: *mut *mut c_void,
    bytes: usize,
    _flags: c_uint,
) -> CUresult {
    guard(|| {
        emu().card()?;
        let layout =
            std::alloc::Layout::from_size_align(bytes.max(1), 4096).map_err(|_| INVALID_VALUE)?;
        let p = std::alloc::alloc_zeroed(layout);
        if p.is_null() {
            return Err(OUT_OF_MEMORY);
        }
        lock(&emu().pinned).insert(p as usize, layout);
        out(ptr, p.cast())
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuMemFreeHost(ptr: *mut c_void) -> CUresult {
    guard(|| {
        let e = emu();
        if lock(&e.pending_pinned)
            .get(&(ptr as usize))
            .is_some_and(|&n| n > 0)
        {
            report("cuMemFreeHost: the pinned buffer is freed while an asynchronous copy of it has not run (synchronise the stream first)");
            if e.config.chaos {
                return Err(INVALID_VALUE);
            }
        }
        let layout = lock(&e.pinned)
            .remove(&(ptr as usize))
            .ok_or(INVALID_VALUE)?;
        std::alloc::dealloc(ptr.cast(), layout);
        Ok(())
    })
}

/// A host pointer that a job may use later (the caller promises it stays valid: pinned memory).
#[derive(Clone, Copy)]
struct HostPtr(usize);
// SAFETY: only pinned buffers, which the program keeps alive until the copy ran (checked in
// chaos mode), cross to the stream thread.
unsafe impl Send for HostPtr {}

fn pending(start: Option<usize>, delta: i32) {
    if let Some(s) = start {
        let mut map = lock(&emu().pending_pinned);
        let n = map.entry(s).or_insert(0);
        *n = n.saturating_add_signed(delta);
    }
}

unsafe fn htod(
    dst: u64,
    src: *const c_void,
    n: usize,
    stream: u64,
    asynchronous: bool,
) -> Result<(), CUresult> {
    let e = emu();
    let s = e.stream(stream)?;
    if n == 0 {
        return Ok(());
    }
    if src.is_null() {
        return Err(INVALID_VALUE);
    }
    // A bad destination is an error at the call, as the driver checks its pointers.
    e.memory.find(dst, n).ok_or(INVALID_VALUE)?;
    let pinned = e.is_pinned(src as usize, n);
    if asynchronous && pinned {
        let start = e.pinned_start(src as usize);
        let snapshot = e
            .config
            .chaos
            .then(|| std::slice::from_raw_parts(src.cast::<u8>(), n).to_vec());
        let host = HostPtr(src as usize);
        pending(start, 1);
        s.submit(Box::new(move || {
            let data = std::slice::from_raw_parts(host.0 as *const u8, n);
            let result = match &snapshot {
                Some(before) if before.as_slice() != data => {
                    report("chaos: a pinned host buffer was changed before the asynchronous copy from it ran (a missing synchronisation)");
                    Err(UNKNOWN)
                }
                _ => emu().memory.write(dst, data),
            };
            pending(start, -1);
            result
        }))?;
        return Ok(());
    }
    // Pageable memory (or a synchronous copy): staged at once, after the stream's earlier work.
    let data = std::slice::from_raw_parts(src.cast::<u8>(), n).to_vec();
    s.submit(Box::new(move || emu().memory.write(dst, &data)))?;
    s.synchronize();
    e.card().map(|_| ())
}

unsafe fn dtoh(
    dst: *mut c_void,
    src: u64,
    n: usize,
    stream: u64,
    asynchronous: bool,
) -> Result<(), CUresult> {
    let e = emu();
    let s = e.stream(stream)?;
    if n == 0 {
        return Ok(());
    }
    if dst.is_null() {
        return Err(INVALID_VALUE);
    }
    e.memory.find(src, n).ok_or(INVALID_VALUE)?;
    let host = HostPtr(dst as usize);
    let pinned = e.is_pinned(dst as usize, n);
    let start = if pinned {
        e.pinned_start(dst as usize)
    } else {
        None
    };
    if asynchronous && pinned && e.config.chaos {
        // Chaos: until the copy runs the buffer holds garbage, so a read before a sync fails.
        std::ptr::write_bytes(dst.cast::<u8>(), 0xCD, n);
    }
    pending(start, 1);
    s.submit(Box::new(move || {
        let out = std::slice::from_raw_parts_mut(host.0 as *mut u8, n);
        let result = emu().memory.read(src, out);
        pending(start, -1);
        result
    }))?;
    if !(asynchronous && pinned) {
        s.synchronize();
        return e.card().map(|_| ());
    }
    Ok(())
}

fn dtod(dst: u64, src: u64, n: usize, stream: u64, asynchronous: bool) -> Result<(), CUresult> {
    let e = emu();
    let s = e.stream(stream)?;
    if n == 0 {
        return Ok(());
    }
    e.memory.find(src, n).ok_or(INVALID_VALUE)?;
    e.memory.find(dst, n).ok_or(INVALID_VALUE)?;
    s.submit(Box::new(move || emu().memory.copy(dst, src, n)))?;
    if !asynchronous {
        s.synchronize();
        return e.card().map(|_| ());
    }
    Ok(())
}

#[no_mangle]
pub unsafe extern "C" fn cuMemcpyHtoD_v2(dst: u64, src: *const c_void, n: usize) -> CUresult {
    guard(|| htod(dst, src, n, 0, false))
}

#[no_mangle]
pub unsafe extern "C" fn cuMemcpyHtoDAsync_v2(
    dst: u64,
    src: *const c_void,
    n: usize,
    stream: u64,
) -> CUresult {
    guard(|| htod(dst, src, n, stream, true))
}

#[no_mangle]
pub unsafe extern "C" fn cuMemcpyDtoH_v2(dst: *mut c_void, src: u64, n: usize) -> CUresult {
    guard(|| dtoh(dst, src, n, 0, false))
}

#[no_mangle]
pub unsafe extern "C" fn cuMemcpyDtoHAsync_v2(
    dst: *mut c_void,
    src: u64,
    n: usize,
    stream: u64,
) -> CUresult {
    guard(|| dtoh(dst, src, n, stream, true))
}

#[no_mangle]
pub unsafe extern "C" fn cuMemcpyDtoD_v2(dst: u64, src: u64, n: usize) -> CUresult {
    guard(|| dtod(dst, src, n, 0, false))
}

#[no_mangle]
pub unsafe extern "C" fn cuMemcpyDtoDAsync_v2(
    dst: u64,
    src: u64,
    n: usize,
    stream: u64,
) -> CUresult {
    guard(|| dtod(dst, src, n, stream, true))
}

/// Between cards: each pointer must be on its context's card.
fn peer(
    dst: u64,
    dst_ctx: u64,
    src: u64,
    src_ctx: u64,
    n: usize,
    stream: u64,
    asynchronous: bool,
) -> Result<(), CUresult> {
    let (dc, sc) = (
        super::ctx_ordinal(dst_ctx).ok_or(INVALID_CONTEXT)?,
        super::ctx_ordinal(src_ctx).ok_or(INVALID_CONTEXT)?,
    );
    let e = emu();
    let (da, _) = e.memory.find(dst, n.max(1)).ok_or(INVALID_VALUE)?;
    let (sa, _) = e.memory.find(src, n.max(1)).ok_or(INVALID_VALUE)?;
    if da.device != dc || sa.device != sc {
        report("cuMemcpyPeer: a pointer is not on the card of its context");
        return Err(INVALID_VALUE);
    }
    dtod(dst, src, n, stream, asynchronous)
}

#[no_mangle]
pub unsafe extern "C" fn cuMemcpyPeerAsync(
    dst: u64,
    dst_ctx: u64,
    src: u64,
    src_ctx: u64,
    n: usize,
    stream: u64,
) -> CUresult {
    guard(|| peer(dst, dst_ctx, src, src_ctx, n, stream, true))
}

#[no_mangle]
pub unsafe extern "C" fn cuMemcpyPeer(
    dst: u64,
    dst_ctx: u64,
    src: u64,
    src_ctx: u64,
    n: usize,
) -> CUresult {
    guard(|| peer(dst, dst_ctx, src, src_ctx, n, 0, false))
}

fn memset(
    dst: u64,
    pattern: Vec<u8>,
    count: usize,
    stream: u64,
    asynchronous: bool,
) -> Result<(), CUresult> {
    let e = emu();
    let s = e.stream(stream)?;
    let n = count * pattern.len();
    if n == 0 {
        return Ok(());
    }
    e.memory.find(dst, n).ok_or(INVALID_VALUE)?;
    s.submit(Box::new(move || {
        if pattern.iter().all(|&b| b == pattern[0]) {
            return emu().memory.fill(dst, pattern[0], n);
        }
        let data: Vec<u8> = pattern.iter().copied().cycle().take(n).collect();
        emu().memory.write(dst, &data)
    }))?;
    if !asynchronous {
        s.synchronize();
        return e.card().map(|_| ());
    }
    Ok(())
}

#[no_mangle]
pub unsafe extern "C" fn cuMemsetD8_v2(dst: u64, value: u8, n: usize) -> CUresult {
    guard(|| memset(dst, vec![value], n, 0, false))
}

#[no_mangle]
pub unsafe extern "C" fn cuMemsetD8Async(dst: u64, value: u8, n: usize, stream: u64) -> CUresult {
    guard(|| memset(dst, vec![value], n, stream, true))
}

#[no_mangle]
pub unsafe extern "C" fn cuMemsetD32_v2(dst: u64, value: u32, n: usize) -> CUresult {
    guard(|| memset(dst, value.to_le_bytes().to_vec(), n, 0, false))
}

#[no_mangle]
pub unsafe extern "C" fn cuMemsetD32Async(dst: u64, value: u32, n: usize, stream: u64) -> CUresult {
    guard(|| memset(dst, value.to_le_bytes().to_vec(), n, stream, true))
}

// ---- streams and events ---------------------------------------------------------------------

#[no_mangle]
pub unsafe extern "C" fn cuStreamCreate(stream: *mut u64, _flags: c_uint) -> CUresult {
    guard(|| {
        let e = emu();
        let card = e.card()?;
        let s = super::stream::Stream::new(card.ordinal, Arc::clone(&card.sticky), e.config.chaos);
        lock(&card.streams).push(Arc::clone(&s));
        let handle = e.handle();
        lock(&e.streams).insert(handle, s);
        out(stream, handle)
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuStreamCreateWithPriority(
    stream: *mut u64,
    flags: c_uint,
    _priority: c_int,
) -> CUresult {
    cuStreamCreate(stream, flags)
}

#[no_mangle]
pub unsafe extern "C" fn cuStreamDestroy_v2(stream: u64) -> CUresult {
    guard(|| {
        let e = emu();
        let s = lock(&e.streams).remove(&stream).ok_or(INVALID_HANDLE)?;
        // Work already queued still runs (as on a GPU); the worker ends after it.
        s.close();
        lock(&e.cards[s.device].streams).retain(|x| !Arc::ptr_eq(x, &s));
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuStreamSynchronize(stream: u64) -> CUresult {
    guard(|| {
        let s = emu().stream(stream)?;
        s.synchronize();
        match emu().sticky(s.device) {
            SUCCESS => Ok(()),
            code => Err(code),
        }
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuStreamQuery(stream: u64) -> CUresult {
    guard(|| {
        let s = emu().stream(stream)?;
        if s.reached(s.ticket()) {
            Ok(())
        } else {
            Err(NOT_READY)
        }
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuStreamWaitEvent(stream: u64, event: u64, _flags: c_uint) -> CUresult {
    guard(|| {
        let e = emu();
        let s = e.stream(stream)?;
        let ev = lock(&e.events).get(&event).cloned().ok_or(INVALID_HANDLE)?;
        if let Some((src, ticket)) = ev.point() {
            if !Arc::ptr_eq(&src, &s) {
                s.submit(Box::new(move || {
                    src.wait_for(ticket);
                    Ok(())
                }))?;
            }
        }
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuEventCreate(event: *mut u64, _flags: c_uint) -> CUresult {
    guard(|| {
        let e = emu();
        e.card()?;
        let handle = e.handle();
        lock(&e.events).insert(handle, Arc::new(Event::default()));
        out(event, handle)
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuEventRecord(event: u64, stream: u64) -> CUresult {
    guard(|| {
        let e = emu();
        let s = e.stream(stream)?;
        let ev = lock(&e.events).get(&event).cloned().ok_or(INVALID_HANDLE)?;
        let record = Arc::clone(&ev);
        let ticket = s.submit(Box::new(move || {
            *lock(&record.time) = Some(std::time::Instant::now());
            Ok(())
        }))?;
        *lock(&ev.point) = Some((s, ticket));
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuEventQuery(event: u64) -> CUresult {
    guard(|| {
        let ev = lock(&emu().events)
            .get(&event)
            .cloned()
            .ok_or(INVALID_HANDLE)?;
        if let Some((s, _)) = ev.point() {
            if emu().sticky(s.device) != SUCCESS {
                return Err(emu().sticky(s.device));
            }
        }
        if ev.is_complete() {
            Ok(())
        } else {
            Err(NOT_READY)
        }
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuEventSynchronize(event: u64) -> CUresult {
    guard(|| {
        let ev = lock(&emu().events)
            .get(&event)
            .cloned()
            .ok_or(INVALID_HANDLE)?;
        if let Some((s, ticket)) = ev.point() {
            s.wait_for(ticket);
            if emu().sticky(s.device) != SUCCESS {
                return Err(emu().sticky(s.device));
            }
        }
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuEventElapsedTime(ms: *mut f32, start: u64, end: u64) -> CUresult {
    guard(|| {
        let e = emu();
        let (a, b) = {
            let events = lock(&e.events);
            (
                events.get(&start).cloned().ok_or(INVALID_HANDLE)?,
                events.get(&end).cloned().ok_or(INVALID_HANDLE)?,
            )
        };
        if !a.is_complete() || !b.is_complete() {
            return Err(NOT_READY);
        }
        let (ta, tb) = (*lock(&a.time), *lock(&b.time));
        match (ta, tb) {
            (Some(ta), Some(tb)) => {
                out(ms, tb.saturating_duration_since(ta).as_secs_f32() * 1000.0)
            }
            _ => Err(INVALID_HANDLE),
        }
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuEventElapsedTime_v2(ms: *mut f32, start: u64, end: u64) -> CUresult {
    cuEventElapsedTime(ms, start, end)
}

#[no_mangle]
pub unsafe extern "C" fn cuEventDestroy_v2(event: u64) -> CUresult {
    guard(|| {
        lock(&emu().events)
            .remove(&event)
            .map(|_| ())
            .ok_or(INVALID_HANDLE)
    })
}

// ---- modules and launches -------------------------------------------------------------------

/// Parses PTX for the current card and places its `.global` variables in the card's memory.
pub fn load_ptx(text: &str) -> Result<Module, CUresult> {
    let e = emu();
    let card = e.card()?;
    let program = ptx::parse(text).map_err(|msg| {
        report(&format!("cuModuleLoadData: {msg}"));
        INVALID_PTX
    })?;
    let (major, minor) = e.config.sm;
    let arch = program
        .target
        .strip_prefix("sm_")
        .and_then(|t| t.trim_end_matches(['a', 'f']).parse::<i32>().ok())
        .unwrap_or(0);
    if arch > major * 10 + minor {
        report(&format!(
            "cuModuleLoadData: PTX for {} cannot run on an sm_{major}{minor} card",
            program.target
        ));
        return Err(INVALID_PTX);
    }
    let mut globals = Vec::new();
    for var in &program.globals {
        let p = e
            .memory
            .alloc(card.ordinal, var.size.max(1) as usize, u64::MAX, None)?;
        if !var.init.is_empty() {
            e.memory.write(p, &var.init)?;
        }
        globals.push(p);
    }
    Ok(Module {
        device: card.ordinal,
        program,
        globals,
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuModuleLoadData(module: *mut u64, image: *const c_void) -> CUresult {
    guard(|| {
        if image.is_null() {
            return Err(INVALID_VALUE);
        }
        let head = std::slice::from_raw_parts(image.cast::<u8>(), 4);
        if head == b"\x7fELF" {
            report(
                "cuModuleLoadData: a cubin (machine code) was given; the emulator runs PTX only",
            );
            return Err(INVALID_IMAGE);
        }
        let text = CStr::from_ptr(image.cast())
            .to_str()
            .map_err(|_| INVALID_PTX)?;
        let m = load_ptx(text)?;
        let e = emu();
        let handle = e.handle();
        lock(&e.modules).insert(handle, Arc::new(m));
        out(module, handle)
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuModuleUnload(module: u64) -> CUresult {
    guard(|| {
        let e = emu();
        let m = lock(&e.modules).remove(&module).ok_or(INVALID_HANDLE)?;
        e.synchronize_card(m.device);
        lock(&e.functions).retain(|_, (owner, _)| !Arc::ptr_eq(owner, &m));
        for &p in &m.globals {
            let _ = e.memory.free(p);
        }
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuModuleGetFunction(
    func: *mut u64,
    module: u64,
    name: *const c_char,
) -> CUresult {
    guard(|| {
        let e = emu();
        let m = lock(&e.modules)
            .get(&module)
            .cloned()
            .ok_or(INVALID_HANDLE)?;
        if name.is_null() {
            return Err(INVALID_VALUE);
        }
        let name = CStr::from_ptr(name).to_str().map_err(|_| NOT_FOUND)?;
        let index = m.program.function(name).ok_or(NOT_FOUND)?;
        let handle = e.handle();
        lock(&e.functions).insert(handle, (m, index));
        out(func, handle)
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuModuleGetGlobal_v2(
    ptr: *mut u64,
    bytes: *mut usize,
    module: u64,
    name: *const c_char,
) -> CUresult {
    guard(|| {
        let m = lock(&emu().modules)
            .get(&module)
            .cloned()
            .ok_or(INVALID_HANDLE)?;
        let name = CStr::from_ptr(name).to_str().map_err(|_| NOT_FOUND)?;
        let i = m
            .program
            .globals
            .iter()
            .position(|g| g.name == name)
            .ok_or(NOT_FOUND)?;
        if !ptr.is_null() {
            *ptr = m.globals[i];
        }
        if !bytes.is_null() {
            *bytes = m.program.globals[i].size as usize;
        }
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuLaunchKernel(
    func: u64,
    gx: c_uint,
    gy: c_uint,
    gz: c_uint,
    bx: c_uint,
    by: c_uint,
    bz: c_uint,
    shared: c_uint,
    stream: u64,
    params: *mut *mut c_void,
    extra: *mut *mut c_void,
) -> CUresult {
    guard(|| {
        let e = emu();
        let card = e.card()?;
        let s = e.stream(stream)?;
        let (m, index) = lock(&e.functions)
            .get(&func)
            .cloned()
            .ok_or(INVALID_HANDLE)?;
        if m.device != card.ordinal || s.device != card.ordinal {
            report("cuLaunchKernel: the function or stream belongs to another card's context");
            return Err(INVALID_CONTEXT);
        }
        if !extra.is_null() {
            report("cuLaunchKernel: the `extra` argument form is not emulated");
            return Err(NOT_SUPPORTED);
        }
        let grid = ptx::Grid {
            grid: [gx, gy, gz],
            block: [bx, by, bz],
            dynamic_shared: shared,
        };
        let f = &m.program.functions[index];
        if let Err(err) = ptx::exec::check_grid(&m.program, index, &grid) {
            report(&format!("cuLaunchKernel {}: {}", f.name, err.message));
            return Err(err.code);
        }
        let mut bytes = vec![0u8; f.in_size as usize];
        if !f.params.is_empty() && params.is_null() {
            return Err(INVALID_VALUE);
        }
        for (i, p) in f.params.iter().enumerate() {
            let src = *params.add(i);
            if src.is_null() {
                return Err(INVALID_VALUE);
            }
            std::ptr::copy_nonoverlapping(
                src.cast::<u8>(),
                bytes.as_mut_ptr().add(p.offset as usize),
                p.size as usize,
            );
        }
        s.submit(Box::new(move || {
            let memory = emu().memory.snapshot();
            ptx::launch(&m.program, index, grid, &bytes, &m.globals, &memory).map_err(|err| {
                report(&format!("kernel fault: {}", err.message));
                err.code
            })
        }))?;
        Ok(())
    })
}

// ---- errors ---------------------------------------------------------------------------------

static NAMES: std::sync::OnceLock<Vec<(CUresult, std::ffi::CString, std::ffi::CString)>> =
    std::sync::OnceLock::new();

fn names() -> &'static [(CUresult, std::ffi::CString, std::ffi::CString)] {
    NAMES.get_or_init(|| {
        (0..1000)
            .filter_map(|code| {
                describe(code).map(|(name, text)| {
                    (
                        code,
                        std::ffi::CString::new(name).unwrap_or_default(),
                        std::ffi::CString::new(text).unwrap_or_default(),
                    )
                })
            })
            .collect()
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuGetErrorString(code: CUresult, text: *mut *const c_char) -> CUresult {
    guard(|| {
        let (_, _, t) = names()
            .iter()
            .find(|(c, _, _)| *c == code)
            .ok_or(INVALID_VALUE)?;
        out(text, t.as_ptr())
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuGetErrorName(code: CUresult, text: *mut *const c_char) -> CUresult {
    guard(|| {
        let (_, n, _) = names()
            .iter()
            .find(|(c, _, _)| *c == code)
            .ok_or(INVALID_VALUE)?;
        out(text, n.as_ptr())
    })
}

/// The driver's private tables: NVRTC asks for one when it finds a libcuda (none are emulated;
/// NVRTC carries on without them).
#[no_mangle]
pub unsafe extern "C" fn cuGetExportTable(
    table: *mut *const c_void,
    _id: *const c_void,
) -> CUresult {
    if !table.is_null() {
        *table = std::ptr::null();
    }
    NOT_SUPPORTED
}
