//! Plots composed of the primitive artists (`errorbar`: a line and error segments; `step`: a
//! stair line; `annotate`: text with an arrow), the smaller Axes and Figure accessors
//! (`get_xscale`, `margins`, `set_figwidth`, ...) and `matplotlib.colors`' conversions. Each
//! Axes method is also pyplot's function on `gca()`.

use std::rc::Rc;

use crate::display::plot::{Arrow, ArrowHead, Artist, Axes, Line, LineStyle, Rgba, Scale};
use crate::object::ops::as_f64;
use crate::object::value::{Args, MethodFn, Module, Value};
use crate::object::{builtin, Exc, ExcKind, Interpreter};

use super::data::{self, brief_repr, numbers, text_of, vector};
use super::objects::{self, axes_value, AxesObj, FigObj};
use super::{ax_plot, ax_text, kw_f64, kw_val, AxFn};

/// The Axes methods this file adds, by name.
pub(crate) const AXES_METHODS: &[(&str, AxFn)] = &[
    ("errorbar", ax_errorbar),
    ("step", ax_step),
    ("annotate", ax_annotate),
    ("margins", ax_margins),
    ("twinx", |_, ax, a| twin(ax, a, true)),
    ("twiny", |_, ax, a| twin(ax, a, false)),
    ("get_xscale", |_, ax, a| get_scale(ax, a, true)),
    ("get_yscale", |_, ax, a| get_scale(ax, a, false)),
    ("invert_xaxis", |_, ax, a| {
        a.finish(0)?;
        ax.with(|x| x.x.inverted = !x.x.inverted)?;
        Ok(Value::None)
    }),
    ("set_axis_off", |_, ax, a| {
        a.finish(0)?;
        ax.with(|x| x.axis_on = false)?;
        Ok(Value::None)
    }),
    ("set_axis_on", |_, ax, a| {
        a.finish(0)?;
        ax.with(|x| x.axis_on = true)?;
        Ok(Value::None)
    }),
    ("get_legend", |_, ax, a| {
        a.finish(0)?;
        Ok(match ax.with(|x| x.legend.is_some())? {
            true => objects::handle("matplotlib.legend.Legend"),
            false => Value::None,
        })
    }),
    ("get_figure", |_, ax, a| {
        a.finish(0)?;
        Ok(objects::fig_value(&ax.fig))
    }),
];

/// pyplot's functions for the Axes methods above (on the current Axes).
pub(crate) const PYPLOT_ON_GCA: &[(&str, &str)] = &[
    ("errorbar", "errorbar(x, y, yerr=None, xerr=None, fmt='', ecolor=None, elinewidth=None, capsize=None): a line with error bars."),
    ("step", "step(x, y, [fmt], where='pre'): a stair line."),
    ("annotate", "annotate(text, xy, xytext=None, textcoords=None, arrowprops=None): text, with an arrow to xy."),
    ("margins", "margins(*margins, x=None, y=None): the autoscale padding; margins() reads it."),
    ("twinx", "twinx(ax=None): an Axes over ax (the current one) sharing its x axis, its y axis on the right."),
    ("twiny", "twiny(ax=None): an Axes over ax (the current one) sharing its y axis, its x axis on top."),
];

