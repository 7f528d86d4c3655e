//! devarray's one file format for arrays: a safetensors file (named arrays, each with its dtype
//! and shape) whose `__metadata__` strings say what the arrays were. Every writer of array files
//! goes through `write`/`save_named` (`net.save_parameters`, `npx.save`, `nd.save`, `torch.save`)
//! and every reader through `read`/`load_named`.
//!
//! Writing goes through `runtime::save_file` (a private temporary renamed over the target, links
//! followed, devices refused, the old file's mode kept), and streams each array's bytes to it:
//! the header is computed from shapes alone, so no encoded copy of the data is ever built. Reading is bounded and checked whole before anything is returned: the file must be
//! a regular file, its header must fit in it, and every array must decode (a supported dtype, the
//! byte count its shape needs) — so a caller that builds its result from a `TensorFile` can fail
//! only on what it checks itself (its own metadata, device memory), before it changes anything.
use std::collections::HashMap;
use std::fs;
use std::path::Path;

use safetensors::tensor::{Dtype, Metadata, SafeTensors, TensorInfo, TensorView};

use crate::runtime::load_file::{self, LoadError};
use crate::runtime::save_file::{SaveError, SaveFile, BUFFER_BYTES};
use crate::runtime::{Array, DType, HostData, RuntimeError};

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

/// The dtype safetensors names a devarray dtype by.
fn st_dtype(d: DType) -> Dtype {
    match d {
        DType::Float32 => Dtype::F32,
        DType::Float64 => Dtype::F64,
        DType::Int32 => Dtype::I32,
        DType::Int64 => Dtype::I64,
        DType::Bool => Dtype::BOOL,
        DType::Float16 => Dtype::F16,
        DType::BFloat16 => Dtype::BF16,
        DType::Int8 => Dtype::I8,
        DType::Int16 => Dtype::I16,
        DType::UInt8 => Dtype::U8,
        DType::UInt16 => Dtype::U16,
        DType::UInt32 => Dtype::U32,
        DType::UInt64 => Dtype::U64,
    }
}

/// Where the values of an array to write come from: a device array (streamed from its buffer)
/// or values already on the host.
#[derive(Clone, Copy)]
pub enum Source<'a> {
    Array(&'a Array),
    Host(&'a HostData),
}

impl Source<'_> {
    fn dtype(&self) -> DType {
        match self {
            Source::Array(a) => a.dtype(),
            Source::Host(h) => h.dtype(),
        }
    }

    fn len(&self) -> usize {
        match self {
            Source::Array(a) => a.size(),
            Source::Host(h) => h.len(),
        }
    }
}

/// One array to write: its name in the file, its shape and its values.
#[derive(Clone, Copy)]
pub struct OutTensor<'a> {
    pub name: &'a str,
    pub shape: &'a [usize],
    pub source: Source<'a>,
}

impl From<SaveError> for TensorFileError {
    fn from(e: SaveError) -> Self {
        match e {
            SaveError::Interrupted => TensorFileError::Runtime(RuntimeError::Interrupted),
            SaveError::Runtime(e) => TensorFileError::Runtime(e),
            SaveError::NotRegular { path, kind } => TensorFileError::Os(format!(
                "cannot save to '{}': it is {kind}, not a regular file; give a file name such as 'net.params'",
                path.display()
            )),
            SaveError::NoFileName { path } => TensorFileError::Os(format!(
                "cannot save to '{}': the path names a directory, not a file; give a file name such as 'net.params'",
                path.display()
            )),
            SaveError::Io { ref error, .. } if error.kind() == std::io::ErrorKind::NotFound => {
                TensorFileError::NotFound(e.to_string())
            }
            other => TensorFileError::Os(other.to_string()),
        }
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
        Dtype::F16 => HostData::from_le_bytes(data, DType::Float16),
        Dtype::BF16 => HostData::from_le_bytes(data, DType::BFloat16),
        Dtype::I8 => HostData::from_le_bytes(data, DType::Int8),
        Dtype::I16 => HostData::from_le_bytes(data, DType::Int16),
        Dtype::U8 => HostData::from_le_bytes(data, DType::UInt8),
        Dtype::U16 => HostData::from_le_bytes(data, DType::UInt16),
        Dtype::U32 => HostData::from_le_bytes(data, DType::UInt32),
        Dtype::U64 => HostData::from_le_bytes(data, DType::UInt64),
        other => {
            return Err(format!(
                "it is stored as {other:?}; devarray reads bool, the integers, float16/32/64 and bfloat16"
            ))
        }
    })
}

/// Writes `tensors` (names must be distinct) with `metadata`, atomically.
pub fn write(path: &Path, tensors: &[HostTensor], metadata: HashMap<String, String>) -> Result<()> {
    let out: Vec<OutTensor<'_>> = tensors
        .iter()
        .map(|t| OutTensor {
            name: &t.name,
            shape: &t.shape,
            source: Source::Host(&t.data),
        })
        .collect();
    write_streamed(path, &out, metadata)
}

