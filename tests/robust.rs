//! Issue 13: short, valid programs that used to kill the process end in a value or a
//! Python-style error, with the session alive and its variables intact.

use devarray::{Completeness, Session, SessionConfig};

mod common;
use common::{assert_no_prefix_is_invalid, eval_err, eval_ok, on_small_stack};
use snapbox::cmd::{cargo_bin, Command};

/// Runs `program` with `-c` under an address-space limit of `kb` KiB; it must exit 0, and
/// its standard output is returned.
fn run_under_memory_limit(kb: u64, program: &str) -> String {
    let output = std::process::Command::new("sh")
        .arg("-c")
        .arg(format!("ulimit -v {kb} && exec \"$0\" -c \"$1\""))
        .arg(cargo_bin!("devarray"))
        .arg(program)
        .env("NO_COLOR", "1")
        .env_remove("DEVARRAY_SIM_GPUS")
        .output()
        .expect("sh");
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout).into_owned()
}

fn devarray() -> Command {
    Command::new(cargo_bin!("devarray"))
        .env("NO_COLOR", "1")
        .env_remove("DEVARRAY_SIM_GPUS")
}

#[test]
fn deep_values_drop_hash_compare_and_print_without_crashing() {
    on_small_stack(|| {
        let mut s = Session::new(SessionConfig::default());
        eval_ok(
            &mut s,
            "keep = 7\na = []\nb = []\nt = ()\nfor i in range(200000):\n    a = [a]\n    b = [b]\n    t = (t,)\n",
        );
        let cmp = "maximum recursion depth exceeded in comparison";
        for code in [
            "a == b",
            "a < b",
            "a <= b",
            "sorted([a, b])",
            "max(a, b)",
            "a in [b]",
        ] {
            assert_eq!(
                eval_err(&mut s, code),
                ("RecursionError".into(), cmp.into()),
                "{code}"
            );
        }
        for code in ["hash(t)", "{t: 1}"] {
            assert_eq!(
                eval_err(&mut s, code),
                (
                    "RecursionError".into(),
                    "maximum recursion depth exceeded while hashing an object".into()
                ),
                "{code}"
            );
        }
        assert_eq!(
            eval_err(&mut s, "repr(a)"),
            (
                "RecursionError".into(),
                "maximum recursion depth exceeded while getting the repr of an object".into()
            )
        );
        // Dropping them (rebinding, and the session's end) frees 200,000 levels.
        eval_ok(&mut s, "a = 0\nb = 0\nt = 0");
        assert_eq!(eval_ok(&mut s, "print(keep)"), "7\n");
    });
}

#[test]
fn equal_nested_lists_compare_equal_up_to_the_limit() {
    on_small_stack(|| {
        let mut s = Session::new(SessionConfig::default());
        eval_ok(
            &mut s,
            "a = []\nb = []\nfor i in range(900):\n    a = [a]\n    b = [b]\n",
        );
        assert_eq!(
            eval_ok(&mut s, "print(a == b, a != b, a < b, a <= b, [a] == [b])"),
            "True False False True True\n"
        );
    });
}

#[test]
fn long_chains_are_evaluated_or_refused_as_cpython_does() {
    on_small_stack(|| {
        let mut s = Session::new(SessionConfig::default());
        // CPython compiles 2,990 links and refuses 3,000.
        let sum = format!("x = 1{}\nprint(x)", " + 1".repeat(2989));
        assert_eq!(eval_ok(&mut s, &sum), "2990\n");
        let arrays = format!("y = ones(3){}\nprint(y)", " + ones(3)".repeat(2989));
        assert_eq!(
            eval_ok(&mut s, &arrays),
            "\n[2990. 2990. 2990.]\n<NDArray 3 @cpu(0)>\n"
        );
        let too_deep = (
            "RecursionError".to_string(),
            "maximum recursion depth exceeded during compilation".to_string(),
        );
        let sum = format!("x = 1{}", " + 1".repeat(20000));
        assert_eq!(eval_err(&mut s, &sum), too_deep);
        // Never run, and never built: the tree is refused while it is parsed.
        let attrs = format!("if 0:\n    x = y{}\n", ".b".repeat(200_000));
        assert_eq!(eval_err(&mut s, &attrs), too_deep);
        let calls = format!("f = print\nf{}", "()".repeat(5000));
        assert_eq!(eval_err(&mut s, &calls), too_deep);
        assert_eq!(eval_ok(&mut s, "print(x)"), "2990\n");
    });
}

