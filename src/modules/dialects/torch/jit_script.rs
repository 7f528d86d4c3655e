//! What `torch.jit.script` reads in a module's own `forward`: the Python that TorchScript's
//! frontend refuses (`*args`/`**kwargs`, lambdas, nested `def`s, `try`, `global`), reported with
//! PyTorch's message and source highlight, and whether the forward is straight-line tensor code
//! (`straight`), which a scripted module may run as recorded ops instead of the interpreter.
//!
//! Straight-line means: the ops a call runs depend only on the inputs' shapes, dtypes and
//! devices and the modules' training flags, never on tensor values or other Python state. So no
//! branches (`if`, `while`, `and`/`or`, `x if c else y`, `not`), no conversion of a tensor to a
//! Python value (`int`, `float`, `bool`, `len`, `.item()`, `.tolist()`), no attribute of `self`
//! beyond registered submodules, parameters and buffers, no call into Python functions (their
//! bodies are not read), no in-place methods, and `for` only over a submodule (a `ModuleList`)
//! or a literal `range`, which unroll the same way every call. Anything else keeps running as
//! written; a recorded pass that turns out not to replay (random draws, an op without a replay)
//! falls back too, at the call (`jit.rs`).
use std::collections::HashSet;

use crate::lang::ast::{Arg, Expr, ExprKind, FuncDef, Param, ParamKind, Stmt, StmtKind, UnaryOp};
use crate::lang::span::locate;
use crate::modules::array::blocks::{children, core_of, Core};
use crate::object::value::{Function, FunctionBody, Value};
use crate::object::Interpreter;

/// A refusal of TorchScript's frontend: the exception class (in `torch.jit.frontend`) and its
/// text, PyTorch's message followed by the highlighted source.
pub struct FrontendError {
    pub class: &'static str,
    pub text: String,
}

/// The module's own `forward` (a function of the language), if its class defines one.
pub fn own_forward(module: &Value) -> Option<std::rc::Rc<Function>> {
    let Value::Instance(inst) = module else {
        return None;
    };
    match &inst.class().lookup("forward") {
        Some(Value::Func(f)) => Some(f.clone()),
        _ => None,
    }
}

fn def_of(f: &Function) -> Option<&FuncDef> {
    match &f.body {
        FunctionBody::Def(d) => Some(d),
        FunctionBody::Lambda(_) => None,
    }
}

/// PyTorch's highlight of `len` characters at byte `start` of `f`'s source: the file line, up
/// to two lines of the function on each side, and `~~~ <--- HERE` under the range.
fn highlight(f: &Function, def: &FuncDef, start: usize, len: usize) -> String {
    let src = &*f.source;
    let (line, col, _) = locate(src, crate::lang::span::Span::new(start, start));
    let (first, _, _) = locate(src, def.span);
    let end = def.span.end.min(src.len());
    let (last, _, last_text) = locate(src, crate::lang::span::Span::new(end, end));
    // A span ending after its last line's newline ends on the line before.
    let last = if last_text.trim().is_empty() && last > first {
        last - 1
    } else {
        last
    };
    let lines: Vec<&str> = src.split('\n').collect();
    let mut out = format!("  File \"<string>\", line {line}\n");
    let from = line.saturating_sub(2).max(first);
    let to = (line + 2).min(last);
    for n in from..=to {
        out.push_str(lines.get(n - 1).copied().unwrap_or(""));
        out.push('\n');
        if n == line {
            out.push_str(&" ".repeat(col - 1));
            out.push_str(&"~".repeat(len.max(1)));
            out.push_str(" <--- HERE\n");
        }
    }
    out
}

fn error(
    f: &Function,
    def: &FuncDef,
    class: &'static str,
    msg: &str,
    start: usize,
    len: usize,
) -> FrontendError {
    FrontendError {
        class,
        text: format!("{msg}:\n{}", highlight(f, def, start, len)),
    }
}

/// The first construct of `f` that TorchScript's frontend refuses, as PyTorch reports it.
pub fn frontend_error(f: &Function) -> Option<FrontendError> {
    let def = def_of(f)?;
    if let Some(p) = def
        .params
        .iter()
        .find(|p| matches!(p.kind, ParamKind::VarArgs | ParamKind::KwArgs))
    {
        // PyTorch underlines from the character before the name (`*args`, `*kwargs`).
        let start = name_start(f, p).saturating_sub(1);
        return Some(error(
            f,
            def,
            "NotSupportedError",
            "Compiled functions can't take variable number of arguments or use keyword-only arguments with defaults",
            start,
            p.name.chars().count() + 1,
        ));
    }
    stmts_error(f, def, &def.body)
}

