//! Reuse of large host buffers.
//!
//! A new buffer from the operating system arrives as pages the kernel must zero on first touch;
//! for a large elementwise result that costs as much as computing it. A loop such as
//! `w = (z + 2).exp() * y` frees one result as it makes the next, and a training step frees
//! every activation, im2col matrix and gradient it made when it ends, then makes them again in
//! the next step. So a buffer of 4 MiB or more that an array drops is kept here and handed to
//! the next allocation of about the same size (the smallest kept one that fits), as PyTorch's
//! caching allocator keeps GPU memory. At most `MAX_BUFFERS` buffers and `max_bytes()` bytes
//! (a quarter of the machine's memory, at most 4 GiB) are kept, the oldest given back first; a
//! ResNet-18 step on 96x96 images frees about 2 GiB of them. An allocation that fails gives
//! every kept buffer back and tries again (`kernels::alloc`), so what is kept never turns into
//! a MemoryError. The kept buffers are given back to the operating system whenever the program
//! returns to the user (`release`: the end of each REPL line or notebook cell), so an idle
//! session holds no more memory than its arrays need.
//! Below that size the C allocator serves buffers; by default glibc hands memory above a moving
//! threshold straight back to the system, so a training step's activations (a few MiB each,
//! freed and made again every step) were zeroed by the kernel anew each step (a fifth of a
//! ResNet-18 step's CPU time). `hold_freed_memory` asks glibc to keep freed memory until
//! `release`, which trims it back, so an idle session still holds only what its arrays need.
//! (glibc still maps a request above 64 MiB made on a thread other than the main one, such as
//! a simulated GPU's, afresh each time whatever its settings: only this pool keeps those.)
//! `DEVARRAY_NO_BUFFER_REUSE=1` turns both off (to measure what they gain).
use super::element::Element;
use super::CpuStorage;
use std::sync::{Mutex, MutexGuard, OnceLock};

/// Buffers below this size come and go through the allocator, which reuses them itself.
pub const MIN_BYTES: usize = 4 << 20;
const MAX_BUFFERS: usize = 128;
/// The most a pool may keep, whatever the machine's memory.
const MAX_BYTES_CAP: usize = 4 << 30;

/// Bytes the pool may keep: a quarter of the machine's memory, at most `MAX_BYTES_CAP`.
fn max_bytes() -> usize {
    static MAX: OnceLock<usize> = OnceLock::new();
    *MAX.get_or_init(|| physical_memory().map_or(1 << 30, |m| (m / 4).min(MAX_BYTES_CAP)))
}

#[cfg(unix)]
fn physical_memory() -> Option<usize> {
    // SAFETY: sysconf only reads system configuration values.
    let (pages, page) = unsafe {
        (
            libc::sysconf(libc::_SC_PHYS_PAGES),
            libc::sysconf(libc::_SC_PAGESIZE),
        )
    };
    let (pages, page) = (usize::try_from(pages).ok()?, usize::try_from(page).ok()?);
    pages.checked_mul(page)
}

#[cfg(not(unix))]
fn physical_memory() -> Option<usize> {
    None
}

static SPARE: Mutex<Vec<CpuStorage>> = Mutex::new(Vec::new());

fn enabled() -> bool {
    static ENABLED: OnceLock<bool> = OnceLock::new();
    *ENABLED.get_or_init(|| {
        std::env::var_os("DEVARRAY_NO_BUFFER_REUSE").is_none_or(|v| v.is_empty() || v == "0")
    })
}

fn spare() -> MutexGuard<'static, Vec<CpuStorage>> {
    // The list is consistent after any panic (pushes and removes are whole), so a poisoned
    // lock is still safe to use.
    SPARE.lock().unwrap_or_else(|e| e.into_inner())
}

/// An empty vector with room for `n` elements from a kept buffer, when one of about that size
/// (no more than 1/8 larger) is there: the smallest such one.
pub fn take<T: Element>(n: usize) -> Option<Vec<T>> {
    if n.saturating_mul(std::mem::size_of::<T>()) < MIN_BYTES || !enabled() {
        return None;
    }
    let mut spare = spare();
    let fit = |s: &mut CpuStorage| {
        T::vec_mut(s)
            .map(|v| v.capacity())
            .filter(|&cap| cap >= n && cap - n <= n / 8)
    };
    let (index, _) = spare
        .iter_mut()
        .enumerate()
        .filter_map(|(i, s)| fit(s).map(|cap| (i, cap)))
        .min_by_key(|&(_, cap)| cap)?;
    // `remove`, not `swap_remove`: the list stays oldest first, the order eviction follows.
    let mut storage = spare.remove(index);
    drop(spare);
    let mut v = std::mem::take(T::vec_mut(&mut storage)?);
    v.clear();
    Some(v)
}

