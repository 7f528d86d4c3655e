//! Python's `set` and `frozenset`. The table is CPython 3.11's `Objects/setobject.c` re-done:
//! open addressing with linear probes then perturbed jumps, dummies left by deletions, the
//! same resize points and the same re-insertion order, so that iteration (and so repr, `pop`,
//! `list(s)`) gives CPython's order for values whose hash is deterministic (numbers and tuples
//! of them; CPython salts string hashes per run, so no order is "right" for strings).

use std::cell::{Cell, RefCell};
use std::collections::HashSet;
use std::rc::Rc;

use super::error::{Exc, ExcKind};
use super::interpreter::{hash_key, method, Interpreter};
use super::value::{Args, HashKey, MethodFn, Value};

/// `PySet_MINSIZE`.
const MINSIZE: usize = 8;
const LINEAR_PROBES: usize = 9;
const PERTURB_SHIFT: u32 = 5;

/// An active entry: the key's hash, its equality key and the value itself.
#[derive(Clone)]
pub struct Entry {
    pub hash: i64,
    pub key: HashKey,
    pub value: Value,
}

#[derive(Clone)]
enum Slot {
    Empty,
    /// A deleted entry: probing goes on past it.
    Dummy,
    Active(Entry),
}

/// The hash table, `PySetObject` without the object header.
#[derive(Clone)]
pub struct Table {
    slots: Vec<Slot>,
    /// Active plus dummy slots.
    fill: usize,
    /// Active slots.
    used: usize,
    /// Where `pop` starts looking.
    finger: usize,
}

impl Default for Table {
    fn default() -> Self {
        Table::new()
    }
}

/// The first slot of the probe sequence, and the next one after a run of linear probes.
fn start(hash: i64, mask: usize) -> (usize, u64) {
    ((hash as u64 as usize) & mask, hash as u64)
}

fn next(i: usize, perturb: &mut u64, mask: usize) -> usize {
    *perturb >>= PERTURB_SHIFT;
    (i.wrapping_mul(5).wrapping_add(1).wrapping_add(*perturb as usize)) & mask
}

/// `set_insert_clean`: insert a key known to be absent into a table without dummies.
fn insert_clean(slots: &mut [Slot], mask: usize, e: Entry) {
    let (mut i, mut perturb) = start(e.hash, mask);
    loop {
        let probes = if i + LINEAR_PROBES <= mask {
            LINEAR_PROBES
        } else {
            0
        };
        for j in i..=i + probes {
            if matches!(slots[j], Slot::Empty) {
                slots[j] = Slot::Active(e);
                return;
            }
        }
        i = next(i, &mut perturb, mask);
    }
}

impl Table {
    pub fn new() -> Table {
        Table {
            slots: vec![Slot::Empty; MINSIZE],
            fill: 0,
            used: 0,
            finger: 0,
        }
    }

    fn mask(&self) -> usize {
        self.slots.len() - 1
    }

    pub fn len(&self) -> usize {
        self.used
    }

    pub fn is_empty(&self) -> bool {
        self.used == 0
    }

    /// Active entries in table order (CPython's iteration order).
    pub fn iter(&self) -> impl Iterator<Item = &Entry> {
        self.slots.iter().filter_map(|s| match s {
            Slot::Active(e) => Some(e),
            _ => None,
        })
    }

    pub fn values(&self) -> Vec<Value> {
        self.iter().map(|e| e.value.clone()).collect()
    }

    /// `set_lookkey`: the slot holding an equal key.
    fn find(&self, hash: i64, key: &HashKey) -> Option<usize> {
        let mask = self.mask();
        let (mut i, mut perturb) = start(hash, mask);
        loop {
            let probes = if i + LINEAR_PROBES <= mask {
                LINEAR_PROBES
            } else {
                0
            };
            for j in i..=i + probes {
                match &self.slots[j] {
                    Slot::Empty => return None,
                    Slot::Active(e) if e.hash == hash && e.key == *key => return Some(j),
                    _ => {}
                }
            }
            i = next(i, &mut perturb, mask);
        }
    }