/// `errorbar`: the data line as `plot` draws it (`fmt`, colour, label, ...) over one line of
/// NaN-separated segments per error direction, and caps as `_`/`|` markers when `capsize`.
fn ax_errorbar(it: &mut dyn Interpreter, ax: &Rc<AxesObj>, mut a: Args) -> Result<Value, Exc> {
    let x = a.required(0, "x")?;
    let y = a.required(1, "y")?;
    let yerr = a.take(2, "yerr")?;
    let xerr = a.take(3, "xerr")?;
    let fmt = match &a.take(4, "fmt")? {
        None => String::new(),
        Some(Value::Str(s)) => s.to_string(),
        Some(other) => {
            return Err(Exc::type_error(format!(
                "fmt must be a string, not {}",
                other.type_name()
            )))
        }
    };
    let ecolor = kw_val(&mut a, &["ecolor"])
        .map(|v| data::color_arg(&v))
        .transpose()?;
    let elinewidth = kw_f64(&mut a, &["elinewidth"])?;
    let capsize = kw_f64(&mut a, &["capsize"])?.unwrap_or(0.0);
    for k in [
        "barsabove",
        "lolims",
        "uplims",
        "xlolims",
        "xuplims",
        "errorevery",
        "capthick",
    ] {
        a.take_kw(k);
    }
    // The other keywords are the data line's, for plot to check.
    check_positional(&a, 5)?;
    let xs = vector(it, &x)?;
    let ys = vector(it, &y)?;
    let yerr = error_bounds(it, yerr, "yerr", &ys)?;
    let xerr = error_bounds(it, xerr, "xerr", &xs)?;
    // The data line, with plot's checks of x, y, fmt and the Line2D keywords.
    let mut pos = vec![x, y];
    if fmt != "none" && !fmt.is_empty() {
        pos.push(Value::str(&fmt));
    }
    let plotted = ax_plot(
        it,
        ax,
        Args {
            pos,
            kw: std::mem::take(&mut a.kw),
            fname: a.fname,
        },
    )?;
    let data_line = ax.with(|axr| match axr.artists.pop() {
        Some(Artist::Line(l)) => Ok(l),
        _ => Err(Exc::new(ExcKind::RuntimeError, "errorbar: no data line")),
    })??;
    drop(plotted);
    let mut data_line = data_line;
    if fmt == "none" {
        data_line.style = LineStyle::None;
        data_line.marker = None;
    }
    let color = ecolor.unwrap_or(data_line.color);
    let width = elinewidth.unwrap_or(data_line.width);
    let mut drawn = Vec::new();
    for (bounds, vertical) in [(&yerr, true), (&xerr, false)] {
        let Some((lo, hi)) = bounds else { continue };
        let (mut sx, mut sy) = (Vec::new(), Vec::new());
        for i in 0..xs.len().min(ys.len()) {
            let (l, h) = (lo[i % lo.len()], hi[i % hi.len()]);
            let (p0, p1) = if vertical {
                ((xs[i], ys[i] - l), (xs[i], ys[i] + h))
            } else {
                ((xs[i] - l, ys[i]), (xs[i] + h, ys[i]))
            };
            sx.extend([p0.0, p1.0, f64::NAN]);
            sy.extend([p0.1, p1.1, f64::NAN]);
        }
        if capsize > 0.0 {
            drawn.push(Line {
                xs: sx.iter().copied().filter(|v| !v.is_nan()).collect(),
                ys: sy.iter().copied().filter(|v| !v.is_nan()).collect(),
                color,
                width,
                style: LineStyle::None,
                marker: Some(if vertical { '_' } else { '|' }),
                marker_size: 2.0 * capsize,
                label: None,
                in_axes: false,
                marker_face: None,
            });
        }
        drawn.insert(
            0,
            Line {
                xs: sx,
                ys: sy,
                color,
                width,
                style: LineStyle::Solid,
                marker: None,
                marker_size: 0.0,
                label: None,
                in_axes: false,
                marker_face: None,
            },
        );
    }
    // The error bars lie under the data line (matplotlib's barsabove=False).
    let index = ax.with(|axr| {
        axr.artists.extend(drawn.into_iter().map(Artist::Line));
        axr.artists.push(Artist::Line(data_line));
        axr.artists.len() - 1
    })?;
    Ok(Value::Object(Rc::new(objects::Handle {
        text: None,
        class: "matplotlib.container.ErrorbarContainer",
        repr: Some("<ErrorbarContainer object of 3 artists>".into()),
        artist: Some(index),
        image: None,
    })))
}

/// Too many positional arguments, in the words of `Args::finish`, with the keywords left for
/// the function this one hands them to.
fn check_positional(a: &Args, max: usize) -> Result<(), Exc> {
    Args {
        pos: a.pos.clone(),
        kw: Vec::new(),
        fname: a.fname,
    }
    .finish(max)
}

/// How far each error bar reaches below and above its point.
type ErrorBounds = (Vec<f64>, Vec<f64>);

