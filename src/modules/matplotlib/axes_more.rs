//! The Axes' frame and background (`ax.spines[...]`, `set_facecolor`), `label_outer`, the
//! lines it holds (`get_lines()`, `ax.lines`), bands across it (`axhspan`, `axvspan`) and the
//! transforms `text`/`plot` accept (`ax.transAxes`, `ax.transData`). Each Axes method is
//! also pyplot's function on `gca()` (`figure_more::pyplot_fns`).

use std::rc::Rc;

use crate::display::plot::{color, Artist, Rgba, Span};
use crate::object::ops::as_f64;
use crate::object::value::{Args, NativeObject, Value};
use crate::object::{method, Exc, ExcKind, Interpreter};

use super::data;
use super::objects::{self, AxesObj};
use super::{AxFn, FaceStyle};

pub(crate) const AXES_METHODS: &[(&str, AxFn)] = &[
    ("set_facecolor", |_, ax, mut a| {
        let c = data::color_arg(&a.required(0, "color")?)?;
        a.finish(1)?;
        ax.with(|x| x.facecolor = c)?;
        Ok(Value::None)
    }),
    ("get_facecolor", |_, ax, a| {
        a.finish(0)?;
        let c = ax.with(|x| x.facecolor)?;
        Ok(rgba_tuple(c))
    }),
    ("label_outer", ax_label_outer),
    ("get_lines", |_, ax, a| {
        a.finish(0)?;
        let lines = line_handles(ax)?;
        let repr = format!("<a list of {} Line2D objects>", lines.len());
        Ok(artist_list(repr, lines))
    }),
    ("axhspan", |_, ax, a| span(ax, a, true)),
    ("axvspan", |_, ax, a| span(ax, a, false)),
];

/// pyplot's functions for the methods above that pyplot has.
pub(crate) const PYPLOT_ON_GCA: &[(&str, &str)] = &[
    (
        "axhspan",
        "axhspan(ymin, ymax, xmin=0, xmax=1, **kwargs): a horizontal band across the Axes.",
    ),
    (
        "axvspan",
        "axvspan(xmin, xmax, ymin=0, ymax=1, **kwargs): a vertical band across the Axes.",
    ),
];

pub(crate) fn rgba_tuple(c: Rgba) -> Value {
    Value::tuple(
        [c.0, c.1, c.2, c.3]
            .iter()
            .map(|v| Value::Float(*v))
            .collect(),
    )
}

/// Attributes of an Axes that are not methods.
pub(crate) fn axes_attr(ax: &Rc<AxesObj>, name: &str) -> Option<Value> {
    Some(match name {
        "spines" => Value::Object(Rc::new(SpinesValue { axes: ax.clone() })),
        "lines" => {
            let lines = line_handles(ax).ok()?;
            let repr = format!("<Axes.ArtistList of {} lines>", lines.len());
            artist_list(repr, lines)
        }
        "transAxes" => transform(true),
        "transData" => transform(false),
        _ => return None,
    })
}

/// `label_outer()`: on a subplot grid, only the bottom row keeps its x tick labels and
/// label, only the left column its y ones.
fn ax_label_outer(_it: &mut dyn Interpreter, ax: &Rc<AxesObj>, mut a: Args) -> Result<Value, Exc> {
    a.take(0, "remove_inner_ticks")?;
    a.finish(1)?;
    ax.with(|x| {
        let Some((nrows, _, row, col)) = x.grid else {
            return;
        };
        if row + 1 != nrows {
            x.x.ticklabels_on = false;
            x.x.label.clear();
        }
        if col != 0 {
            x.y.ticklabels_on = false;
            x.y.label.clear();
        }
    })?;
    Ok(Value::None)
}

/// The Line2D handles of the axes' lines (plotted lines and `axhline`/`axvline`), in order.
fn line_handles(ax: &Rc<AxesObj>) -> Result<Vec<Value>, Exc> {
    ax.with(|x| {
        x.artists
            .iter()
            .enumerate()
            .filter(|(_, a)| matches!(a, Artist::Line(_) | Artist::RefLine(_)))
            .map(|(i, _)| objects::line_handle(i))
            .collect()
    })
}

