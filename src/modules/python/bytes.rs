//! `bytes`, as CPython has it: literals (`b"..."`, made by the interpreter), what a file opened
//! with `'rb'` reads, what `str.encode`, `hashlib`'s `digest()` and a command's output give.
//! Immutable; indexing gives ints, slicing bytes; `+`, `*`, ordering, hashing by value, `in`, and
//! the common methods, each with CPython's errors. `bytearray` is the same object, mutable: the
//! methods are written once over the bytes and give back the kind they were called on
//! (`bytearray.upper()` is a bytearray), and a bytearray adds item and slice assignment,
//! `append`/`extend`/`pop`/`insert`/`remove`/`reverse`/`clear`/`copy` and `+=` in place.

use std::cell::{OnceCell, Ref, RefCell};
use std::rc::Rc;

use crate::lang::ast::BinOp;
use crate::modules::python::native::{bound, downcast};
use crate::object::class::{as_slice, Class};
use crate::object::ops::{as_i64, slice_indices};
use crate::object::value::{Args, HashKey, MethodFn, NativeObject, TypeKind};
use crate::object::{Exc, ExcKind, Interpreter, Value};

/// A `bytes` object, or a `bytearray` when `mutable`.
pub struct Bytes {
    data: RefCell<Vec<u8>>,
    mutable: bool,
}

impl Bytes {
    pub fn value(bytes: Vec<u8>) -> Value {
        crate::modules::python::native::object(Bytes {
            data: RefCell::new(bytes),
            mutable: false,
        })
    }
    pub fn bytearray(bytes: Vec<u8>) -> Value {
        crate::modules::python::native::object(Bytes {
            data: RefCell::new(bytes),
            mutable: true,
        })
    }
    fn of_kind(mutable: bool, bytes: Vec<u8>) -> Value {
        if mutable {
            Bytes::bytearray(bytes)
        } else {
            Bytes::value(bytes)
        }
    }
}

/// The `Bytes` object `v` is (bytes or bytearray).
fn object_of(v: &Value) -> Option<&Bytes> {
    match v {
        Value::Object(o) => o.as_any().downcast_ref::<Bytes>(),
        _ => None,
    }
}

/// The bytes of `v` when it is a `bytes` or `bytearray` object (a bytes-like object).
pub fn of(v: &Value) -> Option<Ref<'_, [u8]>> {
    object_of(v).map(|b| Ref::map(b.data.borrow(), |d| d.as_slice()))
}

/// A new object of the kind `this` is (bytes or bytearray) holding `bytes`.
fn make(this: &Value, bytes: Vec<u8>) -> Value {
    Bytes::of_kind(object_of(this).is_some_and(|b| b.mutable), bytes)
}

thread_local! {
    static CLASS: OnceCell<Rc<Class>> = const { OnceCell::new() };
    static BYTEARRAY_CLASS: OnceCell<Rc<Class>> = const { OnceCell::new() };
    /// `UnicodeError` and its `UnicodeDecodeError` and `UnicodeEncodeError`, built once so
    /// that `except UnicodeDecodeError` matches what `decode` raises.
    static UNICODE_ERRORS: OnceCell<[Rc<Class>; 3]> = const { OnceCell::new() };
}

/// `UnicodeError`, `UnicodeDecodeError`, `UnicodeEncodeError` (CPython's hierarchy under
/// `ValueError`).
pub fn unicode_errors() -> [Rc<Class>; 3] {
    use crate::modules::python::stdlib::{exc_class, native_class};
    UNICODE_ERRORS.with(|c| {
        c.get_or_init(|| {
            let base = exc_class("UnicodeError", "builtins", ExcKind::ValueError);
            let sub = |name| native_class(name, "builtins", Value::Class(base.clone()), "", &[]);
            let (decode, encode) = (sub("UnicodeDecodeError"), sub("UnicodeEncodeError"));
            [base, decode, encode]
        })
        .clone()
    })
}

/// The `bytes` class: `bytes(...)` makes one, `bytes.fromhex(...)` parses hexadecimal.
pub fn class() -> Rc<Class> {
    CLASS.with(|c| {
        c.get_or_init(|| {
            crate::modules::python::stdlib::native_class(
                "bytes",
                "builtins",
                Value::Type(TypeKind::Object),
                "bytes(iterable_of_ints) -> bytes\nbytes(string, encoding[, errors]) -> bytes\nbytes(int) -> bytes object of size given by the parameter initialized with null bytes\nbytes() -> empty bytes object",
                &[("__new__", new), ("fromhex", fromhex)],
            )
        })
        .clone()
    })
}

