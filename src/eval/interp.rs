//! The tree-walking interpreter: statements, expressions, calls, scopes.
//!
//! Errors are `Exc` values; control flow (`break`, `continue`, `return`)
//! travels in [`Ctl`] beside them so that `?` propagates all of it. Every
//! expression attaches its span to an error passing through it if none is set
//! yet, so the innermost failing expression is what the caret points at.

use std::cell::RefCell;
use std::rc::Rc;

use crate::lang::ast::{
    Arg, BinOp, BoolOpKind, Comprehension, Expr, ExprKind, FStringPart, FuncDef, Ident, NameRef,
    Param, ParamKind, Passed, Program, Stmt, StmtKind, UnaryOp,
};
use crate::lang::Span;

use super::fuse::Attempt;
use crate::modules;
use crate::modules::notebook::magic;
use crate::modules::python::builtins;
use crate::object::error::{Exc, ExcKind, Frame};
use crate::object::value::{
    Args, BuiltinKind, Dict, ExcValue, Function, FunctionBody, TypeKind, Value,
};
use crate::object::{format, hash_key, ops, Env, Interpreter, OutputSink, Scope, State, Vars};

/// How deep user function calls may nest before `RecursionError` (Python's
/// default limit). The native stack grows on demand (`grow`), so this is a
/// language limit, not a guard against overflow.
pub(super) const MAX_CALL_DEPTH: usize = 1000;

/// Binds `name` to `value` in `vars`. A rebinding replaces the value in place (the loop-body
/// assignment `c = a + b` is the common case).
fn bind(vars: &mut Vars, name: &Ident, value: Value) {
    match vars.get_mut(name) {
        Some(slot) => *slot = value,
        None => {
            vars.insert(name.clone(), value);
        }
    }
}

/// `name` in `env` or the scopes enclosing it (closures), innermost first.
/// A name's value in `env` or the scopes around it. Given the `Ident` itself, keys compare by
/// pointer first (identifiers are interned), which spares a string comparison per lookup.
fn lookup_in_scopes(env: &Env, name: &str) -> Option<Value> {
    match resolve_in_scopes(env, name) {
        Resolved::Bound(v) => Some(v),
        Resolved::Unbound { .. } | Resolved::Outside => None,
    }
}

/// Where a name read inside functions lands.
enum Resolved {
    Bound(Value),
    /// A function on the way has the name as a local (`FuncDef::local_names`) not bound now:
    /// the search stops there, as CPython's compiled scopes do. `innermost`: the function
    /// running now (UnboundLocalError), not an enclosing one (a free variable's NameError).
    Unbound {
        innermost: bool,
    },
    /// No function scope has it: a global or a built-in.
    Outside,
}

fn resolve_in_scopes(env: &Env, name: &str) -> Resolved {
    let mut innermost = true;
    let mut cur = env.clone();
    loop {
        let next = {
            let scope = cur.borrow();
            if let Some(v) = scope.vars.get(name) {
                return Resolved::Bound(v.clone());
            }
            if let Some(f) = &scope.function {
                if let FunctionBody::Def(d) = &f.body {
                    if d.local_names.binary_search_by(|n| (**n).cmp(name)).is_ok() {
                        return Resolved::Unbound { innermost };
                    }
                }
            }
            // Past the running scope, a name is a free variable (comprehensions and class
            // bodies are scopes of their own in CPython too).
            innermost = false;
            match &scope.parent {
                Some(parent) => parent.clone(),
                None => return Resolved::Outside,
            }
        };
        cur = next;
    }
}

/// An instance's own attribute, when no class in its MRO has a property: what
/// `generic_get_attr` answers first, without the general lookup's layers.
#[inline]
fn own_attribute(obj: &Value, attr: &str, hint: &crate::lang::ast::AttrHint) -> Option<Value> {
    match obj {
        Value::Instance(inst) if !inst.class().has_properties.get() => {
            inst.attrs.borrow().get_hinted(attr, hint).cloned()
        }
        _ => None,
    }
}

/// Run `f` with enough native stack: the tree walker recurses once per
/// nested expression, statement and call, and a debug build uses kilobytes
/// per level. When less than the red zone is left, a new segment is mapped
/// (on a generator's own stack too: `object::stack`).
#[inline]
pub(super) fn grow<R>(f: impl FnOnce() -> R) -> R {
    crate::object::stack::maybe_grow(128 * 1024, 2 * 1024 * 1024, f)
}

/// Non-error control flow, and errors, unwinding through statements.
pub enum Ctl {
    Exc(Box<Exc>),
    Break,
    Continue,
    Return(Value),
}

impl From<Exc> for Ctl {
    fn from(e: Exc) -> Ctl {
        Ctl::Exc(Box::new(e))
    }
}

pub type ExecResult = Result<(), Ctl>;

/// The interpreter for one `eval` call: the session's state, where output
/// goes, and the source the spans being run point into.
pub struct Interp<'s> {
    pub st: &'s mut State,
    pub out: &'s mut dyn OutputSink,
    pub source: Rc<str>,
    /// The current function's scope; None at top level (globals).
    pub(super) env: Option<Env>,
    pub(super) depth: usize,
    /// What a failed fusion attempt learned, while its expression is evaluated the usual way.
    pub(super) fuse_fallback: Option<Box<super::fuse::Fallback>>,
    /// Inside a generator's body: how its `yield` suspends (`super::generator`).
    pub(super) gen: Option<super::generator::GenLink>,
    /// The module whose code runs (a library written in the language): its attributes are the
    /// globals. None for the session's own code, whose globals are `st.globals`.
    pub(super) module: Option<Rc<crate::object::value::Module>>,
    /// The exception the innermost running `except` block handles: what a bare `raise`
    /// re-raises (CPython's `sys.exc_info()`).
    pub(super) handling: Option<Box<Exc>>,
    /// The statement running now (the caller's, once a call returns): where a generator its
    /// callee's locals held is reported closed.
    stmt: Option<Span>,
}

