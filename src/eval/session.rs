//! `Session`: the one evaluator API. The REPL, script mode and the Jupyter
//! kernel call nothing else, which is what makes them behave alike.

use std::collections::HashMap;
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use crate::lang::{InputStatus, Span};
use crate::runtime::{Runtime, RuntimeConfig};

use super::error::Exc;
use super::interp::{Interp, State};
use super::value::Value;

/// How a session is set up. `Default` gives a CPU-only session configured from
/// the environment (`DEVARRAY_SIM_GPUS`, `DEVARRAY_SIM_GPU_MEMORY`, `DEVARRAY_CPU_MEMORY`).
#[derive(Debug, Clone, Default)]
pub struct SessionConfig {
    /// Number of simulated GPUs; `None` reads `DEVARRAY_SIM_GPUS`.
    pub sim_gpus: Option<usize>,
    /// Memory budget of each simulated GPU in bytes; `None` reads
    /// `DEVARRAY_SIM_GPU_MEMORY` (default 4 GiB).
    pub sim_gpu_memory: Option<u64>,
    /// Memory budget of cpu(0)'s arrays in bytes; `None` reads `DEVARRAY_CPU_MEMORY`
    /// (default: no limit beyond the machine's).
    pub cpu_memory: Option<u64>,
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
    /// Clear the cell's output so far (`clear_output()`); `wait` defers it to
    /// the next output. Only notebooks have a cell output to clear, so the
    /// default does nothing.
    fn clear_output(&mut self, _wait: bool) {}
    /// A line that redraws itself as work advances (a progress bar). A
    /// terminal redraws it with `\r`; a notebook shows it once and then
    /// updates that output in place (`display_id` names it).
    fn progress(&mut self, display_id: &str, text: &str, state: ProgressState) {
        let _ = display_id;
        match state {
            ProgressState::Start | ProgressState::Update => self.stdout(&format!("\r{text}")),
            ProgressState::End => self.stdout("\n"),
        }
    }
}

/// Where a progress line is in its life (see [`OutputSink::progress`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProgressState {
    /// First drawn.
    Start,
    /// Redrawn with new text.
    Update,
    /// Finished: a terminal moves to the next line.
    End,
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
/// its message (`evalue`) and the call frames it unwound through.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EvalError {
    /// Exception class, e.g. `NameError`, `SyntaxError`, `DeviceError`, `KeyboardInterrupt`.
    pub ename: String,
    /// The message, e.g. `name 'q' is not defined`.
    pub evalue: String,
    /// Where it happened, outermost first; the last frame is where it was
    /// raised. Empty when there is no location (e.g. an interrupt between statements).
    pub frames: Vec<ErrorFrame>,
}

/// One level of a traceback: the function (`<cell>` at top level), the
/// source text that level was running, and the span in it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ErrorFrame {
    pub function: String,
    pub source: String,
    pub span: Span,
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

    /// The one-line form `ename: evalue`.
    pub fn summary(&self) -> String {
        if self.evalue.is_empty() {
            self.ename.clone()
        } else {
            format!("{}: {}", self.ename, self.evalue)
        }
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
        // A plain load first: this runs before every statement, and an atomic swap costs a
        // locked instruction even when no interrupt is pending.
        self.0.load(Ordering::Relaxed) && self.0.swap(false, Ordering::SeqCst)
    }
    pub fn is_set(&self) -> bool {
        self.0.load(Ordering::Relaxed)
    }
}

/// The evaluator: one per REPL, script or kernel. Variables persist across
/// `eval` calls and survive every error and interrupt.
pub struct Session {
    state: State,
    config: SessionConfig,
    /// Problems with the configuration, shown once on the first `eval`.
    warnings: Vec<String>,
}

