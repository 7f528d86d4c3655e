//! Parser and lexer tests: snippets to a compact S-expression of the tree,
//! precedence, spans, every error message with its span and `incomplete` flag,
//! and a mutation test that no input panics.

use super::ast::*;
use super::lexer::{highlight, TokenClass};
use super::parser::*;
use super::span::Span;

fn list(items: impl IntoIterator<Item = String>) -> String {
    items.into_iter().collect::<Vec<_>>().join(" ")
}

fn opt(e: &Option<Box<Expr>>) -> String {
    e.as_ref().map_or("_".to_string(), |e| sx(e))
}

fn params(ps: &[Param]) -> String {
    let items = ps.iter().map(|p| match p.kind {
        ParamKind::VarArgs => format!("*{}", p.name),
        ParamKind::KwArgs => format!("**{}", p.name),
        ParamKind::Normal => match &p.default {
            Some(d) => format!("{}={}", p.name, sx(d)),
            None => p.name.to_string(),
        },
    });
    format!("({})", list(items))
}

fn fparts(parts: &[FStringPart]) -> String {
    list(parts.iter().map(|p| match p {
        FStringPart::Lit(t) => format!("{t:?}"),
        FStringPart::Expr {
            expr,
            conversion,
            spec,
            debug_text,
        } => {
            let mut s = format!("{{{}", sx(expr));
            if let Some(d) = debug_text {
                s += &format!(" debug={d:?}");
            }
            if let Some(c) = conversion {
                s += &format!("!{c}");
            }
            if !spec.is_empty() {
                s += &format!(":{}", fparts(spec));
            }
            s + "}"
        }
    }))
}

fn comps(gens: &[Comprehension]) -> String {
    list(gens.iter().map(|g| {
        let ifs = g.ifs.iter().map(|c| format!(" (if {})", sx(c)));
        format!(
            "(for {} {}{})",
            sx(&g.target),
            sx(&g.iter),
            ifs.collect::<String>()
        )
    }))
}

/// An expression as a compact S-expression.
fn sx(e: &Expr) -> String {
    match &e.kind {
        ExprKind::Name(n) => n.to_string(),
        ExprKind::Int(i) => i.to_string(),
        ExprKind::BigInt(n) => n.to_string(),
        ExprKind::Float(f) => format!("{f:?}"),
        ExprKind::Str(s) => format!("{s:?}"),
        ExprKind::Bytes(b) => format!("b{b:?}"),
        ExprKind::FString(parts) => format!("(f {})", fparts(parts)),
        ExprKind::Bool(b) => if *b { "True" } else { "False" }.into(),
        ExprKind::None => "None".into(),
        ExprKind::Ellipsis => "...".into(),
        ExprKind::List(items) => format!("[{}]", list(items.iter().map(sx))),
        ExprKind::Tuple(items) => format!("(tuple {})", list(items.iter().map(sx))),
        ExprKind::Dict(pairs) => format!(
            "(dict {})",
            list(pairs.iter().map(|(k, v)| match k {
                Some(k) => format!("({} {})", sx(k), sx(v)),
                None => format!("(** {})", sx(v)),
            }))
        ),
        ExprKind::ListComp { elt, generators } => {
            format!("(listcomp {} {})", sx(elt), comps(generators))
        }
        ExprKind::Set(items) => format!("(set {})", list(items.iter().map(sx))),
        ExprKind::SetComp { elt, generators } => {
            format!("(setcomp {} {})", sx(elt), comps(generators))
        }
        ExprKind::DictComp {
            key,
            value,
            generators,
        } => format!("(dictcomp {} {} {})", sx(key), sx(value), comps(generators)),
        ExprKind::Attribute { value, attr, .. } => format!("(. {} {attr})", sx(value)),
        ExprKind::NamedExpr { target, value } => format!("(:= {target} {})", sx(value)),
        ExprKind::GeneratorExp { def, iter } => {
            format!("(genexp {} {})", sx(iter), body(&def.body))
        }
        ExprKind::Yield(None) => "(yield)".into(),
        ExprKind::Yield(Some(v)) => format!("(yield {})", sx(v)),
        ExprKind::YieldFrom(v) => format!("(yield-from {})", sx(v)),
        ExprKind::Subscript { value, index } => format!("(sub {} {})", sx(value), sx(index)),
        ExprKind::Slice { lower, upper, step } => {
            format!("(slice {} {} {})", opt(lower), opt(upper), opt(step))
        }
        ExprKind::Call { func, args } => {
            let args = args.iter().map(|a| match a {
                Arg::Positional(e) => sx(e),
                Arg::Keyword { name, value, .. } => format!("(kw {name} {})", sx(value)),
                Arg::Star(e) => format!("(* {})", sx(e)),
                Arg::DoubleStar(e) => format!("(** {})", sx(e)),
            });
            let args = list(args);
            if args.is_empty() {
                format!("(call {})", sx(func))
            } else {
                format!("(call {} {args})", sx(func))
            }
        }
        ExprKind::Unary { op, operand } => {
            let op = match op {
                UnaryOp::Neg => "neg",
                UnaryOp::Pos => "pos",
                UnaryOp::Not => "not",
                UnaryOp::Invert => "inv",
            };
            format!("({op} {})", sx(operand))
        }
        ExprKind::Binary { op, left, right } => {
            format!("({} {} {})", op.symbol(), sx(left), sx(right))
        }
        ExprKind::Compare { left, ops } => {
            let rest = ops
                .iter()
                .map(|(op, e)| format!("{} {}", op.symbol(), sx(e)));
            format!("(cmp {} {})", sx(left), list(rest))
        }
        ExprKind::BoolOp { op, values } => {
            let op = match op {
                BoolOpKind::And => "and",
                BoolOpKind::Or => "or",
            };
            format!("({op} {})", list(values.iter().map(sx)))
        }
        ExprKind::IfExp { test, body, orelse } => {
            format!("(ifexp {} {} {})", sx(test), sx(body), sx(orelse))
        }
        ExprKind::Lambda { params: ps, body } => format!("(lambda {} {})", params(ps), sx(body)),
        ExprKind::Starred(e) => format!("(* {})", sx(e)),
    }
}

fn body(stmts: &[Stmt]) -> String {
    list(stmts.iter().map(st))
}

