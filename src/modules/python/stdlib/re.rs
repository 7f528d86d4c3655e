//! `re` over the `regex` crate: `compile`, `match`, `search`, `fullmatch`, `findall`, `finditer`,
//! `sub`/`subn` (with `\1` / `\g<name>` templates or a function), `split`, `escape`, and Match
//! objects as CPython prints them. Positions are in characters, as Python counts them. The
//! engine has no look-around or backreferences; such a pattern is a `re.error` that says so.

use std::rc::Rc;

use regex::{Regex, RegexBuilder};

use super::{exc_class, int, module, module_member, raise, set_fns, string};
use crate::object::class::Class;
use crate::object::format::str_repr;
use crate::object::value::{Dict, HashKey, Module, NativeObject};
use crate::object::{method, Args, Exc, ExcKind, Interpreter, Value};

const IGNORECASE: i64 = 2;
const MULTILINE: i64 = 8;
const DOTALL: i64 = 16;
const VERBOSE: i64 = 64;
const ASCII: i64 = 256;

pub fn build() -> Rc<Module> {
    let m = module("re", "regular expressions");
    m.set(
        "error",
        exc_class("error", "re", ExcKind::Exception).value(),
    );
    m.set("_cache", Value::Object(Rc::new(Cache(Default::default()))));
    for (names, v) in [
        (&["I", "IGNORECASE"], IGNORECASE),
        (&["M", "MULTILINE"], MULTILINE),
        (&["S", "DOTALL"], DOTALL),
        (&["X", "VERBOSE"], VERBOSE),
        (&["A", "ASCII"], ASCII),
    ] {
        for n in names {
            m.set(n, Value::Int(v));
        }
    }
    set_fns(
        &m,
        &[
            ("compile", "compile(pattern, flags=0): a Pattern object.", |it, mut a| {
                let p = a.required(0, "pattern")?;
                let flags = a.take(1, "flags")?;
                a.finish(2)?;
                if let Value::Object(o) = &p {
                    if o.as_any().is::<Pattern>() {
                        return Ok(p);
                    }
                }
                Ok(Value::Object(compile(it, &p, flags)?))
            }),
            ("search", "search(pattern, string, flags=0): the first match anywhere, or None.", |it, a| module_call(it, a, "search")),
            ("match", "match(pattern, string, flags=0): a match at the start, or None.", |it, a| module_call(it, a, "match")),
            ("fullmatch", "fullmatch(pattern, string, flags=0): a match of the whole string, or None.", |it, a| module_call(it, a, "fullmatch")),
            ("findall", "findall(pattern, string, flags=0): all matches (or their groups).", |it, a| module_call(it, a, "findall")),
            ("finditer", "finditer(pattern, string, flags=0): an iterator of Match objects.", |it, a| module_call(it, a, "finditer")),
            ("split", "split(pattern, string, maxsplit=0, flags=0): the pieces between matches (and the groups).", |it, a| module_call(it, a, "split")),
            ("sub", "sub(pattern, repl, string, count=0, flags=0): the string with matches replaced.", |it, a| module_call(it, a, "sub")),
            ("subn", "subn(pattern, repl, string, count=0, flags=0): (new string, number of replacements).", |it, a| module_call(it, a, "subn")),
            ("escape", "escape(pattern): the string with regex metacharacters escaped.", |_, mut a| {
                let s = string(&a.required(0, "pattern")?, "escape() argument")?;
                a.finish(1)?;
                let mut out = String::new();
                for c in s.chars() {
                    if "()[]{}?*+-|^$\\.&~# \t\n\r\u{b}\u{c}".contains(c) {
                        out.push('\\');
                    }
                    out.push(c);
                }
                Ok(Value::str(&out))
            }),
        ],
    );
    m
}

fn error_class(it: &mut dyn Interpreter) -> Rc<Class> {
    match module_member(it, "re", "error") {
        Some(Value::Class(ref c)) => c.clone(),
        _ => exc_class("error", "re", ExcKind::Exception),
    }
}

pub struct Pattern {
    source: Rc<str>,
    flags: i64,
    any: Regex,
    start: Regex,
    full: Regex,
    names: Vec<Option<String>>,
}

/// Compiled patterns by (pattern, flags), as CPython's `re._cache`: `re.sub(p, ...)` in a loop
/// compiles `p` once.
type Patterns = std::collections::HashMap<(Rc<str>, i64), Rc<dyn NativeObject>>;