fn name_start(f: &Function, p: &Param) -> usize {
    let src = &*f.source;
    let span_text = src
        .get(p.span.start..p.span.end.min(src.len()))
        .unwrap_or("");
    p.span.start + span_text.find(&*p.name).unwrap_or(0)
}

fn stmts_error(f: &Function, def: &FuncDef, body: &[Stmt]) -> Option<FrontendError> {
    body.iter().find_map(|s| stmt_error(f, def, s))
}

fn stmt_error(f: &Function, def: &FuncDef, s: &Stmt) -> Option<FrontendError> {
    let unsupported = |what: &str, len: usize| {
        Some(error(
            f,
            def,
            "UnsupportedNodeError",
            &format!("{what} aren't supported"),
            s.span.start,
            len,
        ))
    };
    match &s.kind {
        StmtKind::Try { .. } => unsupported("try blocks", 3),
        StmtKind::Def(_) => unsupported("function definitions", 3),
        StmtKind::Global(_) => unsupported("global variables", 6),
        StmtKind::Expr(e) | StmtKind::Return(Some(e)) => expr_error(f, def, e),
        StmtKind::Assign { targets, value } => targets
            .iter()
            .find_map(|t| expr_error(f, def, t))
            .or_else(|| expr_error(f, def, value)),
        StmtKind::AugAssign { target, value, .. } => {
            expr_error(f, def, target).or_else(|| expr_error(f, def, value))
        }
        StmtKind::AnnAssign { value, .. } => value.as_ref().and_then(|v| expr_error(f, def, v)),
        StmtKind::If { branches, orelse } => branches
            .iter()
            .find_map(|(c, b)| expr_error(f, def, c).or_else(|| stmts_error(f, def, b)))
            .or_else(|| orelse.as_ref().and_then(|b| stmts_error(f, def, b))),
        StmtKind::While { cond, body, orelse } => expr_error(f, def, cond)
            .or_else(|| stmts_error(f, def, body))
            .or_else(|| orelse.as_ref().and_then(|b| stmts_error(f, def, b))),
        StmtKind::For {
            iter, body, orelse, ..
        } => expr_error(f, def, iter)
            .or_else(|| stmts_error(f, def, body))
            .or_else(|| orelse.as_ref().and_then(|b| stmts_error(f, def, b))),
        StmtKind::With { items, body } => items
            .iter()
            .find_map(|i| expr_error(f, def, &i.context))
            .or_else(|| stmts_error(f, def, body)),
        _ => None,
    }
}

/// A lambda anywhere in `e`.
fn expr_error(f: &Function, def: &FuncDef, e: &Expr) -> Option<FrontendError> {
    let mut found = None;
    visit(e, &mut |x| {
        if found.is_none() && matches!(x.kind, ExprKind::Lambda { .. }) {
            found = Some(x.span.start);
        }
    });
    let start = found?;
    Some(error(
        f,
        def,
        "UnsupportedNodeError",
        "Lambda aren't supported",
        start,
        1,
    ))
}

/// Calls `each` on `e` and every expression inside it (not inside lambdas' bodies).
fn visit(e: &Expr, each: &mut dyn FnMut(&Expr)) {
    each(e);
    let all = |xs: &[Expr], each: &mut dyn FnMut(&Expr)| xs.iter().for_each(|x| visit(x, each));
    match &e.kind {
        ExprKind::List(xs) | ExprKind::Tuple(xs) | ExprKind::Set(xs) => all(xs, each),
        ExprKind::Dict(items) => items.iter().for_each(|(k, v)| {
            if let Some(k) = k {
                visit(k, each);
            }
            visit(v, each);
        }),
        ExprKind::Attribute { value, .. } => visit(value, each),
        ExprKind::Subscript { value, index } => {
            visit(value, each);
            visit(index, each);
        }
        ExprKind::Slice { lower, upper, step } => {
            for x in [lower, upper, step].into_iter().flatten() {
                visit(x, each);
            }
        }
        ExprKind::Call { func, args } => {
            visit(func, each);
            for a in args {
                match a {
                    Arg::Positional(x) | Arg::Star(x) | Arg::DoubleStar(x) => visit(x, each),
                    Arg::Keyword { value, .. } => visit(value, each),
                }
            }
        }
        ExprKind::Unary { operand, .. } => visit(operand, each),
        ExprKind::Binary { left, right, .. } => {
            visit(left, each);
            visit(right, each);
        }
        ExprKind::Compare { left, ops } => {
            visit(left, each);
            ops.iter().for_each(|(_, x)| visit(x, each));
        }
        ExprKind::BoolOp { values, .. } => all(values, each),
        ExprKind::IfExp { test, body, orelse } => {
            visit(test, each);
            visit(body, each);
            visit(orelse, each);
        }
        ExprKind::NamedExpr { value, .. } | ExprKind::Starred(value) => visit(value, each),
        ExprKind::ListComp { elt, generators } | ExprKind::SetComp { elt, generators } => {
            visit(elt, each);
            for g in generators {
                visit(&g.iter, each);
                all(&g.ifs, each);
            }
        }
        ExprKind::DictComp {
            key,
            value,
            generators,
        } => {
            visit(key, each);
            visit(value, each);
            for g in generators {
                visit(&g.iter, each);
                all(&g.ifs, each);
            }
        }
        ExprKind::GeneratorExp { iter, .. } => visit(iter, each),
        _ => {}
    }
}

