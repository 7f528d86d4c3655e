//! Generators: a function whose body has `yield` runs lazily, one item per `next`.
//!
//! A body whose every `yield` is a statement (every generator expression, and every body whose
//! `yield`s inside expressions `lang::lower` hoisted), in any blocks but function and class
//! definitions, runs stackless (`resumable.rs`): a suspended one holds only its scope and
//! cursors. Any other body (`lang::lower` lists what it leaves) runs as an ordinary function
//! body, through the usual tree walker, on a native stack of its own: a stackful coroutine
//! (`corosensei`). A `yield` anywhere an expression may stand suspends the coroutine there, with all the Rust frames of the walk
//! kept on its stack; the next resume returns from the `yield` with the sent value, or raises
//! the thrown exception (`throw`) or GeneratorExit (`close`) at that point, so `finally` blocks
//! and `__exit__` run as in CPython. So a generator over a data set holds one item at a time.
//!
//! The body's interpreter (`Interp`) lives on the coroutine's stack. What it borrows from the
//! session (the state, the output sink) is handed in by each resume ([`Resume`]) and replaced
//! at the `yield` as the body continues: a generator made in one cell may be resumed in
//! another, by another `Interp`. The resumer is blocked in `resume` while the body runs, so the
//! two never use them at once. The call depth is counted from the resumer's depth on each
//! resume, so recursion through generators meets the same RecursionError as calls.
//!
//! A consumer that takes every item with nothing in between (`iterate`: `list(g)`, `sum(g)`)
//! drains the generator in one resume: each `yield` pushes its value and the body goes on, with
//! no stack switch per item. A `for` loop runs its body between items, so it switches twice per
//! item; a switch costs little but the returns after it miss the CPU's return predictor, which
//! makes a tight loop over a trivial generator slower than the old stepper did.
//!
//! Stacks come from a per-thread pool (`object::stack`), so a generator expression maps no
//! memory; deep recursion inside a body maps segments beyond it. The coroutine is made at the
//! first resume. A suspended generator that is dropped is closed, as CPython closes it: its
//! state is queued (`object::finalize`) and `run_finalizers` closes it after the statement or
//! call that dropped it; what is left of a coroutine after that is unwound by `corosensei` (its
//! Rust frames' values are freed; this needs panic=unwind).
//!
//! Generator expressions are parsed as the generator function Python compiles them to
//! (`lang::parser::generator_expression`).

use std::cell::{Cell, RefCell};
use std::rc::Rc;

use corosensei::{Coroutine, CoroutineResult, Yielder};

use crate::lang::ast::FuncDef;
use crate::lang::Span;
use crate::object::error::{Exc, ExcKind, Frame};
use crate::object::finalize;
use crate::object::stack::{self, BoundsGuard, PooledStack};
use crate::object::value::{Args, Function, FunctionBody, GenAction, GenStep, Generator, Value};
use crate::object::{Env, OutputSink, State};

use super::interp::{Ctl, Interp, MAX_CALL_DEPTH};
use super::resumable::Flat;

/// What a resume hands into the coroutine: the interpreter it runs under now and what the
/// `yield` does.
pub(super) struct Resume {
    interp: *mut Interp<'static>,
    action: GenAction,
    /// Not null when the resumer drains the generator (`iterate`): each `yield` pushes its
    /// value here and the body goes on without switching stacks.
    drain: *mut Vec<Value>,
}

/// What the body ends with is boxed: each switch moves the yield/return value.
type Coro = Coroutine<Resume, Value, Result<Value, Box<Exc>>, PooledStack>;

/// What the interpreter running a generator's body keeps to suspend it.
pub(super) struct GenLink {
    /// On the coroutine's stack, below every frame of the body.
    yielder: *const Yielder<Resume, Value>,
    /// The depth the body runs at in this resume (the resumer's + 1).
    base: usize,
    /// `Resume::drain` of the current resume.
    drain: *mut Vec<Value>,
}

/// A generator's suspended execution (what `Generator::state` holds).
enum GenState {
    /// Not started yet: the coroutine and its stack are made at the first resume.
    Created { func: Rc<Function>, env: Env },
    /// Boxed: most generators are stackless, and a `GenState` is in each of them.
    Suspended(Box<Suspended>),
    /// Between states, while the first resume builds the next one.
    Empty,
    /// A body the stackless runner handles, started.
    Flat(Flat),
}

