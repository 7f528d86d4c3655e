//! `devarray-kernel install`: write the kernelspecs Jupyter discovers.
//!
//! Two specs share the binary: `devarray`, and `devarray-sim2`, which starts
//! the kernel with two simulated GPUs so the chapter's multi-GPU cells run on
//! a laptop.

use std::path::{Path, PathBuf};

use serde_json::{json, Value};

/// Where to install, as `jupyter kernelspec install` spells it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Location {
    /// The user's Jupyter data directory.
    User,
    /// The active Python environment (virtualenv or conda).
    SysPrefix,
    /// `DIR/share/jupyter/kernels`.
    Prefix(PathBuf),
}

pub struct KernelSpec {
    pub name: &'static str,
    pub display_name: &'static str,
    pub env: &'static [(&'static str, &'static str)],
}

pub const SPECS: [KernelSpec; 2] = [
    KernelSpec {
        name: "devarray",
        display_name: "devarray",
        env: &[],
    },
    KernelSpec {
        name: "devarray-sim2",
        display_name: "devarray (2 simulated GPUs)",
        env: &[("DEVARRAY_SIM_GPUS", "2")],
    },
];

const LOGOS: [(&str, &[u8]); 3] = [
    ("logo-32x32.png", include_bytes!("../assets/logo-32x32.png")),
    ("logo-64x64.png", include_bytes!("../assets/logo-64x64.png")),
    ("logo-svg.svg", include_bytes!("../assets/logo-svg.svg")),
];

/// kernel.json for `spec`, launching `exe`.
pub fn kernel_json(spec: &KernelSpec, exe: &str) -> Value {
    let env: serde_json::Map<String, Value> = spec
        .env
        .iter()
        .map(|(k, v)| ((*k).to_string(), Value::from(*v)))
        .collect();
    json!({
        "argv": [exe, "run", "--connection-file", "{connection_file}"],
        "display_name": spec.display_name,
        "language": "devarray",
        // Interrupts arrive as control messages: the evaluator stops
        // cooperatively and keeps every variable, where SIGINT would not.
        "interrupt_mode": "message",
        "env": env,
        "metadata": { "debugger": false },
    })
}

/// The `kernels` directory for `location`; `var` reads the environment
/// (injectable for tests).
pub fn kernels_dir(
    location: &Location,
    var: &dyn Fn(&str) -> Option<String>,
) -> Result<PathBuf, String> {
    let non_empty = |name: &str| var(name).filter(|v| !v.trim().is_empty());
    let data_dir = match location {
        Location::User => {
            if let Some(dir) = non_empty("JUPYTER_DATA_DIR") {
                PathBuf::from(dir)
            } else if cfg!(windows) {
                let appdata = non_empty("APPDATA")
                    .ok_or("--user: APPDATA is not set; use --prefix DIR instead")?;
                PathBuf::from(appdata).join("jupyter")
            } else {
                let home = non_empty("HOME").map(PathBuf::from);
                if cfg!(target_os = "macos") {
                    home.ok_or("--user: HOME is not set; set JUPYTER_DATA_DIR or use --prefix DIR")?
                        .join("Library/Jupyter")
                } else if let Some(xdg) = non_empty("XDG_DATA_HOME") {
                    PathBuf::from(xdg).join("jupyter")
                } else {
                    home.ok_or("--user: HOME is not set; set JUPYTER_DATA_DIR or use --prefix DIR")?
                        .join(".local/share/jupyter")
                }
            }
        }
        Location::SysPrefix => {
            // Only an activated environment says which Python Jupyter runs in;
            // the first python3 on PATH may be another one, so never guess.
            let prefix = non_empty("VIRTUAL_ENV")
                .or_else(|| non_empty("CONDA_PREFIX"))
                .map(PathBuf::from)
                .ok_or(
                    "--sys-prefix: no activated Python environment (VIRTUAL_ENV and CONDA_PREFIX \
                     are unset), and devarray-kernel will not guess which Python Jupyter runs \
                     in. Activate that environment first (e.g. `source .venv/bin/activate`), or \
                     name its prefix with --prefix DIR, or install for yourself with --user",
                )?;
            prefix.join("share/jupyter")
        }
        Location::Prefix(dir) => dir.join("share/jupyter"),
    };
    Ok(data_dir.join("kernels"))
}

/// Write both kernelspecs under `kernels`; returns the directories written.
pub fn install(kernels: &Path, exe: &Path) -> Result<Vec<PathBuf>, String> {
    let exe = exe.to_str().ok_or_else(|| {
        format!(
            "the path of this program, {}, is not valid UTF-8, which kernel.json cannot hold; \
             move devarray-kernel to a plain path and run install again",
            exe.display()
        )
    })?;
    let mut written = Vec::new();
    for spec in &SPECS {
        let dir = kernels.join(spec.name);
        std::fs::create_dir_all(&dir).map_err(|e| io_failure("create", &dir, &e))?;
        let json = serde_json::to_string_pretty(&kernel_json(spec, exe))
            .map_err(|e| format!("cannot encode kernel.json: {e}"))?;
        write_file(&dir.join("kernel.json"), format!("{json}\n").as_bytes())?;
        for (name, bytes) in LOGOS {
            write_file(&dir.join(name), bytes)?;
        }
        written.push(dir);
    }
    Ok(written)
}