/// The `bytearray` class: `bytearray(...)`, `bytearray.fromhex(...)`.
pub fn bytearray_class() -> Rc<Class> {
    BYTEARRAY_CLASS.with(|c| {
        c.get_or_init(|| {
            crate::modules::python::stdlib::native_class(
                "bytearray",
                "builtins",
                Value::Type(TypeKind::Object),
                "bytearray(iterable_of_ints) -> bytearray\nbytearray(string, encoding[, errors]) -> bytearray\nbytearray(bytes_or_buffer) -> mutable copy of bytes_or_buffer\nbytearray(int) -> bytes array of size given by the parameter initialized with null bytes\nbytearray() -> empty bytes array",
                &[
                    ("__new__", |it, a| new_of(it, a, true)),
                    ("fromhex", |it, a| {
                        let b = fromhex(it, a)?;
                        Ok(Bytes::bytearray(of(&b).map(|d| d.to_vec()).unwrap_or_default()))
                    }),
                ],
            )
        })
        .clone()
    })
}

/// `bytes()`, `bytes(n)`, `bytes(iterable_of_ints)`, `bytes(bytes)`, `bytes(str, encoding)`.
fn new(it: &mut dyn Interpreter, a: Args) -> Result<Value, Exc> {
    new_of(it, a, false)
}

/// `bytes(...)` or, when `mutable`, `bytearray(...)`: the same forms.
fn new_of(it: &mut dyn Interpreter, mut a: Args, mutable: bool) -> Result<Value, Exc> {
    let kind = if mutable { "bytearray" } else { "bytes" };
    let source = a.take(0, "source")?;
    let encoding = a.take(1, "encoding")?;
    a.take(2, "errors")?;
    a.finish(3)?;
    let Some(source) = source else {
        return Ok(Bytes::of_kind(mutable, Vec::new()));
    };
    if let Value::Str(s) = &source {
        let Some(enc) = encoding else {
            return Err(Exc::type_error("string argument without an encoding"));
        };
        let enc = match &enc {
            Value::Str(e) => e.clone(),
            other => {
                return Err(Exc::type_error(format!(
                    "{kind}() argument 'encoding' must be str, not {}",
                    other.type_name()
                )))
            }
        };
        return Ok(Bytes::of_kind(mutable, encode(s, &enc)?));
    }
    if encoding.is_some() {
        return Err(Exc::type_error("encoding without a string argument"));
    }
    if let Some(b) = of(&source).map(|b| b.to_vec()) {
        return Ok(Bytes::of_kind(mutable, b));
    }
    match &source {
        Value::Int(n) => {
            let n = usize::try_from(*n).map_err(|_| Exc::value_error("negative count"))?;
            let mut out = crate::object::alloc::vec(n)?;
            out.resize(n, 0);
            Ok(Bytes::of_kind(mutable, out))
        }
        Value::Bool(b) => Ok(Bytes::of_kind(mutable, vec![0; *b as usize])),
        Value::Float(_) | Value::None => Err(Exc::type_error(format!(
            "cannot convert '{}' object to {kind}",
            source.type_name()
        ))),
        _ => {
            let items = it.iterate(&source).map_err(|e| match e.kind {
                ExcKind::TypeError => Exc::type_error(format!(
                    "cannot convert '{}' object to {kind}",
                    source.type_name()
                )),
                _ => e,
            })?;
            let mut out = Vec::with_capacity(items.len());
            for v in &items {
                let n = as_i64(v).ok_or_else(|| not_integer(v))?;
                out.push(u8::try_from(n).map_err(|_| {
                    Exc::value_error(if mutable {
                        "byte must be in range(0, 256)"
                    } else {
                        "bytes must be in range(0, 256)"
                    })
                })?);
            }
            Ok(Bytes::of_kind(mutable, out))
        }
    }
}

/// `s.encode(encoding)`: UTF-8, ASCII and Latin-1, with CPython's errors.
pub fn encode(s: &str, encoding: &str) -> Result<Vec<u8>, Exc> {
    let encode_error = |codec: &str, i: usize, c: char, limit: u32| {
        crate::modules::python::stdlib::raise(
            &unicode_errors()[2],
            format!(
                "'{codec}' codec can't encode character '\\x{:02x}' in position {i}: ordinal not in range({limit})",
                c as u32
            ),
        )
    };
    match encoding.to_lowercase().replace('_', "-").as_str() {
        "utf-8" | "utf8" => Ok(s.as_bytes().to_vec()),
        "ascii" => match s.chars().enumerate().find(|(_, c)| !c.is_ascii()) {
            Some((i, c)) => Err(encode_error("ascii", i, c, 128)),
            None => Ok(s.as_bytes().to_vec()),
        },
        "latin-1" | "latin1" | "iso-8859-1" => s
            .chars()
            .enumerate()
            .map(|(i, c)| u8::try_from(c as u32).map_err(|_| encode_error("latin-1", i, c, 256)))
            .collect(),
        other => Err(Exc::new(
            ExcKind::LookupError,
            format!("unknown encoding: {other} (devarray encodes utf-8, ascii and latin-1)"),
        )),
    }
}

fn not_integer(v: &Value) -> Exc {
    Exc::type_error(format!(
        "'{}' object cannot be interpreted as an integer",
        v.type_name()
    ))
}

