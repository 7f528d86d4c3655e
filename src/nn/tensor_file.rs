//! devarray's one file format for arrays: a safetensors file (named arrays, each with its dtype
//! and shape) whose `__metadata__` strings say what the arrays were. Every writer of array files
//! goes through `write`/`save_named` (`net.save_parameters`, `npx.save`, `nd.save`, `torch.save`)
//! and every reader through `read`/`load_named`.
//!
//! Writing is atomic: the bytes go to a temporary file in the target's directory, which is then
//! renamed over the target, so a crash or a full disk never leaves a half-written file under the
//! real name. Reading is bounded and checked whole before anything is returned: the file must be
//! a regular file, its header must fit in it, and every array must decode (a supported dtype, the
//! byte count its shape needs) — so a caller that builds its result from a `TensorFile` can fail
//! only on what it checks itself (its own metadata, device memory), before it changes anything.
use std::collections::HashMap;
use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

use safetensors::tensor::{Dtype, SafeTensors, TensorView};

use crate::runtime::{Array, HostData, RuntimeError};

/// Why writing or reading an array file failed; each binding maps it to an exception class.
#[derive(Debug)]
pub enum TensorFileError {
    /// The file (or its directory) does not exist.
    NotFound(String),
    /// Any other operating-system failure (permissions, disk full, ...).
    Os(String),
    /// The file exists but is not a (valid) array file, or does not fit what the caller wants.
    Invalid(String),
    Runtime(RuntimeError),
}

impl std::fmt::Display for TensorFileError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            TensorFileError::NotFound(m) | TensorFileError::Os(m) | TensorFileError::Invalid(m) => {
                f.write_str(m)
            }
            TensorFileError::Runtime(e) => write!(f, "{e}"),
        }
    }
}

impl From<RuntimeError> for TensorFileError {
    fn from(e: RuntimeError) -> Self {
        TensorFileError::Runtime(e)
    }
}

pub type Result<T> = std::result::Result<T, TensorFileError>;

/// How a reader's errors name the file it expected and the call that writes one, e.g.
/// ("parameter file", "net.save_parameters(path)").
#[derive(Clone, Copy, Debug)]
pub struct Hint {
    pub what: &'static str,
    pub how: &'static str,
}

/// The metadata key that says which devarray writer made a file.
pub const FORMAT_KEY: &str = "format";

/// One array of a file, decoded to the host.
#[derive(Clone, Debug, PartialEq)]
pub struct HostTensor {
    pub name: String,
    pub shape: Vec<usize>,
    pub data: HostData,
}

/// A whole file, read and checked.
#[derive(Debug)]
pub struct TensorFile {
    /// The arrays in the order of their bytes in the file (safetensors orders them by dtype
    /// alignment, then name); writers that care about order record it in the metadata.
    pub tensors: Vec<HostTensor>,
    pub metadata: HashMap<String, String>,
}

impl TensorFile {
    pub fn get(&self, name: &str) -> Option<&HostTensor> {
        self.tensors.iter().find(|t| t.name == name)
    }
}

pub(crate) fn os_error(path: &Path, doing: &str, e: &std::io::Error) -> TensorFileError {
    let msg = format!("cannot {doing} '{}': {e}", path.display());
    if e.kind() == std::io::ErrorKind::NotFound {
        TensorFileError::NotFound(msg)
    } else {
        TensorFileError::Os(msg)
    }
}

/// The little-endian bytes safetensors stores and the dtype it names them by.
fn encode(data: &HostData) -> (Dtype, Vec<u8>) {
    match data {
        HostData::F32(v) => (Dtype::F32, v.iter().flat_map(|x| x.to_le_bytes()).collect()),
        HostData::F64(v) => (Dtype::F64, v.iter().flat_map(|x| x.to_le_bytes()).collect()),
        HostData::I32(v) => (Dtype::I32, v.iter().flat_map(|x| x.to_le_bytes()).collect()),
        HostData::I64(v) => (Dtype::I64, v.iter().flat_map(|x| x.to_le_bytes()).collect()),
        HostData::Bool(v) => (Dtype::BOOL, v.iter().map(|&b| u8::from(b)).collect()),
    }
}

fn decode(view: &TensorView<'_>) -> std::result::Result<HostData, String> {
    let data = view.data();
    fn words<const N: usize, T>(data: &[u8], f: fn([u8; N]) -> T) -> Vec<T> {
        data.chunks_exact(N)
            .map(|c| f(c.try_into().unwrap_or([0; N])))
            .collect()
    }
    Ok(match view.dtype() {
        Dtype::F32 => HostData::F32(words(data, f32::from_le_bytes)),
        Dtype::F64 => HostData::F64(words(data, f64::from_le_bytes)),
        Dtype::I32 => HostData::I32(words(data, i32::from_le_bytes)),
        Dtype::I64 => HostData::I64(words(data, i64::from_le_bytes)),
        Dtype::BOOL => {
            if let Some(b) = data.iter().find(|&&b| b > 1) {
                return Err(format!("a bool holds the byte {b}"));
            }
            HostData::Bool(data.iter().map(|&b| b == 1).collect())
        }
        other => {
            return Err(format!(
                "it is stored as {other:?}; devarray reads float32, float64, int32, int64 and bool"
            ))
        }
    })
}

