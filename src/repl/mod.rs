//! The terminal frontends: the interactive REPL, script mode and transcript mode.
//!
//! All three drive the evaluator through [`Evaluator`] (implemented by
//! [`Session`]) and gather statements with [`gather::StatementGatherer`], so a
//! transcript replays exactly what the REPL would do with the same lines.

pub mod gather;
pub mod history;
pub mod interactive;
pub mod output;
pub mod script;
pub mod stdin;
pub mod transcript;

#[cfg(test)]
mod test_support;

use crate::eval::session::{Completeness, EvalError, InterruptHandle, OutputSink, Session};

/// The prompt that starts a statement.
pub const PRIMARY_PROMPT: &str = ">>> ";
/// The prompt for the following lines of a statement.
pub const SECONDARY_PROMPT: &str = "... ";

/// The part of [`Session`] the frontends use; tests substitute a scripted one.
pub trait Evaluator {
    fn eval_with(&mut self, code: &str, sink: &mut dyn OutputSink) -> Result<(), EvalError>;
    fn is_complete(&self, code: &str) -> Completeness;
    fn interrupt_handle(&self) -> InterruptHandle;
    /// The program or session ends: what its variables held is finalised.
    fn shutdown(&mut self, _sink: &mut dyn OutputSink) {}
}

impl Evaluator for Session {
    fn eval_with(&mut self, code: &str, sink: &mut dyn OutputSink) -> Result<(), EvalError> {
        Session::eval_with(self, code, sink)
    }
    fn is_complete(&self, code: &str) -> Completeness {
        Session::is_complete(self, code)
    }
    fn interrupt_handle(&self) -> InterruptHandle {
        Session::interrupt_handle(self)
    }
    fn shutdown(&mut self, sink: &mut dyn OutputSink) {
        Session::shutdown(self, sink)
    }
}

/// The exit status a `SystemExit` error asks for (`sys.exit(n)`): its value
/// when that is an integer, 0 for an empty value or `None`, else 1. Other
/// errors give `None`.
pub fn requested_exit_status(error: &EvalError) -> Option<i32> {
    if error.ename != "SystemExit" {
        return None;
    }
    let value = error.evalue.trim();
    Some(if value.is_empty() || value == "None" {
        0
    } else {
        value.parse().unwrap_or(1)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::eval::session::SessionConfig;

    fn error(ename: &str, evalue: &str) -> EvalError {
        EvalError {
            ename: ename.into(),
            evalue: evalue.into(),
            frames: Vec::new(),
            chained: None,
        }
    }

    #[test]
    fn system_exit_maps_to_status() {
        assert_eq!(requested_exit_status(&error("SystemExit", "3")), Some(3));
        assert_eq!(requested_exit_status(&error("SystemExit", "")), Some(0));
        assert_eq!(requested_exit_status(&error("SystemExit", "None")), Some(0));
        assert_eq!(requested_exit_status(&error("SystemExit", "bye")), Some(1));
        assert_eq!(requested_exit_status(&error("NameError", "3")), None);
    }

    #[test]
    fn welcome_line_lists_devices() {
        let cpu_only = Session::new(SessionConfig {
            sim_gpus: Some(0),
            ..SessionConfig::default()
        });
        assert_eq!(cpu_only.welcome_line(), "devarray 0.1.0 — cpu(0)");
        let two = Session::new(SessionConfig {
            sim_gpus: Some(2),
            ..SessionConfig::default()
        });
        assert_eq!(
            two.welcome_line(),
            "devarray 0.1.0 — cpu(0), gpu(0), gpu(1) (simulated)"
        );
    }
}
