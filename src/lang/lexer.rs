//! Tokens and the indentation-aware scanner.
//!
//! [`tokenize`] turns source text into tokens in one pass, Crafting-Interpreters
//! style: it emits `Newline` at the end of each logical line and `Indent` /
//! `Dedent` when the indentation changes, and skips blank and comment-only lines.
//! The first error stops the scan: it becomes a final [`Tok::Error`] token, so the
//! parser reports whichever problem comes first in reading order.
//!
//! [`highlight`] is a separate, forgiving pass for syntax colouring that never fails.

use std::rc::Rc;

use super::ast::{BinOp, Ident};
use super::parser::SyntaxError;
use super::span::{locate, Span};

thread_local! {
    /// Every identifier spelled so far, so one spelling is one allocation: attribute lookups
    /// then usually match names by pointer (`Attrs::get_hinted`).
    static IDENTIFIERS: std::cell::RefCell<std::collections::HashSet<Ident>> = Default::default();
}

/// The shared `Rc<str>` for this identifier (also for attribute names set at run time, so
/// `Attrs::get_hinted` matches them by pointer).
pub fn intern(word: &str) -> Ident {
    IDENTIFIERS.with(|set| {
        let mut set = set.borrow_mut();
        if let Some(id) = set.get(word) {
            return id.clone();
        }
        let id: Ident = Rc::from(word);
        set.insert(id.clone());
        id
    })
}

/// Reserved words. The last few are Python's but have no meaning here; the parser
/// names them in its error instead of calling them plain identifiers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Keyword {
    False,
    None,
    True,
    And,
    As,
    Assert,
    Break,
    Continue,
    Def,
    Del,
    Elif,
    Else,
    Except,
    Finally,
    For,
    From,
    Global,
    If,
    Import,
    In,
    Is,
    Lambda,
    Not,
    Or,
    Pass,
    Raise,
    Return,
    Try,
    While,
    With,
    Class,
    Yield,
    Async,
    Await,
    Nonlocal,
}

impl Keyword {
    pub fn from_word(word: &str) -> Option<Keyword> {
        use Keyword::*;
        Some(match word {
            "False" => False,
            "None" => None,
            "True" => True,
            "and" => And,
            "as" => As,
            "assert" => Assert,
            "break" => Break,
            "continue" => Continue,
            "def" => Def,
            "del" => Del,
            "elif" => Elif,
            "else" => Else,
            "except" => Except,
            "finally" => Finally,
            "for" => For,
            "from" => From,
            "global" => Global,
            "if" => If,
            "import" => Import,
            "in" => In,
            "is" => Is,
            "lambda" => Lambda,
            "not" => Not,
            "or" => Or,
            "pass" => Pass,
            "raise" => Raise,
            "return" => Return,
            "try" => Try,
            "while" => While,
            "with" => With,
            "class" => Class,
            "yield" => Yield,
            "async" => Async,
            "await" => Await,
            "nonlocal" => Nonlocal,
            _ => return Option::None,
        })
    }

    pub fn as_str(self) -> &'static str {
        use Keyword::*;
        match self {
            False => "False",
            None => "None",
            True => "True",
            And => "and",
            As => "as",
            Assert => "assert",
            Break => "break",
            Continue => "continue",
            Def => "def",
            Del => "del",
            Elif => "elif",
            Else => "else",
            Except => "except",
            Finally => "finally",
            For => "for",
            From => "from",
            Global => "global",
            If => "if",
            Import => "import",
            In => "in",
            Is => "is",
            Lambda => "lambda",
            Not => "not",
            Or => "or",
            Pass => "pass",
            Raise => "raise",
            Return => "return",
            Try => "try",
            While => "while",
            With => "with",
            Class => "class",
            Yield => "yield",
            Async => "async",
            Await => "await",
            Nonlocal => "nonlocal",
        }
    }
}

/// Punctuation and operators.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    LParen,
    RParen,
    LBracket,
    RBracket,
    LBrace,
    RBrace,
    Comma,
    Colon,
    Semicolon,
    Dot,
    Ellipsis,
    Arrow,
    Walrus,
    Plus,
    Minus,
    Star,
    Slash,
    DoubleSlash,
    Percent,
    DoubleStar,
    At,
    Amp,
    Pipe,
    Caret,
    Tilde,
    LShift,
    RShift,
    Lt,
    Gt,
    LtE,
    GtE,
    EqEq,
    NotEq,
    Assign,
    /// `+=` and friends.
    AugAssign(BinOp),
}

#[derive(Debug, Clone, PartialEq)]
pub enum Tok {
    Name(Ident),
    Int(i64),
    /// An int literal past i64.
    BigInt(Rc<num_bigint::BigInt>),
    Float(f64),
    /// A plain string literal, escapes already decoded.
    Str(Rc<str>),
    /// A bytes literal (`b"..."`, `rb'...'`), escapes already decoded.
    Bytes(Rc<[u8]>),
    /// An f-string: `body` is the text between the quotes, decoded by the parser
    /// because its `{...}` pieces are expressions.
    FStr {
        body: Span,
        raw: bool,
    },
    /// `9223372036854775808` (2**63): valid only right after a unary minus,
    /// where it makes the smallest i64.
    IntMinMagnitude,
    Keyword(Keyword),
    Op(Op),
    /// A whole `%magic` / `!shell` line (or `%%cell` magic with the rest of the input).
    Magic {
        name: Ident,
        arg: Rc<str>,
        arg_span: Span,
    },
    Newline,
    Indent,
    Dedent,
    Eof,
    /// The scan stopped here; the parser returns this error when it reaches it.
    Error(Box<SyntaxError>),
}

