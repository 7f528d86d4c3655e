//! Where everything goes on the page: each axes' box in points (y down, as SVG), its view
//! limits, ticks and labels; `tight_layout`'s margins. The SVG writer and the terminal
//! drawing both start from this.

use super::font;
use super::ticks;
use super::{Artist, Axes, Figure, Scale};

/// Sizes in points (matplotlib's rcParams defaults).
pub const FONT: f64 = 10.0;
pub const TITLE_FONT: f64 = 12.0;
pub const SUPTITLE_FONT: f64 = 12.0;
pub const TICK_LEN: f64 = 3.5;
pub const MINOR_TICK_LEN: f64 = 2.0;
pub const TICK_PAD: f64 = 3.5;
pub const LABEL_PAD: f64 = 4.0;
pub const TITLE_PAD: f64 = 6.0;

/// The height of the box matplotlib lays a line of text out in, per pt of size (a tick
/// label of digits; measured from matplotlib 3.11's text extents).
pub const TEXT_BOX: f64 = 1.0;
/// The same for an axis label or other words (letters reach further).
pub const LABEL_BOX: f64 = 1.04;
/// How much of a text box is above the baseline (the rest is the descent).
pub const BOX_ASCENT: f64 = 0.76;

#[derive(Clone, Debug)]
pub enum TickLabel {
    Plain(String),
    /// 10 to this power.
    Pow10(String),
}

impl TickLabel {
    pub fn width(&self, size: f64) -> f64 {
        match self {
            TickLabel::Plain(s) => font::width(s, size),
            TickLabel::Pow10(e) => font::width("10", size) + font::width(e, size * 0.7),
        }
    }
    pub fn text(&self) -> String {
        match self {
            TickLabel::Plain(s) => s.clone(),
            // Superscript digits, as the terminal has no raised text.
            TickLabel::Pow10(e) => {
                let sup: String = e
                    .chars()
                    .map(|c| match c {
                        '0' => '⁰',
                        '1' => '¹',
                        '2' => '²',
                        '3' => '³',
                        '4' => '⁴',
                        '5' => '⁵',
                        '6' => '⁶',
                        '7' => '⁷',
                        '8' => '⁸',
                        '9' => '⁹',
                        _ => '⁻',
                    })
                    .collect();
                format!("10{sup}")
            }
        }
    }
}

#[derive(Clone, Debug)]
pub struct AxisLayout {
    pub view: (f64, f64),
    pub scale: Scale,
    pub major: Vec<(f64, TickLabel)>,
    pub minor: Vec<f64>,
    pub offset: String,
}

impl AxisLayout {
    /// The position of data value `v` along the axis as a fraction from the low end.
    pub fn frac(&self, v: f64) -> f64 {
        let t = |x: f64| match self.scale {
            Scale::Linear => x,
            Scale::Log => {
                if x > 0.0 {
                    x.log10()
                } else {
                    f64::NAN
                }
            }
        };
        (t(v) - t(self.view.0)) / (t(self.view.1) - t(self.view.0))
    }
}

#[derive(Clone, Debug)]
pub struct AxesLayout {
    /// x, y (top), width, height in points.
    pub bx: [f64; 4],
    pub x: AxisLayout,
    pub y: AxisLayout,
}

