//! NumPy's array files: `np.save` / `np.load` in the `.npy` format (version 1.0, little-endian,
//! C order, the header padded to 64 bytes as NumPy 1.23 writes it), so files pass both ways
//! between devarray and NumPy; `np.savetxt` / `np.loadtxt` for whitespace- or comma-separated
//! text; `.npz` archives are `npz.rs`'s. Pickled object arrays are not read.

use std::path::Path;

use crate::object::error::{Exc, ExcKind};
use crate::object::format::str_repr;
use crate::object::ops::wrap;
use crate::object::value::{Args, Flavor, Value};
use crate::object::Interpreter;
use crate::runtime::save_file::{SaveError, SaveFile, BUFFER_BYTES};
use crate::runtime::{DType, Device, HostData, RuntimeError};

use crate::modules::array::numpy_fns::as_array;

const MAGIC: &[u8] = b"\x93NUMPY";

/// An OS error as Python words it (`[Errno 2] No such file or directory: 'x.npy'`).
pub(super) fn os_error(e: &std::io::Error, path: &str) -> Exc {
    let p = str_repr(path);
    match e.kind() {
        std::io::ErrorKind::NotFound => Exc::new(
            ExcKind::FileNotFoundError,
            format!("[Errno 2] No such file or directory: {p}"),
        ),
        std::io::ErrorKind::PermissionDenied => Exc::new(
            ExcKind::OSError,
            format!("[Errno 13] Permission denied: {p}"),
        ),
        std::io::ErrorKind::IsADirectory => {
            Exc::new(ExcKind::OSError, format!("[Errno 21] Is a directory: {p}"))
        }
        _ => Exc::new(ExcKind::OSError, format!("{e}: {p}")),
    }
}

pub(super) fn path_arg(v: &Value, what: &str) -> Result<String, Exc> {
    match v {
        Value::Str(s) => Ok(s.to_string()),
        other => Err(Exc::type_error(format!(
            "{what}: expected a file name (str), not {}",
            other.type_name()
        ))),
    }
}

fn descr(d: DType) -> &'static str {
    match d {
        DType::Float32 => "<f4",
        DType::Float64 => "<f8",
        DType::Int32 => "<i4",
        DType::Int64 => "<i8",
        DType::Bool => "|b1",
        DType::Float16 => "<f2",
        // NumPy has no bfloat16 (a NumPy array never holds one): raw 2-byte items.
        DType::BFloat16 => "|V2",
        DType::Int8 => "|i1",
        DType::Int16 => "<i2",
        DType::UInt8 => "|u1",
        DType::UInt16 => "<u2",
        DType::UInt32 => "<u4",
        DType::UInt64 => "<u8",
    }
}

