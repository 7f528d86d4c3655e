//! Hoisting `yield` out of expressions, so that a generator body whose yields stand inside
//! expressions (`print((yield n))`, `f(a, (yield))`, `return (yield)`, `x = 1 + (yield)`,
//! `a and (yield)`, `x if c else (yield)`) becomes one whose every `yield` is a statement of its
//! own ([`super::ast::resumable_body`]), which the stackless runner suspends without a stack.
//!
//! Evaluation order is CPython's: everything an expression evaluates before its last `yield`
//! (the callee, earlier arguments, a left operand, even a plain name: a global may be rebound
//! while the generator is suspended) is computed first, into a temporary named `.yN` (a name no
//! program can spell), then `.yN = yield v`, then the rest of the expression reads the
//! temporaries. Short-circuiting operators, conditional expressions and comparison chains with
//! a `yield` in a later operand become `if` statements, so nothing is evaluated that CPython
//! would skip. An assignment stores its value into each target in turn (a target's object and
//! index evaluated as it is stored, a tuple target unpacked first); a `def`/`class`/`lambda`
//! computes its decorators, defaults and bases first; an `assert` evaluates its message only
//! when the test fails; a function's annotations are never evaluated (PEP 526). Each lowered
//! statement keeps the original statement's span and every expression its own, so tracebacks
//! name the same lines and carets.
//!
//! The temporaries are not deleted: a statement's temporaries are dead once it has run, and
//! the next lowered statement reuses their names (`.y0`, `.y1`, ... counted from the
//! temporaries live around it), so a frame holds at most one statement's worth, released when
//! the frame ends, and no `del` statement runs per hoisted statement.
//!
//! What is not lowered (the body then runs on a stack of its own, `crate::eval::generator`):
//! a `yield` inside an `except` clause's expression (evaluated only while an exception is
//! being matched: lowering it means re-raising that exception from a nested `try`, which would
//! add a traceback entry and change what handlers' exceptions chain to; a clause that is
//! `except (yield v):` itself is left as it is, and the stackless runner suspends there), a
//! `match` guard holding `yield` (evaluated between patterns), a class body (a `yield`
//! there is CPython's SyntaxError), a starred assignment target's own expression, and a magic
//! line whose text holds `yield` (it is parsed only when it runs).

use std::rc::Rc;

use super::ast::{
    clause_resumable, fstring_has_yield, Arg, BoolOpKind, ClassDef, Expr, ExprKind, FStringPart,
    FuncDef, Ident, NameRef, Param, Stmt, StmtKind, UnaryOp, WithItem,
};
use super::span::Span;

/// The body with every `yield` hoisted to a statement of its own, or None where some `yield`
/// cannot be (see the module's list).
pub fn hoist_yields(body: &[Stmt]) -> Option<Vec<Stmt>> {
    let mut l = Lower { live: 0 };
    l.block(body)
}

struct Lower {
    /// Temporaries in use where the next statement is lowered: the next one is `.y{live}`.
    /// A statement's temporaries are dead once it has run, so the next statement reuses
    /// their names, and a nested block numbers its own after its statement's.
    live: u32,
}

fn name(id: &Ident, span: Span) -> Expr {
    Expr {
        kind: ExprKind::Name(NameRef::new(id.clone())),
        span,
    }
}

fn is_temp(e: &Expr) -> bool {
    matches!(&e.kind, ExprKind::Name(n) if n.starts_with(".y"))
}

/// An expression whose value cannot change between its evaluation and a later one.
fn is_constant(e: &Expr) -> bool {
    matches!(
        e.kind,
        ExprKind::Int(_)
            | ExprKind::BigInt(_)
            | ExprKind::Float(_)
            | ExprKind::Str(_)
            | ExprKind::Bytes(_)
            | ExprKind::Bool(_)
            | ExprKind::None
            | ExprKind::Ellipsis
    ) || is_temp(e)
}

fn stmt(kind: StmtKind, span: Span) -> Stmt {
    Stmt { kind, span }
}

impl Lower {
    fn temp(&mut self) -> Ident {
        let id: Ident = Rc::from(format!(".y{}", self.live));
        self.live += 1;
        id
    }

    fn block(&mut self, body: &[Stmt]) -> Option<Vec<Stmt>> {
        let mut out = Vec::with_capacity(body.len());
        for s in body {
            self.stmt(s, &mut out)?;
        }
        Some(out)
    }

    /// The end of a statement lowered into `out`: its temporaries' names are free again.
    fn done(&mut self, mark: u32) -> Option<()> {
        self.live = mark;
        Some(())
    }

