//! The timeline: when each op and copy was queued, started and finished, per device, for the
//! last cells (`%timeline` draws it).
//!
//! Always on, so it must stay cheap: one lock to note a queued op and one when it has run (a
//! synchronous op is noted once, when done). Only the current and the previous cell are kept,
//! and a cell keeps at most [`CELL_CAP`] events (the rest are counted, not stored), so a long
//! loop costs bounded memory. Events are numbered in queue order; a job that finishes after
//! its cell was dropped updates nothing.
use super::device::Device;
use super::shape::Dims;
use std::cell::Cell;
use std::collections::VecDeque;
use std::sync::Mutex;
use std::time::Instant;

/// Events one cell keeps; later ones are only counted.
pub const CELL_CAP: usize = 20_000;

/// Where an event is drawn: a device's queue, or the copies in one direction.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Lane {
    Device(Device),
    Copy { from: Device, to: Device },
}

#[derive(Clone, Debug)]
pub struct TimelineEvent {
    pub lane: Lane,
    /// The op's name (`matmul`, `add`, ...) or `copy`.
    pub name: &'static str,
    /// The shape of what the op wrote.
    pub shape: Dims,
    /// Bytes moved (copies) or written (ops).
    pub bytes: u64,
    pub queued: Instant,
    /// None while the op waits in its queue.
    pub started: Option<Instant>,
    pub finished: Option<Instant>,
    cell: u64,
}

/// One cell's events, in queue order.
#[derive(Clone, Debug, Default)]
pub struct CellTimeline {
    pub events: Vec<TimelineEvent>,
    /// Events past [`CELL_CAP`], not kept.
    pub dropped: u64,
}

#[derive(Debug, Default)]
struct State {
    /// The number of the current cell (0 before the first).
    cell: u64,
    /// Events of the previous and the current cell; `first` is the number of the front one.
    events: VecDeque<TimelineEvent>,
    first: u64,
    /// Events of the current cell (kept or dropped) and of the previous one past the cap.
    in_cell: usize,
    dropped: [u64; 2],
}

/// The session's timeline, shared by every device.
#[derive(Debug, Default)]
pub struct Timeline {
    state: Mutex<State>,
}

/// A queued event's number, for [`Timeline::ran`]; None when the cell was over its cap.
pub type EventId = Option<u64>;

impl Timeline {
    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Starts a new cell: the one before it becomes the previous cell, older ones go.
    pub fn begin_cell(&self) {
        let mut s = self.lock();
        s.cell += 1;
        let keep_from = s.cell - 1;
        while s.events.front().is_some_and(|e| e.cell < keep_from) {
            s.events.pop_front();
            s.first += 1;
        }
        s.dropped = [s.dropped[1], 0];
        s.in_cell = 0;
    }

    /// Notes an event; `done` gives its start and end for work already finished.
    fn push(
        &self,
        lane: Lane,
        name: &'static str,
        shape: Dims,
        bytes: u64,
        queued: Instant,
        done: Option<(Instant, Instant)>,
    ) -> EventId {
        let mut s = self.lock();
        if s.in_cell >= CELL_CAP {
            s.dropped[1] += 1;
            return None;
        }
        s.in_cell += 1;
        let cell = s.cell;
        let id = s.first + s.events.len() as u64;
        s.events.push_back(TimelineEvent {
            lane,
            name,
            shape,
            bytes,
            queued,
            started: done.map(|d| d.0),
            finished: done.map(|d| d.1),
            cell,
        });
        Some(id)
    }

    /// Notes work queued now on `lane`; [`Self::ran`] adds its times when it has run.
    pub fn queued(&self, lane: Lane, name: &'static str, shape: Dims, bytes: u64) -> EventId {
        self.push(lane, name, shape, bytes, Instant::now(), None)
    }

    /// Notes work that was queued at `queued` and ran from `started` until now.
    pub fn done(
        &self,
        lane: Lane,
        name: &'static str,
        shape: Dims,
        bytes: u64,
        queued: Instant,
        started: Instant,
    ) {
        self.push(
            lane,
            name,
            shape,
            bytes,
            queued,
            Some((started, Instant::now())),
        );
    }

    /// A queued event ran from `started` until now.
    pub fn ran(&self, id: EventId, started: Instant) {
        let Some(id) = id else { return };
        let now = Instant::now();
        let mut s = self.lock();
        let Some(index) = id.checked_sub(s.first) else {
            return;
        };
        if let Some(e) = s.events.get_mut(index as usize) {
            e.started = Some(started);
            e.finished = Some(now);
        }
    }

    /// The events of the current cell (`current`) or of the one before it.
    pub fn cell(&self, current: bool) -> CellTimeline {
        let s = self.lock();
        let want = if current {
            s.cell
        } else {
            s.cell.saturating_sub(1)
        };
        if !current && s.cell == 0 {
            return CellTimeline::default();
        }
        CellTimeline {
            events: s
                .events
                .iter()
                .filter(|e| e.cell == want)
                .cloned()
                .collect(),
            dropped: s.dropped[usize::from(current)],
        }
    }
}

thread_local! {
    /// The name of the op being submitted on this thread (see [`op_scope`]).
    static OP: Cell<Option<&'static str>> = const { Cell::new(None) };
}

/// Names the ops submitted until the guard drops. The outermost scope wins, so a composite
/// op (`norm` made of a square, a sum and a root) shows as itself.
pub fn op_scope(name: &'static str) -> OpScope {
    let outer = OP.with(|op| {
        let outer = op.get();
        if outer.is_none() {
            op.set(Some(name));
        }
        outer
    });
    OpScope { outer }
}

pub struct OpScope {
    outer: Option<&'static str>,
}

impl Drop for OpScope {
    fn drop(&mut self) {
        if self.outer.is_none() {
            OP.with(|op| op.set(None));
        }
    }
}

/// The op being submitted on this thread ("kernel" outside any named scope).
pub fn current_op() -> &'static str {
    OP.with(Cell::get).unwrap_or("kernel")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_the_current_and_previous_cell_and_late_finishes_land_or_vanish() {
        let t = Timeline::default();
        let gpu = Lane::Device(Device::gpu(0));
        t.begin_cell();
        let a = t.queued(gpu, "matmul", Dims::from_slice(&[2, 2]), 16);
        t.begin_cell();
        let b = t.queued(gpu, "add", Dims::new(), 4);
        t.ran(a, Instant::now());
        assert_eq!(t.cell(false).events.len(), 1);
        assert!(t.cell(false).events[0].finished.is_some());
        assert_eq!(t.cell(true).events[0].name, "add");
        t.begin_cell();
        t.begin_cell();
        // Both cells are gone; finishing an event of a dropped cell is harmless.
        t.ran(b, Instant::now());
        assert!(t.cell(false).events.is_empty());
        assert!(t.cell(true).events.is_empty());
    }

    #[test]
    fn a_cell_stops_keeping_events_at_its_cap() {
        let t = Timeline::default();
        t.begin_cell();
        let lane = Lane::Device(Device::cpu(0));
        for _ in 0..CELL_CAP + 5 {
            let now = Instant::now();
            t.done(lane, "add", Dims::new(), 4, now, now);
        }
        let cell = t.cell(true);
        assert_eq!((cell.events.len(), cell.dropped), (CELL_CAP, 5));
    }

    #[test]
    fn the_outermost_op_scope_names_the_op() {
        assert_eq!(current_op(), "kernel");
        {
            let _outer = op_scope("norm");
            let _inner = op_scope("sum");
            assert_eq!(current_op(), "norm");
        }
        assert_eq!(current_op(), "kernel");
    }
}
