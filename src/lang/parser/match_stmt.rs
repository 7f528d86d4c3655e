//! The `match` statement (PEP 634). `match` and `case` are soft keywords: a line starting with
//! `match` is a `match` statement only when it reads as one (`match subject:` then a newline),
//! so `match = 1`, `match(x)` and `match.group(0)` stay ordinary statements.

use super::{err, PResult, Parser, SyntaxError};
use crate::lang::ast::{Expr, ExprKind, Ident, NameRef, Stmt, StmtKind};
use crate::lang::lexer::{Keyword, Op, Tok};
use crate::lang::pattern::{MatchCase, Pattern, PatternKind};
use crate::lang::span::Span;

fn is_soft_keyword(tok: &Tok, word: &str) -> bool {
    matches!(tok, Tok::Name(n) if &**n == word)
}

impl Parser<'_> {
    /// A compile-time error of a pattern (as CPython's compiler, not its parser, finds it):
    /// reported once the whole `match` statement is read, so the REPL first takes the rest.
    fn defer(&mut self, e: SyntaxError) {
        self.pattern_error.get_or_insert(e);
    }

    /// At a line starting with the name `match`: the `match` statement, or None (nothing
    /// consumed) when the line is an ordinary statement using a name `match`.
    pub(super) fn match_statement(&mut self) -> PResult<Option<Stmt>> {
        if !is_soft_keyword(self.peek(), "match") {
            return Ok(None);
        }
        // Only these can follow the name in an ordinary statement as well as start a subject.
        let ambiguous = matches!(
            self.peek_nth(1),
            Tok::Op(Op::LParen | Op::LBracket | Op::Minus | Op::Plus | Op::Star | Op::Tilde)
                | Tok::Keyword(Keyword::Not)
        );
        let saved = self.checkpoint();
        let start = self.start();
        self.advance();
        let subject = if self.starts_expression() || ambiguous {
            self.match_subject()
        } else {
            Err(self.invalid_syntax())
        };
        let subject = match subject {
            Ok(subject) if self.check_op(Op::Colon) && matches!(self.peek_nth(1), Tok::Newline) => {
                subject
            }
            // `match x` then a newline: CPython's "expected ':'".
            Ok(_) if !ambiguous && matches!(self.peek(), Tok::Newline | Tok::Eof) => {
                self.release(saved);
                return Err(self.error_here("expected ':'"));
            }
            _ => {
                self.restore(saved);
                return Ok(None);
            }
        };
        self.release(saved);
        self.advance(); // ':'
        self.advance(); // newline
        if !matches!(self.peek(), Tok::Indent) {
            return Err(self.missing_block("'match' statement", start));
        }
        self.advance();
        let outer_error = self.pattern_error.take();
        let cases = self.cases();
        let pattern_error = std::mem::replace(&mut self.pattern_error, outer_error);
        let cases = cases?;
        if let Some(e) = pattern_error {
            return Err(e);
        }
        Ok(Some(Stmt {
            kind: StmtKind::Match { subject, cases },
            span: self.since(start),
        }))
    }

    /// The `case` blocks of a `match` statement, up to its end.
    fn cases(&mut self) -> PResult<Vec<MatchCase>> {
        let mut cases: Vec<MatchCase> = Vec::new();
        self.nested(|p| loop {
            match p.peek() {
                Tok::Dedent => {
                    p.advance();
                    return Ok(());
                }
                Tok::Eof if !cases.is_empty() => return Ok(()),
                Tok::Newline => {
                    p.advance();
                }
                Tok::Name(n) if &**n == "case" => {
                    // A case after an irrefutable one could never run.
                    if let Some(last) = cases.last().filter(|c| c.guard.is_none()) {
                        if let Err(e) = last.pattern.check_reachable(true) {
                            p.defer(e);
                        }
                    }
                    cases.push(p.case_block()?);
                }
                _ => return Err(p.invalid_syntax()),
            }
        })?;
        Ok(cases)
    }

    /// `match a, *b:` is a tuple; otherwise a named expression.
    fn match_subject(&mut self) -> PResult<Expr> {
        let start = self.start();
        let first = if self.check_op(Op::Star) {
            self.star_expression()?
        } else {
            self.named_expression()?
        };
        if !self.check_op(Op::Comma) {
            if matches!(first.kind, ExprKind::Starred(_)) {
                return Err(self.invalid_syntax());
            }
            return Ok(first);
        }
        let mut items = vec![first];
        while self.eat_op(Op::Comma) {
            if self.check_op(Op::Colon) {
                break;
            }
            items.push(self.star_expression()?);
        }
        Ok(Expr {
            kind: ExprKind::Tuple(items),
            span: self.since(start),
        })
    }

    fn case_block(&mut self) -> PResult<MatchCase> {
        let start = self.start();
        self.advance(); // `case`
        let pattern = self.top_pattern()?;
        // As CPython compiles a pattern: unreachable alternatives first, then the names.
        if let Err(e) = pattern
            .check_reachable(false)
            .and_then(|()| pattern.bound_names().map(drop))
        {
            self.defer(e);
        }
        let guard = if self.eat_kw(Keyword::If) {
            Some(self.named_expression()?)
        } else {
            None
        };
        self.expect_colon()?;
        let body = self.block("'case' statement", start)?;
        Ok(MatchCase {
            pattern,
            guard,
            body,
        })
    }

    /// `case a, *b:` (an open sequence) or one pattern.
    fn top_pattern(&mut self) -> PResult<Pattern> {
        let start = self.start();
        let first = self.star_or_pattern()?;
        if !self.check_op(Op::Comma) {
            if matches!(first.kind, PatternKind::Star(_)) {
                return Err(self.invalid_syntax());
            }
            return Ok(first);
        }
        let mut items = vec![first];
        while self.eat_op(Op::Comma) {
            if self.check_op(Op::Colon) || self.check_kw(Keyword::If) {
                break;
            }
            items.push(self.star_or_pattern()?);
        }
        self.sequence(items, start)
    }

    fn sequence(&mut self, items: Vec<Pattern>, start: usize) -> PResult<Pattern> {
        let span = self.since(start);
        let stars = items
            .iter()
            .filter(|p| matches!(p.kind, PatternKind::Star(_)))
            .count();
        if stars > 1 {
            self.defer(err("multiple starred names in sequence pattern", span));
        }
        Ok(Pattern {
            kind: PatternKind::Sequence(items),
            span,
        })
    }

    /// An item of a sequence pattern: `*name`, `*_` or a pattern.
    fn star_or_pattern(&mut self) -> PResult<Pattern> {
        let start = self.start();
        if !self.eat_op(Op::Star) {
            return self.pattern();
        }
        let (name, _) = self.name("a name after '*'")?;
        Ok(Pattern {
            kind: PatternKind::Star((&*name != "_").then_some(name)),
            span: self.since(start),
        })
    }

    /// `or_pattern ['as' name]`
    fn pattern(&mut self) -> PResult<Pattern> {
        self.nested(|p| {
            let start = p.start();
            let inner = p.or_pattern()?;
            if !p.eat_kw(Keyword::As) {
                return Ok(inner);
            }
            let name = match p.peek() {
                Tok::Name(n) if &**n == "_" => {
                    return Err(err("cannot use '_' as a target", p.span()));
                }
                Tok::Name(n) => n.clone(),
                _ => return Err(p.invalid_syntax()),
            };
            p.advance();
            if p.check_op(Op::Dot) || p.check_op(Op::LParen) {
                return Err(p.invalid_syntax());
            }
            Ok(Pattern {
                kind: PatternKind::As(Box::new(inner), name),
                span: p.since(start),
            })
        })
    }

    fn or_pattern(&mut self) -> PResult<Pattern> {
        let start = self.start();
        let first = self.closed_pattern()?;
        if !self.check_op(Op::Pipe) {
            return Ok(first);
        }
        let mut alts = vec![first];
        while self.eat_op(Op::Pipe) {
            alts.push(self.closed_pattern()?);
        }
        Ok(Pattern {
            kind: PatternKind::Or(alts),
            span: self.since(start),
        })
    }

    fn closed_pattern(&mut self) -> PResult<Pattern> {
        self.nested(|p| p.closed_pattern_inner())
    }

    fn closed_pattern_inner(&mut self) -> PResult<Pattern> {
        let start = self.start();
        let kind = match self.peek().clone() {
            Tok::Name(name) => {
                let name_span = self.advance().span;
                if !self.check_op(Op::Dot) && !self.check_op(Op::LParen) {
                    PatternKind::Capture((&*name != "_").then_some(name))
                } else {
                    let value = self.dotted_value(name, name_span)?;
                    if self.check_op(Op::LParen) {
                        return self.class_pattern(value, start);
                    }
                    PatternKind::Value(value)
                }
            }
            Tok::Int(_)
            | Tok::BigInt(_)
            | Tok::Float(_)
            | Tok::IntMinMagnitude
            | Tok::Op(Op::Minus) => PatternKind::Value(self.number_literal()?),
            Tok::Str(_) | Tok::Bytes(_) | Tok::FStr { .. } => {
                let value = self.strings()?;
                if matches!(value.kind, ExprKind::FString(_)) {
                    return Err(err(
                        "patterns may only match literals and attribute lookups",
                        value.span,
                    ));
                }
                PatternKind::Value(value)
            }
            Tok::Keyword(Keyword::None | Keyword::True | Keyword::False) => {
                PatternKind::Singleton(self.atom()?)
            }
            Tok::Op(Op::LParen) => {
                self.advance();
                if self.eat_op(Op::RParen) {
                    return self.sequence(Vec::new(), start);
                }
                let first = self.star_or_pattern()?;
                if self.eat_op(Op::RParen) {
                    if matches!(first.kind, PatternKind::Star(_)) {
                        return Err(err("invalid syntax", first.span));
                    }
                    // A group: the pattern itself.
                    return Ok(first);
                }
                let mut items = vec![first];
                while self.eat_op(Op::Comma) {
                    if self.check_op(Op::RParen) {
                        break;
                    }
                    items.push(self.star_or_pattern()?);
                }
                self.expect_op(Op::RParen, "expected ')'")?;
                return self.sequence(items, start);
            }
            Tok::Op(Op::LBracket) => {
                self.advance();
                let mut items = Vec::new();
                while !self.check_op(Op::RBracket) {
                    items.push(self.star_or_pattern()?);
                    if !self.eat_op(Op::Comma) {
                        break;
                    }
                }
                self.expect_op(Op::RBracket, "expected ']'")?;
                return self.sequence(items, start);
            }
            Tok::Op(Op::LBrace) => return self.mapping_pattern(start),
            _ => return Err(self.invalid_syntax()),
        };
        Ok(Pattern {
            kind,
            span: self.since(start),
        })
    }

    /// `a.b.c` after its first name (already consumed).
    fn dotted_value(&mut self, first: Ident, first_span: Span) -> PResult<Expr> {
        let mut value = Expr {
            kind: ExprKind::Name(NameRef::new(first)),
            span: first_span,
        };
        while self.eat_op(Op::Dot) {
            let (attr, attr_span) = self.name("an attribute name after '.'")?;
            value = Expr {
                span: Span::new(first_span.start, attr_span.end),
                kind: ExprKind::Attribute {
                    value: Box::new(value),
                    attr,
                    attr_span,
                    hint: Default::default(),
                },
            };
        }
        Ok(value)
    }

    /// `1`, `-2.5`: a number, negative or not (devarray has no complex literals).
    fn number_literal(&mut self) -> PResult<Expr> {
        let start = self.start();
        let negative = self.eat_op(Op::Minus);
        if !matches!(
            self.peek(),
            Tok::Int(_) | Tok::BigInt(_) | Tok::Float(_) | Tok::IntMinMagnitude
        ) {
            return Err(self.invalid_syntax());
        }
        let number = if negative && matches!(self.peek(), Tok::IntMinMagnitude) {
            self.advance();
            Expr {
                kind: ExprKind::Int(i64::MIN),
                span: self.since(start),
            }
        } else {
            let magnitude = self.atom()?;
            if negative {
                Expr {
                    kind: ExprKind::Unary {
                        op: crate::lang::ast::UnaryOp::Neg,
                        operand: Box::new(magnitude),
                    },
                    span: self.since(start),
                }
            } else {
                magnitude
            }
        };
        if self.check_op(Op::Plus) || self.check_op(Op::Minus) {
            self.advance();
            return Err(err(
                "imaginary number required in complex literal",
                self.span(),
            ));
        }
        Ok(number)
    }

    /// `{key: pattern, ..., **rest}`: keys are literals or dotted names.
    fn mapping_pattern(&mut self, start: usize) -> PResult<Pattern> {
        self.advance(); // `{`
        let mut keys = Vec::new();
        let mut values = Vec::new();
        let mut rest = None;
        while !self.check_op(Op::RBrace) {
            if self.eat_op(Op::DoubleStar) {
                match self.peek().clone() {
                    Tok::Name(n) if &*n != "_" => {
                        self.advance();
                        rest = Some(n);
                    }
                    _ => return Err(self.invalid_syntax()),
                }
                self.eat_op(Op::Comma);
                break;
            }
            let key = match self.peek().clone() {
                Tok::Name(name) if matches!(self.peek_nth(1), Tok::Op(Op::Dot)) => {
                    let span = self.advance().span;
                    self.dotted_value(name, span)?
                }
                Tok::Str(_) | Tok::Bytes(_) | Tok::FStr { .. } => {
                    let key = self.strings()?;
                    if matches!(key.kind, ExprKind::FString(_)) {
                        return Err(err(
                            "patterns may only match literals and attribute lookups",
                            key.span,
                        ));
                    }
                    key
                }
                Tok::Keyword(Keyword::None | Keyword::True | Keyword::False) => self.atom()?,
                Tok::Int(_)
                | Tok::BigInt(_)
                | Tok::Float(_)
                | Tok::IntMinMagnitude
                | Tok::Op(Op::Minus) => self.number_literal()?,
                _ => return Err(self.invalid_syntax()),
            };
            self.expect_op(Op::Colon, "expected ':'")?;
            keys.push(key);
            values.push(self.pattern()?);
            if !self.eat_op(Op::Comma) {
                break;
            }
        }
        self.expect_op(Op::RBrace, "expected '}'")?;
        let span = self.since(start);
        // Two equal literal keys can never both match.
        for (i, key) in keys.iter().enumerate() {
            if let Some(text) = literal_key_repr(key) {
                if keys[..i]
                    .iter()
                    .any(|k| literal_key_repr(k).as_deref() == Some(&text))
                {
                    self.defer(err(
                        format!("mapping pattern checks duplicate key ({text})"),
                        span,
                    ));
                }
            }
        }
        Ok(Pattern {
            kind: PatternKind::Mapping { keys, values, rest },
            span,
        })
    }

    /// `Cls(p, q, name=r)` after the class's dotted name.
    fn class_pattern(&mut self, cls: Expr, start: usize) -> PResult<Pattern> {
        self.advance(); // `(`
        let mut positional = Vec::new();
        let mut keywords: Vec<(Ident, Span, Pattern)> = Vec::new();
        while !self.check_op(Op::RParen) {
            let keyword = match (self.peek(), self.peek_nth(1)) {
                (Tok::Name(n), Tok::Op(Op::Assign)) => Some(n.clone()),
                _ => None,
            };
            if let Some(name) = keyword {
                let name_span = self.advance().span;
                self.advance(); // `=`
                let value = self.pattern()?;
                if keywords.iter().any(|(k, _, _)| *k == name) {
                    self.defer(err(
                        format!("attribute name repeated in class pattern: {name}"),
                        value.span,
                    ));
                }
                keywords.push((name, name_span, value));
            } else {
                let value = self.pattern()?;
                if !keywords.is_empty() {
                    return Err(err(
                        "positional patterns follow keyword patterns",
                        value.span,
                    ));
                }
                positional.push(value);
            }
            if !self.eat_op(Op::Comma) {
                break;
            }
        }
        self.expect_op(Op::RParen, "expected ')'")?;
        Ok(Pattern {
            kind: PatternKind::Class {
                cls,
                positional,
                keywords,
            },
            span: self.since(start),
        })
    }
}

/// A literal key as CPython's duplicate-key error prints it (`'a'`, `1`), None for a dotted
/// name (only known when it runs).
fn literal_key_repr(key: &Expr) -> Option<String> {
    Some(match &key.kind {
        ExprKind::Str(s) => {
            if s.contains('\'') && !s.contains('"') {
                format!("\"{s}\"")
            } else {
                format!("'{}'", s.replace('\'', "\\'"))
            }
        }
        ExprKind::Int(i) => i.to_string(),
        ExprKind::BigInt(b) => b.to_string(),
        ExprKind::Float(f) => format!("{f:?}"),
        ExprKind::Bool(true) => "True".into(),
        ExprKind::Bool(false) => "False".into(),
        ExprKind::None => "None".into(),
        ExprKind::Unary { operand, .. } => format!("-{}", literal_key_repr(operand)?),
        _ => return None,
    })
}
