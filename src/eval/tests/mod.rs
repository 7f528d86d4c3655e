//! Tests that run whole programs through a `Session` and look at what a module did (the
//! transcripts under `tests/transcripts/` are the user-level record; these check sink calls and
//! files that a transcript cannot see).
mod clear_output;
mod files;
mod finalizers;
mod gluon_data;

use crate::eval::session::{Output, Session};

/// Runs `code` and returns its printed and displayed text; panics on an error.
pub(super) fn run(s: &mut Session, code: &str) -> String {
    let out = s.eval(code);
    if let Some(e) = &out.error {
        panic!("{code:?} failed: {}: {}", e.ename, e.evalue);
    }
    out.outputs
        .iter()
        .map(|o| match o {
            Output::Stdout(t) | Output::Stderr(t) => t.clone(),
            Output::Display { data, .. } => format!("{}\n", data.plain),
        })
        .collect()
}

/// `(ename, evalue)` of the error `code` must raise.
pub(super) fn error(s: &mut Session, code: &str) -> (String, String) {
    let e = s.eval(code).error.expect("an error");
    (e.ename, e.evalue)
}
