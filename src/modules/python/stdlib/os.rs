//! `os` and `os.path` (POSIX paths, as CPython's `posixpath`): files and folders, the working
//! folder, and `environ`, a dict read from the process environment when `os` is imported.

use std::rc::Rc;

use super::{module, set_fns, string};
use crate::object::value::Module;
use crate::object::{Args, Exc, ExcKind, Interpreter, Value};

pub fn build() -> Rc<Module> {
    let m = module("os", "operating system interfaces");
    m.set("sep", Value::str("/"));
    m.set("linesep", Value::str("\n"));
    m.set("curdir", Value::str("."));
    m.set("pardir", Value::str(".."));
    m.set("name", Value::str("posix"));
    let mut env = crate::object::value::Dict::default();
    for (k, v) in std::env::vars_os() {
        let (k, v) = (k.to_string_lossy(), v.to_string_lossy());
        env.insert(
            crate::object::value::HashKey::Str(Rc::from(&*k)),
            Value::str(&k),
            Value::str(&v),
        );
    }
    m.set(
        "environ",
        Value::Dict(Rc::new(std::cell::RefCell::new(env))),
    );
    set_fns(
        &m,
        &[
            (
                "chdir",
                "chdir(path): make path the working folder (of the whole process).",
                |it, mut a| {
                    let p = path_arg(it, &mut a, 0, "path")?;
                    a.finish(1)?;
                    std::env::set_current_dir(&*p).map_err(|e| os_error(&e, &p))?;
                    Ok(Value::None)
                },
            ),
            ("getcwd", "getcwd(): the current working folder.", |_, a| {
                a.finish(0)?;
                let d = std::env::current_dir().map_err(|e| os_error(&e, "."))?;
                Ok(Value::str(&d.to_string_lossy()))
            }),
            (
                "getenv",
                "getenv(key, default=None): an environment variable, or default.",
                |_, mut a| {
                    let k = string(&a.required(0, "key")?, "str expected, not")?;
                    let d = a.take(1, "default")?.unwrap_or(Value::None);
                    a.finish(2)?;
                    Ok(std::env::var(&*k).map(|v| Value::str(&v)).unwrap_or(d))
                },
            ),
            (
                "listdir",
                "listdir(path='.'): the names in a folder.",
                listdir,
            ),
            (
                "makedirs",
                "makedirs(name, mode=0o777, exist_ok=False): a folder and its missing parents.",
                makedirs,
            ),
            ("mkdir", "mkdir(path, mode=0o777): a folder.", |it, mut a| {
                let p = path_arg(it, &mut a, 0, "path")?;
                a.take(1, "mode")?;
                a.finish(2)?;
                std::fs::create_dir(&*p).map_err(|e| os_error(&e, &p))?;
                Ok(Value::None)
            }),
            ("walk", "walk(top, topdown=True): (dirpath, dirnames, filenames) for top and every folder below, drawn lazily; removing names from dirnames prunes the walk.", walk),
            ("remove", "remove(path): delete a file.", remove),
            ("unlink", "unlink(path): delete a file.", remove),
            (
                "rmdir",
                "rmdir(path): delete an empty folder.",
                |it, mut a| {
                    let p = path_arg(it, &mut a, 0, "path")?;
                    a.finish(1)?;
                    std::fs::remove_dir(&*p).map_err(|e| os_error(&e, &p))?;
                    Ok(Value::None)
                },
            ),
            (
                "rename",
                "rename(src, dst): move a file or folder.",
                |it, mut a| {
                    let s = path_arg(it, &mut a, 0, "src")?;
                    let d = path_arg(it, &mut a, 1, "dst")?;
                    a.finish(2)?;
                    std::fs::rename(&*s, &*d).map_err(|e| {
                        let mut x = os_error(&e, &s);
                        x.message = format!("{} -> '{d}'", x.message);
                        x
                    })?;
                    Ok(Value::None)
                },
            ),
            (
                "cpu_count",
                "cpu_count(): the number of logical CPUs.",
                |_, a| {
                    a.finish(0)?;
                    Ok(Value::Int(
                        std::thread::available_parallelism().map_or(1, |n| n.get()) as i64,
                    ))
                },
            ),
            ("getpid", "getpid(): this process's id.", |_, a| {
                a.finish(0)?;
                Ok(Value::Int(std::process::id() as i64))
            }),
        ],
    );
    m.set("path", Value::Module(build_path()));
    super::os_more::register(&m);
    m
}

