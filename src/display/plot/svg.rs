//! A figure as SVG, laid out as matplotlib's SVG backend lays it out: sizes in points (72 per
//! inch), one group per figure and axes, text as `<text>` elements in DejaVu Sans (so it can
//! be selected and searched), images as embedded PNGs.

use std::fmt::Write;

use base64::Engine;

use super::layout::{self, AxesLayout, TickLabel, FONT};
use super::{font, Artist, Axes, Figure, LineStyle, Marker, Rgba};

/// `&`, `<`, `>` and quotes escaped for XML text and attributes.
pub fn escape(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => o.push_str("&amp;"),
            '<' => o.push_str("&lt;"),
            '>' => o.push_str("&gt;"),
            '"' => o.push_str("&quot;"),
            '\'' => o.push_str("&#39;"),
            c => o.push(c),
        }
    }
    o
}

/// Numbers as the SVG writes them: up to 6 decimals, no trailing zeros.
fn n(v: f64) -> String {
    if !v.is_finite() {
        return "0".into();
    }
    let s = format!("{v:.6}");
    let s = s.trim_end_matches('0').trim_end_matches('.');
    if s == "-0" {
        "0".into()
    } else {
        s.to_string()
    }
}

fn paint(attr: &str, c: Rgba) -> String {
    let mut s = format!(" {attr}=\"{}\"", c.hex());
    if c.3 < 1.0 {
        let _ = write!(s, " {attr}-opacity=\"{}\"", n(c.3));
    }
    s
}

fn stroke(c: Rgba, width: f64, style: LineStyle) -> String {
    let mut s = paint("stroke", c);
    let _ = write!(
        s,
        " stroke-width=\"{}\" stroke-linecap=\"square\" stroke-linejoin=\"round\"",
        n(width)
    );
    if let Some(d) = style.dashes() {
        let d: Vec<String> = d.iter().map(|x| n(x * width)).collect();
        // Dashes have butt caps in matplotlib, dots round ones.
        s = s.replace("stroke-linecap=\"square\"", "stroke-linecap=\"butt\"");
        let _ = write!(s, " stroke-dasharray=\"{}\"", d.join(","));
    }
    s
}

/// Options of one rendering.
#[derive(Clone, Copy, Default)]
pub struct Options {
    /// Draw images as one rectangle per pixel instead of an embedded PNG (the PNG renderer
    /// is built without image decoders).
    pub pixel_rects: bool,
    /// Cut the page to the drawn content plus this pad in inches (`bbox_inches='tight'`), as
    /// matplotlib-inline does.
    pub tight: Option<f64>,
}

/// The page of one rendering: x0, y0, x1, y1 in points.
pub fn page(fig: &Figure, opts: Options) -> [f64; 4] {
    if let Some(pad) = opts.tight {
        layout::tight_bbox(fig, pad)
    } else {
        [0.0, 0.0, fig.size.0 * 72.0, fig.size.1 * 72.0]
    }
}

struct Text<'a> {
    x: f64,
    y: f64,
    size: f64,
    anchor: &'a str,
    /// Where `y` is: "baseline", "top", "center" or "bottom" of the text.
    va: &'a str,
    rotate: bool,
    color: Rgba,
    weight: Option<&'a str>,
}

fn baseline(y: f64, va: &str, size: f64) -> f64 {
    match va {
        "top" => y + 0.76 * size,
        "center" | "center_baseline" => y + 0.35 * size,
        "bottom" => y - 0.24 * size,
        _ => y,
    }
}

fn text(out: &mut String, t: &Text, body: &str) {
    if body.is_empty() {
        return;
    }
    let (x, y) = if t.rotate {
        // Rotated 90°: `va` is along x, the baseline placed as an upright one.
        (baseline(t.x, t.va, t.size), t.y)
    } else {
        (t.x, baseline(t.y, t.va, t.size))
    };
    let _ = write!(
        out,
        "<text x=\"{}\" y=\"{}\" font-family=\"{}\" font-size=\"{}\" text-anchor=\"{}\"{}",
        n(x),
        n(y),
        font::FAMILY,
        n(t.size),
        t.anchor,
        paint("fill", t.color)
    );
    if let Some(w) = t.weight {
        let _ = write!(out, " font-weight=\"{w}\"");
    }
    if t.rotate {
        let _ = write!(out, " transform=\"rotate(-90 {} {})\"", n(x), n(y));
    }
    let _ = writeln!(out, ">{}</text>", escape(body));
}

/// A label rotated by `angle` degrees (counter-clockwise) about its centre `c`.
fn rotated_label(out: &mut String, c: (f64, f64), size: f64, angle: f64, body: &str) {
    // The baseline sits below the centre of the text box by its ascent less half its height.
    let y = c.1 + (layout::BOX_ASCENT - 0.5 * layout::TEXT_BOX) * size;
    let _ = writeln!(
        out,
        "<text x=\"{}\" y=\"{}\" font-family=\"{}\" font-size=\"{}\" text-anchor=\"middle\" fill=\"#000000\" transform=\"rotate({} {} {})\">{}</text>",
        n(c.0),
        n(y),
        font::FAMILY,
        n(size),
        n(-angle),
        n(c.0),
        n(c.1),
        escape(body)
    );
}

