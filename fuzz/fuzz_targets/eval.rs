//! Any input to `Session::eval` ends in a value or an error: never a panic,
//! an abort or a hang. One session is reused across inputs, as a REPL would.
//!
//! Under the fuzzer's instrumentation a multi-million-element op takes seconds, so the session
//! runs with small memory budgets (the same `DEVARRAY_CPU_MEMORY` / `DEVARRAY_SIM_GPU_MEMORY`
//! limits a user can set): a large array is an `OutOfMemoryError`, which is itself worth
//! exercising. A long Python-level loop is stopped by a watchdog that interrupts the input
//! after a while, as Ctrl-C would.
#![no_main]

use std::cell::RefCell;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use devarray::{InterruptHandle, Session, SessionConfig};
use libfuzzer_sys::fuzz_target;

const CPU_MEMORY: u64 = 64 << 20;
const SIM_GPU_MEMORY: u64 = 16 << 20;
/// How long one input may run before the watchdog interrupts it.
const INPUT_TIME_LIMIT: Duration = Duration::from_secs(1);

thread_local! {
    static SESSION: RefCell<Session> = RefCell::new(new_session());
}

fn new_session() -> Session {
    limit_memory();
    let session = Session::new(SessionConfig {
        sim_gpus: Some(2),
        sim_gpu_memory: Some(SIM_GPU_MEMORY),
        cpu_memory: Some(CPU_MEMORY),
        ..SessionConfig::default()
    });
    start_watchdog(session.interrupt_handle());
    session
}

/// When the running input must stop, in milliseconds since `epoch()`; 0 while none runs.
static DEADLINE_MS: AtomicU64 = AtomicU64::new(0);

fn epoch() -> Instant {
    static EPOCH: OnceLock<Instant> = OnceLock::new();
    *EPOCH.get_or_init(Instant::now)
}

fn now_ms() -> u64 {
    u64::try_from(epoch().elapsed().as_millis()).unwrap_or(u64::MAX)
}

/// Interrupts the session, again every few milliseconds, while an input runs past its deadline
/// (again, because an input may catch one `KeyboardInterrupt` with a bare `except:`).
fn start_watchdog(handle: InterruptHandle) {
    epoch();
    let spawned = std::thread::Builder::new()
        .name("fuzz-watchdog".into())
        .spawn(move || loop {
            std::thread::sleep(Duration::from_millis(20));
            let deadline = DEADLINE_MS.load(Ordering::Relaxed);
            if deadline != 0 && now_ms() > deadline {
                handle.interrupt();
            }
        });
    // Without the watchdog the run is only slower to stop long loops; the target still works.
    drop(spawned);
}

/// Whether an input must not run: shell escapes (`!cmd`), magics (`%timeit` runs code many
/// times) and writing files (`save_parameters(path)`, `torch.save`, `npx.save`, `nd.save`: any
/// `save`) reach outside the process. Everything
/// else runs, loops with no bound and long inputs included: the watchdog stops what runs too
/// long, the memory budgets bound arrays, and the address-space limit (`limit_memory`) makes a
/// huge string or list a `MemoryError`.
fn skipped(code: &str) -> bool {
    code.contains("save") || code.lines().any(|l| l.trim_start().starts_with(['!', '%']))
}

/// Host memory for the whole process: an allocation past it fails, which devarray reports as
/// `MemoryError` (an abort here is a finding). Not with AddressSanitizer, whose shadow memory
/// needs a huge address space: run this target without `-s address` (see the README).
fn limit_memory() {
    const LIMIT: libc::rlim_t = 4 << 30;
    let limit = libc::rlimit {
        rlim_cur: LIMIT,
        rlim_max: LIMIT,
    };
    // SAFETY: setrlimit with a valid struct; it only lowers this process's own limit.
    unsafe {
        libc::setrlimit(libc::RLIMIT_AS, &limit);
    }
}

fuzz_target!(|data: &[u8]| {
    let Ok(code) = std::str::from_utf8(data) else {
        return;
    };
    if skipped(code) {
        return;
    }
    SESSION.with(|s| {
        let mut s = s.borrow_mut();
        DEADLINE_MS.store(
            now_ms().saturating_add(INPUT_TIME_LIMIT.as_millis() as u64),
            Ordering::Relaxed,
        );
        let _ = s.eval(code);
        DEADLINE_MS.store(0, Ordering::Relaxed);
        let _ = s.complete(code, code.len() / 2);
        let _ = s.inspect(code, code.len() / 2, 0, false);
        let _ = s.is_complete(code);
    });
});
