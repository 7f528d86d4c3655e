//! User classes as Python has them: `class C(Base, ...)`, their instances, bound methods, `super`,
//! and the descriptors `property`, `staticmethod`, `classmethod`.
//!
//! Lookup follows Python's rules: an attribute of an instance is a data descriptor of its class
//! (a `property`), else the instance's own attribute, else the class attribute found along the
//! method resolution order (C3, as CPython computes it), where a function becomes a method bound
//! to the instance; `__getattr__` is the last resort. Special methods (`__add__`, `__len__`, ...)
//! are looked up on the class, never on the instance, as CPython does.
//!
//! Built-in bases take part in the MRO as `Value::Type` / `Value::ExcType`; `object` ends every
//! MRO. A class whose MRO reaches a built-in exception makes instances that can be raised.
use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::{Rc, Weak};

use super::error::{Exc, ExcKind};
use super::interpreter::Interpreter;
use super::value::{Args, Function, NativeObject, TypeKind, Value};

/// Attributes in insertion order (`vars(obj)`, `C.__dict__`, and the order children are
/// registered in) with hashed lookup.
#[derive(Default, Clone)]
pub struct Attrs {
    index: HashMap<Rc<str>, usize, foldhash::fast::FixedState>,
    entries: Vec<(Rc<str>, Value)>,
}

impl Attrs {
    pub fn get(&self, name: &str) -> Option<&Value> {
        self.index
            .get(name)
            .and_then(|&i| self.entries.get(i))
            .map(|(_, v)| v)
    }
    /// [`Attrs::get`] trying the entry at `hint` first, and remembering where the name was.
    #[inline]
    pub fn get_hinted(&self, name: &str, hint: &crate::lang::ast::AttrHint) -> Option<&Value> {
        if let Some((k, v)) = self.entries.get(hint.get()) {
            // Identifiers are interned by the lexer, so the pointers usually match.
            if std::ptr::eq(k.as_ptr(), name.as_ptr()) || **k == *name {
                return Some(v);
            }
        }
        let i = *self.index.get(name)?;
        hint.set(i);
        self.entries.get(i).map(|(_, v)| v)
    }
    /// [`Attrs::set`] by name: a new name is stored as the interned identifier, so reads
    /// through [`Attrs::get_hinted`] match it by pointer.
    pub fn set_str(&mut self, name: &str, value: Value) {
        if let Some(&i) = self.index.get(name) {
            if let Some(slot) = self.entries.get_mut(i) {
                slot.1 = value;
                return;
            }
        }
        self.set(crate::lang::lexer::intern(name), value);
    }
    pub fn set(&mut self, name: Rc<str>, value: Value) {
        if let Some(&i) = self.index.get(&name) {
            if let Some(slot) = self.entries.get_mut(i) {
                slot.1 = value;
                return;
            }
        }
        self.index.insert(name.clone(), self.entries.len());
        self.entries.push((name, value));
    }
    pub fn remove(&mut self, name: &str) -> Option<Value> {
        let i = self.index.remove(name)?;
        let (_, v) = self.entries.remove(i);
        for idx in self.index.values_mut() {
            if *idx > i {
                *idx -= 1;
            }
        }
        Some(v)
    }
    /// Empties the map, handing back its values (the drop guard frees them from a heap stack).
    pub fn take_values(&mut self) -> impl Iterator<Item = Value> {
        self.index.clear();
        std::mem::take(&mut self.entries)
            .into_iter()
            .map(|(_, v)| v)
    }
    pub fn iter(&self) -> impl Iterator<Item = &(Rc<str>, Value)> {
        self.entries.iter()
    }
    pub fn len(&self) -> usize {
        self.entries.len()
    }
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

/// A class defined by a `class` statement (or `type(name, bases, dict)`).
pub struct Class {
    pub name: Rc<str>,
    pub qualname: Rc<str>,
    pub module: Rc<str>,
    /// The bases as written (user classes, built-in types, exception classes); `(object,)` if none.
    pub bases: Vec<Value>,
    /// The method resolution order after the class itself, ending with `object`.
    pub mro: Vec<Value>,
    pub attrs: RefCell<Attrs>,
    pub doc: Option<Rc<str>>,
    /// Whether the class or a base defines a property (a data descriptor). Without one, an
    /// instance's own attribute is found without asking the classes first. Set when the class is
    /// made and when a property is assigned to it later (a subclass made before that does not
    /// see the change: a rare order, traded for one hash per attribute read).
    pub has_properties: std::cell::Cell<bool>,
    /// A library class written in Rust (`collections.Counter`, `namedtuple`): it keeps the
    /// built-in value it holds itself (in its `__init__` and `__getattr__`), so the fallbacks a
    /// program's own subclass of `dict` or `tuple` gets do not apply.
    pub native: bool,
    /// The source text and span of the `class` statement that made it, for `??`; None for
    /// classes written in Rust.
    pub source: Option<(Rc<str>, crate::lang::Span)>,
    /// The classes made with this one as a direct base (`__subclasses__()`, IPython's
    /// `Subclasses:`); weak, so a subclass no one uses any more goes away.
    pub subclasses: RefCell<Vec<std::rc::Weak<Class>>>,
}

impl Class {
    /// The live direct subclasses, oldest first.
    pub fn live_subclasses(&self) -> Vec<Rc<Class>> {
        let mut list = self.subclasses.borrow_mut();
        list.retain(|w| w.strong_count() > 0);
        list.iter().filter_map(std::rc::Weak::upgrade).collect()
    }
}

/// An instance of a user class.
pub struct Instance {
    /// The instance's class. A cell, because `obj.__class__ = C` changes it; read through
    /// [`Instance::class`], which clones the `Rc` so no borrow is held while code runs.
    class: RefCell<Rc<Class>>,
    pub attrs: RefCell<Attrs>,
    /// The state a built-in base keeps: an exception's `args` (a tuple), else None.
    pub base_state: RefCell<Value>,
    /// An exception instance's `__context__`/`__cause__` once raised (None for the rest).
    pub exc_links: RefCell<Option<Box<super::error::ExcLinks>>>,
    /// What its class's `__hash__` returned last (`object::keys`): the key a dict copying its
    /// entries without running code (`Value::hash_key`) files it under.
    hash: std::cell::Cell<Option<i64>>,
}

impl Instance {
    /// A new instance of `class` with no attributes, its built-in base holding `state`.
    pub fn new(class: Rc<Class>, state: Value) -> Instance {
        Instance {
            class: RefCell::new(class),
            attrs: RefCell::new(Attrs::default()),
            base_state: RefCell::new(state),
            exc_links: RefCell::new(None),
            hash: std::cell::Cell::new(None),
        }
    }

    pub fn remember_hash(&self, hash: i64) {
        self.hash.set(Some(hash));
    }

    /// The hash its class's `__hash__` gave last, if it ran.
    pub fn remembered_hash(&self) -> Option<i64> {
        self.hash.get()
    }

    /// The instance's class now.
    #[inline]
    pub fn class(&self) -> Rc<Class> {
        self.class.borrow().clone()
    }

    /// Whether the instance's class is `class` (no reference count touched).
    #[inline]
    pub fn is_of(&self, class: &Rc<Class>) -> bool {
        Rc::ptr_eq(&self.class.borrow(), class)
    }