/// Parse sizes like `4GiB`, `64MiB`, `512M`, `1.5G` or plain bytes.
pub fn parse_size(text: &str) -> Option<u64> {
    let t = text.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let n: f64 = num.parse().ok()?;
    let mult: f64 = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1.0,
        "k" | "kb" | "kib" => 1024.0,
        "m" | "mb" | "mib" => 1024.0 * 1024.0,
        "g" | "gb" | "gib" => 1024.0 * 1024.0 * 1024.0,
        "t" | "tb" | "tib" => 1024.0 * 1024.0 * 1024.0 * 1024.0,
        _ => return None,
    };
    let bytes = n * mult;
    (bytes.is_finite() && (0.0..1.8e19).contains(&bytes)).then_some(bytes as u64)
}

const DEFAULT_SIM_GPU_MEMORY: u64 = 4 << 30;

/// The most simulated GPUs a session starts with (`--sim-gpus`, `DEVARRAY_SIM_GPUS`, the
/// configuration): each has a worker thread and a budget.
pub const MAX_SIM_GPUS: usize = 64;

fn runtime_config(config: &SessionConfig, warnings: &mut Vec<String>) -> RuntimeConfig {
    let sim_gpus = match config.sim_gpus {
        Some(n) if n <= MAX_SIM_GPUS => n,
        Some(n) => {
            warnings.push(format!(
                "{n} simulated GPUs asked for, more than {MAX_SIM_GPUS}; starting with no simulated GPU"
            ));
            0
        }
        None => match std::env::var("DEVARRAY_SIM_GPUS") {
            Ok(v) if !v.trim().is_empty() => match v.trim().parse::<usize>() {
                Ok(n) if n <= MAX_SIM_GPUS => n,
                _ => {
                    warnings.push(format!(
                        "DEVARRAY_SIM_GPUS={v:?} is not a number of GPUs from 0 to {MAX_SIM_GPUS}; starting with no simulated GPU"
                    ));
                    0
                }
            },
            _ => 0,
        },
    };
    let sim_gpu_memory = match config.sim_gpu_memory {
        Some(m) => m,
        None => match std::env::var("DEVARRAY_SIM_GPU_MEMORY") {
            Ok(v) if !v.trim().is_empty() => parse_size(&v).unwrap_or_else(|| {
                warnings.push(format!(
                    "DEVARRAY_SIM_GPU_MEMORY={v:?} is not a size like 64MiB or 16GiB; using 4GiB"
                ));
                DEFAULT_SIM_GPU_MEMORY
            }),
            _ => DEFAULT_SIM_GPU_MEMORY,
        },
    };
    let cpu_memory = config
        .cpu_memory
        .or_else(|| match std::env::var("DEVARRAY_CPU_MEMORY") {
            Ok(v) if !v.trim().is_empty() => parse_size(&v).or_else(|| {
                warnings.push(format!(
                "DEVARRAY_CPU_MEMORY={v:?} is not a size like 64MiB or 16GiB; cpu(0) has no limit"
            ));
                None
            }),
            _ => None,
        });
    RuntimeConfig {
        sim_gpus,
        sim_gpu_memory,
        cpu_memory,
    }
}

impl Session {
    pub fn new(config: SessionConfig) -> Session {
        let mut warnings = Vec::new();
        let rt = Runtime::new(runtime_config(&config, &mut warnings));
        // Shared with the runtime, so an interrupt also ends a wait for device work.
        let interrupt = InterruptHandle(rt.interrupt_flag());
        let mut builtins = super::interp::NameMap::default();
        super::builtins::install(&mut builtins);
        super::modules::install_native(&mut builtins);
        Session {
            state: State {
                globals: super::globals::Globals::default(),
                builtins,
                rt,
                interrupt,
                np_mode: false,
                modules: HashMap::new(),
                default_device: crate::runtime::Device::cpu(0),
                started: std::time::Instant::now(),
                nn: crate::nn::NnState::default(),
            },
            config,
            warnings,
        }
    }

