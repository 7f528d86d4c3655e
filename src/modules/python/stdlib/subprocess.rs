//! `subprocess`: `run`, `check_output`, `call`, `check_call`, `getoutput`, `Popen` basics, and
//! the one process runner that the notebook's `!cmd` uses too ([`spawn`], [`collect`]).
//!
//! A child runs in its own process group, so an interrupt (or a timeout) ends the command and
//! everything it started; its pipes drain on their own threads and the wait checks the
//! session's interrupt flag every 10 ms. Output that is not captured is shown through the
//! session's output, as it comes (in a notebook too, where CPython's child would write to the
//! kernel's terminal instead). Its stdin is empty unless `input=` gives it.

use std::cell::RefCell;
use std::io::{Read, Write};
use std::process::{Child, Stdio};
use std::rc::Rc;
use std::time::{Duration, Instant};

use super::{exc_class, module, native_class, raise, set_fns};
use crate::modules::python::bytes::Bytes;
use crate::object::class::Class;
use crate::object::value::{Module, NativeObject};
use crate::object::{method, Args, Exc, ExcKind, Interpreter, Value};

/// Where one of the child's output streams goes.
#[derive(Clone, Copy, PartialEq)]
pub enum Sink {
    /// Shown through the session's output as it comes.
    Stream,
    /// Kept and returned.
    Capture,
    /// Discarded (`DEVNULL`).
    Null,
    /// stderr into the same place as stdout (`stderr=STDOUT`).
    Merge,
}

/// What to run and where its streams go.
pub struct Spec {
    pub argv: Vec<String>,
    pub input: Option<Vec<u8>>,
    pub stdout: Sink,
    pub stderr: Sink,
    pub cwd: Option<String>,
    pub env: Option<Vec<(String, String)>>,
    /// After the process ends, how long to keep reading output that still flows (a command
    /// left running in the background keeps the pipes open: `!sleep 15 &` returns at once).
    pub linger: Option<Duration>,
}

impl Spec {
    pub fn shell(cmd: &str) -> Spec {
        Spec {
            argv: vec!["/bin/sh".into(), "-c".into(), cmd.into()],
            input: None,
            stdout: Sink::Stream,
            stderr: Sink::Stream,
            cwd: None,
            env: None,
            linger: None,
        }
    }
}

/// How a collected process ended.
pub struct Outcome {
    /// The exit status; minus the signal's number for a process a signal ended.
    pub returncode: i64,
    pub stdout: Vec<u8>,
    pub stderr: Vec<u8>,
}

/// Why a collection stopped before the process ended (the process group has been killed).
pub enum Stopped {
    Interrupted,
    TimedOut,
    Failed(std::io::Error),
}