/// `bytes.fromhex('00ab 5a')`: pairs of hexadecimal digits, spaces between pairs allowed.
fn fromhex(_: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let s = a.required(0, "string")?;
    a.finish(1)?;
    let Value::Str(s) = &s else {
        return Err(Exc::type_error(format!(
            "fromhex() argument must be str, not {}",
            s.type_name()
        )));
    };
    let chars: Vec<char> = s.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        if chars[i].is_ascii_whitespace() {
            i += 1;
            continue;
        }
        let bad = |at: usize| {
            Exc::value_error(format!(
                "non-hexadecimal number found in fromhex() arg at position {at}"
            ))
        };
        let hi = chars[i].to_digit(16).ok_or_else(|| bad(i))?;
        let lo = chars
            .get(i + 1)
            .and_then(|c| c.to_digit(16))
            .ok_or_else(|| bad(i + 1))?;
        out.push((hi * 16 + lo) as u8);
        i += 2;
    }
    Ok(Bytes::value(out))
}

/// A `bytes` argument of a method, with CPython's error naming what was passed.
fn bytes_arg(v: &Value) -> Result<Vec<u8>, Exc> {
    of(v).map(|b| b.to_vec()).ok_or_else(|| {
        Exc::type_error(format!(
            "a bytes-like object is required, not '{}'",
            v.type_name()
        ))
    })
}

/// What `find`/`index`/`count` look for: a byte (an int) or a bytes object.
fn needle(v: &Value) -> Result<Vec<u8>, Exc> {
    if let Some(b) = of(v).map(|b| b.to_vec()) {
        return Ok(b);
    }
    match as_i64(v) {
        Some(n) => {
            Ok(vec![u8::try_from(n).map_err(|_| {
                Exc::value_error("byte must be in range(0, 256)")
            })?])
        }
        None => Err(Exc::type_error(format!(
            "argument should be integer or bytes-like object, not '{}'",
            v.type_name()
        ))),
    }
}

/// The byte range `[start:end]` of a method's optional bounds, resolved as a slice.
fn bounds(len: usize, a: &mut Args, at: usize) -> Result<(usize, usize), Exc> {
    let start = a.take(at, "start")?;
    let end = a.take(at + 1, "end")?;
    let (s, e, _) = slice_indices(len as i64, &start, &end, &None)?;
    Ok((s as usize, (e.max(s)) as usize))
}

fn find_in(hay: &[u8], pat: &[u8], from_right: bool) -> Option<usize> {
    if pat.len() > hay.len() {
        return None;
    }
    let mut positions = 0..=hay.len() - pat.len();
    let matches = |&i: &usize| &hay[i..i + pat.len()] == pat;
    if from_right {
        positions.rev().find(matches)
    } else {
        positions.find(matches)
    }
}

fn is_space(c: u8) -> bool {
    matches!(c, b' ' | b'\t' | b'\n' | b'\r' | 0x0b | 0x0c)
}

fn this_bytes(this: &Value) -> Result<Ref<'_, [u8]>, Exc> {
    let b = downcast::<Bytes>(this, "bytes")?;
    Ok(Ref::map(b.data.borrow(), |d| d.as_slice()))
}

fn decode(_: &mut dyn Interpreter, this: &Value, mut a: Args) -> Result<Value, Exc> {
    let enc = a.take(0, "encoding")?;
    a.take(1, "errors")?;
    a.finish(2)?;
    let guard = this_bytes(this)?;
    let b: &[u8] = &guard;
    let enc = match &enc {
        None => "utf-8".to_string(),
        Some(Value::Str(s)) => s.to_lowercase().replace('_', "-"),
        Some(other) => {
            return Err(Exc::type_error(format!(
                "decode() argument 'encoding' must be str, not {}",
                other.type_name()
            )))
        }
    };
    let decode_error = |codec: &str, at: usize, why: &str| {
        crate::modules::python::stdlib::raise(
            &unicode_errors()[1],
            format!(
                "'{codec}' codec can't decode byte 0x{:02x} in position {at}: {why}",
                b[at]
            ),
        )
    };
    match enc.as_str() {
        "utf-8" | "utf8" => match std::str::from_utf8(b) {
            Ok(s) => Ok(Value::str(s)),
            Err(e) => {
                let at = e.valid_up_to();
                let why = match (e.error_len(), b[at]) {
                    (None, _) => "unexpected end of data",
                    (_, 0x80..=0xbf) | (_, 0xf8..) => "invalid start byte",
                    _ => "invalid continuation byte",
                };
                Err(decode_error("utf-8", at, why))
            }
        },
        "ascii" => match b.iter().position(|c| !c.is_ascii()) {
            Some(at) => Err(decode_error("ascii", at, "ordinal not in range(128)")),
            None => Ok(Value::str(std::str::from_utf8(b).unwrap_or(""))),
        },
        "latin-1" | "latin1" | "iso-8859-1" => Ok(Value::str(
            &b.iter().map(|&c| c as char).collect::<String>(),
        )),
        other => Err(Exc::new(
            ExcKind::LookupError,
            format!("unknown encoding: {other} (devarray decodes utf-8, ascii and latin-1)"),
        )),
    }
}

