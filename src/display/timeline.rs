//! `%timeline`'s chart: one lane per device and per copy direction, the work as bars on a
//! shared time axis, idle time as gaps. An SVG for notebooks (each bar's `<title>` is its
//! hover text) and a text chart for terminals; both are drawn from the same [`Chart`].

use std::fmt::Write;

use super::plot::svg::escape;

/// One bar: an op or a copy, in seconds from the chart's origin.
#[derive(Clone, Debug, PartialEq)]
pub struct Bar {
    pub start: f64,
    pub end: f64,
    /// Drawn inside the bar where it fits (`matmul`, `copy 64.0 KB`).
    pub label: String,
    /// The hover text (op, shape, duration, time queued).
    pub title: String,
    /// Copies are drawn in their own colour.
    pub copy: bool,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Lane {
    pub name: String,
    pub bars: Vec<Bar>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Chart {
    pub lanes: Vec<Lane>,
    /// Seconds from the origin to the end of the last bar.
    pub span: f64,
}

/// IPython's time formatting: three significant digits and a unit (`%time`, `%timeit`).
pub fn format_duration(seconds: f64) -> String {
    let (scale, unit) = if seconds >= 1.0 {
        (1.0, "s")
    } else if seconds >= 1e-3 {
        (1e3, "ms")
    } else if seconds >= 1e-6 {
        (1e6, "µs")
    } else {
        (1e9, "ns")
    };
    let v = seconds * scale;
    let s = if v >= 100.0 {
        format!("{v:.0}")
    } else if v >= 10.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.2}")
    };
    format!("{s} {unit}")
}

fn busy(lane: &Lane) -> f64 {
    // Bars of one lane do not overlap (a device runs its queue in order), except copies made
    // on the host at once; the sum is what the lane spent working.
    lane.bars
        .iter()
        .fold(0.0, |sum, b| sum + (b.end - b.start).max(0.0))
}

/// The text chart, `width` columns of time. A bar wide enough shows as `[name==]`; narrower
/// ones fill their columns with `█` (at least half the column busy) or `▌`; idle columns
/// are `·`.
pub fn text(chart: &Chart, width: usize) -> String {
    let width = width.max(10);
    let name_width = chart
        .lanes
        .iter()
        .map(|l| l.name.chars().count())
        .max()
        .unwrap_or(0);
    let span = if chart.span > 0.0 { chart.span } else { 1.0 };
    let column = span / width as f64;
    let mut out = String::new();
    let axis_end = format_duration(chart.span);
    let _ = writeln!(
        out,
        "{:name_width$}  0{}{axis_end}",
        "",
        " ".repeat((width + 1).saturating_sub(axis_end.chars().count()))
    );
    for lane in &chart.lanes {
        let mut cells: Vec<char> = vec!['·'; width];
        let mut filled = vec![0.0f64; width];
        for bar in &lane.bars {
            let a = (bar.start / column).floor().max(0.0) as usize;
            let b = ((bar.end / column).ceil() as usize).clamp(a + 1, width);
            for (i, f) in filled.iter_mut().enumerate().take(b).skip(a.min(width - 1)) {
                let lo = (i as f64 * column).max(bar.start);
                let hi = ((i + 1) as f64 * column).min(bar.end);
                *f += ((hi - lo) / column).max(0.0);
            }
        }
        for (c, f) in cells.iter_mut().zip(&filled) {
            if *f >= 0.5 {
                *c = '█';
            } else if *f > 0.0 {
                *c = '▌';
            }
        }
        // Names inside the bars that have room for them, when the bars are few.
        if lane.bars.len() * 4 <= width {
            for bar in &lane.bars {
                let a = (bar.start / column).round() as usize;
                let b = ((bar.end / column).round() as usize).min(width);
                let room = b.saturating_sub(a);
                let name: Vec<char> = bar.label.chars().collect();
                if room >= 3 && a < width {
                    cells[a] = '[';
                    cells[b - 1] = ']';
                    for (k, cell) in cells.iter_mut().enumerate().take(b - 1).skip(a + 1) {
                        *cell = name.get(k - a - 1).copied().unwrap_or('=');
                    }
                }
            }
        }
        let row: String = cells.into_iter().collect();
        let _ = writeln!(
            out,
            "{:name_width$} |{row}| {}",
            lane.name,
            busy_text(lane, span)
        );
    }
    out
}

/// `12.3 ms busy (45%)`, or `idle`.
fn busy_text(lane: &Lane, span: f64) -> String {
    if lane.bars.is_empty() {
        return "idle".to_string();
    }
    let busy = busy(lane);
    format!(
        "{} busy ({:.0}%)",
        format_duration(busy),
        100.0 * busy / span
    )
}

const PALETTE: [&str; 8] = [
    "#4c72b0", "#55a868", "#c44e52", "#8172b2", "#ccb974", "#64b5cd", "#8c8c8c", "#dd8452",
];

fn colour(label: &str) -> &'static str {
    // A stable colour per op name, so the same op looks the same in every lane.
    let h = label
        .bytes()
        .fold(0u32, |h, b| h.wrapping_mul(31).wrapping_add(u32::from(b)));
    PALETTE[h as usize % PALETTE.len()]
}

/// A step of 1, 2 or 5 times a power of ten giving at most `max` ticks over `span`.
fn tick_step(span: f64, max: usize) -> f64 {
    let raw = span / max as f64;
    let power = 10f64.powf(raw.log10().floor());
    [1.0, 2.0, 5.0, 10.0]
        .iter()
        .map(|m| m * power)
        .find(|s| span / s <= max as f64)
        .unwrap_or(10.0 * power)
}