#[test]
fn strings_the_system_cannot_hold_are_memory_errors() {
    let mut s = Session::new(SessionConfig::default());
    eval_ok(&mut s, "keep = 'kept'");
    for code in [
        "'x'.zfill(10**12)",
        "'x'.center(10**12)",
        "'x'.ljust(10**12, '*')",
        "'x'.rjust(10**12)",
        "('a' * 2**20).replace('a', 'a' * 2**20)",
        "'-'.join(['a' * 2**20] * 2**20)",
    ] {
        assert_eq!(
            eval_err(&mut s, code),
            ("MemoryError".into(), String::new()),
            "{code}"
        );
    }
    assert_eq!(
        eval_ok(
            &mut s,
            "print(len('x'.center(2000000)), len('x'.zfill(2000001)), keep)"
        ),
        "2000000 2000001 kept\n"
    );
    assert_eq!(
        eval_ok(&mut s, "print('ab'.center(5, '*'), 'abc'.center(6, '*'), '-5'.zfill(4), 'ab'.replace('', '-'))"),
        "**ab* *abc** -005 -a-b-\n"
    );
}

/// Under an address-space limit the list and its repr are refused with MemoryError, the
/// process goes on (it used to abort with "memory allocation of N bytes failed").
#[test]
fn a_huge_repr_under_a_memory_limit_is_a_memory_error() {
    let program = "x = 3\ntry:\n    y = str(list(range(10**8)))\nexcept MemoryError:\n    print('MemoryError', x)\n";
    assert_eq!(run_under_memory_limit(3000000, program), "MemoryError 3\n");
}

#[test]
fn command_line_errors_are_reported_not_panics() {
    use std::os::unix::ffi::OsStrExt;
    devarray()
        .arg("-c")
        .arg(std::ffi::OsStr::from_bytes(b"print(1)\xff"))
        .assert()
        .code(2)
        .stdout_eq("")
        .stderr_eq("error: invalid UTF-8 was detected in one or more arguments\n\nUsage: devarray [OPTIONS] [-c CODE | FILE | -] [ARGS]...\n\nFor more information, try '--help'.\n");
    devarray()
        .args(["--sim-gpus", "100000", "-c", "print(1)"])
        .assert()
        .code(2)
        .stdout_eq("")
        .stderr_eq("error: invalid value '100000' for '--sim-gpus <N>': expected a number of GPUs from 0 to 64\n\nFor more information, try '--help'.\n");
    devarray()
        .args(["--sim-gpus", "64", "-c", "print(gpu(63))"])
        .assert()
        .success()
        .stdout_eq("gpu(63)\n");
}

/// Every line-prefix of a valid program is "more input" or "complete", never "invalid": the
/// REPL's continuation and the kernel's is_complete agree with the parser on every block, at
/// every depth (a `try:` inside a `def` used to be an error as soon as its body was typed).
#[test]
fn no_prefix_of_a_valid_program_is_invalid() {
    let s = Session::new(SessionConfig::default());
    assert_no_prefix_is_invalid(&[
        "def f():\n    try:\n        z = 1\n    except ValueError as e:\n        z = 2\n    else:\n        z = 3\n    finally:\n        z = 4\n    return z\n",
        "for i in range(3):\n    while i:\n        if i > 1:\n            try:\n                i -= 1\n            finally:\n                pass\n        elif i:\n            break\n        else:\n            continue\n",
        "with open('x') as f:\n    def g(a,\n          b):\n        with f:\n            try:\n                return (a +\n                        b)\n            except (TypeError,\n                    ValueError):\n                raise\n",
        "if x:\n    def h():\n        for j in y:\n            try:\n                pass\n            except Exception:\n                pass\n",
    ]);
    // And what can never be valid is still said at once.
    assert_eq!(
        s.is_complete("def f():\n    try:\n        z = 1\n    z = 2"),
        Completeness::Invalid
    );
}

/// A large product is cut into tiles and the interrupt flag is checked between them: the
/// statement stops with KeyboardInterrupt, binds nothing, and the operands are intact (it used
/// to run to its end, and the interrupt was lost).
#[test]
fn an_interrupt_stops_a_long_matrix_product() {
    let mut s = Session::new(SessionConfig::default());
    eval_ok(&mut s, "c = ones(6000, 6000)");
    let handle = s.interrupt_handle();
    let timer = std::thread::spawn(move || {
        std::thread::sleep(std::time::Duration::from_millis(100));
        handle.interrupt();
    });
    let start = std::time::Instant::now();
    let out = s.eval("d = c @ c");
    timer.join().expect("timer");
    let err = out.error.expect("the product must be interrupted");
    assert_eq!(err.ename, "KeyboardInterrupt");
    eprintln!("interrupted after {:?}", start.elapsed());
    assert_eq!(eval_err(&mut s, "d").0, "NameError");
    assert_eq!(
        eval_ok(&mut s, "print(c.sum())"),
        "\n[36000000.]\n<NDArray 1 @cpu(0)>\n"
    );
}