impl AxesLayout {
    /// Where text `t` is anchored, in points: its data position moved by its offset.
    pub fn text_at(&self, t: &super::Text) -> (f64, f64) {
        let (x, y) = if t.in_axes {
            self.axes_point(t.x, t.y)
        } else {
            (self.px(t.x), self.py(t.y))
        };
        (x + t.offset.0, y - t.offset.1)
    }
    /// The point at fractions (fx, fy) of the box, fy up (`transAxes`).
    pub fn axes_point(&self, fx: f64, fy: f64) -> (f64, f64) {
        (
            self.bx[0] + fx * self.bx[2],
            self.bx[1] + self.bx[3] - fy * self.bx[3],
        )
    }
    /// The box text `t` covers, in points (left, top, right, bottom); None where its
    /// position is not finite (a log axis at zero).
    pub fn text_box(&self, t: &super::Text) -> Option<[f64; 4]> {
        let (px, py) = self.text_at(t);
        let size = (font::width(&t.text, t.size), LABEL_BOX * t.size);
        let b = aligned_box((px, py), size, &t.ha, &t.va, BOX_ASCENT * t.size);
        (px.is_finite() && py.is_finite()).then_some(b)
    }
    pub fn px(&self, v: f64) -> f64 {
        self.bx[0] + self.x.frac(v) * self.bx[2]
    }
    pub fn py(&self, v: f64) -> f64 {
        self.bx[1] + self.bx[3] - self.y.frac(v) * self.bx[3]
    }
}

/// Data values and sticky edges of the artists, for one axis.
fn data_of(ax: &Axes, is_x: bool) -> (Vec<f64>, Vec<f64>) {
    let (mut data, mut sticky) = (Vec::new(), Vec::new());
    for a in &ax.artists {
        match a {
            Artist::Line(l) if l.in_axes => {}
            Artist::Line(l) => data.extend(if is_x { &l.xs } else { &l.ys }),
            Artist::Scatter(s) => data.extend(if is_x { &s.xs } else { &s.ys }),
            Artist::Bars(b) => {
                for r in &b.rects {
                    let (lo, hi) = if is_x == b.vertical {
                        (r[0], r[0] + r[1])
                    } else {
                        (r[2], r[2] + r[3])
                    };
                    data.push(lo);
                    data.push(hi);
                    if is_x != b.vertical {
                        sticky.push(r[2]);
                    }
                }
            }
            Artist::Fill(f) => {
                if is_x {
                    data.extend(&f.xs)
                } else {
                    data.extend(&f.y1);
                    data.extend(&f.y2);
                }
            }
            Artist::RefLine(r) => {
                if r.horizontal != is_x {
                    data.push(r.at)
                }
            }
            Artist::Text(_) => {}
            Artist::Span(sp) => {
                if sp.horizontal != is_x {
                    data.extend([sp.lo, sp.hi])
                }
            }
            Artist::Image(im) => {
                let [l, r, b, t] = im.extent();
                let ends = if is_x { [l, r] } else { [b, t] };
                data.extend(ends);
                sticky.extend(ends);
            }
            // A mesh or a contour set's grid: its bounds are sticky, as matplotlib's are.
            Artist::Patches(p) => {
                let k = usize::from(!is_x);
                let vals = p.rings.iter().flatten().map(|pt| pt[k]);
                let (lo, hi) = vals
                    .filter(|v| v.is_finite())
                    .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), v| {
                        (a.min(v), b.max(v))
                    });
                if lo <= hi {
                    data.extend([lo, hi]);
                    sticky.extend([lo, hi]);
                }
            }
        }
    }
    (data, sticky)
}

/// Whether `ax` shows an image in pixel coordinates, whose rows go down the y axis.
fn has_image(ax: &Axes) -> bool {
    ax.artists
        .iter()
        .any(|a| matches!(a, Artist::Image(im) if im.extent.is_none()))
}

/// The view limits of one axis: what the program set, else autoscaled.
pub fn view_limits(ax: &Axes, is_x: bool) -> (f64, f64) {
    let spec = if is_x { &ax.x } else { &ax.y };
    let (data, sticky) = data_of(ax, is_x);
    let auto = || ticks::autoscale(&data, &sticky, spec.scale, spec.margin);
    let (mut lo, mut hi) = match spec.lim {
        (Some(a), Some(b)) => (a, b),
        (Some(a), None) => (a, auto().1),
        (None, Some(b)) => (auto().0, b),
        (None, None) => auto(),
    };
    // An image's rows go down: the y axis is inverted.
    let invert = spec.inverted || (!is_x && has_image(ax) && spec.lim == (None, None));
    if invert && lo < hi {
        std::mem::swap(&mut lo, &mut hi);
    }
    (lo, hi)
}

