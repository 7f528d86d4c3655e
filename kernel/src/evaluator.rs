//! The evaluation thread. `Session` is not `Send`, so it lives on one thread
//! of its own and the socket tasks talk to it through a job queue; only the
//! `InterruptHandle` crosses over. Output streams to IOPub from this thread as
//! it is produced, so a long cell shows its prints while it runs.

use std::collections::HashMap;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::mpsc;

use devarray::{
    Completeness, Completion, DisplayData, DisplayPolicy, EvalError, EvalOutput, InterruptHandle,
    Output, OutputSink, ProgressState, Session, SessionConfig, StdinReply, StdinRequest,
};
use jupyter_protocol::{
    ClearOutput, CompleteReply, DisplayData as DisplayDataContent, ErrorOutput, ExecuteResult,
    ExecutionCount, ExpressionResult, InspectReply, IsCompleteReply, JupyterMessage, Media,
    MediaType, Payload, StreamContent, Transient, UpdateDisplayData,
};
use tokio::sync::oneshot;

use crate::iopub::Iopub;
use crate::stdin_channel::StdinAsker;
use crate::stream_buffer::StreamBuffer;

/// The part of `Session` the kernel uses; a trait so the thread, the IOPub
/// sink and the panic handling can be tested with a scripted evaluator.
pub trait Evaluate {
    fn eval_with(&mut self, code: &str, sink: &mut dyn OutputSink) -> Result<(), EvalError>;
    fn eval(&mut self, code: &str) -> EvalOutput;
    fn complete(&mut self, code: &str, cursor: usize) -> Completion;
    fn inspect(&mut self, code: &str, cursor: usize, detail: u8) -> Option<DisplayData>;
    /// The report `path?` pages; None when the name is not defined.
    fn help(&mut self, _path: &str, _detail: u8) -> Option<String> {
        None
    }
    fn is_complete(&self, code: &str) -> Completeness;
    fn interrupt_handle(&self) -> InterruptHandle;
}

impl Evaluate for Session {
    fn eval_with(&mut self, code: &str, sink: &mut dyn OutputSink) -> Result<(), EvalError> {
        Session::eval_with(self, code, sink)
    }
    fn eval(&mut self, code: &str) -> EvalOutput {
        Session::eval(self, code)
    }
    fn complete(&mut self, code: &str, cursor: usize) -> Completion {
        Session::complete(self, code, cursor)
    }
    fn inspect(&mut self, code: &str, cursor: usize, detail: u8) -> Option<DisplayData> {
        Session::inspect(self, code, cursor, detail, tracebacks_in_colour())
    }
    fn help(&mut self, path: &str, detail: u8) -> Option<String> {
        Session::help(self, path, detail, tracebacks_in_colour())
    }
    fn is_complete(&self, code: &str) -> Completeness {
        Session::is_complete(self, code)
    }
    fn interrupt_handle(&self) -> InterruptHandle {
        Session::interrupt_handle(self)
    }
}

/// One execute_request, as the evaluation thread needs it.
pub struct ExecuteJob {
    pub code: String,
    pub silent: bool,
    pub execution_count: ExecutionCount,
    pub user_expressions: HashMap<String, String>,
    /// The request, so that every output is sent as its child.
    pub parent: JupyterMessage,
    /// The stdin channel, when the request allows input (`allow_stdin`).
    pub stdin: Option<StdinAsker>,
    pub done: oneshot::Sender<ExecuteOutcome>,
}

/// What a cell did, beyond the output already published.
#[derive(Debug, Default)]
pub struct ExecuteOutcome {
    pub error: Option<ErrorOutput>,
    /// text/plain of the cell's result, for history with output.
    pub result_plain: Option<String>,
    pub user_expressions: HashMap<String, ExpressionResult>,
    /// What the reply asks of the frontend: the pager for `x?`, leaving for `exit`.
    pub payload: Vec<Payload>,
}

pub enum Job {
    // Boxed: an execute job carries the whole request message.
    Execute(Box<ExecuteJob>),
    Complete {
        code: String,
        /// In Unicode code points, as the protocol counts.
        cursor_pos: usize,
        done: oneshot::Sender<CompleteReply>,
    },
    Inspect {
        code: String,
        cursor_pos: usize,
        /// 1 for `x??`: adds a function's source.
        detail_level: u8,
        done: oneshot::Sender<InspectReply>,
    },
    IsComplete {
        code: String,
        done: oneshot::Sender<IsCompleteReply>,
    },
}

/// The socket side's handle on the evaluation thread.
pub struct Evaluator {
    jobs: mpsc::Sender<Job>,
    interrupt: InterruptHandle,
}

