//! `Session`: the one evaluator API. The REPL, script mode and the Jupyter
//! kernel call nothing else, which is what makes them behave alike.

use std::collections::HashMap;
use std::rc::Rc;

use crate::lang::{InputStatus, Span};
use crate::runtime::{Runtime, RuntimeConfig};

use super::interp::Interp;
use crate::object::{Exc, ExcKind, Interpreter, State, Value};

// The output protocol and the interrupt handle are the object layer's; frontends name them here.
pub use crate::object::output::{
    DisplayData, OutputSink, ProgressState, StdinReply, StdinRequest, EOF_WHEN_READING,
};
pub use crate::object::state::InterruptHandle;

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
    /// `sys.argv` (script mode: the program's name and its arguments, as CPython sets it);
    /// None leaves `['devarray']`.
    pub argv: Option<Vec<String>>,
    /// The program file script mode runs: its `__file__`.
    pub main_file: Option<String>,
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

impl EvalOutput {
    /// Everything printed and displayed, as a terminal would show it (tests compare this).
    pub fn text(&self) -> String {
        self.outputs
            .iter()
            .map(|o| match o {
                Output::Stdout(s) | Output::Stderr(s) => s.clone(),
                Output::Display { data, .. } => format!("{}\n", data.plain),
            })
            .collect()
    }
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
    /// The exception shown before it (PEP 3134): its `__cause__`, or its `__context__`.
    pub chained: Option<Box<ChainedError>>,
}

/// An error chained to the one after it: `raise ... from` it (`cause`), or raised while it
/// was being handled.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChainedError {
    pub error: EvalError,
    pub cause: bool,
}

/// One level of a traceback: the function (`<cell>` at top level), the
/// source text that level was running, and the span in it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ErrorFrame {
    pub function: String,
    pub source: String,
    pub span: Span,
    /// The file `source` was read from, when it was one (a script; a library module).
    pub file: Option<String>,
}

impl EvalError {
    /// The report a user sees: the source line with a caret under the span,
    /// then `ename: evalue`. `color` adds ANSI colours (callers decide from
    /// NO_COLOR and whether the output is a terminal).
    pub fn render(&self, color: bool) -> String {
        crate::display::error::render_error(&self.to_traceback(), color)
    }

    /// The report as CPython prints an uncaught error in a script: `Traceback (most recent
    /// call last):`, a `File "...", line N, in f` entry per frame, then `ename: evalue`.
    pub fn render_python(&self) -> String {
        crate::display::pytrace::render_python(&self.to_traceback())
    }

