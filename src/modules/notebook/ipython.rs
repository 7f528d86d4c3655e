//! `IPython` and `IPython.display`: what notebooks import for output (`display`,
//! `clear_output`). Plot settings are accepted and do nothing, since devarray draws no plots.
use std::rc::Rc;

use crate::object::value::{Args, Module, Value};
use crate::object::{builtin, Exc, Interpreter};

fn ignore(_it: &mut dyn Interpreter, _a: Args) -> Result<Value, Exc> {
    Ok(Value::None)
}

pub fn build(dotted: &str) -> Option<Rc<Module>> {
    Some(match dotted {
        "IPython" => {
            let m = Rc::new(Module::new("IPython", "the notebook's display helpers"));
            m.set("display", Value::Module(build("IPython.display")?));
            m
        }
        "IPython.display" => {
            let m = Rc::new(Module::new(
                "IPython.display",
                "display(...) and clear_output() as in a notebook",
            ));
            m.set(
                "display",
                builtin(
                    "display",
                    "display(*values): show values as a notebook shows a cell result.",
                    crate::modules::python::builtins::display,
                ),
            );
            m.set(
                "clear_output",
                builtin(
                    "clear_output",
                    "clear_output(wait=False): clear the notebook cell's output (wait=True: when the next output arrives).",
                    crate::modules::python::builtins::clear_output,
                ),
            );
            m.set(
                "set_matplotlib_formats",
                builtin(
                    "set_matplotlib_formats",
                    "set_matplotlib_formats(*formats): accepted; devarray draws no plots.",
                    ignore,
                ),
            );
            m
        }
        _ => return None,
    })
}
