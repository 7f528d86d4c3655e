//! The `match` statement and `:=` on hostile input: deep patterns, huge subjects, a wrong
//! `__match_args__`, a guard that raises. Each ends in a value or CPython's error, never a
//! crash, and the session's variables stay as CPython leaves them.

use devarray::{Session, SessionConfig};

mod common;
use common::{assert_no_prefix_is_invalid, eval_err, eval_ok, on_small_stack};

#[test]
fn deep_patterns_are_refused_or_matched_without_crashing() {
    on_small_stack(|| {
        let mut s = Session::new(SessionConfig::default());
        eval_ok(&mut s, "keep = 1");
        for depth in [25, 50, 5_000, 100_000] {
            let pattern = format!("{}x{}", "[".repeat(depth), "]".repeat(depth));
            eval_ok(
                &mut s,
                &format!("v = 7\nfor i in range({depth}):\n    v = [v]"),
            );
            let code = format!("match v:\n    case {pattern}:\n        print(x)\n");
            let out = s.eval(&code);
            match &out.error {
                None => assert_eq!(out.text(), "7\n"),
                Some(e) => assert!(
                    e.evalue.contains("too deeply nested")
                        || e.evalue.contains("maximum recursion depth"),
                    "{depth}: {}",
                    e.evalue
                ),
            }
            let alternatives = format!(
                "match 3:\n    case {}:\n        print('hit')\n",
                ["1", "2", "3"].repeat(depth / 3 + 1).join(" | ")
            );
            let out = s.eval(&alternatives);
            assert!(out.error.is_none(), "{depth}");
        }
        assert_eq!(eval_ok(&mut s, "print(keep)"), "1\n");
    });
}

#[test]
fn huge_subjects_are_matched_by_length_first() {
    let mut s = Session::new(SessionConfig::default());
    let code = "match range(10**12):\n    case [a, b]:\n        r = 'two'\n    case []:\n        r = 'empty'\n    case _:\n        r = 'other'\nprint(r)";
    assert_eq!(eval_ok(&mut s, code), "other\n");
    let code = "match [0] * 1000000 + [5]:\n    case [0, *middle, last]:\n        print(len(middle), last)";
    assert_eq!(eval_ok(&mut s, code), "999999 5\n");
    let code = "match 'abc':\n    case [a, b, c]:\n        print('sequence')\n    case str():\n        print('str')";
    assert_eq!(eval_ok(&mut s, code), "str\n");
}

#[test]
fn a_wrong_match_args_is_a_type_error() {
    let mut s = Session::new(SessionConfig::default());
    eval_ok(&mut s, "class P:\n    a = 1\np = P()\nkeep = 2");
    let cases = [
        (
            "P.__match_args__ = ['a']",
            "P.__match_args__ must be a tuple (got list)",
        ),
        (
            "P.__match_args__ = (1,)",
            "__match_args__ elements must be strings (got int)",
        ),
        (
            "P.__match_args__ = ()",
            "P() accepts 0 positional sub-patterns (1 given)",
        ),
    ];
    for (setup, message) in cases {
        eval_ok(&mut s, setup);
        assert_eq!(
            eval_err(&mut s, "match p:\n    case P(x):\n        pass"),
            ("TypeError".into(), message.into()),
            "{setup}"
        );
    }
    assert_eq!(
        eval_err(&mut s, "match p:\n    case keep():\n        pass"),
        (
            "TypeError".into(),
            "called match pattern must be a type".into()
        )
    );
    // An attribute lookup that raises something else than AttributeError propagates.
    eval_ok(
        &mut s,
        "class Q:\n    @property\n    def v(self):\n        raise KeyError('v')\n",
    );
    assert_eq!(
        eval_err(&mut s, "match Q():\n    case Q(v=1):\n        pass"),
        ("KeyError".into(), "'v'".into())
    );
    assert_eq!(eval_ok(&mut s, "print(keep)"), "2\n");
}

#[test]
fn a_guard_that_raises_leaves_the_case_names_bound() {
    let mut s = Session::new(SessionConfig::default());
    assert_eq!(
        eval_err(
            &mut s,
            "match (1, 2):\n    case (a, b) if b / 0:\n        pass"
        ),
        ("ZeroDivisionError".into(), "division by zero".into())
    );
    assert_eq!(eval_ok(&mut s, "print(a, b)"), "1 2\n");
    // A pattern that fails half way binds nothing.
    eval_ok(&mut s, "match (5, 6):\n    case (c, 7):\n        pass");
    assert_eq!(
        eval_err(&mut s, "c"),
        ("NameError".into(), "name 'c' is not defined".into())
    );
}

#[test]
fn no_prefix_of_a_match_statement_is_invalid() {
    assert_no_prefix_is_invalid(&[
        "match command.split():\n    case [action]:\n        pass\n    case [action, obj] if obj:\n        match obj:\n            case {'k': v, **rest}:\n                pass\n    case Point(x=0) | Point(y=0) as p:\n        pass\n    case _:\n        pass\n",
        "def f(data):\n    while (chunk := data.read()):\n        match chunk:\n            case b'':\n                break\n",
    ]);
}