fn axis_layout(ax: &Axes, is_x: bool, length: f64) -> AxisLayout {
    let spec = if is_x { &ax.x } else { &ax.y };
    let view = view_limits(ax, is_x);
    let (lo, hi) = (view.0.min(view.1), view.0.max(view.1));
    let space = ticks::tick_space(length, is_x, spec.tick_size);
    let (locs, minor) = locate(spec, lo, hi, space);
    let eps = (hi - lo).abs() * 1e-10;
    let inside = |v: &f64| *v >= lo - eps && *v <= hi + eps;
    let visible: Vec<f64> = locs.iter().copied().filter(inside).collect();
    let minor: Vec<f64> = minor.into_iter().filter(inside).collect();
    let (labels, offset): (Vec<TickLabel>, String) = if let Some(f) = spec
        .formatter
        .as_ref()
        .filter(|_| spec.ticklabels.is_none())
    {
        let (l, o) = f.labels(&visible, lo, hi);
        (l.into_iter().map(TickLabel::Plain).collect(), o)
    } else if let Some(given) = &spec.ticklabels {
        // Labels given with the ticks belong to them in order, whichever are visible.
        let all: Vec<(f64, String)> = locs.iter().copied().zip(given.iter().cloned()).collect();
        (
            visible
                .iter()
                .map(|v| {
                    all.iter()
                        .find(|(t, _)| t == v)
                        .map(|(_, s)| TickLabel::Plain(s.clone()))
                        .unwrap_or(TickLabel::Plain(String::new()))
                })
                .collect(),
            String::new(),
        )
    } else if spec.scale == Scale::Log && spec.ticks.is_none() {
        (
            visible
                .iter()
                .map(|v| match ticks::log_exponent(*v) {
                    Some(e) => TickLabel::Pow10(e),
                    None => TickLabel::Plain(String::new()),
                })
                .collect(),
            String::new(),
        )
    } else {
        let (l, o) = ticks::scalar_labels(&visible, (lo, hi));
        (l.into_iter().map(TickLabel::Plain).collect(), o)
    };
    // The inner subplots of a shared axis keep their ticks but show no labels.
    let labels: Vec<TickLabel> = if spec.ticklabels_on {
        labels
    } else {
        labels
            .iter()
            .map(|_| TickLabel::Plain(String::new()))
            .collect()
    };
    let offset = if spec.ticklabels_on {
        offset
    } else {
        String::new()
    };
    AxisLayout {
        view,
        scale: spec.scale,
        major: visible.into_iter().zip(labels).collect(),
        minor: if spec.scale == Scale::Log || spec.minor_locator.is_some() {
            minor
        } else {
            Vec::new()
        },
        offset,
    }
}

/// One axis's major and minor tick locations over the view (lo, hi): the ticks the program
/// gave, else its locator's, else the scale's default locator.
fn locate(spec: &super::AxisSpec, lo: f64, hi: f64, space: usize) -> (Vec<f64>, Vec<f64>) {
    let (major, minor) = match (&spec.ticks, &spec.locator, spec.scale) {
        (Some(t), _, _) => (t.clone(), Vec::new()),
        (None, Some(l), _) => (l.values(lo, hi, space), Vec::new()),
        (None, None, Scale::Linear) => (ticks::max_n_locator(lo, hi, space), Vec::new()),
        (None, None, Scale::Log) => ticks::log_locator(lo.max(f64::MIN_POSITIVE), hi, space),
    };
    match &spec.minor_locator {
        Some(m) => {
            let minor = m.minor_values(&major, lo, hi);
            (major, minor)
        }
        None => (major, minor),
    }
}

