//! The `match` statement's patterns (PEP 634) and the checks CPython's compiler makes on them:
//! names bound once per pattern, alternatives binding the same names, and no irrefutable case
//! before the last one.
//!
//! A `match` runs as an `if`/`elif` chain whose tests are its cases (pattern, then guard):
//! the interpreter picks the case (`crate::eval::pattern`) and runs its body as it runs an
//! `if` branch, and a generator suspends in a case body as in an `if` branch.

use super::ast::{Expr, Ident, Stmt};
use super::parser::SyntaxError;
use super::span::Span;

#[derive(Debug, Clone, PartialEq)]
pub struct MatchCase {
    pub pattern: Pattern,
    /// `case p if guard:`
    pub guard: Option<Expr>,
    pub body: Vec<Stmt>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Pattern {
    pub kind: PatternKind,
    pub span: Span,
}

#[derive(Debug, Clone, PartialEq)]
pub enum PatternKind {
    /// A literal (`1`, `-2.5`, `"s"`) or a dotted name (`Color.RED`): the subject equals it.
    Value(Expr),
    /// `None`, `True`, `False`: the subject is this object.
    Singleton(Expr),
    /// `x` binds the subject; `_` (None) matches anything and binds nothing.
    Capture(Option<Ident>),
    /// `[a, b, *rest]` or `(a, b)` or `a, b`: at most one `Star` item.
    Sequence(Vec<Pattern>),
    /// `*rest` (`*_`: None), only inside a sequence pattern.
    Star(Option<Ident>),
    /// `{"k": v, **rest}`
    Mapping {
        keys: Vec<Expr>,
        values: Vec<Pattern>,
        rest: Option<Ident>,
    },
    /// `Point(x, y=0)`: an instance of the class, matched by `__match_args__` and attributes.
    Class {
        cls: Expr,
        positional: Vec<Pattern>,
        keywords: Vec<(Ident, Span, Pattern)>,
    },
    /// `a | b | c`: the first alternative that matches.
    Or(Vec<Pattern>),
    /// `p as name`
    As(Box<Pattern>, Ident),
}

/// CPython's compiler, not its parser, finds these: its REPL reads the whole statement (to the
/// blank line) before reporting one, and so does devarray's.
const COMPILER_MESSAGES: &[&str] = &[
    "makes remaining patterns unreachable",
    "alternative patterns bind different names",
    "multiple assignments to name",
    "mapping pattern checks duplicate key",
    "multiple starred names in sequence pattern",
    "attribute name repeated in class pattern",
];

/// Whether a syntax error is one CPython reports only once the statement is complete.
pub fn found_by_compiler(e: &SyntaxError) -> bool {
    COMPILER_MESSAGES.iter().any(|m| e.message.contains(m))
}

fn error(message: impl Into<String>, span: Span) -> SyntaxError {
    SyntaxError {
        message: message.into(),
        span,
        incomplete: false,
        too_deep: false,
    }
}

impl Pattern {
    /// Matches every subject: a capture, a wildcard, or an alternative or `as` of one.
    pub fn irrefutable(&self) -> bool {
        match &self.kind {
            PatternKind::Capture(_) => true,
            PatternKind::As(inner, _) => inner.irrefutable(),
            PatternKind::Or(alts) => alts.iter().any(Pattern::irrefutable),
            _ => false,
        }
    }

    /// The names a successful match binds, in the order it binds them, each with where it is
    /// written. A name bound twice is CPython's SyntaxError, and so are alternatives that bind
    /// different names.
    pub fn bound_names(&self) -> Result<Vec<(Ident, Span)>, SyntaxError> {
        let mut names = Vec::new();
        self.collect_names(&mut names)?;
        Ok(names)
    }

