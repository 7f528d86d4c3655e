//! Stackless generators: a body whose every `yield` is a statement of its own, in blocks of
//! `if`/`for`/`while`/`try`/`with` (`lang::ast::resumable_body`; every generator expression is
//! one, and so is nearly every body once `lang::lower` hoisted the `yield`s inside its
//! expressions), runs
//! without a stack of its own. Where it is suspended is a list of cursors kept in the
//! generator ([`Level`]: the statement index in each open block, and what that statement is
//! doing: the branch an `if` took, a `for` loop's iterator, a `yield from`'s delegate), so a
//! suspended generator holds only its scope and these cursors, as CPython's frame does. A
//! resume walks back down the cursors to the `yield` and goes on from there; every statement
//! without a `yield` runs through the tree walker as usual.
//!
//! A clause `except (yield v):` suspends while the clauses are matched (`Part::TryMatch`
//! keeps the exception being matched; the value sent in is the clause's class).
//!
//! The result of a `yield` (the sent value, or `throw`'s exception or `close`'s GeneratorExit
//! raised there) is delivered as in `generator.rs`'s stackful path, which runs every other
//! body; both share the resume protocol (`Interp::resume_with`).

use std::rc::Rc;

use crate::lang::ast::{ExceptHandler, Expr, ExprKind, Stmt, StmtKind, WithItem};
use crate::object::error::{Exc, ExcKind};
use crate::object::value::{Function, FunctionBody, GenAction, Value};
use crate::object::Env;

use super::generator::{Delegate, Drawn, Source};
use super::interp::{Ctl, Entered, Interp};

/// A stackless generator's suspended execution.
pub(super) struct Flat {
    /// The generator function; its body is `def`'s (`FunctionBody::Def`), read from here on
    /// each resume rather than kept twice.
    func: Rc<Function>,
    env: Env,
    /// One per open block, outermost first; empty before the first resume.
    levels: Levels,
}

/// A generator expression's depth (its `for` and `yield`) and a plain `def`'s loop and
/// `yield` fit inline, in the generator's own allocation.
type Levels = smallvec::SmallVec<[Level; 2]>;

/// Where a block is: the statement it runs, and what that statement is doing.
struct Level {
    index: usize,
    part: Part,
}

enum Part {
    /// The statement has not started (or has no suspended state).
    Start,
    /// Suspended at this `yield` statement.
    AtYield,
    /// Suspended in this `yield from` statement, delegating to the source.
    YieldFrom(Box<Delegate>),
    /// In the branch of this `if` (`branches.len()`: the `else`), or this case of a `match`.
    If(usize),
    /// In this `for` loop's body, drawing from the source (boxed: a `Part` is in every level
    /// of every suspended generator, and a source holds two values).
    ForBody(Box<Source>),
    ForElse,
    WhileBody,
    WhileElse,
    /// In a `try` statement's body, its `except` clause (by index, with the exception it
    /// handles), its `else`. (A u32 index: with the tag it fits beside the box, so a `Part`
    /// is two words.)
    TryBody,
    /// Suspended at the `yield` of `except (yield v):` (by index) while matching this
    /// exception against the clauses.
    TryMatch(u32, Box<Exc>),
    TryHandler(u32, Box<Exc>),
    TryElse,
    /// In its `finally`, with how the rest of the statement ended (re-raised after it).
    TryFinally(Box<Result<(), Ctl>>),
    /// In a `with` statement's body, its managers entered (one per item, in order; boxed,
    /// so that a `Part` stays two words).
    WithBody(Box<Managers>),
}

/// The managers a suspended `with` statement entered.
struct Managers(Vec<Entered>);

/// How running a block (or statement) stopped: at its end, or suspended at a `yield`.
enum Flow {
    Done,
    Yield(Value),
}

type FlowResult = Result<Flow, Ctl>;

impl Flat {
    pub(super) fn new(func: Rc<Function>, env: Env) -> Flat {
        Flat {
            func,
            env,
            levels: Levels::new(),
        }
    }
}