fn affix(this: &Value, mut a: Args, name: &str, end: bool) -> Result<Value, Exc> {
    let pat = a.required(0, "prefix")?;
    let guard = this_bytes(this)?;
    let b: &[u8] = &guard;
    let (s, e) = bounds(b.len(), &mut a, 1)?;
    a.finish(3)?;
    let part = &b[s..e];
    let options: Vec<Value> = match &pat {
        Value::Tuple(items) => items.to_vec(),
        other => vec![other.clone()],
    };
    for p in &options {
        let Some(p) = of(p) else {
            return Err(Exc::type_error(format!(
                "{name} first arg must be bytes or a tuple of bytes, not {}",
                p.type_name()
            )));
        };
        if (end && part.ends_with(&p)) || (!end && part.starts_with(&p)) {
            return Ok(Value::Bool(true));
        }
    }
    Ok(Value::Bool(false))
}

fn split(_: &mut dyn Interpreter, this: &Value, mut a: Args) -> Result<Value, Exc> {
    let sep = a.take(0, "sep")?;
    let maxsplit = a.take(1, "maxsplit")?;
    a.finish(2)?;
    let guard = this_bytes(this)?;
    let b: &[u8] = &guard;
    let max = match &maxsplit {
        None => -1,
        Some(v) => as_i64(v).ok_or_else(|| not_integer(v))?,
    };
    let mut out = Vec::new();
    let limit = |n: usize| max < 0 || (n as i64) < max;
    match &sep {
        None | Some(Value::None) => {
            let mut i = 0;
            loop {
                while i < b.len() && is_space(b[i]) {
                    i += 1;
                }
                if i == b.len() {
                    break;
                }
                if !limit(out.len()) {
                    let mut end = b.len();
                    while end > i && is_space(b[end - 1]) {
                        end -= 1;
                    }
                    out.push(make(this, b[i..end].to_vec()));
                    break;
                }
                let start = i;
                while i < b.len() && !is_space(b[i]) {
                    i += 1;
                }
                out.push(make(this, b[start..i].to_vec()));
            }
        }
        Some(s) => {
            let sep = &bytes_arg(s)?[..];
            if sep.is_empty() {
                return Err(Exc::value_error("empty separator"));
            }
            let mut rest = b;
            while limit(out.len()) {
                match find_in(rest, sep, false) {
                    Some(i) => {
                        out.push(make(this, rest[..i].to_vec()));
                        rest = &rest[i + sep.len()..];
                    }
                    None => break,
                }
            }
            out.push(make(this, rest.to_vec()));
        }
    }
    Ok(Value::list(out))
}

fn strip(this: &Value, mut a: Args, left: bool, right: bool) -> Result<Value, Exc> {
    let chars = a.take(0, "bytes")?;
    a.finish(1)?;
    let guard = this_bytes(this)?;
    let b: &[u8] = &guard;
    let set: Option<Vec<u8>> = match &chars {
        None | Some(Value::None) => None,
        Some(v) => Some(bytes_arg(v)?),
    };
    let strip = |c: u8| set.as_ref().map_or(is_space(c), |s| s.contains(&c));
    let (mut s, mut e) = (0, b.len());
    while left && s < e && strip(b[s]) {
        s += 1;
    }
    while right && e > s && strip(b[e - 1]) {
        e -= 1;
    }
    Ok(make(this, b[s..e].to_vec()))
}

fn join(it: &mut dyn Interpreter, this: &Value, mut a: Args) -> Result<Value, Exc> {
    let parts = a.required(0, "iterable_of_bytes")?;
    a.finish(1)?;
    // Iterated first: the iteration may run code that changes a bytearray.
    let parts = it.iterate(&parts)?;
    let sep = this_bytes(this)?;
    let mut out = Vec::new();
    for (i, p) in parts.iter().enumerate() {
        let Some(p) = of(p) else {
            return Err(Exc::type_error(format!(
                "sequence item {i}: expected a bytes-like object, {} found",
                p.type_name()
            )));
        };
        if i > 0 {
            out.extend_from_slice(&sep);
        }
        out.extend_from_slice(&p);
    }
    Ok(make(this, out))
}

/// `find`, `rfind`, `index`, `rindex` and `count`.
fn search(this: &Value, mut a: Args, name: &str) -> Result<Value, Exc> {
    let pat = needle(&a.required(0, "sub")?)?;
    let guard = this_bytes(this)?;
    let b: &[u8] = &guard;
    let (s, e) = bounds(b.len(), &mut a, 1)?;
    a.finish(3)?;
    let part = &b[s..e];
    if name == "count" {
        if pat.is_empty() {
            return Ok(Value::Int(part.len() as i64 + 1));
        }
        let (mut n, mut rest) = (0, part);
        while let Some(i) = find_in(rest, &pat, false) {
            n += 1;
            rest = &rest[i + pat.len()..];
        }
        return Ok(Value::Int(n));
    }
    match find_in(part, &pat, name.starts_with('r')) {
        Some(i) => Ok(Value::Int((s + i) as i64)),
        None if name.ends_with("index") => Err(Exc::value_error("subsection not found")),
        None => Ok(Value::Int(-1)),
    }
}