/// One axis's major ticks as a program reads them before drawing (`get_xticks()`,
/// `get_xticklabels()`): the locator's locations, out-of-view ones included as matplotlib's
/// locators return them, and the labels the formatter gives them all.
pub fn major_ticks(ax: &Axes, size: (f64, f64), is_x: bool) -> (Vec<f64>, Vec<String>) {
    let spec = if is_x { &ax.x } else { &ax.y };
    let view = view_limits(ax, is_x);
    let (lo, hi) = (view.0.min(view.1), view.0.max(view.1));
    let [_, _, w, h] = box_of(ax, size);
    let space = ticks::tick_space(if is_x { w } else { h }, is_x, spec.tick_size);
    let locs = locate(spec, lo, hi, space).0;
    let labels = match &spec.ticklabels {
        None if spec.formatter.is_some() => match &spec.formatter {
            Some(f) => f.labels(&locs, lo, hi).0,
            None => Vec::new(),
        },
        Some(given) => (0..locs.len())
            .map(|i| given.get(i).cloned().unwrap_or_default())
            .collect(),
        None if spec.scale == Scale::Log => locs
            .iter()
            .map(|v| match ticks::log_exponent(*v) {
                // The drawn exponent has a Unicode minus; mathtext source has '-'.
                Some(e) => format!("$\\mathdefault{{10^{{{}}}}}$", e.replace('\u{2212}', "-")),
                None => String::new(),
            })
            .collect(),
        None => ticks::scalar_labels(&locs, (lo, hi)).0,
    };
    (locs, labels)
}

/// The box of `ax` in points on a figure of `size` inches.
fn box_of(ax: &Axes, size: (f64, f64)) -> [f64; 4] {
    let (w, h) = (size.0 * 72.0, size.1 * 72.0);
    let [l, b, rw, rh] = ax.rect;
    [l * w, (1.0 - b - rh) * h, rw * w, rh * h]
}

pub fn axes_layout(ax: &Axes, size: (f64, f64)) -> AxesLayout {
    let mut bx = box_of(ax, size);
    let mut x = axis_layout(ax, true, bx[2]);
    let mut y = axis_layout(ax, false, bx[3]);
    // Equal aspect shrinks the box so one data unit is as long on both axes; a box aspect
    // fixes its height over width. Either way the box sits at its anchor.
    let want = if ax.equal_aspect {
        let (dx, dy) = ((x.view.1 - x.view.0).abs(), (y.view.1 - y.view.0).abs());
        (dx > 0.0 && dy > 0.0).then(|| dy / dx)
    } else {
        ax.box_aspect.filter(|a| *a > 0.0 && a.is_finite())
    };
    if let Some(want) = want {
        let have = bx[3] / bx[2];
        let (ax_, ay) = ax.anchor;
        if have > want {
            let nh = bx[2] * want;
            // y runs down the page: anchor 1 is the top.
            bx[1] += (bx[3] - nh) * (1.0 - ay);
            bx[3] = nh;
        } else {
            let nw = bx[3] / want;
            bx[0] += (bx[2] - nw) * ax_;
            bx[2] = nw;
        }
        x = axis_layout(ax, true, bx[2]);
        y = axis_layout(ax, false, bx[3]);
    }
    AxesLayout { bx, x, y }
}