struct Cache(std::cell::RefCell<Patterns>);

impl NativeObject for Cache {
    fn type_name(&self) -> &str {
        "dict"
    }
    fn repr(&self) -> String {
        format!("<re cache of {} patterns>", self.0.borrow().len())
    }
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

/// CPython's limit on its cache of compiled patterns.
const CACHE_MAX: usize = 512;

fn compile(
    it: &mut dyn Interpreter,
    p: &Value,
    flags: Option<Value>,
) -> Result<Rc<dyn NativeObject>, Exc> {
    let cache = module_member(it, "re", "_cache");
    let cache = match &cache {
        Some(Value::Object(o)) => o.as_any().downcast_ref::<Cache>(),
        _ => None,
    };
    if let (Value::Str(source), Some(cache)) = (p, cache) {
        let f = match &flags {
            None | Some(Value::None) => 0,
            Some(v) => int(v)?,
        };
        let key = (source.clone(), f);
        if let Some(hit) = cache.0.borrow().get(&key) {
            return Ok(hit.clone());
        }
        let compiled = compile_new(it, p, flags)?;
        let mut map = cache.0.borrow_mut();
        if map.len() >= CACHE_MAX {
            map.clear();
        }
        map.insert(key, compiled.clone());
        return Ok(compiled);
    }
    compile_new(it, p, flags)
}

fn compile_new(
    it: &mut dyn Interpreter,
    p: &Value,
    flags: Option<Value>,
) -> Result<Rc<dyn NativeObject>, Exc> {
    let Value::Str(source) = p else {
        return Err(Exc::type_error(
            "first argument must be string or compiled pattern",
        ));
    };
    let source = source.clone();
    let flags = match flags {
        None | Some(Value::None) => 0,
        Some(v) => int(&v)?,
    };
    let make = |pat: &str| {
        RegexBuilder::new(pat)
            .case_insensitive(flags & IGNORECASE != 0)
            .multi_line(flags & MULTILINE != 0)
            .dot_matches_new_line(flags & DOTALL != 0)
            .ignore_whitespace(flags & VERBOSE != 0)
            .unicode(flags & ASCII == 0)
            .build()
    };
    let built = make(&source).and_then(|any| {
        let start = make(&format!("\\A(?:{source})"))?;
        let full = make(&format!("\\A(?:{source})\\z"))?;
        Ok((any, start, full))
    });
    let (any, start, full) = built.map_err(|e| {
        let text = e.to_string();
        let last = text.lines().rev().find(|l| !l.trim().is_empty()).unwrap_or(&text).trim();
        let last = last.trim_start_matches("error: ");
        let class = error_class(it);
        // The engine guarantees linear time, so it refuses what needs backtracking; say so.
        let why = if last.contains("look-around") || last.contains("backreferences") {
            " (devarray's regular expressions run in linear time, without look-around or backreferences)"
        } else {
            ""
        };
        raise(
            &class,
            format!("{last} in pattern {}{why}", str_repr(&source)),
        )
    })?;
    let names = any.capture_names().map(|n| n.map(str::to_string)).collect();
    Ok(Rc::new(Pattern {
        source,
        flags,
        any,
        start,
        full,
        names,
    }))
}

fn flag_names(flags: i64) -> String {
    let mut parts = Vec::new();
    for (bit, name) in [
        (IGNORECASE, "re.IGNORECASE"),
        (MULTILINE, "re.MULTILINE"),
        (DOTALL, "re.DOTALL"),
        (VERBOSE, "re.VERBOSE"),
        (ASCII, "re.ASCII"),
    ] {
        if flags & bit != 0 {
            parts.push(name);
        }
    }
    parts.join("|")
}

impl NativeObject for Pattern {
    fn type_name(&self) -> &str {
        "re.Pattern"
    }
    fn repr(&self) -> String {
        let f = flag_names(self.flags);
        if f.is_empty() {
            format!("re.compile({})", str_repr(&self.source))
        } else {
            format!("re.compile({}, {f})", str_repr(&self.source))
        }
    }
    fn get_attr(&self, this: &Rc<dyn NativeObject>, name: &str) -> Option<Value> {
        let r = Value::Object(this.clone());
        Some(match name {
            "pattern" => Value::Str(self.source.clone()),
            "flags" => Value::Int(self.flags | if self.flags & ASCII == 0 { 32 } else { 0 }),
            "groups" => Value::Int(self.names.len() as i64 - 1),
            "groupindex" => {
                let mut d = Dict::default();
                for (i, n) in self.names.iter().enumerate() {
                    if let Some(n) = n {
                        d.insert(
                            HashKey::Str(Rc::from(n.as_str())),
                            Value::str(n),
                            Value::Int(i as i64),
                        );
                    }
                }
                Value::Dict(Rc::new(std::cell::RefCell::new(d)))
            }
            "search" => method(
                &r,
                "search",
                "search(string): the first match, or None.",
                |it, r, a| pattern_call(it, r, a, "search"),
            ),
            "match" => method(
                &r,
                "match",
                "match(string): a match at the start, or None.",
                |it, r, a| pattern_call(it, r, a, "match"),
            ),
            "fullmatch" => method(
                &r,
                "fullmatch",
                "fullmatch(string): a match of the whole string, or None.",
                |it, r, a| pattern_call(it, r, a, "fullmatch"),
            ),
            "findall" => method(
                &r,
                "findall",
                "findall(string): all matches (or their groups).",
                |it, r, a| pattern_call(it, r, a, "findall"),
            ),
            "finditer" => method(
                &r,
                "finditer",
                "finditer(string): an iterator of Match objects.",
                |it, r, a| pattern_call(it, r, a, "finditer"),
            ),
            "split" => method(
                &r,
                "split",
                "split(string, maxsplit=0): the pieces between matches.",
                |it, r, a| pattern_call(it, r, a, "split"),
            ),
            "sub" => method(
                &r,
                "sub",
                "sub(repl, string, count=0): the string with matches replaced.",
                |it, r, a| pattern_call(it, r, a, "sub"),
            ),
            "subn" => method(
                &r,
                "subn",
                "subn(repl, string, count=0): (new string, number of replacements).",
                |it, r, a| pattern_call(it, r, a, "subn"),
            ),
            _ => return None,
        })
    }
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

/// `re.op(pattern, ...)`: compiles, then runs the Pattern method with the rest.
fn module_call(it: &mut dyn Interpreter, mut a: Args, op: &'static str) -> Result<Value, Exc> {
    let p = a.required(0, "pattern")?;
    let flags = a.take_kw("flags");
    // The flags may also come positionally, after the operation's own arguments.
    let nargs = match op {
        "sub" | "subn" => 4,
        "split" => 3,
        _ => 2,
    };
    let flags = match flags {
        Some(f) => Some(f),
        None if a.pos.len() > nargs => a.pos.pop(),
        None => None,
    };
    let pat: Rc<dyn NativeObject> = match &p {
        Value::Object(o) if o.as_any().is::<Pattern>() => o.clone(),
        _ => compile(it, &p, flags)?,
    };
    let rest = Args {
        pos: a.pos.split_off(1),
        kw: a.kw,
        fname: op,
    };
    pattern_call(it, &Value::Object(pat), rest, op)
}

/// A byte offset of `s` as a character index.
fn char_index(s: &str, byte: usize) -> usize {
    s[..byte].chars().count()
}

pub struct Match {
    text: Rc<str>,
    /// Byte spans of group 0, 1, ... (None for a group that did not take part).
    spans: Vec<Option<(usize, usize)>>,
    pattern: Value,
}

impl Match {
    fn group_index(&self, g: &Value, names: &[Option<String>]) -> Result<usize, Exc> {
        let i = match g {
            Value::Int(i) if *i >= 0 && (*i as usize) < self.spans.len() => *i as usize,
            Value::Str(s) => match names.iter().position(|n| n.as_deref() == Some(&**s)) {
                Some(i) => i,
                None => return Err(Exc::new(ExcKind::IndexError, "no such group")),
            },
            _ => return Err(Exc::new(ExcKind::IndexError, "no such group")),
        };
        Ok(i)
    }
    fn group(&self, i: usize) -> Value {
        match self.spans.get(i).copied().flatten() {
            Some((s, e)) => Value::str(&self.text[s..e]),
            None => Value::None,
        }
    }
    fn span(&self, i: usize) -> (i64, i64) {
        match self.spans.get(i).copied().flatten() {
            Some((s, e)) => (
                char_index(&self.text, s) as i64,
                char_index(&self.text, e) as i64,
            ),
            None => (-1, -1),
        }
    }
    fn names(&self) -> Vec<Option<String>> {
        match &self.pattern {
            Value::Object(o) => o
                .as_any()
                .downcast_ref::<Pattern>()
                .map(|p| p.names.clone())
                .unwrap_or_default(),
            _ => Vec::new(),
        }
    }
}

fn as_match(r: &Value) -> Result<&Match, Exc> {
    match r {
        Value::Object(o) => o
            .as_any()
            .downcast_ref::<Match>()
            .ok_or_else(|| Exc::type_error("expected a Match")),
        _ => Err(Exc::type_error("expected a Match")),
    }
}

impl NativeObject for Match {
    fn type_name(&self) -> &str {
        "re.Match"
    }
    fn repr(&self) -> String {
        let (s, e) = self.span(0);
        format!(
            "<re.Match object; span=({s}, {e}), match={}>",
            match self.group(0) {
                Value::Str(ref m) => str_repr(m),
                _ => "None".into(),
            }
        )
    }
    fn get_attr(&self, this: &Rc<dyn NativeObject>, name: &str) -> Option<Value> {
        let r = Value::Object(this.clone());
        Some(match name {
            "string" => Value::Str(self.text.clone()),
            "re" => self.pattern.clone(),
            "pos" => Value::Int(0),
            "endpos" => Value::Int(self.text.chars().count() as i64),
            "lastindex" => match (1..self.spans.len()).rev().find(|&i| self.spans[i].is_some()) {
                Some(i) => Value::Int(i as i64),
                None => Value::None,
            },
            "group" => method(&r, "group", "group(*groups): the text of one group (a tuple for several); 0 is the whole match.", |_, r, a| {
                let m = as_match(r)?;
                let names = m.names();
                if !a.kw.is_empty() {
                    a.finish(usize::MAX)?;
                }
                match a.pos.len() {
                    0 => Ok(m.group(0)),
                    1 => Ok(m.group(m.group_index(&a.pos[0], &names)?)),
                    _ => Ok(Value::tuple(
                        a.pos.iter().map(|g| Ok(m.group(m.group_index(g, &names)?))).collect::<Result<_, Exc>>()?,
                    )),
                }
            }),
            "__getitem__" => method(&r, "__getitem__", "m[g] is m.group(g)", |_, r, mut a| {
                let m = as_match(r)?;
                let g = a.required(0, "g")?;
                Ok(m.group(m.group_index(&g, &m.names())?))
            }),
            "groups" => method(&r, "groups", "groups(default=None): the text of every group, default for those that did not take part.", |_, r, mut a| {
                let m = as_match(r)?;
                let d = a.take(0, "default")?.unwrap_or(Value::None);
                a.finish(1)?;
                Ok(Value::tuple((1..m.spans.len()).map(|i| match m.group(i) {
                    Value::None => d.clone(),
                    v => v,
                }).collect()))
            }),
            "groupdict" => method(&r, "groupdict", "groupdict(default=None): the named groups as a dict.", |_, r, mut a| {
                let m = as_match(r)?;
                let d = a.take(0, "default")?.unwrap_or(Value::None);
                a.finish(1)?;
                let mut out = Dict::default();
                for (i, n) in m.names().iter().enumerate() {
                    if let Some(n) = n {
                        let v = match m.group(i) {
                            Value::None => d.clone(),
                            v => v,
                        };
                        out.insert(HashKey::Str(Rc::from(n.as_str())), Value::str(n), v);
                    }
                }
                Ok(Value::Dict(Rc::new(std::cell::RefCell::new(out))))
            }),
            "start" | "end" | "span" => {
                let f: crate::object::value::MethodFn = match name {
                    "start" => |_, r, a| span_of(r, a).map(|(s, _)| Value::Int(s)),
                    "end" => |_, r, a| span_of(r, a).map(|(_, e)| Value::Int(e)),
                    _ => |_, r, a| span_of(r, a).map(|(s, e)| Value::tuple(vec![Value::Int(s), Value::Int(e)])),
                };
                let n: &'static str = match name {
                    "start" => "start",
                    "end" => "end",
                    _ => "span",
                };
                method(&r, n, "the position of a group (0: the whole match), -1 if it did not take part", f)
            }
            _ => return None,
        })
    }
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

fn span_of(r: &Value, mut a: Args) -> Result<(i64, i64), Exc> {
    let m = as_match(r)?;
    let g = a.take(0, "group")?.unwrap_or(Value::Int(0));
    a.finish(1)?;
    Ok(m.span(m.group_index(&g, &m.names())?))
}

fn match_value(pattern: &Value, text: &Rc<str>, caps: &regex::Captures) -> Value {
    let spans = (0..caps.len())
        .map(|i| caps.get(i).map(|m| (m.start(), m.end())))
        .collect();
    Value::Object(Rc::new(Match {
        text: text.clone(),
        spans,
        pattern: pattern.clone(),
    }))
}

fn pattern_call(
    it: &mut dyn Interpreter,
    r: &Value,
    mut a: Args,
    op: &'static str,
) -> Result<Value, Exc> {
    let Value::Object(o) = r else {
        return Err(Exc::type_error("expected a Pattern"));
    };
    let Some(p) = o.as_any().downcast_ref::<Pattern>() else {
        return Err(Exc::type_error("expected a Pattern"));
    };
    a.fname = op;
    let text_arg = |a: &mut Args, i: usize| -> Result<Rc<str>, Exc> {
        match a.required(i, "string")? {
            Value::Str(ref s) => Ok(s.clone()),
            other => Err(Exc::type_error(format!(
                "expected string or bytes-like object, got '{}'",
                other.type_name()
            ))),
        }
    };
    match op {
        "search" | "match" | "fullmatch" => {
            let text = text_arg(&mut a, 0)?;
            a.finish(1)?;
            let re = match op {
                "search" => &p.any,
                "match" => &p.start,
                _ => &p.full,
            };
            Ok(match re.captures(&text) {
                Some(c) => match_value(r, &text, &c),
                None => Value::None,
            })
        }
        "findall" => {
            let text = text_arg(&mut a, 0)?;
            a.finish(1)?;
            let groups = p.names.len() - 1;
            let mut out = Vec::new();
            for c in p.any.captures_iter(&text) {
                let g = |i: usize| Value::str(c.get(i).map_or("", |m| m.as_str()));
                out.push(match groups {
                    0 => g(0),
                    1 => g(1),
                    n => Value::tuple((1..=n).map(g).collect()),
                });
            }
            Ok(Value::list(out))
        }
        "finditer" => {
            let text = text_arg(&mut a, 0)?;
            a.finish(1)?;
            let items: Vec<Value> = p
                .any
                .captures_iter(&text)
                .map(|c| match_value(r, &text, &c))
                .collect();
            super::iter_of(it, &Value::list(items))
        }
        "split" => {
            let text = text_arg(&mut a, 0)?;
            let maxsplit = a
                .take(1, "maxsplit")?
                .map(|v| int(&v))
                .transpose()?
                .unwrap_or(0);
            a.finish(2)?;
            let mut out = Vec::new();
            let mut last = 0;
            for (n, c) in p.any.captures_iter(&text).enumerate() {
                if maxsplit > 0 && n as i64 >= maxsplit {
                    break;
                }
                let Some(m) = c.get(0) else { continue };
                out.push(Value::str(&text[last..m.start()]));
                for i in 1..c.len() {
                    out.push(c.get(i).map_or(Value::None, |g| Value::str(g.as_str())));
                }
                last = m.end();
            }
            out.push(Value::str(&text[last..]));
            Ok(Value::list(out))
        }
        _ => {
            let repl = a.required(0, "repl")?;
            let text = text_arg(&mut a, 1)?;
            let count = a
                .take(2, "count")?
                .map(|v| int(&v))
                .transpose()?
                .unwrap_or(0);
            a.finish(3)?;
            let mut out = String::new();
            let mut last = 0;
            let mut n = 0i64;
            // A replacement without escapes is copied as it is, and needs no groups: the
            // matches alone are found (far faster than captures on a million-match input).
            if let Value::Str(t) = &repl {
                if !t.contains('\\') {
                    for m in p.any.find_iter(&text) {
                        if count > 0 && n >= count {
                            break;
                        }
                        // Ctrl-C reaches a substitution over a huge input (`re.sub('', ...)`).
                        if n & 0xfff == 0 {
                            it.check_interrupt()?;
                        }
                        crate::object::alloc::push_str(&mut out, &text[last..m.start()])?;
                        crate::object::alloc::push_str(&mut out, t)?;
                        last = m.end();
                        n += 1;
                    }
                    crate::object::alloc::push_str(&mut out, &text[last..])?;
                    return Ok(substituted(op, out, n));
                }
            }
            for c in p.any.captures_iter(&text) {
                if count > 0 && n >= count {
                    break;
                }
                if n & 0xfff == 0 {
                    it.check_interrupt()?;
                }
                let Some(m) = c.get(0) else { continue };
                crate::object::alloc::push_str(&mut out, &text[last..m.start()])?;
                match &repl {
                    Value::Str(t) => expand(it, t, &c, &p.names, &mut out)?,
                    f => {
                        let mv = match_value(r, &text, &c);
                        let s = it.call_value(f, Args::positional(vec![mv]))?;
                        match s {
                            Value::Str(ref s) => crate::object::alloc::push_str(&mut out, s)?,
                            other => {
                                return Err(Exc::type_error(format!(
                                    "expected str instance, {} found",
                                    other.type_name()
                                )))
                            }
                        }
                    }
                }
                last = m.end();
                n += 1;
            }
            crate::object::alloc::push_str(&mut out, &text[last..])?;
            Ok(substituted(op, out, n))
        }
    }
}

/// What `sub` (the text) or `subn` (the text and the count) returns.
fn substituted(op: &str, out: String, n: i64) -> Value {
    let text = Value::Str(Rc::from(out));
    if op == "subn" {
        Value::tuple(vec![text, Value::Int(n)])
    } else {
        text
    }
}

/// A replacement template as Python reads it: `\1`, `\g<1>`, `\g<name>`, and string escapes.
fn expand(
    it: &mut dyn Interpreter,
    t: &str,
    c: &regex::Captures,
    names: &[Option<String>],
    out: &mut String,
) -> Result<(), Exc> {
    let chars: Vec<char> = t.chars().collect();
    let mut i = 0;
    let bad = |it: &mut dyn Interpreter, msg: String| raise(&error_class(it), msg);
    while i < chars.len() {
        let ch = chars[i];
        if ch != '\\' {
            crate::object::alloc::push_str(out, ch.encode_utf8(&mut [0; 4]))?;
            i += 1;
            continue;
        }
        let Some(&e) = chars.get(i + 1) else {
            return Err(bad(
                it,
                format!("bad escape (end of pattern) at position {i}"),
            ));
        };
        let group = |g: usize, it: &mut dyn Interpreter| -> Result<String, Exc> {
            if g >= c.len() {
                return Err(bad(
                    it,
                    format!("invalid group reference {g} at position {}", i + 1),
                ));
            }
            Ok(c.get(g).map_or("", |m| m.as_str()).to_string())
        };
        match e {
            '0'..='9' => {
                let mut j = i + 1;
                let mut g = 0usize;
                while j < chars.len() && j < i + 3 && chars[j].is_ascii_digit() {
                    g = g * 10 + chars[j] as usize - '0' as usize;
                    j += 1;
                }
                crate::object::alloc::push_str(out, &group(g, it)?)?;
                i = j;
            }
            'g' => {
                let close = chars[i..].iter().position(|&x| x == '>').map(|p| p + i);
                let (Some('<'), Some(close)) = (chars.get(i + 2), close) else {
                    return Err(bad(it, format!("missing < at position {}", i + 2)));
                };
                let name: String = chars[i + 3..close].iter().collect();
                let g = match name.parse::<usize>() {
                    Ok(g) => g,
                    Err(_) => match names
                        .iter()
                        .position(|n| n.as_deref() == Some(name.as_str()))
                    {
                        Some(g) => g,
                        None => {
                            return Err(Exc::new(
                                ExcKind::IndexError,
                                format!("unknown group name '{name}'"),
                            ))
                        }
                    },
                };
                crate::object::alloc::push_str(out, &group(g, it)?)?;
                i = close + 1;
            }
            'n' => {
                out.push('\n');
                i += 2;
            }
            't' => {
                out.push('\t');
                i += 2;
            }
            'r' => {
                out.push('\r');
                i += 2;
            }
            '\\' => {
                out.push('\\');
                i += 2;
            }
            c if c.is_ascii_alphabetic() => {
                return Err(bad(it, format!("bad escape \\{c} at position {i}")));
            }
            c => {
                out.push('\\');
                out.push(c);
                i += 2;
            }
        }
    }
    Ok(())
}
