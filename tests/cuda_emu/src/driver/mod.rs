//! The driver's state: cards, contexts, handles, pinned host memory, modules; `api` exports the
//! `cu*` functions over it.
pub mod api;
pub mod memory;
pub mod stream;

use crate::ptx;
use crate::status::*;
use crate::Config;
use memory::Memory;
use std::cell::Cell;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};
use stream::{Event, Stream};

pub fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

pub struct Card {
    pub ordinal: usize,
    /// The first error of an asynchronous job (a kernel fault): every later call reports it.
    pub sticky: Arc<AtomicU32>,
    /// The legacy default stream (handle 0).
    pub null_stream: Arc<Stream>,
    pub streams: Mutex<Vec<Arc<Stream>>>,
    pub peers: Mutex<HashSet<usize>>,
    pub retained: AtomicU32,
}

pub struct Module {
    pub device: usize,
    pub program: ptx::Program,
    pub globals: Vec<u64>,
}

pub struct Emu {
    pub config: Config,
    pub memory: Memory,
    pub cards: Vec<Card>,
    next_handle: AtomicU64,
    pub streams: Mutex<HashMap<u64, Arc<Stream>>>,
    pub events: Mutex<HashMap<u64, Arc<Event>>>,
    pub modules: Mutex<HashMap<u64, Arc<Module>>>,
    pub functions: Mutex<HashMap<u64, (Arc<Module>, usize)>>,
    /// Pinned host allocations: start -> (len, layout).
    pub pinned: Mutex<BTreeMap<usize, std::alloc::Layout>>,
    /// Async copies from or to pinned memory not yet run: (host start, len) -> count.
    pub pending_pinned: Mutex<HashMap<usize, u32>>,
}

static EMU: OnceLock<Emu> = OnceLock::new();

pub fn emu() -> &'static Emu {
    EMU.get_or_init(|| {
        let config = Config::from_env();
        let cards = (0..config.devices)
            .map(|ordinal| {
                let sticky = Arc::new(AtomicU32::new(SUCCESS));
                Card {
                    ordinal,
                    null_stream: Stream::new(ordinal, Arc::clone(&sticky), config.chaos),
                    sticky,
                    streams: Mutex::new(Vec::new()),
                    peers: Mutex::new(HashSet::new()),
                    retained: AtomicU32::new(0),
                }
            })
            .collect();
        Emu {
            config,
            memory: Memory::default(),
            cards,
            next_handle: AtomicU64::new(0x1000),
            streams: Mutex::new(HashMap::new()),
            events: Mutex::new(HashMap::new()),
            modules: Mutex::new(HashMap::new()),
            functions: Mutex::new(HashMap::new()),
            pinned: Mutex::new(BTreeMap::new()),
            pending_pinned: Mutex::new(HashMap::new()),
        }
    })
}

thread_local! {
    /// The calling thread's current context (a card ordinal).
    static CURRENT: Cell<Option<usize>> = const { Cell::new(None) };
}

/// Context handles are opaque values that encode the card.
const CTX_BASE: u64 = 0xC7C0_0000;

pub fn ctx_handle(ordinal: usize) -> u64 {
    CTX_BASE + ordinal as u64 * 0x100
}

pub fn ctx_ordinal(handle: u64) -> Option<usize> {
    let o = handle.checked_sub(CTX_BASE)?;
    (o % 0x100 == 0 && ((o / 0x100) as usize) < emu().cards.len()).then_some((o / 0x100) as usize)
}

pub fn current() -> Option<usize> {
    CURRENT.with(Cell::get)
}

pub fn set_current(ordinal: Option<usize>) {
    CURRENT.with(|c| c.set(ordinal));
}

impl Emu {
    pub fn handle(&self) -> u64 {
        self.next_handle.fetch_add(0x10, Ordering::Relaxed)
    }

    /// The current card, or INVALID_CONTEXT; also reports a sticky error.
    pub fn card(&self) -> Result<&Card, CUresult> {
        let card = current()
            .and_then(|o| self.cards.get(o))
            .ok_or(INVALID_CONTEXT)?;
        match card.sticky.load(Ordering::SeqCst) {
            SUCCESS => Ok(card),
            code => Err(code),
        }
    }

    /// A stream handle: 0 (legacy default), 1 (legacy) and 2 (per-thread) are the current
    /// card's default stream.
    pub fn stream(&self, handle: u64) -> Result<Arc<Stream>, CUresult> {
        if handle <= 2 {
            return Ok(Arc::clone(&self.card()?.null_stream));
        }
        lock(&self.streams)
            .get(&handle)
            .cloned()
            .ok_or(INVALID_HANDLE)
    }

    /// Every stream of a card (the null stream first).
    pub fn card_streams(&self, ordinal: usize) -> Vec<Arc<Stream>> {
        let card = &self.cards[ordinal];
        let mut all = vec![Arc::clone(&card.null_stream)];
        all.extend(lock(&card.streams).iter().cloned());
        all
    }

    pub fn synchronize_card(&self, ordinal: usize) {
        for s in self.card_streams(ordinal) {
            s.synchronize();
        }
    }

    pub fn sticky(&self, ordinal: usize) -> CUresult {
        self.cards[ordinal].sticky.load(Ordering::SeqCst)
    }

    /// Is `[ptr, ptr + len)` inside one pinned host allocation?
    pub fn is_pinned(&self, ptr: usize, len: usize) -> bool {
        lock(&self.pinned)
            .range(..=ptr)
            .next_back()
            .is_some_and(|(start, layout)| ptr + len <= start + layout.size())
    }

    pub fn pinned_start(&self, ptr: usize) -> Option<usize> {
        lock(&self.pinned)
            .range(..=ptr)
            .next_back()
            .map(|(s, _)| *s)
    }
}