impl<'s> Interp<'s> {
    pub fn new(st: &'s mut State, out: &'s mut dyn OutputSink, source: Rc<str>) -> Interp<'s> {
        Interp {
            st,
            out,
            source,
            env: None,
            depth: 0,
            fuse_fallback: None,
            gen: None,
            module: None,
            handling: None,
            stmt: None,
        }
    }

    /// Raise `KeyboardInterrupt` if an interrupt was requested.
    pub fn check_interrupt(&mut self) -> Result<(), Exc> {
        if self.st.interrupt.take() {
            return Err(Exc::new(ExcKind::KeyboardInterrupt, ""));
        }
        Ok(())
    }

    // ----------------------------------------------------------------- statements

    pub fn exec_block(&mut self, body: &[Stmt]) -> ExecResult {
        for stmt in body {
            self.exec_stmt(stmt)?;
        }
        Ok(())
    }

    pub fn exec_stmt(&mut self, stmt: &Stmt) -> ExecResult {
        self.check_interrupt()
            .map_err(|e| e.at(stmt.span, &self.source))?;
        let span = stmt.span;
        let outer = self.stmt.replace(span);
        let result = grow(|| self.exec_stmt_inner(stmt));
        self.stmt = outer;
        if crate::object::finalize::pending() {
            self.run_finalizers(Some(span));
        }
        match result {
            Err(Ctl::Exc(e)) => Err(Ctl::Exc(Box::new(e.at(span, &self.source)))),
            other => other,
        }
    }

    fn exec_stmt_inner(&mut self, stmt: &Stmt) -> ExecResult {
        match &stmt.kind {
            StmtKind::Expr(e) => {
                self.eval(e)?;
            }
            StmtKind::Assign { targets, value } => {
                let v = self.eval(value)?;
                // The last target takes the value itself: no reference-count round trip for
                // the common single-target assignment.
                if let Some((last, rest)) = targets.split_last() {
                    for t in rest {
                        self.assign(t, v.clone())?;
                    }
                    self.assign(last, v)?;
                }
            }
            StmtKind::AugAssign { target, op, value } => self.aug_assign(target, *op, value)?,
            StmtKind::Def(def) => {
                let f = self.make_function(def)?;
                self.set_var(&def.name, f);
            }
            StmtKind::Class(def) => {
                let c = self.make_class(def)?;
                self.set_var(&def.name, c);
            }
            StmtKind::Decorated { decorators, def } => {
                // CPython evaluates the decorators top to bottom, then the definition, then
                // applies them bottom up.
                let mut decs = Vec::with_capacity(decorators.len());
                for d in decorators {
                    decs.push(self.eval(d)?);
                }
                let (value, name) = match &def.kind {
                    StmtKind::Def(d) => (self.make_function(d)?, &d.name),
                    StmtKind::Class(c) => (self.make_class(c)?, &c.name),
                    _ => {
                        // A decorated decorated definition: run it, then decorate what it bound.
                        self.exec_stmt(def)?;
                        let name = decorated_name(def);
                        let Some(name) = name else { return Ok(()) };
                        let v = self.lookup(name).unwrap_or(Value::None);
                        (v, name)
                    }
                };
                let mut value = value;
                for (d, dec) in decorators.iter().zip(decs).rev() {
                    value = self
                        .call_value(&dec, Args::positional(vec![value]))
                        .map_err(|e| e.at(d.span, &self.source))?;
                }
                self.set_var(name, value);
            }
            StmtKind::Return(v) => {
                if self.env.is_none() {
                    return Err(Exc::new(ExcKind::SyntaxError, "'return' outside function").into());
                }
                let v = match v {
                    Some(e) => self.eval(e)?,
                    None => Value::None,
                };
                return Err(Ctl::Return(v));
            }
            StmtKind::If { branches, orelse } => {
                for (test, body) in branches {
                    if self.eval_truthy(test)? {
                        return self.exec_block(body);
                    }
                }
                if let Some(body) = orelse {
                    return self.exec_block(body);
                }
            }
            StmtKind::Match { subject, cases } => {
                let chosen = self.choose_case(subject, cases)?;
                if let Some(case) = chosen.and_then(|i| cases.get(i)) {
                    return self.exec_block(&case.body);
                }
            }
            StmtKind::While { cond, body, orelse } => {
                let mut broke = false;
                while self.eval_truthy(cond)? {
                    match self.exec_block(body) {
                        Err(Ctl::Break) => {
                            broke = true;
                            break;
                        }
                        Err(Ctl::Continue) | Ok(()) => {}
                        Err(other) => return Err(other),
                    }
                }
                if let (false, Some(orelse)) = (broke, orelse) {
                    return self.exec_block(orelse);
                }
            }
            StmtKind::For {
                target,
                iter,
                body,
                orelse,
            } => {
                let it = self.eval(iter)?;
                let mut broke = false;
                let looped = self
                    .for_each(&it, |me, item| {
                        me.assign(target, item)?;
                        match me.exec_block(body) {
                            Err(Ctl::Break) => {
                                broke = true;
                                Ok(false)
                            }
                            Err(Ctl::Continue) | Ok(()) => Ok(true),
                            Err(other) => Err(other),
                        }
                    })
                    .map_err(|c| match c {
                        Ctl::Exc(e) => Ctl::Exc(Box::new(e.at(iter.span, &self.source))),
                        other => other,
                    });
                // An exception keeps the generator alive in CPython (its traceback holds the
                // frame), so only a loop that ends, breaks or returns closes it.
                if !matches!(looped, Err(Ctl::Exc(_))) {
                    self.release_iterable(it);
                }
                looped?;
                if let (false, Some(orelse)) = (broke, orelse) {
                    return self.exec_block(orelse);
                }
            }
            StmtKind::Break => return Err(Ctl::Break),
            StmtKind::Continue => return Err(Ctl::Continue),
            StmtKind::Pass => {}
            StmtKind::AnnAssign {
                target,
                annotation,
                value,
            } => self.annotated_assign(target, annotation, value.as_ref())?,
            StmtKind::With { items, body } => return self.exec_with(items, body),
            StmtKind::Try {
                body,
                handlers,
                orelse,
                finally,
            } => return self.exec_try(body, handlers, orelse.as_deref(), finally.as_deref()),
            StmtKind::Raise(e) => return Err(self.raise(e.as_ref())?.into()),
            StmtKind::RaiseFrom { exc, cause } => {
                let mut raised = self.raise(Some(exc))?;
                // `from None` leaves no cause; anything else must be an exception (PEP 3134).
                let cause = match self.eval(cause)? {
                    Value::None => None,
                    v => {
                        let c = self.exc_from_value(v, "exception causes")?;
                        // The exception being handled, with the traceback it has.
                        Some(Rc::new(match &self.handling {
                            Some(h) if c.is_same(h) => self.settled(h),
                            _ => c,
                        }))
                    }
                };
                let links = raised.links_mut();
                links.cause = cause;
                links.suppress_context = true;
                return Err(raised.into());
            }
            StmtKind::Assert { test, msg } => {
                if !self.eval_truthy(test)? {
                    let m = match msg {
                        Some(m) => {
                            let v = self.eval(m)?;
                            format::to_str(self, &v)?
                        }
                        None => String::new(),
                    };
                    return Err(Exc::new(ExcKind::AssertionError, m).into());
                }
            }
            StmtKind::Del(targets) => {
                for t in targets {
                    self.delete(t)?;
                }
            }
            StmtKind::Nonlocal(names) => {
                if let Some(env) = &self.env {
                    let parent = env.borrow().parent.clone();
                    for n in names {
                        // CPython checks this when compiling; here, when the statement runs.
                        let found = parent
                            .as_ref()
                            .is_some_and(|p| lookup_in_scopes(p, n).is_some());
                        if !found {
                            return Err(Exc::new(
                                ExcKind::SyntaxError,
                                format!("no binding for nonlocal '{n}' found"),
                            )
                            .at(stmt.span, &self.source)
                            .into());
                        }
                    }
                    env.borrow_mut()
                        .decl_mut()
                        .nonlocals
                        .extend(names.iter().cloned());
                }
            }
            StmtKind::Global(names) => {
                if let Some(env) = &self.env {
                    env.borrow_mut()
                        .decl_mut()
                        .globals
                        .extend(names.iter().cloned());
                }
            }
            StmtKind::Import(names) => {
                for n in names {
                    let dotted = join_path(&n.path);
                    let module =
                        modules::import(self, &dotted).map_err(|e| e.at(n.span, &self.source))?;
                    match &n.alias {
                        Some(alias) => self.set_var(alias, Value::Module(module)),
                        None => {
                            // `import a.b` binds `a`.
                            let top = modules::import(self, &n.path[0])
                                .map_err(|e| e.at(n.span, &self.source))?;
                            self.set_var(&n.path[0], Value::Module(top));
                        }
                    }
                }
            }
            StmtKind::FromImport { module, names } => {
                let dotted = join_path(module);
                let m =
                    modules::import(self, &dotted).map_err(|e| e.at(stmt.span, &self.source))?;
                for n in names {
                    let name = &n.path[0];
                    // As CPython's `getattr(module, name)`: a module's `__getattr__` (PEP 562)
                    // answers names it does not hold before submodules are tried.
                    let held = m.get(name);
                    let lazy = match m.get("__getattr__") {
                        Some(f) if held.is_none() && &**name != "__getattr__" => {
                            match self
                                .call_value(&f, Args::positional(vec![Value::Str(name.clone())]))
                            {
                                Ok(v) => Some(v),
                                Err(e) if e.kind == ExcKind::AttributeError => None,
                                Err(e) => return Err(e.at(n.span, &self.source).into()),
                            }
                        }
                        _ => None,
                    };
                    let v = match held.or(lazy) {
                        Some(v) => v,
                        None => match modules::import(self, &format!("{dotted}.{name}")) {
                            Ok(sub) => Value::Module(sub),
                            // A submodule that exists but fails as it runs reports its own error.
                            Err(e)
                                if !(e.kind == ExcKind::ModuleNotFoundError
                                    && e.message.starts_with(&format!(
                                        "No module named '{dotted}.{name}'"
                                    ))) =>
                            {
                                return Err(e.at(n.span, &self.source).into())
                            }
                            Err(_) => {
                                return Err(Exc::new(
                                    ExcKind::ImportError,
                                    format!("cannot import name '{name}' from '{dotted}'"),
                                )
                                .at(n.span, &self.source)
                                .into())
                            }
                        },
                    };
                    self.set_var(n.alias.as_ref().unwrap_or(name), v);
                }
            }
            StmtKind::Magic { name, arg, .. } => {
                magic::run(self, name, arg)?;
            }
        }
        Ok(())
    }

    fn raise(&mut self, e: Option<&Expr>) -> Result<Exc, Exc> {
        let Some(e) = e else {
            return Ok(match &self.handling {
                Some(x) => (**x).clone(),
                None => Exc::new(ExcKind::RuntimeError, "No active exception to reraise"),
            });
        };
        let v = self.eval(e)?;
        self.exc_from_value(v, "exceptions")
    }

    /// What `raise v` raises (`what`: "exceptions", or "exception causes" for `from v`).
    fn exc_from_value(&mut self, mut v: Value, what: &str) -> Result<Exc, Exc> {
        if let Value::Class(c) = &v {
            if c.exception_base().is_some() {
                v = crate::object::class::instantiate(self, &c.clone(), Args::default())?;
            }
        }
        Ok(match &v {
            Value::Exception(x) => {
                let mut e = Exc::new(x.kind, x.message.clone());
                e.args = x.args.clone();
                e.links = x.links.clone();
                resume_trace(&mut e);
                e
            }
            Value::ExcType(k) => Exc::new(*k, ""),
            Value::Instance(inst) if inst.class().exception_base().is_some() => {
                let kind = inst.class().exception_base().unwrap_or(ExcKind::Exception);
                let message = crate::object::class::exception_message(self, &v)?;
                let mut x = Exc::new(kind, message);
                x.instance = Some(inst.clone());
                x.links = inst.exc_links.borrow().clone();
                resume_trace(&mut x);
                x
            }
            other if what == "exceptions" => Exc::type_error(format!(
                "exceptions must derive from BaseException, not {}",
                other.type_name()
            )),
            _ => {
                return Err(Exc::type_error(format!(
                    "{what} must derive from BaseException"
                )))
            }
        })
    }

    /// Where `e` has been: its place in the running frame, then the calls it unwound through.
    fn trace_of(&self, e: &Exc) -> Rc<[Frame]> {
        let mut frames = Vec::with_capacity(e.frames.len() + 1);
        if let Some(span) = e.span {
            frames.push(Frame {
                function: self
                    .enclosing_function()
                    .map_or_else(|| Rc::from("<module>"), |f| f.name.clone()),
                source: e.source.clone().unwrap_or_else(|| self.source.clone()),
                span,
            });
        }
        frames.extend(e.frames.iter().cloned());
        frames.into()
    }

    /// `e` as a finished traceback: its place in the running frame becomes a frame named
    /// for this function, as when it leaves it (an exception kept as another's context).
    pub(super) fn settled(&self, e: &Exc) -> Exc {
        let mut e = e.clone();
        if let Some(span) = e.span.take() {
            let source = e.source.take().unwrap_or_else(|| self.source.clone());
            let function = self
                .enclosing_function()
                .map_or_else(|| Rc::from("<module>"), |f| f.name.clone());
            e.frames.insert(
                0,
                Frame {
                    function,
                    source,
                    span,
                },
            );
        }
        e
    }

    /// `new` was raised while `handled` was being handled: its `__context__` (PEP 3134).
    pub(super) fn add_context(&self, new: &mut Exc, handled: &Exc) {
        if new.is_same(handled) || new.links.as_ref().is_some_and(|l| l.context.is_some()) {
            return;
        }
        new.links_mut().context = Some(Rc::new(self.settled(handled)));
    }

    fn exec_with(&mut self, items: &[crate::lang::ast::WithItem], body: &[Stmt]) -> ExecResult {
        let Some((first, rest)) = items.split_first() else {
            return self.exec_block(body);
        };
        let (entered, value) = self.with_enter(first)?;
        let result = self
            .with_target(first, value)
            .and_then(|()| self.exec_with(rest, body));
        self.with_exit(entered, first, result)
    }

    /// Binds `with ... as target` (inside the managed block: a failure here is exited).
    pub(super) fn with_target(
        &mut self,
        item: &crate::lang::ast::WithItem,
        value: Value,
    ) -> ExecResult {
        if let Some(t) = &item.target {
            self.assign(t, value)?;
        }
        Ok(())
    }

    /// Evaluates a `with` item's context manager and enters it: what its exit needs.
    pub(super) fn with_enter(
        &mut self,
        item: &crate::lang::ast::WithItem,
    ) -> Result<(Entered, Value), Ctl> {
        let span = item.context.span;
        let ctx = self.eval(&item.context)?;
        let source = self.source.clone();
        let unsupported = |ctx: &Value| {
            Exc::type_error(format!(
                "'{}' object does not support the context manager protocol",
                ctx.type_name()
            ))
            .at(span, &source)
        };
        match &ctx {
            Value::Instance(_) => {
                let (Some(enter), Some(exit)) = (
                    crate::object::class::special_method(self, &ctx, "__enter__")
                        .map_err(|e| e.at(span, &self.source))?,
                    crate::object::class::special_method(self, &ctx, "__exit__")
                        .map_err(|e| e.at(span, &self.source))?,
                ) else {
                    return Err(unsupported(&ctx).into());
                };
                let entered = self
                    .call_value(&enter, Args::default())
                    .map_err(|e| e.at(span, &self.source))?;
                Ok((Entered::Exit(exit), entered))
            }
            Value::Object(obj) => {
                let entered = obj
                    .enter_value(obj, self)
                    .map_err(|e| e.at(span, &self.source))?;
                Ok((Entered::Native(obj.clone()), entered))
            }
            _ => Err(unsupported(&ctx).into()),
        }
    }

    /// Leaves an entered context manager with the outcome of its body: `__exit__` gets the
    /// exception (or three Nones); a true result swallows the exception.
    pub(super) fn with_exit(
        &mut self,
        entered: Entered,
        item: &crate::lang::ast::WithItem,
        result: ExecResult,
    ) -> ExecResult {
        let exit = match entered {
            Entered::Native(obj) => {
                obj.exit(self)?;
                return result;
            }
            Entered::Exit(exit) => exit,
        };
        let exit_args = match &result {
            Err(Ctl::Exc(e)) => {
                let value = exception_value(e);
                let class = match &value {
                    Value::Instance(i) => i.class().value(),
                    _ => Value::ExcType(e.kind),
                };
                vec![class, value, Value::None]
            }
            _ => vec![Value::None, Value::None, Value::None],
        };
        let suppress = match self.call_value(&exit, Args::positional(exit_args)) {
            Ok(v) => v,
            Err(e) => {
                let mut e = e.at(item.context.span, &self.source);
                if let Err(Ctl::Exc(body)) = &result {
                    self.add_context(&mut e, body);
                }
                return Err(e.into());
            }
        };
        match result {
            Err(Ctl::Exc(e)) => {
                if crate::object::class::truthy(self, &suppress)? {
                    Ok(())
                } else {
                    Err(Ctl::Exc(e))
                }
            }
            other => other,
        }
    }

    fn exec_try(
        &mut self,
        body: &[Stmt],
        handlers: &[crate::lang::ast::ExceptHandler],
        orelse: Option<&[Stmt]>,
        finally: Option<&[Stmt]>,
    ) -> ExecResult {
        let mut result = self.exec_block(body);
        if let Err(Ctl::Exc(exc)) = &mut result {
            // An `except` clause that fails to evaluate still leaves through `finally`.
            match self.find_handler(exc, handlers) {
                Ok(Some(h)) => {
                    let exc = exc.clone();
                    let outer = self.handling.replace(exc);
                    result = self.exec_block(&h.body);
                    if let (Err(Ctl::Exc(new)), Some(handled)) = (&mut result, &self.handling) {
                        self.add_context(new, handled);
                    }
                    self.handling = outer;
                    if let Some(name) = &h.name {
                        self.unbind_handler_name(name);
                    }
                }
                Ok(None) => {}
                Err(c) => result = Err(c),
            }
        } else if result.is_ok() {
            if let Some(orelse) = orelse {
                result = self.exec_block(orelse);
            }
        }
        if let Some(finally) = finally {
            self.run_finally_block(finally, &mut result)?;
        }
        result
    }

    /// A `finally` block; an exception it raises while another is on its way out has that
    /// one as its context. While that one passes through, it is the handled exception (a
    /// bare `raise` re-raises it), as in CPython.
    pub(super) fn run_finally_block(
        &mut self,
        finally: &[Stmt],
        pending: &mut ExecResult,
    ) -> ExecResult {
        let outer = match pending {
            Err(Ctl::Exc(old)) => {
                old.mark_caught(); // so that a re-raise is known as the same exception
                Some(self.handling.replace(old.clone()))
            }
            _ => None,
        };
        let mut r = self.exec_block(finally);
        if let Some(outer) = outer {
            self.handling = outer;
        }
        if let (Err(Ctl::Exc(new)), Err(Ctl::Exc(old))) = (&mut r, pending) {
            self.add_context(new, old);
        }
        r
    }

    /// The `except` clause that catches `exc`, its name bound to the exception.
    pub(super) fn find_handler<'h>(
        &mut self,
        exc: &mut Exc,
        handlers: &'h [crate::lang::ast::ExceptHandler],
    ) -> Result<Option<&'h crate::lang::ast::ExceptHandler>, Ctl> {
        for h in handlers {
            let clause = h.kind.as_ref().map(|k| self.eval(k));
            if self.clause_matches(exc, h, clause)? {
                self.catch(exc, h);
                return Ok(Some(h));
            }
        }
        Ok(None)
    }

    /// Whether clause `h` catches `exc`, given what its expression evaluated to (None for a
    /// bare `except:`). The exception is being handled while its clauses are matched: what
    /// one raises (a NameError, a TypeError, a `throw` into a `yield` there) has it as its
    /// context.
    pub(super) fn clause_matches(
        &self,
        exc: &Exc,
        h: &crate::lang::ast::ExceptHandler,
        clause: Option<Result<Value, Exc>>,
    ) -> Result<bool, Ctl> {
        let Some(clause) = clause else {
            return Ok(true);
        };
        // CPython points at the whole `except` line for a clause that is no exception class.
        let matched =
            clause.and_then(|kv| exc_matches(exc, &kv).map_err(|e| e.at(h.span, &self.source)));
        matched.map_err(|mut new| {
            self.add_context(&mut new, exc);
            new.into()
        })
    }

    /// Clause `h` caught `exc`: it is caught (its context the one handled around it, its
    /// traceback ending here), and bound to the clause's name.
    pub(super) fn catch(&mut self, exc: &mut Exc, h: &crate::lang::ast::ExceptHandler) {
        if let Some(outer) = &self.handling {
            let outer = outer.clone();
            self.add_context(exc, &outer);
        }
        exc.mark_caught();
        exc.links_mut().trace = Some(self.trace_of(exc));
        if let Some(name) = &h.name {
            let v = exception_value(exc);
            self.set_var(name, v);
        }
    }

    /// The end of an `except E as name:` block, however it ends: CPython compiles it to
    /// `name = None; del name`, so the name is unbound after it (the exception, and the frames
    /// its traceback holds, are not kept alive by it).
    pub(super) fn unbind_handler_name(&mut self, name: &Ident) {
        let removed = match self.env.clone() {
            Some(env) => {
                let (global, nonlocal) = env.borrow().decl.as_ref().map_or((false, false), |d| {
                    (d.globals.contains(name), d.nonlocals.contains(name))
                });
                if nonlocal {
                    let mut cur = env.borrow().parent.clone();
                    let mut removed = None;
                    while let Some(e) = cur {
                        if e.borrow().vars.contains_key(name) {
                            removed = e.borrow_mut().vars.remove(name);
                            break;
                        }
                        cur = e.borrow().parent.clone();
                    }
                    removed
                } else if global {
                    match &self.module {
                        Some(m) => m.remove(name),
                        None => self.st.globals.remove(name),
                    }
                } else {
                    let mut scope = env.borrow_mut();
                    if scope.class_body {
                        if let Some(d) = scope.decl.as_mut() {
                            d.order.retain(|n| n != name);
                        }
                    }
                    scope.vars.remove(name)
                }
            }
            None => match &self.module {
                Some(m) => m.remove(name),
                None => self.st.globals.remove(name),
            },
        };
        // Dropped here, with no scope borrowed.
        drop(removed);
    }

    // ---------------------------------------------------------------- assignment

    /// Bind `name` in the current scope (function locals, or globals at top level).
    pub fn set_var(&mut self, name: &Ident, value: Value) {
        if let Some(value) = self.bind_local(name, value) {
            match &self.module {
                Some(m) => m.set(name, value),
                None => self.st.globals.insert(name, value),
            }
        }
    }

    /// Bind a name node: like [`Interp::set_var`], but a global is stored by its cached slot.
    #[inline]
    pub fn set_name(&mut self, name: &NameRef, value: Value) {
        if let Some(value) = self.bind_local(&name.id, value) {
            match &self.module {
                Some(m) => m.set(&name.id, value),
                None => self.st.globals.set_ref(name, value),
            }
        }
    }

    /// Binds `name` in the current function's scope, or gives the value back when the name
    /// is global here (at top level, or declared `global`).
    #[inline]
    fn bind_local(&self, name: &Ident, value: Value) -> Option<Value> {
        let Some(env) = self.env.as_ref() else {
            return Some(value);
        };
        let mut scope = env.borrow_mut();
        let (global, nonlocal) = scope.decl.as_ref().map_or((false, false), |d| {
            (d.globals.contains(name), d.nonlocals.contains(name))
        });
        if global {
            return Some(value);
        }
        if nonlocal {
            let mut cur = scope.parent.clone();
            drop(scope);
            while let Some(e) = cur {
                let mut s = e.borrow_mut();
                if let Some(slot) = s.vars.get_mut(name) {
                    *slot = value;
                    return None;
                }
                cur = s.parent.clone();
            }
            return Some(value);
        }
        if scope.class_body && !scope.vars.contains_key(name) {
            scope.decl_mut().order.push(name.clone());
        }
        bind(&mut scope.vars, name, value);
        None
    }

    /// The scope a function defined here closes over: the current one, skipping class bodies
    /// (a method does not see its class's names as variables, as in Python).
    fn closure_env(&self) -> Option<Env> {
        let mut env = self.env.clone();
        while let Some(e) = env.clone() {
            let scope = e.borrow();
            if !scope.class_body {
                break;
            }
            env = scope.parent.clone();
        }
        env
    }

    /// Look up a name node: like [`Interp::lookup`], but a global is read by its cached slot.
    #[inline]
    pub fn lookup_name(&self, name: &NameRef) -> Option<Value> {
        if let Some(env) = &self.env {
            match resolve_in_scopes(env, &name.id) {
                Resolved::Bound(v) => return Some(v),
                Resolved::Unbound { .. } => return None,
                Resolved::Outside => {}
            }
        }
        if let Some(m) = &self.module {
            return m
                .get(&name.id)
                .or_else(|| self.st.builtins.get(&*name.id).cloned());
        }
        match self.st.globals.get_ref(name) {
            Some(v) => Some(v.clone()),
            None => self.st.builtins.get(&*name.id).cloned(),
        }
    }

    pub fn lookup(&self, name: &str) -> Option<Value> {
        if let Some(env) = &self.env {
            match resolve_in_scopes(env, name) {
                Resolved::Bound(v) => return Some(v),
                Resolved::Unbound { .. } => return None,
                Resolved::Outside => {}
            }
        }
        if let Some(m) = &self.module {
            return m.get(name).or_else(|| self.st.builtins.get(name).cloned());
        }
        self.st
            .globals
            .get(name)
            .or_else(|| self.st.builtins.get(name))
            .cloned()
    }

    pub fn assign(&mut self, target: &Expr, value: Value) -> Result<(), Exc> {
        self.assign_inner(target, value)
            .map_err(|e| e.at(target.span, &self.source))
    }

    fn assign_inner(&mut self, target: &Expr, value: Value) -> Result<(), Exc> {
        match &target.kind {
            ExprKind::Name(n) => {
                self.set_name(n, value);
                Ok(())
            }
            ExprKind::Tuple(items) | ExprKind::List(items) => self.unpack(items, value),
            ExprKind::Attribute {
                value: obj, attr, ..
            } => {
                let o = self.eval(obj)?;
                builtins::set_attr(self, &o, attr, value)
            }
            ExprKind::Subscript { value: obj, index } => {
                let o = self.eval(obj)?;
                let idx = self.eval_index(index)?;
                ops::set_item(self, &o, idx, value)
            }
            _ => Err(Exc::new(
                ExcKind::SyntaxError,
                "cannot assign to this expression",
            )),
        }
    }

    fn unpack(&mut self, targets: &[Expr], value: Value) -> Result<(), Exc> {
        let items = self.iterate(&value)?;
        let star = targets
            .iter()
            .position(|t| matches!(t.kind, ExprKind::Starred(_)));
        match star {
            None => {
                if items.len() != targets.len() {
                    return Err(Exc::value_error(if items.len() > targets.len() {
                        format!("too many values to unpack (expected {})", targets.len())
                    } else {
                        format!(
                            "not enough values to unpack (expected {}, got {})",
                            targets.len(),
                            items.len()
                        )
                    }));
                }
                for (t, v) in targets.iter().zip(items) {
                    self.assign(t, v)?;
                }
            }
            Some(si) => {
                let after = targets.len() - si - 1;
                if items.len() < si + after {
                    return Err(Exc::value_error(format!(
                        "not enough values to unpack (expected at least {}, got {})",
                        si + after,
                        items.len()
                    )));
                }
                let mut items = items;
                let tail = items.split_off(items.len() - after);
                let middle = items.split_off(si);
                for (t, v) in targets[..si].iter().zip(items) {
                    self.assign(t, v)?;
                }
                if let ExprKind::Starred(inner) = &targets[si].kind {
                    self.assign(inner, Value::list(middle))?;
                }
                for (t, v) in targets[si + 1..].iter().zip(tail) {
                    self.assign(t, v)?;
                }
            }
        }
        Ok(())
    }

    fn aug_assign(&mut self, target: &Expr, op: BinOp, value: &Expr) -> Result<(), Exc> {
        let rhs = self.eval(value)?;
        match &target.kind {
            ExprKind::Name(n) => {
                let cur = self
                    .lookup_name(n)
                    .ok_or_else(|| self.missing_name(n).at(target.span, &self.source))?;
                let new = ops::binary_inplace(self, op, &cur, &rhs)
                    .map_err(|e| e.at(target.span.to(value.span), &self.source))?;
                self.set_name(n, new);
            }
            ExprKind::Attribute {
                value: obj, attr, ..
            } => {
                let o = self.eval(obj)?;
                let cur = builtins::get_attr(self, &o, attr)?;
                let new = ops::binary_inplace(self, op, &cur, &rhs)?;
                builtins::set_attr(self, &o, attr, new)?;
            }
            ExprKind::Subscript { value: obj, index } => {
                let o = self.eval(obj)?;
                let idx = self.eval_index(index)?;
                let cur = ops::get_item(self, &o, idx.clone())?;
                let new = ops::binary_inplace(self, op, &cur, &rhs)?;
                ops::set_item(self, &o, idx, new)?;
            }
            _ => {
                return Err(Exc::new(
                    ExcKind::SyntaxError,
                    "illegal expression for augmented assignment",
                ))
            }
        }
        Ok(())
    }

    fn delete(&mut self, target: &Expr) -> Result<(), Exc> {
        match &target.kind {
            ExprKind::Name(n) => {
                let removed = match &self.env {
                    Some(env) => env.borrow_mut().vars.remove(&n.id).is_some(),
                    None => match &self.module {
                        Some(m) => m.remove(&n.id).is_some(),
                        None => self.st.globals.remove(n).is_some(),
                    },
                };
                if removed {
                    Ok(())
                } else {
                    Err(self.missing_name(n).at(target.span, &self.source))
                }
            }
            ExprKind::Subscript { value, index } => {
                let o = self.eval(value)?;
                let idx = self.eval_index(index)?;
                ops::del_item(self, &o, idx).map_err(|e| e.at(target.span, &self.source))
            }
            ExprKind::Attribute { value, attr, .. } => {
                let o = self.eval(value)?;
                crate::modules::python::classes::del_attr(self, &o, attr)
                    .map_err(|e| e.at(target.span, &self.source))
            }
            ExprKind::Tuple(items) | ExprKind::List(items) => {
                for t in items {
                    self.delete(t)?;
                }
                Ok(())
            }
            _ => Err(
                Exc::new(ExcKind::SyntaxError, "cannot delete this expression")
                    .at(target.span, &self.source),
            ),
        }
    }

    /// `x: T = v`: assigns; in a class body or at module level, a simple name's annotation is
    /// evaluated and kept in `__annotations__` (what `dataclasses` reads), as in CPython.
    /// Inside a function the annotation is not evaluated.
    fn annotated_assign(
        &mut self,
        target: &Expr,
        annotation: &Expr,
        value: Option<&Expr>,
    ) -> Result<(), Exc> {
        if let Some(value) = value {
            let v = self.eval(value)?;
            self.assign(target, v)?;
        }
        let ExprKind::Name(name) = &target.kind else {
            return Ok(());
        };
        let in_class = self.env.as_ref().is_some_and(|e| e.borrow().class_body);
        if self.env.is_some() && !in_class {
            return Ok(());
        }
        let ann = self.eval(annotation)?;
        let key: NameRef = NameRef::new(Rc::from("__annotations__"));
        let existing = match &self.env {
            Some(env) => env.borrow().vars.get("__annotations__").cloned(),
            None => self.lookup_name(&key),
        };
        let table = match existing {
            Some(d @ Value::Dict(_)) => d,
            _ => {
                let d = Value::Dict(Rc::new(RefCell::new(Dict::default())));
                self.set_name(&key, d.clone());
                d
            }
        };
        if let Value::Dict(d) = &table {
            d.borrow_mut().insert(
                hash_key(&Value::Str(name.id.clone()))?,
                Value::Str(name.id.clone()),
                ann,
            );
        }
        Ok(())
    }

    /// `**m` in a dict display: the mapping's items, in its order, into `d`.
    fn unpack_mapping(&mut self, e: &Expr, d: &mut Dict) -> Result<(), Exc> {
        let m = self.eval(e)?;
        let is_mapping = match &m {
            Value::Dict(_) => true,
            other => builtins::get_attr(self, other, "keys").is_ok(),
        };
        if !is_mapping {
            return Err(
                Exc::type_error(format!("'{}' object is not a mapping", m.type_name()))
                    .at(e.span, &self.source),
            );
        }
        let items = match &m {
            Value::Dict(src) => src.borrow().clone(),
            other => {
                let converted = builtins::call_type(
                    self,
                    TypeKind::Dict,
                    Args::positional(vec![other.clone()]),
                )?;
                match &converted {
                    Value::Dict(src) => src.borrow().clone(),
                    _ => Dict::default(),
                }
            }
        };
        for (k, v) in items.entries {
            let hk = crate::object::keys::key_among(self, &k, &|h| d.same_hash(h))?;
            d.insert(hk, k, v);
        }
        Ok(())
    }

    fn make_function(&mut self, def: &Rc<FuncDef>) -> Result<Value, Exc> {
        let defaults = self.eval_defaults(&def.params)?;
        Ok(Value::Func(Rc::new(Function {
            name: def.name.clone(),
            params: def.params.clone(),
            defaults,
            body: FunctionBody::Def(def.clone()),
            doc: def.doc.clone(),
            source: self.source.clone(),
            closure: self.closure_env(),
            span: def.span,
            owner: RefCell::new(None),
            dict: Default::default(),
            module: self
                .module
                .as_ref()
                .map(|m| Rc::downgrade(m.for_functions())),
        })))
    }

    /// Runs a class body in its own namespace and builds the class from what it bound.
    fn make_class(&mut self, def: &Rc<crate::lang::ast::ClassDef>) -> Result<Value, Exc> {
        let mut args = self.eval_args(&def.bases)?;
        let metaclass = args
            .kw
            .iter()
            .position(|(k, _)| &**k == "metaclass")
            .map(|i| args.kw.remove(i).1);
        // `A.B` for a class in a class body, `f.<locals>.C` for one in a function.
        let enclosing_class = self
            .env
            .as_ref()
            .and_then(|e| e.borrow().class_qualname().cloned());
        let qualname: Rc<str> = match (enclosing_class, self.enclosing_function()) {
            (Some(outer), _) => Rc::from(format!("{outer}.{}", def.name)),
            (None, Some(f)) => Rc::from(format!("{}.<locals>.{}", f.qualname(), def.name)),
            (None, None) => def.name.clone(),
        };
        let scope = Scope {
            parent: self.env.clone(),
            class_body: true,
            decl: Some(Box::new(crate::object::state::ScopeDecl {
                class_qualname: Some(qualname.clone()),
                ..Default::default()
            })),
            ..Scope::default()
        };
        let env = Rc::new(RefCell::new(scope));
        let saved = self.env.replace(env.clone());
        let result = self.exec_block(&def.body);
        self.env = saved;
        match result {
            Ok(()) => {}
            Err(Ctl::Exc(e)) => return Err(*e),
            Err(_) => {
                return Err(Exc::new(
                    ExcKind::SyntaxError,
                    "'return', 'break' or 'continue' outside a function or loop",
                ))
            }
        }
        let mut scope = env.borrow_mut();
        let mut attrs = crate::object::class::Attrs::default();
        let order = scope
            .decl
            .as_mut()
            .map(|d| std::mem::take(&mut d.order))
            .unwrap_or_default();
        for name in order {
            if let Some(v) = scope.vars.remove(&name) {
                attrs.set(name, v);
            }
        }
        drop(scope);
        let parts = crate::object::make_class::ClassParts {
            name: def.name.clone(),
            qualname,
            module: Rc::from(self.module.as_ref().map_or("__main__", |m| m.name.as_str())),
            bases: std::mem::take(&mut args.pos),
            attrs,
            doc: def.doc.clone(),
            source: Some((self.source.clone(), def.span)),
            metaclass,
            keywords: std::mem::take(&mut args.kw),
        };
        let class = crate::object::make_class::make_class(self, parts)?;
        Ok(Value::Class(class))
    }

    /// The function whose body is running, if any (class `__qualname__`).
    fn enclosing_function(&self) -> Option<Rc<Function>> {
        let env = self.env.as_ref()?;
        let mut cur = Some(env.clone());
        while let Some(e) = cur {
            let scope = e.borrow();
            if let Some(f) = &scope.function {
                return Some(f.clone());
            }
            cur = scope.parent.clone();
        }
        None
    }

    /// Zero-argument `super()`: the class that defined the running method and its first argument.
    fn implicit_super_args(&self) -> Result<Vec<Value>, Exc> {
        let missing = || Exc::new(ExcKind::RuntimeError, "super(): no arguments");
        let mut cur = self.env.clone();
        while let Some(e) = cur {
            let scope = e.borrow();
            if let Some(f) = &scope.function {
                if let Some(class) = crate::object::class::owner_of(f) {
                    let first = f
                        .params
                        .first()
                        .and_then(|p| scope.vars.get(&p.name).cloned())
                        .ok_or_else(missing)?;
                    return Ok(vec![Value::Class(class), first]);
                }
            }
            cur = scope.parent.clone();
        }
        Err(Exc::new(
            ExcKind::RuntimeError,
            "super(): __class__ cell not found",
        ))
    }

    /// Empty when no parameter has a default (a generator expression makes a function per
    /// evaluation); `bind_params` reads a missing entry as no default.
    fn eval_defaults(&mut self, params: &[Param]) -> Result<Vec<Option<Value>>, Exc> {
        if params.iter().all(|p| p.default.is_none()) {
            return Ok(Vec::new());
        }
        params
            .iter()
            .map(|p| p.default.as_ref().map(|d| self.eval(d)).transpose())
            .collect()
    }

    // ---------------------------------------------------------------- expressions

    pub fn eval_truthy(&mut self, e: &Expr) -> Result<bool, Exc> {
        let v = self.eval(e)?;
        crate::object::class::truthy(self, &v).map_err(|x| x.at(e.span, &self.source))
    }

    pub fn eval(&mut self, e: &Expr) -> Result<Value, Exc> {
        // A name is a leaf: it cannot recurse, so it skips the stack check.
        if let ExprKind::Name(n) = &e.kind {
            return self
                .lookup_name(n)
                .ok_or_else(|| self.missing_name(n).at(e.span, &self.source));
        }
        // `obj.attr` with `obj` a name: an instance's own attribute is found without the stack
        // check and the fusion attempt (it is no array op), which halves an attribute read.
        // Not while a failed fusion's leaf values wait to be reused (`fuse_fallback`).
        if let ExprKind::Attribute {
            value,
            attr,
            attr_span,
            hint,
        } = &e.kind
        {
            if let (ExprKind::Name(n), None) = (&value.kind, &self.fuse_fallback) {
                let obj = self
                    .lookup_name(n)
                    .ok_or_else(|| self.missing_name(n).at(value.span, &self.source))?;
                if let Some(v) = own_attribute(&obj, attr, hint) {
                    return Ok(v);
                }
                return grow(|| builtins::get_attr(self, &obj, attr))
                    .map_err(|x| x.at(*attr_span, &self.source).at(e.span, &self.source));
            }
        }
        grow(|| self.eval_inner(e)).map_err(|x| x.at(e.span, &self.source))
    }

    fn eval_inner(&mut self, e: &Expr) -> Result<Value, Exc> {
        // An elementwise expression of several ops runs as one fused pass when it can.
        match super::fuse::try_fuse(self, e) {
            Attempt::Done(v) => Ok(v),
            Attempt::Usual => self.eval_usual(e),
            Attempt::UsualThenForget => {
                let result = self.eval_usual(e);
                self.fuse_fallback = None;
                result
            }
        }
    }

    fn eval_usual(&mut self, e: &Expr) -> Result<Value, Exc> {
        Ok(match &e.kind {
            ExprKind::Name(n) => return self.lookup_name(n).ok_or_else(|| self.missing_name(n)),
            ExprKind::Int(i) => Value::Int(*i),
            ExprKind::BigInt(n) => Value::BigInt(n.clone()),
            ExprKind::Float(f) => Value::Float(*f),
            ExprKind::Str(s) => Value::Str(s.clone()),
            ExprKind::Bytes(b) => crate::modules::python::bytes::Bytes::value(b.to_vec()),
            ExprKind::Bool(b) => Value::Bool(*b),
            ExprKind::None => Value::None,
            ExprKind::Ellipsis => Value::Str(Rc::from("...")),
            ExprKind::FString(parts) => Value::str(&self.eval_fstring(parts)?),
            ExprKind::List(items) => Value::list(self.eval_items(items)?),
            ExprKind::Tuple(items) => Value::tuple(self.eval_items(items)?),
            ExprKind::Dict(pairs) => {
                let mut d = Dict::default();
                for (k, v) in pairs {
                    let Some(k) = k else {
                        self.unpack_mapping(v, &mut d)?;
                        continue;
                    };
                    let key = self.eval(k)?;
                    let val = self.eval(v)?;
                    let hk = crate::object::keys::key_among(self, &key, &|h| d.same_hash(h))
                        .map_err(|x| x.at(k.span, &self.source))?;
                    d.insert(hk, key, val);
                }
                Value::Dict(Rc::new(RefCell::new(d)))
            }
            ExprKind::ListComp { elt, generators } => {
                let mut out = Vec::new();
                self.comprehension(generators, &mut |me| {
                    let item = me.eval(elt)?;
                    crate::object::alloc::push(&mut out, item)
                })?;
                Value::list(out)
            }
            ExprKind::Set(items) => {
                use crate::object::set;
                let values = self.eval_items(items)?;
                let t = if items.len() > 2 && items.iter().all(set::is_constant) {
                    set::constant_display(&values)
                } else {
                    let mut t = set::Table::new();
                    values
                        .iter()
                        .try_for_each(|x| {
                            set::entry_in(self, x, &|h| t.same_hash(h)).map(|e| {
                                t.add(e);
                            })
                        })
                        .map(|()| t)
                };
                set::value(false, t.map_err(|x| x.at(e.span, &self.source))?)
            }
            ExprKind::SetComp { elt, generators } => {
                let mut t = crate::object::set::Table::new();
                self.comprehension(generators, &mut |me| {
                    let x = me.eval(elt)?;
                    let e = crate::object::set::entry_in(me, &x, &|h| t.same_hash(h))?;
                    t.add(e);
                    Ok(())
                })?;
                crate::object::set::value(false, t)
            }
            ExprKind::DictComp {
                key,
                value,
                generators,
            } => {
                let mut d = Dict::default();
                self.comprehension(generators, &mut |me| {
                    let k = me.eval(key)?;
                    let v = me.eval(value)?;
                    let hk = crate::object::keys::key_among(me, &k, &|h| d.same_hash(h))?;
                    d.insert(hk, k, v);
                    Ok(())
                })?;
                Value::Dict(Rc::new(RefCell::new(d)))
            }
            ExprKind::Attribute {
                value,
                attr,
                attr_span,
                hint,
            } => {
                let obj = self.eval(value)?;
                if let Some(v) = own_attribute(&obj, attr, hint) {
                    return Ok(v);
                }
                return builtins::get_attr(self, &obj, attr)
                    .map_err(|x| x.at(*attr_span, &self.source));
            }
            ExprKind::Subscript { value, index } => {
                let obj = self.eval(value)?;
                let idx = self.eval_index(index)?;
                return ops::get_item(self, &obj, idx);
            }
            ExprKind::Slice { .. } => {
                return Err(Exc::new(
                    ExcKind::SyntaxError,
                    "a slice like a:b is only allowed inside [ ]",
                ))
            }
            ExprKind::Call { func, args } => return self.eval_call(func, args),
            ExprKind::NamedExpr { target, value } => {
                let v = self.eval(value)?;
                // A comprehension's `:=` binds in the function (or module) around it.
                let mut scope = self.env.clone();
                while let Some(env) = scope.clone() {
                    if !env.borrow().comprehension {
                        break;
                    }
                    scope = env.borrow().parent.clone();
                }
                let saved = std::mem::replace(&mut self.env, scope);
                self.set_name(target, v.clone());
                self.env = saved;
                v
            }
            ExprKind::Unary { op, operand } => {
                let v = self.eval(operand)?;
                match op {
                    UnaryOp::Not => Value::Bool(!crate::object::class::truthy(self, &v)?),
                    _ => return ops::unary(self, *op, &v),
                }
            }
            ExprKind::Binary { op, left, right } => {
                if *op == BinOp::MatMul {
                    if let Some(v) = self.try_placed_creation(left, right)? {
                        return Ok(v);
                    }
                }
                let l = self.eval(left)?;
                let r = self.eval(right)?;
                return ops::binary(self, *op, &l, &r);
            }
            ExprKind::Compare { left, ops: cmps } => {
                let mut l = self.eval(left)?;
                let mut result = Value::Bool(true);
                for (op, right) in cmps {
                    let r = self.eval(right)?;
                    result = ops::compare(self, *op, &l, &r)?;
                    // Chained comparisons stop at the first false one (not for arrays).
                    if cmps.len() > 1 && !crate::object::class::truthy(self, &result)? {
                        return Ok(result);
                    }
                    l = r;
                }
                result
            }
            ExprKind::BoolOp { op, values } => {
                let mut last = Value::None;
                for v in values {
                    last = self.eval(v)?;
                    let t = crate::object::class::truthy(self, &last)
                        .map_err(|x| x.at(v.span, &self.source))?;
                    match op {
                        BoolOpKind::And if !t => return Ok(last),
                        BoolOpKind::Or if t => return Ok(last),
                        _ => {}
                    }
                }
                last
            }
            ExprKind::IfExp { test, body, orelse } => {
                if self.eval_truthy(test)? {
                    self.eval(body)?
                } else {
                    self.eval(orelse)?
                }
            }
            ExprKind::GeneratorExp { def, iter } => {
                let first = self.eval(iter)?;
                let f = self.make_function(def)?;
                self.call_value(&f, Args::positional(vec![first]))?
            }
            ExprKind::Yield(v) => {
                let v = match v {
                    Some(e) => self.eval(e)?,
                    None => Value::None,
                };
                return self.yield_value(v);
            }
            ExprKind::YieldFrom(e) => {
                let v = self.eval(e)?;
                return self.yield_from(v, e.span);
            }
            ExprKind::Lambda { params, body } => {
                let defaults = self.eval_defaults(params)?;
                Value::Func(Rc::new(Function {
                    name: Rc::from("<lambda>"),
                    params: params.clone(),
                    defaults,
                    body: FunctionBody::Lambda(Rc::new((**body).clone())),
                    doc: None,
                    source: self.source.clone(),
                    closure: self.closure_env(),
                    span: e.span,
                    module: self
                        .module
                        .as_ref()
                        .map(|m| Rc::downgrade(m.for_functions())),
                    owner: RefCell::new(None),
                    dict: Default::default(),
                }))
            }
            ExprKind::Starred(_) => {
                return Err(Exc::new(
                    ExcKind::SyntaxError,
                    "can't use starred expression here",
                ))
            }
        })
    }

    /// `ones(2, 3) @ gpu(0)`: when the left side is a call to a creation
    /// function and the right side is a device, create directly on the device
    /// instead of creating on the CPU and copying.
    fn try_placed_creation(&mut self, left: &Expr, right: &Expr) -> Result<Option<Value>, Exc> {
        let ExprKind::Call { func, args } = &left.kind else {
            return Ok(None);
        };
        let callee = self.eval(func)?;
        let is_creator = matches!(&callee, Value::Builtin(b) if crate::modules::array::arrays::is_creator(b.name));
        if !is_creator {
            // Not a creation call: evaluate normally (callee already evaluated).
            let l = self.call_with_exprs(&callee, args, left.span)?;
            let r = self.eval(right)?;
            return ops::binary(self, BinOp::MatMul, &l, &r).map(Some);
        }
        let mut call_args = self.eval_args(args)?;
        let r = self.eval(right)?;
        match r {
            Value::Device(_) => {
                call_args
                    .kw
                    .retain(|(k, _)| &**k != "ctx" && &**k != "device");
                call_args.kw.push((Rc::from("ctx"), r));
                self.call_value(&callee, call_args)
                    .map_err(|e| e.at(left.span, &self.source))
                    .map(Some)
            }
            other => {
                let l = self
                    .call_value(&callee, call_args)
                    .map_err(|e| e.at(left.span, &self.source))?;
                ops::binary(self, BinOp::MatMul, &l, &other).map(Some)
            }
        }
    }

    fn eval_items(&mut self, items: &[Expr]) -> Result<Vec<Value>, Exc> {
        let mut out = Vec::with_capacity(items.len());
        for it in items {
            if let ExprKind::Starred(inner) = &it.kind {
                let v = self.eval(inner)?;
                out.extend(
                    self.iterate(&v)
                        .map_err(|e| e.at(inner.span, &self.source))?,
                );
            } else {
                out.push(self.eval(it)?);
            }
        }
        Ok(out)
    }

    fn comprehension(
        &mut self,
        generators: &[Comprehension],
        body: &mut dyn FnMut(&mut Self) -> Result<(), Exc>,
    ) -> Result<(), Exc> {
        // Comprehension variables live in their own scope, as in Python 3.
        let scope = Rc::new(RefCell::new(Scope {
            parent: self.env.clone(),
            comprehension: true,
            ..Scope::default()
        }));
        let saved = self.env.replace(scope);
        let result = self.comprehension_level(generators, body);
        self.env = saved;
        result
    }

    fn comprehension_level(
        &mut self,
        generators: &[Comprehension],
        body: &mut dyn FnMut(&mut Self) -> Result<(), Exc>,
    ) -> Result<(), Exc> {
        let Some((g, rest)) = generators.split_first() else {
            return body(self);
        };
        let it = self.eval(&g.iter)?;
        let r = self.for_each(&it, |me, item| {
            me.assign(&g.target, item)?;
            for cond in &g.ifs {
                if !me.eval_truthy(cond)? {
                    return Ok(true);
                }
            }
            me.comprehension_level(rest, body)?;
            Ok(true)
        });
        match r {
            Ok(()) => Ok(()),
            Err(Ctl::Exc(e)) => Err(e.at(g.iter.span, &self.source)),
            Err(_) => Ok(()),
        }
    }

    fn eval_fstring(&mut self, parts: &[FStringPart]) -> Result<String, Exc> {
        let mut out = String::new();
        for p in parts {
            match p {
                FStringPart::Lit(s) => out.push_str(s),
                FStringPart::Expr {
                    expr,
                    conversion,
                    spec,
                    debug_text,
                } => {
                    let v = self.eval(expr)?;
                    if let Some(t) = debug_text {
                        out.push_str(t);
                    }
                    let spec = self.eval_fstring(spec)?;
                    let conv = match conversion {
                        Some('r') | Some('a') => Some(format::repr(self, &v)?),
                        Some(_) => Some(format::to_str(self, &v)?),
                        None if debug_text.is_some() && spec.is_empty() => {
                            Some(format::repr(self, &v)?)
                        }
                        None => None,
                    };
                    let s = match conv {
                        Some(s) => format::format_value(self, &Value::str(&s), &spec),
                        None => format::format_value(self, &v, &spec),
                    }
                    .map_err(|x| x.at(expr.span, &self.source))?;
                    out.push_str(&s);
                }
            }
        }
        Ok(out)
    }

    /// The value of a subscript: slices become `Value::Slice`-like tuples
    /// understood by `ops::get_item`.
    fn eval_index(&mut self, index: &Expr) -> Result<ops::Index, Exc> {
        match &index.kind {
            ExprKind::Tuple(items) if items.iter().any(is_slice_like) => {
                let mut out = Vec::with_capacity(items.len());
                for it in items {
                    out.push(self.eval_index_item(it)?);
                }
                Ok(ops::Index::Multi(out))
            }
            _ => Ok(ops::Index::Single(self.eval_index_item(index)?)),
        }
    }

    fn eval_index_item(&mut self, e: &Expr) -> Result<ops::IndexItem, Exc> {
        match &e.kind {
            ExprKind::Slice { lower, upper, step } => {
                let mut bound = |b: &Option<Box<Expr>>| -> Result<Option<Value>, Exc> {
                    b.as_ref().map(|x| self.eval(x)).transpose()
                };
                Ok(ops::IndexItem::Slice(
                    bound(lower)?,
                    bound(upper)?,
                    bound(step)?,
                ))
            }
            ExprKind::Ellipsis => Ok(ops::IndexItem::Ellipsis),
            _ => Ok(ops::IndexItem::Value(self.eval(e)?)),
        }
    }

    // ----------------------------------------------------------------------- calls

    fn eval_call(&mut self, func: &Expr, args: &[Arg]) -> Result<Value, Exc> {
        // Methods: evaluate the receiver once and call the attribute.
        let callee = self.eval(func)?;
        self.call_with_exprs(&callee, args, func.span)
    }

    fn call_with_exprs(&mut self, callee: &Value, args: &[Arg], _span: Span) -> Result<Value, Exc> {
        let mut a = self.eval_args(args)?;
        // `super()` in a method: the compiler's `__class__` cell and first argument, as CPython.
        if a.pos.is_empty() && a.kw.is_empty() {
            if let Value::Builtin(b) = callee {
                if b.name == "super"
                    && matches!(b.kind, BuiltinKind::Free(f) if std::ptr::fn_addr_eq(f, crate::modules::python::classes::super_fn as crate::object::value::BuiltinFn))
                {
                    a.pos = self.implicit_super_args()?;
                }
            }
        }
        self.call_value(callee, a)
    }

    fn eval_args(&mut self, args: &[Arg]) -> Result<Args, Exc> {
        let mut a = Args::default();
        for arg in args {
            match arg {
                Arg::Positional(e) => a.pos.push(self.eval(e)?),
                Arg::Keyword { name, value, span } => {
                    if a.kw.iter().any(|(k, _)| k == name) {
                        return Err(Exc::new(
                            ExcKind::SyntaxError,
                            format!("keyword argument repeated: {name}"),
                        )
                        .at(*span, &self.source));
                    }
                    let v = self.eval(value)?;
                    a.kw.push((name.clone(), v));
                }
                Arg::Star(e) => {
                    let v = self.eval(e)?;
                    a.pos
                        .extend(self.iterate(&v).map_err(|x| x.at(e.span, &self.source))?);
                }
                Arg::DoubleStar(e) => {
                    let v = self.eval(e)?;
                    let Value::Dict(d) = &v else {
                        return Err(Exc::type_error(format!(
                            "argument after ** must be a dict, not {}",
                            v.type_name()
                        ))
                        .at(e.span, &self.source));
                    };
                    for (k, val) in d.borrow().entries.iter() {
                        let Value::Str(k) = k else {
                            return Err(Exc::type_error("keywords must be strings")
                                .at(e.span, &self.source));
                        };
                        a.kw.push((k.clone(), val.clone()));
                    }
                }
            }
        }
        Ok(a)
    }

    /// Call any callable value.
    pub fn call_value(&mut self, callee: &Value, mut args: Args) -> Result<Value, Exc> {
        match callee {
            Value::Builtin(b) => {
                args.fname = b.name;
                match &b.kind {
                    BuiltinKind::Free(f) | BuiltinKind::Unbound(f) => f(self, args),
                    BuiltinKind::Method { receiver, f } => f(self, receiver, args),
                }
            }
            Value::Func(f) => self.call_function(f, args),
            Value::Type(t) => builtins::call_type(self, *t, args),
            Value::ExcType(k) => {
                // str(e): the one argument (a KeyError's as a repr: `KeyError: 'k'`), or the
                // tuple of them.
                let msg = match args.pos.as_slice() {
                    [] => String::new(),
                    [v] if *k == ExcKind::KeyError => format::repr(self, v)?,
                    [v] => format::to_str(self, v)?,
                    several => format::repr(self, &Value::tuple(several.to_vec()))?,
                };
                // Its identity from the start, so `raise e` ... `except E as f` gives `f is e`.
                let links = crate::object::error::ExcLinks {
                    serial: crate::object::error::fresh_serial(),
                    ..Default::default()
                };
                Ok(Value::Exception(Rc::new(ExcValue {
                    kind: *k,
                    message: msg,
                    args: Some(Rc::new(args.pos)),
                    links: Some(Box::new(links)),
                })))
            }
            Value::Class(c) => crate::object::class::instantiate(self, c, args),
            Value::Method(m) => {
                args.pos.insert(0, m.receiver.clone());
                let f = m.func.clone();
                self.call_value(&f, args)
            }
            Value::Instance(_) => {
                match crate::object::class::special_method(self, callee, "__call__")? {
                    Some(f) => self.call_value(&f, args),
                    None => Err(Exc::type_error(format!(
                        "'{}' object is not callable",
                        callee.type_name()
                    ))),
                }
            }
            Value::Object(o) if o.get_attr(o, "__call__").is_some() => {
                let f = o.get_attr(o, "__call__").unwrap_or(Value::None);
                self.call_value(&f, args)
            }
            other => Err(Exc::type_error(format!(
                "'{}' object is not callable",
                other.type_name()
            ))),
        }
    }

    pub fn call_function(&mut self, f: &Rc<Function>, args: Args) -> Result<Value, Exc> {
        if self.depth >= MAX_CALL_DEPTH {
            return Err(Exc::new(
                ExcKind::RecursionError,
                format!("maximum recursion depth exceeded ({MAX_CALL_DEPTH} nested calls)"),
            ));
        }
        let mut scope = self.bind_params(f, args)?;
        scope.function = Some(f.clone());
        // A generator expression is a comprehension: its `:=` binds in the scope around it.
        scope.comprehension = &*f.name == "<genexpr>";
        scope.caller = self.env.as_ref().map(Rc::downgrade);
        let env = Rc::new(RefCell::new(scope));
        if matches!(&f.body, FunctionBody::Def(d) if d.is_generator) {
            return Ok(self.make_generator(f, env));
        }
        let saved_env = self.env.replace(env);
        let saved_source = std::mem::replace(&mut self.source, f.source.clone());
        let saved_module = std::mem::replace(
            &mut self.module,
            f.module.as_ref().and_then(|m| m.upgrade()),
        );
        // A failed fusion attempt's record belongs to the caller's expression: the body (maybe
        // run again by the same expression) must not read leaves computed for another call.
        let saved_fusion = self.fuse_fallback.take();
        self.depth += 1;
        let result = match &f.body {
            FunctionBody::Def(def) => match self.exec_block(&def.body) {
                Ok(()) => Ok(Value::None),
                Err(Ctl::Return(v)) => Ok(v),
                Err(Ctl::Exc(e)) => Err(*e),
                Err(Ctl::Break) | Err(Ctl::Continue) => Err(Exc::new(
                    ExcKind::SyntaxError,
                    "'break' or 'continue' outside loop",
                )),
            },
            FunctionBody::Lambda(body) => self.eval(body),
        };
        self.depth -= 1;
        self.fuse_fallback = saved_fusion;
        self.module = saved_module;
        let source = std::mem::replace(&mut self.source, saved_source);
        self.env = saved_env;
        // The call's locals went with its scope: a generator they held suspended is closed
        // now, before the caller goes on (CPython clears the frame at the return), and an
        // error doing so is reported at the caller's statement, as CPython's.
        if crate::object::finalize::pending() {
            self.run_finalizers(self.stmt);
        }
        result.map_err(|mut e| {
            // Record this call level and let the caller's expression set its own span.
            if let (Some(span), Some(src)) = (e.span.take(), e.source.take()) {
                e.frames.insert(
                    0,
                    Frame {
                        function: f.name.clone(),
                        source: src,
                        span,
                    },
                );
            } else {
                let _ = source;
            }
            e
        })
    }

    /// Binds a call's arguments to `f`'s parameters in CPython's order (`initialize_locals`):
    /// positional ones, `*args`, keywords, then what is missing; each error in CPython's words,
    /// naming the function by its `__qualname__`.
    fn bind_params(&mut self, f: &Function, args: Args) -> Result<Scope, Exc> {
        let locals = match &f.body {
            FunctionBody::Def(d) => d.locals,
            FunctionBody::Lambda(_) => f.params.len(),
        };
        let mut scope = Scope {
            parent: f.closure.clone(),
            vars: Vars::with_capacity(locals),
            ..Scope::default()
        };
        let Args { pos, mut kw, .. } = args;
        let params = &*f.params;
        // The common call: every parameter given by position, nothing else to check.
        if kw.is_empty()
            && pos.len() == params.len()
            && params
                .iter()
                .all(|p| p.kind == ParamKind::Normal && p.passed != Passed::KeywordOnly)
        {
            for (p, v) in params.iter().zip(pos) {
                scope.vars.insert(p.name.clone(), v);
            }
            return Ok(scope);
        }
        let given = pos.len();
        let mut pos = pos.into_iter();
        // Each parameter's value by index; None while not given.
        let mut slots: smallvec::SmallVec<[Option<Value>; 8]> =
            (0..params.len()).map(|_| None).collect();
        let (mut varargs, mut kwargs, mut argcount) = (false, false, 0);
        for (slot, p) in slots.iter_mut().zip(params) {
            match p.kind {
                ParamKind::VarArgs => varargs = true,
                ParamKind::KwArgs => kwargs = true,
                ParamKind::Normal if p.passed != Passed::KeywordOnly => {
                    argcount += 1;
                    *slot = pos.next();
                }
                ParamKind::Normal => {}
            }
        }
        let rest: Vec<Value> = pos.collect();
        let mut kwdict = kwargs.then(Dict::default);
        for i in 0..kw.len() {
            let v = std::mem::replace(&mut kw[i].1, Value::None);
            let k = &kw[i].0;
            let found = params.iter().position(|p| {
                p.kind == ParamKind::Normal && p.passed != Passed::PositionalOnly && p.name == *k
            });
            match (found, &mut kwdict) {
                (Some(j), _) => {
                    if slots[j].is_some() {
                        return Err(Exc::type_error(format!(
                            "{}() got multiple values for argument '{k}'",
                            f.qualname()
                        )));
                    }
                    slots[j] = Some(v);
                }
                (None, Some(d)) => {
                    d.insert(
                        crate::object::value::HashKey::Str(k.clone()),
                        Value::Str(k.clone()),
                        v,
                    );
                }
                (None, None) => {
                    let posonly: Vec<&str> = kw
                        .iter()
                        .filter(|(k, _)| {
                            params.iter().any(|p| {
                                p.passed == Passed::PositionalOnly
                                    && p.kind == ParamKind::Normal
                                    && p.name == *k
                            })
                        })
                        .map(|(k, _)| &**k)
                        .collect();
                    return Err(Exc::type_error(if posonly.is_empty() {
                        format!(
                            "{}() got an unexpected keyword argument '{k}'",
                            f.qualname()
                        )
                    } else {
                        format!(
                            "{}() got some positional-only arguments passed as keyword arguments: '{}'",
                            f.qualname(),
                            posonly.join(", ")
                        )
                    }));
                }
            }
        }
        let is_positional =
            |p: &Param| p.kind == ParamKind::Normal && p.passed != Passed::KeywordOnly;
        let has_default = |i: usize| f.defaults.get(i).is_some_and(Option::is_some);
        if !rest.is_empty() && !varargs {
            let defcount = (0..params.len())
                .filter(|&i| is_positional(&params[i]) && has_default(i))
                .count();
            let kwonly_given = (0..params.len())
                .filter(|&i| params[i].passed == Passed::KeywordOnly && slots[i].is_some())
                .count();
            let s = |n: usize| if n == 1 { "" } else { "s" };
            let (sig, plural) = if defcount > 0 {
                (format!("from {} to {argcount}", argcount - defcount), true)
            } else {
                (argcount.to_string(), argcount != 1)
            };
            let kwonly = if kwonly_given > 0 {
                format!(
                    " positional argument{} (and {kwonly_given} keyword-only argument{})",
                    s(given),
                    s(kwonly_given)
                )
            } else {
                String::new()
            };
            return Err(Exc::type_error(format!(
                "{}() takes {sig} positional argument{} but {given}{kwonly} {} given",
                f.qualname(),
                if plural { "s" } else { "" },
                if given == 1 && kwonly_given == 0 {
                    "was"
                } else {
                    "were"
                }
            )));
        }
        // Positional parameters first, then keyword-only ones, as CPython reports them.
        for kind_kwonly in [false, true] {
            let mut missing = Vec::new();
            for (i, p) in params.iter().enumerate() {
                if p.kind != ParamKind::Normal
                    || (p.passed == Passed::KeywordOnly) != kind_kwonly
                    || slots[i].is_some()
                {
                    continue;
                }
                match f.defaults.get(i).cloned().flatten() {
                    Some(d) => slots[i] = Some(d),
                    None => missing.push(format!("'{}'", p.name)),
                }
            }
            if !missing.is_empty() {
                let n = missing.len();
                let names = match n {
                    1 => missing.remove(0),
                    2 => missing.join(" and "),
                    _ => {
                        let last = missing.pop().unwrap_or_default();
                        format!("{}, and {last}", missing.join(", "))
                    }
                };
                return Err(Exc::type_error(format!(
                    "{}() missing {n} required {} argument{}: {names}",
                    f.qualname(),
                    if kind_kwonly {
                        "keyword-only"
                    } else {
                        "positional"
                    },
                    if n == 1 { "" } else { "s" },
                )));
            }
        }
        // In CPython's order of locals: the named parameters, then `*args`, then `**kwargs`.
        let mut rest = Some(rest);
        let mut packed = None;
        for (p, slot) in params.iter().zip(slots) {
            match p.kind {
                ParamKind::Normal => {
                    scope
                        .vars
                        .insert(p.name.clone(), slot.unwrap_or(Value::None));
                }
                ParamKind::VarArgs => {
                    let v = Value::tuple(rest.take().unwrap_or_default());
                    packed = Some((p.name.clone(), v));
                }
                ParamKind::KwArgs => {
                    if let Some((name, v)) = packed.take() {
                        scope.vars.insert(name, v);
                    }
                    let d = kwdict.take().unwrap_or_default();
                    scope
                        .vars
                        .insert(p.name.clone(), Value::Dict(Rc::new(RefCell::new(d))));
                }
            }
        }
        if let Some((name, v)) = packed {
            scope.vars.insert(name, v);
        }
        Ok(scope)
    }

    // ------------------------------------------------------------------- iteration

    /// Run `f` for each item of an iterable; `f` returns false to stop.
    pub fn for_each(
        &mut self,
        iterable: &Value,
        mut f: impl FnMut(&mut Self, Value) -> Result<bool, Ctl>,
    ) -> Result<(), Ctl> {
        if let Value::Range(start, stop, step) = *iterable {
            let mut i = start;
            while (step > 0 && i < stop) || (step < 0 && i > stop) {
                self.check_interrupt()?;
                if !f(self, Value::Int(i))? {
                    break;
                }
                // A range ending near the int limits must not step past them.
                let Some(next) = i.checked_add(step) else {
                    break;
                };
                i = next;
            }
            return Ok(());
        }
        if let Value::Generator(g) = iterable {
            loop {
                self.check_interrupt()?;
                let Some(item) = self.resume_generator(g, Value::None)? else {
                    break;
                };
                if !f(self, item)? {
                    break;
                }
            }
            return Ok(());
        }
        // An instance of a class with `__iter__` is drawn from one `__next__` at a time.
        if crate::object::class::has_special_methods(iterable) {
            let source = self.instance_iter(iterable)?;
            let Some(next) = next_method(self, &source)? else {
                return self.for_each(&source, f);
            };
            loop {
                self.check_interrupt()?;
                let item = match self.call_value(&next, Args::default()) {
                    Ok(v) => v,
                    Err(e) if e.kind == ExcKind::StopIteration => break,
                    Err(e) => return Err(e.into()),
                };
                if !f(self, item)? {
                    break;
                }
            }
            return Ok(());
        }
        // Native iterators with `__next__` (a DataLoader) are consumed one item at a time, so
        // a loop over a large data set never holds every batch at once.
        if let Some(next) = self.native_iterator(iterable)? {
            loop {
                self.check_interrupt()?;
                let item = match self.call_value(&next, Args::default()) {
                    Ok(v) => v,
                    Err(e) if e.kind == ExcKind::StopIteration => break,
                    Err(e) => return Err(e.into()),
                };
                if !f(self, item)? {
                    break;
                }
            }
            return Ok(());
        }
        if let Value::Set(s) = iterable {
            return crate::object::set::for_each(s, |item| {
                self.check_interrupt()?;
                f(self, item)
            });
        }
        let items = self.iterate(iterable)?;
        for item in items {
            self.check_interrupt()?;
            if !f(self, item)? {
                break;
            }
        }
        Ok(())
    }

    /// The `__next__` method of a native object's iterator, if it has one.
    pub(super) fn native_iterator(&mut self, iterable: &Value) -> Result<Option<Value>, Exc> {
        let Value::Object(o) = iterable else {
            return Ok(None);
        };
        let Some(iter) = o.get_attr(o, "__iter__") else {
            return Ok(None);
        };
        // Only objects that declare `__next__` on their class are lazy; calling `__iter__`
        // on the others is left to `iterate`.
        if o.get_attr(o, "__lazy_iter__").is_none() {
            return Ok(None);
        }
        let it_obj = self.call_value(&iter, Args::default())?;
        match &it_obj {
            Value::Object(i) => Ok(i.get_attr(i, "__next__")),
            _ => Ok(None),
        }
    }

    /// What an instance iterates over: its `__iter__`'s result, or for a class with only
    /// `__getitem__`, the items at 0, 1, ... up to the first IndexError (the old protocol).
    pub(super) fn instance_iter(&mut self, v: &Value) -> Result<Value, Exc> {
        if let Some(r) = crate::object::class::call_special(self, v, "__iter__", Vec::new())? {
            // An `__iter__` that returns an object without `__next__` (itself, say) would
            // otherwise be iterated again, without end.
            if matches!(r, Value::Instance(_)) && next_method(self, &r)?.is_none() {
                return Err(Exc::type_error(format!(
                    "iter() returned non-iterator of type '{}'",
                    r.type_name()
                )));
            }
            return Ok(r);
        }
        if let Some(base) = crate::object::class::base_value(v) {
            return Ok(base);
        }
        if let Some(getitem) = crate::object::class::special_method(self, v, "__getitem__")? {
            let mut items = Vec::new();
            loop {
                self.check_interrupt()?;
                let i = Value::Int(items.len() as i64);
                match self.call_value(&getitem, Args::positional(vec![i])) {
                    Ok(x) => items.push(x),
                    Err(e) if e.kind == ExcKind::IndexError || e.kind == ExcKind::StopIteration => {
                        break
                    }
                    Err(e) => return Err(e),
                }
            }
            return Ok(Value::list(items));
        }
        Err(Exc::type_error(format!(
            "'{}' object is not iterable",
            v.type_name()
        )))
    }

    /// All items of an iterable, materialised.
    pub fn iterate(&mut self, v: &Value) -> Result<Vec<Value>, Exc> {
        if let Value::Generator(g) = v {
            return self.drain_generator(g);
        }
        if crate::object::class::has_special_methods(v) {
            let source = self.instance_iter(v)?;
            let Some(next) = next_method(self, &source)? else {
                return self.iterate(&source);
            };
            let mut items = Vec::new();
            loop {
                self.check_interrupt()?;
                match self.call_value(&next, Args::default()) {
                    Ok(item) => crate::object::alloc::push(&mut items, item)?,
                    Err(e) if e.kind == ExcKind::StopIteration => return Ok(items),
                    Err(e) => return Err(e),
                }
            }
        }
        Ok(match v {
            Value::List(l) => l.borrow().clone(),
            Value::Tuple(t) => t.as_ref().clone(),
            Value::Str(s) => s
                .chars()
                .map(|c| Value::str(c.encode_utf8(&mut [0; 4])))
                .collect(),
            Value::Dict(d) => d.borrow().entries.iter().map(|(k, _)| k.clone()).collect(),
            Value::Set(s) => s.table.borrow().values(),
            Value::Range(start, stop, step) => {
                let n = crate::object::value::range_len(*start, *stop, *step);
                if n > 100_000_000 {
                    return Err(Exc::new(
                        ExcKind::MemoryError,
                        format!("range of {n} items is too large to materialise; iterate it in a for loop instead"),
                    ));
                }
                let mut items = crate::object::alloc::vec(n as usize)?;
                items.extend((0..n).map(|i| Value::Int(start + i * step)));
                items
            }
            Value::Array(a) => crate::modules::array::arrays::iter_rows(a)?,
            Value::Object(o) => match o.get_attr(o, "__iter__") {
                Some(_) if o.get_attr(o, "__lazy_iter__").is_some() => {
                    let mut items = Vec::new();
                    if let Some(next) = self.native_iterator(v)? {
                        loop {
                            match self.call_value(&next, Args::default()) {
                                Ok(item) => crate::object::alloc::push(&mut items, item)?,
                                Err(e) if e.kind == ExcKind::StopIteration => break,
                                Err(e) => return Err(e),
                            }
                        }
                    }
                    items
                }
                Some(it) => {
                    let items = self.call_value(&it, Args::default())?;
                    return self.iterate(&items);
                }
                None => {
                    return Err(Exc::type_error(format!(
                        "'{}' object is not iterable",
                        o.type_name()
                    )))
                }
            },
            other => {
                return Err(Exc::type_error(format!(
                    "'{}' object is not iterable",
                    other.type_name()
                )))
            }
        })
    }

    // ------------------------------------------------------------------- programs

    /// Run a parsed program at top level. `display` is called for the value
    /// of each expression statement that the display policy selects.
    pub fn run_program(&mut self, program: &Program, display_last_only: bool) -> Result<(), Exc> {
        self.run_statements(program.body.iter(), display_last_only)
    }

    /// Runs statements as they come (a program parsed one statement at a time, each dropped
    /// once it has run); with `display_last_only`, only a final expression is displayed.
    pub fn run_statements<S: std::borrow::Borrow<Stmt>>(
        &mut self,
        statements: impl Iterator<Item = S>,
        display_last_only: bool,
    ) -> Result<(), Exc> {
        let mut statements = statements.peekable();
        while let Some(stmt) = statements.next() {
            let stmt = stmt.borrow();
            let show = !display_last_only || statements.peek().is_none();
            let r = match &stmt.kind {
                StmtKind::Expr(e) if show => {
                    self.check_interrupt()
                        .map_err(|x| x.at(stmt.span, &self.source))?;
                    let outer = self.stmt.replace(stmt.span);
                    let v = self.eval(e);
                    self.stmt = outer;
                    let v = v?;
                    if !matches!(v, Value::None) {
                        let data = format::display_data(self, &v)
                            .map_err(|x| x.at(stmt.span, &self.source))?;
                        self.out.display(&data, true);
                    }
                    Ok(())
                }
                _ => self.exec_stmt(stmt),
            };
            if crate::object::finalize::pending() {
                self.run_finalizers(Some(stmt.span));
            }
            match r {
                Ok(()) => {}
                Err(Ctl::Exc(e)) => return Err(*e),
                Err(Ctl::Break) | Err(Ctl::Continue) => {
                    return Err(Exc::new(ExcKind::SyntaxError, "'break' outside loop")
                        .at(stmt.span, &self.source))
                }
                Err(Ctl::Return(_)) => {
                    return Err(Exc::new(ExcKind::SyntaxError, "'return' outside function")
                        .at(stmt.span, &self.source))
                }
            }
        }
        Ok(())
    }
}

