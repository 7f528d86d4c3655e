//! `IPython` and `IPython.display`: what notebooks import for output (`display`,
//! `clear_output`, `set_matplotlib_formats` for figures, `src/modules/matplotlib/`).
use std::rc::Rc;

use crate::object::builtin;
use crate::object::value::{Module, Value};

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
                    super::builtins::display,
                ),
            );
            m.set(
                "clear_output",
                builtin(
                    "clear_output",
                    "clear_output(wait=False): clear the notebook cell's output (wait=True: when the next output arrives).",
                    super::builtins::clear_output,
                ),
            );
            m.set(
                "set_matplotlib_formats",
                builtin(
                    "set_matplotlib_formats",
                    "set_matplotlib_formats(*formats): 'png' (the default) or 'svg' for figures in notebooks.",
                    super::matplotlib::set_matplotlib_formats,
                ),
            );
            m
        }
        _ => return None,
    })
}
