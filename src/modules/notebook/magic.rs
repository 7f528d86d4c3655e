//! IPython-style `%magic` and `!shell` lines, handled inside the session so
//! the REPL and the kernel behave alike.

use std::rc::Rc;
use std::time::Instant;

use crate::runtime::{Device, DeviceKind};

use crate::object::error::{Exc, ExcKind};
use crate::object::format;
use crate::object::value::{Args, NativeObject, Value};
use crate::object::Interpreter;

pub fn run(it: &mut dyn Interpreter, name: &str, arg: &str) -> Result<(), Exc> {
    match name {
        "!" => shell(it, arg)?,
        "time" | "%time" => time(it, arg)?,
        "timeit" | "%timeit" => timeit(it, arg)?,
        "devices" => {
            let table = device_table(it);
            let data = crate::object::DisplayData {
                plain: table.text.clone(),
                html: Some(table.html.clone()),
                ..Default::default()
            };
            it.out().display(&data, false);
        }
        "transfers" => transfers(it, arg)?,
        "timeline" => super::timeline::timeline(it, arg)?,
        "who" => who(it),
        // Notebooks start with it; figures are already shown inline (modules/matplotlib).
        "matplotlib" => {}
        other => {
            return Err(Exc::new(
                ExcKind::NameError,
                format!(
                    "unknown magic %{other}; the magics are %time, %timeit, %devices, %transfers, %timeline and %who (and !cmd for shell commands)"
                ),
            ))
        }
    }
    Ok(())
}

pub use crate::display::timeline::format_duration;

/// Wait for queued device work, so a timing covers the work itself (and not just the time to
/// queue it).
fn synchronize(it: &mut dyn Interpreter) -> Result<(), Exc> {
    it.state_mut().rt.synchronize().map_err(Exc::from)
}

fn time(it: &mut dyn Interpreter, arg: &str) -> Result<(), Exc> {
    if arg.trim().is_empty() {
        return Err(Exc::value_error(
            "%time needs a statement, e.g. %time x = ones(1000, 1000).sum()",
        ));
    }
    synchronize(it)?;
    let start = Instant::now();
    let v = it.run_snippet(arg);
    let synced = synchronize(it);
    let wall = start.elapsed();
    synced?;
    it.out().stdout(&format!(
        "Wall time: {}\n",
        format_duration(wall.as_secs_f64())
    ));
    if let Some(v) = v? {
        if !matches!(v, Value::None) {
            let d = format::display_data(it, &v)?;
            it.out().display(&d, false);
        }
    }
    Ok(())
}

fn timeit(it: &mut dyn Interpreter, arg: &str) -> Result<(), Exc> {
    let mut loops: Option<usize> = None;
    let mut runs = 7usize;
    let mut rest = arg.trim();
    loop {
        let parse_flag = |s: &str, flag: &str| -> Option<(usize, usize)> {
            let t = s.strip_prefix(flag)?;
            let t2 = t.trim_start();
            let end = t2.find(char::is_whitespace).unwrap_or(t2.len());
            let n = t2[..end].parse().ok()?;
            Some((n, s.len() - t2.len() + end))
        };
        if let Some((n, used)) = parse_flag(rest, "-n") {
            loops = Some(n.max(1));
            rest = rest[used..].trim_start();
        } else if let Some((n, used)) = parse_flag(rest, "-r") {
            runs = n.max(1);
            rest = rest[used..].trim_start();
        } else {
            break;
        }
    }
    if rest.is_empty() {
        return Err(Exc::value_error(
            "%timeit needs a statement, e.g. %timeit x + y",
        ));
    }
    let code = rest.to_string();
    let time_loops = |it: &mut dyn Interpreter, n: usize| -> Result<f64, Exc> {
        synchronize(it)?;
        let start = Instant::now();
        for _ in 0..n {
            it.run_snippet(&code)?;
            it.check_interrupt()?;
        }
        synchronize(it)?;
        Ok(start.elapsed().as_secs_f64())
    };
    // Like IPython: grow the loop count until one run takes at least 0.2 s.
    let n = match loops {
        Some(n) => n,
        None => {
            let mut n = 1usize;
            loop {
                let t = time_loops(it, n)?;
                if t >= 0.2 || n >= 10_000_000 {
                    break n;
                }
                n *= 10;
            }
        }
    };
    let mut per_loop = Vec::with_capacity(runs);
    for _ in 0..runs {
        per_loop.push(time_loops(it, n)? / n as f64);
    }
    let mean = per_loop.iter().sum::<f64>() / runs as f64;
    let var = per_loop.iter().map(|t| (t - mean).powi(2)).sum::<f64>() / runs as f64;
    it.out().stdout(&format!(
        "{} ± {} per loop (mean ± std. dev. of {} run{}, {} loop{} each)\n",
        format_duration(mean),
        format_duration(var.sqrt()),
        runs,
        if runs == 1 { "" } else { "s" },
        n,
        if n == 1 { "" } else { "s" }
    ));
    Ok(())
}