/// An error argument as (below, above) per point: a scalar, one value per point, or a
/// (2, n) pair of rows, all non-negative, in matplotlib's words when not.
fn error_bounds(
    it: &mut dyn Interpreter,
    err: Option<Value>,
    name: &str,
    along: &[f64],
) -> Result<Option<ErrorBounds>, Exc> {
    let err = match err {
        None | Some(Value::None) => return Ok(None),
        Some(v) => v,
    };
    let d = numbers(it, &err)?;
    let n = along.len();
    let bad_shape = || {
        Exc::value_error(format!(
            "'{name}' (shape: {}) must be a scalar or a 1D or (2, n) array-like whose shape matches '{}' (shape: ({n},))",
            d.shape_text(),
            if name == "yerr" { "y" } else { "x" },
        ))
    };
    let (lo, hi) = match d.shape.as_slice() {
        [] => (d.values.clone(), d.values.clone()),
        [m] if *m == n => (d.values.clone(), d.values.clone()),
        [1, m] if *m == n => (d.values.clone(), d.values.clone()),
        [2, m] if *m == n => (d.values[..n].to_vec(), d.values[n..].to_vec()),
        _ => return Err(bad_shape()),
    };
    if lo.iter().chain(&hi).any(|v| *v < 0.0) {
        return Err(Exc::value_error(format!(
            "'{name}' must not contain negative values"
        )));
    }
    if lo.is_empty() {
        return Ok(None);
    }
    Ok(Some((lo, hi)))
}

/// `step(x, y, where='pre')`: `plot` through the stair corners (matplotlib's
/// `drawstyle='steps-pre'`, `'steps-post'`, `'steps-mid'`).
fn ax_step(it: &mut dyn Interpreter, ax: &Rc<AxesObj>, mut a: Args) -> Result<Value, Exc> {
    let x = a.required(0, "x")?;
    let y = a.required(1, "y")?;
    let fmt = match a.pos.get(2) {
        Some(Value::Str(_)) => Some(a.pos.remove(2)),
        _ => None,
    };
    let place = match a.take_kw("where") {
        None => "pre".to_string(),
        Some(v) => text_of(&v),
    };
    if !["pre", "post", "mid"].contains(&place.as_str()) {
        return Err(data::not_in_list(&place, "where", &["pre", "post", "mid"]));
    }
    check_positional(&a, 2)?;
    let xs = vector(it, &x)?;
    let ys = vector(it, &y)?;
    if xs.len() != ys.len() {
        return Err(Exc::value_error(format!(
            "x and y must have same first dimension, but have shapes ({},) and ({},)",
            xs.len(),
            ys.len()
        )));
    }
    let (sx, sy) = stairs(&xs, &ys, &place);
    let float_list = |v: Vec<f64>| Value::list(v.into_iter().map(Value::Float).collect());
    let mut pos = vec![float_list(sx), float_list(sy)];
    pos.extend(fmt);
    ax_plot(
        it,
        ax,
        Args {
            pos,
            kw: std::mem::take(&mut a.kw),
            fname: a.fname,
        },
    )
}

/// The corners of a stair line through the points.
fn stairs(xs: &[f64], ys: &[f64], place: &str) -> (Vec<f64>, Vec<f64>) {
    let (mut sx, mut sy) = (Vec::new(), Vec::new());
    for i in 0..xs.len() {
        if i > 0 {
            match place {
                "pre" => {
                    sx.push(xs[i - 1]);
                    sy.push(ys[i]);
                }
                "post" => {
                    sx.push(xs[i]);
                    sy.push(ys[i - 1]);
                }
                _ => {
                    let mid = (xs[i - 1] + xs[i]) / 2.0;
                    sx.extend([mid, mid]);
                    sy.extend([ys[i - 1], ys[i]]);
                }
            }
        }
        sx.push(xs[i]);
        sy.push(ys[i]);
    }
    (sx, sy)
}

const ARROW_STYLES: &[&str] = &[
    "-", "<-", "->", "<->", "<|-", "-|>", "<|-|>", "]-", "-[", "]-[", "|-|", "]->", "<-[",
    "simple", "fancy", "wedge",
];

