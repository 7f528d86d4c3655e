//! Any input to `Session::eval` ends in a value or an error: never a panic,
//! an abort or a hang. One session is reused across inputs, as a REPL would.
#![no_main]

use std::cell::RefCell;

use devarray::{Session, SessionConfig};
use libfuzzer_sys::fuzz_target;

thread_local! {
    static SESSION: RefCell<Session> = RefCell::new(Session::new(SessionConfig {
        sim_gpus: Some(2),
        sim_gpu_memory: Some(64 << 20),
        ..SessionConfig::default()
    }));
}

fuzz_target!(|data: &[u8]| {
    let Ok(code) = std::str::from_utf8(data) else {
        return;
    };
    // Loops without end are a hang by design of the language; keep inputs
    // short and skip the obvious ones so the fuzzer explores the rest.
    if code.len() > 2000 || code.contains("while") {
        return;
    }
    // Never let mutated input run shell commands (`!cmd`), long magics
    // (`%timeit`) or write files anywhere (`save_parameters(path)`).
    let escapes = code
        .lines()
        .any(|l| l.trim_start().starts_with(['!', '%']));
    if escapes || code.contains("save_parameters") {
        return;
    }
    SESSION.with(|s| {
        let mut s = s.borrow_mut();
        let _ = s.eval(code);
        let _ = s.complete(code, code.len() / 2);
        let _ = s.inspect(code, code.len() / 2);
        let _ = s.is_complete(code);
    });
});
