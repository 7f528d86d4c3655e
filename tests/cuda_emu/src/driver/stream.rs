//! Streams run their jobs in order on a thread of their own, so work really is asynchronous to
//! the host; events mark a point in a stream, and a wait makes another stream's worker block
//! until that point has run.
use crate::status::*;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::mpsc::{channel, Sender};
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

pub type Job = Box<dyn FnOnce() -> Result<(), CUresult> + Send>;

pub struct Stream {
    pub device: usize,
    sender: Mutex<Option<Sender<(u64, Job)>>>,
    submitted: AtomicU64,
    completed: Mutex<u64>,
    done: Condvar,
}

impl Stream {
    /// Starts the stream's worker. A failing job leaves its code in `sticky` (the device's
    /// error, which every later call reports, as after a fault on a GPU); later jobs are skipped.
    pub fn new(device: usize, sticky: Arc<AtomicU32>, chaos: bool) -> Arc<Stream> {
        let (sender, receiver) = channel::<(u64, Job)>();
        let stream = Arc::new(Stream {
            device,
            sender: Mutex::new(Some(sender)),
            submitted: AtomicU64::new(0),
            completed: Mutex::new(0),
            done: Condvar::new(),
        });
        let worker = Arc::downgrade(&stream);
        let mut seed = crate::splitmix(Arc::as_ptr(&stream) as u64);
        std::thread::Builder::new()
            .name(format!("cuda_emu stream (gpu {device})"))
            .spawn(move || {
                while let Ok((ticket, job)) = receiver.recv() {
                    if chaos {
                        // Up to 2 ms: long enough that a host read without a sync sees old data.
                        seed = crate::splitmix(seed);
                        std::thread::sleep(Duration::from_micros(seed % 2000));
                    }
                    if sticky.load(Ordering::SeqCst) == SUCCESS {
                        if let Err(code) = job() {
                            let _ = sticky.compare_exchange(
                                SUCCESS,
                                code,
                                Ordering::SeqCst,
                                Ordering::SeqCst,
                            );
                        }
                    }
                    let Some(stream) = worker.upgrade() else {
                        break;
                    };
                    let mut completed = stream.completed.lock().unwrap_or_else(|e| e.into_inner());
                    *completed = ticket;
                    stream.done.notify_all();
                }
            })
            .expect("cuda_emu: cannot start a stream thread");
        stream
    }

    /// Queues `job`; returns its ticket (the stream's job count after it).
    pub fn submit(&self, job: Job) -> Result<u64, CUresult> {
        let sender = self.sender.lock().unwrap_or_else(|e| e.into_inner());
        let sender = sender.as_ref().ok_or(INVALID_HANDLE)?;
        let ticket = self.submitted.fetch_add(1, Ordering::SeqCst) + 1;
        sender.send((ticket, job)).map_err(|_| INVALID_HANDLE)?;
        Ok(ticket)
    }

    pub fn ticket(&self) -> u64 {
        self.submitted.load(Ordering::SeqCst)
    }

    pub fn reached(&self, ticket: u64) -> bool {
        *self.completed.lock().unwrap_or_else(|e| e.into_inner()) >= ticket
    }

    pub fn wait_for(&self, ticket: u64) {
        let mut completed = self.completed.lock().unwrap_or_else(|e| e.into_inner());
        while *completed < ticket {
            completed = self.done.wait(completed).unwrap_or_else(|e| e.into_inner());
        }
    }

    /// Blocks until everything submitted so far has run.
    pub fn synchronize(&self) {
        self.wait_for(self.ticket());
    }

    /// No more jobs; the worker ends once the queue is empty.
    pub fn close(&self) {
        self.sender.lock().unwrap_or_else(|e| e.into_inner()).take();
    }
}

/// A recorded point in a stream (None until recorded: such an event counts as complete).
#[derive(Default)]
pub struct Event {
    pub point: Mutex<Option<(Arc<Stream>, u64)>>,
    pub time: Mutex<Option<std::time::Instant>>,
}

impl Event {
    pub fn point(&self) -> Option<(Arc<Stream>, u64)> {
        self.point.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    pub fn is_complete(&self) -> bool {
        self.point()
            .is_none_or(|(stream, ticket)| stream.reached(ticket))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jobs_run_in_order_off_the_calling_thread_and_errors_stick() {
        let sticky = Arc::new(AtomicU32::new(0));
        let stream = Stream::new(0, Arc::clone(&sticky), true);
        let log = Arc::new(Mutex::new(Vec::new()));
        let caller = std::thread::current().id();
        for i in 0..5 {
            let log = Arc::clone(&log);
            stream
                .submit(Box::new(move || {
                    assert_ne!(std::thread::current().id(), caller);
                    log.lock().unwrap().push(i);
                    Ok(())
                }))
                .unwrap();
        }
        stream.submit(Box::new(|| Err(ILLEGAL_ADDRESS))).unwrap();
        let after = Arc::clone(&log);
        stream
            .submit(Box::new(move || {
                after.lock().unwrap().push(99);
                Ok(())
            }))
            .unwrap();
        stream.synchronize();
        assert_eq!(*log.lock().unwrap(), vec![0, 1, 2, 3, 4]);
        assert_eq!(sticky.load(Ordering::SeqCst), ILLEGAL_ADDRESS);
    }

    #[test]
    fn a_wait_orders_two_streams() {
        let sticky = Arc::new(AtomicU32::new(0));
        let (a, b) = (
            Stream::new(0, Arc::clone(&sticky), false),
            Stream::new(1, sticky, false),
        );
        let value = Arc::new(Mutex::new(0));
        let v = Arc::clone(&value);
        a.submit(Box::new(move || {
            std::thread::sleep(Duration::from_millis(20));
            *v.lock().unwrap() = 1;
            Ok(())
        }))
        .unwrap();
        let (src, ticket) = (Arc::clone(&a), a.ticket());
        b.submit(Box::new(move || {
            src.wait_for(ticket);
            Ok(())
        }))
        .unwrap();
        let v = Arc::clone(&value);
        b.submit(Box::new(move || {
            let mut v = v.lock().unwrap();
            *v *= 10;
            Ok(())
        }))
        .unwrap();
        b.synchronize();
        assert_eq!(*value.lock().unwrap(), 10);
    }
}
