//! The parts of a compound statement (`if`, `while`, `for`, `with`, `try`, `match`) that
//! analyses walk: its nested blocks and the expressions its header evaluates. Written once
//! here, so that every walk over statements (`has_yield`, `resumable_body`, the local and
//! declared names, `lower`'s rewriting) visits the same places.

use super::ast::{ExceptHandler, Expr, Stmt, StmtKind};
use super::pattern::MatchCase;

/// Calls `$f` on each block nested in the statement kind `$kind` (a `&StmtKind` or a
/// `&mut StmtKind`: the same arms serve both borrows), in source order. A `def`'s or
/// `class`'s body is a scope of its own and is not one of them.
macro_rules! for_each_block {
    ($kind:expr, $f:expr) => {
        match $kind {
            StmtKind::If { branches, orelse } => {
                for (_, b) in branches {
                    $f(b);
                }
                if let Some(b) = orelse {
                    $f(b);
                }
            }
            StmtKind::While { body, orelse, .. } | StmtKind::For { body, orelse, .. } => {
                $f(body);
                if let Some(b) = orelse {
                    $f(b);
                }
            }
            StmtKind::With { body, .. } => $f(body),
            StmtKind::Match { cases, .. } => {
                for MatchCase { body, .. } in cases {
                    $f(body);
                }
            }
            StmtKind::Try {
                body,
                handlers,
                orelse,
                finally,
            } => {
                $f(body);
                for ExceptHandler { body, .. } in handlers {
                    $f(body);
                }
                if let Some(b) = orelse {
                    $f(b);
                }
                if let Some(b) = finally {
                    $f(b);
                }
            }
            _ => {}
        }
    };
}

impl StmtKind {
    /// The blocks nested in this statement that run in its scope, in source order (none for
    /// a simple statement).
    pub fn blocks<'a>(&'a self) -> Vec<&'a [Stmt]> {
        let mut out: Vec<&'a [Stmt]> = Vec::new();
        for_each_block!(self, |b: &'a Vec<Stmt>| out.push(b.as_slice()));
        out
    }

    /// Replaces each nested block (as [`StmtKind::blocks`] lists them) by what `f` makes of
    /// it; false, leaving the rest as they were, where `f` gives None.
    pub fn replace_blocks(&mut self, mut f: impl FnMut(&[Stmt]) -> Option<Vec<Stmt>>) -> bool {
        let mut ok = true;
        for_each_block!(self, |b: &mut Vec<Stmt>| {
            if ok {
                match f(b) {
                    Some(new) => *b = new,
                    None => ok = false,
                }
            }
        });
        ok
    }

    /// The expressions a compound statement's header evaluates or assigns to: `if`/`elif`
    /// tests, a `while` condition, a `for` target and iterable, `with` managers and targets,
    /// `except` clauses, a `match` subject and its guards.
    pub fn header_exprs(&self) -> Vec<&Expr> {
        match self {
            StmtKind::If { branches, .. } => branches.iter().map(|(t, _)| t).collect(),
            StmtKind::While { cond, .. } => vec![cond],
            StmtKind::For { target, iter, .. } => vec![target, iter],
            StmtKind::With { items, .. } => items
                .iter()
                .flat_map(|i| std::iter::once(&i.context).chain(&i.target))
                .collect(),
            StmtKind::Try { handlers, .. } => {
                handlers.iter().filter_map(|h| h.kind.as_ref()).collect()
            }
            StmtKind::Match { subject, cases } => std::iter::once(subject)
                .chain(cases.iter().filter_map(|c| c.guard.as_ref()))
                .collect(),
            _ => Vec::new(),
        }
    }

    /// Whether this is a compound statement of those [`StmtKind::blocks`] walks into.
    pub fn is_compound(&self) -> bool {
        matches!(
            self,
            StmtKind::If { .. }
                | StmtKind::While { .. }
                | StmtKind::For { .. }
                | StmtKind::With { .. }
                | StmtKind::Try { .. }
                | StmtKind::Match { .. }
        )
    }
}