    /// `obj.__class__ = class`, once the caller has checked the layouts agree.
    pub fn set_class(&self, class: Rc<Class>) {
        *self.class.borrow_mut() = class;
    }
}

impl std::fmt::Debug for Instance {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "<{} object>", self.class().name)
    }
}

/// A function bound to its first argument (`obj.method`, `C.classmethod`).
pub struct BoundMethod {
    pub func: Value,
    pub receiver: Value,
}

impl Class {
    /// The class itself as a value.
    pub fn value(self: &Rc<Self>) -> Value {
        Value::Class(self.clone())
    }

    /// The nearest built-in exception class in the MRO, if instances can be raised.
    pub fn exception_base(&self) -> Option<ExcKind> {
        self.mro.iter().find_map(|c| match c {
            Value::ExcType(k) => Some(*k),
            _ => None,
        })
    }

    /// The built-in type this class extends (`class AttrDict(dict)`), if any: its instances hold
    /// a value of that type (`Instance::base_state`) that every operation the class does not
    /// define falls back to.
    pub fn builtin_base(&self) -> Option<TypeKind> {
        self.mro.iter().find_map(|c| match c {
            Value::Type(t) if *t != TypeKind::Object => Some(*t),
            _ => None,
        })
    }

    /// Whether the class or a base is a library class that keeps its built-in value itself.
    pub fn native_base(&self) -> bool {
        self.native
            || self
                .mro
                .iter()
                .any(|c| matches!(c, Value::Class(c) if c.native))
    }

    /// `self` is `other` or derives from it.
    pub fn is_subclass_of(self: &Rc<Self>, other: &Value) -> bool {
        match other {
            Value::Class(c) if Rc::ptr_eq(self, c) => true,
            Value::Type(TypeKind::Object) => true,
            Value::ExcType(k) => self.exception_base().is_some_and(|b| b.is_subclass_of(*k)),
            _ => self.mro.iter().any(|m| m.is(other)),
        }
    }

    /// An attribute of the class or of a class along its MRO (user classes only; built-in
    /// bases answer through [`builtin_base_attr`]).
    pub fn lookup(self: &Rc<Self>, name: &str) -> Option<Value> {
        if let Some(v) = self.attrs.borrow().get(name) {
            return Some(v.clone());
        }
        self.mro.iter().find_map(|c| match c {
            Value::Class(c) => c.attrs.borrow().get(name).cloned(),
            _ => None,
        })
    }

    /// Like [`Class::lookup`], also answering what the built-in bases provide (`__init__`,
    /// `__setattr__`, ... of `object` and of exceptions).
    pub fn lookup_with_builtins(self: &Rc<Self>, name: &str) -> Option<Value> {
        if let Some(v) = self.attrs.borrow().get(name) {
            return Some(v.clone());
        }
        for c in &self.mro {
            match c {
                Value::Class(c) => {
                    if let Some(v) = c.attrs.borrow().get(name) {
                        return Some(v.clone());
                    }
                }
                other => {
                    if let Some(v) = builtin_base_attr(other, name) {
                        return Some(v);
                    }
                }
            }
        }
        None
    }

    /// Whether the class (not `object`) defines `name`: the test for a special method.
    pub fn defines(self: &Rc<Self>, name: &str) -> bool {
        self.lookup(name).is_some()
    }

    /// `<class '__main__.C'>`.
    pub fn repr(&self) -> String {
        // CPython names built-in types without their module (`<class 'code'>`).
        if &*self.module == "builtins" {
            return format!("<class '{}'>", self.qualname);
        }
        format!("<class '{}.{}'>", self.module, self.qualname)
    }
}

/// `class_name(bases)` -> the MRO after the new class, by C3 linearisation. The error is
/// CPython's for an inconsistent hierarchy.
pub fn compute_mro(bases: &[Value]) -> Result<Vec<Value>, Exc> {
    let mut seqs: Vec<Vec<Value>> = bases.iter().map(full_mro).collect();
    seqs.push(bases.to_vec());
    let mut out: Vec<Value> = Vec::new();
    loop {
        seqs.retain(|s| !s.is_empty());
        if seqs.is_empty() {
            return Ok(out);
        }
        let candidate = seqs.iter().find_map(|s| {
            let head = &s[0];
            let in_tail = seqs.iter().any(|t| t[1..].iter().any(|x| x.is(head)));
            (!in_tail).then(|| head.clone())
        });
        let Some(next) = candidate else {
            let names: Vec<String> = bases.iter().map(class_name).collect();
            return Err(Exc::type_error(format!(
                "Cannot create a consistent method resolution order (MRO) for bases {}",
                names.join(", ")
            )));
        };
        for s in seqs.iter_mut() {
            if s.first().is_some_and(|h| h.is(&next)) {
                s.remove(0);
            }
        }
        out.push(next);
    }
}

/// A class's MRO including itself.
fn full_mro(c: &Value) -> Vec<Value> {
    match c {
        Value::Class(c) => std::iter::once(Value::Class(c.clone()))
            .chain(c.mro.iter().cloned())
            .collect(),
        Value::ExcType(k) => {
            let mut chain = vec![Value::ExcType(*k)];
            let mut cur = *k;
            while let Some(p) = cur.parent() {
                chain.push(Value::ExcType(p));
                cur = p;
            }
            chain.push(Value::Type(TypeKind::Object));
            chain
        }
        Value::Type(TypeKind::Object) => vec![c.clone()],
        other => vec![other.clone(), Value::Type(TypeKind::Object)],
    }
}

/// A class's name as `__name__` gives it.
pub fn class_name(c: &Value) -> String {
    match c {
        Value::Class(c) => c.name.to_string(),
        Value::Type(t) => t.name().to_string(),
        Value::ExcType(k) => k.name().to_string(),
        other => other.type_name(),
    }
}

/// The built-in value an instance of a class extending `list`, `dict`, `int`, ... holds.
pub fn base_value(v: &Value) -> Option<Value> {
    match v {
        Value::Instance(i) if i.class().builtin_base().is_some() => {
            Some(i.base_state.borrow().clone())
        }
        _ => None,
    }
}

