//! Charts composed of the primitive artists: `boxplot` (lines for boxes, whiskers, caps and
//! medians, hollow markers for fliers, with `cbook.boxplot_stats`' quartile and whisker
//! rules), `pie` (polygon wedges and `Text` labels, `autopct`) and `stem` (segments,
//! markers and a baseline). Each is also pyplot's function on `gca()`.

use std::rc::Rc;

use crate::display::plot::{color, Artist, Fill, Line, LineStyle, Rgba, Text};
use crate::object::ops::as_f64;
use crate::object::value::{Args, Dict, HashKey, Value};
use crate::object::{Exc, ExcKind, Interpreter};

use super::data::{self, numbers, text_of};
use super::objects::{self, AxesObj};
use super::{finish_kw, kw_f64, kw_val, AxFn};

pub(crate) const AXES_METHODS: &[(&str, AxFn)] =
    &[("boxplot", ax_boxplot), ("pie", ax_pie), ("stem", ax_stem)];

pub(crate) const PYPLOT_ON_GCA: &[(&str, &str)] = &[
    ("boxplot", "boxplot(x, whis=1.5, positions=None, widths=None, tick_labels=None, showfliers=True): box-and-whisker plots; returns a dict of the artists."),
    ("pie", "pie(x, labels=None, colors=None, autopct=None, startangle=0, ...): a pie chart; returns (wedges, texts[, autotexts])."),
    ("stem", "stem([x,] y, linefmt=None, markerfmt=None, basefmt=None, bottom=0): vertical lines from a baseline to markers."),
];

fn line(xs: Vec<f64>, ys: Vec<f64>, color: Rgba, style: LineStyle) -> Line {
    Line {
        xs,
        ys,
        color,
        width: 1.0,
        style,
        marker: None,
        marker_size: 6.0,
        label: None,
        in_axes: false,
        marker_face: None,
    }
}

fn push_line(ax: &Rc<AxesObj>, l: Line) -> Result<Value, Exc> {
    let i = ax.with(|x| {
        x.artists.push(Artist::Line(l));
        x.artists.len() - 1
    })?;
    Ok(objects::line_handle(i))
}

fn cycle_color(name: &str) -> Rgba {
    color::parse(name).unwrap_or(Rgba::BLACK)
}

// ------------------------------------------------------------------ boxplot

/// numpy.percentile's linear interpolation over sorted values.
fn percentile(sorted: &[f64], q: f64) -> f64 {
    let n = sorted.len();
    if n == 0 {
        return f64::NAN;
    }
    let pos = q / 100.0 * (n - 1) as f64;
    let i = pos.floor() as usize;
    let f = pos - i as f64;
    match sorted.get(i + 1) {
        Some(next) => sorted[i] + (next - sorted[i]) * f,
        None => sorted[i],
    }
}

/// `cbook.boxplot_stats` for one dataset: (whislo, q1, med, q3, whishi, fliers).
fn box_stats(values: &[f64], whis: f64) -> (f64, f64, f64, f64, f64, Vec<f64>) {
    let mut v: Vec<f64> = values.iter().copied().filter(|x| !x.is_nan()).collect();
    v.sort_by(|a, b| a.total_cmp(b));
    let (q1, med, q3) = (
        percentile(&v, 25.0),
        percentile(&v, 50.0),
        percentile(&v, 75.0),
    );
    let iqr = q3 - q1;
    let (lo, hi) = (q1 - whis * iqr, q3 + whis * iqr);
    let whishi = v
        .iter()
        .copied()
        .filter(|x| *x <= hi)
        .fold(f64::NEG_INFINITY, f64::max);
    let whishi = if whishi.is_finite() && whishi >= q3 {
        whishi
    } else {
        q3
    };
    let whislo = v
        .iter()
        .copied()
        .filter(|x| *x >= lo)
        .fold(f64::INFINITY, f64::min);
    let whislo = if whislo.is_finite() && whislo <= q1 {
        whislo
    } else {
        q1
    };
    let fliers = values
        .iter()
        .copied()
        .filter(|x| *x < whislo || *x > whishi)
        .collect();
    (whislo, q1, med, q3, whishi, fliers)
}

