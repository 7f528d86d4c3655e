//! `itertools`: lazy iterators as native objects with `__next__`, so a `for` loop draws them one
//! item at a time (`count()` is endless). Their inputs are drawn lazily too, except where CPython
//! also materialises them (`product`, `permutations`, `combinations`, `cycle`'s saved copy).

use std::cell::RefCell;
use std::rc::Rc;

use super::{draw, int, iter_of, module, set_fns, stop};
use crate::lang::ast::BinOp;
use crate::object::value::{Module, NativeObject};
use crate::object::{method, Args, Exc, Interpreter, Value};

pub(crate) type Step = Box<dyn FnMut(&mut dyn Interpreter) -> Result<Option<Value>, Exc>>;

/// One itertools iterator: `step` gives the next item, None at the end (and ever after).
pub struct Lazy {
    name: &'static str,
    step: RefCell<Option<Step>>,
    /// CPython's repr where it shows the state (`count(5)`, `repeat('x', 3)`).
    describe: Option<Box<dyn Fn() -> String>>,
}

/// A lazy iterator object named `name` whose items `step` gives (None: the end).
pub(crate) fn lazy(name: &'static str, step: Step) -> Value {
    Value::Object(Rc::new(Lazy {
        name,
        step: RefCell::new(Some(step)),
        describe: None,
    }))
}

fn lazy_described(name: &'static str, step: Step, describe: Box<dyn Fn() -> String>) -> Value {
    Value::Object(Rc::new(Lazy {
        name,
        step: RefCell::new(Some(step)),
        describe: Some(describe),
    }))
}

/// A number or string as repr shows it, for the reprs that need no interpreter.
fn plain_repr(v: &Value) -> String {
    match v {
        Value::Int(i) => i.to_string(),
        Value::Bool(b) => if *b { "True" } else { "False" }.into(),
        Value::Float(f) => crate::object::format::float_repr(*f),
        Value::Str(s) => crate::object::format::str_repr(s),
        Value::None => "None".into(),
        other => format!("<{} object>", other.type_name()),
    }
}