/// `annotate(text, xy, xytext=None, xycoords='data', textcoords=None, arrowprops=None)`:
/// `text` at `xytext` (data coordinates, or points/pixels from `xy`), with an arrow to `xy`
/// when `arrowprops` is given. What it returns prints as matplotlib's (`Text(xytext, text)`).
fn ax_annotate(it: &mut dyn Interpreter, ax: &Rc<AxesObj>, mut a: Args) -> Result<Value, Exc> {
    let body = a.required(0, "text")?;
    let xy_value = a.take(1, "xy")?.ok_or_else(|| {
        Exc::type_error("annotate() missing 1 required positional argument: 'xy'")
    })?;
    let xytext_value = a.take(2, "xytext")?.filter(|v| !matches!(v, Value::None));
    let xycoords = a.take(3, "xycoords")?.map(|v| text_of(&v));
    let textcoords = a.take(4, "textcoords")?.map(|v| text_of(&v));
    let arrowprops = a
        .take(5, "arrowprops")?
        .filter(|v| !matches!(v, Value::None));
    a.take(6, "annotation_clip")?;
    // The other keywords are the text's, for text() to check.
    check_positional(&a, 7)?;
    let xy = pair(&xy_value)?;
    let xycoords = xycoords.unwrap_or_else(|| "data".into());
    if xycoords != "data" {
        return Err(unsupported_coords("xycoords", &xycoords));
    }
    let textcoords = textcoords.unwrap_or_else(|| xycoords.clone());
    let points_per_unit = match textcoords.as_str() {
        "data" => None,
        "offset points" => Some(1.0),
        "offset pixels" => Some(72.0 / ax.fig.fig.borrow().dpi),
        other => return Err(unsupported_coords("textcoords", other)),
    };
    let arrow = match &arrowprops {
        None => None,
        Some(props) => Some(arrow_of(props)?),
    };
    // The text as `text()` places it, at xytext (default: xy) as the program wrote it.
    let (tx, ty) = match &xytext_value {
        Some(v) => {
            let (x, y) = pair_values(v)?;
            (x, y)
        }
        None => pair_values(&xy_value)?,
    };
    a.pos = vec![tx, ty, body];
    let handle = ax_text(it, ax, a)?;
    let xytext = match &xytext_value {
        Some(v) => pair(v)?,
        None => xy,
    };
    ax.with(|axr| {
        if let Some(Artist::Text(t)) = axr.artists.last_mut() {
            if let Some(scale) = points_per_unit {
                // Offsets count from xy; without xytext the offset is zero.
                let offset = if xytext_value.is_some() {
                    xytext
                } else {
                    (0.0, 0.0)
                };
                (t.x, t.y) = xy;
                t.offset = (offset.0 * scale, offset.1 * scale);
            }
            t.arrow = arrow.map(|(color, width, head)| Arrow {
                to: xy,
                color,
                width,
                head,
            });
        }
    })?;
    Ok(handle)
}

fn unsupported_coords(key: &str, value: &str) -> Exc {
    Exc::new(
        ExcKind::NotImplementedError,
        format!(
            "annotate: devarray places annotations at 'data' coordinates, with text there or at 'offset points'/'offset pixels', not {key}={}",
            crate::object::format::str_repr(value)
        ),
    )
}

/// The two items of an (x, y) pair, unpacked as Python unpacks them.
fn pair_values(v: &Value) -> Result<(Value, Value), Exc> {
    let items: Vec<Value> = match v {
        Value::Tuple(t) => t.to_vec(),
        Value::List(l) => l.borrow().clone(),
        Value::Array(_) => {
            return Err(Exc::type_error(
                "annotate: give xy and xytext as (x, y) tuples",
            ))
        }
        other => {
            return Err(Exc::type_error(format!(
                "cannot unpack non-iterable {} object",
                other.type_name()
            )))
        }
    };
    match <[Value; 2]>::try_from(items) {
        Ok([x, y]) => Ok((x, y)),
        Err(items) if items.len() > 2 => {
            Err(Exc::value_error("too many values to unpack (expected 2)"))
        }
        Err(items) => Err(Exc::value_error(format!(
            "not enough values to unpack (expected 2, got {})",
            items.len()
        ))),
    }
}

fn pair(v: &Value) -> Result<(f64, f64), Exc> {
    let (x, y) = pair_values(v)?;
    let num = |v: &Value| {
        as_f64(v).ok_or_else(|| {
            Exc::type_error(format!(
                "annotate() coordinates must be numbers, not {}",
                v.type_name()
            ))
        })
    };
    Ok((num(&x)?, num(&y)?))
}

