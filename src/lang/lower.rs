//! Hoisting `yield` out of expressions, so that a generator body whose yields stand inside
//! expressions (`print((yield n))`, `f(a, (yield))`, `return (yield)`, `x = 1 + (yield)`,
//! `a and (yield)`, `x if c else (yield)`) becomes one whose every `yield` is a statement of its
//! own ([`super::ast::resumable_body`]), which the stackless runner suspends without a stack.
//!
//! Evaluation order is CPython's: everything an expression evaluates before its last `yield`
//! (the callee, earlier arguments, a left operand, even a plain name: a global may be rebound
//! while the generator is suspended) is computed first, into a temporary named `.yN` (a name no
//! program can spell), then `.yN = yield v`, then the rest of the expression reads the
//! temporaries. Short-circuiting operators and conditional expressions with a `yield` in a
//! later operand become `if` statements, so nothing is evaluated that CPython would skip. Each
//! lowered statement keeps the original statement's span and every expression its own, so
//! tracebacks name the same lines and carets. The temporaries are deleted after the statement
//! that reads them, so they hold nothing longer than CPython's value stack does.
//!
//! What is not lowered (the body then runs on a stack of its own, `crate::eval::generator`):
//! a `yield` in an assignment or `del` target, an `except` clause's expression, a `with`
//! item's target, a default argument, decorator or class base, an annotated assignment, an
//! `assert` message, a comparison chain's operands after the first comparison, an f-string's
//! format spec, a `while` test whose `else` block breaks or continues, and a magic line.

use std::rc::Rc;

use super::ast::{
    Arg, BoolOpKind, Expr, ExprKind, FStringPart, Ident, NameRef, Stmt, StmtKind, UnaryOp, WithItem,
};
use super::span::Span;

/// The body with every `yield` hoisted to a statement of its own, or None where some `yield`
/// cannot be (see the module's list).
pub fn hoist_yields(body: &[Stmt]) -> Option<Vec<Stmt>> {
    let mut l = Lower {
        next: 0,
        temps: Vec::new(),
    };
    l.block(body)
}