impl Evaluator {
    /// Start the thread and its Session (configured from the environment,
    /// e.g. `DEVARRAY_SIM_GPUS`, with notebook display semantics).
    pub fn start(iopub: Iopub) -> std::io::Result<Evaluator> {
        Evaluator::start_with(iopub, || {
            Session::new(SessionConfig {
                display: DisplayPolicy::LastExpression,
                ..SessionConfig::default()
            })
        })
    }

    /// Start the thread with the evaluator that `create` makes on it.
    pub fn start_with<E, F>(iopub: Iopub, create: F) -> std::io::Result<Evaluator>
    where
        E: Evaluate,
        F: FnOnce() -> E + Send + 'static,
    {
        let (jobs, queue) = mpsc::channel::<Job>();
        let (handle_tx, handle_rx) = mpsc::channel::<InterruptHandle>();
        std::thread::Builder::new()
            .name("devarray-eval".to_string())
            // The REPL's main thread has 8 MiB; the guards do not depend on it, but deep native
            // code (a debug build, a library call) gets the same room in both frontends.
            .stack_size(8 * 1024 * 1024)
            .spawn(move || {
                let mut session = match catch_unwind(AssertUnwindSafe(create)) {
                    Ok(session) => session,
                    Err(payload) => {
                        eprintln!(
                            "[devarray-kernel] the evaluator failed to start: {}",
                            panic_message(payload.as_ref())
                        );
                        return;
                    }
                };
                if handle_tx.send(session.interrupt_handle()).is_err() {
                    return;
                }
                let mut cells = Cells::default();
                while let Ok(job) = queue.recv() {
                    run_job(&mut session, &iopub, &mut cells, job);
                }
            })?;
        let interrupt = handle_rx.recv().map_err(|_| {
            std::io::Error::other(
                "the devarray evaluator panicked while starting (see the log above)",
            )
        })?;
        Ok(Evaluator { jobs, interrupt })
    }

    /// Queue a job; false when the evaluation thread is gone.
    pub fn submit(&self, job: Job) -> bool {
        self.jobs.send(job).is_ok()
    }

    /// Ask the running cell to stop at its next check; variables survive.
    pub fn interrupt(&self) {
        self.interrupt.interrupt();
    }
}

/// The source of every cell run so far, so a traceback can name the cell
/// each frame comes from (`Cell In[3]`) as IPython does.
#[derive(Default)]
pub struct Cells {
    numbers: HashMap<String, i32>,
    current: i32,
}

impl Cells {
    fn record(&mut self, code: &str, number: i32) {
        self.current = number;
        self.numbers.insert(code.to_string(), number);
    }

    /// `In[n]` for the cell whose source is `source`; code that no cell
    /// holds (a user expression) counts as the current cell, as in IPython.
    pub fn label(&self, source: &str) -> String {
        format!(
            "In[{}]",
            self.numbers.get(source).copied().unwrap_or(self.current)
        )
    }
}

fn run_job(session: &mut impl Evaluate, iopub: &Iopub, cells: &mut Cells, job: Job) {
    match job {
        Job::Execute(job) => {
            cells.record(
                &job.code,
                i32::try_from(job.execution_count.value()).unwrap_or(i32::MAX),
            );
            let outcome = execute(session, iopub, cells, &job);
            let _ = job.done.send(outcome);
        }
        Job::Complete {
            code,
            cursor_pos,
            done,
        } => {
            let cursor = char_to_byte(&code, cursor_pos);
            let reply = match catch_unwind(AssertUnwindSafe(|| session.complete(&code, cursor))) {
                Ok(completion) => {
                    let cursor_start = byte_to_char(&code, completion.start);
                    let cursor_end = byte_to_char(&code, completion.end);
                    // IPython's experimental per-match types and signatures,
                    // which JupyterLab shows beside each completion.
                    let mut metadata = serde_json::Map::new();
                    if completion.details.len() == completion.matches.len() {
                        let types: Vec<serde_json::Value> = completion
                            .matches
                            .iter()
                            .zip(&completion.details)
                            .map(|(text, (kind, signature))| {
                                serde_json::json!({
                                    "start": cursor_start,
                                    "end": cursor_end,
                                    "text": text,
                                    "type": kind,
                                    "signature": signature,
                                })
                            })
                            .collect();
                        metadata.insert(
                            "_jupyter_types_experimental".to_string(),
                            serde_json::Value::Array(types),
                        );
                    }
                    CompleteReply {
                        matches: completion.matches,
                        cursor_start,
                        cursor_end,
                        metadata,
                        ..CompleteReply::default()
                    }
                }
                Err(payload) => {
                    log_panic("complete", payload.as_ref());
                    CompleteReply {
                        cursor_start: cursor_pos,
                        cursor_end: cursor_pos,
                        ..CompleteReply::default()
                    }
                }
            };
            let _ = done.send(reply);
        }
        Job::Inspect {
            code,
            cursor_pos,
            detail_level,
            done,
        } => {
            let cursor = char_to_byte(&code, cursor_pos);
            let found = match catch_unwind(AssertUnwindSafe(|| {
                session.inspect(&code, cursor, detail_level)
            })) {
                Ok(found) => found,
                Err(payload) => {
                    log_panic("inspect", payload.as_ref());
                    None
                }
            };
            let reply = match found {
                Some(data) => InspectReply {
                    found: true,
                    data: media(&data),
                    ..InspectReply::default()
                },
                None => InspectReply::default(),
            };
            let _ = done.send(reply);
        }
        Job::IsComplete { code, done } => {
            let reply = match catch_unwind(AssertUnwindSafe(|| session.is_complete(&code))) {
                Ok(Completeness::Complete) => IsCompleteReply::complete(),
                Ok(Completeness::Incomplete { indent }) => IsCompleteReply::incomplete(indent),
                Ok(Completeness::Invalid) => IsCompleteReply::invalid(),
                Err(payload) => {
                    log_panic("is_complete", payload.as_ref());
                    IsCompleteReply::unknown()
                }
            };
            let _ = done.send(reply);
        }
    }
}