fn replace(_: &mut dyn Interpreter, this: &Value, mut a: Args) -> Result<Value, Exc> {
    let old = a.required(0, "old")?;
    let new = a.required(1, "new")?;
    let count = a.take(2, "count")?;
    a.finish(3)?;
    let (old, new) = (bytes_arg(&old)?, bytes_arg(&new)?);
    let mut left = match &count {
        None => -1,
        Some(v) => as_i64(v).ok_or_else(|| not_integer(v))?,
    };
    let guard = this_bytes(this)?;
    let b: &[u8] = &guard;
    let mut out = Vec::with_capacity(b.len());
    let mut rest = b;
    if old.is_empty() {
        // CPython inserts `new` before every byte and at the end.
        for (i, &c) in b.iter().enumerate() {
            if left == 0 {
                out.extend_from_slice(&b[i..]);
                return Ok(make(this, out));
            }
            out.extend_from_slice(&new);
            out.push(c);
            left -= 1;
        }
        if left != 0 {
            out.extend_from_slice(&new);
        }
        return Ok(make(this, out));
    }
    while left != 0 {
        let Some(i) = find_in(rest, &old, false) else {
            break;
        };
        out.extend_from_slice(&rest[..i]);
        out.extend_from_slice(&new);
        rest = &rest[i + old.len()..];
        left -= 1;
    }
    out.extend_from_slice(rest);
    Ok(make(this, out))
}

fn get_item(_: &mut dyn Interpreter, this: &Value, mut a: Args) -> Result<Value, Exc> {
    let key = a.required(0, "key")?;
    a.finish(1)?;
    let guard = this_bytes(this)?;
    let b: &[u8] = &guard;
    if let Some(s) = as_slice(&key) {
        let (start, stop, step) = slice_indices(
            b.len() as i64,
            &Some(s.start.clone()),
            &Some(s.stop.clone()),
            &Some(s.step.clone()),
        )?;
        let mut out = Vec::new();
        let mut i = start;
        while (step > 0 && i < stop) || (step < 0 && i > stop) {
            out.push(b[i as usize]);
            i += step;
        }
        return Ok(make(this, out));
    }
    let Some(i) = as_i64(&key) else {
        return Err(Exc::type_error(format!(
            "byte indices must be integers or slices, not {}",
            key.type_name()
        )));
    };
    let at = if i < 0 { i + b.len() as i64 } else { i };
    match usize::try_from(at).ok().and_then(|at| b.get(at)) {
        Some(&c) => Ok(Value::Int(c as i64)),
        None => Err(Exc::new(ExcKind::IndexError, "index out of range")),
    }
}

/// The methods `bytes` objects have, by name (`b.decode`, `b.split`, ...).
const METHODS: &[(&str, &str, MethodFn)] = &[
    (
        "decode",
        "decode(encoding='utf-8', errors='strict'): the text.",
        decode,
    ),
    (
        "hex",
        "hex(): two hexadecimal digits per byte.",
        |_, this, a| {
            a.finish(0)?;
            Ok(Value::str(&hex(&this_bytes(this)?)))
        },
    ),
    (
        "startswith",
        "startswith(prefix[, start[, end]]): whether the bytes begin with prefix.",
        |_, this, a| affix(this, a, "startswith", false),
    ),
    (
        "endswith",
        "endswith(suffix[, start[, end]]): whether the bytes end with suffix.",
        |_, this, a| affix(this, a, "endswith", true),
    ),
    (
        "split",
        "split(sep=None, maxsplit=-1): the parts between separators.",
        split,
    ),
    (
        "strip",
        "strip(bytes=None): without leading and trailing whitespace (or those bytes).",
        |_, this, a| strip(this, a, true, true),
    ),
    (
        "lstrip",
        "lstrip(bytes=None): without leading whitespace (or those bytes).",
        |_, this, a| strip(this, a, true, false),
    ),
    (
        "rstrip",
        "rstrip(bytes=None): without trailing whitespace (or those bytes).",
        |_, this, a| strip(this, a, false, true),
    ),
    (
        "join",
        "join(iterable_of_bytes): the parts with these bytes between them.",
        join,
    ),
    (
        "find",
        "find(sub[, start[, end]]): the lowest index of sub, or -1.",
        |_, this, a| search(this, a, "find"),
    ),
    (
        "rfind",
        "rfind(sub[, start[, end]]): the highest index of sub, or -1.",
        |_, this, a| search(this, a, "rfind"),
    ),
    (
        "index",
        "index(sub[, start[, end]]): like find, but ValueError when absent.",
        |_, this, a| search(this, a, "index"),
    ),
    (
        "rindex",
        "rindex(sub[, start[, end]]): like rfind, but ValueError when absent.",
        |_, this, a| search(this, a, "rindex"),
    ),
    (
        "count",
        "count(sub[, start[, end]]): occurrences of sub, not overlapping.",
        |_, this, a| search(this, a, "count"),
    ),
    (
        "replace",
        "replace(old, new, count=-1): with occurrences of old replaced by new.",
        replace,
    ),
    (
        "upper",
        "upper(): ASCII letters upper-cased.",
        |_, this, a| {
            a.finish(0)?;
            Ok(make(this, this_bytes(this)?.to_ascii_uppercase()))
        },
    ),
    (
        "lower",
        "lower(): ASCII letters lower-cased.",
        |_, this, a| {
            a.finish(0)?;
            Ok(make(this, this_bytes(this)?.to_ascii_lowercase()))
        },
    ),
    ("__len__", "Return len(self).", |_, this, a| {
        a.finish(0)?;
        Ok(Value::Int(this_bytes(this)?.len() as i64))
    }),
    ("__getitem__", "Return self[key].", get_item),
    ("__iter__", "Implement iter(self).", |_, this, a| {
        a.finish(0)?;
        Ok(Value::list(
            this_bytes(this)?
                .iter()
                .map(|&c| Value::Int(c as i64))
                .collect(),
        ))
    }),
];