struct Suspended {
    coro: Option<Coro>,
    /// The stack's bounds, recorded while it is unwound (`object::stack`).
    bounds: (usize, usize),
}

impl Drop for Suspended {
    fn drop(&mut self) {
        if let Some(coro) = self.coro.take() {
            // Dropping a suspended coroutine unwinds its stack, which runs on that stack.
            let _restore = BoundsGuard::save();
            stack::set_bounds(self.bounds);
            drop(coro);
        }
    }
}

impl GenState {
    /// Whether closing it can run anything: a started body not at its end (a stackless one
    /// only inside a `try` or `with`).
    fn needs_close(&self) -> bool {
        match self {
            GenState::Created { .. } | GenState::Empty => false,
            GenState::Suspended(s) => s.coro.as_ref().is_some_and(|c| c.started() && !c.done()),
            GenState::Flat(f) => f.needs_close(),
        }
    }
}

/// Where a `for` loop or `yield from` draws its items from, one at a time.
pub(super) enum Source {
    Items(std::vec::IntoIter<Value>),
    Range {
        next: i64,
        stop: i64,
        step: i64,
    },
    /// An iterator object and its `__next__`.
    Next {
        obj: Value,
        next: Value,
    },
    Gen(Rc<Generator>),
}

/// One draw from a source: an item, or the end with its value (`StopIteration.value`).
pub(super) enum Drawn {
    Item(Value),
    Done(Value),
}

/// What a `yield from` delegates to, and its iterator's type name for errors.
pub(super) struct Delegate {
    source: Source,
    type_name: String,
}

fn lost() -> Exc {
    Exc::new(
        ExcKind::RuntimeError,
        "internal error: a generator lost its state",
    )
}

/// The body of a generator, run on its coroutine's stack.
fn run_body(
    yielder: &Yielder<Resume, Value>,
    first: Resume,
    func: Rc<Function>,
    def: Rc<FuncDef>,
    env: Env,
    bounds: (usize, usize),
) -> Result<Value, Box<Exc>> {
    stack::set_bounds(bounds);
    // SAFETY: `first.interp` is the resumer, blocked in `Coroutine::resume` until the body
    // suspends or ends; its state and sink are used only by the body until then, and are
    // replaced at each `yield` by the next resumer's (`Interp::suspend`).
    let outer = unsafe { &mut *first.interp };
    let (st, out) = unsafe {
        (
            &mut *(&mut *outer.st as *mut State),
            &mut *(&mut *outer.out as *mut dyn OutputSink),
        )
    };
    let depth = outer.depth + 1;
    let mut me = Interp::new(st, out, func.source.clone());
    me.env = Some(env);
    me.module = func.module.as_ref().and_then(|m| m.upgrade());
    me.depth = depth;
    me.gen = Some(GenLink {
        yielder,
        base: depth,
        drain: first.drain,
    });
    match me.exec_block(&def.body) {
        Ok(()) => Ok(Value::None),
        Err(Ctl::Return(v)) => Ok(v),
        Err(Ctl::Exc(e)) => Err(e),
        Err(Ctl::Break) | Err(Ctl::Continue) => Err(Box::new(Exc::new(
            ExcKind::SyntaxError,
            "'break' or 'continue' outside loop",
        ))),
    }
}