fn execute(
    session: &mut impl Evaluate,
    iopub: &Iopub,
    cells: &Cells,
    job: &ExecuteJob,
) -> ExecuteOutcome {
    // An interrupt that arrived while no cell was running must not stop this one.
    session.interrupt_handle().take();
    // `exit` / `quit`: ipykernel asks the frontend to leave (jupyter console
    // exits; the kernel itself stays until the frontend shuts it down).
    if devarray::eval::inspect::is_exit_command(&job.code) {
        return ExecuteOutcome {
            payload: vec![Payload::AskExit { keepkernel: false }],
            ..ExecuteOutcome::default()
        };
    }
    // `x?` / `x??`: the report goes to the pager, as IPython's does.
    if let Some((path, detail)) = devarray::eval::inspect::help_request(&job.code) {
        let found = catch_unwind(AssertUnwindSafe(|| session.help(&path, detail)))
            .ok()
            .flatten();
        return match found {
            Some(text) => ExecuteOutcome {
                payload: vec![Payload::Page {
                    data: Media::new(vec![MediaType::Plain(text)]),
                    start: 0,
                }],
                ..ExecuteOutcome::default()
            },
            None => {
                if !job.silent {
                    iopub.publish(
                        StreamContent::stdout(&format!("Object `{path}` not found.\n")),
                        &job.parent,
                    );
                }
                ExecuteOutcome::default()
            }
        };
    }
    let mut sink = IopubSink {
        iopub,
        parent: &job.parent,
        execution_count: job.execution_count,
        silent: job.silent,
        result_plain: None,
        streams: None,
        stdin: job.stdin.as_ref(),
    };
    let error = match catch_unwind(AssertUnwindSafe(|| session.eval_with(&job.code, &mut sink))) {
        Ok(Ok(())) => None,
        Ok(Err(error)) => Some(error_output(&error, cells)),
        Err(payload) => Some(panic_output(payload.as_ref())),
    };
    // The cell's last text goes out before its error and its reply.
    drop(sink.streams.take());
    let result_plain = sink.result_plain.take();
    let user_expressions = if error.is_none() {
        job.user_expressions
            .iter()
            .map(|(name, expression)| (name.clone(), user_expression(session, cells, expression)))
            .collect()
    } else {
        HashMap::new()
    };
    ExecuteOutcome {
        error,
        result_plain,
        user_expressions,
        payload: Vec::new(),
    }
}

