//! `%timeline`: what each device did in the last cell, lane by lane, from the runtime's
//! timeline. A notebook shows an SVG (hover a bar for its op, shape and duration), a terminal
//! a text chart; with DEVARRAY_DETERMINISTIC set only the order of the work is shown (no
//! times), so transcripts and notebooks can compare it.

use std::collections::HashMap;
use std::time::Instant;

use crate::display::timeline::{self as chart, format_duration, Bar, Chart, Lane as ChartLane};
use crate::object::error::Exc;
use crate::object::Interpreter;
use crate::runtime::timeline::{CellTimeline, Lane, TimelineEvent, CELL_CAP};
use crate::runtime::Device;

use super::magic::{deterministic, human_bytes};

/// Columns of time in the text chart.
const TEXT_WIDTH: usize = 60;
/// Runs of op names a lane's summary lists before it stops.
const SUMMARY_RUNS: usize = 8;

pub fn timeline(it: &mut dyn Interpreter, arg: &str) -> Result<(), Exc> {
    if !arg.trim().is_empty() {
        return Err(Exc::value_error(format!(
            "%timeline takes no arguments (got {:?}); it draws the device work of the last cell (or of this cell so far, when code comes before it)",
            arg.trim()
        )));
    }
    // Queued work notes its times when it runs: wait for it so every bar is complete.
    it.state_mut().rt.synchronize()?;
    let rt = &it.state_mut().rt;
    let here = rt.timeline(true);
    let (cell, which) = if here.events.is_empty() {
        (rt.timeline(false), "the last cell")
    } else {
        (here, "this cell")
    };
    let devices = rt.devices();
    let report = render(&cell, which, &devices, !deterministic());
    match report.svg {
        Some(svg) => {
            // The picture with the lanes' summaries under it (the text chart is the plain
            // form, for terminals).
            let data = crate::object::DisplayData {
                plain: report.text.trim_end_matches('\n').to_string(),
                html: Some(format!(
                    "<div><div style=\"font-size:12px;margin-bottom:4px\">{}</div>{svg}<pre style=\"font-size:11px\">{}</pre></div>",
                    crate::display::html_escape(report.header.trim_end()),
                    crate::display::html_escape(report.summary.trim_end())
                )),
                ..Default::default()
            };
            it.out().display(&data, false);
        }
        None => it.out().stdout(&report.text),
    }
    Ok(())
}

struct Report {
    /// The whole text form: the header, the text chart (with times) and the summary.
    text: String,
    header: String,
    summary: String,
    svg: Option<String>,
}

fn lane_name(lane: Lane) -> String {
    match lane {
        Lane::Device(d) => d.to_string(),
        Lane::Copy { from, to } => format!("{from}→{to}"),
    }
}

fn device_order(d: Device) -> (u8, usize) {
    (u8::from(!d.is_cpu()), d.id)
}

