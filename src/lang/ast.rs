//! The syntax tree. Every node carries the byte span of the source it came from,
//! so that any error raised while evaluating it can point at the exact text.
//!
//! The tree knows nothing of arrays or devices: `@` is just `BinOp::MatMul`.

use std::cell::Cell;
use std::fmt;
use std::ops::Deref;
use std::rc::Rc;

use super::span::Span;

/// An identifier. Shared, because the evaluator keeps names alive in scopes.
pub type Ident = Rc<str>;

/// A name used as an expression or assignment target. Besides the identifier it
/// remembers where the evaluator last found it (a global slot), so a name in a loop
/// body is hashed once, not on every iteration. The cache is tagged with the owner
/// of the slot table (a session), so a tree run by another owner simply misses.
#[derive(Debug, Clone)]
pub struct NameRef {
    pub id: Ident,
    /// `owner << 32 | slot`; 0 = nothing cached (owners start at 1).
    slot: Cell<u64>,
}

impl NameRef {
    pub fn new(id: Ident) -> NameRef {
        NameRef {
            id,
            slot: Cell::new(0),
        }
    }

    /// The slot cached for `owner`, if this name was resolved by that owner before.
    #[inline]
    pub fn cached_slot(&self, owner: u32) -> Option<u32> {
        let packed = self.slot.get();
        // Truncation is the point: the low half is the slot.
        ((packed >> 32) as u32 == owner).then_some(packed as u32)
    }

    #[inline]
    pub fn cache_slot(&self, owner: u32, slot: u32) {
        self.slot.set(u64::from(owner) << 32 | u64::from(slot));
    }
}

impl Deref for NameRef {
    type Target = str;
    fn deref(&self) -> &str {
        &self.id
    }
}

impl fmt::Display for NameRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.id)
    }
}

/// Two names are equal when they spell the same identifier; the cache is not syntax.
impl PartialEq for NameRef {
    fn eq(&self, other: &NameRef) -> bool {
        self.id == other.id
    }
}

/// Where an attribute read last found its name in an instance's own attributes (an index into
/// their insertion order). Instances of one class usually set their attributes in the same
/// order, so the next read at this spot checks one entry instead of hashing. Not syntax:
/// equality ignores it.
#[derive(Debug, Clone, Default)]
pub struct AttrHint(Cell<u32>);

impl AttrHint {
    #[inline]
    pub fn get(&self) -> usize {
        self.0.get() as usize
    }
    #[inline]
    pub fn set(&self, index: usize) {
        self.0.set(u32::try_from(index).unwrap_or(u32::MAX));
    }
}

impl PartialEq for AttrHint {
    fn eq(&self, _: &AttrHint) -> bool {
        true
    }
}