/// The methods only a `bytearray` has: it changes in place.
const MUTATORS: &[(&str, &str, MethodFn)] = &[
    (
        "append",
        "append(item): add one byte at the end.",
        |_, this, mut a| {
            let v = a.required(0, "item")?;
            a.finish(1)?;
            let c = byte_value(&v)?;
            data_mut(this)?.push(c);
            Ok(Value::None)
        },
    ),
    (
        "extend",
        "extend(iterable_of_ints): add the bytes at the end.",
        |it, this, mut a| {
            let v = a.required(0, "iterable_of_ints")?;
            a.finish(1)?;
            let extra = bytes_of_iterable(it, &v)?;
            data_mut(this)?.extend_from_slice(&extra);
            Ok(Value::None)
        },
    ),
    (
        "pop",
        "pop(index=-1): remove and return the byte at index.",
        |_, this, mut a| {
            let i = a.take(0, "index")?;
            a.finish(1)?;
            let mut d = data_mut(this)?;
            if d.is_empty() {
                return Err(Exc::new(ExcKind::IndexError, "pop from empty bytearray"));
            }
            let i = match &i {
                None => -1,
                Some(v) => as_i64(v).ok_or_else(|| not_integer(v))?,
            };
            let at = if i < 0 { i + d.len() as i64 } else { i };
            if at < 0 || at >= d.len() as i64 {
                return Err(Exc::new(ExcKind::IndexError, "pop index out of range"));
            }
            Ok(Value::Int(d.remove(at as usize) as i64))
        },
    ),
    (
        "insert",
        "insert(index, item): put one byte before index.",
        |_, this, mut a| {
            let i = a.required(0, "index")?;
            let v = a.required(1, "item")?;
            a.finish(2)?;
            let i = as_i64(&i).ok_or_else(|| not_integer(&i))?;
            let c = byte_value(&v)?;
            let mut d = data_mut(this)?;
            let n = d.len() as i64;
            let at = if i < 0 { (i + n).max(0) } else { i.min(n) };
            d.insert(at as usize, c);
            Ok(Value::None)
        },
    ),
    (
        "remove",
        "remove(value): remove the first occurrence of a byte.",
        |_, this, mut a| {
            let v = a.required(0, "value")?;
            a.finish(1)?;
            let c = byte_value(&v)?;
            let mut d = data_mut(this)?;
            match d.iter().position(|&x| x == c) {
                Some(at) => {
                    d.remove(at);
                    Ok(Value::None)
                }
                None => Err(Exc::value_error("value not found in bytearray")),
            }
        },
    ),
    (
        "reverse",
        "reverse(): reverse the bytes in place.",
        |_, this, a| {
            a.finish(0)?;
            data_mut(this)?.reverse();
            Ok(Value::None)
        },
    ),
    ("clear", "clear(): remove every byte.", |_, this, a| {
        a.finish(0)?;
        data_mut(this)?.clear();
        Ok(Value::None)
    }),
    ("copy", "copy(): a copy of the bytearray.", |_, this, a| {
        a.finish(0)?;
        Ok(Bytes::bytearray(this_bytes(this)?.to_vec()))
    }),
    ("__setitem__", "Set self[key] to value.", set_item),
    ("__delitem__", "Delete self[key].", del_item),
    ("__iadd__", "Implement self+=value.", |_, this, mut a| {
        let v = a.required(0, "value")?;
        a.finish(1)?;
        let Some(extra) = of(&v).map(|b| b.to_vec()) else {
            return Err(Exc::type_error(format!(
                "can't concat {} to bytearray",
                v.type_name()
            )));
        };
        data_mut(this)?.extend_from_slice(&extra);
        Ok(this.clone())
    }),
];

/// A bytearray's bytes, to change.
fn data_mut(this: &Value) -> Result<std::cell::RefMut<'_, Vec<u8>>, Exc> {
    let b = downcast::<Bytes>(this, "bytearray")?;
    b.data
        .try_borrow_mut()
        .map_err(|_| Exc::new(ExcKind::RuntimeError, "bytearray changed while in use"))
}

