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
pub mod transcript;

#[cfg(test)]
mod test_support;

use crate::eval::session::{
    Completeness, EvalError, InterruptHandle, OutputSink, Session, SessionConfig,
};

/// The prompt that starts a statement.
pub const PRIMARY_PROMPT: &str = ">>> ";
/// The prompt for the following lines of a statement.
pub const SECONDARY_PROMPT: &str = "... ";

/// The part of [`Session`] the frontends use; tests substitute a scripted one.
pub trait Evaluator {
    fn eval_with(&mut self, code: &str, sink: &mut dyn OutputSink) -> Result<(), EvalError>;
    fn is_complete(&self, code: &str) -> Completeness;
    fn interrupt_handle(&self) -> InterruptHandle;
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

/// The welcome line: the version and the devices a session will have.
///
/// The session does not yet report its devices, so this reads the simulated
/// GPU count from the configuration (then `DEVARRAY_SIM_GPUS`).
pub fn welcome_line(config: &SessionConfig) -> String {
    let sim_gpus = config.sim_gpus.unwrap_or_else(|| {
        std::env::var("DEVARRAY_SIM_GPUS")
            .ok()
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or(0)
    });
    let mut devices = String::from("cpu(0)");
    for i in 0..sim_gpus {
        devices.push_str(&format!(", gpu({i})"));
    }
    if sim_gpus > 0 {
        devices.push_str(" (simulated)");
    } else {
        // Without simulated GPUs the session's GPUs are the CUDA cards (none without a driver).
        let cards = crate::backend::cuda::device_count();
        for i in 0..cards {
            devices.push_str(&format!(", gpu({i})"));
        }
        if cards > 0 {
            devices.push_str(" (cuda)");
        }
    }
    format!("devarray {} — {devices}", env!("CARGO_PKG_VERSION"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn error(ename: &str, evalue: &str) -> EvalError {
        EvalError {
            ename: ename.into(),
            evalue: evalue.into(),
            frames: Vec::new(),
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
        let cpu_only = SessionConfig {
            sim_gpus: Some(0),
            ..SessionConfig::default()
        };
        assert_eq!(welcome_line(&cpu_only), "devarray 0.1.0 — cpu(0)");
        let two = SessionConfig {
            sim_gpus: Some(2),
            ..SessionConfig::default()
        };
        assert_eq!(
            welcome_line(&two),
            "devarray 0.1.0 — cpu(0), gpu(0), gpu(1) (simulated)"
        );
    }
}