pub fn build_path() -> Rc<Module> {
    let m = module("os.path", "POSIX pathname functions");
    m.set("sep", Value::str("/"));
    set_fns(
        &m,
        &[
            (
                "join",
                "join(a, *p): join path components, a later absolute one restarting.",
                |it, a| {
                    a.finish(usize::MAX)?;
                    if a.pos.is_empty() {
                        return Err(Exc::type_error(
                            "join() missing 1 required positional argument: 'a'",
                        ));
                    }
                    let mut out = String::new();
                    for (i, p) in a.pos.iter().enumerate() {
                        let p = path_str(it, p, "join")?;
                        if p.starts_with('/') {
                            out = p.to_string();
                        } else if i == 0 || out.is_empty() || out.ends_with('/') {
                            out.push_str(&p);
                        } else {
                            out.push('/');
                            out.push_str(&p);
                        }
                    }
                    Ok(Value::str(&out))
                },
            ),
            (
                "exists",
                "exists(path): whether the path names something.",
                |it, a| test_path(it, a, |m| m.is_ok()),
            ),
            (
                "isfile",
                "isfile(path): whether the path is a regular file.",
                |it, a| test_path(it, a, |m| m.as_ref().is_ok_and(|m| m.is_file())),
            ),
            (
                "isdir",
                "isdir(path): whether the path is a folder.",
                |it, a| test_path(it, a, |m| m.as_ref().is_ok_and(|m| m.is_dir())),
            ),
            (
                "isabs",
                "isabs(path): whether the path starts at the root.",
                |it, mut a| {
                    let p = path_arg(it, &mut a, 0, "s")?;
                    a.finish(1)?;
                    Ok(Value::Bool(p.starts_with('/')))
                },
            ),
            (
                "getsize",
                "getsize(path): the file's size in bytes.",
                |it, mut a| {
                    let p = path_arg(it, &mut a, 0, "filename")?;
                    a.finish(1)?;
                    let m = std::fs::metadata(&*p).map_err(|e| os_error(&e, &p))?;
                    Ok(Value::Int(m.len() as i64))
                },
            ),
            (
                "basename",
                "basename(p): the final component.",
                |it, mut a| {
                    let p = path_arg(it, &mut a, 0, "p")?;
                    a.finish(1)?;
                    Ok(Value::str(split(&p).1))
                },
            ),
            (
                "dirname",
                "dirname(p): everything but the final component.",
                |it, mut a| {
                    let p = path_arg(it, &mut a, 0, "p")?;
                    a.finish(1)?;
                    Ok(Value::str(&split(&p).0))
                },
            ),
            ("split", "split(p): (dirname, basename).", |it, mut a| {
                let p = path_arg(it, &mut a, 0, "p")?;
                a.finish(1)?;
                let (h, t) = split(&p);
                Ok(Value::tuple(vec![Value::str(&h), Value::str(t)]))
            }),
            (
                "splitext",
                "splitext(p): (root, extension); a leading dot is no extension.",
                |it, mut a| {
                    let p = path_arg(it, &mut a, 0, "p")?;
                    a.finish(1)?;
                    let (root, ext) = splitext(&p);
                    Ok(Value::tuple(vec![Value::str(root), Value::str(ext)]))
                },
            ),
            (
                "normpath",
                "normpath(path): the path without redundant separators and up-level references.",
                |it, mut a| {
                    let p = path_arg(it, &mut a, 0, "path")?;
                    a.finish(1)?;
                    Ok(Value::str(&normpath(&p)))
                },
            ),
            (
                "abspath",
                "abspath(path): the absolute, normalised path.",
                abspath,
            ),
            (
                "realpath",
                "realpath(path): the absolute path (links resolved where they exist).",
                |it, a| {
                    let p = abspath(it, a)?;
                    let Value::Str(s) = &p else { return Ok(p) };
                    Ok(std::fs::canonicalize(&**s)
                        .map(|c| Value::str(&c.to_string_lossy()))
                        .unwrap_or(p))
                },
            ),
            (
                "expanduser",
                "expanduser(path): a leading ~ replaced by the home folder.",
                |it, mut a| {
                    let p = path_arg(it, &mut a, 0, "path")?;
                    a.finish(1)?;
                    if p.as_ref() == "~" || p.starts_with("~/") {
                        if let Ok(home) = std::env::var("HOME") {
                            let home = home.trim_end_matches('/');
                            let home = if home.is_empty() { "/" } else { home };
                            let rest = &p[1..];
                            let joined = if home == "/" && rest.starts_with('/') {
                                rest.to_string()
                            } else {
                                format!("{home}{rest}")
                            };
                            return Ok(Value::str(&joined));
                        }
                    }
                    Ok(Value::Str(p))
                },
            ),
        ],
    );
    super::os_more::register_path(&m);
    m
}

