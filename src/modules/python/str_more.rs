//! The rest of `str`'s methods (CPython 3.11's behaviour): searching from the right, the
//! character-class tests, partitioning, prefixes, case changes and `translate`. `builtins.rs`
//! holds the common ones; a name it lacks is looked up here.

use std::rc::Rc;

use crate::object::value::{Dict, HashKey};
use crate::object::{method, Args, Exc, ExcKind, Value};

fn recv(r: &Value) -> Rc<str> {
    match r {
        Value::Str(s) => s.clone(),
        _ => Rc::from(""),
    }
}

fn str_of(v: &Value, what: &str) -> Result<Rc<str>, Exc> {
    match v {
        Value::Str(s) => Ok(s.clone()),
        other => Err(Exc::type_error(format!(
            "{what} must be str, not {}",
            other.type_name()
        ))),
    }
}

/// A character position from `start`/`end` arguments, clamped like a slice.
fn bound(v: Option<Value>, len: usize, default: usize) -> Result<usize, Exc> {
    match v {
        None | Some(Value::None) => Ok(default),
        Some(Value::Int(i)) => Ok(if i < 0 {
            (len as i64 + i).max(0) as usize
        } else {
            (i as usize).min(len)
        }),
        Some(Value::Bool(b)) => Ok((b as usize).min(len)),
        Some(other) => Err(Exc::type_error(format!(
            "slice indices must be integers or None or have an __index__ method, not {}",
            other.type_name()
        ))),
    }
}

/// The character index of `sub` in `s[start:end]` searching from the right.
fn rfind(s: &str, a: &mut Args) -> Result<i64, Exc> {
    let sub = str_of(&a.required(0, "sub")?, "sub")?;
    let chars: Vec<char> = s.chars().collect();
    let start = bound(a.take(1, "start")?, chars.len(), 0)?;
    let end = bound(a.take(2, "end")?, chars.len(), chars.len())?;
    a.finish(3)?;
    if start > end {
        return Ok(-1);
    }
    let hay: String = chars[start..end].iter().collect();
    Ok(hay
        .rfind(&*sub)
        .map_or(-1, |b| (start + hay[..b].chars().count()) as i64))
}

/// `str.splitlines(keepends)`: lines split at every line boundary CPython knows (`\n`,
/// `\r\n`, `\r`, `\v`, `\f`, `\x1c`-`\x1e`, `\x85`, `\u2028`, `\u2029`).
pub(crate) fn splitlines(s: &str, keepends: bool) -> Vec<&str> {
    let mut out = Vec::new();
    let mut start = 0;
    let mut chars = s.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        let is_break = matches!(
            c,
            '\n' | '\r'
                | '\x0b'
                | '\x0c'
                | '\x1c'
                | '\x1d'
                | '\x1e'
                | '\u{85}'
                | '\u{2028}'
                | '\u{2029}'
        );
        if !is_break {
            continue;
        }
        let mut end = i + c.len_utf8();
        if c == '\r' {
            if let Some((_, '\n')) = chars.peek() {
                chars.next();
                end += 1;
            }
        }
        out.push(if keepends {
            &s[start..end]
        } else {
            &s[start..i]
        });
        start = end;
    }
    if start < s.len() {
        out.push(&s[start..]);
    }
    out
}

/// `str.find(sub, start=None, end=None)`: the first index of `sub` in `s[start:end]`, or -1.
pub(crate) fn find(s: &str, a: &mut Args) -> Result<i64, Exc> {
    let sub = str_of(&a.required(0, "sub")?, "sub")?;
    let chars: Vec<char> = s.chars().collect();
    let start = bound(a.take(1, "start")?, chars.len(), 0)?;
    let end = bound(a.take(2, "end")?, chars.len(), chars.len())?;
    a.finish(3)?;
    if start > end {
        return Ok(-1);
    }
    let hay: String = chars[start..end].iter().collect();
    Ok(hay
        .find(&*sub)
        .map_or(-1, |b| (start + hay[..b].chars().count()) as i64))
}

fn partition(s: &str, a: &mut Args, right: bool) -> Result<Value, Exc> {
    let sep = str_of(&a.required(0, "sep")?, "sep")?;
    a.finish(1)?;
    if sep.is_empty() {
        return Err(Exc::value_error("empty separator"));
    }
    let found = if right { s.rfind(&*sep) } else { s.find(&*sep) };
    Ok(Value::tuple(match found {
        Some(i) => vec![
            Value::str(&s[..i]),
            Value::str(&sep),
            Value::str(&s[i + sep.len()..]),
        ],
        None if right => vec![Value::str(""), Value::str(""), Value::str(s)],
        None => vec![Value::str(s), Value::str(""), Value::str("")],
    }))
}