fn shape_repr(shape: &[usize]) -> String {
    match shape {
        [] => "()".to_string(),
        [n] => format!("({n},)"),
        _ => format!(
            "({})",
            shape
                .iter()
                .map(|d| d.to_string())
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

/// The header of a `.npy` file holding an array of `dtype` and `shape` (magic to newline).
pub(super) fn npy_header(dtype: DType, shape: &[usize]) -> Vec<u8> {
    let dict = format!(
        "{{'descr': '{}', 'fortran_order': False, 'shape': {}, }}",
        descr(dtype),
        shape_repr(shape)
    );
    // Magic, version, header length, then the header padded with spaces and a newline so that
    // the data starts at a multiple of 64 bytes.
    let unpadded = MAGIC.len() + 2 + 2 + dict.len() + 1;
    let pad = (64 - unpadded % 64) % 64;
    let mut header = dict.into_bytes();
    header.extend(std::iter::repeat_n(b' ', pad));
    header.push(b'\n');
    let mut out = Vec::with_capacity(10 + header.len());
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&[1, 0]);
    out.extend_from_slice(&(header.len() as u16).to_le_bytes());
    out.extend_from_slice(&header);
    out
}

/// The bytes of a `.npy` file holding `data` of `shape`.
pub(super) fn encode(data: &HostData, shape: &[usize]) -> Vec<u8> {
    let mut out = npy_header(data.dtype(), shape);
    out.extend(data.to_le_bytes());
    out
}

/// A failed save as Python words it; an interrupt is KeyboardInterrupt.
pub(super) fn save_error(e: SaveError, path: &str) -> Exc {
    match e {
        SaveError::Io { error, .. } => os_error(&error, path),
        SaveError::Interrupted => RuntimeError::Interrupted.into(),
        SaveError::Runtime(e) => e.into(),
        SaveError::NotRegular {
            kind: "a directory",
            ..
        }
        | SaveError::NoFileName { .. } => Exc::new(
            ExcKind::OSError,
            format!("[Errno 21] Is a directory: {}", str_repr(path)),
        ),
        other => Exc::new(ExcKind::OSError, other.to_string()),
    }
}

fn save(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let file = a.required(0, "file")?;
    let arr = a.required(1, "arr")?;
    a.take_kw("allow_pickle");
    a.take_kw("fix_imports");
    a.finish(2)?;
    let mut path = path_arg(
        &crate::modules::python::stdlib::os::fspath_arg(it, &file)?,
        "save",
    )?;
    // NumPy adds the extension to a name without it.
    if !path.ends_with(".npy") {
        path.push_str(".npy");
    }
    let x = as_array(it, &arr)?;
    // Streamed from the array's buffer: the file costs one buffer of memory, not a copy.
    let fail = |e: SaveError| save_error(e, &path);
    let mut out = SaveFile::create(Path::new(&path)).map_err(fail)?;
    out.write_bytes(&npy_header(x.array.dtype(), x.array.shape()))
        .map_err(fail)?;
    x.array
        .write_le_bytes(BUFFER_BYTES, &mut |chunk: &[u8]| out.write_bytes(chunk))
        .map_err(fail)?;
    out.commit().map_err(fail)?;
    Ok(Value::None)
}

/// The value of `key` in a `.npy` header dict (`'descr': '<f8'` gives `'<f8'`).
fn header_field<'a>(header: &'a str, key: &str) -> Option<&'a str> {
    let at = header.find(&format!("'{key}':"))? + key.len() + 3;
    let rest = header[at..].trim_start();
    let end = if rest.starts_with('(') {
        rest.find(')')? + 1
    } else {
        rest.find([',', '}'])?
    };
    Some(rest[..end].trim())
}

fn bad_file(path: &str, why: &str) -> Exc {
    Exc::value_error(format!("{why} (reading {})", str_repr(path)))
}