    fn stmt(&mut self, s: &Stmt, out: &mut Vec<Stmt>) -> Option<()> {
        let span = s.span;
        if !s.has_yield() {
            out.push(s.clone());
            return Some(());
        }
        let mark = self.live;
        let kind = match &s.kind {
            StmtKind::Expr(e) => StmtKind::Expr(self.top(e, out, span)?),
            StmtKind::Assign { targets, value } if targets.iter().any(Expr::has_yield) => {
                // The value first, then each target left to right, its parts evaluated as
                // it is stored.
                let v = self.top(value, out, span)?;
                let t = self.assign_temp(v, value.span, out, span);
                for target in targets {
                    self.store(target, name(&t, value.span), out, span)?;
                }
                return self.done(mark);
            }
            StmtKind::AnnAssign {
                target,
                value: Some(value),
                ..
            } => {
                // A function's annotations are never evaluated (PEP 526): an assignment.
                let v = self.top(value, out, span)?;
                self.store(target, v, out, span)?;
                return self.done(mark);
            }
            StmtKind::AnnAssign {
                target,
                value: None,
                ..
            } => {
                // Without a value only the target's object (and index) are evaluated.
                let parts = match &target.kind {
                    ExprKind::Attribute { value, .. } => vec![(**value).clone()],
                    ExprKind::Subscript { value, index } => {
                        vec![(**value).clone(), (**index).clone()]
                    }
                    _ => Vec::new(),
                };
                for e in self.seq(parts, out, span)? {
                    if !is_constant(&e) {
                        out.push(stmt(StmtKind::Expr(e), span));
                    }
                }
                return self.done(mark);
            }
            StmtKind::Del(targets) => {
                for t in targets {
                    self.delete(t, out, span)?;
                }
                return self.done(mark);
            }
            StmtKind::Def(def) => StmtKind::Def(self.def(def, out, span)?),
            StmtKind::Class(c) => StmtKind::Class(self.class(c, out, span)?),
            StmtKind::Decorated { decorators, def } => {
                // CPython evaluates the decorators top to bottom before the definition.
                let mut decs = Vec::with_capacity(decorators.len());
                for d in decorators {
                    let d = self.expr(d, out, span)?;
                    decs.push(self.stash(d, out, span));
                }
                let def = match &def.kind {
                    StmtKind::Def(d) => StmtKind::Def(self.def(d, out, span)?),
                    StmtKind::Class(c) => StmtKind::Class(self.class(c, out, span)?),
                    _ => return None,
                };
                StmtKind::Decorated {
                    decorators: decs,
                    def: Box::new(stmt(def, span)),
                }
            }
            StmtKind::Assign { targets, value } => StmtKind::Assign {
                targets: targets.clone(),
                value: self.top(value, out, span)?,
            },
            StmtKind::AugAssign { target, op, value } => {
                // CPython reads the target (its object and index first) before the value,
                // applies the in-place operator, then stores: the same, with temporaries.
                let (store, current) = match &target.kind {
                    ExprKind::Name(_) => (target.clone(), target.clone()),
                    ExprKind::Attribute {
                        value: obj,
                        attr,
                        attr_span,
                        ..
                    } => {
                        let obj = self.expr(obj, out, span)?;
                        let obj = self.stash(obj, out, span);
                        let e = Expr {
                            kind: ExprKind::Attribute {
                                value: Box::new(obj),
                                attr: attr.clone(),
                                attr_span: *attr_span,
                                hint: Default::default(),
                            },
                            span: target.span,
                        };
                        (e.clone(), e)
                    }
                    ExprKind::Subscript { value: obj, index } => {
                        let mut v =
                            self.seq(vec![(**obj).clone(), (**index).clone()], out, span)?;
                        let index = v.pop()?;
                        let obj = self.stash(v.pop()?, out, span);
                        let index = self.stash(index, out, span);
                        let e = Expr {
                            kind: ExprKind::Subscript {
                                value: Box::new(obj),
                                index: Box::new(index),
                            },
                            span: target.span,
                        };
                        (e.clone(), e)
                    }
                    _ => return None,
                };
                let t = self.assign_temp(current, target.span, out, span);
                let value = self.expr(value, out, span)?;
                out.push(stmt(
                    StmtKind::AugAssign {
                        target: name(&t, target.span),
                        op: *op,
                        value,
                    },
                    span,
                ));
                StmtKind::Assign {
                    targets: vec![store],
                    value: name(&t, target.span),
                }
            }
            StmtKind::Return(Some(e)) => StmtKind::Return(Some(self.expr(e, out, span)?)),
            StmtKind::Raise(Some(e)) => StmtKind::Raise(Some(self.expr(e, out, span)?)),
            StmtKind::RaiseFrom { exc, cause } => {
                let mut v = self.seq(vec![exc.clone(), cause.clone()], out, span)?;
                let cause = v.pop()?;
                let exc = v.pop()?;
                StmtKind::RaiseFrom { exc, cause }
            }
            StmtKind::Assert {
                test,
                msg: Some(msg),
            } if msg.has_yield() => {
                // The message is evaluated only when the test fails: `if not test:` around
                // `assert False, msg`, which raises the same AssertionError.
                let test = self.expr(test, out, span)?;
                let mut fail = Vec::new();
                let mark = self.live;
                let m = self.expr(msg, &mut fail, span);
                self.live = mark;
                fail.push(stmt(
                    StmtKind::Assert {
                        test: Expr {
                            kind: ExprKind::Bool(false),
                            span: test.span,
                        },
                        msg: Some(m?),
                    },
                    span,
                ));
                StmtKind::If {
                    branches: vec![(
                        Expr {
                            kind: ExprKind::Unary {
                                op: UnaryOp::Not,
                                operand: Box::new(test.clone()),
                            },
                            span: test.span,
                        },
                        fail,
                    )],
                    orelse: None,
                }
            }
            StmtKind::Assert { test, msg } => StmtKind::Assert {
                test: self.expr(test, out, span)?,
                msg: msg.clone(),
            },
            StmtKind::If { branches, orelse } => {
                // The first test with a `yield` (after the first) starts a nested `if` in
                // the `else` of the tests before it.
                let (head, tail) = split_at_later(branches, |(t, _)| t.has_yield());
                let orelse = if tail.is_empty() {
                    match orelse {
                        Some(b) => Some(self.block(b)?),
                        None => None,
                    }
                } else {
                    let nested = stmt(
                        StmtKind::If {
                            branches: tail.to_vec(),
                            orelse: orelse.clone(),
                        },
                        span,
                    );
                    Some(self.block_own(std::slice::from_ref(&nested))?)
                };
                let mut new = Vec::with_capacity(head.len());
                for (i, (t, b)) in head.iter().enumerate() {
                    let t = if i == 0 {
                        self.expr(t, out, span)?
                    } else {
                        t.clone()
                    };
                    new.push((t, self.block_own(b)?));
                }
                StmtKind::If {
                    branches: new,
                    orelse,
                }
            }
            StmtKind::While { cond, body, orelse } => {
                // The flag below is numbered before the body's temporaries, which must not
                // overwrite it.
                let flag = (cond.has_yield() && orelse.as_deref().is_some_and(breaks))
                    .then(|| self.temp());
                let body = self.block_own(body)?;
                let orelse = match orelse {
                    Some(b) => Some(self.block_own(b)?),
                    None => None,
                };
                if !cond.has_yield() {
                    StmtKind::While {
                        cond: cond.clone(),
                        body,
                        orelse,
                    }
                } else {
                    // `while c: body else: e` as `while True: if not c: e; break` then body.
                    // When `e` has a `break`/`continue` of its own (which would now leave the
                    // wrong loop), `e` runs after the loop instead, behind a flag set where
                    // the test fails.
                    let (orelse, after) = match (orelse, flag) {
                        (Some(e), Some(f)) => {
                            let at = cond.span;
                            let flag = |v: bool| {
                                stmt(
                                    StmtKind::Assign {
                                        targets: vec![name(&f, at)],
                                        value: Expr {
                                            kind: ExprKind::Bool(v),
                                            span: at,
                                        },
                                    },
                                    span,
                                )
                            };
                            out.push(flag(false));
                            let after = stmt(
                                StmtKind::If {
                                    branches: vec![(name(&f, at), e)],
                                    orelse: None,
                                },
                                span,
                            );
                            (Some(vec![flag(true)]), Some(after))
                        }
                        (o, _) => (o, None),
                    };
                    let mut top = Vec::new();
                    let mark = self.live;
                    let c = self.expr(cond, &mut top, span)?;
                    self.live = mark;
                    let mut leave = orelse.unwrap_or_default();
                    leave.push(stmt(StmtKind::Break, span));
                    top.push(stmt(
                        StmtKind::If {
                            branches: vec![(
                                Expr {
                                    kind: ExprKind::Unary {
                                        op: UnaryOp::Not,
                                        operand: Box::new(c),
                                    },
                                    span: cond.span,
                                },
                                leave,
                            )],
                            orelse: None,
                        },
                        span,
                    ));
                    top.extend(body);
                    let w = StmtKind::While {
                        cond: Expr {
                            kind: ExprKind::Bool(true),
                            span: cond.span,
                        },
                        body: top,
                        orelse: None,
                    };
                    match after {
                        Some(after) => {
                            out.push(stmt(w, span));
                            after.kind
                        }
                        None => w,
                    }
                }
            }
            StmtKind::For { target, iter, .. } => {
                if target.has_yield() {
                    return None;
                }
                let hoisted = self.expr(iter, out, span)?;
                let mut kind = self.blocks_own(&s.kind)?;
                if let StmtKind::For { iter, .. } = &mut kind {
                    *iter = hoisted;
                }
                kind
            }
            StmtKind::With { items, body } => {
                if items
                    .iter()
                    .any(|i| i.target.as_ref().is_some_and(Expr::has_yield))
                {
                    return None;
                }
                // `with a, (yield) as b:` is `with a:` around `with (yield) as b:`, as
                // CPython enters `a` before evaluating the second item.
                let (head, tail) = split_at_later(items, |i| i.context.has_yield());
                let body = if tail.is_empty() {
                    self.block_own(body)?
                } else {
                    let nested = stmt(
                        StmtKind::With {
                            items: tail.to_vec(),
                            body: body.clone(),
                        },
                        span,
                    );
                    self.block_own(std::slice::from_ref(&nested))?
                };
                let mut new = Vec::with_capacity(head.len());
                for (i, item) in head.iter().enumerate() {
                    let context = if i == 0 {
                        self.expr(&item.context, out, span)?
                    } else {
                        item.context.clone()
                    };
                    new.push(WithItem {
                        context,
                        target: item.target.clone(),
                    });
                }
                StmtKind::With { items: new, body }
            }
            StmtKind::Try { handlers, .. } => {
                // An `except` clause is evaluated only while an exception is matched: its
                // `yield` cannot be hoisted, and only `except (yield v):` suspends there.
                if !handlers
                    .iter()
                    .all(|h| h.kind.as_ref().is_none_or(clause_resumable))
                {
                    return None;
                }
                self.blocks_own(&s.kind)?
            }
            StmtKind::Match { subject, cases } => {
                // The subject is evaluated first; a guard is evaluated between patterns, so
                // one with a `yield` stays on a stack of its own.
                if cases
                    .iter()
                    .any(|c| c.guard.as_ref().is_some_and(Expr::has_yield))
                {
                    return None;
                }
                let hoisted = self.expr(subject, out, span)?;
                let mut kind = self.blocks_own(&s.kind)?;
                if let StmtKind::Match { subject, .. } = &mut kind {
                    *subject = hoisted;
                }
                kind
            }
            _ => return None,
        };
        out.push(stmt(kind, span));
        self.done(mark)
    }