/// Evaluate one of execute_request's user_expressions: its value's mime bundle.
fn user_expression(
    session: &mut impl Evaluate,
    cells: &Cells,
    expression: &str,
) -> ExpressionResult {
    // An expression only, as ipykernel's `eval`: a statement (`keep = 0`) is a SyntaxError
    // and never runs, so a silent request cannot change the session.
    if devarray::lang::parse_expression(expression).is_err() {
        let evalue = "invalid syntax (<string>, line 1)".to_string();
        return ExpressionResult::Error {
            ename: "SyntaxError".into(),
            traceback: vec![format!("SyntaxError: {evalue}")],
            evalue,
        };
    }
    let evaluated = catch_unwind(AssertUnwindSafe(|| session.eval(expression)));
    let evaluated = match evaluated {
        Ok(evaluated) => evaluated,
        Err(payload) => {
            let e = panic_output(payload.as_ref());
            return ExpressionResult::Error {
                ename: e.ename,
                evalue: e.evalue,
                traceback: e.traceback,
            };
        }
    };
    if let Some(error) = evaluated.error {
        let e = error_output(&error, cells);
        return ExpressionResult::Error {
            ename: e.ename,
            evalue: e.evalue,
            traceback: e.traceback,
        };
    }
    let value = evaluated
        .outputs
        .iter()
        .rev()
        .find_map(|output| match output {
            Output::Display {
                data,
                is_result: true,
            } => Some(media(data)),
            _ => None,
        });
    ExpressionResult::Ok {
        data: value.unwrap_or_else(|| Media::new(vec![MediaType::Plain("None".to_string())])),
        metadata: Default::default(),
    }
}

/// Publishes a cell's output on IOPub the moment the evaluator produces it.
struct IopubSink<'a> {
    iopub: &'a Iopub,
    parent: &'a JupyterMessage,
    execution_count: ExecutionCount,
    silent: bool,
    result_plain: Option<String>,
    /// Printed text not yet published (made at the cell's first print).
    streams: Option<StreamBuffer>,
    stdin: Option<&'a StdinAsker>,
}

impl IopubSink<'_> {
    fn write(&mut self, stderr: bool, text: &str) {
        if self.silent || text.is_empty() {
            return;
        }
        let (iopub, parent) = (self.iopub, self.parent);
        self.streams
            .get_or_insert_with(|| StreamBuffer::new(iopub, parent))
            .write(stderr, text);
    }

    /// Printed text goes out before any other output, so the order is the program's.
    fn flush_streams(&self) {
        if let Some(streams) = &self.streams {
            streams.flush();
        }
    }
}

impl OutputSink for IopubSink<'_> {
    fn stdout(&mut self, text: &str) {
        self.write(false, text);
    }

    fn stderr(&mut self, text: &str) {
        self.write(true, text);
    }

    fn display(&mut self, data: &DisplayData, is_result: bool) {
        self.flush_streams();
        if is_result {
            self.result_plain = Some(data.plain.clone());
        }
        if self.silent {
            return;
        }
        if is_result {
            let result = ExecuteResult {
                execution_count: self.execution_count,
                data: media(data),
                metadata: Default::default(),
                // The official test suite rejects `"transient": null`.
                transient: Some(Transient::default()),
            };
            self.iopub.publish(result, self.parent);
        } else {
            self.iopub
                .publish(DisplayDataContent::new(media(data)), self.parent);
        }
    }

    fn rich_display(&self) -> bool {
        true
    }

    /// ipykernel's `raw_input`: what was printed goes out first, then the client is asked.
    fn read_stdin(&mut self, request: StdinRequest<'_>, interrupt: &InterruptHandle) -> StdinReply {
        let Some(stdin) = self.stdin else {
            return StdinReply::Unsupported;
        };
        self.flush_streams();
        stdin.read_line(self.parent, request, interrupt)
    }

    fn clear_output(&mut self, wait: bool) {
        self.flush_streams();
        if !self.silent {
            self.iopub.publish(ClearOutput { wait }, self.parent);
        }
    }

    /// A progress bar is one output updated in place: display_data with a
    /// display_id first, then update_display_data for each redraw.
    fn progress(&mut self, display_id: &str, data: &DisplayData, state: ProgressState) {
        if self.silent {
            return;
        }
        self.flush_streams();
        let data = media(data);
        match state {
            ProgressState::Start => {
                let mut content = DisplayDataContent::new(data);
                content.transient = Some(Transient {
                    display_id: Some(display_id.to_string()),
                });
                self.iopub.publish(content, self.parent);
            }
            ProgressState::Update => {
                self.iopub
                    .publish(UpdateDisplayData::new(data, display_id), self.parent);
            }
            ProgressState::End => {}
        }
    }
}

pub fn media(data: &DisplayData) -> Media {
    let mut content = vec![MediaType::Plain(data.plain.clone())];
    if let Some(html) = &data.html {
        content.push(MediaType::Html(html.clone()));
    }
    match &data.image {
        Some((mime, png)) if mime == "image/png" => content.push(MediaType::Png(png.clone())),
        Some((mime, svg)) if mime == "image/svg+xml" => content.push(MediaType::Svg(svg.clone())),
        _ => {}
    }
    Media::new(content)
}