#[derive(Debug, Clone, PartialEq)]
pub struct Token {
    pub kind: Tok,
    pub span: Span,
}

/// Brackets may nest this deep (CPython's limit too).
const MAX_BRACKET_DEPTH: usize = 200;
/// Blocks may nest this deep (CPython's limit too).
const MAX_INDENT_DEPTH: usize = 100;

/// Scans `source[range]` into tokens; spans are byte offsets into the whole
/// `source`. In `expression_mode` (f-string pieces, `parse_expression`) newlines
/// are insignificant and there is no indentation, as inside brackets.
/// The result always ends with `Eof` or `Error`.
/// The tokens of a program a logical line at a time, so the parser holds only what it has not
/// consumed yet: memory follows the statement being parsed, not the program's size.
pub(crate) struct TokenStream<'s> {
    lexer: Lexer<'s>,
    done: bool,
}

impl<'s> TokenStream<'s> {
    pub(crate) fn new(source: &'s str, range: Span) -> TokenStream<'s> {
        TokenStream {
            lexer: Lexer::new(source, range, false),
            done: false,
        }
    }

    /// Appends the next logical line's tokens to `out` (the closing ones, and Eof, at the
    /// end); false once everything was given.
    pub(crate) fn more(&mut self, out: &mut Vec<Token>) -> bool {
        if self.done {
            return false;
        }
        let ended = match self.lexer.lex_line() {
            Ok(true) => Ok(()),
            Ok(false) => {
                self.done = true;
                self.lexer.finish()
            }
            Err(e) => {
                self.done = true;
                Err(e)
            }
        };
        if let Err(err) = ended {
            let span = err.span;
            self.lexer.tokens.push(Token {
                kind: Tok::Error(Box::new(err)),
                span,
            });
        }
        out.append(&mut self.lexer.tokens);
        true
    }
}

pub fn tokenize(source: &str, range: Span, expression_mode: bool) -> Vec<Token> {
    let mut lexer = Lexer::new(source, range, expression_mode);
    if let Err(err) = lexer.run() {
        let span = err.span;
        lexer.tokens.push(Token {
            kind: Tok::Error(Box::new(err)),
            span,
        });
    }
    lexer.tokens
}

impl<'s> Lexer<'s> {
    fn new(source: &'s str, range: Span, expression_mode: bool) -> Lexer<'s> {
        let end = clamp_boundary(source, range.end.min(source.len()));
        let mut start = clamp_boundary(source, range.start.min(end));
        // Editors on Windows may start a file with a byte-order mark.
        if source
            .get(start..end)
            .is_some_and(|s| s.starts_with('\u{feff}'))
        {
            start += '\u{feff}'.len_utf8();
        }
        Lexer {
            src: source,
            pos: start,
            end,
            tokens: Vec::new(),
            indents: vec![(0, 0)],
            brackets: Vec::new(),
            at_line_start: !expression_mode,
            line_has_tokens: false,
            expression_mode,
        }
    }
}

fn clamp_boundary(s: &str, mut i: usize) -> usize {
    while i > 0 && !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

struct Lexer<'s> {
    src: &'s str,
    pos: usize,
    end: usize,
    tokens: Vec<Token>,
    /// Indentation columns of the open blocks: (tabs to multiples of 8, tabs as 1),
    /// compared both ways to catch inconsistent mixes of tabs and spaces.
    indents: Vec<(usize, usize)>,
    brackets: Vec<(char, Span)>,
    at_line_start: bool,
    line_has_tokens: bool,
    expression_mode: bool,
}

type LexResult<T> = Result<T, SyntaxError>;

fn error(message: impl Into<String>, span: Span) -> SyntaxError {
    SyntaxError {
        message: message.into(),
        span,
        incomplete: false,
        too_deep: false,
    }
}

pub(crate) fn is_name_start(c: char) -> bool {
    c == '_' || c.is_alphabetic()
}

pub(crate) fn is_name_char(c: char) -> bool {
    c == '_' || c.is_alphanumeric()
}

impl<'s> Lexer<'s> {
    fn peek(&self) -> Option<char> {
        self.src.get(self.pos..self.end)?.chars().next()
    }

    fn peek_at(&self, n: usize) -> Option<char> {
        self.src.get(self.pos..self.end)?.chars().nth(n)
    }

    fn rest(&self) -> &'s str {
        self.src.get(self.pos..self.end).unwrap_or("")
    }

    fn push(&mut self, kind: Tok, start: usize) {
        self.tokens.push(Token {
            kind,
            span: Span::new(start, self.pos),
        });
        if !matches!(
            self.tokens.last().map(|t| &t.kind),
            Some(Tok::Newline | Tok::Indent | Tok::Dedent)
        ) {
            self.line_has_tokens = true;
        }
    }