/// What the built-in bases give a user class: `object`'s and exceptions' methods, as unbound
/// built-ins taking the instance first.
pub fn builtin_base_attr(base: &Value, name: &str) -> Option<Value> {
    if name == "__new__" && matches!(base, Value::Type(_) | Value::ExcType(_)) {
        return Some(super::interpreter::method(
            base,
            "__new__",
            "T.__new__(S, ...): a new object of S, a subtype of T.",
            base_new,
        ));
    }
    let f: super::value::BuiltinFn = match (base, name) {
        // `list.__init__(self, iterable)`, `dict.__init__(self, ...)`: fill the held value.
        (Value::Type(TypeKind::List | TypeKind::Dict), "__init__") => |it, a| {
            let mut pos = a.pos.into_iter();
            let this = pos.next().unwrap_or(Value::None);
            let Value::Instance(inst) = &this else {
                return Err(Exc::type_error("__init__ needs an instance"));
            };
            let Some(t) = inst.class().builtin_base() else {
                return Ok(Value::None);
            };
            let rest = Args {
                pos: pos.collect(),
                kw: a.kw,
                fname: t.name(),
            };
            let fresh = it.call_value(&Value::Type(t), rest)?;
            *inst.base_state.borrow_mut() = fresh;
            Ok(Value::None)
        },
        // The immutable types took their arguments when the instance was made (`__new__`).
        (Value::Type(t), "__init__") if *t != TypeKind::Object => |_, _| Ok(Value::None),
        (Value::ExcType(_), "__init__") => exception_init,
        (Value::ExcType(_), "__str__") => |it, mut a| {
            let this = a.required(0, "self")?;
            Ok(Value::str(&exception_str(it, &this)?))
        },
        (Value::Type(TypeKind::Object), "__init__") => |_, a| {
            // object.__init__ ignores the instance and refuses anything else, as CPython does
            // when a class overrides __init__ and forwards arguments to it.
            if a.pos.len() > 1 || !a.kw.is_empty() {
                return Err(Exc::type_error(
                    "object.__init__() takes exactly one argument (the instance to initialize)",
                ));
            }
            Ok(Value::None)
        },
        (Value::Type(TypeKind::Object), "__setattr__") => |it, mut a| {
            let this = a.required(0, "self")?;
            let name = a.required(1, "name")?;
            let value = a.required(2, "value")?;
            a.finish(3)?;
            let Value::Str(name) = &name else {
                return Err(Exc::type_error("attribute name must be string"));
            };
            raw_set_attr(it, &this, name, value)?;
            Ok(Value::None)
        },
        (Value::Type(TypeKind::Object), "__getattribute__") => |it, mut a| {
            let this = a.required(0, "self")?;
            let name = a.required(1, "name")?;
            a.finish(2)?;
            let Value::Str(name) = &name else {
                return Err(Exc::type_error("attribute name must be string"));
            };
            match &this {
                Value::Instance(inst) => match generic_get_attr(it, &this, inst, name)? {
                    Some(v) => Ok(v),
                    None => Err(no_attribute(&inst.class(), name)),
                },
                other => Err(Exc::new(
                    ExcKind::AttributeError,
                    format!("'{}' object has no attribute '{name}'", other.type_name()),
                )),
            }
        },
        (Value::Type(TypeKind::Object), "__delattr__") => |_, mut a| {
            let this = a.required(0, "self")?;
            let name = a.required(1, "name")?;
            a.finish(2)?;
            match (&this, &name) {
                (Value::Instance(inst), Value::Str(n)) => {
                    if inst.attrs.borrow_mut().remove(n).is_none() {
                        return Err(no_attribute(&inst.class(), n));
                    }
                    Ok(Value::None)
                }
                _ => Err(Exc::type_error("attribute name must be string")),
            }
        },
        // object.__str__ is the object's repr, its class's __repr__ included.
        (Value::Type(TypeKind::Object), "__str__") => |it, mut a| {
            let this = a.required(0, "self")?;
            a.finish(1)?;
            Ok(Value::str(&super::format::repr(it, &this)?))
        },
        (Value::Type(TypeKind::Object), "__repr__") => |_, mut a| {
            let this = a.required(0, "self")?;
            Ok(Value::str(&default_repr(&this)))
        },
        (Value::Type(TypeKind::Object), "__eq__") => |_, mut a| {
            let this = a.required(0, "self")?;
            let other = a.required(1, "other")?;
            Ok(if this.is(&other) {
                Value::Bool(true)
            } else {
                not_implemented()
            })
        },
        (Value::Type(TypeKind::Object), "__hash__") => |_, mut a| {
            let this = a.required(0, "self")?;
            Ok(Value::Int((this.identity() >> 4) as i64))
        },
        _ => return None,
    };
    // The built-in's name must live as long as the program: the matching entry of this list.
    const INHERITED: [&str; 8] = [
        "__init__",
        "__str__",
        "__setattr__",
        "__getattribute__",
        "__delattr__",
        "__repr__",
        "__eq__",
        "__hash__",
    ];
    let name = INHERITED.iter().copied().find(|n| *n == name)?;
    Some(super::interpreter::builtin(
        name,
        "a method every class inherits",
        f,
    ))
}

/// `object.__new__(cls)`, `int.__new__(cls, 5)`, `super().__new__(cls, ...)`: a fresh instance of
/// `cls` (a subclass of the receiving built-in type) holding what the base makes of the arguments.
fn base_new(it: &mut dyn Interpreter, base: &Value, a: Args) -> Result<Value, Exc> {
    let base_name = match base {
        Value::Type(t) => t.name().to_string(),
        Value::ExcType(k) => k.name().to_string(),
        other => other.type_name(),
    };
    let mut pos = a.pos.into_iter();
    let cls = pos.next();
    let class = match &cls {
        Some(Value::Class(class)) if class.is_subclass_of(base) => class,
        Some(Value::Class(class)) => {
            return Err(Exc::type_error(format!(
                "{base_name}.__new__({0}): {0} is not a subtype of {base_name}",
                class.name
            )))
        }
        Some(Value::Type(t)) => {
            return Err(Exc::type_error(format!(
                "{base_name}.__new__({0}): {0} is not a subtype of {base_name}",
                t.name()
            )))
        }
        Some(v) => {
            return Err(Exc::type_error(format!(
                "{base_name}.__new__(X): X is not a type object ({})",
                v.type_name()
            )))
        }
        None => {
            return Err(Exc::type_error(format!(
                "{base_name}.__new__(): not enough arguments"
            )))
        }
    };
    let rest = Args {
        pos: pos.collect(),
        kw: a.kw,
        fname: "__new__",
    };
    // object.__new__ refuses arguments (CPython's excess-arguments rule): they are for a
    // `__new__` of the class's own, or for its `__init__`.
    if class.builtin_base().is_none()
        && class.exception_base().is_none()
        && (!rest.pos.is_empty() || !rest.kw.is_empty())
    {
        if program_new(class).is_some() {
            return Err(Exc::type_error(
                "object.__new__() takes exactly one argument (the type to instantiate)",
            ));
        }
        if !class.defines("__init__") {
            return Err(Exc::type_error(format!(
                "{}() takes no arguments",
                class.name
            )));
        }
    }
    allocate(it, class, &rest)
}

/// `BaseException.__init__(self, *args)`: keeps the arguments as `args`.
fn exception_init(_it: &mut dyn Interpreter, a: Args) -> Result<Value, Exc> {
    let mut pos = a.pos.into_iter();
    let Some(this) = pos.next() else {
        return Err(Exc::type_error(
            "descriptor '__init__' of 'BaseException' object needs an argument",
        ));
    };
    if let Value::Instance(inst) = &this {
        *inst.base_state.borrow_mut() = Value::tuple(pos.collect());
    }
    Ok(Value::None)
}

/// `str(e)` of an exception instance: its one argument, or the tuple of several, as CPython.
pub fn exception_str(it: &mut dyn Interpreter, this: &Value) -> Result<String, Exc> {
    let args = exception_args(this);
    match args.as_slice() {
        [] => Ok(String::new()),
        [one] => super::format::to_str(it, one),
        _ => super::format::repr(it, &Value::tuple(args)),
    }
}

/// What a raised exception instance shows after its class name: its class's own `__str__`
/// when it has one (argparse's `ArgumentError`), else the text of its args.
pub fn exception_message(it: &mut dyn Interpreter, this: &Value) -> Result<String, Exc> {
    if let Value::Instance(inst) = this {
        if inst.class().defines("__str__") {
            if let Some(text) = call_special(it, this, "__str__", Vec::new())? {
                return match &text {
                    Value::Str(s) => Ok(s.to_string()),
                    other => Err(Exc::type_error(format!(
                        "__str__ returned non-string (type {})",
                        other.type_name()
                    ))),
                };
            }
        }
    }
    exception_str(it, this)
}