/// The error as IPython reports it: header, `Cell In[n]` frames, colour
/// unless the kernel was started with `NO_COLOR`.
pub fn error_output(error: &EvalError, cells: &Cells) -> ErrorOutput {
    let mut error = error.clone();
    error.evalue = kernel_hint(&error.evalue);
    ErrorOutput {
        // ipykernel's `ename` is the class's `__name__`; the traceback's last line keeps the
        // module (`json.decoder.JSONDecodeError: ...`), as IPython prints it.
        ename: short_class_name(&error.ename).to_string(),
        evalue: error.evalue.clone(),
        traceback: devarray::display::error::render_ipython(
            &error.to_traceback(),
            &|source| cells.label(source),
            tracebacks_in_colour(),
        ),
    }
}

/// `IPython.core.error.StdinNotImplementedError` -> `StdinNotImplementedError`.
fn short_class_name(qualified: &str) -> &str {
    qualified.rsplit('.').next().unwrap_or(qualified)
}

/// The runtime's no-GPU hint names command-line switches a notebook user
/// cannot reach; in Jupyter the way out is the simulated-GPU kernel.
fn kernel_hint(evalue: &str) -> String {
    const CLI_HINT: &str =
        "To simulate GPUs, start devarray with --sim-gpus 2 or set DEVARRAY_SIM_GPUS=2";
    evalue.replace(
        CLI_HINT,
        "To simulate GPUs in Jupyter, switch to the \"devarray (2 simulated GPUs)\" kernel \
         (Kernel > Change Kernel...); outside Jupyter, start devarray with --sim-gpus 2 or set \
         DEVARRAY_SIM_GPUS=2",
    )
}

/// Notebooks show ANSI colours in tracebacks; a kernel started with `NO_COLOR`
/// set (https://no-color.org) sends them plain, for clients that show raw text.
fn tracebacks_in_colour() -> bool {
    static COLOUR: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *COLOUR.get_or_init(|| colour_wanted(std::env::var_os("NO_COLOR").as_deref()))
}

fn colour_wanted(no_color: Option<&std::ffi::OsStr>) -> bool {
    no_color.is_none_or(|value| value.is_empty())
}

/// A panic inside the evaluator is a bug in devarray, not in the user's code;
/// say so, and keep the kernel (and the user's variables) alive.
fn panic_output(payload: &(dyn std::any::Any + Send)) -> ErrorOutput {
    let ename = "InternalError".to_string();
    let evalue = format!(
        "devarray hit an internal error and stopped this cell: {}. Your variables are kept; \
         please report this bug with the cell's code",
        panic_message(payload)
    );
    ErrorOutput {
        traceback: vec![format!("{ename}: {evalue}")],
        ename,
        evalue,
    }
}

fn log_panic(what: &str, payload: &(dyn std::any::Any + Send)) {
    eprintln!(
        "[devarray-kernel] the evaluator panicked during {what}: {}",
        panic_message(payload)
    );
}

fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    if let Some(text) = payload.downcast_ref::<&str>() {
        (*text).to_string()
    } else if let Some(text) = payload.downcast_ref::<String>() {
        text.clone()
    } else {
        "unknown panic".to_string()
    }
}

/// Byte offset of the `chars`-th code point (the end when past it).
pub fn char_to_byte(code: &str, chars: usize) -> usize {
    code.char_indices()
        .nth(chars)
        .map_or(code.len(), |(byte, _)| byte)
}

/// Code points before byte offset `byte` (clamped to the text, and down to a char boundary).
pub fn byte_to_char(code: &str, byte: usize) -> usize {
    let mut byte = byte.min(code.len());
    while !code.is_char_boundary(byte) {
        byte -= 1;
    }
    code.get(..byte).map_or(0, |prefix| prefix.chars().count())
}

#[cfg(test)]
mod tests {
    use super::*;
    use jupyter_protocol::{ExecuteRequest, JupyterMessageContent};
    use std::time::Duration;
    use tokio::sync::mpsc::UnboundedReceiver;

    /// An evaluator whose behaviour each test scripts by the code it sends.
    struct Scripted {
        interrupt: InterruptHandle,
        release: mpsc::Receiver<()>,
    }

    fn scripted_error(ename: &str, code: &str) -> EvalError {
        EvalError {
            ename: ename.to_string(),
            evalue: format!("scripted {ename}"),
            frames: vec![devarray::ErrorFrame {
                function: "<module>".into(),
                source: code.to_string(),
                span: devarray::lang::Span::new(0, code.len()),
                file: None,
            }],
            chained: None,
        }
    }