    /// Run `code`, streaming output to `sink`. On an uncaught error, output
    /// produced before it has already gone to the sink, and every variable
    /// assigned before it keeps its value.
    pub fn eval_with(&mut self, code: &str, sink: &mut dyn OutputSink) -> Result<(), EvalError> {
        for w in self.warnings.drain(..) {
            sink.stderr(&format!("warning: {w}\n"));
        }
        // An interrupt that arrived while nothing ran must not hit this code.
        self.state.interrupt.take();
        // The whole program's syntax first, as Python compiles a file before running it; the
        // statements are dropped as they are parsed, and parsed again to run one at a time, so
        // memory follows the largest statement, not the program.
        let whole = crate::lang::Span::new(0, code.len());
        let syntax = stacker::maybe_grow(256 * 1024, 4 * 1024 * 1024, || {
            crate::lang::Statements::new(code, whole).find_map(Result::err)
        });
        if let Some(e) = syntax {
            return Err(EvalError {
                ename: if e.too_deep {
                    "RecursionError"
                } else {
                    "SyntaxError"
                }
                .into(),
                evalue: e.message,
                frames: vec![ErrorFrame {
                    function: "<module>".into(),
                    source: code.to_string(),
                    span: e.span,
                }],
            });
        }
        let source: Rc<str> = Rc::from(code);
        let last_only = self.config.display == DisplayPolicy::LastExpression;
        // CPU kernels check the session's interrupt flag between blocks while this runs.
        let flag = self.state.rt.interrupt_flag();
        let mut interp = Interp::new(&mut self.state, sink, source.clone());
        let mut statements = crate::lang::Statements::new(code, whole);
        // Checked above: every statement parses, so the iterator yields each of them.
        let statements = std::iter::from_fn(|| {
            stacker::maybe_grow(256 * 1024, 4 * 1024 * 1024, || statements.next())
                .and_then(Result::ok)
        });
        let result = crate::backend::cpu::cancel::interruptible(&flag, || {
            interp.run_statements(statements, last_only)
        });
        self.state.interrupt.take();
        // Back at the prompt: buffers kept for reuse within the run go back to the system.
        crate::runtime::memory::release_spare_buffers();
        result.map_err(|e| to_eval_error(e, &source))
    }

    /// Run `code` and collect everything it printed and displayed.
    pub fn eval(&mut self, code: &str) -> EvalOutput {
        let mut outputs = Vec::new();
        let error = self.eval_with(code, &mut outputs).err();
        EvalOutput { outputs, error }
    }

    /// Completion candidates at byte offset `cursor` of `code`: variable
    /// names, built-ins and keywords, or attributes after a dot.
    pub fn complete(&self, code: &str, cursor: usize) -> Completion {
        let cursor = floor_boundary(code, cursor.min(code.len()));
        let before = &code[..cursor];
        let start = before
            .rfind(|c: char| !(c.is_alphanumeric() || c == '_' || c == '.'))
            .map_or(0, |i| {
                i + before[i..].chars().next().map_or(1, char::len_utf8)
            });
        let word = &before[start..];
        let (base, prefix, prefix_start) = match word.rfind('.') {
            Some(dot) => (Some(&word[..dot]), &word[dot + 1..], start + dot + 1),
            None => (None, word, start),
        };
        let mut names: Vec<String> = match base {
            Some(path) => match self.resolve_path(path) {
                Some(v) => super::builtins::attr_names(&v),
                None => Vec::new(),
            },
            None => {
                let mut n: Vec<String> = self
                    .state
                    .globals
                    .keys()
                    .chain(self.state.builtins.keys())
                    .map(|k| k.to_string())
                    .collect();
                n.extend(KEYWORDS.iter().map(|k| k.to_string()));
                n
            }
        };
        names.retain(|n| n.starts_with(prefix) && !n.starts_with("__"));
        names.sort();
        names.dedup();
        Completion {
            matches: names,
            start: prefix_start,
            end: cursor,
        }
    }

    /// The value a dotted path like `mx.nd` or `x` names, without running code.
    fn resolve_path(&self, path: &str) -> Option<Value> {
        let mut parts = path.split('.');
        let head = parts.next()?;
        let mut v = self
            .state
            .globals
            .get(head)
            .or_else(|| self.state.builtins.get(head))
            .cloned()?;
        for p in parts {
            v = match &v {
                Value::Module(m) => m.get(p)?,
                _ => return None,
            };
        }
        Some(v)
    }