    pub fn contains(&self, hash: i64, key: &HashKey) -> bool {
        self.find(hash, key).is_some()
    }

    /// `set_add_entry`: false when an equal key is already there (it is kept).
    pub fn add(&mut self, e: Entry) -> bool {
        let mask = self.mask();
        let (mut i, mut perturb) = start(e.hash, mask);
        // The last dummy on the way is reused when the key is absent (what CPython 3.11
        // does, measured).
        let mut freeslot = None;
        let slot = 'search: loop {
            let probes = if i + LINEAR_PROBES <= mask {
                LINEAR_PROBES
            } else {
                0
            };
            for j in i..=i + probes {
                match &self.slots[j] {
                    Slot::Empty => break 'search j,
                    Slot::Active(x) if x.hash == e.hash && x.key == e.key => return false,
                    Slot::Dummy => freeslot = Some(j),
                    _ => {}
                }
            }
            i = next(i, &mut perturb, mask);
        };
        if let Some(free) = freeslot {
            self.slots[free] = Slot::Active(e);
            self.used += 1;
            return true;
        }
        self.slots[slot] = Slot::Active(e);
        self.fill += 1;
        self.used += 1;
        if self.fill * 5 < mask * 3 {
            return true;
        }
        self.resize(self.grown());
        true
    }

    fn grown(&self) -> usize {
        if self.used > 50000 {
            self.used * 2
        } else {
            self.used * 4
        }
    }

    /// `set_table_resize`: the smallest power of two above `minused`, entries re-inserted in
    /// the old table's order, dummies dropped.
    fn resize(&mut self, minused: usize) {
        let mut size = MINSIZE;
        while size <= minused {
            size <<= 1;
        }
        let old = std::mem::replace(&mut self.slots, vec![Slot::Empty; size]);
        self.fill = self.used;
        let mask = size - 1;
        for s in old {
            if let Slot::Active(e) = s {
                insert_clean(&mut self.slots, mask, e);
            }
        }
    }

    /// `set_discard_entry`: the removed entry, if the key was there.
    pub fn discard(&mut self, hash: i64, key: &HashKey) -> Option<Entry> {
        let i = self.find(hash, key)?;
        let Slot::Active(e) = std::mem::replace(&mut self.slots[i], Slot::Dummy) else {
            return None;
        };
        self.used -= 1;
        Some(e)
    }

    /// `set_pop`: from the finger on, wrapping around.
    pub fn pop(&mut self) -> Option<Entry> {
        if self.used == 0 {
            return None;
        }
        let mask = self.mask();
        let mut i = self.finger & mask;
        while !matches!(self.slots[i], Slot::Active(_)) {
            i += 1;
            if i > mask {
                i = 0;
            }
        }
        let Slot::Active(e) = std::mem::replace(&mut self.slots[i], Slot::Dummy) else {
            return None;
        };
        self.used -= 1;
        self.finger = i + 1;
        Some(e)
    }

    /// `set_clear_internal`.
    pub fn clear(&mut self) {
        self.slots = vec![Slot::Empty; MINSIZE];
        self.fill = 0;
        self.used = 0;
    }

    /// `set_merge`: add every entry of another table (never the same one).
    pub fn merge(&mut self, other: &Table) {
        if other.used == 0 {
            return;
        }
        if (self.fill + other.used) * 5 >= self.mask() * 3 {
            self.resize((self.used + other.used) * 2);
        }
        if self.fill == 0 && self.mask() == other.mask() && other.fill == other.used {
            // Same size, no dummies: CPython copies the slots as they are.
            self.slots = other.slots.clone();
            self.fill = other.fill;
            self.used = other.used;
            return;
        }
        if self.fill == 0 {
            let mask = self.mask();
            self.fill = other.used;
            self.used = other.used;
            for e in other.iter() {
                insert_clean(&mut self.slots, mask, e.clone());
            }
            return;
        }
        for e in other.iter() {
            self.add(e.clone());
        }
    }

    /// `set_update_internal` for a dict: one resize up front, then the keys in order.
    pub fn merge_keys(&mut self, keys: Vec<Entry>) {
        let n = keys.len();
        if (self.fill + n) * 5 >= self.mask() * 3 {
            self.resize((self.used + n) * 2);
        }
        for e in keys {
            self.add(e);
        }
    }

    /// After removals (`difference_update`): resize when more than a quarter are dummies.
    fn shrink_dummies(&mut self) {
        if self.fill - self.used > self.mask() / 4 {
            self.resize(self.grown());
        }
    }
}

