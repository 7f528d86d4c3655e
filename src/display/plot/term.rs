//! A figure drawn as text for the terminal: each axes a grid of Unicode braille cells (2x4
//! dots each) framed by tick marks and labels, its title above and legend below; images in
//! shade blocks. Colour (24-bit escapes) only when asked for.

use super::layout::{self, AxesLayout};
use super::{contour, Artist, Axes, Figure, LineStyle, Rgba};

const COLS: usize = 64;
const ROWS: usize = 16;

struct Canvas {
    dots: Vec<Vec<u8>>,
    color: Vec<Vec<Option<Rgba>>>,
    shade: Vec<Vec<Option<char>>>,
}

impl Canvas {
    fn new() -> Canvas {
        Canvas {
            dots: vec![vec![0; COLS]; ROWS],
            color: vec![vec![None; COLS]; ROWS],
            shade: vec![vec![None; COLS]; ROWS],
        }
    }

    /// Sets dot (x, y), x in 0..2*COLS, y in 0..4*ROWS from the top.
    fn set(&mut self, x: i64, y: i64, c: Rgba) {
        if x < 0 || y < 0 || x >= 2 * COLS as i64 || y >= 4 * ROWS as i64 {
            return;
        }
        let (cx, cy) = (x as usize / 2, y as usize / 4);
        let (dx, dy) = (x as usize % 2, y as usize % 4);
        const BITS: [[u8; 4]; 2] = [[0x01, 0x02, 0x04, 0x40], [0x08, 0x10, 0x20, 0x80]];
        self.dots[cy][cx] |= BITS[dx][dy];
        self.color[cy][cx] = Some(c);
    }

    fn line(&mut self, (x0, y0): (f64, f64), (x1, y1): (f64, f64), c: Rgba, dashed: bool) {
        if !(x0.is_finite() && y0.is_finite() && x1.is_finite() && y1.is_finite()) {
            return;
        }
        let steps = ((x1 - x0).abs().max((y1 - y0).abs()).ceil() as i64).clamp(1, 10_000);
        for i in 0..=steps {
            if dashed && (i / 3) % 2 == 1 {
                continue;
            }
            let t = i as f64 / steps as f64;
            self.set(
                (x0 + (x1 - x0) * t).round() as i64,
                (y0 + (y1 - y0) * t).round() as i64,
                c,
            );
        }
    }
}

fn paint(s: &str, c: Option<Rgba>, color: bool) -> String {
    match c {
        Some(c) if color => {
            let [r, g, b, _] = c.bytes();
            format!("\x1b[38;2;{r};{g};{b}m{s}\x1b[0m")
        }
        _ => s.to_string(),
    }
}

/// A pixel's shade as a block character, by its luminance.
fn shade(p: &[u8]) -> char {
    let lum = (0.299 * f64::from(p[0]) + 0.587 * f64::from(p[1]) + 0.114 * f64::from(p[2])) / 255.0;
    [' ', '░', '▒', '▓', '█'][((lum * 4.0).round() as usize).min(4)]
}