    /// Help for the name at `cursor`: docs for built-ins, shape/dtype/device for arrays.
    pub fn inspect(&self, code: &str, cursor: usize) -> Option<DisplayData> {
        let cursor = floor_boundary(code, cursor.min(code.len()));
        let is_name = |c: char| c.is_alphanumeric() || c == '_' || c == '.';
        let start = code[..cursor]
            .rfind(|c: char| !is_name(c))
            .map_or(0, |i| i + 1);
        let end = code[cursor..]
            .find(|c: char| !is_name(c))
            .map_or(code.len(), |i| cursor + i);
        let path = code.get(start..end)?.trim_matches('.');
        if path.is_empty() {
            return None;
        }
        let v = self.resolve_path(path).or_else(|| {
            // `x.sum`: an attribute of a user value; show the method's doc.
            let (base, attr) = path.rsplit_once('.')?;
            let b = self.resolve_path(base)?;
            super::builtins::attr_names(&b)
                .iter()
                .any(|n| n == attr)
                .then(|| Value::str(&format!("{base}.{attr}")))
        })?;
        let plain = match &v {
            Value::Array(a) => {
                let arr = &a.array;
                let shape: Vec<String> = arr.shape().iter().map(|d| d.to_string()).collect();
                format!(
                    "{path}: {} of shape ({}{}), dtype {}, on {}\n{}",
                    v.type_name(),
                    shape.join(", "),
                    if shape.len() == 1 { "," } else { "" },
                    arr.dtype().name(),
                    arr.device(),
                    super::format::array_repr(a).trim_start()
                )
            }
            other => match super::builtins::doc_of(other) {
                Some(doc) => format!("{path}\n{doc}"),
                None => format!("{path}: {}", other.type_name()),
            },
        };
        Some(DisplayData { plain, html: None })
    }

    /// Whether `code` is a whole statement. A block whose last line is still
    /// indented is incomplete until a blank line ends it, as in IPython.
    pub fn is_complete(&self, code: &str) -> Completeness {
        match crate::lang::input_status(code) {
            InputStatus::Complete => Completeness::Complete,
            InputStatus::Incomplete => Completeness::Incomplete {
                indent: crate::lang::next_indent(code),
            },
            InputStatus::Invalid(_) => Completeness::Invalid,
        }
    }

    pub fn interrupt_handle(&self) -> InterruptHandle {
        self.state.interrupt.clone()
    }

    /// Names of the user's variables (for `%who` and frontends).
    pub fn variable_names(&self) -> Vec<String> {
        let mut v: Vec<String> = self.state.globals.keys().map(|k| k.to_string()).collect();
        v.sort();
        v
    }

    /// The devices this session has, e.g. `["cpu(0)", "gpu(0)", "gpu(1)"]`.
    pub fn device_names(&self) -> Vec<String> {
        let mut d = vec!["cpu(0)".to_string()];
        d.extend((0..self.state.rt.num_gpus()).map(|i| format!("gpu({i})")));
        d
    }
}

const KEYWORDS: &[&str] = &[
    "and", "as", "assert", "break", "continue", "def", "del", "elif", "else", "except", "False",
    "finally", "for", "from", "global", "if", "import", "in", "is", "lambda", "None", "not", "or",
    "pass", "raise", "return", "True", "try", "while", "with",
];

fn floor_boundary(s: &str, mut i: usize) -> usize {
    while i > 0 && !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

fn to_eval_error(e: Exc, cell_source: &Rc<str>) -> EvalError {
    let mut frames = Vec::with_capacity(e.frames.len() + 1);
    if let Some(span) = e.span {
        let source = e.source.as_ref().unwrap_or(cell_source);
        frames.push(ErrorFrame {
            function: "<module>".into(),
            source: source.to_string(),
            span,
        });
    }
    for f in &e.frames {
        frames.push(ErrorFrame {
            function: f.function.to_string(),
            source: f.source.to_string(),
            span: f.span,
        });
    }
    EvalError {
        ename: e.kind.name().to_string(),
        evalue: e.message,
        frames,
    }
}