/// An exception instance's `args`.
pub fn exception_args(this: &Value) -> Vec<Value> {
    match this {
        Value::Instance(inst) => match &*inst.base_state.borrow() {
            Value::Tuple(t) => t.as_ref().clone(),
            _ => Vec::new(),
        },
        _ => Vec::new(),
    }
}

/// `<__main__.C object at 0x7f...>`.
pub fn default_repr(v: &Value) -> String {
    match v {
        Value::Instance(inst) => format!(
            "<{}.{} object at {:#x}>",
            inst.class().module,
            inst.class().qualname,
            v.identity()
        ),
        other => format!("<{} object at {:#x}>", other.type_name(), other.identity()),
    }
}

/// The `NotImplemented` singleton: what a binary special method returns to let the other
/// operand try.
pub struct NotImplementedType;

impl NativeObject for NotImplementedType {
    fn type_name(&self) -> &str {
        "NotImplementedType"
    }
    fn repr(&self) -> String {
        "NotImplemented".into()
    }
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

thread_local! {
    static NOT_IMPLEMENTED: Value = Value::Object(Rc::new(NotImplementedType));
}

pub fn not_implemented() -> Value {
    NOT_IMPLEMENTED.with(|v| v.clone())
}

pub fn is_not_implemented(v: &Value) -> bool {
    matches!(v, Value::Object(o) if o.as_any().is::<NotImplementedType>())
}

/// `property(fget, fset, fdel, doc)`.
pub struct Property {
    pub fget: Value,
    pub fset: Value,
    pub fdel: Value,
    pub doc: Value,
}

/// `staticmethod(f)`: looked up on a class or instance, it is `f` itself.
pub struct StaticMethod(pub Value);

/// `classmethod(f)`: looked up on a class or instance, it is `f` bound to the class.
pub struct ClassMethod(pub Value);

impl NativeObject for Property {
    fn type_name(&self) -> &str {
        "property"
    }
    fn repr(&self) -> String {
        format!("<property object at {:#x}>", self as *const _ as usize)
    }
    fn get_attr(&self, this: &Rc<dyn NativeObject>, name: &str) -> Option<Value> {
        let receiver = Value::Object(this.clone());
        let f: super::value::MethodFn = match name {
            "fget" => return Some(self.fget.clone()),
            "fset" => return Some(self.fset.clone()),
            "fdel" => return Some(self.fdel.clone()),
            "__doc__" => return Some(self.doc.clone()),
            "getter" => |_, r, mut a| {
                let p = property_of(r)?;
                let f = a.required(0, "fget")?;
                Ok(new_property(
                    f,
                    p.fset.clone(),
                    p.fdel.clone(),
                    p.doc.clone(),
                ))
            },
            "setter" => |_, r, mut a| {
                let p = property_of(r)?;
                let f = a.required(0, "fset")?;
                Ok(new_property(
                    p.fget.clone(),
                    f,
                    p.fdel.clone(),
                    p.doc.clone(),
                ))
            },
            "deleter" => |_, r, mut a| {
                let p = property_of(r)?;
                let f = a.required(0, "fdel")?;
                Ok(new_property(
                    p.fget.clone(),
                    p.fset.clone(),
                    f,
                    p.doc.clone(),
                ))
            },
            _ => return None,
        };
        let name: &'static str = match name {
            "getter" => "getter",
            "setter" => "setter",
            _ => "deleter",
        };
        Some(super::interpreter::method(
            &receiver,
            name,
            "a copy of the property with this function",
            f,
        ))
    }
    fn attr_names(&self) -> Vec<&'static str> {
        vec!["deleter", "fdel", "fget", "fset", "getter", "setter"]
    }
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

fn property_of(v: &Value) -> Result<&Property, Exc> {
    match v {
        Value::Object(o) => o
            .as_any()
            .downcast_ref::<Property>()
            .ok_or_else(|| Exc::type_error("expected a property")),
        _ => Err(Exc::type_error("expected a property")),
    }
}

pub fn new_property(fget: Value, fset: Value, fdel: Value, doc: Value) -> Value {
    Value::Object(Rc::new(Property {
        fget,
        fset,
        fdel,
        doc,
    }))
}