fn tick_label(out: &mut String, t: &Text, label: &TickLabel) {
    match label {
        TickLabel::Plain(s) => text(out, t, s),
        TickLabel::Pow10(e) => {
            let y = baseline(t.y, t.va, t.size);
            let _ = writeln!(
                out,
                "<text x=\"{}\" y=\"{}\" font-family=\"{}\" font-size=\"{}\" text-anchor=\"{}\" fill=\"#000000\">10<tspan font-size=\"{}\" dy=\"{}\">{}</tspan></text>",
                n(t.x),
                n(y),
                font::FAMILY,
                n(t.size),
                t.anchor,
                n(t.size * 0.7),
                n(-t.size * 0.4),
                escape(e)
            );
        }
    }
}

/// The SVG path of marker `m` of size `size` (points) centred at the origin.
fn marker_path(m: Marker, size: f64) -> Option<(String, bool)> {
    let r = size / 2.0;
    let filled = !matches!(m, '+' | 'x' | '|' | '_' | '1' | '2' | '3' | '4');
    let p = match m {
        'o' | '.' | ',' => {
            let r = match m {
                '.' => r * 0.5,
                ',' => 0.5,
                _ => r,
            };
            format!(
                "M {} 0 A {} {} 0 1 0 {} 0 A {} {} 0 1 0 {} 0 Z",
                n(-r),
                n(r),
                n(r),
                n(r),
                n(r),
                n(r),
                n(-r)
            )
        }
        's' => format!("M {0} {0} L {1} {0} L {1} {1} L {0} {1} Z", n(-r), n(r)),
        'D' | 'd' => {
            let w = if m == 'd' { r * 0.6 } else { r };
            format!("M 0 {} L {} 0 L 0 {} L {} 0 Z", n(-r), n(w), n(r), n(-w))
        }
        '^' => format!("M 0 {} L {} {} L {} {} Z", n(-r), n(r), n(r), n(-r), n(r)),
        'v' => format!("M 0 {} L {} {} L {} {} Z", n(r), n(r), n(-r), n(-r), n(-r)),
        '<' => format!("M {} 0 L {} {} L {} {} Z", n(-r), n(r), n(-r), n(r), n(r)),
        '>' => format!("M {} 0 L {} {} L {} {} Z", n(r), n(-r), n(-r), n(-r), n(r)),
        '+' => format!("M {} 0 L {} 0 M 0 {} L 0 {}", n(-r), n(r), n(-r), n(r)),
        'x' => format!(
            "M {0} {0} L {1} {1} M {0} {1} L {1} {0}",
            n(-r * 0.71),
            n(r * 0.71)
        ),
        '|' => format!("M 0 {} L 0 {}", n(-r), n(r)),
        '_' => format!("M {} 0 L {} 0", n(-r), n(r)),
        '*' | 'p' | 'h' | 'H' | '8' | '1' | '2' | '3' | '4' => {
            // Stars and polygons: points around a circle.
            let (k, inner) = match m {
                '*' => (5, 0.38),
                'p' => (5, 1.0),
                '8' => (8, 1.0),
                _ => (6, 1.0),
            };
            let mut s = String::new();
            let steps = if inner < 1.0 { 2 * k } else { k };
            for i in 0..steps {
                let rr = if inner < 1.0 && i % 2 == 1 {
                    r * inner
                } else {
                    r
                };
                let a = std::f64::consts::PI * (2.0 * i as f64 / steps as f64)
                    - std::f64::consts::FRAC_PI_2;
                let _ = write!(
                    s,
                    "{} {} {} ",
                    if i == 0 { "M" } else { "L" },
                    n(rr * a.cos()),
                    n(rr * a.sin())
                );
            }
            s.push('Z');
            s
        }
        _ => return None,
    };
    Some((p, filled))
}

fn marker_at(out: &mut String, m: Marker, size: f64, x: f64, y: f64, face: Rgba, edge: Rgba) {
    if let Some((p, filled)) = marker_path(m, size) {
        let fill = if filled {
            paint("fill", face)
        } else {
            " fill=\"none\"".to_string()
        };
        let _ = writeln!(
            out,
            "<path d=\"{p}\" transform=\"translate({} {})\"{fill}{} stroke-width=\"1\"/>",
            n(x),
            n(y),
            paint("stroke", edge)
        );
    }
}

/// A polyline through the finite points; NaNs break it, as in matplotlib.
fn polyline(lay: &AxesLayout, xs: &[f64], ys: &[f64], in_axes: bool) -> String {
    let mut d = String::new();
    let mut pen = false;
    for (x, y) in xs.iter().zip(ys) {
        let (px, py) = if in_axes {
            lay.axes_point(*x, *y)
        } else {
            (lay.px(*x), lay.py(*y))
        };
        if px.is_finite() && py.is_finite() {
            let _ = write!(d, "{} {} {} ", if pen { "L" } else { "M" }, n(px), n(py));
            pen = true;
        } else {
            pen = false;
        }
    }
    d
}