    /// The error as the plain data `display` renders.
    pub fn to_traceback(&self) -> crate::display::error::Traceback {
        use crate::display::error::{Chained, TraceFrame, Traceback};
        let one = |e: &EvalError| Traceback {
            ename: e.ename.clone(),
            evalue: e.evalue.clone(),
            frames: e
                .frames
                .iter()
                .map(|f| TraceFrame {
                    function: f.function.clone(),
                    source: f.source.clone(),
                    span: f.span,
                    file: f.file.clone(),
                })
                .collect(),
            chained: None,
        };
        // Oldest last; built from the oldest up (a long chain needs no deep recursion).
        let mut links = vec![(self, false)];
        while let Some(c) = &links.last().and_then(|(e, _)| e.chained.as_ref()) {
            links.push((&c.error, c.cause));
        }
        let mut built: Option<Box<Chained>> = None;
        let mut tb = None;
        while let Some((e, cause)) = links.pop() {
            let mut t = one(e);
            t.chained = built.take();
            if links.is_empty() {
                tb = Some(t);
            } else {
                built = Some(Box::new(Chained {
                    traceback: t,
                    cause,
                }));
            }
        }
        tb.unwrap_or_else(|| one(self))
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
    /// For each match (when filled): its kind as IPython names them
    /// (`function`, `module`, `instance`, `class`, `keyword`, `param`) and
    /// its signature, e.g. `(shape, ctx=None, dtype=None)`.
    pub details: Vec<(String, String)>,
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
    /// `devarray --version`: the version, and which GEMM computes large float products on the
    /// CPU (finding out loads OpenBLAS, so it is asked for only when shown).
    pub fn version_text() -> String {
        format!(
            "{}\nGEMM for large products: {}",
            env!("CARGO_PKG_VERSION"),
            crate::runtime::cpu_gemm_info()
        )
    }

    /// The welcome line a frontend shows: the version and this session's devices, e.g.
    /// `devarray 0.1.0 — cpu(0), gpu(0), gpu(1) (simulated)`.
    pub fn welcome_line(&self) -> String {
        let rt = &self.state.rt;
        let mut devices = String::from("cpu(0)");
        let gpus = rt.num_gpus();
        for i in 0..gpus {
            devices.push_str(&format!(", gpu({i})"));
        }
        if gpus > 0 {
            let backend = rt.backend_name(crate::runtime::Device::gpu(0));
            devices.push_str(&format!(" ({backend})"));
        }
        format!("devarray {} — {devices}", env!("CARGO_PKG_VERSION"))
    }

    pub fn new(config: SessionConfig) -> Session {
        crate::runtime::memory::hold_freed_memory();
        // A new session starts at CPython's digit limit (the limit is kept per thread).
        crate::object::bigint::set_max_str_digits(crate::object::bigint::DEFAULT_MAX_STR_DIGITS);
        let mut warnings = Vec::new();
        let rt = Runtime::new(runtime_config(&config, &mut warnings));
        // Shared with the runtime, so an interrupt also ends a wait for device work.
        let interrupt = InterruptHandle::from_flag(rt.interrupt_flag());
        let mut builtins = crate::object::NameMap::default();
        crate::modules::install(&mut builtins);
        Session {
            state: State {
                globals: crate::object::globals::Globals::default(),
                builtins,
                rt,
                interrupt,
                np_mode: false,
                modules: HashMap::new(),
                default_device: crate::runtime::Device::cpu(0),
                started: std::time::Instant::now(),
                nn: crate::nn::NnState::default(),
                program: None,
            },
            config,
            warnings,
        }
        .with_program()
    }

    /// Sets `sys.argv` and `__file__` from the configuration.
    fn with_program(mut self) -> Session {
        if let Some(file) = &self.config.main_file {
            let name = crate::lang::lexer::intern("__file__");
            self.state.globals.insert(&name, Value::str(file));
        }
        if let Some(argv) = self.config.argv.clone() {
            let mut sink: Vec<Output> = Vec::new();
            let mut interp = Interp::new(&mut self.state, &mut sink, Rc::from(""));
            if let Ok(sys) = interp.import("sys") {
                sys.set(
                    "argv",
                    Value::list(argv.iter().map(|a| Value::str(a)).collect()),
                );
            }
        }
        self
    }

    /// Names the program for warnings' locations, as CPython does: a script's path, or
    /// `<string>` for `-c`.
    pub fn set_program(&mut self, name: &str) {
        self.state.program = Some(Rc::from(name));
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
        // `%timeline` draws one cell's device work.
        self.state.rt.timeline_begin_cell();
        // `x?` / `x??`: IPython's help, printed (the kernel pages it instead).
        if let Some((path, detail)) = super::inspect::help_request(code) {
            let text = self
                .help(&path, detail, false)
                .unwrap_or_else(|| format!("Object `{path}` not found."));
            sink.stdout(&format!("{text}\n"));
            return Ok(());
        }
        // The whole program's syntax first, as Python compiles a file before running it; the
        // statements are dropped as they are parsed, and parsed again to run one at a time, so
        // memory follows the largest statement, not the program.
        let whole = crate::lang::Span::new(0, code.len());
        let syntax = crate::object::stack::maybe_grow(256 * 1024, 4 * 1024 * 1024, || {
            crate::lang::Statements::new(code, whole).find_map(Result::err)
        });
        if let Some(e) = syntax {
            return Err(EvalError {
                ename: e.exception_name().into(),
                evalue: e.message,
                frames: vec![ErrorFrame {
                    function: "<module>".into(),
                    source: code.to_string(),
                    span: e.span,
                    file: self.state.program.as_deref().map(str::to_string),
                }],
                chained: None,
            });
        }
        let source: Rc<str> = Rc::from(code);
        if let Some(program) = &self.state.program {
            crate::object::traceback::name_source(&source, program.clone());
        }
        let last_only = self.config.display == DisplayPolicy::LastExpression;
        // CPU kernels check the session's interrupt flag between blocks while this runs.
        let flag = self.state.rt.interrupt_flag();
        let mut interp = Interp::new(&mut self.state, sink, source.clone());
        let mut statements = crate::lang::Statements::new(code, whole);
        // Checked above: every statement parses, so the iterator yields each of them.
        let statements = std::iter::from_fn(|| {
            crate::object::stack::maybe_grow(256 * 1024, 4 * 1024 * 1024, || statements.next())
                .and_then(Result::ok)
        });
        let result =
            crate::runtime::interruptible(&flag, || interp.run_statements(statements, last_only));
        // A notebook shows the figures a cell left open at its end (matplotlib-inline).
        if last_only {
            crate::modules::matplotlib::flush_inline(&mut interp);
        }
        let mut result = result.map_err(|e| attribute_suggestion(&mut interp, e));
        // A request that came during a statement that never checked (one long sort, a str of
        // a big list) is not dropped: the cell ends in KeyboardInterrupt, as Python raises it
        // when control comes back from the long call.
        if self.state.interrupt.take() && result.is_ok() {
            result = Err(Exc::new(ExcKind::KeyboardInterrupt, ""));
        }
        // Back at the prompt: buffers kept for reuse within the run go back to the system.
        crate::runtime::memory::release_spare_buffers();
        result.map_err(|e| to_eval_error(e, &source))
    }

    /// The end of a program or session: its variables go, in the order they were made, and
    /// the generators they held suspended are closed (their `finally` blocks and `__exit__`s
    /// run), as CPython's shutdown does.
    pub fn shutdown(&mut self, sink: &mut dyn OutputSink) {
        // `atexit`'s functions first, while the variables are still there (CPython's order).
        if let Some(run) = self
            .state
            .modules
            .get("atexit")
            .and_then(|m| m.get("_run_exitfuncs"))
        {
            let mut interp = Interp::new(&mut self.state, sink, Rc::from(""));
            let _ = crate::object::Interpreter::call_value(
                &mut interp,
                &run,
                crate::object::Args::default(),
            );
        }
        let names: Vec<_> = self.state.globals.keys().cloned().collect();
        let values: Vec<Value> = names
            .iter()
            .filter_map(|n| self.state.globals.remove(n))
            .collect();
        let mut interp = Interp::new(&mut self.state, sink, Rc::from(""));
        for v in values {
            drop(v);
            if crate::object::finalize::pending() {
                interp.run_finalizers(None);
            }
        }
    }

    /// Run `code` and collect everything it printed and displayed.
    pub fn eval(&mut self, code: &str) -> EvalOutput {
        let mut outputs = Vec::new();
        let error = self.eval_with(code, &mut outputs).err();
        EvalOutput { outputs, error }
    }

    /// Completion candidates at byte offset `cursor` of `code`: module names
    /// in `import`/`from` lines, a module's members after `from m import`,
    /// attributes after a dot, keyword arguments (`dtype=`) inside a call's
    /// parentheses, else variable names, built-ins and keywords.
    pub fn complete(&mut self, code: &str, cursor: usize) -> Completion {
        let mut completion = self.complete_names(code, cursor);
        let before = &code[..completion.start];
        let base = before
            .strip_suffix('.')
            .and_then(|b| super::inspect::target_at(b, b.len()));
        let import_line = {
            let line = before.rsplit('\n').next().unwrap_or("").trim_start();
            line.starts_with("import ") || (line.starts_with("from ") && !line.contains(" import "))
        };
        // An array's `T` is computed when looked up (a transpose): listing it
        // must not cost that, so array properties are named without a lookup.
        let base_is_array = base
            .as_ref()
            .and_then(|b| super::inspect::resolve(&mut self.state, b))
            .is_some_and(|v| matches!(v, Value::Array(_)));
        completion.details = completion
            .matches
            .iter()
            .map(|m| {
                if base_is_array && m == "T" {
                    return ("instance".to_string(), String::new());
                }
                if m.ends_with('=') {
                    return ("param".to_string(), String::new());
                }
                if KEYWORDS.contains(&m.as_str()) {
                    return ("keyword".to_string(), String::new());
                }
                let path = base.as_ref().map_or(m.clone(), |b| format!("{b}.{m}"));
                let value = if import_line {
                    super::inspect::module(&mut self.state, &path)
                } else {
                    super::inspect::resolve(&mut self.state, &path)
                };
                match value {
                    Some(v) => {
                        let signature = crate::modules::notebook::pydoc::signature_of(&v)
                            .and_then(|s| s.find('(').map(|i| s[i..].to_string()))
                            .unwrap_or_default();
                        let kind = match v {
                            Value::Builtin(_) | Value::Func(_) => "function",
                            Value::Module(_) => "module",
                            Value::Type(_) | Value::ExcType(_) => "class",
                            _ => "instance",
                        };
                        (kind.to_string(), signature)
                    }
                    None => ("statement".to_string(), String::new()),
                }
            })
            .collect();
        completion
    }

    fn complete_names(&mut self, code: &str, cursor: usize) -> Completion {
        use super::inspect;
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
        let line = before.rsplit('\n').next().unwrap_or("");
        let statement = line.trim_start();
        let words: Vec<&str> = statement.split_whitespace().collect();
        let at_word_end = !line.ends_with(char::is_whitespace) || word.is_empty();
        // `import mx|`, `import mxnet.n|`, `from mx|`: module names.
        let naming_module = matches!(words.as_slice(), ["import", ..] | ["from"] | ["from", _])
            && at_word_end
            && !statement.contains(" as ")
            && !(words.first() == Some(&"from") && words.len() == 2 && line.ends_with(' '));
        let mut names: Vec<String> = if naming_module {
            match base {
                Some(parent) => match inspect::module(&mut self.state, parent).as_ref() {
                    Some(Value::Module(m)) => m
                        .attrs
                        .borrow()
                        .iter()
                        .filter(|(_, v)| matches!(v, Value::Module(_)))
                        .map(|(k, _)| k.to_string())
                        .collect(),
                    _ => Vec::new(),
                },
                None => inspect::TOP_LEVEL_MODULES
                    .iter()
                    .map(|m| m.to_string())
                    .collect(),
            }
        } else if let (["from", module, "import", ..], None) = (words.as_slice(), base) {
            // `from mxnet import n|`: the module's members.
            match inspect::module(&mut self.state, module) {
                Some(v) => crate::modules::python::builtins::attr_names(&v),
                None => Vec::new(),
            }
        } else {
            match base {
                Some(path) => match inspect::resolve(&mut self.state, path) {
                    Some(v) => crate::modules::python::builtins::attr_names(&v),
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
                    // Inside a call: its keyword arguments, first, as `dtype=`.
                    if let Some(callee) = inspect::target_at(&code[..start], start)
                        .filter(|_| before[..start].trim_end().ends_with(['(', ',']))
                    {
                        if let Some(sig) = inspect::resolve(&mut self.state, &callee)
                            .as_ref()
                            .and_then(crate::modules::notebook::pydoc::signature_of)
                        {
                            let mut kw: Vec<String> =
                                crate::modules::notebook::pydoc::keyword_params(&sig)
                                    .into_iter()
                                    .filter(|k| k.starts_with(prefix))
                                    .map(|k| format!("{k}="))
                                    .collect();
                            kw.sort();
                            n.retain(|x| x.starts_with(prefix) && !x.starts_with("__"));
                            n.sort();
                            n.dedup();
                            kw.extend(n);
                            return Completion {
                                matches: kw,
                                start: prefix_start,
                                end: cursor,
                                details: Vec::new(),
                            };
                        }
                    }
                    n
                }
            }
        };
        names.retain(|n| n.starts_with(prefix) && !n.starts_with("__"));
        names.sort();
        names.dedup();
        Completion {
            matches: names,
            start: prefix_start,
            end: cursor,
            details: Vec::new(),
        }
    }

    /// Help for what the cursor is on (ipykernel's inspect_request): the
    /// dotted name under it, or the callee when it is inside a call's
    /// parentheses. `detail` 1 adds a function's source; `color` paints the
    /// titles as IPython does.
    pub fn inspect(
        &mut self,
        code: &str,
        cursor: usize,
        detail: u8,
        color: bool,
    ) -> Option<DisplayData> {
        let path = super::inspect::target_at(code, cursor)?;
        self.help(&path, detail, color).map(|plain| DisplayData {
            plain,
            ..Default::default()
        })
    }

    /// The report `path?` shows (`path??` with `detail` 1), or None when the
    /// name is not defined.
    pub fn help(&mut self, path: &str, detail: u8, color: bool) -> Option<String> {
        let v = super::inspect::resolve(&mut self.state, path)?;
        let mut sink: Vec<Output> = Vec::new();
        let mut it = Interp::new(&mut self.state, &mut sink, Rc::from(""));
        Some(crate::modules::notebook::pydoc::describe(
            &mut it, path, &v, detail, color,
        ))
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

/// `e` as an uncaught error's report (plain text), for errors a program goes on after
/// ("Exception ignored in: ...").
pub(super) fn report(e: Exc, cell_source: &Rc<str>) -> String {
    to_eval_error(e, cell_source).render(false)
}

/// `e` and the exceptions chained to it as shown: each one's `__cause__` if it has one, else
/// its `__context__` unless suppressed (`raise ... from`).
fn to_eval_error(e: Exc, cell_source: &Rc<str>) -> EvalError {
    let mut chain: Vec<(Rc<Exc>, bool)> = Vec::new();
    let mut next = shown_link(&e);
    // CPython stops at an exception already shown; ours are snapshots, so bound the length.
    while let Some((x, cause)) = next {
        if chain.len() >= MAX_CHAIN {
            break;
        }
        next = shown_link(&x);
        chain.push((x, cause));
    }
    // Each entry's flag says how it leads to the one after it; built from the oldest.
    let mut chained: Option<Box<ChainedError>> = None;
    for (x, cause) in chain.into_iter().rev() {
        let mut err = one_error((*x).clone(), cell_source);
        err.chained = chained.take();
        chained = Some(Box::new(ChainedError { error: err, cause }));
    }
    let mut err = one_error(e, cell_source);
    err.chained = chained;
    err
}

/// The most exceptions one report shows chained.
const MAX_CHAIN: usize = 100;

/// The exception shown before `e`, and whether it is its cause.
fn shown_link(e: &Exc) -> Option<(Rc<Exc>, bool)> {
    let l = e.links.as_ref()?;
    match (&l.cause, &l.context) {
        (Some(c), _) => Some((c.clone(), true)),
        (None, Some(c)) if !l.suppress_context => Some((c.clone(), false)),
        _ => None,
    }
}

/// The file a frame's source was read from, as the session recorded it.
fn file_of(source: &Rc<str>) -> Option<String> {
    crate::object::traceback::source_file(source).map(|f| f.to_string())
}

/// An uncaught AttributeError's "Did you mean", searched in `dir(obj)` now that it is shown.
fn attribute_suggestion(interp: &mut Interp, mut e: Exc) -> Exc {
    use crate::object::error::Suggestion;
    let Some(Suggestion::Attribute { obj, name }) = e.suggestion().cloned() else {
        return e;
    };
    e.links_mut().suggestion = None;
    let Some(dir) = interp.lookup("dir") else {
        return e;
    };
    let Ok(listed) = crate::object::Interpreter::call_value(
        interp,
        &dir,
        crate::object::Args::positional(vec![obj]),
    ) else {
        return e;
    };
    let Ok(items) = crate::object::Interpreter::iterate(interp, &listed) else {
        return e;
    };
    let names: Vec<&str> = items
        .iter()
        .filter_map(|v| match v {
            Value::Str(s) => Some(&**s),
            _ => None,
        })
        .collect();
    if let Some(found) = crate::object::suggest::nearest(&name, &names) {
        e.links_mut().suggestion = Some(Suggestion::Found(Rc::from(found)));
    }
    e
}

fn one_error(e: Exc, cell_source: &Rc<str>) -> EvalError {
    let mut frames = Vec::with_capacity(e.frames.len() + 1);
    if let Some(span) = e.span {
        let source = e.source.as_ref().unwrap_or(cell_source);
        frames.push(ErrorFrame {
            function: "<module>".into(),
            source: source.to_string(),
            span,
            file: file_of(source),
        });
    }
    for f in &e.frames {
        frames.push(ErrorFrame {
            function: f.function.to_string(),
            source: f.source.to_string(),
            span: f.span,
            file: file_of(&f.source),
        });
    }
    let evalue = match e.suggestion() {
        Some(crate::object::error::Suggestion::Found(name)) => {
            format!("{}. Did you mean: '{name}'?", e.message)
        }
        _ => e.message.clone(),
    };
    EvalError {
        ename: e.class_name(),
        evalue,
        frames,
        chained: None,
    }
}
