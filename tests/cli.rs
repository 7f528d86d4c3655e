//! The `devarray` command line: script mode's exit codes and streams,
//! `--help` and `--version`.

use snapbox::cmd::{cargo_bin, Command};

fn devarray() -> Command {
    Command::new(cargo_bin!("devarray"))
        .env("NO_COLOR", "1")
        .env_remove("DEVARRAY_SIM_GPUS")
}

fn temp_file(name: &str, contents: &[u8]) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("devarray-cli-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("create {}: {e}", dir.display()));
    let path = dir.join(name);
    std::fs::write(&path, contents).unwrap_or_else(|e| panic!("write {}: {e}", path.display()));
    path
}

#[test]
fn version_prints_name_version_and_the_gemm_in_use() {
    devarray()
        .arg("--version")
        .env("DEVARRAY_BLAS", "none")
        .assert()
        .success()
        .stdout_eq(
            "devarray 0.1.0\nGEMM for large products: gemm crate only (DEVARRAY_BLAS=none)\n",
        );
    devarray()
        .arg("-V")
        .env("DEVARRAY_BLAS", "/no/such/libopenblas.so")
        .assert()
        .success()
        .stdout_eq("devarray 0.1.0\nGEMM for large products: gemm crate only (/no/such/libopenblas.so: cannot open shared object file: No such file or directory)\n")
        .stderr_eq("devarray: DEVARRAY_BLAS=\"/no/such/libopenblas.so\" cannot be used (/no/such/libopenblas.so: cannot open shared object file: No such file or directory); large products use the gemm crate\n");
}

/// CI installs the system OpenBLAS (.ci/run), so there it must be found and used.
#[test]
fn version_finds_the_system_openblas_in_ci() {
    let output = devarray()
        .env_remove("DEVARRAY_BLAS")
        .arg("--version")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&output.stdout);
    // Found but refused counts: it chose pre-AVX2 kernels on a CPU it does not know (blas.rs).
    let found = text.contains("GEMM for large products: system OpenBLAS (OpenBLAS ")
        || text.contains("OpenBLAS chose kernels without AVX2");
    if std::env::var_os("CI").is_some() {
        assert!(found, "CI installs libopenblas0-pthread, but: {text}");
    } else if !found {
        eprintln!("no system OpenBLAS here (not CI): {text}");
    }
}

#[test]
fn help_lists_every_option() {
    devarray()
        .arg("--help")
        .assert()
        .success()
        .stdout_eq(
            "\
A device-aware array language (MXNet NDArray / PyTorch semantics).

With no arguments: the interactive REPL when standard input is a terminal, otherwise the program read from standard input.

Usage: devarray [OPTIONS] [-c CODE | FILE | -] [ARGS]...

Arguments:
  [FILE]...
          Program file to run (`-` reads standard input), then the program's arguments (its `sys.argv[1:]`; options after FILE are the program's, as with python)

Options:
  -c <CODE>
          Run CODE as the program

      --sim-gpus <N>
          Simulate N GPUs, gpu(0)..gpu(N-1) (overrides DEVARRAY_SIM_GPUS)

      --transcript
          Replay a transcript (lines starting with `>>> ` or `... `) from FILE or standard input and print it with the outputs it really produces

  -h, --help
          Print help (see a summary with '-h')

  -V, --version
          Print version

Environment:
  DEVARRAY_SIM_GPUS=N           simulate N GPUs (as --sim-gpus)
  DEVARRAY_SIM_GPU_MEMORY=SIZE  memory of each simulated GPU, e.g. 64MiB (default 4GiB)
  DEVARRAY_CPU_MEMORY=SIZE      memory cpu(0)'s arrays may hold, e.g. 16GiB (default: no limit)
  DEVARRAY_BLAS=PATH|none       the OpenBLAS for large matrix products (default: the system's, if any)
",
        );
}

#[test]
fn missing_file_is_a_one_line_error_with_status_2() {
    devarray()
        .arg("no/such/program.da")
        .assert()
        .code(2)
        .stdout_eq("")
        .stderr_eq("devarray: can't open file 'no/such/program.da': No such file or directory (os error 2)\n");
}

#[test]
fn non_utf8_file_is_a_one_line_error_with_status_2() {
    let path = temp_file("latin1.da", b"print('caf\xe9')\n");
    devarray().arg(&path).assert().code(2).stdout_eq("").stderr_eq(format!(
        "devarray: file '{}' is not UTF-8 text (invalid byte at offset 10, line 1); save it as UTF-8\n",
        path.display()
    ));
}

#[test]
fn bad_arguments_exit_2() {
    devarray()
        .args(["--no-such-option", "file.da"])
        .assert()
        .code(2);
    devarray().args(["--sim-gpus", "two"]).assert().code(2);
}