/// How far the decorations of `ax` reach beyond its box: left, right, top, bottom (points),
/// with text boxes as matplotlib measures them (so `tight_layout` and `bbox_inches='tight'`
/// leave the room matplotlib leaves).
fn decorations(ax: &Axes, lay: &AxesLayout) -> [f64; 4] {
    // A title sits TITLE_PAD above the box on its baseline; its descent stays inside the pad.
    let title = if ax.title.is_empty() {
        0.0
    } else {
        TITLE_PAD + BOX_ASCENT * ax.title_size
    };
    if !ax.axis_on {
        return [0.0, 0.0, title, 0.0];
    }
    let (mut l, mut r, mut t, mut b) = (0.0f64, 0.0f64, title, 0.0f64);
    if ax.y.visible {
        let size = ax.y.tick_size;
        let mut w = 0.0f64;
        // Labels at the ends hang over the box's top and bottom.
        for (v, s) in &lay.y.major {
            if s.text().is_empty() {
                continue;
            }
            let (bw, y0, y1) = y_tick_extent(&ax.y, lay.py(*v), s.width(size));
            w = w.max(bw);
            t = t.max(lay.bx[1] - y0);
            b = b.max(y1 - (lay.bx[1] + lay.bx[3]));
        }
        let mut side = TICK_LEN + TICK_PAD + w;
        if !ax.y.label.is_empty() {
            side += LABEL_PAD + LABEL_BOX * ax.y.label_size;
        }
        if ax.y.opposite {
            r = side;
        } else {
            l = side;
        }
    }
    if ax.x.visible {
        for (v, s) in &lay.x.major {
            if s.text().is_empty() {
                continue;
            }
            let (x0, x1, _) = x_tick_extent(&ax.x, lay.px(*v), s.width(ax.x.tick_size));
            // Labels at the ends hang over the box's sides.
            l = l.max(lay.bx[0] - x0);
            r = r.max(x1 - (lay.bx[0] + lay.bx[2]));
        }
        let side = x_axis_depth(ax, lay);
        if ax.x.opposite {
            t = t.max(title + side);
        } else {
            b = b.max(side);
        }
    }
    [l, r, t, b]
}

/// How far an x axis's ticks, tick labels and label reach from the box's edge (points).
fn x_axis_depth(ax: &Axes, lay: &AxesLayout) -> f64 {
    let tallest = lay
        .x
        .major
        .iter()
        .filter(|(_, s)| !s.text().is_empty())
        .map(|(v, s)| x_tick_extent(&ax.x, lay.px(*v), s.width(ax.x.tick_size)).2)
        .fold(0.0f64, f64::max);
    let mut depth = TICK_LEN + TICK_PAD + tallest;
    if !ax.x.label.is_empty() {
        depth += LABEL_PAD + LABEL_BOX * ax.x.label_size;
    }
    depth
}

/// How far the title rises to clear an x axis on top (`tick_top`, `twiny`), as matplotlib
/// moves it above the top tick labels; 0 otherwise.
pub fn title_lift(ax: &Axes, lay: &AxesLayout) -> f64 {
    if ax.axis_on && ax.x.visible && ax.x.opposite {
        x_axis_depth(ax, lay)
    } else {
        0.0
    }
}

/// The horizontal span and height of an x tick label of width `w` at `cx`, rotated as the
/// axis says: matplotlib aligns the rotated label's bounding box (centred unless `ha`).
pub fn x_tick_extent(spec: &super::AxisSpec, cx: f64, w: f64) -> (f64, f64, f64) {
    let (bw, bh) = rotated_box(spec, w);
    match spec.tick_ha.as_deref() {
        Some("right") => (cx - bw, cx, bh),
        Some("left") => (cx, cx + bw, bh),
        _ => (cx - bw / 2.0, cx + bw / 2.0, bh),
    }
}

/// The width, top and bottom of a y tick label of width `w` centred at `cy`, rotated as the
/// axis says: matplotlib puts the rotated label's bounding box right of the tick, centred.
pub fn y_tick_extent(spec: &super::AxisSpec, cy: f64, w: f64) -> (f64, f64, f64) {
    let (bw, bh) = rotated_box(spec, w);
    (bw, cy - bh / 2.0, cy + bh / 2.0)
}

/// The bounding box (width, height) of a tick label of width `w` rotated by the axis's angle.
fn rotated_box(spec: &super::AxisSpec, w: f64) -> (f64, f64) {
    let h = TEXT_BOX * spec.tick_size;
    let a = spec.tick_rotation.to_radians();
    (
        w * a.cos().abs() + h * a.sin().abs(),
        w * a.sin().abs() + h * a.cos().abs(),
    )
}