/// The arrow `arrowprops` asks for: its colour, line width and head.
fn arrow_of(props: &Value) -> Result<(Rgba, f64, ArrowHead), Exc> {
    let Value::Dict(d) = props else {
        return Err(Exc::type_error(format!(
            "arrowprops must be a dict, not {}",
            props.type_name()
        )));
    };
    let entries: Vec<(Value, Value)> = d.borrow().entries.clone();
    let get = |names: &[&str]| {
        entries.iter().find_map(|(k, v)| match k {
            Value::Str(s) if names.contains(&s.as_ref()) => Some(v.clone()),
            _ => None,
        })
    };
    let head = match &get(&["arrowstyle"]) {
        // Without a style matplotlib draws its filled "YAArrow"-like arrow.
        None => ArrowHead::Filled,
        Some(Value::Str(s)) => {
            let style = s.split(',').next().unwrap_or("").trim().to_string();
            if !ARROW_STYLES.contains(&style.as_str()) {
                return Err(Exc::value_error(format!(
                    "Unknown style: {}",
                    crate::object::format::str_repr(&style)
                )));
            }
            match style.as_str() {
                "->" | "<->" | "]->" => ArrowHead::Open,
                "-|>" | "<|-|>" | "simple" | "fancy" | "wedge" => ArrowHead::Filled,
                _ => ArrowHead::None,
            }
        }
        Some(other) => {
            return Err(Exc::type_error(format!(
                "arrowstyle must be a str, not {}",
                other.type_name()
            )))
        }
    };
    let color = match get(&["color", "edgecolor", "ec", "facecolor", "fc"]) {
        Some(v) => data::color_arg(&v)?,
        None => Rgba::BLACK,
    };
    let width = match get(&["linewidth", "lw"]) {
        Some(v) => as_f64(&v).ok_or_else(|| {
            Exc::type_error(format!("linewidth must be a number, not {}", v.type_name()))
        })?,
        None => 1.0,
    };
    Ok((color, width, head))
}

/// `margins(m)`, `margins(x, y)`, `margins(x=, y=)`; `margins()` returns (x, y).
fn ax_margins(_it: &mut dyn Interpreter, ax: &Rc<AxesObj>, mut a: Args) -> Result<Value, Exc> {
    let num = |v: Option<Value>| -> Result<Option<f64>, Exc> {
        match v {
            None | Some(Value::None) => Ok(None),
            Some(v) => {
                let m = as_f64(&v).ok_or_else(|| {
                    Exc::type_error(format!("margins must be numbers, not {}", v.type_name()))
                })?;
                if m <= -0.5 {
                    return Err(Exc::value_error("margin must be greater than -0.5"));
                }
                Ok(Some(m))
            }
        }
    };
    let tight = a.take_kw("tight");
    drop(tight);
    let kx = num(a.take_kw("x"))?;
    let ky = num(a.take_kw("y"))?;
    a.finish(2)?;
    let pos = std::mem::take(&mut a.pos);
    if !pos.is_empty() && (kx.is_some() || ky.is_some()) {
        return Err(Exc::type_error(
            "Cannot pass both positional and keyword arguments for x and/or y.",
        ));
    }
    let (mx, my) = match pos.len() {
        0 => (kx, ky),
        1 => {
            let m = num(pos.into_iter().next())?;
            (m, m)
        }
        _ => {
            let mut it = pos.into_iter();
            (num(it.next())?, num(it.next())?)
        }
    };
    if mx.is_none() && my.is_none() {
        let (x, y) = ax.with(|axr| (axr.x.margin, axr.y.margin))?;
        return Ok(Value::tuple(vec![Value::Float(x), Value::Float(y)]));
    }
    ax.with(|axr| {
        if let Some(m) = mx {
            axr.x.margin = m;
        }
        if let Some(m) = my {
            axr.y.margin = m;
        }
    })?;
    Ok(Value::None)
}