    impl Evaluate for Scripted {
        fn eval_with(&mut self, code: &str, sink: &mut dyn OutputSink) -> Result<(), EvalError> {
            match code {
                "stream" => {
                    sink.stdout("first\n");
                    let _ = self.release.recv_timeout(Duration::from_secs(10));
                    sink.stderr("second\n");
                    Ok(())
                }
                "busy loop" => loop {
                    if self.interrupt.take() {
                        return Err(scripted_error("KeyboardInterrupt", code));
                    }
                    std::thread::sleep(Duration::from_millis(1));
                },
                "many prints" => {
                    for i in 0..100_000 {
                        sink.stdout(&format!("{i}\n"));
                    }
                    sink.stderr("warned\n");
                    sink.display(
                        &DisplayData {
                            plain: "shown".into(),
                            html: None,
                            image: None,
                        },
                        false,
                    );
                    sink.stdout("last\n");
                    Ok(())
                }
                "panic" => panic!("scripted panic"),
                "clear" => {
                    sink.clear_output(true);
                    Ok(())
                }
                "result" | "double" => {
                    let html = Some("<b>3</b>".to_string());
                    sink.display(
                        &DisplayData {
                            plain: "3".into(),
                            html,
                            ..Default::default()
                        },
                        code == "result",
                    );
                    Ok(())
                }
                _ => Err(scripted_error("NameError", code)),
            }
        }
        fn eval(&mut self, code: &str) -> EvalOutput {
            let mut outputs = Vec::new();
            let error = self.eval_with(code, &mut outputs).err();
            EvalOutput { outputs, error }
        }
        fn complete(&mut self, code: &str, cursor: usize) -> Completion {
            // Replace the word before the cursor.
            let start = code[..cursor].rfind(' ').map_or(0, |i| i + 1);
            Completion {
                matches: vec!["num_gpus".into()],
                start,
                end: cursor,
                details: Vec::new(),
            }
        }
        fn inspect(&mut self, _code: &str, _cursor: usize, _detail: u8) -> Option<DisplayData> {
            panic!("scripted inspect panic")
        }
        fn is_complete(&self, code: &str) -> Completeness {
            match code.ends_with(':') {
                true => Completeness::Incomplete {
                    indent: "    ".into(),
                },
                false => Completeness::Complete,
            }
        }
        fn interrupt_handle(&self) -> InterruptHandle {
            self.interrupt.clone()
        }
    }

    struct Harness {
        evaluator: Evaluator,
        iopub: UnboundedReceiver<JupyterMessage>,
        release: mpsc::Sender<()>,
    }

    fn harness() -> Harness {
        let (iopub, published) = Iopub::to_channel();
        let (release, released) = mpsc::channel();
        let evaluator = Evaluator::start_with(iopub, move || {
            let interrupt = InterruptHandle::default();
            Scripted {
                interrupt,
                release: released,
            }
        })
        .unwrap();
        Harness {
            evaluator,
            iopub: published,
            release,
        }
    }

    impl Harness {
        fn submit(
            &self,
            code: &str,
            silent: bool,
            expressions: &[(&str, &str)],
        ) -> oneshot::Receiver<ExecuteOutcome> {
            let (done, outcome) = oneshot::channel();
            let job = ExecuteJob {
                code: code.to_string(),
                silent,
                execution_count: ExecutionCount::new(7),
                user_expressions: expressions
                    .iter()
                    .map(|(k, v)| (k.to_string(), v.to_string()))
                    .collect(),
                parent: JupyterMessage::new(ExecuteRequest::new(code.to_string()), None),
                stdin: None,
                done,
            };
            assert!(self.evaluator.submit(Job::Execute(Box::new(job))));
            outcome
        }

        fn published(&mut self) -> Vec<serde_json::Value> {
            let mut messages = Vec::new();
            while let Ok(message) = self.iopub.try_recv() {
                let mut value = serde_json::to_value(&message.content).unwrap();
                value["msg_type"] = message.header.msg_type.clone().into();
                messages.push(value);
            }
            messages
        }
    }

    #[test]
    fn output_is_published_while_the_cell_runs() {
        let mut h = harness();
        let outcome = h.submit("stream", false, &[]);
        let first = h.iopub.blocking_recv().unwrap();
        assert!(
            matches!(&first.content, JupyterMessageContent::StreamContent(s) if s.text == "first\n")
        );
        h.release.send(()).unwrap();
        let outcome = outcome.blocking_recv().unwrap();
        assert!(outcome.error.is_none());
        assert_eq!(
            h.published(),
            vec![serde_json::json!({"msg_type": "stream", "name": "stderr", "text": "second\n"})]
        );
    }