/// `str.rsplit(sep=None, maxsplit=-1)`.
fn rsplit(s: &str, a: &mut Args) -> Result<Value, Exc> {
    let sep = match a.take(0, "sep")? {
        None | Some(Value::None) => None,
        Some(v) => Some(str_of(&v, "sep")?),
    };
    let maxsplit = match a.take(1, "maxsplit")? {
        None => -1,
        Some(Value::Int(n)) => n,
        Some(other) => {
            return Err(Exc::type_error(format!(
                "'{}' object cannot be interpreted as an integer",
                other.type_name()
            )))
        }
    };
    a.finish(2)?;
    let mut parts: Vec<Value> = match &sep {
        Some(sep) if sep.is_empty() => return Err(Exc::value_error("empty separator")),
        Some(sep) if maxsplit >= 0 => s
            .rsplitn(maxsplit as usize + 1, &**sep)
            .map(Value::str)
            .collect(),
        Some(sep) => s.rsplit(&**sep).map(Value::str).collect(),
        None => {
            let mut out = Vec::new();
            let mut rest = s.trim_end();
            while !rest.is_empty() {
                if maxsplit >= 0 && out.len() as i64 == maxsplit {
                    out.push(Value::str(rest));
                    break;
                }
                match rest.rfind(char::is_whitespace) {
                    Some(i) => {
                        let ws = rest[i..].chars().next().map_or(1, char::len_utf8);
                        out.push(Value::str(&rest[i + ws..]));
                        rest = rest[..i].trim_end();
                    }
                    None => {
                        out.push(Value::str(rest));
                        break;
                    }
                }
            }
            out
        }
    };
    parts.reverse();
    Ok(Value::list(parts))
}

fn all_chars(s: &str, f: fn(char) -> bool) -> Value {
    Value::Bool(!s.is_empty() && s.chars().all(f))
}

/// Cased characters: `islower`/`isupper` need at least one and no character of the other case.
fn cased(s: &str, upper: bool) -> Value {
    let mut any = false;
    for c in s.chars() {
        if c.is_lowercase() || c.is_uppercase() {
            if c.is_uppercase() != upper {
                return Value::Bool(false);
            }
            any = true;
        }
    }
    Value::Bool(any)
}

fn capitalize(s: &str) -> String {
    let mut chars = s.chars();
    match chars.next() {
        Some(first) => first
            .to_uppercase()
            .chain(chars.flat_map(char::to_lowercase))
            .collect(),
        None => String::new(),
    }
}

fn istitle(s: &str) -> bool {
    let (mut prev_cased, mut any) = (false, false);
    for c in s.chars() {
        if c.is_uppercase() {
            if prev_cased {
                return false;
            }
            prev_cased = true;
            any = true;
        } else if c.is_lowercase() {
            if !prev_cased {
                return false;
            }
            prev_cased = true;
            any = true;
        } else {
            prev_cased = false;
        }
    }
    any
}

/// `str.maketrans(x, y=None, z=None)`: a dict from code points to code points, strings or None.
fn maketrans(mut a: Args) -> Result<Value, Exc> {
    let x = a.required(0, "x")?;
    let y = a.take(1, "y")?;
    let z = a.take(2, "z")?;
    a.finish(3)?;
    let mut d = Dict::default();
    let mut put = |k: char, v: Value| {
        let key = Value::Int(k as i64);
        d.insert(HashKey::Int(k as i64), key, v);
    };
    match (&x, &y) {
        (Value::Str(from), Some(Value::Str(to))) => {
            if from.chars().count() != to.chars().count() {
                return Err(Exc::value_error(
                    "the first two maketrans arguments must have equal length",
                ));
            }
            for (f, t) in from.chars().zip(to.chars()) {
                put(f, Value::Int(t as i64));
            }
        }
        (Value::Dict(map), None) => {
            for (k, v) in map.borrow().entries.iter() {
                let k = match k {
                    Value::Int(i) => char::from_u32(*i as u32).unwrap_or('\0'),
                    Value::Str(s) if s.chars().count() == 1 => s.chars().next().unwrap_or('\0'),
                    _ => {
                        return Err(Exc::value_error(
                            "string keys in translate table must be of length 1",
                        ))
                    }
                };
                put(k, v.clone());
            }
        }
        (_, None) => {
            return Err(Exc::type_error(
                "if you give only one argument to maketrans it must be a dict",
            ))
        }
        _ => return Err(Exc::type_error("maketrans() argument 2 must be str")),
    }
    if let Some(z) = z {
        for c in str_of(&z, "maketrans() argument 3")?.chars() {
            put(c, Value::None);
        }
    }
    Ok(Value::Dict(Rc::new(std::cell::RefCell::new(d))))
}