#[test]
fn uncaught_error_goes_to_stderr_plain_with_status_1() {
    // Holds for any evaluator: the report's last line is `SomeError: message`,
    // without colour because stderr is not a terminal.
    let output = devarray()
        .args(["-c", "x = )"])
        .assert()
        .code(1)
        .stdout_eq("")
        .get_output()
        .clone();
    let stderr = String::from_utf8_lossy(&output.stderr);
    let last = stderr.lines().last().unwrap_or("");
    let ename = last.split(": ").next().unwrap_or("");
    assert!(
        ename.ends_with("Error") && ename.chars().all(|c| c.is_ascii_alphanumeric()),
        "{stderr}"
    );
    assert!(!stderr.contains('\x1b'), "{stderr}");
}

#[test]
fn transcript_mode_keeps_preamble_and_drops_old_output() {
    devarray()
        .arg("--transcript")
        .stdin("# env: X=1\n# note\n>>>\nstale output\n...\n")
        .assert()
        .success()
        .stdout_eq("# env: X=1\n# note\n>>>\n>>>\n")
        .stderr_eq("");
}

#[test]
fn transcript_mode_continues_after_errors_and_keeps_stderr_empty() {
    let output = devarray()
        .arg("--transcript")
        .stdin(">>> x = )\n>>> y = )\n")
        .assert()
        .success()
        .stderr_eq("")
        .get_output()
        .clone();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let prompts: Vec<&str> = stdout.lines().filter(|l| l.starts_with(">>>")).collect();
    assert_eq!(prompts, [">>> x = )", ">>> y = )"], "{stdout}");
    assert_eq!(
        stdout.lines().filter(|l| l.contains("Error: ")).count(),
        2,
        "{stdout}"
    );
}

// The tests below need the evaluator: they fail while Session is a stub.

#[test]
/// A script's uncaught error is reported as CPython reports it (no caret when the failing
/// expression is the whole line).
fn script_output_then_error_report_and_status_1() {
    let path = temp_file("name_error.da", b"print(1)\nundefined_name\nprint(2)\n");
    devarray()
        .arg(&path)
        .assert()
        .code(1)
        .stdout_eq("1\n")
        .stderr_eq(format!(
            "Traceback (most recent call last):
  File \"{}\", line 2, in <module>
    undefined_name
NameError: name 'undefined_name' is not defined
",
            path.display()
        ));
}

#[test]
fn script_displays_every_top_level_expression() {
    devarray()
        .args(["-c", "1 + 1\nx = 3\nx\nNone\n"])
        .assert()
        .success()
        .stdout_eq("2\n3\n")
        .stderr_eq("");
}

#[test]
fn program_from_piped_stdin() {
    devarray()
        .stdin("print('from stdin')\n")
        .assert()
        .success()
        .stdout_eq("from stdin\n");
}

#[test]
fn sim_gpus_flag_sets_the_gpu_count() {
    devarray()
        .args([
            "--sim-gpus",
            "2",
            "-c",
            "import mxnet as mx\nmx.context.num_gpus()",
        ])
        .assert()
        .success()
        .stdout_eq("2\n");
}

/// `exit(code)`, `quit()` and `sys.exit(code)` end a script with that status, as in CPython;
/// shown, `exit` says how to leave.
#[test]
fn exit_quit_and_sys_exit_set_the_status() {
    devarray()
        .args(["-c", "print('before'); exit(5); print('after')"])
        .assert()
        .code(5)
        .stdout_eq("before\n");
    devarray().args(["-c", "quit()"]).assert().code(0);
    devarray()
        .args(["-c", "import sys; sys.exit(3)"])
        .assert()
        .code(3);
    devarray()
        .args(["-c", "print(callable(exit), repr(quit))"])
        .assert()
        .code(0)
        .stdout_eq("True Use quit() or Ctrl-D (i.e. EOF) to exit\n");
}

#[test]
fn program_arguments_reach_sys_argv_and_file_names_the_program() {
    let path = temp_file(
        "argv.py",
        b"import sys\nprint(sys.argv[1:], __file__ == sys.argv[0])\n",
    );
    devarray()
        .arg("--sim-gpus")
        .arg("1")
        .arg(&path)
        .args(["1", "--sim-gpus", "-x"])
        .assert()
        .success()
        .stdout_eq("['1', '--sim-gpus', '-x'] True\n");
    devarray()
        .args(["-c", "import sys; print(sys.argv)", "a", "-b"])
        .assert()
        .success()
        .stdout_eq("['-c', 'a', '-b']\n");
    devarray()
        .args(["-", "a"])
        .stdin("import sys; print(sys.argv, __file__)")
        .assert()
        .success()
        .stdout_eq("['-', 'a'] <stdin>\n");
    devarray()
        .stdin("import sys; print(sys.argv)")
        .assert()
        .success()
        .stdout_eq("['']\n");
}