/// The SVG chart (`width` pixels wide).
pub fn svg(chart: &Chart, width: f64) -> String {
    const LANE: f64 = 24.0;
    const TOP: f64 = 26.0;
    const CHAR: f64 = 6.6;
    let name_width = chart
        .lanes
        .iter()
        .map(|l| l.name.chars().count())
        .max()
        .unwrap_or(0) as f64
        * 7.2
        + 12.0;
    let plot = (width - name_width - 120.0).max(100.0);
    let span = if chart.span > 0.0 { chart.span } else { 1.0 };
    let x = |t: f64| name_width + plot * (t / span).clamp(0.0, 1.0);
    let height = TOP + LANE * chart.lanes.len() as f64 + 8.0;
    let mut s = String::new();
    let _ = write!(
        s,
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{width:.0}\" height=\"{height:.0}\" viewBox=\"0 0 {width:.0} {height:.0}\" font-family=\"DejaVu Sans, sans-serif\" font-size=\"11\">"
    );
    // The time axis: ticks and their labels along the top.
    let step = tick_step(span, 8);
    let mut t = 0.0;
    while t <= span * (1.0 + 1e-9) {
        let px = x(t);
        let _ = write!(
            s,
            "<line x1=\"{px:.1}\" y1=\"{:.1}\" x2=\"{px:.1}\" y2=\"{:.1}\" stroke=\"#ddd\"/><text x=\"{px:.1}\" y=\"14\" text-anchor=\"middle\" fill=\"#555\">{}</text>",
            TOP - 4.0,
            height - 4.0,
            if t == 0.0 {
                "0".to_string()
            } else {
                escape(&format_duration(t))
            }
        );
        t += step;
    }
    for (i, lane) in chart.lanes.iter().enumerate() {
        let y = TOP + LANE * i as f64;
        let _ = write!(
            s,
            "<g><title>{}: {} of {}</title><rect x=\"{name_width:.1}\" y=\"{:.1}\" width=\"{plot:.1}\" height=\"{:.1}\" fill=\"#f4f4f4\"/><text x=\"4\" y=\"{:.1}\" fill=\"#222\">{}</text></g>",
            escape(&lane.name),
            busy_text(lane, span),
            format_duration(chart.span),
            y + 3.0,
            LANE - 6.0,
            y + LANE / 2.0 + 4.0,
            escape(&lane.name)
        );
        for bar in &lane.bars {
            let (x0, x1) = (x(bar.start), x(bar.end));
            // At least a hairline, so a short op is still there to hover.
            let w = (x1 - x0).max(1.0);
            let fill = if bar.copy {
                "#e8a33d"
            } else {
                colour(&bar.label)
            };
            let _ = write!(
                s,
                "<g><title>{}</title><rect x=\"{x0:.2}\" y=\"{:.1}\" width=\"{w:.2}\" height=\"{:.1}\" fill=\"{fill}\" stroke=\"#fff\" stroke-width=\"0.5\"/>",
                escape(&bar.title),
                y + 3.0,
                LANE - 6.0
            );
            if w > bar.label.chars().count() as f64 * CHAR + 6.0 {
                let _ = write!(
                    s,
                    "<text x=\"{:.2}\" y=\"{:.1}\" text-anchor=\"middle\" fill=\"#fff\">{}</text>",
                    x0 + w / 2.0,
                    y + LANE / 2.0 + 4.0,
                    escape(&bar.label)
                );
            }
            s.push_str("</g>");
        }
        let _ = write!(
            s,
            "<text x=\"{:.1}\" y=\"{:.1}\" fill=\"#555\">{}</text>",
            name_width + plot + 8.0,
            y + LANE / 2.0 + 4.0,
            escape(&busy_text(lane, span))
        );
    }
    s.push_str("</svg>");
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bar(start: f64, end: f64, label: &str) -> Bar {
        Bar {
            start,
            end,
            label: label.into(),
            title: format!("{label} <x>"),
            copy: false,
        }
    }

    fn chart() -> Chart {
        Chart {
            lanes: vec![
                Lane {
                    name: "gpu(0)".into(),
                    bars: vec![bar(0.0, 0.5, "matmul"), bar(0.5, 1.0, "matmul")],
                },
                Lane {
                    name: "gpu(1)".into(),
                    bars: vec![bar(0.25, 0.75, "add")],
                },
            ],
            span: 1.0,
        }
    }

    #[test]
    fn text_lanes_show_named_bars_and_idle_gaps() {
        let t = text(&chart(), 20);
        let lines: Vec<&str> = t.lines().collect();
        assert_eq!(lines[1], "gpu(0) |[matmul==][matmul==]| 1.00 s busy (100%)");
        assert_eq!(lines[2], "gpu(1) |·····[add=====]·····| 500 ms busy (50%)");
        assert!(lines[0].ends_with("1.00 s"), "{t}");
    }

    #[test]
    fn svg_has_a_lane_per_name_and_escaped_hover_titles() {
        let s = svg(&chart(), 600.0);
        assert!(s.starts_with("<svg") && s.ends_with("</svg>"));
        assert_eq!(s.matches("<title>matmul &lt;x&gt;</title>").count(), 2);
        assert!(s.contains(">gpu(1)</text>"));
    }
}
