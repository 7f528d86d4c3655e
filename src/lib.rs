//! devarray: a device-aware array language.
//!
//! Layers, each depending only on the ones below it (`tests/layers.rs` keeps it so):
//! - [`repl`] — the terminal frontend (the Jupyter kernel lives in `kernel/`);
//! - [`eval`] — the interpreter and [`eval::session::Session`], the one evaluator API;
//! - [`modules`] — the built-in libraries: Python's built-ins, `mxnet`, `torch`, `time`, `sys`, `math`;
//! - [`object`] — the object model: values, exceptions, operators, repr, the `Interpreter` trait;
//! - [`nn`] — autograd, layers, training, parameter files, data sets (no language);
//! - [`display`] — text and HTML rendering of plain data; [`lang`] — lexer, parser, syntax tree;
//! - [`runtime`] — devices, arrays, op dispatch;
//! - [`backend`] — where the bytes live and the kernels run (cpu, simulated GPUs, CUDA);
//! - [`vocab`] — what runtime and backends share: dtypes, devices, op enums, errors.
//!
//! See ARCHITECTURE.md for the code map and the invariants.

pub mod backend;
pub mod display;
pub mod eval;
pub mod lang;
pub mod modules;
pub mod nn;
pub mod object;
pub mod repl;
pub mod runtime;
pub mod vocab;

pub use eval::session::{
    ChainedError, Completeness, Completion, DisplayData, DisplayPolicy, ErrorFrame, EvalError,
    EvalOutput, InterruptHandle, Output, OutputSink, ProgressState, Session, SessionConfig,
    StdinReply, StdinRequest,
};