/// `axhspan(ymin, ymax, xmin=0, xmax=1)` / `axvspan(xmin, xmax, ymin=0, ymax=1)`: a
/// Rectangle in data units along one axis and axes fractions across, in the patch colour
/// (C0) unless given.
fn span(ax: &Rc<AxesObj>, mut a: Args, horizontal: bool) -> Result<Value, Exc> {
    let names = if horizontal {
        ["ymin", "ymax", "xmin", "xmax"]
    } else {
        ["xmin", "xmax", "ymin", "ymax"]
    };
    let fname = a.fname;
    let num = |v: Option<Value>, name: &str, default: Option<f64>| -> Result<f64, Exc> {
        match (v, default) {
            (Some(v), _) => as_f64(&v).ok_or_else(|| {
                Exc::type_error(format!("{name} must be a number, not {}", v.type_name()))
            }),
            (None, Some(d)) => Ok(d),
            (None, None) => Err(Exc::type_error(format!(
                "Axes.{fname}() missing 1 required positional argument: '{name}'"
            ))),
        }
    };
    let lo = num(a.take(0, names[0])?, names[0], None)?;
    let hi = num(a.take(1, names[1])?, names[1], None)?;
    let from = num(a.take(2, names[2])?, names[2], Some(0.0))?;
    let to = num(a.take(3, names[3])?, names[3], Some(1.0))?;
    let edge = a.kw.iter().any(|(k, _)| &**k == "color");
    let style = FaceStyle::take(
        &mut a,
        &[
            "edgecolor",
            "ec",
            "linewidth",
            "lw",
            "linestyle",
            "ls",
            "zorder",
            "hatch",
            "fill",
        ],
        "Rectangle",
        4,
    )?;
    let color = style.face(|| color::parse("C0").unwrap_or(Rgba::BLACK));
    ax.with(|x| {
        x.artists.push(Artist::Span(Span {
            lo,
            hi,
            horizontal,
            across: (from, to),
            color,
            edge,
            label: style.label,
        }))
    })?;
    Ok(objects::handle("matplotlib.patches.Rectangle"))
}

// ------------------------------------------------------------------ transforms

/// `ax.transAxes` and `ax.transData`: what `transform=` of `text`/`plot` says.
pub struct TransformValue {
    pub axes_fraction: bool,
}

fn transform(axes_fraction: bool) -> Value {
    Value::Object(Rc::new(TransformValue { axes_fraction }))
}

