//! One guard for every recursive walk over values: equality, ordering, hashing, repr and the
//! pretty form, copies. Each level of a walk goes through [`nest`], which
//! - counts the levels on this thread and raises `RecursionError` past [`MAX_DEPTH`] (CPython's
//!   recursion limit, and its messages), so the answer does not depend on the thread's stack
//!   (the REPL's main thread, the kernel's evaluation thread and test threads all agree);
//! - grows the native stack on demand, so even a debug build never overflows inside the limit.
//!
//! Dropping is the one walk that cannot fail: [`Value`]'s `Drop` empties nested containers onto a
//! heap stack (`drop_nested`), so a list 200,000 levels deep is freed without native recursion.

use std::cell::{Cell, RefCell};
use std::rc::Rc;

use super::error::{Exc, ExcKind};
use super::value::Value;

/// How many container levels one walk may descend (CPython's default recursion limit).
pub const MAX_DEPTH: usize = 1000;

thread_local! {
    static DEPTH: Cell<usize> = const { Cell::new(0) };
    /// Containers whose repr is being built on this thread (CPython's `Py_ReprEnter`).
    static REPR_ACTIVE: RefCell<Vec<usize>> = const { RefCell::new(Vec::new()) };
}

/// What a walk was doing when it went too deep, for the message.
#[derive(Clone, Copy)]
pub enum Walk {
    Compare,
    Repr,
    Hash,
    Copy,
}

pub fn recursion_error(walk: Walk) -> Exc {
    let what = match walk {
        Walk::Compare => "in comparison",
        Walk::Repr => "while getting the repr of an object",
        Walk::Hash => "while hashing an object",
        Walk::Copy => "while copying an object",
    };
    Exc::new(
        ExcKind::RecursionError,
        format!("maximum recursion depth exceeded {what}"),
    )
}

/// Enough native stack for one level of a walk over the syntax tree (whose depth the parser
/// bounds, `lang::parser::MAX_TREE_DEPTH`), whatever thread runs it.
#[inline]
pub fn grow<R>(f: impl FnOnce() -> R) -> R {
    super::stack::maybe_grow(64 * 1024, 1024 * 1024, f)
}

/// Restores the depth even when the walk returns early.
struct Level;

impl Drop for Level {
    fn drop(&mut self) {
        DEPTH.with(|d| d.set(d.get().saturating_sub(1)));
    }
}

/// Run one level of a recursive walk: `RecursionError` past [`MAX_DEPTH`] levels, and
/// enough native stack for `f` whatever thread this is.
#[inline]
pub fn nest<R>(walk: Walk, f: impl FnOnce() -> Result<R, Exc>) -> Result<R, Exc> {
    let depth = DEPTH.with(|d| d.get());
    if depth >= MAX_DEPTH {
        return Err(recursion_error(walk));
    }
    DEPTH.with(|d| d.set(depth + 1));
    let _level = Level;
    super::stack::maybe_grow(64 * 1024, 1024 * 1024, f)
}

/// Pops the container from the active reprs when its repr is done.
pub struct ReprEntry(usize);

impl Drop for ReprEntry {
    fn drop(&mut self) {
        REPR_ACTIVE.with(|a| {
            let mut a = a.borrow_mut();
            if let Some(i) = a.iter().rposition(|&x| x == self.0) {
                a.remove(i);
            }
        });
    }
}

/// Start the repr of the container `id`: None when its repr is already being built further up
/// (a list that holds itself), which then prints as `[...]`.
pub fn repr_enter(id: usize) -> Option<ReprEntry> {
    REPR_ACTIVE.with(|a| {
        let mut a = a.borrow_mut();
        if a.contains(&id) {
            return None;
        }
        a.push(id);
        Some(ReprEntry(id))
    })
}

/// True when `v` is a container that only this value holds: dropping `v` frees it.
#[inline]
fn sole_container(v: &Value) -> bool {
    match v {
        Value::List(l) => Rc::strong_count(l) == 1 && Rc::weak_count(l) == 0,
        Value::Tuple(t) => Rc::strong_count(t) == 1 && Rc::weak_count(t) == 0,
        Value::Dict(d) => Rc::strong_count(d) == 1 && Rc::weak_count(d) == 0,
        Value::Instance(i) => Rc::strong_count(i) == 1 && Rc::weak_count(i) == 0,
        Value::Set(s) => Rc::strong_count(s) == 1 && Rc::weak_count(s) == 0,
        _ => false,
    }
}