/// The figure with shared axes' limits resolved (`subplots(sharex=True)`): every axes of a
/// group shows the union of the group's data, or the limits one of them was given.
pub fn resolve_shared(fig: &Figure) -> std::borrow::Cow<'_, Figure> {
    if !fig
        .axes
        .iter()
        .any(|a| a.x.share.is_some() || a.y.share.is_some())
    {
        return std::borrow::Cow::Borrowed(fig);
    }
    let mut out = fig.clone();
    for is_x in [true, false] {
        let spec = |a: &Axes| if is_x { a.x.clone() } else { a.y.clone() };
        let groups: Vec<usize> = {
            let mut g: Vec<usize> = fig.axes.iter().filter_map(|a| spec(a).share).collect();
            g.sort_unstable();
            g.dedup();
            g
        };
        for g in groups {
            let members: Vec<usize> = (0..fig.axes.len())
                .filter(|&i| spec(&fig.axes[i]).share == Some(g))
                .collect();
            let given = members.iter().find_map(|&i| {
                let s = spec(&fig.axes[i]);
                (s.lim != (None, None)).then_some(s.lim)
            });
            let lim = match given {
                Some((Some(a), Some(b))) => (a, b),
                _ => {
                    let (mut data, mut sticky) = (Vec::new(), Vec::new());
                    for &i in &members {
                        let (d, s) = data_of(&fig.axes[i], is_x);
                        data.extend(d);
                        sticky.extend(s);
                    }
                    let scale = spec(&fig.axes[members[0]]).scale;
                    let auto = ticks::autoscale(&data, &sticky, scale, 0.05);
                    match given {
                        Some((Some(a), None)) => (a, auto.1),
                        Some((None, Some(b))) => (auto.0, b),
                        _ => auto,
                    }
                }
            };
            // A shared axis shares its locator and formatter: ticks set on one show on all.
            let ticks = members.iter().find_map(|&i| {
                let s = spec(&fig.axes[i]);
                s.ticks.clone().map(|t| (t, s.ticklabels.clone()))
            });
            for &i in &members {
                if let Some((t, l)) = &ticks {
                    let s = if is_x {
                        &mut out.axes[i].x
                    } else {
                        &mut out.axes[i].y
                    };
                    s.ticks = Some(t.clone());
                    s.ticklabels = l.clone();
                }
                // An image's y axis still points down.
                let flip = !is_x && given.is_none() && has_image(&fig.axes[i]);
                let s = if is_x {
                    &mut out.axes[i].x
                } else {
                    &mut out.axes[i].y
                };
                s.lim = if flip {
                    (Some(lim.1), Some(lim.0))
                } else {
                    (Some(lim.0), Some(lim.1))
                };
            }
        }
    }
    std::borrow::Cow::Owned(out)
}

/// The page `savefig(bbox_inches='tight')` and matplotlib-inline (which saves that way) cut:
/// x0, y0, x1, y1 in points, the drawn content's bounds plus `pad_inches` (0.1 in). An empty
/// figure keeps its whole page, padded, as matplotlib's does.
pub fn tight_bbox(fig: &Figure, pad_inches: f64) -> [f64; 4] {
    let fig = &*resolve_shared(fig);
    let (w, h) = (fig.size.0 * 72.0, fig.size.1 * 72.0);
    let mut b: Option<[f64; 4]> = None;
    let mut grow = |r: [f64; 4]| {
        b = Some(match b {
            None => r,
            Some(o) => [
                o[0].min(r[0]),
                o[1].min(r[1]),
                o[2].max(r[2]),
                o[3].max(r[3]),
            ],
        })
    };
    for ax in fig.axes.iter().filter(|a| !a.removed) {
        let lay = axes_layout(ax, fig.size);
        let [l, r, t, bo] = decorations(ax, &lay);
        let [x, y, bw, bh] = lay.bx;
        grow([x - l, y - t, x + bw + r, y + bh + bo]);
        // Text placed outside the axes box widens the page too.
        for a in &ax.artists {
            if let Artist::Text(tx) = a {
                if let Some(b) = lay.text_box(tx) {
                    grow(b);
                }
            }
        }
    }
    for t in &fig.texts {
        grow(fig_text_box(t, w, h));
    }
    if let Some(s) = &fig.suptitle {
        let tw = font::width(s, fig.suptitle_size);
        grow([
            w / 2.0 - tw / 2.0,
            0.02 * h,
            w / 2.0 + tw / 2.0,
            0.02 * h + LABEL_BOX * fig.suptitle_size,
        ]);
    }
    let pad = pad_inches * 72.0;
    let [x0, y0, x1, y1] = b.unwrap_or([0.0, 0.0, w, h]);
    [x0 - pad, y0 - pad, x1 + pad, y1 + pad]
}

