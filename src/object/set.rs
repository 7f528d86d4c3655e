//! Python's `set` and `frozenset`. The table is CPython 3.11's `Objects/setobject.c` re-done:
//! open addressing with linear probes then perturbed jumps, dummies left by deletions, the
//! same resize points and the same re-insertion order, so that iteration (and so repr, `pop`,
//! `list(s)`) gives CPython's order for values whose hash is deterministic (numbers and tuples
//! of them; CPython salts string hashes per run, so no order is "right" for strings).

use std::cell::{Cell, RefCell};
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
    (i.wrapping_mul(5)
        .wrapping_add(1)
        .wrapping_add(*perturb as usize))
        & mask
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
        if let Some(slot) = slots[i..=i + probes]
            .iter_mut()
            .find(|s| matches!(s, Slot::Empty))
        {
            *slot = Slot::Active(e);
            return;
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

    /// The occupied slots (active or dummy) on `hash`'s probe sequence, up to the first empty
    /// one: CPython's probe order (a few linear probes, then the perturbed jump).
    fn probe(&self, hash: i64) -> impl Iterator<Item = (usize, &Slot)> + '_ {
        let mask = self.mask();
        let (start_at, perturb) = start(hash, mask);
        let mut state = (start_at, perturb, 0usize);
        std::iter::from_fn(move || {
            let (i, perturb, k) = &mut state;
            let probes = if *i + LINEAR_PROBES <= mask {
                LINEAR_PROBES
            } else {
                0
            };
            if *k > probes {
                *i = next(*i, perturb, mask);
                *k = 0;
            }
            let j = *i + *k;
            *k += 1;
            Some(j)
        })
        .map_while(|j| match self.slots.get(j) {
            None | Some(Slot::Empty) => None,
            Some(slot) => Some((j, slot)),
        })
    }

    /// `set_lookkey`: the slot holding an equal key.
    fn find(&self, hash: i64, key: &HashKey) -> Option<usize> {
        self.probe(hash).find_map(|(j, slot)| match slot {
            Slot::Active(e) if e.hash == hash && e.key == *key => Some(j),
            _ => None,
        })
    }

    pub fn contains(&self, hash: i64, key: &HashKey) -> bool {
        self.find(hash, key).is_some()
    }

    /// The members on `hash`'s probe sequence filed under that hash whose equality is a
    /// class's `__eq__` (`object::keys`): where an equal but distinct object is found.
    pub fn same_hash(&self, hash: i64) -> Vec<(HashKey, Value)> {
        (self.probe(hash))
            .filter_map(|(_, slot)| match slot {
                Slot::Active(e) if e.hash == hash && e.key.needs_eq() => {
                    Some((e.key.clone(), e.value.clone()))
                }
                _ => None,
            })
            .collect()
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
    /// Whether some member's equality is a class's `__eq__`.
    pub fn has_object_members(&self) -> bool {
        self.table.borrow().iter().any(|e| e.key.needs_eq())
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

/// The key of a frozenset in a dict or another set: the (immutable) frozenset itself, so
/// that equal frozensets have equal keys whatever their order, and a chain of nested
/// frozensets is held once (through its values), not again through its keys.
#[derive(Clone)]
pub struct FrozenKey {
    pub hash: i64,
    set: Rc<SetObj>,
}

impl std::fmt::Debug for FrozenKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "FrozenKey({})", self.hash)
    }
}

impl PartialEq for FrozenKey {
    fn eq(&self, other: &Self) -> bool {
        // Past the recursion limit two deep chains count as different (no crash).
        self.hash == other.hash
            && (Rc::ptr_eq(&self.set, &other.set)
                || compare_nested(|| equal_inner(&self.set, &other.set))
                    .0
                    .unwrap_or(false))
    }
}

