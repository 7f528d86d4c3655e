//! Recursive-descent parser producing [`super::ast::Program`].
//!
//! Every node's span runs from the first byte of its first token to the last
//! byte of its last token (`start .. last_end`), so a parenthesised operand is
//! covered by its parent's span too. Recursion depth is capped so that hostile
//! input (thousands of brackets or minus signs) ends in an error, not a stack
//! overflow.

use std::fmt;
use std::rc::Rc;

use super::ast::*;
use super::lexer::{decode_escapes, tokenize, Keyword, Op, Tok, Token, TokenStream};
use super::span::{locate, Span};

mod match_stmt;

/// A syntax error: what was expected, where.
#[derive(Debug, Clone, PartialEq)]
pub struct SyntaxError {
    pub message: String,
    pub span: Span,
    /// True when the input simply ended too early (an open bracket, a block
    /// header with no body yet, an unterminated triple-quoted string): the REPL
    /// then asks for another line instead of reporting the error.
    pub incomplete: bool,
    /// The syntax tree would nest deeper than [`MAX_TREE_DEPTH`]: CPython's
    /// `RecursionError: maximum recursion depth exceeded during compilation`.
    pub too_deep: bool,
}

impl SyntaxError {
    /// The exception CPython raises for it: `IndentationError` (a `SyntaxError`) for blocks
    /// and indentation, `RecursionError` for a tree too deep, else `SyntaxError`.
    pub fn exception_name(&self) -> &'static str {
        const INDENTATION: [&str; 3] = [
            "unexpected indent",
            "expected an indented block",
            "unindent does not match",
        ];
        if self.too_deep {
            "RecursionError"
        } else if INDENTATION.iter().any(|m| self.message.starts_with(m)) {
            "IndentationError"
        } else {
            "SyntaxError"
        }
    }
}

impl fmt::Display for SyntaxError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for SyntaxError {}

/// Expressions and blocks may nest this deep. One level of brackets costs about
/// a dozen stack frames (about 18 KiB in an unoptimised build), so this keeps
/// even a debug build well inside a 2 MiB thread stack.
pub const MAX_NESTING: usize = 64;

/// Links of operator and trailer chains (`1 + 1 + ...`, `x.b.b...`, `f()()...`) on one path
/// of the tree: each link is one level of the tree, so this bounds the depth of every walk
/// over it (evaluation, fusion, dropping), whichever thread does it. CPython stops at about
/// the same length ("maximum recursion depth exceeded during compilation").
pub const MAX_TREE_DEPTH: usize = 2990;

type PResult<T> = Result<T, SyntaxError>;

/// Parses a whole cell, REPL entry or script.
pub fn parse(source: &str) -> Result<Program, SyntaxError> {
    parse_span(source, Span::new(0, source.len()))
}

/// Parses the statements in `source[span]` (e.g. the argument of `%time`), with
/// spans that stay byte offsets into the whole `source`.
pub fn parse_span(source: &str, span: Span) -> Result<Program, SyntaxError> {
    let mut body = Vec::new();
    for stmt in Statements::new(source, span) {
        body.push(stmt?);
    }
    Ok(Program { body })
}

/// The top-level statements of `source[span]`, parsed one at a time from tokens lexed a line at
/// a time: memory follows the statement at hand, not the program's size, so a session can check
/// a whole program first and then run it statement by statement (`Session::eval_with`). After
/// an error the iterator ends.
pub struct Statements<'s> {
    parser: Parser<'s>,
    /// Statements parsed but not handed out yet (`a = 1; b = 2` is one line, two statements).
    ready: std::collections::VecDeque<Stmt>,
    failed: bool,
}

impl<'s> Statements<'s> {
    pub fn new(source: &'s str, span: Span) -> Statements<'s> {
        Statements {
            parser: Parser::streaming(source, span),
            ready: std::collections::VecDeque::new(),
            failed: false,
        }
    }
}

impl Iterator for Statements<'_> {
    type Item = Result<Stmt, SyntaxError>;

    fn next(&mut self) -> Option<Self::Item> {
        while self.ready.is_empty() && !self.failed {
            let mut out = Vec::new();
            match self.parser.next_statements(&mut out) {
                Ok(true) => self.ready.extend(out),
                Ok(false) => return None,
                Err(e) => {
                    self.failed = true;
                    return Some(Err(e));
                }
            }
        }
        self.ready.pop_front().map(Ok)
    }
}

/// Parses a single expression (a bare tuple `a, b` is allowed), for `inspect`
/// and the like. Newlines inside it are insignificant.
pub fn parse_expression(source: &str) -> Result<Expr, SyntaxError> {
    parse_expression_span(source, Span::new(0, source.len()))
}

/// [`parse_expression`] over `source[span]`, spans relative to the whole `source`.
pub fn parse_expression_span(source: &str, span: Span) -> Result<Expr, SyntaxError> {
    let tokens = tokenize(source, span, true);
    let mut parser = Parser::new(source, tokens, 0);
    parser.whole_expression()
}

/// Whether the REPL or a notebook should run `source` now or read more lines.
#[derive(Debug, Clone, PartialEq)]
pub enum InputStatus {
    Complete,
    /// More lines could make it valid (or a block may still grow).
    Incomplete,
    Invalid(SyntaxError),
}

/// Decides whether `source` is ready to run, as IPython does: incomplete when
/// the parser says more input could fix it, and also when it parses but ends
/// inside an indented block without a final blank line (the block may go on).
pub fn input_status(source: &str) -> InputStatus {
    // An error CPython's compiler finds waits, as a complete statement does, for the block's end.
    match parse(source) {
        Err(e) if e.incomplete => InputStatus::Incomplete,
        Err(e) if !super::pattern::found_by_compiler(&e) => InputStatus::Invalid(e),
        _ => {
            let last_line = source.rsplit('\n').next().unwrap_or("");
            let last_code_line = source
                .lines()
                .rev()
                .find(|l| !l.trim().is_empty() && !l.trim_start().starts_with('#'));
            let in_block = last_code_line.is_some_and(|l| l.starts_with([' ', '\t']));
            let cell_magic = source.trim_start().starts_with("%%");
            if in_block && !last_line.trim().is_empty() && !cell_magic {
                InputStatus::Incomplete
            } else {
                InputStatus::Complete
            }
        }
    }
}

/// The indentation to offer for the line after `source`: that of the last
/// non-blank line, one level deeper after a `:`, one level shallower after
/// `return`, `pass`, `break`, `continue` or `raise`.
pub fn next_indent(source: &str) -> String {
    let Some(line) = source.lines().rev().find(|l| !l.trim().is_empty()) else {
        return String::new();
    };
    let indent: String = line
        .chars()
        .take_while(|c| *c == ' ' || *c == '\t')
        .collect();
    let code = line.trim();
    let code = match code.find(" #") {
        Some(i) if !code.contains(['"', '\'']) => code[..i].trim_end(),
        _ => code,
    };
    if code.ends_with(':') && !code.starts_with('#') {
        return format!("{indent}    ");
    }
    let first_word = code
        .split(|c: char| !c.is_alphanumeric() && c != '_')
        .next();
    if matches!(
        first_word,
        Some("return" | "pass" | "break" | "continue" | "raise")
    ) {
        let width: usize = indent.chars().map(|c| if c == '\t' { 4 } else { 1 }).sum();
        return " ".repeat(width.saturating_sub(4));
    }
    indent
}

fn err(message: impl Into<String>, span: Span) -> SyntaxError {
    SyntaxError {
        message: message.into(),
        span,
        incomplete: false,
        too_deep: false,
    }
}

/// Where an assignment-like target appears, which decides the error wording.
#[derive(Clone, Copy, PartialEq, Eq)]
enum TargetUse {
    /// The whole left side of `=`: the message suggests `==`.
    AssignTop,
    Assign,
    Delete,
    Augmented,
}

/// Binary operators by binding strength (higher binds tighter).
fn binary_op(tok: &Tok) -> Option<(BinOp, u8)> {
    let Tok::Op(op) = tok else { return None };
    Some(match op {
        Op::Pipe => (BinOp::BitOr, 1),
        Op::Caret => (BinOp::BitXor, 2),
        Op::Amp => (BinOp::BitAnd, 3),
        Op::LShift => (BinOp::LShift, 4),
        Op::RShift => (BinOp::RShift, 4),
        Op::Plus => (BinOp::Add, 5),
        Op::Minus => (BinOp::Sub, 5),
        Op::Star => (BinOp::Mul, 6),
        Op::Slash => (BinOp::Div, 6),
        Op::DoubleSlash => (BinOp::FloorDiv, 6),
        Op::Percent => (BinOp::Mod, 6),
        Op::At => (BinOp::MatMul, 6),
        _ => return None,
    })
}

/// How much was parsed before a comprehension ([`Parser::mark`]).
#[derive(Clone, Copy)]
struct Mark {
    yields: usize,
    walrus: usize,
}

/// What [`Parser::restore`] puts back.
struct Checkpoint {
    walrus: usize,
    pos: usize,
    last_end: usize,
    links: usize,
    saw_yield: bool,
    yields: usize,
    yield_span: Span,
}

struct Parser<'s> {
    src: &'s str,
    tokens: Vec<Token>,
    pos: usize,
    /// End of the last consumed token: the end of the node being built.
    last_end: usize,
    depth: usize,
    /// Chain links open on the current path (see [`MAX_TREE_DEPTH`]).
    links: usize,
    loop_depth: usize,
    in_function: bool,
    /// A `yield` was parsed in the function being parsed.
    saw_yield: bool,
    /// `yield`s parsed so far, and where the last one is (comprehensions reject one).
    yields: usize,
    yield_span: Span,
    /// Parsing a lambda's body (where devarray has no generators).
    in_lambda: bool,
    /// Checkpoints open ([`Parser::checkpoint`]): consumed tokens are kept for a backtrack.
    held: usize,
    /// The names `:=` binds in the function (or class body, or module) being parsed, where
    /// they are local (PEP 572), with the target's span and the whole expression's.
    walrus: Vec<(Ident, Span, Span)>,
    /// The first compile-time error in the `match` statement being read, reported at its end.
    pattern_error: Option<SyntaxError>,
    eof: Token,
    /// Where more tokens come from when they are lexed as the parse goes (a program), None
    /// when `tokens` holds them all (an expression, an f-string piece).
    stream: Option<TokenStream<'s>>,
}