pub(super) fn decode(bytes: &[u8], path: &str) -> Result<(HostData, Vec<usize>, bool), Exc> {
    if !bytes.starts_with(MAGIC) || bytes.len() < 10 {
        return Err(Exc::new(
            ExcKind::ValueError,
            format!(
                "Cannot load file containing pickled data when allow_pickle=False (or not a .npy file: {})",
                str_repr(path)
            ),
        ));
    }
    let (hlen, start): (usize, usize) = match bytes[6] {
        1 => (u16::from_le_bytes([bytes[8], bytes[9]]) as usize, 10),
        2 | 3 if bytes.len() >= 12 => (
            u32::from_le_bytes([bytes[8], bytes[9], bytes[10], bytes[11]]) as usize,
            12,
        ),
        v => {
            return Err(bad_file(
                path,
                &format!(
                    "we only support format version (1,0), (2,0) and (3,0), not ({v}, {})",
                    bytes[7]
                ),
            ))
        }
    };
    let header = bytes
        .get(start..start.saturating_add(hlen))
        .and_then(|h| std::str::from_utf8(h).ok())
        .ok_or_else(|| bad_file(path, "the header is cut short"))?;
    let descr = header_field(header, "descr")
        .map(|d| d.trim_matches(|c| c == '\'' || c == '"'))
        .ok_or_else(|| bad_file(path, "the header has no 'descr'"))?;
    let fortran = header_field(header, "fortran_order") == Some("True");
    let shape_text =
        header_field(header, "shape").ok_or_else(|| bad_file(path, "the header has no 'shape'"))?;
    let shape: Vec<usize> = shape_text
        .trim_matches(|c| c == '(' || c == ')')
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(|s| {
            s.parse::<usize>()
                .map_err(|_| bad_file(path, "the shape is not a tuple of ints"))
        })
        .collect::<Result<_, _>>()?;
    let count = shape
        .iter()
        .try_fold(1usize, |n, d| n.checked_mul(*d))
        .ok_or_else(|| bad_file(path, "the shape is too large"))?;
    let data = &bytes[start + hlen..];
    let (little, code) = match descr.as_bytes().first() {
        Some(b'<') | Some(b'|') | Some(b'=') => (true, &descr[1..]),
        Some(b'>') => (false, &descr[1..]),
        _ => (true, descr),
    };
    let width: usize = code.get(1..).and_then(|w| w.parse().ok()).unwrap_or(0);
    if width == 0 || data.len() < count.saturating_mul(width) {
        return Err(bad_file(
            path,
            &format!("cannot read {count} elements of dtype '{descr}' from the file"),
        ));
    }
    let chunk = |i: usize| -> [u8; 8] {
        let mut b = [0u8; 8];
        let raw = &data[i * width..(i + 1) * width];
        if little {
            b[..width].copy_from_slice(raw);
        } else {
            for (k, x) in raw.iter().rev().enumerate() {
                b[k] = *x;
            }
        }
        b
    };
    let dtype = match (code.as_bytes().first(), width) {
        (Some(b'f'), 2) => DType::Float16,
        (Some(b'f'), 4) => DType::Float32,
        (Some(b'f'), 8) => DType::Float64,
        (Some(b'b'), 1) => DType::Bool,
        (Some(b'i'), 1) => DType::Int8,
        (Some(b'i'), 2) => DType::Int16,
        (Some(b'i'), 4) => DType::Int32,
        (Some(b'i'), 8) => DType::Int64,
        (Some(b'u'), 1) => DType::UInt8,
        (Some(b'u'), 2) => DType::UInt16,
        (Some(b'u'), 4) => DType::UInt32,
        (Some(b'u'), 8) => DType::UInt64,
        _ => {
            return Err(bad_file(
                path,
                &format!("devarray cannot load arrays of dtype '{descr}' (it has bool, int8-64, uint8-64 and float16-64)"),
            ))
        }
    };
    // Big-endian elements are flipped into little-endian order first.
    let raw: Vec<u8> = (0..count)
        .flat_map(|i| chunk(i)[..width].to_vec())
        .collect();
    let out = HostData::from_le_bytes(&raw, dtype);
    Ok((out, shape, fortran))
}

fn load(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let file = a.required(0, "file")?;
    a.take_kw("mmap_mode");
    a.take_kw("allow_pickle");
    a.take_kw("fix_imports");
    a.take_kw("encoding");
    a.finish(1)?;
    let path = path_arg(
        &crate::modules::python::stdlib::os::fspath_arg(it, &file)?,
        "load",
    )?;
    let meta = std::fs::metadata(&path).map_err(|e| os_error(&e, &path))?;
    if meta.is_dir() {
        return Err(Exc::new(
            ExcKind::OSError,
            format!("[Errno 21] Is a directory: {}", str_repr(&path)),
        ));
    }
    let bytes = read_whole(&path)?;
    if bytes.starts_with(b"PK\x03\x04") {
        return super::npz::open(it, &path, &bytes);
    }
    npy_array(it, &bytes, &path)
}

/// The NumPy array a `.npy` file's bytes hold.
pub(super) fn npy_array(it: &mut dyn Interpreter, bytes: &[u8], path: &str) -> Result<Value, Exc> {
    let (data, shape, fortran) = decode(bytes, path)?;
    let rt = &it.state_mut().rt;
    let arr = if fortran {
        // Column-major data: read with the axes reversed, then transpose back.
        let rev: Vec<usize> = shape.iter().rev().copied().collect();
        rt.from_host(data, &rev, Device::cpu(0))?
            .transpose(None)?
            .copy_to(rt, Device::cpu(0))?
    } else {
        rt.from_host(data, &shape, Device::cpu(0))?
    };
    Ok(wrap(arr, Flavor::Numpy))
}

