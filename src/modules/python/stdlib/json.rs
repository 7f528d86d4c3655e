//! `json`: `dumps`/`loads` with CPython's output (separators, `indent`, `sort_keys`,
//! `ensure_ascii`, `Infinity`/`NaN`) and its decoder's messages (`JSONDecodeError: Expecting
//! value: line 1 column 1 (char 0)`); `dump`/`load` go through the file object's `write`/`read`.

use std::rc::Rc;

use super::{exc_class, module, module_member, raise, set_fns};
use crate::object::class::Class;
use crate::object::format::float_repr;
use crate::object::value::{Dict, Module};
use crate::object::{hash_key, Args, Exc, ExcKind, Interpreter, Value};

pub fn build() -> Rc<Module> {
    let m = module("json", "JSON encoder and decoder");
    m.set(
        "JSONDecodeError",
        exc_class("JSONDecodeError", "json.decoder", ExcKind::ValueError).value(),
    );
    set_fns(
        &m,
        &[
            ("dumps", "dumps(obj, *, ensure_ascii=True, indent=None, separators=None, default=None, sort_keys=False): obj as a JSON string.", dumps),
            ("dump", "dump(obj, fp, **kw): write dumps(obj, **kw) to fp.", dump),
            ("loads", "loads(s): the Python value of a JSON document.", loads),
            ("load", "load(fp): loads(fp.read()).", load),
        ],
    );
    m
}

struct Options {
    ensure_ascii: bool,
    indent: Option<String>,
    item_sep: String,
    key_sep: String,
    sort_keys: bool,
    skipkeys: bool,
    default: Option<Value>,
}

fn options(it: &mut dyn Interpreter, a: &mut Args) -> Result<Options, Exc> {
    let truthy =
        |v: Option<Value>, d: bool| v.map(|v| v.truthy()).transpose().map(|b| b.unwrap_or(d));
    let ensure_ascii = truthy(a.take_kw("ensure_ascii"), true)?;
    let sort_keys = truthy(a.take_kw("sort_keys"), false)?;
    let skipkeys = truthy(a.take_kw("skipkeys"), false)?;
    let indent = match a.take_kw("indent") {
        None | Some(Value::None) => None,
        // CPython builds `' ' * indent` first: a size the system refuses is a MemoryError.
        Some(Value::Int(n)) => {
            let mut ind = crate::object::alloc::string(0)?;
            crate::object::alloc::push_repeated(&mut ind, " ", n.max(0) as usize)?;
            Some(ind)
        }
        Some(Value::Str(ref s)) => Some(s.to_string()),
        Some(other) => {
            return Err(Exc::type_error(format!(
                "indent must be an int or a str, not {}",
                other.type_name()
            )))
        }
    };
    let (mut item_sep, mut key_sep) = (
        if indent.is_some() { "," } else { ", " }.to_string(),
        ": ".to_string(),
    );
    if let Some(s) = a
        .take_kw("separators")
        .filter(|v| !matches!(v, Value::None))
    {
        let parts = it.iterate(&s)?;
        match parts.as_slice() {
            [Value::Str(i), Value::Str(k)] => {
                item_sep = i.to_string();
                key_sep = k.to_string();
            }
            _ => {
                return Err(Exc::value_error(
                    "separators must be a (item_separator, key_separator) pair of strings",
                ))
            }
        }
    }
    let default = a.take_kw("default").filter(|v| !matches!(v, Value::None));
    a.take_kw("allow_nan");
    a.take_kw("check_circular");
    Ok(Options {
        ensure_ascii,
        indent,
        item_sep,
        key_sep,
        sort_keys,
        skipkeys,
        default,
    })
}

fn dumps(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let obj = a.required(0, "obj")?;
    let o = options(it, &mut a)?;
    a.finish(1)?;
    let mut out = String::new();
    encode(it, &obj, &o, 0, &mut out)?;
    Ok(Value::str(&out))
}

fn dump(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let obj = a.required(0, "obj")?;
    let fp = a.required(1, "fp")?;
    let o = options(it, &mut a)?;
    a.finish(2)?;
    let mut out = String::new();
    encode(it, &obj, &o, 0, &mut out)?;
    let write = crate::modules::python::builtins::get_attr(it, &fp, "write")?;
    it.call_value(&write, Args::positional(vec![Value::str(&out)]))?;
    Ok(Value::None)
}