fn join_path(path: &[Ident]) -> String {
    path.iter().map(|p| &**p).collect::<Vec<_>>().join(".")
}

fn is_slice_like(e: &Expr) -> bool {
    matches!(e.kind, ExprKind::Slice { .. } | ExprKind::Ellipsis)
        || matches!(&e.kind, ExprKind::None)
}

impl Interpreter for Interp<'_> {
    fn current_scope(&self) -> Option<crate::object::state::Env> {
        self.env.clone()
    }

    fn statement_line(&self) -> Option<(Option<Rc<str>>, usize, String)> {
        let span = self.stmt?;
        let before = self.source.get(..span.start)?;
        let line = before.matches('\n').count() + 1;
        let start = before.rfind('\n').map_or(0, |i| i + 1);
        let text = self.source[start..]
            .lines()
            .next()
            .unwrap_or("")
            .to_string();
        let file = self.module.as_ref().and_then(|m| match &m.get("__file__") {
            Some(Value::Str(s)) => Some(s.clone()),
            _ => None,
        });
        Some((file, line, text))
    }

    fn handled(&self) -> Option<Value> {
        self.handling.as_deref().map(exception_value)
    }

    fn import(&mut self, dotted: &str) -> Result<Rc<crate::object::value::Module>, Exc> {
        modules::import(self, dotted)
    }

    fn gen_resume(
        &mut self,
        g: &Rc<crate::object::value::Generator>,
        action: crate::object::value::GenAction,
    ) -> Result<crate::object::value::GenStep, Exc> {
        Interp::gen_resume(self, g, action)
    }
    fn state(&self) -> &State {
        self.st
    }
    fn state_mut(&mut self) -> &mut State {
        self.st
    }
    fn out(&mut self) -> &mut dyn OutputSink {
        self.out
    }
    fn call_value(&mut self, callee: &Value, args: Args) -> Result<Value, Exc> {
        Interp::call_value(self, callee, args)
    }
    fn iterate(&mut self, v: &Value) -> Result<Vec<Value>, Exc> {
        Interp::iterate(self, v)
    }
    fn for_each_item(
        &mut self,
        v: &Value,
        f: &mut dyn FnMut(&mut dyn Interpreter, Value) -> Result<bool, Exc>,
    ) -> Result<(), Exc> {
        match self.for_each(v, |me, item| f(me, item).map_err(Ctl::from)) {
            Ok(()) => Ok(()),
            Err(Ctl::Exc(e)) => Err(*e),
            // `f` only returns exceptions; loop control never leaves it.
            Err(_) => Ok(()),
        }
    }
    fn get_attr(&mut self, v: &Value, name: &str) -> Result<Value, Exc> {
        builtins::get_attr(self, v, name)
    }
    /// Parse and run `code` (the argument of a magic) in the current session.
    /// Returns the value of a final expression statement.
    fn run_module(
        &mut self,
        module: &Rc<crate::object::value::Module>,
        source: &str,
    ) -> Result<Option<Value>, Exc> {
        // A module's body runs at its own top level: no enclosing function, its own globals.
        let saved_env = self.env.take();
        let saved_module = self.module.replace(module.clone());
        let file = match &module.get("__file__") {
            Some(Value::Str(f)) => Some(f.clone()),
            _ => None,
        };
        let result = self.run_source(source, file);
        self.module = saved_module;
        self.env = saved_env;
        result.map_err(|mut e| {
            if let (Some(span), Some(src)) = (e.span.take(), e.source.take()) {
                e.frames.insert(
                    0,
                    Frame {
                        function: Rc::from("<module>"),
                        source: src,
                        span,
                    },
                );
            }
            e
        })
    }

    fn run_snippet(&mut self, code: &str) -> Result<Option<Value>, Exc> {
        self.run_source(code, None)
    }
    fn check_interrupt(&mut self) -> Result<(), Exc> {
        Interp::check_interrupt(self)
    }
}

