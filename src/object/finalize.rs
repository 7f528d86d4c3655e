//! Generators dropped while suspended, waiting to be closed.
//!
//! CPython closes a suspended generator when its last reference goes (its `finally` blocks and
//! `__exit__`s run then: `del g` prints what the `finally` prints). A Rust `Drop` has no
//! interpreter to run them with, so [`Generator`](super::value::Generator)'s drop moves the
//! suspended execution here, and the interpreter closes what is queued at its next safe point:
//! right after the statement that dropped it, as CPython's reference counting does in
//! practice (`crate::eval`'s `run_finalizers`).

use std::cell::{Cell, RefCell};
use std::collections::VecDeque;

use crate::lang::ast::Ident;

/// A suspended generator whose last reference went.
pub struct Dropped {
    pub name: Ident,
    /// Its address while alive, for "Exception ignored in: <generator object f at 0x…>".
    pub addr: usize,
    pub state: Box<dyn std::any::Any>,
}

thread_local! {
    static QUEUE: RefCell<VecDeque<Dropped>> = const { RefCell::new(VecDeque::new()) };
    // Read before every statement: a plain flag, not the queue's borrow.
    static PENDING: Cell<bool> = const { Cell::new(false) };
}

/// Queues `d` to be closed at the interpreter's next safe point.
pub fn defer(d: Dropped) {
    // A thread ending drops its values after its queue: those are unwound, not closed.
    let _ = QUEUE.try_with(|q| {
        if let Ok(mut q) = q.try_borrow_mut() {
            q.push_back(d);
            PENDING.with(|p| p.set(true));
        }
    });
}

/// Whether something waits to be closed.
#[inline]
pub fn pending() -> bool {
    PENDING.with(Cell::get)
}

/// The oldest generator waiting to be closed.
pub fn take() -> Option<Dropped> {
    QUEUE.with(|q| {
        let mut q = q.borrow_mut();
        let d = q.pop_front();
        if q.is_empty() {
            PENDING.with(|p| p.set(false));
        }
        d
    })
}
