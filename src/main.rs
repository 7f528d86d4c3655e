//! The `devarray` command: the REPL, script mode and transcript mode.

use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{CommandFactory, FromArgMatches, Parser};
use devarray::repl::script::{read_program_file, read_program_stdin, run_program, EXIT_USAGE};
use devarray::repl::{interactive, transcript};
use devarray::{DisplayPolicy, Session, SessionConfig};

/// A device-aware array language (MXNet NDArray / PyTorch semantics).
///
/// With no arguments: the interactive REPL when standard input is a terminal,
/// otherwise the program read from standard input.
#[derive(Debug, Parser)]
#[command(
    name = "devarray",
    version,
    override_usage = "devarray [OPTIONS] [-c CODE | FILE | -] [ARGS]...",
    after_help = "Environment:\n  \
      DEVARRAY_SIM_GPUS=N           simulate N GPUs (as --sim-gpus)\n  \
      DEVARRAY_SIM_GPU_MEMORY=SIZE  memory of each simulated GPU, e.g. 64MiB (default 4GiB)\n  \
      DEVARRAY_CPU_MEMORY=SIZE      memory cpu(0)'s arrays may hold, e.g. 16GiB (default: no limit)\n  \
      DEVARRAY_BLAS=PATH|none       the OpenBLAS for large matrix products (default: the system's, if any)"
)]
struct Cli {
    /// Program file to run (`-` reads standard input), then the program's arguments (its
    /// `sys.argv[1:]`; options after FILE are the program's, as with python).
    #[arg(
        value_name = "FILE",
        trailing_var_arg = true,
        allow_hyphen_values = true
    )]
    program: Vec<std::ffi::OsString>,

    /// Run CODE as the program.
    #[arg(short = 'c', value_name = "CODE")]
    code: Option<String>,

    /// Simulate N GPUs, gpu(0)..gpu(N-1) (overrides DEVARRAY_SIM_GPUS).
    #[arg(long, value_name = "N", value_parser = sim_gpu_count)]
    sim_gpus: Option<usize>,

    /// Replay a transcript (lines starting with `>>> ` or `... `) from FILE or
    /// standard input and print it with the outputs it really produces.
    #[arg(long, conflicts_with = "code")]
    transcript: bool,
}

fn main() -> ExitCode {
    let cli = parse_cli();
    // As CPython: `-c CODE a b` gives ['-c', 'a', 'b'], `FILE a b` ['FILE', 'a', 'b'], no file
    // at all (the REPL, a program piped in) [''].
    let words = cli.program.iter().map(|w| w.to_string_lossy().into_owned());
    let argv = match (&cli.code, cli.program.first()) {
        (Some(_), _) => std::iter::once("-c".to_string()).chain(words).collect(),
        (None, None) => vec![String::new()],
        (None, Some(_)) => words.collect(),
    };
    let config = SessionConfig {
        sim_gpus: cli.sim_gpus,
        display: DisplayPolicy::EveryExpression,
        main_file: match (&cli.code, cli.program.first()) {
            (None, Some(f)) if f != "-" => Some(absolute_program_path(f)),
            // The interactive REPL has none, as CPython's.
            (None, None) if std::io::stdin().is_terminal() || cli.transcript => None,
            (None, _) => Some("<stdin>".to_string()),
            (Some(_), _) => None,
        },
        argv: Some(argv),
        ..SessionConfig::default()
    };
    let status = run(cli, config);
    ExitCode::from(u8::try_from(status & 0xff).unwrap_or(1))
}

/// Parses the arguments. `--version` also says which GEMM serves large products; finding out
/// loads OpenBLAS, so it is done only when asked.
fn parse_cli() -> Cli {
    let mut command = Cli::command();
    // `args_os`: an argument that is not UTF-8 is clap's error to report, not a panic here.
    if std::env::args_os().any(|a| a == "--version" || a == "-V") {
        let text = Session::version_text();
        command = command.version(&*Box::leak(text.into_boxed_str()));
    }
    Cli::from_arg_matches(&command.get_matches()).unwrap_or_else(|e| e.exit())
}

/// `--sim-gpus N`: the same bound as `DEVARRAY_SIM_GPUS`.
fn sim_gpu_count(text: &str) -> Result<usize, String> {
    let max = devarray::eval::session::MAX_SIM_GPUS;
    match text.trim().parse::<usize>() {
        Ok(n) if n <= max => Ok(n),
        _ => Err(format!("expected a number of GPUs from 0 to {max}")),
    }
}

/// The script's path as CPython 3.11 names it in `__file__`, tracebacks and warnings: joined
/// to the working directory when relative, not normalised (`./a/../b.py` stays).
fn absolute_program_path(file: &std::ffi::OsStr) -> String {
    let path = std::path::Path::new(file);
    let full = match std::env::current_dir() {
        Ok(cwd) if path.is_relative() => cwd.join(path),
        _ => path.to_path_buf(),
    };
    full.to_string_lossy().into_owned()
}

fn run(cli: Cli, config: SessionConfig) -> i32 {
    // `devarray -` reads a program from stdin even on a terminal, like `python -`.
    // With -c, the positional words are all the program's arguments.
    let file = match &cli.code {
        Some(_) => None,
        None => cli.program.first().map(PathBuf::from),
    };
    if cli.code.is_none() && file.is_none() && !cli.transcript && std::io::stdin().is_terminal() {
        return interactive::run_repl(config);
    }
    let source = match (&cli.code, &file) {
        (Some(code), _) => Ok(code.clone()),
        (None, Some(file)) if file.as_os_str() != "-" => read_program_file(file),
        (None, _) => read_program_stdin(),
    };
    let source = match source {
        Ok(source) => source,
        Err(message) => {
            eprintln!("{message}");
            return EXIT_USAGE;
        }
    };
    let mut session = Session::new(config);
    if !cli.transcript {
        match (&cli.code, &file) {
            (Some(_), _) => session.set_program("<string>"),
            (None, Some(file)) if file.as_os_str() != "-" => {
                session.set_program(&absolute_program_path(file.as_os_str()))
            }
            _ => {}
        }
        // Script mode: Ctrl-C raises KeyboardInterrupt at the program's next check, so its
        // `finally` blocks and `with` exits run and a traceback is printed, as in CPython
        // (before, the signal ended the process at once).
        let interrupt = session.interrupt_handle();
        if let Err(e) = ctrlc::set_handler(move || interrupt.interrupt()) {
            eprintln!("devarray: warning: Ctrl-C will end the program without cleanup: {e}");
        }
    }
    if cli.transcript {
        transcript::run_transcript(&source, &mut session, std::io::stdout());
        0
    } else {
        run_program(&mut session, &source)
    }
}