impl Interp<'_> {
    /// Parse and run `code`, the text of `file` when it has one (tracebacks name it).
    fn run_source(&mut self, code: &str, file: Option<Rc<str>>) -> Result<Option<Value>, Exc> {
        // Enough stack for the parser's bounded nesting, on a generator's stack too.
        let parsed = crate::object::stack::maybe_grow(256 * 1024, 4 * 1024 * 1024, || {
            crate::lang::parse(code)
        });
        let program = parsed.map_err(|e| {
            let kind = if e.too_deep {
                ExcKind::RecursionError
            } else {
                ExcKind::SyntaxError
            };
            let mut x = Exc::new(kind, e.message);
            x.span = Some(e.span);
            x.source = Some(Rc::from(code));
            x
        })?;
        let source: Rc<str> = Rc::from(code);
        if let Some(file) = file {
            crate::object::traceback::name_source(&source, file);
        }
        let saved = std::mem::replace(&mut self.source, source);
        let mut last = None;
        let mut result = Ok(());
        for stmt in &program.body {
            match &stmt.kind {
                crate::lang::ast::StmtKind::Expr(e) => match self.eval(e) {
                    Ok(v) => last = Some(v),
                    Err(x) => {
                        result = Err(x);
                        break;
                    }
                },
                _ => {
                    last = None;
                    if let Err(c) = self.exec_stmt(stmt) {
                        result = Err(match c {
                            Ctl::Exc(e) => *e,
                            _ => Exc::new(
                                ExcKind::SyntaxError,
                                "'break', 'continue' or 'return' outside a loop or function",
                            ),
                        });
                        break;
                    }
                }
            }
        }
        self.source = saved;
        result.map(|()| last)
    }
}