impl NativeObject for Lazy {
    fn type_name(&self) -> &str {
        self.name
    }
    fn repr(&self) -> String {
        match &self.describe {
            Some(d) => d(),
            None => format!(
                "<itertools.{} object at {:#x}>",
                self.name, self as *const _ as usize
            ),
        }
    }
    fn get_attr(&self, this: &Rc<dyn NativeObject>, name: &str) -> Option<Value> {
        let receiver = Value::Object(this.clone());
        match name {
            "__next__" => Some(method(
                &receiver,
                "__next__",
                "the next item; StopIteration at the end",
                next,
            )),
            "__iter__" => Some(method(
                &receiver,
                "__iter__",
                "the iterator itself",
                |_, r, _| Ok(r.clone()),
            )),
            "__lazy_iter__" => Some(Value::Bool(true)),
            _ => None,
        }
    }
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

fn next(it: &mut dyn Interpreter, r: &Value, a: Args) -> Result<Value, Exc> {
    a.finish(0)?;
    let Value::Object(o) = r else {
        return Err(Exc::type_error("expected an itertools iterator"));
    };
    let Some(l) = o.as_any().downcast_ref::<Lazy>() else {
        return Err(Exc::type_error("expected an itertools iterator"));
    };
    // The step is taken out while it runs, so a step that re-enters this iterator (a key
    // function drawing from it) sees it as exhausted instead of a double borrow.
    let Some(mut step) = l.step.borrow_mut().take() else {
        return Err(stop());
    };
    let r = step(it);
    if let Ok(Some(_)) = &r {
        *l.step.borrow_mut() = Some(step);
    }
    r?.ok_or_else(stop)
}

/// `chain`, a callable with `chain.from_iterable`.
struct Chain;

impl NativeObject for Chain {
    fn type_name(&self) -> &str {
        "type"
    }
    fn repr(&self) -> String {
        "<class 'itertools.chain'>".into()
    }
    fn get_attr(&self, this: &Rc<dyn NativeObject>, name: &str) -> Option<Value> {
        let receiver = Value::Object(this.clone());
        match name {
            "__call__" => Some(method(
                &receiver,
                "chain",
                "chain(*iterables): their items one after another.",
                |it, _, a| {
                    a.finish(usize::MAX)?;
                    let src = iter_of(it, &Value::list(a.pos))?;
                    chain_of(src)
                },
            )),
            "from_iterable" => Some(method(
                &receiver,
                "from_iterable",
                "chain.from_iterable(iterables): the items of each iterable in turn.",
                |it, _, mut a| {
                    let v = a.required(0, "iterable")?;
                    a.finish(1)?;
                    let src = iter_of(it, &v)?;
                    chain_of(src)
                },
            )),
            _ => None,
        }
    }
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

fn chain_of(sources: Value) -> Result<Value, Exc> {
    let mut current: Option<Value> = None;
    Ok(lazy(
        "chain",
        Box::new(move |it| loop {
            if let Some(c) = &current {
                if let Some(v) = draw(it, c)? {
                    return Ok(Some(v));
                }
                current = None;
            }
            match draw(it, &sources)? {
                Some(src) => current = Some(iter_of(it, &src)?),
                None => return Ok(None),
            }
        }),
    ))
}

pub fn build() -> Rc<Module> {
    let m = module("itertools", "iterators for efficient looping");
    m.set("chain", Value::Object(Rc::new(Chain)));
    set_fns(
        &m,
        &[
            ("count", "count(start=0, step=1): start, start+step, ... without end.", count),
            ("cycle", "cycle(iterable): its items, then again, without end.", cycle),
            ("repeat", "repeat(object[, times]): object, times times (or without end).", repeat),
            ("islice", "islice(iterable, stop) or islice(iterable, start, stop[, step]): a slice of an iterator.", islice),
            ("product", "product(*iterables, repeat=1): the cartesian product, as tuples.", product),
            ("permutations", "permutations(iterable, r=None): r-length orderings, as tuples.", permutations),
            ("combinations", "combinations(iterable, r): r-length subsequences in order, as tuples.", combinations),
            ("zip_longest", "zip_longest(*iterables, fillvalue=None): zip to the longest, filling the rest.", zip_longest),
            ("accumulate", "accumulate(iterable, func=operator.add, *, initial=None): running totals.", accumulate),
            ("starmap", "starmap(function, iterable): function(*args) for each args tuple.", starmap),
            ("groupby", "groupby(iterable, key=None): (key, group) for runs of items with equal keys.", groupby),
            ("takewhile", "takewhile(predicate, iterable): items while predicate holds.", |it, a| while_fn(it, a, true)),
            ("dropwhile", "dropwhile(predicate, iterable): items after predicate first fails.", |it, a| while_fn(it, a, false)),
            ("filterfalse", "filterfalse(predicate, iterable): items for which predicate is false.", filterfalse),
            ("compress", "compress(data, selectors): the data items whose selector is true.", compress),
            ("pairwise", "pairwise(iterable): overlapping pairs (a, b), (b, c), ...", pairwise),
        ],
    );
    m
}

fn add(it: &mut dyn Interpreter, a: &Value, b: &Value) -> Result<Value, Exc> {
    crate::object::ops::binary(it, BinOp::Add, a, b)
}

fn count(_it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let start = a.take(0, "start")?.unwrap_or(Value::Int(0));
    let step = a.take(1, "step")?.unwrap_or(Value::Int(1));
    a.finish(2)?;
    for v in [&start, &step] {
        if crate::object::ops::as_f64(v).is_none() {
            return Err(Exc::type_error("a number is required"));
        }
    }
    let cur = Rc::new(RefCell::new(start));
    let shown = cur.clone();
    let unit = matches!(step, Value::Int(1));
    let step_text = plain_repr(&step);
    Ok(lazy_described(
        "count",
        Box::new(move |it| {
            let out = cur.borrow().clone();
            let next = add(it, &out, &step)?;
            *cur.borrow_mut() = next;
            Ok(Some(out))
        }),
        Box::new(move || {
            let c = plain_repr(&shown.borrow());
            if unit {
                format!("count({c})")
            } else {
                format!("count({c}, {step_text})")
            }
        }),
    ))
}

fn cycle(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let v = a.required(0, "iterable")?;
    a.finish(1)?;
    let src = iter_of(it, &v)?;
    let mut saved: Vec<Value> = Vec::new();
    let mut drained = false;
    let mut i = 0usize;
    Ok(lazy(
        "cycle",
        Box::new(move |it| {
            if !drained {
                if let Some(x) = draw(it, &src)? {
                    saved.push(x.clone());
                    return Ok(Some(x));
                }
                drained = true;
            }
            if saved.is_empty() {
                return Ok(None);
            }
            let x = saved[i % saved.len()].clone();
            i += 1;
            Ok(Some(x))
        }),
    ))
}

fn repeat(_it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let obj = a.required(0, "object")?;
    let times = a.take(1, "times")?.map(|v| int(&v)).transpose()?;
    a.finish(2)?;
    let left = Rc::new(std::cell::Cell::new(times.map(|t| t.max(0))));
    let shown = left.clone();
    let obj_text = plain_repr(&obj);
    Ok(lazy_described(
        "repeat",
        Box::new(move |_| {
            if let Some(n) = left.get() {
                if n == 0 {
                    return Ok(None);
                }
                left.set(Some(n - 1));
            }
            Ok(Some(obj.clone()))
        }),
        Box::new(move || match shown.get() {
            Some(n) => format!("repeat({obj_text}, {n})"),
            None => format!("repeat({obj_text})"),
        }),
    ))
}

fn slice_arg(v: Option<Value>, what: &str) -> Result<Option<i64>, Exc> {
    match v {
        None | Some(Value::None) => Ok(None),
        Some(Value::Int(i)) if i >= 0 => Ok(Some(i)),
        Some(_) => Err(Exc::value_error(format!(
            "{what} argument for islice() must be None or an integer: 0 <= x <= sys.maxsize."
        ))),
    }
}

fn islice(it: &mut dyn Interpreter, a: Args) -> Result<Value, Exc> {
    a.finish(4)?;
    let mut pos = a.pos.into_iter();
    let Some(v) = pos.next() else {
        return Err(Exc::type_error(
            "islice expected at least 2 arguments, got 0",
        ));
    };
    let rest: Vec<Value> = pos.collect();
    let (start, stop_at, step) = match rest.len() {
        1 => (0, slice_arg(rest.first().cloned(), "Stop")?, 1),
        2 | 3 => {
            let start = slice_arg(rest.first().cloned(), "Indices")?.unwrap_or(0);
            let stop_at = slice_arg(rest.get(1).cloned(), "Stop")?;
            let step = match rest.get(2) {
                None | Some(Value::None) => 1,
                Some(Value::Int(s)) if *s >= 1 => *s,
                Some(_) => {
                    return Err(Exc::value_error(
                        "Step for islice() must be a positive integer or None.",
                    ))
                }
            };
            (start, stop_at, step)
        }
        n => {
            return Err(Exc::type_error(format!(
                "islice expected at least 2 arguments, got {}",
                n + 1
            )))
        }
    };
    let src = iter_of(it, &v)?;
    let mut i: i64 = 0;
    let mut next_yield = start;
    Ok(lazy(
        "islice",
        Box::new(move |it| loop {
            if stop_at.is_some_and(|s| next_yield >= s) {
                return Ok(None);
            }
            let Some(x) = draw(it, &src)? else {
                return Ok(None);
            };
            let here = i;
            i += 1;
            if here == next_yield {
                next_yield += step;
                return Ok(Some(x));
            }
        }),
    ))
}

fn product(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let times = a
        .take_kw("repeat")
        .map(|v| int(&v))
        .transpose()?
        .unwrap_or(1);
    a.finish(usize::MAX)?;
    if times < 0 {
        return Err(Exc::value_error("repeat argument cannot be negative"));
    }
    let mut pools = Vec::new();
    for v in &a.pos {
        pools.push(it.iterate(v)?);
    }
    // CPython holds repeat copies of the pools too; past this it is a mistake, not a program.
    if (times as u128) * (pools.len() as u128) > 1_000_000 {
        return Err(Exc::new(
            crate::object::ExcKind::MemoryError,
            format!(
                "product() of {} iterables repeated {times} times is too large",
                pools.len()
            ),
        ));
    }
    let pools: Vec<Vec<Value>> = (0..times).flat_map(|_| pools.clone()).collect();
    let mut idx: Option<Vec<usize>> = if pools.iter().any(|p| p.is_empty()) {
        None
    } else {
        Some(vec![0; pools.len()])
    };
    Ok(lazy(
        "product",
        Box::new(move |_| {
            let Some(cur) = &mut idx else { return Ok(None) };
            let out = Value::tuple(cur.iter().zip(&pools).map(|(&i, p)| p[i].clone()).collect());
            // Advance the odometer, rightmost fastest.
            let mut k = cur.len();
            loop {
                if k == 0 {
                    idx = None;
                    break;
                }
                k -= 1;
                cur[k] += 1;
                if cur[k] < pools[k].len() {
                    break;
                }
                cur[k] = 0;
            }
            Ok(Some(out))
        }),
    ))
}

fn permutations(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let v = a.required(0, "iterable")?;
    let r = a.take(1, "r")?;
    a.finish(2)?;
    let pool = it.iterate(&v)?;
    let n = pool.len();
    let r = match r {
        None | Some(Value::None) => n,
        Some(x) => {
            let r = int(&x)?;
            if r < 0 {
                return Err(Exc::value_error("r must be non-negative"));
            }
            r as usize
        }
    };
    // CPython's algorithm (the itertools docs' pure-Python equivalent).
    let mut indices: Vec<usize> = (0..n).collect();
    let mut cycles: Vec<usize> = (0..r.min(n)).map(|i| n - i).collect();
    let mut first = true;
    let mut done = r > n;
    Ok(lazy(
        "permutations",
        Box::new(move |_| {
            if done {
                return Ok(None);
            }
            let emit = |indices: &[usize]| {
                Value::tuple(indices[..r].iter().map(|&i| pool[i].clone()).collect())
            };
            if first {
                first = false;
                return Ok(Some(emit(&indices)));
            }
            for i in (0..r).rev() {
                cycles[i] -= 1;
                if cycles[i] == 0 {
                    let x = indices.remove(i);
                    indices.push(x);
                    cycles[i] = n - i;
                } else {
                    let j = cycles[i];
                    indices.swap(i, n - j);
                    return Ok(Some(emit(&indices)));
                }
            }
            done = true;
            Ok(None)
        }),
    ))
}

fn combinations(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let v = a.required(0, "iterable")?;
    let r = int(&a.required(1, "r")?)?;
    a.finish(2)?;
    if r < 0 {
        return Err(Exc::value_error("r must be non-negative"));
    }
    let pool = it.iterate(&v)?;
    let n = pool.len();
    let r = r as usize;
    let mut indices: Vec<usize> = (0..r).collect();
    let mut first = true;
    let mut done = r > n;
    Ok(lazy(
        "combinations",
        Box::new(move |_| {
            if done {
                return Ok(None);
            }
            if !first {
                let Some(i) = (0..r).rev().find(|&i| indices[i] != i + n - r) else {
                    done = true;
                    return Ok(None);
                };
                indices[i] += 1;
                for j in i + 1..r {
                    indices[j] = indices[j - 1] + 1;
                }
            }
            first = false;
            Ok(Some(Value::tuple(
                indices.iter().map(|&i| pool[i].clone()).collect(),
            )))
        }),
    ))
}

fn zip_longest(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let fill = a.take_kw("fillvalue").unwrap_or(Value::None);
    a.finish(usize::MAX)?;
    let mut srcs: Vec<Option<Value>> = Vec::new();
    for v in &a.pos {
        srcs.push(Some(iter_of(it, v)?));
    }
    Ok(lazy(
        "zip_longest",
        Box::new(move |it| {
            if srcs.is_empty() {
                return Ok(None);
            }
            let mut out = Vec::with_capacity(srcs.len());
            let mut live = 0;
            for s in srcs.iter_mut() {
                let x = match s {
                    Some(src) => match draw(it, src)? {
                        Some(x) => {
                            live += 1;
                            x
                        }
                        None => {
                            *s = None;
                            fill.clone()
                        }
                    },
                    None => fill.clone(),
                };
                out.push(x);
            }
            Ok((live > 0).then(|| Value::tuple(out)))
        }),
    ))
}

fn accumulate(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let v = a.required(0, "iterable")?;
    let func = a.take(1, "func")?.filter(|f| !matches!(f, Value::None));
    let initial = a.take_kw("initial").filter(|f| !matches!(f, Value::None));
    a.finish(2)?;
    let src = iter_of(it, &v)?;
    let mut total: Option<Value> = None;
    let mut pending = initial;
    Ok(lazy(
        "accumulate",
        Box::new(move |it| {
            if let Some(init) = pending.take() {
                total = Some(init.clone());
                return Ok(Some(init));
            }
            let Some(x) = draw(it, &src)? else {
                return Ok(None);
            };
            let next = match (&total, &func) {
                (None, _) => x,
                (Some(t), None) => add(it, t, &x)?,
                (Some(t), Some(f)) => it.call_value(f, Args::positional(vec![t.clone(), x]))?,
            };
            total = Some(next.clone());
            Ok(Some(next))
        }),
    ))
}

fn starmap(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let f = a.required(0, "function")?;
    let v = a.required(1, "iterable")?;
    a.finish(2)?;
    let src = iter_of(it, &v)?;
    Ok(lazy(
        "starmap",
        Box::new(move |it| {
            let Some(args) = draw(it, &src)? else {
                return Ok(None);
            };
            let args = it.iterate(&args)?;
            it.call_value(&f, Args::positional(args)).map(Some)
        }),
    ))
}

fn key_of(it: &mut dyn Interpreter, key: &Option<Value>, x: &Value) -> Result<Value, Exc> {
    match key {
        Some(k) => it.call_value(k, Args::positional(vec![x.clone()])),
        None => Ok(x.clone()),
    }
}

fn groupby(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let v = a.required(0, "iterable")?;
    let key = a.take(1, "key")?.filter(|f| !matches!(f, Value::None));
    a.finish(2)?;
    let src = iter_of(it, &v)?;
    // The first item of the next group, drawn while finishing the previous one.
    let mut lookahead: Option<(Value, Value)> = None;
    let mut started = false;
    Ok(lazy(
        "groupby",
        Box::new(move |it| {
            if !started {
                started = true;
                if let Some(x) = draw(it, &src)? {
                    let k = key_of(it, &key, &x)?;
                    lookahead = Some((k, x));
                }
            }
            let Some((k, first)) = lookahead.take() else {
                return Ok(None);
            };
            // Each group is gathered when it is reached (CPython shares one iterator instead).
            let mut group = vec![first];
            while let Some(x) = draw(it, &src)? {
                let kx = key_of(it, &key, &x)?;
                let same = crate::object::ops::compare(it, crate::lang::ast::CmpOp::Eq, &kx, &k)?;
                if crate::object::class::truthy(it, &same)? {
                    group.push(x);
                } else {
                    lookahead = Some((kx, x));
                    break;
                }
            }
            let g = iter_of(it, &Value::list(group))?;
            Ok(Some(Value::tuple(vec![k, g])))
        }),
    ))
}

fn truth(it: &mut dyn Interpreter, f: &Value, x: &Value) -> Result<bool, Exc> {
    let r = if matches!(f, Value::None) {
        x.clone()
    } else {
        it.call_value(f, Args::positional(vec![x.clone()]))?
    };
    crate::object::class::truthy(it, &r)
}

fn while_fn(it: &mut dyn Interpreter, mut a: Args, take: bool) -> Result<Value, Exc> {
    let f = a.required(0, "predicate")?;
    let v = a.required(1, "iterable")?;
    a.finish(2)?;
    let src = iter_of(it, &v)?;
    let mut switched = false;
    Ok(lazy(
        if take { "takewhile" } else { "dropwhile" },
        Box::new(move |it| loop {
            let Some(x) = draw(it, &src)? else {
                return Ok(None);
            };
            if switched {
                return Ok((!take).then_some(x));
            }
            if truth(it, &f, &x)? {
                if take {
                    return Ok(Some(x));
                }
            } else {
                switched = true;
                return Ok((!take).then_some(x));
            }
        }),
    ))
}

fn filterfalse(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let f = a.required(0, "function")?;
    let v = a.required(1, "iterable")?;
    a.finish(2)?;
    let src = iter_of(it, &v)?;
    Ok(lazy(
        "filterfalse",
        Box::new(move |it| loop {
            let Some(x) = draw(it, &src)? else {
                return Ok(None);
            };
            if !truth(it, &f, &x)? {
                return Ok(Some(x));
            }
        }),
    ))
}

fn compress(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let d = a.required(0, "data")?;
    let s = a.required(1, "selectors")?;
    a.finish(2)?;
    let (d, s) = (iter_of(it, &d)?, iter_of(it, &s)?);
    Ok(lazy(
        "compress",
        Box::new(move |it| loop {
            let Some(x) = draw(it, &d)? else {
                return Ok(None);
            };
            let Some(sel) = draw(it, &s)? else {
                return Ok(None);
            };
            if crate::object::class::truthy(it, &sel)? {
                return Ok(Some(x));
            }
        }),
    ))
}

fn pairwise(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let v = a.required(0, "iterable")?;
    a.finish(1)?;
    let src = iter_of(it, &v)?;
    let mut prev: Option<Value> = None;
    Ok(lazy(
        "pairwise",
        Box::new(move |it| {
            if prev.is_none() {
                prev = draw(it, &src)?;
                if prev.is_none() {
                    return Ok(None);
                }
            }
            let Some(x) = draw(it, &src)? else {
                return Ok(None);
            };
            let p = prev.replace(x.clone()).unwrap_or(Value::None);
            Ok(Some(Value::tuple(vec![p, x])))
        }),
    ))
}