/// One byte given as an int (`ba.append(65)`), with CPython's errors.
fn byte_value(v: &Value) -> Result<u8, Exc> {
    if matches!(v, Value::Float(_)) || as_i64(v).is_none() {
        return Err(not_integer(v));
    }
    let n = as_i64(v).unwrap_or(-1);
    u8::try_from(n).map_err(|_| Exc::value_error("byte must be in range(0, 256)"))
}

/// The bytes of a bytes-like object or an iterable of ints (`extend`, slice assignment).
fn bytes_of_iterable(it: &mut dyn Interpreter, v: &Value) -> Result<Vec<u8>, Exc> {
    if let Some(b) = of(v) {
        return Ok(b.to_vec());
    }
    if matches!(v, Value::Str(_)) {
        return Err(Exc::type_error("expected iterable of integers; got: 'str'"));
    }
    let items = it.iterate(v).map_err(|e| match e.kind {
        ExcKind::TypeError => {
            Exc::type_error(format!("can't extend bytearray with {}", v.type_name()))
        }
        _ => e,
    })?;
    items.iter().map(byte_value).collect()
}

/// `ba[i] = n`, `ba[a:b] = bytes_or_ints` (any length for a plain slice, the same length for an
/// extended one).
fn set_item(it: &mut dyn Interpreter, this: &Value, mut a: Args) -> Result<Value, Exc> {
    let key = a.required(0, "key")?;
    let value = a.required(1, "value")?;
    a.finish(2)?;
    if let Some(sl) = as_slice(&key) {
        if matches!(value, Value::Int(_) | Value::Bool(_)) {
            return Err(Exc::type_error(
                "can assign only bytes, buffers, or iterables of ints in range(0, 256)",
            ));
        }
        let new = bytes_of_iterable(it, &value)?;
        let mut d = data_mut(this)?;
        let (start, stop, step) = slice_indices(
            d.len() as i64,
            &Some(sl.start.clone()),
            &Some(sl.stop.clone()),
            &Some(sl.step.clone()),
        )?;
        if step == 1 {
            let (s, e) = (start as usize, (stop.max(start)) as usize);
            d.splice(s..e, new);
            return Ok(Value::None);
        }
        let mut at = Vec::new();
        let mut i = start;
        while (step > 0 && i < stop) || (step < 0 && i > stop) {
            at.push(i as usize);
            i += step;
        }
        if at.len() != new.len() {
            return Err(Exc::value_error(format!(
                "attempt to assign bytes of size {} to extended slice of size {}",
                new.len(),
                at.len()
            )));
        }
        for (i, c) in at.into_iter().zip(new) {
            d[i] = c;
        }
        return Ok(Value::None);
    }
    let Some(i) = as_i64(&key) else {
        return Err(Exc::type_error(format!(
            "bytearray indices must be integers or slices, not {}",
            key.type_name()
        )));
    };
    let c = byte_value(&value)?;
    let mut d = data_mut(this)?;
    let at = if i < 0 { i + d.len() as i64 } else { i };
    match usize::try_from(at).ok().and_then(|at| d.get_mut(at)) {
        Some(slot) => {
            *slot = c;
            Ok(Value::None)
        }
        None => Err(Exc::new(
            ExcKind::IndexError,
            "bytearray index out of range",
        )),
    }
}

/// `del ba[i]`, `del ba[a:b]`.
fn del_item(_: &mut dyn Interpreter, this: &Value, mut a: Args) -> Result<Value, Exc> {
    let key = a.required(0, "key")?;
    a.finish(1)?;
    let mut d = data_mut(this)?;
    if let Some(sl) = as_slice(&key) {
        let (start, stop, step) = slice_indices(
            d.len() as i64,
            &Some(sl.start.clone()),
            &Some(sl.stop.clone()),
            &Some(sl.step.clone()),
        )?;
        let mut gone = vec![false; d.len()];
        let mut i = start;
        while (step > 0 && i < stop) || (step < 0 && i > stop) {
            gone[i as usize] = true;
            i += step;
        }
        let mut k = 0;
        d.retain(|_| {
            k += 1;
            !gone[k - 1]
        });
        return Ok(Value::None);
    }
    let Some(i) = as_i64(&key) else {
        return Err(Exc::type_error(format!(
            "bytearray indices must be integers or slices, not {}",
            key.type_name()
        )));
    };
    let at = if i < 0 { i + d.len() as i64 } else { i };
    if at < 0 || at >= d.len() as i64 {
        return Err(Exc::new(
            ExcKind::IndexError,
            "bytearray index out of range",
        ));
    }
    d.remove(at as usize);
    Ok(Value::None)
}