fn shape_text(shape: &[usize]) -> String {
    match shape {
        [one] => format!("({one},)"),
        _ => format!(
            "({})",
            shape
                .iter()
                .map(usize::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

/// A lane's work in order, repeats folded: `uniform, matmul ×20, sum`.
fn summary(events: &[&TimelineEvent], copies: bool) -> String {
    if events.is_empty() {
        return "(idle)".to_string();
    }
    let mut runs: Vec<(&str, usize)> = Vec::new();
    for e in events {
        match runs.last_mut() {
            Some((name, n)) if *name == e.name => *n += 1,
            _ => runs.push((e.name, 1)),
        }
    }
    let shown = runs.len().min(SUMMARY_RUNS);
    let mut parts: Vec<String> = runs[..shown]
        .iter()
        .map(|(name, n)| {
            if *n == 1 {
                (*name).to_string()
            } else {
                format!("{name} ×{n}")
            }
        })
        .collect();
    if runs.len() > shown {
        let rest: usize = runs[shown..].iter().map(|r| r.1).sum();
        parts.push(format!("… {rest} more"));
    }
    let mut s = parts.join(", ");
    if copies {
        let bytes: u64 = events.iter().map(|e| e.bytes).sum();
        s.push_str(&format!(" ({})", human_bytes(bytes)));
    }
    s
}

fn render(cell: &CellTimeline, which: &str, devices: &[Device], with_times: bool) -> Report {
    if cell.events.is_empty() {
        let text = format!("No device work in {which}: nothing was computed or copied.\n");
        return Report {
            header: text.clone(),
            text,
            summary: String::new(),
            svg: None,
        };
    }
    // Every device has a lane (an idle one shows as idle); copy directions that were used
    // follow, in the device order of %transfers.
    let mut lanes: Vec<Lane> = devices.iter().map(|d| Lane::Device(*d)).collect();
    let mut copy_lanes: Vec<(Device, Device)> = Vec::new();
    for e in &cell.events {
        if let Lane::Copy { from, to } = e.lane {
            if !copy_lanes.contains(&(from, to)) {
                copy_lanes.push((from, to));
            }
        }
        if let Lane::Device(d) = e.lane {
            if !lanes.contains(&e.lane) {
                lanes.push(Lane::Device(d));
            }
        }
    }
    copy_lanes.sort_by_key(|(f, t)| (device_order(*f), device_order(*t)));
    lanes.extend(
        copy_lanes
            .into_iter()
            .map(|(from, to)| Lane::Copy { from, to }),
    );
    let mut by_lane: HashMap<Lane, Vec<&TimelineEvent>> = HashMap::new();
    for e in &cell.events {
        by_lane.entry(e.lane).or_default().push(e);
    }
    let ops = cell
        .events
        .iter()
        .filter(|e| matches!(e.lane, Lane::Device(_)))
        .count();
    let copies = cell.events.len() - ops;
    let plural =
        |n: usize, one: &str, many: &str| format!("{n} {}", if n == 1 { one } else { many });
    let origin: Instant = cell
        .events
        .iter()
        .map(|e| e.queued)
        .min()
        .unwrap_or_else(Instant::now);
    let end = cell
        .events
        .iter()
        .filter_map(|e| e.finished)
        .max()
        .unwrap_or(origin);
    let span = end.saturating_duration_since(origin).as_secs_f64();
    let mut text = format!(
        "Timeline of {which}: {} and {} on {}",
        plural(ops, "op", "ops"),
        plural(copies, "copy", "copies"),
        plural(lanes.len(), "lane", "lanes")
    );
    if with_times {
        text.push_str(&format!(" in {}", format_duration(span)));
    }
    text.push('\n');
    let header = text.clone();
    let names: Vec<String> = lanes.iter().map(|l| lane_name(*l)).collect();
    let width = names.iter().map(|n| n.chars().count()).max().unwrap_or(0);
    // The picture is drawn in both modes: only the text is compared (DEVARRAY_DETERMINISTIC),
    // and a notebook's reader still sees the lanes.
    let svg;
    {
        let secs = |t: Instant| t.saturating_duration_since(origin).as_secs_f64();
        let chart_lanes = lanes
            .iter()
            .zip(&names)
            .map(|(lane, name)| ChartLane {
                name: name.clone(),
                bars: by_lane
                    .get(lane)
                    .into_iter()
                    .flatten()
                    .filter_map(|e| {
                        let (started, finished) = (e.started?, e.finished?);
                        let ran = finished.saturating_duration_since(started).as_secs_f64();
                        let waited = started.saturating_duration_since(e.queued).as_secs_f64();
                        let copy = matches!(e.lane, Lane::Copy { .. });
                        let label = if copy {
                            format!("{} {}", e.name, human_bytes(e.bytes))
                        } else {
                            e.name.to_string()
                        };
                        Some(Bar {
                            start: secs(started),
                            end: secs(finished),
                            title: format!(
                                "{} {} on {name}: {} {}, ran {}, waited {} in the queue",
                                e.name,
                                shape_text(&e.shape),
                                if copy { "moved" } else { "wrote" },
                                human_bytes(e.bytes),
                                format_duration(ran),
                                format_duration(waited)
                            ),
                            label,
                            copy,
                        })
                    })
                    .collect(),
            })
            .collect();
        let drawn = Chart {
            lanes: chart_lanes,
            span,
        };
        if with_times {
            text.push_str(&chart::text(&drawn, TEXT_WIDTH));
        }
        svg = Some(chart::svg(&drawn, 760.0));
    }
    let mut summary_text = String::new();
    for (lane, name) in lanes.iter().zip(&names) {
        let events = by_lane.get(lane).map(Vec::as_slice).unwrap_or(&[]);
        summary_text.push_str(&format!(
            "{name:width$}  {}\n",
            summary(events, matches!(lane, Lane::Copy { .. }))
        ));
    }
    if cell.dropped > 0 {
        summary_text.push_str(&format!(
            "({} more were not kept: a cell keeps its first {CELL_CAP} ops and copies)\n",
            cell.dropped
        ));
    }
    text.push_str(&summary_text);
    Report {
        text,
        header,
        summary: summary_text,
        svg,
    }
}