/// A warning in script mode names the script and line and shows the source line, as CPython
/// prints it; `-c` code is `<string>` and piped code `<stdin>`, without a source line.
#[test]
fn warnings_name_the_script_line_and_show_its_source() {
    let script = temp_file(
        "warn.py",
        b"import warnings\nx = 1\nwarnings.warn('careful')\ndef f():\n    warnings.warn('inner', RuntimeWarning)\nf()\nf()\n",
    );
    let path = script.display().to_string();
    devarray().arg(&script).assert().success().stderr_eq(format!(
        "{path}:3: UserWarning: careful\n  warnings.warn('careful')\n{path}:5: RuntimeWarning: inner\n  warnings.warn('inner', RuntimeWarning)\n"
    ));
    devarray()
        .args(["-c", "import warnings; warnings.warn('x', FutureWarning)"])
        .assert()
        .success()
        .stderr_eq("<string>:1: FutureWarning: x\n");
    devarray()
        .stdin("import warnings\n\nwarnings.warn('piped')\n")
        .assert()
        .success()
        .stderr_eq("<stdin>:3: UserWarning: piped\n");
}

/// A script's frames in the `traceback` module's text name the script by its absolute path and
/// show the source line with CPython 3.11's carets (`~` under a binary operation's operands, `^`
/// under its operator or a subscript); recursion is folded. Expected text: python3 3.11.
#[test]
fn traceback_module_shows_the_scripts_lines_as_cpython() {
    let script = temp_file(
        "tb.py",
        br#"import traceback, sys
def f(x):
    return 1 / x
def g(items):
    return items[5]
def rec(n):
    return rec(n + 1) if n < 10 else 1 / 0
for call in (lambda: f(0), lambda: g([1, 2]), lambda: rec(0)):
    try:
        call()
    except Exception:
        traceback.print_exc(file=sys.stdout)
try:
    x = [1, 2]
    y = x[0] +  x[1] * None
except TypeError:
    traceback.print_exc(limit=1)
print(__file__.endswith('/tb.py'))
"#,
    );
    let dir = script.parent().map(|d| d.to_path_buf()).unwrap_or_default();
    let path = script.display().to_string();
    let frame = |line: usize, name: &str, text: &str, carets: &str| {
        let mut s = format!("  File \"{path}\", line {line}, in {name}\n    {text}\n");
        if !carets.is_empty() {
            s.push_str(&format!("    {carets}\n"));
        }
        s
    };
    let head = "Traceback (most recent call last):\n";
    let rec = frame(
        7,
        "rec",
        "return rec(n + 1) if n < 10 else 1 / 0",
        "       ^^^^^^^^^^",
    );
    let stdout = [
        head.to_string(),
        frame(10, "<module>", "call()", ""),
        frame(
            8,
            "<lambda>",
            "for call in (lambda: f(0), lambda: g([1, 2]), lambda: rec(0)):",
            "                     ^^^^",
        ),
        frame(3, "f", "return 1 / x", "       ~~^~~"),
        "ZeroDivisionError: division by zero\n".into(),
        head.into(),
        frame(10, "<module>", "call()", ""),
        frame(
            8,
            "<lambda>",
            "for call in (lambda: f(0), lambda: g([1, 2]), lambda: rec(0)):",
            "                                   ^^^^^^^^^",
        ),
        frame(5, "g", "return items[5]", "       ~~~~~^^^"),
        "IndexError: list index out of range\n".into(),
        head.into(),
        frame(10, "<module>", "call()", ""),
        frame(
            8,
            "<lambda>",
            "for call in (lambda: f(0), lambda: g([1, 2]), lambda: rec(0)):",
            "                                                      ^^^^^^",
        ),
        rec.clone(),
        rec.clone(),
        rec,
        "  [Previous line repeated 8 more times]\n".into(),
        "ZeroDivisionError: division by zero\n".into(),
        "True\n".into(),
    ]
    .concat();
    let stderr = [
        head.to_string(),
        frame(
            15,
            "<module>",
            "y = x[0] +  x[1] * None",
            "            ~~~~~^~~~~~",
        ),
        "TypeError: unsupported operand type(s) for *: 'int' and 'NoneType'\n".into(),
    ]
    .concat();
    // Run from the script's folder by its relative name: `__file__` is still absolute.
    devarray()
        .current_dir(&dir)
        .arg("tb.py")
        .assert()
        .success()
        .stdout_eq(stdout)
        .stderr_eq(stderr);
}