/// Does dropping `v` free a container that itself frees a container (the case that
/// would recurse)?
#[inline]
pub(super) fn owns_nested(v: &Value) -> bool {
    // Every drop asks: a value that is not the last owner of a container answers at once.
    if !sole_container(v) {
        return false;
    }
    owned_children_nest(v)
}

fn owned_children_nest(v: &Value) -> bool {
    match v {
        // Generators too: taken out here, they drop last to first, the order CPython's list
        // and tuple deallocation closes the suspended ones in.
        Value::List(l) => l
            .try_borrow()
            .is_ok_and(|l| l.iter().any(|x| sole_container(x) || sole_generator(x))),
        Value::Tuple(t) => t.iter().any(|x| sole_container(x) || sole_generator(x)),
        Value::Dict(d) => d.try_borrow().is_ok_and(|d| {
            d.entries
                .iter()
                .any(|(k, v)| sole_container(k) || sole_container(v))
        }),
        // A chain of objects (`node.next = Node()`) is freed the same way.
        Value::Instance(i) => i
            .attrs
            .try_borrow()
            .is_ok_and(|a| a.iter().any(|(_, v)| sole_container(v))),
        // An item of a set is held twice (value and key), so any container item counts.
        Value::Set(s) => s.table.try_borrow().is_ok_and(|t| t.holds_containers()),
        _ => false,
    }
}

fn sole_generator(v: &Value) -> bool {
    matches!(v, Value::Generator(g) if Rc::strong_count(g) == 1)
}

/// Move the items of a container that only `v` holds onto `stack`.
fn take_children(v: &mut Value, stack: &mut Vec<Value>) {
    if !sole_container(v) {
        return;
    }
    match v {
        Value::List(l) => {
            if let Ok(mut items) = l.try_borrow_mut() {
                stack.append(&mut items);
            }
        }
        Value::Tuple(t) => {
            if let Some(items) = Rc::get_mut(t) {
                stack.append(items);
            }
        }
        Value::Dict(d) => {
            if let Ok(mut d) = d.try_borrow_mut() {
                for (k, v) in std::mem::take(&mut d.entries) {
                    stack.push(k);
                    stack.push(v);
                }
            }
        }
        Value::Instance(i) => {
            if let Ok(mut attrs) = i.attrs.try_borrow_mut() {
                stack.extend(attrs.take_values());
            }
        }
        Value::Set(s) => {
            if let Ok(mut t) = s.table.try_borrow_mut() {
                stack.extend(t.take_values());
            }
        }
        _ => {}
    }
}

/// Free `v`'s nested containers level by level from a heap stack: each value popped has had
/// its own items taken out before it drops, so no drop recurses more than one level.
pub(super) fn drop_nested(v: &mut Value) {
    let mut stack = Vec::new();
    take_children(v, &mut stack);
    while let Some(mut item) = stack.pop() {
        take_children(&mut item, &mut stack);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deep_list_drops_without_recursion() {
        // A small stack: the drop must not recurse once per level.
        std::thread::Builder::new()
            .stack_size(256 * 1024)
            .spawn(|| {
                let mut a = Value::list(vec![]);
                for _ in 0..300_000 {
                    a = Value::list(vec![a]);
                }
                let mut t = Value::tuple(vec![]);
                for _ in 0..300_000 {
                    t = Value::tuple(vec![t, Value::Int(1)]);
                }
                drop(a);
                drop(t);
                // A linked chain of user objects.
                let class = std::rc::Rc::new(super::super::class::Class {
                    name: std::rc::Rc::from("Node"),
                    qualname: std::rc::Rc::from("Node"),
                    module: std::rc::Rc::from("__main__"),
                    bases: Vec::new(),
                    mro: Vec::new(),
                    attrs: Default::default(),
                    doc: None,
                    has_properties: Default::default(),
                    native: false,
                    source: None,
                    subclasses: Default::default(),
                });
                let mut node = Value::None;
                for _ in 0..300_000 {
                    let inst = super::super::class::Instance::new(class.clone(), Value::None);
                    inst.attrs.borrow_mut().set(std::rc::Rc::from("next"), node);
                    node = Value::Instance(std::rc::Rc::new(inst));
                }
                drop(node);
            })
            .unwrap()
            .join()
            .unwrap();
    }

    #[test]
    fn depth_is_restored_after_an_error() {
        fn dive(n: usize) -> Result<usize, Exc> {
            nest(Walk::Compare, || if n == 0 { Ok(0) } else { dive(n - 1) })
        }
        assert!(dive(MAX_DEPTH + 5).is_err());
        assert_eq!(dive(MAX_DEPTH - 1).unwrap(), 0);
        assert_eq!(DEPTH.with(|d| d.get()), 0);
    }
}
