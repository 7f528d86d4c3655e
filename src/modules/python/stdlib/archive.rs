//! `zipfile` and `tarfile`, for reading archives and unpacking them: what d2l's
//! `download_extract` does with a data set it finds in `../data`. `zipfile.ZipFile(file)`
//! reads stored and deflated members (CRC-32 checked, as CPython does); `tarfile.open(name)`
//! reads plain and gzip-compressed tar files (ustar names, GNU long names, pax `path`).
//! `namelist()`/`getnames()`, `read(name)`, `extractall(path)`, `close()`, `with`. Members
//! whose path would leave the target folder (absolute, or through `..`) are refused; links
//! and devices in a tar file are skipped. Nothing is written back into an archive.

use std::cell::RefCell;
use std::io::Read;
use std::path::{Component, Path, PathBuf};
use std::rc::Rc;

use super::{exc_class, module, module_member, raise, set_fns, string};
use crate::modules::python::bytes::Bytes;
use crate::modules::python::native::downcast;
use crate::modules::python::stdlib::os::os_error;
use crate::object::value::{Module, NativeObject};
use crate::object::{method, Exc, ExcKind, Interpreter, Value};

pub fn build_zipfile() -> Rc<Module> {
    let m = module("zipfile", "Read and unpack ZIP files.");
    set_fns(
        &m,
        &[(
            "ZipFile",
            "ZipFile(file, mode='r'): an open ZIP file, for reading.",
            |it, mut a| {
                let file = string(&a.required(0, "file")?, "file")?;
                let mode = a.take(1, "mode")?;
                for k in [
                    "compression",
                    "allowZip64",
                    "compresslevel",
                    "strict_timestamps",
                ] {
                    a.take_kw(k);
                }
                a.finish(2)?;
                if let Some(m) = &mode {
                    if !matches!(m, Value::Str(s) if &**s == "r") {
                        return Err(Exc::value_error(
                            "devarray's zipfile only reads: ZipFile(file) or ZipFile(file, 'r')",
                        ));
                    }
                }
                let data = std::fs::read(&*file).map_err(|e| os_error(&e, &file))?;
                let members = zip_members(&data).map_err(|msg| bad(it, "zipfile", &msg))?;
                Ok(open_archive(file, "zipfile", members))
            },
        )],
    );
    m.set(
        "BadZipFile",
        exc_class("BadZipFile", "zipfile", ExcKind::Exception).value(),
    );
    m
}

pub fn build_tarfile() -> Rc<Module> {
    let m = module("tarfile", "Read and unpack tar archives (plain or gzip).");
    set_fns(
        &m,
        &[(
            "open",
            "open(name, mode='r'): an open tar file, for reading (plain or gzip-compressed).",
            |it, mut a| {
                let name = string(&a.required(0, "name")?, "name")?;
                let mode = match a.take(1, "mode")? {
                    Some(Value::Str(ref s)) => s.clone(),
                    None => Rc::from("r"),
                    Some(other) => {
                        return Err(Exc::type_error(format!(
                            "mode must be str, not {}",
                            other.type_name()
                        )))
                    }
                };
                a.take_kw("fileobj");
                a.finish(2)?;
                if !matches!(&*mode, "r" | "r:*" | "r:" | "r:gz") {
                    return Err(Exc::value_error(format!(
                        "devarray's tarfile reads plain and gzip tar files ('r', 'r:gz'), not mode '{mode}'"
                    )));
                }
                let raw = std::fs::read(&*name).map_err(|e| os_error(&e, &name))?;
                let gz = raw.starts_with(&[0x1f, 0x8b]);
                let data = if gz {
                    let mut out = Vec::new();
                    flate2::read::MultiGzDecoder::new(raw.as_slice())
                        .read_to_end(&mut out)
                        .map_err(|e| bad(it, "tarfile", &format!("invalid gzip data: {e}")))?;
                    out
                } else if &*mode == "r:gz" {
                    return Err(bad(it, "tarfile", "not a gzip file"));
                } else {
                    raw
                };
                let members = tar_members(&data).map_err(|msg| {
                    // mode 'r' tries every compression, and CPython lists why each failed.
                    let msg = if gz || !matches!(&*mode, "r" | "r:*") {
                        msg
                    } else {
                        format!("file could not be opened successfully:\n- method gz: ReadError('not a gzip file')\n- method bz2: ReadError('not a bzip2 file')\n- method xz: ReadError('not an lzma file')\n- method tar: ReadError('{msg}')")
                    };
                    bad(it, "tarfile", &msg)
                })?;
                Ok(open_archive(name, "tarfile", members))
            },
        )],
    );
    m.set(
        "ReadError",
        exc_class("ReadError", "tarfile", ExcKind::Exception).value(),
    );
    m
}

