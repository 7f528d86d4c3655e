//! What a session keeps between `eval` calls ([`State`]), and the scopes of names that functions
//! and closures hold ([`Scope`], [`Env`]).
use std::cell::RefCell;
use std::collections::{HashMap, HashSet};
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use crate::lang::ast::Ident;
use crate::runtime::Runtime;

use super::globals::Globals;
use super::value::{Module, Value};

/// Variables by name. Identifiers are short and hashed on every lookup, so a fast
/// non-cryptographic hash (foldhash) replaces SipHash; names come from source code,
/// so flooding them is not a concern.
pub type NameMap<V> = HashMap<Ident, V, foldhash::fast::FixedState>;
pub type NameSet = HashSet<Ident, foldhash::fast::FixedState>;

/// A function call's local scope. Closures keep their defining scope alive.
pub type Env = Rc<RefCell<Scope>>;

/// A scope's variables. A function's few locals live in a list searched in order, sized to
/// what it holds (a suspended generator keeps its scope, and a hash table's smallest
/// allocation is four buckets plus sixteen control bytes, most of a generator's size);
/// past [`Vars::SMALL`] names, a hash table. Listing keeps binding order, as CPython's
/// `locals()`.
pub enum Vars {
    List(Vec<(Ident, Value)>),
    /// Boxed, so a `Vars` is a list's size (a scope is in every suspended generator).
    Map(Box<NameMap<Value>>),
}

impl Default for Vars {
    fn default() -> Self {
        Vars::List(Vec::new())
    }
}

/// Identifiers are interned: the same pointer is the same name, without comparing text.
fn same(key: &str, name: &str) -> bool {
    std::ptr::eq(key, name) || key == name
}

impl Vars {
    /// Names a list holds before it becomes a hash table.
    pub const SMALL: usize = 8;

    /// Room for `n` names at once (a call's scope, sized by `FuncDef::locals`).
    pub fn with_capacity(n: usize) -> Vars {
        Vars::List(Vec::with_capacity(n.min(Self::SMALL)))
    }

    pub fn get(&self, name: &str) -> Option<&Value> {
        match self {
            Vars::List(l) => l.iter().find(|(k, _)| same(k, name)).map(|(_, v)| v),
            Vars::Map(m) => m.get(name),
        }
    }

    pub fn get_mut(&mut self, name: &str) -> Option<&mut Value> {
        match self {
            Vars::List(l) => l.iter_mut().find(|(k, _)| same(k, name)).map(|(_, v)| v),
            Vars::Map(m) => m.get_mut(name),
        }
    }

    pub fn contains_key(&self, name: &str) -> bool {
        self.get(name).is_some()
    }

    /// Binds `name`, giving back what it was bound to.
    pub fn insert(&mut self, name: Ident, value: Value) -> Option<Value> {
        if let Some(slot) = self.get_mut(&name) {
            return Some(std::mem::replace(slot, value));
        }
        match self {
            Vars::List(l) if l.len() < Self::SMALL => {
                // Grown one entry at a time: most scopes stop at a handful.
                l.reserve_exact(1);
                l.push((name, value));
            }
            Vars::List(l) => {
                let mut m: NameMap<Value> = std::mem::take(l).into_iter().collect();
                m.insert(name, value);
                *self = Vars::Map(Box::new(m));
            }
            Vars::Map(m) => {
                m.insert(name, value);
            }
        }
        None
    }

    pub fn remove(&mut self, name: &str) -> Option<Value> {
        match self {
            Vars::List(l) => {
                let i = l.iter().position(|(k, _)| same(k, name))?;
                Some(l.remove(i).1)
            }
            Vars::Map(m) => m.remove(name),
        }
    }