    fn collect_names(&self, names: &mut Vec<(Ident, Span)>) -> Result<(), SyntaxError> {
        let bind = |name: &Ident, span: Span, names: &mut Vec<(Ident, Span)>| {
            if names.iter().any(|(n, _)| n == name) {
                return Err(error(
                    format!("multiple assignments to name '{name}' in pattern"),
                    span,
                ));
            }
            names.push((name.clone(), span));
            Ok(())
        };
        match &self.kind {
            PatternKind::Value(_) | PatternKind::Singleton(_) => {}
            PatternKind::Capture(name) | PatternKind::Star(name) => {
                if let Some(name) = name {
                    bind(name, self.span, names)?;
                }
            }
            PatternKind::Sequence(items) => {
                for item in items {
                    item.collect_names(names)?;
                }
            }
            PatternKind::Mapping { values, rest, .. } => {
                for v in values {
                    v.collect_names(names)?;
                }
                if let Some(rest) = rest {
                    bind(rest, self.span, names)?;
                }
            }
            PatternKind::Class {
                positional,
                keywords,
                ..
            } => {
                for p in positional {
                    p.collect_names(names)?;
                }
                for (_, _, p) in keywords {
                    p.collect_names(names)?;
                }
            }
            PatternKind::Or(alts) => {
                let mut first: Option<Vec<(Ident, Span)>> = None;
                for alt in alts {
                    let mut own = Vec::new();
                    alt.collect_names(&mut own)?;
                    match &first {
                        None => first = Some(own),
                        Some(first) => {
                            let same = first.len() == own.len()
                                && own.iter().all(|(n, _)| first.iter().any(|(f, _)| f == n));
                            if !same {
                                // CPython points at the alternative's last name.
                                let span = own.last().map_or(alt.span, |(_, s)| *s);
                                return Err(error(
                                    "alternative patterns bind different names",
                                    span,
                                ));
                            }
                        }
                    }
                }
                for (name, span) in first.unwrap_or_default() {
                    bind(&name, span, names)?;
                }
            }
            PatternKind::As(inner, name) => {
                inner.collect_names(names)?;
                bind(name, self.span, names)?;
            }
        }
        Ok(())
    }

    /// CPython's "makes remaining patterns unreachable": an irrefutable alternative before
    /// the last one of an `|`, anywhere in the pattern, or (when `more_cases` follow and the
    /// case has no guard) an irrefutable pattern as the whole case.
    pub fn check_reachable(&self, more_cases: bool) -> Result<(), SyntaxError> {
        if more_cases && self.irrefutable() {
            return Err(self.unreachable_error());
        }
        self.check_alternatives()
    }

    fn check_alternatives(&self) -> Result<(), SyntaxError> {
        match &self.kind {
            PatternKind::Or(alts) => {
                if let Some((_, init)) = alts.split_last() {
                    if let Some(p) = init.iter().find(|p| p.irrefutable()) {
                        return Err(p.unreachable_error());
                    }
                }
                alts.iter().try_for_each(Pattern::check_alternatives)
            }
            PatternKind::Sequence(items) => items.iter().try_for_each(Pattern::check_alternatives),
            PatternKind::Mapping { values, .. } => {
                values.iter().try_for_each(Pattern::check_alternatives)
            }
            PatternKind::Class {
                positional,
                keywords,
                ..
            } => {
                positional
                    .iter()
                    .try_for_each(Pattern::check_alternatives)?;
                keywords
                    .iter()
                    .try_for_each(|(_, _, p)| p.check_alternatives())
            }
            PatternKind::As(inner, _) => inner.check_alternatives(),
            _ => Ok(()),
        }
    }

    /// The error naming the capture or wildcard that makes this pattern irrefutable.
    fn unreachable_error(&self) -> SyntaxError {
        match &self.kind {
            PatternKind::Capture(Some(name)) => error(
                format!("name capture '{name}' makes remaining patterns unreachable"),
                self.span,
            ),
            PatternKind::Capture(None) => {
                error("wildcard makes remaining patterns unreachable", self.span)
            }
            PatternKind::As(inner, _) => inner.unreachable_error(),
            PatternKind::Or(alts) => match alts.iter().find(|p| p.irrefutable()) {
                Some(p) => p.unreachable_error(),
                None => error(
                    "irrefutable pattern makes remaining patterns unreachable",
                    self.span,
                ),
            },
            _ => error(
                "irrefutable pattern makes remaining patterns unreachable",
                self.span,
            ),
        }
    }

    /// The expressions the pattern evaluates: values, mapping keys, classes.
    pub fn exprs(&self) -> Vec<&Expr> {
        let mut out = Vec::new();
        self.collect_exprs(&mut out);
        out
    }

    fn collect_exprs<'a>(&'a self, out: &mut Vec<&'a Expr>) {
        match &self.kind {
            PatternKind::Value(e) | PatternKind::Singleton(e) => out.push(e),
            PatternKind::Capture(_) | PatternKind::Star(_) => {}
            PatternKind::Sequence(items) | PatternKind::Or(items) => {
                items.iter().for_each(|p| p.collect_exprs(out))
            }
            PatternKind::Mapping { keys, values, .. } => {
                out.extend(keys.iter());
                values.iter().for_each(|p| p.collect_exprs(out));
            }
            PatternKind::Class {
                cls,
                positional,
                keywords,
            } => {
                out.push(cls);
                positional.iter().for_each(|p| p.collect_exprs(out));
                keywords.iter().for_each(|(_, _, p)| p.collect_exprs(out));
            }
            PatternKind::As(inner, _) => inner.collect_exprs(out),
        }
    }
}