/// Writes `tensors` (names must be distinct) with `metadata`, atomically.
pub fn write(path: &Path, tensors: &[HostTensor], metadata: HashMap<String, String>) -> Result<()> {
    let encoded: Vec<(Dtype, Vec<u8>)> = tensors.iter().map(|t| encode(&t.data)).collect();
    let mut views = Vec::with_capacity(tensors.len());
    for (t, (dtype, bytes)) in tensors.iter().zip(&encoded) {
        let view = TensorView::new(*dtype, t.shape.clone(), bytes)
            .map_err(|e| TensorFileError::Invalid(format!("cannot encode '{}': {e}", t.name)))?;
        views.push((t.name.as_str(), view));
    }
    let bytes = safetensors::serialize(views, Some(metadata))
        .map_err(|e| TensorFileError::Invalid(format!("cannot encode the arrays: {e}")))?;
    write_atomically(path, &bytes)
}

/// Copies every array to the host (waiting for queued work) and writes them under their names.
/// For callers outside the language (the model layer's `save`): `metadata` is stored as is.
pub fn save_named(
    path: &Path,
    arrays: &[(String, Array)],
    metadata: HashMap<String, String>,
) -> Result<()> {
    let mut host = Vec::with_capacity(arrays.len());
    for (name, a) in arrays {
        host.push(HostTensor {
            name: name.clone(),
            shape: a.shape().to_vec(),
            data: a.try_to_host()?,
        });
    }
    write(path, &host, metadata)
}

/// Reads and checks the whole file at `path`; `hint` words the errors.
pub fn read(path: &Path, hint: Hint) -> Result<TensorFile> {
    let bytes = read_regular(path, hint)?;
    let invalid = |why: String| {
        TensorFileError::Invalid(format!(
            "'{}' is not a valid {} (safetensors): {why}. It may be truncated or written by something else; save it again with {}",
            path.display(),
            hint.what,
            hint.how
        ))
    };
    let (_, meta) = SafeTensors::read_metadata(&bytes).map_err(|e| invalid(e.to_string()))?;
    let file = SafeTensors::deserialize(&bytes).map_err(|e| invalid(e.to_string()))?;
    // The order of the bytes, which is the writer's order for files written elsewhere too.
    let mut named: Vec<(String, TensorView<'_>)> = file.tensors();
    named.sort_by_key(|(_, v)| v.data().as_ptr() as usize);
    let mut tensors = Vec::with_capacity(named.len());
    for (name, view) in named {
        let data = decode(&view).map_err(|why| {
            TensorFileError::Invalid(format!(
                "'{}': array '{name}' cannot be read: {why}",
                path.display()
            ))
        })?;
        tensors.push(HostTensor {
            name,
            shape: view.shape().to_vec(),
            data,
        });
    }
    Ok(TensorFile {
        tensors,
        metadata: meta.metadata().clone().unwrap_or_default(),
    })
}

/// Every array of the file at `path` with its name, in file order, checked (see `read`).
pub fn load_named(path: &Path, hint: Hint) -> Result<Vec<HostTensor>> {
    Ok(read(path, hint)?.tensors)
}

static TEMP_COUNTER: AtomicUsize = AtomicUsize::new(0);

/// What a symbolic link at `path` finally names (a chain of links, relative ones resolved
/// against their own directory); `path` itself when it is not a link. The target need not exist.
fn resolve_links(path: &Path) -> Result<PathBuf> {
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
    Err(TensorFileError::Os(format!(
        "cannot save to '{}': too many levels of symbolic links",
        path.display()
    )))
}

/// "a directory", "a character device", ... for a file that is not a regular one.
pub(crate) fn kind_of(meta: &fs::Metadata) -> &'static str {
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
fn write_atomically(path: &Path, bytes: &[u8]) -> Result<()> {
    let target = resolve_links(path)?;
    if let Ok(meta) = fs::metadata(&target) {
        if !meta.is_file() {
            return Err(TensorFileError::Os(format!(
                "cannot save to '{}': it is {}, not a regular file; give a file name such as 'net.params'",
                path.display(),
                kind_of(&meta)
            )));
        }
    }
    write_beside(&target, bytes)
}

/// Temp file beside the target (same filesystem, so the rename is atomic), then rename.
fn write_beside(path: &Path, bytes: &[u8]) -> Result<()> {
    let file_name = path.file_name().ok_or_else(|| {
        TensorFileError::Os(format!(
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
fn read_regular(path: &Path, hint: Hint) -> Result<Vec<u8>> {
    use std::io::Read;
    use std::os::unix::fs::OpenOptionsExt;
    let file = fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)
        .map_err(|e| os_error(path, "read", &e))?;
    let meta = file.metadata().map_err(|e| os_error(path, "read", &e))?;
    if !meta.is_file() {
        return Err(TensorFileError::Invalid(format!(
            "cannot load '{}': it is {}, not a {}; give the path of a file written by {}",
            path.display(),
            kind_of(&meta),
            hint.what,
            hint.how
        )));
    }
    let invalid = |why: &str| {
        TensorFileError::Invalid(format!(
            "'{}' is not a valid {} (safetensors): {why}. It may be truncated or written by something else; save it again with {}",
            path.display(),
            hint.what,
            hint.how
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

#[cfg(test)]
mod tests;