/// The file's bytes, read in chunks (an interrupt stops a large file's read; a file larger than
/// memory is a MemoryError).
fn read_whole(path: &str) -> Result<Vec<u8>, Exc> {
    use crate::runtime::load_file::{read_into, LoadError};
    let file = std::fs::File::open(path).map_err(|e| os_error(&e, path))?;
    let size = file.metadata().map_err(|e| os_error(&e, path))?.len();
    let mut bytes = Vec::new();
    match read_into(file, size, &mut bytes) {
        Ok(()) => Ok(bytes),
        Err(LoadError::Io(e)) => Err(os_error(&e, path)),
        Err(LoadError::TooLarge) => Err(crate::object::alloc::memory_error()),
        Err(LoadError::Interrupted) => Err(Exc::new(ExcKind::KeyboardInterrupt, "")),
    }
}

fn loadtxt(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let file = a.required(0, "fname")?;
    let dtype = a.take(1, "dtype")?;
    a.take_kw("comments");
    let delimiter = a.take(3, "delimiter")?;
    a.take_kw("converters");
    let skiprows = a.take(5, "skiprows")?;
    a.take_kw("usecols");
    a.take_kw("unpack");
    a.take_kw("ndmin");
    a.take_kw("encoding");
    a.finish(6)?;
    let path = path_arg(
        &crate::modules::python::stdlib::os::fspath_arg(it, &file)?,
        "loadtxt",
    )?;
    let text = std::fs::read_to_string(&path).map_err(|e| os_error(&e, &path))?;
    let delim = match &delimiter {
        None | Some(Value::None) => None,
        Some(Value::Str(s)) => Some(s.to_string()),
        Some(other) => {
            return Err(Exc::type_error(format!(
                "delimiter must be a str, not {}",
                other.type_name()
            )))
        }
    };
    let skip = match &skiprows {
        None => 0,
        Some(v) => crate::object::ops::as_i64(v).unwrap_or(0).max(0) as usize,
    };
    let mut rows: Vec<Vec<f64>> = Vec::new();
    for (no, line) in text.lines().enumerate().skip(skip) {
        let line = line.split('#').next().unwrap_or("").trim();
        if line.is_empty() {
            continue;
        }
        let fields: Vec<&str> = match &delim {
            Some(d) => line.split(d.as_str()).map(str::trim).collect(),
            None => line.split_whitespace().collect(),
        };
        let row = fields
            .iter()
            .map(|f| {
                f.parse::<f64>().map_err(|_| {
                    Exc::value_error(format!(
                        "could not convert string {} to float64 at row {}, column {}.",
                        str_repr(f),
                        no,
                        fields.iter().position(|x| x == f).unwrap_or(0) + 1
                    ))
                })
            })
            .collect::<Result<Vec<f64>, Exc>>()?;
        if let Some(first) = rows.first() {
            if first.len() != row.len() {
                return Err(Exc::value_error(format!(
                    "the number of columns changed from {} to {} at row {}; use `usecols` to select a subset and avoid this error",
                    first.len(),
                    row.len(),
                    no + 1
                )));
            }
        }
        rows.push(row);
    }
    let ncols = rows.first().map_or(0, Vec::len);
    // One row or one column comes back 1-D, as NumPy squeezes it.
    let shape = if rows.len() == 1 {
        vec![ncols]
    } else if ncols == 1 {
        vec![rows.len()]
    } else {
        vec![rows.len(), ncols]
    };
    let flat: Vec<f64> = rows.into_iter().flatten().collect();
    let mut arr = it
        .state_mut()
        .rt
        .from_host(HostData::F64(flat), &shape, Device::cpu(0))?;
    if let Some(d) = dtype
        .as_ref()
        .map(crate::modules::array::arrays::dtype_arg)
        .transpose()?
        .flatten()
    {
        arr = arr.astype(d)?;
    }
    Ok(wrap(arr, Flavor::Numpy))
}