    fn line_number(&self, at: usize) -> usize {
        locate(self.src, Span::new(at, at)).0
    }

    fn run(&mut self) -> LexResult<()> {
        while self.lex_line()? {}
        self.finish()
    }

    /// Lexes up to the end of the next logical line (its Newline token); false when the input
    /// ended first (then `finish` adds the closing tokens).
    fn lex_line(&mut self) -> LexResult<bool> {
        loop {
            if self.at_line_start && self.brackets.is_empty() {
                self.at_line_start = false;
                if !self.line_start()? {
                    return Ok(false);
                }
                continue;
            }
            self.skip_blanks();
            let Some(c) = self.peek() else {
                return Ok(false);
            };
            let start = self.pos;
            match c {
                '#' => self.skip_comment(),
                '\n' | '\r' => {
                    self.pos += if self.rest().starts_with("\r\n") {
                        2
                    } else {
                        1
                    };
                    if self.brackets.is_empty() && !self.expression_mode {
                        self.at_line_start = true;
                        if self.line_has_tokens {
                            self.push(Tok::Newline, start);
                            self.line_has_tokens = false;
                            return Ok(true);
                        }
                    }
                }
                '\\' => self.continuation()?,
                '0'..='9' => self.number()?,
                '.' if self.peek_at(1).is_some_and(|d| d.is_ascii_digit()) => self.number()?,
                '"' | '\'' => self.string(start, "")?,
                c if is_name_start(c) => self.name_or_prefixed_string()?,
                _ => self.operator(c)?,
            }
        }
    }

    fn skip_blanks(&mut self) {
        while let Some(' ' | '\t' | '\x0c') = self.peek() {
            self.pos += 1;
        }
    }

    fn skip_comment(&mut self) {
        let len = self.rest().find(['\n', '\r']).unwrap_or(self.rest().len());
        self.pos += len;
    }

    /// Handles indentation at the start of a physical line outside brackets.
    /// Returns false at the end of input.
    fn line_start(&mut self) -> LexResult<bool> {
        let line_start = self.pos;
        let (mut col, mut alt_col) = (0usize, 0usize);
        loop {
            match self.peek() {
                Some(' ') => {
                    col += 1;
                    alt_col += 1;
                }
                Some('\t') => {
                    col = (col / 8 + 1) * 8;
                    alt_col += 1;
                }
                Some('\x0c') => {
                    col = 0;
                    alt_col = 0;
                }
                _ => break,
            }
            self.pos += 1;
        }
        let indent_span = Span::new(line_start, self.pos);
        match self.peek() {
            None => return Ok(false),
            // Blank and comment-only lines do not count for indentation.
            Some('#' | '\n' | '\r') => return Ok(true),
            // A line holding only `\` joins the next one; let the main loop see it.
            Some('\\') => return Ok(true),
            _ => {}
        }
        let (top, alt_top) = self.indents.last().copied().unwrap_or((0, 0));
        if col > top {
            if alt_col <= alt_top {
                return Err(error(
                    "inconsistent use of tabs and spaces in indentation",
                    indent_span,
                ));
            }
            if self.indents.len() > MAX_INDENT_DEPTH {
                return Err(error(
                    format!("too many levels of indentation (the limit is {MAX_INDENT_DEPTH}); move the inner part into a function"),
                    indent_span,
                ));
            }
            self.indents.push((col, alt_col));
            self.tokens.push(Token {
                kind: Tok::Indent,
                span: indent_span,
            });
        } else if col < top {
            while self.indents.last().is_some_and(|&(c, _)| c > col) {
                self.indents.pop();
                self.tokens.push(Token {
                    kind: Tok::Dedent,
                    span: Span::new(self.pos, self.pos),
                });
            }
            let (now, alt_now) = self.indents.last().copied().unwrap_or((0, 0));
            if now != col {
                return Err(error(
                    "unindent does not match any outer indentation level",
                    indent_span,
                ));
            }
            if alt_now != alt_col {
                return Err(error(
                    "inconsistent use of tabs and spaces in indentation",
                    indent_span,
                ));
            }
        } else if alt_col != alt_top {
            return Err(error(
                "inconsistent use of tabs and spaces in indentation",
                indent_span,
            ));
        }
        if let Some('%' | '!') = self.peek() {
            if !self.expression_mode {
                self.magic()?;
            }
        }
        Ok(true)
    }

