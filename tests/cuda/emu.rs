//! The emulated CUDA stack (tests/cuda_emu) for tests: builds its shared library once, links it
//! under the names cudarc looks for, and prepares child processes to load it (the dynamic loader
//! reads LD_LIBRARY_PATH only at process start, so the CUDA tests run in a child).
//!
//! Included with `#[path = "cuda/emu.rs"] mod emu;` by the test files that use it.
#![allow(dead_code)]
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

/// Set in the child processes: they are the emulated run, not its driver.
pub const CHILD: &str = "DEVARRAY_CUDA_EMU_CHILD";

/// The names cudarc's loader tries first for the driver and each library.
const NAMES: [&str; 8] = [
    "libcuda.so",
    "libcuda.so.1",
    "libcublas.so",
    "libcublas.so.12",
    "libcurand.so",
    "libcurand.so.10",
    "libnccl.so",
    "libnccl.so.2",
];

pub struct Emulator {
    /// Directory with the links (and the NVRTC library's directory) for LD_LIBRARY_PATH.
    pub library_path: String,
}

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// NVRTC: $DEVARRAY_NVRTC_LIB, else the wheel in the repository's .venv (tests/cuda/setup_nvrtc.sh).
fn nvrtc_dir() -> Option<PathBuf> {
    if let Some(path) = std::env::var_os("DEVARRAY_NVRTC_LIB") {
        return PathBuf::from(path).parent().map(Path::to_path_buf);
    }
    for python in std::fs::read_dir(root().join(".venv/lib")).ok()?.flatten() {
        let dir = python.path().join("site-packages/nvidia/cuda_nvrtc/lib");
        if dir.join("libnvrtc.so.12").exists() {
            return Some(dir);
        }
    }
    None
}

fn build() -> Result<Emulator, String> {
    let nvrtc = nvrtc_dir().ok_or(
        "NVRTC not found: run `export DEVARRAY_NVRTC_LIB=\"$(tests/cuda/setup_nvrtc.sh)\"` first",
    )?;
    let target = root().join("target/cuda-emu");
    // Its own target directory: the outer cargo may hold the lock on target/.
    let status = Command::new(env!("CARGO"))
        .args(["build", "--quiet", "-p", "cuda_emu", "--target-dir"])
        .arg(&target)
        .current_dir(root())
        .status()
        .map_err(|e| format!("cannot run cargo: {e}"))?;
    if !status.success() {
        return Err("building tests/cuda_emu failed".into());
    }
    let lib = target.join("debug/libcuda_emu.so");
    let links = target.join("lib");
    std::fs::create_dir_all(&links).map_err(|e| e.to_string())?;
    for name in NAMES {
        let link = links.join(name);
        let _ = std::fs::remove_file(&link);
        std::os::unix::fs::symlink(&lib, &link).map_err(|e| format!("{}: {e}", link.display()))?;
    }
    Ok(Emulator {
        library_path: format!("{}:{}", links.display(), nvrtc.display()),
    })
}

/// The emulator, built once per process; None (after saying why) when NVRTC is missing outside
/// CI. Under CI=true a missing NVRTC fails.
pub fn emulator() -> Option<&'static Emulator> {
    static BUILT: OnceLock<Result<Emulator, String>> = OnceLock::new();
    match BUILT.get_or_init(build) {
        Ok(e) => Some(e),
        Err(message) => {
            let in_ci = std::env::var("CI").is_ok_and(|v| v == "true" || v == "1");
            assert!(!in_ci, "{message}");
            eprintln!("skipping the emulated CUDA run: {message}");
            None
        }
    }
}

impl Emulator {
    /// Makes `command` a child that sees `cards` emulated GPUs of 1 GiB (and no simulated ones).
    pub fn configure(&self, command: &mut Command, cards: usize) {
        command
            .env("LD_LIBRARY_PATH", &self.library_path)
            .env("CUDA_EMU_DEVICES", cards.to_string())
            .env_remove("DEVARRAY_SIM_GPUS")
            .env(CHILD, "1");
    }
}

/// Runs this test binary again with the emulator, only the tests matching `filter`, and
/// asserts that they ran and passed. `extra` adds environment settings (e.g. chaos mode).
pub fn rerun_under_emulator(filter: &str, extra: &[(&str, &str)]) {
    if std::env::var_os(CHILD).is_some() {
        return;
    }
    let Some(emulator) = emulator() else { return };
    let mut command = Command::new(std::env::current_exe().expect("test binary"));
    command.args([filter, "--test-threads", "2"]);
    emulator.configure(&mut command, 2);
    command.env("DEVARRAY_REQUIRE_CUDA", "1");
    for (k, v) in extra {
        command.env(k, v);
    }
    let output = command.output().expect("run the emulated tests");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    let ran = stdout
        .lines()
        .find_map(|l| l.strip_prefix("test result: ok. "))
        .and_then(|rest| rest.split(' ').next()?.parse::<usize>().ok())
        .unwrap_or(0);
    assert!(
        output.status.success() && ran > 0,
        "the emulated run of `{filter}` {extra:?} failed (or ran nothing):\n{stdout}\n{stderr}"
    );
    eprintln!("emulated run of `{filter}` {extra:?}: {ran} tests passed");
}