/// Tensor attributes and methods that leave the recorded data flow: Python values, detached
/// or raw data, gradients, hooks.
const LEAVES_GRAPH: &[&str] = &[
    "item",
    "tolist",
    "numpy",
    "detach",
    "data",
    "grad",
    "backward",
    "register_hook",
    "retain_grad",
    "requires_grad",
    "storage",
    "data_ptr",
];

/// Built-in functions that compute on shapes or numbers only.
const PURE_BUILTINS: &[&str] = &["range", "max", "min", "abs", "tuple", "list"];

/// Whether `module` (and every module under it) computes the same ops for the same input
/// shapes and training flags: built-in layers, and forwards of their own that are straight-line
/// (module docs).
pub fn straight(it: &dyn Interpreter, module: &Value) -> bool {
    let Some(core) = core_of(module) else {
        return false;
    };
    if let Some(f) = own_forward(module) {
        if !forward_straight(it, &f, &core) {
            return false;
        }
    }
    children(&core).iter().all(|c| straight(it, &c.block))
}

struct Scope<'a> {
    it: &'a dyn Interpreter,
    f: &'a Function,
    this: Option<&'a str>,
    locals: HashSet<&'a str>,
    /// The forward's parameters.
    inputs: HashSet<&'a str>,
    /// Attribute names of `self` that are registered submodules, parameters or buffers.
    members: HashSet<String>,
    /// Those that are submodules (what a `for` may walk).
    submodules: HashSet<String>,
}

fn forward_straight(it: &dyn Interpreter, f: &Function, core: &Core) -> bool {
    let Some(def) = def_of(f) else {
        return false;
    };
    let submodules: HashSet<String> = children(core).iter().map(|c| c.key.to_string()).collect();
    let mut members = submodules.clone();
    members.extend(core.params.borrow().iter().map(|(k, _)| k.to_string()));
    let mut scope = Scope {
        it,
        f,
        this: def.params.first().map(|p| &*p.name),
        locals: def.params.iter().map(|p| &*p.name).collect(),
        inputs: def.params.iter().map(|p| &*p.name).collect(),
        members,
        submodules,
    };
    if def.params.iter().any(|p| p.default.is_some()) {
        return false;
    }
    let Some((last, rest)) = def.body.split_last() else {
        return false;
    };
    let leading_doc = |s: &Stmt| {
        matches!(
            &s.kind,
            StmtKind::Expr(Expr {
                kind: ExprKind::Str(_),
                ..
            })
        )
    };
    rest.iter()
        .enumerate()
        .all(|(k, s)| (k == 0 && leading_doc(s)) || scope.stmt(s))
        && matches!(&last.kind, StmtKind::Return(Some(e)) if scope.expr(e))
}

impl<'a> Scope<'a> {
    fn bind(&mut self, target: &'a Expr) -> bool {
        match &target.kind {
            ExprKind::Name(n) if Some(&*n.id) != self.this => {
                self.locals.insert(&n.id);
                true
            }
            ExprKind::Tuple(xs) | ExprKind::List(xs) => xs.iter().all(|x| self.bind(x)),
            _ => false,
        }
    }