    /// The statement with each of its nested blocks lowered (its header as it was).
    fn blocks_own(&mut self, kind: &StmtKind) -> Option<StmtKind> {
        let mut kind = kind.clone();
        kind.replace_blocks(|b| self.block_own(b)).then_some(kind)
    }

    /// A nested block, its statements' temporaries numbered after those live around it.
    fn block_own(&mut self, body: &[Stmt]) -> Option<Vec<Stmt>> {
        let mark = self.live;
        let b = self.block(body);
        self.live = mark;
        b
    }

    /// A statement's whole expression: a `yield` standing there stays a `yield` statement
    /// (only its operand is lowered); anything else is lowered as an expression.
    fn top(&mut self, e: &Expr, out: &mut Vec<Stmt>, span: Span) -> Option<Expr> {
        match &e.kind {
            ExprKind::Yield(v) => {
                let v = match v {
                    Some(v) => Some(Box::new(self.expr(v, out, span)?)),
                    None => None,
                };
                Some(Expr {
                    kind: ExprKind::Yield(v),
                    span: e.span,
                })
            }
            ExprKind::YieldFrom(v) => Some(Expr {
                kind: ExprKind::YieldFrom(Box::new(self.expr(v, out, span)?)),
                span: e.span,
            }),
            _ => self.expr(e, out, span),
        }
    }

