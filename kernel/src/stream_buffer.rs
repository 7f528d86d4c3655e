//! Stream output buffered as ipykernel's `OutStream` does: text printed by a cell collects in a
//! buffer that is published as one `stream` message when it is 200 ms old (a timer thread),
//! when it passes 1 MiB, before any other output of the cell (a display, `clear_output`, the
//! other stream) and when the cell ends. `for i in range(10**6): print(i)` then sends tens of
//! messages instead of a million (each of which a frontend must parse and render).
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use jupyter_protocol::{JupyterMessage, StreamContent};

use crate::iopub::Iopub;

/// ipykernel's `flush_interval`.
const FLUSH_INTERVAL: Duration = Duration::from_millis(200);
/// Text beyond this is published at once, so one message stays a reasonable size.
const MAX_BUFFER: usize = 1 << 20;

#[derive(Default)]
struct State {
    /// Which stream the buffered text belongs to (true: stderr).
    stderr: bool,
    text: String,
    /// When the oldest buffered text was written.
    since: Option<Instant>,
    done: bool,
}

struct Shared {
    state: Mutex<State>,
    wake: Condvar,
    iopub: Iopub,
    parent: JupyterMessage,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn publish(&self, state: &mut State) {
        state.since = None;
        if state.text.is_empty() {
            return;
        }
        let text = std::mem::take(&mut state.text);
        let content = if state.stderr {
            StreamContent::stderr(&text)
        } else {
            StreamContent::stdout(&text)
        };
        self.iopub.publish(content, &self.parent);
    }
}

/// One cell's buffered stdout and stderr. Dropping it publishes what is left.
pub struct StreamBuffer {
    shared: Arc<Shared>,
    timer: Option<JoinHandle<()>>,
}

impl StreamBuffer {
    pub fn new(iopub: &Iopub, parent: &JupyterMessage) -> StreamBuffer {
        let shared = Arc::new(Shared {
            state: Mutex::new(State::default()),
            wake: Condvar::new(),
            iopub: iopub.clone(),
            parent: parent.clone(),
        });
        let timer_shared = Arc::clone(&shared);
        // Without a thread (the system refused one) text is still published at the other
        // points: the next write after the interval, other output, the end of the cell.
        let timer = std::thread::Builder::new()
            .name("devarray-kernel-stream".into())
            .spawn(move || run_timer(&timer_shared))
            .ok();
        StreamBuffer { shared, timer }
    }

    /// Buffers `text` for stdout or stderr (text of the other stream is published first, so
    /// the order of the two is kept).
    pub fn write(&self, stderr: bool, text: &str) {
        let mut state = self.shared.lock();
        if state.stderr != stderr {
            self.shared.publish(&mut state);
            state.stderr = stderr;
        }
        state.text.push_str(text);
        let since = *state.since.get_or_insert_with(Instant::now);
        if state.text.len() >= MAX_BUFFER
            || (self.timer.is_none() && since.elapsed() >= FLUSH_INTERVAL)
        {
            self.shared.publish(&mut state);
        } else {
            self.shared.wake.notify_one();
        }
    }

    /// Publishes the buffered text now.
    pub fn flush(&self) {
        let mut state = self.shared.lock();
        self.shared.publish(&mut state);
    }
}

fn run_timer(shared: &Shared) {
    let mut state = shared.lock();
    loop {
        if state.done {
            return;
        }
        let wait = match state.since {
            Some(since) if since.elapsed() >= FLUSH_INTERVAL => {
                shared.publish(&mut state);
                FLUSH_INTERVAL
            }
            Some(since) => FLUSH_INTERVAL.saturating_sub(since.elapsed()),
            None => FLUSH_INTERVAL,
        };
        state = match shared.wake.wait_timeout(state, wait) {
            Ok((guard, _)) => guard,
            Err(e) => e.into_inner().0,
        };
    }
}

impl Drop for StreamBuffer {
    fn drop(&mut self) {
        {
            let mut state = self.shared.lock();
            state.done = true;
            self.shared.publish(&mut state);
        }
        self.shared.wake.notify_one();
        if let Some(timer) = self.timer.take() {
            let _ = timer.join();
        }
    }
}