/// A `set` (mutable) or `frozenset`.
pub struct SetObj {
    pub frozen: bool,
    pub table: RefCell<Table>,
    /// A frozenset's hash, once computed.
    hash: Cell<Option<i64>>,
}

impl SetObj {
    pub fn new(frozen: bool, table: Table) -> SetObj {
        SetObj {
            frozen,
            table: RefCell::new(table),
            hash: Cell::new(None),
        }
    }
    pub fn type_name(&self) -> &'static str {
        if self.frozen {
            "frozenset"
        } else {
            "set"
        }
    }
}

pub fn value(frozen: bool, table: Table) -> Value {
    Value::Set(Rc::new(SetObj::new(frozen, table)))
}

/// The key of a frozenset in a dict or another set: equal frozensets (and sets) have equal
/// keys whatever their order.
#[derive(Debug, Clone)]
pub struct FrozenKey {
    pub hash: i64,
    items: Rc<[HashKey]>,
}

impl PartialEq for FrozenKey {
    fn eq(&self, other: &Self) -> bool {
        if self.hash != other.hash || self.items.len() != other.items.len() {
            return false;
        }
        let theirs: HashSet<&HashKey> = other.items.iter().collect();
        self.items.iter().all(|k| theirs.contains(k))
    }
}

impl Eq for FrozenKey {}

impl std::hash::Hash for FrozenKey {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.hash.hash(state);
    }
}

/// `frozenset_hash`: order-independent, from the entries' hashes.
fn table_hash(t: &Table) -> i64 {
    fn shuffle(h: u64) -> u64 {
        ((h ^ 89869747) ^ (h << 16)).wrapping_mul(3644798167)
    }
    let mut hash: u64 = 0;
    for e in t.iter() {
        hash ^= shuffle(e.hash as u64);
    }
    hash ^= (t.used as u64 + 1).wrapping_mul(1927868237);
    hash ^= (hash >> 11) ^ (hash >> 25);
    hash = hash.wrapping_mul(69069).wrapping_add(907133923);
    if hash == u64::MAX {
        hash = 590923713;
    }
    hash as i64
}

/// The key a set's contents hash under (a frozenset's own key; for a set, the key of the
/// frozenset with its contents, as `in` and `remove` look a set up).
pub fn frozen_key(s: &SetObj) -> HashKey {
    let t = s.table.borrow();
    let hash = match s.hash.get() {
        Some(h) => h,
        None => {
            let h = table_hash(&t);
            if s.frozen {
                s.hash.set(Some(h));
            }
            h
        }
    };
    HashKey::FrozenSet(FrozenKey {
        hash,
        items: t.iter().map(|e| e.key.clone()).collect(),
    })
}

/// The table entry for a value; unhashable values are a TypeError.
pub fn entry(v: &Value) -> Result<Entry, Exc> {
    let key = hash_key(v)?;
    Ok(Entry {
        hash: crate::modules::builtins::key_hash(&key),
        key,
        value: v.clone(),
    })
}

/// The entry to look a value up by: a set stands for the frozenset of its contents
/// (`{frozenset({1})}.remove({1})` works in CPython).
fn lookup_entry(v: &Value) -> Result<Entry, Exc> {
    if let Value::Set(s) = v {
        let key = frozen_key(s);
        return Ok(Entry {
            hash: crate::modules::builtins::key_hash(&key),
            key,
            value: v.clone(),
        });
    }
    entry(v)
}

/// `x in s`.
pub fn contains(s: &SetObj, item: &Value) -> Result<bool, Exc> {
    let e = lookup_entry(item)?;
    Ok(s.table.borrow().contains(e.hash, &e.key))
}