pub fn name_error(name: &str) -> Exc {
    Exc::new(ExcKind::NameError, format!("name '{name}' is not defined"))
}

impl Interp<'_> {
    /// The error for a name that [`Interp::lookup_name`] did not find, in CPython's words:
    /// a local of the running function not bound yet, a free variable of an enclosing one,
    /// or a name defined nowhere.
    pub fn missing_name(&self, name: &str) -> Exc {
        match self.env.as_ref().map(|env| resolve_in_scopes(env, name)) {
            Some(Resolved::Unbound { innermost: true }) => Exc::new(
                ExcKind::UnboundLocalError,
                format!("cannot access local variable '{name}' where it is not associated with a value"),
            ),
            Some(Resolved::Unbound { innermost: false }) => Exc::new(
                ExcKind::NameError,
                format!("cannot access free variable '{name}' where it is not associated with a value in enclosing scope"),
            ),
            _ => match self.nearest_name(name) {
                Some(found) => name_error(name)
                    .suggesting(crate::object::error::Suggestion::Found(found)),
                None => name_error(name),
            },
        }
    }

    /// CPython 3.11's search for a NameError's hint: the running function's locals, then the
    /// globals, then the built-ins, each on its own.
    fn nearest_name(&self, name: &str) -> Option<Rc<str>> {
        use crate::object::suggest::nearest;
        let locals: Vec<Rc<str>> = self
            .env
            .as_ref()
            .and_then(|env| env.borrow().function.clone())
            .and_then(|f| match &f.body {
                FunctionBody::Def(d) => Some(d.local_names.to_vec()),
                FunctionBody::Lambda(_) => None,
            })
            .unwrap_or_default();
        let globals: Vec<Rc<str>> = match &self.module {
            Some(m) => m.names(),
            None => self.st.globals.keys().cloned().collect(),
        };
        let mut builtins: Vec<Rc<str>> = self.st.builtins.keys().cloned().collect();
        builtins.sort_unstable();
        [locals, globals, builtins].iter().find_map(|names| {
            let refs: Vec<&str> = names.iter().map(|n| &**n).collect();
            nearest(name, &refs).map(Rc::from)
        })
    }
}