impl NativeObject for StaticMethod {
    fn type_name(&self) -> &str {
        "staticmethod"
    }
    fn repr(&self) -> String {
        format!("<staticmethod object at {:#x}>", self as *const _ as usize)
    }
    fn get_attr(&self, _this: &Rc<dyn NativeObject>, name: &str) -> Option<Value> {
        (name == "__func__").then(|| self.0.clone())
    }
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

impl NativeObject for ClassMethod {
    fn type_name(&self) -> &str {
        "classmethod"
    }
    fn repr(&self) -> String {
        format!("<classmethod object at {:#x}>", self as *const _ as usize)
    }
    fn get_attr(&self, _this: &Rc<dyn NativeObject>, name: &str) -> Option<Value> {
        (name == "__func__").then(|| self.0.clone())
    }
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

fn downcast<T: 'static>(v: &Value) -> Option<&T> {
    match v {
        Value::Object(o) => o.as_any().downcast_ref::<T>(),
        _ => None,
    }
}

pub fn bind(func: Value, receiver: Value) -> Value {
    Value::Method(Rc::new(BoundMethod { func, receiver }))
}

/// A class attribute as seen through an instance (`obj.name`) or the class (`C.name`, with
/// `instance` None): functions bind, static and class methods unwrap, properties compute.
fn descriptor_get(
    it: &mut dyn Interpreter,
    attr: Value,
    instance: Option<&Value>,
    class: &Rc<Class>,
) -> Result<Value, Exc> {
    match &attr {
        Value::Func(_) => Ok(match instance {
            Some(obj) => bind(attr, obj.clone()),
            None => attr,
        }),
        Value::Object(_) => {
            if let Some(p) = downcast::<Property>(&attr) {
                return match instance {
                    Some(obj) => {
                        if matches!(p.fget, Value::None) {
                            return Err(Exc::new(
                                ExcKind::AttributeError,
                                "property has no getter".to_string(),
                            ));
                        }
                        let fget = p.fget.clone();
                        it.call_value(&fget, Args::positional(vec![obj.clone()]))
                    }
                    None => Ok(attr.clone()),
                };
            }
            if let Some(s) = downcast::<StaticMethod>(&attr) {
                return Ok(s.0.clone());
            }
            if let Some(c) = downcast::<ClassMethod>(&attr) {
                return Ok(bind(c.0.clone(), class.value()));
            }
            Ok(attr)
        }
        // Built-in functions inherited from `object` or exceptions bind like methods.
        Value::Builtin(b)
            if matches!(
                b.kind,
                super::value::BuiltinKind::Free(_) | super::value::BuiltinKind::Unbound(_)
            ) =>
        {
            let binds =
                b.name.starts_with("__") || matches!(b.kind, super::value::BuiltinKind::Unbound(_));
            Ok(match instance {
                Some(obj) if binds => bind(attr.clone(), obj.clone()),
                _ => attr,
            })
        }
        _ => Ok(attr),
    }
}

/// `AttributeError: 'C' object has no attribute 'x'`.
pub fn no_attribute(class: &Class, name: &str) -> Exc {
    Exc::new(
        ExcKind::AttributeError,
        format!("'{}' object has no attribute '{name}'", class.name),
    )
}

/// `obj.name` by Python's default rules (what `object.__getattribute__` does), without the
/// `__getattr__` fallback. None when nothing is found.
pub fn generic_get_attr(
    it: &mut dyn Interpreter,
    this: &Value,
    inst: &Rc<Instance>,
    name: &str,
) -> Result<Option<Value>, Exc> {
    if !inst.class().has_properties.get() {
        if let Some(v) = inst.attrs.borrow().get(name) {
            return Ok(Some(v.clone()));
        }
    }
    // User classes first: a property (data descriptor) there wins over the instance's own
    // attribute. The built-in bases define no properties, so they are asked last.
    let class_attr = inst.class().lookup(name);
    if let Some(attr) = &class_attr {
        if downcast::<Property>(attr).is_some() {
            return descriptor_get(it, attr.clone(), Some(this), &inst.class()).map(Some);
        }
    }
    if let Some(v) = inst.attrs.borrow().get(name) {
        return Ok(Some(v.clone()));
    }
    let class_attr = match class_attr {
        Some(attr) => Some(attr),
        None => inst.class().lookup_with_builtins(name),
    };
    match class_attr {
        Some(attr) => descriptor_get(it, attr, Some(this), &inst.class()).map(Some),
        None => Ok(match name {
            "__class__" => Some(inst.class().value()),
            "__dict__" => Some(attrs_dict(&inst.attrs.borrow())),
            "__module__" => Some(Value::Str(inst.class().module.clone())),
            "__doc__" => Some(inst.class().doc.clone().map_or(Value::None, Value::Str)),
            "args" if inst.class().exception_base().is_some() => {
                Some(Value::tuple(exception_args(this)))
            }
            "__cause__" | "__context__" | "__suppress_context__" | "__traceback__"
                if inst.class().exception_base().is_some() =>
            {
                Some(super::error::link_attr(
                    inst.exc_links.borrow().as_deref(),
                    name,
                ))
            }
            _ => None,
        }),
    }
}

/// `obj.name` for an instance: the default rules, then the class's `__getattr__`.
pub fn instance_get_attr(
    it: &mut dyn Interpreter,
    this: &Value,
    inst: &Rc<Instance>,
    name: &str,
) -> Result<Value, Exc> {
    if let Some(v) = generic_get_attr(it, this, inst, name)? {
        return Ok(v);
    }
    if !inst.class().native_base()
        && inst.class().builtin_base().is_some()
        && !name.starts_with("__")
    {
        // `d.keys()`, `l.append(x)`: the methods of the built-in base, found before
        // `__getattr__` as class attributes are in CPython.
        let base = inst.base_state.borrow().clone();
        if let Ok(v) = it.get_attr(&base, name) {
            return Ok(v);
        }
    }
    if let Some(getattr) = inst.class().lookup("__getattr__") {
        let f = descriptor_get(it, getattr, Some(this), &inst.class())?;
        return it.call_value(&f, Args::positional(vec![Value::str(name)]));
    }
    Err(
        no_attribute(&inst.class(), name).suggesting(super::error::Suggestion::Attribute {
            obj: this.clone(),
            name: Rc::from(name),
        }),
    )
}

/// `C.name` for a class.
pub fn class_get_attr(
    it: &mut dyn Interpreter,
    class: &Rc<Class>,
    name: &str,
) -> Result<Value, Exc> {
    match name {
        "__name__" => return Ok(Value::Str(class.name.clone())),
        "__qualname__" => return Ok(Value::Str(class.qualname.clone())),
        "__module__" => return Ok(Value::Str(class.module.clone())),
        "__doc__" => return Ok(class.doc.clone().map_or(Value::None, Value::Str)),
        "__bases__" => return Ok(Value::tuple(class.bases.clone())),
        "__base__" => return Ok(class.bases.first().cloned().unwrap_or(Value::None)),
        "__mro__" => {
            return Ok(Value::tuple(
                std::iter::once(class.value())
                    .chain(class.mro.iter().cloned())
                    .collect(),
            ))
        }
        "__dict__" => return Ok(attrs_dict(&class.attrs.borrow())),
        "__subclasses__" => {
            return Ok(super::method(
                &class.value(),
                "__subclasses__",
                "__subclasses__(): the live direct subclasses, oldest first.",
                |_, r, a| {
                    a.finish(0)?;
                    Ok(Value::list(match r {
                        Value::Class(c) => c.live_subclasses().iter().map(|c| c.value()).collect(),
                        _ => Vec::new(),
                    }))
                },
            ))
        }
        _ => {}
    }
    match class.lookup_with_builtins(name) {
        Some(attr) => descriptor_get(it, attr, None, class),
        None => {
            // The metaclass's methods and properties, bound to the class (`ABC.register`).
            if let Some(meta) = metaclass_of(class) {
                if let Some(attr) = meta.lookup(name) {
                    return descriptor_get(it, attr, Some(&class.value()), &meta);
                }
            }
            Err(Exc::new(
                ExcKind::AttributeError,
                format!("type object '{}' has no attribute '{name}'", class.name),
            ))
        }
    }
}

pub fn attrs_dict(attrs: &Attrs) -> Value {
    let mut d = super::value::Dict::default();
    for (k, v) in attrs.iter() {
        d.insert(
            super::value::HashKey::Str(k.clone()),
            Value::Str(k.clone()),
            v.clone(),
        );
    }
    Value::Dict(Rc::new(RefCell::new(d)))
}

/// `obj.__class__ = value` (`object.__setattr__`'s case for it), with CPython's checks: the new
/// class must be a class a program made, and the two must keep their state alike (the same
/// built-in base, exception base and library class).
pub fn assign_class(this: &Value, value: &Value) -> Result<(), Exc> {
    if !matches!(value, Value::Class(_) | Value::Type(_) | Value::ExcType(_)) {
        return Err(Exc::type_error(format!(
            "__class__ must be set to a class, not '{}' object",
            value.type_name()
        )));
    }
    let (Value::Instance(inst), Value::Class(new)) = (this, value) else {
        return Err(Exc::type_error(
            "__class__ assignment only supported for mutable types or ModuleType subclasses",
        ));
    };
    let old = inst.class();
    let same = match (layout(&old), layout(new)) {
        (Some(a), Some(b)) => a == b,
        _ => false,
    };
    if !Rc::ptr_eq(&old, new) && !same {
        return Err(Exc::type_error(format!(
            "__class__ assignment: '{}' object layout differs from '{}'",
            new.name, old.name
        )));
    }
    inst.set_class(new.clone());
    Ok(())
}

/// What an instance's state looks like under `class`, for `__class__` assignment: the built-in
/// base (int and tuple hold a variable-sized value, so two subclasses never agree), the
/// exception base, and the library class nearest `object` (whose data `base_state` holds).
/// None when no other class shares it: a variable-sized base, or `__slots__` anywhere.
fn layout(class: &Rc<Class>) -> Option<(Option<TypeKind>, Option<ExcKind>, Option<*const Class>)> {
    let builtin = class.builtin_base();
    let slots = |c: &Class| c.attrs.borrow().get("__slots__").is_some();
    let any_slots = slots(class)
        || class
            .mro
            .iter()
            .any(|c| matches!(c, Value::Class(c) if slots(c)));
    if any_slots || matches!(builtin, Some(TypeKind::Int | TypeKind::Tuple)) {
        return None;
    }
    let native = std::iter::once(class.clone())
        .chain(class.mro.iter().filter_map(|c| match c {
            Value::Class(c) => Some(c.clone()),
            _ => None,
        }))
        .filter(|c| c.native)
        .last()
        .map(|c| Rc::as_ptr(&c));
    Some((builtin, class.exception_base(), native))
}

/// `obj.name = value` by the default rules (`object.__setattr__`): a property's setter, else the
/// instance's own attribute.
pub fn raw_set_attr(
    it: &mut dyn Interpreter,
    this: &Value,
    name: &str,
    value: Value,
) -> Result<(), Exc> {
    if name == "__class__" {
        return assign_class(this, &value);
    }
    let Value::Instance(inst) = this else {
        return Err(Exc::new(
            ExcKind::AttributeError,
            format!(
                "'{}' object has no attribute '{name}' and no __dict__ for setting new attributes",
                this.type_name()
            ),
        ));
    };
    let attr = match inst.class().has_properties.get() {
        true => inst.class().lookup(name),
        false => None,
    };
    if let Some(attr) = attr {
        if let Some(p) = downcast::<Property>(&attr) {
            if matches!(p.fset, Value::None) {
                return Err(Exc::new(
                    ExcKind::AttributeError,
                    format!(
                        "property '{name}' of '{}' object has no setter",
                        inst.class().name
                    ),
                ));
            }
            let fset = p.fset.clone();
            it.call_value(&fset, Args::positional(vec![this.clone(), value]))?;
            return Ok(());
        }
    }
    inst.attrs.borrow_mut().set_str(name, value);
    Ok(())
}

/// `obj.name = value` for an instance: the class's `__setattr__` if it defines one.
pub fn instance_set_attr(
    it: &mut dyn Interpreter,
    this: &Value,
    inst: &Rc<Instance>,
    name: &str,
    value: Value,
) -> Result<(), Exc> {
    if let Some(setattr) = inst.class().lookup("__setattr__") {
        let f = descriptor_get(it, setattr, Some(this), &inst.class())?;
        it.call_value(&f, Args::positional(vec![Value::str(name), value]))?;
        return Ok(());
    }
    raw_set_attr(it, this, name, value)
}

/// `del obj.name`.
pub fn instance_del_attr(
    it: &mut dyn Interpreter,
    this: &Value,
    inst: &Rc<Instance>,
    name: &str,
) -> Result<(), Exc> {
    if let Some(delattr) = inst.class().lookup("__delattr__") {
        let f = descriptor_get(it, delattr, Some(this), &inst.class())?;
        it.call_value(&f, Args::positional(vec![Value::str(name)]))?;
        return Ok(());
    }
    if name == "__class__" {
        return Err(Exc::type_error("can't delete __class__ attribute"));
    }
    if let Some(attr) = inst.class().lookup(name) {
        if let Some(p) = downcast::<Property>(&attr) {
            let fdel = p.fdel.clone();
            if matches!(fdel, Value::None) {
                return Err(Exc::new(
                    ExcKind::AttributeError,
                    format!(
                        "property '{name}' of '{}' object has no deleter",
                        inst.class().name
                    ),
                ));
            }
            it.call_value(&fdel, Args::positional(vec![this.clone()]))?;
            return Ok(());
        }
    }
    if inst.attrs.borrow_mut().remove(name).is_none() {
        return Err(no_attribute(&inst.class(), name));
    }
    Ok(())
}

/// The special method `name` of `v`'s class, bound to `v`; None when `v` is not an instance or
/// its class does not define it.
pub fn special_method(
    it: &mut dyn Interpreter,
    v: &Value,
    name: &str,
) -> Result<Option<Value>, Exc> {
    let Value::Instance(inst) = v else {
        // A class's own operations come from its metaclass.
        if let Value::Class(c) = v {
            if let Some(meta) = metaclass_of(c) {
                return match meta.lookup(name) {
                    Some(attr) => descriptor_get(it, attr, Some(v), &meta).map(Some),
                    None => Ok(None),
                };
            }
        }
        return Ok(None);
    };
    match inst.class().lookup(name) {
        Some(attr) => descriptor_get(it, attr, Some(v), &inst.class()).map(Some),
        None => Ok(None),
    }
}

/// Where a class keeps the metaclass it was made with (`class C(metaclass=M)`); a subclass
/// finds its base's along the MRO, as CPython derives the metaclass from the bases.
pub const METACLASS_ATTR: &str = "__metaclass__";

/// The metaclass of a class, if one was given. Its special methods answer the operations on
/// the class itself (`iter(C)`, `len(C)`, `x in C`, `C[k]`, `C(...)`, `repr(C)`), which is
/// what `enum` needs; the class itself is made as `type` makes it (no metaclass `__new__`,
/// `__init__` or `__prepare__`).
pub fn metaclass_of(c: &Rc<Class>) -> Option<Rc<Class>> {
    match &c.lookup(METACLASS_ATTR)? {
        Value::Class(m) => Some(m.clone()),
        _ => None,
    }
}

/// Whether `v`'s operations are looked up as special methods: an instance, or a class that
/// has a metaclass.
pub fn has_special_methods(v: &Value) -> bool {
    match v {
        Value::Instance(_) => true,
        Value::Class(c) => metaclass_of(c).is_some(),
        _ => false,
    }
}

/// `isinstance`/`issubclass` beyond the class tree: what the `__instancecheck__` (or
/// `__subclasscheck__`) of a metaclass of `classes` (a class or a tuple) says of `v`
/// (`abc.ABCMeta`'s registered classes, `numbers`).
pub fn metaclass_check(
    it: &mut dyn Interpreter,
    classes: &Value,
    v: &Value,
    hook: &str,
) -> Result<bool, Exc> {
    match classes {
        Value::Tuple(items) => {
            for c in items.iter() {
                if metaclass_check(it, c, v, hook)? {
                    return Ok(true);
                }
            }
            Ok(false)
        }
        Value::Class(_) => match call_special(it, classes, hook, vec![v.clone()])? {
            Some(r) => truthy(it, &r),
            None => Ok(false),
        },
        _ => Ok(false),
    }
}

/// What a class statement does once the class exists: records the metaclass given, then
/// calls the first `__init_subclass__` along the MRO (an implicit class method) with the
/// class keywords, as CPython's `type.__new__` does.
pub fn finish_class(
    it: &mut dyn Interpreter,
    class: &Rc<Class>,
    metaclass: Option<Value>,
    kw: Vec<(Rc<str>, Value)>,
) -> Result<(), Exc> {
    match &metaclass {
        None => {}
        Some(m @ Value::Class(_)) => class
            .attrs
            .borrow_mut()
            .set(Rc::from(METACLASS_ATTR), m.clone()),
        // `metaclass=type` is what every class has.
        Some(Value::Builtin(b)) if b.name == "type" => {}
        Some(other) => {
            // CPython calls the metaclass to make the class.
            return Err(Exc::type_error(format!(
                "'{}' object is not callable",
                other.type_name()
            )));
        }
    }
    let hook = class.mro.iter().find_map(|c| match c {
        Value::Class(c) => c.attrs.borrow().get("__init_subclass__").cloned(),
        _ => None,
    });
    let Some(hook) = hook else {
        if kw.is_empty() {
            return Ok(());
        }
        return Err(Exc::type_error(format!(
            "{}.__init_subclass__() takes no keyword arguments",
            class.name
        )));
    };
    let f = match downcast::<ClassMethod>(&hook) {
        Some(ClassMethod(f)) => f.clone(),
        None => hook,
    };
    let args = Args {
        pos: vec![class.value()],
        kw,
        fname: "__init_subclass__",
    };
    it.call_value(&f, args)?;
    Ok(())
}

/// Calls `v.name(*args)` when `v`'s class defines the special method; None when it does not.
pub fn call_special(
    it: &mut dyn Interpreter,
    v: &Value,
    name: &str,
    args: Vec<Value>,
) -> Result<Option<Value>, Exc> {
    match special_method(it, v, name)? {
        Some(f) => it.call_value(&f, Args::positional(args)).map(Some),
        None => Ok(None),
    }
}

/// `C(*args)`: the class's `__new__` makes the object, then, when it is an instance of `C`,
/// its `__init__` runs with `args` (CPython's `type.__call__`).
pub fn instantiate(it: &mut dyn Interpreter, class: &Rc<Class>, args: Args) -> Result<Value, Exc> {
    if let Some(call) = special_method(it, &class.value(), "__call__")? {
        return it.call_value(&call, args);
    }
    // A library class whose objects are not instances (`torch.nn.Parameter(t)` is a tensor)
    // makes them in its own `__new__`, which gets the arguments.
    if class.native {
        let new = class.attrs.borrow().get("__new__").cloned();
        if let Some(new @ Value::Builtin(_)) = new {
            return it.call_value(&new, args);
        }
    }
    if let Some(new) = program_new(class) {
        let mut new_args = Args {
            pos: args.pos.clone(),
            kw: args.kw.clone(),
            fname: args.fname,
        };
        new_args.pos.insert(0, class.value());
        let obj = it.call_value(&new, new_args)?;
        return match &obj {
            Value::Instance(inst) if inst.class().is_subclass_of(&class.value()) => {
                let own = inst.class();
                run_init(it, &own, obj.clone(), args, true)?;
                Ok(obj)
            }
            _ => Ok(obj),
        };
    }
    let this = allocate(it, class, &args)?;
    let Value::Instance(inst) = &this else {
        return Ok(this);
    };
    if inst.class().builtin_base().is_some()
        && !class.native_base()
        && !matches!(class.builtin_base(), Some(TypeKind::List | TypeKind::Dict))
        && !class.defines("__init__")
    {
        // An immutable built-in base took the arguments in `__new__`.
        return Ok(this);
    }
    run_init(it, class, this, args, false)
}

/// A `__new__` a program defined in the class or a base (a static method, as CPython makes it).
fn program_new(class: &Rc<Class>) -> Option<Value> {
    match class.lookup("__new__")? {
        f @ Value::Func(_) => Some(f),
        v => match downcast::<StaticMethod>(&v) {
            Some(StaticMethod(f @ Value::Func(_))) => Some(f.clone()),
            _ => None,
        },
    }
}

/// What a class statement does to its namespace before the class exists: `__new__` becomes a
/// static method (it takes the class explicitly), as in CPython's `type.__new__`, and `__eq__`
/// without `__hash__` sets `__hash__ = None`.
pub fn prepare_namespace(attrs: &mut Attrs) {
    if let Some(f @ Value::Func(_)) = attrs.get("__new__").cloned() {
        attrs.set(Rc::from("__new__"), Value::Object(Rc::new(StaticMethod(f))));
    }
    // A class that defines equality but not a hash is unhashable (`type_new`'s rule).
    if attrs.get("__eq__").is_some() && attrs.get("__hash__").is_none() {
        attrs.set(Rc::from("__hash__"), Value::None);
    }
}

/// `object.__new__(cls)` and the built-in bases' `__new__`: a fresh instance of `class` holding
/// what its built-in base makes of `args` (immutable values take them now; containers start
/// empty and are filled by `__init__`; exceptions keep them as `args`).
pub fn allocate(it: &mut dyn Interpreter, class: &Rc<Class>, args: &Args) -> Result<Value, Exc> {
    let inst = Rc::new(Instance::new(class.clone(), Value::None));
    let this = Value::Instance(inst.clone());
    // Library classes written in Rust set the value they hold in their own `__init__`; classes a
    // program defines get the base's `__new__`.
    if let Some(t) = class.builtin_base().filter(|_| !class.native_base()) {
        let mutable = matches!(t, TypeKind::List | TypeKind::Dict);
        let base_args = if mutable {
            Args::default()
        } else {
            Args {
                pos: args.pos.clone(),
                kw: args.kw.clone(),
                fname: t.name(),
            }
        };
        let value = it.call_value(&Value::Type(t), base_args)?;
        *inst.base_state.borrow_mut() = value;
    }
    if class.exception_base().is_some() {
        // BaseException.__new__ keeps the arguments even when __init__ is overridden.
        *inst.base_state.borrow_mut() = Value::tuple(args.pos.clone());
    }
    Ok(this)
}

/// Runs `class`'s `__init__` on `this` with `args`. `custom_new`: the class has a program's
/// `__new__`, which took the arguments, so `object.__init__` ignores them (as in CPython).
fn run_init(
    it: &mut dyn Interpreter,
    class: &Rc<Class>,
    this: Value,
    args: Args,
    custom_new: bool,
) -> Result<Value, Exc> {
    let init = class.lookup_with_builtins("__init__");
    match init {
        Some(f @ Value::Func(_)) => {
            let mut args = args;
            args.pos.insert(0, this.clone());
            let r = it.call_value(&f, args)?;
            if !matches!(r, Value::None) {
                return Err(Exc::type_error(format!(
                    "__init__() should return None, not '{}'",
                    r.type_name()
                )));
            }
        }
        Some(other) if class.defines("__init__") || class.builtin_base().is_some() => {
            let f = descriptor_get(it, other, Some(&this), class)?;
            it.call_value(&f, args)?;
        }
        _ => {
            if !custom_new
                && class.exception_base().is_none()
                && (!args.pos.is_empty() || !args.kw.is_empty())
            {
                return Err(Exc::type_error(format!(
                    "{}() takes no arguments",
                    class.name
                )));
            }
        }
    }
    Ok(this)
}

/// `super(class, obj)`: attribute lookup that starts after `class` in `obj`'s MRO.
pub struct Super {
    pub class: Rc<Class>,
    pub obj: Value,
}

impl Super {
    /// The MRO `obj` is looked up along: its class's (or its own, for a class) with the class.
    fn search_order(&self) -> Vec<Value> {
        let start = match &self.obj {
            Value::Instance(i) => i.class(),
            Value::Class(c) => c.clone(),
            _ => self.class.clone(),
        };
        std::iter::once(start.value())
            .chain(start.mro.iter().cloned())
            .collect()
    }