    fn stmt(&mut self, s: &'a Stmt) -> bool {
        match &s.kind {
            StmtKind::Pass => true,
            StmtKind::Assign { targets, value } => {
                self.expr(value) && targets.iter().all(|t| self.bind(t))
            }
            StmtKind::AnnAssign {
                target,
                value: Some(value),
                ..
            } => self.expr(value) && self.bind(target),
            // In place on a value the forward made (on an input it would change the caller's
            // tensor, which a recording cannot replay).
            StmtKind::AugAssign { target, value, .. } => {
                matches!(&target.kind, ExprKind::Name(n)
                    if self.locals.contains(&*n.id) && !self.inputs.contains(&*n.id))
                    && self.expr(value)
            }
            StmtKind::For {
                target,
                iter,
                body,
                orelse: None,
            } => self.unrolled(iter) && self.bind(target) && body.iter().all(|s| self.stmt(s)),
            _ => false,
        }
    }

    /// A loop TorchScript unrolls the same way every call: over a submodule of `self`, or a
    /// `range` of literal integers.
    fn unrolled(&self, iter: &Expr) -> bool {
        match &iter.kind {
            ExprKind::Attribute { value, attr, .. } => {
                self.is_self(value) && self.submodules.contains(&**attr)
            }
            ExprKind::Call { func, args } => {
                matches!(&func.kind, ExprKind::Name(n) if &*n.id == "range" && !self.locals.contains("range"))
                    && args.iter().all(|a| {
                        matches!(
                            a,
                            Arg::Positional(Expr {
                                kind: ExprKind::Int(_),
                                ..
                            })
                        )
                    })
            }
            _ => false,
        }
    }

    fn is_self(&self, e: &Expr) -> bool {
        matches!(&e.kind, ExprKind::Name(n) if Some(&*n.id) == self.this)
    }

    /// Whether a global name is a module (`torch`, `F`) or a pure built-in: a value or a
    /// function of the program could change between calls or branch inside.
    fn global_ok(&self, name: &str) -> bool {
        let st = self.it.state();
        let module = self.f.module.as_ref().and_then(|m| m.upgrade());
        let found = match &module {
            Some(m) => m.get(name),
            None => st.globals.get(name).cloned(),
        };
        match found {
            Some(Value::Module(_)) => true,
            Some(_) => false,
            None => PURE_BUILTINS.contains(&name) && st.builtins.contains_key(name),
        }
    }

    fn args(&self, args: &[Arg]) -> bool {
        args.iter().all(|a| match a {
            Arg::Positional(x) | Arg::Star(x) => self.expr(x),
            // `inplace=True` changes its input.
            Arg::Keyword { name, value, .. } => {
                (&**name != "inplace" || matches!(value.kind, ExprKind::Bool(false)))
                    && self.expr(value)
            }
            Arg::DoubleStar(_) => false,
        })
    }

    fn expr(&self, e: &Expr) -> bool {
        match &e.kind {
            ExprKind::Name(n) => self.locals.contains(&*n.id) || self.global_ok(&n.id),
            ExprKind::Int(_)
            | ExprKind::Float(_)
            | ExprKind::Str(_)
            | ExprKind::Bool(_)
            | ExprKind::None
            | ExprKind::Ellipsis => true,
            ExprKind::List(xs) | ExprKind::Tuple(xs) => xs.iter().all(|x| self.expr(x)),
            ExprKind::Starred(x) => self.expr(x),
            ExprKind::Attribute { value, attr, .. } => {
                if self.is_self(value) {
                    return self.members.contains(&**attr);
                }
                !attr.ends_with('_') && !LEAVES_GRAPH.contains(&&**attr) && self.expr(value)
            }
            ExprKind::Subscript { value, index } => self.expr(value) && self.expr(index),
            ExprKind::Slice { lower, upper, step } => [lower, upper, step]
                .into_iter()
                .flatten()
                .all(|x| self.expr(x)),
            ExprKind::Call { func, args } => {
                // A function of the program (not a module or a layer) has a body of its own.
                let own_method = matches!(&func.kind, ExprKind::Attribute { value, attr, .. }
                    if self.is_self(value) && !self.submodules.contains(&**attr));
                !own_method && self.expr(func) && self.args(args)
            }
            ExprKind::Unary { op, operand } => *op != UnaryOp::Not && self.expr(operand),
            ExprKind::Binary { left, right, .. } => self.expr(left) && self.expr(right),
            ExprKind::Compare { left, ops } => {
                self.expr(left) && ops.iter().all(|(_, x)| self.expr(x))
            }
            _ => false,
        }
    }
}