impl Flat {
    /// Whether closing it runs anything: it is suspended inside a `try` or `with`.
    pub(super) fn needs_close(&self) -> bool {
        self.levels.iter().any(|l| {
            matches!(
                l.part,
                Part::TryBody
                    | Part::TryMatch(..)
                    | Part::TryHandler(..)
                    | Part::TryElse
                    | Part::TryFinally(_)
                    | Part::WithBody(_)
            )
        })
    }
}

fn at(c: Ctl, span: crate::lang::Span, source: &Rc<str>) -> Ctl {
    match c {
        Ctl::Exc(e) => Ctl::Exc(Box::new(e.at(span, source))),
        other => other,
    }
}

impl Interp<'_> {
    /// Resumes a stackless generator: Some(item) at its next `yield`, None at its end;
    /// `Ctl::Return` carries what it returned, `Ctl::Exc` what it raised.
    pub(super) fn resume_flat(
        &mut self,
        flat: &mut Flat,
        action: GenAction,
    ) -> Result<Option<Value>, Ctl> {
        let source = flat.func.source.clone();
        let mut me = Interp::new(&mut *self.st, &mut *self.out, source);
        me.env = Some(flat.env.clone());
        me.module = flat.func.module.as_ref().and_then(|m| m.upgrade());
        me.depth = self.depth + 1;
        let mut action = Some(action);
        let FunctionBody::Def(def) = &flat.func.body else {
            return Err(lost().into());
        };
        let def = def.clone();
        // A resume runs on the resumer's stack: recursion through generators grows it.
        let flow =
            super::interp::grow(|| me.run_block(&def.body, &mut flat.levels, 0, &mut action));
        match flow? {
            Flow::Yield(v) => Ok(Some(v)),
            Flow::Done => Ok(None),
        }
    }

    /// Runs (or resumes, when `levels` goes deeper than `k`) the block at nesting level `k`.
    fn run_block(
        &mut self,
        block: &[Stmt],
        levels: &mut Levels,
        k: usize,
        action: &mut Option<GenAction>,
    ) -> FlowResult {
        let mut part = match levels.get_mut(k) {
            Some(level) => std::mem::replace(&mut level.part, Part::Start),
            None => {
                levels.push(Level {
                    index: 0,
                    part: Part::Start,
                });
                Part::Start
            }
        };
        loop {
            let Some(i) = levels.get(k).map(|l| l.index) else {
                return Err(lost().into());
            };
            let Some(stmt) = block.get(i) else {
                levels.truncate(k);
                return Ok(Flow::Done);
            };
            let started = std::mem::replace(&mut part, Part::Start);
            match self.run_stmt(stmt, levels, k, started, action) {
                Ok(Flow::Yield(v)) => return Ok(Flow::Yield(v)),
                Ok(Flow::Done) => {
                    levels.truncate(k + 1);
                    if let Some(level) = levels.get_mut(k) {
                        level.index += 1;
                        level.part = Part::Start;
                    }
                }
                Err(c) => {
                    levels.truncate(k);
                    return Err(c);
                }
            }
        }
    }

    /// Stores what statement `k` is doing where a resume finds it.
    fn set_part(levels: &mut [Level], k: usize, part: Part) {
        if let Some(level) = levels.get_mut(k) {
            level.part = part;
        }
    }

    fn run_stmt(
        &mut self,
        stmt: &Stmt,
        levels: &mut Levels,
        k: usize,
        part: Part,
        action: &mut Option<GenAction>,
    ) -> FlowResult {
        let span = stmt.span;
        match &stmt.kind {
            StmtKind::Expr(e) if is_yield(e) => {
                self.run_yield(stmt, e, &[], levels, k, part, action)
            }
            StmtKind::Assign { targets, value } if is_yield(value) => {
                self.run_yield(stmt, value, targets, levels, k, part, action)
            }
            StmtKind::If { branches, orelse } => {
                let b = match part {
                    Part::If(b) => b,
                    _ => {
                        self.check_interrupt()
                            .map_err(|e| e.at(span, &self.source))?;
                        let mut taken = None;
                        for (n, (test, _)) in branches.iter().enumerate() {
                            let t = self
                                .eval_truthy(test)
                                .map_err(|e| e.at(span, &self.source))?;
                            if t {
                                taken = Some(n);
                                break;
                            }
                        }
                        match taken {
                            Some(n) => n,
                            None if orelse.is_some() => branches.len(),
                            None => return Ok(Flow::Done),
                        }
                    }
                };
                let body = match branches.get(b) {
                    Some((_, body)) => body,
                    None => orelse.as_deref().ok_or_else(lost)?,
                };
                Self::set_part(levels, k, Part::If(b));
                self.run_block(body, levels, k + 1, action)
                    .map_err(|c| at(c, span, &self.source))
            }
            StmtKind::Match { subject, cases } => {
                let b = match part {
                    Part::If(b) => b,
                    _ => {
                        self.check_interrupt()
                            .map_err(|e| e.at(span, &self.source))?;
                        match self
                            .choose_case(subject, cases)
                            .map_err(|e| e.at(span, &self.source))?
                        {
                            Some(n) => n,
                            None => return Ok(Flow::Done),
                        }
                    }
                };
                let body = &cases.get(b).ok_or_else(lost)?.body;
                Self::set_part(levels, k, Part::If(b));
                self.run_block(body, levels, k + 1, action)
                    .map_err(|c| at(c, span, &self.source))
            }
            StmtKind::While { cond, body, orelse } => {
                let mut resuming = match part {
                    Part::WhileElse => {
                        let orelse = orelse.as_deref().ok_or_else(lost)?;
                        return self
                            .run_block(orelse, levels, k + 1, action)
                            .map_err(|c| at(c, span, &self.source));
                    }
                    Part::WhileBody => true,
                    _ => false,
                };
                loop {
                    if !resuming {
                        self.check_interrupt()
                            .map_err(|e| e.at(span, &self.source))?;
                        if !self
                            .eval_truthy(cond)
                            .map_err(|e| e.at(span, &self.source))?
                        {
                            break;
                        }
                    }
                    resuming = false;
                    Self::set_part(levels, k, Part::WhileBody);
                    match self.run_block(body, levels, k + 1, action) {
                        Ok(Flow::Yield(v)) => return Ok(Flow::Yield(v)),
                        Ok(Flow::Done) | Err(Ctl::Continue) => {}
                        Err(Ctl::Break) => return Ok(Flow::Done),
                        Err(c) => return Err(at(c, span, &self.source)),
                    }
                }
                match orelse {
                    Some(orelse) => {
                        Self::set_part(levels, k, Part::WhileElse);
                        self.run_block(orelse, levels, k + 1, action)
                            .map_err(|c| at(c, span, &self.source))
                    }
                    None => Ok(Flow::Done),
                }
            }
            StmtKind::For {
                target,
                iter,
                body,
                orelse,
            } => {
                let (mut source, mut resuming) = match part {
                    Part::ForElse => {
                        let orelse = orelse.as_deref().ok_or_else(lost)?;
                        return self
                            .run_block(orelse, levels, k + 1, action)
                            .map_err(|c| at(c, span, &self.source));
                    }
                    Part::ForBody(source) => (source, true),
                    _ => {
                        self.check_interrupt()
                            .map_err(|e| e.at(span, &self.source))?;
                        let it = self.eval(iter).map_err(|e| e.at(span, &self.source))?;
                        let source = self
                            .iter_source(&it)
                            .map_err(|e| e.at(iter.span, &self.source))?;
                        (Box::new(source), false)
                    }
                };
                let ended = loop {
                    if !resuming {
                        self.check_interrupt()
                            .map_err(|e| e.at(iter.span, &self.source))?;
                        let item = match self.draw(&mut source) {
                            Ok(Drawn::Item(v)) => v,
                            Ok(Drawn::Done(_)) => break true,
                            Err(e) => return Err(e.at(iter.span, &self.source).into()),
                        };
                        self.assign(target, item)
                            .map_err(|e| e.at(iter.span, &self.source))?;
                    }
                    resuming = false;
                    match self.run_block(body, levels, k + 1, action) {
                        Ok(Flow::Yield(v)) => {
                            Self::set_part(levels, k, Part::ForBody(source));
                            return Ok(Flow::Yield(v));
                        }
                        Ok(Flow::Done) | Err(Ctl::Continue) => {}
                        Err(Ctl::Break) => break false,
                        // An exception keeps a drawn generator alive (as in `exec_stmt`).
                        Err(c @ Ctl::Exc(_)) => return Err(at(c, iter.span, &self.source)),
                        Err(c) => {
                            self.release_source(*source);
                            return Err(c);
                        }
                    }
                };
                self.release_source(*source);
                match (ended, orelse) {
                    (true, Some(orelse)) => {
                        Self::set_part(levels, k, Part::ForElse);
                        self.run_block(orelse, levels, k + 1, action)
                            .map_err(|c| at(c, span, &self.source))
                    }
                    _ => Ok(Flow::Done),
                }
            }
            StmtKind::Try {
                body,
                handlers,
                orelse,
                finally,
            } => self
                .run_try(
                    (body, handlers, orelse.as_deref(), finally.as_deref()),
                    levels,
                    k,
                    part,
                    action,
                )
                .map_err(|c| at(c, span, &self.source)),
            StmtKind::With { items, body } => self
                .run_with(items, body, levels, k, part, action)
                .map_err(|c| at(c, span, &self.source)),
            _ => {
                self.exec_stmt(stmt)?;
                Ok(Flow::Done)
            }
        }
    }

    /// `yield e`, `targets = yield e`, `yield from e`, `targets = yield from e` as statements.
    #[allow(clippy::too_many_arguments)]
    fn run_yield(
        &mut self,
        stmt: &Stmt,
        value: &Expr,
        targets: &[Expr],
        levels: &mut [Level],
        k: usize,
        part: Part,
        action: &mut Option<GenAction>,
    ) -> FlowResult {
        let span = stmt.span;
        let result = match (part, &value.kind) {
            (Part::Start, ExprKind::Yield(e)) => {
                self.check_interrupt()
                    .map_err(|e| e.at(span, &self.source))?;
                let v = match e {
                    Some(e) => self.eval(e).map_err(|e| e.at(span, &self.source))?,
                    None => Value::None,
                };
                Self::set_part(levels, k, Part::AtYield);
                return Ok(Flow::Yield(v));
            }
            // Raised at the `yield` itself (CPython's caret under `yield 1` in
            // `print((yield 1))`, hoisted to `.y0 = yield 1` by `lang::lower`).
            (Part::AtYield, _) => self.sent(action, value.span)?,
            (Part::Start, ExprKind::YieldFrom(e)) => {
                self.check_interrupt()
                    .map_err(|e| e.at(span, &self.source))?;
                let v = self.eval(e).map_err(|e| e.at(span, &self.source))?;
                let mut source = self
                    .delegate(v, e.span)
                    .map_err(|x| x.at(span, &self.source))?;
                match self.delegate_step(&mut source, GenAction::Send(Value::None)) {
                    Ok(Drawn::Item(y)) => {
                        Self::set_part(levels, k, Part::YieldFrom(Box::new(source)));
                        return Ok(Flow::Yield(y));
                    }
                    Ok(Drawn::Done(r)) => r,
                    Err(x) => return Err(x.at(value.span, &self.source).into()),
                }
            }
            (Part::YieldFrom(mut source), _) => {
                let a = action.take().ok_or_else(lost)?;
                match self.delegate_step(&mut source, a) {
                    Ok(Drawn::Item(y)) => {
                        Self::set_part(levels, k, Part::YieldFrom(source));
                        return Ok(Flow::Yield(y));
                    }
                    Ok(Drawn::Done(r)) => r,
                    Err(x) => return Err(x.at(value.span, &self.source).into()),
                }
            }
            _ => return Err(lost().into()),
        };
        if let Some((last, rest)) = targets.split_last() {
            let assigned = rest
                .iter()
                .try_for_each(|t| self.assign(t, result.clone()))
                .and_then(|()| self.assign(last, result));
            assigned.map_err(|e| e.at(span, &self.source))?;
        }
        Ok(Flow::Done)
    }

    /// `try`/`except`/`else`/`finally` with `yield`s in any of its blocks, as `exec_try` runs
    /// it: a resume goes back into the block it stopped in, and a `finally` suspended at a
    /// `yield` keeps the outcome it is to re-raise (an exception, a `return`, a `break`).
    fn run_try(
        &mut self,
        (body, handlers, orelse, finally): TryParts,
        levels: &mut Levels,
        k: usize,
        part: Part,
        action: &mut Option<GenAction>,
    ) -> FlowResult {
        let ran = match part {
            Part::TryFinally(outcome) => {
                return self.run_finally(finally, *outcome, levels, k, action)
            }
            Part::TryMatch(n, exc) => {
                let h = handlers.get(n as usize).ok_or_else(lost)?;
                let span = h.kind.as_ref().map_or(h.span, |k| k.span);
                let sent = self.sent(action, span);
                self.match_clauses(exc, handlers, n as usize, Some(sent), levels, k, action)
            }
            Part::TryHandler(n, exc) => {
                let h = handlers.get(n as usize).ok_or_else(lost)?;
                self.run_handler(h, n, exc, levels, k, action)
            }
            Part::TryElse => {
                let orelse = orelse.ok_or_else(lost)?;
                ran(self.run_part(orelse, Part::TryElse, levels, k, action))
            }
            part => {
                if matches!(part, Part::Start) {
                    self.check_interrupt()?;
                }
                match ran(self.run_part(body, Part::TryBody, levels, k, action)) {
                    Ran::Out(Ok(())) => match orelse {
                        Some(orelse) => {
                            ran(self.run_part(orelse, Part::TryElse, levels, k, action))
                        }
                        None => Ran::Out(Ok(())),
                    },
                    Ran::Out(Err(Ctl::Exc(e))) => {
                        self.match_clauses(e, handlers, 0, None, levels, k, action)
                    }
                    other => other,
                }
            }
        };
        match ran {
            Ran::Yield(v) => Ok(Flow::Yield(v)),
            Ran::Out(outcome) => self.run_finally(finally, outcome, levels, k, action),
        }
    }

    /// An `except` block (started or resumed), `exc` being what a bare `raise` re-raises in it.
    fn run_handler(
        &mut self,
        h: &ExceptHandler,
        n: u32,
        exc: Box<Exc>,
        levels: &mut Levels,
        k: usize,
        action: &mut Option<GenAction>,
    ) -> Ran {
        let outer = self.handling.replace(exc.clone());
        let mut r = ran(self.run_part(&h.body, Part::TryHandler(n, exc), levels, k, action));
        if let (Ran::Out(Err(Ctl::Exc(new))), Some(handled)) = (&mut r, &self.handling) {
            self.add_context(new, handled);
        }
        self.handling = outer;
        if let (Ran::Out(_), Some(name)) = (&r, &h.name) {
            self.unbind_handler_name(name);
        }
        r
    }

    /// A `try`'s `finally` (started or resumed), then the outcome it keeps, unless the
    /// `finally` block itself raises, returns or breaks.
    fn run_finally(
        &mut self,
        finally: Option<&[Stmt]>,
        outcome: Result<(), Ctl>,
        levels: &mut Levels,
        k: usize,
        action: &mut Option<GenAction>,
    ) -> FlowResult {
        let Some(finally) = finally else {
            return outcome.map(|()| Flow::Done);
        };
        // The exception on its way out is the handled one while the block runs (a bare
        // `raise` re-raises it), as in `run_finally_block`.
        let mut outcome = outcome;
        let outer = match &mut outcome {
            Err(Ctl::Exc(old)) => {
                old.mark_caught(); // so that a re-raise is known as the same exception
                Some(self.handling.replace(old.clone()))
            }
            _ => None,
        };
        let ran = self.run_part(
            finally,
            Part::TryFinally(Box::new(outcome)),
            levels,
            k,
            action,
        );
        if let Some(outer) = outer {
            self.handling = outer;
        }
        let ran = match ran {
            // Raised in the `finally` while an exception was on its way out: its context.
            Err(Ctl::Exc(mut new)) => {
                if let Part::TryFinally(old) = Self::take_part(levels, k) {
                    if let Err(Ctl::Exc(old)) = &*old {
                        self.add_context(&mut new, old);
                    }
                }
                Err(Ctl::Exc(new))
            }
            other => other,
        };
        match ran? {
            Flow::Yield(v) => Ok(Flow::Yield(v)),
            Flow::Done => match Self::take_part(levels, k) {
                Part::TryFinally(outcome) => (*outcome).map(|()| Flow::Done),
                _ => Err(lost().into()),
            },
        }
    }

    /// `with` with `yield`s in its body: the managers entered stay in the level while it is
    /// suspended, and are left (innermost first) with the body's outcome, as `exec_with` does.
    fn run_with(
        &mut self,
        items: &[WithItem],
        body: &[Stmt],
        levels: &mut Levels,
        k: usize,
        part: Part,
        action: &mut Option<GenAction>,
    ) -> FlowResult {
        let ran = match part {
            Part::WithBody(entered) => {
                ran(self.run_part(body, Part::WithBody(entered), levels, k, action))
            }
            _ => {
                self.check_interrupt()?;
                let mut entered = Vec::with_capacity(items.len());
                let mut failed = None;
                for item in items {
                    match self.with_enter(item) {
                        Ok((e, v)) => {
                            entered.push(e);
                            if let Err(c) = self.with_target(item, v) {
                                failed = Some(c);
                                break;
                            }
                        }
                        Err(c) => {
                            failed = Some(c);
                            break;
                        }
                    }
                }
                if let Some(c) = failed {
                    return self.exit_all(items, entered, Err(c));
                }
                let entered = Box::new(Managers(entered));
                ran(self.run_part(body, Part::WithBody(entered), levels, k, action))
            }
        };
        match ran {
            Ran::Yield(v) => Ok(Flow::Yield(v)),
            Ran::Out(outcome) => match Self::take_part(levels, k) {
                Part::WithBody(entered) => self.exit_all(items, entered.0, outcome),
                _ => Err(lost().into()),
            },
        }
    }

    /// Leaves the managers entered for `items`, innermost first, each seeing the outcome the
    /// one inside it left.
    fn exit_all(
        &mut self,
        items: &[WithItem],
        entered: Vec<Entered>,
        mut outcome: Result<(), Ctl>,
    ) -> FlowResult {
        for (item, e) in items.iter().zip(entered).rev() {
            outcome = self.with_exit(e, item, outcome);
        }
        outcome.map(|()| Flow::Done)
    }

    /// A block of a compound statement, its level `k` recording `part` while it runs.
    fn run_part(
        &mut self,
        block: &[Stmt],
        part: Part,
        levels: &mut Levels,
        k: usize,
        action: &mut Option<GenAction>,
    ) -> FlowResult {
        Self::set_part(levels, k, part);
        self.run_block(block, levels, k + 1, action)
    }

    /// What level `k` recorded, taken back after its block ran.
    /// What the `yield` at `span` evaluates to on this resume: the value sent, or `throw`'s
    /// exception or `close`'s GeneratorExit raised there.
    fn sent(&self, action: &mut Option<GenAction>, span: crate::lang::Span) -> Result<Value, Exc> {
        match action.take() {
            Some(GenAction::Send(v)) => Ok(v),
            Some(GenAction::Throw(e)) => Err(e.at(span, &self.source)),
            Some(GenAction::Close) => {
                Err(Exc::new(ExcKind::GeneratorExit, "").at(span, &self.source))
            }
            None => Err(lost()),
        }
    }

    /// Matches `e` against the `except` clauses from `from` on, as `find_handler` does, and
    /// runs the one that catches it. `except (yield v):` suspends there (`Part::TryMatch`);
    /// `resumed` is then what that clause's `yield` evaluated to.
    #[allow(clippy::too_many_arguments)]
    fn match_clauses(
        &mut self,
        mut e: Box<Exc>,
        handlers: &[ExceptHandler],
        from: usize,
        mut resumed: Option<Result<Value, Exc>>,
        levels: &mut Levels,
        k: usize,
        action: &mut Option<GenAction>,
    ) -> Ran {
        for (n, h) in handlers.iter().enumerate().skip(from) {
            let clause = match (&h.kind, resumed.take()) {
                (None, _) => None,
                (Some(_), Some(sent)) => Some(sent),
                (Some(k_expr), None) => match clause_yield(k_expr) {
                    Some(v) => {
                        let y = match v {
                            Some(v) => self.eval(v),
                            None => Ok(Value::None),
                        };
                        match (y, u32::try_from(n)) {
                            (Ok(y), Ok(n)) => {
                                Self::set_part(levels, k, Part::TryMatch(n, e));
                                return Ran::Yield(y);
                            }
                            (Err(x), _) => Some(Err(x)),
                            (_, Err(_)) => Some(Err(lost())),
                        }
                    }
                    None => Some(self.eval(k_expr)),
                },
            };
            match self.clause_matches(&e, h, clause) {
                Ok(true) => {
                    self.catch(&mut e, h);
                    let Ok(n) = u32::try_from(n) else {
                        return Ran::Out(Err(lost().into()));
                    };
                    return self.run_handler(h, n, e, levels, k, action);
                }
                Ok(false) => {}
                Err(c) => return Ran::Out(Err(c)),
            }
        }
        Ran::Out(Err(Ctl::Exc(e)))
    }

    fn take_part(levels: &mut [Level], k: usize) -> Part {
        levels
            .get_mut(k)
            .map_or(Part::Start, |l| std::mem::replace(&mut l.part, Part::Start))
    }
}