/// The table of `set(iterable)`: another set merges, a dict adds its keys, anything else is
/// iterated.
pub fn table_of(it: &mut dyn Interpreter, v: &Value) -> Result<Table, Exc> {
    let mut t = Table::new();
    update(it, &mut t, v)?;
    Ok(t)
}

/// `set_update_internal`.
fn update(it: &mut dyn Interpreter, t: &mut Table, v: &Value) -> Result<(), Exc> {
    match v {
        Value::Set(o) => t.merge(&o.table.borrow()),
        Value::Dict(d) => {
            let keys = d
                .borrow()
                .entries
                .iter()
                .map(|(k, _)| entry(k))
                .collect::<Result<Vec<_>, _>>()?;
            t.merge_keys(keys);
        }
        _ => {
            for x in it.iterate(v)? {
                t.add(entry(&x)?);
            }
        }
    }
    Ok(())
}

/// `set(...)` / `frozenset(...)`.
pub fn construct(it: &mut dyn Interpreter, frozen: bool, a: Args) -> Result<Value, Exc> {
    let name = if frozen { "frozenset" } else { "set" };
    if !a.kw.is_empty() {
        return Err(Exc::type_error(format!(
            "{name}() takes no keyword arguments"
        )));
    }
    if a.pos.len() > 1 {
        return Err(Exc::type_error(format!(
            "{name} expected at most 1 argument, got {}",
            a.pos.len()
        )));
    }
    match a.pos.first() {
        None => Ok(value(frozen, Table::new())),
        // An exact frozenset is immutable: `frozenset(fs) is fs`.
        Some(v @ Value::Set(s)) if frozen && s.frozen => Ok(v.clone()),
        Some(v) => Ok(value(frozen, table_of(it, v)?)),
    }
}

/// Whether CPython's compiler folds an expression to a constant (literals, and unary and
/// binary operators and tuples over them).
pub fn is_constant(e: &crate::lang::ast::Expr) -> bool {
    use crate::lang::ast::{BinOp, ExprKind};
    match &e.kind {
        ExprKind::Int(_)
        | ExprKind::Float(_)
        | ExprKind::Str(_)
        | ExprKind::Bool(_)
        | ExprKind::None
        | ExprKind::Ellipsis => true,
        ExprKind::Unary { operand, .. } => is_constant(operand),
        ExprKind::Binary { op, left, right } => {
            *op != BinOp::MatMul && is_constant(left) && is_constant(right)
        }
        ExprKind::Tuple(items) => items.iter().all(is_constant),
        _ => false,
    }
}

/// A display of more than two constants: CPython compiles it to a frozenset constant, which
/// the compiler rebuilds once from its own order (`merge_consts_recursive`) and `SET_UPDATE`
/// then copies into the new set. Collisions can make that order differ from plain insertion.
pub fn constant_display(values: &[Value]) -> Result<Table, Exc> {
    let mut first = Table::new();
    for v in values {
        first.add(entry(v)?);
    }
    let mut rebuilt = Table::new();
    for e in first.iter() {
        rebuilt.add(e.clone());
    }
    Ok(copy_table(&rebuilt))
}

/// `set_copy`: a new table filled by `set_merge`.
fn copy_table(t: &Table) -> Table {
    let mut out = Table::new();
    out.merge(t);
    out
}

/// `set_intersection`: iterates the smaller set (or the iterable) and keeps what the other
/// holds.
fn intersection(
    it: &mut dyn Interpreter,
    s: &Rc<SetObj>,
    t: &Table,
    other: &Value,
) -> Result<Table, Exc> {
    if let Value::Set(o) = other {
        if Rc::ptr_eq(s, o) {
            return Ok(copy_table(t));
        }
        let ot = o.table.borrow();
        let (small, big) = if ot.len() > t.len() {
            (t, &*ot)
        } else {
            (&*ot, t)
        };
        let mut out = Table::new();
        for e in small.iter() {
            if big.contains(e.hash, &e.key) {
                out.add(e.clone());
            }
        }
        return Ok(out);
    }
    let mut out = Table::new();
    for x in it.iterate(other)? {
        let e = entry(&x)?;
        if t.contains(e.hash, &e.key) {
            out.add(e);
        }
    }
    Ok(out)
}