fn who(it: &mut dyn Interpreter) {
    let mut names: Vec<String> = it
        .state_mut()
        .globals
        .keys()
        .filter(|k| !k.starts_with('_'))
        .map(|k| k.to_string())
        .collect();
    names.sort();
    if names.is_empty() {
        it.out().stdout("Interactive namespace is empty.\n");
    } else {
        it.out().stdout(&format!("{}\n", names.join("\t")));
    }
}

/// Set to hide times in `%transfers` (they differ run to run; transcripts set it).
pub const DETERMINISTIC_VAR: &str = "DEVARRAY_DETERMINISTIC";

pub(super) fn deterministic() -> bool {
    std::env::var(DETERMINISTIC_VAR).is_ok_and(|v| !v.is_empty() && v != "0")
}

/// `%transfers`: the copies between devices since the last `%transfers`, then a reset (like
/// IPython's `%reset`-style magics, it says so). Times are left out when
/// DEVARRAY_DETERMINISTIC is set.
fn transfers(it: &mut dyn Interpreter, arg: &str) -> Result<(), Exc> {
    if !arg.trim().is_empty() {
        return Err(Exc::value_error(format!(
            "%transfers takes no arguments (got {:?}); it shows the copies since the last %transfers and resets the count",
            arg.trim()
        )));
    }
    // Queued copies add their time when they run: wait for them so the table is complete.
    synchronize(it)?;
    let records = it.state_mut().rt.transfers();
    let text = transfers_text(&records, !deterministic());
    it.state_mut().rt.reset_transfers();
    if records.is_empty() {
        it.out().stdout(&text);
    } else {
        // A table, so a notebook renders it as HTML like %devices.
        let (headers, rows) = transfers_rows(&records, !deterministic());
        let data = crate::object::DisplayData {
            plain: text.trim_end_matches('\n').to_string(),
            html: Some(format!(
                "{}<div style=\"opacity:0.75;font-size:12px\">{}</div>",
                crate::display::table_html(&headers, &rows),
                TRANSFERS_RESET
            )),
            ..Default::default()
        };
        it.out().display(&data, false);
    }
    Ok(())
}

const TRANSFERS_RESET: &str = "The transfer ledger has been reset.";

/// The `%transfers` table for `records`, with a time column when `with_time`.
pub fn transfers_text(records: &[crate::runtime::TransferRecord], with_time: bool) -> String {
    if records.is_empty() {
        return "No transfers since the last reset: no array has moved between devices.\n"
            .to_string();
    }
    let (headers, rows) = transfers_rows(records, with_time);
    format!(
        "{}\n{TRANSFERS_RESET}\n",
        crate::display::table_text(&headers, &rows)
    )
}

/// The `%transfers` table's headers and rows (a total row when there are several).
fn transfers_rows(
    records: &[crate::runtime::TransferRecord],
    with_time: bool,
) -> (Vec<&'static str>, Vec<Vec<String>>) {
    let mut headers = vec!["from", "to", "kind", "copies", "bytes"];
    if with_time {
        headers.push("time");
    }
    let row = |from: String, to: String, kind: &str, count: u64, bytes: u64, secs: f64| {
        let mut cells = vec![
            from,
            to,
            kind.to_string(),
            count.to_string(),
            human_bytes(bytes),
        ];
        if with_time {
            cells.push(format_duration(secs));
        }
        cells
    };
    let mut rows: Vec<Vec<String>> = records
        .iter()
        .map(|r| {
            row(
                r.from.to_string(),
                r.to.to_string(),
                r.kind.name(),
                r.count,
                r.bytes,
                r.time.as_secs_f64(),
            )
        })
        .collect();
    if records.len() > 1 {
        rows.push(row(
            "total".into(),
            String::new(),
            "",
            records.iter().map(|r| r.count).sum(),
            records.iter().map(|r| r.bytes).sum(),
            records.iter().map(|r| r.time.as_secs_f64()).sum(),
        ));
    }
    (headers, rows)
}

