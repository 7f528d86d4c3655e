//! Native stacks: growing the stack before deep recursion, and the stacks generators run on.
//!
//! The tree walker recurses once per nested expression, statement and call. On a thread's own
//! stack, `stacker` maps a new segment when little is left. A generator's body runs on a
//! coroutine stack of its own (`crate::eval::generator`), which `stacker` cannot see (it knows
//! only the thread's stack and the segments it mapped itself), so the bounds of the coroutine
//! stack being run are kept here in a thread-local and checked instead; a segment mapped on a
//! coroutine is recorded the same way. Whoever switches stacks saves the bounds and restores
//! them when control comes back ([`BoundsGuard`]).
//!
//! Coroutine stacks are pooled per thread, so a generator expression costs no `mmap`.

use std::cell::{Cell, RefCell};
use std::mem::ManuallyDrop;

use corosensei::stack::{DefaultStack, Stack, StackPointer};

/// A generator's own stack. Deep recursion inside a generator maps segments beyond it
/// ([`maybe_grow`]), so this only needs room for ordinary bodies and the red zones.
const GEN_STACK: usize = 1024 * 1024;
/// Stacks kept for reuse per thread (address space only: untouched pages cost nothing).
const POOL_MAX: usize = 16;

thread_local! {
    /// (lowest, highest) address of the coroutine stack this thread runs on; (0, 0) on the
    /// thread's own stack.
    static BOUNDS: Cell<(usize, usize)> = const { Cell::new((0, 0)) };
    static POOL: RefCell<Vec<DefaultStack>> = const { RefCell::new(Vec::new()) };
}

/// The recorded bounds of the current coroutine stack.
#[inline]
pub fn bounds() -> (usize, usize) {
    BOUNDS.with(Cell::get)
}

/// Records the stack now run on (after a switch).
#[inline]
pub fn set_bounds(b: (usize, usize)) {
    BOUNDS.with(|c| c.set(b));
}

/// Restores the bounds saved when it was made, also when a panic unwinds past it.
pub struct BoundsGuard((usize, usize));

impl BoundsGuard {
    pub fn save() -> BoundsGuard {
        BoundsGuard(bounds())
    }
}

impl Drop for BoundsGuard {
    fn drop(&mut self) {
        // The thread-local may be gone while a thread exits; nothing runs on a stack then.
        let _ = BOUNDS.try_with(|c| c.set(self.0));
    }
}

/// Runs `f` with at least `red_zone` bytes of native stack, mapping a segment of `size` bytes
/// first when less is left: on the thread's stack through `stacker`, on a generator's stack
/// by the recorded bounds.
#[inline]
pub fn maybe_grow<R>(red_zone: usize, size: usize, f: impl FnOnce() -> R) -> R {
    let (lo, hi) = bounds();
    if hi != 0 {
        let marker = 0u8;
        let sp = std::hint::black_box(&marker) as *const u8 as usize;
        if sp > lo && sp <= hi {
            if sp - lo >= red_zone {
                return f();
            }
            return grow_segment(size, f);
        }
    }
    stacker::maybe_grow(red_zone, size, f)
}

/// Runs `f` on a freshly mapped segment, recorded as the current stack while it runs.
#[cold]
fn grow_segment<R>(size: usize, f: impl FnOnce() -> R) -> R {
    // Like `stacker`: a refused mapping is out of memory, which the allocator also aborts on.
    let stack = DefaultStack::new(size).expect("could not map a stack segment");
    let b = (stack.limit().get(), stack.base().get());
    let _restore = BoundsGuard::save();
    corosensei::on_stack(stack, move || {
        set_bounds(b);
        f()
    })
}

/// A coroutine stack from the thread's pool; it goes back there when dropped.
pub struct PooledStack(ManuallyDrop<DefaultStack>);

impl PooledStack {
    /// A stack for a generator; an error when the system refuses to map one.
    pub fn take() -> std::io::Result<PooledStack> {
        let reused = POOL
            .try_with(|p| p.try_borrow_mut().ok().and_then(|mut p| p.pop()))
            .ok()
            .flatten();
        let stack = match reused {
            Some(s) => s,
            None => DefaultStack::new(GEN_STACK)?,
        };
        Ok(PooledStack(ManuallyDrop::new(stack)))
    }

    /// (lowest, highest) address, what [`set_bounds`] takes.
    pub fn bounds(&self) -> (usize, usize) {
        (self.0.limit().get(), self.0.base().get())
    }
}

impl Drop for PooledStack {
    fn drop(&mut self) {
        // SAFETY: taken once, here; the field is never used again.
        let mut stack = Some(unsafe { ManuallyDrop::take(&mut self.0) });
        let _ = POOL.try_with(|p| {
            if let Ok(mut p) = p.try_borrow_mut() {
                if p.len() < POOL_MAX {
                    if let Some(s) = stack.take() {
                        p.push(s);
                    }
                }
            }
        });
        drop(stack);
    }
}

// SAFETY: delegates to the `DefaultStack` it owns, which stays mapped as long as this lives.
unsafe impl Stack for PooledStack {
    #[inline]
    fn base(&self) -> StackPointer {
        self.0.base()
    }

    #[inline]
    fn limit(&self) -> StackPointer {
        self.0.limit()
    }

    #[cfg(windows)]
    #[inline]
    fn teb_fields(&self) -> corosensei::stack::StackTebFields {
        self.0.teb_fields()
    }

    #[cfg(windows)]
    #[inline]
    fn update_teb_fields(&mut self, stack_limit: usize, guaranteed_stack_bytes: usize) {
        self.0
            .update_teb_fields(stack_limit, guaranteed_stack_bytes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use corosensei::{Coroutine, CoroutineResult, Yielder};

    /// Recursion far deeper than a generator's stack, through `maybe_grow`, suspending at the
    /// bottom (inside mapped segments).
    fn recurse(y: &Yielder<(), usize>, n: usize) -> usize {
        let pad = std::hint::black_box([0u8; 2048]);
        if n == 0 {
            y.suspend(1);
            return pad[0] as usize;
        }
        maybe_grow(64 * 1024, 1024 * 1024, || recurse(y, n - 1)) + 1
    }

    fn coroutine(depth: usize) -> (Coroutine<(), usize, usize, PooledStack>, (usize, usize)) {
        let stack = PooledStack::take().expect("a stack");
        let b = stack.bounds();
        let co = Coroutine::with_stack(stack, move |y: &Yielder<(), usize>, ()| {
            set_bounds(b);
            recurse(y, depth)
        });
        (co, b)
    }

    #[test]
    fn deep_recursion_on_a_generator_stack_grows_segments_and_suspends_in_them() {
        let (mut co, _) = coroutine(5000);
        let _restore = BoundsGuard::save();
        assert!(matches!(co.resume(()), CoroutineResult::Yield(1)));
        // Back on the thread's stack: the bounds say so.
        set_bounds((0, 0));
        assert!(matches!(co.resume(()), CoroutineResult::Return(5000)));
    }

    #[test]
    fn a_coroutine_suspended_in_a_segment_is_unwound_when_dropped() {
        for _ in 0..3 {
            let (mut co, b) = coroutine(3000);
            let _restore = BoundsGuard::save();
            assert!(matches!(co.resume(()), CoroutineResult::Yield(1)));
            set_bounds(b);
            drop(co);
        }
    }
}
