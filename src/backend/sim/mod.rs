//! Simulated GPUs: one ordered work queue (a stream) per device, run by one worker thread.
//!
//! The storage of a simulated GPU is CPU memory (`Storage::Cpu`, charged to the GPU's own
//! ledger), and its kernels are the CPU backend's; what makes it a GPU is *where and when* the
//! work runs. The runtime validates an op on the calling thread, charges its output, and submits
//! a [`Job`]; the worker runs jobs strictly in submission order, so a job always sees the writes
//! of every earlier job on the same device. Positions in the stream are sequence numbers: the
//! k-th job submitted is `k`, and `wait(k)` returns once it has finished. A buffer remembers the
//! position of its last queued write, which is all `wait_to_read` needs.
//!
//! Jobs never panic the worker (a panic becomes an error), and an error raised by a job is kept
//! and handed to the next synchronising call that can report it ([`Stream::take_error`]).
use crate::vocab::error::{Result, RuntimeError};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{sync_channel, Receiver, SyncSender, TrySendError};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::Duration;

/// Jobs a stream holds before `submit` blocks: bounds the host memory of a runaway loop and how
/// far the caller runs ahead (CUDA's launch queue has a similar limit).
pub const QUEUE_DEPTH: usize = 1024;

/// How often a blocked caller looks at the interrupt flag.
const POLL: Duration = Duration::from_millis(5);

/// One unit of queued device work.
pub type Job = Box<dyn FnOnce() -> Result<()> + Send>;

#[derive(Default)]
struct Progress {
    completed: u64,
    /// Callers blocked in `wait`: the worker only signals when someone listens.
    waiters: usize,
    /// The first error a job raised since the last `take_error`.
    error: Option<RuntimeError>,
}

struct Shared {
    progress: Mutex<Progress>,
    changed: Condvar,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, Progress> {
        // Jobs run outside this lock, so a poisoned lock still holds consistent counters.
        self.progress.lock().unwrap_or_else(|e| e.into_inner())
    }
}

struct Submitter {
    sender: SyncSender<Job>,
    /// Sequence number of the last job sent.
    last: u64,
}

/// The ordered queue of one simulated GPU.
pub struct Stream {
    name: String,
    shared: Arc<Shared>,
    submitter: Mutex<Submitter>,
}

impl std::fmt::Debug for Stream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Stream").field("name", &self.name).finish()
    }
}

impl Stream {
    /// Starts the worker thread of the device called `name` (e.g. "gpu(0)"). None when the
    /// system refuses a thread; the caller then runs that device synchronously.
    pub fn start(name: &str) -> Option<Stream> {
        Stream::start_with_threads(name, None)
    }

    /// [`Stream::start`] with the device's own pool of `threads` kernel threads: its kernels run
    /// there instead of on the process-wide pool, so two devices' work runs side by side on
    /// their own cores (as two GPUs do) instead of taking turns on all of them.
    pub fn start_with_threads(name: &str, threads: Option<usize>) -> Option<Stream> {
        let (sender, receiver) = sync_channel::<Job>(QUEUE_DEPTH);
        let shared = Arc::new(Shared {
            progress: Mutex::new(Progress::default()),
            changed: Condvar::new(),
        });
        let worker_shared = Arc::clone(&shared);
        let worker_name = name.to_string();
        let pool = match threads {
            Some(n) => Some(
                rayon::ThreadPoolBuilder::new()
                    .num_threads(n.max(1))
                    .thread_name({
                        let name = name.to_string();
                        move |i| format!("devarray-{name}-{i}")
                    })
                    .build()
                    .ok()?,
            ),
            None => None,
        };
        std::thread::Builder::new()
            .name(format!("devarray-{name}"))
            .spawn(move || run_worker(&worker_name, &receiver, &worker_shared, pool.as_ref()))
            .ok()?;
        Some(Stream {
            name: name.to_string(),
            shared,
            submitter: Mutex::new(Submitter { sender, last: 0 }),
        })
    }

    fn submitter(&self) -> MutexGuard<'_, Submitter> {
        self.submitter.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Queues `job` and returns its position. Blocks only while the queue is full; an interrupt
    /// then gives up (the job is not queued) with `RuntimeError::Interrupted`.
    pub fn submit(&self, job: Job, interrupt: &AtomicBool) -> Result<u64> {
        let mut submitter = self.submitter();
        let mut job = job;
        loop {
            match submitter.sender.try_send(job) {
                Ok(()) => {
                    submitter.last += 1;
                    return Ok(submitter.last);
                }
                Err(TrySendError::Full(back)) => {
                    job = back;
                    if interrupt.swap(false, Ordering::SeqCst) {
                        return Err(RuntimeError::Interrupted);
                    }
                    // Wait for the worker to finish something, then try again.
                    let mut progress = self.shared.lock();
                    let before = progress.completed;
                    progress.waiters += 1;
                    let (mut progress, _) = self
                        .shared
                        .changed
                        .wait_timeout_while(progress, POLL, |p| p.completed == before)
                        .unwrap_or_else(|e| e.into_inner());
                    progress.waiters -= 1;
                }
                Err(TrySendError::Disconnected(_)) => {
                    return Err(RuntimeError::Value(format!(
                        "{}: the device's worker has stopped; restart the session",
                        self.name
                    )))
                }
            }
        }
    }