/// The datasets of `boxplot(x)`: a 1-D array is one, a 2-D array one per column, a list of
/// sequences one per item.
fn datasets(it: &mut dyn Interpreter, x: &Value) -> Result<Vec<Vec<f64>>, Exc> {
    let items: Option<Vec<Value>> = match x {
        Value::List(l) => Some(l.borrow().clone()),
        Value::Tuple(t) => Some(t.to_vec()),
        _ => None,
    };
    if let Some(items) = items {
        if items
            .iter()
            .any(|v| matches!(v, Value::List(_) | Value::Tuple(_) | Value::Object(_)))
        {
            return items.iter().map(|v| Ok(numbers(it, v)?.values)).collect();
        }
    }
    let d = numbers(it, x)?;
    match d.shape.as_slice() {
        [rows, cols] => Ok((0..*cols)
            .map(|c| (0..*rows).map(|r| d.values[r * cols + c]).collect())
            .collect()),
        [_] | [] => Ok(vec![d.values]),
        _ => Err(Exc::value_error("X must have 2 or fewer dimensions")),
    }
}

fn ax_boxplot(it: &mut dyn Interpreter, ax: &Rc<AxesObj>, mut a: Args) -> Result<Value, Exc> {
    let x = a.required(0, "x")?;
    a.take(1, "notch")?;
    a.take(2, "sym")?;
    let vert = a
        .take(3, "vert")?
        .map(|v| v.truthy())
        .transpose()?
        .unwrap_or(true);
    let whis = kw_f64(&mut a, &["whis"])?.unwrap_or(1.5);
    let positions = a.take_kw("positions").filter(|v| !matches!(v, Value::None));
    let widths = a.take_kw("widths").filter(|v| !matches!(v, Value::None));
    let labels = kw_val(&mut a, &["tick_labels", "labels"]).filter(|v| !matches!(v, Value::None));
    let showfliers = a
        .take_kw("showfliers")
        .map(|v| v.truthy())
        .transpose()?
        .unwrap_or(true);
    if a.take_kw("orientation")
        .is_some_and(|v| matches!(&v, Value::Str(s) if &**s == "horizontal"))
    {
        return Err(Exc::new(
            ExcKind::NotImplementedError,
            "boxplot: devarray draws vertical boxes only",
        ));
    }
    for k in [
        "patch_artist",
        "showmeans",
        "meanline",
        "showcaps",
        "showbox",
        "boxprops",
        "whiskerprops",
        "capprops",
        "medianprops",
        "flierprops",
        "meanprops",
        "manage_ticks",
        "autorange",
        "zorder",
        "bootstrap",
        "usermedians",
        "conf_intervals",
        "capwidths",
        "label",
    ] {
        a.take_kw(k);
    }
    finish_kw(&a, "Line2D", 4)?;
    if !vert {
        return Err(Exc::new(
            ExcKind::NotImplementedError,
            "boxplot: devarray draws vertical boxes only",
        ));
    }
    let sets = datasets(it, &x)?;
    let n = sets.len();
    let pos = match &positions {
        Some(v) => data::vector(it, v)?,
        None => (1..=n).map(|i| i as f64).collect(),
    };
    if pos.len() != n {
        return Err(Exc::value_error(
            "List of boxplot statistics and `positions` values must have same the length",
        ));
    }
    let span = pos.iter().copied().fold(f64::NEG_INFINITY, f64::max)
        - pos.iter().copied().fold(f64::INFINITY, f64::min);
    let w =
        match &widths {
            Some(v) => {
                let w = data::vector(it, v)?;
                match w.len() {
                    1 => vec![w[0]; n],
                    m if m == n => w,
                    _ => return Err(Exc::value_error(
                        "List of boxplot statistics and `widths` values must have same the length",
                    )),
                }
            }
            None => vec![(0.15 * span).clamp(0.15, 0.5); n],
        };
    let tick_labels: Vec<String> = match &labels {
        Some(v) => {
            let l = data::strings(v).unwrap_or_default();
            if l.len() != n {
                return Err(Exc::value_error(
                    "Dimensions of labels and X must be compatible",
                ));
            }
            l
        }
        None => (1..=n).map(|i| i.to_string()).collect(),
    };
    let black = Rgba::BLACK;
    let median = cycle_color("C1");
    let (mut whiskers, mut caps, mut boxes, mut medians, mut fliers) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for (i, set) in sets.iter().enumerate() {
        let (lo, q1, med, q3, hi, out) = box_stats(set, whis);
        let (p, half) = (pos[i], w[i] / 2.0);
        let (l, r) = (p - half, p + half);
        let (cl, cr) = (p - half / 2.0, p + half / 2.0);
        let solid = LineStyle::Solid;
        whiskers.push(push_line(ax, line(vec![p, p], vec![q1, lo], black, solid))?);
        whiskers.push(push_line(ax, line(vec![p, p], vec![q3, hi], black, solid))?);
        caps.push(push_line(
            ax,
            line(vec![cl, cr], vec![lo, lo], black, solid),
        )?);
        caps.push(push_line(
            ax,
            line(vec![cl, cr], vec![hi, hi], black, solid),
        )?);
        boxes.push(push_line(
            ax,
            line(vec![l, r, r, l, l], vec![q1, q1, q3, q3, q1], black, solid),
        )?);
        medians.push(push_line(
            ax,
            line(vec![l, r], vec![med, med], median, solid),
        )?);
        if showfliers {
            let mut f = line(vec![p; out.len()], out, black, LineStyle::None);
            f.marker = Some('o');
            f.marker_face = Some(Rgba(0.0, 0.0, 0.0, 0.0));
            fliers.push(push_line(ax, f)?);
        }
    }
    let lo = pos.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = pos.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    ax.with(|x| {
        x.x.ticks = Some(pos.clone());
        x.x.ticklabels = Some(tick_labels);
        x.x.locator = None;
        x.x.formatter = None;
        x.x.lim = (Some(lo - 0.5), Some(hi + 0.5));
    })?;
    let mut d = Dict::default();
    for (k, v) in [
        ("whiskers", whiskers),
        ("caps", caps),
        ("boxes", boxes),
        ("medians", medians),
        ("fliers", fliers),
        ("means", Vec::new()),
    ] {
        d.insert(HashKey::Str(Rc::from(k)), Value::str(k), Value::list(v));
    }
    Ok(Value::Dict(Rc::new(std::cell::RefCell::new(d))))
}