    /// Keeps a value computed now for an expression evaluated later.
    fn stash(&mut self, e: Expr, out: &mut Vec<Stmt>, span: Span) -> Expr {
        if is_constant(&e) {
            return e;
        }
        let at = e.span;
        let t = self.assign_temp(e, at, out, span);
        name(&t, at)
    }

    /// `.yN = value` appended to `out`; returns the temporary's name.
    fn assign_temp(&mut self, value: Expr, at: Span, out: &mut Vec<Stmt>, span: Span) -> Ident {
        let t = self.temp();
        out.push(stmt(
            StmtKind::Assign {
                targets: vec![name(&t, at)],
                value,
            },
            span,
        ));
        t
    }

    /// Operands evaluated left to right: those before the last one with a `yield` are
    /// computed (and kept) before it; those after it stay in place.
    fn seq(&mut self, es: Vec<Expr>, out: &mut Vec<Stmt>, span: Span) -> Option<Vec<Expr>> {
        let Some(last) = es.iter().rposition(Expr::has_yield) else {
            return Some(es);
        };
        let mut new = Vec::with_capacity(es.len());
        for (i, e) in es.into_iter().enumerate() {
            if i < last {
                let e = self.expr(&e, out, span)?;
                new.push(self.stash(e, out, span));
            } else if i == last {
                new.push(self.expr(&e, out, span)?);
            } else {
                new.push(e);
            }
        }
        Some(new)
    }