    /// `!cmd`, `%name args` (rest of the line) or `%%name args` (rest of the input).
    fn magic(&mut self) -> LexResult<()> {
        let start = self.pos;
        let (name, cell) = if self.rest().starts_with('!') {
            self.pos += 1;
            (String::from("!"), false)
        } else {
            let cell = self.rest().starts_with("%%");
            self.pos += if cell { 2 } else { 1 };
            let name_len = self
                .rest()
                .find(|c: char| !(is_name_char(c) || c == '.'))
                .unwrap_or(self.rest().len());
            if name_len == 0 {
                return Err(error(
                    "expected a magic name after '%', e.g. %time or %devices",
                    Span::new(start, self.pos),
                ));
            }
            let word = &self.rest()[..name_len];
            self.pos += name_len;
            (
                if cell {
                    format!("%{word}")
                } else {
                    word.to_string()
                },
                cell,
            )
        };
        let rest = self.rest();
        let mut arg_start = self.pos + (rest.len() - rest.trim_start_matches([' ', '\t']).len());
        let arg_end = if cell {
            // The cell body starts on the next line when the first line has no arguments.
            let after = self.src.get(arg_start..self.end).unwrap_or("");
            if after.starts_with("\r\n") {
                arg_start += 2;
            } else if after.starts_with('\n') {
                arg_start += 1;
            }
            self.end
        } else {
            self.pos + rest.find(['\n', '\r']).unwrap_or(rest.len())
        };
        let raw_arg = self.src.get(arg_start..arg_end).unwrap_or("");
        let arg = raw_arg.trim_end();
        let arg_span = Span::new(arg_start, arg_start + arg.len());
        self.pos = arg_end;
        self.push(
            Tok::Magic {
                name: Rc::from(name),
                arg: Rc::from(arg),
                arg_span,
            },
            start,
        );
        Ok(())
    }

    fn continuation(&mut self) -> LexResult<()> {
        let start = self.pos;
        self.pos += 1;
        let rest = self.rest();
        if rest.starts_with("\r\n") {
            self.pos += 2;
        } else if rest.starts_with('\n') || rest.starts_with('\r') {
            self.pos += 1;
        } else if rest.is_empty() {
            return Err(SyntaxError {
                message: "unexpected EOF while parsing".into(),
                span: Span::new(start, self.pos),
                incomplete: true,
                too_deep: false,
            });
        } else {
            return Err(error(
                "unexpected character after line continuation character",
                Span::new(start, self.pos),
            ));
        }
        if self.pos >= self.end && self.brackets.is_empty() {
            return Err(SyntaxError {
                message: "unexpected EOF while parsing".into(),
                span: Span::new(start, start + 1),
                incomplete: true,
                too_deep: false,
            });
        }
        Ok(())
    }

    fn finish(&mut self) -> LexResult<()> {
        if !self.expression_mode {
            if let Some(&(open, span)) = self.brackets.last() {
                return Err(SyntaxError {
                    message: format!("'{open}' was never closed"),
                    span,
                    incomplete: true,
                    too_deep: false,
                });
            }
        } else if let Some(&(open, span)) = self.brackets.last() {
            return Err(error(format!("'{open}' was never closed"), span));
        }
        let at = self.pos;
        if self.line_has_tokens && !self.expression_mode {
            self.tokens.push(Token {
                kind: Tok::Newline,
                span: Span::new(at, at),
            });
        }
        while self.indents.len() > 1 {
            self.indents.pop();
            self.tokens.push(Token {
                kind: Tok::Dedent,
                span: Span::new(at, at),
            });
        }
        self.tokens.push(Token {
            kind: Tok::Eof,
            span: Span::new(at, at),
        });
        Ok(())
    }

    fn name_or_prefixed_string(&mut self) -> LexResult<()> {
        let start = self.pos;
        let len = self
            .rest()
            .find(|c: char| !is_name_char(c))
            .unwrap_or(self.rest().len());
        let word = &self.rest()[..len];
        self.pos += len;
        if let Some('"' | '\'') = self.peek() {
            if len <= 2 && word.chars().all(|c| "rRbBfFuU".contains(c)) {
                return self.string(start, word);
            }
        }
        let kind = match Keyword::from_word(word) {
            Some(kw) => Tok::Keyword(kw),
            None => Tok::Name(intern(word)),
        };
        self.push(kind, start);
        Ok(())
    }

    /// A string literal; `self.pos` is at the opening quote, `prefix` precedes it.
    fn string(&mut self, start: usize, prefix: &str) -> LexResult<()> {
        let lower = prefix.to_ascii_lowercase();
        let (raw, fstring) = match lower.as_str() {
            "" | "u" | "b" => (false, false),
            "r" | "rb" | "br" => (true, false),
            "f" => (false, true),
            "rf" | "fr" => (true, true),
            _ => {
                return Err(error(
                    format!("invalid string prefix '{prefix}'"),
                    Span::new(start, self.pos),
                ))
            }
        };
        let quote = self.peek().unwrap_or('"');
        let triple = self.rest().starts_with(&quote.to_string().repeat(3));
        let delim_len = if triple { 3 } else { 1 };
        self.pos += delim_len;
        let body_start = self.pos;
        let body_end = loop {
            let Some(c) = self.peek() else {
                let line = self.line_number(self.end);
                let span = Span::new(start, body_start);
                return Err(if triple {
                    SyntaxError {
                        message: format!(
                            "unterminated triple-quoted string literal (detected at line {line})"
                        ),
                        span,
                        incomplete: true,
                        too_deep: false,
                    }
                } else {
                    error(
                        format!("unterminated string literal (detected at line {line})"),
                        Span::new(start, self.pos),
                    )
                });
            };
            match c {
                '\\' => {
                    self.pos += 1;
                    // The escaped character never ends the string, even in raw strings.
                    if let Some(next) = self.peek() {
                        self.pos += next.len_utf8();
                    }
                }
                '\n' | '\r' if !triple => {
                    let line = self.line_number(start);
                    return Err(error(
                        format!("unterminated string literal (detected at line {line})"),
                        Span::new(start, self.pos),
                    ));
                }
                c if c == quote => {
                    if !triple {
                        let end = self.pos;
                        self.pos += 1;
                        break end;
                    }
                    if self.rest().starts_with(&quote.to_string().repeat(3)) {
                        let end = self.pos;
                        self.pos += 3;
                        break end;
                    }
                    self.pos += 1;
                }
                c => self.pos += c.len_utf8(),
            }
        };
        let body = Span::new(body_start, body_end);
        if fstring {
            self.push(Tok::FStr { body, raw }, start);
            return Ok(());
        }
        let text = self.src.get(body_start..body_end).unwrap_or("");
        if lower.contains('b') {
            if !text.is_ascii() {
                return Err(error(
                    "bytes can only contain ASCII literal characters",
                    Span::new(start, self.pos),
                ));
            }
            let value = decode_bytes(text, raw).map_err(|(msg, at)| {
                error(msg, Span::new(body_start + at.start, body_start + at.end))
            })?;
            self.push(Tok::Bytes(Rc::from(value)), start);
            return Ok(());
        }
        let value = decode_escapes(text, raw).map_err(|(msg, at)| {
            error(msg, Span::new(body_start + at.start, body_start + at.end))
        })?;
        self.push(Tok::Str(Rc::from(value)), start);
        Ok(())
    }

