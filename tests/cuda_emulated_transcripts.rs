//! The golden transcripts that use simulated GPUs, run again with `gpu(0)`/`gpu(1)` as two
//! emulated CUDA cards (tests/cuda_emu: the real backend, the real NVRTC output, interpreted).
//! The output must be the simulated GPUs' output, except:
//! - lines whose values come from random arrays (cuRAND's sequence is not MXNet's CPU one):
//!   listed in `tests/cuda/random_lines.txt`, and there only the numbers may differ;
//! - the last digits of floats (CUDA's summation order and math library), within 1e-5.
//!
//! `devices/errors_and_ledger.txt` is left out: it streams hundreds of millions of elements
//! through kernels, minutes in the interpreter. Its out-of-memory and ledger behaviour is
//! checked on the emulator by `out_of_memory_and_the_ledger_on_emulated_cards` below.
//! `robust/trainer_step_oom.txt` is left out too: it fills a 4 MiB simulated GPU, and its
//! out-of-memory message names the simulated GPUs' setting (`DEVARRAY_SIM_GPU_MEMORY`) and their
//! byte-exact free space, which a CUDA card's allocator reports differently; so does
//! `files/memory.txt` (a load that does not fit in 4 MiB). `devices/memory_info.txt` prints the
//! simulated GPUs' 4 GiB and their byte-exact use; an emulated card has its own size.
#[path = "cuda/emu.rs"]
mod emu;

use std::path::Path;
use std::process::{Command, Stdio};

/// (file, first line, last line) of output that shows random samples (1-based, inclusive),
/// from `tests/cuda/random_lines.txt` (shared with the GPU kit, tests/gpu/kit.py).
fn random_lines() -> Vec<(&'static str, usize, usize)> {
    include_str!("cuda/random_lines.txt")
        .lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .map(|l| {
            let fields: Vec<&str> = l.split_whitespace().collect();
            let number = |i: usize| fields.get(i).and_then(|f| f.parse().ok());
            match (fields.first(), number(1), number(2)) {
                (Some(file), Some(first), Some(last)) => (*file, first, last),
                _ => panic!("tests/cuda/random_lines.txt: `{l}` is not FILE FIRST LAST"),
            }
        })
        .collect()
}

const SKIPPED: &[&str] = &[
    "devices/errors_and_ledger.txt",
    "robust/trainer_step_oom.txt",
    "files/memory.txt",
    "devices/memory_info.txt",
];

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// Runs a transcript through devarray with `cards` emulated GPUs; returns stdout.
fn run(emulator: &emu::Emulator, input: &str, env: &[(String, String)], cards: usize) -> String {
    let mut command = Command::new(env!("CARGO_BIN_EXE_devarray"));
    command
        .arg("--transcript")
        .env("NO_COLOR", "1")
        .env_remove("DEVARRAY_SIM_GPU_MEMORY")
        .env_remove("DEVARRAY_DETERMINISTIC")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    emulator.configure(&mut command, cards);
    for (k, v) in env {
        command.env(k, v);
    }
    let mut child = command.spawn().expect("run devarray");
    {
        use std::io::Write;
        let mut stdin = child.stdin.take().expect("stdin");
        stdin
            .write_all(input.as_bytes())
            .expect("write the transcript");
    }
    let output = child.wait_with_output().expect("devarray output");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success() && stderr.is_empty(),
        "devarray failed: {}\n{stderr}",
        output.status
    );
    String::from_utf8(output.stdout).expect("UTF-8 output")
}

/// The `# env:` header as the emulated run needs it: simulated GPUs become emulated cards.
fn emulated_env(input: &str) -> (Vec<(String, String)>, usize) {
    let mut env = Vec::new();
    let mut cards = 0;
    for line in input.lines().take_while(|l| l.starts_with('#')) {
        for assignment in line.strip_prefix("# env:").unwrap_or("").split_whitespace() {
            let Some((name, value)) = assignment.split_once('=') else {
                continue;
            };
            match name {
                "DEVARRAY_SIM_GPUS" => cards = value.parse().unwrap_or(0),
                "DEVARRAY_SIM_GPU_MEMORY" => env.push(("CUDA_EMU_MEMORY".into(), value.into())),
                _ => env.push((name.into(), value.into())),
            }
        }
    }
    (env, cards)
}

fn numbers(line: &str) -> (String, Vec<f64>) {
    let mut skeleton = String::new();
    let mut values = Vec::new();
    let mut token = String::new();
    let flush = |token: &mut String, skeleton: &mut String, values: &mut Vec<f64>| {
        if let Ok(v) = token.parse::<f64>() {
            values.push(v);
            skeleton.push('#');
        } else {
            skeleton.push_str(token);
        }
        token.clear();
    };
    for c in line.chars() {
        if c.is_ascii_digit() || matches!(c, '.' | '-' | 'e' | '+') {
            token.push(c);
        } else {
            flush(&mut token, &mut skeleton, &mut values);
            if !c.is_whitespace() {
                skeleton.push(c);
            }
        }
    }
    flush(&mut token, &mut skeleton, &mut values);
    (skeleton, values)
}