    /// `e` without `yield`: statements appended to `out` compute what comes before its last
    /// `yield`; the expression returned computes the rest.
    fn expr(&mut self, e: &Expr, out: &mut Vec<Stmt>, span: Span) -> Option<Expr> {
        if !e.has_yield() {
            return Some(e.clone());
        }
        let at = e.span;
        let rebuilt = |kind| Some(Expr { kind, span: at });
        match &e.kind {
            ExprKind::Yield(_) | ExprKind::YieldFrom(_) => {
                let y = self.top(e, out, span)?;
                let t = self.assign_temp(y, at, out, span);
                Some(name(&t, at))
            }
            ExprKind::NamedExpr { target, value } => rebuilt(ExprKind::NamedExpr {
                target: target.clone(),
                value: Box::new(self.expr(value, out, span)?),
            }),
            ExprKind::List(items) => rebuilt(ExprKind::List(self.seq(items.clone(), out, span)?)),
            ExprKind::Tuple(items) => {
                rebuilt(ExprKind::Tuple(self.seq(items.clone(), out, span)?))
            }
            ExprKind::Set(items) => rebuilt(ExprKind::Set(self.seq(items.clone(), out, span)?)),
            ExprKind::Starred(v) => rebuilt(ExprKind::Starred(Box::new(self.expr(v, out, span)?))),
            ExprKind::Dict(items) => {
                let flat: Vec<Expr> = items
                    .iter()
                    .flat_map(|(k, v)| k.iter().chain(std::iter::once(v)))
                    .cloned()
                    .collect();
                let mut flat = self.seq(flat, out, span)?.into_iter();
                let mut new = Vec::with_capacity(items.len());
                for (k, _) in items {
                    let k = match k {
                        Some(_) => Some(flat.next()?),
                        None => None,
                    };
                    new.push((k, flat.next()?));
                }
                rebuilt(ExprKind::Dict(new))
            }
            ExprKind::Attribute {
                value,
                attr,
                attr_span,
                ..
            } => rebuilt(ExprKind::Attribute {
                value: Box::new(self.expr(value, out, span)?),
                attr: attr.clone(),
                attr_span: *attr_span,
                hint: Default::default(),
            }),
            ExprKind::Subscript { value, index } => {
                let mut v = self.seq(vec![(**value).clone(), (**index).clone()], out, span)?;
                let index = v.pop()?;
                let value = v.pop()?;
                rebuilt(ExprKind::Subscript {
                    value: Box::new(value),
                    index: Box::new(index),
                })
            }
            ExprKind::Slice { lower, upper, step } => {
                let parts = [lower, upper, step];
                let flat: Vec<Expr> = parts.iter().filter_map(|p| p.as_deref().cloned()).collect();
                let mut flat = self.seq(flat, out, span)?.into_iter();
                let mut next = |p: &Option<Box<Expr>>| -> Option<Option<Box<Expr>>> {
                    Some(match p {
                        Some(_) => Some(Box::new(flat.next()?)),
                        None => None,
                    })
                };
                let (lower, upper, step) = (next(lower)?, next(upper)?, next(step)?);
                rebuilt(ExprKind::Slice { lower, upper, step })
            }
            ExprKind::Call { func, args } => {
                let mut flat = vec![(**func).clone()];
                flat.extend(args.iter().map(|a| match a {
                    Arg::Positional(e) | Arg::Star(e) | Arg::DoubleStar(e) => e.clone(),
                    Arg::Keyword { value, .. } => value.clone(),
                }));
                let mut flat = self.seq(flat, out, span)?.into_iter();
                let func = flat.next()?;
                let mut new = Vec::with_capacity(args.len());
                for a in args {
                    let v = flat.next()?;
                    new.push(match a {
                        Arg::Positional(_) => Arg::Positional(v),
                        Arg::Star(_) => Arg::Star(v),
                        Arg::DoubleStar(_) => Arg::DoubleStar(v),
                        Arg::Keyword { name, span, .. } => Arg::Keyword {
                            name: name.clone(),
                            value: v,
                            span: *span,
                        },
                    });
                }
                rebuilt(ExprKind::Call {
                    func: Box::new(func),
                    args: new,
                })
            }
            ExprKind::Unary { op, operand } => rebuilt(ExprKind::Unary {
                op: *op,
                operand: Box::new(self.expr(operand, out, span)?),
            }),
            ExprKind::Binary { op, left, right } => {
                let mut v = self.seq(vec![(**left).clone(), (**right).clone()], out, span)?;
                let right = v.pop()?;
                let left = v.pop()?;
                rebuilt(ExprKind::Binary {
                    op: *op,
                    left: Box::new(left),
                    right: Box::new(right),
                })
            }
            ExprKind::Compare { left, ops } if ops.iter().skip(1).any(|(_, e)| e.has_yield()) => {
                // Operands after the first comparison are evaluated only if the ones before
                // hold: `a < b < (yield)` is `t = a < (m := b)`, then `if t: t = m < (yield)`.
                let k = ops.iter().skip(1).position(|(_, e)| e.has_yield())? + 1;
                let m = self.temp();
                let mut head: Vec<_> = ops[..k].to_vec();
                let (_, last) = head.last_mut()?;
                let at_m = last.span;
                *last = Expr {
                    kind: ExprKind::NamedExpr {
                        target: NameRef::new(m.clone()),
                        value: Box::new(last.clone()),
                    },
                    span: at_m,
                };
                let head = self.expr(
                    &Expr {
                        kind: ExprKind::Compare {
                            left: left.clone(),
                            ops: head,
                        },
                        span: at,
                    },
                    out,
                    span,
                )?;
                let t = self.assign_temp(head, at, out, span);
                let rest = Expr {
                    kind: ExprKind::Compare {
                        left: Box::new(name(&m, at_m)),
                        ops: ops[k..].to_vec(),
                    },
                    span: at,
                };
                let branch = self.branch(&rest, &t, span)?;
                out.push(stmt(
                    StmtKind::If {
                        branches: vec![(name(&t, at), branch)],
                        orelse: None,
                    },
                    span,
                ));
                Some(name(&t, at))
            }
            ExprKind::Compare { left, ops } => {
                let mut flat = vec![(**left).clone()];
                flat.extend(ops.first().map(|(_, e)| e.clone()));
                let mut flat = self.seq(flat, out, span)?.into_iter();
                let left = flat.next()?;
                let mut new = ops.clone();
                if let (Some(first), Some(e)) = (new.first_mut(), flat.next()) {
                    first.1 = e;
                }
                rebuilt(ExprKind::Compare {
                    left: Box::new(left),
                    ops: new,
                })
            }
            ExprKind::BoolOp { op, values } => {
                // `a and b and (yield) and c`: `t = a and b`, then `if t: t = (yield) and c`.
                let first = values.iter().position(Expr::has_yield)?;
                let (before, rest) = if first == 0 {
                    (&values[..1], &values[1..])
                } else {
                    (&values[..first], &values[first..])
                };
                let head = if before.len() == 1 {
                    self.expr(&before[0], out, span)?
                } else {
                    Expr {
                        kind: ExprKind::BoolOp {
                            op: *op,
                            values: before.to_vec(),
                        },
                        span: at,
                    }
                };
                if rest.is_empty() {
                    return Some(head);
                }
                let t = self.assign_temp(head, at, out, span);
                let rest = if rest.len() == 1 {
                    rest[0].clone()
                } else {
                    Expr {
                        kind: ExprKind::BoolOp {
                            op: *op,
                            values: rest.to_vec(),
                        },
                        span: at,
                    }
                };
                let branch = self.branch(&rest, &t, span)?;
                let test = match op {
                    BoolOpKind::And => name(&t, at),
                    BoolOpKind::Or => Expr {
                        kind: ExprKind::Unary {
                            op: UnaryOp::Not,
                            operand: Box::new(name(&t, at)),
                        },
                        span: at,
                    },
                };
                out.push(stmt(
                    StmtKind::If {
                        branches: vec![(test, branch)],
                        orelse: None,
                    },
                    span,
                ));
                Some(name(&t, at))
            }
            ExprKind::IfExp { test, body, orelse } => {
                let test = self.expr(test, out, span)?;
                if !body.has_yield() && !orelse.has_yield() {
                    return rebuilt(ExprKind::IfExp {
                        test: Box::new(test),
                        body: body.clone(),
                        orelse: orelse.clone(),
                    });
                }
                let t = self.temp();
                let yes = self.branch(body, &t, span)?;
                let no = self.branch(orelse, &t, span)?;
                out.push(stmt(
                    StmtKind::If {
                        branches: vec![(test, yes)],
                        orelse: Some(no),
                    },
                    span,
                ));
                Some(name(&t, at))
            }
            ExprKind::FString(parts) => {
                let has = |p: &FStringPart| match p {
                    FStringPart::Lit(_) => false,
                    FStringPart::Expr { .. } => fstring_has_yield(std::slice::from_ref(p)),
                };
                let last = parts.iter().rposition(has)?;
                // A piece before the last `yield` is formatted then (CPython formats each
                // piece as it goes), and read back as the string it made.
                let mut new = Vec::with_capacity(parts.len());
                for (i, p) in parts.iter().enumerate() {
                    let FStringPart::Expr { expr, .. } = p else {
                        new.push(p.clone());
                        continue;
                    };
                    if i < last {
                        let piece = self.piece(p, out, span)?;
                        let s = self.stash(
                            Expr {
                                kind: ExprKind::FString(vec![piece]),
                                span: expr.span,
                            },
                            out,
                            span,
                        );
                        new.push(FStringPart::Expr {
                            expr: Box::new(s),
                            conversion: None,
                            spec: Vec::new(),
                            debug_text: None,
                        });
                    } else if i == last {
                        new.push(self.piece(p, out, span)?);
                    } else {
                        new.push(p.clone());
                    }
                }
                rebuilt(ExprKind::FString(new))
            }
            ExprKind::Lambda { params, body } => rebuilt(ExprKind::Lambda {
                params: self.defaults(params, out, span)?,
                body: body.clone(),
            }),
            ExprKind::GeneratorExp { def, iter } => rebuilt(ExprKind::GeneratorExp {
                def: def.clone(),
                iter: Box::new(self.expr(iter, out, span)?),
            }),
            _ => None,
        }
    }