    /// Position of the last job queued (0 before any).
    pub fn last_submitted(&self) -> u64 {
        self.submitter().last
    }

    /// Jobs finished so far.
    pub fn completed(&self) -> u64 {
        self.shared.lock().completed
    }

    /// Blocks until the job at position `seq` (and so every job before it) has finished. With
    /// an interrupt flag, a set flag ends the wait early (clearing it) with
    /// `RuntimeError::Interrupted`; the queued work carries on, so every array stays valid.
    pub fn wait(&self, seq: u64, interrupt: Option<&AtomicBool>) -> Result<()> {
        let mut progress = self.shared.lock();
        while progress.completed < seq {
            if let Some(flag) = interrupt {
                if flag.swap(false, Ordering::SeqCst) {
                    return Err(RuntimeError::Interrupted);
                }
            }
            progress.waiters += 1;
            progress = match self.shared.changed.wait_timeout(progress, POLL) {
                Ok((guard, _)) => guard,
                Err(e) => e.into_inner().0,
            };
            progress.waiters -= 1;
        }
        Ok(())
    }

    /// The first error a job raised since the last call, if any.
    pub fn take_error(&self) -> Option<RuntimeError> {
        self.shared.lock().error.take()
    }
}

fn run_worker(
    name: &str,
    receiver: &Receiver<Job>,
    shared: &Shared,
    pool: Option<&rayon::ThreadPool>,
) {
    // Ends when every sender is gone: the runtime was dropped and the queue drained.
    while let Ok(job) = receiver.recv() {
        let run = || catch_unwind(AssertUnwindSafe(job));
        let caught = match pool {
            Some(pool) => pool.install(run),
            None => run(),
        };
        let outcome = match caught {
            Ok(result) => result.err(),
            Err(panic) => Some(panic_error(name, panic.as_ref())),
        };
        let mut progress = shared.lock();
        progress.completed += 1;
        if progress.error.is_none() {
            progress.error = outcome;
        }
        let listening = progress.waiters > 0;
        drop(progress);
        if listening {
            shared.changed.notify_all();
        }
    }
}

/// The error a panicking job leaves for the next synchronising call.
pub fn panic_error(device: &str, panic: &(dyn std::any::Any + Send)) -> RuntimeError {
    let what = panic
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unknown cause".to_string());
    RuntimeError::Value(format!(
        "internal error in queued work on {device}: {what}. The arrays involved hold zeros; please report this"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicU64;

    fn no_interrupt() -> AtomicBool {
        AtomicBool::new(false)
    }

    #[test]
    fn jobs_run_in_order_and_wait_sees_them() {
        let stream = Stream::start("gpu(0)").unwrap();
        let log = Arc::new(Mutex::new(Vec::new()));
        let flag = no_interrupt();
        let mut last = 0;
        for i in 0..100 {
            let log = Arc::clone(&log);
            last = stream
                .submit(
                    Box::new(move || {
                        log.lock().unwrap().push(i);
                        Ok(())
                    }),
                    &flag,
                )
                .unwrap();
        }
        assert_eq!(last, 100);
        stream.wait(last, Some(&flag)).unwrap();
        assert_eq!(*log.lock().unwrap(), (0..100).collect::<Vec<_>>());
        assert_eq!(stream.completed(), 100);
    }

    #[test]
    fn errors_and_panics_are_kept_for_the_next_sync() {
        let stream = Stream::start("gpu(1)").unwrap();
        let flag = no_interrupt();
        stream
            .submit(Box::new(|| Err(RuntimeError::Value("boom".into()))), &flag)
            .unwrap();
        let seq = stream
            .submit(Box::new(|| panic!("kernel bug")), &flag)
            .unwrap();
        // The worker survives a panic and keeps running jobs.
        let ran = Arc::new(AtomicU64::new(0));
        let ran2 = Arc::clone(&ran);
        let after = stream
            .submit(
                Box::new(move || {
                    ran2.store(7, Ordering::SeqCst);
                    Ok(())
                }),
                &flag,
            )
            .unwrap();
        stream.wait(after, None).unwrap();
        assert!(after > seq);
        assert_eq!(ran.load(Ordering::SeqCst), 7);
        assert_eq!(
            stream.take_error(),
            Some(RuntimeError::Value("boom".into()))
        );
        assert_eq!(stream.take_error(), None);
    }

    #[test]
    fn an_interrupt_ends_a_wait_promptly_and_the_work_still_finishes() {
        let stream = Stream::start("gpu(0)").unwrap();
        let flag = no_interrupt();
        let seq = stream
            .submit(
                Box::new(|| {
                    std::thread::sleep(Duration::from_millis(300));
                    Ok(())
                }),
                &flag,
            )
            .unwrap();
        flag.store(true, Ordering::SeqCst);
        let start = std::time::Instant::now();
        assert_eq!(
            stream.wait(seq, Some(&flag)),
            Err(RuntimeError::Interrupted)
        );
        assert!(start.elapsed() < Duration::from_millis(200));
        assert!(!flag.load(Ordering::SeqCst), "the interrupt is consumed");
        stream.wait(seq, None).unwrap();
        assert_eq!(stream.completed(), 1);
    }
}
