//! The lazy iterators of CPython's built-ins: `zip`, `map`, `filter`, `enumerate`, `reversed`
//! and `iter(callable, sentinel)` draw an item from their sources only when asked for one, so
//! an infinite generator among `zip`'s arguments, or a `map` over one, works as in CPython.
//! Each is a native object with `__next__` (drawn by `for` loops, `list`, `next`, ...), named
//! and shown as CPython's (`<zip object at 0x…>`).

use std::cell::RefCell;
use std::rc::Rc;

use crate::object::error::{Exc, ExcKind};
use crate::object::value::{Args, NativeObject, Value};
use crate::object::Interpreter;

/// Where an argument's items come from: a range by arithmetic, a sequence copied when the
/// iterator is made (as `iter()` of it), anything else through its iterator's `__next__`.
enum Source {
    Range { next: i64, stop: i64, step: i64 },
    Items(std::vec::IntoIter<Value>),
    Next(Value),
}

impl Source {
    /// `iter(v)`, at once, as CPython's built-ins call it when they are made (so `zip(1)`
    /// fails there).
    fn of(it: &mut dyn Interpreter, v: Value) -> Result<Source, Exc> {
        Ok(match v {
            Value::Range(start, stop, step) => Source::Range {
                next: start,
                stop,
                step,
            },
            Value::List(_) | Value::Tuple(_) | Value::Str(_) | Value::Dict(_) | Value::Set(_) => {
                Source::Items(it.iterate(&v)?.into_iter())
            }
            other => {
                let iterator = super::classes::iter(it, Args::new("iter", vec![other]))?;
                match iterator {
                    Value::Object(ref o) if o.as_any().is::<Lazy>() => Source::Next(iterator),
                    v => Source::Next(v),
                }
            }
        })
    }

    /// The next item; None at the end.
    fn draw(&mut self, it: &mut dyn Interpreter) -> Result<Option<Value>, Exc> {
        match self {
            Source::Range { next, stop, step } => {
                let more = (*step > 0 && *next < *stop) || (*step < 0 && *next > *stop);
                if !more {
                    return Ok(None);
                }
                let v = *next;
                // Past the int limits the range ends.
                *next = next.checked_add(*step).unwrap_or(*stop);
                Ok(Some(Value::Int(v)))
            }
            Source::Items(items) => Ok(items.next()),
            Source::Next(iterator) => {
                let iterator = iterator.clone();
                match super::classes::next(it, Args::new("next", vec![iterator])) {
                    Ok(v) => Ok(Some(v)),
                    Err(e) if e.kind == ExcKind::StopIteration => Ok(None),
                    Err(e) => Err(e),
                }
            }
        }
    }
}

enum Kind {
    Zip,
    Map(Value),
    /// The predicate; None: the items' truth.
    Filter(Value),
    Enumerate(i64),
    /// `reversed`: the items left, taken from the end; its CPython type name.
    Reversed(&'static str),
    /// `iter(callable, sentinel)`.
    Callable(Value, Value),
}

/// A lazy iterator over its sources.
pub struct Lazy {
    kind: RefCell<Kind>,
    sources: RefCell<Vec<Source>>,
    /// Set at the first end: CPython's `zip` and `map` do not draw again.
    done: std::cell::Cell<bool>,
}

impl Lazy {
    fn value(kind: Kind, sources: Vec<Source>) -> Value {
        Value::Object(Rc::new(Lazy {
            kind: RefCell::new(kind),
            sources: RefCell::new(sources),
            done: std::cell::Cell::new(false),
        }))
    }

    fn name(&self) -> &'static str {
        match &*self.kind.borrow() {
            Kind::Zip => "zip",
            Kind::Map(_) => "map",
            Kind::Filter(_) => "filter",
            Kind::Enumerate(_) => "enumerate",
            Kind::Reversed(name) => name,
            Kind::Callable(..) => "callable_iterator",
        }
    }

    /// One draw from source `i`, with no borrow held while it runs (a source may be this
    /// iterator itself: `z = zip(...); zip(z, z)`).
    fn draw(&self, it: &mut dyn Interpreter, i: usize) -> Result<Option<Value>, Exc> {
        let taken = {
            let mut sources = self.sources.borrow_mut();
            match sources.get_mut(i) {
                Some(s) => std::mem::replace(s, Source::Items(Vec::new().into_iter())),
                None => return Ok(None),
            }
        };
        let mut source = taken;
        let r = source.draw(it);
        if let Some(s) = self.sources.borrow_mut().get_mut(i) {
            *s = source;
        }
        r
    }