impl NativeObject for TransformValue {
    fn type_name(&self) -> &str {
        if self.axes_fraction {
            "BboxTransformTo"
        } else {
            "CompositeGenericTransform"
        }
    }
    fn repr(&self) -> String {
        format!(
            "<matplotlib.transforms.{} object at {:#x}>",
            self.type_name(),
            self as *const TransformValue as usize
        )
    }
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

/// Whether a `transform=` argument puts coordinates in axes fractions (`transAxes`); data
/// (`transData`, None) otherwise. Anything else fails as matplotlib's drawing does.
pub(crate) fn in_axes(v: Option<Value>) -> Result<bool, Exc> {
    match &v {
        None | Some(Value::None) => Ok(false),
        Some(Value::Object(o)) if o.as_any().is::<TransformValue>() => Ok(o
            .as_any()
            .downcast_ref::<TransformValue>()
            .is_some_and(|t| t.axes_fraction)),
        Some(other) => Err(Exc::new(
            ExcKind::AttributeError,
            format!(
                "'{}' object has no attribute 'transform'",
                other.type_name()
            ),
        )),
    }
}

// ------------------------------------------------------------------ artist lists

/// `get_lines()` (`<a list of 2 Line2D objects>`) and `ax.lines`
/// (`<Axes.ArtistList of 2 lines>`): a sequence of handles.
pub struct ArtistList {
    repr: String,
    items: Vec<Value>,
}

pub(crate) fn artist_list(repr: String, items: Vec<Value>) -> Value {
    Value::Object(Rc::new(ArtistList { repr, items }))
}

fn list_of(r: &Value) -> Result<&ArtistList, Exc> {
    match r {
        Value::Object(o) => o.as_any().downcast_ref::<ArtistList>(),
        _ => None,
    }
    .ok_or_else(|| Exc::type_error("an artist list method called on something else"))
}

impl NativeObject for ArtistList {
    fn type_name(&self) -> &str {
        "ArtistList"
    }
    fn repr(&self) -> String {
        self.repr.clone()
    }
    fn get_attr(&self, this: &Rc<dyn NativeObject>, name: &str) -> Option<Value> {
        let r = Value::Object(this.clone());
        Some(match name {
            "__len__" => method(&r, "__len__", "", |_, r, _| {
                Ok(Value::Int(list_of(r)?.items.len() as i64))
            }),
            "__iter__" => method(&r, "__iter__", "", |_, r, _| {
                Ok(Value::list(list_of(r)?.items.clone()))
            }),
            "__getitem__" => method(&r, "__getitem__", "", |_, r, mut a| {
                let i = a.required(0, "index")?;
                let items = &list_of(r)?.items;
                let n = items.len() as i64;
                let k = crate::object::ops::as_i64(&i).ok_or_else(|| {
                    Exc::type_error(format!(
                        "list indices must be integers or slices, not {}",
                        i.type_name()
                    ))
                })?;
                let k = if k < 0 { k + n } else { k };
                items
                    .get(usize::try_from(k).unwrap_or(usize::MAX))
                    .cloned()
                    .ok_or_else(|| Exc::new(ExcKind::IndexError, "list index out of range"))
            }),
            _ => return None,
        })
    }
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

// ------------------------------------------------------------------ spines

const SIDES: [&str; 4] = ["left", "right", "bottom", "top"];

/// `ax.spines`: the four sides of the frame by name.
pub struct SpinesValue {
    axes: Rc<AxesObj>,
}

/// One spine (`ax.spines['top']`) or several (`ax.spines[['top', 'right']]`).
pub struct SpineValue {
    axes: Rc<AxesObj>,
    sides: Vec<usize>,
    proxy: bool,
}

fn side_of(it: &mut dyn Interpreter, key: &Value) -> Result<usize, Exc> {
    match key {
        Value::Str(s) => SIDES
            .iter()
            .position(|n| **n == **s)
            .ok_or_else(|| Exc::key_error(it, key)),
        _ => Err(Exc::key_error(it, key)),
    }
}

impl NativeObject for SpinesValue {
    fn type_name(&self) -> &str {
        "Spines"
    }
    fn repr(&self) -> String {
        format!(
            "<matplotlib.spines.Spines object at {:#x}>",
            self as *const SpinesValue as usize
        )
    }
    fn get_attr(&self, this: &Rc<dyn NativeObject>, name: &str) -> Option<Value> {
        let r = Value::Object(this.clone());
        if let Some(i) = SIDES.iter().position(|n| *n == name) {
            return Some(spine(&self.axes, vec![i], false));
        }
        Some(match name {
            "__getitem__" => method(&r, "__getitem__", "", |it, r, mut a| {
                let key = a.required(0, "key")?;
                let axes = spines_of(r)?;
                match &key {
                    Value::List(_) | Value::Tuple(_) => {
                        let keys: Vec<Value> = match &key {
                            Value::List(l) => l.borrow().clone(),
                            Value::Tuple(t) => t.to_vec(),
                            _ => Vec::new(),
                        };
                        let sides = keys
                            .iter()
                            .map(|k| side_of(it, k))
                            .collect::<Result<Vec<_>, _>>()?;
                        Ok(spine(&axes, sides, true))
                    }
                    _ => Ok(spine(&axes, vec![side_of(it, &key)?], false)),
                }
            }),
            "keys" => method(&r, "keys", "", |_, _, a| {
                a.finish(0)?;
                Ok(Value::list(SIDES.iter().map(|s| Value::str(s)).collect()))
            }),
            "__iter__" => method(&r, "__iter__", "", |_, _, _| {
                Ok(Value::list(SIDES.iter().map(|s| Value::str(s)).collect()))
            }),
            "__len__" => method(&r, "__len__", "", |_, _, _| Ok(Value::Int(4))),
            "values" => method(&r, "values", "", |_, r, a| {
                a.finish(0)?;
                let axes = spines_of(r)?;
                Ok(Value::list(
                    (0..4).map(|i| spine(&axes, vec![i], false)).collect(),
                ))
            }),
            _ => return None,
        })
    }
    fn attr_names(&self) -> Vec<&'static str> {
        vec!["bottom", "keys", "left", "right", "top", "values"]
    }
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

fn spines_of(r: &Value) -> Result<Rc<AxesObj>, Exc> {
    match r {
        Value::Object(o) => o
            .as_any()
            .downcast_ref::<SpinesValue>()
            .map(|s| s.axes.clone()),
        _ => None,
    }
    .ok_or_else(|| Exc::type_error("a Spines method called on something else"))
}

fn spine(axes: &Rc<AxesObj>, sides: Vec<usize>, proxy: bool) -> Value {
    Value::Object(Rc::new(SpineValue {
        axes: axes.clone(),
        sides,
        proxy,
    }))
}

fn spine_of(r: &Value) -> Result<(Rc<AxesObj>, Vec<usize>), Exc> {
    match r {
        Value::Object(o) => o
            .as_any()
            .downcast_ref::<SpineValue>()
            .map(|s| (s.axes.clone(), s.sides.clone())),
        _ => None,
    }
    .ok_or_else(|| Exc::type_error("a Spine method called on something else"))
}

impl NativeObject for SpineValue {
    fn type_name(&self) -> &str {
        if self.proxy {
            "SpinesProxy"
        } else {
            "Spine"
        }
    }
    fn repr(&self) -> String {
        if self.proxy {
            format!(
                "<matplotlib.spines.SpinesProxy object at {:#x}>",
                self as *const SpineValue as usize
            )
        } else {
            format!(
                "<matplotlib.spines.Spine object at {:#x}>",
                self as *const SpineValue as usize
            )
        }
    }
    fn get_attr(&self, this: &Rc<dyn NativeObject>, name: &str) -> Option<Value> {
        let r = Value::Object(this.clone());
        Some(match name {
            "set_visible" => method(
                &r,
                "set_visible",
                "set_visible(b): show or hide the spine.",
                |_, r, mut a| {
                    let b = a.required(0, "b")?.truthy()?;
                    a.finish(1)?;
                    let (axes, sides) = spine_of(r)?;
                    axes.with(|x| {
                        for i in sides {
                            x.spines[i] = b;
                        }
                    })?;
                    Ok(Value::None)
                },
            ),
            "get_visible" => method(&r, "get_visible", "", |_, r, a| {
                a.finish(0)?;
                let (axes, sides) = spine_of(r)?;
                let i = sides.first().copied().unwrap_or(0);
                Ok(Value::Bool(axes.with(|x| x.spines[i])?))
            }),
            // Accepted: devarray draws every spine black, 0.8pt, at the edge of the box.
            "set_color" | "set_linewidth" | "set_position" | "set_edgecolor" | "set_alpha"
            | "set_linestyle" | "set_bounds" => method(&r, "set", "", |_, _, _| Ok(Value::None)),
            _ => return None,
        })
    }
    fn attr_names(&self) -> Vec<&'static str> {
        vec![
            "get_visible",
            "set_color",
            "set_linewidth",
            "set_position",
            "set_visible",
        ]
    }
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}
