//! The global scope as slots: a session-wide table gives every global name an index
//! into a `Vec` of values, and each name node in the syntax tree caches its index
//! (`NameRef`), so reading or rebinding a global in a loop is an index, not a hash.
//!
//! A slot, once given, belongs to its name for the life of the session; `del` only
//! empties it, so cached indices never go stale. The caches are tagged with the
//! table's owner id, so a tree evaluated by another session just misses the cache.

use std::sync::atomic::{AtomicU32, Ordering};

use crate::lang::ast::{Ident, NameRef};

use super::state::NameMap;
use super::value::Value;

/// Owner ids for slot caches; 0 means "nothing cached", so they start at 1.
static NEXT_OWNER: AtomicU32 = AtomicU32::new(1);

pub struct Globals {
    owner: u32,
    slot_of: NameMap<u32>,
    /// `names[slot]` is the name of `values[slot]`; a `None` value is an unbound name.
    names: Vec<Ident>,
    values: Vec<Option<Value>>,
}

impl Default for Globals {
    fn default() -> Globals {
        Globals {
            owner: NEXT_OWNER.fetch_add(1, Ordering::Relaxed),
            slot_of: NameMap::default(),
            names: Vec::new(),
            values: Vec::new(),
        }
    }
}

impl Globals {
    /// The slot of `name` if it was ever bound, caching it in the node.
    #[inline]
    fn resolve(&self, name: &NameRef) -> Option<usize> {
        if let Some(slot) = name.cached_slot(self.owner) {
            return Some(slot as usize);
        }
        let slot = *self.slot_of.get(&*name.id)?;
        name.cache_slot(self.owner, slot);
        Some(slot as usize)
    }

    /// The slot of `name`, giving it a new one if it has none.
    fn intern(&mut self, name: &Ident) -> usize {
        if let Some(&slot) = self.slot_of.get(name) {
            return slot as usize;
        }
        let slot = self.values.len();
        // Over 4 billion distinct global names cannot fit in memory, so the
        // conversion holds; saturating keeps it panic-free regardless.
        self.slot_of
            .insert(name.clone(), u32::try_from(slot).unwrap_or(u32::MAX));
        self.names.push(name.clone());
        self.values.push(None);
        slot
    }

    /// The value bound to a name node (the interpreter's fast path).
    #[inline]
    pub fn get_ref(&self, name: &NameRef) -> Option<&Value> {
        let slot = self.resolve(name)?;
        self.values.get(slot)?.as_ref()
    }

    /// Bind a name node (the interpreter's fast path): an index store when cached.
    #[inline]
    pub fn set_ref(&mut self, name: &NameRef, value: Value) {
        let slot = match name.cached_slot(self.owner) {
            Some(slot) => slot as usize,
            None => {
                let slot = self.intern(&name.id);
                if let Ok(small) = u32::try_from(slot) {
                    name.cache_slot(self.owner, small);
                }
                slot
            }
        };
        if let Some(cell) = self.values.get_mut(slot) {
            *cell = Some(value);
        }
    }

    pub fn get(&self, name: &str) -> Option<&Value> {
        let slot = *self.slot_of.get(name)?;
        self.values.get(slot as usize)?.as_ref()
    }

    pub fn insert(&mut self, name: &Ident, value: Value) {
        let slot = self.intern(name);
        if let Some(cell) = self.values.get_mut(slot) {
            *cell = Some(value);
        }
    }

    /// Unbind `name`, returning its value; `None` if it was not bound.
    pub fn remove(&mut self, name: &str) -> Option<Value> {
        let slot = *self.slot_of.get(name)?;
        self.values.get_mut(slot as usize)?.take()
    }

    /// The bound names, in no particular order.
    pub fn keys(&self) -> impl Iterator<Item = &Ident> {
        self.names
            .iter()
            .zip(&self.values)
            .filter(|(_, value)| value.is_some())
            .map(|(name, _)| name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn name(text: &str) -> NameRef {
        NameRef::new(Ident::from(text))
    }

    #[test]
    fn bind_read_rebind_and_delete() {
        let mut g = Globals::default();
        let x = name("x");
        assert!(g.get_ref(&x).is_none());
        g.set_ref(&x, Value::Int(1));
        assert!(matches!(g.get_ref(&x), Some(Value::Int(1))));
        assert!(matches!(g.get("x"), Some(Value::Int(1))));
        g.set_ref(&x, Value::Int(2));
        assert!(matches!(g.get_ref(&name("x")), Some(Value::Int(2))));
        assert!(matches!(g.remove("x"), Some(Value::Int(2))));
        assert!(g.get_ref(&x).is_none());
        assert!(g.remove("x").is_none());
        assert_eq!(g.keys().count(), 0);
        g.insert(&Ident::from("x"), Value::Int(3));
        assert!(matches!(g.get_ref(&x), Some(Value::Int(3))));
    }

    #[test]
    fn keys_lists_only_bound_names() {
        let mut g = Globals::default();
        g.insert(&Ident::from("a"), Value::Int(1));
        g.insert(&Ident::from("b"), Value::Int(2));
        g.remove("a");
        let keys: Vec<String> = g.keys().map(|k| k.to_string()).collect();
        assert_eq!(keys, vec!["b".to_string()]);
    }

    #[test]
    fn a_node_cached_by_one_session_misses_in_another() {
        let x = name("x");
        let mut first = Globals::default();
        first.insert(&Ident::from("pad"), Value::Int(0));
        first.set_ref(&x, Value::Int(1));
        let mut second = Globals::default();
        assert!(second.get_ref(&x).is_none());
        second.set_ref(&x, Value::Int(2));
        assert!(matches!(first.get_ref(&x), Some(Value::Int(1))));
        assert!(matches!(second.get_ref(&x), Some(Value::Int(2))));
    }
}