fn draw(ax: &Axes, lay: &AxesLayout) -> Canvas {
    let mut cv = Canvas::new();
    let (w, h) = ((2 * COLS - 1) as f64, (4 * ROWS - 1) as f64);
    let to = |x: f64, y: f64| (lay.x.frac(x) * w, h - lay.y.frac(y) * h);
    for a in &ax.artists {
        match a {
            Artist::Line(l) => {
                let pts: Vec<(f64, f64)> =
                    l.xs.iter()
                        .zip(&l.ys)
                        .map(|(x, y)| match l.in_axes {
                            true => (x * w, h - y * h),
                            false => to(*x, *y),
                        })
                        .collect();
                if l.style != LineStyle::None {
                    for p in pts.windows(2) {
                        cv.line(p[0], p[1], l.color, l.style != LineStyle::Solid);
                    }
                }
                if l.marker.is_some() || pts.len() == 1 {
                    for p in &pts {
                        if p.0.is_finite() && p.1.is_finite() {
                            cv.set(p.0.round() as i64, p.1.round() as i64, l.color);
                        }
                    }
                }
            }
            Artist::Scatter(s) => {
                for (i, (x, y)) in s.xs.iter().zip(&s.ys).enumerate() {
                    let p = to(*x, *y);
                    if p.0.is_finite() && p.1.is_finite() {
                        let c = s.colors[i % s.colors.len().max(1)];
                        cv.set(p.0.round() as i64, p.1.round() as i64, c);
                    }
                }
            }
            Artist::Bars(b) => {
                for r in &b.rects {
                    let (x0, x1, y0, y1) = if b.vertical {
                        (r[0], r[0] + r[1], r[2], r[2] + r[3])
                    } else {
                        (r[2], r[2] + r[3], r[0], r[0] + r[1])
                    };
                    // A bar from 0 on a log axis starts below the view: at its bottom edge.
                    let fix = |p: (f64, f64)| {
                        (
                            if p.0.is_finite() { p.0 } else { 0.0 },
                            if p.1.is_finite() { p.1 } else { h },
                        )
                    };
                    let (p0, p1) = (fix(to(x0, y0)), fix(to(x1, y1)));
                    let (xa, xb) = (p0.0.min(p1.0).round() as i64, p0.0.max(p1.0).round() as i64);
                    let (ya, yb) = (p0.1.min(p1.1).round() as i64, p0.1.max(p1.1).round() as i64);
                    for x in xa..xb.max(xa + 1) {
                        for y in ya..=yb {
                            cv.set(x, y, b.color);
                        }
                    }
                }
            }
            Artist::Fill(f) if f.y2.len() != f.xs.len() => {
                // A polygon (`pie`'s wedges): its outline.
                let pts: Vec<(f64, f64)> =
                    f.xs.iter().zip(&f.y1).map(|(x, y)| to(*x, *y)).collect();
                for (i, p) in pts.iter().enumerate() {
                    cv.line(*p, pts[(i + 1) % pts.len()], f.color, false);
                }
            }
            Artist::Fill(f) => {
                for ((x, y1), y2) in f.xs.iter().zip(&f.y1).zip(&f.y2) {
                    cv.line(to(*x, *y1), to(*x, *y2), f.color, true);
                }
            }
            Artist::Span(sp) => {
                // Its two edges, dashed.
                for at in [sp.lo, sp.hi] {
                    if sp.horizontal {
                        let y = to(0.0, at).1;
                        cv.line((0.0, y), (w, y), sp.color, true);
                    } else {
                        let x = to(at, 0.0).0;
                        cv.line((x, 0.0), (x, h), sp.color, true);
                    }
                }
            }
            Artist::RefLine(r) => {
                if r.horizontal {
                    let y = to(0.0, r.at).1;
                    cv.line((0.0, y), (w, y), r.color, r.style != LineStyle::Solid);
                } else {
                    let x = to(r.at, 0.0).0;
                    cv.line((x, 0.0), (x, h), r.color, r.style != LineStyle::Solid);
                }
            }
            Artist::Image(im) => {
                for cy in 0..ROWS {
                    for cx in 0..COLS {
                        // The pixel under the cell's centre.
                        let fx = (cx as f64 + 0.5) / COLS as f64;
                        let fy = (cy as f64 + 0.5) / ROWS as f64;
                        let x = lay.x.view.0 + (lay.x.view.1 - lay.x.view.0) * fx;
                        let y = lay.y.view.1 + (lay.y.view.0 - lay.y.view.1) * fy;
                        let [l, r, b, t] = im.extent();
                        let c = ((x - l) / (r - l) * im.width as f64).floor();
                        let r = ((y - t) / (b - t) * im.height as f64).floor();
                        if c < 0.0 || r < 0.0 || c >= im.width as f64 || r >= im.height as f64 {
                            continue;
                        }
                        let i = 4 * (r as usize * im.width + c as usize);
                        if let Some(p) = im.rgba.get(i..i + 4) {
                            cv.shade[cy][cx] = Some(shade(p));
                        }
                    }
                }
            }
            Artist::Patches(p) if !p.colors.is_empty() => {
                for cy in 0..ROWS {
                    for cx in 0..COLS {
                        // The polygon under the cell's centre; the last drawn wins.
                        let fx = (cx as f64 + 0.5) / COLS as f64;
                        let fy = (cy as f64 + 0.5) / ROWS as f64;
                        let x = lay.x.view.0 + (lay.x.view.1 - lay.x.view.0) * fx;
                        let y = lay.y.view.1 + (lay.y.view.0 - lay.y.view.1) * fy;
                        let hit = p.rings.iter().rposition(|r| contour::inside(r, x, y));
                        if let Some(k) = hit {
                            let c = p.colors[k.min(p.colors.len() - 1)];
                            cv.shade[cy][cx] = Some(shade(&c.bytes()));
                        }
                    }
                }
            }
            Artist::Patches(_) => {}
            Artist::Text(_) => {}
        }
    }
    cv
}