/// `set_difference_update_internal` (the target is never `other` itself: callers check).
fn difference_update(it: &mut dyn Interpreter, t: &mut Table, other: &Value) -> Result<(), Exc> {
    match other {
        Value::Set(o) => {
            let ot = o.table.borrow();
            // When the other set is more than 8 times larger, CPython removes only what
            // both hold (the intersection, which iterates the smaller set).
            let common: Vec<Entry> = if (ot.len() >> 3) > t.len() {
                t.iter()
                    .filter(|e| ot.contains(e.hash, &e.key))
                    .cloned()
                    .collect()
            } else {
                ot.iter().cloned().collect()
            };
            drop(ot);
            for e in common {
                t.discard(e.hash, &e.key);
            }
        }
        _ => {
            for x in it.iterate(other)? {
                let e = lookup_entry(&x)?;
                t.discard(e.hash, &e.key);
            }
        }
    }
    t.shrink_dummies();
    Ok(())
}

/// `set_difference`.
fn difference(it: &mut dyn Interpreter, t: &Table, other: &Value) -> Result<Table, Exc> {
    let other_size = match other {
        Value::Set(o) => o.table.borrow().len(),
        Value::Dict(d) => d.borrow().len(),
        _ => usize::MAX,
    };
    if other_size == usize::MAX || (t.len() >> 2) > other_size {
        let mut out = copy_table(t);
        difference_update(it, &mut out, other)?;
        return Ok(out);
    }
    let mut out = Table::new();
    match other {
        Value::Set(o) => {
            let ot = o.table.borrow();
            for e in t.iter() {
                if !ot.contains(e.hash, &e.key) {
                    out.add(e.clone());
                }
            }
        }
        Value::Dict(d) => {
            let d = d.borrow();
            for e in t.iter() {
                if d.get(&e.key).is_none() {
                    out.add(e.clone());
                }
            }
        }
        _ => {}
    }
    Ok(out)
}

/// `set_symmetric_difference_update` (never with the set itself: callers check).
fn symmetric_difference_update(
    it: &mut dyn Interpreter,
    t: &mut Table,
    other: &Value,
) -> Result<(), Exc> {
    let entries: Vec<Entry> = match other {
        Value::Dict(d) => d
            .borrow()
            .entries
            .iter()
            .map(|(k, _)| entry(k))
            .collect::<Result<_, _>>()?,
        Value::Set(o) => o.table.borrow().iter().cloned().collect(),
        _ => table_of(it, other)?.iter().cloned().collect(),
    };
    for e in entries {
        if t.discard(e.hash, &e.key).is_none() {
            t.add(e);
        }
    }
    Ok(())
}

/// `set_symmetric_difference`: a new set from `other`, updated with `s`.
fn symmetric_difference(
    it: &mut dyn Interpreter,
    s: &Rc<SetObj>,
    other: &Value,
) -> Result<Table, Exc> {
    let mut out = table_of(it, other)?;
    let mine: Vec<Entry> = s.table.borrow().iter().cloned().collect();
    for e in mine {
        if out.discard(e.hash, &e.key).is_none() {
            out.add(e);
        }
    }
    Ok(out)
}

/// `a <= b` for two tables.
fn is_subset(a: &Table, b: &Table) -> bool {
    a.len() <= b.len() && a.iter().all(|e| b.contains(e.hash, &e.key))
}

/// `==` between sets and frozensets.
pub fn equal(a: &SetObj, b: &SetObj) -> bool {
    let (ta, tb) = (a.table.borrow(), b.table.borrow());
    ta.len() == tb.len() && is_subset(&ta, &tb)
}