fn on_path(cmd: &str) -> bool {
    std::env::var_os("PATH")
        .is_some_and(|paths| std::env::split_paths(&paths).any(|dir| dir.join(cmd).is_file()))
}

fn shell(it: &mut dyn Interpreter, cmd: &str) -> Result<(), Exc> {
    let first = cmd.split_whitespace().next().unwrap_or("");
    if first == "nvidia-smi" && !on_path("nvidia-smi") {
        let table = device_table(it);
        it.out().stdout(&format!(
            "nvidia-smi is not installed here; devarray's device table:\n{}\n",
            table.text
        ));
        return Ok(());
    }
    // The process runner `subprocess` uses: its own process group, output shown as it comes,
    // interruptible; a command left running in the background (`!sleep 15 &`) keeps the pipes
    // open, so after 200 ms without output the wait for their end stops, as IPython returns.
    use crate::modules::python::stdlib::subprocess::{collect, spawn, Spec, Stopped};
    let mut spec = Spec::shell(cmd);
    spec.linger = Some(std::time::Duration::from_millis(200));
    let mut child = spawn(&spec)
        .map_err(|e| Exc::new(ExcKind::OSError, format!("could not run `{cmd}`: {e}")))?;
    match collect(it, &mut child, &mut spec, None) {
        Ok(_) => {}
        Err(Stopped::Interrupted | Stopped::TimedOut) => {
            return Err(Exc::new(ExcKind::KeyboardInterrupt, ""))
        }
        Err(Stopped::Failed(e)) => {
            return Err(Exc::new(
                ExcKind::OSError,
                format!("could not wait for `{cmd}`: {e}"),
            ))
        }
    }
    Ok(())
}

// -------------------------------------------------------------- device table

/// The device table shown by `%devices`, `devices()` and `!nvidia-smi`
/// when nvidia-smi is absent.
pub struct DeviceTable {
    pub text: String,
    pub html: String,
}