/// The module's error class (`BadZipFile`, `ReadError`) with `msg`.
fn bad(it: &mut dyn Interpreter, module: &str, msg: &str) -> Exc {
    let name = if module == "zipfile" {
        "BadZipFile"
    } else {
        "ReadError"
    };
    let class = match module_member(it, module, name) {
        Some(Value::Class(ref c)) => c.clone(),
        _ => exc_class(name, module, ExcKind::Exception),
    };
    raise(&class, msg.to_string())
}

/// One member: its name in the archive, and its bytes (None for a folder).
pub struct Member {
    pub name: String,
    pub data: Option<Vec<u8>>,
}

struct Archive {
    file: Rc<str>,
    kind: &'static str,
    members: Vec<Member>,
    closed: RefCell<bool>,
}

fn open_archive(file: Rc<str>, kind: &'static str, members: Vec<Member>) -> Value {
    Value::Object(Rc::new(Archive {
        file,
        kind,
        members,
        closed: RefCell::new(false),
    }))
}

fn u16_at(b: &[u8], i: usize) -> Option<usize> {
    Some(u16::from_le_bytes(b.get(i..i + 2)?.try_into().ok()?) as usize)
}

fn u32_at(b: &[u8], i: usize) -> Option<usize> {
    Some(u32::from_le_bytes(b.get(i..i + 4)?.try_into().ok()?) as usize)
}

/// The members of a ZIP file, through its central directory.
pub fn zip_members(b: &[u8]) -> Result<Vec<Member>, String> {
    let not_zip = || "File is not a zip file".to_string();
    let lowest = b.len().saturating_sub(22 + 65535);
    let eocd = (lowest..=b.len().saturating_sub(22))
        .rev()
        .find(|&i| b[i..].starts_with(&[0x50, 0x4b, 0x05, 0x06]))
        .ok_or_else(not_zip)?;
    let count = u16_at(b, eocd + 10).ok_or_else(not_zip)?;
    let mut at = u32_at(b, eocd + 16).ok_or_else(not_zip)?;
    if count == 0xffff || at == 0xffff_ffff {
        return Err("ZIP64 archives are not supported by devarray's zipfile".into());
    }
    let mut out = Vec::with_capacity(count);
    for _ in 0..count {
        let truncated = || "Truncated central directory".to_string();
        if !b
            .get(at..)
            .is_some_and(|s| s.starts_with(&[0x50, 0x4b, 0x01, 0x02]))
        {
            return Err("Bad magic number for central directory".into());
        }
        let method = u16_at(b, at + 10).ok_or_else(truncated)?;
        let crc = u32_at(b, at + 16).ok_or_else(truncated)? as u32;
        let comp_size = u32_at(b, at + 20).ok_or_else(truncated)?;
        let size = u32_at(b, at + 24).ok_or_else(truncated)?;
        let name_len = u16_at(b, at + 28).ok_or_else(truncated)?;
        let extra_len = u16_at(b, at + 30).ok_or_else(truncated)?;
        let comment_len = u16_at(b, at + 32).ok_or_else(truncated)?;
        let local = u32_at(b, at + 42).ok_or_else(truncated)?;
        let name_bytes = b.get(at + 46..at + 46 + name_len).ok_or_else(truncated)?;
        let name = String::from_utf8_lossy(name_bytes).into_owned();
        at += 46 + name_len + extra_len + comment_len;
        if name.ends_with('/') {
            out.push(Member { name, data: None });
            continue;
        }
        let bad_header = || format!("Bad magic number for file header of '{name}'");
        if !b
            .get(local..)
            .is_some_and(|s| s.starts_with(&[0x50, 0x4b, 0x03, 0x04]))
        {
            return Err(bad_header());
        }
        let start = local
            + 30
            + u16_at(b, local + 26).ok_or_else(bad_header)?
            + u16_at(b, local + 28).ok_or_else(bad_header)?;
        let raw = b
            .get(start..start + comp_size)
            .ok_or_else(|| format!("Truncated file data of '{name}'"))?;
        let data = match method {
            0 => raw.to_vec(),
            8 => {
                let mut d = Vec::with_capacity(size);
                flate2::read::DeflateDecoder::new(raw)
                    .read_to_end(&mut d)
                    .map_err(|e| format!("Error -3 while decompressing '{name}': {e}"))?;
                d
            }
            m => return Err(format!("That compression method is not supported ({m})")),
        };
        if crc32fast::hash(&data) != crc {
            return Err(format!("Bad CRC-32 for file '{name}'"));
        }
        out.push(Member {
            name,
            data: Some(data),
        });
    }
    Ok(out)
}

