//! What the interpreter offers the code built on it: the [`Interpreter`] trait, through which a
//! built-in function calls back into the running program (call a value, iterate, write output,
//! reach the session's state), and the constructors every module registers its functions with
//! ([`builtin`], [`method`]).
//!
//! The built-in libraries (`crate::modules`) see the interpreter only through this trait, so they
//! sit below the evaluator (`crate::eval`), which implements it.
use std::rc::Rc;

use super::error::{Exc, ExcKind};
use super::output::OutputSink;
use super::state::State;
use super::value::{Args, Builtin, BuiltinFn, BuiltinKind, HashKey, MethodFn, Value};

/// The running interpreter, as built-in functions see it.
pub trait Interpreter {
    /// The session's state: globals, runtime, imported modules, autograd tape.
    fn state(&self) -> &State;
    fn state_mut(&mut self) -> &mut State;
    /// Where the program's output goes.
    fn out(&mut self) -> &mut dyn OutputSink;
    /// `callee(*args)`: a user function, a built-in, a bound method, a type.
    fn call_value(&mut self, callee: &Value, args: Args) -> Result<Value, Exc>;
    /// `getattr(v, name)`, by the full attribute protocol.
    fn get_attr(&mut self, v: &Value, name: &str) -> Result<Value, Exc>;
    /// Every item of an iterable, in order.
    fn iterate(&mut self, v: &Value) -> Result<Vec<Value>, Exc>;
    /// Calls `f` with each item of an iterable in turn until it returns false, drawing a range,
    /// a generator or an iterator one item at a time, as a `for` loop does: `sum`, `any`, `max`
    /// of a huge range or an endless generator never materialise it.
    fn for_each_item(
        &mut self,
        v: &Value,
        f: &mut dyn FnMut(&mut dyn Interpreter, Value) -> Result<bool, Exc>,
    ) -> Result<(), Exc>;
    /// Parses and runs `code` in the current session (a magic's argument); the value of a final
    /// expression statement, if any.
    fn run_snippet(&mut self, code: &str) -> Result<Option<Value>, Exc>;
    /// `import dotted`: the module, built (or run) on first use. A library reaches another
    /// module by name through this, never by naming the layer that builds it.
    /// The scope of the function running now (`inspect.currentframe()`); None at the top level
    /// of the program or of a module.
    fn current_scope(&self) -> Option<super::state::Env>;
    /// Where the running statement is, as a warning names it: the file (a library's
    /// `__file__`; None for the session's own code), the line it starts on (1-based) and
    /// that line's text.
    fn statement_line(&self) -> Option<(Option<Rc<str>>, usize, String)> {
        None
    }
    /// The exception being handled now (`sys.exc_info()`), as the value `except ... as e`
    /// binds.
    fn handled(&self) -> Option<Value> {
        None
    }
    fn import(&mut self, dotted: &str) -> Result<Rc<super::value::Module>, Exc>;
    /// Runs `source` (a library written in the language) as the body of `module`: its top-level
    /// names become the module's attributes, and the functions and classes it defines keep the
    /// module's attributes as their globals. The value is the last statement's, when that is an
    /// expression (what `eval` with a dictionary of globals gives).
    fn run_module(
        &mut self,
        module: &Rc<super::value::Module>,
        source: &str,
    ) -> Result<Option<Value>, Exc>;

    /// Resumes generator `g` at the `yield` it is suspended at (`next`, `send`, `throw`,
    /// `close`) and runs it to its next `yield` or its end.
    fn gen_resume(
        &mut self,
        g: &Rc<super::value::Generator>,
        action: super::value::GenAction,
    ) -> Result<super::value::GenStep, Exc>;

    /// Raise `KeyboardInterrupt` if an interrupt was requested.
    fn check_interrupt(&mut self) -> Result<(), Exc> {
        if self.state_mut().interrupt.take() {
            return Err(Exc::new(ExcKind::KeyboardInterrupt, ""));
        }
        Ok(())
    }
}

/// The key a value is hashed under in a dict or set; unhashable values are a `TypeError`.
pub fn hash_key(v: &Value) -> Result<HashKey, Exc> {
    v.hash_key()?
        .ok_or_else(|| Exc::type_error(format!("unhashable type: '{}'", v.type_name())))
}

/// A builtin function value.
pub fn builtin(name: &'static str, doc: &'static str, f: BuiltinFn) -> Value {
    Value::Builtin(Rc::new(Builtin {
        name,
        doc,
        kind: BuiltinKind::Free(f),
    }))
}

/// A method of a class written in Rust: it binds to the instance it is read through.
pub fn unbound_method(name: &'static str, doc: &'static str, f: BuiltinFn) -> Value {
    Value::Builtin(Rc::new(Builtin {
        name,
        doc,
        kind: BuiltinKind::Unbound(f),
    }))
}

/// A method bound to `receiver`.
pub fn method(receiver: &Value, name: &'static str, doc: &'static str, f: MethodFn) -> Value {
    Value::Builtin(Rc::new(Builtin {
        name,
        doc,
        kind: BuiltinKind::Method {
            receiver: receiver.clone(),
            f,
        },
    }))
}