pub fn quote(s: &str, ensure_ascii: bool, out: &mut String) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            c if (c as u32) < 0x20 || (ensure_ascii && (c as u32) > 0x7e) => {
                let mut buf = [0u16; 2];
                for u in c.encode_utf16(&mut buf) {
                    out.push_str(&format!("\\u{:04x}", u));
                }
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

fn float_text(f: f64) -> String {
    if f.is_nan() {
        "NaN".into()
    } else if f.is_infinite() {
        if f > 0.0 { "Infinity" } else { "-Infinity" }.into()
    } else {
        float_repr(f)
    }
}

/// A dict key as JSON has it (a string), None to skip it.
fn key_text(k: &Value, o: &Options) -> Result<Option<String>, Exc> {
    Ok(Some(match k {
        Value::Str(s) => s.to_string(),
        Value::Bool(b) => b.to_string(),
        Value::Int(i) => i.to_string(),
        Value::BigInt(n) => crate::object::bigint::to_decimal(n)?,
        Value::Float(f) => float_text(*f),
        Value::None => "null".into(),
        other if o.skipkeys => {
            let _ = other;
            return Ok(None);
        }
        other => {
            return Err(Exc::type_error(format!(
                "keys must be str, int, float, bool or None, not {}",
                other.type_name()
            )))
        }
    }))
}

/// Nesting deeper than this is taken as a circular structure, as CPython reports one.
const MAX_DEPTH: usize = 1000;

fn newline(o: &Options, depth: usize, out: &mut String) -> Result<(), Exc> {
    if let Some(ind) = &o.indent {
        out.push('\n');
        crate::object::alloc::push_repeated(out, ind, depth)?;
    }
    Ok(())
}

fn encode(
    it: &mut dyn Interpreter,
    v: &Value,
    o: &Options,
    depth: usize,
    out: &mut String,
) -> Result<(), Exc> {
    if depth > MAX_DEPTH {
        return Err(Exc::new(
            ExcKind::RecursionError,
            "maximum recursion depth exceeded while encoding a JSON object",
        ));
    }
    // `dumps` of a big structure is one statement: an interrupt must reach it.
    it.check_interrupt()?;
    // A container met again inside itself is a cycle (CPython's `check_circular` markers).
    let container = matches!(v, Value::List(_) | Value::Dict(_)).then(|| v.identity());
    if let Some(id) = container {
        if ENCODING.with(|e| e.borrow().contains(&id)) {
            return Err(Exc::value_error("Circular reference detected"));
        }
        ENCODING.with(|e| e.borrow_mut().push(id));
    }
    // Enough native stack for the next level, also on a generator's own (smaller) stack.
    let r = crate::object::guard::grow(|| encode_value(it, v, o, depth, out));
    if container.is_some() {
        ENCODING.with(|e| e.borrow_mut().pop());
    }
    r
}

thread_local! {
    /// The containers being encoded, outermost first.
    static ENCODING: std::cell::RefCell<Vec<usize>> = const { std::cell::RefCell::new(Vec::new()) };
}

fn encode_value(
    it: &mut dyn Interpreter,
    v: &Value,
    o: &Options,
    depth: usize,
    out: &mut String,
) -> Result<(), Exc> {
    match v {
        Value::None => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Int(i) => out.push_str(&i.to_string()),
        Value::BigInt(n) => out.push_str(&crate::object::bigint::to_decimal(n)?),
        Value::Float(f) => out.push_str(&float_text(*f)),
        Value::Str(s) => quote(s, o.ensure_ascii, out),
        Value::List(_) | Value::Tuple(_) => {
            let items = match v {
                Value::List(l) => l.borrow().clone(),
                Value::Tuple(t) => t.as_ref().clone(),
                _ => Vec::new(),
            };
            encode_list(it, &items, o, depth, out)?;
        }
        Value::Dict(d) => {
            let entries = d.borrow().entries.clone();
            encode_dict(it, entries, o, depth, out)?;
        }
        Value::Instance(i) => {
            let state = i.base_state.borrow().clone();
            match state {
                Value::Dict(ref d)
                    if i.class()
                        .is_subclass_of(&Value::Type(crate::object::value::TypeKind::Dict)) =>
                {
                    let entries = d.borrow().entries.clone();
                    encode_dict(it, entries, o, depth, out)?;
                }
                Value::Tuple(ref t)
                    if i.class()
                        .is_subclass_of(&Value::Type(crate::object::value::TypeKind::Tuple)) =>
                {
                    encode_list(it, t, o, depth, out)?;
                }
                _ => return encode_default(it, v, o, depth, out),
            }
        }
        _ => return encode_default(it, v, o, depth, out),
    }
    Ok(())
}

fn encode_default(
    it: &mut dyn Interpreter,
    v: &Value,
    o: &Options,
    depth: usize,
    out: &mut String,
) -> Result<(), Exc> {
    match &o.default {
        Some(f) => {
            let r = it.call_value(f, Args::positional(vec![v.clone()]))?;
            encode(it, &r, o, depth + 1, out)
        }
        None => Err(Exc::type_error(format!(
            "Object of type {} is not JSON serializable",
            v.type_name()
        ))),
    }
}

fn encode_list(
    it: &mut dyn Interpreter,
    items: &[Value],
    o: &Options,
    depth: usize,
    out: &mut String,
) -> Result<(), Exc> {
    if items.is_empty() {
        out.push_str("[]");
        return Ok(());
    }
    out.push('[');
    for (n, x) in items.iter().enumerate() {
        if n > 0 {
            out.push_str(&o.item_sep);
        }
        newline(o, depth + 1, out)?;
        encode(it, x, o, depth + 1, out)?;
    }
    newline(o, depth, out)?;
    out.push(']');
    Ok(())
}

fn encode_dict(
    it: &mut dyn Interpreter,
    entries: Vec<(Value, Value)>,
    o: &Options,
    depth: usize,
    out: &mut String,
) -> Result<(), Exc> {
    let mut pairs = Vec::with_capacity(entries.len());
    for (k, v) in entries {
        if let Some(t) = key_text(&k, o)? {
            pairs.push((k, t, v));
        }
    }
    if o.sort_keys {
        let mut err = None;
        pairs.sort_by(|a, b| {
            crate::object::ops::order(&a.0, &b.0).unwrap_or_else(|| {
                err.get_or_insert_with(|| {
                    Exc::type_error(format!(
                        "'<' not supported between instances of '{}' and '{}'",
                        b.0.type_name(),
                        a.0.type_name()
                    ))
                });
                std::cmp::Ordering::Equal
            })
        });
        if let Some(e) = err {
            return Err(e);
        }
    }
    if pairs.is_empty() {
        out.push_str("{}");
        return Ok(());
    }
    out.push('{');
    for (n, (_, k, v)) in pairs.iter().enumerate() {
        if n > 0 {
            out.push_str(&o.item_sep);
        }
        newline(o, depth + 1, out)?;
        quote(k, o.ensure_ascii, out);
        out.push_str(&o.key_sep);
        encode(it, v, o, depth + 1, out)?;
    }
    newline(o, depth, out)?;
    out.push('}');
    Ok(())
}

// ------------------------------------------------------------------ decoding

fn loads(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let s = a.required(0, "s")?;
    a.finish(1)?;
    let Value::Str(ref s) = s else {
        return Err(Exc::type_error(format!(
            "the JSON object must be str, bytes or bytearray, not {}",
            s.type_name()
        )));
    };
    let class = match module_member(it, "json", "JSONDecodeError") {
        Some(Value::Class(ref c)) => c.clone(),
        _ => exc_class("JSONDecodeError", "json.decoder", ExcKind::ValueError),
    };
    let chars: Vec<char> = s.chars().collect();
    let mut p = Parser {
        s: &chars,
        i: 0,
        class,
        depth: 0,
    };
    p.ws();
    let v = p.value()?;
    p.ws();
    if p.i < chars.len() {
        return Err(p.err("Extra data", p.i));
    }
    Ok(v)
}

fn load(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let fp = a.required(0, "fp")?;
    a.finish(1)?;
    let read = crate::modules::python::builtins::get_attr(it, &fp, "read")?;
    let text = it.call_value(&read, Args::default())?;
    loads(it, Args::new("loads", vec![text]))
}

struct Parser<'a> {
    s: &'a [char],
    i: usize,
    class: Rc<Class>,
    depth: usize,
}

