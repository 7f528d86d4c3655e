//! `net.save_parameters(path)` / `net.load_parameters(path, ctx=...)` as safetensors files.
//!
//! Saving writes a temporary file in the target's directory and renames it over the target, so a
//! crash or a full disk never leaves a half-written file under the real name. Loading reads and
//! checks the whole file (format, names, dtypes, shapes) and builds every device copy before it
//! replaces any parameter, so a bad file or a failed copy changes nothing.
use std::collections::HashMap;
use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::rc::Rc;
use std::sync::atomic::{AtomicUsize, Ordering};

use safetensors::tensor::{Dtype, SafeTensors, TensorView};

use super::autograd::Tape;
use super::layers::Parameter;
use crate::runtime::{Array, Device, HostData, Runtime, RuntimeError};

/// Why saving or loading failed; `eval::gluon` maps each to an exception class.
#[derive(Debug)]
pub enum ParamsIoError {
    /// The file (or its directory) does not exist.
    NotFound(String),
    /// Any other operating-system failure (permissions, disk full, ...).
    Os(String),
    /// The file exists but is not a parameter file for this network.
    Invalid(String),
    Runtime(RuntimeError),
}

impl std::fmt::Display for ParamsIoError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ParamsIoError::NotFound(m) | ParamsIoError::Os(m) | ParamsIoError::Invalid(m) => {
                f.write_str(m)
            }
            ParamsIoError::Runtime(e) => write!(f, "{e}"),
        }
    }
}

impl From<RuntimeError> for ParamsIoError {
    fn from(e: RuntimeError) -> Self {
        ParamsIoError::Runtime(e)
    }
}

type IoResult<T> = std::result::Result<T, ParamsIoError>;

fn os_error(path: &Path, doing: &str, e: &std::io::Error) -> ParamsIoError {
    let msg = format!("cannot {doing} '{}': {e}", path.display());
    if e.kind() == std::io::ErrorKind::NotFound {
        ParamsIoError::NotFound(msg)
    } else {
        ParamsIoError::Os(msg)
    }
}

fn shape_text(shape: &[usize]) -> String {
    let parts: Vec<String> = shape.iter().map(|d| d.to_string()).collect();
    if parts.len() == 1 {
        format!("({},)", parts[0])
    } else {
        format!("({})", parts.join(", "))
    }
}

/// Writes every parameter (its first copy: all copies are identical) under its structural name.
pub fn save(params: &[(String, Rc<Parameter>)], path: &Path) -> IoResult<()> {
    let mut host: Vec<(String, Vec<usize>, Vec<u8>)> = Vec::with_capacity(params.len());
    for (name, p) in params {
        // Any copy will do (all are identical); `data(None)` would insist on cpu(0).
        let first = p
            .list_data()
            .ok()
            .and_then(|copies| copies.into_iter().next());
        let data = first.ok_or_else(|| {
            ParamsIoError::Runtime(RuntimeError::Value(format!(
                "cannot save: parameter '{}' ({name}) has no values yet. Initialize the network and run it on a batch (net(x)) before saving",
                p.name
            )))
        })?;
        let bytes = float32_bytes(&data)?;
        host.push((name.clone(), data.shape().to_vec(), bytes));
    }
    let mut views = Vec::with_capacity(host.len());
    for (name, shape, bytes) in &host {
        let view = TensorView::new(Dtype::F32, shape.clone(), bytes)
            .map_err(|e| ParamsIoError::Invalid(format!("cannot encode '{name}': {e}")))?;
        views.push((name.as_str(), view));
    }
    let metadata = HashMap::from([("format".to_string(), "devarray-gluon".to_string())]);
    let encoded = safetensors::serialize(views, Some(metadata))
        .map_err(|e| ParamsIoError::Invalid(format!("cannot encode the parameters: {e}")))?;
    write_atomically(path, &encoded)
}

fn float32_bytes(a: &Array) -> IoResult<Vec<u8>> {
    let values = match a.try_to_host()? {
        HostData::F32(v) => v,
        other => other.to_f64_vec().into_iter().map(|x| x as f32).collect(),
    };
    Ok(values.iter().flat_map(|x| x.to_le_bytes()).collect())
}

static TEMP_COUNTER: AtomicUsize = AtomicUsize::new(0);