    /// An f-string's `{value!c:spec}` piece lowered: the value, then the spec's pieces (CPython
    /// evaluates both before converting and formatting), the spec becoming the string it makes.
    fn piece(&mut self, p: &FStringPart, out: &mut Vec<Stmt>, span: Span) -> Option<FStringPart> {
        let FStringPart::Expr {
            expr,
            conversion,
            spec,
            debug_text,
        } = p
        else {
            return Some(p.clone());
        };
        let (expr, spec) = if fstring_has_yield(spec) {
            let v = self.expr(expr, out, span)?;
            let v = self.stash(v, out, span);
            let s = self.expr(
                &Expr {
                    kind: ExprKind::FString(spec.clone()),
                    span: expr.span,
                },
                out,
                span,
            )?;
            let s = FStringPart::Expr {
                expr: Box::new(s),
                conversion: None,
                spec: Vec::new(),
                debug_text: None,
            };
            (v, vec![s])
        } else {
            (self.expr(expr, out, span)?, spec.clone())
        };
        Some(FStringPart::Expr {
            expr: Box::new(expr),
            conversion: *conversion,
            spec,
            debug_text: debug_text.clone(),
        })
    }

    /// Parameters whose defaults are computed now, left to right (as a `def` or `lambda`
    /// evaluates them), and read from temporaries.
    fn defaults(
        &mut self,
        params: &[Param],
        out: &mut Vec<Stmt>,
        span: Span,
    ) -> Option<Rc<[Param]>> {
        let values: Vec<Expr> = params.iter().filter_map(|p| p.default.clone()).collect();
        let mut values = values.into_iter();
        let mut new = Vec::with_capacity(params.len());
        for p in params {
            let mut p = p.clone();
            if p.default.is_some() {
                let v = self.expr(&values.next()?, out, span)?;
                p.default = Some(self.stash(v, out, span));
            }
            new.push(p);
        }
        Some(new.into())
    }