/// `a < b`: a proper subset (what sorting and `<` use).
pub fn proper_subset(a: &SetObj, b: &SetObj) -> bool {
    let (ta, tb) = (a.table.borrow(), b.table.borrow());
    ta.len() < tb.len() && is_subset(&ta, &tb)
}

/// `l op r` for two sets (`|`, `&`, `-`, `^`); the result has the left operand's type.
pub fn binary(
    it: &mut dyn Interpreter,
    op: crate::lang::ast::BinOp,
    l: &Rc<SetObj>,
    r: &Value,
) -> Result<Value, Exc> {
    use crate::lang::ast::BinOp;
    let t = l.table.borrow().clone();
    let out = match op {
        BinOp::BitOr => {
            let mut out = copy_table(&t);
            if !matches!(r, Value::Set(o) if Rc::ptr_eq(o, l)) {
                update(it, &mut out, r)?;
            }
            out
        }
        BinOp::BitAnd => intersection(it, l, &t, r)?,
        BinOp::Sub => difference(it, &t, r)?,
        _ => symmetric_difference(it, l, r)?,
    };
    Ok(value(l.frozen, out))
}

/// `s op= r` on a mutable set: changes it in place.
pub fn inplace(
    it: &mut dyn Interpreter,
    op: crate::lang::ast::BinOp,
    s: &Rc<SetObj>,
    r: &Value,
) -> Result<(), Exc> {
    use crate::lang::ast::BinOp;
    let same = matches!(r, Value::Set(o) if Rc::ptr_eq(o, s));
    match op {
        BinOp::BitOr if same => {}
        BinOp::BitOr => {
            let mut t = s.table.borrow().clone();
            update(it, &mut t, r)?;
            *s.table.borrow_mut() = t;
        }
        BinOp::BitAnd => {
            let t = s.table.borrow().clone();
            let out = intersection(it, s, &t, r)?;
            s.table.borrow_mut().swap_body(out);
        }
        BinOp::Sub if same => s.table.borrow_mut().clear(),
        BinOp::Sub => {
            let mut t = s.table.borrow().clone();
            difference_update(it, &mut t, r)?;
            *s.table.borrow_mut() = t;
        }
        _ if same => s.table.borrow_mut().clear(),
        _ => {
            let mut t = s.table.borrow().clone();
            symmetric_difference_update(it, &mut t, r)?;
            *s.table.borrow_mut() = t;
        }
    }
    Ok(())
}

impl Table {
    /// `set_swap_bodies`: take another table's slots and counts, keeping the pop finger.
    fn swap_body(&mut self, other: Table) {
        let finger = self.finger;
        *self = other;
        self.finger = finger;
    }
}

fn recv(r: &Value) -> Result<Rc<SetObj>, Exc> {
    match r {
        Value::Set(s) => Ok(s.clone()),
        other => Err(Exc::type_error(format!(
            "descriptor requires a 'set' object but received a '{}'",
            other.type_name()
        ))),
    }
}

fn no_keywords(a: &Args, name: &str) -> Result<(), Exc> {
    if a.kw.is_empty() {
        Ok(())
    } else {
        Err(Exc::type_error(format!(
            "{name}() takes no keyword arguments"
        )))
    }
}

fn one_arg(a: Args, ty: &str, name: &str) -> Result<Value, Exc> {
    no_keywords(&a, &format!("{ty}.{name}"))?;
    let n = a.pos.len();
    match <[Value; 1]>::try_from(a.pos) {
        Ok([v]) => Ok(v),
        Err(_) => Err(Exc::type_error(format!(
            "{ty}.{name}() takes exactly one argument ({n} given)"
        ))),
    }
}

fn no_args(a: &Args, ty: &str, name: &str) -> Result<(), Exc> {
    no_keywords(a, &format!("{ty}.{name}"))?;
    if a.pos.is_empty() {
        Ok(())
    } else {
        Err(Exc::type_error(format!(
            "{ty}.{name}() takes no arguments ({} given)",
            a.pos.len()
        )))
    }
}