    fn number(&mut self) -> LexResult<()> {
        let start = self.pos;
        let rest = self.rest();
        let radix = match rest.get(..2) {
            Some("0x" | "0X") => Some((16, "hexadecimal")),
            Some("0o" | "0O") => Some((8, "octal")),
            Some("0b" | "0B") => Some((2, "binary")),
            _ => None,
        };
        if let Some((radix, radix_name)) = radix {
            self.pos += 2;
            let digits_len = self
                .rest()
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .unwrap_or(self.rest().len());
            let digits = &self.rest()[..digits_len];
            self.pos += digits_len;
            let span = Span::new(start, self.pos);
            let clean: String = digits.chars().filter(|&c| c != '_').collect();
            let bad_underscores = digits.ends_with('_') || digits.contains("__");
            if clean.is_empty() || bad_underscores || !clean.chars().all(|c| c.is_digit(radix)) {
                return Err(error(format!("invalid {radix_name} literal"), span));
            }
            let value = parse_int(&clean, radix, span)?;
            self.push(value, start);
            return Ok(());
        }
        let mut is_float = false;
        self.digits();
        if self.peek() == Some('.') {
            is_float = true;
            self.pos += 1;
            if self.peek().is_some_and(|c| c.is_ascii_digit()) {
                self.digits();
            }
        }
        if let Some('e' | 'E') = self.peek() {
            let save = self.pos;
            self.pos += 1;
            if let Some('+' | '-') = self.peek() {
                self.pos += 1;
            }
            if self.peek().is_some_and(|c| c.is_ascii_digit()) {
                is_float = true;
                self.digits();
            } else {
                self.pos = save;
            }
        }
        let text = self.src.get(start..self.pos).unwrap_or("");
        if let Some('j' | 'J') = self.peek() {
            self.pos += 1;
            return Err(error(
                "complex numbers are not supported",
                Span::new(start, self.pos),
            ));
        }
        if self.peek().is_some_and(is_name_char)
            || text.ends_with('_')
            || text.contains("__")
            || text.contains("_.")
            || text.contains("._")
        {
            let len = self
                .rest()
                .find(|c: char| !is_name_char(c))
                .unwrap_or(self.rest().len());
            self.pos += len;
            return Err(error("invalid decimal literal", Span::new(start, self.pos)));
        }
        let span = Span::new(start, self.pos);
        let clean: String = text.chars().filter(|&c| c != '_').collect();
        if is_float {
            let value: f64 = clean
                .parse()
                .map_err(|_| error("invalid decimal literal", span))?;
            self.push(Tok::Float(value), start);
        } else {
            if clean.len() > 1 && clean.starts_with('0') && clean.chars().any(|c| c != '0') {
                return Err(error(
                    "leading zeros in decimal integer literals are not permitted; use an 0o prefix for octal integers",
                    span,
                ));
            }
            if clean.trim_start_matches('0') == I64_MIN_MAGNITUDE {
                self.push(Tok::IntMinMagnitude, start);
                return Ok(());
            }
            let value = parse_int(&clean, 10, span)?;
            self.push(value, start);
        }
        Ok(())
    }

    fn digits(&mut self) {
        let len = self
            .rest()
            .find(|c: char| !(c.is_ascii_digit() || c == '_'))
            .unwrap_or(self.rest().len());
        self.pos += len;
    }