impl Parser<'_> {
    fn err(&self, msg: &str, pos: usize) -> Exc {
        let line = self.s[..pos].iter().filter(|&&c| c == '\n').count() + 1;
        let col = match self.s[..pos].iter().rposition(|&c| c == '\n') {
            Some(nl) => pos - nl,
            None => pos + 1,
        };
        let e = raise(
            &self.class,
            format!("{msg}: line {line} column {col} (char {pos})"),
        );
        // The attributes CPython's JSONDecodeError carries.
        if let Some(inst) = &e.instance {
            let mut attrs = inst.attrs.borrow_mut();
            attrs.set(Rc::from("msg"), Value::str(msg));
            attrs.set(
                Rc::from("doc"),
                Value::str(&self.s.iter().collect::<String>()),
            );
            attrs.set(Rc::from("pos"), Value::Int(pos as i64));
            attrs.set(Rc::from("lineno"), Value::Int(line as i64));
            attrs.set(Rc::from("colno"), Value::Int(col as i64));
        }
        e
    }
    fn ws(&mut self) {
        while self.i < self.s.len() && matches!(self.s[self.i], ' ' | '\t' | '\n' | '\r') {
            self.i += 1;
        }
    }
    fn starts(&self, word: &str) -> bool {
        let w: Vec<char> = word.chars().collect();
        self.s.len() >= self.i + w.len() && self.s[self.i..self.i + w.len()] == w[..]
    }
    fn value(&mut self) -> Result<Value, Exc> {
        let Some(&c) = self.s.get(self.i) else {
            return Err(self.err("Expecting value", self.i));
        };
        for (word, v) in [
            ("null", Value::None),
            ("true", Value::Bool(true)),
            ("false", Value::Bool(false)),
            ("NaN", Value::Float(f64::NAN)),
            ("Infinity", Value::Float(f64::INFINITY)),
            ("-Infinity", Value::Float(f64::NEG_INFINITY)),
        ] {
            if self.starts(word) {
                self.i += word.chars().count();
                return Ok(v);
            }
        }
        match c {
            '"' => Ok(Value::str(&self.string()?)),
            '[' | '{' => {
                self.depth += 1;
                if self.depth > 1000 {
                    return Err(Exc::new(
                        ExcKind::RecursionError,
                        "maximum recursion depth exceeded while decoding a JSON document",
                    ));
                }
                let r = crate::object::guard::grow(|| {
                    if c == '[' {
                        self.array()
                    } else {
                        self.object()
                    }
                });
                self.depth -= 1;
                r
            }
            '-' | '0'..='9' => self.number(),
            _ => Err(self.err("Expecting value", self.i)),
        }
    }
    fn number(&mut self) -> Result<Value, Exc> {
        let start = self.i;
        if self.s.get(self.i) == Some(&'-') {
            self.i += 1;
        }
        let digits = |p: &mut Parser| {
            let s = p.i;
            while p.i < p.s.len() && p.s[p.i].is_ascii_digit() {
                p.i += 1;
            }
            p.i - s
        };
        match self.s.get(self.i) {
            Some('0') => self.i += 1,
            Some(c) if c.is_ascii_digit() => {
                digits(self);
            }
            _ => return Err(self.err("Expecting value", start)),
        }
        let mut float = false;
        if self.s.get(self.i) == Some(&'.')
            && self.s.get(self.i + 1).is_some_and(|c| c.is_ascii_digit())
        {
            self.i += 1;
            digits(self);
            float = true;
        }
        if matches!(self.s.get(self.i), Some('e' | 'E')) {
            let save = self.i;
            self.i += 1;
            if matches!(self.s.get(self.i), Some('+' | '-')) {
                self.i += 1;
            }
            if digits(self) == 0 {
                self.i = save;
            } else {
                float = true;
            }
        }
        let text: String = self.s[start..self.i].iter().collect();
        if !float {
            if let Ok(i) = text.parse::<i64>() {
                return Ok(Value::Int(i));
            }
            let (negative, digits) = match text.strip_prefix('-') {
                Some(rest) => (true, rest),
                None => (false, text.as_str()),
            };
            if let Some(v) = crate::object::bigint::parse_digits(digits, 10)? {
                return Ok(if negative {
                    crate::object::bigint::negate(&v)
                } else {
                    v
                });
            }
        }
        Ok(Value::Float(text.parse::<f64>().unwrap_or(f64::NAN)))
    }
    fn string(&mut self) -> Result<String, Exc> {
        let start = self.i;
        self.i += 1;
        let mut out = String::new();
        loop {
            let Some(&c) = self.s.get(self.i) else {
                return Err(self.err("Unterminated string starting at", start));
            };
            match c {
                '"' => {
                    self.i += 1;
                    return Ok(out);
                }
                '\\' => {
                    let Some(&e) = self.s.get(self.i + 1) else {
                        return Err(self.err("Unterminated string starting at", start));
                    };
                    let simple = match e {
                        '"' => Some('"'),
                        '\\' => Some('\\'),
                        '/' => Some('/'),
                        'b' => Some('\u{8}'),
                        'f' => Some('\u{c}'),
                        'n' => Some('\n'),
                        'r' => Some('\r'),
                        't' => Some('\t'),
                        _ => None,
                    };
                    if let Some(x) = simple {
                        out.push(x);
                        self.i += 2;
                        continue;
                    }
                    if e != 'u' {
                        return Err(self.err("Invalid \\escape", self.i));
                    }
                    let u = self.hex4(self.i + 2)?;
                    self.i += 6;
                    if (0xd800..0xdc00).contains(&u) && self.starts("\\u") {
                        let lo = self.hex4(self.i + 2)?;
                        if (0xdc00..0xe000).contains(&lo) {
                            self.i += 6;
                            let cp = 0x10000 + ((u - 0xd800) << 10) + (lo - 0xdc00);
                            out.push(char::from_u32(cp).unwrap_or('\u{fffd}'));
                            continue;
                        }
                    }
                    out.push(char::from_u32(u).unwrap_or('\u{fffd}'));
                }
                c if (c as u32) < 0x20 => {
                    return Err(self.err("Invalid control character at", self.i));
                }
                c => {
                    out.push(c);
                    self.i += 1;
                }
            }
        }
    }
    fn hex4(&self, at: usize) -> Result<u32, Exc> {
        let digits: String = self
            .s
            .get(at..at + 4)
            .map(|d| d.iter().collect())
            .unwrap_or_default();
        if digits.len() == 4 {
            if let Ok(v) = u32::from_str_radix(&digits, 16) {
                return Ok(v);
            }
        }
        Err(self.err("Invalid \\uXXXX escape", at - 1))
    }
    fn array(&mut self) -> Result<Value, Exc> {
        self.i += 1;
        let mut items = Vec::new();
        self.ws();
        if self.s.get(self.i) == Some(&']') {
            self.i += 1;
            return Ok(Value::list(items));
        }
        loop {
            self.ws();
            items.push(self.value()?);
            self.ws();
            match self.s.get(self.i) {
                Some(',') => self.i += 1,
                Some(']') => {
                    self.i += 1;
                    return Ok(Value::list(items));
                }
                _ => return Err(self.err("Expecting ',' delimiter", self.i)),
            }
        }
    }
    fn object(&mut self) -> Result<Value, Exc> {
        self.i += 1;
        let mut d = Dict::default();
        self.ws();
        if self.s.get(self.i) == Some(&'}') {
            self.i += 1;
            return Ok(Value::Dict(Rc::new(std::cell::RefCell::new(d))));
        }
        loop {
            self.ws();
            if self.s.get(self.i) != Some(&'"') {
                return Err(self.err("Expecting property name enclosed in double quotes", self.i));
            }
            let k = Value::str(&self.string()?);
            self.ws();
            if self.s.get(self.i) != Some(&':') {
                return Err(self.err("Expecting ':' delimiter", self.i));
            }
            self.i += 1;
            self.ws();
            let v = self.value()?;
            d.insert(hash_key(&k)?, k, v);
            self.ws();
            match self.s.get(self.i) {
                Some(',') => self.i += 1,
                Some('}') => {
                    self.i += 1;
                    return Ok(Value::Dict(Rc::new(std::cell::RefCell::new(d))));
                }
                _ => return Err(self.err("Expecting ',' delimiter", self.i)),
            }
        }
    }
}
