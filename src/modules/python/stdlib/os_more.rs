//! What `os` offers beyond `os.rs`'s files and folders, for the standard modules written in the
//! language (`pathlib`, `shutil`, `tempfile`, `uuid`): `fspath`, `stat`, `statvfs`, `urandom`,
//! `replace`, `os.path.islink`/`getmtime`/`samefile`/`lexists`.

use std::rc::Rc;

use super::os::{fspath, os_error};
use super::set_fns;
use crate::object::value::Module;
use crate::object::{Args, Exc, Interpreter, Value};

/// Adds these to `os`.
pub fn register(m: &Module) {
    register_fds(m);
    set_fns(
        m,
        &[
            (
                "fspath",
                "fspath(path): the str of a str or os.PathLike object (pathlib.Path).",
                |it, mut a| {
                    let v = a.required(0, "path")?;
                    a.finish(1)?;
                    if crate::modules::python::bytes::of(&v).is_some() {
                        return Ok(v);
                    }
                    Ok(Value::Str(path(it, &v)?))
                },
            ),
            (
                "stat",
                "stat(path): os.stat_result of the file.",
                |it, mut a| {
                    let p = path(it, &a.required(0, "path")?)?;
                    a.finish(1)?;
                    let md = std::fs::metadata(&*p).map_err(|e| os_error(&e, &p))?;
                    stat_result(it, &md)
                },
            ),
            (
                "statvfs",
                "statvfs(path): os.statvfs_result of the file system holding path.",
                statvfs,
            ),
            (
                "urandom",
                "urandom(size): size random bytes from the operating system.",
                |_, mut a| {
                    let n = super::int(&a.required(0, "size")?)?;
                    a.finish(1)?;
                    if n < 0 {
                        return Err(Exc::value_error("negative argument not allowed"));
                    }
                    let mut buf = vec![0u8; n as usize];
                    use std::io::Read;
                    std::fs::File::open("/dev/urandom")
                        .and_then(|mut f| f.read_exact(&mut buf))
                        .map_err(|e| os_error(&e, "/dev/urandom"))?;
                    Ok(crate::modules::python::bytes::Bytes::value(buf))
                },
            ),
            (
                "replace",
                "replace(src, dst): rename, replacing dst if it exists.",
                |it, mut a| {
                    let s = path(it, &a.required(0, "src")?)?;
                    let d = path(it, &a.required(1, "dst")?)?;
                    a.finish(2)?;
                    std::fs::rename(&*s, &*d).map_err(|e| os_error(&e, &s))?;
                    Ok(Value::None)
                },
            ),
        ],
    );
}