impl<'s> Parser<'s> {
    fn new(src: &'s str, tokens: Vec<Token>, depth: usize) -> Parser<'s> {
        let end = tokens.last().map_or(0, |t| t.span.end);
        Parser {
            src,
            tokens,
            pos: 0,
            last_end: 0,
            depth,
            links: 0,
            loop_depth: 0,
            in_function: false,
            saw_yield: false,
            yields: 0,
            yield_span: Span::new(0, 0),
            in_lambda: false,
            held: 0,
            walrus: Vec::new(),
            pattern_error: None,
            eof: Token {
                kind: Tok::Eof,
                span: Span::new(end, end),
            },
            stream: None,
        }
    }

    fn streaming(src: &'s str, span: Span) -> Parser<'s> {
        let end = span.end.min(src.len());
        let mut parser = Parser::new(src, Vec::new(), 0);
        parser.eof.span = Span::new(end, end);
        parser.stream = Some(TokenStream::new(src, span));
        parser.fill();
        parser
    }

    /// Lexes ahead (a streaming parser) until the tokens not consumed yet hold the lookahead the
    /// grammar needs (three tokens) and something other than dedents, so `only_block_ends_follow`
    /// sees whether the input really ends. Consumed tokens are dropped now and then.
    fn fill(&mut self) {
        let Some(stream) = self.stream.as_mut() else {
            return;
        };
        if self.pos >= 1024 && self.held == 0 {
            self.tokens.drain(..self.pos);
            self.pos = 0;
        }
        while self.tokens.len() < self.pos + 3
            || self.tokens[self.pos..]
                .iter()
                .all(|t| matches!(t.kind, Tok::Dedent))
        {
            if !stream.more(&mut self.tokens) {
                break;
            }
        }
    }

    // ----- token access -------------------------------------------------

    fn current(&self) -> &Token {
        self.tokens.get(self.pos).unwrap_or(&self.eof)
    }

    fn peek(&self) -> &Tok {
        &self.current().kind
    }

    fn peek_nth(&self, n: usize) -> &Tok {
        self.tokens
            .get(self.pos + n)
            .map_or(&self.eof.kind, |t| &t.kind)
    }

    fn span(&self) -> Span {
        self.current().span
    }

    fn start(&self) -> usize {
        self.span().start
    }

    fn advance(&mut self) -> Token {
        let token = self.current().clone();
        // The final Eof / Error token is never consumed.
        if self.pos + 1 < self.tokens.len() {
            self.pos += 1;
        }
        self.fill();
        // Layout tokens are not part of any node's text.
        if !matches!(token.kind, Tok::Newline | Tok::Indent | Tok::Dedent) {
            self.last_end = token.span.end;
        }
        token
    }

    /// Where the parse is, to come back to when a soft keyword turns out to be a name.
    fn checkpoint(&mut self) -> Checkpoint {
        self.held += 1;
        Checkpoint {
            walrus: self.walrus.len(),
            pos: self.pos,
            last_end: self.last_end,
            links: self.links,
            saw_yield: self.saw_yield,
            yields: self.yields,
            yield_span: self.yield_span,
        }
    }

    /// Back to the checkpoint.
    fn restore(&mut self, c: Checkpoint) {
        self.held -= 1;
        self.walrus.truncate(c.walrus);
        self.pos = c.pos;
        self.last_end = c.last_end;
        self.links = c.links;
        self.saw_yield = c.saw_yield;
        self.yields = c.yields;
        self.yield_span = c.yield_span;
    }

    /// Where a comprehension starts: the `yield`s and `:=` parsed before it.
    fn mark(&self) -> Mark {
        Mark {
            yields: self.yields,
            walrus: self.walrus.len(),
        }
    }

    /// The parse goes on from here: the checkpoint is not needed.
    fn release(&mut self, _: Checkpoint) {
        self.held -= 1;
    }

    fn check_op(&self, op: Op) -> bool {
        matches!(self.peek(), Tok::Op(o) if *o == op)
    }

    fn eat_op(&mut self, op: Op) -> bool {
        if self.check_op(op) {
            self.advance();
            true
        } else {
            false
        }
    }

    fn check_kw(&self, kw: Keyword) -> bool {
        matches!(self.peek(), Tok::Keyword(k) if *k == kw)
    }

    fn eat_kw(&mut self, kw: Keyword) -> bool {
        if self.check_kw(kw) {
            self.advance();
            true
        } else {
            false
        }
    }

    fn at_line_end(&self) -> bool {
        matches!(
            self.peek(),
            Tok::Newline | Tok::Eof | Tok::Op(Op::Semicolon) | Tok::Error(_)
        )
    }

    fn since(&self, start: usize) -> Span {
        Span::new(start, self.last_end.max(start))
    }

    /// An error at the current token, unless the scanner already stopped there
    /// with its own (more precise) error.
    fn error_here(&self, message: impl Into<String>) -> SyntaxError {
        match self.peek() {
            Tok::Error(e) => (**e).clone(),
            Tok::Indent => err("unexpected indent", self.after_indent_span()),
            _ => err(message, self.span()),
        }
    }

    fn after_indent_span(&self) -> Span {
        match self.tokens.get(self.pos + 1) {
            Some(next) if !matches!(next.kind, Tok::Eof | Tok::Error(_)) => next.span,
            _ => self.span(),
        }
    }

    /// "invalid syntax" at the current token, with CPython's hints where they apply.
    fn invalid_syntax(&self) -> SyntaxError {
        match self.peek() {
            Tok::Eof => SyntaxError {
                message: "unexpected EOF while parsing".into(),
                span: self.span(),
                incomplete: false,
                too_deep: false,
            },
            Tok::Keyword(kw @ (Keyword::Async | Keyword::Await | Keyword::Nonlocal)) => err(
                format!("'{}' is not supported in devarray", kw.as_str()),
                self.span(),
            ),
            Tok::Op(Op::Walrus) => err(
                "the assignment expression ':=' is not supported; assign on its own line with '='",
                self.span(),
            ),
            _ => self.error_here("invalid syntax"),
        }
    }

    fn expect_op(&mut self, op: Op, message: &str) -> PResult<Span> {
        if self.check_op(op) {
            Ok(self.advance().span)
        } else {
            Err(self.error_here(message))
        }
    }

    fn expect_colon(&mut self) -> PResult<()> {
        if self.eat_op(Op::Colon) {
            return Ok(());
        }
        if self.check_op(Op::Assign) {
            return Err(err(
                "invalid syntax. Maybe you meant '==' instead of '='?",
                self.span(),
            ));
        }
        Err(self.error_here("expected ':'"))
    }

    fn name(&mut self, what: &str) -> PResult<(Ident, Span)> {
        match self.peek() {
            Tok::Name(name) => {
                let name = name.clone();
                let span = self.advance().span;
                Ok((name, span))
            }
            Tok::Keyword(kw) => Err(err(
                format!("expected {what}, but '{}' is a keyword", kw.as_str()),
                self.span(),
            )),
            _ => Err(self.error_here(format!("expected {what}"))),
        }
    }

    fn nested<T>(&mut self, f: impl FnOnce(&mut Self) -> PResult<T>) -> PResult<T> {
        if self.depth >= MAX_NESTING {
            return Err(err(
                format!("too deeply nested: more than {MAX_NESTING} levels of brackets, operators or blocks; split it into several statements"),
                self.span(),
            ));
        }
        self.depth += 1;
        let result = f(self);
        self.depth -= 1;
        result
    }

    /// One more link of an operator or trailer chain (the tree gets one level deeper).
    fn link(&mut self) -> PResult<()> {
        self.links += 1;
        if self.links > MAX_TREE_DEPTH {
            return Err(SyntaxError {
                message: "maximum recursion depth exceeded during compilation".into(),
                span: self.span(),
                incomplete: false,
                too_deep: true,
            });
        }
        Ok(())
    }

    fn line_of(&self, offset: usize) -> usize {
        locate(self.src, Span::new(offset, offset)).0
    }

    // ----- statements ---------------------------------------------------

    /// The next top-level statement (several for `a = 1; b = 2`) into `out`; false at the end.
    fn next_statements(&mut self, out: &mut Vec<Stmt>) -> PResult<bool> {
        loop {
            match self.peek() {
                Tok::Eof => return Ok(false),
                Tok::Newline | Tok::Dedent => {
                    self.advance();
                }
                Tok::Indent => return Err(self.error_here("unexpected indent")),
                _ => {
                    self.statement(out)?;
                    return Ok(true);
                }
            }
        }
    }

    fn statement(&mut self, out: &mut Vec<Stmt>) -> PResult<()> {
        if self.check_op(Op::At) {
            out.push(self.decorated()?);
            return Ok(());
        }
        if let Some(stmt) = self.match_statement()? {
            out.push(stmt);
            return Ok(());
        }
        let Tok::Keyword(kw) = self.peek() else {
            return self.simple_statements(out);
        };
        let stmt = match kw {
            Keyword::If => self.if_statement()?,
            Keyword::While => self.while_statement()?,
            Keyword::For => self.for_statement()?,
            Keyword::Def => self.def_statement()?,
            Keyword::Class => self.class_statement()?,
            Keyword::With => self.with_statement()?,
            Keyword::Try => self.try_statement()?,
            Keyword::Elif | Keyword::Else | Keyword::Except | Keyword::Finally => {
                return Err(err(
                    format!(
                        "'{}' without a matching '{}' before it at the same indentation",
                        kw.as_str(),
                        match kw {
                            Keyword::Except | Keyword::Finally => "try",
                            _ => "if",
                        }
                    ),
                    self.span(),
                ))
            }
            _ => return self.simple_statements(out),
        };
        out.push(stmt);
        Ok(())
    }

    /// `a; b; c` up to the end of the line.
    fn simple_statements(&mut self, out: &mut Vec<Stmt>) -> PResult<()> {
        loop {
            out.push(self.simple_statement()?);
            if self.eat_op(Op::Semicolon) {
                if matches!(self.peek(), Tok::Newline | Tok::Eof) {
                    break;
                }
                continue;
            }
            break;
        }
        match self.peek() {
            Tok::Newline => {
                self.advance();
                Ok(())
            }
            Tok::Eof => Ok(()),
            _ => Err(self.invalid_syntax()),
        }
    }

    fn simple_statement(&mut self) -> PResult<Stmt> {
        let start = self.start();
        let kind = match self.peek().clone() {
            Tok::Magic {
                name,
                arg,
                arg_span,
            } => {
                self.advance();
                StmtKind::Magic {
                    name,
                    arg,
                    arg_span,
                }
            }
            Tok::Keyword(Keyword::Pass) => {
                self.advance();
                StmtKind::Pass
            }
            Tok::Keyword(Keyword::Break) => {
                let span = self.advance().span;
                if self.loop_depth == 0 {
                    return Err(err("'break' outside loop", span));
                }
                StmtKind::Break
            }
            Tok::Keyword(Keyword::Continue) => {
                let span = self.advance().span;
                if self.loop_depth == 0 {
                    return Err(err("'continue' not properly in loop", span));
                }
                StmtKind::Continue
            }
            Tok::Keyword(Keyword::Return) => {
                let span = self.advance().span;
                if !self.in_function {
                    return Err(err("'return' outside function", span));
                }
                let value = if self.at_line_end() {
                    None
                } else {
                    Some(self.star_expressions()?)
                };
                StmtKind::Return(value)
            }
            Tok::Keyword(Keyword::Raise) => {
                self.advance();
                let value = if self.at_line_end() {
                    None
                } else {
                    Some(self.expression()?)
                };
                match value {
                    Some(exc) if self.eat_kw(Keyword::From) => StmtKind::RaiseFrom {
                        exc,
                        cause: self.expression()?,
                    },
                    value => StmtKind::Raise(value),
                }
            }
            Tok::Keyword(Keyword::Assert) => {
                self.advance();
                let test = self.expression()?;
                let msg = if self.eat_op(Op::Comma) {
                    Some(self.expression()?)
                } else {
                    None
                };
                StmtKind::Assert { test, msg }
            }
            Tok::Keyword(Keyword::Del) => {
                self.advance();
                let targets = self.target_list(false)?;
                let targets = match targets.kind {
                    ExprKind::Tuple(items) if !self.src_starts_with(targets.span, "(") => items,
                    _ => vec![targets],
                };
                for target in &targets {
                    check_target(target, TargetUse::Delete)?;
                }
                StmtKind::Del(targets)
            }
            Tok::Keyword(Keyword::Global) => {
                self.advance();
                let mut names = vec![self.name("a variable name after 'global'")?.0];
                while self.eat_op(Op::Comma) {
                    names.push(self.name("a variable name after ','")?.0);
                }
                StmtKind::Global(names)
            }
            Tok::Keyword(Keyword::Nonlocal) => {
                let span = self.advance().span;
                if !self.in_function {
                    return Err(err(
                        "nonlocal declaration not allowed at module level",
                        span,
                    ));
                }
                let mut names = vec![self.name("a variable name after 'nonlocal'")?.0];
                while self.eat_op(Op::Comma) {
                    names.push(self.name("a variable name after ','")?.0);
                }
                StmtKind::Nonlocal(names)
            }
            Tok::Keyword(Keyword::Import) => self.import_statement()?,
            Tok::Keyword(Keyword::From) => self.import_from_statement()?,
            _ => return self.expression_statement(),
        };
        Ok(Stmt {
            kind,
            span: self.since(start),
        })
    }

    /// `yield`, `yield value`, `yield a, b` or `yield from iterable`; only inside a function.
    fn yield_expression(&mut self) -> PResult<Expr> {
        let start = self.start();
        let span = self.advance().span;
        if self.in_lambda {
            return Err(err(
                "'yield' inside a lambda is not supported in devarray; write a def with the yield",
                span,
            ));
        }
        if !self.in_function {
            return Err(err("'yield' outside function", span));
        }
        self.saw_yield = true;
        self.yields += 1;
        self.yield_span = span;
        let kind = if self.eat_kw(Keyword::From) {
            ExprKind::YieldFrom(Box::new(self.expression()?))
        } else if self.at_line_end() || self.check_op(Op::RParen) || self.check_op(Op::Assign) {
            ExprKind::Yield(None)
        } else {
            ExprKind::Yield(Some(Box::new(self.star_expressions()?)))
        };
        Ok(Expr {
            kind,
            span: self.since(start),
        })
    }

    fn src_starts_with(&self, span: Span, prefix: &str) -> bool {
        self.src
            .get(span.start..span.end)
            .is_some_and(|s| s.starts_with(prefix))
    }

    fn expression_statement(&mut self) -> PResult<Stmt> {
        let start = self.start();
        // `print "x"`: Python 2 habits get CPython's hint.
        if let (
            Tok::Name(name),
            Tok::Str(_) | Tok::Bytes(_) | Tok::FStr { .. } | Tok::Name(_) | Tok::Int(_),
        ) = (self.peek(), self.peek_nth(1))
        {
            if &**name == "print" {
                return Err(err(
                    "Missing parentheses in call to 'print'. Did you mean print(...)?",
                    Span::new(
                        start,
                        self.tokens.get(self.pos + 1).map_or(start, |t| t.span.end),
                    ),
                ));
            }
        }
        let first = if self.check_kw(Keyword::Yield) {
            self.yield_expression()?
        } else {
            self.star_expressions_allowing_star()?
        };
        if self.check_op(Op::Assign) {
            let mut items = vec![first];
            while self.eat_op(Op::Assign) {
                if self.check_kw(Keyword::Yield) {
                    items.push(self.yield_expression()?);
                } else {
                    items.push(self.star_expressions_allowing_star()?);
                }
            }
            let value = items.pop().unwrap_or_else(|| unreachable_expr(start));
            reject_bare_star(&value)?;
            for target in &items {
                check_target(target, TargetUse::AssignTop)?;
            }
            return Ok(Stmt {
                kind: StmtKind::Assign {
                    targets: items,
                    value,
                },
                span: self.since(start),
            });
        }
        if let Tok::Op(Op::AugAssign(op)) = *self.peek() {
            check_target(&first, TargetUse::Augmented)?;
            self.advance();
            let value = if self.check_kw(Keyword::Yield) {
                self.yield_expression()?
            } else {
                self.star_expressions()?
            };
            return Ok(Stmt {
                kind: StmtKind::AugAssign {
                    target: first,
                    op,
                    value,
                },
                span: self.since(start),
            });
        }
        if self.eat_op(Op::Colon) {
            // `x: int = 5` assigns; `x: int` alone binds nothing. A simple name's annotation
            // is recorded in `__annotations__` of a class body or the module.
            if !matches!(
                first.kind,
                ExprKind::Name(_) | ExprKind::Attribute { .. } | ExprKind::Subscript { .. }
            ) {
                return Err(err(
                    match first.kind {
                        ExprKind::Tuple(_) => "only single target (not tuple) can be annotated",
                        ExprKind::List(_) => "only single target (not list) can be annotated",
                        _ => "illegal target for annotation",
                    },
                    first.span,
                ));
            }
            let annotation = self.expression()?;
            let value = if !self.eat_op(Op::Assign) {
                None
            } else if self.check_kw(Keyword::Yield) {
                Some(self.yield_expression()?)
            } else {
                Some(self.star_expressions()?)
            };
            return Ok(Stmt {
                kind: StmtKind::AnnAssign {
                    target: first,
                    annotation,
                    value,
                },
                span: self.since(start),
            });
        }
        reject_bare_star(&first)?;
        Ok(Stmt {
            kind: StmtKind::Expr(first),
            span: self.since(start),
        })
    }

    fn import_statement(&mut self) -> PResult<StmtKind> {
        self.advance();
        let mut names = Vec::new();
        loop {
            let start = self.start();
            let path = self.dotted_name()?;
            let alias = if self.eat_kw(Keyword::As) {
                Some(self.name("a name after 'as'")?.0)
            } else {
                None
            };
            names.push(ImportName {
                path,
                alias,
                span: self.since(start),
            });
            if !self.eat_op(Op::Comma) {
                break;
            }
        }
        Ok(StmtKind::Import(names))
    }

    fn dotted_name(&mut self) -> PResult<Vec<Ident>> {
        if self.check_op(Op::Dot) || self.check_op(Op::Ellipsis) {
            return Err(err(
                "relative imports are not supported; devarray's modules are built in (e.g. 'from mxnet import nd')",
                self.span(),
            ));
        }
        let mut path = vec![self.name("a module name")?.0];
        while self.eat_op(Op::Dot) {
            path.push(self.name("a module name after '.'")?.0);
        }
        Ok(path)
    }

    fn import_from_statement(&mut self) -> PResult<StmtKind> {
        self.advance();
        let module = self.dotted_name()?;
        if !self.eat_kw(Keyword::Import) {
            return Err(self.error_here("expected 'import'"));
        }
        if self.check_op(Op::Star) {
            return Err(err(
                "'from ... import *' is not supported; name what you import",
                self.span(),
            ));
        }
        let parenthesised = self.eat_op(Op::LParen);
        let mut names = Vec::new();
        loop {
            let start = self.start();
            let (name, _) = self.name("a name to import")?;
            let alias = if self.eat_kw(Keyword::As) {
                Some(self.name("a name after 'as'")?.0)
            } else {
                None
            };
            names.push(ImportName {
                path: vec![name],
                alias,
                span: self.since(start),
            });
            if !self.eat_op(Op::Comma) {
                break;
            }
            if parenthesised && self.check_op(Op::RParen) {
                break;
            }
            if !parenthesised && self.at_line_end() {
                return Err(err(
                    "trailing comma not allowed without surrounding parentheses",
                    Span::new(self.last_end.saturating_sub(1), self.last_end),
                ));
            }
        }
        if parenthesised {
            self.expect_op(Op::RParen, "expected ')'")?;
        }
        Ok(StmtKind::FromImport { module, names })
    }

    /// The statements after a block header's `:`: an indented block, or simple
    /// statements on the same line.
    fn block(&mut self, header: &str, header_start: usize) -> PResult<Vec<Stmt>> {
        self.nested(|p| {
            let mut body = Vec::new();
            if !matches!(p.peek(), Tok::Newline) {
                if matches!(p.peek(), Tok::Eof) {
                    return Err(p.missing_block(header, header_start));
                }
                p.simple_statements(&mut body)?;
                return Ok(body);
            }
            p.advance();
            if !matches!(p.peek(), Tok::Indent) {
                return Err(p.missing_block(header, header_start));
            }
            p.advance();
            loop {
                match p.peek() {
                    Tok::Dedent => {
                        p.advance();
                        break;
                    }
                    Tok::Eof => break,
                    Tok::Indent => return Err(p.error_here("unexpected indent")),
                    Tok::Newline => {
                        p.advance();
                    }
                    _ => p.statement(&mut body)?,
                }
            }
            Ok(body)
        })
    }

    /// Only dedents (closing the enclosing blocks) and the end follow: the input stopped
    /// here, so a missing block or clause is incomplete input (more lines can supply it, at any
    /// depth: `def f():` / `    try:` / `        z = 1` goes on), not an error.
    fn only_block_ends_follow(&self) -> bool {
        self.tokens
            .get(self.pos..)
            .unwrap_or_default()
            .iter()
            .all(|t| matches!(t.kind, Tok::Dedent | Tok::Eof))
    }

    fn missing_block(&self, header: &str, header_start: usize) -> SyntaxError {
        if let Tok::Error(e) = self.peek() {
            return (**e).clone();
        }
        SyntaxError {
            message: format!(
                "expected an indented block after {header} on line {}",
                self.line_of(header_start)
            ),
            span: self.span(),
            incomplete: self.only_block_ends_follow(),
            too_deep: false,
        }
    }

    fn if_statement(&mut self) -> PResult<Stmt> {
        let start = self.start();
        self.advance();
        let mut branches = Vec::new();
        let test = self.named_expression()?;
        self.expect_colon()?;
        branches.push((test, self.block("'if' statement", start)?));
        let mut orelse = None;
        loop {
            let clause_start = self.start();
            if self.eat_kw(Keyword::Elif) {
                let test = self.named_expression()?;
                self.expect_colon()?;
                branches.push((test, self.block("'elif' statement", clause_start)?));
            } else if self.eat_kw(Keyword::Else) {
                self.expect_colon()?;
                orelse = Some(self.block("'else' statement", clause_start)?);
                break;
            } else {
                break;
            }
        }
        Ok(Stmt {
            kind: StmtKind::If { branches, orelse },
            span: self.since(start),
        })
    }

    /// An expression that may be `name := value` (conditions, parenthesised groups).
    fn named_expression(&mut self) -> PResult<Expr> {
        let start = self.start();
        let expr = self.expression()?;
        if !self.eat_op(Op::Walrus) {
            return Ok(expr);
        }
        let ExprKind::Name(target) = expr.kind else {
            return Err(err(
                format!("cannot use assignment expressions with {}", describe(&expr)),
                expr.span,
            ));
        };
        let value = self.expression()?;
        self.walrus
            .push((target.id.clone(), expr.span, self.since(start)));
        Ok(Expr {
            kind: ExprKind::NamedExpr {
                target,
                value: Box::new(value),
            },
            span: self.since(start),
        })
    }

    /// A loop's body and its `else:` block (which runs when the loop ends without `break`,
    /// and is outside the loop: a `break` there leaves an enclosing one).
    fn loop_body(&mut self, header: &str, start: usize) -> PResult<(Vec<Stmt>, Option<Vec<Stmt>>)> {
        self.loop_depth += 1;
        let body = self.block(header, start);
        self.loop_depth -= 1;
        let body = body?;
        let clause_start = self.start();
        let orelse = if self.eat_kw(Keyword::Else) {
            self.expect_colon()?;
            Some(self.block("'else' statement", clause_start)?)
        } else {
            None
        };
        Ok((body, orelse))
    }

    fn while_statement(&mut self) -> PResult<Stmt> {
        let start = self.start();
        self.advance();
        let cond = self.named_expression()?;
        self.expect_colon()?;
        let (body, orelse) = self.loop_body("'while' statement", start)?;
        Ok(Stmt {
            kind: StmtKind::While { cond, body, orelse },
            span: self.since(start),
        })
    }

    fn for_statement(&mut self) -> PResult<Stmt> {
        let start = self.start();
        self.advance();
        let target = self.target_list(true)?;
        check_target(&target, TargetUse::Assign)?;
        if !self.eat_kw(Keyword::In) {
            return Err(self.error_here("expected 'in' after the loop variable"));
        }
        let iter = self.star_expressions()?;
        self.expect_colon()?;
        let (body, orelse) = self.loop_body("'for' statement", start)?;
        Ok(Stmt {
            kind: StmtKind::For {
                target,
                iter,
                body,
                orelse,
            },
            span: self.since(start),
        })
    }

    fn with_statement(&mut self) -> PResult<Stmt> {
        let start = self.start();
        self.advance();
        let mut items = Vec::new();
        loop {
            let context = self.expression()?;
            let target = if self.eat_kw(Keyword::As) {
                let target = self.target_item(true)?;
                check_target(&target, TargetUse::Assign)?;
                Some(target)
            } else {
                None
            };
            items.push(WithItem { context, target });
            if !self.eat_op(Op::Comma) {
                break;
            }
        }
        self.expect_colon()?;
        let body = self.block("'with' statement", start)?;
        Ok(Stmt {
            kind: StmtKind::With { items, body },
            span: self.since(start),
        })
    }

    fn try_statement(&mut self) -> PResult<Stmt> {
        let start = self.start();
        self.advance();
        self.expect_colon()?;
        let body = self.block("'try' statement", start)?;
        let mut handlers = Vec::new();
        while self.check_kw(Keyword::Except) {
            let clause_start = self.start();
            self.advance();
            if self.check_op(Op::Star) {
                return Err(err("'except*' is not supported", self.span()));
            }
            let (kind, name) = if self.check_op(Op::Colon) {
                (None, None)
            } else {
                let kind = self.expression()?;
                if self.check_op(Op::Comma) {
                    return Err(err(
                        "multiple exception types must be parenthesized",
                        Span::new(kind.span.start, self.span().end),
                    ));
                }
                let name = if self.eat_kw(Keyword::As) {
                    Some(self.name("a name after 'as'")?.0)
                } else {
                    None
                };
                (Some(kind), name)
            };
            self.expect_colon()?;
            let body = self.block("'except' statement", clause_start)?;
            handlers.push(ExceptHandler {
                kind,
                name,
                body,
                span: self.since(clause_start),
            });
        }
        let mut orelse = None;
        let else_start = self.start();
        if self.eat_kw(Keyword::Else) {
            if handlers.is_empty() {
                return Err(err(
                    "'else' after 'try' needs an 'except' clause before it",
                    self.since(else_start),
                ));
            }
            self.expect_colon()?;
            orelse = Some(self.block("'else' statement", else_start)?);
        }
        let mut finally = None;
        let finally_start = self.start();
        if self.eat_kw(Keyword::Finally) {
            self.expect_colon()?;
            finally = Some(self.block("'finally' statement", finally_start)?);
        }
        if handlers.is_empty() && finally.is_none() {
            if self.only_block_ends_follow() {
                return Err(SyntaxError {
                    message: "expected 'except' or 'finally' block".into(),
                    span: self.span(),
                    incomplete: true,
                    too_deep: false,
                });
            }
            return Err(self.error_here("expected 'except' or 'finally' block"));
        }
        Ok(Stmt {
            kind: StmtKind::Try {
                body,
                handlers,
                orelse,
                finally,
            },
            span: self.since(start),
        })
    }

    fn def_statement(&mut self) -> PResult<Stmt> {
        let start = self.start();
        self.advance();
        let (name, _) = self.name("a function name after 'def'")?;
        self.expect_op(Op::LParen, "expected '('")?;
        let params = self.parameters(true)?;
        self.expect_op(Op::RParen, "expected ')'")?;
        if self.eat_op(Op::Arrow) {
            // Return annotations are accepted and ignored.
            self.expression()?;
        }
        self.expect_colon()?;
        let saved = (self.loop_depth, self.in_function, self.saw_yield);
        let outer_walrus = std::mem::take(&mut self.walrus);
        self.loop_depth = 0;
        self.in_function = true;
        self.saw_yield = false;
        let body = self.block("function definition", start);
        let is_generator = self.saw_yield;
        (self.loop_depth, self.in_function, self.saw_yield) = saved;
        let walrus = std::mem::replace(&mut self.walrus, outer_walrus);
        let mut body = body?;
        let mut resumable = is_generator && super::ast::resumable_body(&body);
        if is_generator && !resumable {
            // A `yield` inside an expression: hoisted to a statement of its own where it can
            // be, so this generator too suspends without a stack.
            if let Some(lowered) = super::lower::hoist_yields(&body) {
                if super::ast::resumable_body(&lowered) {
                    body = lowered;
                    resumable = true;
                }
            }
        }
        let doc = match body.first().map(|s| &s.kind) {
            Some(StmtKind::Expr(Expr {
                kind: ExprKind::Str(text),
                ..
            })) => Some(text.clone()),
            _ => None,
        };
        let span = self.since(start);
        let mut local_names = super::ast::local_names(&params, &body);
        super::ast::add_assigned_names(
            &mut local_names,
            walrus.into_iter().map(|(n, _, _)| n),
            &body,
        );
        Ok(Stmt {
            kind: StmtKind::Def(Rc::new(FuncDef {
                name,
                locals: local_names.len().min(LOCALS_HINT_LIMIT),
                local_names: local_names.into(),
                params: params.into(),
                body,
                is_generator,
                resumable,
                doc,
                span,
            })),
            span,
        })
    }

    /// `@dec` lines, then the `def` or `class` they decorate.
    fn decorated(&mut self) -> PResult<Stmt> {
        let start = self.start();
        let mut decorators = Vec::new();
        while self.eat_op(Op::At) {
            decorators.push(self.expression()?);
            match self.peek() {
                Tok::Newline => {
                    self.advance();
                }
                Tok::Eof => return Err(self.decorator_without_def()),
                _ => return Err(self.invalid_syntax()),
            }
            while matches!(self.peek(), Tok::Newline) {
                self.advance();
            }
        }
        let def = match self.peek() {
            Tok::Keyword(Keyword::Def) => self.def_statement()?,
            Tok::Keyword(Keyword::Class) => self.class_statement()?,
            Tok::Op(Op::At) => self.decorated()?,
            _ => return Err(self.decorator_without_def()),
        };
        Ok(Stmt {
            span: self.since(start),
            kind: StmtKind::Decorated {
                decorators,
                def: Box::new(def),
            },
        })
    }

    /// A decorator line not followed by `def` or `class`: incomplete when only the end of the
    /// input (and dedents closing enclosing blocks) follows, so the REPL asks for more.
    fn decorator_without_def(&self) -> SyntaxError {
        let mut e = err("expected 'def' or 'class' after a decorator", self.span());
        e.incomplete = self
            .tokens
            .get(self.pos..)
            .unwrap_or_default()
            .iter()
            .all(|t| matches!(t.kind, Tok::Dedent | Tok::Eof));
        e
    }

    /// `class Name(bases): body`. The body is a block run once, in its own namespace.
    fn class_statement(&mut self) -> PResult<Stmt> {
        let start = self.start();
        self.advance();
        let (name, _) = self.name("a class name after 'class'")?;
        let bases = if self.check_op(Op::LParen) {
            let open = self.advance().span;
            self.nested(|p| p.call_arguments(open))?
        } else {
            Vec::new()
        };
        self.expect_colon()?;
        let saved = (self.loop_depth, self.in_function);
        let outer_walrus = std::mem::take(&mut self.walrus);
        self.loop_depth = 0;
        self.in_function = false;
        let body = self.block("class definition", start);
        (self.loop_depth, self.in_function) = saved;
        self.walrus = outer_walrus;
        let body = body?;
        let doc = match body.first().map(|s| &s.kind) {
            Some(StmtKind::Expr(Expr {
                kind: ExprKind::Str(text),
                ..
            })) => Some(text.clone()),
            _ => None,
        };
        let span = self.since(start);
        Ok(Stmt {
            kind: StmtKind::Class(Rc::new(ClassDef {
                name,
                bases,
                body,
                doc,
                span,
            })),
            span,
        })
    }

    /// Parameters up to `)` (a def) or `:` (a lambda). Those before a `/` marker are
    /// positional-only, those after `*` or `*args` keyword-only (`Param::passed`).
    fn parameters(&mut self, in_def: bool) -> PResult<Vec<Param>> {
        let mut params: Vec<Param> = Vec::new();
        let mut seen_default = false;
        let mut seen_varargs = false;
        let closing = if in_def { Op::RParen } else { Op::Colon };
        while !self.check_op(closing) {
            let start = self.start();
            if params.last().is_some_and(|p| p.kind == ParamKind::KwArgs) {
                return Err(err(
                    "arguments cannot follow var-keyword argument",
                    self.span(),
                ));
            }
            let kind = if self.eat_op(Op::DoubleStar) {
                ParamKind::KwArgs
            } else if self.eat_op(Op::Star) {
                if self.check_op(Op::Comma) {
                    seen_varargs = true;
                    self.advance();
                    continue;
                }
                ParamKind::VarArgs
            } else if self.eat_op(Op::Slash) {
                if !self.eat_op(Op::Comma) && !self.check_op(closing) {
                    return Err(self.error_here("expected ',' or ')' after '/'"));
                }
                for p in params.iter_mut() {
                    if p.kind == ParamKind::Normal {
                        p.passed = Passed::PositionalOnly;
                    }
                }
                continue;
            } else {
                ParamKind::Normal
            };
            let (name, name_span) = self.name("a parameter name")?;
            if params.iter().any(|p| p.name == name) {
                let what = if in_def {
                    "function definition"
                } else {
                    "lambda"
                };
                return Err(err(
                    format!("duplicate argument '{name}' in {what}"),
                    name_span,
                ));
            }
            if in_def && self.eat_op(Op::Colon) {
                // Annotations are accepted and ignored.
                self.expression()?;
            }
            let default = if kind == ParamKind::Normal && self.eat_op(Op::Assign) {
                Some(self.expression()?)
            } else {
                None
            };
            if kind == ParamKind::Normal && !seen_varargs {
                if default.is_some() {
                    seen_default = true;
                } else if seen_default {
                    return Err(err(
                        "non-default argument follows default argument",
                        name_span,
                    ));
                }
            }
            if kind == ParamKind::VarArgs {
                if seen_varargs {
                    return Err(err("* argument may appear only once", self.since(start)));
                }
                seen_varargs = true;
            }
            let passed = if kind == ParamKind::Normal && seen_varargs {
                Passed::KeywordOnly
            } else {
                Passed::Either
            };
            params.push(Param {
                name,
                default,
                kind,
                span: self.since(start),
                passed,
            });
            if !self.eat_op(Op::Comma) {
                break;
            }
        }
        if !self.check_op(closing) {
            let expected = if in_def {
                "expected ')'"
            } else {
                "expected ':'"
            };
            return Err(self.error_here(expected));
        }
        Ok(params)
    }

    // ----- targets ------------------------------------------------------

    /// A comma-separated list of targets (for `for` and `del`): each item is an
    /// operand expression, which stops before `in`.
    fn target_list(&mut self, allow_star: bool) -> PResult<Expr> {
        let start = self.start();
        let mut items = Vec::new();
        let trailing_comma = loop {
            items.push(self.target_item(allow_star)?);
            if !self.eat_op(Op::Comma) {
                break false;
            }
            if self.check_kw(Keyword::In) || self.at_line_end() || self.check_op(Op::Assign) {
                break true;
            }
        };
        if items.len() == 1 && !trailing_comma {
            return Ok(items.pop().unwrap_or_else(|| unreachable_expr(start)));
        }
        Ok(Expr {
            kind: ExprKind::Tuple(items),
            span: self.since(start),
        })
    }

    fn target_item(&mut self, allow_star: bool) -> PResult<Expr> {
        let start = self.start();
        if allow_star && self.eat_op(Op::Star) {
            let inner = self.binary(1)?;
            return Ok(Expr {
                kind: ExprKind::Starred(Box::new(inner)),
                span: self.since(start),
            });
        }
        self.binary(1)
    }

    // ----- expressions --------------------------------------------------

    /// A whole input that must be one expression list (parse_expression).
    fn whole_expression(&mut self) -> PResult<Expr> {
        if matches!(self.peek(), Tok::Eof) {
            return Err(err("expected an expression, found nothing", self.span()));
        }
        let expr = if self.check_kw(Keyword::Yield) {
            self.yield_expression()?
        } else {
            self.star_expressions()?
        };
        match self.peek() {
            Tok::Eof => Ok(expr),
            _ => Err(self.invalid_syntax()),
        }
    }

    /// `a, b, *c` (a bare tuple) or a single expression; a lone `*x` is an error.
    fn star_expressions(&mut self) -> PResult<Expr> {
        let expr = self.star_expressions_allowing_star()?;
        reject_bare_star(&expr)?;
        Ok(expr)
    }

    fn star_expressions_allowing_star(&mut self) -> PResult<Expr> {
        let start = self.start();
        let first = self.star_expression()?;
        if !self.check_op(Op::Comma) {
            return Ok(first);
        }
        let mut items = vec![first];
        while self.eat_op(Op::Comma) {
            if self.at_line_end()
                || self.check_op(Op::Assign)
                || self.check_op(Op::Colon)
                || matches!(self.peek(), Tok::Op(Op::AugAssign(_)))
            {
                break;
            }
            items.push(self.star_expression()?);
        }
        Ok(Expr {
            kind: ExprKind::Tuple(items),
            span: self.since(start),
        })
    }

    /// A display's item: `*operand`, or an expression that may be `name := value`.
    fn star_named_expression(&mut self) -> PResult<Expr> {
        if self.check_op(Op::Star) {
            self.star_expression()
        } else {
            self.named_expression()
        }
    }

    /// An expression, or `*operand` where unpacking is allowed.
    fn star_expression(&mut self) -> PResult<Expr> {
        let start = self.start();
        if self.eat_op(Op::Star) {
            let inner = self.nested(|p| p.binary(1))?;
            return Ok(Expr {
                kind: ExprKind::Starred(Box::new(inner)),
                span: self.since(start),
            });
        }
        self.expression()
    }

    /// lambda | or_test ['if' or_test 'else' expression]
    fn expression(&mut self) -> PResult<Expr> {
        self.nested(|p| {
            if p.check_kw(Keyword::Lambda) {
                return p.lambda();
            }
            let start = p.start();
            let body = p.or_test()?;
            if !p.check_kw(Keyword::If) {
                return Ok(body);
            }
            p.advance();
            let test = p.or_test()?;
            if !p.eat_kw(Keyword::Else) {
                return Err(p.error_here("expected 'else' after 'if' expression"));
            }
            let orelse = p.expression()?;
            Ok(Expr {
                kind: ExprKind::IfExp {
                    test: Box::new(test),
                    body: Box::new(body),
                    orelse: Box::new(orelse),
                },
                span: p.since(start),
            })
        })
    }

    fn lambda(&mut self) -> PResult<Expr> {
        let start = self.start();
        self.advance();
        let params = self.parameters(false)?;
        self.expect_colon()?;
        let saved = std::mem::replace(&mut self.in_lambda, true);
        let outer_walrus = std::mem::take(&mut self.walrus);
        let body = self.expression();
        self.in_lambda = saved;
        self.walrus = outer_walrus;
        let body = body?;
        Ok(Expr {
            kind: ExprKind::Lambda {
                params: params.into(),
                body: Box::new(body),
            },
            span: self.since(start),
        })
    }

    fn or_test(&mut self) -> PResult<Expr> {
        self.bool_chain(Keyword::Or)
    }

    fn bool_chain(&mut self, kw: Keyword) -> PResult<Expr> {
        let start = self.start();
        let first = if kw == Keyword::Or {
            self.bool_chain(Keyword::And)?
        } else {
            self.not_test()?
        };
        if !self.check_kw(kw) {
            return Ok(first);
        }
        let mut values = vec![first];
        while self.eat_kw(kw) {
            values.push(if kw == Keyword::Or {
                self.bool_chain(Keyword::And)?
            } else {
                self.not_test()?
            });
        }
        let op = if kw == Keyword::Or {
            BoolOpKind::Or
        } else {
            BoolOpKind::And
        };
        Ok(Expr {
            kind: ExprKind::BoolOp { op, values },
            span: self.since(start),
        })
    }

    fn not_test(&mut self) -> PResult<Expr> {
        if !self.check_kw(Keyword::Not) {
            return self.comparison();
        }
        let start = self.start();
        self.advance();
        let operand = self.nested(|p| p.not_test())?;
        Ok(Expr {
            kind: ExprKind::Unary {
                op: UnaryOp::Not,
                operand: Box::new(operand),
            },
            span: self.since(start),
        })
    }

    fn comparison_op(&mut self) -> Option<CmpOp> {
        let op = match self.peek() {
            Tok::Op(Op::EqEq) => CmpOp::Eq,
            Tok::Op(Op::NotEq) => CmpOp::NotEq,
            Tok::Op(Op::Lt) => CmpOp::Lt,
            Tok::Op(Op::LtE) => CmpOp::LtE,
            Tok::Op(Op::Gt) => CmpOp::Gt,
            Tok::Op(Op::GtE) => CmpOp::GtE,
            Tok::Keyword(Keyword::In) => CmpOp::In,
            Tok::Keyword(Keyword::Is) => {
                if matches!(self.peek_nth(1), Tok::Keyword(Keyword::Not)) {
                    self.advance();
                    CmpOp::IsNot
                } else {
                    CmpOp::Is
                }
            }
            Tok::Keyword(Keyword::Not) if matches!(self.peek_nth(1), Tok::Keyword(Keyword::In)) => {
                self.advance();
                CmpOp::NotIn
            }
            _ => return None,
        };
        self.advance();
        Some(op)
    }

    fn comparison(&mut self) -> PResult<Expr> {
        let start = self.start();
        let left = self.binary(1)?;
        let mut ops = Vec::new();
        while let Some(op) = self.comparison_op() {
            ops.push((op, self.binary(1)?));
        }
        if ops.is_empty() {
            return Ok(left);
        }
        Ok(Expr {
            kind: ExprKind::Compare {
                left: Box::new(left),
                ops,
            },
            span: self.since(start),
        })
    }

    /// Binary operators by precedence climbing: `| ^ & << >> + - * / // % @`.
    fn binary(&mut self, min_prec: u8) -> PResult<Expr> {
        let links = self.links;
        let left = self.binary_chain(min_prec);
        self.links = links;
        left
    }

    fn binary_chain(&mut self, min_prec: u8) -> PResult<Expr> {
        let start = self.start();
        let mut left = self.unary()?;
        while let Some((op, prec)) = binary_op(self.peek()) {
            if prec < min_prec {
                break;
            }
            self.advance();
            self.link()?;
            let right = self.binary(prec + 1)?;
            left = Expr {
                kind: ExprKind::Binary {
                    op,
                    left: Box::new(left),
                    right: Box::new(right),
                },
                span: self.since(start),
            };
        }
        Ok(left)
    }

    fn unary(&mut self) -> PResult<Expr> {
        let op = match self.peek() {
            Tok::Op(Op::Minus) => UnaryOp::Neg,
            Tok::Op(Op::Plus) => UnaryOp::Pos,
            Tok::Op(Op::Tilde) => UnaryOp::Invert,
            _ => return self.power(),
        };
        let start = self.start();
        self.advance();
        // `-9223372036854775808` is the smallest i64, though its magnitude alone
        // does not fit; not when it binds to `**` or a trailer first.
        if op == UnaryOp::Neg
            && matches!(self.peek(), Tok::IntMinMagnitude)
            && !matches!(
                self.peek_nth(1),
                Tok::Op(Op::DoubleStar | Op::Dot | Op::LParen | Op::LBracket)
            )
        {
            self.advance();
            return Ok(Expr {
                kind: ExprKind::Int(i64::MIN),
                span: self.since(start),
            });
        }
        let operand = self.nested(|p| p.unary())?;
        Ok(Expr {
            kind: ExprKind::Unary {
                op,
                operand: Box::new(operand),
            },
            span: self.since(start),
        })
    }

    /// `primary ['**' unary]`: right-associative, and tighter than a unary
    /// minus on its left (`-2**2 == -4`).
    fn power(&mut self) -> PResult<Expr> {
        let start = self.start();
        let base = self.primary()?;
        if !self.eat_op(Op::DoubleStar) {
            return Ok(base);
        }
        let exponent = self.nested(|p| p.unary())?;
        Ok(Expr {
            kind: ExprKind::Binary {
                op: BinOp::Pow,
                left: Box::new(base),
                right: Box::new(exponent),
            },
            span: self.since(start),
        })
    }

    fn primary(&mut self) -> PResult<Expr> {
        let links = self.links;
        let expr = self.trailers();
        self.links = links;
        expr
    }

    fn trailers(&mut self) -> PResult<Expr> {
        let start = self.start();
        let mut expr = self.atom()?;
        loop {
            if self.check_op(Op::Dot) || self.check_op(Op::LParen) || self.check_op(Op::LBracket) {
                self.link()?;
            }
            if self.eat_op(Op::Dot) {
                let (attr, attr_span) = self.name("an attribute name after '.'")?;
                expr = Expr {
                    kind: ExprKind::Attribute {
                        value: Box::new(expr),
                        attr,
                        attr_span,
                        hint: Default::default(),
                    },
                    span: self.since(start),
                };
            } else if self.check_op(Op::LParen) {
                let open = self.advance().span;
                let args = self.nested(|p| p.call_arguments(open))?;
                expr = Expr {
                    kind: ExprKind::Call {
                        func: Box::new(expr),
                        args,
                    },
                    span: self.since(start),
                };
            } else if self.check_op(Op::LBracket) {
                self.advance();
                let index = self.nested(|p| p.subscript())?;
                expr = Expr {
                    kind: ExprKind::Subscript {
                        value: Box::new(expr),
                        index: Box::new(index),
                    },
                    span: self.since(start),
                };
            } else {
                return Ok(expr);
            }
        }
    }

    /// After an item in a bracketed list: `,` or the closing bracket must
    /// follow; anything that could start another item means a missing comma.
    fn after_item(&self, item_start: usize, closing: Op) -> PResult<()> {
        if self.check_op(Op::Comma) || self.check_op(closing) {
            return Ok(());
        }
        if self.starts_expression() {
            return Err(err(
                "invalid syntax. Perhaps you forgot a comma?",
                Span::new(item_start, self.span().end),
            ));
        }
        Err(self.invalid_syntax())
    }

    fn starts_expression(&self) -> bool {
        matches!(
            self.peek(),
            Tok::Name(_)
                | Tok::Int(_)
                | Tok::BigInt(_)
                | Tok::IntMinMagnitude
                | Tok::Float(_)
                | Tok::Str(_)
                | Tok::Bytes(_)
                | Tok::FStr { .. }
                | Tok::Keyword(
                    Keyword::True | Keyword::False | Keyword::None | Keyword::Lambda | Keyword::Not
                )
                | Tok::Op(Op::LParen | Op::LBracket | Op::LBrace | Op::Ellipsis | Op::Tilde)
        )
    }

    fn call_arguments(&mut self, open: Span) -> PResult<Vec<Arg>> {
        let mut args: Vec<Arg> = Vec::new();
        let mut seen_keyword = false;
        let mut seen_double_star = false;
        while !self.check_op(Op::RParen) {
            let start = self.start();
            let arg = if self.eat_op(Op::DoubleStar) {
                seen_double_star = true;
                Arg::DoubleStar(self.expression()?)
            } else if self.eat_op(Op::Star) {
                if seen_double_star {
                    return Err(err(
                        "iterable argument unpacking follows keyword argument unpacking",
                        self.since(start),
                    ));
                }
                Arg::Star(self.expression()?)
            } else {
                let yields_before = self.mark();
                let value = self.expression()?;
                if self.check_op(Op::Assign) {
                    let ExprKind::Name(name) = &value.kind else {
                        return Err(err(
                            "expression cannot contain assignment, perhaps you meant \"==\"?",
                            Span::new(start, self.span().end),
                        ));
                    };
                    let name = name.id.clone();
                    self.advance();
                    let value = self.expression()?;
                    if args
                        .iter()
                        .any(|a| matches!(a, Arg::Keyword { name: n, .. } if *n == name))
                    {
                        return Err(err(
                            format!("keyword argument repeated: {name}"),
                            self.since(start),
                        ));
                    }
                    seen_keyword = true;
                    Arg::Keyword {
                        name,
                        value,
                        span: self.since(start),
                    }
                } else if self.check_kw(Keyword::For) {
                    let generators =
                        self.comprehension_clauses(yields_before, "generator expression")?;
                    let genexp = generator_expression(value, generators, self.since(start));
                    if !args.is_empty() || !self.check_op(Op::RParen) {
                        return Err(err(
                            "Generator expression must be parenthesized",
                            genexp.span,
                        ));
                    }
                    Arg::Positional(genexp)
                } else {
                    if seen_double_star {
                        return Err(err(
                            "positional argument follows keyword argument unpacking",
                            value.span,
                        ));
                    }
                    if seen_keyword {
                        return Err(err(
                            "positional argument follows keyword argument",
                            value.span,
                        ));
                    }
                    Arg::Positional(value)
                }
            };
            args.push(arg);
            self.after_item(start, Op::RParen)?;
            if !self.eat_op(Op::Comma) {
                break;
            }
        }
        if !self.check_op(Op::RParen) {
            return Err(self.error_here(format!(
                "'(' on line {} was never closed",
                self.line_of(open.start)
            )));
        }
        self.advance();
        Ok(args)
    }

    /// Inside `[...]` after a value: one index, a slice, or a tuple of them.
    fn subscript(&mut self) -> PResult<Expr> {
        let start = self.start();
        let mut items = Vec::new();
        let mut trailing_comma = false;
        if self.check_op(Op::RBracket) {
            return Err(err("expected an index or slice inside '[]'", self.span()));
        }
        while !self.check_op(Op::RBracket) {
            let item_start = self.start();
            items.push(self.slice_item()?);
            self.after_item(item_start, Op::RBracket)?;
            trailing_comma = self.eat_op(Op::Comma);
            if !trailing_comma {
                break;
            }
        }
        let end_span = self.expect_op(Op::RBracket, "expected ']'")?;
        if items.len() == 1 && !trailing_comma {
            return Ok(items.pop().unwrap_or_else(|| unreachable_expr(start)));
        }
        let end = items.last().map_or(end_span.start, |e| {
            if trailing_comma {
                end_span.start
            } else {
                e.span.end
            }
        });
        Ok(Expr {
            kind: ExprKind::Tuple(items),
            span: Span::new(start, end.max(start)),
        })
    }

    fn slice_item(&mut self) -> PResult<Expr> {
        let start = self.start();
        if self.check_op(Op::Star) {
            return self.star_expression();
        }
        let lower = if self.check_op(Op::Colon) {
            None
        } else {
            let expr = self.expression()?;
            if !self.check_op(Op::Colon) {
                return Ok(expr);
            }
            Some(Box::new(expr))
        };
        self.advance(); // the ':'
        let ends_part =
            |p: &Self| p.check_op(Op::Colon) || p.check_op(Op::Comma) || p.check_op(Op::RBracket);
        let upper = if ends_part(self) {
            None
        } else {
            Some(Box::new(self.expression()?))
        };
        let step = if self.eat_op(Op::Colon) {
            if ends_part(self) {
                None
            } else {
                Some(Box::new(self.expression()?))
            }
        } else {
            None
        };
        Ok(Expr {
            kind: ExprKind::Slice { lower, upper, step },
            span: self.since(start),
        })
    }

    /// The `for ... in ... if ...` clauses of a comprehension `what` whose element(s) were
    /// parsed after `yields_before` yields: a `yield` there (but in the first iterable, which
    /// the enclosing function evaluates) is CPython's SyntaxError.
    fn comprehension_clauses(
        &mut self,
        yields_before: Mark,
        what: &str,
    ) -> PResult<Vec<Comprehension>> {
        let mut generators = Vec::new();
        let mut in_first_iter = 0;
        while self.eat_kw(Keyword::For) {
            let target = self.target_list(true)?;
            check_target(&target, TargetUse::Assign)?;
            if !self.eat_kw(Keyword::In) {
                return Err(self.error_here("expected 'in' after the loop variable"));
            }
            let before_iter = self.yields;
            let walrus_before_iter = self.walrus.len();
            let iter = self.or_test()?;
            if let Some((_, _, span)) = self.walrus.get(walrus_before_iter) {
                return Err(err(
                    "assignment expression cannot be used in a comprehension iterable expression",
                    *span,
                ));
            }
            if generators.is_empty() {
                in_first_iter = self.yields - before_iter;
            }
            let mut ifs = Vec::new();
            while self.eat_kw(Keyword::If) {
                ifs.push(self.or_test()?);
            }
            generators.push(Comprehension { target, iter, ifs });
        }
        // PEP 572: `:=` in a comprehension binds in the function around it, never one of the
        // comprehension's own loop variables.
        let mut loop_names = Vec::new();
        for g in &generators {
            super::ast::target_names(&g.target, &mut loop_names);
        }
        let own = self.walrus.get(yields_before.walrus..).unwrap_or_default();
        if let Some((name, span, _)) = own.iter().find(|(n, _, _)| loop_names.contains(n)) {
            return Err(err(
                format!(
                    "assignment expression cannot rebind comprehension iteration variable '{name}'"
                ),
                *span,
            ));
        }
        if self.yields - yields_before.yields > in_first_iter {
            return Err(err(format!("'yield' inside {what}"), self.yield_span));
        }
        Ok(generators)
    }

    fn atom(&mut self) -> PResult<Expr> {
        let start = self.start();
        let kind = match self.peek().clone() {
            Tok::Name(name) => {
                self.advance();
                ExprKind::Name(NameRef::new(name))
            }
            Tok::Int(value) => {
                self.advance();
                ExprKind::Int(value)
            }
            Tok::BigInt(value) => {
                self.advance();
                ExprKind::BigInt(value)
            }
            Tok::Float(value) => {
                self.advance();
                ExprKind::Float(value)
            }
            // 2**63 without a minus before it: an int past i64.
            Tok::IntMinMagnitude => {
                self.advance();
                ExprKind::BigInt(Rc::new(num_bigint::BigInt::from(1u64 << 63)))
            }
            Tok::Str(_) | Tok::Bytes(_) | Tok::FStr { .. } => return self.strings(),
            Tok::Keyword(Keyword::True) => {
                self.advance();
                ExprKind::Bool(true)
            }
            Tok::Keyword(Keyword::False) => {
                self.advance();
                ExprKind::Bool(false)
            }
            Tok::Keyword(Keyword::None) => {
                self.advance();
                ExprKind::None
            }
            Tok::Op(Op::Ellipsis) => {
                self.advance();
                ExprKind::Ellipsis
            }
            Tok::Op(Op::LParen) => {
                self.advance();
                return self.parenthesised(start);
            }
            Tok::Op(Op::LBracket) => {
                self.advance();
                return self.list_display(start);
            }
            Tok::Op(Op::LBrace) => {
                self.advance();
                return self.dict_display(start);
            }
            Tok::Op(Op::Star) => {
                return Err(err("can't use starred expression here", self.span()));
            }
            _ => return Err(self.invalid_syntax()),
        };
        Ok(Expr {
            kind,
            span: self.since(start),
        })
    }

    /// After `(`: `()`, `(x)`, `(x,)`, `(x, y)` or a generator `(x for ...)`.
    fn parenthesised(&mut self, start: usize) -> PResult<Expr> {
        if self.eat_op(Op::RParen) {
            return Ok(Expr {
                kind: ExprKind::Tuple(Vec::new()),
                span: self.since(start),
            });
        }
        if self.check_kw(Keyword::Yield) {
            let y = self.yield_expression()?;
            self.expect_op(Op::RParen, "expected ')'")?;
            return Ok(y);
        }
        let first_start = self.start();
        let yields_before = self.mark();
        let first = if self.check_op(Op::Star) {
            self.star_expression()?
        } else {
            self.named_expression()?
        };
        if self.check_kw(Keyword::For) {
            reject_bare_star(&first)?;
            let generators = self.comprehension_clauses(yields_before, "generator expression")?;
            self.expect_op(Op::RParen, "expected ')'")?;
            return Ok(generator_expression(first, generators, self.since(start)));
        }
        self.after_item(first_start, Op::RParen)?;
        if self.eat_op(Op::RParen) {
            reject_bare_star(&first)?;
            // A parenthesised expression keeps its own span.
            return Ok(first);
        }
        let items = self.rest_of_items(first, Op::RParen)?;
        Ok(Expr {
            kind: ExprKind::Tuple(items),
            span: self.since(start),
        })
    }

    /// After the first item and before its `,`: the remaining items and the
    /// closing bracket.
    fn rest_of_items(&mut self, first: Expr, closing: Op) -> PResult<Vec<Expr>> {
        let mut items = vec![first];
        while self.eat_op(Op::Comma) {
            if self.check_op(closing) {
                break;
            }
            let item_start = self.start();
            items.push(self.star_named_expression()?);
            self.after_item(item_start, closing)?;
        }
        self.expect_op(closing, "invalid syntax")?;
        Ok(items)
    }

    fn list_display(&mut self, start: usize) -> PResult<Expr> {
        if self.eat_op(Op::RBracket) {
            return Ok(Expr {
                kind: ExprKind::List(Vec::new()),
                span: self.since(start),
            });
        }
        let first_start = self.start();
        let yields_before = self.mark();
        let first = self.star_named_expression()?;
        self.display_rest(Display::List, start, first_start, first, yields_before)
    }

    fn dict_display(&mut self, start: usize) -> PResult<Expr> {
        if self.eat_op(Op::RBrace) {
            return Ok(Expr {
                kind: ExprKind::Dict(Vec::new()),
                span: self.since(start),
            });
        }
        let mut pairs = Vec::new();
        loop {
            let item_start = self.start();
            let yields_before = self.mark();
            if self.eat_op(Op::DoubleStar) {
                let mapping = self.binary(1)?;
                pairs.push((None, mapping));
                self.after_item(item_start, Op::RBrace)?;
                if !self.eat_op(Op::Comma) || self.check_op(Op::RBrace) {
                    break;
                }
                continue;
            }
            let key = self.star_expression()?;
            if !self.eat_op(Op::Colon) {
                if pairs.is_empty() {
                    return self.display_rest(Display::Set, start, item_start, key, yields_before);
                }
                return Err(self.error_here("expected ':' after a dict key"));
            }
            reject_bare_star(&key)?;
            let value = self.expression()?;
            if pairs.is_empty() && self.check_kw(Keyword::For) {
                let generators = self.comprehension_clauses(yields_before, "dict comprehension")?;
                self.expect_op(Op::RBrace, "expected '}'")?;
                return Ok(Expr {
                    kind: ExprKind::DictComp {
                        key: Box::new(key),
                        value: Box::new(value),
                        generators,
                    },
                    span: self.since(start),
                });
            }
            pairs.push((Some(key), value));
            self.after_item(item_start, Op::RBrace)?;
            if !self.eat_op(Op::Comma) || self.check_op(Op::RBrace) {
                break;
            }
        }
        self.expect_op(Op::RBrace, "expected '}'")?;
        Ok(Expr {
            kind: ExprKind::Dict(pairs),
            span: self.since(start),
        })
    }

    /// `{a, b}` or `{x for x in xs}`, after its first item.
    /// The rest of a list or set display after its first item: a comprehension when `for`
    /// follows, else the remaining items up to the closing bracket.
    fn display_rest(
        &mut self,
        display: Display,
        start: usize,
        first_start: usize,
        first: Expr,
        yields_before: Mark,
    ) -> PResult<Expr> {
        let (close, expected) = match display {
            Display::List => (Op::RBracket, "expected ']'"),
            Display::Set => (Op::RBrace, "expected '}'"),
        };
        let kind = if self.check_kw(Keyword::For) {
            reject_bare_star(&first)?;
            let (what, comp): (_, fn(_, _) -> _) = match display {
                Display::List => ("list comprehension", |elt, generators| ExprKind::ListComp {
                    elt,
                    generators,
                }),
                Display::Set => ("set comprehension", |elt, generators| ExprKind::SetComp {
                    elt,
                    generators,
                }),
            };
            let generators = self.comprehension_clauses(yields_before, what)?;
            self.expect_op(close, expected)?;
            comp(Box::new(first), generators)
        } else {
            self.after_item(first_start, close)?;
            let items = self.rest_of_items(first, close)?;
            match display {
                Display::List => ExprKind::List(items),
                Display::Set => ExprKind::Set(items),
            }
        };
        Ok(Expr {
            kind,
            span: self.since(start),
        })
    }

    /// Adjacent string literals, concatenated; any f-string makes the whole an f-string.
    fn strings(&mut self) -> PResult<Expr> {
        let start = self.start();
        let mut parts: Vec<FStringPart> = Vec::new();
        let mut any_fstring = false;
        // Adjacent bytes literals: their bytes, and whether any str literal was among them.
        let mut bytes: Option<Vec<u8>> = None;
        let mut any_str = false;
        loop {
            match self.peek().clone() {
                Tok::Str(text) => {
                    self.advance();
                    any_str = true;
                    push_literal(&mut parts, &text);
                }
                Tok::Bytes(b) => {
                    self.advance();
                    bytes.get_or_insert_with(Vec::new).extend_from_slice(&b);
                }
                Tok::FStr { body, raw } => {
                    self.advance();
                    any_fstring = true;
                    any_str = true;
                    let pieces = self.nested(|p| p.fstring(body, raw, false))?;
                    for piece in pieces {
                        match piece {
                            FStringPart::Lit(text) => push_literal(&mut parts, &text),
                            other => parts.push(other),
                        }
                    }
                }
                _ => break,
            }
        }
        let span = self.since(start);
        if let Some(bytes) = bytes {
            if any_str {
                return Err(err("cannot mix bytes and nonbytes literals", span));
            }
            return Ok(Expr {
                kind: ExprKind::Bytes(Rc::from(bytes)),
                span,
            });
        }
        if any_fstring {
            return Ok(Expr {
                kind: ExprKind::FString(parts),
                span,
            });
        }
        let text = match parts.pop() {
            Some(FStringPart::Lit(text)) => text,
            _ => Rc::from(""),
        };
        Ok(Expr {
            kind: ExprKind::Str(text),
            span,
        })
    }

    /// The pieces of an f-string body (or of a format spec inside one).
    fn fstring(&mut self, body: Span, raw: bool, in_spec: bool) -> PResult<Vec<FStringPart>> {
        let src = self.src;
        let mut parts = Vec::new();
        let mut literal = String::new();
        let mut pending = body.start;
        let mut i = body.start;
        let decode = |literal: &mut String, from: usize, to: usize| -> PResult<()> {
            let text = src.get(from..to).unwrap_or("");
            let decoded = decode_escapes(text, raw)
                .map_err(|(msg, at)| err(msg, Span::new(from + at.start, from + at.end)))?;
            literal.push_str(&decoded);
            Ok(())
        };
        while i < body.end {
            let Some(c) = src.get(i..body.end).and_then(|s| s.chars().next()) else {
                break;
            };
            let next = src.get(i + 1..body.end).and_then(|s| s.chars().next());
            match c {
                '\\' if !raw => {
                    // Keep the escape for decoding; `\{` still opens a field.
                    i += 1;
                    if let Some(n) = next {
                        if n != '{' && n != '}' {
                            i += n.len_utf8();
                        }
                    }
                }
                '{' if next == Some('{') && !in_spec => {
                    decode(&mut literal, pending, i)?;
                    literal.push('{');
                    i += 2;
                    pending = i;
                }
                '}' if next == Some('}') && !in_spec => {
                    decode(&mut literal, pending, i)?;
                    literal.push('}');
                    i += 2;
                    pending = i;
                }
                '}' => {
                    return Err(err(
                        "f-string: single '}' is not allowed; write '}}' for a literal brace",
                        Span::new(i, i + 1),
                    ))
                }
                '{' => {
                    decode(&mut literal, pending, i)?;
                    if !literal.is_empty() {
                        parts.push(FStringPart::Lit(Rc::from(std::mem::take(&mut literal))));
                    }
                    let (part, after) = self.fstring_field(i, body)?;
                    parts.push(part);
                    i = after;
                    pending = i;
                }
                c => i += c.len_utf8(),
            }
        }
        decode(&mut literal, pending, body.end.max(pending))?;
        if !literal.is_empty() {
            parts.push(FStringPart::Lit(Rc::from(literal)));
        }
        Ok(parts)
    }

    /// One `{expr[=][!c][:spec]}` field starting at `open`; returns the part
    /// and the offset just past its `}`.
    fn fstring_field(&mut self, open: usize, body: Span) -> PResult<(FStringPart, usize)> {
        let src = self.src;
        let char_at = |at: usize| src.get(at..body.end).and_then(|s| s.chars().next());
        let unclosed = || err("f-string: expecting '}'", Span::new(open, open + 1));
        let expr_start = open + 1;
        let mut j = expr_start;
        let mut depth = 0usize;
        let mut debug = false;
        loop {
            let Some(c) = char_at(j) else {
                return Err(unclosed());
            };
            match c {
                '\'' | '"' => {
                    // Skip a string inside the expression.
                    j += 1;
                    while let Some(d) = char_at(j) {
                        j += d.len_utf8();
                        if d == c {
                            break;
                        }
                    }
                    continue;
                }
                '(' | '[' | '{' => depth += 1,
                ')' | ']' => depth = depth.saturating_sub(1),
                '}' if depth > 0 => depth -= 1,
                '}' => break,
                '!' if depth == 0 && char_at(j + 1) != Some('=') => break,
                ':' if depth == 0 => break,
                '=' if depth == 0 => {
                    let prev = src.get(..j).and_then(|s| s.chars().next_back());
                    if char_at(j + 1) == Some('=') {
                        j += 2;
                        continue;
                    }
                    if !matches!(prev, Some('=' | '!' | '<' | '>')) {
                        debug = true;
                        break;
                    }
                }
                '#' => {
                    return Err(err(
                        "f-string expression part cannot include '#'",
                        Span::new(j, j + 1),
                    ))
                }
                '\\' => {
                    return Err(err(
                        "f-string expression part cannot include a backslash",
                        Span::new(j, j + 1),
                    ))
                }
                _ => {}
            }
            j += c.len_utf8();
        }
        let expr_end = j;
        if src
            .get(expr_start..expr_end)
            .is_none_or(|t| t.trim().is_empty())
        {
            return Err(err(
                "f-string: empty expression not allowed",
                Span::new(open, (j + 1).min(body.end)),
            ));
        }
        let tokens = tokenize(src, Span::new(expr_start, expr_end), true);
        let mut inner = Parser::new(src, tokens, self.depth + 1);
        // A `yield` in the field belongs to the enclosing function.
        inner.in_function = self.in_function;
        inner.in_lambda = self.in_lambda;
        let expr = inner.whole_expression()?;
        if inner.yields > 0 {
            self.saw_yield = true;
            self.yields += inner.yields;
            self.yield_span = inner.yield_span;
        }
        let mut debug_text = None;
        if debug {
            j += 1;
            while let Some(' ' | '\t') = char_at(j) {
                j += 1;
            }
            debug_text = src.get(expr_start..j).map(Rc::from);
        }
        let mut conversion = None;
        if char_at(j) == Some('!') {
            match char_at(j + 1) {
                Some(c @ ('r' | 's' | 'a')) => {
                    conversion = Some(c);
                    j += 2;
                }
                _ => {
                    return Err(err(
                        "f-string: invalid conversion character: expected 's', 'r', or 'a'",
                        Span::new(j, (j + 2).min(body.end)),
                    ))
                }
            }
        }
        let mut spec = Vec::new();
        if char_at(j) == Some(':') {
            let spec_start = j + 1;
            let mut k = spec_start;
            let mut depth = 0usize;
            loop {
                match char_at(k) {
                    None => return Err(unclosed()),
                    Some('{') => depth += 1,
                    Some('}') if depth == 0 => break,
                    Some('}') => depth -= 1,
                    _ => {}
                }
                k += char_at(k).map_or(1, char::len_utf8);
            }
            spec = self.nested(|p| p.fstring(Span::new(spec_start, k), false, true))?;
            j = k;
        }
        if char_at(j) != Some('}') {
            return Err(unclosed());
        }
        if debug_text.is_some() && conversion.is_none() && spec.is_empty() {
            conversion = Some('r');
        }
        Ok((
            FStringPart::Expr {
                expr: Box::new(expr),
                conversion,
                spec,
                debug_text,
            },
            j + 1,
        ))
    }
}

fn push_literal(parts: &mut Vec<FStringPart>, text: &str) {
    if let Some(FStringPart::Lit(last)) = parts.last_mut() {
        let mut joined = String::with_capacity(last.len() + text.len());
        joined.push_str(last);
        joined.push_str(text);
        *last = Rc::from(joined);
    } else {
        parts.push(FStringPart::Lit(Rc::from(text)));
    }
}

/// Never actually built: stands in where a vector is known to be non-empty,
/// so that no `unwrap` can panic.
fn unreachable_expr(at: usize) -> Expr {
    Expr {
        kind: ExprKind::None,
        span: Span::new(at, at),
    }
}

/// A bracketed display that may be a comprehension: `[...]` or `{...}` without `:`.
#[derive(Clone, Copy)]
enum Display {
    List,
    Set,
}

fn reject_bare_star(expr: &Expr) -> PResult<()> {
    if let ExprKind::Starred(_) = expr.kind {
        return Err(err("can't use starred expression here", expr.span));
    }
    Ok(())
}

/// What CPython calls an expression that cannot be a target.
fn describe(expr: &Expr) -> &'static str {
    match &expr.kind {
        ExprKind::Call { .. } => "function call",
        ExprKind::Int(_) | ExprKind::BigInt(_) | ExprKind::Float(_) | ExprKind::Str(_) => "literal",
        ExprKind::FString(_) => "f-string expression",
        ExprKind::Bool(true) => "True",
        ExprKind::Bool(false) => "False",
        ExprKind::None => "None",
        ExprKind::Ellipsis => "ellipsis",
        ExprKind::Compare { .. } => "comparison",
        ExprKind::IfExp { .. } => "conditional expression",
        ExprKind::Lambda { .. } => "lambda",
        ExprKind::ListComp { .. } => "list comprehension",
        ExprKind::DictComp { .. } => "dict comprehension",
        ExprKind::SetComp { .. } => "set comprehension",
        ExprKind::Set(_) => "set display",
        ExprKind::Dict(_) => "dict literal",
        ExprKind::Tuple(_) => "tuple",
        ExprKind::List(_) => "list",
        ExprKind::Starred(_) => "starred",
        ExprKind::Slice { .. } => "slice",
        _ => "expression",
    }
}

fn check_target(expr: &Expr, usage: TargetUse) -> PResult<()> {
    match &expr.kind {
        ExprKind::Name(_) | ExprKind::Attribute { .. } | ExprKind::Subscript { .. } => Ok(()),
        ExprKind::Tuple(items) | ExprKind::List(items) if usage != TargetUse::Augmented => {
            let inner = if usage == TargetUse::AssignTop {
                TargetUse::Assign
            } else {
                usage
            };
            let mut starred = 0;
            for item in items {
                if let ExprKind::Starred(value) = &item.kind {
                    if usage == TargetUse::Delete {
                        return Err(err("cannot delete starred", item.span));
                    }
                    starred += 1;
                    if starred > 1 {
                        return Err(err("multiple starred expressions in assignment", item.span));
                    }
                    check_target(value, inner)?;
                } else {
                    check_target(item, inner)?;
                }
            }
            Ok(())
        }
        ExprKind::Starred(_) if usage != TargetUse::Delete && usage != TargetUse::Augmented => {
            Err(err(
                "starred assignment target must be in a list or tuple",
                expr.span,
            ))
        }
        _ => {
            let what = describe(expr);
            let message = match usage {
                TargetUse::Delete => format!("cannot delete {what}"),
                TargetUse::Augmented => {
                    format!("'{what}' is an illegal expression for augmented assignment")
                }
                TargetUse::AssignTop
                    if !matches!(expr.kind, ExprKind::Bool(_) | ExprKind::None) =>
                {
                    format!("cannot assign to {what} here. Maybe you meant '==' instead of '='?")
                }
                _ => format!("cannot assign to {what}"),
            };
            Err(err(message, expr.span))
        }
    }
}

/// `(elt for ... in ... if ...)` as the generator function Python compiles it to:
/// `def <genexpr>(.0): for t in .0: if c: yield elt`, applied to the first iterable.
/// Past this many names a scope is a hash table anyway (`object::state::Vars::SMALL`).
const LOCALS_HINT_LIMIT: usize = 8;

fn generator_expression(elt: Expr, generators: Vec<Comprehension>, span: Span) -> Expr {
    let stmt = |kind: StmtKind, span: Span| Stmt { kind, span };
    let elt_span = elt.span;
    let mut body = vec![stmt(
        StmtKind::Expr(Expr {
            kind: ExprKind::Yield(Some(Box::new(elt))),
            span: elt_span,
        }),
        elt_span,
    )];
    let mut first_iter = None;
    for (i, g) in generators.into_iter().enumerate().rev() {
        for cond in g.ifs.into_iter().rev() {
            let s = cond.span;
            body = vec![stmt(
                StmtKind::If {
                    branches: vec![(cond, body)],
                    orelse: None,
                },
                s,
            )];
        }
        let iter = if i == 0 {
            let s = g.iter.span;
            first_iter = Some(g.iter);
            Expr {
                kind: ExprKind::Name(NameRef::new(Rc::from(".0"))),
                span: s,
            }
        } else {
            g.iter
        };
        let s = g.target.span;
        body = vec![stmt(
            StmtKind::For {
                target: g.target,
                iter,
                body,
                orelse: None,
            },
            s,
        )];
    }
    let iter = first_iter.unwrap_or(Expr {
        kind: ExprKind::Tuple(Vec::new()),
        span,
    });
    // `.0` and the loop targets.
    let local_names = super::ast::local_names(&[], &body);
    let locals = 1 + local_names.len().min(LOCALS_HINT_LIMIT - 1);
    Expr {
        kind: ExprKind::GeneratorExp {
            def: Rc::new(FuncDef {
                name: Rc::from("<genexpr>"),
                params: Rc::new([Param {
                    name: Rc::from(".0"),
                    default: None,
                    kind: ParamKind::Normal,
                    span,
                    passed: Passed::PositionalOnly,
                }]),
                resumable: super::ast::resumable_body(&body),
                body,
                is_generator: true,
                doc: None,
                span,
                locals,
                local_names: local_names.into(),
            }),
            iter: Box::new(iter),
        },
        span,
    }
}