    /// Issue 29, finding 5: printed text is buffered as ipykernel's OutStream buffers it: a
    /// hundred thousand prints make a few stream messages (they made one each), and the order
    /// of stdout, stderr and displays is kept.
    #[test]
    fn prints_are_buffered_into_few_messages_in_order() {
        let mut h = harness();
        let outcome = h.submit("many prints", false, &[]).blocking_recv().unwrap();
        assert!(outcome.error.is_none());
        let published = h.published();
        let expected: String = (0..100_000).map(|i| format!("{i}\n")).collect();
        let mut stdout = String::new();
        let mut kinds = Vec::new();
        for m in &published {
            let kind = format!(
                "{}{}",
                m["msg_type"].as_str().unwrap_or(""),
                m["name"]
                    .as_str()
                    .map(|n| format!(":{n}"))
                    .unwrap_or_default()
            );
            if kinds.last() != Some(&kind) {
                kinds.push(kind.clone());
            }
            if kind == "stream:stdout" && stdout.len() < expected.len() {
                stdout.push_str(m["text"].as_str().unwrap_or(""));
            }
        }
        assert_eq!(stdout, expected);
        assert_eq!(
            kinds,
            [
                "stream:stdout",
                "stream:stderr",
                "display_data",
                "stream:stdout"
            ]
        );
        assert!(published.len() < 20, "{} messages", published.len());
    }

    #[test]
    fn interrupt_stops_the_running_cell_and_the_thread_goes_on() {
        let mut h = harness();
        let outcome = h.submit("busy loop", false, &[]);
        std::thread::sleep(Duration::from_millis(50));
        h.evaluator.interrupt();
        let error = outcome.blocking_recv().unwrap().error.unwrap();
        assert_eq!(error.ename, "KeyboardInterrupt");
        assert!(h
            .submit("result", false, &[])
            .blocking_recv()
            .unwrap()
            .error
            .is_none());
        // An interrupt while idle is forgotten when the next cell starts.
        h.evaluator.interrupt();
        let outcome = h.submit("stream", false, &[]);
        h.release.send(()).unwrap();
        assert!(outcome.blocking_recv().unwrap().error.is_none());
        let _ = h.published();
    }

    #[test]
    fn a_panic_becomes_an_error_and_the_thread_survives() {
        let h = harness();
        let error = h
            .submit("panic", false, &[])
            .blocking_recv()
            .unwrap()
            .error
            .unwrap();
        assert_eq!(error.ename, "InternalError");
        assert!(error.evalue.contains("scripted panic"), "{}", error.evalue);
        let outcome = h.submit("result", false, &[]).blocking_recv().unwrap();
        assert_eq!(outcome.result_plain.as_deref(), Some("3"));
        let (done, reply) = oneshot::channel();
        assert!(h.evaluator.submit(Job::Inspect {
            detail_level: 0,
            code: "x".into(),
            cursor_pos: 1,
            done
        }));
        assert!(!reply.blocking_recv().unwrap().found);
    }

    #[test]
    fn results_and_displays_become_execute_result_and_display_data() {
        let mut h = harness();
        let outcome = h
            .submit(
                "result",
                false,
                &[("d", "double"), ("bad", "nope"), ("stmt", "keep = 0")],
            )
            .blocking_recv()
            .unwrap();
        assert_eq!(outcome.result_plain.as_deref(), Some("3"));
        assert_eq!(
            h.published(),
            vec![serde_json::json!({
                "msg_type": "execute_result",
                "execution_count": 7,
                "data": {"text/plain": "3", "text/html": "<b>3</b>"},
                "metadata": {},
                "transient": {},
            })]
        );
        let expressions = serde_json::to_value(&outcome.user_expressions).unwrap();
        // `double` displays without being a result, so its value is None.
        assert_eq!(
            expressions["d"],
            serde_json::json!({"status": "ok", "data": {"text/plain": "None"}, "metadata": {}})
        );
        assert_eq!(expressions["bad"]["ename"], "NameError");
        // Issue 29, finding 7: a statement is not run but reported as ipykernel's eval does.
        assert_eq!(expressions["stmt"]["status"], "error");
        assert_eq!(expressions["stmt"]["ename"], "SyntaxError");
        assert_eq!(
            expressions["stmt"]["evalue"],
            "invalid syntax (<string>, line 1)"
        );
        h.submit("double", false, &[]).blocking_recv().unwrap();
        assert_eq!(h.published()[0]["msg_type"], "display_data");
    }