/// Whether `recycle` would keep this buffer: large enough, and reuse not turned off.
#[inline]
pub fn worth_keeping(storage: &CpuStorage) -> bool {
    storage.capacity_bytes() >= MIN_BYTES && enabled()
}

/// Keeps `storage`'s buffer for reuse when it is large, else frees it.
pub fn recycle(storage: CpuStorage) {
    if !worth_keeping(&storage) {
        return;
    }
    let evicted = {
        let mut spare = spare();
        spare.push(storage);
        let mut evicted = Vec::new();
        let mut kept: usize = spare.iter().map(CpuStorage::capacity_bytes).sum();
        while spare.len() > MAX_BUFFERS || kept > max_bytes() {
            let oldest = spare.remove(0);
            kept -= oldest.capacity_bytes();
            evicted.push(oldest);
        }
        evicted
    };
    // Freed outside the lock: returning a large buffer to the system takes a while.
    drop(evicted);
}

/// Frees every kept buffer; false when there was none (an allocation that failed then has
/// nothing to retry with).
pub fn free_kept() -> bool {
    let kept = std::mem::take(&mut *spare());
    let any = !kept.is_empty();
    drop(kept);
    any
}

/// Frees every kept buffer, and gives memory the C allocator holds back to the system.
pub fn release() {
    free_kept();
    if HOLDING.get().copied().unwrap_or(false) {
        trim_allocator();
    }
}

static HOLDING: OnceLock<bool> = OnceLock::new();

/// Has the C allocator keep the memory a program frees (no fresh zeroed pages for each new
/// buffer) until `release`. Once per process; a no-op where the allocator is not glibc's.
pub fn hold_freed_memory() {
    HOLDING.get_or_init(|| enabled() && configure_allocator());
}

#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn configure_allocator() -> bool {
    // SAFETY: mallopt only sets glibc's tuning parameters; it takes the allocator's own locks.
    // No mmap'd chunks (each one is zeroed pages on every allocation and unmapped when freed),
    // and no trimming of the heap's top on free: `release` trims.
    unsafe {
        libc::mallopt(libc::M_MMAP_MAX, 0) == 1
            && libc::mallopt(libc::M_TRIM_THRESHOLD, i32::MAX) == 1
    }
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn configure_allocator() -> bool {
    false
}

#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn trim_allocator() {
    // SAFETY: malloc_trim returns free pages to the system; it touches no live allocation.
    unsafe {
        libc::malloc_trim(0);
    }
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn trim_allocator() {}

#[cfg(test)]
mod tests {
    use super::*;

    /// One test touches the process-wide pool, so parallel tests cannot disturb each other.
    #[test]
    fn reuses_large_buffers_and_releases_them() {
        let n = MIN_BYTES / 4;
        let mut v: Vec<f32> = vec![1.0; n];
        let address = v.as_mut_ptr() as usize;
        recycle(CpuStorage::F32(v));
        // A small request or another dtype does not take it.
        assert!(take::<f32>(16).is_none());
        assert!(take::<f64>(n / 2).is_none());
        let again = take::<f32>(n).expect("the kept buffer");
        assert_eq!(again.as_ptr() as usize, address);
        assert!(again.is_empty() && again.capacity() >= n);
        recycle(CpuStorage::F32(again));
        // Much smaller requests do not take a large buffer.
        assert!(take::<f32>(n / 2).is_none());
        release();
        assert!(take::<f32>(n).is_none());
        // Small buffers are not kept.
        recycle(CpuStorage::F32(vec![0.0; 8]));
        assert!(spare().is_empty());
        // Of the buffers that fit, the smallest is taken; the others stay.
        let larger: Vec<f32> = Vec::with_capacity(n + n / 16);
        let mut exact: Vec<f32> = Vec::with_capacity(n);
        let exact_address = exact.as_mut_ptr() as usize;
        recycle(CpuStorage::F32(larger));
        recycle(CpuStorage::F32(exact));
        let best = take::<f32>(n).expect("a kept buffer");
        assert_eq!(best.as_ptr() as usize, exact_address);
        // Many buffers are kept (a training step frees dozens), and all can be given up at once.
        for _ in 0..8 {
            recycle(CpuStorage::F32(Vec::with_capacity(n)));
        }
        assert!(spare().len() >= 9);
        assert!(free_kept());
    }
}
