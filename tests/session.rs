//! Session-level behaviour that transcripts cannot show: interrupts from
//! another thread, and the session surviving every kind of failure.

use std::time::{Duration, Instant};

use devarray::{Session, SessionConfig};

mod common;
use common::eval_ok;

#[test]
fn an_interrupt_stops_a_busy_loop_and_keeps_every_variable() {
    let mut s = Session::new(SessionConfig::default());
    eval_ok(&mut s, "x = ones(2, 3)\nn = 0");
    let handle = s.interrupt_handle();
    let timer = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(200));
        handle.interrupt();
    });
    let start = Instant::now();
    let out = s.eval("while True:\n    n += 1\n");
    timer.join().expect("timer thread");
    let err = out.error.expect("the loop must be interrupted");
    assert_eq!(err.ename, "KeyboardInterrupt");
    assert!(
        start.elapsed() < Duration::from_secs(5),
        "interrupt took {:?}",
        start.elapsed()
    );
    assert_eq!(eval_ok(&mut s, "x.sum()"), "\n[6.]\n<NDArray 1 @cpu(0)>\n");
    assert_eq!(eval_ok(&mut s, "n > 0"), "True\n");
}

#[test]
fn an_interrupt_requested_while_idle_does_not_hit_the_next_statement() {
    let mut s = Session::new(SessionConfig::default());
    s.interrupt_handle().interrupt();
    assert_eq!(eval_ok(&mut s, "1 + 1"), "2\n");
}

#[test]
fn the_session_survives_every_error_class() {
    let mut s = Session::new(SessionConfig {
        sim_gpus: Some(1),
        sim_gpu_memory: Some(64 << 20),
        ..SessionConfig::default()
    });
    eval_ok(&mut s, "keep = array([1, 2, 3])\nk2 = 'still here'");
    let failures = [
        ("1 +", "SyntaxError"),
        ("nope", "NameError"),
        ("1 + 'a'", "TypeError"),
        ("ones(2, 3) + ones(4)", "ShapeError"),
        ("ones(2) + ones(2) @ gpu(0)", "DeviceError"),
        ("ones(2).asscalar()", "ValueError"),
        ("ones(2, ctx=gpu(5))", "DeviceError"),
        ("ones(1 << 40, 1 << 40)", "ValueError"),
        ("ones(64, 1024, 1024, ctx=gpu(0))", "OutOfMemoryError"),
        ("[1][5]", "IndexError"),
        ("{}['k']", "KeyError"),
        ("1 / 0", "ZeroDivisionError"),
        ("import scipy", "ModuleNotFoundError"),
        ("def f():\n    return f()\nf()", "RecursionError"),
    ];
    for (code, ename) in failures {
        let out = s.eval(code);
        let err = out
            .error
            .unwrap_or_else(|| panic!("{code:?} should fail with {ename}"));
        assert_eq!(err.ename, ename, "{code:?}: {}", err.render(false));
        assert_eq!(
            eval_ok(&mut s, "print(keep.sum().asscalar(), k2)"),
            "6.0 still here\n",
            "after {code:?}"
        );
    }
}

#[test]
fn memory_comes_back_when_the_last_reference_goes() {
    let mut s = Session::new(SessionConfig {
        sim_gpus: Some(1),
        sim_gpu_memory: Some(64 << 20),
        ..SessionConfig::default()
    });
    // 40 MiB at a time on a 64 MiB device, 25 times over: only works if memory is returned.
    eval_ok(
        &mut s,
        "for i in range(25):\n    big = ones(10, 1024, 1024, ctx=gpu(0))\n    big = None\n",
    );
}

#[test]
fn a_cpu_budget_refuses_what_does_not_fit_and_keeps_every_variable() {
    let mut s = Session::new(SessionConfig {
        cpu_memory: Some(16 << 20),
        ..SessionConfig::default()
    });
    eval_ok(&mut s, "keep = ones(1024, 1024)\nname = 'still here'");
    let out = s.eval("big = ones(1024, 1024, 4)");
    let err = out.error.expect("16 MiB cannot fit beside 4 MiB in 16 MiB");
    assert_eq!(err.ename, "OutOfMemoryError");
    assert_eq!(
        err.evalue,
        "out of memory on cpu(0): cannot allocate 16 MiB, only 12 MiB of 16 MiB is free. Free arrays you no longer need (del x), use a smaller shape, or raise DEVARRAY_CPU_MEMORY"
    );
    assert_eq!(
        eval_ok(&mut s, "print(keep.sum().asscalar(), name)"),
        "1048576.0 still here\n"
    );
    // Freeing the last reference returns the memory.
    eval_ok(&mut s, "del keep\nbig = ones(1024, 1024, 4)\ndel big");
    // 8 MiB arrays replaced 25 times over: fits only if each is returned when rebound.
    eval_ok(
        &mut s,
        "for i in range(25):\n    t = ones(1024, 1024, 2)\n    t = t * 2\n",
    );
    assert_eq!(eval_ok(&mut s, "t.shape"), "(1024, 1024, 2)\n");
}