/// A statement as a compact S-expression.
fn st(s: &Stmt) -> String {
    match &s.kind {
        StmtKind::Expr(e) => sx(e),
        StmtKind::Assign { targets, value } => {
            format!("(= {} {})", list(targets.iter().map(sx)), sx(value))
        }
        StmtKind::AugAssign { target, op, value } => {
            format!("({}= {} {})", op.symbol(), sx(target), sx(value))
        }
        StmtKind::Def(f) => {
            let doc = f
                .doc
                .as_ref()
                .map_or(String::new(), |d| format!(" doc={d:?}"));
            format!(
                "(def {} {}{doc} {})",
                f.name,
                params(&f.params),
                body(&f.body)
            )
        }
        StmtKind::Class(c) => {
            let bases = list(c.bases.iter().map(|a| match a {
                Arg::Positional(e) => sx(e),
                Arg::Keyword { name, value, .. } => format!("(kw {name} {})", sx(value)),
                Arg::Star(e) => format!("(* {})", sx(e)),
                Arg::DoubleStar(e) => format!("(** {})", sx(e)),
            }));
            format!("(class {} {bases} {})", c.name, body(&c.body))
        }
        StmtKind::Decorated { decorators, def } => {
            format!("(@ {} {})", list(decorators.iter().map(sx)), st(def))
        }
        StmtKind::Return(None) => "(return)".into(),
        StmtKind::Return(Some(e)) => format!("(return {})", sx(e)),
        StmtKind::If { branches, orelse } => {
            let mut out = String::from("(if");
            for (test, b) in branches {
                out += &format!(" ({} {})", sx(test), body(b));
            }
            if let Some(b) = orelse {
                out += &format!(" (else {})", body(b));
            }
            out + ")"
        }
        StmtKind::While {
            cond,
            body: b,
            orelse,
        } => match orelse {
            None => format!("(while {} {})", sx(cond), body(b)),
            Some(e) => format!("(while {} {} (else {}))", sx(cond), body(b), body(e)),
        },
        StmtKind::For {
            target,
            iter,
            body: b,
            orelse,
        } => match orelse {
            None => format!("(for {} {} {})", sx(target), sx(iter), body(b)),
            Some(e) => format!(
                "(for {} {} {} (else {}))",
                sx(target),
                sx(iter),
                body(b),
                body(e)
            ),
        },
        StmtKind::Break => "break".into(),
        StmtKind::Continue => "continue".into(),
        StmtKind::Pass => "pass".into(),
        StmtKind::AnnAssign {
            target,
            annotation,
            value,
        } => match value {
            Some(v) => format!("(: {} {} {})", sx(target), sx(annotation), sx(v)),
            None => format!("(: {} {})", sx(target), sx(annotation)),
        },
        StmtKind::With { items, body: b } => {
            let items = items.iter().map(|i| match &i.target {
                Some(t) => format!("({} as {})", sx(&i.context), sx(t)),
                None => format!("({})", sx(&i.context)),
            });
            format!("(with {} {})", list(items), body(b))
        }
        StmtKind::Try {
            body: b,
            handlers,
            orelse,
            finally,
        } => {
            let mut out = format!("(try ({})", body(b));
            for h in handlers {
                let kind = h.kind.as_ref().map_or("_".into(), sx);
                let name = h.name.as_ref().map_or("_".into(), |n| n.to_string());
                out += &format!(" (except {kind} {name} {})", body(&h.body));
            }
            if let Some(b) = orelse {
                out += &format!(" (else {})", body(b));
            }
            if let Some(b) = finally {
                out += &format!(" (finally {})", body(b));
            }
            out + ")"
        }
        StmtKind::Raise(None) => "(raise)".into(),
        StmtKind::Raise(Some(e)) => format!("(raise {})", sx(e)),
        StmtKind::RaiseFrom { exc, cause } => format!("(raise {} from {})", sx(exc), sx(cause)),
        StmtKind::Assert { test, msg } => match msg {
            Some(m) => format!("(assert {} {})", sx(test), sx(m)),
            None => format!("(assert {})", sx(test)),
        },
        StmtKind::Del(targets) => format!("(del {})", list(targets.iter().map(sx))),
        StmtKind::Nonlocal(names) => {
            format!("(nonlocal {})", list(names.iter().map(|n| n.to_string())))
        }
        StmtKind::Global(names) => {
            format!("(global {})", list(names.iter().map(|n| n.to_string())))
        }
        StmtKind::Import(names) => format!("(import {})", imports(names)),
        StmtKind::FromImport { module, names } => {
            format!("(from {} {})", module.join("."), imports(names))
        }
        StmtKind::Magic { name, arg, .. } => format!("(magic {name:?} {arg:?})"),
        StmtKind::Match { subject, cases } => {
            let cases = cases.iter().map(|c| match &c.guard {
                Some(g) => format!("(case {:?} if {} {})", c.pattern.kind, sx(g), body(&c.body)),
                None => format!("(case {:?} {})", c.pattern.kind, body(&c.body)),
            });
            format!("(match {} {})", sx(subject), list(cases))
        }
    }
}

fn imports(names: &[ImportName]) -> String {
    list(names.iter().map(|n| match &n.alias {
        Some(a) => format!("{} as {a}", n.path.join(".")),
        None => n.path.join("."),
    }))
}

fn show(src: &str) -> String {
    match parse(src) {
        Ok(p) => {
            p.body.iter().for_each(|s| check_stmt_spans(src, s));
            list(p.body.iter().map(st))
        }
        Err(e) => panic!("{src:?} failed: {} at {:?}", e.message, e.span),
    }
}

fn fail(src: &str) -> (String, Span, bool) {
    match parse(src) {
        Ok(p) => panic!("{src:?} parsed: {}", list(p.body.iter().map(st))),
        Err(e) => (e.message, e.span, e.incomplete),
    }
}

fn first_expr(src: &str) -> Expr {
    match parse(src).map(|p| p.body.into_iter().next().map(|s| s.kind)) {
        Ok(Some(StmtKind::Expr(e))) => {
            check_expr_spans(src, &e, Span::new(0, src.len()));
            e
        }
        other => panic!("{src:?}: not an expression statement: {other:?}"),
    }
}

fn text_of(src: &str, span: Span) -> &str {
    &src[span.start..span.end]
}