struct Lower {
    /// The next temporary's number (unique in the function).
    next: u32,
    /// Temporaries made for the statement being lowered, deleted after it.
    temps: Vec<Ident>,
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
        let id: Ident = Rc::from(format!(".y{}", self.next));
        self.next += 1;
        self.temps.push(id.clone());
        id
    }

    fn block(&mut self, body: &[Stmt]) -> Option<Vec<Stmt>> {
        let mut out = Vec::with_capacity(body.len());
        for s in body {
            self.stmt(s, &mut out)?;
        }
        Some(out)
    }

    /// `del` of the temporaries made since `mark` (none: nothing).
    fn release(&mut self, mark: usize, span: Span, out: &mut Vec<Stmt>) {
        if self.temps.len() > mark {
            let names = self.temps.drain(mark..).map(|t| name(&t, span)).collect();
            out.push(stmt(StmtKind::Del(names), span));
        }
    }

    fn stmt(&mut self, s: &Stmt, out: &mut Vec<Stmt>) -> Option<()> {
        let span = s.span;
        if !s.has_yield() {
            out.push(s.clone());
            return Some(());
        }
        let mark = self.temps.len();
        let kind = match &s.kind {
            StmtKind::Expr(e) => StmtKind::Expr(self.top(e, out, span)?),
            StmtKind::Assign { targets, value } => {
                if targets.iter().any(Expr::has_yield) {
                    return None;
                }
                StmtKind::Assign {
                    targets: targets.clone(),
                    value: self.top(value, out, span)?,
                }
            }
            StmtKind::AugAssign { target, op, value } => {
                if target.has_yield() {
                    return None;
                }
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
                        let obj = self.stash((**obj).clone(), out, span);
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
                        let obj = self.stash((**obj).clone(), out, span);
                        let index = self.stash((**index).clone(), out, span);
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
                let t = self.temp();
                out.push(stmt(
                    StmtKind::Assign {
                        targets: vec![name(&t, target.span)],
                        value: current,
                    },
                    span,
                ));
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
            StmtKind::Assert { test, msg } => {
                if msg.as_ref().is_some_and(Expr::has_yield) {
                    return None;
                }
                StmtKind::Assert {
                    test: self.expr(test, out, span)?,
                    msg: msg.clone(),
                }
            }
            StmtKind::If { branches, orelse } => {
                // The first test with a `yield` (after the first) starts a nested `if` in
                // the `else` of the tests before it.
                let split = branches
                    .iter()
                    .skip(1)
                    .position(|(t, _)| t.has_yield())
                    .map(|p| p + 1);
                let (head, tail) = branches.split_at(split.unwrap_or(branches.len()));
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
                    // `while c: body else: e` as `while True: if not c: e; break` then body:
                    // only when `e` has no `break`/`continue` of its own (they would now
                    // leave the wrong loop).
                    if orelse.as_deref().is_some_and(breaks) {
                        return None;
                    }
                    let mut top = Vec::new();
                    let outer = std::mem::take(&mut self.temps);
                    let c = self.expr(cond, &mut top, span)?;
                    let mut leave = orelse.unwrap_or_default();
                    leave.push(stmt(StmtKind::Break, span));
                    let mut inner = std::mem::replace(&mut self.temps, outer);
                    // The test's temporaries go before leaving and before the body.
                    let dels: Vec<Expr> = inner.drain(..).map(|t| name(&t, span)).collect();
                    if !dels.is_empty() {
                        leave.insert(0, stmt(StmtKind::Del(dels.clone()), span));
                    }
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
                    if !dels.is_empty() {
                        top.push(stmt(StmtKind::Del(dels), span));
                    }
                    top.extend(body);
                    StmtKind::While {
                        cond: Expr {
                            kind: ExprKind::Bool(true),
                            span: cond.span,
                        },
                        body: top,
                        orelse: None,
                    }
                }
            }
            StmtKind::For {
                target,
                iter,
                body,
                orelse,
            } => {
                if target.has_yield() {
                    return None;
                }
                let iter = self.expr(iter, out, span)?;
                StmtKind::For {
                    target: target.clone(),
                    iter,
                    body: self.block_own(body)?,
                    orelse: match orelse {
                        Some(b) => Some(self.block_own(b)?),
                        None => None,
                    },
                }
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
                let split = items
                    .iter()
                    .skip(1)
                    .position(|i| i.context.has_yield())
                    .map(|p| p + 1);
                let (head, tail) = items.split_at(split.unwrap_or(items.len()));
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
            StmtKind::Try {
                body,
                handlers,
                orelse,
                finally,
            } => {
                let mut hs = Vec::with_capacity(handlers.len());
                for h in handlers {
                    if h.kind.as_ref().is_some_and(Expr::has_yield) {
                        return None;
                    }
                    let mut h2 = h.clone();
                    h2.body = self.block_own(&h.body)?;
                    hs.push(h2);
                }
                StmtKind::Try {
                    body: self.block_own(body)?,
                    handlers: hs,
                    orelse: match orelse {
                        Some(b) => Some(self.block_own(b)?),
                        None => None,
                    },
                    finally: match finally {
                        Some(b) => Some(self.block_own(b)?),
                        None => None,
                    },
                }
            }
            _ => return None,
        };
        out.push(stmt(kind, span));
        self.release(mark, span, out);
        Some(())
    }

    /// A nested block, its statements' temporaries their own.
    fn block_own(&mut self, body: &[Stmt]) -> Option<Vec<Stmt>> {
        let outer = std::mem::take(&mut self.temps);
        let b = self.block(body);
        self.temps = outer;
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
        let t = self.temp();
        let at = e.span;
        out.push(stmt(
            StmtKind::Assign {
                targets: vec![name(&t, at)],
                value: e,
            },
            span,
        ));
        name(&t, at)
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
                let t = self.temp();
                out.push(stmt(
                    StmtKind::Assign {
                        targets: vec![name(&t, at)],
                        value: y,
                    },
                    span,
                ));
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
            ExprKind::Compare { left, ops } => {
                // Operands after the first comparison are evaluated only if it holds.
                if ops.iter().skip(1).any(|(_, e)| e.has_yield()) {
                    return None;
                }
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
                let t = self.temp();
                out.push(stmt(
                    StmtKind::Assign {
                        targets: vec![name(&t, at)],
                        value: head,
                    },
                    span,
                ));
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
                let mut flat = Vec::new();
                for p in parts {
                    if let FStringPart::Expr { expr, spec, .. } = p {
                        if spec.iter().any(|s| match s {
                            FStringPart::Lit(_) => false,
                            FStringPart::Expr { expr, .. } => expr.has_yield(),
                        }) {
                            return None;
                        }
                        flat.push((**expr).clone());
                    }
                }
                let last = flat.iter().rposition(Expr::has_yield)?;
                // A piece before the last `yield` is formatted then (CPython formats each
                // piece as it goes), and read back as the string it made.
                let mut new = Vec::with_capacity(parts.len());
                let mut i = 0;
                for p in parts {
                    let FStringPart::Expr { expr, .. } = p else {
                        new.push(p.clone());
                        continue;
                    };
                    if i < last {
                        let mut piece = p.clone();
                        if let FStringPart::Expr { expr: x, .. } = &mut piece {
                            **x = self.expr(expr, out, span)?;
                        }
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
                        let mut piece = p.clone();
                        if let FStringPart::Expr { expr: x, .. } = &mut piece {
                            **x = self.expr(expr, out, span)?;
                        }
                        new.push(piece);
                    } else {
                        new.push(p.clone());
                    }
                    i += 1;
                }
                rebuilt(ExprKind::FString(new))
            }
            ExprKind::GeneratorExp { def, iter } => rebuilt(ExprKind::GeneratorExp {
                def: def.clone(),
                iter: Box::new(self.expr(iter, out, span)?),
            }),
            _ => None,
        }
    }

    /// The statements of a branch that computes `e` into the temporary `t`, its own
    /// temporaries deleted at its end.
    fn branch(&mut self, e: &Expr, t: &Ident, span: Span) -> Option<Vec<Stmt>> {
        let outer = std::mem::take(&mut self.temps);
        let mut b = Vec::new();
        let r = self.expr(e, &mut b, span);
        let mine = std::mem::replace(&mut self.temps, outer);
        let v = r?;
        b.push(stmt(
            StmtKind::Assign {
                targets: vec![name(t, e.span)],
                value: v,
            },
            span,
        ));
        if !mine.is_empty() {
            let names = mine.iter().map(|n| name(n, span)).collect();
            b.push(stmt(StmtKind::Del(names), span));
        }
        Some(b)
    }
}

/// A `break` or `continue` of this block's own loop (not one inside a nested loop or function).
fn breaks(body: &[Stmt]) -> bool {
    body.iter().any(|s| match &s.kind {
        StmtKind::Break | StmtKind::Continue => true,
        StmtKind::If { branches, orelse } => {
            branches.iter().any(|(_, b)| breaks(b)) || orelse.as_deref().is_some_and(breaks)
        }
        StmtKind::With { body, .. } => breaks(body),
        StmtKind::Try {
            body,
            handlers,
            orelse,
            finally,
        } => {
            breaks(body)
                || handlers.iter().any(|h| breaks(&h.body))
                || orelse.as_deref().is_some_and(breaks)
                || finally.as_deref().is_some_and(breaks)
        }
        _ => false,
    })
}