/// `OSError` in CPython's words: `[Errno 2] No such file or directory: 'x'`, of the subclass
/// the errno names.
pub(crate) fn os_error(e: &std::io::Error, path: &str) -> Exc {
    let text = e.to_string();
    let strerror = text.split(" (os error").next().unwrap_or(&text).to_string();
    let msg = match e.raw_os_error() {
        Some(n) => format!("[Errno {n}] {strerror}: '{path}'"),
        None => format!("{strerror}: '{path}'"),
    };
    let sub = match e.raw_os_error() {
        Some(libc::ENOENT) => return Exc::new(ExcKind::FileNotFoundError, msg),
        Some(libc::EEXIST) => "FileExistsError",
        Some(libc::EISDIR) => "IsADirectoryError",
        Some(libc::ENOTDIR) => "NotADirectoryError",
        Some(libc::EACCES) | Some(libc::EPERM) => "PermissionError",
        _ => return Exc::new(ExcKind::OSError, msg),
    };
    super::raise(&super::exc_class(sub, "builtins", ExcKind::OSError), msg)
}

/// The path an object stands for, by `os.PathLike`'s protocol (`__fspath__`, what
/// `pathlib.Path` has); None for an object without one. Every function that takes a file name
/// reads it through here (`open`, `os.*`, `np.save`, `torch.save`).
pub(crate) fn fspath(it: &mut dyn Interpreter, v: &Value) -> Result<Option<Rc<str>>, Exc> {
    match v {
        Value::Str(s) => Ok(Some(s.clone())),
        Value::Instance(_) => {
            let Ok(method) = it.get_attr(v, "__fspath__") else {
                return Ok(None);
            };
            match &it.call_value(&method, Args::positional(vec![]))? {
                Value::Str(s) => Ok(Some(s.clone())),
                other => Err(Exc::type_error(format!(
                    "expected {}.__fspath__() to return str or bytes, not {}",
                    v.type_name(),
                    other.type_name()
                ))),
            }
        }
        _ => Ok(None),
    }
}

/// A file-name argument as a string: a str or an `os.PathLike` object.
pub(crate) fn fspath_arg(it: &mut dyn Interpreter, v: &Value) -> Result<Value, Exc> {
    Ok(match fspath(it, v)? {
        Some(s) => Value::Str(s),
        None => v.clone(),
    })
}

fn path_str(it: &mut dyn Interpreter, v: &Value, fname: &str) -> Result<Rc<str>, Exc> {
    if let Some(s) = fspath(it, v)? {
        return Ok(s);
    }
    match v {
        Value::Str(s) => Ok(s.clone()),
        other if fname == "join" => Err(Exc::type_error(format!(
            "join() argument must be str, bytes, or os.PathLike object, not '{}'",
            other.type_name()
        ))),
        other => Err(Exc::type_error(format!(
            "expected str, bytes or os.PathLike object, not {}",
            other.type_name()
        ))),
    }
}