/// `twinx()`/`twiny()`: a new Axes in the same place sharing the x axis (`share_x`) or the
/// y axis, whose own copy hides; its other axis on the far side (right, top), its own colour
/// cycle; it becomes the current Axes.
fn twin(ax: &Rc<AxesObj>, a: Args, share_x: bool) -> Result<Value, Exc> {
    a.finish(0)?;
    // A share group of its own unless the axis has one (numbered apart from subplots').
    let group = ax.with(|p| {
        let spec = if share_x { &mut p.x } else { &mut p.y };
        *spec.share.get_or_insert(usize::MAX / 2 + ax.index)
    })?;
    let (rect, grid) = ax.with(|p| (p.rect, p.grid))?;
    let mut twin = Axes::new(rect);
    twin.grid = grid;
    twin.twin = true;
    let (shared, other) = if share_x {
        (&mut twin.x, &mut twin.y)
    } else {
        (&mut twin.y, &mut twin.x)
    };
    shared.share = Some(group);
    shared.visible = false;
    other.opposite = true;
    Ok(axes_value(&ax.fig.add_axes(twin)))
}

fn get_scale(ax: &Rc<AxesObj>, a: Args, is_x: bool) -> Result<Value, Exc> {
    a.finish(0)?;
    let scale = ax.with(|axr| if is_x { axr.x.scale } else { axr.y.scale })?;
    Ok(Value::str(match scale {
        Scale::Linear => "linear",
        Scale::Log => "log",
    }))
}

// ------------------------------------------------------------------ Figure

/// The Figure methods this file adds: (name, doc, method).
pub(crate) fn figure_method(name: &str) -> Option<(&'static str, &'static str, MethodFn)> {
    FIGURE_METHODS.iter().find(|(n, _, _)| *n == name).copied()
}

pub(crate) const FIGURE_METHODS: &[(&str, &str, MethodFn)] = &[
    (
        "get_figwidth",
        "get_figwidth(): the width in inches.",
        |_, r, a| {
            a.finish(0)?;
            Ok(Value::Float(fig_of(r)?.fig.borrow().size.0))
        },
    ),
    (
        "get_figheight",
        "get_figheight(): the height in inches.",
        |_, r, a| {
            a.finish(0)?;
            Ok(Value::Float(fig_of(r)?.fig.borrow().size.1))
        },
    ),
    (
        "set_figwidth",
        "set_figwidth(val): the width in inches.",
        |it, r, a| set_one_size(it, r, a, true),
    ),
    (
        "set_figheight",
        "set_figheight(val): the height in inches.",
        |it, r, a| set_one_size(it, r, a, false),
    ),
    ("get_dpi", "get_dpi(): dots per inch.", |_, r, a| {
        a.finish(0)?;
        Ok(Value::Float(fig_of(r)?.fig.borrow().dpi))
    }),
    ("set_dpi", "set_dpi(val): dots per inch.", |_, r, mut a| {
        let v = a.required(0, "val")?;
        a.finish(1)?;
        let dpi = as_f64(&v)
            .filter(|d| d.is_finite() && *d > 0.0)
            .ok_or_else(|| {
                Exc::value_error(format!(
                    "dpi must be a positive number, not {}",
                    brief_repr(&v)
                ))
            })?;
        fig_of(r)?.fig.borrow_mut().dpi = dpi;
        Ok(Value::None)
    }),
    ("get_axes", "get_axes(): the figure's Axes.", |_, r, a| {
        a.finish(0)?;
        Ok(Value::list(
            fig_of(r)?.all_axes().iter().map(axes_value).collect(),
        ))
    }),
    (
        "add_axes",
        "add_axes([left, bottom, width, height]): an Axes at that place, in figure fractions.",
        |_, r, mut a| {
            let rect = a.required(0, "rect")?;
            a.finish(1)?;
            let f = fig_of(r)?;
            let items: Vec<Value> = match &rect {
                Value::List(l) => l.borrow().clone(),
                Value::Tuple(t) => t.to_vec(),
                _ => return Err(not_a_rect(&rect)),
            };
            if items.len() != 4 {
                return Err(bounds_error(items.len()));
            }
            let nums: Vec<f64> = items.iter().filter_map(as_f64).collect();
            let [l, b, w, h] = <[f64; 4]>::try_from(nums).map_err(|_| not_a_rect(&rect))?;
            Ok(axes_value(&f.add_axes(Axes::new([l, b, w, h]))))
        },
    ),
];