/// The box (left, top, right, bottom, in points) of text placed in figure fractions on a
/// page of `w` x `h` points.
pub fn fig_text_box(t: &super::FigText, w: f64, h: f64) -> [f64; 4] {
    let (along, across) = (font::width(&t.text, t.size), LABEL_BOX * t.size);
    let size = if t.vertical {
        (across, along)
    } else {
        (along, across)
    };
    let at = (t.x * w, (1.0 - t.y) * h);
    aligned_box(at, size, &t.ha, &t.va, BOX_ASCENT * t.size)
}

/// The box (left, top, right, bottom) of a `w` x `h` text box aligned at `at` by `ha` and
/// `va` (a baseline `ascent` below the top), as matplotlib aligns a text's extent.
fn aligned_box(at: (f64, f64), (w, h): (f64, f64), ha: &str, va: &str, ascent: f64) -> [f64; 4] {
    let (x, y) = at;
    let x0 = match ha {
        "center" => x - w / 2.0,
        "right" => x - w,
        _ => x,
    };
    let y0 = match va {
        "top" => y,
        "center" | "center_baseline" => y - h / 2.0,
        "bottom" => y - h,
        _ => y - ascent,
    };
    [x0, y0, x0 + w, y0 + h]
}

/// `tight_layout()`: margins and gaps between subplots just wide enough for their tick labels,
/// axis labels and titles, with matplotlib's padding of 1.08 font sizes.
pub fn tight_layout(fig: &mut Figure) {
    let resolved = resolve_shared(fig).into_owned();
    let (w, h) = (fig.size.0 * 72.0, fig.size.1 * 72.0);
    let pad = 1.08 * FONT;
    let (nrows, ncols) = fig
        .axes
        .iter()
        .filter_map(|a| a.grid)
        .map(|(r, c, _, _)| (r, c))
        .next()
        .unwrap_or((1, 1));
    let (mut left, mut right) = (vec![0.0f64; ncols], vec![0.0f64; ncols]);
    let (mut top, mut bottom) = (vec![0.0f64; nrows], vec![0.0f64; nrows]);
    let cell_of = |i: usize, ax: &Axes| match ax.grid {
        Some((nr, nc, r, c)) if nr == nrows && nc == ncols => Some((r, c)),
        None if ax.colorbar.is_none() && single_parent(&resolved, i) => Some((0, 0)),
        _ => None,
    };
    for (i, ax) in resolved.axes.iter().enumerate().filter(|(_, a)| !a.removed) {
        let lay = axes_layout(ax, fig.size);
        let [l, mut r, t, b] = decorations(ax, &lay);
        let (row, col) = match (ax.colorbar, cell_of(i, ax)) {
            (None, Some(cell)) => cell,
            // A colorbar's labels reach past its parent's cell by what its own reach
            // exceeds the room between its box and the cell's edge.
            (Some(c), _) => match resolved.axes.get(c.parent) {
                Some(p) => match cell_of(c.parent, p) {
                    Some((_, col)) => {
                        let cell_right = (ax.rect[0] + ax.rect[2]) * w;
                        r -= cell_right - (lay.bx[0] + lay.bx[2]);
                        right[col] = right[col].max(r);
                        continue;
                    }
                    None => continue,
                },
                None => continue,
            },
            (None, None) => continue,
        };
        left[col] = left[col].max(l);
        right[col] = right[col].max(r);
        top[row] = top[row].max(t);
        bottom[row] = bottom[row].max(b);
    }
    let sup = if fig.suptitle.is_some() {
        LABEL_BOX * fig.suptitle_size + 0.02 * h
    } else {
        0.0
    };
    let x0 = left[0] + pad;
    let x1 = w - right[ncols - 1] - pad;
    let y0 = top[0] + pad + sup;
    let y1 = h - bottom[nrows - 1] - pad;
    let gaps_w: f64 = (0..ncols.saturating_sub(1))
        .map(|c| right[c] + left[c + 1] + pad)
        .sum();
    let gaps_h: f64 = (0..nrows.saturating_sub(1))
        .map(|r| bottom[r] + top[r + 1] + pad)
        .sum();
    let cw = ((x1 - x0 - gaps_w) / ncols as f64).max(1.0);
    let ch = ((y1 - y0 - gaps_h) / nrows as f64).max(1.0);
    let mut xs = vec![x0; ncols];
    for c in 1..ncols {
        xs[c] = xs[c - 1] + cw + right[c - 1] + left[c] + pad;
    }
    let mut ys = vec![y0; nrows];
    for r in 1..nrows {
        ys[r] = ys[r - 1] + ch + bottom[r - 1] + top[r] + pad;
    }
    for (i, ax) in fig.axes.iter_mut().enumerate() {
        let Some((row, col)) = cell_of(i, ax) else {
            continue;
        };
        ax.rect = [xs[col] / w, 1.0 - (ys[row] + ch) / h, cw / w, ch / h];
    }
    // A colorbar takes its share of its parent's new cell again.
    for i in 0..fig.axes.len() {
        let Some(c) = fig.axes[i].colorbar else {
            continue;
        };
        if let Some(parent) = fig.axes.get_mut(c.parent) {
            if cell_of(c.parent, &resolved.axes[c.parent]).is_some() {
                let (main, cell) = super::colorbar_split(parent.rect, &c);
                parent.rect = main;
                fig.axes[i].rect = cell;
            }
        }
    }
}