impl Interp<'_> {
    /// Calling a generator function: binds the arguments and returns the generator, not started.
    pub(super) fn make_generator(&mut self, f: &Rc<Function>, env: Env) -> Value {
        Value::Generator(Rc::new(Generator {
            name: f.name.clone(),
            state: RefCell::new(Some(Box::new(GenState::Created {
                func: f.clone(),
                env,
            }))),
            finished: Cell::new(false),
        }))
    }

    /// `next(g)` / `g.send(v)` for the interpreter's own loops: None once `g` is exhausted.
    #[inline]
    pub fn resume_generator(
        &mut self,
        g: &Rc<Generator>,
        sent: Value,
    ) -> Result<Option<Value>, Exc> {
        match self.gen_resume(g, GenAction::Send(sent))? {
            GenStep::Yield(v) => Ok(Some(v)),
            GenStep::Return(_) => Ok(None),
        }
    }

    /// Resumes `g` at its `yield` and runs it to the next one or to its end, as CPython's
    /// `send`/`throw`/`close` do.
    pub fn gen_resume(&mut self, g: &Rc<Generator>, action: GenAction) -> Result<GenStep, Exc> {
        self.resume_with(g, action, std::ptr::null_mut())
    }

    /// Every remaining item of `g` (`list(g)`, `sum(g)`): the body runs to its end in one
    /// resume, its `yield`s collecting the items, since nothing runs between them anyway
    /// (what `next` would do item by item, without a stack switch per item).
    pub(super) fn drain_generator(&mut self, g: &Rc<Generator>) -> Result<Vec<Value>, Exc> {
        let mut items = Vec::new();
        loop {
            let step = self.resume_with(g, GenAction::Send(Value::None), &mut items)?;
            match step {
                GenStep::Yield(v) => crate::object::alloc::push(&mut items, v)?,
                GenStep::Return(_) => return Ok(items),
            }
        }
    }

    fn resume_with(
        &mut self,
        g: &Rc<Generator>,
        action: GenAction,
        drain: *mut Vec<Value>,
    ) -> Result<GenStep, Exc> {
        if g.finished.get() {
            return match action {
                GenAction::Throw(e) => Err(*e),
                GenAction::Send(_) | GenAction::Close => Ok(GenStep::Return(Value::None)),
            };
        }
        if self.depth >= MAX_CALL_DEPTH && g.state.try_borrow().is_ok_and(|s| s.is_some()) {
            return Err(Exc::new(
                ExcKind::RecursionError,
                format!("maximum recursion depth exceeded ({MAX_CALL_DEPTH} nested calls)"),
            ));
        }
        let Some(boxed) = g.state.borrow_mut().take() else {
            return Err(Exc::value_error("generator already executing"));
        };
        let Ok(mut st) = boxed.downcast::<GenState>() else {
            return Err(lost());
        };
        let closing = matches!(action, GenAction::Close);
        if let GenState::Created { .. } = &*st {
            match action {
                GenAction::Send(Value::None) => {}
                GenAction::Send(_) => {
                    *g.state.borrow_mut() = Some(st);
                    return Err(Exc::type_error(
                        "can't send non-None value to a just-started generator",
                    ));
                }
                GenAction::Throw(e) => {
                    g.finished.set(true);
                    return Err(*e);
                }
                GenAction::Close => {
                    g.finished.set(true);
                    return Ok(GenStep::Return(Value::None));
                }
            }
            let GenState::Created { func, env } = std::mem::replace(&mut *st, GenState::Empty)
            else {
                return Err(lost());
            };
            let FunctionBody::Def(def) = &func.body else {
                return Err(lost());
            };
            if def.resumable {
                *st = GenState::Flat(Flat::new(func, env));
            } else {
                let stack = match PooledStack::take() {
                    Ok(s) => s,
                    Err(e) => {
                        *st = GenState::Created { func, env };
                        *g.state.borrow_mut() = Some(st);
                        return Err(Exc::new(
                            ExcKind::MemoryError,
                            format!(
                                "cannot start generator '{}': the system refused a stack for it ({e}); too many generators are suspended at once",
                                g.name
                            ),
                        ));
                    }
                };
                let bounds = stack.bounds();
                let def = def.clone();
                let coro = Coro::with_stack(stack, move |y, first| {
                    run_body(y, first, func, def, env, bounds)
                });
                *st = GenState::Suspended(Box::new(Suspended {
                    coro: Some(coro),
                    bounds,
                }));
            }
        }
        // The state stays in its box across resumes (no allocation per item).
        let result = match &mut *st {
            GenState::Flat(flat) => match self.resume_flat(flat, action) {
                Ok(Some(v)) => CoroutineResult::Yield(v),
                Ok(None) => CoroutineResult::Return(Ok(Value::None)),
                Err(Ctl::Return(v)) => CoroutineResult::Return(Ok(v)),
                Err(Ctl::Exc(e)) => CoroutineResult::Return(Err(e)),
                Err(Ctl::Break | Ctl::Continue) => CoroutineResult::Return(Err(Box::new(
                    Exc::new(ExcKind::SyntaxError, "'break' or 'continue' outside loop"),
                ))),
            },
            GenState::Suspended(s) if s.coro.is_some() => {
                let Some(coro) = s.coro.as_mut() else {
                    return Err(lost());
                };
                let _restore = BoundsGuard::save();
                let me = (self as *mut Interp<'_>).cast::<Interp<'static>>();
                coro.resume(Resume {
                    interp: me,
                    action,
                    drain,
                })
            }
            _ => return Err(lost()),
        };
        match result {
            CoroutineResult::Yield(v) => {
                *g.state.borrow_mut() = Some(st);
                if closing {
                    return Err(Exc::new(
                        ExcKind::RuntimeError,
                        "generator ignored GeneratorExit",
                    ));
                }
                Ok(GenStep::Yield(v))
            }
            CoroutineResult::Return(r) => {
                g.finished.set(true);
                drop(st);
                match r {
                    Ok(_) if closing => Ok(GenStep::Return(Value::None)),
                    Ok(v) => Ok(GenStep::Return(v)),
                    Err(e)
                        if closing
                            && (e.kind == ExcKind::GeneratorExit
                                || e.kind.is_subclass_of(ExcKind::StopIteration)) =>
                    {
                        Ok(GenStep::Return(Value::None))
                    }
                    Err(e) => Err(left_generator(g, *e)),
                }
            }
        }
    }

    /// Suspends the generator whose body this interpreter runs, handing out `v`; what the
    /// next resume asks of the `yield`.
    // Inlined (with `yield_value` and `resume_generator`): each return that follows a stack
    // switch misses the CPU's return predictor.
    #[inline]
    fn suspend(&mut self, v: Value) -> Result<GenAction, Exc> {
        let Some(link) = &self.gen else {
            return Err(Exc::new(ExcKind::SyntaxError, "'yield' outside function"));
        };
        if !link.drain.is_null() {
            let drain = link.drain;
            // A `yield from` an endless iterator runs no statement: Ctrl-C is checked here.
            self.check_interrupt()?;
            // SAFETY: the draining resumer is blocked in `resume` and owns the vector.
            crate::object::alloc::push(unsafe { &mut *drain }, v)?;
            return Ok(GenAction::Send(Value::None));
        }
        let (yielder, base) = (link.yielder, link.base);
        let rel = self.depth.saturating_sub(base);
        let mine = stack::bounds();
        // SAFETY: the yielder is `run_body`'s argument, on this coroutine's stack below us.
        let resume = unsafe { &*yielder }.suspend(v);
        stack::set_bounds(mine);
        // SAFETY: as in `run_body`: the new resumer is blocked until the next suspend.
        let outer = unsafe { &mut *resume.interp };
        unsafe {
            self.st = &mut *(&mut *outer.st as *mut State);
            self.out = &mut *(&mut *outer.out as *mut dyn OutputSink);
        }
        let base = outer.depth + 1;
        if let Some(link) = &mut self.gen {
            link.base = base;
            link.drain = resume.drain;
        }
        self.depth = base + rel;
        Ok(resume.action)
    }

    /// `yield v`: what it evaluates to.
    #[inline]
    pub(super) fn yield_value(&mut self, v: Value) -> Result<Value, Exc> {
        match self.suspend(v)? {
            GenAction::Send(v) => Ok(v),
            GenAction::Throw(e) => Err(*e),
            GenAction::Close => Err(Exc::new(ExcKind::GeneratorExit, "")),
        }
    }

    /// `yield from v` (PEP 380): hands out `v`'s items, passing `send`, `throw` and `close`
    /// on to it; evaluates to what it returned.
    pub(super) fn yield_from(&mut self, v: Value, span: Span) -> Result<Value, Exc> {
        let mut d = self.delegate(v, span)?;
        let mut action = GenAction::Send(Value::None);
        loop {
            match self.delegate_step(&mut d, action)? {
                Drawn::Item(y) => action = self.suspend(y)?,
                Drawn::Done(r) => return Ok(r),
            }
        }
    }

    /// What `yield from v` draws from; `span` is `v`'s expression, where a non-iterable is
    /// reported.
    pub(super) fn delegate(&mut self, v: Value, span: Span) -> Result<Delegate, Exc> {
        let v = match &v {
            v if crate::object::class::has_special_methods(v) => self.instance_iter(v)?,
            _ => v,
        };
        let type_name = iterator_name(&v);
        Ok(Delegate {
            source: self.source_of(&v).map_err(|e| e.at(span, &self.source))?,
            type_name,
        })
    }

    /// Passes what the delegating `yield` was resumed with on to the delegate (the first
    /// draw passes `Send(None)`): its next item, or its end and return value.
    pub(super) fn delegate_step(
        &mut self,
        d: &mut Delegate,
        action: GenAction,
    ) -> Result<Drawn, Exc> {
        let source = &mut d.source;
        if let Source::Gen(g) = source {
            let g = g.clone();
            return match action {
                GenAction::Close => {
                    self.gen_resume(&g, GenAction::Close)?;
                    Err(Exc::new(ExcKind::GeneratorExit, ""))
                }
                GenAction::Throw(e) if e.kind == ExcKind::GeneratorExit => {
                    self.gen_resume(&g, GenAction::Close)?;
                    Err(*e)
                }
                other => Ok(match self.gen_resume(&g, other)? {
                    GenStep::Yield(y) => Drawn::Item(y),
                    GenStep::Return(r) => Drawn::Done(r),
                }),
            };
        }
        match action {
            GenAction::Send(Value::None) => self.draw(source),
            GenAction::Send(s) => match self.iter_method(source, "send")? {
                Some(m) => self.call_drawn(&m, vec![s]),
                None => Err(Exc::new(
                    ExcKind::AttributeError,
                    format!("'{}' object has no attribute 'send'", d.type_name),
                )),
            },
            GenAction::Throw(e) if e.kind != ExcKind::GeneratorExit => {
                match self.iter_method(source, "throw")? {
                    Some(m) => {
                        let ev = super::interp::exception_value(&e);
                        self.call_drawn(&m, vec![ev])
                    }
                    None => Err(*e),
                }
            }
            GenAction::Throw(e) => {
                self.close_source(source)?;
                Err(*e)
            }
            GenAction::Close => {
                self.close_source(source)?;
                Err(Exc::new(ExcKind::GeneratorExit, ""))
            }
        }
    }

    /// What a `for` loop over `v` draws from (an instance's `__iter__` is called first).
    pub(super) fn iter_source(&mut self, v: &Value) -> Result<Source, Exc> {
        match v {
            v if crate::object::class::has_special_methods(v) => {
                let it = self.instance_iter(v)?;
                self.source_of(&it)
            }
            _ => self.source_of(v),
        }
    }

    /// Closes the generators dropped while suspended (`object::finalize`), as CPython does when
    /// their last reference goes: called right after the statement at `span` that dropped
    /// them. An error is reported as CPython reports it ("Exception ignored in: ...") and the
    /// program goes on.
    pub(super) fn run_finalizers(&mut self, span: Option<Span>) {
        while let Some(d) = finalize::take() {
            let Ok(st) = d.state.downcast::<GenState>() else {
                continue;
            };
            if !st.needs_close() {
                continue;
            }
            let g = Rc::new(Generator {
                name: d.name.clone(),
                state: RefCell::new(Some(st)),
                finished: Cell::new(false),
            });
            let r = self.gen_resume(&g, GenAction::Close);
            // One close, as CPython's finaliser: a body that yields again is dropped as it is.
            g.finished.set(true);
            let rest = g.state.borrow_mut().take();
            drop(rest);
            if let Err(mut e) = r {
                // CPython's report of an unraisable error shows it alone, not its chain.
                e.links = None;
                let e = match span {
                    Some(span) if e.frames.is_empty() => e.at(span, &self.source),
                    _ => e,
                };
                let report = super::session::report(e, &self.source);
                self.out.stderr(&format!(
                    "Exception ignored in: <generator object {} at {:#x}>\n{report}\n",
                    d.name, d.addr
                ));
            }
        }
    }

    /// The end of a `for` loop that drew from `source` (not by an exception).
    pub(super) fn release_source(&mut self, source: Source) {
        if let Source::Gen(g) = source {
            self.release_iterable(Value::Generator(g));
        }
    }

    /// A `for` loop's generator that nothing else holds is closed when the loop ends (or
    /// breaks, or returns), as CPython's reference counting does: its `finally` blocks and
    /// `with` exits run now.
    pub(super) fn release_iterable(&mut self, v: Value) {
        if let Value::Generator(g) = &v {
            let suspended = g.state.try_borrow().is_ok_and(|s| {
                matches!(
                    s.as_ref().and_then(|b| b.downcast_ref::<GenState>()),
                    Some(GenState::Suspended(_) | GenState::Flat(_))
                )
            });
            if suspended && Rc::strong_count(g) == 1 {
                // CPython reports an error here as "Exception ignored"; the loop's own outcome stands.
                let _ = self.gen_resume(g, GenAction::Close);
            }
        }
    }

    /// Where the items of `v` come from, drawn one at a time.
    fn source_of(&mut self, v: &Value) -> Result<Source, Exc> {
        Ok(match v {
            Value::Generator(g) => Source::Gen(g.clone()),
            Value::Range(start, stop, step) => Source::Range {
                next: *start,
                stop: *stop,
                step: *step,
            },
            Value::Object(o) if o.get_attr(o, "__next__").is_some() => Source::Next {
                obj: v.clone(),
                next: o.get_attr(o, "__next__").unwrap_or(Value::None),
            },
            Value::Object(o) if o.get_attr(o, "__lazy_iter__").is_some() => {
                match self.native_iterator(v)? {
                    Some(next) => Source::Next {
                        obj: v.clone(),
                        next,
                    },
                    None => Source::Items(self.iterate(v)?.into_iter()),
                }
            }
            Value::Instance(_) => match super::interp::next_method(self, v)? {
                Some(next) => Source::Next {
                    obj: v.clone(),
                    next,
                },
                None => Source::Items(self.iterate(v)?.into_iter()),
            },
            other => Source::Items(self.iterate(other)?.into_iter()),
        })
    }

    pub(super) fn draw(&mut self, source: &mut Source) -> Result<Drawn, Exc> {
        match source {
            Source::Items(items) => Ok(match items.next() {
                Some(v) => Drawn::Item(v),
                None => Drawn::Done(Value::None),
            }),
            Source::Range { next, stop, step } => {
                let more = (*step > 0 && *next < *stop) || (*step < 0 && *next > *stop);
                if !more {
                    return Ok(Drawn::Done(Value::None));
                }
                let v = *next;
                // A range ending near the int limits must not step past them.
                *next = next.checked_add(*step).unwrap_or(*stop);
                Ok(Drawn::Item(Value::Int(v)))
            }
            Source::Next { next, .. } => {
                let next = next.clone();
                self.call_drawn(&next, Vec::new())
            }
            Source::Gen(g) => {
                let g = g.clone();
                Ok(match self.resume_generator(&g, Value::None)? {
                    Some(v) => Drawn::Item(v),
                    None => Drawn::Done(Value::None),
                })
            }
        }
    }

    /// Calls an iterator's `__next__`/`send`/`throw`: StopIteration is the end, with its value.
    fn call_drawn(&mut self, f: &Value, args: Vec<Value>) -> Result<Drawn, Exc> {
        match self.call_value(f, Args::positional(args)) {
            Ok(v) => Ok(Drawn::Item(v)),
            Err(e) if e.kind.is_subclass_of(ExcKind::StopIteration) => {
                let value = match &e.instance {
                    Some(_) => Value::None,
                    None => e.stop_value().unwrap_or(Value::None),
                };
                Ok(Drawn::Done(value))
            }
            Err(e) => Err(e),
        }
    }

    /// The iterator object's method `name`, if it has one (user iterators may define
    /// `send`/`throw`/`close`; built-in ones do not).
    fn iter_method(&mut self, source: &Source, name: &str) -> Result<Option<Value>, Exc> {
        match source {
            Source::Next {
                obj: obj @ Value::Instance(_),
                ..
            } => match crate::modules::python::builtins::get_attr(self, obj, name) {
                Ok(m) => Ok(Some(m)),
                Err(e) if e.kind == ExcKind::AttributeError => Ok(None),
                Err(e) => Err(e),
            },
            _ => Ok(None),
        }
    }

    fn close_source(&mut self, source: &Source) -> Result<(), Exc> {
        if let Some(m) = self.iter_method(source, "close")? {
            self.call_value(&m, Args::default())?;
        }
        Ok(())
    }
}

/// An exception leaving a generator's body: its frame is recorded, and a StopIteration
/// becomes RuntimeError (PEP 479), so it cannot silently end the loop that drives it.
fn left_generator(g: &Generator, mut e: Exc) -> Exc {
    if let (Some(span), Some(src)) = (e.span.take(), e.source.take()) {
        e.frames.insert(
            0,
            Frame {
                function: g.name.clone(),
                source: src,
                span,
            },
        );
    }
    if e.kind.is_subclass_of(ExcKind::StopIteration) {
        let mut r = Exc::new(ExcKind::RuntimeError, "generator raised StopIteration");
        r.frames = std::mem::take(&mut e.frames);
        return r;
    }
    e
}

/// CPython's name for the iterator of a built-in iterable (`list_iterator`), as its
/// AttributeError names it.
fn iterator_name(v: &Value) -> String {
    match v {
        Value::Dict(_) => "dict_keyiterator".into(),
        Value::List(_) | Value::Tuple(_) | Value::Str(_) | Value::Range(..) => {
            format!("{}_iterator", v.type_name())
        }
        other => other.type_name().to_string(),
    }
}
