//! Script mode: run a whole program (a file, `-c CODE` or piped stdin).

use std::io::Read;
use std::path::Path;

use super::output::StdioSink;
use super::{requested_exit_status, Evaluator};

/// Exit status when the program ran to the end.
pub const EXIT_OK: i32 = 0;
/// Exit status for an uncaught error in the program.
pub const EXIT_ERROR: i32 = 1;
/// Exit status when the program could not be read at all.
pub const EXIT_USAGE: i32 = 2;

/// An uncaught KeyboardInterrupt (Ctrl-C): 128 + SIGINT, what a shell reports for CPython.
pub const EXIT_INTERRUPTED: i32 = 130;

/// Reads a program file as UTF-8 text. The error is a one-line message for stderr.
pub fn read_program_file(path: &Path) -> Result<String, String> {
    let bytes = std::fs::read(path)
        .map_err(|e| format!("devarray: can't open file '{}': {e}", path.display()))?;
    decode_program(bytes, &format!("file '{}'", path.display()))
}

/// Reads the program from standard input.
pub fn read_program_stdin() -> Result<String, String> {
    let mut bytes = Vec::new();
    std::io::stdin()
        .lock()
        .read_to_end(&mut bytes)
        .map_err(|e| format!("devarray: can't read standard input: {e}"))?;
    decode_program(bytes, "standard input")
}

/// Checks that a program is UTF-8, naming where it came from when it is not.
pub fn decode_program(bytes: Vec<u8>, what: &str) -> Result<String, String> {
    String::from_utf8(bytes).map_err(|e| {
        let offset = e.utf8_error().valid_up_to();
        let line = e.as_bytes()[..offset]
            .iter()
            .filter(|&&b| b == b'\n')
            .count()
            + 1;
        format!(
            "devarray: {what} is not UTF-8 text (invalid byte at offset {offset}, line {line}); \
             save it as UTF-8"
        )
    })
}

/// Runs `source` as a program, streaming its output, and returns the process
/// exit status: 0, or 1 after reporting the first uncaught error on stderr.
pub fn run_program(evaluator: &mut dyn Evaluator, source: &str) -> i32 {
    let mut sink = StdioSink::new();
    let status = match evaluator.eval_with(source, &mut sink) {
        Ok(()) => EXIT_OK,
        Err(error) => match requested_exit_status(&error) {
            Some(status) => status,
            None => {
                sink.report_error_python(&error);
                // CPython ends an uncaught KeyboardInterrupt by SIGINT: the shell sees 130.
                if error.ename == "KeyboardInterrupt" {
                    EXIT_INTERRUPTED
                } else {
                    EXIT_ERROR
                }
            }
        },
    };
    evaluator.shutdown(&mut sink);
    sink.finish_line();
    status
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn non_utf8_program_names_offset_and_line() {
        let message = decode_program(b"x = 1\ny = '\xff'\n".to_vec(), "file 'a.da'");
        assert_eq!(
            message,
            Err(
                "devarray: file 'a.da' is not UTF-8 text (invalid byte at offset 11, line 2); \
                 save it as UTF-8"
                    .to_string()
            )
        );
    }

    #[test]
    fn missing_file_is_one_line() {
        let message = read_program_file(Path::new("/nonexistent/dir/prog.da"));
        let Err(message) = message else {
            panic!("reading a missing file succeeded");
        };
        assert!(
            message.starts_with("devarray: can't open file '/nonexistent/dir/prog.da': "),
            "{message}"
        );
        assert!(!message.contains('\n'));
    }
}