#[test]
fn statements_table() {
    let cases: &[(&str, &str)] = &[
        ("x = 1", "(= x 1)"),
        ("a = b = 1", "(= a b 1)"),
        ("a, b = b, a", "(= (tuple a b) (tuple b a))"),
        ("(a, b), c = x", "(= (tuple (tuple a b) c) x)"),
        ("[a, *b] = x", "(= [a (* b)] x)"),
        ("a, *b = x", "(= (tuple a (* b)) x)"),
        ("x.y[0] = 2", "(= (sub (. x y) 0) 2)"),
        ("x += 1", "(+= x 1)"),
        ("x //= 2; y **= 3; z @= w", "(//= x 2) (**= y 3) (@= z w)"),
        ("x %= 2; y -= 1; z *= 2; w /= 4", "(%= x 2) (-= y 1) (*= z 2) (/= w 4)"),
        (
            "a <<= 1; b >>= 2; c &= 3; d |= 4; e ^= 5",
            "(<<= a 1) (>>= b 2) (&= c 3) (|= d 4) (^= e 5)",
        ),
        ("x = a<<1>>2<=3>=4<5>6!=7==8", "(= x (cmp (>> (<< a 1) 2) <= 3 >= 4 < 5 > 6 != 7 == 8))"),
        ("x = 1, 2", "(= x (tuple 1 2))"),
        ("x = 1,", "(= x (tuple 1))"),
        ("1, 2", "(tuple 1 2)"),
        ("pass; pass;", "pass pass"),
        ("if x: y = 1", "(if (x (= y 1)))"),
        (
            "if a:\n    b\nelif c:\n    d\nelse:\n    e\n",
            "(if (a b) (c d) (else e))",
        ),
        ("while x > 0:\n    x -= 1\n    break", "(while (cmp x > 0) (-= x 1) break)"),
        ("for i in range(3):\n    continue", "(for i (call range 3) continue)"),
        ("for a, b in 1, 2: pass", "(for (tuple a b) (tuple 1 2) pass)"),
        ("for (a, b), c in z: pass", "(for (tuple (tuple a b) c) z pass)"),
        (
            "with autograd.record() as r, open(p):\n    pass",
            "(with ((call (. autograd record)) as r) ((call open p)) pass)",
        ),
        (
            "try:\n    x\nexcept:\n    y",
            "(try (x) (except _ _ y))",
        ),
        (
            "try:\n    x\nexcept E:\n    y\nexcept (A, B) as e:\n    z\nelse:\n    w\nfinally:\n    v",
            "(try (x) (except E _ y) (except (tuple A B) e z) (else w) (finally v))",
        ),
        ("try:\n    x\nfinally:\n    v", "(try (x) (finally v))"),
        ("raise", "(raise)"),
        ("raise ValueError('bad')", "(raise (call ValueError \"bad\"))"),
        ("assert x, 'msg'", "(assert x \"msg\")"),
        ("assert x", "(assert x)"),
        ("del a, b[0]", "(del a (sub b 0))"),
        ("global a, b", "(global a b)"),
        ("import mxnet as mx, time", "(import mxnet as mx time)"),
        ("import a.b.c as d", "(import a.b.c as d)"),
        (
            "from mxnet import nd, np as numpy",
            "(from mxnet nd np as numpy)",
        ),
        (
            "from mxnet.gluon import (nn,\n    loss as L,)",
            "(from mxnet.gluon nn loss as L)",
        ),
        (
            "def f(a, b=1, *args, c, d=2, **kw):\n    return a",
            "(def f (a b=1 *args c d=2 **kw) (return a))",
        ),
        (
            "def f():\n    \"\"\"Doc.\"\"\"\n    return",
            "(def f () doc=\"Doc.\" \"Doc.\" (return))",
        ),
        ("def f(x: int, *, y=1) -> int: return x", "(def f (x y=1) (return x))"),
        ("def f(): return 1, 2", "(def f () (return (tuple 1 2)))"),
        ("class A: pass", "(class A  pass)"),
        ("def g():\n    yield\n    x = yield 1, 2\n    yield from y", "(def g () (yield) (= x (yield (tuple 1 2))) (yield-from y))"),
        // A yield anywhere an expression stands: augmented assignments, call arguments,
        // f-string fields, the first iterable of a comprehension (evaluated by the function).
        // A `yield` inside an expression is hoisted to a statement of its own (`lang::lower`),
        // into temporaries whose names the next statement reuses.
        ("def g():\n    x += yield\n    f((yield 1))\n    return f'{yield}'", "(def g () (= .y0 x) (= .y1 (yield)) (+= .y0 .y1) (= x .y0) (= .y0 f) (= .y1 (yield 1)) (call .y0 .y1) (= .y0 (yield)) (return (f {.y0})))"),
        ("def g():\n    return [x for x in (yield)]", "(def g () (return (listcomp x (for x (yield)))))"),
        ("for x in y:\n    break\nelse:\n    z", "(for x y break (else z))"),
        ("while a:\n    pass\nelse:\n    b", "(while a pass (else b))"),
        ("class B(A, nn.Block):\n    x = 1\n    def f(self): return x", "(class B A (. nn Block) (= x 1) (def f (self) (return x)))"),
        ("@d\n@e(1)\nclass C: pass", "(@ d (call e 1) (class C  pass))"),
        ("x = lambda a, b=2: a + b", "(= x (lambda (a b=2) (+ a b)))"),
        ("f = lambda: 0", "(= f (lambda () 0))"),
        ("x = 1 \\\n  + 2", "(= x (+ 1 2))"),
        ("x = (1 +\n  2)\ny = 3", "(= x (+ 1 2)) (= y 3)"),
        ("# only a comment\n\nx = 1  # trailing\n", "(= x 1)"),
        (
            "if a:\n\n    # comment\n    b\n\n    c\n",
            "(if (a b c))",
        ),
        ("if a:\n\tb\n\tc", "(if (a b c))"),
        ("if a:\n    b\n# outdented comment\n        # deeper one\n    c\nd", "(if (a b c)) d"),
        ("if a:\n    if b:\n        c\nd", "(if (a (if (b c)))) d"),
        (
            "for i in x:\n    if i:\n        break\n    continue\ny",
            "(for i x (if (i break)) continue) y",
        ),
        ("\u{feff}x = 1\r\nif x:\r\n    y\r\n", "(= x 1) (if (x y))"),
        ("x = 1\x0c\ny", "(= x 1) y"),
        ("", ""),
        ("\n\n   \n# c\n", ""),
    ];
    for (src, want) in cases {
        assert_eq!(show(src), *want, "source: {src:?}");
    }
}

#[test]
fn magics() {
    assert_eq!(show("!nvidia-smi -L"), "(magic \"!\" \"nvidia-smi -L\")");
    assert_eq!(show("%time x = 1"), "(magic \"time\" \"x = 1\")");
    assert_eq!(
        show("%devices\nx = 5 % 3"),
        "(magic \"devices\" \"\") (= x (% 5 3))"
    );
    assert_eq!(
        show("%%time\nx = 1\ny = 2\n"),
        "(magic \"%time\" \"x = 1\\ny = 2\")"
    );
    assert_eq!(
        show("%%timeit -n 3\nx\n"),
        "(magic \"%timeit\" \"-n 3\\nx\")"
    );
    assert_eq!(
        show("for i in x:\n    %time f(i)\n"),
        "(for i x (magic \"time\" \"f(i)\"))"
    );
    // A `%` continuing an expression is the modulo operator.
    assert_eq!(show("x = (5\n% 3)"), "(= x (% 5 3))");
    let src = "y = 2\n%time x = y + 1  \n";
    let Ok(program) = parse(src) else {
        panic!("no parse")
    };
    let Some(StmtKind::Magic { arg_span, .. }) = program.body.get(1).map(|s| &s.kind) else {
        panic!("no magic")
    };
    assert_eq!(text_of(src, *arg_span), "x = y + 1");
    // The argument can be parsed on its own, with spans into the whole source.
    let Ok(inner) = parse_span(src, *arg_span) else {
        panic!("arg did not parse")
    };
    let StmtKind::Assign { value, .. } = &inner.body[0].kind else {
        panic!("not an assignment")
    };
    assert_eq!(text_of(src, value.span), "y + 1");
    assert_eq!(
        fail("%").0,
        "expected a magic name after '%', e.g. %time or %devices"
    );
}