fn savetxt(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let file = a.required(0, "fname")?;
    let x = a.required(1, "X")?;
    let text_kw = |v: Option<Value>, default: &str, what: &str| -> Result<String, Exc> {
        match &v {
            None => Ok(default.to_string()),
            Some(Value::Str(s)) => Ok(s.to_string()),
            Some(other) => Err(Exc::type_error(format!(
                "{what} must be a str, not {}",
                other.type_name()
            ))),
        }
    };
    let fmt = text_kw(a.take(2, "fmt")?, "%.18e", "fmt")?;
    let delimiter = text_kw(a.take(3, "delimiter")?, " ", "delimiter")?;
    let newline = text_kw(a.take(4, "newline")?, "\n", "newline")?;
    let header = text_kw(a.take(5, "header")?, "", "header")?;
    let footer = text_kw(a.take(6, "footer")?, "", "footer")?;
    let comments = text_kw(a.take(7, "comments")?, "# ", "comments")?;
    a.take_kw("encoding");
    a.finish(8)?;
    let path = path_arg(
        &crate::modules::python::stdlib::os::fspath_arg(it, &file)?,
        "savetxt",
    )?;
    let x = as_array(it, &x)?;
    let shape = x.array.shape().to_vec();
    // A 1-D array is written as one column, as NumPy does.
    let (rows, cols) = match shape.as_slice() {
        [n] => (*n, 1),
        [r, c] => (*r, *c),
        _ => {
            return Err(Exc::value_error(format!(
                "Expected 1D or 2D array, got {}D array instead",
                shape.len()
            )))
        }
    };
    let host = x.array.to_host();
    let value = |i: usize| -> crate::display::pyfmt::FmtValue<'static> {
        use crate::display::pyfmt::FmtValue;
        match host.scalar_at(i) {
            Some(crate::runtime::Scalar::Float(f)) => FmtValue::Float(f),
            Some(crate::runtime::Scalar::Int(n)) => FmtValue::Int(n),
            Some(crate::runtime::Scalar::Bool(b)) => FmtValue::Int(i64::from(b)),
            None => FmtValue::Int(0),
        }
    };
    // Written row by row (the file is buffered), so the text never exists whole in memory.
    let fail = |e: SaveError| save_error(e, &path);
    let mut file = SaveFile::create(Path::new(&path)).map_err(fail)?;
    let mut out = String::new();
    if !header.is_empty() {
        out.push_str(&comments);
        out.push_str(&header.replace('\n', &format!("\n{comments}")));
        out.push_str(&newline);
    }
    for r in 0..rows {
        file.write_bytes(out.as_bytes()).map_err(fail)?;
        out.clear();
        let fields = (0..cols)
            .map(|c| {
                crate::display::pyfmt::percent_format(&fmt, &[value(r * cols + c)]).map_err(|e| {
                    Exc::value_error(format!(
                        "fmt has wrong number of % formats:  {fmt} ({})",
                        e.message
                    ))
                })
            })
            .collect::<Result<Vec<_>, _>>()?;
        out.push_str(&fields.join(&delimiter));
        out.push_str(&newline);
    }
    if !footer.is_empty() {
        out.push_str(&comments);
        out.push_str(&footer);
        out.push_str(&newline);
    }
    file.write_bytes(out.as_bytes()).map_err(fail)?;
    file.commit().map_err(fail)?;
    Ok(Value::None)
}