    /// A `def` whose defaults hold a `yield`, its defaults computed first.
    fn def(&mut self, d: &Rc<FuncDef>, out: &mut Vec<Stmt>, span: Span) -> Option<Rc<FuncDef>> {
        if !d
            .params
            .iter()
            .any(|p| p.default.as_ref().is_some_and(Expr::has_yield))
        {
            return Some(d.clone());
        }
        let mut new = (**d).clone();
        new.params = self.defaults(&d.params, out, span)?;
        Some(Rc::new(new))
    }

    /// A `class` whose bases hold a `yield`, its bases and keywords computed first.
    fn class(&mut self, c: &Rc<ClassDef>, out: &mut Vec<Stmt>, span: Span) -> Option<Rc<ClassDef>> {
        if c.body.iter().any(Stmt::has_yield) {
            return None;
        }
        if !c.bases.iter().any(Arg::has_yield) {
            return Some(c.clone());
        }
        let mut new = (**c).clone();
        let mut bases = Vec::with_capacity(c.bases.len());
        for a in &c.bases {
            bases.push(match a {
                Arg::Positional(e) => Arg::Positional(self.stashed(e, out, span)?),
                Arg::Star(e) => Arg::Star(self.stashed(e, out, span)?),
                Arg::DoubleStar(e) => Arg::DoubleStar(self.stashed(e, out, span)?),
                Arg::Keyword {
                    name,
                    value,
                    span: at,
                } => Arg::Keyword {
                    name: name.clone(),
                    value: self.stashed(value, out, span)?,
                    span: *at,
                },
            });
        }
        new.bases = bases;
        Some(Rc::new(new))
    }