fn fig_of(r: &Value) -> Result<Rc<FigObj>, Exc> {
    objects::as_fig(r).ok_or_else(|| Exc::type_error("a Figure method called on something else"))
}

/// `set_figwidth(val)` / `set_figheight(val)`: `set_size_inches` with the other side kept.
fn set_one_size(
    it: &mut dyn Interpreter,
    r: &Value,
    mut a: Args,
    width: bool,
) -> Result<Value, Exc> {
    let v = a.required(0, "val")?;
    a.take(1, "forward")?;
    a.finish(2)?;
    let f = fig_of(r)?;
    let (w, h) = f.fig.borrow().size;
    let (w, h) = if width {
        (v, Value::Float(h))
    } else {
        (Value::Float(w), v)
    };
    super::fig_set_size(it, &f, Args::new("set_size_inches", vec![w, h]))
}

fn not_a_rect(rect: &Value) -> Exc {
    Exc::type_error(format!(
        "add_axes() takes a [left, bottom, width, height] sequence of 4 numbers, not {}",
        brief_repr(rect)
    ))
}

/// What `Bbox.from_bounds(*rect)` says of a rect of `given` items, not 4, as `add_axes` shows it.
fn bounds_error(given: usize) -> Exc {
    const NAMES: [&str; 4] = ["'x0'", "'y0'", "'width'", "'height'"];
    if given > 4 {
        return Exc::type_error(format!(
            "Bbox.from_bounds() takes 4 positional arguments but {given} were given"
        ));
    }
    let missing = &NAMES[given..];
    let list = match missing {
        [one] => one.to_string(),
        [a, b] => format!("{a} and {b}"),
        [init @ .., last] => format!("{}, and {last}", init.join(", ")),
        [] => String::new(),
    };
    Exc::type_error(format!(
        "Bbox.from_bounds() missing {} required positional argument{}: {list}",
        missing.len(),
        if missing.len() == 1 { "" } else { "s" }
    ))
}

// ------------------------------------------------------------------ backends

/// Backends that draw to files only: with one of them `show()` shows nothing and keeps the
/// figures open, as matplotlib's Agg does in a script.
const FILE_BACKENDS: &[&str] = &["agg", "svg", "pdf", "ps", "pgf", "cairo", "template"];

/// `matplotlib.use(backend, force=True)`: remembered in `rcParams['backend']`.
pub(crate) fn use_backend(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let backend = match &a.required(0, "backend")? {
        Value::Str(s) => s.clone(),
        other => {
            return Err(Exc::type_error(format!(
                "backend must be a str, not {}",
                other.type_name()
            )))
        }
    };
    a.take(1, "force")?;
    a.finish(2)?;
    if let Some(Value::Dict(d)) = &it.import("matplotlib")?.get("rcParams") {
        d.borrow_mut().insert(
            crate::object::value::HashKey::Str(Rc::from("backend")),
            Value::str("backend"),
            Value::Str(backend),
        );
    }
    Ok(Value::None)
}

/// Whether the program chose a backend that only writes files (`matplotlib.use('Agg')`).
pub(crate) fn file_backend(it: &mut dyn Interpreter) -> bool {
    let Ok(m) = it.import("matplotlib") else {
        return false;
    };
    match &m.get("rcParams") {
        Some(Value::Dict(d)) => match d
            .borrow()
            .get(&crate::object::value::HashKey::Str(Rc::from("backend")))
        {
            Some(Value::Str(b)) => FILE_BACKENDS.contains(&b.to_lowercase().as_str()),
            _ => false,
        },
        _ => false,
    }
}

// ------------------------------------------------------------------ matplotlib.colors

