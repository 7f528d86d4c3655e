//! The built-ins of the class machinery (`crate::object::class` holds the machinery itself):
//! `super`, `property`, `staticmethod`, `classmethod`, `issubclass`, `vars`, `delattr`,
//! `NotImplemented`.

use std::cell::RefCell;
use std::rc::Rc;

use crate::object::class::{self, ClassMethod, StaticMethod, Super};
use crate::object::value::{BuiltinFn, NativeObject, TypeKind};
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
        (
            "iter",
            "iter(iterable): an iterator over its items (next(it) draws them one by one).",
            iter,
        ),
        (
            "next",
            "next(iterator[, default]): the iterator's next item; default (or StopIteration) when it is exhausted.",
            next,
        ),
    ];
    for (name, doc, f) in fns {
        b.insert(Rc::from(*name), builtin(name, doc, *f));
    }
    b.insert(Rc::from("NotImplemented"), class::not_implemented());
    // `exit(code)` / `quit(code)` leave a script as `sys.exit` does (CPython's `site` adds them).
    for name in ["exit", "quit"] {
        b.insert(Rc::from(name), Value::Object(Rc::new(Quitter(name))));
    }
}

/// `exit` / `quit`: called, they raise SystemExit; shown, they say how to leave, as CPython's do.
struct Quitter(&'static str);

impl NativeObject for Quitter {
    fn type_name(&self) -> &str {
        "Quitter"
    }
    fn repr(&self) -> String {
        format!("Use {}() or Ctrl-D (i.e. EOF) to exit", self.0)
    }
    fn get_attr(&self, _this: &Rc<dyn NativeObject>, name: &str) -> Option<Value> {
        (name == "__call__").then(|| {
            builtin(
                self.0,
                "exit(code=None): leave the program with this exit status, as sys.exit(code).",
                crate::modules::python::stdlib::sys::exit,
            )
        })
    }
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

/// `super(C, obj)`; the interpreter supplies both for `super()` inside a method.
pub fn super_fn(_it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let cls = a.required(0, "type")?;
    let obj = a.required(1, "obj")?;
    a.finish(2)?;
    let Value::Class(cls) = &cls else {
        return Err(Exc::type_error(format!(
            "super() argument 1 must be a type, not {}",
            cls.type_name()
        )));
    };
    let ok = match &obj {
        Value::Instance(i) => i.class().is_subclass_of(&Value::Class(cls.clone())),
        Value::Class(c) => c.is_subclass_of(&Value::Class(cls.clone())),
        _ => false,
    };
    if !ok {
        return Err(Exc::type_error(
            "super(type, obj): obj must be an instance or subtype of type",
        ));
    }
    let class = cls.clone();
    Ok(Value::Object(Rc::new(Super { class, obj })))
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

pub fn issubclass(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let c = a.required(0, "cls")?;
    let t = a.required(1, "class_or_tuple")?;
    a.finish(2)?;
    if subclass_of(&c, &t)? {
        return Ok(Value::Bool(true));
    }
    Ok(Value::Bool(class::metaclass_check(
        it,
        &t,
        &c,
        "__subclasscheck__",
    )?))
}

pub fn vars(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let o = a.required(0, "object")?;
    a.finish(1)?;
    match &o {
        Value::Instance(_) | Value::Class(_) => {
            crate::modules::python::builtins::get_attr(it, &o, "__dict__")
        }
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
    let Value::Str(name) = &name else {
        return Err(Exc::type_error(format!(
            "attribute name must be string, not '{}'",
            name.type_name()
        )));
    };
    del_attr(it, &o, name)?;
    Ok(Value::None)
}

/// `del obj.name`.
pub fn del_attr(it: &mut dyn Interpreter, obj: &Value, name: &str) -> Result<(), Exc> {
    match obj {
        Value::Instance(inst) => class::instance_del_attr(it, obj, inst, name),
        _ if name == "__class__" => Err(Exc::type_error("can't delete __class__ attribute")),
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

/// The iterator `iter()` gives over a materialised sequence: items are handed out one by one.
struct SeqIterator {
    items: RefCell<std::vec::IntoIter<Value>>,
}

impl NativeObject for SeqIterator {
    fn type_name(&self) -> &str {
        "iterator"
    }
    fn repr(&self) -> String {
        format!("<iterator object at {:#x}>", self as *const _ as usize)
    }
    fn get_attr(&self, this: &Rc<dyn NativeObject>, name: &str) -> Option<Value> {
        let receiver = Value::Object(this.clone());
        match name {
            "__next__" => Some(crate::object::method(
                &receiver,
                "__next__",
                "the next item; StopIteration at the end",
                |_, r, a| {
                    a.finish(0)?;
                    let Value::Object(o) = r else {
                        return Err(Exc::type_error("expected an iterator"));
                    };
                    let Some(s) = o.as_any().downcast_ref::<SeqIterator>() else {
                        return Err(Exc::type_error("expected an iterator"));
                    };
                    let next = s.items.borrow_mut().next();
                    next.ok_or_else(|| Exc::new(ExcKind::StopIteration, ""))
                },
            )),
            "__iter__" => Some(crate::object::method(
                &receiver,
                "__iter__",
                "the iterator itself",
                |_, r, _| Ok(r.clone()),
            )),
            // Drawn lazily by for loops (see `Interp::for_each`).
            "__lazy_iter__" => Some(Value::Bool(true)),
            _ => None,
        }
    }
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

pub fn iter(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let v = a.required(0, "iterable")?;
    let sentinel = a.take(1, "sentinel")?;
    a.finish(2)?;
    if let Some(sentinel) = sentinel {
        return super::lazy::callable_iterator(v, sentinel);
    }
    if let Some(r) = crate::object::big_range::iterator(&v) {
        return Ok(r);
    }
    match &v {
        Value::Generator(_) => return Ok(v.clone()),
        v if class::has_special_methods(v) => {
            if let Some(r) = class::call_special(it, v, "__iter__", Vec::new())? {
                if matches!(r, Value::Instance(_))
                    && class::special_method(it, &r, "__next__")?.is_none()
                {
                    return Err(Exc::type_error(format!(
                        "iter() returned non-iterator of type '{}'",
                        r.type_name()
                    )));
                }
                return Ok(r);
            }
        }
        Value::Object(o) if o.get_attr(o, "__next__").is_some() => return Ok(v.clone()),
        Value::Object(o) if o.get_attr(o, "__lazy_iter__").is_some() => {
            if let Some(f) = o.get_attr(o, "__iter__") {
                return it.call_value(&f, Args::default());
            }
        }
        _ => {}
    }
    let items = it.iterate(&v)?;
    Ok(Value::Object(Rc::new(SeqIterator {
        items: RefCell::new(items.into_iter()),
    })))
}

pub fn next(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let v = a.required(0, "iterator")?;
    let default = a.take(1, "default")?;
    a.finish(2)?;
    if let Value::Generator(g) = &v {
        return match it.gen_resume(g, crate::object::value::GenAction::Send(Value::None))? {
            crate::object::value::GenStep::Yield(item) => Ok(item),
            crate::object::value::GenStep::Return(v) => match default {
                Some(d) => Ok(d),
                None => Err(crate::modules::python::builtins::stop_with(it, v)?),
            },
        };
    }
    let next = match &v {
        Value::Instance(_) => class::special_method(it, &v, "__next__")?,
        Value::Object(o) => o.get_attr(o, "__next__"),
        _ => None,
    };
    let Some(next) = next else {
        return Err(Exc::type_error(format!(
            "'{}' object is not an iterator",
            v.type_name()
        )));
    };
    match it.call_value(&next, Args::default()) {
        Err(e) if e.kind == ExcKind::StopIteration && default.is_some() => {
            Ok(default.unwrap_or(Value::None))
        }
        other => other,
    }
}
