//! devarray: a device-aware array language.
//!
//! Layers, each depending only on the ones below it:
//! - [`repl`] — the terminal frontend (the Jupyter kernel lives in `kernel/`);
//! - [`eval`] — the interpreter and [`eval::Session`], the one evaluator API;
//! - [`lang`] — lexer, parser and syntax tree (knows nothing of arrays);
//! - [`display`] — text and HTML rendering of arrays and Python-style formatting;
//! - [`runtime`] — devices, arrays, dtypes, op dispatch;
//! - [`backend`] — where the bytes live and the kernels run (cpu today).
//!
//! See ARCHITECTURE.md for the code map and the invariants.

pub mod backend;
pub mod display;
pub mod eval;
pub mod lang;
pub mod nn;
pub mod repl;
pub mod runtime;
pub mod vocab;

pub use eval::session::{
    Completeness, Completion, DisplayData, DisplayPolicy, ErrorFrame, EvalError, EvalOutput,
    InterruptHandle, Output, OutputSink, ProgressState, Session, SessionConfig,
};
