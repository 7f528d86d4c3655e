//! Making a class from its parts, CPython's `type.__new__`: what a `class` statement does
//! once its body has run, and what `type(name, bases, namespace)` does with a namespace given
//! as a dict.
use std::cell::RefCell;
use std::rc::Rc;

use super::class::{Attrs, Class};
use super::error::Exc;
use super::interpreter::Interpreter;
use super::value::{TypeKind, Value};

/// What a new class is made of.
pub struct ClassParts {
    pub name: Rc<str>,
    pub qualname: Rc<str>,
    /// The module a class without `__module__` in its namespace belongs to.
    pub module: Rc<str>,
    /// The bases as given (empty: `object`).
    pub bases: Vec<Value>,
    pub attrs: Attrs,
    pub doc: Option<Rc<str>>,
    /// Where a `class` statement's source is (None for `type(...)`).
    pub source: Option<(Rc<str>, crate::lang::Span)>,
    pub metaclass: Option<Value>,
    /// The keywords for `__init_subclass__`.
    pub keywords: Vec<(Rc<str>, Value)>,
}

/// The bases a class may have: classes, `object`, the built-in types that can be subclassed;
/// `type` itself only makes the class a metaclass (dropped, as it adds nothing here).
fn checked_bases(given: Vec<Value>) -> Result<Vec<Value>, Exc> {
    let mut bases = Vec::new();
    for b in given {
        match &b {
            Value::Class(_) | Value::ExcType(_) | Value::Type(TypeKind::Object) => bases.push(b),
            Value::Type(
                TypeKind::Int
                | TypeKind::Float
                | TypeKind::Str
                | TypeKind::List
                | TypeKind::Tuple
                | TypeKind::Dict,
            ) => bases.push(b),
            // A metaclass derives from `type`: its instances are the classes it makes.
            Value::Builtin(t) if t.name == "type" => {}
            Value::Type(t) => {
                return Err(Exc::type_error(format!(
                    "type '{}' is not an acceptable base type",
                    t.name()
                )))
            }
            other => {
                return Err(Exc::type_error(format!(
                    "a class can only derive from classes, not from a {} value",
                    other.type_name()
                )))
            }
        }
    }
    if bases.is_empty() {
        bases.push(Value::Type(TypeKind::Object));
    }
    Ok(bases)
}

/// The class made of `parts`, registered with its bases, `__init_subclass__` run.
pub fn make_class(it: &mut dyn Interpreter, parts: ClassParts) -> Result<Rc<Class>, Exc> {
    let ClassParts {
        name,
        qualname,
        module,
        bases,
        mut attrs,
        doc,
        source,
        metaclass,
        keywords,
    } = parts;
    let bases = checked_bases(bases)?;
    let mro = super::class::compute_mro(&bases)?;
    super::class::prepare_namespace(&mut attrs);
    let has_properties = super::class::any_properties(&attrs, &bases);
    let class = Rc::new(Class {
        name,
        qualname,
        // A `__module__` the namespace sets names the class's module, as in CPython.
        module: match attrs.get("__module__") {
            Some(Value::Str(m)) => m.clone(),
            _ => module,
        },
        bases,
        mro,
        attrs: RefCell::new(attrs),
        doc,
        has_properties: std::cell::Cell::new(has_properties),
        native: false,
        source,
        subclasses: Default::default(),
    });
    for base in &class.bases {
        if let Value::Class(b) = base {
            // Dead entries go as new ones come, so redefining a class in a loop stays small.
            let mut subclasses = b.subclasses.borrow_mut();
            subclasses.retain(|w| w.strong_count() > 0);
            subclasses.push(Rc::downgrade(&class));
        }
    }
    super::class::adopt_methods(&class);
    super::class::finish_class(it, &class, metaclass, keywords)?;
    Ok(class)
}

/// `type(name, bases, namespace)`: a class as a `class` statement with that body makes it,
/// with CPython's checks of the three arguments.
pub fn type_new(
    it: &mut dyn Interpreter,
    name: Value,
    bases: Value,
    ns: Value,
) -> Result<Value, Exc> {
    let Value::Str(name) = &name else {
        return Err(Exc::type_error(format!(
            "type.__new__() argument 1 must be str, not {}",
            name.type_name()
        )));
    };
    let Value::Tuple(bases) = &bases else {
        return Err(Exc::type_error(format!(
            "type.__new__() argument 2 must be tuple, not {}",
            bases.type_name()
        )));
    };
    let Value::Dict(ns) = &ns else {
        return Err(Exc::type_error(format!(
            "type.__new__() argument 3 must be dict, not {}",
            ns.type_name()
        )));
    };
    let mut attrs = Attrs::default();
    for (k, v) in ns.borrow().entries.iter() {
        let Value::Str(k) = k else {
            continue;
        };
        attrs.set(k.clone(), v.clone());
    }
    let doc = match attrs.get("__doc__") {
        Some(Value::Str(d)) => Some(d.clone()),
        _ => None,
    };
    let class = make_class(
        it,
        ClassParts {
            name: name.clone(),
            qualname: name.clone(),
            module: Rc::from("__main__"),
            bases: bases.to_vec(),
            attrs,
            doc,
            source: None,
            // A base's metaclass is found along the MRO, as for a `class` statement.
            metaclass: None,
            keywords: Vec::new(),
        },
    )?;
    Ok(Value::Class(class))
}
