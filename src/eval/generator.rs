//! Generators: a function whose body has `yield` runs lazily, one item per `next`.
//!
//! The tree walker cannot suspend in the middle of a Rust call stack, so a generator's body runs
//! on an explicit stack of frames instead: a frame is a block of statements (found again from
//! the function's syntax tree by a path of child steps) and the position in it, plus what the
//! block is (a loop with its iterator, a `try`, a `yield from` source). Statements that contain
//! no `yield` run whole, through the usual interpreter; only `yield`, and the compound
//! statements around one, are stepped here. So a generator over a data set holds one item at a
//! time, and everything else behaves as in a function.
//!
//! Supported around a `yield`: `for`, `while`, `if`/`elif`/`else`, `try`/`except`/`else`
//! (`finally` runs whole), `break`, `continue`, `return`; `yield` as a statement,
//! `x = yield v`, `yield from iterable`. A `yield` inside another expression or a `with` block
//! is a clear error.

use std::cell::{Cell, RefCell};
use std::collections::HashSet;
use std::rc::Rc;

use crate::lang::ast::{Expr, ExprKind, FuncDef, Stmt, StmtKind};
use crate::object::error::{Exc, ExcKind, Frame};
use crate::object::value::{Args, Function, FunctionBody, Generator, Value};
use crate::object::Env;

use super::interp::{Ctl, Interp};

/// Which block of a compound statement a frame runs.
#[derive(Clone, Copy, Debug)]
enum Child {
    LoopBody,
    IfBranch(usize),
    Else,
    TryBody,
    Handler(usize),
}

/// Where items of a `for` loop or `yield from` come from: drawn one at a time.
enum Source {
    Items(std::vec::IntoIter<Value>),
    Range { next: i64, stop: i64, step: i64 },
    Next(Value),
    Gen(Rc<Generator>),
}

enum Kind {
    /// The function body, an `if` branch, an `except` handler, a `try`'s `else`.
    Block,
    /// A `for` loop's body; the loop statement is at `path`'s last step.
    For(Source),
    While,
    /// A `try` body with handlers and `finally` of the `try` statement at `path`'s last step.
    Try,
    /// A `try`'s `except` handler or `else` block: its `finally` runs when it ends.
    Handled,
    /// A `yield from`: each resume hands out the source's next item.
    YieldFrom(Source),
}

struct GenFrame {
    /// Steps from the function body to this frame's block: (statement index, child block).
    path: Vec<(usize, Child)>,
    pc: usize,
    kind: Kind,
}

/// A generator's suspended execution (what `Generator::state` holds).
struct GenState {
    func: Rc<Function>,
    def: Rc<FuncDef>,
    env: Env,
    frames: Vec<GenFrame>,
    /// Statements that contain a `yield` (by address: the syntax tree is immutable and kept
    /// alive by `def`).
    yielding: HashSet<usize>,
    /// The `x = yield v` statement waiting for the value `send` passes in.
    pending_assign: Option<(Vec<(usize, Child)>, usize)>,
}

enum Step {
    Yielded(Value),
    Finished,
}

fn stmt_key(s: &Stmt) -> usize {
    s as *const Stmt as usize
}

fn is_yield(e: &Expr) -> bool {
    matches!(e.kind, ExprKind::Yield(_) | ExprKind::YieldFrom(_))
}

/// Records every statement of `body` that contains a `yield` (not counting nested functions).
fn collect_yielding(body: &[Stmt], out: &mut HashSet<usize>) -> bool {
    let mut any = false;
    for s in body {
        let here = match &s.kind {
            StmtKind::Expr(e) => is_yield(e),
            StmtKind::Assign { value, .. } => is_yield(value),
            StmtKind::For { body, .. } | StmtKind::While { body, .. } => {
                collect_yielding(body, out)
            }
            StmtKind::With { body, .. } => collect_yielding(body, out),
            StmtKind::If { branches, orelse } => {
                let mut y = false;
                for (_, b) in branches {
                    y |= collect_yielding(b, out);
                }
                if let Some(b) = orelse {
                    y |= collect_yielding(b, out);
                }
                y
            }
            StmtKind::Try {
                body,
                handlers,
                orelse,
                finally,
            } => {
                let mut y = collect_yielding(body, out);
                for h in handlers {
                    y |= collect_yielding(&h.body, out);
                }
                if let Some(b) = orelse {
                    y |= collect_yielding(b, out);
                }
                if let Some(b) = finally {
                    y |= collect_yielding(b, out);
                }
                y
            }
            _ => false,
        };
        if here {
            out.insert(stmt_key(s));
            any = true;
        }
    }
    any
}

