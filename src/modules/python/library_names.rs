//! A built-in module's names written in the language: its `__getattr__` (PEP 562) imports the
//! library module that defines them on first use (`modules::library`), so the Rust module and
//! the language's definitions read as one module.
use crate::object::error::{Exc, ExcKind};
use crate::object::value::Args;
use crate::object::{Interpreter, Value};

/// The `__getattr__` body: `name` from library module `source` when `names` lists it, else
/// module `shown`'s AttributeError.
pub fn library_attr(
    it: &mut dyn Interpreter,
    mut a: Args,
    shown: &str,
    source: &str,
    names: &[&str],
) -> Result<Value, Exc> {
    let name = a.required(0, "name")?;
    let text = crate::object::format::to_str(it, &name)?;
    let found = if names.contains(&text.as_str()) {
        it.import(source)?.get(&text)
    } else {
        None
    };
    found.ok_or_else(|| {
        Exc::new(
            ExcKind::AttributeError,
            format!("module '{shown}' has no attribute '{text}'"),
        )
    })
}