    fn operator(&mut self, c: char) -> LexResult<()> {
        let start = self.pos;
        let rest = self.rest();
        let Some((len, op)) = match_operator(rest.as_bytes()) else {
            let span = Span::new(start, start + c.len_utf8());
            let message = if c.is_control() || c.is_whitespace() {
                format!("invalid non-printable character U+{:04X}", c as u32)
            } else if c == '$' || c == '?' || c == '`' {
                format!("invalid syntax: '{c}' is not an operator here")
            } else if c == '!' {
                "invalid syntax: '!' is only a shell escape at the start of a line; use 'not' for negation".to_string()
            } else {
                format!("invalid character '{c}' (U+{:04X})", c as u32)
            };
            return Err(error(message, span));
        };
        self.pos += len;
        let span = Span::new(start, self.pos);
        match op {
            Op::LParen | Op::LBracket | Op::LBrace => {
                if self.brackets.len() >= MAX_BRACKET_DEPTH {
                    return Err(error(
                        format!("too many nested parentheses (the limit is {MAX_BRACKET_DEPTH}); split the expression into several statements"),
                        span,
                    ));
                }
                self.brackets.push((c, span));
            }
            Op::RParen | Op::RBracket | Op::RBrace => match self.brackets.pop() {
                None => {
                    return Err(error(format!("unmatched '{c}'"), span));
                }
                Some((open, _)) if closing_for(open) != c => {
                    return Err(error(
                        format!(
                            "closing parenthesis '{c}' does not match opening parenthesis '{open}'"
                        ),
                        span,
                    ));
                }
                Some(_) => {}
            },
            _ => {}
        }
        self.push(Tok::Op(op), start);
        Ok(())
    }
}

/// The longest operator at the start of `text`: its length and kind.
fn match_operator(text: &[u8]) -> Option<(usize, Op)> {
    let first = *text.first()?;
    let second = text.get(1).copied().unwrap_or(0);
    let third = text.get(2).copied().unwrap_or(0);
    let aug = |op: BinOp, len: usize| Some((len, Op::AugAssign(op)));
    // Operators that may double (`**`, `//`, `<<`, `>>`) and take `=`.
    let doubled = |single: Op, double: Op, single_aug: Option<BinOp>, double_aug: BinOp| {
        if second == first {
            if third == b'=' {
                aug(double_aug, 3)
            } else {
                Some((2, double))
            }
        } else if second == b'=' {
            match single_aug {
                Some(op) => aug(op, 2),
                None => None,
            }
        } else {
            Some((1, single))
        }
    };
    match first {
        b'(' => Some((1, Op::LParen)),
        b')' => Some((1, Op::RParen)),
        b'[' => Some((1, Op::LBracket)),
        b']' => Some((1, Op::RBracket)),
        b'{' => Some((1, Op::LBrace)),
        b'}' => Some((1, Op::RBrace)),
        b',' => Some((1, Op::Comma)),
        b';' => Some((1, Op::Semicolon)),
        b'~' => Some((1, Op::Tilde)),
        b':' if second == b'=' => Some((2, Op::Walrus)),
        b':' => Some((1, Op::Colon)),
        b'.' if second == b'.' && third == b'.' => Some((3, Op::Ellipsis)),
        b'.' => Some((1, Op::Dot)),
        b'*' => doubled(Op::Star, Op::DoubleStar, Some(BinOp::Mul), BinOp::Pow),
        b'/' => doubled(
            Op::Slash,
            Op::DoubleSlash,
            Some(BinOp::Div),
            BinOp::FloorDiv,
        ),
        b'<' if second == b'=' => Some((2, Op::LtE)),
        b'<' => doubled(Op::Lt, Op::LShift, None, BinOp::LShift),
        b'>' if second == b'=' => Some((2, Op::GtE)),
        b'>' => doubled(Op::Gt, Op::RShift, None, BinOp::RShift),
        b'-' if second == b'>' => Some((2, Op::Arrow)),
        _ => {
            let (single, op) = match first {
                b'+' => (Op::Plus, BinOp::Add),
                b'-' => (Op::Minus, BinOp::Sub),
                b'%' => (Op::Percent, BinOp::Mod),
                b'@' => (Op::At, BinOp::MatMul),
                b'&' => (Op::Amp, BinOp::BitAnd),
                b'|' => (Op::Pipe, BinOp::BitOr),
                b'^' => (Op::Caret, BinOp::BitXor),
                b'=' if second == b'=' => return Some((2, Op::EqEq)),
                b'=' => return Some((1, Op::Assign)),
                b'!' if second == b'=' => return Some((2, Op::NotEq)),
                _ => return None,
            };
            if second == b'=' {
                aug(op, 2)
            } else {
                Some((1, single))
            }
        }
    }
}

fn closing_for(open: char) -> char {
    match open {
        '(' => ')',
        '[' => ']',
        _ => '}',
    }
}

const I64_MIN_MAGNITUDE: &str = "9223372036854775808";

/// An int literal's token: `Int` when it fits an i64, else `BigInt` (Python's ints have no
/// bound).
fn parse_int(digits: &str, radix: u32, span: Span) -> LexResult<Tok> {
    if let Ok(i) = i64::from_str_radix(digits, radix) {
        return Ok(Tok::Int(i));
    }
    num_bigint::BigInt::parse_bytes(digits.as_bytes(), radix)
        .map(|n| Tok::BigInt(Rc::new(n)))
        .ok_or_else(|| error("invalid integer literal", span))
}

/// Decodes a bytes literal's (ASCII) body as CPython does: `\\xhh`, octal (modulo 256) and
/// the one-letter escapes; `\\u`, `\\N` and unknown escapes are kept as written.
pub(crate) fn decode_bytes(text: &str, raw: bool) -> Result<Vec<u8>, (String, Span)> {
    let b = text.as_bytes();
    if raw || !b.contains(&b'\\') {
        return Ok(b.to_vec());
    }
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        i += 1;
        if c != b'\\' {
            out.push(c);
            continue;
        }
        let Some(&e) = b.get(i) else {
            out.push(b'\\');
            break;
        };
        i += 1;
        match e {
            b'\n' => {}
            b'\r' => {
                if b.get(i) == Some(&b'\n') {
                    i += 1;
                }
            }
            b'\\' | b'\'' | b'"' => out.push(e),
            b'a' => out.push(7),
            b'b' => out.push(8),
            b'f' => out.push(12),
            b'n' => out.push(b'\n'),
            b'r' => out.push(b'\r'),
            b't' => out.push(b'\t'),
            b'v' => out.push(11),
            b'0'..=b'7' => {
                let mut value = u32::from(e - b'0');
                for _ in 0..2 {
                    match b.get(i) {
                        Some(&d @ b'0'..=b'7') => {
                            value = value * 8 + u32::from(d - b'0');
                            i += 1;
                        }
                        _ => break,
                    }
                }
                out.push((value & 0xff) as u8);
            }
            b'x' => {
                let digits = b
                    .get(i..i + 2)
                    .filter(|d| d.iter().all(u8::is_ascii_hexdigit));
                let Some(d) = digits else {
                    let at = out.len();
                    return Err((
                        format!("(value error) invalid \\x escape at position {at}"),
                        Span::new(i - 2, (i + 2).min(b.len())),
                    ));
                };
                let hex = std::str::from_utf8(d).unwrap_or("0");
                out.push(u8::from_str_radix(hex, 16).unwrap_or(0));
                i += 2;
            }
            other => {
                out.push(b'\\');
                out.push(other);
            }
        }
    }
    Ok(out)
}