thread_local! {
    /// Levels of set comparison running on this thread, and whether one hit the recursion
    /// limit: then every level answers at once, instead of probing on (which re-compares
    /// and would take exponential time).
    static NESTED: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
    static ABORTED: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Run one level of set comparison; also says whether the walk was cut off.
fn compare_nested<R>(f: impl FnOnce() -> R) -> (R, bool) {
    let outer = NESTED.with(|n| n.get()) == 0;
    NESTED.with(|n| n.set(n.get() + 1));
    let r = f();
    NESTED.with(|n| n.set(n.get() - 1));
    let aborted = ABORTED.with(|a| a.get());
    if outer {
        ABORTED.with(|a| a.set(false));
    }
    (r, aborted)
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

/// A frozenset's key (its hash computed once).
pub fn frozen_key(s: &Rc<SetObj>) -> HashKey {
    let hash = match s.hash.get() {
        Some(h) => h,
        None => {
            let h = table_hash(&s.table.borrow());
            s.hash.set(Some(h));
            h
        }
    };
    HashKey::FrozenSet(FrozenKey {
        hash,
        set: s.clone(),
    })
}

/// The table entry for a value; unhashable values are a TypeError.
pub fn entry(v: &Value) -> Result<Entry, Exc> {
    let key = hash_key(v)?;
    Ok(Entry {
        hash: super::hash::key_hash(&key),
        key,
        value: v.clone(),
    })
}

/// The entry for a value while the program runs: its class's `__hash__`, and an equal member
/// of the table (by `__eq__`, among those `candidates` gives for the hash) stands for it.
/// `candidates` borrows the table only while it runs, so `__eq__` may change the set.
pub fn entry_in(
    it: &mut dyn Interpreter,
    v: &Value,
    candidates: &dyn Fn(i64) -> Vec<(HashKey, Value)>,
) -> Result<Entry, Exc> {
    if let Value::Set(_) = v {
        return lookup_entry(v);
    }
    let key = super::keys::key_among(it, v, candidates)?;
    let hash = super::hash::key_hash(&key);
    Ok(Entry {
        hash,
        key,
        value: v.clone(),
    })
}

/// The entry to look a value up by: a set stands for the frozenset of its contents
/// (`{frozenset({1})}.remove({1})` works in CPython).
fn lookup_entry(v: &Value) -> Result<Entry, Exc> {
    if let Value::Set(s) = v {
        // CPython looks a set up as a frozenset copy of it.
        let frozen = if s.frozen {
            s.clone()
        } else {
            Rc::new(SetObj::new(true, s.table.borrow().clone()))
        };
        let key = frozen_key(&frozen);
        return Ok(Entry {
            hash: super::hash::key_hash(&key),
            key,
            value: v.clone(),
        });
    }
    entry(v)
}

/// `x in s`.
pub fn contains(it: &mut dyn Interpreter, s: &SetObj, item: &Value) -> Result<bool, Exc> {
    let e = entry_in(it, item, &|h| s.table.borrow().same_hash(h))?;
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
                let e = entry_in(it, &x, &|h| t.same_hash(h))?;
                t.add(e);
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

/// A `for` loop over a set, as CPython's set iterator runs: through the live table by slot
/// position, a RuntimeError once the set's size has changed between two items.
pub fn for_each<E: From<Exc>>(
    s: &SetObj,
    mut f: impl FnMut(Value) -> Result<bool, E>,
) -> Result<(), E> {
    let n = s.table.borrow().len();
    let mut pos = 0;
    loop {
        let item = {
            let t = s.table.borrow();
            if t.len() != n {
                return Err(
                    Exc::new(ExcKind::RuntimeError, "Set changed size during iteration").into(),
                );
            }
            t.next_from(&mut pos)
        };
        match item {
            Some(v) => {
                if !f(v)? {
                    return Ok(());
                }
            }
            None => return Ok(()),
        }
    }
}

impl Table {
    /// Empty the table, dropping the keys and returning the values (for `guard::drop_nested`,
    /// which frees nested sets from a heap stack).
    pub(super) fn take_values(&mut self) -> Vec<Value> {
        let slots = std::mem::take(&mut self.slots);
        *self = Table::new();
        slots
            .into_iter()
            .filter_map(|s| match s {
                Slot::Active(e) => {
                    drop(e.key);
                    Some(e.value)
                }
                _ => None,
            })
            .collect()
    }

    /// Whether any value is a container (what could make a drop recurse).
    pub(super) fn holds_containers(&self) -> bool {
        self.iter().any(|e| {
            matches!(
                e.value,
                Value::List(_)
                    | Value::Tuple(_)
                    | Value::Dict(_)
                    | Value::Set(_)
                    | Value::Instance(_)
            )
        })
    }

    /// The value in the first active slot at `pos` or after; `pos` moves past it.
    fn next_from(&self, pos: &mut usize) -> Option<Value> {
        while let Some(slot) = self.slots.get(*pos) {
            *pos += 1;
            if let Slot::Active(e) = slot {
                return Some(e.value.clone());
            }
        }
        None
    }
}

/// `copy.copy(s)`: `set.copy` (a frozenset is itself).
pub fn shallow_copy(v: &Value, s: &SetObj) -> Value {
    if s.frozen {
        return v.clone();
    }
    value(false, copy_table(&s.table.borrow()))
}

/// A new set of `values`, added in order (what `copy.deepcopy` rebuilds through `__reduce__`).
pub fn from_values(frozen: bool, values: &[Value]) -> Result<Value, Exc> {
    let mut t = Table::new();
    for v in values {
        t.add(entry(v)?);
    }
    Ok(value(frozen, t))
}

/// Whether CPython's compiler folds an expression to a constant (literals, and unary and
/// binary operators and tuples over them).
pub fn is_constant(e: &crate::lang::ast::Expr) -> bool {
    use crate::lang::ast::{BinOp, ExprKind};
    match &e.kind {
        ExprKind::Int(_)
        | ExprKind::BigInt(_)
        | ExprKind::Float(_)
        | ExprKind::Str(_)
        | ExprKind::Bytes(_)
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
        let e = entry_in(it, &x, &|h| t.same_hash(h))?;
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
                let e = entry_in(it, &x, &|h| t.same_hash(h))?;
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

/// `==` between sets and frozensets: nested frozensets compare under the recursion guard,
/// and a comparison cut off by it is a RecursionError.
pub fn equal(a: &SetObj, b: &SetObj) -> Result<bool, Exc> {
    let (r, aborted) = compare_nested(|| equal_inner(a, b));
    if aborted {
        return Err(super::guard::recursion_error(super::guard::Walk::Compare));
    }
    r
}

fn equal_inner(a: &SetObj, b: &SetObj) -> Result<bool, Exc> {
    if ABORTED.with(|x| x.get()) {
        return Ok(false);
    }
    let (ta, tb) = (a.table.borrow(), b.table.borrow());
    if ta.len() != tb.len() {
        return Ok(false);
    }
    match super::guard::nest(super::guard::Walk::Compare, || Ok(is_subset(&ta, &tb))) {
        Ok(b) => Ok(b),
        Err(_) => {
            ABORTED.with(|x| x.set(true));
            Ok(false)
        }
    }
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
    // Both operands are sets here: no user code runs while the tables are borrowed.
    let t = l.table.borrow();
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
        _ => {
            drop(t);
            symmetric_difference(it, l, r)?
        }
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
    // Another iterable is read first, so that code it runs (a generator) never meets the
    // table borrowed; sets and dicts run no user code.
    let r = match r {
        Value::Set(_) | Value::Dict(_) => r.clone(),
        other => Value::list(it.iterate(other)?),
    };
    let mut t = s.table.borrow_mut();
    match op {
        BinOp::BitOr if same => {}
        BinOp::BitOr => update(it, &mut t, &r)?,
        BinOp::BitAnd => {
            let out = if same {
                copy_table(&t)
            } else {
                intersection(it, s, &t, &r)?
            };
            t.swap_body(out);
        }
        BinOp::Sub | BinOp::BitXor if same => t.clear(),
        BinOp::Sub => difference_update(it, &mut t, &r)?,
        _ => symmetric_difference_update(it, &mut t, &r)?,
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
        "add" => |it, r, a| {
            let s = recv(r)?;
            let x = one_arg(a, "set", "add")?;
            let e = entry_in(it, &x, &|h| s.table.borrow().same_hash(h))?;
            s.table.borrow_mut().add(e);
            Ok(Value::None)
        },
        "discard" => |it, r, a| {
            let s = recv(r)?;
            let x = one_arg(a, "set", "discard")?;
            let e = entry_in(it, &x, &|h| s.table.borrow().same_hash(h))?;
            s.table.borrow_mut().discard(e.hash, &e.key);
            Ok(Value::None)
        },
        "remove" => |it, r, a| {
            let s = recv(r)?;
            let x = one_arg(a, "set", "remove")?;
            let e = entry_in(it, &x, &|h| s.table.borrow().same_hash(h))?;
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
                let e = entry_in(it, &x, &|h| t.same_hash(h))?;
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
                return Ok(Value::Bool(!t.iter().any(|e| xt.contains(e.hash, &e.key))));
            }
            for x in it.iterate(&o)? {
                let e = entry_in(it, &x, &|h| t.same_hash(h))?;
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

/// `set.union` read from the type: the method with its receiver passed first
/// (`set.union(*groups)`, `set.intersection(*map(set, rows))`).
pub fn unbound_method(frozen: bool, name: &str) -> Option<Value> {
    let names = if frozen {
        FROZENSET_METHODS
    } else {
        SET_METHODS
    };
    let name: &'static str = names.iter().find(|n| **n == name)?;
    let receiver = Value::tuple(vec![Value::str(name), Value::Bool(frozen)]);
    Some(method(&receiver, name, "", |it, r, mut a| {
        let (name, frozen) = match r {
            Value::Tuple(t) => match (t.first(), t.get(1)) {
                (Some(Value::Str(n)), Some(Value::Bool(f))) => (n.clone(), *f),
                _ => return Err(Exc::type_error("bad unbound set method")),
            },
            _ => return Err(Exc::type_error("bad unbound set method")),
        };
        let ty = if frozen { "frozenset" } else { "set" };
        if a.pos.is_empty() {
            return Err(Exc::type_error(format!(
                "unbound method {ty}.{name}() needs an argument"
            )));
        }
        let first = a.pos.remove(0);
        match &first {
            Value::Set(s) if s.frozen == frozen => match get_method(&first, s, &name) {
                Some(m) => it.call_value(&m, a),
                None => Err(Exc::type_error(format!("no method {ty}.{name}"))),
            },
            other => Err(Exc::type_error(format!(
                "descriptor '{name}' for '{ty}' objects doesn't apply to a '{}' object",
                other.type_name()
            ))),
        }
    }))
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

#[cfg(test)]
mod tests {
    use super::*;

    fn int(v: i64) -> Entry {
        entry(&Value::Int(v)).expect("ints hash")
    }

    fn ints(t: &Table) -> Vec<i64> {
        t.iter()
            .map(|e| match e.value {
                Value::Int(i) => i,
                _ => i64::MIN,
            })
            .collect()
    }

    // Orders recorded from CPython 3.11 (`list(set(xs))`, then discards, adds and pops).
    const ADDS: &[(&[i64], &[i64])] = &[
        (&[], &[]),
        (&[], &[]),
        (&[], &[]),
        (&[-12], &[-12]),
        (&[7], &[7]),
        (&[-3], &[-3]),
        (&[-11, 11], &[11, -11]),
        (
            &[-172237242060633201, -3521289658049934810],
            &[-3521289658049934810, -172237242060633201],
        ),
        (&[-2, -13], &[-13, -2]),
        (
            &[
                -3752387237642710640,
                730662405357944493,
                -1950649469732343230,
                -2438802824869813268,
                1078799270702179928,
            ],
            &[
                -1950649469732343230,
                -2438802824869813268,
                730662405357944493,
                -3752387237642710640,
                1078799270702179928,
            ],
        ),
        (&[-74, 48, 46, 63, -52], &[-52, 46, 48, -74, 63]),
        (
            &[-6808, 7948, -7943, 8493, -8047],
            &[-6808, 7948, 8493, -8047, -7943],
        ),
        (&[27, 74, 36, 9, 98, -20], &[98, 36, 9, 74, -20, 27]),
        (
            &[
                2058331227076944944,
                -29024395561433171,
                -1295574776892591065,
                -3101727527882908677,
                926932650219630255,
                4521598660742694689,
            ],
            &[
                4521598660742694689,
                -1295574776892591065,
                -29024395561433171,
                926932650219630255,
                2058331227076944944,
                -3101727527882908677,
            ],
        ),
        (
            &[4707, -565, 9954, -7602, -6132, 6775],
            &[9954, 4707, -565, -6132, -7602, 6775],
        ),
        (
            &[
                -1808066240987465682,
                4408091112177847266,
                -3888439813464626071,
                1175934063152700106,
                3803817010073246941,
                4133884621737344385,
                -3492532667408984398,
                638174894480524144,
                2504909931802848082,
            ],
            &[
                4133884621737344385,
                4408091112177847266,
                -3888439813464626071,
                1175934063152700106,
                -1808066240987465682,
                638174894480524144,
                -3492532667408984398,
                2504909931802848082,
                3803817010073246941,
            ],
        ),
        (
            &[-9261, 5128, 1647, -4494, -6164, 6177, -8069, -2850, -582],
            &[6177, 5128, -6164, 1647, -4494, -9261, -582, -8069, -2850],
        ),
        (
            &[89, -37, 1, 0, 27, -80, -58, 14, 2],
            &[0, 1, 2, -58, 27, 14, -80, 89, -37],
        ),
        (
            &[
                -5514, 4107, 8029, -877, 3608, 1756, 2466, -2439, -5055, -7281, -4226, -5043,
                -2400, -2355, -9605, 5891, 9304,
            ],
            &[
                -2400, -5055, 2466, 5891, 4107, -5043, -2355, -7281, 9304, -877, -5514, 3608,
                -2439, -9605, 1756, 8029, -4226,
            ],
        ),
        (
            &[
                -33, -28, -99, -63, 7, 36, -6, 56, 44, -19, -68, 76, 31, 58, 67, 73, 89,
            ],
            &[
                -63, 67, -28, 36, 58, 7, 73, 44, -19, 76, 31, 56, 89, -6, -68, -99, -33,
            ],
        ),
        (
            &[
                13, 9, 9, 9, 9, -10, 14, 9, -13, -4, -12, -3, 12, -6, -9, 5, -13,
            ],
            &[5, 9, 12, 13, 14, -13, -12, -10, -9, -6, -4, -3],
        ),
        (
            &[
                -16, -7, -10, 7, -15, -12, -3, 8, -7, 0, 6, 7, 14, -9, -9, 15, 13, 14, 14, 3, -11,
                -7, -10, 5, 0, 14, -6, -15, -3, 7, -7, -15, 3,
            ],
            &[
                0, 3, 5, 6, 7, 8, 13, 14, 15, -16, -15, -12, -11, -10, -9, -7, -6, -3,
            ],
        ),
        (
            &[
                0, 7, -6, 6, -2, 5, -2, -4, -1, 9, -2, -4, 15, 6, -15, -15, 1, 14, 0, -4, 6, 12, 6,
                7, -11, -2, -10, -2, 14, -4, 5, -3, 14,
            ],
            &[
                0, 1, 5, 6, 7, 9, 12, 14, 15, -15, -11, -1, -10, -6, -4, -3, -2,
            ],
        ),
        (
            &[
                14, 6, -11, -9, 8, -4, 14, -5, 11, 5, -11, 9, 13, 9, -11, -6, -6, -8, -15, -7, 13,
                -7, 14, 6, -7, -8, -15, -16, -10, -8, 11, -4, -3,
            ],
            &[
                5, 6, 8, 9, 11, 13, 14, -16, -15, -11, -10, -9, -8, -7, -6, -5, -4, -3,
            ],
        ),
        (
            &[
                0, -3, 2, -1, 4, 0, 10, -8, -13, 6, 13, 10, -8, -7, -15, 12, -5, -16, -7, -5, -7,
                14, -9, -13, 4, 14, -10, -13, -1, -4, 1, -14, -10, 12, -15, -12, 12, 4, -4, 1, 12,
                14, -1, 0, -4, 12, -8, 10, -9, 9, 12, 4, -12, -1, 11, -12, -3, 3, -9, -7, 7, -7, 0,
                -8, 13, -2, -10, 9, 15, -6,
            ],
            &[
                0, 1, 2, 3, 4, 6, 7, 9, 10, 11, 12, 13, 14, 15, -6, -16, -15, -14, -13, -12, -10,
                -9, -8, -7, -2, -5, -4, -3, -1,
            ],
        ),
        (
            &[
                -59, 80, 10, 31, 3, -14, 7, -50, -9, -19, -77, 84, -7, -96, -14, 41, 17, 12, 80,
                -96, -2, -16, 32, 59, -25, 31, -84, -72, -42, -74, -79, -33, -31, -90, 99, -54,
                -31, 93, -67, 8, 73, -34, 3, -62, 37, 31, 46, 26, 79, -17, -78, -29, -86, 76, -54,
                8, -82, -32, -96, 62, -78, -34, -79, 55, -44, -83, -33, -69, 16, -98,
            ],
            &[
                3, 7, 8, 10, 12, 16, 17, 26, -98, 31, -96, 32, 37, -90, 41, -86, -84, -83, 46, -82,
                -79, -78, -77, -74, 55, -72, 59, -69, -67, 62, -62, -59, 73, -54, 76, -50, 79, 80,
                84, -44, -42, 93, -34, -33, -32, -31, 99, -29, -25, -19, -17, -16, -14, -9, -7, -2,
            ],
        ),
        (
            &[
                8122, 3689, -1223, -5766, -8585, 7265, -2187, -6414, -4710, -1419, -8350, -4065,
                -3389, 223, -6, 7402, -3255, -499, 4604, 6386, -4171, -1136, 1370, -9405, -1794,
                -8790, -9498, -9396, 6569, 8056, -3792, 6850, 5556, -1950, 4649, -6518, 4161, 6220,
                7888, 2880, 6603, 85, -2949, -2478, 1229, -3492, -5422, 3261, 1388, -8218, -5747,
                -9533, -7683, -1625, 4114, -4651, -8185, -7232, 2480, 6578, -762, 9620, -2064,
                -398, -8518, 5055, -3927, -4838, -1185, 4608,
            ],
            &[
                4608, -762, -8185, -6518, -499, -5747, -1136, 4114, 9620, -4710, -4838, -4065,
                -1625, 6569, -8790, 4649, -3927, -5766, -3792, 2480, 6578, 5556, -4171, -1223,
                8122, -8518, 3261, 5055, 2880, 4161, 6850, -3389, -9405, -9533, -7232, -3255, 6603,
                -9396, 6220, 1229, 7888, -2478, -5422, 85, -4651, 1370, -3492, 223, -1185, 7265,
                -8350, -1950, -9498, -8218, 3689, 7402, 1388, -2064, -6414, 6386, -398, -2187,
                -1419, -8585, 8056, -6, -2949, 4604, -7683, -1794,
            ],
        ),
    ];
    type Ops<'a> = (&'a [i64], &'a [i64], &'a [i64], &'a [i64], &'a [i64]);
    const OPS: &[Ops] = &[
        (
            &[
                0, 33, 46, 42, 41, 31, 4, 39, 27, 45, 23, 0, 42, 48, 10, 60, 35, 25, 31, 0, 11, 33,
                11, 18, 51, 5, 50, 2, 38, 38, 29, 10, 19, 49, 41, 63, 19, 36, 18, 5,
            ],
            &[
                54, 17, 2, 29, 10, 3, 5, 17, 46, 13, 48, 57, 6, 2, 31, 62, 33, 0, 58, 8, 11, 8, 60,
                32, 9, 33, 30, 26, 29, 58,
            ],
            &[
                126, 97, 19, 122, 73, 11, 50, 19, 37, 84, 65, 77, 34, 3, 123, 15, 124, 68, 25, 55,
            ],
            &[
                3, 4, 11, 15, 18, 19, 23, 25, 27, 34, 35, 36, 37, 38, 39, 41, 42, 45, 49, 50, 51,
                55, 63, 65, 68, 73, 77, 84, 97, 122, 123, 124, 126,
            ],
            &[3, 4, 11, 15, 18],
        ),
        (
            &[
                62, 37, 36, 59, 59, 59, 15, 25, 39, 10, 60, 2, 37, 58, 9, 57, 34, 49, 26, 26, 9,
                11, 18, 33, 46, 16, 35, 14, 46, 29, 63, 62, 50, 3, 20, 0, 62, 57, 51, 38,
            ],
            &[
                18, 53, 44, 48, 40, 15, 42, 0, 41, 43, 50, 15, 25, 1, 37, 32, 47, 8, 50, 49, 9, 46,
                54, 35, 6, 35, 13, 6, 36, 19,
            ],
            &[
                63, 68, 111, 80, 48, 95, 109, 7, 102, 52, 20, 12, 105, 115, 35, 73, 124, 12, 32, 43,
            ],
            &[
                2, 3, 7, 10, 11, 12, 14, 16, 20, 26, 29, 32, 33, 34, 35, 38, 39, 43, 48, 51, 52,
                57, 58, 59, 60, 62, 63, 68, 73, 80, 95, 102, 105, 109, 111, 115, 124,
            ],
            &[2, 3, 7, 10, 11],
        ),
        (
            &[
                60, 53, 43, 36, 38, 32, 33, 51, 30, 38, 61, 50, 15, 21, 20, 9, 26, 63, 28, 57, 42,
                57, 54, 17, 24, 31, 11, 22, 43, 11, 40, 30, 47, 33, 25, 2, 52, 49, 52, 26,
            ],
            &[
                48, 34, 43, 7, 63, 35, 46, 16, 27, 11, 34, 31, 49, 51, 57, 55, 39, 2, 16, 4, 54,
                60, 62, 0, 9, 50, 59, 57, 31, 13,
            ],
            &[
                57, 39, 38, 27, 117, 21, 10, 0, 32, 59, 9, 77, 32, 64, 111, 28, 25, 18, 76, 49,
            ],
            &[
                0, 10, 9, 15, 17, 18, 20, 21, 22, 24, 25, 26, 27, 28, 30, 32, 33, 36, 38, 39, 40,
                42, 47, 52, 53, 49, 57, 59, 61, 64, 76, 77, 111, 117,
            ],
            &[0, 10, 9, 15, 17],
        ),
        (
            &[
                49, 33, 28, 0, 1, 38, 58, 35, 40, 31, 60, 30, 31, 3, 52, 39, 7, 2, 24, 63, 53, 10,
                32, 29, 54, 47, 29, 63, 4, 43, 53, 46, 50, 25, 0, 37, 8, 26, 63, 25,
            ],
            &[
                39, 24, 29, 59, 28, 33, 37, 13, 63, 23, 28, 62, 53, 7, 18, 50, 6, 27, 3, 18, 53, 6,
                7, 23, 50, 57, 40, 14, 10, 21,
            ],
            &[
                84, 48, 47, 119, 8, 79, 96, 95, 84, 113, 43, 27, 0, 20, 71, 20, 89, 107, 31, 53,
            ],
            &[
                0, 1, 2, 4, 8, 20, 25, 26, 27, 30, 31, 32, 35, 38, 43, 46, 47, 48, 49, 52, 53, 54,
                58, 60, 71, 79, 84, 89, 95, 96, 107, 113, 119,
            ],
            &[0, 1, 2, 4, 8],
        ),
        (
            &[
                48, 45, 39, 55, 11, 6, 60, 25, 47, 57, 24, 41, 46, 60, 3, 52, 31, 51, 5, 48, 4, 59,
                8, 7, 32, 24, 8, 43, 46, 34, 42, 5, 33, 40, 35, 38, 0, 8, 3, 29,
            ],
            &[
                13, 60, 59, 49, 32, 55, 63, 16, 63, 23, 1, 38, 19, 30, 41, 40, 58, 46, 10, 25, 50,
                20, 31, 52, 8, 4, 61, 41, 20, 54,
            ],
            &[
                26, 18, 67, 21, 53, 24, 107, 127, 114, 44, 59, 34, 106, 117, 60, 31, 75, 75, 71, 68,
            ],
            &[
                0, 3, 5, 6, 7, 11, 18, 21, 24, 26, 29, 31, 33, 34, 35, 39, 42, 43, 44, 45, 47, 48,
                51, 53, 57, 59, 60, 67, 68, 71, 75, 106, 107, 114, 117, 127,
            ],
            &[0, 3, 5, 6, 7],
        ),
        (
            &[
                47, 32, 33, 25, 56, 31, 23, 31, 30, 19, 36, 24, 41, 8, 50, 32, 31, 29, 12, 59, 4,
                13, 0, 60, 29, 57, 47, 5, 37, 29, 15, 6, 24, 24, 9, 47, 22, 57, 33, 0,
            ],
            &[
                13, 44, 27, 4, 47, 43, 18, 5, 26, 32, 4, 26, 1, 41, 52, 47, 23, 39, 9, 26, 4, 63,
                61, 8, 52, 12, 50, 19, 11, 20,
            ],
            &[
                101, 69, 104, 72, 78, 106, 13, 79, 91, 106, 106, 4, 93, 50, 100, 103, 52, 1, 111,
                40,
            ],
            &[
                0, 1, 4, 6, 13, 15, 22, 24, 25, 29, 30, 31, 33, 36, 37, 40, 50, 52, 56, 57, 59, 60,
                69, 72, 78, 79, 91, 93, 100, 101, 103, 104, 106, 111,
            ],
            &[0, 1, 4, 6, 13],
        ),
    ];

    #[test]
    fn insertion_order_matches_cpython() {
        for (xs, expected) in ADDS {
            let mut t = Table::new();
            for &x in xs.iter() {
                t.add(int(x));
            }
            assert_eq!(ints(&t), expected.to_vec(), "set({xs:?})");
        }
    }

    #[test]
    fn removals_dummies_and_pop_match_cpython() {
        for (xs, removed, added, expected, pops) in OPS {
            let mut t = Table::new();
            for &x in xs.iter() {
                t.add(int(x));
            }
            for &r in removed.iter() {
                let e = int(r);
                t.discard(e.hash, &e.key);
            }
            for &a in added.iter() {
                t.add(int(a));
            }
            assert_eq!(ints(&t), expected.to_vec());
            let popped: Vec<i64> = (0..pops.len())
                .filter_map(|_| t.pop())
                .map(|e| match e.value {
                    Value::Int(i) => i,
                    _ => i64::MIN,
                })
                .collect();
            assert_eq!(popped, pops.to_vec());
        }
    }

    #[test]
    fn deep_frozensets_drop_and_compare_without_recursion() {
        std::thread::Builder::new()
            .stack_size(256 * 1024)
            .spawn(|| {
                let chain = |n: usize| -> Value {
                    let mut f = value(true, Table::new());
                    for i in 0..n {
                        f = from_values(true, &[f, Value::Int(i as i64)]).expect("hashable");
                    }
                    f
                };
                let (a, b) = (chain(100_000), chain(100_000));
                if let (Value::Set(x), Value::Set(y)) = (&a, &b) {
                    // Cut off by the recursion guard, not the native stack.
                    assert!(equal(x, y).is_err());
                }
                drop(a);
                drop(b);
            })
            .expect("thread")
            .join()
            .expect("no stack overflow");
    }

    #[test]
    fn frozenset_hash_matches_cpython() {
        let mut t = Table::new();
        for x in [1, 2, 3] {
            t.add(int(x));
        }
        assert_eq!(table_hash(&t), -272375401224217160);
        assert_eq!(table_hash(&Table::new()), 133146708735736);
    }
}
