//! Dict keys and set members as CPython files them while a program runs: an instance whose
//! class defines `__hash__` hashes by what it returns, and a lookup calls `__eq__` on the keys
//! filed under the same hash (`dict[k]`, `k in d`, sets, `hash()`, `functools.lru_cache` all
//! come here). A class that defines `__eq__` without `__hash__` has `__hash__ = None`
//! (`class::prepare_namespace`): its instances are unhashable. Everything else keys by value
//! (`Value::hash_key`) or, for instances of classes that define neither, by identity.
use std::cell::RefCell;

use super::error::Exc;
use super::interpreter::Interpreter;
use super::value::{Dict, HashKey, Value};

/// An instance keyed by its class's `__hash__`. Two such keys are the same key only when they
/// are the same object; equal distinct objects meet through [`resolve`], which runs `__eq__`.
#[derive(Clone)]
pub struct ObjectKey {
    pub hash: i64,
    pub value: Value,
}

impl PartialEq for ObjectKey {
    fn eq(&self, other: &Self) -> bool {
        self.value.is(&other.value)
    }
}

impl Eq for ObjectKey {}

impl std::hash::Hash for ObjectKey {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.hash.hash(state);
    }
}

impl std::fmt::Debug for ObjectKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "ObjectKey({})", self.hash)
    }
}

fn unhashable(v: &Value) -> Exc {
    Exc::type_error(format!("unhashable type: '{}'", v.type_name()))
}

/// The key of `v`, running its class's `__hash__` where it has one (tuples and named tuples
/// holding such instances too). Unhashable values are a TypeError.
pub fn key(it: &mut dyn Interpreter, v: &Value) -> Result<HashKey, Exc> {
    match v {
        Value::Instance(inst) => match inst.class().lookup("__hash__") {
            Some(Value::None) => Err(unhashable(v)),
            // A named tuple's built-in `__hash__` is its tuple's: it equals the plain tuple.
            Some(Value::Builtin(_)) if matches!(&*inst.base_state.borrow(), Value::Tuple(_)) => {
                let base = inst.base_state.borrow().clone();
                key(it, &base)
            }
            Some(_) => {
                let hash = user_hash(it, v)?;
                inst.remember_hash(hash);
                Ok(HashKey::Object(ObjectKey {
                    hash,
                    value: v.clone(),
                }))
            }
            None => {
                // A tuple subclass (a namedtuple) hashes as its tuple.
                let base = inst.base_state.borrow().clone();
                if matches!(base, Value::Tuple(_)) {
                    return key(it, &base);
                }
                super::interpreter::hash_key(v)
            }
        },
        // Item by item: an instance inside runs its `__hash__`, and an unhashable item is
        // the one the error names (`unhashable type: 'list'`).
        Value::Tuple(items) => super::guard::nest(super::guard::Walk::Hash, || {
            let mut keys = Vec::with_capacity(items.len());
            for item in items.iter() {
                keys.push(key(it, item)?);
            }
            Ok(HashKey::Tuple(keys))
        }),
        _ => super::interpreter::hash_key(v),
    }
}

/// What `__hash__` returned, as CPython's `slot_tp_hash` takes it: an int in range as it is
/// (-1, which C reserves for errors, is -2), a bool as 0 or 1, anything else a TypeError.
fn user_hash(it: &mut dyn Interpreter, v: &Value) -> Result<i64, Exc> {
    let result = super::class::call_special(it, v, "__hash__", Vec::new())?;
    let number = match result {
        Some(Value::Instance(ref i)) => i.base_state.borrow().clone(),
        Some(other) => other,
        None => Value::None,
    };
    match number {
        Value::Int(-1) => Ok(-2),
        Value::Int(h) => Ok(h),
        // A big result is reduced as CPython reduces it: the int's own hash.
        Value::BigInt(ref n) => Ok(super::bigint::hash(n)),
        Value::Bool(b) => Ok(b as i64),
        _ => Err(Exc::type_error("__hash__ method should return an integer")),
    }
}

/// `hash(v)`.
pub fn hash(it: &mut dyn Interpreter, v: &Value) -> Result<i64, Exc> {
    Ok(super::hash::key_hash(&key(it, v)?))
}

/// `stored == probe` as a dict lookup asks it (the stored key first, as CPython's
/// `lookdict`), identity first.
fn keys_equal(it: &mut dyn Interpreter, stored: &Value, probe: &Value) -> Result<bool, Exc> {
    if stored.is(probe) {
        return Ok(true);
    }
    let r = super::ops::compare(it, crate::lang::ast::CmpOp::Eq, stored, probe)?;
    super::class::truthy(it, &r)
}

/// The key to file `probe` under: the first key filed under its hash (`candidates` gives
/// them) that is `==` to it, else its own. `candidates` borrows the container only while it
/// runs, so `__eq__` may change the container without meeting a borrowed table.
pub fn key_among(
    it: &mut dyn Interpreter,
    probe: &Value,
    candidates: &dyn Fn(i64) -> Vec<(HashKey, Value)>,
) -> Result<HashKey, Exc> {
    let own = key(it, probe)?;
    if !own.needs_eq() {
        return Ok(own);
    }
    for (k, stored) in candidates(super::hash::key_hash(&own)) {
        if k == own || keys_equal(it, &stored, probe)? {
            return Ok(k);
        }
    }
    Ok(own)
}

/// The key `probe` has in dict `d`: an equal key already there (by `__eq__`), else its own.
pub fn dict_key(
    it: &mut dyn Interpreter,
    d: &RefCell<Dict>,
    probe: &Value,
) -> Result<HashKey, Exc> {
    key_among(it, probe, &|h| d.borrow().same_hash(h))
}

/// `a == b` for two dicts: each key of `a` found in `b` as a lookup finds it (`__eq__` on
/// equal hashes), and the values equal.
pub fn dicts_equal(
    it: &mut dyn Interpreter,
    a: &RefCell<Dict>,
    b: &RefCell<Dict>,
) -> Result<bool, Exc> {
    if a.borrow().len() != b.borrow().len() {
        return Ok(false);
    }
    let entries = a.borrow().entries.clone();
    super::guard::nest(super::guard::Walk::Compare, || {
        for (k, v) in entries {
            let hk = dict_key(it, b, &k)?;
            let found = b.borrow().get(&hk).cloned();
            match found {
                Some(bv) if super::ops::item_equals(it, &v, &bv)? => {}
                _ => return Ok(false),
            }
        }
        Ok(true)
    })
}

/// `a == b` for two sets whose members may run the program's `__eq__`: as many members, each
/// of `a` found in `b` as a lookup finds it.
pub fn sets_equal(
    it: &mut dyn Interpreter,
    a: &super::set::SetObj,
    b: &super::set::SetObj,
) -> Result<bool, Exc> {
    if a.table.borrow().len() != b.table.borrow().len() {
        return Ok(false);
    }
    let members = a.table.borrow().values();
    for v in members {
        if !super::set::contains(it, b, &v)? {
            return Ok(false);
        }
    }
    Ok(true)
}
