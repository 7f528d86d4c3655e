//! `functools`: `partial`, `reduce`, `lru_cache` / `cache` (real caches keyed by the argument
//! values), and `wraps` / `total_ordering` as decorators that return what they decorate.

use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::rc::Rc;

use super::{draw, iter_of, module, set_fns};
use crate::object::value::{HashKey, Module, NativeObject};
use crate::object::{method, Args, Exc, Interpreter, Value};

pub fn build() -> Rc<Module> {
    let m = module("functools", "higher-order functions");
    set_fns(
        &m,
        &[
            (
                "partial",
                "partial(func, *args, **keywords): func with some arguments filled in.",
                partial,
            ),
            (
                "reduce",
                "reduce(function, iterable[, initial]): fold the items from the left.",
                reduce,
            ),
            (
                "wraps",
                "wraps(wrapped): a decorator giving the wrapper the wrapped function's __module__, __name__, __qualname__, __doc__ and __dict__, and __wrapped__.",
                |_, mut a| {
                    let wrapped = a.required(0, "wrapped")?;
                    a.finish(1)?;
                    Ok(method(
                        &wrapped,
                        "update_wrapper",
                        "update_wrapper(wrapper): wrapper made to look like the wrapped function.",
                        update_wrapper,
                    ))
                },
            ),
            (
                "lru_cache",
                "lru_cache(maxsize=128, typed=False): a decorator remembering the results of the latest maxsize calls (None: all).",
                lru_cache,
            ),
            ("cache", "cache(f): f remembering the result of every call.", |_, mut a| {
                let f = a.required(0, "user_function")?;
                a.finish(1)?;
                Ok(cached(f, None))
            }),
            (
                "total_ordering",
                "total_ordering(cls): returns cls (define the comparisons you use).",
                decorator_or_factory,
            ),
        ],
    );
    m
}

/// What `functools.update_wrapper` copies (`WRAPPER_ASSIGNMENTS`), and `__wrapped__`; an
/// attribute the wrapped object lacks is skipped, as in CPython.
fn update_wrapper(it: &mut dyn Interpreter, wrapped: &Value, mut a: Args) -> Result<Value, Exc> {
    let wrapper = a.required(0, "wrapper")?;
    a.finish(1)?;
    for name in ["__module__", "__name__", "__qualname__", "__doc__"] {
        if let Ok(v) = it.get_attr(wrapped, name) {
            crate::modules::python::builtins::set_attr(it, &wrapper, name, v)?;
        }
    }
    if let Value::Func(from) = wrapped {
        let extra: Vec<_> = from.dict.borrow().iter().cloned().collect();
        for (k, v) in extra {
            if !k.starts_with("__") {
                crate::modules::python::builtins::set_attr(it, &wrapper, &k, v)?;
            }
        }
    }
    crate::modules::python::builtins::set_attr(it, &wrapper, "__wrapped__", wrapped.clone())?;
    Ok(wrapper)
}

fn identity() -> Value {
    crate::object::builtin("decorator", "returns its argument", |_, mut a| {
        let f = a.required(0, "f")?;
        Ok(f)
    })
}

/// `@total_ordering`: the class as it is.
fn decorator_or_factory(_it: &mut dyn Interpreter, a: Args) -> Result<Value, Exc> {
    match a.pos.first() {
        Some(
            f @ (Value::Func(_)
            | Value::Builtin(_)
            | Value::Method(_)
            | Value::Class(_)
            | Value::Object(_)),
        ) => Ok(f.clone()),
        _ => Ok(identity()),
    }
}

pub struct Partial {
    func: Value,
    args: Vec<Value>,
    kw: Vec<(Rc<str>, Value)>,
}