/// The block a path leads to from the function body.
fn block<'a>(def: &'a FuncDef, path: &[(usize, Child)]) -> Result<&'a [Stmt], Exc> {
    let mut cur: &[Stmt] = &def.body;
    for &(i, child) in path {
        let stmt = cur.get(i).ok_or_else(lost)?;
        cur = match (&stmt.kind, child) {
            (StmtKind::For { body, .. } | StmtKind::While { body, .. }, Child::LoopBody) => body,
            (StmtKind::If { branches, .. }, Child::IfBranch(b)) => {
                &branches.get(b).ok_or_else(lost)?.1
            }
            (
                StmtKind::If {
                    orelse: Some(b), ..
                },
                Child::Else,
            ) => b,
            (StmtKind::Try { body, .. }, Child::TryBody) => body,
            (StmtKind::Try { handlers, .. }, Child::Handler(h)) => {
                &handlers.get(h).ok_or_else(lost)?.body
            }
            (
                StmtKind::Try {
                    orelse: Some(b), ..
                },
                Child::Else,
            ) => b,
            _ => return Err(lost()),
        };
    }
    Ok(cur)
}

/// The statement a frame's path ends at (its loop or `try`).
fn owner<'a>(def: &'a FuncDef, path: &[(usize, Child)]) -> Result<&'a Stmt, Exc> {
    let (last, parent) = path.split_last().ok_or_else(lost)?;
    block(def, parent)?.get(last.0).ok_or_else(lost)
}

/// The path to another block of the same statement (a `try`'s handler or `else`).
fn sibling(path: &[(usize, Child)], child: Child) -> Result<Vec<(usize, Child)>, Exc> {
    let (&(i, _), parent) = path.split_last().ok_or_else(lost)?;
    let mut p = parent.to_vec();
    p.push((i, child));
    Ok(p)
}

fn lost() -> Exc {
    Exc::new(
        ExcKind::RuntimeError,
        "internal error: a generator lost its place in its function",
    )
}