/// Methods of `set` and `frozenset`.
pub const FROZENSET_METHODS: &[&str] = &[
    "copy",
    "difference",
    "intersection",
    "isdisjoint",
    "issubset",
    "issuperset",
    "symmetric_difference",
    "union",
];
pub const SET_METHODS: &[&str] = &[
    "add",
    "clear",
    "copy",
    "difference",
    "difference_update",
    "discard",
    "intersection",
    "intersection_update",
    "isdisjoint",
    "issubset",
    "issuperset",
    "pop",
    "remove",
    "symmetric_difference",
    "symmetric_difference_update",
    "union",
    "update",
];

/// The bound method `s.name`, None when the type has no such method.
pub fn get_method(v: &Value, s: &SetObj, name: &str) -> Option<Value> {
    let names = if s.frozen {
        FROZENSET_METHODS
    } else {
        SET_METHODS
    };
    let name: &'static str = names.iter().find(|n| **n == name)?;
    let f: MethodFn = match name {
        "add" => |_, r, a| {
            let s = recv(r)?;
            let x = one_arg(a, "set", "add")?;
            let e = entry(&x)?;
            s.table.borrow_mut().add(e);
            Ok(Value::None)
        },
        "discard" => |_, r, a| {
            let s = recv(r)?;
            let x = one_arg(a, "set", "discard")?;
            let e = lookup_entry(&x)?;
            s.table.borrow_mut().discard(e.hash, &e.key);
            Ok(Value::None)
        },
        "remove" => |it, r, a| {
            let s = recv(r)?;
            let x = one_arg(a, "set", "remove")?;
            let e = lookup_entry(&x)?;
            let removed = s.table.borrow_mut().discard(e.hash, &e.key);
            if removed.is_none() {
                return Err(Exc::key_error(it, &x));
            }
            Ok(Value::None)
        },
        "pop" => |_, r, a| {
            let s = recv(r)?;
            no_args(&a, "set", "pop")?;
            let popped = s.table.borrow_mut().pop();
            popped
                .map(|e| e.value)
                .ok_or_else(|| Exc::new(ExcKind::KeyError, "'pop from an empty set'"))
        },
        "clear" => |_, r, a| {
            let s = recv(r)?;
            no_args(&a, "set", "clear")?;
            s.table.borrow_mut().clear();
            Ok(Value::None)
        },
        "copy" => |_, r, a| {
            let s = recv(r)?;
            no_args(&a, s.type_name(), "copy")?;
            if s.frozen {
                return Ok(r.clone());
            }
            let t = copy_table(&s.table.borrow());
            Ok(value(false, t))
        },
        "union" => |it, r, a| {
            let s = recv(r)?;
            no_keywords(&a, &format!("{}.union", s.type_name()))?;
            let mut t = copy_table(&s.table.borrow());
            for o in &a.pos {
                if !matches!(o, Value::Set(x) if Rc::ptr_eq(x, &s)) {
                    update(it, &mut t, o)?;
                }
            }
            Ok(value(s.frozen, t))
        },
        "update" => |it, r, a| {
            let s = recv(r)?;
            no_keywords(&a, "set.update")?;
            for o in &a.pos {
                inplace(it, crate::lang::ast::BinOp::BitOr, &s, o)?;
            }
            Ok(Value::None)
        },
        "intersection" => |it, r, a| {
            let s = recv(r)?;
            no_keywords(&a, &format!("{}.intersection", s.type_name()))?;
            if a.pos.is_empty() {
                return Ok(value(s.frozen, copy_table(&s.table.borrow())));
            }
            let mut cur = s.clone();
            for o in &a.pos {
                let t = cur.table.borrow().clone();
                let out = intersection(it, &cur, &t, o)?;
                cur = Rc::new(SetObj::new(s.frozen, out));
            }
            Ok(Value::Set(cur))
        },
        "intersection_update" => |it, r, a| {
            let s = recv(r)?;
            no_keywords(&a, "set.intersection_update")?;
            let mut cur = s.clone();
            for o in &a.pos {
                let t = cur.table.borrow().clone();
                let out = intersection(it, &cur, &t, o)?;
                cur = Rc::new(SetObj::new(false, out));
            }
            if !Rc::ptr_eq(&cur, &s) {
                let t = cur.table.borrow().clone();
                s.table.borrow_mut().swap_body(t);
            }
            Ok(Value::None)
        },
        "difference" => |it, r, a| {
            let s = recv(r)?;
            no_keywords(&a, &format!("{}.difference", s.type_name()))?;
            let t = s.table.borrow().clone();
            let Some((first, rest)) = a.pos.split_first() else {
                return Ok(value(s.frozen, copy_table(&t)));
            };
            let mut out = if matches!(first, Value::Set(o) if Rc::ptr_eq(o, &s)) {
                Table::new()
            } else {
                difference(it, &t, first)?
            };
            for o in rest {
                difference_update(it, &mut out, o)?;
            }
            Ok(value(s.frozen, out))
        },
        "difference_update" => |it, r, a| {
            let s = recv(r)?;
            no_keywords(&a, "set.difference_update")?;
            for o in &a.pos {
                inplace(it, crate::lang::ast::BinOp::Sub, &s, o)?;
            }
            Ok(Value::None)
        },
        "symmetric_difference" => |it, r, a| {
            let s = recv(r)?;
            let o = one_arg(a, s.type_name(), "symmetric_difference")?;
            let out = symmetric_difference(it, &s, &o)?;
            Ok(value(s.frozen, out))
        },
        "symmetric_difference_update" => |it, r, a| {
            let s = recv(r)?;
            let o = one_arg(a, "set", "symmetric_difference_update")?;
            inplace(it, crate::lang::ast::BinOp::BitXor, &s, &o)?;
            Ok(Value::None)
        },
        "issubset" => |it, r, a| {
            let s = recv(r)?;
            let o = one_arg(a, s.type_name(), "issubset")?;
            let t = s.table.borrow().clone();
            Ok(Value::Bool(match &o {
                Value::Set(x) => is_subset(&t, &x.table.borrow()),
                _ => is_subset(&t, &table_of(it, &o)?),
            }))
        },
        "issuperset" => |it, r, a| {
            let s = recv(r)?;
            let o = one_arg(a, s.type_name(), "issuperset")?;
            let t = s.table.borrow().clone();
            if let Value::Set(x) = &o {
                return Ok(Value::Bool(is_subset(&x.table.borrow(), &t)));
            }
            for x in it.iterate(&o)? {
                let e = entry(&x)?;
                if !t.contains(e.hash, &e.key) {
                    return Ok(Value::Bool(false));
                }
            }
            Ok(Value::Bool(true))
        },
        "isdisjoint" => |it, r, a| {
            let s = recv(r)?;
            let o = one_arg(a, s.type_name(), "isdisjoint")?;
            let t = s.table.borrow().clone();
            if let Value::Set(x) = &o {
                let xt = x.table.borrow();
                return Ok(Value::Bool(
                    !t.iter().any(|e| xt.contains(e.hash, &e.key)),
                ));
            }
            for x in it.iterate(&o)? {
                let e = entry(&x)?;
                if t.contains(e.hash, &e.key) {
                    return Ok(Value::Bool(false));
                }
            }
            Ok(Value::Bool(true))
        },
        _ => return None,
    };
    Some(method(v, name, "", f))
}

/// `repr(s)` from the items' reprs.
pub fn repr_text(s: &SetObj, items: Vec<String>) -> String {
    match (s.frozen, items.is_empty()) {
        (false, true) => "set()".into(),
        (true, true) => "frozenset()".into(),
        (false, false) => format!("{{{}}}", items.join(", ")),
        (true, false) => format!("frozenset({{{}}})", items.join(", ")),
    }
}

/// Iteration order of `set(items)`, for the differential tests.
#[cfg(test)]
pub fn order_of(items: &[i64]) -> Vec<i64> {
    let mut t = Table::new();
    for &i in items {
        t.add(entry(&Value::Int(i)).expect("ints hash"));
    }
    t.iter()
        .map(|e| match e.value {
            Value::Int(i) => i,
            _ => 0,
        })
        .collect()
}