/// An annotation's arrow: from the edge of its text's box to the point, each end pulled in
/// by 2 points as matplotlib's `shrinkA`/`shrinkB` do, the head at the point.
fn annotation_arrow(out: &mut String, lay: &AxesLayout, t: &super::Text, arrow: &super::Arrow) {
    let Some([l, top, r, b]) = lay.text_box(t) else {
        return;
    };
    let (cx, cy) = ((l + r) / 2.0, (top + b) / 2.0);
    let (tx, ty) = (lay.px(arrow.to.0), lay.py(arrow.to.1));
    let (dx, dy) = (tx - cx, ty - cy);
    let len = dx.hypot(dy);
    if !len.is_finite() || len == 0.0 {
        return;
    }
    let (ux, uy) = (dx / len, dy / len);
    // Where the line from the centre leaves the text's box.
    let out_of_box = [((r - l) / 2.0, dx), ((b - top) / 2.0, dy)]
        .iter()
        .filter(|(_, d)| *d != 0.0)
        .map(|(half, d)| half / d.abs() * len)
        .fold(f64::INFINITY, f64::min)
        .min(len);
    let start = out_of_box + 2.0;
    let end = len - 2.0;
    if end <= start {
        return;
    }
    let (x0, y0) = (cx + ux * start, cy + uy * start);
    let (x1, y1) = (cx + ux * end, cy + uy * end);
    let _ = writeln!(
        out,
        "<path d=\"M {} {} L {} {}\" fill=\"none\"{}/>",
        n(x0),
        n(y0),
        n(x1),
        n(y1),
        stroke(arrow.color, arrow.width, LineStyle::Solid)
    );
    // matplotlib's `->` head: 0.4 of the 10-point mutation scale long, 0.2 wide each side.
    let (head_len, half_width) = (4.0, 2.0);
    let (bx, by) = (x1 - ux * head_len, y1 - uy * head_len);
    let (wx, wy) = (-uy * half_width, ux * half_width);
    let corners = format!(
        "M {} {} L {} {} L {} {}",
        n(bx + wx),
        n(by + wy),
        n(x1),
        n(y1),
        n(bx - wx),
        n(by - wy)
    );
    match arrow.head {
        super::ArrowHead::None => {}
        super::ArrowHead::Open => {
            let _ = writeln!(
                out,
                "<path d=\"{corners}\" fill=\"none\"{}/>",
                stroke(arrow.color, arrow.width, LineStyle::Solid)
            );
        }
        super::ArrowHead::Filled => {
            let _ = writeln!(
                out,
                "<path d=\"{corners} Z\"{}{}/>",
                paint("fill", arrow.color),
                stroke(arrow.color, arrow.width, LineStyle::Solid)
            );
        }
    }
}

fn png_data_uri(width: usize, height: usize, rgba: &[u8]) -> Option<String> {
    let size = resvg::tiny_skia::IntSize::from_wh(width as u32, height as u32)?;
    // tiny-skia keeps premultiplied colour.
    let mut data = rgba.to_vec();
    for px in data.chunks_exact_mut(4) {
        let a = u16::from(px[3]);
        for c in &mut px[..3] {
            *c = ((u16::from(*c) * a + 127) / 255) as u8;
        }
    }
    let pm = resvg::tiny_skia::Pixmap::from_vec(data, size)?;
    let png = pm.encode_png().ok()?;
    Some(format!(
        "data:image/png;base64,{}",
        base64::engine::general_purpose::STANDARD.encode(png)
    ))
}

