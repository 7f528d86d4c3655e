//! `warnings`: `warn` prints `file:line: Category: message` to stderr once per location and
//! message, as CPython's default filter does, followed by the source line (indented by two
//! spaces) when the file is a real one: a script's path; the REPL's and piped programs' code is
//! `<stdin>` and `-c`'s `<string>`, whose lines CPython cannot show either.
//! `filterwarnings('ignore')`/`simplefilter('ignore')` silence them (what notebooks call
//! first), `'error'` raises the warning as an exception of its category. The categories are
//! CPython's built-in classes (`Warning` under `Exception`, `UserWarning`, `RuntimeWarning`...).

use std::cell::{OnceCell, RefCell};
use std::rc::Rc;

use super::{module, set_fns};
use crate::object::value::Module;
use crate::object::{Exc, ExcKind, Interpreter, Value};

/// CPython's warning categories, each deriving from `Warning` (itself an `Exception`).
pub const CATEGORIES: [&str; 10] = [
    "UserWarning",
    "DeprecationWarning",
    "PendingDeprecationWarning",
    "SyntaxWarning",
    "RuntimeWarning",
    "FutureWarning",
    "ImportWarning",
    "UnicodeWarning",
    "BytesWarning",
    "ResourceWarning",
];

/// `Warning` and its categories, built once per thread so `except UserWarning` matches what
/// `warn` raises under the `'error'` filter.
pub fn classes() -> Vec<Rc<crate::object::class::Class>> {
    use crate::modules::python::stdlib::{exc_class, native_class};
    CLASSES.with(|c| {
        c.get_or_init(|| {
            let base = exc_class("Warning", "builtins", ExcKind::Exception);
            let mut all = vec![base.clone()];
            for name in CATEGORIES {
                all.push(native_class(
                    name,
                    "builtins",
                    Value::Class(base.clone()),
                    "",
                    &[],
                ));
            }
            all
        })
        .clone()
    })
}

thread_local! {
    static CLASSES: OnceCell<Vec<Rc<crate::object::class::Class>>> = const { OnceCell::new() };
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
///
/// It is shown at the statement running (as CPython's C code and matplotlib's `warn_external`
/// report the caller's line) and once per message: the Python function that warns in the real
/// library is one location, whichever line called it.
pub fn warn(it: &mut dyn Interpreter, category: &str, text: &str) -> Result<(), Exc> {
    warn_at(it, category, text, false)
}

/// [`warn`], shown once per location (the program's line), as CPython's default filter shows a
/// warning that C code raises at the caller's line (NumPy's RuntimeWarnings).
pub fn warn_at_line(it: &mut dyn Interpreter, category: &str, text: &str) -> Result<(), Exc> {
    warn_at(it, category, text, true)
}

/// [`warn`], deduplicated per location when `by_location` (`warnings.warn` in the program's
/// own code: CPython's default filter keys on the module and line).
fn warn_at(
    it: &mut dyn Interpreter,
    category: &str,
    text: &str,
    by_location: bool,
) -> Result<(), Exc> {
    let action = ACTION.with(|a| a.borrow().clone());
    if action == "ignore" {
        return Ok(());
    }
    if action == "error" {
        let class = classes().into_iter().find(|c| &*c.name == category);
        return Err(match class {
            Some(c) => crate::modules::python::stdlib::raise(&c, text.to_string()),
            None => Exc::new(ExcKind::Exception, text.to_string()),
        });
    }
    let (file, line, source) = it.statement_line().unwrap_or((None, 1, String::new()));
    let file = file
        .or_else(|| it.state().program.clone())
        .unwrap_or_else(|| Rc::from("<stdin>"));
    let mut shown = format!("{file}:{line}: {category}: {text}\n");
    if !file.starts_with('<') && !source.trim().is_empty() {
        shown.push_str(&format!("  {}\n", source.trim()));
    }
    // The default action shows a warning once per location; `once`, once per message.
    let key = match action.as_str() {
        "always" => None,
        "once" => Some(format!("{category}: {text}")),
        _ if !by_location => Some(format!("{category}: {text}")),
        _ => Some(format!("{file}:{line}: {category}: {text}")),
    };
    let first = key.is_none_or(|key| {
        SHOWN.with(|s| {
            let mut s = s.borrow_mut();
            let new = !s.contains(&key);
            if new {
                s.push(key);
            }
            new
        })
    });
    if first {
        it.out().stderr(&shown);
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
                        Some(Value::Str(s)) => s.to_string(),
                        _ => match &msg {
                            // `warn(UserWarning('text'))`: the instance's class.
                            Value::Instance(i) => i.class().name.to_string(),
                            _ => "UserWarning".to_string(),
                        },
                    };
                    warn_at(it, &cat, &text, true)?;
                    Ok(Value::None)
                },
            ),
        ],
    );
    m
}