fn compare(name: &str, expected: &str, actual: &str) -> Result<(), String> {
    // As the transcript harness (snapbox) reads them: a carriage return ends a line
    // (`clear_output` writes `ESC[2K\r`).
    let (expected, actual) = (
        expected.replace("\r\n", "\n").replace('\r', "\n"),
        actual.replace("\r\n", "\n").replace('\r', "\n"),
    );
    let (want, got): (Vec<&str>, Vec<&str>) =
        (expected.lines().collect(), actual.lines().collect());
    if want.len() != got.len() {
        return Err(format!(
            "{name}: {} lines expected, {} printed:\n{actual}",
            want.len(),
            got.len()
        ));
    }
    for (i, (w, g)) in want.iter().zip(&got).enumerate() {
        if w == g {
            continue;
        }
        let (ws, wv) = numbers(w);
        let (gs, gv) = numbers(g);
        let random = random_lines()
            .iter()
            .any(|(f, a, b)| *f == name && (*a..=*b).contains(&(i + 1)));
        let close = ws == gs
            && wv.len() == gv.len()
            && wv
                .iter()
                .zip(&gv)
                .all(|(a, b)| (a - b).abs() <= 1e-5 * a.abs().max(1.0));
        if !(close || (random && ws == gs)) {
            return Err(format!("{name}:{}: expected\n{w}\nprinted\n{g}", i + 1));
        }
    }
    Ok(())
}

#[test]
fn sim_gpu_transcripts_on_emulated_cuda_cards() {
    let Some(emulator) = emu::emulator() else {
        return;
    };
    let dir = root().join("tests/transcripts");
    let mut files = Vec::new();
    for sub in std::fs::read_dir(&dir).expect("transcripts").flatten() {
        for file in std::fs::read_dir(sub.path())
            .into_iter()
            .flatten()
            .flatten()
        {
            // Transcripts only: a folder beside them holds the programs some of them name.
            let path = file.path();
            if path.extension().is_some_and(|e| e == "txt") {
                files.push(path);
            }
        }
    }
    files.sort();
    let mut cases = Vec::new();
    for path in files {
        let name = path
            .strip_prefix(&dir)
            .expect("inside")
            .display()
            .to_string();
        let input = std::fs::read_to_string(&path).expect("read");
        let (env, cards) = emulated_env(&input);
        if cards > 0 && !SKIPPED.contains(&name.as_str()) {
            cases.push((name, input, env, cards));
        }
    }
    // The files are independent processes: a few at a time.
    let workers = std::thread::available_parallelism().map_or(2, |n| n.get().clamp(2, 4));
    let next = std::sync::atomic::AtomicUsize::new(0);
    let failures = std::sync::Mutex::new(Vec::new());
    std::thread::scope(|scope| {
        for _ in 0..workers {
            scope.spawn(|| loop {
                let i = next.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                let Some((name, input, env, cards)) = cases.get(i) else {
                    break;
                };
                let output = run(emulator, input, env, *cards);
                if let Err(e) = compare(name, input, &output) {
                    failures.lock().unwrap_or_else(|e| e.into_inner()).push(e);
                }
            });
        }
    });
    let ran = cases.len();
    let failures = failures.into_inner().unwrap_or_else(|e| e.into_inner());
    assert!(ran >= 10, "only {ran} transcripts use simulated GPUs");
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

/// Out-of-memory on a small emulated card, the card's memory given back, and the transfer
/// ledger counting host-device and peer copies.
#[test]
fn out_of_memory_and_the_ledger_on_emulated_cards() {
    let Some(emulator) = emu::emulator() else {
        return;
    };
    let input = "\
>>> a = zeros(1024, 1024, 8) @ gpu(0)
>>> b = zeros(1024, 1024, 4) @ gpu(0)
>>> del a
>>> b = zeros(1024, 1024, 4) @ gpu(0)
>>> x = ones(2, 3).copyto(gpu(0))
>>> y = x.copyto(gpu(1))
>>> (y * 2).asnumpy()
>>> %transfers
";
    let env = [("CUDA_EMU_MEMORY".to_string(), "40M".to_string())];
    let output = run(emulator, input, &env, 2);
    assert!(
        output.contains("OutOfMemoryError: out of memory on gpu(0): cannot allocate 16 MiB, only 8 MiB of 40 MiB is free"),
        "{output}"
    );
    assert!(output.contains("array([[2., 2., 2.],"), "{output}");
    for row in [
        "| cpu(0) | gpu(0) |",
        "| gpu(0) | gpu(1) |",
        "| gpu(1) | cpu(0) |",
    ] {
        assert!(
            output.contains(row),
            "{row} missing from the ledger:\n{output}"
        );
    }
}

/// The paths `bench/gpu_bench.py` times, at sizes an interpreter can run: cuBLAS GEMM (checked
/// against the CPU), a fused elementwise kernel, a card-local copy, a host-to-card copy of more
/// than one 16 MiB staging piece read back, and the per-op latency add. Timings mean nothing
/// here; the values must be right.
#[test]
fn gpu_bench_paths_on_an_emulated_card() {
    let Some(emulator) = emu::emulator() else {
        return;
    };
    let input = std::fs::read_to_string(root().join("tests/cuda/gpu_bench_paths.txt"))
        .expect("tests/cuda/gpu_bench_paths.txt");
    let output = run(emulator, &input, &[], 2);
    for expected in [
        ">>> (c.copyto(cpu(0)) - d).abs().max() < 1e-4\n\n[1.]\n",
        ">>> v.sum()\n\n[100000.]\n",
        // NumPy's full reduction is a scalar.
        ">>> g.asnumpy().sum()\n5000000.0\n",
        ">>> p + q\n\n[2. 2. 2.]\n<NDArray 3 @gpu(1)>\n",
    ] {
        assert!(
            output.contains(expected),
            "missing {expected:?} in\n{output}"
        );
    }
    // exp(3) = 20.0855..., summed in float32 over 1e5 elements.
    let mean = output
        .split(">>> w.sum() / 100000\n\n[")
        .nth(1)
        .and_then(|rest| rest.split(']').next())
        .and_then(|v| v.parse::<f64>().ok())
        .unwrap_or_else(|| panic!("no mean in\n{output}"));
    assert!((mean - 3f64.exp()).abs() < 1e-3, "{mean}");
}