/// A ZIP file of these members (name, bytes), stored or deflated, dated 1980-01-01 00:00 (what
/// `np.savez` writes; CPython's `zipfile` and NumPy read it back).
pub fn zip_archive(members: &[(String, Vec<u8>)], deflate: bool) -> Vec<u8> {
    use std::io::Write;
    let mut out = Vec::new();
    let mut central = Vec::new();
    let u16le = |v: usize| (v as u16).to_le_bytes();
    let u32le = |v: usize| (v as u32).to_le_bytes();
    for (name, data) in members {
        let crc = crc32fast::hash(data);
        let packed = if deflate {
            let mut e =
                flate2::write::DeflateEncoder::new(Vec::new(), flate2::Compression::default());
            // Writing into a Vec cannot fail.
            let _ = e.write_all(data);
            e.finish().unwrap_or_default()
        } else {
            data.clone()
        };
        let method: usize = if deflate { 8 } else { 0 };
        let offset = out.len();
        // The version needed, flags, method, time, date (1980-01-01), CRC and sizes.
        let common = |buf: &mut Vec<u8>| {
            buf.extend(u16le(20));
            buf.extend(u16le(0));
            buf.extend(u16le(method));
            buf.extend(u16le(0));
            buf.extend(u16le(0x21));
            buf.extend(crc.to_le_bytes());
            buf.extend(u32le(packed.len()));
            buf.extend(u32le(data.len()));
            buf.extend(u16le(name.len()));
            buf.extend(u16le(0));
        };
        out.extend([0x50, 0x4b, 0x03, 0x04]);
        common(&mut out);
        out.extend(name.as_bytes());
        out.extend(&packed);
        central.extend([0x50, 0x4b, 0x01, 0x02]);
        central.extend(u16le(20));
        common(&mut central);
        central.extend(u16le(0));
        central.extend(u16le(0));
        central.extend(u16le(0));
        central.extend(u32le(0o600 << 16));
        central.extend(u32le(offset));
        central.extend(name.as_bytes());
    }
    let at = out.len();
    out.extend(&central);
    out.extend([0x50, 0x4b, 0x05, 0x06, 0, 0, 0, 0]);
    out.extend(u16le(members.len()));
    out.extend(u16le(members.len()));
    out.extend(u32le(central.len()));
    out.extend(u32le(at));
    out.extend(u16le(0));
    out
}

