//! Type expressions as CPython 3.11 evaluates them in annotations: `list[int]` is a
//! `types.GenericAlias` (PEP 585) and `int | None` a `types.UnionType` (PEP 604). Both print
//! as written, expose `__origin__`/`__args__`, and a generic alias called builds its origin
//! (`list[int]()` is `[]`), so annotated programs run unchanged.

use std::rc::Rc;

use super::value::{NativeObject, TypeKind, Value};

/// The built-in classes CPython lets a program subscript (`list[int]`).
pub fn is_generic(t: TypeKind) -> bool {
    matches!(
        t,
        TypeKind::List | TypeKind::Dict | TypeKind::Tuple | TypeKind::Set | TypeKind::FrozenSet
    )
}

/// `origin[args]`; a tuple index gives several arguments.
pub fn subscript(origin: Value, index: Value) -> Value {
    let args = match &index {
        Value::Tuple(items) => items.to_vec(),
        _ => vec![index],
    };
    Value::Object(Rc::new(GenericAlias { origin, args }))
}

/// Whether `v` can stand in a union (`X | Y`): a class, None, or another type expression.
fn is_type_like(v: &Value) -> bool {
    match v {
        Value::Type(_) | Value::Class(_) | Value::ExcType(_) | Value::None => true,
        Value::Object(o) => o.as_any().is::<GenericAlias>() || o.as_any().is::<UnionType>(),
        _ => false,
    }
}

/// `a | b` of two type expressions: a union of their members, nested unions flattened and
/// repeats dropped, as `types.UnionType`. None when either side is not a type.
pub fn union(a: &Value, b: &Value) -> Option<Value> {
    if !is_type_like(a) || !is_type_like(b) {
        return None;
    }
    let mut args: Vec<Value> = Vec::new();
    for side in [a, b] {
        let members = match side {
            Value::Object(o) => match o.as_any().downcast_ref::<UnionType>() {
                Some(u) => u.args.clone(),
                None => vec![side.clone()],
            },
            _ => vec![side.clone()],
        };
        for m in members {
            if !args.iter().any(|x| x.is(&m)) {
                args.push(m);
            }
        }
    }
    // `int | int` is `int` itself.
    if args.len() == 1 {
        return args.pop();
    }
    Some(Value::Object(Rc::new(UnionType { args })))
}

/// The members of a union (`int | str`), for `isinstance` and `issubclass`.
pub fn union_members(v: &Value) -> Option<Vec<Value>> {
    match v {
        Value::Object(o) => o.as_any().downcast_ref::<UnionType>().map(|u| {
            // None in a union stands for its type.
            u.args
                .iter()
                .map(|a| match a {
                    Value::None => Value::Type(TypeKind::NoneType),
                    a => a.clone(),
                })
                .collect()
        }),
        _ => None,
    }
}

/// How CPython's `typing._type_repr` writes a type inside an alias: built-in classes by name,
/// others with their module, `...` and None as written.
fn type_repr(v: &Value) -> String {
    match v {
        Value::Type(t) => t.name().to_string(),
        Value::ExcType(k) => k.name().to_string(),
        Value::Class(c) => match &*c.module {
            "builtins" | "" => c.qualname.to_string(),
            m => format!("{m}.{}", c.qualname),
        },
        Value::None => "None".to_string(),
        v if v.is(&super::class::ellipsis()) => "...".to_string(),
        Value::Builtin(b) => b.name.to_string(),
        Value::Object(o) => o.repr(),
        other => other.type_name(),
    }
}

struct GenericAlias {
    origin: Value,
    args: Vec<Value>,
}

impl NativeObject for GenericAlias {
    fn type_name(&self) -> &str {
        "types.GenericAlias"
    }
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
    fn repr(&self) -> String {
        let args: Vec<String> = self.args.iter().map(type_repr).collect();
        format!("{}[{}]", type_repr(&self.origin), args.join(", "))
    }
    fn get_attr(&self, _this: &Rc<dyn NativeObject>, name: &str) -> Option<Value> {
        Some(match name {
            "__origin__" => self.origin.clone(),
            "__args__" => Value::tuple(self.args.clone()),
            // Calling the alias calls its origin: `list[int]()` is `[]`.
            "__call__" => self.origin.clone(),
            _ => return None,
        })
    }
    fn attr_names(&self) -> Vec<&'static str> {
        vec!["__args__", "__origin__"]
    }
}

struct UnionType {
    args: Vec<Value>,
}

impl NativeObject for UnionType {
    fn type_name(&self) -> &str {
        "types.UnionType"
    }
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
    fn repr(&self) -> String {
        let args: Vec<String> = self.args.iter().map(type_repr).collect();
        args.join(" | ")
    }
    fn get_attr(&self, _this: &Rc<dyn NativeObject>, name: &str) -> Option<Value> {
        match name {
            "__args__" => Some(Value::tuple(self.args.clone())),
            _ => None,
        }
    }
    fn attr_names(&self) -> Vec<&'static str> {
        vec!["__args__"]
    }
}