/// `!cmd` polls the interrupt flag while the command runs and ends the command's whole process
/// group; what it printed before is still shown.
#[test]
fn an_interrupt_ends_a_shell_command() {
    let mut s = Session::new(SessionConfig::default());
    eval_ok(&mut s, "kept = 5");
    let handle = s.interrupt_handle();
    let timer = std::thread::spawn(move || {
        std::thread::sleep(std::time::Duration::from_millis(300));
        handle.interrupt();
    });
    let start = std::time::Instant::now();
    let out = s.eval("!echo started; sleep 30; echo never");
    timer.join().expect("timer");
    assert!(
        start.elapsed() < std::time::Duration::from_secs(10),
        "{:?}",
        start.elapsed()
    );
    assert_eq!(
        out.error.as_ref().expect("interrupted").ename,
        "KeyboardInterrupt"
    );
    assert_eq!(out.text(), "started\n");
    assert_eq!(eval_ok(&mut s, "print(kept)"), "5\n");
}

/// A program is checked whole, then parsed again and run one statement at a time, with tokens
/// lexed a line at a time: a 6 MB program stays far under 100 MB (it used to peak at 752 MB).
#[test]
fn memory_follows_the_statement_not_the_program() {
    let line = "x = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10] + [y for y in range(3)]\n";
    // The peak is read by the program itself, from /proc: the process's own high-water mark
    // (getrusage would also count the test process a spawned child starts out sharing).
    let program =
        line.repeat(6_000_000 / line.len()) + "print(len(x))\n!grep VmHWM /proc/$PPID/status\n";
    let path = std::env::temp_dir().join(format!("devarray-robust-{}-big.da", std::process::id()));
    std::fs::write(&path, &program).expect("write");
    let output = std::process::Command::new(cargo_bin!("devarray"))
        .arg(&path)
        .env("NO_COLOR", "1")
        .env_remove("DEVARRAY_SIM_GPUS")
        .output()
        .expect("run");
    let _ = std::fs::remove_file(&path);
    let stdout = String::from_utf8_lossy(&output.stdout);
    let mut lines = stdout.lines();
    assert_eq!(lines.next(), Some("13"));
    let peak_kb: u64 = lines
        .next()
        .and_then(|l| l.strip_prefix("VmHWM:"))
        .and_then(|l| l.trim().strip_suffix("kB"))
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or_else(|| panic!("no VmHWM line in {stdout:?}"));
    eprintln!("peak RSS of the 6 MB program: {} MB", peak_kb / 1024);
    assert!(peak_kb < 100 * 1024, "peak RSS {peak_kb} kB");
}

/// Issue 29, finding 3: under an address-space limit, `.tolist()` of 10^8 elements and
/// `np.array` of a huge nested list are MemoryErrors and the process goes on (both aborted).
#[test]
fn huge_tolist_and_nested_lists_under_a_memory_limit_are_memory_errors() {
    let program = "x = 3\nimport numpy as np\ntry:\n    np.zeros(10**8, dtype=bool).tolist()\nexcept MemoryError:\n    print('tolist MemoryError', x)\nbig = [0] * 10**6\ntry:\n    np.array([big] * 100)\nexcept MemoryError:\n    print('array MemoryError', x)\n";
    assert_eq!(
        run_under_memory_limit(1000000, program),
        "tolist MemoryError 3\narray MemoryError 3\n"
    );
}

/// A sink that requests an interrupt when the program prints, standing in for a Ctrl-C that
/// arrives during a statement that never checks the flag (one long sort, a str of a big list).
struct InterruptOnPrint(devarray::InterruptHandle, String);

impl devarray::OutputSink for InterruptOnPrint {
    fn stdout(&mut self, text: &str) {
        self.1.push_str(text);
        self.0.interrupt();
    }
    fn stderr(&mut self, text: &str) {
        self.1.push_str(text);
    }
    fn display(&mut self, _data: &devarray::DisplayData, _is_result: bool) {}
}

/// Issue 29, finding 6: an interrupt requested during the last statement of a cell ends the
/// cell in KeyboardInterrupt (it used to be dropped and the cell replied ok); one requested
/// while nothing ran is dropped, not fired in the next cell.
#[test]
fn an_interrupt_during_the_last_statement_is_not_lost_nor_carried_over() {
    let mut s = Session::new(SessionConfig::default());
    let mut sink = InterruptOnPrint(s.interrupt_handle(), String::new());
    let err = s
        .eval_with("kept = 1\nprint('long call')", &mut sink)
        .expect_err("the cell must end in KeyboardInterrupt");
    assert_eq!(err.ename, "KeyboardInterrupt");
    assert_eq!(sink.1, "long call\n");
    // Nothing pending afterwards: the next cell runs.
    assert_eq!(eval_ok(&mut s, "print(kept)"), "1\n");
    // A request while no cell runs is dropped.
    s.interrupt_handle().interrupt();
    assert_eq!(eval_ok(&mut s, "print(kept + 1)"), "2\n");
}

