//! `warnings`: `warn` prints `file:line: Category: message` to stderr once per message, as
//! CPython's default filter does; `filterwarnings('ignore')`/`simplefilter('ignore')` silence
//! them (what notebooks call first), `'error'` turns them into exceptions.

use std::cell::RefCell;
use std::rc::Rc;

use super::{module, set_fns};
use crate::object::value::Module;
use crate::object::{Exc, ExcKind, Interpreter, Value};

thread_local! {
    /// The action of the last filter set (`default`, `ignore`, `error`, `always`, `once`).
    static ACTION: RefCell<String> = RefCell::new("default".into());
    /// Messages already shown (the default action shows each once).
    static SHOWN: RefCell<Vec<String>> = const { RefCell::new(Vec::new()) };
}

fn set_action(v: Option<Value>) -> Result<Value, Exc> {
    let action = match &v {
        Some(Value::Str(s)) => s.to_string(),
        None => {
            return Err(Exc::type_error(
                "filterwarnings() missing required argument 'action' (pos 1)",
            ))
        }
        Some(other) => {
            return Err(Exc::type_error(format!(
                "action must be a string, not '{}'",
                other.type_name()
            )))
        }
    };
    if !["default", "ignore", "error", "always", "once", "module"].contains(&action.as_str()) {
        return Err(Exc::new(
            ExcKind::AssertionError,
            format!("invalid action: '{action}'"),
        ));
    }
    ACTION.with(|a| *a.borrow_mut() = action);
    Ok(Value::None)
}

/// Issues a warning of `category` (a class name such as "RuntimeWarning") under the filter
/// the program set: what `warnings.warn` does, for library code that warns (pyplot's
/// too-many-figures warning).
pub fn warn(it: &mut dyn Interpreter, category: &str, text: &str) -> Result<(), Exc> {
    let action = ACTION.with(|a| a.borrow().clone());
    match action.as_str() {
        "ignore" => {}
        "error" => return Err(Exc::new(ExcKind::Exception, text.to_string())),
        "always" => it.out().stderr(&format!("<stdin>:1: {category}: {text}\n")),
        _ => {
            let key = format!("{category}: {text}");
            let first = SHOWN.with(|s| {
                let mut s = s.borrow_mut();
                let new = !s.contains(&key);
                if new {
                    s.push(key.clone());
                }
                new
            });
            if first {
                it.out().stderr(&format!("<stdin>:1: {key}\n"));
            }
        }
    }
    Ok(())
}

pub fn build() -> Rc<Module> {
    let m = module("warnings", "Issue and filter warning messages.");
    set_fns(
        &m,
        &[
            (
                "filterwarnings",
                "filterwarnings(action, message='', category=Warning, ...): set what warnings do.",
                |_, mut a| {
                    let v = a.take(0, "action")?;
                    a.pos.clear();
                    a.kw.clear();
                    set_action(v)
                },
            ),
            (
                "simplefilter",
                "simplefilter(action, category=Warning, ...): set what warnings do.",
                |_, mut a| {
                    let v = a.take(0, "action")?;
                    a.pos.clear();
                    a.kw.clear();
                    set_action(v)
                },
            ),
            (
                "resetwarnings",
                "resetwarnings(): back to the default action.",
                |_, _| {
                    ACTION.with(|a| *a.borrow_mut() = "default".into());
                    Ok(Value::None)
                },
            ),
            (
                "warn",
                "warn(message, category=UserWarning, stacklevel=1): issue a warning.",
                |it, mut a| {
                    let msg = a.required(0, "message")?;
                    let category = a.take(1, "category")?;
                    a.take(2, "stacklevel")?;
                    a.finish(3)?;
                    let text = crate::object::format::to_str(it, &msg)?;
                    let cat = match &category {
                        Some(Value::Class(c)) => c.name.to_string(),
                        Some(Value::ExcType(k)) => k.name().to_string(),
                        _ => "UserWarning".to_string(),
                    };
                    warn(it, &cat, &text)?;
                    Ok(Value::None)
                },
            ),
        ],
    );
    for name in [
        "Warning",
        "UserWarning",
        "DeprecationWarning",
        "FutureWarning",
        "RuntimeWarning",
    ] {
        m.set(name, Value::str(name));
    }
    m
}