/// Does an exception of `kind` match the `except` clause value `clause`?
/// The value `except E as e` binds: the user instance, or the built-in exception as a value.
/// An entered context manager: what leaving it calls.
pub(super) enum Entered {
    /// A built-in object's `exit`.
    Native(Rc<dyn crate::object::value::NativeObject>),
    /// A class instance's bound `__exit__`.
    Exit(Value),
}

/// An exception raised again (`raise e`, `raise X from e`) goes on from where it had been, as
/// CPython's traceback keeps its entries: the new place comes first, then those.
fn resume_trace(e: &mut Exc) {
    if let Some(trace) = e.links.as_ref().and_then(|l| l.trace.as_deref()) {
        e.frames = trace.to_vec();
    }
}

pub(super) fn exception_value(exc: &Exc) -> Value {
    crate::object::error::value_of(exc)
}

pub(super) fn exc_matches(exc: &Exc, clause: &Value) -> Result<bool, Exc> {
    match clause {
        Value::ExcType(k) => Ok(exc.kind.is_subclass_of(*k)),
        Value::Class(c) if c.exception_base().is_some() => Ok(match &exc.instance {
            Some(i) => i.class().is_subclass_of(clause),
            None => false,
        }),
        Value::Tuple(items) => {
            for it in items.iter() {
                if exc_matches(exc, it)? {
                    return Ok(true);
                }
            }
            Ok(false)
        }
        _ => Err(Exc::type_error(
            "catching classes that do not inherit from BaseException is not allowed",
        )),
    }
}

/// The name a (possibly decorated) definition binds.
fn decorated_name(stmt: &Stmt) -> Option<&Ident> {
    match &stmt.kind {
        StmtKind::Def(d) => Some(&d.name),
        StmtKind::Class(c) => Some(&c.name),
        StmtKind::Decorated { def, .. } => decorated_name(def),
        _ => None,
    }
}

/// The `__next__` of an iterator object (an instance whose class defines it, or a native
/// iterator); None for a plain iterable such as a list.
pub fn next_method(it: &mut dyn Interpreter, v: &Value) -> Result<Option<Value>, Exc> {
    match v {
        Value::Generator(_) => {
            Ok(crate::modules::python::builtins::get_attr(it, v, "__next__").ok())
        }
        Value::Instance(_) => crate::object::class::special_method(it, v, "__next__"),
        Value::Object(o) => Ok(o.get_attr(o, "__next__")),
        _ => Ok(None),
    }
}