/// File descriptors: `os.open`/`close`/`read`/`write` and the `O_*` flags (what
/// `tempfile.mkstemp` gives and programs close).
pub fn register_fds(m: &Module) {
    for (name, v) in [
        ("O_RDONLY", libc::O_RDONLY),
        ("O_WRONLY", libc::O_WRONLY),
        ("O_RDWR", libc::O_RDWR),
        ("O_CREAT", libc::O_CREAT),
        ("O_EXCL", libc::O_EXCL),
        ("O_TRUNC", libc::O_TRUNC),
        ("O_APPEND", libc::O_APPEND),
    ] {
        m.set(name, Value::Int(v as i64));
    }
    set_fns(
        m,
        &[
            (
                "open",
                "open(path, flags, mode=0o777): a file descriptor (an int).",
                |it, mut a| {
                    let p = path(it, &a.required(0, "path")?)?;
                    let flags = super::int(&a.required(1, "flags")?)?;
                    let mode = a.take(2, "mode")?.map_or(Ok(0o777), |v| super::int(&v))?;
                    a.finish(3)?;
                    let c = std::ffi::CString::new(p.as_bytes())
                        .map_err(|_| Exc::value_error("embedded null byte"))?;
                    // SAFETY: a NUL-terminated path; the flags are the caller's.
                    let fd = unsafe {
                        libc::open(
                            c.as_ptr(),
                            (flags as i32) | libc::O_CLOEXEC,
                            mode as libc::c_uint,
                        )
                    };
                    if fd < 0 {
                        return Err(os_error(&std::io::Error::last_os_error(), &p));
                    }
                    Ok(Value::Int(fd as i64))
                },
            ),
            (
                "close",
                "close(fd): close a file descriptor.",
                |_, mut a| {
                    let fd = super::int(&a.required(0, "fd")?)?;
                    a.finish(1)?;
                    // SAFETY: closing a descriptor the program names; a bad one is EBADF.
                    if unsafe { libc::close(fd as i32) } != 0 {
                        return Err(fd_error());
                    }
                    Ok(Value::None)
                },
            ),
            (
                "write",
                "write(fd, data): write bytes to a file descriptor; the count written.",
                |_, mut a| {
                    let fd = super::int(&a.required(0, "fd")?)?;
                    let data = a.required(1, "data")?;
                    a.finish(2)?;
                    let bytes = crate::modules::python::bytes::of(&data)
                        .map(|b| b.to_vec())
                        .ok_or_else(|| {
                            Exc::type_error(format!(
                                "a bytes-like object is required, not '{}'",
                                data.type_name()
                            ))
                        })?;
                    // SAFETY: `bytes` outlives the call and its length is passed.
                    let n = unsafe { libc::write(fd as i32, bytes.as_ptr().cast(), bytes.len()) };
                    if n < 0 {
                        return Err(fd_error());
                    }
                    Ok(Value::Int(n as i64))
                },
            ),
            (
                "read",
                "read(fd, n): at most n bytes from a file descriptor.",
                |_, mut a| {
                    let fd = super::int(&a.required(0, "fd")?)?;
                    let n = super::int(&a.required(1, "length")?)?;
                    a.finish(2)?;
                    if n < 0 {
                        return Err(Exc::value_error("negative length"));
                    }
                    let mut buf = vec![0u8; n as usize];
                    // SAFETY: `buf` has room for n bytes.
                    let got = unsafe { libc::read(fd as i32, buf.as_mut_ptr().cast(), buf.len()) };
                    if got < 0 {
                        return Err(fd_error());
                    }
                    buf.truncate(got as usize);
                    Ok(crate::modules::python::bytes::Bytes::value(buf))
                },
            ),
        ],
    );
}

/// The OSError of a failed call on a descriptor (`[Errno 9] Bad file descriptor`).
fn fd_error() -> Exc {
    let e = std::io::Error::last_os_error();
    let text = e.to_string();
    let strerror = text.split(" (os error").next().unwrap_or(&text).to_string();
    Exc::new(
        crate::object::ExcKind::OSError,
        format!("[Errno {}] {strerror}", e.raw_os_error().unwrap_or(0)),
    )
}

/// Adds these to `os.path`.
pub fn register_path(m: &Module) {
    set_fns(
        m,
        &[
            (
                "islink",
                "islink(path): whether path is a symbolic link.",
                |it, a| {
                    test(it, a, |p| {
                        std::fs::symlink_metadata(p).is_ok_and(|m| m.file_type().is_symlink())
                    })
                },
            ),
            (
                "lexists",
                "lexists(path): whether path names something (a broken link too).",
                |it, a| test(it, a, |p| std::fs::symlink_metadata(p).is_ok()),
            ),
            (
                "getmtime",
                "getmtime(path): the time of last modification, in seconds since the epoch.",
                |it, mut a| {
                    let p = path(it, &a.required(0, "filename")?)?;
                    a.finish(1)?;
                    let md = std::fs::metadata(&*p).map_err(|e| os_error(&e, &p))?;
                    Ok(Value::Float(seconds(md.modified())))
                },
            ),
            (
                "samefile",
                "samefile(a, b): whether two paths name the same file.",
                |it, mut a| {
                    use std::os::unix::fs::MetadataExt;
                    let p = path(it, &a.required(0, "f1")?)?;
                    let q = path(it, &a.required(1, "f2")?)?;
                    a.finish(2)?;
                    let m1 = std::fs::metadata(&*p).map_err(|e| os_error(&e, &p))?;
                    let m2 = std::fs::metadata(&*q).map_err(|e| os_error(&e, &q))?;
                    Ok(Value::Bool(m1.dev() == m2.dev() && m1.ino() == m2.ino()))
                },
            ),
        ],
    );
}