/// Writes `tensors` (names must be distinct) with `metadata`, atomically, streaming each
/// array's bytes to the file: memory beyond the arrays is one buffer. The layout is
/// safetensors' own (its `Metadata` builds the header; arrays ordered by dtype, then name).
pub fn write_streamed(
    path: &Path,
    tensors: &[OutTensor<'_>],
    metadata: HashMap<String, String>,
) -> Result<()> {
    let mut order: Vec<&OutTensor<'_>> = tensors.iter().collect();
    order.sort_by(|l, r| {
        st_dtype(r.source.dtype())
            .cmp(&st_dtype(l.source.dtype()))
            .then(l.name.cmp(r.name))
    });
    let mut infos = Vec::with_capacity(order.len());
    let mut offset = 0usize;
    for t in &order {
        let count = t
            .shape
            .iter()
            .try_fold(1usize, |n, &d| n.checked_mul(d))
            .filter(|&n| n == t.source.len())
            .ok_or_else(|| {
                TensorFileError::Invalid(format!(
                    "cannot encode '{}': its shape {:?} does not match its {} values",
                    t.name,
                    t.shape,
                    t.source.len()
                ))
            })?;
        let bytes = count * t.source.dtype().size_bytes();
        let info = TensorInfo {
            dtype: st_dtype(t.source.dtype()),
            shape: t.shape.to_vec(),
            data_offsets: (offset, offset + bytes),
        };
        offset += bytes;
        infos.push((t.name.to_string(), info));
    }
    let invalid = |e: String| TensorFileError::Invalid(format!("cannot encode the arrays: {e}"));
    let header = Metadata::new(Some(metadata), infos).map_err(|e| invalid(e.to_string()))?;
    let mut header = serde_json::to_string(&header)
        .map_err(|e| invalid(e.to_string()))?
        .into_bytes();
    // safetensors pads the header with spaces so the data starts 8-byte aligned.
    header.resize(header.len().next_multiple_of(8), b' ');
    let mut file = SaveFile::create(path)?;
    file.write_bytes(&(header.len() as u64).to_le_bytes())?;
    file.write_bytes(&header)?;
    drop(header);
    for t in order {
        match t.source {
            Source::Array(a) => a
                .write_le_bytes(BUFFER_BYTES, &mut |chunk: &[u8]| -> Result<()> {
                    Ok(file.write_bytes(chunk)?)
                })?,
            Source::Host(h) => write_host(&mut file, h)?,
        }
    }
    Ok(file.commit()?)
}

/// Values already on the host, as little-endian bytes, a buffer at a time.
fn write_host(file: &mut SaveFile, data: &HostData) -> Result<()> {
    fn put<T: Copy, const N: usize>(
        file: &mut SaveFile,
        v: &[T],
        bytes: fn(T) -> [u8; N],
    ) -> Result<()> {
        let mut buf = Vec::with_capacity(BUFFER_BYTES.min(v.len() * N));
        for part in v.chunks((BUFFER_BYTES / N).max(1)) {
            buf.clear();
            part.iter().for_each(|&x| buf.extend_from_slice(&bytes(x)));
            file.write_bytes(&buf)?;
        }
        Ok(())
    }
    match data {
        HostData::F32(v) => put(file, v, f32::to_le_bytes),
        HostData::F64(v) => put(file, v, f64::to_le_bytes),
        HostData::I32(v) => put(file, v, i32::to_le_bytes),
        HostData::I64(v) => put(file, v, i64::to_le_bytes),
        HostData::Bool(v) => put(file, v, |b: bool| [u8::from(b)]),
        other => Ok(file.write_bytes(&other.to_le_bytes())?),
    }
}

/// Writes each array under its name, streaming it from its device (waiting for queued work).
/// For callers outside the language (the model layer's `save`): `metadata` is stored as is.
pub fn save_named(
    path: &Path,
    arrays: &[(String, Array)],
    metadata: HashMap<String, String>,
) -> Result<()> {
    let out: Vec<OutTensor<'_>> = arrays
        .iter()
        .map(|(name, a)| OutTensor {
            name,
            shape: a.shape(),
            source: Source::Array(a),
        })
        .collect();
    write_streamed(path, &out, metadata)
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

/// "a directory", "a character device", ... for a file that is not a regular one.
pub(crate) fn kind_of(meta: &fs::Metadata) -> &'static str {
    crate::runtime::save_file::kind_of(meta)
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
    // In chunks, so an interrupt stops the read of a large file.
    match load_file::read_into(head.as_slice().chain(reader), size, &mut bytes) {
        Ok(()) => Ok(bytes),
        Err(LoadError::TooLarge) => Err(invalid("too large to read into memory")),
        Err(LoadError::Interrupted) => Err(TensorFileError::Runtime(RuntimeError::Interrupted)),
        Err(LoadError::Io(e)) => Err(os_error(path, "read", &e)),
    }
}

#[cfg(test)]
mod tests;