// ------------------------------------------------------------------ pie

/// `pie`'s label and percentage texts at a distance from the centre on a wedge's middle angle.
fn pie_text(
    ax: &Rc<AxesObj>,
    x: f64,
    y: f64,
    body: &str,
    ha: &str,
    size: f64,
) -> Result<Value, Exc> {
    ax.with(|a| {
        a.artists.push(Artist::Text(Text {
            x,
            y,
            text: body.to_string(),
            color: Rgba::BLACK,
            size,
            ha: ha.into(),
            va: "center".into(),
            offset: (0.0, 0.0),
            arrow: None,
            in_axes: false,
        }))
    })?;
    let repr = crate::object::format::float_repr;
    Ok(objects::text_handle(&repr(x), &repr(y), body))
}

fn ax_pie(it: &mut dyn Interpreter, ax: &Rc<AxesObj>, mut a: Args) -> Result<Value, Exc> {
    let x = a.required(0, "x")?;
    let explode = a.take(1, "explode")?.filter(|v| !matches!(v, Value::None));
    let labels = a.take(2, "labels")?.filter(|v| !matches!(v, Value::None));
    let colors = a.take(3, "colors")?.filter(|v| !matches!(v, Value::None));
    let autopct = a.take(4, "autopct")?.filter(|v| !matches!(v, Value::None));
    let pctdistance = a
        .take(5, "pctdistance")?
        .and_then(|v| as_f64(&v))
        .unwrap_or(0.6);
    a.take(6, "shadow")?;
    let labeldistance = a
        .take(7, "labeldistance")?
        .and_then(|v| as_f64(&v))
        .unwrap_or(1.1);
    let startangle = a
        .take(8, "startangle")?
        .and_then(|v| as_f64(&v))
        .unwrap_or(0.0);
    let radius = a.take(9, "radius")?.and_then(|v| as_f64(&v)).unwrap_or(1.0);
    let counterclock = a
        .take(10, "counterclock")?
        .map(|v| v.truthy())
        .transpose()?
        .unwrap_or(true);
    let normalize = a
        .take_kw("normalize")
        .map(|v| v.truthy())
        .transpose()?
        .unwrap_or(true);
    for k in [
        "wedgeprops",
        "textprops",
        "center",
        "frame",
        "rotatelabels",
        "hatch",
    ] {
        a.take_kw(k);
    }
    finish_kw(&a, "Wedge", 11)?;
    let values = data::vector(it, &x)?;
    let n = values.len();
    if values.iter().any(|v| *v < 0.0) {
        return Err(Exc::value_error(
            "Wedge sizes 'x' must be non negative values",
        ));
    }
    // matplotlib takes the sizes as float32.
    let xs: Vec<f32> = values.iter().map(|v| *v as f32).collect();
    let total: f32 = xs.iter().sum();
    // matplotlib divides by the sum unchecked: a zero or non-finite sum gives NaN fractions,
    // which fail where a wedge's arc is sized (`int()` of NaN), as below.
    let fracs: Vec<f64> = if normalize {
        xs.iter().map(|v| f64::from(v / total)).collect()
    } else if total > 1.0 {
        return Err(Exc::value_error(
            "Cannot plot an unnormalized pie with sum(x) > 1",
        ));
    } else {
        xs.iter().map(|v| f64::from(*v)).collect()
    };
    let labels: Vec<String> = match &labels {
        Some(v) => data::strings(v).unwrap_or_default(),
        None => vec![String::new(); n],
    };
    if labels.len() != n {
        return Err(Exc::value_error(format!(
            "'labels' must be of length 'x', not {}",
            labels.len()
        )));
    }
    let explode = match &explode {
        Some(v) => data::vector(it, v)?,
        None => vec![0.0; n],
    };
    if explode.len() != n {
        return Err(Exc::value_error("'explode' must be of length 'x'"));
    }
    let colors: Option<Vec<Rgba>> = match &colors {
        Some(v) => {
            let items: Vec<Value> = match v {
                Value::List(l) => l.borrow().clone(),
                Value::Tuple(t) => t.to_vec(),
                other => vec![other.clone()],
            };
            Some(
                items
                    .iter()
                    .map(data::color_arg)
                    .collect::<Result<_, _>>()?,
            )
        }
        None => None,
    };
    let dir = if counterclock { 1.0 } else { -1.0 };
    let mut theta1 = startangle / 360.0;
    let (mut wedges, mut texts, mut autotexts) = (Vec::new(), Vec::new(), Vec::new());
    for i in 0..n {
        let theta2 = theta1 + dir * fracs[i];
        // The wedge as a polygon: the centre, then its arc in steps of at most a degree.
        let (a0, a1) = (360.0 * theta1.min(theta2), 360.0 * theta1.max(theta2));
        // `min`/`max` drop a NaN; the sweep keeps it.
        let sweep = 360.0 * (theta2 - theta1).abs();
        let steps = match crate::object::bigint::from_float(sweep.ceil())? {
            Value::Int(k) => usize::try_from(k).unwrap_or(0).max(1),
            _ => 1,
        };
        let thetam = 2.0 * std::f64::consts::PI * 0.5 * (theta1 + theta2);
        let (cx, cy) = (explode[i] * thetam.cos(), explode[i] * thetam.sin());
        let c = match &colors {
            Some(cs) if !cs.is_empty() => cs[i % cs.len()],
            _ => ax.with(|a| a.next_color())?,
        };
        let (mut px, mut py) = (vec![cx], vec![cy]);
        for k in 0..=steps {
            let t = (a0 + (a1 - a0) * k as f64 / steps as f64).to_radians();
            px.push(cx + radius * t.cos());
            py.push(cy + radius * t.sin());
        }
        ax.with(|a| {
            a.artists.push(Artist::Fill(Fill {
                xs: px,
                y1: py,
                y2: Vec::new(),
                color: c,
                label: Some(labels[i].clone()).filter(|l| !l.is_empty()),
            }))
        })?;
        wedges.push(objects::handle("matplotlib.patches.Wedge"));
        let (xt, yt) = (
            cx + labeldistance * radius * thetam.cos(),
            cy + labeldistance * radius * thetam.sin(),
        );
        let ha = if xt > 0.0 { "left" } else { "right" };
        texts.push(pie_text(ax, xt, yt, &labels[i], ha, 10.0)?);
        if let Some(fmt) = &autopct {
            let pct = 100.0 * fracs[i];
            let s = match fmt {
                Value::Str(f) => crate::display::pyfmt::percent_format(
                    f,
                    &[crate::display::pyfmt::FmtValue::Float(pct)],
                )
                .map_err(|e| {
                    Exc::new(
                        ExcKind::from_name(e.ename).unwrap_or(ExcKind::ValueError),
                        e.message,
                    )
                })?,
                f => text_of(&it.call_value(f, Args::new("autopct", vec![Value::Float(pct)]))?),
            };
            let (xp, yp) = (
                cx + pctdistance * radius * thetam.cos(),
                cy + pctdistance * radius * thetam.sin(),
            );
            autotexts.push(pie_text(ax, xp, yp, &s, "center", 10.0)?);
        }
        theta1 = theta2;
    }
    // matplotlib: no frame, no ticks, square data units, 1.25 radii of room.
    ax.with(|a| {
        a.spines = [false; 4];
        a.x.ticks = Some(Vec::new());
        a.y.ticks = Some(Vec::new());
        a.x.lim = (Some(-1.25), Some(1.25));
        a.y.lim = (Some(-1.25), Some(1.25));
        a.equal_aspect = true;
    })?;
    let mut out = vec![Value::list(wedges), Value::list(texts)];
    if autopct.is_some() {
        out.push(Value::list(autotexts));
    }
    Ok(Value::tuple(out))
}

