//! Device memory behind opaque pointers. Every allocation lives at an address of its own in a
//! made-up address space (never a host address), with a gap after it, so that a stray pointer,
//! an out-of-bounds copy or a use after free finds no allocation and becomes a CUDA error
//! instead of a silent host read.
use crate::status::*;
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard, RwLock};

/// Device addresses start here (high enough that no small integer is a valid pointer).
const BASE: u64 = 0x7_0000_0000_0000 / 16;
/// Each card gets its own 1 TiB window, so an address tells its card.
const CARD_WINDOW: u64 = 1 << 40;
/// Unused bytes after each allocation (real allocations are 256-byte aligned; a gap makes
/// reads just past the end fail instead of landing in a neighbour).
const GAP: u64 = 4096;

/// Bytes on an emulated card. Interior mutability: kernels on stream threads and copies write
/// through shared references, like DMA engines; races between streams are the program's own,
/// as on a GPU.
pub struct Allocation {
    pub start: u64,
    pub len: usize,
    pub device: usize,
    data: *mut u8,
    layout: std::alloc::Layout,
}

// SAFETY: the bytes are plain memory; concurrent access is the emulated program's business
// (the same data races a GPU would have), and the pointer is freed only on drop.
unsafe impl Send for Allocation {}
unsafe impl Sync for Allocation {}

impl Allocation {
    fn new(start: u64, len: usize, device: usize, fill: Option<u8>) -> Option<Allocation> {
        let layout = std::alloc::Layout::from_size_align(len.max(1), 256).ok()?;
        // SAFETY: non-zero size.
        let data = unsafe {
            match fill {
                None | Some(0) => std::alloc::alloc_zeroed(layout),
                Some(byte) => {
                    let p = std::alloc::alloc(layout);
                    if !p.is_null() {
                        std::ptr::write_bytes(p, byte, len.max(1));
                    }
                    p
                }
            }
        };
        (!data.is_null()).then_some(Allocation {
            start,
            len,
            device,
            data,
            layout,
        })
    }

    pub fn end(&self) -> u64 {
        self.start + self.len as u64
    }

    /// Pointer to `offset` when `[offset, offset + n)` is inside.
    pub fn at(&self, offset: u64, n: usize) -> Option<*mut u8> {
        let end = offset.checked_add(n as u64)?;
        // SAFETY: in bounds (checked).
        (end <= self.len as u64).then(|| unsafe { self.data.add(offset as usize) })
    }
}

impl Drop for Allocation {
    fn drop(&mut self) {
        // SAFETY: allocated with this layout in `new`.
        unsafe { std::alloc::dealloc(self.data, self.layout) }
    }
}

/// Every live allocation of every card, by start address.
#[derive(Default)]
pub struct Memory {
    table: RwLock<BTreeMap<u64, Arc<Allocation>>>,
    cards: Mutex<Vec<Card>>,
}

#[derive(Clone, Copy, Default)]
struct Card {
    next: u64,
    used: u64,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Memory {
    /// Allocates `len` bytes on `device` within `budget`; fresh memory holds `fill` (0 by default;
    /// chaos mode fills garbage, as a real card returns whatever was there).
    pub fn alloc(
        &self,
        device: usize,
        len: usize,
        budget: u64,
        fill: Option<u8>,
    ) -> Result<u64, CUresult> {
        if len == 0 {
            return Err(INVALID_VALUE);
        }
        let mut cards = lock(&self.cards);
        if cards.len() <= device {
            cards.resize(device + 1, Card::default());
        }
        let card = &mut cards[device];
        let rounded = (len as u64).div_ceil(256) * 256;
        if card.used + rounded > budget {
            return Err(OUT_OF_MEMORY);
        }
        let start = BASE + device as u64 * CARD_WINDOW + card.next;
        let allocation = Allocation::new(start, len, device, fill).ok_or(OUT_OF_MEMORY)?;
        card.next += rounded + GAP;
        card.used += rounded;
        self.table
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .insert(start, Arc::new(allocation));
        Ok(start)
    }

    /// Frees the allocation that starts at `ptr` (anything else is an invalid value).
    pub fn free(&self, ptr: u64) -> Result<(), CUresult> {
        let removed = self
            .table
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&ptr)
            .ok_or(INVALID_VALUE)?;
        let mut cards = lock(&self.cards);
        if let Some(card) = cards.get_mut(removed.device) {
            card.used -= (removed.len as u64).div_ceil(256) * 256;
        }
        Ok(())
    }