/// Issue 29, finding 6: `!cmd &` returns once the shell has started the command, as IPython's
/// does (it used to wait for the background command to close its output).
#[test]
fn a_background_shell_command_returns_at_once() {
    let mut s = Session::new(SessionConfig::default());
    let start = std::time::Instant::now();
    assert_eq!(eval_ok(&mut s, "!echo now; sleep 60 &"), "now\n");
    assert!(
        start.elapsed() < std::time::Duration::from_secs(30),
        "waited for the background command: {:?}",
        start.elapsed()
    );
}

/// Issue 29, finding 6: in script mode Ctrl-C (SIGINT) raises KeyboardInterrupt, so `finally`
/// runs and a traceback is printed, and the exit status is CPython's 130 (the signal used to
/// end the process with no cleanup).
#[test]
fn sigint_in_script_mode_runs_cleanup_and_prints_a_traceback() {
    use std::io::BufRead;
    let program = "try:\n    print('started', flush=True)\n    while True:\n        pass\nfinally:\n    print('cleanup ran')\n";
    let mut child = std::process::Command::new(cargo_bin!("devarray"))
        .arg("-c")
        .arg(program)
        .env("NO_COLOR", "1")
        .env_remove("DEVARRAY_SIM_GPUS")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("spawn");
    let mut out = std::io::BufReader::new(child.stdout.take().expect("stdout"));
    let mut first = String::new();
    out.read_line(&mut first).expect("read");
    assert_eq!(first, "started\n");
    // SAFETY: kill(2) on our own child's pid.
    unsafe {
        libc::kill(child.id() as libc::pid_t, libc::SIGINT);
    }
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut out, &mut rest).expect("read");
    let output = child.wait_with_output().expect("wait");
    assert_eq!(rest, "cleanup ran\n");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.ends_with("KeyboardInterrupt\n"), "{stderr}");
    assert_eq!(output.status.code(), Some(130));
}

/// Issue 29, finding 6: one long statement that runs no user code — a sort, the str of a big
/// list, json.dumps — stops at an interrupt: its result is never assigned (before, the request
/// waited for the statement to end and the cell replied ok).
#[test]
fn an_interrupt_reaches_long_single_statements() {
    let mut s = Session::new(SessionConfig::default());
    eval_ok(
        &mut s,
        "import json\nx = [(i * 7919) % 1000003 for i in range(2 * 10**6)]",
    );
    for code in [
        "y = sorted(x)",
        "y = str(x)",
        "y = json.dumps(x)",
        "x.sort()",
    ] {
        let handle = s.interrupt_handle();
        let timer = std::thread::spawn(move || {
            std::thread::sleep(std::time::Duration::from_millis(50));
            handle.interrupt();
        });
        let out = s.eval(code);
        timer.join().expect("timer");
        assert_eq!(
            out.error.as_ref().map(|e| e.ename.as_str()),
            Some("KeyboardInterrupt"),
            "{code}"
        );
        assert_eq!(eval_err(&mut s, "y").0, "NameError", "{code}");
    }
    assert_eq!(eval_ok(&mut s, "print(len(x))"), "2000000\n");
}

/// Issue 29, finding 6: np.sort, np.argsort and np.unique of millions of elements stop at an
/// interrupt (KeyboardInterrupt, nothing assigned); an uninterrupted sort still sorts.
#[test]
fn an_interrupt_reaches_numpy_sorts() {
    let mut s = Session::new(SessionConfig::default());
    eval_ok(
        &mut s,
        "import numpy as np\nx = (np.arange(3 * 10**6) * 7919) % 1000003\nf = x * 0.5",
    );
    for code in ["y = np.sort(f)", "y = np.argsort(x)", "y = np.unique(f)"] {
        let handle = s.interrupt_handle();
        let timer = std::thread::spawn(move || {
            std::thread::sleep(std::time::Duration::from_millis(50));
            handle.interrupt();
        });
        let started = std::time::Instant::now();
        let out = s.eval(code);
        timer.join().expect("timer");
        assert_eq!(
            out.error.as_ref().map(|e| e.ename.as_str()),
            Some("KeyboardInterrupt"),
            "{code} ran {:?}",
            started.elapsed()
        );
        assert_eq!(eval_err(&mut s, "y").0, "NameError", "{code}");
    }
    assert_eq!(
        eval_ok(&mut s, "print(np.sort(np.array([3, 1, 2])), len(x))"),
        "[1 2 3] 3000000\n"
    );
}