/// What a symbolic link at `path` finally names (a chain of links, relative ones resolved
/// against their own directory); `path` itself when it is not a link. The target need not exist.
fn resolve_links(path: &Path) -> IoResult<PathBuf> {
    let mut current = path.to_path_buf();
    // The kernel's own limit on links followed in one lookup.
    for _ in 0..40 {
        match fs::symlink_metadata(&current) {
            Ok(meta) if meta.file_type().is_symlink() => {
                let target =
                    fs::read_link(&current).map_err(|e| os_error(&current, "follow", &e))?;
                current = match current.parent() {
                    Some(dir) if target.is_relative() => dir.join(target),
                    _ => target,
                };
            }
            _ => return Ok(current),
        }
    }
    Err(ParamsIoError::Os(format!(
        "cannot save to '{}': too many levels of symbolic links",
        path.display()
    )))
}

/// "a directory", "a character device", ... for a file that is not a regular one.
fn kind_of(meta: &fs::Metadata) -> &'static str {
    use std::os::unix::fs::FileTypeExt;
    let t = meta.file_type();
    if t.is_dir() {
        "a directory"
    } else if t.is_char_device() {
        "a character device"
    } else if t.is_block_device() {
        "a block device"
    } else if t.is_fifo() {
        "a named pipe (FIFO)"
    } else if t.is_socket() {
        "a socket"
    } else {
        "not a regular file"
    }
}

/// Saving goes through a symbolic link to its target, and never replaces anything that is
/// not a regular file (`/dev/null` stays a device).
fn write_atomically(path: &Path, bytes: &[u8]) -> IoResult<()> {
    let target = resolve_links(path)?;
    if let Ok(meta) = fs::metadata(&target) {
        if !meta.is_file() {
            return Err(ParamsIoError::Os(format!(
                "cannot save to '{}': it is {}, not a regular file; give a file name such as 'net.params'",
                path.display(),
                kind_of(&meta)
            )));
        }
    }
    write_beside(&target, bytes)
}

/// Temp file beside the target (same filesystem, so the rename is atomic), then rename.
fn write_beside(path: &Path, bytes: &[u8]) -> IoResult<()> {
    let file_name = path.file_name().ok_or_else(|| {
        ParamsIoError::Os(format!(
            "cannot save to '{}': the path names a directory, not a file; give a file name such as 'net.params'",
            path.display()
        ))
    })?;
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let temp = dir.join(format!(
        ".{}.tmp-{}-{}",
        file_name.to_string_lossy(),
        std::process::id(),
        TEMP_COUNTER.fetch_add(1, Ordering::Relaxed)
    ));
    let result = (|| {
        let mut f = fs::File::create(&temp).map_err(|e| os_error(&dir, "write into", &e))?;
        f.write_all(bytes)
            .and_then(|_| f.sync_all())
            .map_err(|e| os_error(&temp, "write", &e))?;
        fs::rename(&temp, path).map_err(|e| os_error(path, "replace", &e))
    })();
    if result.is_err() {
        // Best effort: the temp file is ours and useless now.
        let _ = fs::remove_file(&temp);
    }
    result
}

/// The bytes of the regular file at `path`, read with a bound: opened without blocking (a FIFO
/// must not wait for a writer), refused unless regular (`/dev/zero` would never end), and read no
/// further than the size the header announces, which must be the file's size.
fn read_regular(path: &Path) -> IoResult<Vec<u8>> {
    use std::io::Read;
    use std::os::unix::fs::OpenOptionsExt;
    let file = fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)
        .map_err(|e| os_error(path, "read", &e))?;
    let meta = file.metadata().map_err(|e| os_error(path, "read", &e))?;
    if !meta.is_file() {
        return Err(ParamsIoError::Invalid(format!(
            "cannot load '{}': it is {}, not a parameter file; give the path of a file written by net.save_parameters(path)",
            path.display(),
            kind_of(&meta)
        )));
    }
    let invalid = |why: &str| {
        ParamsIoError::Invalid(format!(
            "'{}' is not a valid parameter file (safetensors): {why}. It may be truncated or written by something else; save it again with net.save_parameters(path)",
            path.display()
        ))
    };
    let size = meta.len();
    let mut reader = file.take(size);
    let mut head = [0u8; 8];
    reader
        .read_exact(&mut head)
        .map_err(|_| invalid("shorter than its 8-byte header length"))?;
    let header = u64::from_le_bytes(head);
    if header > size - 8 {
        return Err(invalid(&format!(
            "its header announces {header} bytes but the file has {size}"
        )));
    }
    let mut bytes = Vec::new();
    bytes
        .try_reserve_exact(size as usize)
        .map_err(|_| invalid("too large to read into memory"))?;
    bytes.extend_from_slice(&head);
    reader
        .read_to_end(&mut bytes)
        .map_err(|e| os_error(path, "read", &e))?;
    Ok(bytes)
}