/// Remove both kernelspecs from `kernels`; returns the directories removed.
pub fn uninstall(kernels: &Path) -> Result<Vec<PathBuf>, String> {
    let mut removed = Vec::new();
    for spec in &SPECS {
        let dir = kernels.join(spec.name);
        if dir.join("kernel.json").exists() {
            std::fs::remove_dir_all(&dir).map_err(|e| io_failure("remove", &dir, &e))?;
            removed.push(dir);
        }
    }
    Ok(removed)
}

/// Write through a temporary file and a rename, so Jupyter never reads half a kernel.json.
fn write_file(path: &Path, bytes: &[u8]) -> Result<(), String> {
    let temporary = path.with_extension("tmp");
    std::fs::write(&temporary, bytes).map_err(|e| io_failure("write", &temporary, &e))?;
    std::fs::rename(&temporary, path).map_err(|e| io_failure("write", path, &e))
}

fn io_failure(action: &str, path: &Path, error: &std::io::Error) -> String {
    let hint = if error.kind() == std::io::ErrorKind::PermissionDenied {
        " (permission denied). Install for yourself only with --user, or into a directory you \
         own with --prefix DIR"
    } else {
        ""
    };
    format!("cannot {action} {}: {error}{hint}", path.display())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(pairs: &'static [(&'static str, &'static str)]) -> impl Fn(&str) -> Option<String> {
        move |name| {
            pairs
                .iter()
                .find(|(k, _)| *k == name)
                .map(|(_, v)| (*v).to_string())
        }
    }

    #[test]
    fn kernel_json_is_what_jupyter_expects() {
        let json = kernel_json(&SPECS[1], "/opt/bin/devarray-kernel");
        assert_eq!(
            json,
            json!({
                "argv": ["/opt/bin/devarray-kernel", "run", "--connection-file", "{connection_file}"],
                "display_name": "devarray (2 simulated GPUs)",
                "language": "devarray",
                "interrupt_mode": "message",
                "env": {"DEVARRAY_SIM_GPUS": "2"},
                "metadata": {"debugger": false},
            })
        );
        assert_eq!(kernel_json(&SPECS[0], "k")["env"], json!({}));
        assert_eq!(kernel_json(&SPECS[0], "k")["display_name"], "devarray");
    }

    #[test]
    fn locations() {
        let dir = kernels_dir(&Location::Prefix("/p".into()), &env(&[])).unwrap();
        assert_eq!(dir, PathBuf::from("/p/share/jupyter/kernels"));
        let dir = kernels_dir(&Location::SysPrefix, &env(&[("VIRTUAL_ENV", "/venv")]));
        assert_eq!(dir.unwrap(), PathBuf::from("/venv/share/jupyter/kernels"));
        let dir = kernels_dir(&Location::User, &env(&[("JUPYTER_DATA_DIR", "/jd")]));
        assert_eq!(dir.unwrap(), PathBuf::from("/jd/kernels"));
        if cfg!(target_os = "linux") {
            let dir = kernels_dir(&Location::User, &env(&[("HOME", "/home/u")]));
            assert_eq!(
                dir.unwrap(),
                PathBuf::from("/home/u/.local/share/jupyter/kernels")
            );
        }
        // Outside an activated environment --sys-prefix refuses to guess.
        let error = kernels_dir(&Location::SysPrefix, &env(&[])).unwrap_err();
        assert!(
            error.starts_with("--sys-prefix: no activated Python environment")
                && error.contains("will not guess"),
            "{error}"
        );
    }

    #[test]
    fn install_writes_both_specs_with_logos_and_uninstall_removes_them() {
        let root =
            std::env::temp_dir().join(format!("devarray-kernel-install-{}", std::process::id()));
        let kernels = root.join("kernels");
        let written = install(&kernels, Path::new("/bin/devarray-kernel")).unwrap();
        assert_eq!(
            written,
            vec![kernels.join("devarray"), kernels.join("devarray-sim2")]
        );
        for dir in &written {
            let text = std::fs::read_to_string(dir.join("kernel.json")).unwrap();
            let json: Value = serde_json::from_str(&text).unwrap();
            assert_eq!(json["argv"][0], "/bin/devarray-kernel");
            for (name, bytes) in LOGOS {
                assert_eq!(std::fs::read(dir.join(name)).unwrap(), bytes);
            }
            assert!(!dir.join("kernel.tmp").exists());
        }
        assert_eq!(uninstall(&kernels).unwrap(), written);
        assert!(uninstall(&kernels).unwrap().is_empty());
        let _ = std::fs::remove_dir_all(root);
    }

    #[test]
    fn logos_are_pngs_of_the_advertised_sizes() {
        for (name, bytes) in &LOGOS[..2] {
            assert_eq!(&bytes[..8], b"\x89PNG\r\n\x1a\n", "{name}");
            let width = u32::from_be_bytes([bytes[16], bytes[17], bytes[18], bytes[19]]);
            assert!(
                name.contains(&format!("{width}x{width}")),
                "{name} is {width} wide"
            );
        }
    }
}
