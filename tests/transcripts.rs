//! Golden transcripts: every `tests/transcripts/**/*.txt` is run through
//! `devarray --transcript` and its output must equal the file itself.
//!
//! One test per file (a libtest-mimic harness via tryfn, so `harness = false`
//! in Cargo.toml). Filter by path as usual: `cargo test --test transcripts basics`.
//! After reviewing a change, `SNAPSHOTS=overwrite cargo test --test transcripts`
//! rewrites the files with what devarray now prints.
//!
//! Comment lines before the first prompt are kept in the output; among them
//! `# env: NAME=VALUE [NAME=VALUE...]` sets environment variables for that file
//! (e.g. `# env: DEVARRAY_SIM_GPUS=2`).

use std::path::{Path, PathBuf};

use snapbox::cmd::{cargo_bin, Command};
use tryfn::{Case, Data, Harness};

/// Variables that change what a session does; cleared so that the caller's
/// environment cannot change a transcript's output.
const SESSION_VARIABLES: &[&str] = &[
    "DEVARRAY_SIM_GPUS",
    "DEVARRAY_SIM_GPU_MEMORY",
    "DEVARRAY_CPU_MEMORY",
    "DEVARRAY_HISTORY",
    "DEVARRAY_DETERMINISTIC",
];

fn main() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/transcripts");
    Harness::new(root.clone(), move |path: PathBuf| setup(&root, path), run)
        .select(["*.txt"])
        .test()
}

fn setup(root: &Path, path: PathBuf) -> Case {
    let name = path
        .strip_prefix(root)
        .unwrap_or(&path)
        .display()
        .to_string();
    // Raw: snapbox's `...` line wildcard would otherwise swallow the `...`
    // that ends a block.
    let expected = Data::read_from(&path, None).raw();
    Case {
        name,
        fixture: path,
        expected,
    }
}

fn run(path: &Path) -> Result<String, String> {
    let input = std::fs::read_to_string(path)
        .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    let mut command = Command::new(cargo_bin!("devarray"))
        .arg("--transcript")
        .env("NO_COLOR", "1")
        .timeout(std::time::Duration::from_secs(120));
    for name in SESSION_VARIABLES {
        command = command.env_remove(name);
    }
    for (name, value) in env_header(&input)? {
        command = command.env(name, value);
    }
    let output = command
        .stdin(input)
        .output()
        .map_err(|e| format!("cannot run devarray: {e}"))?;
    let stderr = String::from_utf8_lossy(&output.stderr);
    if !output.status.success() || !stderr.is_empty() {
        return Err(format!(
            "devarray --transcript exited with {} and wrote to stderr:\n{stderr}",
            output.status
        ));
    }
    String::from_utf8(output.stdout).map_err(|e| format!("output is not UTF-8: {e}"))
}

/// The `# env:` assignments among the comment lines before the first prompt.
fn env_header(input: &str) -> Result<Vec<(String, String)>, String> {
    let mut vars = Vec::new();
    for line in input.lines().take_while(|l| l.starts_with('#')) {
        let Some(assignments) = line.strip_prefix("# env:") else {
            continue;
        };
        for assignment in assignments.split_whitespace() {
            let (name, value) = assignment
                .split_once('=')
                .ok_or_else(|| format!("`{assignment}` in `{line}` is not NAME=VALUE"))?;
            vars.push((name.to_string(), value.to_string()));
        }
    }
    Ok(vars)
}