impl NativeObject for Partial {
    fn type_name(&self) -> &str {
        "functools.partial"
    }
    fn repr(&self) -> String {
        format!("functools.partial(<{}>, ...)", self.func.type_name())
    }
    fn get_attr(&self, this: &Rc<dyn NativeObject>, name: &str) -> Option<Value> {
        match name {
            "func" => Some(self.func.clone()),
            "args" => Some(Value::tuple(self.args.clone())),
            "keywords" => {
                let mut d = crate::object::value::Dict::default();
                for (k, v) in &self.kw {
                    d.insert(
                        crate::object::value::HashKey::Str(k.clone()),
                        Value::Str(k.clone()),
                        v.clone(),
                    );
                }
                Some(Value::Dict(Rc::new(std::cell::RefCell::new(d))))
            }
            "__call__" => Some(method(
                &Value::Object(this.clone()),
                "__call__",
                "call func with the stored and the given arguments",
                |it, r, a| {
                    let Value::Object(o) = r else {
                        return Err(Exc::type_error("expected a partial"));
                    };
                    let Some(p) = o.as_any().downcast_ref::<Partial>() else {
                        return Err(Exc::type_error("expected a partial"));
                    };
                    let mut pos = p.args.clone();
                    pos.extend(a.pos);
                    let mut kw = p.kw.clone();
                    for (k, v) in a.kw {
                        kw.retain(|(x, _)| *x != k);
                        kw.push((k, v));
                    }
                    let func = p.func.clone();
                    it.call_value(
                        &func,
                        Args {
                            pos,
                            kw,
                            fname: a.fname,
                        },
                    )
                },
            )),
            _ => None,
        }
    }
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

fn partial(_it: &mut dyn Interpreter, a: Args) -> Result<Value, Exc> {
    let mut pos = a.pos.into_iter();
    let Some(func) = pos.next() else {
        return Err(Exc::type_error(
            "type 'partial' takes at least one argument",
        ));
    };
    if matches!(
        func,
        Value::None
            | Value::Int(_)
            | Value::Float(_)
            | Value::Str(_)
            | Value::List(_)
            | Value::Dict(_)
            | Value::Tuple(_)
    ) {
        return Err(Exc::type_error("the first argument must be callable"));
    }
    Ok(Value::Object(Rc::new(Partial {
        func,
        args: pos.collect(),
        kw: a.kw,
    })))
}

fn reduce(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let f = a.required(0, "function")?;
    let items = a.required(1, "iterable")?;
    let initial = a.take(2, "initial")?;
    a.finish(3)?;
    let iter = iter_of(it, &items)?;
    let mut acc = match initial {
        Some(v) => v,
        None => match draw(it, &iter)? {
            Some(v) => v,
            None => {
                return Err(Exc::type_error(
                    "reduce() of empty iterable with no initial value",
                ))
            }
        },
    };
    while let Some(x) = draw(it, &iter)? {
        it.check_interrupt()?;
        acc = it.call_value(&f, Args::positional(vec![acc, x]))?;
    }
    Ok(acc)
}

fn is_callable(v: &Value) -> bool {
    matches!(
        v,
        Value::Func(_) | Value::Builtin(_) | Value::Method(_) | Value::Class(_) | Value::Object(_)
    )
}

/// `@lru_cache` and `@lru_cache(maxsize=...)` alike: a callable first argument is decorated.
fn lru_cache(_it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let first = a.take(0, "maxsize")?;
    a.take(1, "typed")?;
    a.finish(2)?;
    let maxsize = match first {
        Some(f) if is_callable(&f) => return Ok(cached(f, Some(128))),
        None => Some(128),
        Some(Value::None) => None,
        Some(Value::Int(n)) => Some(n.max(0) as usize),
        Some(_) => {
            return Err(Exc::type_error(
                "Expected first argument to be an integer, a callable, or None",
            ))
        }
    };
    Ok(Value::Object(Rc::new(CacheFactory { maxsize })))
}

/// What `lru_cache(maxsize=...)` returns: the decorator proper.
struct CacheFactory {
    maxsize: Option<usize>,
}

impl NativeObject for CacheFactory {
    fn type_name(&self) -> &str {
        "function"
    }
    fn repr(&self) -> String {
        format!(
            "<function lru_cache.<locals>.decorating_function at {:#x}>",
            self as *const _ as usize
        )
    }
    fn get_attr(&self, this: &Rc<dyn NativeObject>, name: &str) -> Option<Value> {
        (name == "__call__").then(|| {
            method(
                &Value::Object(this.clone()),
                "decorating_function",
                "wraps a function in the cache",
                |_, r, mut a| {
                    let f = a.required(0, "user_function")?;
                    a.finish(1)?;
                    let maxsize = match r {
                        Value::Object(o) => o
                            .as_any()
                            .downcast_ref::<CacheFactory>()
                            .and_then(|c| c.maxsize),
                        _ => None,
                    };
                    Ok(cached(f, maxsize))
                },
            )
        })
    }
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

fn cached(func: Value, maxsize: Option<usize>) -> Value {
    Value::Object(Rc::new(Cached {
        func,
        maxsize,
        map: RefCell::new(HashMap::new()),
        tick: Cell::new(0),
        hits: Cell::new(0),
        misses: Cell::new(0),
    }))
}

/// A function wrapped by `lru_cache`/`cache`: results by argument values, the least recently
/// used dropped past `maxsize`.
struct Cached {
    func: Value,
    maxsize: Option<usize>,
    /// Arguments' key -> (result, last use, the arguments).
    map: RefCell<HashMap<HashKey, (Value, u64, Value)>>,
    tick: Cell<u64>,
    hits: Cell<u64>,
    misses: Cell<u64>,
}

fn as_cached(r: &Value) -> Result<&Cached, Exc> {
    match r {
        Value::Object(o) => o
            .as_any()
            .downcast_ref::<Cached>()
            .ok_or_else(|| Exc::type_error("expected an lru_cache wrapper")),
        _ => Err(Exc::type_error("expected an lru_cache wrapper")),
    }
}

fn cached_call(it: &mut dyn Interpreter, r: &Value, a: Args) -> Result<Value, Exc> {
    let c = as_cached(r)?;
    let mut key = a.pos.clone();
    for (k, v) in &a.kw {
        key.push(Value::Str(k.clone()));
        key.push(v.clone());
    }
    let args = Value::tuple(key);
    // Arguments equal by a class's `__eq__` share an entry; the stored arguments are what
    // the new ones are compared with.
    let key = crate::object::keys::key_among(it, &args, &|h| {
        c.map
            .borrow()
            .iter()
            .filter(|(k, _)| k.needs_eq() && crate::object::hash::key_hash(k) == h)
            .map(|(k, (_, _, stored))| (k.clone(), stored.clone()))
            .collect()
    })?;
    let t = c.tick.get() + 1;
    c.tick.set(t);
    if let Some(entry) = c.map.borrow_mut().get_mut(&key) {
        entry.1 = t;
        c.hits.set(c.hits.get() + 1);
        return Ok(entry.0.clone());
    }
    c.misses.set(c.misses.get() + 1);
    let func = c.func.clone();
    // No borrow is held across the call: the function may recurse into this cache.
    let v = it.call_value(&func, a)?;
    if c.maxsize == Some(0) {
        return Ok(v);
    }
    let mut map = c.map.borrow_mut();
    if c.maxsize.is_some_and(|m| map.len() >= m) {
        if let Some(oldest) = map
            .iter()
            .min_by_key(|(_, (_, used, _))| *used)
            .map(|(k, _)| k.clone())
        {
            map.remove(&oldest);
        }
    }
    map.insert(key, (v.clone(), t, args));
    Ok(v)
}

impl NativeObject for Cached {
    fn type_name(&self) -> &str {
        "functools._lru_cache_wrapper"
    }
    fn repr(&self) -> String {
        match &self.func {
            Value::Func(f) => format!(
                "<functools._lru_cache_wrapper object at {:#x}> of {}",
                self as *const _ as usize, f.name
            ),
            _ => format!(
                "<functools._lru_cache_wrapper object at {:#x}>",
                self as *const _ as usize
            ),
        }
    }
    fn get_attr(&self, this: &Rc<dyn NativeObject>, name: &str) -> Option<Value> {
        let r = Value::Object(this.clone());
        Some(match name {
            "__call__" => method(
                &r,
                "__call__",
                "the cached result, or the function's",
                cached_call,
            ),
            "__wrapped__" => self.func.clone(),
            "__name__" => match &self.func {
                Value::Func(f) => Value::Str(f.name.clone()),
                _ => return None,
            },
            "__doc__" => match &self.func {
                Value::Func(f) => f.doc.clone().map_or(Value::None, Value::Str),
                _ => Value::None,
            },
            "cache_clear" => method(
                &r,
                "cache_clear",
                "forget every cached result",
                |_, r, a| {
                    a.finish(0)?;
                    let c = as_cached(r)?;
                    c.map.borrow_mut().clear();
                    c.hits.set(0);
                    c.misses.set(0);
                    Ok(Value::None)
                },
            ),
            "cache_info" => method(
                &r,
                "cache_info",
                "CacheInfo(hits, misses, maxsize, currsize)",
                |it, r, a| {
                    a.finish(0)?;
                    let c = as_cached(r)?;
                    let fields = [
                        Value::Int(c.hits.get() as i64),
                        Value::Int(c.misses.get() as i64),
                        c.maxsize.map_or(Value::None, |m| Value::Int(m as i64)),
                        Value::Int(c.map.borrow().len() as i64),
                    ];
                    let mut args = Args::new(
                        "namedtuple",
                        vec![
                            Value::str("CacheInfo"),
                            Value::str("hits misses maxsize currsize"),
                        ],
                    );
                    args.kw.push((Rc::from("module"), Value::str("functools")));
                    let class = super::collections::namedtuple(it, args)?;
                    it.call_value(&class, Args::positional(fields.to_vec()))
                },
            ),
            _ => return None,
        })
    }
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}