    fn next(&self, it: &mut dyn Interpreter) -> Result<Option<Value>, Exc> {
        if self.done.get() {
            return Ok(None);
        }
        let item = self.step(it)?;
        if item.is_none() {
            self.done.set(true);
            // What the sources held goes now, as CPython's exhausted iterators let go.
            self.sources.borrow_mut().clear();
        }
        Ok(item)
    }

    fn step(&self, it: &mut dyn Interpreter) -> Result<Option<Value>, Exc> {
        let n = self.sources.borrow().len();
        let kind = match &*self.kind.borrow() {
            Kind::Zip => 0,
            Kind::Map(_) => 1,
            Kind::Filter(_) => 2,
            Kind::Enumerate(_) => 3,
            Kind::Reversed(_) => 4,
            Kind::Callable(..) => 5,
        };
        match kind {
            0 | 1 => {
                if n == 0 {
                    return Ok(None);
                }
                let mut items = Vec::with_capacity(n);
                for i in 0..n {
                    match self.draw(it, i)? {
                        Some(v) => items.push(v),
                        None => return Ok(None),
                    }
                }
                if kind == 0 {
                    return Ok(Some(Value::tuple(items)));
                }
                let Kind::Map(f) = &*self.kind.borrow() else {
                    return Ok(None);
                };
                let f = f.clone();
                it.call_value(&f, Args::new("map", items)).map(Some)
            }
            2 => loop {
                let Some(x) = self.draw(it, 0)? else {
                    return Ok(None);
                };
                let f = match &*self.kind.borrow() {
                    Kind::Filter(f) => f.clone(),
                    _ => Value::None,
                };
                let keep = match f {
                    Value::None => crate::object::class::truthy(it, &x)?,
                    f => {
                        let r = it.call_value(&f, Args::new("filter", vec![x.clone()]))?;
                        crate::object::class::truthy(it, &r)?
                    }
                };
                if keep {
                    return Ok(Some(x));
                }
            },
            3 => {
                let Some(x) = self.draw(it, 0)? else {
                    return Ok(None);
                };
                let mut k = self.kind.borrow_mut();
                let Kind::Enumerate(count) = &mut *k else {
                    return Ok(None);
                };
                let i = *count;
                *count = count.saturating_add(1);
                Ok(Some(Value::tuple(vec![Value::Int(i), x])))
            }
            4 => Ok(match self.sources.borrow_mut().first_mut() {
                Some(Source::Items(items)) => items.next_back(),
                _ => None,
            }),
            _ => {
                let (f, sentinel) = match &*self.kind.borrow() {
                    Kind::Callable(f, s) => (f.clone(), s.clone()),
                    _ => return Ok(None),
                };
                let v = it.call_value(&f, Args::new("iter", Vec::new()))?;
                if crate::object::ops::item_equals(it, &v, &sentinel)? {
                    return Ok(None);
                }
                Ok(Some(v))
            }
        }
    }
}