/// `matplotlib.colors`: colour conversions (`to_rgba`, `to_rgb`, `to_hex`, `is_color_like`).
pub(crate) fn colors_module() -> Rc<Module> {
    let m = Rc::new(Module::new(
        "matplotlib.colors",
        "colour specifications and conversions",
    ));
    m.set(
        "to_rgba",
        builtin(
            "to_rgba",
            "to_rgba(c, alpha=None): (r, g, b, a) floats in 0-1.",
            |_, mut a| {
                let (c, alpha) = color_args(&mut a)?;
                let c = alpha.map_or(c, |al| c.with_alpha(al));
                Ok(floats(&[c.0, c.1, c.2, c.3]))
            },
        ),
    );
    m.set(
        "to_rgb",
        builtin(
            "to_rgb",
            "to_rgb(c): (r, g, b) floats in 0-1.",
            |_, mut a| {
                let c = rgba_of(&a.required(0, "c")?)?;
                a.finish(1)?;
                Ok(floats(&[c.0, c.1, c.2]))
            },
        ),
    );
    m.set(
        "to_hex",
        builtin(
            "to_hex",
            "to_hex(c, keep_alpha=False): '#rrggbb' (or '#rrggbbaa').",
            |_, mut a| {
                let c = rgba_of(&a.required(0, "c")?)?;
                let keep = a
                    .take(1, "keep_alpha")?
                    .map(|v| v.truthy())
                    .transpose()?
                    .unwrap_or(false);
                a.finish(2)?;
                let byte = |v: f64| (v.clamp(0.0, 1.0) * 255.0).round() as u8;
                let mut s = format!("#{:02x}{:02x}{:02x}", byte(c.0), byte(c.1), byte(c.2));
                if keep {
                    s.push_str(&format!("{:02x}", byte(c.3)));
                }
                Ok(Value::str(&s))
            },
        ),
    );
    m.set(
        "is_color_like",
        builtin(
            "is_color_like",
            "is_color_like(c): whether c is a colour matplotlib understands.",
            |_, mut a| {
                let c = a.required(0, "c")?;
                a.finish(1)?;
                Ok(Value::Bool(data::color_arg(&c).is_ok()))
            },
        ),
    );
    super::colormaps::add_to_colors(&m);
    m
}

/// A colour as `to_rgba` reads it, with its error.
fn rgba_of(c: &Value) -> Result<Rgba, Exc> {
    data::color_arg(c)
        .map_err(|_| Exc::value_error(format!("Invalid RGBA argument: {}", brief_repr(c))))
}

fn color_args(a: &mut Args) -> Result<(Rgba, Option<f64>), Exc> {
    let c = rgba_of(&a.required(0, "c")?)?;
    let alpha = match a.take(1, "alpha")? {
        None | Some(Value::None) => None,
        Some(v) => {
            let al = as_f64(&v).ok_or_else(|| {
                Exc::type_error(format!(
                    "alpha must be numeric or None, not {}",
                    v.type_name()
                ))
            })?;
            if !(0.0..=1.0).contains(&al) {
                return Err(Exc::value_error(
                    "'alpha' must be between 0 and 1, inclusive",
                ));
            }
            Some(al)
        }
    };
    a.finish(2)?;
    Ok((c, alpha))
}

fn floats(v: &[f64]) -> Value {
    Value::tuple(v.iter().map(|x| Value::Float(*x)).collect())
}

/// The pyplot functions of this file, each the Axes method on `gca()`.
pub(crate) fn pyplot_fns() -> Vec<(&'static str, &'static str, crate::object::value::BuiltinFn)> {
    PYPLOT_ON_GCA
        .iter()
        .map(|(name, doc)| {
            let f: crate::object::value::BuiltinFn = |it, mut a| {
                let given = match a.fname {
                    "twinx" | "twiny" if !a.pos.is_empty() => Some(a.pos.remove(0)),
                    "twinx" | "twiny" => a.take_kw("ax"),
                    _ => None,
                }
                .filter(|v| !matches!(v, Value::None));
                // pyplot's twinx(ax) is ax.twinx(): anything else has no such attribute.
                let ax = match given {
                    Some(v) => objects::as_axes(&v).ok_or_else(|| {
                        Exc::new(
                            crate::object::ExcKind::AttributeError,
                            format!("'{}' object has no attribute '{}'", v.type_name(), a.fname),
                        )
                    })?,
                    None => super::gca(it)?,
                };
                let f = AXES_METHODS
                    .iter()
                    .find(|(n, _)| *n == a.fname)
                    .map(|(_, f)| *f)
                    .ok_or_else(|| Exc::type_error("pyplot: no such Axes method"))?;
                f(it, &ax, a)
            };
            (*name, *doc, f)
        })
        .collect()
}
