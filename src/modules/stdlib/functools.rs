//! `functools`: `partial`, `reduce`, and `wraps` / `lru_cache` / `cache` / `total_ordering` as
//! decorators that return what they decorate (they exist so programs using them run).

use std::rc::Rc;

use super::{draw, iter_of, module, set_fns};
use crate::object::value::{Module, NativeObject};
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
                "wraps(wrapped): a decorator (returns the wrapper unchanged here).",
                |_, a| {
                    let _ = a;
                    Ok(identity())
                },
            ),
            (
                "lru_cache",
                "lru_cache(maxsize=128): a decorator (calls are not cached here).",
                decorator_or_factory,
            ),
            (
                "cache",
                "cache(f): a decorator (calls are not cached here).",
                decorator_or_factory,
            ),
            (
                "total_ordering",
                "total_ordering(cls): returns cls (define the comparisons you use).",
                decorator_or_factory,
            ),
        ],
    );
    m
}

fn identity() -> Value {
    crate::object::builtin("decorator", "returns its argument", |_, mut a| {
        let f = a.required(0, "f")?;
        Ok(f)
    })
}

/// `@lru_cache` and `@lru_cache(maxsize=...)` alike: a callable first argument is decorated.
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