#[test]
fn completion_offers_names_and_attributes() {
    let mut s = Session::new(SessionConfig::default());
    eval_ok(&mut s, "import mxnet as mx\nweights = ones(2, 3)");
    let c = s.complete("wei", 3);
    assert_eq!(
        (c.matches.clone(), c.start, c.end),
        (vec!["weights".to_string()], 0, 3)
    );
    let c = s.complete("weights.co", 10);
    assert_eq!(
        c.matches,
        vec!["context", "contiguous", "copy", "copyto", "cos"]
    );
    assert_eq!((c.start, c.end), (8, 10));
    let c = s.complete("x = mx.nd.on", 12);
    assert!(c.matches.contains(&"ones".to_string()), "{:?}", c.matches);
    assert!(
        c.matches.contains(&"ones_like".to_string()),
        "{:?}",
        c.matches
    );
}

#[test]
fn inspect_describes_arrays_and_builtins() {
    let mut s = Session::new(SessionConfig::default());
    eval_ok(&mut s, "w = ones(2, 3)");
    let d = s.inspect("w", 1, 0, false).expect("inspect of an array");
    assert!(
        d.plain
            .starts_with("Type:        NDArray\nString form:\n[[1. 1. 1.]")
            && d.plain
                .contains("\nShape:       (2, 3)\nDtype:       float32\nDevice:      cpu(0)\n"),
        "{}",
        d.plain
    );
    let d = s
        .inspect("try_gpu(1)", 3, 0, false)
        .expect("inspect of a builtin");
    assert!(
        d.plain.contains("gpu(i) if it exists, else cpu()"),
        "{}",
        d.plain
    );
    // A method names its own type, and the callee is inspected inside a call.
    let d = s
        .inspect("w.copyto", 8, 0, false)
        .expect("inspect of a method");
    assert!(d.plain.contains("Type:      method"), "{}", d.plain);
    for (code, cursor) in [("ones(", 5), ("ones(2, 3)", 8), ("w.copyto(", 9)] {
        let d = s.inspect(code, cursor, 0, false).expect(code);
        assert!(d.plain.starts_with("Signature: "), "{code}: {}", d.plain);
    }
    assert!(s.inspect("   ", 1, 0, false).is_none());
}

/// Found by the fuzzer: moving deferred (not yet initialized) parameters
/// panicked with a RefCell double borrow.
#[test]
fn reset_ctx_before_initialize_is_an_error_not_a_panic() {
    let mut s = Session::new(SessionConfig {
        sim_gpus: Some(2),
        ..SessionConfig::default()
    });
    eval_ok(
        &mut s,
        "import mxnet as mx\nfrom mxnet.gluon import nn\nnet = nn.Sequential()\nnet.add(nn.Dense(1))",
    );
    let out = s.eval("net.collect_params().reset_ctx([mx.gpu(0), mx.gpu(1)])");
    let err = out.error.expect("an error");
    assert_eq!(err.ename, "ValueError");
    assert!(
        err.evalue.contains("has not been initialized"),
        "{}",
        err.evalue
    );
}

#[test]
fn a_block_cannot_contain_itself() {
    let mut s = Session::new(SessionConfig::default());
    eval_ok(
        &mut s,
        "from mxnet.gluon import nn\na = nn.Sequential()\nb = nn.Sequential()\na.add(b)",
    );
    for code in ["a.add(a)", "b.add(a)"] {
        let err = s.eval(code).error.expect("an error");
        assert!(
            err.evalue.contains("cannot be added inside itself"),
            "{}",
            err.evalue
        );
    }
    assert_eq!(eval_ok(&mut s, "len(a), len(b)"), "(1, 0)\n");
}