fn path_arg(it: &mut dyn Interpreter, a: &mut Args, i: usize, name: &str) -> Result<Rc<str>, Exc> {
    let v = a.required(i, name)?;
    path_str(it, &v, a.fname)
}

fn test_path(
    it: &mut dyn Interpreter,
    mut a: Args,
    f: fn(&std::io::Result<std::fs::Metadata>) -> bool,
) -> Result<Value, Exc> {
    let v = a.required(0, "path")?;
    let v = fspath_arg(it, &v)?;
    a.finish(1)?;
    // Like CPython, a path that is not a string is simply not there.
    let Value::Str(ref p) = v else {
        return Ok(Value::Bool(false));
    };
    Ok(Value::Bool(f(&std::fs::metadata(&**p))))
}

fn split(p: &str) -> (String, &str) {
    let i = p.rfind('/').map_or(0, |i| i + 1);
    let (head, tail) = p.split_at(i);
    let trimmed = head.trim_end_matches('/');
    let head = if trimmed.is_empty() { head } else { trimmed };
    (head.to_string(), tail)
}

fn splitext(p: &str) -> (&str, &str) {
    let base_start = p.rfind('/').map_or(0, |i| i + 1);
    let Some(dot) = p.rfind('.') else {
        return (p, "");
    };
    if dot < base_start {
        return (p, "");
    }
    // Dots leading the base name do not start an extension (`.bashrc`).
    if p[base_start..dot].chars().all(|c| c == '.') {
        return (p, "");
    }
    p.split_at(dot)
}

fn normpath(p: &str) -> String {
    if p.is_empty() {
        return ".".into();
    }
    let initial = if p.starts_with("//") && !p.starts_with("///") {
        2
    } else if p.starts_with('/') {
        1
    } else {
        0
    };
    let mut parts: Vec<&str> = Vec::new();
    for c in p.split('/') {
        if c.is_empty() || c == "." {
            continue;
        }
        if c != ".." || (initial == 0 && parts.is_empty()) || parts.last() == Some(&"..") {
            parts.push(c);
        } else if !parts.is_empty() {
            parts.pop();
        }
    }
    let out = format!("{}{}", "/".repeat(initial), parts.join("/"));
    if out.is_empty() {
        ".".into()
    } else {
        out
    }
}

fn abspath(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let p = path_arg(it, &mut a, 0, "path")?;
    a.finish(1)?;
    let full = if p.starts_with('/') {
        p.to_string()
    } else {
        let cwd = std::env::current_dir().map_err(|e| os_error(&e, "."))?;
        format!("{}/{p}", cwd.to_string_lossy())
    };
    Ok(Value::str(&normpath(&full)))
}

fn listdir(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let p = match a.take(0, "path")? {
        None | Some(Value::None) => Rc::from("."),
        Some(v) => path_str(it, &v, "listdir")?,
    };
    a.finish(1)?;
    let rd = std::fs::read_dir(&*p).map_err(|e| os_error(&e, &p))?;
    let mut names = Vec::new();
    for e in rd {
        let e = e.map_err(|e| os_error(&e, &p))?;
        names.push(Value::str(&e.file_name().to_string_lossy()));
    }
    Ok(Value::list(names))
}

fn makedirs(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let p = path_arg(it, &mut a, 0, "name")?;
    a.take(1, "mode")?;
    let exist_ok = match a.take(2, "exist_ok")? {
        Some(v) => v.truthy()?,
        None => false,
    };
    a.finish(3)?;
    if std::path::Path::new(&*p).exists() {
        if exist_ok && std::path::Path::new(&*p).is_dir() {
            return Ok(Value::None);
        }
        let e = std::io::Error::from_raw_os_error(libc::EEXIST);
        return Err(os_error(&e, &p));
    }
    std::fs::create_dir_all(&*p).map_err(|e| os_error(&e, &p))?;
    Ok(Value::None)
}