// ------------------------------------------------------------------ stem

fn ax_stem(it: &mut dyn Interpreter, ax: &Rc<AxesObj>, mut a: Args) -> Result<Value, Exc> {
    let linefmt = kw_val(&mut a, &["linefmt"]).map(|v| text_of(&v));
    let markerfmt = kw_val(&mut a, &["markerfmt"]).map(|v| text_of(&v));
    let basefmt = kw_val(&mut a, &["basefmt"]).map(|v| text_of(&v));
    let bottom = kw_f64(&mut a, &["bottom"])?.unwrap_or(0.0);
    let label = kw_val(&mut a, &["label"]).map(|v| text_of(&v));
    a.take_kw("orientation");
    finish_kw(&a, "Line2D", 3)?;
    let pos = std::mem::take(&mut a.pos);
    let (xs, ys) = match pos.as_slice() {
        [y] => {
            let ys = data::vector(it, y)?;
            ((0..ys.len()).map(|i| i as f64).collect(), ys)
        }
        [x, y] | [x, y, _] => (data::vector(it, x)?, data::vector(it, y)?),
        _ => {
            return Err(Exc::type_error(format!(
                "stem() takes 1-3 positional arguments but {} were given",
                pos.len()
            )))
        }
    };
    if xs.len() != ys.len() {
        return Err(Exc::value_error(format!(
            "x and y must have same first dimension, but have shapes ({},) and ({},)",
            xs.len(),
            ys.len()
        )));
    }
    // 'C0' and 'C3' of the defaults name colours of the Axes' own cycle (a style's).
    let cycle = ax.with(|x| x.colors.clone())?;
    let nth = |n: usize| match cycle.len() {
        0 => cycle_color(&format!("C{n}")),
        len => cycle[n % len],
    };
    let fmt = |f: &Option<String>,
               default: (LineStyle, Option<char>, usize)|
     -> Result<(LineStyle, Option<char>, Rgba), Exc> {
        match f {
            Some(f) => {
                let (ls, mk, c) = data::format_string(f)?;
                Ok((
                    ls.unwrap_or(default.0),
                    mk.or(default.1),
                    c.unwrap_or_else(|| nth(default.2)),
                ))
            }
            None => Ok((default.0, default.1, nth(default.2))),
        }
    };
    let (ls, _, lc) = fmt(&linefmt, (LineStyle::Solid, None, 0))?;
    let (_, mk, mc) = fmt(&markerfmt, (LineStyle::None, Some('o'), 0))?;
    let (bls, _, bc) = fmt(&basefmt, (LineStyle::Solid, None, 3))?;
    // The stems: one line of NaN-separated segments.
    let (mut sx, mut sy) = (Vec::new(), Vec::new());
    for (x, y) in xs.iter().zip(&ys) {
        sx.extend([*x, *x, f64::NAN]);
        sy.extend([bottom, *y, f64::NAN]);
    }
    let mut stems = line(sx, sy, lc, ls);
    stems.width = 1.5;
    stems.label = label;
    push_line(ax, stems)?;
    let mut markers = line(xs.clone(), ys, mc, LineStyle::None);
    markers.marker = Some(mk.unwrap_or('o'));
    push_line(ax, markers)?;
    let lo = xs.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = xs.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let mut base = line(vec![lo, hi], vec![bottom, bottom], bc, bls);
    base.width = 1.5;
    push_line(ax, base)?;
    Ok(Value::Object(Rc::new(objects::Handle {
        text: None,
        class: "matplotlib.container.StemContainer",
        repr: Some("<StemContainer object of 3 artists>".into()),
        artist: None,
        image: None,
    })))
}