    #[test]
    fn clear_output_is_published_unless_silent() {
        let mut h = harness();
        h.submit("clear", false, &[]).blocking_recv().unwrap();
        assert_eq!(
            h.published(),
            vec![serde_json::json!({"msg_type": "clear_output", "wait": true})]
        );
        h.submit("clear", true, &[]).blocking_recv().unwrap();
        assert!(h.published().is_empty());
    }

    #[test]
    fn silent_cells_publish_nothing_but_errors_are_returned() {
        let mut h = harness();
        let outcome = h.submit("result", true, &[]).blocking_recv().unwrap();
        assert_eq!(outcome.result_plain.as_deref(), Some("3"));
        let error = h
            .submit("q", true, &[])
            .blocking_recv()
            .unwrap()
            .error
            .unwrap();
        assert_eq!(
            (error.ename.as_str(), error.evalue.as_str()),
            ("NameError", "scripted NameError")
        );
        // IPython's form: rule, header, the frame naming the cell, the message.
        let plain: Vec<String> = error.traceback.iter().map(|l| strip_ansi(l)).collect();
        assert_eq!(plain.len(), 4, "{plain:?}");
        assert!(plain[1].ends_with("Traceback (most recent call last)"));
        assert!(
            plain[2].starts_with("Cell In[7], line 1\n----> 1 q"),
            "{plain:?}"
        );
        assert_eq!(plain[3], "NameError: scripted NameError");
        assert!(h.published().is_empty());
    }

    #[test]
    fn complete_and_is_complete_speak_code_points() {
        let h = harness();
        let (done, reply) = oneshot::channel();
        let code = "é = num_g";
        assert!(h.evaluator.submit(Job::Complete {
            code: code.into(),
            cursor_pos: 9,
            done
        }));
        let reply = reply.blocking_recv().unwrap();
        assert_eq!(
            (reply.matches, reply.cursor_start, reply.cursor_end),
            (vec!["num_gpus".to_string()], 4, 9)
        );
        let (done, reply) = oneshot::channel();
        assert!(h.evaluator.submit(Job::IsComplete {
            code: "for i in x:".into(),
            done
        }));
        let reply = reply.blocking_recv().unwrap();
        assert_eq!(
            serde_json::to_value(reply).unwrap(),
            serde_json::json!({"status": "incomplete", "indent": "    "})
        );
    }

    #[test]
    fn no_color_turns_colour_off_unless_empty() {
        assert!(colour_wanted(None));
        assert!(colour_wanted(Some(std::ffi::OsStr::new(""))));
        assert!(!colour_wanted(Some(std::ffi::OsStr::new("1"))));
    }

    #[test]
    fn cursor_conversions_count_code_points() {
        let code = "é = ones(2)";
        assert_eq!(char_to_byte(code, 0), 0);
        assert_eq!(char_to_byte(code, 1), 2);
        assert_eq!(char_to_byte(code, 100), code.len());
        assert_eq!(byte_to_char(code, 2), 1);
        assert_eq!(byte_to_char(code, 1), 0);
        assert_eq!(byte_to_char(code, 1000), code.chars().count());
    }

    #[test]
    fn media_has_html_only_when_given() {
        let plain = media(&DisplayData {
            plain: "1".into(),
            html: None,
            ..Default::default()
        });
        assert_eq!(
            serde_json::to_value(&plain).unwrap(),
            serde_json::json!({"text/plain": "1"})
        );
        let both = media(&DisplayData {
            plain: "1".into(),
            html: Some("<b>1</b>".into()),
            ..Default::default()
        });
        assert_eq!(
            serde_json::to_value(&both).unwrap(),
            serde_json::json!({"text/plain": "1", "text/html": "<b>1</b>"})
        );
    }

    #[test]
    fn panics_become_internal_errors() {
        let payload: Box<dyn std::any::Any + Send> = Box::new("index out of bounds");
        let error = panic_output(payload.as_ref());
        assert_eq!(error.ename, "InternalError");
        assert!(error.evalue.starts_with(
            "devarray hit an internal error and stopped this cell: index out of bounds."
        ));
        assert_eq!(
            error.traceback,
            vec![format!("InternalError: {}", error.evalue)]
        );
    }

    fn strip_ansi(text: &str) -> String {
        let mut out = String::new();
        let mut chars = text.chars();
        while let Some(c) = chars.next() {
            if c == '\u{1b}' {
                for c in chars.by_ref() {
                    if c == 'm' {
                        break;
                    }
                }
            } else {
                out.push(c);
            }
        }
        out
    }
}
