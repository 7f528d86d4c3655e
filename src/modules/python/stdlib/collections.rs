//! `collections`: `OrderedDict`, `defaultdict`, `Counter` (dict subclasses whose dict is the
//! instance's `base_state`), `deque` (a list in `base_state`, `maxlen` an attribute) and
//! `namedtuple` (a tuple subclass made per call). Reprs and errors are CPython 3.11's.

use std::cell::RefCell;
use std::rc::Rc;

use super::{int, module, native_class, new_instance, set_fns, this_state};
use crate::object::class::{Class, ClassMethod};
use crate::object::format::repr;
use crate::object::ops::{self, Index, IndexItem};
use crate::object::value::{BuiltinFn, Dict, Module, TypeKind};
use crate::object::{builtin, hash_key, method, Args, Exc, ExcKind, Interpreter, Value};

pub fn build() -> Rc<Module> {
    let m = module("collections", "container datatypes");
    let dict_methods: Vec<(&'static str, BuiltinFn)> = vec![
        ("__getitem__", d_getitem),
        ("__setitem__", d_setitem),
        ("__delitem__", d_delitem),
        ("__contains__", d_contains),
        ("__len__", d_len),
        ("__iter__", d_iter),
        ("__eq__", d_eq),
        ("__repr__", d_repr),
        ("__getattr__", d_getattr),
    ];
    let with = |extra: &[(&'static str, BuiltinFn)]| {
        let mut v = dict_methods.clone();
        v.extend_from_slice(extra);
        v
    };
    let base = Value::Type(TypeKind::Dict);
    m.set(
        "OrderedDict",
        native_class(
            "OrderedDict",
            "collections",
            base.clone(),
            "Dictionary that remembers insertion order",
            &with(&[("__init__", od_init)]),
        )
        .value(),
    );
    m.set(
        "defaultdict",
        native_class(
            "defaultdict",
            "collections",
            base.clone(),
            "defaultdict(default_factory=None, /, [...]) --> dict with default factory",
            &with(&[("__init__", dd_init), ("__missing__", dd_missing)]),
        )
        .value(),
    );
    m.set(
        "Counter",
        native_class(
            "Counter",
            "collections",
            base,
            "Dict subclass for counting hashable items.",
            &with(&[
                ("__init__", c_init),
                ("__missing__", |_, _| Ok(Value::Int(0))),
                ("__add__", |it, a| c_arith(it, a, '+')),
                ("__sub__", |it, a| c_arith(it, a, '-')),
                ("__or__", |it, a| c_arith(it, a, '|')),
                ("__and__", |it, a| c_arith(it, a, '&')),
            ]),
        )
        .value(),
    );
    m.set(
        "deque",
        native_class(
            "deque",
            "collections",
            Value::Type(TypeKind::Object),
            "A list-like sequence optimized for data accesses near its endpoints.",
            &[
                ("__init__", dq_init),
                ("__len__", |_, mut a| {
                    let (_, s) = this_state(&mut a)?;
                    Ok(Value::Int(list_of(&s).borrow().len() as i64))
                }),
                ("__iter__", |_, mut a| {
                    let (_, s) = this_state(&mut a)?;
                    Ok(Value::list(list_of(&s).borrow().clone()))
                }),
                ("__getitem__", |_, mut a| {
                    let (_, s) = this_state(&mut a)?;
                    let k = a.required(1, "index")?;
                    let i = dq_index(&s, &k)?;
                    Ok(list_of(&s).borrow()[i].clone())
                }),
                ("__setitem__", |it, mut a| {
                    let _ = it;
                    let (_, s) = this_state(&mut a)?;
                    let k = a.required(1, "index")?;
                    let v = a.required(2, "value")?;
                    let i = dq_index(&s, &k)?;
                    list_of(&s).borrow_mut()[i] = v;
                    Ok(Value::None)
                }),
                ("__delitem__", |_, mut a| {
                    let (_, s) = this_state(&mut a)?;
                    let k = a.required(1, "index")?;
                    let i = dq_index(&s, &k)?;
                    list_of(&s).borrow_mut().remove(i);
                    Ok(Value::None)
                }),
                ("__contains__", |_, mut a| {
                    let (_, s) = this_state(&mut a)?;
                    let x = a.required(1, "value")?;
                    let found = list_of(&s)
                        .borrow()
                        .iter()
                        .any(|y| y.is(&x) || matches!(ops::equals(y, &x), Ok(true)));
                    Ok(Value::Bool(found))
                }),
                ("__eq__", |_, mut a| {
                    let (_, s) = this_state(&mut a)?;
                    let o = a.required(1, "other")?;
                    match &o {
                        Value::Instance(i) if i.class().name.as_ref() == "deque" => {
                            Ok(Value::Bool(ops::equals(&s, &i.base_state.borrow())?))
                        }
                        _ => Ok(Value::Bool(false)),
                    }
                }),
                ("__repr__", dq_repr),
                ("__getattr__", dq_getattr),
            ],
        )
        .value(),
    );
    set_fns(
        &m,
        &[(
            "namedtuple",
            "namedtuple(typename, field_names, *, rename=False, defaults=None, module=None): a tuple subclass with named fields.",
            namedtuple,
        )],
    );
    m
}

// ------------------------------------------------------------------ the dict family

fn dict_of(state: &Value) -> Result<Rc<RefCell<Dict>>, Exc> {
    match state {
        Value::Dict(d) => Ok(d.clone()),
        _ => Err(Exc::type_error(
            "the dict was not initialised (call __init__)",
        )),
    }
}

/// The entries of a mapping argument (a dict or one of these classes), else None.
fn mapping(v: &Value) -> Option<Vec<(Value, Value)>> {
    match v {
        Value::Dict(d) => Some(d.borrow().entries.clone()),
        Value::Instance(i) => match &*i.base_state.borrow() {
            Value::Dict(d) => Some(d.borrow().entries.clone()),
            _ => None,
        },
        _ => None,
    }
}

/// `dict.update(src, **kw)` into `d`.
fn update(
    it: &mut dyn Interpreter,
    d: &Rc<RefCell<Dict>>,
    src: Option<Value>,
    kw: Vec<(Rc<str>, Value)>,
) -> Result<(), Exc> {
    if let Some(src) = src {
        let pairs = match mapping(&src) {
            Some(p) => p,
            None => {
                let mut pairs = Vec::new();
                for (n, item) in it.iterate(&src)?.into_iter().enumerate() {
                    let kv = it.iterate(&item).map_err(|_| {
                        Exc::type_error(format!(
                            "cannot convert dictionary update sequence element #{n} to a sequence"
                        ))
                    })?;
                    if kv.len() != 2 {
                        return Err(Exc::value_error(format!(
                            "dictionary update sequence element #{n} has length {}; 2 is required",
                            kv.len()
                        )));
                    }
                    let mut kv = kv.into_iter();
                    pairs.push((
                        kv.next().unwrap_or(Value::None),
                        kv.next().unwrap_or(Value::None),
                    ));
                }
                pairs
            }
        };
        for (k, v) in pairs {
            let hk = crate::object::keys::dict_key(it, d, &k)?;
            d.borrow_mut().insert(hk, k, v);
        }
    }
    for (k, v) in kw {
        d.borrow_mut().insert(
            crate::object::value::HashKey::Str(k.clone()),
            Value::Str(k),
            v,
        );
    }
    Ok(())
}

fn set_state(this: &Value, state: Value) {
    if let Value::Instance(i) = this {
        *i.base_state.borrow_mut() = state;
    }
}

fn new_dict() -> Rc<RefCell<Dict>> {
    Rc::new(RefCell::new(Dict::default()))
}

fn od_init(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let this = a.required(0, "self")?;
    a.fname = "OrderedDict";
    let src = a.take(1, "other")?;
    let kw = std::mem::take(&mut a.kw);
    a.finish(2)?;
    let d = new_dict();
    update(it, &d, src, kw)?;
    set_state(&this, Value::Dict(d));
    Ok(Value::None)
}

fn dd_init(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let this = a.required(0, "self")?;
    let factory = a.pos.get(1).cloned().unwrap_or(Value::None);
    let callable = matches!(
        factory,
        Value::None
            | Value::Func(_)
            | Value::Builtin(_)
            | Value::Method(_)
            | Value::Class(_)
            | Value::Type(_)
            | Value::ExcType(_)
            | Value::Object(_)
    );
    if !callable {
        return Err(Exc::type_error("first argument must be callable or None"));
    }
    let src = a.pos.get(2).cloned();
    if a.pos.len() > 3 {
        return Err(Exc::type_error(format!(
            "dict expected at most 1 argument, got {}",
            a.pos.len() - 2
        )));
    }
    let d = new_dict();
    update(it, &d, src, std::mem::take(&mut a.kw))?;
    if let Value::Instance(i) = &this {
        i.attrs
            .borrow_mut()
            .set(Rc::from("default_factory"), factory);
    }
    set_state(&this, Value::Dict(d));
    Ok(Value::None)
}

fn dd_missing(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let (this, state) = this_state(&mut a)?;
    let key = a.required(1, "key")?;
    let factory = match &this {
        Value::Instance(i) => i.attrs.borrow().get("default_factory").cloned(),
        _ => None,
    };
    let Some(factory) = factory.filter(|f| !matches!(f, Value::None)) else {
        return Err(Exc::key_error(it, &key));
    };
    let v = it.call_value(&factory, Args::default())?;
    let d = dict_of(&state)?;
    let hk = crate::object::keys::dict_key(it, &d, &key)?;
    d.borrow_mut().insert(hk, key, v.clone());
    Ok(v)
}

fn d_getitem(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let (this, state) = this_state(&mut a)?;
    let key = a.required(1, "key")?;
    let d = dict_of(&state)?;
    let hk = crate::object::keys::dict_key(it, &d, &key)?;
    let found = d.borrow().get(&hk).cloned();
    if let Some(v) = found {
        return Ok(v);
    }
    // dict.__getitem__ asks the class's __missing__, as CPython does.
    match crate::object::class::call_special(it, &this, "__missing__", vec![key.clone()])? {
        Some(v) => Ok(v),
        None => Err(Exc::key_error(it, &key)),
    }
}

fn d_setitem(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let (_, state) = this_state(&mut a)?;
    let key = a.required(1, "key")?;
    let v = a.required(2, "value")?;
    let d = dict_of(&state)?;
    let hk = crate::object::keys::dict_key(it, &d, &key)?;
    d.borrow_mut().insert(hk, key, v);
    Ok(Value::None)
}

fn d_delitem(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let (_, state) = this_state(&mut a)?;
    let key = a.required(1, "key")?;
    let d = dict_of(&state)?;
    let hk = crate::object::keys::dict_key(it, &d, &key)?;
    let removed = d.borrow_mut().remove(&hk);
    match removed {
        Some(_) => Ok(Value::None),
        None => Err(Exc::key_error(it, &key)),
    }
}

fn d_contains(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let (_, state) = this_state(&mut a)?;
    let key = a.required(1, "key")?;
    let d = dict_of(&state)?;
    let hk = crate::object::keys::dict_key(it, &d, &key)?;
    let found = d.borrow().get(&hk).is_some();
    Ok(Value::Bool(found))
}

fn d_len(_it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let (_, state) = this_state(&mut a)?;
    Ok(Value::Int(dict_of(&state)?.borrow().len() as i64))
}

fn d_iter(_it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let (_, state) = this_state(&mut a)?;
    let keys = dict_of(&state)?
        .borrow()
        .entries
        .iter()
        .map(|(k, _)| k.clone())
        .collect();
    Ok(Value::list(keys))
}

fn d_eq(_it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let (this, state) = this_state(&mut a)?;
    let other_v = a.required(1, "other")?;
    let other = match &other_v {
        Value::Dict(_) => other_v.clone(),
        Value::Instance(i) => i.base_state.borrow().clone(),
        _ => return Ok(crate::object::class::not_implemented()),
    };
    if !ops::equals(&state, &other)? {
        return Ok(Value::Bool(false));
    }
    // Two OrderedDicts are equal only in the same order, as in CPython.
    if is_a(&this, "OrderedDict") && is_a(&other_v, "OrderedDict") {
        let (Value::Dict(x), Value::Dict(y)) = (&state, &other) else {
            return Ok(Value::Bool(false));
        };
        let xs: Vec<Value> = x.borrow().entries.iter().map(|(k, _)| k.clone()).collect();
        let ys: Vec<Value> = y.borrow().entries.iter().map(|(k, _)| k.clone()).collect();
        for (k1, k2) in xs.iter().zip(ys.iter()) {
            if !ops::equals(k1, k2)? {
                return Ok(Value::Bool(false));
            }
        }
    }
    Ok(Value::Bool(true))
}

fn class_name(this: &Value) -> Rc<str> {
    match this {
        Value::Instance(i) => i.class().name.clone(),
        _ => Rc::from("?"),
    }
}

fn is_a(this: &Value, name: &str) -> bool {
    match this {
        Value::Instance(i) => {
            i.class().name.as_ref() == name
                || i.class().mro.iter().any(|c| matches!(c, Value::Class(c) if c.name.as_ref() == name && c.module.as_ref() == "collections"))
        }
        _ => false,
    }
}

fn d_repr(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let (this, state) = this_state(&mut a)?;
    let name = class_name(&this);
    let d = dict_of(&state)?;
    let mut entries = d.borrow().entries.clone();
    if is_a(&this, "Counter") {
        if entries.is_empty() {
            return Ok(Value::str(&format!("{name}()")));
        }
        sort_by_count(&mut entries);
        let inner = repr(it, &Value::Dict(Rc::new(RefCell::new(dict_from(entries)?))))?;
        return Ok(Value::str(&format!("{name}({inner})")));
    }
    if is_a(&this, "defaultdict") {
        let f = match &this {
            Value::Instance(i) => i
                .attrs
                .borrow()
                .get("default_factory")
                .cloned()
                .unwrap_or(Value::None),
            _ => Value::None,
        };
        let f = repr(it, &f)?;
        let inner = repr(it, &state)?;
        return Ok(Value::str(&format!("{name}({f}, {inner})")));
    }
    if entries.is_empty() {
        return Ok(Value::str(&format!("{name}()")));
    }
    let pairs: Vec<Value> = entries
        .into_iter()
        .map(|(k, v)| Value::tuple(vec![k, v]))
        .collect();
    let inner = repr(it, &Value::list(pairs))?;
    Ok(Value::str(&format!("{name}({inner})")))
}

fn dict_from(entries: Vec<(Value, Value)>) -> Result<Dict, Exc> {
    let mut d = Dict::default();
    for (k, v) in entries {
        d.insert(hash_key(&k)?, k, v);
    }
    Ok(d)
}

/// Most common first; equal counts keep insertion order (Python's sort is stable).
fn sort_by_count(entries: &mut [(Value, Value)]) {
    entries.sort_by(|a, b| ops::order(&b.1, &a.1).unwrap_or(std::cmp::Ordering::Equal));
}

fn no_attr(this: &Value, name: &str) -> Exc {
    let cls = class_name(this);
    let shown = match cls.as_ref() {
        "deque" | "defaultdict" | "OrderedDict" => format!("collections.{cls}"),
        _ => cls.to_string(),
    };
    Exc::new(
        ExcKind::AttributeError,
        format!("'{shown}' object has no attribute '{name}'"),
    )
}

fn d_getattr(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let (this, state) = this_state(&mut a)?;
    let name = a.required(1, "name")?;
    let Value::Str(ref name) = name else {
        return Err(Exc::type_error("attribute name must be string"));
    };
    let counter = is_a(&this, "Counter");
    let ordered = is_a(&this, "OrderedDict");
    let m = |n: &'static str, doc: &'static str, f: crate::object::value::MethodFn| {
        Ok(method(&this, n, doc, f))
    };
    match name.as_ref() {
        "copy" => m("copy", "a shallow copy of the same class", |it, r, a| {
            a.finish(0)?;
            super::copy::shallow_value(it, r)
        }),
        "most_common" if counter => m(
            "most_common",
            "most_common(n=None): the n most common (element, count) pairs.",
            |_, r, mut a| {
                let n = a.take(0, "n")?;
                a.finish(1)?;
                let mut entries = dict_of(&state_of(r))?.borrow().entries.clone();
                sort_by_count(&mut entries);
                if let Some(n) = n.filter(|n| !matches!(n, Value::None)) {
                    entries.truncate(int(&n)?.max(0) as usize);
                }
                Ok(Value::list(
                    entries
                        .into_iter()
                        .map(|(k, v)| Value::tuple(vec![k, v]))
                        .collect(),
                ))
            },
        ),
        "elements" if counter => m(
            "elements",
            "elements(): each element repeated as many times as its count.",
            |it, r, a| {
                a.finish(0)?;
                let mut out = Vec::new();
                for (k, v) in dict_of(&state_of(r))?.borrow().entries.iter() {
                    for _ in 0..ops::as_i64(v).unwrap_or(0).max(0) {
                        out.push(k.clone());
                    }
                }
                super::iter_of(it, &Value::list(out))
            },
        ),
        "total" if counter => m("total", "total(): the sum of the counts.", |it, r, a| {
            a.finish(0)?;
            let mut t = Value::Int(0);
            for (_, v) in dict_of(&state_of(r))?.borrow().entries.clone() {
                t = ops::binary(it, crate::lang::ast::BinOp::Add, &t, &v)?;
            }
            Ok(t)
        }),
        "update" if counter => m(
            "update",
            "update(iterable_or_mapping): add the counts.",
            |it, r, mut a| {
                let src = a.take(0, "iterable")?;
                let kw = std::mem::take(&mut a.kw);
                a.finish(1)?;
                count_into(it, &dict_of(&state_of(r))?, src, kw, 1)?;
                Ok(Value::None)
            },
        ),
        "subtract" if counter => m(
            "subtract",
            "subtract(iterable_or_mapping): subtract the counts.",
            |it, r, mut a| {
                let src = a.take(0, "iterable")?;
                let kw = std::mem::take(&mut a.kw);
                a.finish(1)?;
                count_into(it, &dict_of(&state_of(r))?, src, kw, -1)?;
                Ok(Value::None)
            },
        ),
        "move_to_end" if ordered => m(
            "move_to_end",
            "move_to_end(key, last=True): move a key to either end.",
            |it, r, mut a| {
                let key = a.required(0, "key")?;
                let last = a.flag(1, "last", true)?;
                a.finish(2)?;
                let d = dict_of(&state_of(r))?;
                let hk = crate::object::keys::dict_key(it, &d, &key)?;
                let Some(v) = d.borrow_mut().remove(&hk) else {
                    return Err(Exc::key_error(it, &key));
                };
                let mut entries = std::mem::take(&mut d.borrow_mut().entries);
                if last {
                    entries.push((key, v));
                } else {
                    entries.insert(0, (key, v));
                }
                *d.borrow_mut() = dict_from(entries)?;
                Ok(Value::None)
            },
        ),
        "popitem" if ordered => m(
            "popitem",
            "popitem(last=True): remove and return the last (or first) pair.",
            |_, r, mut a| {
                let last = a.flag(0, "last", true)?;
                a.finish(1)?;
                let d = dict_of(&state_of(r))?;
                let mut entries = std::mem::take(&mut d.borrow_mut().entries);
                if entries.is_empty() {
                    return Err(Exc::new(ExcKind::KeyError, "'dictionary is empty'"));
                }
                let (k, v) = if last {
                    entries.pop().unwrap_or((Value::None, Value::None))
                } else {
                    entries.remove(0)
                };
                *d.borrow_mut() = dict_from(entries)?;
                Ok(Value::tuple(vec![k, v]))
            },
        ),
        "keys" | "values" | "items" | "get" | "pop" | "popitem" | "setdefault" | "update"
        | "clear" => crate::modules::python::builtins::get_attr(it, &state, name),
        "default_factory" => Ok(Value::None),
        _ => Err(no_attr(&this, name)),
    }
}

fn state_of(v: &Value) -> Value {
    match v {
        Value::Instance(i) => i.base_state.borrow().clone(),
        _ => Value::None,
    }
}

/// Adds (sign 1) or subtracts (-1) counts from an iterable of elements or a mapping of counts.
fn count_into(
    it: &mut dyn Interpreter,
    d: &Rc<RefCell<Dict>>,
    src: Option<Value>,
    kw: Vec<(Rc<str>, Value)>,
    sign: i64,
) -> Result<(), Exc> {
    let mut pairs: Vec<(Value, Value)> = Vec::new();
    match src {
        Some(Value::None) => {}
        Some(v) => match mapping(&v) {
            Some(p) => pairs = p,
            None => {
                for x in it.iterate(&v)? {
                    pairs.push((x, Value::Int(1)));
                }
            }
        },
        None => {}
    }
    for (k, v) in kw {
        pairs.push((Value::Str(k), v));
    }
    let op = if sign > 0 {
        crate::lang::ast::BinOp::Add
    } else {
        crate::lang::ast::BinOp::Sub
    };
    for (k, n) in pairs {
        let hk = crate::object::keys::dict_key(it, d, &k)?;
        let cur = d.borrow().get(&hk).cloned().unwrap_or(Value::Int(0));
        let new = ops::binary(it, op, &cur, &n)?;
        d.borrow_mut().insert(hk, k, new);
    }
    Ok(())
}

fn c_init(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let this = a.required(0, "self")?;
    a.fname = "Counter";
    let src = a.take(1, "iterable")?;
    let kw = std::mem::take(&mut a.kw);
    a.finish(2)?;
    let d = new_dict();
    count_into(it, &d, src, kw, 1)?;
    set_state(&this, Value::Dict(d));
    Ok(Value::None)
}

/// `c + d`, `c - d`, `c | d`, `c & d`: a new Counter keeping only positive counts.
fn c_arith(it: &mut dyn Interpreter, mut a: Args, op: char) -> Result<Value, Exc> {
    let (this, state) = this_state(&mut a)?;
    let other = a.required(1, "other")?;
    if !is_a(&other, "Counter") {
        return Ok(crate::object::class::not_implemented());
    }
    let mine = dict_of(&state)?.borrow().entries.clone();
    let theirs = dict_of(&state_of(&other))?;
    let mut out = Dict::default();
    let get = |d: &Rc<RefCell<Dict>>, k: &Value| -> Result<i64, Exc> {
        Ok(d.borrow()
            .get(&hash_key(k)?)
            .and_then(ops::as_i64)
            .unwrap_or(0))
    };
    let mine_d = dict_of(&state)?;
    let mut keys: Vec<Value> = mine.iter().map(|(k, _)| k.clone()).collect();
    for (k, _) in theirs.borrow().entries.iter() {
        if mine_d.borrow().get(&hash_key(k)?).is_none() {
            keys.push(k.clone());
        }
    }
    for k in keys {
        let (x, y) = (get(&mine_d, &k)?, get(&theirs, &k)?);
        let r = match op {
            '+' => x.saturating_add(y),
            '-' => x.saturating_sub(y),
            '|' => x.max(y),
            _ => x.min(y),
        };
        if r > 0 {
            out.insert(hash_key(&k)?, k, Value::Int(r));
        }
    }
    let _ = it;
    let Value::Instance(i) = &this else {
        return Ok(Value::None);
    };
    Ok(new_instance(
        &i.class(),
        Value::Dict(Rc::new(RefCell::new(out))),
    ))
}

// ------------------------------------------------------------------ deque

fn list_of(state: &Value) -> Rc<RefCell<Vec<Value>>> {
    match state {
        Value::List(l) => l.clone(),
        _ => Rc::new(RefCell::new(Vec::new())),
    }
}

fn maxlen_of(this: &Value) -> Option<usize> {
    match this {
        Value::Instance(i) => match i.attrs.borrow().get("maxlen") {
            Some(Value::Int(n)) => Some(*n as usize),
            _ => None,
        },
        _ => None,
    }
}

fn dq_init(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let this = a.required(0, "self")?;
    a.fname = "deque";
    let src = a.take(1, "iterable")?;
    let maxlen = a.take(2, "maxlen")?.unwrap_or(Value::None);
    a.finish(3)?;
    let maxlen = match &maxlen {
        Value::None => None,
        v => {
            let n = int(v)?;
            if n < 0 {
                return Err(Exc::value_error("maxlen must be non-negative"));
            }
            Some(n as usize)
        }
    };
    let mut items = match src {
        Some(v) => it.iterate(&v)?,
        None => Vec::new(),
    };
    if let Some(m) = maxlen {
        if items.len() > m {
            items.drain(..items.len() - m);
        }
    }
    if let Value::Instance(i) = &this {
        i.attrs.borrow_mut().set(
            Rc::from("maxlen"),
            maxlen.map_or(Value::None, |m| Value::Int(m as i64)),
        );
    }
    set_state(&this, Value::list(items));
    Ok(Value::None)
}

fn dq_index(state: &Value, k: &Value) -> Result<usize, Exc> {
    let n = list_of(state).borrow().len() as i64;
    let i = match k {
        Value::Int(i) => *i,
        Value::Bool(b) => *b as i64,
        other => {
            return Err(Exc::type_error(format!(
                "sequence index must be integer, not '{}'",
                other.type_name()
            )))
        }
    };
    let j = if i < 0 { i + n } else { i };
    if !(0..n).contains(&j) {
        return Err(Exc::new(ExcKind::IndexError, "deque index out of range"));
    }
    Ok(j as usize)
}

fn dq_repr(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let (this, state) = this_state(&mut a)?;
    let inner = repr(it, &state)?;
    let name = class_name(&this);
    Ok(Value::str(&match maxlen_of(&this) {
        Some(m) => format!("{name}({inner}, maxlen={m})"),
        None => format!("{name}({inner})"),
    }))
}

/// Appends at one end, dropping from the other past maxlen.
fn push(r: &Value, x: Value, left: bool) {
    let l = list_of(&state_of(r));
    let max = maxlen_of(r);
    let mut v = l.borrow_mut();
    if max == Some(0) {
        return;
    }
    if left {
        v.insert(0, x);
        if max.is_some_and(|m| v.len() > m) {
            v.pop();
        }
    } else {
        v.push(x);
        if max.is_some_and(|m| v.len() > m) {
            v.remove(0);
        }
    }
}

fn dq_getattr(_it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let (this, _) = this_state(&mut a)?;
    let name = a.required(1, "name")?;
    let Value::Str(ref name) = name else {
        return Err(Exc::type_error("attribute name must be string"));
    };
    let m = |n: &'static str, doc: &'static str, f: crate::object::value::MethodFn| {
        Ok(method(&this, n, doc, f))
    };
    match name.as_ref() {
        "append" => m(
            "append",
            "Add an element to the right side of the deque.",
            |_, r, mut a| {
                let x = a.required(0, "x")?;
                a.finish(1)?;
                push(r, x, false);
                Ok(Value::None)
            },
        ),
        "appendleft" => m(
            "appendleft",
            "Add an element to the left side of the deque.",
            |_, r, mut a| {
                let x = a.required(0, "x")?;
                a.finish(1)?;
                push(r, x, true);
                Ok(Value::None)
            },
        ),
        "extend" => m(
            "extend",
            "Extend the right side of the deque with elements from the iterable.",
            |it, r, mut a| {
                let x = a.required(0, "iterable")?;
                a.finish(1)?;
                for v in it.iterate(&x)? {
                    push(r, v, false);
                }
                Ok(Value::None)
            },
        ),
        "extendleft" => m(
            "extendleft",
            "Extend the left side of the deque with elements from the iterable.",
            |it, r, mut a| {
                let x = a.required(0, "iterable")?;
                a.finish(1)?;
                for v in it.iterate(&x)? {
                    push(r, v, true);
                }
                Ok(Value::None)
            },
        ),
        "pop" | "popleft" => {
            let f: crate::object::value::MethodFn = if name.as_ref() == "pop" {
                |_, r, a| {
                    a.finish(0)?;
                    list_of(&state_of(r))
                        .borrow_mut()
                        .pop()
                        .ok_or_else(|| Exc::new(ExcKind::IndexError, "pop from an empty deque"))
                }
            } else {
                |_, r, a| {
                    a.finish(0)?;
                    let l = list_of(&state_of(r));
                    let mut v = l.borrow_mut();
                    if v.is_empty() {
                        return Err(Exc::new(ExcKind::IndexError, "pop from an empty deque"));
                    }
                    Ok(v.remove(0))
                }
            };
            m(
                if name.as_ref() == "pop" {
                    "pop"
                } else {
                    "popleft"
                },
                "Remove and return an element from one end of the deque.",
                f,
            )
        }
        "clear" => m("clear", "Remove all elements from the deque.", |_, r, a| {
            a.finish(0)?;
            list_of(&state_of(r)).borrow_mut().clear();
            Ok(Value::None)
        }),
        "rotate" => m(
            "rotate",
            "Rotate the deque n steps to the right (default n=1).",
            |_, r, mut a| {
                let n = a.take(0, "n")?.map(|v| int(&v)).transpose()?.unwrap_or(1);
                a.finish(1)?;
                let l = list_of(&state_of(r));
                let mut v = l.borrow_mut();
                if !v.is_empty() {
                    let k = n.rem_euclid(v.len() as i64) as usize;
                    v.rotate_right(k);
                }
                Ok(Value::None)
            },
        ),
        "reverse" => m("reverse", "Reverse *IN PLACE*.", |_, r, a| {
            a.finish(0)?;
            list_of(&state_of(r)).borrow_mut().reverse();
            Ok(Value::None)
        }),
        "count" => m(
            "count",
            "Return number of occurrences of value.",
            |_, r, mut a| {
                let x = a.required(0, "value")?;
                a.finish(1)?;
                let n = list_of(&state_of(r))
                    .borrow()
                    .iter()
                    .filter(|y| y.is(&x) || matches!(ops::equals(y, &x), Ok(true)))
                    .count();
                Ok(Value::Int(n as i64))
            },
        ),
        "index" => m("index", "Return first index of value.", |it, r, mut a| {
            let x = a.required(0, "value")?;
            a.finish(1)?;
            let pos = list_of(&state_of(r))
                .borrow()
                .iter()
                .position(|y| y.is(&x) || matches!(ops::equals(y, &x), Ok(true)));
            match pos {
                Some(i) => Ok(Value::Int(i as i64)),
                None => Err(Exc::value_error(format!(
                    "{} is not in deque",
                    repr(it, &x)?
                ))),
            }
        }),
        "remove" => m(
            "remove",
            "Remove first occurrence of value.",
            |_, r, mut a| {
                let x = a.required(0, "value")?;
                a.finish(1)?;
                let l = list_of(&state_of(r));
                let pos = l
                    .borrow()
                    .iter()
                    .position(|y| y.is(&x) || matches!(ops::equals(y, &x), Ok(true)));
                match pos {
                    Some(i) => {
                        l.borrow_mut().remove(i);
                        Ok(Value::None)
                    }
                    None => Err(Exc::value_error("deque.remove(x): x not in deque")),
                }
            },
        ),
        "insert" => m("insert", "Insert value before index.", |_, r, mut a| {
            let i = int(&a.required(0, "index")?)?;
            let x = a.required(1, "value")?;
            a.finish(2)?;
            let l = list_of(&state_of(r));
            if maxlen_of(r).is_some_and(|m| l.borrow().len() >= m) {
                return Err(Exc::new(
                    ExcKind::IndexError,
                    "deque already at its maximum size",
                ));
            }
            let n = l.borrow().len() as i64;
            let j = if i < 0 { (i + n).max(0) } else { i.min(n) };
            l.borrow_mut().insert(j as usize, x);
            Ok(Value::None)
        }),
        "copy" => m("copy", "Return a shallow copy of a deque.", |it, r, a| {
            a.finish(0)?;
            super::copy::shallow_value(it, r)
        }),
        _ => Err(no_attr(&this, name)),
    }
}

// ------------------------------------------------------------------ namedtuple

fn is_identifier(s: &str) -> bool {
    let mut chars = s.chars();
    chars.next().is_some_and(|c| c.is_alphabetic() || c == '_')
        && chars.all(|c| c.is_alphanumeric() || c == '_')
}

const KEYWORDS: &[&str] = &[
    "False", "None", "True", "and", "as", "assert", "async", "await", "break", "class", "continue",
    "def", "del", "elif", "else", "except", "finally", "for", "from", "global", "if", "import",
    "in", "is", "lambda", "nonlocal", "not", "or", "pass", "raise", "return", "try", "while",
    "with", "yield",
];

pub(crate) fn namedtuple(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let typename = a.required(0, "typename")?;
    let fields = a.required(1, "field_names")?;
    let rename = a
        .take_kw("rename")
        .map(|v| v.truthy())
        .transpose()?
        .unwrap_or(false);
    let defaults = a.take_kw("defaults").filter(|v| !matches!(v, Value::None));
    let module_name = a.take_kw("module").filter(|v| !matches!(v, Value::None));
    a.finish(2)?;
    let Value::Str(ref typename) = typename else {
        return Err(Exc::type_error("namedtuple() typename must be str"));
    };
    let mut names: Vec<String> = match &fields {
        Value::Str(s) => s
            .replace(',', " ")
            .split_whitespace()
            .map(str::to_string)
            .collect(),
        other => it
            .iterate(other)?
            .into_iter()
            .map(|v| match v {
                Value::Str(ref s) => Ok(s.to_string()),
                _ => Err(Exc::type_error(
                    "Type names and field names must be strings",
                )),
            })
            .collect::<Result<_, _>>()?,
    };
    if rename {
        let mut seen = std::collections::HashSet::new();
        for (i, n) in names.iter_mut().enumerate() {
            if !is_identifier(n)
                || KEYWORDS.contains(&n.as_str())
                || n.starts_with('_')
                || !seen.insert(n.clone())
            {
                *n = format!("_{i}");
            }
        }
    }
    for n in std::iter::once(typename.to_string()).chain(names.iter().cloned()) {
        if !is_identifier(&n) {
            return Err(Exc::value_error(format!(
                "Type names and field names must be valid identifiers: '{n}'"
            )));
        }
        if KEYWORDS.contains(&n.as_str()) {
            return Err(Exc::value_error(format!(
                "Type names and field names cannot be a keyword: '{n}'"
            )));
        }
    }
    let mut seen = std::collections::HashSet::new();
    for n in &names {
        if n.starts_with('_') {
            return Err(Exc::value_error(format!(
                "Field names cannot start with an underscore: '{n}'"
            )));
        }
        if !seen.insert(n.clone()) {
            return Err(Exc::value_error(format!(
                "Encountered duplicate field name: '{n}'"
            )));
        }
    }
    let defaults = match defaults {
        Some(d) => it.iterate(&d)?,
        None => Vec::new(),
    };
    if defaults.len() > names.len() {
        return Err(Exc::type_error("Got more default values than field names"));
    }
    let module_name = match module_name {
        Some(Value::Str(ref s)) => s.to_string(),
        _ => "__main__".to_string(),
    };
    let class = native_class(
        typename,
        &module_name,
        Value::Type(TypeKind::Tuple),
        "",
        &[
            ("__init__", nt_init),
            ("__repr__", nt_repr),
            ("__getitem__", |it, mut a| {
                let (_, s) = this_state(&mut a)?;
                let k = a.required(1, "index")?;
                ops::get_item(it, &s, Index::Single(IndexItem::Value(k)))
            }),
            ("__len__", |_, mut a| {
                let (_, s) = this_state(&mut a)?;
                Ok(Value::Int(tuple_items(&s).len() as i64))
            }),
            ("__iter__", |_, mut a| Ok(this_state(&mut a)?.1)),
            ("__contains__", |_, mut a| {
                let (_, s) = this_state(&mut a)?;
                let x = a.required(1, "value")?;
                Ok(Value::Bool(tuple_items(&s).iter().any(|y| {
                    y.is(&x) || matches!(ops::equals(y, &x), Ok(true))
                })))
            }),
            ("__eq__", |_, mut a| {
                let (_, s) = this_state(&mut a)?;
                let o = a.required(1, "other")?;
                let o = match &o {
                    Value::Tuple(_) => o.clone(),
                    Value::Instance(i) if matches!(&*i.base_state.borrow(), Value::Tuple(_)) => {
                        i.base_state.borrow().clone()
                    }
                    _ => return Ok(crate::object::class::not_implemented()),
                };
                Ok(Value::Bool(ops::equals(&s, &o)?))
            }),
            ("__hash__", |_, mut a| {
                let (_, s) = this_state(&mut a)?;
                let hk = hash_key(&s)?;
                use std::hash::{Hash, Hasher};
                let mut h = std::collections::hash_map::DefaultHasher::new();
                hk.hash(&mut h);
                Ok(Value::Int(h.finish() as i64))
            }),
            ("__setattr__", |_, mut a| {
                let (this, _) = this_state(&mut a)?;
                let name = a.required(1, "name")?;
                let name = match name {
                    Value::Str(ref s) => s.clone(),
                    _ => Rc::from("?"),
                };
                if let Value::Instance(i) = &this {
                    if field_index(&i.class(), &name).is_some() {
                        return Err(Exc::new(ExcKind::AttributeError, "can't set attribute"));
                    }
                }
                Err(Exc::new(
                    ExcKind::AttributeError,
                    format!("'{}' object has no attribute '{name}'", class_name(&this)),
                ))
            }),
            ("__getattr__", nt_getattr),
        ],
    );
    {
        let mut attrs = class.attrs.borrow_mut();
        attrs.set(
            Rc::from("_fields"),
            Value::tuple(names.iter().map(|n| Value::str(n)).collect()),
        );
        // Class patterns match the fields by position (`case Point(x, y)`).
        attrs.set(
            Rc::from("__match_args__"),
            Value::tuple(names.iter().map(|n| Value::str(n)).collect()),
        );
        let mut fd = Dict::default();
        let first_default = names.len() - defaults.len();
        for (n, v) in names[first_default..].iter().zip(defaults) {
            fd.insert(
                crate::object::value::HashKey::Str(Rc::from(n.as_str())),
                Value::str(n),
                v,
            );
        }
        attrs.set(
            Rc::from("_field_defaults"),
            Value::Dict(Rc::new(RefCell::new(fd))),
        );
        attrs.set(
            Rc::from("_make"),
            Value::Object(Rc::new(ClassMethod(builtin(
                "_make",
                "Make a new object from a sequence or iterable",
                |it, mut a| {
                    let cls = a.required(0, "cls")?;
                    let items = a.required(1, "iterable")?;
                    a.finish(2)?;
                    let items = it.iterate(&items)?;
                    it.call_value(&cls, Args::positional(items))
                },
            )))),
        );
    }
    Ok(class.value())
}

fn tuple_items(s: &Value) -> Rc<Vec<Value>> {
    match s {
        Value::Tuple(t) => t.clone(),
        _ => Rc::new(Vec::new()),
    }
}

fn fields_of(class: &Rc<Class>) -> Vec<Rc<str>> {
    match class.lookup("_fields") {
        Some(Value::Tuple(ref t)) => t
            .iter()
            .filter_map(|v| match v {
                Value::Str(s) => Some(s.clone()),
                _ => None,
            })
            .collect(),
        _ => Vec::new(),
    }
}

fn field_index(class: &Rc<Class>, name: &str) -> Option<usize> {
    fields_of(class).iter().position(|f| f.as_ref() == name)
}

fn nt_init(_it: &mut dyn Interpreter, a: Args) -> Result<Value, Exc> {
    let mut pos = a.pos.into_iter();
    let Some(this) = pos.next() else {
        return Err(Exc::type_error("__new__() missing the class"));
    };
    let Value::Instance(inst) = &this else {
        return Err(Exc::type_error("expected a namedtuple instance"));
    };
    let class = inst.class();
    let fields = fields_of(&class);
    let name = &class.name;
    let pos: Vec<Value> = pos.collect();
    if pos.len() > fields.len() {
        return Err(Exc::type_error(format!(
            "{name}.__new__() takes {} positional arguments but {} were given",
            fields.len() + 1,
            pos.len() + 1
        )));
    }
    let mut values: Vec<Option<Value>> = fields.iter().map(|_| None).collect();
    for (i, v) in pos.into_iter().enumerate() {
        values[i] = Some(v);
    }
    for (k, v) in a.kw {
        match fields.iter().position(|f| *f == k) {
            Some(i) if values[i].is_some() => {
                return Err(Exc::type_error(format!(
                    "{name}.__new__() got multiple values for argument '{k}'"
                )))
            }
            Some(i) => values[i] = Some(v),
            None => {
                return Err(Exc::type_error(format!(
                    "{name}.__new__() got an unexpected keyword argument '{k}'"
                )))
            }
        }
    }
    let defaults = match class.lookup("_field_defaults") {
        Some(Value::Dict(ref d)) => d.borrow().clone(),
        _ => Dict::default(),
    };
    let mut missing = Vec::new();
    for (i, f) in fields.iter().enumerate() {
        if values[i].is_none() {
            match defaults.get(&crate::object::value::HashKey::Str(f.clone())) {
                Some(d) => values[i] = Some(d.clone()),
                None => missing.push(format!("'{f}'")),
            }
        }
    }
    if !missing.is_empty() {
        let list = match missing.len() {
            1 => missing[0].clone(),
            2 => format!("{} and {}", missing[0], missing[1]),
            _ => format!(
                "{}, and {}",
                missing[..missing.len() - 1].join(", "),
                missing[missing.len() - 1]
            ),
        };
        return Err(Exc::type_error(format!(
            "{name}.__new__() missing {} required positional argument{}: {list}",
            missing.len(),
            if missing.len() == 1 { "" } else { "s" }
        )));
    }
    *inst.base_state.borrow_mut() = Value::tuple(
        values
            .into_iter()
            .map(|v| v.unwrap_or(Value::None))
            .collect(),
    );
    Ok(Value::None)
}

pub(crate) fn nt_repr(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let (this, s) = this_state(&mut a)?;
    let Value::Instance(inst) = &this else {
        return Ok(Value::str("?"));
    };
    let fields = fields_of(&inst.class());
    let mut parts = Vec::new();
    for (f, v) in fields.iter().zip(tuple_items(&s).iter()) {
        parts.push(format!("{f}={}", repr(it, v)?));
    }
    Ok(Value::str(&format!(
        "{}({})",
        inst.class().name,
        parts.join(", ")
    )))
}

fn nt_getattr(_it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let (this, s) = this_state(&mut a)?;
    let name = a.required(1, "name")?;
    let Value::Str(ref name) = name else {
        return Err(Exc::type_error("attribute name must be string"));
    };
    let Value::Instance(inst) = &this else {
        return Ok(Value::None);
    };
    if let Some(i) = field_index(&inst.class(), name) {
        return Ok(tuple_items(&s).get(i).cloned().unwrap_or(Value::None));
    }
    match name.as_ref() {
        "_asdict" => Ok(method(
            &this,
            "_asdict",
            "Return a new dict which maps field names to their values.",
            |_, r, a| {
                a.finish(0)?;
                let Value::Instance(inst) = r else {
                    return Ok(Value::None);
                };
                let mut d = Dict::default();
                for (f, v) in fields_of(&inst.class())
                    .iter()
                    .zip(tuple_items(&inst.base_state.borrow()).iter())
                {
                    d.insert(
                        crate::object::value::HashKey::Str(f.clone()),
                        Value::Str(f.clone()),
                        v.clone(),
                    );
                }
                Ok(Value::Dict(Rc::new(RefCell::new(d))))
            },
        )),
        "_replace" => Ok(method(
            &this,
            "_replace",
            "Return a new namedtuple object replacing specified fields with new values",
            |_, r, a| {
                let Value::Instance(inst) = r else {
                    return Ok(Value::None);
                };
                let fields = fields_of(&inst.class());
                let mut values = tuple_items(&inst.base_state.borrow()).as_ref().clone();
                let mut unknown = Vec::new();
                for (k, v) in a.kw {
                    match fields.iter().position(|f| *f == k) {
                        Some(i) => values[i] = v,
                        None => unknown.push(format!("'{k}'")),
                    }
                }
                if !unknown.is_empty() {
                    return Err(Exc::value_error(format!(
                        "Got unexpected field names: [{}]",
                        unknown.join(", ")
                    )));
                }
                Ok(new_instance(&inst.class(), Value::tuple(values)))
            },
        )),
        "count" | "index" => crate::modules::python::builtins::get_attr(_it, &s, name),
        _ => Err(Exc::new(
            ExcKind::AttributeError,
            format!("'{}' object has no attribute '{name}'", inst.class().name),
        )),
    }
}