/// A path argument: a str or `os.PathLike`, else CPython's TypeError.
fn path(it: &mut dyn Interpreter, v: &Value) -> Result<Rc<str>, Exc> {
    fspath(it, v)?.ok_or_else(|| {
        Exc::type_error(format!(
            "expected str, bytes or os.PathLike object, not {}",
            v.type_name()
        ))
    })
}

fn test(it: &mut dyn Interpreter, mut a: Args, f: fn(&str) -> bool) -> Result<Value, Exc> {
    let v = a.required(0, "path")?;
    a.finish(1)?;
    Ok(Value::Bool(fspath(it, &v)?.is_some_and(|p| f(&p))))
}

fn seconds(t: std::io::Result<std::time::SystemTime>) -> f64 {
    t.ok()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map_or(0.0, |d| d.as_secs_f64())
}

/// A named tuple of `module.name` with `fields`, made once per session and kept in the module.
fn record(
    it: &mut dyn Interpreter,
    module: &str,
    name: &str,
    fields: &str,
    values: Vec<Value>,
) -> Result<Value, Exc> {
    let class = match super::module_member(it, module, name) {
        Some(c @ Value::Class(_)) => c,
        _ => {
            let mut args = Args::new("namedtuple", vec![Value::str(name), Value::str(fields)]);
            args.kw.push((Rc::from("module"), Value::str(module)));
            let c = super::collections::namedtuple(it, args)?;
            if let Some(m) = it.state().modules.get(module) {
                m.set(name, c.clone());
            }
            c
        }
    };
    it.call_value(&class, Args::positional(values))
}

fn stat_result(it: &mut dyn Interpreter, md: &std::fs::Metadata) -> Result<Value, Exc> {
    use std::os::unix::fs::MetadataExt;
    let values = vec![
        Value::Int(md.mode() as i64),
        Value::Int(md.ino() as i64),
        Value::Int(md.dev() as i64),
        Value::Int(md.nlink() as i64),
        Value::Int(md.uid() as i64),
        Value::Int(md.gid() as i64),
        Value::Int(md.size() as i64),
        Value::Float(md.atime() as f64 + md.atime_nsec() as f64 * 1e-9),
        Value::Float(md.mtime() as f64 + md.mtime_nsec() as f64 * 1e-9),
        Value::Float(md.ctime() as f64 + md.ctime_nsec() as f64 * 1e-9),
    ];
    record(
        it,
        "os",
        "stat_result",
        "st_mode st_ino st_dev st_nlink st_uid st_gid st_size st_atime st_mtime st_ctime",
        values,
    )
}

fn statvfs(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let p = path(it, &a.required(0, "path")?)?;
    a.finish(1)?;
    let c =
        std::ffi::CString::new(p.as_bytes()).map_err(|_| Exc::value_error("embedded null byte"))?;
    // SAFETY: `c` is a NUL-terminated path and `st` a zeroed struct statvfs fills.
    let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
    if unsafe { libc::statvfs(c.as_ptr(), &mut st) } != 0 {
        return Err(os_error(&std::io::Error::last_os_error(), &p));
    }
    let values = [
        st.f_bsize as i64,
        st.f_frsize as i64,
        st.f_blocks as i64,
        st.f_bfree as i64,
        st.f_bavail as i64,
        st.f_files as i64,
        st.f_ffree as i64,
        st.f_favail as i64,
        st.f_flag as i64,
        st.f_namemax as i64,
    ]
    .into_iter()
    .map(Value::Int)
    .collect();
    record(
        it,
        "os",
        "statvfs_result",
        "f_bsize f_frsize f_blocks f_bfree f_bavail f_files f_ffree f_favail f_flag f_namemax",
        values,
    )
}