/// Starts the process in its own process group.
pub fn spawn(spec: &Spec) -> std::io::Result<Child> {
    use std::os::unix::process::CommandExt;
    let Some((program, rest)) = spec.argv.split_first() else {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            "empty command",
        ));
    };
    let mut cmd = std::process::Command::new(program);
    cmd.args(rest).process_group(0);
    cmd.stdin(if spec.input.is_some() {
        Stdio::piped()
    } else {
        Stdio::null()
    });
    let pipe = |s: Sink| match s {
        Sink::Null => Stdio::null(),
        _ => Stdio::piped(),
    };
    cmd.stdout(pipe(spec.stdout));
    if spec.stderr == Sink::Merge {
        // One pipe for both, so the child's writes keep their order (`stderr=STDOUT`).
        cmd.stderr(Stdio::inherit());
        // SAFETY: dup2(2) is async-signal-safe; std runs this after it has set up the child's
        // stdout, so descriptor 1 is the pipe (or /dev/null) stdout was given.
        unsafe {
            cmd.pre_exec(|| {
                if libc::dup2(1, 2) < 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
    } else {
        cmd.stderr(pipe(spec.stderr));
    }
    if let Some(dir) = &spec.cwd {
        cmd.current_dir(dir);
    }
    if let Some(env) = &spec.env {
        cmd.env_clear();
        cmd.envs(env.iter().map(|(k, v)| (k, v)));
    }
    cmd.spawn()
}

fn kill_group(child: &mut Child, signal: libc::c_int) {
    // SAFETY: kill(2) on the child's own process group (its pid); no memory involved.
    unsafe {
        libc::kill(-(child.id() as libc::pid_t), signal);
    }
}

fn returncode(status: std::process::ExitStatus) -> i64 {
    use std::os::unix::process::ExitStatusExt;
    match status.code() {
        Some(c) => i64::from(c),
        None => -i64::from(status.signal().unwrap_or(0)),
    }
}

/// Feeds `input`, drains the pipes, waits for the end. Streamed output is shown chunk by chunk
/// (a character cut by a chunk boundary waits for the next chunk); an interrupt or the
/// timeout kills the process group.
pub fn collect(
    it: &mut dyn Interpreter,
    child: &mut Child,
    spec: &mut Spec,
    timeout: Option<Duration>,
) -> Result<Outcome, Stopped> {
    if let (Some(input), Some(mut stdin)) = (spec.input.take(), child.stdin.take()) {
        std::thread::spawn(move || {
            let _ = stdin.write_all(&input);
        });
    }
    let (tx, rx) = std::sync::mpsc::sync_channel::<(bool, Option<Vec<u8>>)>(16);
    let drain = |pipe: Option<Box<dyn Read + Send>>, is_err: bool| {
        let tx = tx.clone();
        std::thread::spawn(move || {
            if let Some(mut pipe) = pipe {
                let mut buf = vec![0u8; 64 * 1024];
                while let Ok(n @ 1..) = pipe.read(&mut buf) {
                    if tx.send((is_err, Some(buf[..n].to_vec()))).is_err() {
                        return;
                    }
                }
            }
            let _ = tx.send((is_err, None));
        });
    };
    drain(
        child
            .stdout
            .take()
            .map(|p| Box::new(p) as Box<dyn Read + Send>),
        false,
    );
    drain(
        child
            .stderr
            .take()
            .map(|p| Box::new(p) as Box<dyn Read + Send>),
        true,
    );
    drop(tx);
    let mut kept: [Vec<u8>; 2] = [Vec::new(), Vec::new()];
    let mut carry: [Vec<u8>; 2] = [Vec::new(), Vec::new()];
    let (out_sink, err_sink) = (spec.stdout, spec.stderr);
    let mut take = |it: &mut dyn Interpreter, is_err: bool, bytes: &[u8], last: bool| {
        let sink = if is_err { err_sink } else { out_sink };
        let (sink, slot) = match sink {
            Sink::Merge => (out_sink, 0),
            s => (s, usize::from(is_err)),
        };
        match sink {
            Sink::Capture => kept[slot].extend_from_slice(bytes),
            Sink::Null => {}
            Sink::Stream | Sink::Merge => {
                let pending = &mut carry[slot];
                pending.extend_from_slice(bytes);
                let cut = match std::str::from_utf8(pending) {
                    Ok(_) => pending.len(),
                    Err(e) if e.error_len().is_none() && !last => e.valid_up_to(),
                    Err(_) => pending.len(),
                };
                if cut == 0 {
                    return;
                }
                let text = String::from_utf8_lossy(&pending[..cut]).into_owned();
                pending.drain(..cut);
                if slot == 1 {
                    it.out().stderr(&text);
                } else {
                    it.out().stdout(&text);
                }
            }
        }
    };
    let started = Instant::now();
    let mut open = 2;
    let mut stopped = None;
    let mut status = None;
    let mut exited_at: Option<Instant> = None;
    loop {
        match rx.recv_timeout(Duration::from_millis(10)) {
            Ok((is_err, Some(bytes))) => {
                take(it, is_err, &bytes, false);
                if exited_at.is_some() {
                    exited_at = Some(Instant::now());
                }
            }
            Ok((is_err, None)) => {
                take(it, is_err, &[], true);
                open -= 1;
            }
            Err(_) => {}
        }
        if exited_at.is_none() {
            let why = match child.try_wait() {
                Ok(Some(s)) => {
                    status = Some(s);
                    exited_at = Some(Instant::now());
                    None
                }
                Ok(None) if it.check_interrupt().is_err() => Some(Stopped::Interrupted),
                Ok(None) if timeout.is_some_and(|t| started.elapsed() > t) => {
                    Some(Stopped::TimedOut)
                }
                Ok(None) => None,
                Err(e) => Some(Stopped::Failed(e)),
            };
            if let Some(why) = why {
                kill_group(child, libc::SIGKILL);
                let _ = child.wait();
                stopped = Some(why);
                exited_at = Some(Instant::now());
            }
        }
        match (exited_at, spec.linger) {
            (Some(_), _) if open == 0 => break,
            (Some(t), Some(linger)) if t.elapsed() > linger => break,
            // Killed: whatever it had written is shown, the rest is not waited for.
            (Some(t), _) if stopped.is_some() && t.elapsed() > Duration::from_millis(200) => break,
            _ => {}
        }
    }
    take(it, false, &[], true);
    take(it, true, &[], true);
    if let Some(why) = stopped {
        return Err(why);
    }
    let [stdout, stderr] = kept;
    Ok(Outcome {
        returncode: status.map_or(-9, returncode),
        stdout,
        stderr,
    })
}

// ------------------------------------------------------------------ the module

/// `subprocess.PIPE`, `STDOUT`, `DEVNULL`: CPython's values.
const PIPE: i64 = -1;
const STDOUT: i64 = -2;
const DEVNULL: i64 = -3;

pub fn build() -> Rc<Module> {
    let m = module(
        "subprocess",
        "Subprocesses with accessible I/O streams (in their own process group, interruptible).",
    );
    m.set("PIPE", Value::Int(PIPE));
    m.set("STDOUT", Value::Int(STDOUT));
    m.set("DEVNULL", Value::Int(DEVNULL));
    let base = exc_class("SubprocessError", "subprocess", ExcKind::Exception);
    let called = native_class(
        "CalledProcessError",
        "subprocess",
        Value::Class(base.clone()),
        "Raised when run() is called with check=True and the process returns a non-zero exit status.",
        &[("__init__", called_init), ("__str__", |it, a| {
            let this = a.pos.first().cloned().unwrap_or(Value::None);
            let code = it.get_attr(&this, "returncode")?;
            let cmd = it.get_attr(&this, "cmd")?;
            Ok(Value::str(&called_message(
                it,
                crate::object::ops::as_i64(&code).unwrap_or(0),
                &cmd,
            )))
        })],
    );
    let timeout = native_class(
        "TimeoutExpired",
        "subprocess",
        Value::Class(base.clone()),
        "This exception is raised when the timeout expires while waiting for a child process.",
        &[("__str__", |it, a| {
            let this = a.pos.first().cloned().unwrap_or(Value::None);
            let cmd = it.get_attr(&this, "cmd")?;
            let timeout = it.get_attr(&this, "timeout")?;
            let cmd = crate::object::format::to_str(it, &cmd)?;
            let timeout = crate::object::format::repr(it, &timeout)?;
            Ok(Value::str(&format!(
                "Command '{cmd}' timed out after {timeout} seconds"
            )))
        })],
    );
    m.set("SubprocessError", Value::Class(base));
    m.set("CalledProcessError", Value::Class(called));
    m.set("TimeoutExpired", Value::Class(timeout));
    set_fns(
        &m,
        &[
            (
                "run",
                "run(args, *, stdin=None, input=None, stdout=None, stderr=None, capture_output=False, shell=False, cwd=None, timeout=None, check=False, text=None, env=None): run a command, wait for it, return a CompletedProcess.",
                run,
            ),
            (
                "check_output",
                "check_output(args, **kwargs): run a command and return its output; CalledProcessError on a non-zero exit.",
                check_output,
            ),
            (
                "call",
                "call(args, **kwargs): run a command and return its exit status.",
                call,
            ),
            (
                "check_call",
                "check_call(args, **kwargs): run a command; CalledProcessError on a non-zero exit, else 0.",
                check_call,
            ),
            (
                "getoutput",
                "getoutput(cmd): the output (stdout and stderr) of a shell command, without its last newline.",
                |it, mut a| {
                    let cmd = a.required(0, "cmd")?;
                    a.finish(1)?;
                    getstatusoutput_of(it, &cmd).map(|(_, out)| out)
                },
            ),
            (
                "getstatusoutput",
                "getstatusoutput(cmd): (exit status, output) of a shell command.",
                |it, mut a| {
                    let cmd = a.required(0, "cmd")?;
                    a.finish(1)?;
                    let (code, out) = getstatusoutput_of(it, &cmd)?;
                    Ok(Value::tuple(vec![Value::Int(code), out]))
                },
            ),
            ("Popen", "Popen(args, stdin=None, stdout=None, stderr=None, shell=False, cwd=None, text=None, env=None): start a process.", popen),
        ],
    );
    m
}

/// The options `run` and `Popen` share, read from the call.
struct Options {
    args: Value,
    spec: Spec,
    text: bool,
    check: bool,
    timeout: Option<Duration>,
}

fn sink_of(v: Option<Value>, what: &str) -> Result<Sink, Exc> {
    match v {
        None | Some(Value::None) => Ok(Sink::Stream),
        Some(Value::Int(PIPE)) => Ok(Sink::Capture),
        Some(Value::Int(DEVNULL)) => Ok(Sink::Null),
        Some(Value::Int(STDOUT)) if what == "stderr" => Ok(Sink::Merge),
        Some(other) => Err(Exc::new(
            ExcKind::ValueError,
            format!(
                "{what}= takes subprocess.PIPE, subprocess.DEVNULL{} or None here (files and descriptors are not supported), not {}",
                if what == "stderr" { ", subprocess.STDOUT" } else { "" },
                other.type_name()
            ),
        )),
    }
}

fn text_of(it: &mut dyn Interpreter, v: &Value) -> Result<String, Exc> {
    match v {
        Value::Str(s) => Ok(s.to_string()),
        Value::Object(_) => match crate::modules::python::bytes::of(v) {
            Some(b) => Ok(String::from_utf8_lossy(&b).into_owned()),
            None => crate::object::format::to_str(it, v),
        },
        _ => crate::object::format::to_str(it, v),
    }
}

fn options(it: &mut dyn Interpreter, a: &mut Args, function: &str) -> Result<Options, Exc> {
    let args = a.required(0, "args")?;
    let shell = a
        .take_kw("shell")
        .map(|v| v.truthy())
        .transpose()?
        .unwrap_or(false);
    let argv: Vec<String> = match (&args, shell) {
        (Value::Str(s), true) => vec!["/bin/sh".into(), "-c".into(), s.to_string()],
        (Value::Str(s), false) => vec![s.to_string()],
        (Value::List(_) | Value::Tuple(_), _) => {
            let items = it.iterate(&args)?;
            let mut argv = Vec::with_capacity(items.len());
            for item in &items {
                argv.push(text_of(it, item)?);
            }
            if shell {
                // CPython: the first item is the shell command, the rest the shell's arguments.
                let mut v = vec!["/bin/sh".to_string(), "-c".to_string()];
                v.extend(argv);
                v
            } else {
                argv
            }
        }
        (other, _) => {
            return Err(Exc::type_error(format!(
                "{function}() args must be a string or a list of strings, not {}",
                other.type_name()
            )))
        }
    };
    if argv.is_empty() {
        return Err(Exc::new(ExcKind::IndexError, "list index out of range"));
    }
    let capture = a
        .take_kw("capture_output")
        .map(|v| v.truthy())
        .transpose()?
        .unwrap_or(false);
    let mut stdout = sink_of(a.take_kw("stdout"), "stdout")?;
    let mut stderr = sink_of(a.take_kw("stderr"), "stderr")?;
    if capture {
        if stdout != Sink::Stream || stderr != Sink::Stream {
            return Err(Exc::new(
                ExcKind::ValueError,
                "stdout and stderr arguments may not be used with capture_output.",
            ));
        }
        stdout = Sink::Capture;
        stderr = Sink::Capture;
    }
    let mut text = false;
    for kw in ["text", "universal_newlines"] {
        if let Some(v) = a.take_kw(kw) {
            text |= v.truthy()?;
        }
    }
    for kw in ["encoding", "errors"] {
        if let Some(v) = a.take_kw(kw) {
            text |= !matches!(v, Value::None);
        }
    }
    let input = match a.take_kw("input") {
        None | Some(Value::None) => None,
        Some(v) => Some(text_of(it, &v)?.into_bytes()),
    };
    match a.take_kw("stdin") {
        None | Some(Value::None) | Some(Value::Int(DEVNULL)) => {}
        Some(Value::Int(PIPE)) if function == "Popen" => {}
        Some(_) => {
            return Err(Exc::new(
                ExcKind::ValueError,
                "stdin= takes None, subprocess.DEVNULL (or PIPE for Popen) here; give the text with input=",
            ))
        }
    }
    let cwd = match a.take_kw("cwd") {
        None | Some(Value::None) => None,
        Some(v) => Some(text_of(it, &v)?),
    };
    let env = match &a.take_kw("env") {
        None | Some(Value::None) => None,
        Some(Value::Dict(d)) => {
            let entries = d.borrow().entries.clone();
            let mut env = Vec::new();
            for (k, v) in &entries {
                env.push((text_of(it, k)?, text_of(it, v)?));
            }
            Some(env)
        }
        Some(other) => {
            return Err(Exc::type_error(format!(
                "env must be a dict, not {}",
                other.type_name()
            )))
        }
    };
    let check = a
        .take_kw("check")
        .map(|v| v.truthy())
        .transpose()?
        .unwrap_or(false);
    let timeout = match a.take_kw("timeout") {
        None | Some(Value::None) => None,
        Some(v) => {
            let t = super::num(&v)?;
            Some(Duration::from_secs_f64(t.max(0.0)))
        }
    };
    for kw in ["bufsize", "close_fds", "start_new_session", "executable"] {
        a.take_kw(kw);
    }
    a.finish(1)?;
    Ok(Options {
        args,
        spec: Spec {
            argv,
            input,
            stdout,
            stderr,
            cwd,
            env,
            linger: None,
        },
        text,
        check,
        timeout,
    })
}

/// An error starting the program, as CPython's: `FileNotFoundError: [Errno 2] No such file or
/// directory: 'prog'`.
fn spawn_error(e: &std::io::Error, program: &str) -> Exc {
    let errno = e.raw_os_error().unwrap_or(0);
    let kind = match e.kind() {
        std::io::ErrorKind::NotFound => ExcKind::FileNotFoundError,
        _ => ExcKind::OSError,
    };
    let reason = std::io::Error::from_raw_os_error(errno).to_string();
    let reason = reason.split(" (os error").next().unwrap_or("").to_string();
    let mut x = Exc::new(kind, format!("[Errno {errno}] {reason}: '{program}'"));
    x.args = Some(Rc::new(vec![
        Value::Int(i64::from(errno)),
        Value::str(&reason),
    ]));
    x
}

fn stopped_error(it: &mut dyn Interpreter, why: Stopped, args: &Value, timeout: f64) -> Exc {
    match why {
        Stopped::Interrupted => Exc::new(ExcKind::KeyboardInterrupt, ""),
        Stopped::Failed(e) => Exc::new(ExcKind::OSError, format!("could not wait: {e}")),
        Stopped::TimedOut => {
            let cmd = crate::object::format::to_str(it, args).unwrap_or_default();
            let class = exc_member(it, "TimeoutExpired");
            let e = raise(
                &class,
                format!("Command '{cmd}' timed out after {timeout} seconds"),
            );
            if let Some(inst) = &e.instance {
                *inst.base_state.borrow_mut() =
                    Value::tuple(vec![args.clone(), Value::Float(timeout)]);
                let mut attrs = inst.attrs.borrow_mut();
                attrs.set(Rc::from("cmd"), args.clone());
                attrs.set(Rc::from("timeout"), Value::Float(timeout));
                attrs.set(Rc::from("output"), Value::None);
                attrs.set(Rc::from("stdout"), Value::None);
                attrs.set(Rc::from("stderr"), Value::None);
            }
            e
        }
    }
}

fn exc_member(it: &mut dyn Interpreter, name: &str) -> Rc<Class> {
    match &super::module_member(it, "subprocess", name) {
        Some(Value::Class(c)) => c.clone(),
        _ => exc_class(name, "subprocess", ExcKind::Exception),
    }
}

fn output_value(bytes: Vec<u8>, text: bool) -> Value {
    if text {
        // Universal newlines, as CPython's text mode reads them.
        let s = String::from_utf8_lossy(&bytes).replace("\r\n", "\n");
        Value::str(&s.replace('\r', "\n"))
    } else {
        Bytes::value(bytes)
    }
}

fn called_process_error(
    it: &mut dyn Interpreter,
    code: i64,
    args: &Value,
    stdout: Value,
    stderr: Value,
) -> Exc {
    let message = called_message(it, code, args);
    let class = exc_member(it, "CalledProcessError");
    let e = raise(&class, message);
    if let Some(inst) = &e.instance {
        *inst.base_state.borrow_mut() = Value::tuple(vec![Value::Int(code), args.clone()]);
        let mut attrs = inst.attrs.borrow_mut();
        attrs.set(Rc::from("returncode"), Value::Int(code));
        attrs.set(Rc::from("cmd"), args.clone());
        attrs.set(Rc::from("output"), stdout.clone());
        attrs.set(Rc::from("stdout"), stdout);
        attrs.set(Rc::from("stderr"), stderr);
    }
    e
}

/// `CalledProcessError(returncode, cmd, output=None, stderr=None)`.
fn called_init(_: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let this = a.required(0, "self")?;
    let code = a.required(1, "returncode")?;
    let cmd = a.required(2, "cmd")?;
    let output = a.take(3, "output")?.unwrap_or(Value::None);
    let stderr = a.take(4, "stderr")?.unwrap_or(Value::None);
    a.finish(5)?;
    if let Value::Instance(inst) = &this {
        *inst.base_state.borrow_mut() = Value::tuple(vec![code.clone(), cmd.clone()]);
        let mut attrs = inst.attrs.borrow_mut();
        attrs.set(Rc::from("returncode"), code);
        attrs.set(Rc::from("cmd"), cmd);
        attrs.set(Rc::from("output"), output.clone());
        attrs.set(Rc::from("stdout"), output);
        attrs.set(Rc::from("stderr"), stderr);
    }
    Ok(Value::None)
}

/// CalledProcessError's text, as CPython words it.
fn called_message(it: &mut dyn Interpreter, code: i64, args: &Value) -> String {
    let cmd = crate::object::format::to_str(it, args).unwrap_or_default();
    if code < 0 {
        format!(
            "Command '{cmd}' died with <Signals.{}: {}>.",
            signal_name(-code),
            -code
        )
    } else {
        format!("Command '{cmd}' returned non-zero exit status {code}.")
    }
}

fn signal_name(n: i64) -> &'static str {
    match n {
        1 => "SIGHUP",
        2 => "SIGINT",
        3 => "SIGQUIT",
        4 => "SIGILL",
        6 => "SIGABRT",
        8 => "SIGFPE",
        9 => "SIGKILL",
        11 => "SIGSEGV",
        13 => "SIGPIPE",
        14 => "SIGALRM",
        15 => "SIGTERM",
        _ => "SIGNAL",
    }
}

/// Runs to the end: the CompletedProcess's fields.
fn run_to_end(it: &mut dyn Interpreter, o: &mut Options) -> Result<(i64, Value, Value), Exc> {
    let mut child = spawn(&o.spec).map_err(|e| spawn_error(&e, &o.spec.argv[0]))?;
    let timeout = o.timeout;
    let outcome = collect(it, &mut child, &mut o.spec, timeout).map_err(|why| {
        let t = timeout.map_or(0.0, |t| t.as_secs_f64());
        stopped_error(it, why, &o.args, t)
    })?;
    let field = |sink: Sink, bytes: Vec<u8>| match sink {
        Sink::Capture => output_value(bytes, o.text),
        _ => Value::None,
    };
    let stdout = field(o.spec.stdout, outcome.stdout);
    let stderr = field(o.spec.stderr, outcome.stderr);
    Ok((outcome.returncode, stdout, stderr))
}

fn run(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let mut o = options(it, &mut a, "run")?;
    let (code, stdout, stderr) = run_to_end(it, &mut o)?;
    if o.check && code != 0 {
        return Err(called_process_error(it, code, &o.args, stdout, stderr));
    }
    Ok(crate::modules::python::native::object(CompletedProcess {
        args: o.args,
        returncode: code,
        stdout,
        stderr,
    }))
}

fn check_output(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    if a.take_kw("stdout").is_some() {
        return Err(Exc::new(
            ExcKind::ValueError,
            "stdout argument not allowed, it will be overridden.",
        ));
    }
    let mut o = options(it, &mut a, "check_output")?;
    o.spec.stdout = Sink::Capture;
    let (code, stdout, stderr) = run_to_end(it, &mut o)?;
    if code != 0 {
        return Err(called_process_error(it, code, &o.args, stdout, stderr));
    }
    Ok(stdout)
}

fn call(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let mut o = options(it, &mut a, "call")?;
    run_to_end(it, &mut o).map(|(code, _, _)| Value::Int(code))
}

fn check_call(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let mut o = options(it, &mut a, "check_call")?;
    let (code, _, _) = run_to_end(it, &mut o)?;
    if code != 0 {
        return Err(called_process_error(
            it,
            code,
            &o.args,
            Value::None,
            Value::None,
        ));
    }
    Ok(Value::Int(0))
}

fn getstatusoutput_of(it: &mut dyn Interpreter, cmd: &Value) -> Result<(i64, Value), Exc> {
    let cmd = text_of(it, cmd)?;
    let mut spec = Spec::shell(&cmd);
    spec.stdout = Sink::Capture;
    spec.stderr = Sink::Merge;
    let mut child = spawn(&spec).map_err(|e| spawn_error(&e, "/bin/sh"))?;
    let outcome = collect(it, &mut child, &mut spec, None)
        .map_err(|why| stopped_error(it, why, &Value::str(&cmd), 0.0))?;
    let mut text = String::from_utf8_lossy(&outcome.stdout).into_owned();
    if text.ends_with('\n') {
        text.pop();
    }
    Ok((outcome.returncode, Value::str(&text)))
}

// ------------------------------------------------------------------ objects

/// `CompletedProcess`: what `run` returns.
struct CompletedProcess {
    args: Value,
    returncode: i64,
    stdout: Value,
    stderr: Value,
}

impl NativeObject for CompletedProcess {
    fn type_name(&self) -> &str {
        "CompletedProcess"
    }
    fn repr(&self) -> String {
        // The fields are plain data (str, list of str, bytes): their repr needs no interpreter.
        let mut s = format!(
            "CompletedProcess(args={}, returncode={}",
            plain_repr(&self.args),
            self.returncode
        );
        if !matches!(self.stdout, Value::None) {
            s.push_str(&format!(", stdout={}", plain_repr(&self.stdout)));
        }
        if !matches!(self.stderr, Value::None) {
            s.push_str(&format!(", stderr={}", plain_repr(&self.stderr)));
        }
        s.push(')');
        s
    }
    fn get_attr(&self, this: &Rc<dyn NativeObject>, name: &str) -> Option<Value> {
        Some(match name {
            "args" => self.args.clone(),
            "returncode" => Value::Int(self.returncode),
            "stdout" => self.stdout.clone(),
            "stderr" => self.stderr.clone(),
            "check_returncode" => crate::modules::python::native::bound(
                this,
                "check_returncode",
                "Raise CalledProcessError if the exit code is non-zero.",
                |it, this, _| {
                    let p = crate::modules::python::native::downcast::<CompletedProcess>(
                        this,
                        "CompletedProcess",
                    )?;
                    if p.returncode != 0 {
                        return Err(called_process_error(
                            it,
                            p.returncode,
                            &p.args,
                            p.stdout.clone(),
                            p.stderr.clone(),
                        ));
                    }
                    Ok(Value::None)
                },
            ),
            _ => return None,
        })
    }
    fn attr_names(&self) -> Vec<&'static str> {
        vec!["args", "check_returncode", "returncode", "stderr", "stdout"]
    }
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

fn plain_repr(v: &Value) -> String {
    match v {
        Value::Str(s) => crate::object::format::str_repr(s),
        Value::List(items) => format!(
            "[{}]",
            items
                .borrow()
                .iter()
                .map(plain_repr)
                .collect::<Vec<_>>()
                .join(", ")
        ),
        Value::Tuple(items) => match items.as_slice() {
            [one] => format!("({},)", plain_repr(one)),
            _ => format!(
                "({})",
                items.iter().map(plain_repr).collect::<Vec<_>>().join(", ")
            ),
        },
        Value::Object(o) => o.repr(),
        Value::Int(i) => i.to_string(),
        Value::None => "None".into(),
        other => other.type_name(),
    }
}

/// A process started by `Popen`.
struct Popen {
    args: Value,
    child: RefCell<Option<Child>>,
    spec: RefCell<Spec>,
    text: bool,
    returncode: RefCell<Option<i64>>,
    pid: u32,
}

fn popen(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let o = options(it, &mut a, "Popen")?;
    // `stdin=PIPE`: what communicate(input) writes; an empty stdin otherwise.
    let mut spec = o.spec;
    let child = spawn(&Spec {
        input: Some(Vec::new()),
        argv: spec.argv.clone(),
        stdout: spec.stdout,
        stderr: spec.stderr,
        cwd: spec.cwd.clone(),
        env: spec.env.clone(),
        linger: None,
    })
    .map_err(|e| spawn_error(&e, &spec.argv[0]))?;
    spec.input = None;
    Ok(crate::modules::python::native::object(Popen {
        args: o.args,
        pid: child.id(),
        child: RefCell::new(Some(child)),
        spec: RefCell::new(spec),
        text: o.text,
        returncode: RefCell::new(None),
    }))
}

fn popen_of(v: &Value) -> Result<&Popen, Exc> {
    crate::modules::python::native::downcast::<Popen>(v, "Popen")
}

impl Popen {
    /// Drains the pipes and waits: `communicate` and `wait` alike (a child writing more than a
    /// pipe holds would otherwise never end).
    fn finish(
        &self,
        it: &mut dyn Interpreter,
        input: Option<Vec<u8>>,
        timeout: Option<Duration>,
    ) -> Result<(Value, Value), Exc> {
        let Some(mut child) = self.child.borrow_mut().take() else {
            return Ok((Value::None, Value::None));
        };
        let mut spec = std::mem::replace(&mut *self.spec.borrow_mut(), Spec::shell(""));
        spec.input = Some(input.unwrap_or_default());
        match collect(it, &mut child, &mut spec, timeout) {
            Ok(outcome) => {
                *self.returncode.borrow_mut() = Some(outcome.returncode);
                let field = |sink: Sink, bytes: Vec<u8>| match sink {
                    Sink::Capture => output_value(bytes, self.text),
                    _ => Value::None,
                };
                Ok((
                    field(spec.stdout, outcome.stdout),
                    field(spec.stderr, outcome.stderr),
                ))
            }
            Err(why) => {
                // Killed (interrupt, timeout): its status is known now.
                *self.returncode.borrow_mut() = Some(-9);
                let t = timeout.map_or(0.0, |t| t.as_secs_f64());
                Err(stopped_error(it, why, &self.args, t))
            }
        }
    }
}

fn timeout_arg(a: &mut Args, index: usize) -> Result<Option<Duration>, Exc> {
    Ok(match a.take(index, "timeout")? {
        None | Some(Value::None) => None,
        Some(v) => Some(Duration::from_secs_f64(super::num(&v)?.max(0.0))),
    })
}

impl NativeObject for Popen {
    fn type_name(&self) -> &str {
        "Popen"
    }
    fn repr(&self) -> String {
        format!(
            "<Popen: returncode: {} args: {}>",
            self.returncode
                .borrow()
                .map_or("None".to_string(), |c| c.to_string()),
            plain_repr(&self.args)
        )
    }
    fn get_attr(&self, this: &Rc<dyn NativeObject>, name: &str) -> Option<Value> {
        use crate::modules::python::native::bound;
        Some(match name {
            "args" => self.args.clone(),
            "pid" => Value::Int(i64::from(self.pid)),
            "returncode" => self.returncode.borrow().map_or(Value::None, Value::Int),
            "communicate" => bound(
                this,
                "communicate",
                "communicate(input=None, timeout=None): send input, read all output, wait: (stdout, stderr).",
                |it, this, mut a| {
                    let p = popen_of(this)?;
                    let input = match a.take(0, "input")? {
                        None | Some(Value::None) => None,
                        Some(v) => Some(text_of(it, &v)?.into_bytes()),
                    };
                    let timeout = timeout_arg(&mut a, 1)?;
                    a.finish(2)?;
                    let (out, err) = p.finish(it, input, timeout)?;
                    Ok(Value::tuple(vec![out, err]))
                },
            ),
            "wait" => bound(
                this,
                "wait",
                "wait(timeout=None): wait for the process to end; its exit status.",
                |it, this, mut a| {
                    let p = popen_of(this)?;
                    let timeout = timeout_arg(&mut a, 0)?;
                    a.finish(1)?;
                    p.finish(it, None, timeout)?;
                    Ok(p.returncode.borrow().map_or(Value::None, Value::Int))
                },
            ),
            "poll" => bound(
                this,
                "poll",
                "poll(): the exit status if the process has ended, else None.",
                |_, this, a| {
                    a.finish(0)?;
                    let p = popen_of(this)?;
                    if p.returncode.borrow().is_none() {
                        if let Some(child) = p.child.borrow_mut().as_mut() {
                            if let Ok(Some(status)) = child.try_wait() {
                                *p.returncode.borrow_mut() = Some(returncode(status));
                            }
                        }
                    }
                    Ok(p.returncode.borrow().map_or(Value::None, Value::Int))
                },
            ),
            "kill" | "terminate" => {
                let f: crate::object::value::MethodFn = if name == "kill" {
                    |_, this, _| signal(this, libc::SIGKILL)
                } else {
                    |_, this, _| signal(this, libc::SIGTERM)
                };
                method(
                    &Value::Object(this.clone()),
                    if name == "kill" { "kill" } else { "terminate" },
                    "Send the process (and its process group) a signal.",
                    f,
                )
            }
            _ => return None,
        })
    }
    fn attr_names(&self) -> Vec<&'static str> {
        vec![
            "args",
            "communicate",
            "kill",
            "pid",
            "poll",
            "returncode",
            "terminate",
            "wait",
        ]
    }
    fn enter(&self, _interp: &mut dyn Interpreter) -> Result<Value, Exc> {
        Ok(Value::None)
    }
    fn enter_value(
        &self,
        this: &Rc<dyn NativeObject>,
        _interp: &mut dyn Interpreter,
    ) -> Result<Value, Exc> {
        Ok(Value::Object(this.clone()))
    }
    fn exit(&self, it: &mut dyn Interpreter) -> Result<(), Exc> {
        self.finish(it, None, None).map(|_| ())
    }
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

impl Drop for Popen {
    fn drop(&mut self) {
        // Reap a finished child so it does not linger as a zombie.
        if let Some(child) = self.child.get_mut().as_mut() {
            let _ = child.try_wait();
        }
    }
}

fn signal(this: &Value, sig: libc::c_int) -> Result<Value, Exc> {
    let p = popen_of(this)?;
    if let Some(child) = p.child.borrow_mut().as_mut() {
        if matches!(child.try_wait(), Ok(None)) {
            kill_group(child, sig);
        }
    }
    Ok(Value::None)
}
