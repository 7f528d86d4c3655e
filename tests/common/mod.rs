//! Helpers the integration tests share (each test file that needs them says `mod common;`).
#![allow(dead_code)] // each test crate uses its own subset

use devarray::Session;

/// Runs `code` and returns its output; panics on an error, naming the code.
pub fn eval_ok(s: &mut Session, code: &str) -> String {
    let out = s.eval(code);
    if let Some(e) = &out.error {
        panic!("unexpected error for {code:?}: {}", e.render(false));
    }
    out.text()
}

/// `(ename, evalue)` of the error `code` must raise.
pub fn eval_err(s: &mut Session, code: &str) -> (String, String) {
    let out = s.eval(code);
    let e = out
        .error
        .unwrap_or_else(|| panic!("expected an error for {code:?}"));
    (e.ename, e.evalue)
}

/// Asserts each program parses and that every line-prefix of it is "more input" or
/// "complete", never "invalid" (the REPL's continuation and the kernel's `is_complete` must
/// agree with the parser at every depth).
pub fn assert_no_prefix_is_invalid(programs: &[&str]) {
    let s = Session::new(devarray::SessionConfig::default());
    for program in programs {
        assert!(devarray::lang::parse(program).is_ok(), "{program}");
        let lines: Vec<&str> = program.lines().collect();
        for k in 1..=lines.len() {
            let prefix = lines[..k].join("\n");
            assert_ne!(
                s.is_complete(&prefix),
                devarray::Completeness::Invalid,
                "{prefix:?}"
            );
        }
    }
}

/// Runs `f` on a thread with a 1 MiB stack, less than either frontend gives (the REPL's main
/// thread and the kernel's evaluation thread have 8 MiB): guards and parser caps must not
/// depend on it.
pub fn on_small_stack(f: impl FnOnce() + Send + 'static) {
    std::thread::Builder::new()
        .stack_size(1024 * 1024)
        .spawn(f)
        .expect("thread")
        .join()
        .expect("the session must not crash");
}