#[test]
fn completion_of_modules_members_and_keyword_arguments() {
    let mut s = Session::new(SessionConfig::default());
    let c = s.complete("import mx", 9);
    assert_eq!((c.matches, c.start), (vec!["mxnet".to_string()], 7));
    let c = s.complete("import mxnet.n", 14);
    assert_eq!(c.matches, vec!["nd", "ndarray", "np", "npx", "numpy"]);
    let c = s.complete("from mxnet import n", 19);
    assert_eq!(
        c.matches,
        vec!["nd", "ndarray", "np", "npx", "num_gpus", "numpy"]
    );
    let c = s.complete("from mxnet import ", 18);
    assert!(c.matches.contains(&"gluon".to_string()), "{:?}", c.matches);
    let c = s.complete("ones(2, d", 9);
    assert_eq!(
        c.matches.first().map(String::as_str),
        Some("dtype="),
        "{:?}",
        c.matches
    );
    let c = s.complete("print(1, ", 9);
    assert!(
        c.matches
            .starts_with(&["end=".to_string(), "file=".to_string(), "sep=".to_string()]),
        "{:?}",
        c.matches
    );
}

#[test]
fn question_mark_prints_help_and_unknown_names_say_so() {
    let mut s = Session::new(SessionConfig::default());
    let out = eval_ok(&mut s, "ones?");
    assert!(out.starts_with("Signature: ones("), "{out}");
    assert_eq!(eval_ok(&mut s, "nope?"), "Object `nope` not found.\n");
    eval_ok(
        &mut s,
        "def f(a, b=2):\n    \"\"\"Add.\"\"\"\n    return a + b\n",
    );
    let out = eval_ok(&mut s, "f??");
    assert!(out.contains("Source:   \ndef f(a, b=2):\n"), "{out}");
}

/// Ctrl-C while a generator's body runs (on its own stack) stops it with KeyboardInterrupt,
/// and the session, its variables and its other generators carry on.
#[test]
fn an_interrupt_inside_a_generator_keeps_the_session() {
    let mut s = Session::new(SessionConfig::default());
    eval_ok(
        &mut s,
        "def spin():\n    n = 0\n    while True:\n        n += 1\n        if n % 1000000 == -1:\n            yield n\n\ndef count():\n    i = 0\n    while True:\n        yield i\n        i += 1\n\nc = count()\nfirst = next(c)",
    );
    let handle = s.interrupt_handle();
    let timer = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(200));
        handle.interrupt();
    });
    let out = s.eval("for v in spin():\n    pass\n");
    timer.join().expect("timer thread");
    assert_eq!(out.error.expect("interrupted").ename, "KeyboardInterrupt");
    assert_eq!(eval_ok(&mut s, "first, next(c), next(c)"), "(0, 1, 2)\n");
    // `list()` drains a generator in one resume: Ctrl-C still reaches it.
    let handle = s.interrupt_handle();
    let timer = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(200));
        handle.interrupt();
    });
    let out = s.eval("list(x for x in spin())");
    timer.join().expect("timer thread");
    assert_eq!(out.error.expect("interrupted").ename, "KeyboardInterrupt");
    assert_eq!(eval_ok(&mut s, "next(c)"), "3\n");
}

/// A generator made in one eval is resumed in later ones (another interpreter, another output
/// sink), and suspended generators (inside `with`, `try`, deep recursion, nested `yield from`)
/// are freed with the session without running their bodies or crashing.
#[test]
fn suspended_generators_cross_evals_and_drop_cleanly() {
    for _ in 0..3 {
        let mut s = Session::new(SessionConfig::default());
        eval_ok(
            &mut s,
            "class CM:\n    def __enter__(self):\n        return self\n    def __exit__(self, *a):\n        print('exit')\n\ndef held():\n    with CM():\n        try:\n            yield 'in with'\n        finally:\n            print('finally')\n\ndef down(n):\n    if n == 0:\n        yield 'bottom'\n    else:\n        yield from down(n - 1)\n\ndef rec(n):\n    return n if n == 0 else rec(n - 1)\n\ndef deep():\n    x = rec(500)\n    yield x\n\nh = held()\nd = down(200)\nr = deep()",
        );
        assert_eq!(eval_ok(&mut s, "next(h)"), "'in with'\n");
        assert_eq!(eval_ok(&mut s, "print(next(d))"), "bottom\n");
        assert_eq!(eval_ok(&mut s, "next(r)"), "0\n");
        eval_ok(
            &mut s,
            "many = [(x for x in range(3)) for _ in range(500)]\nfor g in many:\n    next(g)\n",
        );
        drop(s);
    }
}