    pub fn keys(&self) -> Box<dyn Iterator<Item = &Ident> + '_> {
        match self {
            Vars::List(l) => Box::new(l.iter().map(|(k, _)| k)),
            Vars::Map(m) => Box::new(m.keys()),
        }
    }

    pub fn len(&self) -> usize {
        match self {
            Vars::List(l) => l.len(),
            Vars::Map(m) => m.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[derive(Default)]
pub struct Scope {
    pub vars: Vars,
    pub parent: Option<Env>,
    /// A class body's namespace: functions defined in it do not close over it, and the names it
    /// binds are kept in order (`ScopeDecl::order`) for the class's `__dict__`.
    pub class_body: bool,
    /// A comprehension's own scope: `:=` inside binds in the scope around it.
    pub comprehension: bool,
    /// What few scopes have (`global`/`nonlocal` declarations, a class body's names); boxed,
    /// so a scope (which every suspended generator keeps) stays small.
    pub decl: Option<Box<ScopeDecl>>,
    /// The function this scope is a call of (zero-argument `super()` reads its defining class
    /// and first argument).
    pub function: Option<Rc<super::value::Function>>,
    /// The scope of the call that made this one (`inspect.currentframe().f_back`); None when
    /// called from the top level. Weak: a closure that outlives its call keeps its own scope,
    /// never its callers'.
    pub caller: Option<std::rc::Weak<RefCell<Scope>>>,
}

/// A scope's declarations and a class body's bookkeeping.
#[derive(Default)]
pub struct ScopeDecl {
    /// Names declared `global` in this function.
    pub globals: NameSet,
    /// Names declared `nonlocal`: bound in the nearest enclosing function scope that has them.
    pub nonlocals: NameSet,
    /// A class body's class `__qualname__` (classes and methods defined in it extend it).
    pub class_qualname: Option<Rc<str>>,
    /// The names a class body binds, in order.
    pub order: Vec<Ident>,
}

impl Scope {
    pub fn decl_mut(&mut self) -> &mut ScopeDecl {
        self.decl.get_or_insert_with(Box::default)
    }

    /// A class body's class `__qualname__`.
    pub fn class_qualname(&self) -> Option<&Rc<str>> {
        self.decl.as_ref()?.class_qualname.as_ref()
    }
}

/// Everything a session keeps between `eval` calls.
pub struct State {
    pub globals: Globals,
    pub builtins: NameMap<Value>,
    pub rt: Runtime,
    pub interrupt: InterruptHandle,
    /// After `npx.set_np()`: arrays made by the native functions print like MXNet's numpy mode.
    pub np_mode: bool,
    /// Modules imported so far, by dotted name (each is built once per session).
    pub modules: HashMap<String, Rc<Module>>,
    /// Where creation functions allocate when no device is given.
    pub default_device: crate::runtime::Device,
    /// Session start, the origin of `time.perf_counter()`.
    pub started: std::time::Instant,
    /// Autograd tape and layer naming (`crate::nn`).
    pub nn: crate::nn::NnState,
    /// What CPython calls the running program in a warning's location: a script's path,
    /// `<string>` for `-c`; None for the REPL, piped stdin and notebooks (`<stdin>`).
    pub program: Option<std::rc::Rc<str>>,
}

/// A cloneable, thread-safe handle that asks the running statement to stop.
/// The interpreter checks it between statements and inside loops and long ops;
/// the statement then fails with `KeyboardInterrupt` and every variable stays.
#[derive(Debug, Clone, Default)]
pub struct InterruptHandle(Arc<AtomicBool>);

impl InterruptHandle {
    pub fn interrupt(&self) {
        self.0.store(true, Ordering::SeqCst);
    }
    /// True once if an interrupt was requested, and clears it.
    pub fn take(&self) -> bool {
        // A plain load first: this runs before every statement, and an atomic swap costs a
        // locked instruction even when no interrupt is pending.
        self.0.load(Ordering::Relaxed) && self.0.swap(false, Ordering::SeqCst)
    }
    pub fn is_set(&self) -> bool {
        self.0.load(Ordering::Relaxed)
    }
}

impl InterruptHandle {
    /// A handle on `flag` (the runtime's, so an interrupt also ends a wait for device work).
    pub fn from_flag(flag: Arc<AtomicBool>) -> InterruptHandle {
        InterruptHandle(flag)
    }
}