    pub fn used(&self, device: usize) -> u64 {
        lock(&self.cards).get(device).map_or(0, |c| c.used)
    }

    /// The allocation holding `[ptr, ptr + n)`, or None (not allocated, freed, or crossing its end).
    pub fn find(&self, ptr: u64, n: usize) -> Option<(Arc<Allocation>, u64)> {
        let table = self.table.read().unwrap_or_else(|e| e.into_inner());
        let (_, allocation) = table.range(..=ptr).next_back()?;
        let offset = ptr - allocation.start;
        allocation.at(offset, n)?;
        Some((Arc::clone(allocation), offset))
    }

    /// A snapshot of every allocation, sorted, for a kernel's many lookups.
    pub fn snapshot(&self) -> Vec<Arc<Allocation>> {
        self.table
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .values()
            .cloned()
            .collect()
    }

    /// Copies device bytes to host memory.
    pub fn read(&self, ptr: u64, out: &mut [u8]) -> Result<(), CUresult> {
        let (allocation, offset) = self.find(ptr, out.len()).ok_or(INVALID_VALUE)?;
        let src = allocation.at(offset, out.len()).ok_or(INVALID_VALUE)?;
        // SAFETY: `src` has out.len() bytes (checked by `at`).
        unsafe { std::ptr::copy_nonoverlapping(src, out.as_mut_ptr(), out.len()) };
        Ok(())
    }

    /// Copies host bytes to the device.
    pub fn write(&self, ptr: u64, data: &[u8]) -> Result<(), CUresult> {
        let (allocation, offset) = self.find(ptr, data.len()).ok_or(INVALID_VALUE)?;
        let dst = allocation.at(offset, data.len()).ok_or(INVALID_VALUE)?;
        // SAFETY: `dst` has data.len() bytes.
        unsafe { std::ptr::copy_nonoverlapping(data.as_ptr(), dst, data.len()) };
        Ok(())
    }

    /// Device to device (also between cards); overlapping ranges are allowed.
    pub fn copy(&self, dst: u64, src: u64, n: usize) -> Result<(), CUresult> {
        if n == 0 {
            return Ok(());
        }
        let (from, from_offset) = self.find(src, n).ok_or(INVALID_VALUE)?;
        let (to, to_offset) = self.find(dst, n).ok_or(INVALID_VALUE)?;
        let (s, d) = (
            from.at(from_offset, n).ok_or(INVALID_VALUE)?,
            to.at(to_offset, n).ok_or(INVALID_VALUE)?,
        );
        // SAFETY: both ranges are inside live allocations (checked).
        unsafe { std::ptr::copy(s, d, n) };
        Ok(())
    }

    pub fn fill(&self, dst: u64, byte: u8, n: usize) -> Result<(), CUresult> {
        let (to, offset) = self.find(dst, n).ok_or(INVALID_VALUE)?;
        let d = to.at(offset, n).ok_or(INVALID_VALUE)?;
        // SAFETY: inside a live allocation.
        unsafe { std::ptr::write_bytes(d, byte, n) };
        Ok(())
    }

    /// Which card an address belongs to (by its window), live or not.
    pub fn card_of(ptr: u64) -> Option<usize> {
        ptr.checked_sub(BASE).map(|o| (o / CARD_WINDOW) as usize)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bad_pointers_are_errors() {
        let m = Memory::default();
        let p = m.alloc(0, 100, 1 << 20, None).unwrap();
        let mut out = [0u8; 100];
        m.read(p, &mut out).unwrap();
        assert_eq!(m.read(p + 1, &mut out), Err(INVALID_VALUE), "past the end");
        assert_eq!(
            m.read(12345, &mut out[..4]),
            Err(INVALID_VALUE),
            "never allocated"
        );
        m.free(p).unwrap();
        assert_eq!(m.read(p, &mut out), Err(INVALID_VALUE), "use after free");
        assert_eq!(m.free(p), Err(INVALID_VALUE), "double free");
        assert_eq!(m.alloc(0, 2 << 20, 1 << 20, None), Err(OUT_OF_MEMORY));
        let q = m.alloc(1, 8, 1 << 20, None).unwrap();
        assert_eq!(Memory::card_of(q), Some(1));
    }
}
