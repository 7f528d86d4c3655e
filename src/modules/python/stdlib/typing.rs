//! `typing`: the names annotations use (`List[int]`, `Optional[str]`, `Callable[[int], str]`),
//! so programs that import and subscript them run. Annotations have no effect at run time, as in
//! CPython; a form's repr is CPython's (`typing.List[int]`). `TypeVar('T')` prints `~T`, `cast`
//! returns its value, `TYPE_CHECKING` is False, `overload`/`no_type_check` return what they wrap.

use std::rc::Rc;

use super::{module, set_fns};
use crate::object::value::{Module, NativeObject};
use crate::object::{method, Args, Exc, Interpreter, Value};

/// A typing form, subscripted or not: only its repr matters at run time.
struct Form {
    repr: String,
    /// Whether `Form[...]` may follow (a bare `List`, not `List[int]`).
    generic: bool,
}

impl NativeObject for Form {
    fn type_name(&self) -> &str {
        "typing._GenericAlias"
    }
    fn repr(&self) -> String {
        self.repr.clone()
    }
    fn get_attr(&self, this: &Rc<dyn NativeObject>, name: &str) -> Option<Value> {
        match name {
            "__getitem__" if self.generic => Some(method(
                &Value::Object(this.clone()),
                "__getitem__",
                "Form[params]: the form with its parameters.",
                subscript,
            )),
            "__name__" | "_name" => Some(Value::str(
                self.repr
                    .trim_start_matches("typing.")
                    .split('[')
                    .next()
                    .unwrap_or(""),
            )),
            _ => None,
        }
    }
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

fn form(repr: impl Into<String>, generic: bool) -> Value {
    Value::Object(Rc::new(Form {
        repr: repr.into(),
        generic,
    }))
}

/// How a parameter shows inside `[...]`: classes by name, forms and lists by their reprs.
fn param_repr(it: &mut dyn Interpreter, v: &Value) -> Result<String, Exc> {
    crate::object::guard::nest(crate::object::guard::Walk::Repr, || param_repr_level(it, v))
}

fn param_repr_level(it: &mut dyn Interpreter, v: &Value) -> Result<String, Exc> {
    Ok(match v {
        // CPython shows None among a form's parameters as its type.
        Value::None => "NoneType".into(),
        Value::Type(t) => t.name().to_string(),
        Value::Class(c) if &*c.module == "__main__" => format!("__main__.{}", c.qualname),
        Value::Class(c) => format!("{}.{}", c.module, c.qualname),
        Value::List(items) => {
            let items = items.borrow().clone();
            let parts: Result<Vec<_>, _> = items.iter().map(|p| param_repr(it, p)).collect();
            format!("[{}]", parts?.join(", "))
        }
        Value::Str(s) => format!("ForwardRef('{s}')"),
        other => crate::object::format::repr(it, other)?,
    })
}

fn subscript(it: &mut dyn Interpreter, this: &Value, mut a: Args) -> Result<Value, Exc> {
    let params = a.required(0, "params")?;
    a.finish(1)?;
    let items = match &params {
        Value::Tuple(t) => t.to_vec(),
        other => vec![other.clone()],
    };
    let parts: Result<Vec<_>, _> = items.iter().map(|p| param_repr(it, p)).collect();
    let base = match this {
        Value::Object(o) => o.repr(),
        _ => "typing.Any".into(),
    };
    // `Optional[X]` is `Union[X, None]` and prints so when X is itself a union.
    Ok(form(format!("{base}[{}]", parts?.join(", ")), false))
}

pub fn build() -> Rc<Module> {
    let m = module("typing", "Support for type hints (no effect at run time).");
    for name in [
        "List",
        "Tuple",
        "Dict",
        "Set",
        "FrozenSet",
        "Optional",
        "Union",
        "Callable",
        "Iterable",
        "Iterator",
        "Sequence",
        "Mapping",
        "MutableMapping",
        "MutableSequence",
        "Generator",
        "Type",
        "Literal",
        "ClassVar",
        "Final",
        "DefaultDict",
        "OrderedDict",
        "Deque",
        "Counter",
        "Collection",
        "Container",
        "Hashable",
        "Sized",
        "Awaitable",
        "Coroutine",
        "AsyncIterator",
        "Annotated",
    ] {
        m.set(name, form(format!("typing.{name}"), true));
    }
    m.set("Any", form("typing.Any", false));
    m.set("NoReturn", form("typing.NoReturn", false));
    m.set("Text", Value::Type(crate::object::value::TypeKind::Str));
    m.set("TYPE_CHECKING", Value::Bool(false));
    set_fns(
        &m,
        &[
            ("cast", "cast(typ, val): val, unchanged.", |_, mut a| {
                a.required(0, "typ")?;
                let v = a.required(1, "val")?;
                a.finish(2)?;
                Ok(v)
            }),
            (
                "TypeVar",
                "TypeVar(name, *constraints, bound=None): a type variable (prints ~name).",
                |_, mut a| {
                    let name = a.required(0, "name")?;
                    let Value::Str(name) = &name else {
                        return Err(Exc::type_error("TypeVar(name): name must be a str"));
                    };
                    Ok(form(format!("~{name}"), false))
                },
            ),
            (
                "overload",
                "overload(f): f (overloads only matter to type checkers).",
                |_, mut a| a.required(0, "func"),
            ),
            (
                "no_type_check",
                "no_type_check(f): f, unchanged.",
                |_, mut a| a.required(0, "arg"),
            ),
            (
                "get_type_hints",
                "get_type_hints(obj): {} (annotations are not kept at run time in devarray).",
                |_, _| Ok(Value::Dict(Default::default())),
            ),
        ],
    );
    m
}
