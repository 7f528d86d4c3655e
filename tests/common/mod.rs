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
