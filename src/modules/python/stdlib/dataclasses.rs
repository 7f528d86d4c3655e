//! `dataclasses`: `@dataclass` (with `init`, `repr`, `eq`, `order`, `frozen`), `field`, `fields`,
//! `asdict`, `astuple`, `replace`, `is_dataclass`, `FrozenInstanceError`, as CPython 3.11 has
//! them. The decorator reads the class's `__annotations__` (kept by class bodies), records the
//! fields in `__dataclass_fields__`, and gives the class built-in `__init__`/`__repr__`/`__eq__`/
//! comparisons that read the fields from there, so a subclass's own decoration adds its fields.

use std::cell::RefCell;
use std::rc::Rc;

use super::{exc_class, module, module_member, raise, set_fns};
use crate::object::class::{not_implemented, raw_set_attr, Class};
use crate::object::value::{Dict, Module, NativeObject};
use crate::object::{format, hash_key, method, Args, Exc, ExcKind, Interpreter, Value};

/// One field: what `field(...)` makes and `fields()` returns.
struct Field {
    name: RefCell<Rc<str>>,
    ty: RefCell<Value>,
    default: Option<Value>,
    default_factory: Option<Value>,
    init: bool,
    repr: bool,
    compare: bool,
}

impl NativeObject for Field {
    fn type_name(&self) -> &str {
        "Field"
    }
    fn repr(&self) -> String {
        format!("Field(name='{}')", self.name.borrow())
    }
    fn get_attr(&self, _this: &Rc<dyn NativeObject>, name: &str) -> Option<Value> {
        let missing = || Value::str("<dataclasses._MISSING_TYPE>");
        Some(match name {
            "name" => Value::Str(self.name.borrow().clone()),
            "type" => self.ty.borrow().clone(),
            "default" => self.default.clone().unwrap_or_else(missing),
            "default_factory" => self.default_factory.clone().unwrap_or_else(missing),
            "init" => Value::Bool(self.init),
            "repr" => Value::Bool(self.repr),
            "compare" => Value::Bool(self.compare),
            _ => return None,
        })
    }
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

fn as_field(v: &Value) -> Option<&Field> {
    match v {
        Value::Object(o) => o.as_any().downcast_ref::<Field>(),
        _ => None,
    }
}

/// The options of one `@dataclass(...)`.
#[derive(Clone, Copy)]
struct Options {
    init: bool,
    repr: bool,
    eq: bool,
    order: bool,
    frozen: bool,
}

fn flag(a: &mut Args, name: &str, default: bool) -> Result<bool, Exc> {
    match a.take_kw(name) {
        None => Ok(default),
        Some(Value::Bool(b)) => Ok(b),
        Some(Value::Int(i)) => Ok(i != 0),
        Some(Value::None) => Ok(false),
        Some(other) => Err(Exc::type_error(format!(
            "{name} must be True or False, not {}",
            other.type_name()
        ))),
    }
}

pub fn build() -> Rc<Module> {
    let m = module(
        "dataclasses",
        "Generate special methods for classes of fields.",
    );
    m.set(
        "FrozenInstanceError",
        Value::Class(exc_class(
            "FrozenInstanceError",
            "dataclasses",
            ExcKind::AttributeError,
        )),
    );
    set_fns(
        &m,
        &[
            (
                "dataclass",
                "dataclass(cls=None, *, init=True, repr=True, eq=True, order=False, frozen=False): add __init__, __repr__, __eq__ (and more) from the class's annotated fields.",
                dataclass,
            ),
            (
                "field",
                "field(*, default, default_factory, init=True, repr=True, compare=True): a field's settings.",
                |_, mut a| {
                    let default = a.take_kw("default");
                    let default_factory = a.take_kw("default_factory");
                    let init = flag(&mut a, "init", true)?;
                    let repr = flag(&mut a, "repr", true)?;
                    let compare = flag(&mut a, "compare", true)?;
                    for k in ["hash", "metadata", "kw_only"] {
                        a.take_kw(k);
                    }
                    a.finish(0)?;
                    if default.is_some() && default_factory.is_some() {
                        return Err(Exc::value_error(
                            "cannot specify both default and default_factory",
                        ));
                    }
                    Ok(Value::Object(Rc::new(Field {
                        name: RefCell::new(Rc::from("")),
                        ty: RefCell::new(Value::None),
                        default,
                        default_factory,
                        init,
                        repr,
                        compare,
                    })))
                },
            ),
            ("fields", "fields(obj): the fields of a dataclass or its instance, as a tuple.", |it, mut a| {
                let v = a.required(0, "class_or_instance")?;
                a.finish(1)?;
                let fields = fields_of(it, &v)?.ok_or_else(|| {
                    Exc::type_error("must be called with a dataclass type or instance")
                })?;
                Ok(Value::tuple(fields))
            }),
            ("is_dataclass", "is_dataclass(obj): whether obj is a dataclass or an instance of one.", |it, mut a| {
                let v = a.required(0, "obj")?;
                a.finish(1)?;
                Ok(Value::Bool(fields_of(it, &v)?.is_some()))
            }),
            ("asdict", "asdict(obj): the fields as a dict, recursively.", |it, mut a| {
                let v = a.required(0, "obj")?;
                a.finish(1)?;
                if !matches!(v, Value::Instance(_)) || fields_of(it, &v)?.is_none() {
                    return Err(Exc::type_error("asdict() should be called on dataclass instances"));
                }
                convert(it, &v, true)
            }),
            ("astuple", "astuple(obj): the fields as a tuple, recursively.", |it, mut a| {
                let v = a.required(0, "obj")?;
                a.finish(1)?;
                if !matches!(v, Value::Instance(_)) || fields_of(it, &v)?.is_none() {
                    return Err(Exc::type_error("astuple() should be called on dataclass instances"));
                }
                convert(it, &v, false)
            }),
            ("replace", "replace(obj, **changes): a new instance with some fields changed.", |it, mut a| {
                let v = a.required(0, "obj")?;
                let changes = std::mem::take(&mut a.kw);
                a.finish(1)?;
                let Some(fields) = fields_of(it, &v)? else {
                    return Err(Exc::type_error("replace() should be called on dataclass instances"));
                };
                let mut kw = Vec::new();
                for f in &fields {
                    let Some(f) = as_field(f) else { continue };
                    if !f.init {
                        continue;
                    }
                    let name = f.name.borrow().clone();
                    if !changes.iter().any(|(k, _)| *k == name) {
                        kw.push((name.clone(), it.get_attr(&v, &name)?));
                    }
                }
                kw.extend(changes);
                let class = match &v {
                    Value::Instance(i) => i.class().value(),
                    other => other.clone(),
                };
                it.call_value(&class, Args { pos: Vec::new(), kw, fname: "replace" })
            }),
        ],
    );
    m
}

/// The Field objects of a dataclass (or of an instance's class), in order; None otherwise.
fn fields_of(it: &mut dyn Interpreter, v: &Value) -> Result<Option<Vec<Value>>, Exc> {
    let class = match v {
        Value::Instance(i) => i.class(),
        Value::Class(c) => c.clone(),
        _ => return Ok(None),
    };
    let _ = it;
    Ok(match &class.lookup("__dataclass_fields__") {
        Some(Value::Dict(d)) => Some(d.borrow().entries.iter().map(|(_, f)| f.clone()).collect()),
        _ => None,
    })
}

/// `asdict`/`astuple`: dataclass instances and the containers around them, copied recursively
/// (a depth limit and stack growth, as every walk over user data has).
fn convert(it: &mut dyn Interpreter, v: &Value, as_dict: bool) -> Result<Value, Exc> {
    crate::object::guard::nest(crate::object::guard::Walk::Copy, || {
        convert_level(it, v, as_dict)
    })
}

fn convert_level(it: &mut dyn Interpreter, v: &Value, as_dict: bool) -> Result<Value, Exc> {
    if let Some(fields) = fields_of(it, v)?.filter(|_| matches!(v, Value::Instance(_))) {
        let mut d = Dict::default();
        let mut items = Vec::new();
        for f in &fields {
            let Some(f) = as_field(f) else { continue };
            let name = f.name.borrow().clone();
            let value = it.get_attr(v, &name)?;
            let value = convert(it, &value, as_dict)?;
            if as_dict {
                d.insert(
                    hash_key(&Value::Str(name.clone()))?,
                    Value::Str(name),
                    value,
                );
            } else {
                items.push(value);
            }
        }
        return Ok(if as_dict {
            Value::Dict(Rc::new(RefCell::new(d)))
        } else {
            Value::tuple(items)
        });
    }
    Ok(match v {
        Value::List(l) => {
            let items = l.borrow().clone();
            let mut out = Vec::new();
            for x in &items {
                out.push(convert(it, x, as_dict)?);
            }
            Value::list(out)
        }
        Value::Tuple(t) => {
            let mut out = Vec::new();
            for x in t.iter() {
                out.push(convert(it, x, as_dict)?);
            }
            Value::tuple(out)
        }
        Value::Dict(d) => {
            let entries = d.borrow().entries.clone();
            let mut out = Dict::default();
            for (k, x) in entries {
                let x = convert(it, &x, as_dict)?;
                out.insert(hash_key(&k)?, k, x);
            }
            Value::Dict(Rc::new(RefCell::new(out)))
        }
        other => other.clone(),
    })
}

fn dataclass(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let opts = Options {
        init: flag(&mut a, "init", true)?,
        repr: flag(&mut a, "repr", true)?,
        eq: flag(&mut a, "eq", true)?,
        order: flag(&mut a, "order", false)?,
        frozen: flag(&mut a, "frozen", false)?,
    };
    for k in ["unsafe_hash", "match_args", "kw_only", "slots"] {
        a.take_kw(k);
    }
    let cls = a.take(0, "cls")?;
    a.finish(1)?;
    let packed = Value::tuple(
        [opts.init, opts.repr, opts.eq, opts.order, opts.frozen]
            .iter()
            .map(|b| Value::Bool(*b))
            .collect(),
    );
    match cls {
        // `@dataclass(order=True)`: a decorator with these options.
        None | Some(Value::None) => Ok(method(
            &packed,
            "wrap",
            "the dataclass decorator with its options",
            |it, r, mut a| {
                let cls = a.required(0, "cls")?;
                a.finish(1)?;
                let Value::Tuple(o) = r else {
                    return Err(Exc::type_error("bad dataclass options"));
                };
                let b = |i: usize| matches!(o.get(i), Some(Value::Bool(true)));
                let opts = Options {
                    init: b(0),
                    repr: b(1),
                    eq: b(2),
                    order: b(3),
                    frozen: b(4),
                };
                process(it, cls, opts)
            },
        )),
        Some(cls) => process(it, cls, opts),
    }
}

fn process(it: &mut dyn Interpreter, cls: Value, opts: Options) -> Result<Value, Exc> {
    let Value::Class(class) = &cls else {
        return Err(Exc::type_error(format!(
            "dataclass() should be called on a class, not '{}'",
            cls.type_name()
        )));
    };
    if opts.order && !opts.eq {
        return Err(Exc::value_error("eq must be true if order is true"));
    }
    // Inherited fields first (base classes' own decorations), then this class's annotations.
    let mut fields = Dict::default();
    for base in class.mro.iter().rev() {
        if let Value::Class(b) = base {
            if let Some(Value::Dict(d)) = b.attrs.borrow().get("__dataclass_fields__") {
                for (k, f) in d.borrow().entries.iter() {
                    fields.insert(hash_key(k)?, k.clone(), f.clone());
                }
            }
        }
    }
    let annotations = class.attrs.borrow().get("__annotations__").cloned();
    if let Some(Value::Dict(ann)) = &annotations {
        let entries = ann.borrow().entries.clone();
        for (name, ty) in entries {
            let Value::Str(name) = &name else { continue };
            let declared = class.attrs.borrow().get(name).cloned();
            let field = match declared.as_ref().and_then(as_field) {
                Some(f) => {
                    // The class attribute becomes the plain default (or goes away).
                    match &f.default {
                        Some(d) => class.attrs.borrow_mut().set(name.clone(), d.clone()),
                        None => {
                            class.attrs.borrow_mut().remove(name);
                        }
                    }
                    *f.name.borrow_mut() = name.clone();
                    *f.ty.borrow_mut() = ty.clone();
                    declared.clone().unwrap_or(Value::None)
                }
                None => {
                    if let Some(d @ (Value::List(_) | Value::Dict(_))) = &declared {
                        return Err(Exc::value_error(format!(
                            "mutable default <class '{}'> for field {name} is not allowed: use default_factory",
                            d.type_name()
                        )));
                    }
                    Value::Object(Rc::new(Field {
                        name: RefCell::new(name.clone()),
                        ty: RefCell::new(ty.clone()),
                        default: declared.clone(),
                        default_factory: None,
                        init: true,
                        repr: true,
                        compare: true,
                    }))
                }
            };
            fields.insert(
                hash_key(&Value::Str(name.clone()))?,
                Value::Str(name.clone()),
                field,
            );
        }
    }
    // A field without a default may not follow one with a default (in __init__'s order).
    let mut seen_default = false;
    for (_, f) in fields.entries.iter() {
        let Some(f) = as_field(f) else { continue };
        if !f.init {
            continue;
        }
        let has_default = f.default.is_some() || f.default_factory.is_some();
        if seen_default && !has_default {
            return Err(Exc::type_error(format!(
                "non-default argument '{}' follows default argument",
                f.name.borrow()
            )));
        }
        seen_default |= has_default;
    }
    // Class patterns match `__init__`'s fields by position (`case Point(x, y)`).
    let match_args: Vec<Value> = fields
        .entries
        .iter()
        .filter_map(|(_, f)| as_field(f))
        .filter(|f| f.init)
        .map(|f| Value::str(&f.name.borrow().to_string()))
        .collect();
    let mut attrs = class.attrs.borrow_mut();
    if attrs.get("__match_args__").is_none() {
        attrs.set(Rc::from("__match_args__"), Value::tuple(match_args));
    }
    attrs.set(
        Rc::from("__dataclass_fields__"),
        Value::Dict(Rc::new(RefCell::new(fields))),
    );
    let own = |attrs: &crate::object::class::Attrs, n: &str| attrs.get(n).is_some();
    use crate::object::unbound_method as um;
    if opts.init && !own(&attrs, "__init__") {
        attrs.set(
            Rc::from("__init__"),
            um("__init__", "the fields, set from the arguments", init),
        );
    }
    if opts.repr && !own(&attrs, "__repr__") {
        attrs.set(
            Rc::from("__repr__"),
            um("__repr__", "Class(field=value, ...)", repr),
        );
    }
    if opts.eq && !own(&attrs, "__eq__") {
        attrs.set(
            Rc::from("__eq__"),
            um(
                "__eq__",
                "equal when the classes and the fields are",
                |it, a| compare(it, a, "=="),
            ),
        );
    }
    // `__hash__` by dataclasses' table (unsafe_hash=False): a frozen class with eq hashes its
    // fields; eq alone makes it unhashable; a `__hash__` the class wrote itself stays (a
    // `None` the class statement set for its own `__eq__` is not one).
    let explicit_hash = match attrs.get("__hash__") {
        None => false,
        Some(Value::None) => !own(&attrs, "__eq__"),
        Some(_) => true,
    };
    if opts.eq && !explicit_hash {
        let hash = if opts.frozen {
            um("__hash__", "the hash of the fields' tuple", hash_fields)
        } else {
            Value::None
        };
        attrs.set(Rc::from("__hash__"), hash);
    }
    if opts.order {
        attrs.set(
            Rc::from("__lt__"),
            um("__lt__", "fields compared as tuples", |it, a| {
                compare(it, a, "<")
            }),
        );
        attrs.set(
            Rc::from("__le__"),
            um("__le__", "fields compared as tuples", |it, a| {
                compare(it, a, "<=")
            }),
        );
        attrs.set(
            Rc::from("__gt__"),
            um("__gt__", "fields compared as tuples", |it, a| {
                compare(it, a, ">")
            }),
        );
        attrs.set(
            Rc::from("__ge__"),
            um("__ge__", "fields compared as tuples", |it, a| {
                compare(it, a, ">=")
            }),
        );
    }
    if opts.frozen {
        attrs.set(
            Rc::from("__setattr__"),
            um(
                "__setattr__",
                "frozen: fields cannot be assigned",
                |it, mut a| {
                    let name = a.required(1, "name")?;
                    Err(frozen_error(it, &name))
                },
            ),
        );
        attrs.set(
            Rc::from("__delattr__"),
            um(
                "__delattr__",
                "frozen: fields cannot be deleted",
                |it, mut a| {
                    let name = a.required(1, "name")?;
                    Err(frozen_error(it, &name))
                },
            ),
        );
    }
    drop(attrs);
    let _ = it;
    Ok(cls)
}

fn frozen_error(it: &mut dyn Interpreter, name: &Value) -> Exc {
    let msg = match name {
        Value::Str(n) => format!("cannot assign to field '{n}'"),
        _ => "cannot assign to field".to_string(),
    };
    match &module_member(it, "dataclasses", "FrozenInstanceError") {
        Some(Value::Class(c)) => raise(c, msg),
        _ => Exc::new(ExcKind::AttributeError, msg),
    }
}

fn class_of(v: &Value) -> Option<Rc<Class>> {
    match v {
        Value::Instance(i) => Some(i.class()),
        _ => None,
    }
}

fn field_list(class: &Rc<Class>) -> Vec<Value> {
    match &class.lookup("__dataclass_fields__") {
        Some(Value::Dict(d)) => d.borrow().entries.iter().map(|(_, f)| f.clone()).collect(),
        _ => Vec::new(),
    }
}

fn init(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let this = a.required(0, "self")?;
    let Some(class) = class_of(&this) else {
        return Err(Exc::type_error("__init__ needs an instance"));
    };
    let fields = field_list(&class);
    let params: Vec<&Field> = fields
        .iter()
        .filter_map(as_field)
        .filter(|f| f.init)
        .collect();
    let mut pos: Vec<Value> = a.pos.drain(..).skip(1).collect();
    let mut kw = std::mem::take(&mut a.kw);
    let qual = format!("{}.__init__()", class.qualname);
    let required = params
        .iter()
        .filter(|f| f.default.is_none() && f.default_factory.is_none())
        .count();
    if pos.len() > params.len() {
        let given = pos.len() + 1;
        let total = params.len() + 1;
        return Err(Exc::type_error(if required == params.len() {
            format!("{qual} takes {total} positional arguments but {given} were given")
        } else {
            format!(
                "{qual} takes from {} to {total} positional arguments but {given} were given",
                required + 1
            )
        }));
    }
    let mut missing = Vec::new();
    let mut values = Vec::new();
    let mut pos_iter = pos.drain(..);
    for f in &params {
        let name = f.name.borrow().clone();
        let from_pos = pos_iter.next();
        let from_kw = kw
            .iter()
            .position(|(k, _)| *k == name)
            .map(|i| kw.remove(i).1);
        let v = match (from_pos, from_kw) {
            (Some(_), Some(_)) => {
                return Err(Exc::type_error(format!(
                    "{qual} got multiple values for argument '{name}'"
                )))
            }
            (Some(v), None) | (None, Some(v)) => v,
            (None, None) => match (&f.default, &f.default_factory) {
                (Some(d), _) => d.clone(),
                (None, Some(factory)) => it.call_value(factory, Args::default())?,
                (None, None) => {
                    missing.push(name.clone());
                    continue;
                }
            },
        };
        values.push((name, v));
    }
    if let Some((k, _)) = kw.first() {
        return Err(Exc::type_error(format!(
            "{qual} got an unexpected keyword argument '{k}'"
        )));
    }
    if !missing.is_empty() {
        let names: Vec<String> = missing.iter().map(|n| format!("'{n}'")).collect();
        let list = match names.len() {
            1 => names[0].clone(),
            2 => format!("{} and {}", names[0], names[1]),
            _ => format!(
                "{}, and {}",
                names[..names.len() - 1].join(", "),
                names[names.len() - 1]
            ),
        };
        return Err(Exc::type_error(format!(
            "{qual} missing {} required positional argument{}: {list}",
            missing.len(),
            if missing.len() == 1 { "" } else { "s" }
        )));
    }
    // Fields with init=False and a default still get it.
    for f in fields.iter().filter_map(as_field).filter(|f| !f.init) {
        let v = match (&f.default, &f.default_factory) {
            (Some(d), _) => d.clone(),
            (None, Some(factory)) => it.call_value(factory, Args::default())?,
            _ => continue,
        };
        values.push((f.name.borrow().clone(), v));
    }
    for (name, v) in values {
        raw_set_attr(it, &this, &name, v)?;
    }
    if let Some(post) = class.lookup("__post_init__") {
        let _ = post;
        let f = it.get_attr(&this, "__post_init__")?;
        it.call_value(&f, Args::default())?;
    }
    Ok(Value::None)
}

fn repr(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let this = a.required(0, "self")?;
    let Some(class) = class_of(&this) else {
        return Err(Exc::type_error("__repr__ needs an instance"));
    };
    let mut parts = Vec::new();
    for f in field_list(&class)
        .iter()
        .filter_map(as_field)
        .filter(|f| f.repr)
    {
        let name = f.name.borrow().clone();
        let v = it.get_attr(&this, &name)?;
        parts.push(format!("{name}={}", format::repr(it, &v)?));
    }
    Ok(Value::str(&format!(
        "{}({})",
        class.qualname,
        parts.join(", ")
    )))
}

/// A frozen dataclass's `__hash__`: `hash((self.f1, self.f2, ...))` over the compared fields.
fn hash_fields(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let this = a.required(0, "self")?;
    a.finish(1)?;
    let Some(class) = class_of(&this) else {
        return Err(Exc::type_error("expected a dataclass instance"));
    };
    let mut values = Vec::new();
    for f in field_list(&class)
        .iter()
        .filter_map(as_field)
        .filter(|f| f.compare)
    {
        let name = f.name.borrow().clone();
        values.push(it.get_attr(&this, &name)?);
    }
    Ok(Value::Int(crate::object::keys::hash(
        it,
        &Value::tuple(values),
    )?))
}

fn compare(it: &mut dyn Interpreter, mut a: Args, op: &str) -> Result<Value, Exc> {
    let this = a.required(0, "self")?;
    let other = a.required(1, "other")?;
    let (Some(c1), Some(c2)) = (class_of(&this), class_of(&other)) else {
        return Ok(not_implemented());
    };
    if !Rc::ptr_eq(&c1, &c2) {
        return Ok(not_implemented());
    }
    let mut left = Vec::new();
    let mut right = Vec::new();
    for f in field_list(&c1)
        .iter()
        .filter_map(as_field)
        .filter(|f| f.compare)
    {
        let name = f.name.borrow().clone();
        left.push(it.get_attr(&this, &name)?);
        right.push(it.get_attr(&other, &name)?);
    }
    let op = match op {
        "==" => crate::lang::ast::CmpOp::Eq,
        "<" => crate::lang::ast::CmpOp::Lt,
        "<=" => crate::lang::ast::CmpOp::LtE,
        ">" => crate::lang::ast::CmpOp::Gt,
        _ => crate::lang::ast::CmpOp::GtE,
    };
    crate::object::ops::compare(it, op, &Value::tuple(left), &Value::tuple(right))
}
