//! The built-ins of the class machinery (`crate::object::class` holds the machinery itself):
//! `super`, `property`, `staticmethod`, `classmethod`, `issubclass`, `vars`, `delattr`,
//! `NotImplemented`.

use std::rc::Rc;

use crate::object::class::{self, ClassMethod, StaticMethod, Super};
use crate::object::value::{BuiltinFn, TypeKind};
use crate::object::{builtin, Args, Exc, ExcKind, Interpreter, NameMap, Value};

pub fn install(b: &mut NameMap<Value>) {
    let fns: &[(&'static str, &'static str, BuiltinFn)] = &[
        (
            "super",
            "super(type, obj): obj seen as the classes after type in its method resolution order; super() inside a method.",
            super_fn,
        ),
        (
            "property",
            "property(fget=None, fset=None, fdel=None, doc=None): an attribute computed by methods; also a decorator.",
            property,
        ),
        (
            "staticmethod",
            "staticmethod(f): a function kept in a class and called without the instance.",
            staticmethod,
        ),
        (
            "classmethod",
            "classmethod(f): a function kept in a class and called with the class as first argument.",
            classmethod,
        ),
        (
            "issubclass",
            "issubclass(cls, class_or_tuple): whether cls is, or derives from, one of the classes.",
            issubclass,
        ),
        ("vars", "vars(obj): obj's attributes as a dict.", vars),
        ("delattr", "delattr(obj, name): the same as del obj.name.", delattr),
    ];
    for (name, doc, f) in fns {
        b.insert(Rc::from(*name), builtin(name, doc, *f));
    }
    b.insert(Rc::from("NotImplemented"), class::not_implemented());
}

/// `super(C, obj)`; the interpreter supplies both for `super()` inside a method.
pub fn super_fn(_it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let cls = a.required(0, "type")?;
    let obj = a.required(1, "obj")?;
    a.finish(2)?;
    let Value::Class(cls) = cls else {
        return Err(Exc::type_error(format!(
            "super() argument 1 must be a type, not {}",
            cls.type_name()
        )));
    };
    let ok = match &obj {
        Value::Instance(i) => i.class.is_subclass_of(&Value::Class(cls.clone())),
        Value::Class(c) => c.is_subclass_of(&Value::Class(cls.clone())),
        _ => false,
    };
    if !ok {
        return Err(Exc::type_error(
            "super(type, obj): obj must be an instance or subtype of type",
        ));
    }
    Ok(Value::Object(Rc::new(Super { class: cls, obj })))
}

pub fn property(_it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let fget = a.take(0, "fget")?.unwrap_or(Value::None);
    let fset = a.take(1, "fset")?.unwrap_or(Value::None);
    let fdel = a.take(2, "fdel")?.unwrap_or(Value::None);
    let doc = a.take(3, "doc")?.unwrap_or(Value::None);
    a.finish(4)?;
    Ok(class::new_property(fget, fset, fdel, doc))
}

pub fn staticmethod(_it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let f = a.required(0, "function")?;
    a.finish(1)?;
    Ok(Value::Object(Rc::new(StaticMethod(f))))
}

pub fn classmethod(_it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let f = a.required(0, "function")?;
    a.finish(1)?;
    Ok(Value::Object(Rc::new(ClassMethod(f))))
}

/// Whether class `c` is `t` or derives from it (`t` a class, a built-in type or a tuple).
fn subclass_of(c: &Value, t: &Value) -> Result<bool, Exc> {
    if let Value::Tuple(items) = t {
        for x in items.iter() {
            if subclass_of(c, x)? {
                return Ok(true);
            }
        }
        return Ok(false);
    }
    if !matches!(t, Value::Class(_) | Value::Type(_) | Value::ExcType(_)) {
        return Err(Exc::type_error(
            "issubclass() arg 2 must be a class, a tuple of classes, or a union",
        ));
    }
    Ok(match c {
        Value::Class(c) => c.is_subclass_of(t),
        Value::ExcType(k) => match t {
            Value::ExcType(b) => k.is_subclass_of(*b),
            Value::Type(TypeKind::Object) => true,
            _ => false,
        },
        Value::Type(k) => match t {
            Value::Type(TypeKind::Object) => true,
            Value::Type(b) => k == b || (*k == TypeKind::Bool && *b == TypeKind::Int),
            _ => false,
        },
        _ => return Err(Exc::type_error("issubclass() arg 1 must be a class")),
    })
}

pub fn issubclass(_it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let c = a.required(0, "cls")?;
    let t = a.required(1, "class_or_tuple")?;
    a.finish(2)?;
    Ok(Value::Bool(subclass_of(&c, &t)?))
}

pub fn vars(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let o = a.required(0, "object")?;
    a.finish(1)?;
    match &o {
        Value::Instance(_) | Value::Class(_) => super::builtins::get_attr(it, &o, "__dict__"),
        other => Err(Exc::type_error(format!(
            "vars() argument must have __dict__ attribute (a {} has none)",
            other.type_name()
        ))),
    }
}

pub fn delattr(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let o = a.required(0, "obj")?;
    let name = a.required(1, "name")?;
    a.finish(2)?;
    let Value::Str(name) = name else {
        return Err(Exc::type_error(format!(
            "attribute name must be string, not '{}'",
            name.type_name()
        )));
    };
    del_attr(it, &o, &name)?;
    Ok(Value::None)
}

/// `del obj.name`.
pub fn del_attr(it: &mut dyn Interpreter, obj: &Value, name: &str) -> Result<(), Exc> {
    match obj {
        Value::Instance(inst) => class::instance_del_attr(it, obj, inst, name),
        Value::Class(c) => match c.attrs.borrow_mut().remove(name) {
            Some(_) => Ok(()),
            None => Err(Exc::new(
                ExcKind::AttributeError,
                format!("type object '{}' has no attribute '{name}'", c.name),
            )),
        },
        other => Err(Exc::new(
            ExcKind::AttributeError,
            format!(
                "'{}' object has no attribute '{name}' to delete",
                other.type_name()
            ),
        )),
    }
}
