//! A suspended generator dropped with an error in its `finally` (or one that yields again when
//! closed) is reported on stderr as CPython reports it, and the program goes on. The address
//! in the report changes from run to run, which a transcript cannot hold.
use crate::eval::session::{Output, Session, SessionConfig};

/// stdout and stderr as one text, the report's address replaced by `0x…`.
fn run(code: &str) -> String {
    let mut session = Session::new(SessionConfig::default());
    let out = session.eval(code);
    assert!(out.error.is_none(), "{:?}", out.error);
    let mut text = String::new();
    for o in out.outputs {
        if let Output::Stdout(s) | Output::Stderr(s) = o {
            text.push_str(&s);
        }
    }
    let mut shown = String::new();
    let mut rest = text.as_str();
    while let Some(i) = rest.find(" at 0x") {
        shown.push_str(&rest[..i + 6]);
        shown.push('…');
        rest = rest[i + 6..].trim_start_matches(|c: char| c.is_ascii_hexdigit());
    }
    shown.push_str(rest);
    shown
}

#[test]
fn an_error_in_a_dropped_generators_finally_is_reported_and_ignored() {
    let text = run(
        "def bad():\n    try:\n        yield 1\n    finally:\n        \
         raise ValueError('in finally')\n\nb = bad(); next(b); b = None; print('goes on')\n",
    );
    assert_eq!(
        text,
        "Exception ignored in: <generator object bad at 0x…>\n  line 5, in bad\n    \
         raise ValueError('in finally')\n    ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^\n\
         ValueError: in finally\ngoes on\n"
    );
}

#[test]
fn a_dropped_generator_that_yields_again_is_reported_at_the_statement_that_dropped_it() {
    let text = run(
        "def stubborn():\n    while True:\n        try:\n            yield 1\n        \
         except GeneratorExit:\n            print('ignoring')\n\ns = stubborn(); next(s)\n\
         del s\nprint('goes on')\n",
    );
    assert_eq!(
        text,
        "ignoring\nException ignored in: <generator object stubborn at 0x…>\n  \
         line 9, in <module>\n    del s\n    ^^^^^\n\
         RuntimeError: generator ignored GeneratorExit\ngoes on\n"
    );
}

#[test]
fn a_generator_its_function_held_is_reported_at_the_callers_statement() {
    // CPython clears the frame as it returns: the report names the caller's line.
    let text = run(
        "def ignoring():\n    try:\n        yield 1\n    except GeneratorExit:\n        \
         yield 2\n\ndef holds():\n    g = ignoring()\n    next(g)\n    print('returning')\n\n\
         holds()\nprint('goes on')\n",
    );
    assert_eq!(
        text,
        "returning\nException ignored in: <generator object ignoring at 0x…>\n  \
         line 12, in <module>\n    holds()\n    ^^^^^^^\n\
         RuntimeError: generator ignored GeneratorExit\ngoes on\n"
    );
}

#[test]
fn a_session_that_ends_closes_the_generators_its_variables_held() {
    let mut session = Session::new(SessionConfig::default());
    let out = session.eval(
        "def gen():\n    try:\n        yield 1\n    finally:\n        print('finally')\n\n\
         g = gen(); next(g); print('end')\n",
    );
    assert!(out.error.is_none());
    let mut outputs = Vec::new();
    session.shutdown(&mut outputs);
    let text: String = outputs
        .iter()
        .filter_map(|o| match o {
            Output::Stdout(s) => Some(s.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(text, "finally\n");
}