impl NativeObject for DeviceTable {
    fn type_name(&self) -> &str {
        "DeviceTable"
    }
    fn repr(&self) -> String {
        self.text.clone()
    }
    fn get_attr(&self, _this: &Rc<dyn NativeObject>, name: &str) -> Option<Value> {
        (name == "_repr_html_").then(|| Value::str(&self.html))
    }
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

pub(super) fn human_bytes(b: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut v = b as f64;
    let mut u = 0;
    while v >= 1024.0 && u + 1 < UNITS.len() {
        v /= 1024.0;
        u += 1;
    }
    if u == 0 {
        format!("{b} B")
    } else {
        format!("{v:.1} {}", UNITS[u])
    }
}

pub fn device_table(it: &mut dyn Interpreter) -> DeviceTable {
    let rt = &it.state_mut().rt;
    let mut devices = vec![Device::cpu(0)];
    devices.extend((0..rt.num_gpus()).map(Device::gpu));
    let headers = [
        "device",
        "backend",
        "name",
        "memory used / total",
        "live arrays",
        "copied in",
        "copied out",
    ];
    let rows: Vec<Vec<String>> = devices
        .iter()
        .map(|d| {
            let backend = rt.backend_name(*d);
            let name = match d.kind {
                DeviceKind::Cpu => cpu_name(),
                DeviceKind::Gpu if backend == "simulated" => {
                    "simulated GPU (host memory, one worker thread)".to_string()
                }
                DeviceKind::Gpu => rt.device_name(*d).unwrap_or_else(|| "GPU".to_string()),
            };
            let (copied_in, copied_out) = rt.bytes_copied(*d);
            let total = rt
                .memory_total(*d)
                .map_or_else(|| "?".to_string(), human_bytes);
            vec![
                d.to_string(),
                backend.to_string(),
                name,
                format!("{} / {}", human_bytes(rt.memory_used(*d)), total),
                rt.live_arrays(*d).to_string(),
                human_bytes(copied_in),
                human_bytes(copied_out),
            ]
        })
        .collect();
    // The text form must fit an 80-column terminal (and `!nvidia-smi`'s
    // fallback a notebook's width): short names, memory and copies in two
    // columns. The HTML keeps every detail.
    let short_headers = [
        "device",
        "name",
        "memory used/total",
        "arrays",
        "copied in/out",
    ];
    let short_rows: Vec<Vec<String>> = devices
        .iter()
        .zip(&rows)
        .map(|(d, row)| {
            let backend = rt.backend_name(*d);
            let name = match d.kind {
                DeviceKind::Cpu => format!(
                    "{}-core CPU",
                    std::thread::available_parallelism().map_or(1, |n| n.get())
                ),
                DeviceKind::Gpu if backend == "simulated" => "simulated GPU".to_string(),
                DeviceKind::Gpu => clip(&row[2], 18),
            };
            let (copied_in, copied_out) = rt.bytes_copied(*d);
            let total = rt
                .memory_total(*d)
                .map_or_else(|| "?".to_string(), compact_bytes);
            vec![
                d.to_string(),
                name,
                format!("{}/{}", compact_bytes(rt.memory_used(*d)), total),
                rt.live_arrays(*d).to_string(),
                format!("{}/{}", compact_bytes(copied_in), compact_bytes(copied_out)),
            ]
        })
        .collect();
    DeviceTable {
        text: crate::display::table_text(&short_headers, &short_rows),
        html: crate::display::table_html(&headers, &rows),
    }
}

/// At most `max` characters, the cut marked with `…`.
fn clip(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        text.to_string()
    } else {
        let kept: String = text.chars().take(max - 1).collect();
        format!("{kept}…")
    }
}

/// Bytes as nvidia-smi's narrow columns write them: `0B`, `12.3MiB`, `4GiB`.
fn compact_bytes(b: u64) -> String {
    human_bytes(b).replace(".0 ", "").replace(' ', "")
}

pub fn devices_fn(it: &mut dyn Interpreter, a: Args) -> Result<Value, Exc> {
    a.finish(0)?;
    Ok(Value::Object(Rc::new(device_table(it))))
}

/// The CPU's model name, from /proc/cpuinfo where there is one.
fn cpu_name() -> String {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let model = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split_once(':'))
                .map(|(_, v)| v.trim().to_string())
        })
        .unwrap_or_else(|| "CPU".to_string());
    format!("{model} ({cores} cores)")
}

#[cfg(test)]
mod tests {
    use super::transfers_text;
    use crate::runtime::{Device, TransferKind, TransferRecord};
    use std::time::Duration;

    #[test]
    fn transfers_table_with_and_without_times() {
        let records = vec![
            TransferRecord {
                from: Device::cpu(0),
                to: Device::gpu(0),
                kind: TransferKind::Explicit,
                count: 2,
                bytes: 48,
                time: Duration::from_micros(12),
            },
            TransferRecord {
                from: Device::gpu(0),
                to: Device::gpu(1),
                kind: TransferKind::Explicit,
                count: 1,
                bytes: 3 << 20,
                time: Duration::from_millis(2),
            },
        ];
        assert_eq!(
            transfers_text(&records, false),
            "+--------+--------+----------+--------+---------+\n\
             | from   | to     | kind     | copies | bytes   |\n\
             +--------+--------+----------+--------+---------+\n\
             | cpu(0) | gpu(0) | explicit | 2      | 48 B    |\n\
             | gpu(0) | gpu(1) | explicit | 1      | 3.0 MiB |\n\
             | total  |        |          | 3      | 3.0 MiB |\n\
             +--------+--------+----------+--------+---------+\n\
             The transfer ledger has been reset.\n"
        );
        let timed = transfers_text(&records[..1], true);
        assert!(timed.contains("| time    |"), "{timed}");
        assert!(timed.contains("| 12.0 µs |"), "{timed}");
        assert_eq!(
            transfers_text(&[], true),
            "No transfers since the last reset: no array has moved between devices.\n"
        );
    }
}