/// A NUL-terminated text field of a tar header.
fn field(h: &[u8]) -> String {
    let end = h.iter().position(|&c| c == 0).unwrap_or(h.len());
    String::from_utf8_lossy(&h[..end]).into_owned()
}

/// The members of an (uncompressed) tar file.
fn tar_members(b: &[u8]) -> Result<Vec<Member>, String> {
    let mut out = Vec::new();
    let mut at = 0;
    let mut long_name: Option<String> = None;
    if b.is_empty() {
        return Err("empty file".into());
    }
    if b.len() < 512 {
        return Err("truncated header".into());
    }
    while let Some(h) = b.get(at..at + 512) {
        if h.iter().all(|&c| c == 0) {
            break;
        }
        let sum: u32 = h
            .iter()
            .enumerate()
            .map(|(i, &c)| {
                if (148..156).contains(&i) {
                    32
                } else {
                    c as u32
                }
            })
            .sum();
        let stored = u32::from_str_radix(field(&h[148..156]).trim(), 8).ok();
        if stored != Some(sum) {
            // As CPython: a bad first header is an error, a later one ends the archive.
            if at == 0 {
                return Err("bad checksum".into());
            }
            break;
        }
        let size_text = field(&h[124..136]);
        let size = usize::from_str_radix(size_text.trim(), 8).map_err(|_| "invalid header")?;
        let data = b
            .get(at + 512..at + 512 + size)
            .ok_or("unexpected end of data")?;
        at += 512 + size.div_ceil(512) * 512;
        let kind = h[156];
        let mut name = field(&h[0..100]);
        let prefix = field(&h[345..500]);
        if h[257..262] == *b"ustar" && !prefix.is_empty() {
            name = format!("{prefix}/{name}");
        }
        match kind {
            b'L' => {
                long_name = Some(field(data));
                continue;
            }
            b'x' => {
                // pax records: "LEN key=value\n"; the path is what matters here.
                let text = String::from_utf8_lossy(data);
                for rec in text.split('\n') {
                    if let Some((_, kv)) = rec.split_once(' ') {
                        if let Some(p) = kv.strip_prefix("path=") {
                            long_name = Some(p.to_string());
                        }
                    }
                }
                continue;
            }
            b'g' => continue,
            _ => {}
        }
        if let Some(n) = long_name.take() {
            name = n;
        }
        match kind {
            b'0' | 0 | b'7' => out.push(Member {
                name,
                data: Some(data.to_vec()),
            }),
            b'5' => out.push(Member { name, data: None }),
            // Links, devices, FIFOs: not unpacked here.
            _ => {}
        }
    }
    Ok(out)
}

/// Where `name` goes under `root`, refused when it would leave it.
fn target(root: &Path, name: &str) -> Result<PathBuf, Exc> {
    let rel = Path::new(name);
    let escapes = rel
        .components()
        .any(|c| !matches!(c, Component::Normal(_) | Component::CurDir));
    if escapes {
        return Err(Exc::value_error(format!(
            "refusing to extract '{name}': its path leaves the target folder"
        )));
    }
    Ok(root.join(rel))
}

fn this(r: &Value) -> Result<&Archive, Exc> {
    downcast::<Archive>(r, "an archive")
}

impl Archive {
    fn check_open(&self) -> Result<(), Exc> {
        if *self.closed.borrow() {
            return Err(Exc::value_error(if self.kind == "zipfile" {
                "Attempt to use ZIP archive that was already closed"
            } else {
                "I/O operation on closed file"
            }));
        }
        Ok(())
    }

    fn extract_all(&self, root: &Path) -> Result<(), Exc> {
        self.check_open()?;
        for m in &self.members {
            let path = target(root, &m.name)?;
            let shown = path.display().to_string();
            match &m.data {
                None => std::fs::create_dir_all(&path).map_err(|e| os_error(&e, &shown))?,
                Some(d) => {
                    if let Some(parent) = path.parent() {
                        std::fs::create_dir_all(parent).map_err(|e| os_error(&e, &shown))?;
                    }
                    std::fs::write(&path, d).map_err(|e| os_error(&e, &shown))?;
                }
            }
        }
        Ok(())
    }
}