/// Reads `path` and puts its values into `params` on `devices`.
pub fn load(
    rt: &Runtime,
    tape: &mut Tape,
    params: &[(String, Rc<Parameter>)],
    path: &Path,
    devices: &[Device],
    allow_missing: bool,
    ignore_extra: bool,
) -> IoResult<()> {
    for d in devices {
        rt.check_device(*d)?;
    }
    let bytes = read_regular(path)?;
    let file = SafeTensors::deserialize(&bytes).map_err(|e| {
        ParamsIoError::Invalid(format!(
            "'{}' is not a valid parameter file (safetensors): {e}. It may be truncated or written by something else; save it again with net.save_parameters(path)",
            path.display()
        ))
    })?;
    let wanted: HashMap<&str, &Rc<Parameter>> =
        params.iter().map(|(n, p)| (n.as_str(), p)).collect();
    if !ignore_extra {
        let mut extra: Vec<&str> = file
            .names()
            .into_iter()
            .filter(|n| !wanted.contains_key(n))
            .collect();
        extra.sort_unstable();
        if let Some(first) = extra.first() {
            return Err(ParamsIoError::Invalid(format!(
                "'{}' has parameter '{first}' that the network does not have{}. Was it saved from a different network? Build the same layers, or pass ignore_extra=True",
                path.display(),
                if extra.len() > 1 { format!(" (and {} more)", extra.len() - 1) } else { String::new() }
            )));
        }
    }
    // Phase 1: check everything and build every copy; no parameter is touched yet.
    let mut staged: Vec<(&Rc<Parameter>, Vec<Array>)> = Vec::with_capacity(params.len());
    for (name, p) in params {
        let view = match file.tensor(name) {
            Ok(v) => v,
            Err(_) if allow_missing => continue,
            Err(_) => {
                return Err(ParamsIoError::Invalid(format!(
                    "'{}' lacks parameter '{name}' ({}). Was it saved from a different network? Build the same layers, or pass allow_missing=True",
                    path.display(),
                    p.name
                )))
            }
        };
        if !p.accepts_shape(view.shape()) {
            return Err(ParamsIoError::Invalid(format!(
                "'{}' has shape {} for parameter '{name}' but the network expects {}. Build the network with the same layer sizes as the one that was saved",
                path.display(),
                shape_text(view.shape()),
                shape_text(&p.shape())
            )));
        }
        let values = decode(&view, name, path)?;
        let host = rt.from_host(values, view.shape(), Device::cpu(0))?;
        let host = if host.dtype() == p.dtype {
            host
        } else {
            host.astype(p.dtype)?
        };
        staged.push((p, p.prepare_copies(rt, tape, &host, devices)?));
    }
    // Phase 2: install (infallible).
    for (p, copies) in staged {
        p.install_copies(tape, copies);
    }
    Ok(())
}

fn decode(view: &TensorView<'_>, name: &str, path: &Path) -> IoResult<HostData> {
    let data = view.data();
    let bad = |what: &str| {
        ParamsIoError::Invalid(format!(
            "'{}': parameter '{name}' is stored as {what}; only float32 and float64 are supported",
            path.display()
        ))
    };
    Ok(match view.dtype() {
        Dtype::F32 => HostData::F32(
            data.chunks_exact(4)
                .map(|c| f32::from_le_bytes(c.try_into().unwrap_or_default()))
                .collect(),
        ),
        Dtype::F64 => HostData::F64(
            data.chunks_exact(8)
                .map(|c| f64::from_le_bytes(c.try_into().unwrap_or_default()))
                .collect(),
        ),
        other => return Err(bad(&format!("{other:?}"))),
    })
}

#[cfg(test)]
mod tests;
