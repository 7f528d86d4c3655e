//! `copy`: `copy` (one level) and `deepcopy` (every level, sharing and cycles kept through a
//! memo) of lists, dicts, tuples and instances; arrays are copied on their own device.

use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;

use super::{module, set_fns};
use crate::modules::python::hooks::DeepCopier;
use crate::object::class::Instance;
use crate::object::value::{ArrayValue, Module};
use crate::object::{Args, Exc, Interpreter, Value};

pub fn build() -> Rc<Module> {
    let m = module("copy", "shallow and deep copies");
    set_fns(
        &m,
        &[
            (
                "copy",
                "copy(x): a new container holding the same items.",
                |it, mut a| {
                    let x = a.required(0, "x")?;
                    a.finish(1)?;
                    shallow_value(it, &x)
                },
            ),
            (
                "deepcopy",
                "deepcopy(x): a copy of x and of everything inside it.",
                |it, mut a| {
                    let x = a.required(0, "x")?;
                    a.take(1, "memo")?;
                    a.finish(2)?;
                    Deep::default().copy(it, &x)
                },
            ),
        ],
    );
    m
}

fn copy_array(it: &mut dyn Interpreter, a: &ArrayValue) -> Result<Value, Exc> {
    let c = a.array.copy_to(&it.state_mut().rt, a.array.device())?;
    Ok(Value::Array(ArrayValue {
        array: c,
        flavor: a.flavor,
    }))
}

pub(crate) fn shallow_value(it: &mut dyn Interpreter, x: &Value) -> Result<Value, Exc> {
    Ok(match x {
        Value::List(l) => Value::list(l.borrow().clone()),
        Value::Dict(d) => Value::Dict(Rc::new(RefCell::new(d.borrow().clone()))),
        Value::Set(s) => crate::object::set::shallow_copy(x, s),
        Value::Array(a) => copy_array(it, a)?,
        Value::Instance(i) => {
            if let Some(v) = crate::object::class::call_special(it, x, "__copy__", Vec::new())? {
                return Ok(v);
            }
            let state = match &*i.base_state.borrow() {
                Value::List(l) => Value::list(l.borrow().clone()),
                Value::Dict(d) => Value::Dict(Rc::new(RefCell::new(d.borrow().clone()))),
                other => other.clone(),
            };
            let copy = Instance::new(i.class(), state);
            *copy.attrs.borrow_mut() = i.attrs.borrow().clone();
            Value::Instance(Rc::new(copy))
        }
        other => other.clone(),
    })
}

/// Deeper than this, a structure is taken to be cyclic in a way the memo missed.
const MAX_DEPTH: usize = 2000;

/// One `deepcopy` call: the memo by identity (CPython's `memo` dict) and the depth reached.
#[derive(Default)]
struct Deep {
    memo: HashMap<usize, Value>,
    depth: usize,
}

impl DeepCopier for Deep {
    fn copy(&mut self, it: &mut dyn Interpreter, x: &Value) -> Result<Value, Exc> {
        self.depth += 1;
        // Enough native stack for the next level, also on a generator's own (smaller) stack.
        let out = crate::object::guard::grow(|| self.level(it, x));
        self.depth -= 1;
        out
    }

    fn memo_get(&self, key: usize) -> Option<Value> {
        self.memo.get(&key).cloned()
    }

    fn memo_put(&mut self, key: usize, copy: Value) {
        self.memo.insert(key, copy);
    }
}

impl Deep {
    fn level(&mut self, it: &mut dyn Interpreter, x: &Value) -> Result<Value, Exc> {
        if self.depth > MAX_DEPTH {
            return Err(Exc::new(
                crate::object::ExcKind::RecursionError,
                "maximum recursion depth exceeded while calling a Python object",
            ));
        }
        let key = x.identity();
        let memoised = matches!(
            x,
            Value::List(_)
                | Value::Dict(_)
                | Value::Tuple(_)
                | Value::Instance(_)
                | Value::Array(_)
                | Value::Object(_)
        );
        if memoised {
            if let Some(v) = self.memo.get(&key) {
                return Ok(v.clone());
            }
        }
        let out = match x {
            Value::List(l) => {
                let new = Rc::new(RefCell::new(Vec::new()));
                self.memo.insert(key, Value::List(new.clone()));
                let items = l.borrow().clone();
                for v in items {
                    let c = self.copy(it, &v)?;
                    new.borrow_mut().push(c);
                }
                Value::List(new)
            }
            Value::Dict(d) => {
                let new = Rc::new(RefCell::new(crate::object::value::Dict::default()));
                self.memo.insert(key, Value::Dict(new.clone()));
                let entries = d.borrow().entries.clone();
                for (k, v) in entries {
                    let k = self.copy(it, &k)?;
                    let v = self.copy(it, &v)?;
                    let hk = crate::object::hash_key(&k)?;
                    new.borrow_mut().insert(hk, k, v);
                }
                Value::Dict(new)
            }
            Value::Tuple(t) => {
                let items = t
                    .iter()
                    .map(|v| self.copy(it, v))
                    .collect::<Result<Vec<_>, _>>()?;
                // An unchanged tuple stays itself, as in CPython.
                if items.iter().zip(t.iter()).all(|(a, b)| a.is(b)) {
                    x.clone()
                } else {
                    Value::tuple(items)
                }
            }
            Value::Set(s) => {
                let items = s.table.borrow().values();
                let items = items
                    .iter()
                    .map(|v| self.copy(it, v))
                    .collect::<Result<Vec<_>, _>>()?;
                crate::object::set::from_values(s.frozen, &items)?
            }
            Value::Array(_) | Value::Object(_) => {
                // A model's core or a parameter: the array layer copies it through this memo.
                let owned = match crate::modules::python::hooks::ARRAYS.get() {
                    Some(h) => (h.deep_copy)(it, x, self)?,
                    None => None,
                };
                match (owned, x) {
                    (Some(v), _) => v,
                    (None, Value::Array(a)) => copy_array(it, a)?,
                    (None, other) => other.clone(),
                }
            }
            Value::Instance(i) => {
                if let Some(f) = crate::object::class::special_method(it, x, "__deepcopy__")? {
                    return it
                        .call_value(&f, Args::positional(vec![crate::object::ops::new_dict()]));
                }
                let inst = Rc::new(Instance::new(i.class(), Value::None));
                self.memo.insert(key, Value::Instance(inst.clone()));
                let state = i.base_state.borrow().clone();
                *inst.base_state.borrow_mut() = self.copy(it, &state)?;
                let attrs: Vec<(Rc<str>, Value)> = i.attrs.borrow().iter().cloned().collect();
                for (k, v) in attrs {
                    let c = self.copy(it, &v)?;
                    inst.attrs.borrow_mut().set(k, c);
                }
                Value::Instance(inst)
            }
            other => other.clone(),
        };
        if memoised {
            self.memo.insert(key, out.clone());
        }
        Ok(out)
    }
}