fn artist(out: &mut String, a: &Artist, lay: &AxesLayout, opts: Options) {
    match a {
        Artist::Line(l) => {
            if l.style != LineStyle::None {
                let d = polyline(lay, &l.xs, &l.ys, l.in_axes);
                if !d.is_empty() {
                    let _ = writeln!(
                        out,
                        "<path d=\"{}\" fill=\"none\"{}/>",
                        d.trim_end(),
                        stroke(l.color, l.width, l.style)
                    );
                }
            }
            if let Some(m) = l.marker {
                for (x, y) in l.xs.iter().zip(&l.ys) {
                    let (px, py) = if l.in_axes {
                        lay.axes_point(*x, *y)
                    } else {
                        (lay.px(*x), lay.py(*y))
                    };
                    if px.is_finite() && py.is_finite() {
                        marker_at(
                            out,
                            m,
                            l.marker_size,
                            px,
                            py,
                            l.marker_face.unwrap_or(l.color),
                            l.color,
                        );
                    }
                }
            }
        }
        Artist::Scatter(s) => {
            for (i, (x, y)) in s.xs.iter().zip(&s.ys).enumerate() {
                let (px, py) = (lay.px(*x), lay.py(*y));
                let c = s.colors[i % s.colors.len().max(1)];
                let size = s.sizes[i % s.sizes.len().max(1)].max(0.0).sqrt();
                if px.is_finite() && py.is_finite() {
                    marker_at(out, s.marker, size, px, py, c, c);
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
                let (px0, px1) = (lay.px(x0), lay.px(x1));
                let (py0, py1) = (lay.py(y0), lay.py(y1));
                let _ = write!(
                    out,
                    "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" shape-rendering=\"crispEdges\"{}",
                    n(px0.min(px1)),
                    n(py0.min(py1)),
                    n((px1 - px0).abs()),
                    n((py1 - py0).abs()),
                    paint("fill", b.color)
                );
                if let Some(e) = b.edge {
                    let _ = write!(out, "{} stroke-width=\"1\"", paint("stroke", e));
                }
                out.push_str("/>\n");
            }
        }
        Artist::Fill(f) => {
            let mut d = String::new();
            for (i, (x, y)) in f.xs.iter().zip(&f.y1).enumerate() {
                let _ = write!(
                    d,
                    "{} {} {} ",
                    if i == 0 { "M" } else { "L" },
                    n(lay.px(*x)),
                    n(lay.py(*y))
                );
            }
            for (x, y) in f.xs.iter().zip(&f.y2).rev() {
                let _ = write!(d, "L {} {} ", n(lay.px(*x)), n(lay.py(*y)));
            }
            if !d.is_empty() {
                let _ = writeln!(out, "<path d=\"{}Z\"{}/>", d, paint("fill", f.color));
            }
        }
        Artist::Patches(p) => {
            let ring = |d: &mut String, r: &[[f64; 2]]| {
                for (i, pt) in r.iter().enumerate() {
                    let _ = write!(
                        d,
                        "{} {} {} ",
                        if i == 0 { "M" } else { "L" },
                        n(lay.px(pt[0])),
                        n(lay.py(pt[1]))
                    );
                }
                if !r.is_empty() {
                    d.push_str("Z ");
                }
            };
            let mut paths: Vec<(String, Rgba)> = Vec::new();
            match p.colors.as_slice() {
                [] => {}
                [c] => {
                    let mut d = String::new();
                    for r in &p.rings {
                        ring(&mut d, r);
                    }
                    paths.push((d, *c));
                }
                colors => {
                    for (r, c) in p.rings.iter().zip(colors) {
                        let mut d = String::new();
                        ring(&mut d, r);
                        paths.push((d, *c));
                    }
                }
            }
            for (d, c) in paths.iter().filter(|(d, _)| !d.is_empty()) {
                let _ = writeln!(
                    out,
                    "<path d=\"{}\" shape-rendering=\"crispEdges\"{}/>",
                    d.trim_end(),
                    paint("fill", *c)
                );
            }
        }
        Artist::Span(sp) => {
            // Data units along its axis, fractions of the box across it.
            let (x0, y0, x1, y1) = if sp.horizontal {
                let (l, _) = lay.axes_point(sp.across.0, 0.0);
                let (r, _) = lay.axes_point(sp.across.1, 0.0);
                (l, lay.py(sp.lo), r, lay.py(sp.hi))
            } else {
                let (_, b) = lay.axes_point(0.0, sp.across.0);
                let (_, t) = lay.axes_point(0.0, sp.across.1);
                (lay.px(sp.lo), b, lay.px(sp.hi), t)
            };
            if [x0, y0, x1, y1].iter().all(|v| v.is_finite()) {
                let edge = match sp.edge {
                    true => format!("{} stroke-width=\"1\"", paint("stroke", sp.color)),
                    false => String::new(),
                };
                let _ = writeln!(
                    out,
                    "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\"{}{edge}/>",
                    n(x0.min(x1)),
                    n(y0.min(y1)),
                    n((x1 - x0).abs()),
                    n((y1 - y0).abs()),
                    paint("fill", sp.color)
                );
            }
        }
        Artist::RefLine(r) => {
            let (x0, y0, x1, y1) = if r.horizontal {
                let y = lay.py(r.at);
                (lay.bx[0], y, lay.bx[0] + lay.bx[2], y)
            } else {
                let x = lay.px(r.at);
                (x, lay.bx[1], x, lay.bx[1] + lay.bx[3])
            };
            let _ = writeln!(
                out,
                "<path d=\"M {} {} L {} {}\" fill=\"none\"{}/>",
                n(x0),
                n(y0),
                n(x1),
                n(y1),
                stroke(r.color, r.width, r.style)
            );
        }
        Artist::Text(t) => {
            let anchor = match t.ha.as_str() {
                "center" => "middle",
                "right" => "end",
                _ => "start",
            };
            if let Some(arrow) = &t.arrow {
                annotation_arrow(out, lay, t, arrow);
            }
            let (x, y) = lay.text_at(t);
            text(
                out,
                &Text {
                    x,
                    y,
                    size: t.size,
                    anchor,
                    va: &t.va,
                    rotate: false,
                    color: t.color,
                    weight: None,
                },
                &t.text,
            );
        }
        Artist::Image(im) => {
            let [l, r, b, t] = im.extent();
            let (x0, x1) = (lay.px(l), lay.px(r));
            let (y0, y1) = (lay.py(t), lay.py(b));
            let (left, top) = (x0.min(x1), y0.min(y1));
            let (w, h) = ((x1 - x0).abs(), (y1 - y0).abs());
            if opts.pixel_rects {
                let (cw, ch) = (w / im.width.max(1) as f64, h / im.height.max(1) as f64);
                for r in 0..im.height {
                    for c in 0..im.width {
                        let i = 4 * (r * im.width + c);
                        let Some(p) = im.rgba.get(i..i + 4) else {
                            continue;
                        };
                        let col = Rgba(
                            f64::from(p[0]) / 255.0,
                            f64::from(p[1]) / 255.0,
                            f64::from(p[2]) / 255.0,
                            f64::from(p[3]) / 255.0,
                        );
                        // Slightly wider than a cell and not anti-aliased, so no seams show.
                        let _ = writeln!(
                            out,
                            "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" shape-rendering=\"crispEdges\"{}/>",
                            n(left + c as f64 * cw),
                            n(top + r as f64 * ch),
                            n(cw + 0.3),
                            n(ch + 0.3),
                            paint("fill", col)
                        );
                    }
                }
            } else if let Some(uri) = png_data_uri(im.width, im.height, &im.rgba) {
                let _ = writeln!(
                    out,
                    "<image x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" preserveAspectRatio=\"none\" image-rendering=\"optimizeSpeed\" style=\"image-rendering:pixelated\" xlink:href=\"{uri}\"/>",
                    n(left),
                    n(top),
                    n(w),
                    n(h)
                );
            }
        }
    }
}

/// The legend's entries: (label, the artist that gives its handle).
pub fn legend_entries(ax: &Axes) -> Vec<(String, &Artist)> {
    let Some(leg) = &ax.legend else {
        return Vec::new();
    };
    match &leg.labels {
        Some(labels) if leg.artists.is_some() => leg
            .artists
            .iter()
            .flatten()
            .zip(labels)
            .filter_map(|(i, l)| ax.artists.get(*i).map(|a| (l.clone(), a)))
            .collect(),
        Some(labels) => ax
            .artists
            .iter()
            .filter(|a| !matches!(a, Artist::Text(_) | Artist::Image(_)))
            .zip(labels)
            .map(|(a, l)| (l.clone(), a))
            .collect(),
        None => ax
            .artists
            .iter()
            .filter_map(|a| a.label().map(|l| (l.to_string(), a)))
            .collect(),
    }
}

/// The legend box (x, y, w, h in points) at location code `loc` inside the axes box.
fn legend_box(within: [f64; 4], w: f64, h: f64, loc: u8, fs: f64) -> [f64; 4] {
    let pad = 0.5 * fs;
    let [bx, by, bw, bh] = within;
    let (l, c, r) = (bx + pad, bx + (bw - w) / 2.0, bx + bw - w - pad);
    let (t, m, b) = (by + pad, by + (bh - h) / 2.0, by + bh - h - pad);
    let (x, y) = match loc {
        1 => (r, t),
        2 => (l, t),
        3 => (l, b),
        4 => (r, b),
        5 | 7 => (r, m),
        6 => (l, m),
        8 => (c, b),
        9 => (c, t),
        _ => (c, m),
    };
    [x, y, w, h]
}

/// 'best': the first location (in matplotlib's order) covering the fewest data points.
fn best_loc(ax: &Axes, lay: &AxesLayout, w: f64, h: f64, fs: f64) -> u8 {
    let mut pts = Vec::new();
    for a in &ax.artists {
        match a {
            Artist::Line(l) => pts.extend(
                l.xs.iter()
                    .zip(&l.ys)
                    .map(|(x, y)| (lay.px(*x), lay.py(*y))),
            ),
            Artist::Scatter(s) => pts.extend(
                s.xs.iter()
                    .zip(&s.ys)
                    .map(|(x, y)| (lay.px(*x), lay.py(*y))),
            ),
            Artist::Fill(f) => {
                pts.extend(
                    f.xs.iter()
                        .zip(&f.y1)
                        .map(|(x, y)| (lay.px(*x), lay.py(*y))),
                );
                pts.extend(
                    f.xs.iter()
                        .zip(&f.y2)
                        .map(|(x, y)| (lay.px(*x), lay.py(*y))),
                );
            }
            Artist::Bars(b) => pts.extend(b.rects.iter().flat_map(|r| {
                let (x, y) = if b.vertical {
                    (r[0] + r[1] / 2.0, r[2] + r[3])
                } else {
                    (r[2] + r[3], r[0] + r[1] / 2.0)
                };
                [(lay.px(x), lay.py(y))]
            })),
            _ => {}
        }
    }
    // Lines also count where their segments cross the box.
    let mut best = (usize::MAX, 1u8);
    for loc in 1..=10u8 {
        let [x, y, bw, bh] = legend_box(lay.bx, w, h, loc, fs);
        let inside = |p: &(f64, f64)| p.0 >= x && p.0 <= x + bw && p.1 >= y && p.1 <= y + bh;
        let mut bad = pts.iter().filter(|p| inside(p)).count();
        for a in &ax.artists {
            if let Artist::Line(l) = a {
                for i in 1..l.xs.len().min(l.ys.len()) {
                    let p0 = (lay.px(l.xs[i - 1]), lay.py(l.ys[i - 1]));
                    let p1 = (lay.px(l.xs[i]), lay.py(l.ys[i]));
                    // Sample the segment: a crossing without an end inside still counts.
                    if !inside(&p0)
                        && !inside(&p1)
                        && (1..8).any(|k| {
                            let t = f64::from(k) / 8.0;
                            inside(&(p0.0 + (p1.0 - p0.0) * t, p0.1 + (p1.1 - p0.1) * t))
                        })
                    {
                        bad += 1;
                    }
                }
            }
        }
        if bad < best.0 {
            best = (bad, loc);
        }
    }
    best.1
}

/// A legend's size (points) for its entries at font size `fs`.
fn legend_size(entries: &[(String, &Artist)], fs: f64) -> (f64, f64) {
    let (border, handle_len, handle_pad, spacing) = (0.4 * fs, 2.0 * fs, 0.8 * fs, 0.5 * fs);
    let row_h = font::height(fs) * 0.85;
    let text_w = entries
        .iter()
        .map(|(l, _)| font::width(l, fs))
        .fold(0.0, f64::max);
    let w = 2.0 * border + handle_len + handle_pad + text_w + 2.0 * 0.2 * fs;
    let h = 2.0 * border
        + entries.len() as f64 * row_h
        + (entries.len() as f64 - 1.0) * spacing
        + 2.0 * 0.2 * fs;
    (w, h)
}

fn legend(out: &mut String, ax: &Axes, lay: &AxesLayout) {
    let entries = legend_entries(ax);
    if entries.is_empty() {
        return;
    }
    let fs = ax.legend.as_ref().map_or(FONT, |l| l.fontsize);
    let (w, h) = legend_size(&entries, fs);
    let loc = ax.legend.as_ref().map_or(0, |l| l.loc);
    let loc = if loc == 0 {
        best_loc(ax, lay, w, h, fs)
    } else {
        loc
    };
    draw_legend(out, &entries, fs, legend_box(lay.bx, w, h, loc, fs));
}

/// `fig.legend()`: the entries it took, at its location in the figure's box ('best' is
/// 'upper right' there, as matplotlib's figure legends have no 'best').
fn figure_legend(out: &mut String, leg: &super::FigLegend, page: [f64; 4]) {
    let entries: Vec<(String, &Artist)> = leg.entries.iter().map(|(l, a)| (l.clone(), a)).collect();
    if entries.is_empty() {
        return;
    }
    let (w, h) = legend_size(&entries, leg.fontsize);
    let loc = if leg.loc == 0 { 1 } else { leg.loc };
    draw_legend(
        out,
        &entries,
        leg.fontsize,
        legend_box(page, w, h, loc, leg.fontsize),
    );
}

/// The legend's frame, handles and labels in the box `[x, y, w, h]` (points).
fn draw_legend(out: &mut String, entries: &[(String, &Artist)], fs: f64, [x, y, w, h]: [f64; 4]) {
    let (border, handle_len, handle_pad) = (0.4 * fs, 2.0 * fs, 0.8 * fs);
    let spacing = 0.5 * fs;
    let row_h = font::height(fs) * 0.85;
    let _ = writeln!(
        out,
        "<g id=\"legend\">\n<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" rx=\"2\" ry=\"2\" fill=\"#ffffff\" fill-opacity=\"0.8\" stroke=\"#cccccc\" stroke-width=\"1\"/>",
        n(x),
        n(y),
        n(w),
        n(h)
    );
    let x0 = x + border + 0.2 * fs;
    let mut cy = y + border + 0.2 * fs + row_h / 2.0;
    for (label, a) in entries {
        let hx = x0;
        match a {
            Artist::Line(l) => {
                if l.style != LineStyle::None {
                    let _ = writeln!(
                        out,
                        "<path d=\"M {} {} L {} {}\" fill=\"none\"{}/>",
                        n(hx),
                        n(cy),
                        n(hx + handle_len),
                        n(cy),
                        stroke(l.color, l.width, l.style)
                    );
                }
                if let Some(m) = l.marker {
                    marker_at(
                        out,
                        m,
                        l.marker_size,
                        hx + handle_len / 2.0,
                        cy,
                        l.color,
                        l.color,
                    );
                }
            }
            Artist::RefLine(r) => {
                let _ = writeln!(
                    out,
                    "<path d=\"M {} {} L {} {}\" fill=\"none\"{}/>",
                    n(hx),
                    n(cy),
                    n(hx + handle_len),
                    n(cy),
                    stroke(r.color, r.width, r.style)
                );
            }
            Artist::Scatter(s) => {
                let c = s.colors.first().copied().unwrap_or(Rgba::BLACK);
                let size = s.sizes.first().copied().unwrap_or(20.0).sqrt();
                marker_at(out, s.marker, size, hx + handle_len / 2.0, cy, c, c);
            }
            Artist::Bars(Bars { color, .. })
            | Artist::Fill(Fill { color, .. })
            | Artist::Span(super::Span { color, .. }) => {
                let _ = writeln!(
                    out,
                    "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\"{}/>",
                    n(hx),
                    n(cy - 0.35 * fs),
                    n(handle_len),
                    n(0.7 * fs),
                    paint("fill", *color)
                );
            }
            _ => {}
        }
        text(
            out,
            &Text {
                x: hx + handle_len + handle_pad,
                y: cy,
                size: fs,
                anchor: "start",
                va: "center",
                rotate: false,
                color: Rgba::BLACK,
                weight: None,
            },
            label,
        );
        cy += row_h + spacing;
    }
    out.push_str("</g>\n");
}

use super::{Bars, Fill};

fn axes(out: &mut String, ax: &Axes, lay: &AxesLayout, i: usize, opts: Options) {
    let [bx, by, bw, bh] = lay.bx;
    let _ = writeln!(out, "<g id=\"axes_{}\">", i + 1);
    if ax.axis_on && !ax.twin {
        let _ = writeln!(
            out,
            "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\"{}/>",
            n(bx),
            n(by),
            n(bw),
            n(bh),
            paint("fill", ax.facecolor)
        );
    }
    let clip = format!("clip{}", i + 1);
    let _ = writeln!(
        out,
        "<defs><clipPath id=\"{clip}\"><rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\"/></clipPath></defs>",
        n(bx),
        n(by),
        n(bw),
        n(bh)
    );
    let black = Rgba::BLACK;
    // Grid lines under the data (axes.axisbelow 'line').
    if ax.grid_on && ax.axis_on {
        let grid = ax.grid_color;
        let mut d = String::new();
        for (v, _) in &lay.x.major {
            let x = lay.px(*v);
            let _ = write!(d, "M {} {} L {} {} ", n(x), n(by), n(x), n(by + bh));
        }
        for (v, _) in &lay.y.major {
            let y = lay.py(*v);
            let _ = write!(d, "M {} {} L {} {} ", n(bx), n(y), n(bx + bw), n(y));
        }
        if !d.is_empty() {
            let _ = writeln!(
                out,
                "<path d=\"{}\" fill=\"none\"{} clip-path=\"url(#{clip})\"/>",
                d.trim_end(),
                stroke(grid, 0.8, LineStyle::Solid)
            );
        }
    }
    let _ = writeln!(out, "<g clip-path=\"url(#{clip})\">");
    // Spans are patches (zorder 1): under the lines whichever came first.
    let spans = ax.artists.iter().filter(|a| matches!(a, Artist::Span(_)));
    let rest = ax
        .artists
        .iter()
        .filter(|a| !matches!(a, Artist::Text(_) | Artist::Span(_)));
    for a in spans.chain(rest) {
        artist(out, a, lay, opts);
    }
    out.push_str("</g>\n");
    if ax.axis_on {
        // Ticks point out of the box; labels beyond them.
        let mut d = String::new();
        // The x axis's side: bottom, or top (`opposite`: `tick_top`, `twiny`).
        let (x_edge, x_dir) = if ax.x.opposite {
            (by, -1.0)
        } else {
            (by + bh, 1.0)
        };
        if ax.x.visible {
            for (v, _) in &lay.x.major {
                let x = lay.px(*v);
                let _ = write!(
                    d,
                    "M {} {} L {} {} ",
                    n(x),
                    n(x_edge),
                    n(x),
                    n(x_edge + x_dir * layout::TICK_LEN)
                );
            }
            for v in &lay.x.minor {
                let x = lay.px(*v);
                let _ = write!(
                    d,
                    "M {} {} L {} {} ",
                    n(x),
                    n(x_edge),
                    n(x),
                    n(x_edge + x_dir * layout::MINOR_TICK_LEN)
                );
            }
            if ax.x.mirror {
                let (far, dir) = (2.0 * by + bh - x_edge, -x_dir);
                for (v, _) in &lay.x.major {
                    let x = lay.px(*v);
                    let _ = write!(
                        d,
                        "M {} {} L {} {} ",
                        n(x),
                        n(far),
                        n(x),
                        n(far + dir * layout::TICK_LEN)
                    );
                }
            }
        }
        // The y axis's side: left, or right (`opposite`), and which way is out.
        let (edge, out_dir) = if ax.y.opposite {
            (bx + bw, 1.0)
        } else {
            (bx, -1.0)
        };
        if ax.y.visible {
            for (v, _) in &lay.y.major {
                let y = lay.py(*v);
                let _ = write!(
                    d,
                    "M {} {} L {} {} ",
                    n(edge),
                    n(y),
                    n(edge + out_dir * layout::TICK_LEN),
                    n(y)
                );
            }
            for v in &lay.y.minor {
                let y = lay.py(*v);
                let _ = write!(
                    d,
                    "M {} {} L {} {} ",
                    n(edge),
                    n(y),
                    n(edge + out_dir * layout::MINOR_TICK_LEN),
                    n(y)
                );
            }
        }
        if !d.is_empty() {
            let _ = writeln!(
                out,
                "<path d=\"{}\" fill=\"none\" stroke=\"#000000\" stroke-width=\"0.8\"/>",
                d.trim_end()
            );
        }
        let label_text = |x: f64, y: f64, anchor: &'static str, va: &'static str| Text {
            x,
            y,
            size: FONT,
            anchor,
            va,
            rotate: false,
            color: black,
            weight: None,
        };
        let mut xlab_y = x_edge;
        let x_va = if ax.x.opposite { "bottom" } else { "top" };
        if ax.x.visible {
            let size = ax.x.tick_size;
            let y = x_edge + x_dir * (layout::TICK_LEN + layout::TICK_PAD);
            let mut tallest = layout::TEXT_BOX * size;
            for (v, l) in &lay.x.major {
                let cx = lay.px(*v);
                if ax.x.tick_rotation != 0.0 && !l.text().is_empty() {
                    let (x0, x1, h) = layout::x_tick_extent(&ax.x, cx, l.width(size));
                    tallest = tallest.max(h);
                    rotated_label(
                        out,
                        ((x0 + x1) / 2.0, y + x_dir * h / 2.0),
                        size,
                        ax.x.tick_rotation,
                        &l.text(),
                    );
                } else {
                    tick_label(
                        out,
                        &Text {
                            size,
                            ..label_text(cx, y, "middle", x_va)
                        },
                        l,
                    );
                }
            }
            xlab_y = y + x_dir * tallest;
            text(
                out,
                &label_text(bx + bw, xlab_y, "end", x_va),
                &lay.x.offset,
            );
        }
        let mut ylab_x = edge;
        if ax.y.visible {
            let size = ax.y.tick_size;
            let x = edge + out_dir * (layout::TICK_LEN + layout::TICK_PAD);
            let anchor = if ax.y.opposite { "start" } else { "end" };
            let mut widest = 0.0f64;
            for (v, l) in &lay.y.major {
                let cy = lay.py(*v);
                if ax.y.tick_rotation != 0.0 && !l.text().is_empty() {
                    let (w, _, _) = layout::y_tick_extent(&ax.y, cy, l.width(size));
                    widest = widest.max(w);
                    let c = (x + out_dir * w / 2.0, cy);
                    rotated_label(out, c, size, ax.y.tick_rotation, &l.text());
                } else {
                    tick_label(
                        out,
                        &Text {
                            size,
                            ..label_text(x, cy, anchor, "center_baseline")
                        },
                        l,
                    );
                    widest = widest.max(l.width(size));
                }
            }
            ylab_x = x + out_dir * widest;
            text(
                out,
                &label_text(bx, by - 4.0, "start", "bottom"),
                &lay.y.offset,
            );
        }
        text(
            out,
            &Text {
                size: ax.x.label_size,
                // On top, matplotlib sets the label's baseline at the pad.
                ..label_text(
                    bx + bw / 2.0,
                    xlab_y + x_dir * layout::LABEL_PAD,
                    "middle",
                    if ax.x.opposite { "baseline" } else { "top" },
                )
            },
            &ax.x.label,
        );
        text(
            out,
            &Text {
                rotate: true,
                size: ax.y.label_size,
                ..label_text(
                    ylab_x + out_dir * layout::LABEL_PAD,
                    by + bh / 2.0,
                    "middle",
                    if ax.y.opposite { "top" } else { "bottom" },
                )
            },
            &ax.y.label,
        );
    }
    for a in &ax.artists {
        if matches!(a, Artist::Text(_)) {
            artist(out, a, lay, opts);
        }
    }
    if ax.axis_on && ax.spines == [true; 4] {
        let _ = writeln!(
            out,
            "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"none\"{} stroke-width=\"0.8\" stroke-linejoin=\"miter\" stroke-linecap=\"square\"/>",
            n(bx),
            n(by),
            n(bw),
            n(bh),
            paint("stroke", ax.edgecolor)
        );
    } else if ax.axis_on {
        // Only the spines left showing: left, right, bottom, top.
        let sides = [
            (bx, by, bx, by + bh),
            (bx + bw, by, bx + bw, by + bh),
            (bx, by + bh, bx + bw, by + bh),
            (bx, by, bx + bw, by),
        ];
        for ((x0, y0, x1, y1), shown) in sides.into_iter().zip(ax.spines) {
            if shown {
                let _ = writeln!(
                    out,
                    "<path d=\"M {} {} L {} {}\" fill=\"none\"{} stroke-width=\"0.8\" stroke-linecap=\"square\"/>",
                    n(x0),
                    n(y0),
                    n(x1),
                    n(y1),
                    paint("stroke", ax.edgecolor)
                );
            }
        }
    }
    legend(out, ax, lay);
    text(
        out,
        &Text {
            x: bx + bw / 2.0,
            y: by - layout::TITLE_PAD - layout::title_lift(ax, lay),
            size: ax.title_size,
            anchor: "middle",
            va: "bottom",
            rotate: false,
            color: black,
            weight: None,
        },
        &ax.title,
    );
    out.push_str("</g>\n");
}

/// The figure as an SVG document.
pub fn render(fig: &Figure, opts: Options) -> String {
    let fig = &*layout::resolve_shared(fig);
    let (w, h) = (fig.size.0 * 72.0, fig.size.1 * 72.0);
    let [x0, y0, x1, y1] = page(fig, opts);
    let (pw, ph) = (x1 - x0, y1 - y0);
    let mut out = String::new();
    let _ = writeln!(
        out,
        "<?xml version=\"1.0\" encoding=\"utf-8\" standalone=\"no\"?>\n<svg xmlns=\"http://www.w3.org/2000/svg\" xmlns:xlink=\"http://www.w3.org/1999/xlink\" width=\"{}pt\" height=\"{}pt\" viewBox=\"0 0 {} {}\" version=\"1.1\">",
        n(pw),
        n(ph),
        n(pw),
        n(ph)
    );
    // A cut page starts at 0 0 as matplotlib's does: the drawing moves instead.
    let shift = if (x0, y0) == (0.0, 0.0) {
        String::new()
    } else {
        format!(" transform=\"translate({} {})\"", n(-x0), n(-y0))
    };
    let _ = writeln!(
        out,
        "<g id=\"figure_{}\"{shift}>\n<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\"{}/>",
        fig.number,
        n(x0),
        n(y0),
        n(pw),
        n(ph),
        paint("fill", fig.facecolor)
    );
    for (i, ax) in fig.axes.iter().enumerate().filter(|(_, a)| !a.removed) {
        let lay = layout::axes_layout(ax, fig.size);
        axes(&mut out, ax, &lay, i, opts);
    }
    for leg in &fig.legends {
        figure_legend(&mut out, leg, [0.0, 0.0, w, h]);
    }
    for t in &fig.texts {
        // Turned 90°, the box's left edge (ha) is the text's top and its centre (va) the
        // middle of the line.
        let (anchor, va) = match (t.vertical, t.ha.as_str(), t.va.as_str()) {
            (false, "center", va) => ("middle", va),
            (false, "right", va) => ("end", va),
            (false, _, va) => ("start", va),
            (true, ha, va) => (
                match va {
                    "top" => "end",
                    "bottom" => "start",
                    _ => "middle",
                },
                match ha {
                    "left" => "top",
                    "right" => "bottom",
                    _ => "center",
                },
            ),
        };
        text(
            &mut out,
            &Text {
                x: t.x * w,
                y: (1.0 - t.y) * h,
                size: t.size,
                anchor,
                va,
                rotate: t.vertical,
                color: t.color,
                weight: None,
            },
            &t.text,
        );
    }
    if let Some(s) = &fig.suptitle {
        text(
            &mut out,
            &Text {
                x: w / 2.0,
                y: 0.02 * h,
                size: fig.suptitle_size,
                anchor: "middle",
                va: "top",
                rotate: false,
                color: Rgba::BLACK,
                weight: None,
            },
            s,
        );
    }
    out.push_str("</g>\n</svg>\n");
    out
}
