//! The fuzz target without libFuzzer or nightly (its instrumented release build takes over an
//! hour on two cores): runs inputs through `Session::eval` with the same session settings as
//! fuzz/fuzz_targets/eval.rs (memory budgets, address-space limit, a watchdog that interrupts
//! after 1 s), first each file of the given corpus folders, then random mutations of them
//! (lines spliced, dropped, repeated, names and numbers replaced by edge values, runs of one
//! character, cut short) until the time is up. It writes each input to `$CUR` before running
//! it, so a crash leaves its input behind; run it under gdb for the backtrace:
//! `SEED=1 CUR=/tmp/cur.da gdb -batch -ex run -ex bt --args
//! target/debug/examples/fuzz_replay 600 fuzz/seeds` (seconds, then corpus folders).
use std::time::{Duration, Instant};

use devarray::{Session, SessionConfig};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let secs: u64 = args[0].parse().unwrap();
    let cur = std::env::var("CUR").unwrap_or("/tmp/robust/cur.da".into());
    let mut files = Vec::new();
    for dir in &args[1..] {
        for e in std::fs::read_dir(dir).unwrap() {
            let p = e.unwrap().path();
            if let Ok(t) = std::fs::read_to_string(&p) {
                files.push(t);
            }
        }
    }
    files.sort();
    let limit = libc::rlimit {
        rlim_cur: 4 << 30,
        rlim_max: 4 << 30,
    };
    unsafe { libc::setrlimit(libc::RLIMIT_AS, &limit) };
    let mut s = Session::new(SessionConfig {
        sim_gpus: Some(2),
        sim_gpu_memory: Some(16 << 20),
        cpu_memory: Some(64 << 20),
        ..SessionConfig::default()
    });
    let handle = s.interrupt_handle();
    let deadline = std::sync::Arc::new(std::sync::Mutex::new(None::<Instant>));
    let d2 = deadline.clone();
    std::thread::spawn(move || loop {
        std::thread::sleep(Duration::from_millis(20));
        if let Some(d) = *d2.lock().unwrap() {
            if Instant::now() > d {
                handle.interrupt();
            }
        }
    });
    let seed: u64 = std::env::var("SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1);
    let mut rng = seed.wrapping_mul(0x9E3779B97F4A7C15) | 1;
    let mut next = move || {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        rng
    };
    let start = Instant::now();
    let mut n = 0u64;
    let specials = [
        "0",
        "-1",
        "10**12",
        "2**63",
        "1e308",
        "-10**18",
        "None",
        "[]",
        "()",
        "''",
        "1.5",
        "nan",
        "float('inf')",
        "True",
        "x",
        "np.arange(0)",
        "np.ones((2,3))",
        "(3, 0)",
        "-0.0",
        "10**10",
    ];
    let run_one = |s: &mut Session, code: &str, n: &mut u64| {
        if code.contains("save") || code.lines().any(|l| l.trim_start().starts_with(['!', '%'])) {
            return;
        }
        std::fs::write(&cur, code).unwrap();
        *deadline.lock().unwrap() = Some(Instant::now() + Duration::from_secs(1));
        let _ = s.eval(code);
        *deadline.lock().unwrap() = None;
        let _ = s.complete(code, code.len() / 2);
        let _ = s.inspect(code, code.len() / 2, 0, false);
        let _ = s.is_complete(code);
        *n += 1;
    };
    for f in &files {
        run_one(&mut s, f, &mut n);
    }
    eprintln!("replayed {} files", n);
    while start.elapsed().as_secs() < secs {
        let base = &files[(next() as usize) % files.len()];
        let mut lines: Vec<String> = base.lines().map(str::to_string).collect();
        for _ in 0..1 + next() % 4 {
            if lines.is_empty() {
                lines.push(String::new());
            }
            let i = (next() as usize) % lines.len();
            match next() % 10 {
                7 => {
                    // libFuzzer's InsertRepeatedBytes: a run of one character.
                    let set = b"([{-+*~@'\"\\ x0.:,=";
                    let c = set[(next() as usize) % set.len()] as char;
                    let n = 1 + (next() as usize) % 2000;
                    let l = &lines[i];
                    let at = l
                        .char_indices()
                        .map(|(k, _)| k)
                        .nth((next() as usize) % (l.chars().count() + 1))
                        .unwrap_or(l.len());
                    lines[i] = format!("{}{}{}", &l[..at], c.to_string().repeat(n), &l[at..]);
                }
                8 => {
                    // A line repeated, indented deeper each time.
                    let l = lines[i].clone();
                    let n = 1 + (next() as usize) % 200;
                    for k in 0..n {
                        lines.insert(i, format!("{}{}", " ".repeat(k), l.trim_start()));
                    }
                }
                9 => {
                    // Cut the program short, mid-line.
                    let l = &lines[i];
                    let at = l
                        .char_indices()
                        .map(|(k, _)| k)
                        .nth((next() as usize) % (l.chars().count() + 1))
                        .unwrap_or(l.len());
                    lines[i] = l[..at].to_string();
                    lines.truncate(i + 1);
                }
                0 => {
                    let other: Vec<&str> = files[(next() as usize) % files.len()].lines().collect();
                    if !other.is_empty() {
                        let l = other[(next() as usize) % other.len()].to_string();
                        lines.insert(i, l);
                    }
                }
                1 => {
                    lines.remove(i);
                }
                2 => {
                    let l = lines[i].clone();
                    lines.insert(i, l);
                }
                3 | 4 => {
                    // replace a number or a name by a special value
                    let l = &lines[i];
                    let b: Vec<(usize, char)> = l.char_indices().collect();
                    let starts: Vec<usize> = b
                        .iter()
                        .enumerate()
                        .filter(|(k, (_, c))| {
                            (c.is_ascii_alphanumeric())
                                && (*k == 0 || !b[k - 1].1.is_ascii_alphanumeric())
                        })
                        .map(|(k, _)| k)
                        .collect();
                    if !starts.is_empty() {
                        let k = starts[(next() as usize) % starts.len()];
                        let mut e = k;
                        while e < b.len() && (b[e].1.is_ascii_alphanumeric() || b[e].1 == '_') {
                            e += 1;
                        }
                        let from = b[k].0;
                        let to = if e < b.len() { b[e].0 } else { l.len() };
                        let sp = specials[(next() as usize) % specials.len()];
                        lines[i] = format!("{}{}{}", &l[..from], sp, &l[to..]);
                    }
                }
                5 => {
                    let l = &lines[i];
                    if !l.is_empty() {
                        let mut bytes = l.clone().into_bytes();
                        let j = (next() as usize) % bytes.len();
                        let set = b"()[]{},:.=*+-/%'\"\\ #0123456789\tabcxyz@<>";
                        bytes[j] = set[(next() as usize) % set.len()];
                        lines[i] = String::from_utf8(bytes).unwrap_or_default();
                    }
                }
                _ => {
                    let j = (next() as usize) % lines.len();
                    lines.swap(i, j);
                }
            }
        }
        let code = lines.join("\n");
        run_one(&mut s, &code, &mut n);
        if n % 1000 == 0 {
            eprintln!("#{} {:?}", n, start.elapsed());
        }
    }
    eprintln!("done: {} inputs in {:?}", n, start.elapsed());
}
