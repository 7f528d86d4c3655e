//! Interrupting long CPU kernels. cpu(0) runs an op on the calling thread, so the session
//! lends its interrupt flag to that thread for the duration of an evaluation
//! ([`interruptible`]); a kernel reads it once ([`Cancel::current`]) and checks it between
//! blocks (GEMM tiles, chunks of elementwise work), on every rayon thread it uses. An
//! interrupted kernel returns `RuntimeError::Interrupted` and builds no output, so the
//! statement fails with `KeyboardInterrupt` and changes nothing.

use std::cell::RefCell;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use crate::vocab::error::{Result, RuntimeError};

thread_local! {
    static FLAG: RefCell<Option<Arc<AtomicBool>>> = const { RefCell::new(None) };
}

/// Puts the previous flag back when the evaluation ends (or unwinds).
struct Restore(Option<Arc<AtomicBool>>);

impl Drop for Restore {
    fn drop(&mut self) {
        let previous = self.0.take();
        FLAG.with(|f| *f.borrow_mut() = previous);
    }
}

/// Runs `f` with `flag` as this thread's interrupt flag for CPU kernels.
pub fn interruptible<R>(flag: &Arc<AtomicBool>, f: impl FnOnce() -> R) -> R {
    let previous = FLAG.with(|f| f.borrow_mut().replace(Arc::clone(flag)));
    let _restore = Restore(previous);
    f()
}

/// The interrupt flag a kernel checks; none outside an evaluation (device worker threads).
#[derive(Clone, Default)]
pub struct Cancel(Option<Arc<AtomicBool>>);

impl Cancel {
    pub fn current() -> Cancel {
        Cancel(FLAG.with(|f| f.borrow().clone()))
    }

    /// Cheap enough for every block: one relaxed load.
    #[inline]
    pub fn requested(&self) -> bool {
        self.0.as_ref().is_some_and(|f| f.load(Ordering::Relaxed))
    }

    /// `Err(Interrupted)` when an interrupt was requested; the request is consumed (it
    /// becomes this error, as a wait that gives up consumes it).
    #[inline]
    pub fn check(&self) -> Result<()> {
        match &self.0 {
            Some(f) if f.load(Ordering::Relaxed) && f.swap(false, Ordering::SeqCst) => {
                Err(RuntimeError::Interrupted)
            }
            _ => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_flag_is_lent_for_one_evaluation_and_consumed_once() {
        let flag = Arc::new(AtomicBool::new(false));
        assert!(!Cancel::current().requested());
        interruptible(&flag, || {
            let cancel = Cancel::current();
            assert_eq!(cancel.check(), Ok(()));
            flag.store(true, Ordering::SeqCst);
            assert!(cancel.requested());
            assert_eq!(cancel.check(), Err(RuntimeError::Interrupted));
            assert_eq!(cancel.check(), Ok(()));
        });
        assert!(!Cancel::current().requested());
    }
}