type TryParts<'a> = (
    &'a [Stmt],
    &'a [ExceptHandler],
    Option<&'a [Stmt]>,
    Option<&'a [Stmt]>,
);

/// How a block of a compound statement stopped: suspended, or left with an outcome.
enum Ran {
    Yield(Value),
    Out(Result<(), Ctl>),
}

fn ran(r: FlowResult) -> Ran {
    match r {
        Ok(Flow::Yield(v)) => Ran::Yield(v),
        Ok(Flow::Done) => Ran::Out(Ok(())),
        Err(c) => Ran::Out(Err(c)),
    }
}

/// The value expression of a clause `except (yield v):` (None for a bare `yield`), which
/// suspends while the clauses are matched; None for any other clause.
fn clause_yield(e: &Expr) -> Option<Option<&Expr>> {
    match &e.kind {
        ExprKind::Yield(v) => Some(v.as_deref()),
        _ => None,
    }
}

fn is_yield(e: &Expr) -> bool {
    matches!(e.kind, ExprKind::Yield(_) | ExprKind::YieldFrom(_))
}

fn lost() -> Exc {
    Exc::new(
        ExcKind::RuntimeError,
        "internal error: a generator lost its place",
    )
}

#[cfg(test)]
mod tests {
    /// Every suspended generator holds a `Flat` and a `Level` per open block: they stay this
    /// small (issue 29: 200,000 suspended generators cost about what CPython's cost).
    #[test]
    fn suspended_state_stays_small() {
        assert_eq!(std::mem::size_of::<super::Part>(), 16);
        assert_eq!(std::mem::size_of::<super::Level>(), 24);
        let flat = std::mem::size_of::<super::Flat>();
        assert!(flat <= 80, "a Flat is {flat} bytes");
    }
}