impl Interp<'_> {
    /// Calling a generator function: binds the arguments and returns the suspended generator.
    pub(super) fn make_generator(&mut self, f: &Rc<Function>, env: Env) -> Value {
        let FunctionBody::Def(def) = &f.body else {
            return Value::None;
        };
        let mut yielding = HashSet::new();
        collect_yielding(&def.body, &mut yielding);
        let state = GenState {
            func: f.clone(),
            def: def.clone(),
            env,
            frames: vec![GenFrame {
                path: Vec::new(),
                pc: 0,
                kind: Kind::Block,
            }],
            yielding,
            pending_assign: None,
        };
        Value::Generator(Rc::new(Generator {
            name: f.name.clone(),
            state: RefCell::new(Some(Box::new(state))),
            finished: Cell::new(false),
        }))
    }

    /// Runs `g` to its next `yield`; None when it finishes.
    pub fn resume_generator(
        &mut self,
        g: &Rc<Generator>,
        sent: Value,
    ) -> Result<Option<Value>, Exc> {
        if g.finished.get() {
            return Ok(None);
        }
        let Some(boxed) = g.state.borrow_mut().take() else {
            return Err(Exc::value_error("generator already executing"));
        };
        let Ok(mut st) = boxed.downcast::<GenState>() else {
            return Err(lost());
        };
        let saved_env = self.env.replace(st.env.clone());
        let saved_source = std::mem::replace(&mut self.source, st.func.source.clone());
        let saved_fusion = self.fuse_fallback.take();
        let result = if self.depth >= super::interp::MAX_CALL_DEPTH {
            Err(Exc::new(
                ExcKind::RecursionError,
                "maximum recursion depth exceeded",
            ))
        } else {
            self.depth += 1;
            let r = self.run_generator(&mut st, sent);
            self.depth -= 1;
            r
        };
        self.fuse_fallback = saved_fusion;
        self.source = saved_source;
        self.env = saved_env;
        match result {
            Ok(Step::Yielded(v)) => {
                *g.state.borrow_mut() = Some(st);
                Ok(Some(v))
            }
            Ok(Step::Finished) => {
                g.finished.set(true);
                Ok(None)
            }
            Err(mut e) => {
                g.finished.set(true);
                if let (Some(span), Some(src)) = (e.span.take(), e.source.take()) {
                    e.frames.insert(
                        0,
                        Frame {
                            function: st.func.name.clone(),
                            source: src,
                            span,
                        },
                    );
                }
                Err(e)
            }
        }
    }

    fn run_generator(&mut self, st: &mut GenState, sent: Value) -> Result<Step, Exc> {
        if let Some((path, pc)) = st.pending_assign.take() {
            let stmt = block(&st.def, &path)?.get(pc).ok_or_else(lost)?;
            if let StmtKind::Assign { targets, .. } = &stmt.kind {
                for t in targets {
                    self.assign(t, sent.clone())?;
                }
            }
        }
        loop {
            self.check_interrupt()?;
            let Some(top) = st.frames.last_mut() else {
                return Ok(Step::Finished);
            };
            if let Kind::YieldFrom(source) = &mut top.kind {
                match self.draw(source)? {
                    Some(v) => return Ok(Step::Yielded(v)),
                    None => {
                        st.frames.pop();
                        continue;
                    }
                }
            }
            let def = st.def.clone();
            let stmts = block(&def, &top.path)?;
            let Some(stmt) = stmts.get(top.pc) else {
                // The end of a block: loops go round, the body ends the generator.
                if self.block_ended(st)? {
                    return Ok(Step::Finished);
                }
                continue;
            };
            let pc = top.pc;
            top.pc += 1;
            if !st.yielding.contains(&stmt_key(stmt)) {
                match self.exec_stmt(stmt) {
                    Ok(()) => {}
                    Err(Ctl::Return(_)) => return Ok(Step::Finished),
                    Err(Ctl::Break) => self.unwind_loop(st, true)?,
                    Err(Ctl::Continue) => self.unwind_loop(st, false)?,
                    Err(Ctl::Exc(e)) => self.raise_in(st, *e)?,
                }
                continue;
            }
            let path = top.path.clone();
            match self.enter(st, stmt, path, pc) {
                Ok(Some(v)) => return Ok(Step::Yielded(v)),
                Ok(None) => {}
                Err(e) => self.raise_in(st, e)?,
            }
        }
    }

    /// Starts a statement that contains a `yield`: yields, or pushes the frame of its block.
    fn enter(
        &mut self,
        st: &mut GenState,
        stmt: &Stmt,
        path: Vec<(usize, Child)>,
        pc: usize,
    ) -> Result<Option<Value>, Exc> {
        let mut child = path.clone();
        match &stmt.kind {
            StmtKind::Expr(Expr {
                kind: ExprKind::Yield(v),
                ..
            }) => {
                let v = match v {
                    Some(e) => self.eval(e)?,
                    None => Value::None,
                };
                return Ok(Some(v));
            }
            StmtKind::Expr(Expr {
                kind: ExprKind::YieldFrom(e),
                ..
            }) => {
                let v = self.eval(e)?;
                let source = self.source_of(&v).map_err(|x| x.at(e.span, &self.source))?;
                st.frames.push(GenFrame {
                    path,
                    pc: 0,
                    kind: Kind::YieldFrom(source),
                });
            }
            StmtKind::Assign { value, .. } => {
                let ExprKind::Yield(v) = &value.kind else {
                    return Err(Exc::new(
                        ExcKind::SyntaxError,
                        "'x = yield from ...' is not supported in devarray; loop over the iterable and yield each item",
                    )
                    .at(stmt.span, &self.source));
                };
                let v = match v {
                    Some(e) => self.eval(e)?,
                    None => Value::None,
                };
                st.pending_assign = Some((path, pc));
                return Ok(Some(v));
            }
            StmtKind::For { iter, .. } => {
                let v = self.eval(iter)?;
                let source = self
                    .source_of(&v)
                    .map_err(|x| x.at(iter.span, &self.source))?;
                child.push((pc, Child::LoopBody));
                st.frames.push(GenFrame {
                    path: child,
                    pc: 0,
                    kind: Kind::For(source),
                });
                // Draw the first item (or leave at once when there is none).
                if let Some(top) = st.frames.last_mut() {
                    top.pc = usize::MAX;
                }
            }
            StmtKind::While { cond, .. } => {
                let t = self.eval(cond)?;
                if crate::object::class::truthy(self, &t)? {
                    child.push((pc, Child::LoopBody));
                    st.frames.push(GenFrame {
                        path: child,
                        pc: 0,
                        kind: Kind::While,
                    });
                }
            }
            StmtKind::If { branches, orelse } => {
                let mut chosen = None;
                for (i, (test, _)) in branches.iter().enumerate() {
                    let t = self.eval(test)?;
                    if crate::object::class::truthy(self, &t)? {
                        chosen = Some(Child::IfBranch(i));
                        break;
                    }
                }
                if chosen.is_none() && orelse.is_some() {
                    chosen = Some(Child::Else);
                }
                if let Some(c) = chosen {
                    child.push((pc, c));
                    st.frames.push(GenFrame {
                        path: child,
                        pc: 0,
                        kind: Kind::Block,
                    });
                }
            }
            StmtKind::Try { finally, .. } => {
                if finally.as_ref().is_some_and(|f| {
                    let mut set = HashSet::new();
                    collect_yielding(f, &mut set)
                }) {
                    return Err(Exc::new(
                        ExcKind::SyntaxError,
                        "'yield' inside 'finally' is not supported in devarray",
                    )
                    .at(stmt.span, &self.source));
                }
                child.push((pc, Child::TryBody));
                st.frames.push(GenFrame {
                    path: child,
                    pc: 0,
                    kind: Kind::Try,
                });
            }
            _ => {
                return Err(Exc::new(
                    ExcKind::SyntaxError,
                    "'yield' here is not supported in devarray: use it as a statement (`yield v`, `x = yield v`) in the function body, a loop, an if or a try",
                )
                .at(stmt.span, &self.source))
            }
        }
        Ok(None)
    }

    /// The top frame's block has run to its end. True when the generator's body is done.
    fn block_ended(&mut self, st: &mut GenState) -> Result<bool, Exc> {
        let Some(top) = st.frames.last_mut() else {
            return Ok(true);
        };
        match &mut top.kind {
            Kind::For(source) => {
                let mut source = std::mem::replace(source, Source::Items(Vec::new().into_iter()));
                let next = self.draw(&mut source);
                let def = st.def.clone();
                let Some(top) = st.frames.last_mut() else {
                    return Ok(true);
                };
                top.kind = Kind::For(source);
                match next? {
                    Some(item) => {
                        let StmtKind::For { target, .. } = &owner(&def, &top.path)?.kind else {
                            return Err(lost());
                        };
                        top.pc = 0;
                        self.assign(target, item)?;
                    }
                    None => {
                        st.frames.pop();
                    }
                }
            }
            Kind::While => {
                let def = st.def.clone();
                let StmtKind::While { cond, .. } = &owner(&def, &top.path)?.kind else {
                    return Err(lost());
                };
                let t = self.eval(cond)?;
                if crate::object::class::truthy(self, &t)? {
                    if let Some(top) = st.frames.last_mut() {
                        top.pc = 0;
                    }
                } else {
                    st.frames.pop();
                }
            }
            Kind::Try => {
                // The try body finished: its `else` (whose end runs `finally`), or `finally` now.
                let def = st.def.clone();
                let path = top.path.clone();
                st.frames.pop();
                let StmtKind::Try { orelse, .. } = &owner(&def, &path)?.kind else {
                    return Err(lost());
                };
                if orelse.is_some() {
                    st.frames.push(GenFrame {
                        path: sibling(&path, Child::Else)?,
                        pc: 0,
                        kind: Kind::Handled,
                    });
                } else {
                    self.run_finally(&def, &path)?;
                }
            }
            Kind::Handled => {
                let def = st.def.clone();
                let path = top.path.clone();
                st.frames.pop();
                self.run_finally(&def, &path)?;
            }
            Kind::Block | Kind::YieldFrom(_) => {
                st.frames.pop();
                if st.frames.is_empty() {
                    return Ok(true);
                }
            }
        }
        Ok(false)
    }

    /// `break` (or `continue`) inside the generator: leaves the frames up to the innermost loop,
    /// running the `finally` blocks it passes.
    fn unwind_loop(&mut self, st: &mut GenState, is_break: bool) -> Result<(), Exc> {
        while let Some(top) = st.frames.last_mut() {
            if matches!(top.kind, Kind::For(_) | Kind::While) {
                if is_break {
                    st.frames.pop();
                } else {
                    top.pc = usize::MAX;
                }
                return Ok(());
            }
            if let Some(left) = st.frames.pop() {
                if matches!(left.kind, Kind::Try | Kind::Handled) {
                    let def = st.def.clone();
                    self.run_finally(&def, &left.path)?;
                }
            }
        }
        Err(Exc::new(
            ExcKind::SyntaxError,
            "'break' or 'continue' outside loop",
        ))
    }

    /// An exception inside the generator: the innermost `try` frame that matches handles it;
    /// otherwise it leaves the generator (after running the `finally` blocks it passes).
    fn raise_in(&mut self, st: &mut GenState, e: Exc) -> Result<(), Exc> {
        while let Some(top) = st.frames.pop() {
            if matches!(top.kind, Kind::Handled) {
                let def = st.def.clone();
                self.run_finally(&def, &top.path)?;
                continue;
            }
            if !matches!(top.kind, Kind::Try) {
                continue;
            }
            let def = st.def.clone();
            let StmtKind::Try {
                handlers, finally, ..
            } = &owner(&def, &top.path)?.kind
            else {
                return Err(lost());
            };
            for (i, h) in handlers.iter().enumerate() {
                let matches = match &h.kind {
                    None => true,
                    Some(k) => {
                        let kv = self.eval(k)?;
                        super::interp::exc_matches(&e, &kv)?
                    }
                };
                if matches {
                    if let Some(name) = &h.name {
                        let v = super::interp::exception_value(&e);
                        self.set_var(name, v);
                    }
                    st.frames.push(GenFrame {
                        path: sibling(&top.path, Child::Handler(i))?,
                        pc: 0,
                        kind: Kind::Handled,
                    });
                    return Ok(());
                }
            }
            if let Some(f) = finally {
                self.run_whole(f)?;
            }
        }
        Err(e)
    }

    /// The `finally` of the `try` statement that the frame at `path` belongs to, run whole.
    fn run_finally(&mut self, def: &FuncDef, path: &[(usize, Child)]) -> Result<(), Exc> {
        if let StmtKind::Try {
            finally: Some(f), ..
        } = &owner(def, path)?.kind
        {
            self.run_whole(f)?;
        }
        Ok(())
    }

    /// Runs a block without stepping (no `yield` in it).
    fn run_whole(&mut self, body: &[Stmt]) -> Result<(), Exc> {
        match self.exec_block(body) {
            Ok(()) => Ok(()),
            Err(Ctl::Exc(e)) => Err(*e),
            Err(_) => Err(Exc::new(
                ExcKind::SyntaxError,
                "'return', 'break' or 'continue' in a generator's 'finally' is not supported in devarray",
            )),
        }
    }

    /// Where the items of `v` come from, drawn one at a time.
    fn source_of(&mut self, v: &Value) -> Result<Source, Exc> {
        Ok(match v {
            Value::Range(start, stop, step) => Source::Range {
                next: *start,
                stop: *stop,
                step: *step,
            },
            Value::Generator(g) => Source::Gen(g.clone()),
            Value::Instance(_) => {
                let src = self.instance_iter(v)?;
                match super::interp::next_method(self, &src)? {
                    Some(next) => Source::Next(next),
                    None => return self.source_of(&src),
                }
            }
            Value::Object(o) if o.get_attr(o, "__lazy_iter__").is_some() => {
                match self.native_iterator(v)? {
                    Some(next) => Source::Next(next),
                    None => Source::Items(self.iterate(v)?.into_iter()),
                }
            }
            other => Source::Items(self.iterate(other)?.into_iter()),
        })
    }

    fn draw(&mut self, source: &mut Source) -> Result<Option<Value>, Exc> {
        match source {
            Source::Items(items) => Ok(items.next()),
            Source::Range { next, stop, step } => {
                let more = (*step > 0 && *next < *stop) || (*step < 0 && *next > *stop);
                if !more {
                    return Ok(None);
                }
                let v = *next;
                *next += *step;
                Ok(Some(Value::Int(v)))
            }
            Source::Next(f) => match self.call_value(&f.clone(), Args::default()) {
                Ok(v) => Ok(Some(v)),
                Err(e) if e.kind == ExcKind::StopIteration => Ok(None),
                Err(e) => Err(e),
            },
            Source::Gen(g) => {
                let g = g.clone();
                self.resume_generator(&g, Value::None)
            }
        }
    }
}
