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
    after_help = "Environment:\n  \
      DEVARRAY_SIM_GPUS=N           simulate N GPUs (as --sim-gpus)\n  \
      DEVARRAY_SIM_GPU_MEMORY=SIZE  memory of each simulated GPU, e.g. 64MiB (default 4GiB)\n  \
      DEVARRAY_CPU_MEMORY=SIZE      memory cpu(0)'s arrays may hold, e.g. 16GiB (default: no limit)\n  \
      DEVARRAY_BLAS=PATH|none       the OpenBLAS for large matrix products (default: the system's, if any)"
)]
struct Cli {
    /// Program file to run (`-` reads standard input).
    #[arg(value_name = "FILE", conflicts_with = "code")]
    file: Option<PathBuf>,

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
    let config = SessionConfig {
        sim_gpus: cli.sim_gpus,
        display: DisplayPolicy::EveryExpression,
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

fn run(cli: Cli, config: SessionConfig) -> i32 {
    // `devarray -` reads a program from stdin even on a terminal, like `python -`.
    if cli.code.is_none() && cli.file.is_none() && !cli.transcript && std::io::stdin().is_terminal()
    {
        return interactive::run_repl(config);
    }
    let source = match (&cli.code, &cli.file) {
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
        match (&cli.code, &cli.file) {
            (Some(_), _) => session.set_program("<string>"),
            (None, Some(file)) if file.as_os_str() != "-" => {
                session.set_program(&file.display().to_string())
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