/// Decodes backslash escapes like Python: unknown escapes are kept as written.
/// On error returns the message and the byte range of the bad escape within `text`.
pub(crate) fn decode_escapes(text: &str, raw: bool) -> Result<String, (String, Span)> {
    if raw || !text.contains('\\') {
        return Ok(text.to_string());
    }
    let mut out = String::with_capacity(text.len());
    let mut chars = text.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        let Some((_, e)) = chars.next() else {
            out.push('\\');
            break;
        };
        match e {
            '\n' => {}
            '\r' => {
                if let Some((_, '\n')) = chars.peek() {
                    chars.next();
                }
            }
            '\\' => out.push('\\'),
            '\'' => out.push('\''),
            '"' => out.push('"'),
            'a' => out.push('\x07'),
            'b' => out.push('\x08'),
            'f' => out.push('\x0c'),
            'n' => out.push('\n'),
            'r' => out.push('\r'),
            't' => out.push('\t'),
            'v' => out.push('\x0b'),
            '0'..='7' => {
                let mut value = e.to_digit(8).unwrap_or(0);
                for _ in 0..2 {
                    match chars.peek() {
                        Some(&(_, d @ '0'..='7')) => {
                            value = value * 8 + d.to_digit(8).unwrap_or(0);
                            chars.next();
                        }
                        _ => break,
                    }
                }
                out.push(char::from_u32(value).unwrap_or('\u{fffd}'));
            }
            'x' | 'u' | 'U' => {
                let width = match e {
                    'x' => 2,
                    'u' => 4,
                    _ => 8,
                };
                let mut value: u32 = 0;
                let mut end = i + 2;
                for _ in 0..width {
                    match chars.peek() {
                        Some(&(j, d)) if d.is_ascii_hexdigit() => {
                            value = value * 16 + d.to_digit(16).unwrap_or(0);
                            end = j + 1;
                            chars.next();
                        }
                        _ => {
                            return Err((
                                format!(
                                "truncated \\{e} escape: expected {width} hex digits after \\{e}"
                            ),
                                Span::new(i, end),
                            ))
                        }
                    }
                }
                match char::from_u32(value) {
                    Some(ch) => out.push(ch),
                    None => {
                        return Err((
                            format!("\\{e} escape is not a valid Unicode character"),
                            Span::new(i, end),
                        ))
                    }
                }
            }
            'N' => return Err((
                "named Unicode escapes (\\N{...}) are not supported; use \\u with the code point"
                    .to_string(),
                Span::new(i, i + 2),
            )),
            other => {
                out.push('\\');
                out.push(other);
            }
        }
    }
    Ok(out)
}

/// What a piece of source is, for syntax colouring.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TokenClass {
    Keyword,
    /// A name the language predefines (`print`, `gpu`, `range`, ...).
    Builtin,
    Name,
    Number,
    String,
    Comment,
    Operator,
    /// A whole `%magic` or `!shell` line.
    Magic,
    /// Something that can never be valid here (a stray `$`, an unterminated string).
    Error,
}