/// `b'...'` as CPython writes bytes.
fn bytes_repr(data: &[u8]) -> String {
    let quote = if data.contains(&b'\'') && !data.contains(&b'"') {
        '"'
    } else {
        '\''
    };
    let mut s = format!("b{quote}");
    for &c in data {
        match c {
            b'\\' => s.push_str("\\\\"),
            b'\n' => s.push_str("\\n"),
            b'\r' => s.push_str("\\r"),
            b'\t' => s.push_str("\\t"),
            c if c == quote as u8 => {
                s.push('\\');
                s.push(c as char);
            }
            0x20..=0x7e => s.push(c as char),
            c => s.push_str(&format!("\\x{c:02x}")),
        }
    }
    s.push(quote);
    s
}

impl NativeObject for Bytes {
    fn type_name(&self) -> &str {
        if self.mutable {
            "bytearray"
        } else {
            "bytes"
        }
    }
    fn repr(&self) -> String {
        let text = bytes_repr(&self.data.borrow());
        if self.mutable {
            format!("bytearray({text})")
        } else {
            text
        }
    }
    fn get_attr(&self, this: &Rc<dyn NativeObject>, name: &str) -> Option<Value> {
        let mutators = if self.mutable { MUTATORS } else { &[] };
        let &(name, doc, f) = METHODS
            .iter()
            .chain(mutators)
            .find(|(n, _, _)| *n == name)?;
        Some(bound(this, name, doc, f))
    }
    fn attr_names(&self) -> Vec<&'static str> {
        let mutators = if self.mutable { MUTATORS } else { &[] };
        let mut names: Vec<&'static str> = METHODS
            .iter()
            .chain(mutators)
            .map(|(n, _, _)| *n)
            .filter(|n| !n.starts_with("__"))
            .collect();
        names.sort_unstable();
        names
    }
    fn truth(&self) -> Option<bool> {
        Some(!self.data.borrow().is_empty())
    }
    fn equals(&self, other: &Value) -> Option<bool> {
        Some(of(other).is_some_and(|o| *o == **self.data.borrow()))
    }
    fn class_value(&self) -> Option<Value> {
        Some(Value::Class(if self.mutable {
            bytearray_class()
        } else {
            class()
        }))
    }
    fn binary(&self, op: BinOp, other: &Value, reflected: bool) -> Option<Result<Value, Exc>> {
        let me = self.data.borrow();
        match op {
            BinOp::Add => Some(match (of(other), reflected) {
                // The result has the left operand's kind: bytes + bytearray is bytes.
                (Some(o), false) => Ok(Bytes::of_kind(self.mutable, [&me[..], &o[..]].concat())),
                (Some(o), true) => {
                    let left_mutable = object_of(other).is_some_and(|b| b.mutable);
                    Ok(Bytes::of_kind(left_mutable, [&o[..], &me[..]].concat()))
                }
                (None, false) => Err(Exc::type_error(format!(
                    "can't concat {} to {}",
                    other.type_name(),
                    self.type_name()
                ))),
                (None, true) => match other {
                    Value::Str(_) | Value::List(_) | Value::Tuple(_) => {
                        Err(Exc::type_error(format!(
                            "can only concatenate {} (not \"{}\") to {}",
                            other.type_name(),
                            self.type_name(),
                            other.type_name()
                        )))
                    }
                    _ => return None,
                },
            }),
            BinOp::Mul => Some(match other {
                Value::Int(_) | Value::Bool(_) => {
                    let k = as_i64(other).unwrap_or(0).max(0) as usize;
                    me.len()
                        .checked_mul(k)
                        .filter(|&n| n <= isize::MAX as usize)
                        .ok_or_else(crate::object::alloc::memory_error)
                        .and_then(crate::object::alloc::vec::<u8>)
                        .map(|mut out| {
                            for _ in 0..k {
                                out.extend_from_slice(&me);
                            }
                            Bytes::of_kind(self.mutable, out)
                        })
                }
                _ if of(other).is_some() => return None,
                _ => Err(Exc::type_error(format!(
                    "can't multiply sequence by non-int of type '{}'",
                    other.type_name()
                ))),
            }),
            _ => None,
        }
    }
    fn less(&self, other: &Value) -> Option<bool> {
        of(other).map(|o| **self.data.borrow() < *o)
    }
    fn contains(&self, item: &Value) -> Option<Result<bool, Exc>> {
        let me = self.data.borrow();
        Some(match of(item) {
            Some(p) => Ok(p.is_empty() || find_in(&me, &p, false).is_some()),
            None => match (as_i64(item), item) {
                (_, Value::Float(_)) | (None, _) => Err(Exc::type_error(format!(
                    "a bytes-like object is required, not '{}'",
                    item.type_name()
                ))),
                (Some(n), _) => match u8::try_from(n) {
                    Ok(c) => Ok(me.contains(&c)),
                    Err(_) => Err(Exc::value_error("byte must be in range(0, 256)")),
                },
            },
        })
    }
    fn hash_key(&self) -> Option<HashKey> {
        // A bytearray changes, so it hashes by identity (CPython: unhashable).
        (!self.mutable).then(|| HashKey::Bytes(Rc::from(&**self.data.borrow())))
    }
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

/// Lower-case hexadecimal, two digits per byte (`bytes.hex()`, `hexdigest()`).
pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}