impl NativeObject for Lazy {
    fn type_name(&self) -> &str {
        self.name()
    }
    fn repr(&self) -> String {
        format!(
            "<{} object at {:#x}>",
            self.name(),
            self as *const _ as usize
        )
    }
    /// `type(zip(...)).__name__ == 'zip'`: one class per name, made once per thread.
    fn class_value(&self) -> Option<Value> {
        thread_local! {
            static CLASSES: RefCell<Vec<(&'static str, Value)>> = const { RefCell::new(Vec::new()) };
        }
        let name = self.name();
        CLASSES.with(|c| {
            let mut c = c.borrow_mut();
            if let Some((_, v)) = c.iter().find(|(n, _)| *n == name) {
                return Some(v.clone());
            }
            let class = Value::Class(super::stdlib::native_class(
                name,
                "builtins",
                Value::Type(crate::object::value::TypeKind::Object),
                "A lazy iterator.",
                &[],
            ));
            c.push((name, class.clone()));
            Some(class)
        })
    }
    fn get_attr(&self, this: &Rc<dyn NativeObject>, name: &str) -> Option<Value> {
        let receiver = Value::Object(this.clone());
        match name {
            "__next__" => Some(crate::object::method(
                &receiver,
                "__next__",
                "the next item; StopIteration at the end",
                |it, r, a| {
                    a.finish(0)?;
                    let Value::Object(o) = r else {
                        return Err(Exc::type_error("expected an iterator"));
                    };
                    let Some(lazy) = o.as_any().downcast_ref::<Lazy>() else {
                        return Err(Exc::type_error("expected an iterator"));
                    };
                    lazy.next(it)?
                        .ok_or_else(|| Exc::new(ExcKind::StopIteration, ""))
                },
            )),
            "__iter__" => Some(crate::object::method(
                &receiver,
                "__iter__",
                "the iterator itself",
                |_, r, _| Ok(r.clone()),
            )),
            // Drawn one item at a time by for loops (see `Interp::for_each`).
            "__lazy_iter__" => Some(Value::Bool(true)),
            _ => None,
        }
    }
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

/// `zip(*iterables)`.
pub fn zip(it: &mut dyn Interpreter, a: Args) -> Result<Value, Exc> {
    if let Some((k, _)) = a.kw.first() {
        return Err(Exc::type_error(format!(
            "zip() got an unexpected keyword argument '{k}'"
        )));
    }
    let mut sources = Vec::with_capacity(a.pos.len());
    for v in a.pos {
        sources.push(Source::of(it, v)?);
    }
    Ok(Lazy::value(Kind::Zip, sources))
}

/// `map(function, iterable, ...)`.
pub fn map(it: &mut dyn Interpreter, a: Args) -> Result<Value, Exc> {
    if !a.kw.is_empty() {
        return Err(Exc::type_error("map() takes no keyword arguments"));
    }
    if a.pos.len() < 2 {
        return Err(Exc::type_error("map() must have at least two arguments."));
    }
    let mut pos = a.pos.into_iter();
    let f = pos.next().unwrap_or(Value::None);
    let mut sources = Vec::new();
    for v in pos {
        sources.push(Source::of(it, v)?);
    }
    Ok(Lazy::value(Kind::Map(f), sources))
}

/// `filter(function or None, iterable)`.
pub fn filter(it: &mut dyn Interpreter, a: Args) -> Result<Value, Exc> {
    if !a.kw.is_empty() {
        return Err(Exc::type_error("filter() takes no keyword arguments"));
    }
    if a.pos.len() != 2 {
        return Err(Exc::type_error(format!(
            "filter expected 2 arguments, got {}",
            a.pos.len()
        )));
    }
    let mut pos = a.pos.into_iter();
    let f = pos.next().unwrap_or(Value::None);
    let source = Source::of(it, pos.next().unwrap_or(Value::None))?;
    Ok(Lazy::value(Kind::Filter(f), vec![source]))
}

/// `enumerate(iterable, start=0)`.
pub fn enumerate(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let v = a.required(0, "iterable")?;
    let start = match a.take(1, "start")? {
        Some(Value::Int(i)) => i,
        Some(Value::Bool(b)) => i64::from(b),
        Some(other) => {
            return Err(Exc::type_error(format!(
                "'{}' object cannot be interpreted as an integer",
                other.type_name()
            )))
        }
        None => 0,
    };
    a.finish(2)?;
    let source = Source::of(it, v)?;
    Ok(Lazy::value(Kind::Enumerate(start), vec![source]))
}

/// `reversed(seq)`: a sequence's items from the end (copied when it is made).
pub fn reversed(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let v = a.required(0, "sequence")?;
    a.finish(1)?;
    if let Some(r) = crate::object::big_range::reversed(&v) {
        return Ok(r);
    }
    if let Some(r) = crate::object::class::call_special(it, &v, "__reversed__", Vec::new())? {
        return Ok(r);
    }
    let name = match &v {
        Value::List(_) => "list_reverseiterator",
        Value::Range(..) => "range_iterator",
        Value::Dict(_) => "dict_reversekeyiterator",
        Value::Set(_) | Value::Generator(_) => {
            return Err(Exc::type_error(format!(
                "'{}' object is not reversible",
                v.type_name()
            )))
        }
        _ => "reversed",
    };
    let items = it.iterate(&v)?;
    Ok(Lazy::value(
        Kind::Reversed(name),
        vec![Source::Items(items.into_iter())],
    ))
}

/// `iter(callable, sentinel)`: calls `callable()` until it returns the sentinel.
pub fn callable_iterator(callable: Value, sentinel: Value) -> Result<Value, Exc> {
    let callable_ok = matches!(
        callable,
        Value::Func(_) | Value::Builtin(_) | Value::Method(_) | Value::Class(_) | Value::Type(_)
    ) || matches!(&callable, Value::Instance(_) | Value::Object(_));
    if !callable_ok {
        return Err(Exc::type_error("iter(v, w): v must be callable"));
    }
    Ok(Lazy::value(Kind::Callable(callable, sentinel), Vec::new()))
}