const BUILTINS: &[&str] = &[
    "abs",
    "all",
    "any",
    "arange",
    "array",
    "bool",
    "cpu",
    "devices",
    "dict",
    "dir",
    "divmod",
    "enumerate",
    "eye",
    "filter",
    "float",
    "full",
    "getattr",
    "gpu",
    "hasattr",
    "help",
    "id",
    "int",
    "isinstance",
    "len",
    "list",
    "map",
    "max",
    "min",
    "num_gpus",
    "ones",
    "print",
    "range",
    "repr",
    "reversed",
    "round",
    "setattr",
    "sorted",
    "str",
    "sum",
    "try_all_gpus",
    "try_gpu",
    "tuple",
    "type",
    "zeros",
    "zip",
];

/// Classifies every token of `source`, which may be incomplete or invalid; never
/// fails. Whitespace is not reported; spans are byte offsets in order.
pub fn highlight(source: &str) -> Vec<(Span, TokenClass)> {
    let mut out = Vec::new();
    let mut pos = 0;
    let mut line_start = true;
    let mut depth = 0usize;
    let bytes_len = source.len();
    while pos < bytes_len {
        let rest = source.get(pos..).unwrap_or("");
        let Some(c) = rest.chars().next() else { break };
        let start = pos;
        if c == '\n' || c == '\r' {
            pos += 1;
            line_start = depth == 0;
            continue;
        }
        if c == ' ' || c == '\t' || c == '\x0c' {
            pos += 1;
            continue;
        }
        let class;
        if line_start && (c == '%' || c == '!') {
            let cell = rest.starts_with("%%");
            pos = if cell {
                bytes_len
            } else {
                start + rest.find(['\n', '\r']).unwrap_or(rest.len())
            };
            class = TokenClass::Magic;
        } else if c == '#' {
            pos = start + rest.find(['\n', '\r']).unwrap_or(rest.len());
            class = TokenClass::Comment;
        } else if c == '"' || c == '\'' {
            let (len, ok) = string_extent(rest);
            pos = start + len;
            class = if ok {
                TokenClass::String
            } else {
                TokenClass::Error
            };
        } else if c.is_ascii_digit()
            || (c == '.' && rest[1..].starts_with(|d: char| d.is_ascii_digit()))
        {
            let len = rest
                .char_indices()
                .find(|&(i, d)| {
                    !(d.is_ascii_alphanumeric()
                        || d == '_'
                        || d == '.'
                        || ((d == '+' || d == '-')
                            && i > 0
                            && matches!(rest.as_bytes().get(i - 1), Some(b'e' | b'E'))
                            && !rest.starts_with("0x")
                            && !rest.starts_with("0X")))
                })
                .map_or(rest.len(), |(i, _)| i);
            pos = start + len.max(1);
            class = TokenClass::Number;
        } else if is_name_start(c) {
            let len = rest.find(|d: char| !is_name_char(d)).unwrap_or(rest.len());
            let word = &rest[..len];
            let after = rest[len..].chars().next();
            if len <= 2
                && word.chars().all(|p| "rRbBfFuU".contains(p))
                && matches!(after, Some('"' | '\''))
            {
                let (slen, ok) = string_extent(&rest[len..]);
                pos = start + len + slen;
                class = if ok {
                    TokenClass::String
                } else {
                    TokenClass::Error
                };
            } else {
                pos = start + len;
                class = if Keyword::from_word(word).is_some() {
                    TokenClass::Keyword
                } else if BUILTINS.contains(&word) {
                    TokenClass::Builtin
                } else {
                    TokenClass::Name
                };
            }
        } else if "()[]{},:;.+-*/%@&|^~<>=!".contains(c) {
            match c {
                '(' | '[' | '{' => depth += 1,
                ')' | ']' | '}' => depth = depth.saturating_sub(1),
                _ => {}
            }
            let len = rest
                .find(|d: char| !"+-*/%@&|^~<>=!.:".contains(d) || "([{)]},;".contains(d))
                .unwrap_or(rest.len())
                .max(1);
            // Brackets are one token each; operator runs are grouped.
            pos = start + if "()[]{},;".contains(c) { 1 } else { len };
            class = TokenClass::Operator;
        } else if c == '\\' {
            pos += 1;
            class = TokenClass::Operator;
        } else {
            pos += c.len_utf8();
            class = TokenClass::Error;
        }
        line_start = false;
        out.push((Span::new(start, pos), class));
    }
    out
}

/// Length of the string literal at the start of `text` (which starts with a
/// quote) and whether it is terminated.
fn string_extent(text: &str) -> (usize, bool) {
    let Some(quote) = text.chars().next() else {
        return (0, false);
    };
    let triple_delim: String = std::iter::repeat_n(quote, 3).collect();
    let triple = text.starts_with(&triple_delim);
    let mut i = if triple { 3 } else { 1 };
    while let Some(c) = text.get(i..).and_then(|r| r.chars().next()) {
        match c {
            '\\' => {
                i += 1;
                if let Some(n) = text.get(i..).and_then(|r| r.chars().next()) {
                    i += n.len_utf8();
                }
            }
            '\n' | '\r' if !triple => return (i, false),
            c if c == quote => {
                if !triple {
                    return (i + 1, true);
                }
                if text.get(i..).is_some_and(|r| r.starts_with(&triple_delim)) {
                    return (i + 3, true);
                }
                i += 1;
            }
            c => i += c.len_utf8(),
        }
    }
    (text.len(), false)
}