fn axes_text(ax: &Axes, lay: &AxesLayout, color: bool, out: &mut String) {
    let cv = draw(ax, lay);
    let ylabels: Vec<(usize, String)> = if ax.y.visible && ax.axis_on {
        lay.y
            .major
            .iter()
            .map(|(v, l)| {
                let row = ((1.0 - lay.y.frac(*v)) * (ROWS as f64 - 1.0)).round();
                (row.clamp(0.0, ROWS as f64 - 1.0) as usize, l.text())
            })
            .collect()
    } else {
        Vec::new()
    };
    let lw = ylabels
        .iter()
        .map(|(_, s)| s.chars().count())
        .max()
        .unwrap_or(0);
    let indent = lw + 1;
    if !ax.title.is_empty() {
        let pad = (indent + COLS / 2).saturating_sub(ax.title.chars().count() / 2);
        out.push_str(&format!("{}{}\n", " ".repeat(pad), ax.title));
    }
    if !ax.y.label.is_empty() {
        out.push_str(&format!("{}\n", ax.y.label));
    }
    for r in 0..ROWS {
        let label = ylabels
            .iter()
            .find(|(row, _)| *row == r)
            .map(|(_, s)| s.as_str())
            .unwrap_or("");
        let tick = if ylabels.iter().any(|(row, _)| *row == r) {
            '┤'
        } else {
            '│'
        };
        out.push_str(&format!("{label:>lw$}{tick}"));
        for c in 0..COLS {
            // Lines and markers draw over images and filled areas, as matplotlib's zorder has
            // them.
            if cv.dots[r][c] == 0 {
                out.push(cv.shade[r][c].unwrap_or(' '));
            } else {
                let ch = char::from_u32(0x2800 + u32::from(cv.dots[r][c])).unwrap_or(' ');
                out.push_str(&paint(&ch.to_string(), cv.color[r][c], color));
            }
        }
        out.push_str("│\n");
    }
    // The x axis: tick marks on the frame, labels under them where they fit.
    let mut frame: Vec<char> = vec!['─'; COLS];
    let mut labels: Vec<char> = vec![' '; COLS + lw + 8];
    let mut free_from = 0usize;
    if ax.x.visible && ax.axis_on {
        for (v, l) in &lay.x.major {
            let col = (lay.x.frac(*v) * (COLS as f64 - 1.0)).round();
            if !(0.0..COLS as f64).contains(&col) {
                continue;
            }
            let col = col as usize;
            frame[col] = '┬';
            let text: Vec<char> = l.text().chars().collect();
            let start = (indent + col).saturating_sub(text.len() / 2);
            if start >= free_from && start + text.len() <= labels.len() {
                labels[start..start + text.len()].copy_from_slice(&text);
                free_from = start + text.len() + 1;
            }
        }
    }
    out.push_str(&format!(
        "{}└{}┘\n",
        " ".repeat(lw),
        frame.iter().collect::<String>()
    ));
    let labels: String = labels.iter().collect();
    if !labels.trim().is_empty() {
        out.push_str(labels.trim_end());
        out.push('\n');
    }
    if !ax.x.label.is_empty() {
        let pad = (indent + COLS / 2).saturating_sub(ax.x.label.chars().count() / 2);
        out.push_str(&format!("{}{}\n", " ".repeat(pad), ax.x.label));
    }
    let entries = super::svg::legend_entries(ax);
    if !entries.is_empty() {
        let items: Vec<String> = entries
            .iter()
            .map(|(label, a)| {
                let (sym, c) = match a {
                    Artist::Line(l) => (
                        match (l.style, l.marker) {
                            (LineStyle::None, Some(m)) => m.to_string(),
                            (LineStyle::Solid, _) => "──".into(),
                            _ => "╌╌".into(),
                        },
                        l.color,
                    ),
                    Artist::Scatter(s) => (
                        s.marker.to_string(),
                        s.colors.first().copied().unwrap_or(Rgba::BLACK),
                    ),
                    Artist::Bars(b) => ("██".into(), b.color),
                    Artist::Fill(f) => ("▒▒".into(), f.color),
                    Artist::RefLine(r) => ("──".into(), r.color),
                    _ => ("  ".into(), Rgba::BLACK),
                };
                format!("{} {label}", paint(&sym, Some(c), color))
            })
            .collect();
        out.push_str(&format!("{}{}\n", " ".repeat(indent), items.join("   ")));
    }
}

/// The whole figure as text: its axes one under another.
pub fn render(fig: &Figure, color: bool) -> String {
    let fig = &*layout::resolve_shared(fig);
    let mut out = String::new();
    if let Some(s) = &fig.suptitle {
        out.push_str(&format!("{s}\n"));
    }
    for (i, ax) in fig.axes.iter().enumerate().filter(|(_, a)| !a.removed) {
        if i > 0 {
            out.push('\n');
        }
        let lay = layout::axes_layout(ax, fig.size);
        axes_text(ax, &lay, color, &mut out);
    }
    out
}