/// Whether axes `i` is the only axes of the figure but for colorbars.
fn single_parent(fig: &Figure, i: usize) -> bool {
    fig.axes
        .iter()
        .enumerate()
        .all(|(j, a)| j == i || a.colorbar.is_some())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::display::plot::{Figure, Line, LineStyle, Rgba, DEFAULT_MARGINS};

    #[test]
    fn default_axes_box_and_ticks() {
        let mut fig = Figure::new(1, (6.4, 4.8), 100.0);
        let mut ax = Axes::new(crate::display::plot::grid_rect(
            1,
            1,
            0,
            0,
            DEFAULT_MARGINS,
            0.2,
            0.2,
        ));
        ax.artists.push(Artist::Line(Line {
            xs: vec![0.0, 1.0, 2.0],
            ys: vec![0.0, 1.0, 4.0],
            color: Rgba::BLACK,
            width: 1.5,
            style: LineStyle::Solid,
            marker: None,
            marker_size: 6.0,
            label: None,
            in_axes: false,
            marker_face: None,
        }));
        fig.axes.push(ax);
        let lay = axes_layout(&fig.axes[0], fig.size);
        assert!((lay.bx[0] - 57.6).abs() < 1e-9 && (lay.bx[2] - 357.12).abs() < 1e-9);
        let labels: Vec<String> = lay.y.major.iter().map(|(_, l)| l.text()).collect();
        assert_eq!(
            labels,
            ["0.0", "0.5", "1.0", "1.5", "2.0", "2.5", "3.0", "3.5", "4.0"]
        );
    }
}