/// `np.frombuffer(buffer, dtype=float, count=-1, offset=0)`: the bytes of a `bytes` or
/// `bytearray` read as little-endian elements of `dtype` (a copy: devarray arrays own their
/// memory).
fn frombuffer(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let buffer = a.required(0, "buffer")?;
    let dtype = match a.take(1, "dtype")? {
        Some(d) => super::arrays::dtype_arg(&d)?,
        None => None,
    }
    .unwrap_or(DType::Float64);
    let count = a.take(2, "count")?.map_or(Ok(-1), |v| {
        crate::object::ops::as_i64(&v).ok_or_else(|| Exc::type_error("count must be an integer"))
    })?;
    let offset = a.take(3, "offset")?.map_or(Ok(0), |v| {
        crate::object::ops::as_i64(&v).ok_or_else(|| Exc::type_error("offset must be an integer"))
    })?;
    a.finish(4)?;
    let bytes = crate::modules::python::bytes::of(&buffer).ok_or_else(|| {
        Exc::type_error(format!(
            "a bytes-like object is required, not '{}'",
            buffer.type_name()
        ))
    })?;
    let size = dtype.size_bytes();
    let offset = usize::try_from(offset)
        .ok()
        .filter(|&o| o <= bytes.len())
        .ok_or_else(|| {
            Exc::value_error("offset must be non-negative and no greater than buffer length")
        })?;
    let rest = &bytes[offset..];
    let n = if count < 0 {
        if rest.len() % size != 0 {
            return Err(Exc::value_error(
                "buffer size must be a multiple of element size",
            ));
        }
        rest.len() / size
    } else {
        let n = count as usize;
        if n.saturating_mul(size) > rest.len() {
            return Err(Exc::value_error("buffer is smaller than requested size"));
        }
        n
    };
    let data = HostData::from_le_bytes(&rest[..n * size], dtype);
    drop(bytes);
    let arr = it.state_mut().rt.from_host(data, &[n], Device::cpu(0))?;
    Ok(crate::object::ops::wrap(
        arr,
        crate::object::value::Flavor::Numpy,
    ))
}

/// The functions of this file, for `import numpy`.
pub fn install(m: &crate::object::value::Module) {
    use crate::object::builtin;
    m.set("frombuffer", builtin("frombuffer", "frombuffer(buffer, dtype=float, count=-1, offset=0): the bytes of a bytes object as a 1-D array of dtype.", frombuffer));
    m.set("save", builtin("save", "save(file, arr): write arr to a .npy file (the extension is added when missing), readable by NumPy.", save));
    m.set(
        "load",
        builtin(
            "load",
            "load(file): the array of a .npy file, or the NpzFile of a .npz archive (as NumPy writes them).",
            load,
        ),
    );
    super::npz::install(m);
    m.set("savetxt", builtin("savetxt", "savetxt(fname, X, fmt='%.18e', delimiter=' ', newline='\\n', header='', footer='', comments='# '): write a 1-D or 2-D array as text.", savetxt));
    m.set("loadtxt", builtin("loadtxt", "loadtxt(fname, dtype=float, delimiter=None, skiprows=0): an array from a text file of numbers ('#' starts a comment).", loadtxt));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn npy_round_trip_and_header_layout() {
        let bytes = encode(&HostData::I64(vec![1, 2, 3]), &[3]);
        // NumPy 1.23's header for this array, padded so the data starts at byte 128.
        assert_eq!(&bytes[..6], MAGIC);
        assert_eq!(bytes.len(), 128 + 24);
        let header = std::str::from_utf8(&bytes[10..128]).unwrap_or("");
        assert!(header.starts_with("{'descr': '<i8', 'fortran_order': False, 'shape': (3,), }"));
        assert!(header.ends_with('\n'));
        let (data, shape, fortran) = match decode(&bytes, "x.npy") {
            Ok(d) => d,
            Err(e) => panic!("{}", e.message),
        };
        assert_eq!(shape, vec![3]);
        assert!(!fortran);
        assert!(matches!(data, HostData::I64(v) if v == vec![1, 2, 3]));
    }

    #[test]
    fn truncated_files_are_errors() {
        let bytes = encode(&HostData::F64(vec![1.0, 2.0]), &[2]);
        assert!(decode(&bytes[..bytes.len() - 1], "x.npy").is_err());
        assert!(decode(&bytes[..20], "x.npy").is_err());
        assert!(decode(b"junk", "x.npy").is_err());
    }
}
