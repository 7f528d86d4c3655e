//! Script mode reading its input as CPython 3.11 does (each expected output is python3's for
//! the same program and input): `input()`, `sys.stdin` and `getpass` on a pipe, mixed reads,
//! end of input, `-c`, and a program that itself came from stdin.

use std::io::Write;
use std::process::{Command, Stdio};

/// Runs devarray with `args`, `input` piped to its stdin: (exit status, stdout, stderr). Compared
/// exactly (snapbox would read `\n` inside a repr as a path separator).
fn run<S: AsRef<std::ffi::OsStr>>(args: &[S], input: &str) -> (i32, String, String) {
    run_in(&std::env::temp_dir(), args, input)
}

/// [`run`] in the folder `dir`.
fn run_in<S: AsRef<std::ffi::OsStr>>(
    dir: &std::path::Path,
    args: &[S],
    input: &str,
) -> (i32, String, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_devarray"))
        .current_dir(dir)
        .args(args)
        .env("NO_COLOR", "1")
        .env_remove("DEVARRAY_SIM_GPUS")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start devarray");
    let mut stdin = child.stdin.take().expect("stdin is piped");
    stdin.write_all(input.as_bytes()).expect("write stdin");
    drop(stdin);
    let out = child.wait_with_output().expect("wait for devarray");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn temp_file(name: &str, contents: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("devarray-stdin-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("create {}: {e}", dir.display()));
    let path = dir.join(name);
    std::fs::write(&path, contents).unwrap_or_else(|e| panic!("write {}: {e}", path.display()));
    path
}

#[test]
fn input_and_sys_stdin_share_one_buffer() {
    let path = temp_file(
        "mixed.py",
        "import sys
name = input('name? ')
print('hello', name)
first = sys.stdin.readline()
print(repr(first))
part = sys.stdin.read(2)
print(repr(part), repr(input()))
rest = sys.stdin.readlines()
print(rest)
try:
    input('more? ')
except EOFError as e:
    print('EOFError:', e)
print(repr(sys.stdin.read()), repr(sys.stdin.readline()), repr(sys.stdin.buffer.read()))
",
    );
    let expected = "name? hello Ada
'line two\\n'
'ab' 'cd'
['e\\n', 'f']
more? EOFError: EOF when reading a line
'' '' b''
";
    assert_eq!(
        run(&[&path], "Ada\nline two\nabcd\ne\nf"),
        (0, expected.to_string(), String::new())
    );
}

#[test]
fn iterating_sys_stdin_reads_line_by_line() {
    let path = temp_file(
        "sum.py",
        "import sys\ntotal = 0\nfor line in sys.stdin:\n    total += int(line)\nprint(total)\n",
    );
    assert_eq!(run(&[&path], "1\n2\n39\n").1, "42\n");
    // Line ends come as they are (CPython translates none on POSIX).
    let code = "import sys\nlines = list(sys.stdin)\nprint(lines)";
    assert_eq!(run(&["-c", code], "x\r\ny").1, "['x\\r\\n', 'y']\n");
}

#[test]
fn input_at_end_of_input_is_eof_error_after_the_prompt() {
    assert_eq!(
        run(&["-c", "x = input('n? ')\nprint('never')"], ""),
        (
            1,
            "n? ".to_string(),
            "Traceback (most recent call last):
  File \"<string>\", line 1, in <module>
EOFError: EOF when reading a line
"
            .to_string()
        )
    );
}

#[test]
fn dash_c_reads_the_process_stdin() {
    let code = "import sys\nn = int(input())\nprint(n * 2, sys.stdin.read() == '')";
    assert_eq!(run(&["-c", code], "5\n").1, "10 True\n");
    let code = "import sys\nb = sys.stdin.buffer.readline()\nprint(b, sys.stdin.isatty(), sys.stdin.fileno())";
    assert_eq!(run(&["-c", code], "data\n").1, "b'data\\n' False 0\n");
}

/// CPython parses a program read from stdin whole before running it, so its `input()` finds
/// the end of input.
#[test]
fn a_program_from_stdin_has_read_all_its_input() {
    for args in [&[][..], &["-"][..]] {
        assert_eq!(
            run(args, "print(1)\nx = input()\nprint(x)\n"),
            (
                1,
                "1\n".to_string(),
                "Traceback (most recent call last):
  File \"<stdin>\", line 2, in <module>
EOFError: EOF when reading a line
"
                .to_string()
            )
        );
    }
}

/// Not on a terminal, getpass warns on stderr and reads the line anyway (CPython also shows a
/// GetPassWarning naming its own getpass.py there).
#[test]
fn getpass_on_a_pipe_warns_and_reads_a_line() {
    let code = "import getpass\nprint(repr(getpass.getpass('Key: ')))";
    assert_eq!(
        run(&["-c", code], "pw\n"),
        (
            0,
            "'pw'\n".to_string(),
            "Warning: Password input may be echoed.\nKey: \n".to_string()
        )
    );
}

#[test]
fn a_non_str_prompt_is_converted_and_bad_arguments_are_type_errors() {
    assert_eq!(run(&["-c", "print(input(3))"], "ok\n").1, "3ok\n");
    assert_eq!(
        run(&["-c", "input(1, 2)"], "").2,
        "Traceback (most recent call last):
  File \"<string>\", line 1, in <module>
TypeError: input expected at most 1 argument, got 2
"
    );
}

/// `fileinput` reads the files named (or `sys.argv[1:]`), `-` and no file at all meaning stdin.
#[test]
fn fileinput_reads_files_and_stdin_in_turn() {
    let program = temp_file(
        "fi.py",
        "import fileinput, sys
for line in fileinput.input():
    print(fileinput.filename(), fileinput.lineno(), fileinput.filelineno(), fileinput.isfirstline(), fileinput.isstdin(), repr(line))
with fileinput.input(files=('fa.txt', '-', 'fb.txt')) as f:
    for line in f:
        print(f.filename(), f.lineno(), f.filelineno(), f.isfirstline(), repr(line))
print(list(fileinput.input('fa.txt', mode='rb')))
fileinput.close()
",
    );
    temp_file("fa.txt", "one\ntwo\n");
    temp_file("fb.txt", "three\n");
    let dir = program.parent().expect("a temp folder");
    let second = "fa.txt 1 1 True 'one\\n'
fa.txt 2 2 False 'two\\n'
fb.txt 3 1 True 'three\\n'
[b'one\\n', b'two\\n']
";
    let (status, out, err) = run_in(dir, &[&program], "a\nb\n");
    assert_eq!((status, err.as_str()), (0, ""));
    assert_eq!(
        out,
        format!("<stdin> 1 1 True True 'a\\n'\n<stdin> 2 2 False True 'b\\n'\n{second}")
    );
    let (_, out, _) = run_in(
        dir,
        &[program.as_os_str(), "fb.txt".as_ref(), "fa.txt".as_ref()],
        "a\nb\n",
    );
    assert_eq!(
        out,
        "fb.txt 1 1 True False 'three\\n'
fa.txt 2 1 True False 'one\\n'
fa.txt 3 2 False False 'two\\n'
fa.txt 1 1 True 'one\\n'
fa.txt 2 2 False 'two\\n'
<stdin> 3 1 True 'a\\n'
<stdin> 4 2 False 'b\\n'
fb.txt 5 1 True 'three\\n'
[b'one\\n', b'two\\n']
"
    );
}