/// A whole input: a cell, a REPL entry or a script.
#[derive(Debug, Clone, PartialEq)]
pub struct Program {
    pub body: Vec<Stmt>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Stmt {
    pub kind: StmtKind,
    pub span: Span,
}

#[derive(Debug, Clone, PartialEq)]
pub enum StmtKind {
    /// An expression statement; at top level its value is displayed.
    Expr(Expr),
    /// `a = b = value`, `a, b = value`, `x[0] = v`, `o.attr = v`.
    /// `targets` holds one entry per `=` (left to right).
    Assign {
        targets: Vec<Expr>,
        value: Expr,
    },
    /// `target op= value` (`+=`, `-=`, `*=`, `/=`, `//=`, `%=`, `**=`, `@=`).
    AugAssign {
        target: Expr,
        op: BinOp,
        value: Expr,
    },
    Def(Rc<FuncDef>),
    /// `class Name(Base, ...): body`
    Class(Rc<ClassDef>),
    /// `@dec` lines before a `def` or `class`: applied bottom-up to what it defines, and the result
    /// bound to its name.
    Decorated {
        decorators: Vec<Expr>,
        def: Box<Stmt>,
    },
    Return(Option<Expr>),
    /// `if c1: ... elif c2: ... else: ...`: one branch per test, in order.
    If {
        branches: Vec<(Expr, Vec<Stmt>)>,
        orelse: Option<Vec<Stmt>>,
    },
    /// `match subject: case ...`: the first case whose pattern matches (and guard holds) runs
    /// (`super::pattern`).
    Match {
        subject: Expr,
        cases: Vec<super::pattern::MatchCase>,
    },
    /// `orelse` runs when the loop ends without `break`.
    While {
        cond: Expr,
        body: Vec<Stmt>,
        orelse: Option<Vec<Stmt>>,
    },
    For {
        target: Expr,
        iter: Expr,
        body: Vec<Stmt>,
        orelse: Option<Vec<Stmt>>,
    },
    Break,
    Continue,
    Pass,
    /// `target: annotation` or `target: annotation = value`.
    AnnAssign {
        target: Expr,
        annotation: Expr,
        value: Option<Expr>,
    },
    /// `with a as b, c:`
    With {
        items: Vec<WithItem>,
        body: Vec<Stmt>,
    },
    Try {
        body: Vec<Stmt>,
        handlers: Vec<ExceptHandler>,
        orelse: Option<Vec<Stmt>>,
        finally: Option<Vec<Stmt>>,
    },
    /// `raise` (re-raise) or `raise expr`.
    Raise(Option<Expr>),
    /// `raise exc from cause`.
    RaiseFrom {
        exc: Expr,
        cause: Expr,
    },
    /// `assert test[, msg]`
    Assert {
        test: Expr,
        msg: Option<Expr>,
    },
    /// `del a, b[0]`
    Del(Vec<Expr>),
    /// `global a, b`
    Global(Vec<Ident>),
    /// `nonlocal a, b`: assignments bind in the enclosing function's scope.
    Nonlocal(Vec<Ident>),
    /// `import a.b.c [as d], e` — one entry per imported module.
    Import(Vec<ImportName>),
    /// `from a.b import c [as d], e`
    FromImport {
        module: Vec<Ident>,
        names: Vec<ImportName>,
    },
    /// A line starting with `%` or `!` (IPython style). `name` is `"!"` for shell
    /// escapes, otherwise the magic's name without `%` (`"time"`, `"%time"` for
    /// the cell magic `%%time`). `arg` is the rest of the line, and `arg_span`
    /// where it sits in the source, so that a statement inside `%time stmt` can
    /// be parsed later with correct spans.
    Magic {
        name: Ident,
        arg: Rc<str>,
        arg_span: Span,
    },
}

#[derive(Debug, Clone, PartialEq)]
pub struct WithItem {
    pub context: Expr,
    pub target: Option<Expr>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct ExceptHandler {
    /// `except` alone: None. `except (A, B)`: a tuple expression.
    pub kind: Option<Expr>,
    pub name: Option<Ident>,
    pub body: Vec<Stmt>,
    pub span: Span,
}

#[derive(Debug, Clone, PartialEq)]
pub struct ImportName {
    /// Dotted path, e.g. `["mxnet", "gluon"]`; for from-import, a single name.
    pub path: Vec<Ident>,
    pub alias: Option<Ident>,
    pub span: Span,
}

#[derive(Debug, Clone, PartialEq)]
pub struct FuncDef {
    pub name: Ident,
    /// Shared with every function object made from it (a generator expression makes one per
    /// evaluation).
    pub params: Rc<[Param]>,
    pub body: Vec<Stmt>,
    /// The body contains `yield` (not counting nested functions): calling it makes a generator.
    pub is_generator: bool,
    /// A generator whose `yield`s the stackless runner handles ([`resumable_body`]).
    pub resumable: bool,
    /// The docstring, when the body starts with a string literal.
    pub doc: Option<Rc<str>>,
    pub span: Span,
    /// How many names a call binds at most ([`local_names`]): its scope is made that size
    /// at once, instead of growing one name at a time.
    pub locals: usize,
    /// The names local to every call ([`local_names`]), sorted.
    pub local_names: Rc<[Ident]>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct ClassDef {
    pub name: Ident,
    /// The bases and keywords between the parentheses, as a call's arguments.
    pub bases: Vec<Arg>,
    pub body: Vec<Stmt>,
    /// The docstring, when the body starts with a string literal.
    pub doc: Option<Rc<str>>,
    pub span: Span,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Param {
    pub name: Ident,
    pub default: Option<Expr>,
    pub kind: ParamKind,
    pub span: Span,
    /// How a `Normal` parameter may be passed: before a `/` marker positionally only, after
    /// `*` or `*args` by keyword only.
    pub passed: Passed,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Passed {
    Either,
    PositionalOnly,
    KeywordOnly,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ParamKind {
    /// `x` or `x=1`
    Normal,
    /// `*args`
    VarArgs,
    /// `**kwargs`
    KwArgs,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Expr {
    pub kind: ExprKind,
    pub span: Span,
}

#[derive(Debug, Clone, PartialEq)]
pub enum ExprKind {
    Name(NameRef),
    /// `(name := value)`: binds in the enclosing function (not a comprehension) and gives the value.
    NamedExpr {
        target: NameRef,
        value: Box<Expr>,
    },
    Int(i64),
    /// An int literal past i64.
    BigInt(Rc<num_bigint::BigInt>),
    Float(f64),
    Str(Rc<str>),
    /// b"..."
    Bytes(Rc<[u8]>),
    /// f"..." — literal pieces and `{expr!r:spec}` pieces.
    FString(Vec<FStringPart>),
    Bool(bool),
    None,
    /// `...`, used in indexing (`x[..., 0]`).
    Ellipsis,
    List(Vec<Expr>),
    Tuple(Vec<Expr>),
    /// `{k: v, **m}`: a `None` key unpacks the mapping in its value (as in CPython's AST).
    Dict(Vec<(Option<Expr>, Expr)>),
    /// `{a, b, *c}`, a set display.
    Set(Vec<Expr>),
    /// `{elt for t in it if c ...}`
    SetComp {
        elt: Box<Expr>,
        generators: Vec<Comprehension>,
    },
    /// `[elt for t in it if c ...]`; a generator expression `(elt for ...)` is
    /// parsed as this too and evaluated eagerly.
    ListComp {
        elt: Box<Expr>,
        generators: Vec<Comprehension>,
    },
    /// `{k: v for ...}`
    DictComp {
        key: Box<Expr>,
        value: Box<Expr>,
        generators: Vec<Comprehension>,
    },
    Attribute {
        value: Box<Expr>,
        attr: Ident,
        /// Span of the attribute name alone (for "has no attribute" errors).
        attr_span: Span,
        hint: AttrHint,
    },
    /// `value[index]`; a multi-dimensional index is a `Tuple` whose items may
    /// be `Slice`s.
    Subscript {
        value: Box<Expr>,
        index: Box<Expr>,
    },
    /// `lower:upper:step`, only inside a subscript.
    Slice {
        lower: Option<Box<Expr>>,
        upper: Option<Box<Expr>>,
        step: Option<Box<Expr>>,
    },
    Call {
        func: Box<Expr>,
        args: Vec<Arg>,
    },
    Unary {
        op: UnaryOp,
        operand: Box<Expr>,
    },
    Binary {
        op: BinOp,
        left: Box<Expr>,
        right: Box<Expr>,
    },
    /// `a < b <= c` is one node with two comparisons.
    Compare {
        left: Box<Expr>,
        ops: Vec<(CmpOp, Expr)>,
    },
    /// `a and b and c`
    BoolOp {
        op: BoolOpKind,
        values: Vec<Expr>,
    },
    /// `body if test else orelse`
    IfExp {
        test: Box<Expr>,
        body: Box<Expr>,
        orelse: Box<Expr>,
    },
    /// `yield` / `yield value`: suspends a generator; its value is what `send` passes in.
    Yield(Option<Box<Expr>>),
    /// `yield from iterable`
    YieldFrom(Box<Expr>),
    /// `(elt for x in iter ...)`: a generator. The parser writes it as a generator function
    /// `def <genexpr>(.0): for x in .0: ... yield elt`, called with the first iterable (which
    /// is evaluated at once, in the enclosing scope, as in Python).
    GeneratorExp {
        def: Rc<FuncDef>,
        iter: Box<Expr>,
    },
    Lambda {
        params: Rc<[Param]>,
        body: Box<Expr>,
    },
    /// `*x` inside a list/tuple display or assignment target.
    Starred(Box<Expr>),
}

#[derive(Debug, Clone, PartialEq)]
pub enum FStringPart {
    Lit(Rc<str>),
    Expr {
        expr: Box<Expr>,
        /// `!r`, `!s` or `!a`
        conversion: Option<char>,
        /// The format spec after `:`, which may itself hold `{...}` pieces.
        spec: Vec<FStringPart>,
        /// `f"{x=}"` debugging form: the source text to print before the value.
        debug_text: Option<Rc<str>>,
    },
}

#[derive(Debug, Clone, PartialEq)]
pub struct Comprehension {
    pub target: Expr,
    pub iter: Expr,
    pub ifs: Vec<Expr>,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Arg {
    Positional(Expr),
    Keyword {
        name: Ident,
        value: Expr,
        span: Span,
    },
    /// `*args`
    Star(Expr),
    /// `**kwargs`
    DoubleStar(Expr),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum UnaryOp {
    Neg,
    Pos,
    Not,
    Invert,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum BinOp {
    Add,
    Sub,
    Mul,
    Div,
    FloorDiv,
    Mod,
    Pow,
    MatMul,
    BitAnd,
    BitOr,
    BitXor,
    LShift,
    RShift,
}

impl BinOp {
    /// The operator as written, for error messages.
    pub fn symbol(self) -> &'static str {
        match self {
            BinOp::Add => "+",
            BinOp::Sub => "-",
            BinOp::Mul => "*",
            BinOp::Div => "/",
            BinOp::FloorDiv => "//",
            BinOp::Mod => "%",
            BinOp::Pow => "**",
            BinOp::MatMul => "@",
            BinOp::BitAnd => "&",
            BinOp::BitOr => "|",
            BinOp::BitXor => "^",
            BinOp::LShift => "<<",
            BinOp::RShift => ">>",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CmpOp {
    Eq,
    NotEq,
    Lt,
    LtE,
    Gt,
    GtE,
    Is,
    IsNot,
    In,
    NotIn,
}

impl CmpOp {
    pub fn symbol(self) -> &'static str {
        match self {
            CmpOp::Eq => "==",
            CmpOp::NotEq => "!=",
            CmpOp::Lt => "<",
            CmpOp::LtE => "<=",
            CmpOp::Gt => ">",
            CmpOp::GtE => ">=",
            CmpOp::Is => "is",
            CmpOp::IsNot => "is not",
            CmpOp::In => "in",
            CmpOp::NotIn => "not in",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum BoolOpKind {
    And,
    Or,
}

impl Expr {
    /// A `yield` or `yield from` in this expression, not counting nested functions and
    /// generator expressions' bodies (theirs are their own).
    pub fn has_yield(&self) -> bool {
        let any = |es: &[Expr]| es.iter().any(Expr::has_yield);
        let opt = |e: &Option<Box<Expr>>| e.as_deref().is_some_and(Expr::has_yield);
        let comp = |gs: &[Comprehension]| {
            gs.iter()
                .any(|g| g.target.has_yield() || g.iter.has_yield() || any(&g.ifs))
        };
        match &self.kind {
            ExprKind::Yield(_) | ExprKind::YieldFrom(_) => true,
            ExprKind::Name(_)
            | ExprKind::Int(_)
            | ExprKind::BigInt(_)
            | ExprKind::Float(_)
            | ExprKind::Str(_)
            | ExprKind::Bytes(_)
            | ExprKind::Bool(_)
            | ExprKind::None
            | ExprKind::Ellipsis => false,
            ExprKind::NamedExpr { value, .. } => value.has_yield(),
            ExprKind::FString(parts) => fstring_has_yield(parts),
            ExprKind::List(items) | ExprKind::Tuple(items) | ExprKind::Set(items) => any(items),
            ExprKind::Dict(items) => items
                .iter()
                .any(|(k, v)| k.as_ref().is_some_and(Expr::has_yield) || v.has_yield()),
            ExprKind::SetComp { elt, generators } | ExprKind::ListComp { elt, generators } => {
                elt.has_yield() || comp(generators)
            }
            ExprKind::DictComp {
                key,
                value,
                generators,
            } => key.has_yield() || value.has_yield() || comp(generators),
            ExprKind::Attribute { value, .. } => value.has_yield(),
            ExprKind::Subscript { value, index } => value.has_yield() || index.has_yield(),
            ExprKind::Slice { lower, upper, step } => opt(lower) || opt(upper) || opt(step),
            ExprKind::Call { func, args } => func.has_yield() || args.iter().any(Arg::has_yield),
            ExprKind::Unary { operand, .. } => operand.has_yield(),
            ExprKind::Binary { left, right, .. } => left.has_yield() || right.has_yield(),
            ExprKind::Compare { left, ops } => {
                left.has_yield() || ops.iter().any(|(_, e)| e.has_yield())
            }
            ExprKind::BoolOp { values, .. } => any(values),
            ExprKind::IfExp { test, body, orelse } => {
                test.has_yield() || body.has_yield() || orelse.has_yield()
            }
            // The first iterable is evaluated where the expression stands; the rest is the
            // generator's own body.
            ExprKind::GeneratorExp { iter, .. } => iter.has_yield(),
            ExprKind::Lambda { params, .. } => params_have_yield(params),
            ExprKind::Starred(e) => e.has_yield(),
        }
    }
}

pub(super) fn fstring_has_yield(parts: &[FStringPart]) -> bool {
    parts.iter().any(|p| match p {
        FStringPart::Lit(_) => false,
        FStringPart::Expr { expr, spec, .. } => expr.has_yield() || fstring_has_yield(spec),
    })
}

/// Defaults are evaluated where the function is defined.
fn params_have_yield(params: &[Param]) -> bool {
    params
        .iter()
        .any(|p| p.default.as_ref().is_some_and(Expr::has_yield))
}

impl Arg {
    pub(super) fn has_yield(&self) -> bool {
        match self {
            Arg::Positional(e) | Arg::Star(e) | Arg::DoubleStar(e) => e.has_yield(),
            Arg::Keyword { value, .. } => value.has_yield(),
        }
    }
}

impl Stmt {
    /// A `yield` anywhere in this statement, nested blocks included, not counting nested
    /// functions' bodies. A magic line whose text holds `yield` counts as one.
    pub fn has_yield(&self) -> bool {
        let block = |b: &[Stmt]| b.iter().any(Stmt::has_yield);
        match &self.kind {
            StmtKind::Expr(e) | StmtKind::Raise(Some(e)) => e.has_yield(),
            StmtKind::Assign { targets, value } => {
                value.has_yield() || targets.iter().any(Expr::has_yield)
            }
            StmtKind::AugAssign { target, value, .. } => target.has_yield() || value.has_yield(),
            StmtKind::Def(def) => params_have_yield(&def.params),
            StmtKind::Class(c) => c.bases.iter().any(Arg::has_yield) || block(&c.body),
            StmtKind::Decorated { decorators, def } => {
                decorators.iter().any(Expr::has_yield) || def.has_yield()
            }
            StmtKind::Return(e) => e.as_ref().is_some_and(Expr::has_yield),
            StmtKind::Break
            | StmtKind::Continue
            | StmtKind::Pass
            | StmtKind::Raise(None)
            | StmtKind::Global(_)
            | StmtKind::Nonlocal(_)
            | StmtKind::Import(_)
            | StmtKind::FromImport { .. } => false,
            StmtKind::AnnAssign {
                target,
                annotation,
                value,
            } => {
                target.has_yield()
                    || annotation.has_yield()
                    || value.as_ref().is_some_and(Expr::has_yield)
            }
            StmtKind::RaiseFrom { exc, cause } => exc.has_yield() || cause.has_yield(),
            StmtKind::Assert { test, msg } => {
                test.has_yield() || msg.as_ref().is_some_and(Expr::has_yield)
            }
            StmtKind::Del(targets) => targets.iter().any(Expr::has_yield),
            // Its text is parsed when it runs: a `yield` there needs the generator's stack.
            StmtKind::Magic { arg, .. } => arg.contains("yield"),
            // A compound statement.
            kind => {
                kind.header_exprs().into_iter().any(Expr::has_yield)
                    || kind.blocks().into_iter().any(block)
            }
        }
    }
}

/// A generator body the stackless runner (`crate::eval::resumable`) can suspend: every
/// `yield` is a statement of its own (`yield e`, `x = yield e`, `yield from e`, `x = yield
/// from e`), directly in the body or in `if`/`for`/`while`/`try`/`with` blocks whose tests,
/// iterables, `except` clauses and context managers have none. Any other body runs on a stack of its own.
pub fn resumable_body(body: &[Stmt]) -> bool {
    body.iter().all(|s| {
        if !s.has_yield() {
            return true;
        }
        let yield_value = |e: &Expr| match &e.kind {
            ExprKind::Yield(v) => !v.as_deref().is_some_and(Expr::has_yield),
            ExprKind::YieldFrom(v) => !v.has_yield(),
            _ => false,
        };
        match &s.kind {
            StmtKind::Expr(e) => yield_value(e),
            StmtKind::Assign { targets, value } => {
                yield_value(value) && !targets.iter().any(Expr::has_yield)
            }
            // `except (yield v):` suspends while the clauses are matched.
            StmtKind::Try { handlers, .. } => {
                handlers
                    .iter()
                    .all(|h| h.kind.as_ref().is_none_or(clause_resumable))
                    && s.kind.blocks().into_iter().all(resumable_body)
            }
            kind if kind.is_compound() => {
                !kind.header_exprs().into_iter().any(Expr::has_yield)
                    && kind.blocks().into_iter().all(resumable_body)
            }
            _ => false,
        }
    })
}

/// An `except` clause's expression the stackless runner evaluates: one without a `yield`, or
/// a `yield v` (`v` without one), which suspends while the clauses are matched.
pub fn clause_resumable(e: &Expr) -> bool {
    match &e.kind {
        ExprKind::Yield(v) => !v.as_deref().is_some_and(Expr::has_yield),
        _ => !e.has_yield(),
    }
}

/// The names an assignment target binds (`a`, `a, *b`, `[a, (b, c)]`), in order.
pub fn target_names(e: &Expr, names: &mut Vec<Ident>) {
    match &e.kind {
        ExprKind::Name(n) => names.push(n.id.clone()),
        ExprKind::Tuple(items) | ExprKind::List(items) => {
            items.iter().for_each(|i| target_names(i, names))
        }
        ExprKind::Starred(inner) => target_names(inner, names),
        _ => {}
    }
}

/// Adds the names `:=` binds in a function's body (`assigned`) to its sorted local names,
/// less those the body declares `global` or `nonlocal` (PEP 572: they bind where an
/// assignment in the body would).
pub fn add_assigned_names(
    locals: &mut Vec<Ident>,
    assigned: impl Iterator<Item = Ident>,
    body: &[Stmt],
) {
    let mut declared = Vec::new();
    declared_names(body, &mut declared);
    locals.extend(assigned.filter(|n| !declared.contains(n)));
    locals.sort_unstable();
    locals.dedup();
}

/// The names a body declares `global` or `nonlocal` (its nested blocks included, not nested
/// functions).
fn declared_names(body: &[Stmt], out: &mut Vec<Ident>) {
    for s in body {
        match &s.kind {
            StmtKind::Global(list) | StmtKind::Nonlocal(list) => out.extend(list.iter().cloned()),
            kind => kind
                .blocks()
                .into_iter()
                .for_each(|b| declared_names(b, out)),
        }
    }
}

/// The names local to a function, sorted: those its body binds directly (parameters,
/// assignment, `for`, `with ... as`, `except ... as`, `del`, imports, nested `def` and `class`;
/// not nested functions' bodies), less those it declares `global` or `nonlocal`. CPython
/// decides this when compiling: a local read before it is bound is an `UnboundLocalError`,
/// never the global of that name.
pub fn local_names(params: &[Param], body: &[Stmt]) -> Vec<Ident> {
    use target_names as target;
    fn block(b: &[Stmt], names: &mut Vec<Ident>, declared: &mut Vec<Ident>) {
        for s in b {
            match &s.kind {
                StmtKind::Assign { targets, .. } => targets.iter().for_each(|t| target(t, names)),
                StmtKind::AugAssign { target: t, .. } => target(t, names),
                StmtKind::AnnAssign {
                    target: t,
                    value: Some(_),
                    ..
                } => target(t, names),
                StmtKind::Del(targets) => targets.iter().for_each(|t| target(t, names)),
                StmtKind::Global(list) | StmtKind::Nonlocal(list) => {
                    declared.extend(list.iter().cloned())
                }
                StmtKind::Def(d) => names.push(d.name.clone()),
                StmtKind::Class(c) => names.push(c.name.clone()),
                StmtKind::Decorated { def, .. } => {
                    block(std::slice::from_ref(def), names, declared)
                }
                StmtKind::Match { cases, .. } => {
                    for c in cases {
                        // Checked by the parser: a pattern's names are well formed.
                        if let Ok(bound) = c.pattern.bound_names() {
                            names.extend(bound.into_iter().map(|(n, _)| n));
                        }
                    }
                }
                StmtKind::For { target: t, .. } => target(t, names),
                StmtKind::With { items, .. } => {
                    for t in items.iter().filter_map(|i| i.target.as_ref()) {
                        target(t, names);
                    }
                }
                StmtKind::Try { handlers, .. } => {
                    names.extend(handlers.iter().filter_map(|h| h.name.clone()));
                }
                StmtKind::Import(list) | StmtKind::FromImport { names: list, .. } => {
                    for i in list {
                        if let Some(n) = i.alias.as_ref().or(i.path.first()) {
                            names.push(n.clone());
                        }
                    }
                }
                _ => {}
            }
            for b in s.kind.blocks() {
                block(b, names, declared);
            }
        }
    }
    let mut names: Vec<Ident> = params.iter().map(|p| p.name.clone()).collect();
    let mut declared = Vec::new();
    block(body, &mut names, &mut declared);
    names.retain(|n| !declared.contains(n));
    names.sort_unstable();
    names.dedup();
    names
}