impl NativeObject for Archive {
    fn type_name(&self) -> &str {
        if self.kind == "zipfile" {
            "ZipFile"
        } else {
            "TarFile"
        }
    }
    fn repr(&self) -> String {
        if self.kind == "zipfile" {
            let state = if *self.closed.borrow() {
                " [closed]".to_string()
            } else {
                format!(" filename='{}' mode='r'", self.file)
            };
            format!("<zipfile.ZipFile{state}>")
        } else {
            "<tarfile.TarFile object>".to_string()
        }
    }
    fn get_attr(&self, this_: &Rc<dyn NativeObject>, name: &str) -> Option<Value> {
        let r = Value::Object(this_.clone());
        let (name, f): (&'static str, crate::object::value::MethodFn) = match name {
            "filename" if self.kind == "zipfile" => return Some(Value::Str(self.file.clone())),
            "name" if self.kind == "tarfile" => return Some(Value::Str(self.file.clone())),
            "namelist" | "getnames" => (
                if name == "namelist" {
                    "namelist"
                } else {
                    "getnames"
                },
                |_, r, a| {
                    a.finish(0)?;
                    let z = this(r)?;
                    // A closed ZipFile still lists its members (CPython keeps them).
                    if z.kind == "tarfile" && *z.closed.borrow() {
                        return Err(Exc::new(ExcKind::OSError, "TarFile is closed"));
                    }
                    let names = z
                        .members
                        .iter()
                        .map(|m| {
                            // tarfile names folders without their trailing slash.
                            let n = if z.kind == "tarfile" {
                                m.name.trim_end_matches('/')
                            } else {
                                &m.name
                            };
                            Value::str(n)
                        })
                        .collect();
                    Ok(Value::list(names))
                },
            ),
            "read" if self.kind == "zipfile" => ("read", |_, r, mut a| {
                let name = string(&a.required(0, "name")?, "name")?;
                a.take(1, "pwd")?;
                a.finish(2)?;
                let z = this(r)?;
                z.check_open()?;
                match z.members.iter().find(|m| *m.name == *name) {
                    Some(m) => Ok(Bytes::value(m.data.clone().unwrap_or_default())),
                    None => Err(Exc::new(
                        ExcKind::KeyError,
                        format!("\"There is no item named '{name}' in the archive\""),
                    )),
                }
            }),
            "extractall" => ("extractall", |_, r, mut a| {
                let path = match a.take(0, "path")? {
                    None | Some(Value::None) => ".".into(),
                    Some(v) => string(&v, "path")?,
                };
                a.take(1, "members")?;
                a.take_kw("pwd");
                a.take_kw("numeric_owner");
                a.take_kw("filter");
                a.finish(2)?;
                this(r)?.extract_all(Path::new(&*path))?;
                Ok(Value::None)
            }),
            "close" => ("close", |_, r, a| {
                a.finish(0)?;
                *this(r)?.closed.borrow_mut() = true;
                Ok(Value::None)
            }),
            _ => return None,
        };
        Some(method(&r, name, "a method of an open archive", f))
    }
    fn attr_names(&self) -> Vec<&'static str> {
        if self.kind == "zipfile" {
            vec!["close", "extractall", "filename", "namelist", "read"]
        } else {
            vec!["close", "extractall", "getnames", "name"]
        }
    }
    fn enter_value(
        &self,
        this: &Rc<dyn NativeObject>,
        _it: &mut dyn Interpreter,
    ) -> Result<Value, Exc> {
        Ok(Value::Object(this.clone()))
    }
    fn exit(&self, _it: &mut dyn Interpreter) -> Result<(), Exc> {
        *self.closed.borrow_mut() = true;
        Ok(())
    }
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}