    /// `e` computed now into a temporary (a constant stays as it is).
    fn stashed(&mut self, e: &Expr, out: &mut Vec<Stmt>, span: Span) -> Option<Expr> {
        let v = self.expr(e, out, span)?;
        Some(self.stash(v, out, span))
    }

    /// `src` stored into `target` the way an assignment stores: a target's object and index
    /// are evaluated as it is stored, and a tuple target unpacks before any element is.
    fn store(&mut self, target: &Expr, src: Expr, out: &mut Vec<Stmt>, span: Span) -> Option<()> {
        let assign = |target: Expr, value: Expr| {
            stmt(
                StmtKind::Assign {
                    targets: vec![target],
                    value,
                },
                span,
            )
        };
        match &target.kind {
            ExprKind::Tuple(items) | ExprKind::List(items) if target.has_yield() => {
                let mut temps = Vec::with_capacity(items.len());
                let mut shape = Vec::with_capacity(items.len());
                for item in items {
                    let t = name(&self.temp(), item.span);
                    shape.push(match &item.kind {
                        ExprKind::Starred(_) => Expr {
                            kind: ExprKind::Starred(Box::new(t.clone())),
                            span: item.span,
                        },
                        _ => t.clone(),
                    });
                    temps.push(t);
                }
                let shape = Expr {
                    kind: ExprKind::Tuple(shape),
                    span: target.span,
                };
                out.push(assign(shape, src));
                for (item, t) in items.iter().zip(temps) {
                    let inner = match &item.kind {
                        ExprKind::Starred(x) => x,
                        _ => item,
                    };
                    self.store(inner, t, out, span)?;
                }
            }
            _ => {
                let t = self.target(target, out, span)?;
                out.push(assign(t, src));
            }
        }
        Some(())
    }

    /// `del target`, its object and index evaluated first.
    fn delete(&mut self, target: &Expr, out: &mut Vec<Stmt>, span: Span) -> Option<()> {
        match &target.kind {
            ExprKind::Tuple(items) | ExprKind::List(items) if target.has_yield() => {
                for item in items {
                    self.delete(item, out, span)?;
                }
            }
            _ => {
                let t = self.target(target, out, span)?;
                out.push(stmt(StmtKind::Del(vec![t]), span));
            }
        }
        Some(())
    }

    /// An attribute or item target with its object and index lowered (any other target with a
    /// `yield` in it: None).
    fn target(&mut self, target: &Expr, out: &mut Vec<Stmt>, span: Span) -> Option<Expr> {
        if !target.has_yield() {
            return Some(target.clone());
        }
        match &target.kind {
            ExprKind::Attribute { .. } | ExprKind::Subscript { .. } => self.expr(target, out, span),
            _ => None,
        }
    }

    /// The statements of a branch that computes `e` into the temporary `t`, its own
    /// temporaries numbered after those live around it.
    fn branch(&mut self, e: &Expr, t: &Ident, span: Span) -> Option<Vec<Stmt>> {
        let mark = self.live;
        let mut b = Vec::new();
        let r = self.expr(e, &mut b, span);
        self.live = mark;
        b.push(stmt(
            StmtKind::Assign {
                targets: vec![name(t, e.span)],
                value: r?,
            },
            span,
        ));
        Some(b)
    }
}

/// `items` split before the first one after the first that `pred` holds for (none: all in
/// the head): `elif` tests and `with` items evaluated only after the earlier ones ran.
fn split_at_later<T>(items: &[T], pred: impl Fn(&T) -> bool) -> (&[T], &[T]) {
    let at = items
        .iter()
        .skip(1)
        .position(pred)
        .map_or(items.len(), |p| p + 1);
    items.split_at(at)
}

/// A `break` or `continue` of this block's own loop (not one inside a nested loop or function).
fn breaks(body: &[Stmt]) -> bool {
    body.iter().any(|s| match &s.kind {
        StmtKind::Break | StmtKind::Continue => true,
        // A nested loop's own `break`s leave it; one in its `else` leaves this loop.
        StmtKind::While { orelse, .. } | StmtKind::For { orelse, .. } => {
            orelse.as_deref().is_some_and(breaks)
        }
        kind => kind.blocks().into_iter().any(breaks),
    })
}