#[test]
fn expressions_table() {
    let cases: &[(&str, &str)] = &[
        ("1 + 2 * 3", "(+ 1 (* 2 3))"),
        ("(1 + 2) * 3", "(* (+ 1 2) 3)"),
        ("a - b - c", "(- (- a b) c)"),
        ("2 ** 3 ** 2", "(** 2 (** 3 2))"),
        ("-2 ** 2", "(neg (** 2 2))"),
        ("2 ** -1", "(** 2 (neg 1))"),
        ("-x.y[0]()", "(neg (call (sub (. x y) 0)))"),
        ("a @ b + c", "(+ (@ a b) c)"),
        ("x @ gpu(0)", "(@ x (call gpu 0))"),
        ("a | b ^ c & d << e + f", "(| a (^ b (& c (<< d (+ e f)))))"),
        ("a // b % c", "(% (// a b) c)"),
        ("~a + -b", "(+ (inv a) (neg b))"),
        ("not a == b", "(not (cmp a == b))"),
        ("a < b <= c != d", "(cmp a < b <= c != d)"),
        ("a is not b", "(cmp a is not b)"),
        ("a not in b", "(cmp a not in b)"),
        ("a in b is c", "(cmp a in b is c)"),
        ("a or b and c or d", "(or a (and b c) d)"),
        ("not a and not b", "(and (not a) (not b))"),
        ("a if c else b", "(ifexp c a b)"),
        ("a if c else b if d else e", "(ifexp c a (ifexp d b e))"),
        ("lambda x: x if x else 0", "(lambda (x) (ifexp x x 0))"),
        ("f(1, b=2, *c, **d)", "(call f 1 (kw b 2) (* c) (** d))"),
        ("f(a,)", "(call f a)"),
        ("f()()", "(call (call f))"),
        (
            "sum(x for x in y)",
            "(call sum (genexp y (for x .0 (yield x))))",
        ),
        ("x[0]", "(sub x 0)"),
        ("x[:, 1:3]", "(sub x (tuple (slice _ _ _) (slice 1 3 _)))"),
        ("x[::2]", "(sub x (slice _ _ 2))"),
        ("x[1::]", "(sub x (slice 1 _ _))"),
        ("x[..., 0]", "(sub x (tuple ... 0))"),
        ("x[1, None]", "(sub x (tuple 1 None))"),
        ("x[0,]", "(sub x (tuple 0))"),
        ("x[a:b:c, -1]", "(sub x (tuple (slice a b c) (neg 1)))"),
        (
            "net[0].weight.data()",
            "(call (. (. (sub net 0) weight) data))",
        ),
        ("()", "(tuple )"),
        ("(1,)", "(tuple 1)"),
        ("(1, 2,)", "(tuple 1 2)"),
        ("((1))", "1"),
        ("[]", "[]"),
        ("[1, *a, 2,]", "[1 (* a) 2]"),
        ("{}", "(dict )"),
        ("{'a': 1, 'b': 2,}", "(dict (\"a\" 1) (\"b\" 2))"),
        (
            "[x * y for x in a if x for y in b if y if z]",
            "(listcomp (* x y) (for x a (if x)) (for y b (if y) (if z)))",
        ),
        (
            "[(a, b) for a, b in z]",
            "(listcomp (tuple a b) (for (tuple a b) z))",
        ),
        ("{k: v for k, v in d}", "(dictcomp k v (for (tuple k v) d))"),
        ("{1, *a, b}", "(set 1 (* a) b)"),
        ("{x}", "(set x)"),
        ("{x for x in d if x}", "(setcomp x (for x d (if x)))"),
        (
            "(x for x in y if x)",
            "(genexp y (for x .0 (if (x (yield x)))))",
        ),
        (
            "[a if b else c for d in e]",
            "(listcomp (ifexp b a c) (for d e))",
        ),
        ("True, False, None, ...", "(tuple True False None ...)"),
        ("0x1F + 0o17 + 0b101 + 1_000", "(+ (+ (+ 31 15) 5) 1000)"),
        (
            "1. + .5 + 1e-3 + 1_000.5 + 2E2",
            "(+ (+ (+ (+ 1.0 0.5) 0.001) 1000.5) 200.0)",
        ),
        ("9223372036854775807", "9223372036854775807"),
        ("-9223372036854775808", "-9223372036854775808"),
        ("- 9223372036854775808 + 1", "(+ -9223372036854775808 1)"),
        ("'a' \"b\" '''c'''", "\"abc\""),
        (r#"'\n\t\\\'\"\x41\u00e9\q'"#, "\"\\n\\t\\\\'\\\"Aé\\\\q\""),
        (r#"r'\n\d'"#, "\"\\\\n\\\\d\""),
        ("'''a\nb'''", "\"a\\nb\""),
        ("'a\\\nb'", "\"ab\""),
        ("'€' + \"ü\"", "(+ \"€\" \"ü\")"),
        ("f'cuda:{i}'", "(f \"cuda:\" {i})"),
        ("f'{x!r}'", "(f {x!r})"),
        ("f'{x:>{w}.2f}'", "(f {x:\">\" {w} \".2f\"})"),
        ("f'{{a}} {b}'", "(f \"{a} \" {b})"),
        ("f'{x=}'", "(f {x debug=\"x=\"!r})"),
        ("f'{x = :.1f}'", "(f {x debug=\"x = \":\".1f\"})"),
        ("f'{a == b}'", "(f {(cmp a == b)})"),
        ("f'{a != b!s}'", "(f {(cmp a != b)!s})"),
        ("f'{d[\"k\"]}'", "(f {(sub d \"k\")})"),
        ("f'{ {1: 2}[1] }'", "(f {(sub (dict (1 2)) 1)})"),
        ("'a' f'{b}' 'c'", "(f \"a\" {b} \"c\")"),
        ("rf'\\d{x}'", "(f \"\\\\d\" {x})"),
        ("f'''{x}\n'''", "(f {x} \"\\n\")"),
        ("f'\\n{x}'", "(f \"\\n\" {x})"),
        ("f'{f\"{x}\"}'", "(f {(f {x})})"),
        ("x if y else lambda: z", "(ifexp y x (lambda () z))"),
    ];
    for (src, want) in cases {
        let e = first_expr(src);
        assert_eq!(sx(&e), *want, "source: {src:?}");
    }
}

#[test]
fn parse_expression_entry_point() {
    let Ok(e) = parse_expression("x.sum(\n  axis=0)") else {
        panic!("no parse")
    };
    assert_eq!(sx(&e), "(call (. x sum) (kw axis 0))");
    let Ok(e) = parse_expression("a, b") else {
        panic!("no parse")
    };
    assert_eq!(sx(&e), "(tuple a b)");
    let Err(e) = parse_expression("x = 1") else {
        panic!("should fail")
    };
    assert_eq!(e.message, "invalid syntax");
    assert_eq!(e.span, Span::new(2, 3));
    let Err(e) = parse_expression("") else {
        panic!("should fail")
    };
    assert_eq!(e.message, "expected an expression, found nothing");
    let Ok(e) = parse_expression_span("y = a + b", Span::new(4, 9)) else {
        panic!("no parse")
    };
    assert_eq!(e.span, Span::new(4, 9));
}

#[test]
fn spans_cover_their_source() {
    let src = "y = (a + b) * f(x, k=1)[0].attr";
    let Ok(p) = parse(src) else { panic!() };
    let StmtKind::Assign { targets, value } = &p.body[0].kind else {
        panic!()
    };
    assert_eq!(p.body[0].span, Span::new(0, src.len()));
    assert_eq!(text_of(src, targets[0].span), "y");
    assert_eq!(text_of(src, value.span), "(a + b) * f(x, k=1)[0].attr");
    let ExprKind::Binary { left, right, .. } = &value.kind else {
        panic!()
    };
    assert_eq!(text_of(src, left.span), "a + b");
    assert_eq!(text_of(src, right.span), "f(x, k=1)[0].attr");
    let ExprKind::Attribute {
        value: sub,
        attr_span,
        ..
    } = &right.kind
    else {
        panic!()
    };
    assert_eq!(text_of(src, *attr_span), "attr");
    let ExprKind::Subscript { value: call, index } = &sub.kind else {
        panic!()
    };
    assert_eq!(text_of(src, index.span), "0");
    let ExprKind::Call { func, args } = &call.kind else {
        panic!()
    };
    assert_eq!(text_of(src, call.span), "f(x, k=1)");
    assert_eq!(text_of(src, func.span), "f");
    let Arg::Keyword { span, value, .. } = &args[1] else {
        panic!()
    };
    assert_eq!(text_of(src, *span), "k=1");
    assert_eq!(text_of(src, value.span), "1");

    // Slices and index tuples.
    let src = "x[:, 1:3]";
    let e = first_expr(src);
    let ExprKind::Subscript { index, .. } = &e.kind else {
        panic!()
    };
    assert_eq!(text_of(src, index.span), ":, 1:3");
    let ExprKind::Tuple(items) = &index.kind else {
        panic!()
    };
    assert_eq!(text_of(src, items[1].span), "1:3");

    // Statements: a block statement spans its header through its last line.
    let src = "if x:\n    y = 1\n    z\nw";
    let Ok(p) = parse(src) else { panic!() };
    assert_eq!(text_of(src, p.body[0].span), "if x:\n    y = 1\n    z");
    assert_eq!(text_of(src, p.body[1].span), "w");

    // f-string pieces point into the whole source.
    let src = "s = f'dev {gpu(i) !r} {x + 1:>4}'";
    let Ok(p) = parse(src) else { panic!() };
    let StmtKind::Assign { value, .. } = &p.body[0].kind else {
        panic!()
    };
    let ExprKind::FString(parts) = &value.kind else {
        panic!()
    };
    let spans: Vec<&str> = parts
        .iter()
        .filter_map(|part| match part {
            FStringPart::Expr { expr, .. } => Some(text_of(src, expr.span)),
            FStringPart::Lit(_) => None,
        })
        .collect();
    assert_eq!(spans, ["gpu(i)", "x + 1"]);

    // Def and its parameters.
    let src = "def f(a, b=2):\n    return a";
    let Ok(p) = parse(src) else { panic!() };
    let StmtKind::Def(f) = &p.body[0].kind else {
        panic!()
    };
    assert_eq!(text_of(src, f.span), src);
    assert_eq!(text_of(src, f.params[1].span), "b=2");
}

/// (source, message, span text or position, incomplete)
#[test]
fn syntax_errors() {
    let cases: &[(&str, &str, (usize, usize), bool)] = &[
        ("if x\n    y", "expected ':'", (4, 5), false),
        ("if x:\n", "expected an indented block after 'if' statement on line 1", (6, 6), true),
        ("if x:", "expected an indented block after 'if' statement on line 1", (5, 5), true),
        ("if x:\ny", "expected an indented block after 'if' statement on line 1", (6, 7), false),
        (
            "x = 1\ndef f():\n",
            "expected an indented block after function definition on line 2",
            (15, 15),
            true,
        ),
        (
            "for i in x:\n    pass\nelse:\n",
            "expected an indented block after 'else' statement on line 3",
            (27, 27),
            true,
        ),
        (
            "try:\n    x\nexcept E:\n",
            "expected an indented block after 'except' statement on line 3",
            (21, 21),
            true,
        ),
        ("try:\n    x\n", "expected 'except' or 'finally' block", (11, 11), true),
        ("x = 1\n    y = 2", "unexpected indent", (10, 11), false),
        (
            "if x:\n        a\n    b",
            "unindent does not match any outer indentation level",
            (16, 20),
            false,
        ),
        ("f(a b)", "invalid syntax. Perhaps you forgot a comma?", (2, 5), false),
        // CPython's errors for a yield that would belong to a comprehension's own scope.
        ("def g():\n    [(yield) for x in y]", "'yield' inside list comprehension", (15, 20), false),
        ("def g():\n    {k: (yield) for k in y}", "'yield' inside dict comprehension", (18, 23), false),
        ("def g():\n    [x for x in y if (yield)]", "'yield' inside list comprehension", (31, 36), false),
        ("def g():\n    f((yield) for x in y)", "'yield' inside generator expression", (16, 21), false),
        ("def g():\n    return lambda: (yield)", "'yield' inside a lambda is not supported in devarray; write a def with the yield", (29, 34), false),
        ("[1, 2 3]", "invalid syntax. Perhaps you forgot a comma?", (4, 7), false),
        ("x = (1,\n", "'(' was never closed", (4, 5), true),
        ("foo(a, [1,\n 2", "'[' was never closed", (7, 8), true),
        ("s = 'abc", "unterminated string literal (detected at line 1)", (4, 8), false),
        (
            "s = '''abc\n",
            "unterminated triple-quoted string literal (detected at line 2)",
            (4, 7),
            true,
        ),
        ("x = 1 + \\", "unexpected EOF while parsing", (8, 9), true),
        ("x = 1 + \\\n", "unexpected EOF while parsing", (8, 9), true),
        (
            "f() = 1",
            "cannot assign to function call here. Maybe you meant '==' instead of '='?",
            (0, 3),
            false,
        ),
        (
            "1 = x",
            "cannot assign to literal here. Maybe you meant '==' instead of '='?",
            (0, 1),
            false,
        ),
        (
            "a + b = c",
            "cannot assign to expression here. Maybe you meant '==' instead of '='?",
            (0, 5),
            false,
        ),
        ("a, f() = 1, 2", "cannot assign to function call", (3, 6), false),
        ("True = 1", "cannot assign to True", (0, 4), false),
        ("for f() in x: pass", "cannot assign to function call", (4, 7), false),
        ("del f()", "cannot delete function call", (4, 7), false),
        (
            "f() += 1",
            "'function call' is an illegal expression for augmented assignment",
            (0, 3),
            false,
        ),
        (
            "a, b += 1",
            "'tuple' is an illegal expression for augmented assignment",
            (0, 4),
            false,
        ),
        ("x = 5 €", "invalid character '€' (U+20AC)", (6, 9), false),
        ("x = )", "unmatched ')'", (4, 5), false),
        (
            "x = (1]",
            "closing parenthesis ']' does not match opening parenthesis '('",
            (6, 7),
            false,
        ),
        ("x = ", "invalid syntax", (4, 4), false),
        ("a b", "invalid syntax", (2, 3), false),
        (
            "x = 012",
            "leading zeros in decimal integer literals are not permitted; use an 0o prefix for octal integers",
            (4, 7),
            false,
        ),
        ("x = 1abc", "invalid decimal literal", (4, 8), false),
        ("x = 0x", "invalid hexadecimal literal", (4, 6), false),
        ("x = 0b102", "invalid binary literal", (4, 9), false),
        ("x = 2j", "complex numbers are not supported", (4, 6), false),
        ("s = b'é'", "bytes can only contain ASCII literal characters", (4, 9), false),
        ("b'a' 'b'", "cannot mix bytes and nonbytes literals", (0, 8), false),
        ("b'\\x4'", "(value error) invalid \\x escape at position 0", (2, 5), false),
        ("x = {1: 2, 3}", "expected ':' after a dict key", (12, 13), false),
        ("f(x for x in y, 1)", "Generator expression must be parenthesized", (2, 14), false),
        ("f(a=1, b)", "positional argument follows keyword argument", (7, 8), false),
        ("f(a=1, a=2)", "keyword argument repeated: a", (7, 10), false),
        (
            "f(a.b=1)",
            "expression cannot contain assignment, perhaps you meant \"==\"?",
            (2, 6),
            false,
        ),
        ("def f(a=1, b): pass", "non-default argument follows default argument", (11, 12), false),
        ("def f(a, a): pass", "duplicate argument 'a' in function definition", (9, 10), false),
        ("break", "'break' outside loop", (0, 5), false),
        ("return 1", "'return' outside function", (0, 6), false),
        (
            "while x:\n    def f():\n        continue",
            "'continue' not properly in loop",
            (30, 38),
            false,
        ),
        ("x = *a", "can't use starred expression here", (4, 6), false),
        ("*a = 1", "starred assignment target must be in a list or tuple", (0, 2), false),
        ("a, *b, *c = x", "multiple starred expressions in assignment", (7, 9), false),
        ("f'{}'", "f-string: empty expression not allowed", (2, 4), false),
        ("f'{x'", "f-string: expecting '}'", (2, 3), false),
        (
            "f'a}'",
            "f-string: single '}' is not allowed; write '}}' for a literal brace",
            (3, 4),
            false,
        ),
        (
            "f'{x!z}'",
            "f-string: invalid conversion character: expected 's', 'r', or 'a'",
            (4, 6),
            false,
        ),
        ("f'{a b}'", "invalid syntax", (5, 6), false),
        ("print 'x'", "Missing parentheses in call to 'print'. Did you mean print(...)?", (0, 9), false),
        (
            "if x = 1: pass",
            "invalid syntax. Maybe you meant '==' instead of '='?",
            (5, 6),
            false,
        ),
        (
            "else:\n    pass",
            "'else' without a matching 'if' before it at the same indentation",
            (0, 4),
            false,
        ),
        (
            "if x:\n\tif y:\n        z",
            "inconsistent use of tabs and spaces in indentation",
            (13, 21),
            false,
        ),
        ("x = '\\x4'", "truncated \\x escape: expected 2 hex digits after \\x", (5, 8), false),
        ("x.1", "invalid syntax", (1, 3), false),
        ("x = a.", "expected an attribute name after '.'", (6, 6), false),
        ("x = [1,\n2,\n3", "'[' was never closed", (4, 5), true),
        ("def f(x,\n", "'(' was never closed", (5, 6), true),
        ("while True:\n    if x:\n", "expected an indented block after 'if' statement on line 2", (22, 22), true),
        ("x = 1 $", "invalid syntax: '$' is not an operator here", (6, 7), false),
        ("@dec\nx = 1", "expected 'def' or 'class' after a decorator", (5, 6), false),
        ("@dec", "expected 'def' or 'class' after a decorator", (4, 4), true),
        ("x[]", "expected an index or slice inside '[]'", (2, 3), false),
        ("lambda x, x: 1", "duplicate argument 'x' in lambda", (10, 11), false),
        ("except:\n    pass", "'except' without a matching 'try' before it at the same indentation", (0, 6), false),
    ];
    for (src, message, (start, end), incomplete) in cases {
        let (got_message, got_span, got_incomplete) = fail(src);
        assert_eq!(
            (got_message.as_str(), got_span, got_incomplete),
            (*message, Span::new(*start, *end), *incomplete),
            "source: {src:?}"
        );
    }
}

#[test]
fn incomplete_only_when_more_input_helps() {
    for src in [
        "if x:",
        "def f(a,",
        "x = [",
        "s = \"\"\"doc",
        "x = 1 + \\",
        "for i in range(3):\n",
        "with a:\n",
        "try:\n    pass\n",
        "if a:\n    pass\nelse:\n",
        "f(x,\n  y,",
    ] {
        let Err(e) = parse(src) else {
            panic!("{src:?} parsed")
        };
        assert!(e.incomplete, "{src:?}: {}", e.message);
    }
    for src in ["x = ", "if x", "f(a b", "x = 'abc", "1 +"] {
        let Err(e) = parse(src) else {
            panic!("{src:?} parsed")
        };
        assert!(!e.incomplete, "{src:?}: {}", e.message);
    }
}

#[test]
fn input_status_and_indent() {
    assert_eq!(input_status("x = 1"), InputStatus::Complete);
    assert_eq!(input_status("if x:"), InputStatus::Incomplete);
    assert_eq!(input_status("if x:\n    y = 1"), InputStatus::Incomplete);
    assert_eq!(input_status("if x:\n    y = 1\n"), InputStatus::Complete);
    assert_eq!(input_status("%%time\n    x = 1"), InputStatus::Complete);
    assert!(matches!(input_status("x = )"), InputStatus::Invalid(_)));
    assert_eq!(next_indent("if x:"), "    ");
    assert_eq!(next_indent("def f():\n    if y:  # note"), "        ");
    assert_eq!(next_indent("def f():\n    y = 1"), "    ");
    assert_eq!(next_indent("def f():\n    return 1"), "");
    assert_eq!(next_indent("x = 1"), "");
    assert_eq!(next_indent(""), "");
}

/// Runs on a 1.5 MiB stack (less than a default 2 MiB thread) to keep a margin.
#[test]
fn nesting_is_capped_not_overflowed() {
    let worker = std::thread::Builder::new()
        .stack_size(1536 * 1024)
        .spawn(deep_inputs_fail_cleanly);
    let joined = worker.map(|handle| handle.join());
    assert!(matches!(joined, Ok(Ok(()))), "deep nesting test failed");
}

fn deep_inputs_fail_cleanly() {
    for src in [
        "(".repeat(5000),
        format!("x = {}1{}", "(".repeat(150), ")".repeat(150)),
        format!("x = {}1", "-".repeat(5000)),
        format!("x = {}1", "not ".repeat(5000)),
        format!("x = 1{}", " ** 2".repeat(5000)),
        format!("x = {}", "[".repeat(5000)),
        format!("x = {}0", "lambda: ".repeat(5000)),
        format!("x = f'{{{}x{}}}'", "(".repeat(300), ")".repeat(300)),
        format!("x = f'{{{}x{}}}'", "(".repeat(100), ")".repeat(100)),
        format!("x = {}1{}", "f(".repeat(100), ")".repeat(100)),
        format!("x = {}1{}", "a[".repeat(100), "]".repeat(100)),
        format!("x = {}1", "a if b else ".repeat(100)),
        (0..120)
            .map(|depth| format!("{}if x:\n", " ".repeat(depth)))
            .collect::<String>(),
    ] {
        let result = parse(&src);
        let Err(e) = result else {
            panic!("deeply nested input parsed")
        };
        assert!(
            e.message.contains("too") || e.message.contains("never closed"),
            "{}",
            e.message
        );
    }
    // Moderate nesting is fine.
    let src = format!("x = {}1{}", "(".repeat(60), ")".repeat(60));
    assert!(parse(&src).is_ok());
    let long_chain = format!("x = 1{}", " + 1".repeat(2989));
    assert!(parse(&long_chain).is_ok());
    // Past CPython's limit a chain is refused as too deep, and nothing deep is ever built.
    for src in [
        format!("x = 1{}", " + 1".repeat(3000)),
        format!("x = y{}", ".b".repeat(200_000)),
        format!("x = y{}", "[0]".repeat(3000)),
    ] {
        let Err(e) = parse(&src) else {
            panic!("a chain past the limit parsed")
        };
        assert!(e.too_deep, "{}", e.message);
    }
}

#[test]
fn mangled_programs_never_panic() {
    let seeds = [
        "import mxnet as mx\nfrom mxnet import nd, np\nx = nd.ones((2, 3), ctx=mx.gpu(1))\nprint(x[:, 1:3] @ gpu(0))\n",
        "def try_gpu(i=0):  #@save\n    \"\"\"Doc.\"\"\"\n    if num_gpus() >= i + 1:\n        return gpu(i)\n    return cpu()\n",
        "for i, (a, b) in enumerate(zip(xs, ys)):\n    try:\n        y += a ** -2 if b else {k: v for k, v in d}\n    except (E, F) as e:\n        raise\n    finally:\n        del a[0]\n",
        "s = f'{x!r:>{w}} {y=}' r'\\d' '''t\nq'''\n%time z = [i for i in range(10) if i % 2]\n!ls -l\n",
        "with autograd.record():\n\tl = loss(net(X), y)\nl.backward(); trainer.step(10)\nlambda a, *b, **c: (a, b, c)\n",
    ];
    // A small deterministic generator: no extra crates needed.
    let mut state: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    let pieces = [
        "(", ")", "[", "]", "{", "}", ":", "\n", "    ", "\t", "'", "\"", "'''", "\\", "#", "%",
        "!", "f'{", "}", "=", ",", "*", "**", "lambda", "if", "else", "€", "\u{0}", "1e", "0x",
        "@", ".", "...", ";", "not", "in", "is", "\r\n", "é",
    ];
    let mut count = 0;
    for seed in seeds {
        let chars: Vec<char> = seed.chars().collect();
        for _ in 0..400 {
            let mut mutated = chars.clone();
            for _ in 0..(next() % 4 + 1) {
                let at = (next() as usize) % (mutated.len() + 1);
                match next() % 3 {
                    0 if at < mutated.len() => {
                        mutated.remove(at);
                    }
                    1 => {
                        let piece = pieces[(next() as usize) % pieces.len()];
                        for (k, c) in piece.chars().enumerate() {
                            mutated.insert(at + k, c);
                        }
                    }
                    _ => {
                        let cut = (next() as usize) % (mutated.len() + 1);
                        mutated.truncate(cut.max(at.min(mutated.len())));
                    }
                }
            }
            let text: String = mutated.into_iter().collect();
            if let Ok(program) = parse(&text) {
                for stmt in &program.body {
                    check_stmt_spans(&text, stmt);
                }
            }
            let _ = parse_expression(&text);
            let _ = input_status(&text);
            let _ = next_indent(&text);
            let classes = highlight(&text);
            let mut last_end = 0;
            for (span, _) in classes {
                assert!(span.start >= last_end && span.end <= text.len() && span.start < span.end);
                assert!(text.is_char_boundary(span.start) && text.is_char_boundary(span.end));
                last_end = span.end;
            }
            count += 1;
        }
    }
    assert_eq!(count, 2000);
}

#[test]
fn highlight_classifies_tokens() {
    let src = "%time x\nfor i in range(3): print(f'{i}', 0x1F) # done\ns = 'open";
    let got: Vec<(&str, TokenClass)> = highlight(src)
        .into_iter()
        .map(|(span, class)| (text_of(src, span), class))
        .collect();
    use TokenClass::*;
    assert_eq!(
        got,
        vec![
            ("%time x", Magic),
            ("for", Keyword),
            ("i", Name),
            ("in", Keyword),
            ("range", Builtin),
            ("(", Operator),
            ("3", Number),
            (")", Operator),
            (":", Operator),
            ("print", Builtin),
            ("(", Operator),
            ("f'{i}'", String),
            (",", Operator),
            ("0x1F", Number),
            (")", Operator),
            ("# done", Comment),
            ("s", Name),
            ("=", Operator),
            ("'open", Error),
        ]
    );
    let got: Vec<TokenClass> = highlight("x $ 1e-3").into_iter().map(|(_, c)| c).collect();
    assert_eq!(got, vec![Name, Error, Number]);
}

#[test]
fn thousand_lines_parse_quickly() {
    let block = "def f(a, b=2):\n    \"\"\"Doc.\"\"\"\n    for i in range(10):\n        x = [a * i + b for i in range(3) if i] + [f'{a:>4}']\n        if x[0] > 1 and not b: y = {'k': (1, 2)}\n    return x[:, 1:3] @ gpu(0)\n\n";
    let src = block.repeat(1000 / 7 + 1);
    let started = std::time::Instant::now();
    let Ok(p) = parse(&src) else { panic!() };
    let elapsed = started.elapsed();
    assert_eq!(p.body.len(), 1000 / 7 + 1);
    // Generous for an unoptimised build on a loaded machine; the point is "not quadratic".
    eprintln!("parsed {} lines in {elapsed:?}", src.lines().count());
    assert!(elapsed.as_millis() < 500, "took {elapsed:?}");
}

fn check_span(src: &str, span: Span) {
    assert!(
        span.start <= span.end && span.end <= src.len(),
        "{span:?} in {src:?}"
    );
    assert!(src.is_char_boundary(span.start) && src.is_char_boundary(span.end));
}

fn check_stmt_spans(src: &str, stmt: &Stmt) {
    check_span(src, stmt.span);
    let exprs: Vec<&Expr> = match &stmt.kind {
        StmtKind::Expr(e) | StmtKind::Return(Some(e)) | StmtKind::Raise(Some(e)) => vec![e],
        StmtKind::RaiseFrom { exc, cause } => vec![exc, cause],
        StmtKind::Assign { targets, value } => targets.iter().chain([value]).collect(),
        StmtKind::AugAssign { target, value, .. } => vec![target, value],
        StmtKind::For { target, iter, .. } => vec![target, iter],
        StmtKind::While { cond, .. } => vec![cond],
        StmtKind::Del(targets) => targets.iter().collect(),
        StmtKind::Assert { test, msg } => {
            [Some(test), msg.as_ref()].into_iter().flatten().collect()
        }
        StmtKind::If { branches, .. } => branches.iter().map(|(t, _)| t).collect(),
        StmtKind::With { items, .. } => items
            .iter()
            .flat_map(|i| [Some(&i.context), i.target.as_ref()])
            .flatten()
            .collect(),
        StmtKind::Magic { arg_span, .. } => {
            check_span(src, *arg_span);
            vec![]
        }
        _ => vec![],
    };
    for e in exprs {
        check_expr_spans(src, e, stmt.span);
    }
    let bodies: Vec<&Vec<Stmt>> = match &stmt.kind {
        StmtKind::If { branches, orelse } => branches
            .iter()
            .map(|(_, b)| b)
            .chain(orelse.as_ref())
            .collect(),
        StmtKind::While { body, orelse, .. } | StmtKind::For { body, orelse, .. } => {
            [Some(body), orelse.as_ref()]
                .into_iter()
                .flatten()
                .collect()
        }
        StmtKind::With { body, .. } => vec![body],
        StmtKind::Def(f) => vec![&f.body],
        StmtKind::Try {
            body,
            handlers,
            orelse,
            finally,
        } => [Some(body), orelse.as_ref(), finally.as_ref()]
            .into_iter()
            .flatten()
            .chain(handlers.iter().map(|h| &h.body))
            .collect(),
        _ => vec![],
    };
    for body in bodies {
        for inner in body {
            check_stmt_spans(src, inner);
        }
    }
}

/// Every node lies within its parent (f-string pieces within the string).
fn check_expr_spans(src: &str, e: &Expr, parent: Span) {
    check_span(src, e.span);
    assert!(
        e.span.start >= parent.start && e.span.end <= parent.end,
        "{:?} outside {:?} in {src:?}",
        e.span,
        parent
    );
    let mut children: Vec<&Expr> = Vec::new();
    match &e.kind {
        ExprKind::List(items) | ExprKind::Tuple(items) | ExprKind::Set(items) => {
            children.extend(items)
        }
        ExprKind::Dict(pairs) => {
            for (k, v) in pairs {
                children.extend(k.iter());
                children.push(v);
            }
        }
        ExprKind::Attribute {
            value, attr_span, ..
        } => {
            check_span(src, *attr_span);
            children.push(value);
        }
        ExprKind::Subscript { value, index } => children.extend([&**value, &**index]),
        ExprKind::Slice { lower, upper, step } => {
            children.extend([lower, upper, step].into_iter().flatten().map(|b| &**b))
        }
        ExprKind::Call { func, args } => {
            children.push(func);
            for arg in args {
                match arg {
                    Arg::Positional(v) | Arg::Star(v) | Arg::DoubleStar(v) => children.push(v),
                    Arg::Keyword { value, .. } => children.push(value),
                }
            }
        }
        ExprKind::Unary { operand, .. } => children.push(operand),
        ExprKind::Binary { left, right, .. } => children.extend([&**left, &**right]),
        ExprKind::Compare { left, ops } => {
            children.push(left);
            children.extend(ops.iter().map(|(_, v)| v));
        }
        ExprKind::BoolOp { values, .. } => children.extend(values),
        ExprKind::IfExp { test, body, orelse } => children.extend([&**test, &**body, &**orelse]),
        ExprKind::Lambda { body, .. } => children.push(body),
        ExprKind::Starred(v) => children.push(v),
        ExprKind::ListComp { elt, generators } | ExprKind::SetComp { elt, generators } => {
            children.push(elt);
            for g in generators {
                children.extend([&g.target, &g.iter]);
                children.extend(&g.ifs);
            }
        }
        ExprKind::DictComp {
            key,
            value,
            generators,
        } => {
            children.extend([&**key, &**value]);
            for g in generators {
                children.extend([&g.target, &g.iter]);
                children.extend(&g.ifs);
            }
        }
        ExprKind::FString(parts) => {
            let mut stack: Vec<&FStringPart> = parts.iter().collect();
            while let Some(part) = stack.pop() {
                if let FStringPart::Expr { expr, spec, .. } = part {
                    children.push(expr);
                    stack.extend(spec);
                }
            }
        }
        _ => {}
    }
    for child in children {
        check_expr_spans(src, child, e.span);
    }
}