fn remove(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let p = path_arg(it, &mut a, 0, "path")?;
    a.finish(1)?;
    if std::path::Path::new(&*p).is_dir() {
        let e = std::io::Error::from_raw_os_error(libc::EISDIR);
        return Err(os_error(&e, &p));
    }
    std::fs::remove_file(&*p).map_err(|e| os_error(&e, &p))?;
    Ok(Value::None)
}

fn walk(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let top = path_arg(it, &mut a, 0, "top")?;
    let topdown = a.flag(1, "topdown", true)?;
    a.take(2, "onerror")?;
    let followlinks = a.flag(3, "followlinks", false)?;
    a.finish(4)?;
    if !topdown {
        // Bottom-up: every folder after its children, gathered first.
        let mut out = Vec::new();
        walk_bottom_up(&top, followlinks, &mut out, 0);
        let mut items = out.into_iter();
        return Ok(super::itertools::lazy(
            "generator",
            Box::new(move |_| Ok(items.next())),
        ));
    }
    let mut stack: Vec<String> = vec![top.to_string()];
    // The folder yielded last and its dirnames list, expanded on the next draw so the caller
    // can prune it first (as CPython's top-down walk allows).
    let mut pending: Option<(String, Value)> = None;
    Ok(super::itertools::lazy(
        "generator",
        Box::new(move |_| {
            if let Some((dir, Value::List(ref l))) = pending.take() {
                for n in l.borrow().iter().rev() {
                    if let Value::Str(n) = n {
                        let child = join2(&dir, n);
                        let link = std::fs::symlink_metadata(&child)
                            .is_ok_and(|m| m.file_type().is_symlink());
                        if followlinks || !link {
                            stack.push(child);
                        }
                    }
                }
            }
            while let Some(dir) = stack.pop() {
                let Some((dirs, files)) = scan(&dir) else {
                    continue;
                };
                let dirs = Value::list(dirs.iter().map(|d| Value::str(d)).collect());
                let files = Value::list(files.iter().map(|f| Value::str(f)).collect());
                pending = Some((dir.clone(), dirs.clone()));
                return Ok(Some(Value::tuple(vec![Value::str(&dir), dirs, files])));
            }
            Ok(None)
        }),
    ))
}

fn join2(dir: &str, name: &str) -> String {
    if dir.ends_with('/') {
        format!("{dir}{name}")
    } else {
        format!("{dir}/{name}")
    }
}

/// The folder's subfolders and other entries, in the system's order; None if unreadable.
fn scan(dir: &str) -> Option<(Vec<String>, Vec<String>)> {
    let rd = std::fs::read_dir(dir).ok()?;
    let (mut dirs, mut files) = (Vec::new(), Vec::new());
    for e in rd.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        // A link to a folder is listed with the folders (not followed unless asked), as CPython.
        let is_dir = std::fs::metadata(e.path()).is_ok_and(|m| m.is_dir());
        if is_dir {
            dirs.push(name);
        } else {
            files.push(name);
        }
    }
    Some((dirs, files))
}

/// Deeper than this, a walk is taken to be a cycle of links.
const MAX_WALK_DEPTH: usize = 512;

fn walk_bottom_up(dir: &str, followlinks: bool, out: &mut Vec<Value>, depth: usize) {
    if depth > MAX_WALK_DEPTH {
        return;
    }
    let Some((dirs, files)) = scan(dir) else {
        return;
    };
    for d in &dirs {
        let child = join2(dir, d);
        let link = std::fs::symlink_metadata(&child).is_ok_and(|m| m.file_type().is_symlink());
        if followlinks || !link {
            walk_bottom_up(&child, followlinks, out, depth + 1);
        }
    }
    out.push(Value::tuple(vec![
        Value::str(dir),
        Value::list(dirs.iter().map(|d| Value::str(d)).collect()),
        Value::list(files.iter().map(|f| Value::str(f)).collect()),
    ]));
}
