//! devarray-kernel: the Jupyter kernel for devarray. It runs the same
//! `Session` as the `devarray` REPL, so a notebook cell and a REPL line
//! behave alike.

mod evaluator;
mod heartbeat;
mod history;
mod install;
mod iopub;
mod kernel_info;
mod parent_watch;
mod pub_socket;
mod server;
mod stdin_channel;
mod stream_buffer;
mod wire;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Parser, Subcommand};

#[derive(Parser)]
#[command(
    name = "devarray-kernel",
    version,
    about = "The Jupyter kernel for devarray, a device-aware array language",
    after_help = "First install the kernelspecs, then pick \"devarray\" (or \"devarray (2 simulated \
                  GPUs)\") in Jupyter:\n  devarray-kernel install --user\n  jupyter lab"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Serve one Jupyter connection (Jupyter runs this from kernel.json).
    Run {
        /// The connection file Jupyter wrote: ports, address and signing key.
        #[arg(short = 'f', long, value_name = "FILE")]
        connection_file: PathBuf,
    },
    /// Install the kernelspecs `devarray` and `devarray-sim2` (2 simulated GPUs).
    Install(Where),
    /// Remove the kernelspecs that `install` wrote.
    Uninstall(Where),
}

#[derive(Args)]
#[group(multiple = false)]
struct Where {
    /// For the current user, in Jupyter's user data directory (the default).
    #[arg(long)]
    user: bool,
    /// Into the active Python environment (virtualenv or conda) that runs Jupyter.
    #[arg(long)]
    sys_prefix: bool,
    /// Into DIR/share/jupyter/kernels, e.g. a virtualenv's directory.
    #[arg(long, value_name = "DIR")]
    prefix: Option<PathBuf>,
}

impl Where {
    fn location(&self) -> install::Location {
        match (&self.prefix, self.sys_prefix) {
            (Some(dir), _) => install::Location::Prefix(dir.clone()),
            (None, true) => install::Location::SysPrefix,
            // --user, or nothing: installing for oneself needs no privileges.
            (None, false) => install::Location::User,
        }
    }

    fn kernels_dir(&self) -> Result<PathBuf, String> {
        install::kernels_dir(&self.location(), &|name| std::env::var(name).ok())
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Run { connection_file } => run(&connection_file),
        Command::Install(place) => run_install(&place),
        Command::Uninstall(place) => run_uninstall(&place),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("devarray-kernel: error: {message}");
            ExitCode::FAILURE
        }
    }
}

fn run(connection_file: &std::path::Path) -> Result<(), String> {
    let text = std::fs::read_to_string(connection_file).map_err(|e| {
        format!(
            "cannot read the connection file {}: {e}. Jupyter starts the kernel with one; to \
             start it by hand, use `jupyter console --kernel devarray`",
            connection_file.display()
        )
    })?;
    let info: jupyter_protocol::ConnectionInfo = serde_json::from_str(&text).map_err(|e| {
        format!(
            "{} is not a Jupyter connection file: {e}",
            connection_file.display()
        )
    })?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start the async runtime: {e}"))?;
    runtime.block_on(server::serve(info))?;
    // The evaluation thread may still be inside a cell that ignores the
    // interrupt; leaving main ends the process regardless.
    Ok(())
}

fn run_install(place: &Where) -> Result<(), String> {
    let kernels = place.kernels_dir()?;
    let exe = std::env::current_exe()
        .and_then(|p| p.canonicalize())
        .map_err(|e| format!("cannot find the path of this program: {e}"))?;
    let why = match place.location() {
        install::Location::User => "--user: your own Jupyter data directory".to_string(),
        install::Location::SysPrefix => {
            "--sys-prefix: the activated Python environment".to_string()
        }
        install::Location::Prefix(dir) => format!("--prefix {}", dir.display()),
    };
    for dir in install::install(&kernels, &exe)? {
        println!("Installed kernelspec {}", dir.display());
    }
    println!(
        "Jupyter finds them in {} ({why}); `jupyter kernelspec list` shows them.",
        kernels.display()
    );
    Ok(())
}

fn run_uninstall(place: &Where) -> Result<(), String> {
    let kernels = place.kernels_dir()?;
    let removed = install::uninstall(&kernels)?;
    if removed.is_empty() {
        println!("No devarray kernelspecs in {}", kernels.display());
    }
    for dir in removed {
        println!("Removed kernelspec {}", dir.display());
    }
    Ok(())
}
