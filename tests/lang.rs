//! The language core under hostile programs: keys whose `__hash__`/`__eq__` misbehave, local
//! names read before they are bound, hints on huge scopes. Each ends in a Python error (or a
//! value) with the session alive and its variables intact, never a panic.

use devarray::{Session, SessionConfig};

mod common;
use common::{eval_err, eval_ok};

#[test]
fn eq_raising_inside_a_lookup_propagates_and_keeps_the_dict() {
    let mut s = Session::new(SessionConfig::default());
    eval_ok(
        &mut s,
        "class K:\n    def __init__(self, v): self.v = v\n    def __hash__(self): return 1\n    def __eq__(self, o):\n        if self.v == 'boom' or o.v == 'boom': raise ValueError('eq failed')\n        return self.v == o.v\nd = {K(1): 'a', K(2): 'b'}\ns = {K(1), K(2)}\n",
    );
    for code in [
        "d[K('boom')]",
        "K('boom') in d",
        "d[K('boom')] = 1",
        "del d[K('boom')]",
        "d.get(K('boom'))",
        "d.pop(K('boom'))",
        "K('boom') in s",
        "s.add(K('boom'))",
        "s.discard(K('boom'))",
        "{K('boom'): 1, K(1): 2}",
        "{K(1), K('boom')}",
    ] {
        assert_eq!(
            eval_err(&mut s, code),
            ("ValueError".into(), "eq failed".into()),
            "{code}"
        );
    }
    assert_eq!(
        eval_ok(&mut s, "print(len(d), d[K(2)], len(s), K(1) in s)"),
        "2 b 2 True\n"
    );
}

#[test]
fn eq_that_empties_the_dict_it_is_looked_up_in_does_not_crash() {
    let mut s = Session::new(SessionConfig::default());
    eval_ok(
        &mut s,
        "armed = False\nclass K:\n    def __hash__(self): return 5\n    def __eq__(self, o):\n        if armed:\n            d.clear()\n            st.clear()\n        return False\nd = {K(): 1, K(): 2}\nst = {K(), K()}\narmed = True\n",
    );
    // CPython gives False for both (the lookup goes on over what it read); so does this.
    assert_eq!(
        eval_ok(&mut s, "print(K() in d, K() in st, len(d), len(st))"),
        "False False 0 0\n"
    );
}

#[test]
fn huge_and_odd_hash_results() {
    let mut s = Session::new(SessionConfig::default());
    eval_ok(
        &mut s,
        "class H:\n    def __init__(self, h): self.h = h\n    def __hash__(self): return self.h\n",
    );
    assert_eq!(
        eval_ok(
            &mut s,
            "print(hash(H(9223372036854775807)), hash(H(-9223372036854775807 - 1)), hash(H(-1)), len({H(0), H(-1), H(9223372036854775807)}))"
        ),
        "9223372036854775807 -9223372036854775808 -2 3\n"
    );
    for code in ["hash(H('x'))", "{H(None): 1}", "{H(1.0)}"] {
        assert_eq!(
            eval_err(&mut s, code),
            (
                "TypeError".into(),
                "__hash__ method should return an integer".into()
            ),
            "{code}"
        );
    }
    // A __hash__ that raises: its error, the session alive.
    eval_ok(
        &mut s,
        "class R:\n    def __hash__(self): raise KeyError('no hash')\n",
    );
    assert_eq!(
        eval_err(&mut s, "{R(): 1}"),
        ("KeyError".into(), "'no hash'".into())
    );
}

#[test]
fn deeply_nested_tuple_keys_of_objects_are_a_recursion_error() {
    let mut s = Session::new(SessionConfig::default());
    eval_ok(
        &mut s,
        "class H:\n    def __hash__(self): return 3\nt = H()\nfor i in range(100000):\n    t = (t,)\n",
    );
    let (ename, _) = eval_err(&mut s, "{t: 1}");
    assert_eq!(ename, "RecursionError");
    assert_eq!(eval_ok(&mut s, "print(type(t).__name__)"), "tuple\n");
}

#[test]
fn unbound_locals_leave_the_globals_alone() {
    let mut s = Session::new(SessionConfig::default());
    eval_ok(&mut s, "x = 1\ndef f():\n    x += 1\n    return x\n");
    assert_eq!(
        eval_err(&mut s, "f()"),
        (
            "UnboundLocalError".into(),
            "cannot access local variable 'x' where it is not associated with a value".into()
        )
    );
    assert_eq!(eval_ok(&mut s, "print(x)"), "1\n");
}

#[test]
fn hints_over_many_names_stay_quick_and_bounded() {
    let mut s = Session::new(SessionConfig::default());
    // More than 750 globals: CPython searches no such list; the built-ins still answer.
    eval_ok(
        &mut s,
        "for i in range(800):\n    globals()[f'name_{i}'] = i\n",
    );
    assert_eq!(
        eval_err(&mut s, "name_8000"),
        ("NameError".into(), "name 'name_8000' is not defined".into())
    );
    let long = "y".repeat(5000);
    let (ename, evalue) = eval_err(&mut s, &long);
    assert_eq!(ename, "NameError");
    assert_eq!(evalue, format!("name '{long}' is not defined"));
}