fn translate(it: &mut dyn crate::object::Interpreter, s: &str, a: &mut Args) -> Result<Value, Exc> {
    let table = a.required(0, "table")?;
    a.finish(1)?;
    let mut out = String::new();
    for c in s.chars() {
        let key = Value::Int(c as i64);
        let mapped = crate::object::ops::get_item(
            it,
            &table,
            crate::object::ops::Index::Single(crate::object::ops::IndexItem::Value(key)),
        );
        match &mapped {
            Ok(Value::None) => {}
            Ok(Value::Int(i)) => {
                out.push(char::from_u32(*i as u32).ok_or_else(|| {
                    Exc::value_error("character mapping must be in range(0x110000)")
                })?)
            }
            Ok(Value::Str(r)) => out.push_str(r),
            Ok(_) => {
                return Err(Exc::type_error(
                    "character mapping must return integer, None or str",
                ))
            }
            Err(e) if matches!(e.kind, ExcKind::KeyError | ExcKind::IndexError) => out.push(c),
            Err(e) => return Err(e.clone()),
        }
    }
    Ok(Value::str(&out))
}

/// The method `name` of the string `v`, if it is one of these.
pub fn method_of(v: &Value, name: &str) -> Option<Value> {
    let (name, f): (&'static str, crate::object::value::MethodFn) = match name {
        "rfind" => ("rfind", |_, r, mut a| {
            Ok(Value::Int(rfind(&recv(r), &mut a)?))
        }),
        "rindex" => ("rindex", |_, r, mut a| match rfind(&recv(r), &mut a)? {
            -1 => Err(Exc::value_error("substring not found")),
            i => Ok(Value::Int(i)),
        }),
        "index" => ("index", |it, r, a| {
            let found = it.get_attr(r, "find")?;
            match it.call_value(&found, a)? {
                Value::Int(-1) => Err(Exc::value_error("substring not found")),
                v => Ok(v),
            }
        }),
        "partition" => ("partition", |_, r, mut a| {
            partition(&recv(r), &mut a, false)
        }),
        "rpartition" => ("rpartition", |_, r, mut a| {
            partition(&recv(r), &mut a, true)
        }),
        "rsplit" => ("rsplit", |_, r, mut a| rsplit(&recv(r), &mut a)),
        "encode" => ("encode", |_, r, mut a| {
            let enc = a.take(0, "encoding")?;
            a.take(1, "errors")?;
            a.finish(2)?;
            let s = recv(r);
            let enc = match &enc {
                None => Rc::from("utf-8"),
                Some(v) => str_of(v, "encode() argument 'encoding'")?,
            };
            Ok(crate::modules::python::bytes::Bytes::value(
                crate::modules::python::bytes::encode(&s, &enc)?,
            ))
        }),
        "removeprefix" => ("removeprefix", |_, r, mut a| {
            let p = str_of(&a.required(0, "prefix")?, "removeprefix() argument")?;
            a.finish(1)?;
            let s = recv(r);
            Ok(Value::str(s.strip_prefix(&*p).unwrap_or(&s)))
        }),
        "removesuffix" => ("removesuffix", |_, r, mut a| {
            let p = str_of(&a.required(0, "suffix")?, "removesuffix() argument")?;
            a.finish(1)?;
            let s = recv(r);
            Ok(Value::str(s.strip_suffix(&*p).unwrap_or(&s)))
        }),
        "capitalize" => ("capitalize", |_, r, a| {
            a.finish(0)?;
            Ok(Value::str(&capitalize(&recv(r))))
        }),
        "casefold" => ("casefold", |_, r, a| {
            a.finish(0)?;
            Ok(Value::str(&recv(r).to_lowercase()))
        }),
        "swapcase" => ("swapcase", |_, r, a| {
            a.finish(0)?;
            let s: String = recv(r)
                .chars()
                .flat_map(|c| {
                    if c.is_uppercase() {
                        c.to_lowercase().collect::<Vec<_>>()
                    } else {
                        c.to_uppercase().collect::<Vec<_>>()
                    }
                })
                .collect();
            Ok(Value::str(&s))
        }),
        "expandtabs" => ("expandtabs", |_, r, mut a| {
            let size = match a.take(0, "tabsize")? {
                Some(Value::Int(n)) => n,
                None => 8,
                Some(o) => {
                    return Err(Exc::type_error(format!(
                        "'{}' object cannot be interpreted as an integer",
                        o.type_name()
                    )))
                }
            };
            a.finish(1)?;
            let mut out = String::new();
            let mut col = 0i64;
            for c in recv(r).chars() {
                match c {
                    '\t' => {
                        if size > 0 {
                            let n = size - col % size;
                            crate::object::alloc::push_repeated(&mut out, " ", n as usize)?;
                            col += n;
                        }
                    }
                    '\n' | '\r' => {
                        out.push(c);
                        col = 0;
                    }
                    _ => {
                        out.push(c);
                        col += 1;
                    }
                }
            }
            Ok(Value::str(&out))
        }),
        "isalpha" => ("isalpha", |_, r, a| {
            a.finish(0)?;
            Ok(all_chars(&recv(r), char::is_alphabetic))
        }),
        "isalnum" => ("isalnum", |_, r, a| {
            a.finish(0)?;
            Ok(all_chars(&recv(r), char::is_alphanumeric))
        }),
        "isdecimal" | "isnumeric" => ("isnumeric", |_, r, a| {
            a.finish(0)?;
            Ok(all_chars(&recv(r), char::is_numeric))
        }),
        "isspace" => ("isspace", |_, r, a| {
            a.finish(0)?;
            Ok(all_chars(&recv(r), char::is_whitespace))
        }),
        "isascii" => ("isascii", |_, r, a| {
            a.finish(0)?;
            Ok(Value::Bool(recv(r).is_ascii()))
        }),
        "isprintable" => ("isprintable", |_, r, a| {
            a.finish(0)?;
            Ok(Value::Bool(recv(r).chars().all(|c| !c.is_control())))
        }),
        "isidentifier" => ("isidentifier", |_, r, a| {
            a.finish(0)?;
            let s = recv(r);
            let mut chars = s.chars();
            Ok(Value::Bool(
                chars.next().is_some_and(|c| c == '_' || c.is_alphabetic())
                    && chars.all(|c| c == '_' || c.is_alphanumeric()),
            ))
        }),
        "islower" => ("islower", |_, r, a| {
            a.finish(0)?;
            Ok(cased(&recv(r), false))
        }),
        "isupper" => ("isupper", |_, r, a| {
            a.finish(0)?;
            Ok(cased(&recv(r), true))
        }),
        "istitle" => ("istitle", |_, r, a| {
            a.finish(0)?;
            Ok(Value::Bool(istitle(&recv(r))))
        }),
        "maketrans" => ("maketrans", |_, _, a| maketrans(a)),
        "translate" => ("translate", |it, r, mut a| translate(it, &recv(r), &mut a)),
        "format_map" => ("format_map", |it, r, mut a| {
            let mapping = a.required(0, "mapping")?;
            a.finish(1)?;
            let f = it.get_attr(r, "format")?;
            let Value::Dict(d) = &mapping else {
                return Err(Exc::type_error("format_map() argument must be a dict"));
            };
            let kw: Vec<(Rc<str>, Value)> = d
                .borrow()
                .entries
                .iter()
                .filter_map(|(k, v)| match k {
                    Value::Str(k) => Some((k.clone(), v.clone())),
                    _ => None,
                })
                .collect();
            it.call_value(
                &f,
                Args {
                    pos: Vec::new(),
                    kw,
                    fname: "format_map",
                },
            )
        }),
        _ => return None,
    };
    Some(method(v, name, "str method", f))
}

#[cfg(test)]
mod tests {
    use super::splitlines;

    #[test]
    fn splitlines_knows_every_line_boundary() {
        assert_eq!(
            splitlines("a\nb\r\nc\rd\x0be", false),
            ["a", "b", "c", "d", "e"]
        );
        assert_eq!(splitlines("a\r\nb\n", true), ["a\r\n", "b\n"]);
        assert_eq!(splitlines("", false), Vec::<&str>::new());
        assert_eq!(splitlines("x\n\n", false), ["x", ""]);
    }
}
