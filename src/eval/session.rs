//! `Session`: the one evaluator API. The REPL, script mode and the Jupyter
//! kernel call nothing else, which is what makes them behave alike.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use crate::lang::Span;

/// How a session is set up. `Default` gives a CPU-only session configured from
/// the environment (`DEVARRAY_SIM_GPUS`, `DEVARRAY_SIM_GPU_MEMORY`).
#[derive(Debug, Clone, Default)]
pub struct SessionConfig {
    /// Number of simulated GPUs; `None` reads `DEVARRAY_SIM_GPUS`.
    pub sim_gpus: Option<usize>,
    /// Memory budget of each simulated GPU in bytes; `None` reads
    /// `DEVARRAY_SIM_GPU_MEMORY` (default 4 GiB).
    pub sim_gpu_memory: Option<u64>,
    /// Which top-level expression values are displayed.
    pub display: DisplayPolicy,
}

/// Which top-level expression statements of one `eval` call show their value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum DisplayPolicy {
    /// Every top-level expression statement whose value is not None (REPL, scripts).
    #[default]
    EveryExpression,
    /// Only the last statement, when it is an expression (a notebook cell, as IPython does).
    LastExpression,
}

/// A displayable value: always text/plain, and text/html for arrays and tables.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DisplayData {
    pub plain: String,
    pub html: Option<String>,
}

/// Receives output while a statement runs, so a frontend can stream it.
pub trait OutputSink {
    fn stdout(&mut self, text: &str);
    fn stderr(&mut self, text: &str);
    /// `is_result` is true for the value of a top-level expression statement
    /// (a notebook's execute_result), false for explicit `display(...)` calls.
    fn display(&mut self, data: &DisplayData, is_result: bool);
}

/// One piece of output, as collected by [`Session::eval`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Output {
    Stdout(String),
    Stderr(String),
    Display { data: DisplayData, is_result: bool },
}

/// Everything one `eval` call produced.
#[derive(Debug, Clone, Default)]
pub struct EvalOutput {
    pub outputs: Vec<Output>,
    pub error: Option<EvalError>,
}

impl OutputSink for Vec<Output> {
    fn stdout(&mut self, text: &str) {
        if let Some(Output::Stdout(s)) = self.last_mut() {
            s.push_str(text);
        } else {
            self.push(Output::Stdout(text.to_string()));
        }
    }
    fn stderr(&mut self, text: &str) {
        if let Some(Output::Stderr(s)) = self.last_mut() {
            s.push_str(text);
        } else {
            self.push(Output::Stderr(text.to_string()));
        }
    }
    fn display(&mut self, data: &DisplayData, is_result: bool) {
        self.push(Output::Display {
            data: data.clone(),
            is_result,
        });
    }
}

/// An uncaught error, ready to show: the exception's class name (`ename`),
/// its message (`evalue`) and where in the source it was raised.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EvalError {
    /// Exception class, e.g. `NameError`, `SyntaxError`, `DeviceError`, `KeyboardInterrupt`.
    pub ename: String,
    /// The message, e.g. `name 'q' is not defined`.
    pub evalue: String,
    /// The source this error refers to (one `eval` call's code) and the span in it.
    pub source: String,
    pub span: Option<Span>,
    /// Enclosing calls, innermost last: `(function name, line text, span in source)`.
    pub frames: Vec<(String, Span)>,
}

impl EvalError {
    /// The report a user sees: the source line with a caret under the span,
    /// then `ename: evalue`. `color` adds ANSI colours (callers decide from
    /// NO_COLOR and whether the output is a terminal).
    pub fn render(&self, color: bool) -> String {
        crate::display::error::render_error(self, color)
    }

    /// Jupyter's traceback: the rendered report split into lines.
    pub fn traceback(&self, color: bool) -> Vec<String> {
        self.render(color).lines().map(str::to_string).collect()
    }
}

/// Whether the code typed so far is a whole statement (the REPL's continuation
/// prompt and Jupyter's is_complete_request both ask this).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Completeness {
    Complete,
    /// More lines are needed; `indent` is the indentation to suggest for the next one.
    Incomplete {
        indent: String,
    },
    /// It can never become valid by adding lines.
    Invalid,
}

/// Tab-completion candidates replacing `code[start..end]`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Completion {
    pub matches: Vec<String>,
    pub start: usize,
    pub end: usize,
}

/// A cloneable, thread-safe handle that asks the running statement to stop.
/// The interpreter checks it between statements and inside loops and long ops;
/// the statement then fails with `KeyboardInterrupt` and every variable stays.
#[derive(Debug, Clone, Default)]
pub struct InterruptHandle(Arc<AtomicBool>);

impl InterruptHandle {
    pub fn interrupt(&self) {
        self.0.store(true, Ordering::SeqCst);
    }
    /// True once if an interrupt was requested, and clears it.
    pub fn take(&self) -> bool {
        self.0.swap(false, Ordering::SeqCst)
    }
    pub fn is_set(&self) -> bool {
        self.0.load(Ordering::Relaxed)
    }
}

/// The evaluator. (The interpreter behind it is being written; this is the
/// contract the frontends build on.)
pub struct Session {
    interrupt: InterruptHandle,
    #[allow(dead_code)]
    config: SessionConfig,
}

impl Session {
    pub fn new(config: SessionConfig) -> Session {
        Session {
            interrupt: InterruptHandle::default(),
            config,
        }
    }

    /// Run `code`, streaming output to `sink`. On an uncaught error, output
    /// produced before it has already gone to the sink, and every variable
    /// assigned before it keeps its value.
    pub fn eval_with(&mut self, code: &str, sink: &mut dyn OutputSink) -> Result<(), EvalError> {
        let _ = (code, sink);
        Err(EvalError {
            ename: "NotImplementedError".into(),
            evalue: "the evaluator is not built yet".into(),
            source: code.to_string(),
            span: None,
            frames: Vec::new(),
        })
    }

    /// Run `code` and collect everything it printed and displayed.
    pub fn eval(&mut self, code: &str) -> EvalOutput {
        let mut outputs = Vec::new();
        let error = self.eval_with(code, &mut outputs).err();
        EvalOutput { outputs, error }
    }

    /// Completion candidates at byte offset `cursor` of `code`.
    pub fn complete(&self, code: &str, cursor: usize) -> Completion {
        Completion {
            matches: Vec::new(),
            start: cursor.min(code.len()),
            end: cursor.min(code.len()),
        }
    }

    /// Help for the name at `cursor`: docs for built-ins, shape/dtype/device for arrays.
    pub fn inspect(&self, code: &str, cursor: usize) -> Option<DisplayData> {
        let _ = (code, cursor);
        None
    }

    pub fn is_complete(&self, code: &str) -> Completeness {
        let _ = code;
        Completeness::Complete
    }

    pub fn interrupt_handle(&self) -> InterruptHandle {
        self.interrupt.clone()
    }
}