    pub fn get_attr(&self, it: &mut dyn Interpreter, name: &str) -> Result<Value, Exc> {
        let order = self.search_order();
        let after = order
            .iter()
            .position(|c| matches!(c, Value::Class(c) if Rc::ptr_eq(c, &self.class)))
            .map_or(order.len(), |i| i + 1);
        for c in order.iter().skip(after) {
            let found = match c {
                Value::Class(c) => c.attrs.borrow().get(name).cloned(),
                other => builtin_base_attr(other, name),
            };
            if let Some(attr) = found {
                let instance = match &self.obj {
                    Value::Instance(_) => Some(&self.obj),
                    _ => None,
                };
                let class = match &self.obj {
                    Value::Instance(i) => i.class(),
                    Value::Class(c) => c.clone(),
                    _ => self.class.clone(),
                };
                return descriptor_get(it, attr, instance, &class);
            }
        }
        Err(Exc::new(
            ExcKind::AttributeError,
            format!("'super' object has no attribute '{name}'"),
        ))
    }
}

impl NativeObject for Super {
    fn type_name(&self) -> &str {
        "super"
    }
    fn repr(&self) -> String {
        format!(
            "<super: <class '{}'>, <{} object>>",
            self.class.name,
            match &self.obj {
                Value::Instance(i) => i.class().name.to_string(),
                other => other.type_name(),
            }
        )
    }
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

pub fn as_super(v: &Value) -> Option<&Super> {
    downcast::<Super>(v)
}

/// Whether a class with these attributes and bases has a property anywhere.
/// A built-in type written in Rust, for `type(obj)` of a native object (`traceback`,
/// `frame`): a class of module `builtins` with no methods of its own.
pub fn builtin_type(name: &str, doc: &str) -> Rc<Class> {
    Rc::new(Class {
        name: Rc::from(name),
        qualname: Rc::from(name),
        module: Rc::from("builtins"),
        bases: vec![Value::Type(TypeKind::Object)],
        mro: vec![Value::Type(TypeKind::Object)],
        attrs: RefCell::new(Attrs::default()),
        doc: Some(Rc::from(doc)),
        has_properties: std::cell::Cell::new(false),
        native: true,
        source: None,
        subclasses: Default::default(),
    })
}

pub fn any_properties(attrs: &Attrs, bases: &[Value]) -> bool {
    attrs.iter().any(|(_, v)| downcast::<Property>(v).is_some())
        || bases
            .iter()
            .any(|b| matches!(b, Value::Class(c) if c.has_properties.get()))
}

pub fn is_property(v: &Value) -> bool {
    downcast::<Property>(v).is_some()
}

/// Records `class` as the defining class of every function in its body, so that zero-argument
/// `super()` inside them knows where to start.
pub fn adopt_methods(class: &Rc<Class>) {
    let attrs = class.attrs.borrow();
    for (_, v) in attrs.iter() {
        let funcs: Vec<Value> = match v {
            Value::Func(_) => vec![v.clone()],
            Value::Object(_) => {
                if let Some(p) = downcast::<Property>(v) {
                    vec![p.fget.clone(), p.fset.clone(), p.fdel.clone()]
                } else if let Some(s) = downcast::<StaticMethod>(v) {
                    vec![s.0.clone()]
                } else if let Some(c) = downcast::<ClassMethod>(v) {
                    vec![c.0.clone()]
                } else {
                    Vec::new()
                }
            }
            _ => Vec::new(),
        };
        for f in &funcs {
            if let Value::Func(f) = f {
                set_owner(f, class);
            }
        }
    }
}

fn set_owner(f: &Rc<Function>, class: &Rc<Class>) {
    let mut owner = f.owner.borrow_mut();
    if owner.is_none() {
        *owner = Some(Rc::downgrade(class));
    }
}

/// The class that defined function `f` (for zero-argument `super()`).
pub fn owner_of(f: &Function) -> Option<Rc<Class>> {
    f.owner.borrow().as_ref().and_then(Weak::upgrade)
}

/// PyTorch's `TracerWarning` when `torch.jit.trace` records a forward that turns tensor `v`
/// into a Python value (`what`: `boolean`, `integer`, `float`, `number`, or `len` for
/// `len(tensor)`): the trace freezes that value. Issued through `warnings.warn`, so the
/// program's filters apply.
pub fn tracer_warning(it: &mut dyn Interpreter, v: &Value, what: &str) -> Result<(), Exc> {
    let Value::Array(a) = v else {
        return Ok(());
    };
    if a.flavor != super::value::Flavor::Torch || !it.state().nn.tape.is_tracing() {
        return Ok(());
    }
    let text = if what == "len" {
        "Using len to get tensor shape might cause the trace to be incorrect. Recommended usage would be tensor.shape[0]. Passing a tensor of different shape might lead to errors or silently give incorrect results.".to_string()
    } else {
        format!("Converting a tensor to a Python {what} might cause the trace to be incorrect. We can't record the data flow of Python values, so this value will be treated as a constant in the future. This means that the trace might not generalize to other inputs!")
    };
    let warn = it.import("warnings")?.get("warn");
    let category = it.import("torch.jit")?.get("TracerWarning");
    if let (Some(warn), Some(category)) = (warn, category) {
        it.call_value(&warn, Args::positional(vec![Value::str(&text), category]))?;
    }
    Ok(())
}

/// Python truthiness with a class's `__bool__` or `__len__`.
pub fn truthy(it: &mut dyn Interpreter, v: &Value) -> Result<bool, Exc> {
    let Value::Instance(inst) = v else {
        if let Value::Array(_) = v {
            tracer_warning(it, v, "boolean")?;
        }
        return v.truthy();
    };
    if inst.class().defines("__bool__") {
        return match call_special(it, v, "__bool__", Vec::new())? {
            Some(Value::Bool(b)) => Ok(b),
            Some(other) => Err(Exc::type_error(format!(
                "__bool__ should return bool, returned {}",
                other.type_name()
            ))),
            None => Ok(true),
        };
    }
    if !inst.class().defines("__len__") {
        if let Some(base) = base_value(v) {
            return base.truthy();
        }
    }
    match call_special(it, v, "__len__", Vec::new())? {
        Some(Value::Int(n)) => Ok(n != 0),
        Some(Value::Bool(b)) => Ok(b),
        Some(other) => Err(Exc::type_error(format!(
            "'{}' object cannot be interpreted as an integer",
            other.type_name()
        ))),
        None => Ok(true),
    }
}

/// `slice(start, stop, step)`: what `obj[a:b]` passes to a class's `__getitem__`.
pub struct Slice {
    pub start: Value,
    pub stop: Value,
    pub step: Value,
}

impl NativeObject for Slice {
    fn type_name(&self) -> &str {
        "slice"
    }
    fn repr(&self) -> String {
        let part = |v: &Value| match v {
            Value::None => "None".to_string(),
            Value::Int(i) => i.to_string(),
            other => other.type_name(),
        };
        format!(
            "slice({}, {}, {})",
            part(&self.start),
            part(&self.stop),
            part(&self.step)
        )
    }
    fn get_attr(&self, _this: &Rc<dyn NativeObject>, name: &str) -> Option<Value> {
        match name {
            "start" => Some(self.start.clone()),
            "stop" => Some(self.stop.clone()),
            "step" => Some(self.step.clone()),
            _ => None,
        }
    }
    fn attr_names(&self) -> Vec<&'static str> {
        vec!["start", "step", "stop"]
    }
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

pub fn as_slice(v: &Value) -> Option<&Slice> {
    downcast::<Slice>(v)
}

pub fn new_slice(start: Value, stop: Value, step: Value) -> Value {
    Value::Object(Rc::new(Slice { start, stop, step }))
}

/// `...` as a value.
pub struct EllipsisType;

impl NativeObject for EllipsisType {
    fn type_name(&self) -> &str {
        "ellipsis"
    }
    fn repr(&self) -> String {
        "Ellipsis".into()
    }
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

thread_local! {
    static ELLIPSIS: Value = Value::Object(Rc::new(EllipsisType));
}

pub fn ellipsis() -> Value {
    ELLIPSIS.with(|v| v.clone())
}
