//! Figure-level text and bookkeeping (`fig.text`/`plt.figtext`, `supxlabel`, `supylabel`,
//! `sca`, `delaxes`, `fig.canvas`), the rcParams tools (`rc`, `rcdefaults`,
//! `matplotlib.style`, the `axes.prop_cycle` cycler) and what new Axes take from rcParams
//! (`apply_rc`: background, frame and grid colours, grid on, the colour cycle).

use std::rc::Rc;

use crate::display::plot::{self as plot, color, Artist, Axes, FigText, Rgba};
use crate::object::ops::as_f64;
use crate::object::value::{Args, Dict, HashKey, MethodFn, Module, NativeObject, Value};
use crate::object::{builtin, method, Exc, ExcKind, Interpreter};

use super::data::{self, brief_repr, text_of};
use super::kw_val;
use super::objects::{self, axes_value, FigObj};

// ------------------------------------------------------------------ Figure

pub(crate) fn figure_method(name: &str) -> Option<(&'static str, &'static str, MethodFn)> {
    FIGURE_METHODS.iter().find(|(n, _, _)| *n == name).copied()
}

pub(crate) const FIGURE_METHODS: &[(&str, &str, MethodFn)] = &[
    (
        "text",
        "text(x, y, s, **kwargs): text at (x, y) in figure fractions.",
        |_, r, a| fig_text(&fig_of(r)?, a, None),
    ),
    (
        "supxlabel",
        "supxlabel(t, x=0.5, y=0.01): a label under all subplots.",
        |_, r, a| fig_text(&fig_of(r)?, a, Some("supxlabel")),
    ),
    (
        "supylabel",
        "supylabel(t, x=0.02, y=0.5): a label left of all subplots.",
        |_, r, a| fig_text(&fig_of(r)?, a, Some("supylabel")),
    ),
    (
        "delaxes",
        "delaxes(ax): remove ax from the figure.",
        |_, r, mut a| {
            let v = a.required(0, "ax")?;
            a.finish(1)?;
            delaxes(&fig_of(r)?, &v)
        },
    ),
    (
        "legend",
        "legend(labels=None, loc='upper right', fontsize=None): one legend for the artists of all the Axes.",
        |it, r, a| fig_legend(it, &fig_of(r)?, a),
    ),
    ("sca", "sca(a): make a the current Axes.", |it, r, mut a| {
        let v = a.required(0, "a")?;
        a.finish(1)?;
        let f = fig_of(r)?;
        let ax = axes_arg(&v, "sca")?;
        if !Rc::ptr_eq(&ax.fig, &f) {
            return Err(Exc::value_error("Axes is not in this figure"));
        }
        sca(it, &ax)?;
        Ok(v)
    }),
];

fn fig_of(r: &Value) -> Result<Rc<FigObj>, Exc> {
    objects::as_fig(r).ok_or_else(|| Exc::type_error("a Figure method called on something else"))
}

fn axes_arg(v: &Value, what: &str) -> Result<Rc<objects::AxesObj>, Exc> {
    objects::as_axes(v)
        .ok_or_else(|| Exc::type_error(format!("{what}() takes an Axes, not {}", v.type_name())))
}

/// Attributes of a Figure that are not methods: `canvas`.
pub(crate) fn figure_attr(f: &Rc<FigObj>, name: &str) -> Option<Value> {
    match name {
        "canvas" => Some(Value::Object(Rc::new(Canvas { fig: f.clone() }))),
        _ => None,
    }
}

/// `fig.canvas`: drawing happens when a figure is shown or saved, so `draw()` and friends
/// are accepted and do nothing.
pub struct Canvas {
    fig: Rc<FigObj>,
}

impl NativeObject for Canvas {
    fn type_name(&self) -> &str {
        "FigureCanvasAgg"
    }
    fn repr(&self) -> String {
        format!(
            "<matplotlib.backends.backend_agg.FigureCanvasAgg object at {:#x}>",
            self as *const Canvas as usize
        )
    }
    fn get_attr(&self, this: &Rc<dyn NativeObject>, name: &str) -> Option<Value> {
        let r = Value::Object(this.clone());
        Some(match name {
            "figure" => objects::fig_value(&self.fig),
            "draw" | "draw_idle" | "flush_events" => method(
                &r,
                "draw",
                "draw(): accepted (figures draw when shown).",
                |_, _, _| Ok(Value::None),
            ),
            "get_width_height" => method(&r, "get_width_height", "", |_, r, a| {
                a.finish(0)?;
                let Value::Object(o) = r else {
                    return Ok(Value::None);
                };
                let Some(c) = o.as_any().downcast_ref::<Canvas>() else {
                    return Ok(Value::None);
                };
                let (w, h) = c.fig.fig.borrow().pixels();
                Ok(Value::tuple(vec![
                    Value::Int(w as i64),
                    Value::Int(h as i64),
                ]))
            }),
            _ => return None,
        })
    }
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

/// `fig.text(x, y, s)`, `supxlabel(t)`, `supylabel(t)`: text in figure fractions. What it
/// returns prints as matplotlib's `Text(x, y, 's')`.
fn fig_text(f: &Rc<FigObj>, mut a: Args, role: Option<&'static str>) -> Result<Value, Exc> {
    let (x, y, s) = match role {
        None => (
            Some(a.required(0, "x")?),
            Some(a.required(1, "y")?),
            a.required(2, "s")?,
        ),
        Some(_) => (a.take_kw("x"), a.take_kw("y"), a.required(0, "t")?),
    };
    let (dx, dy, dha, dva) = match role {
        Some("supxlabel") => (0.5, 0.01, "center", "bottom"),
        Some(_) => (0.02, 0.5, "left", "center"),
        None => (0.0, 0.0, "left", "baseline"),
    };
    let num = |v: &Option<Value>, default: f64| -> Result<(f64, String), Exc> {
        match v {
            // Printed as Python prints the float default: Text(0.5, 0.01, ...).
            None => Ok((default, crate::object::format::float_repr(default))),
            Some(v) => as_f64(v).map(|n| (n, brief_repr(v))).ok_or_else(|| {
                Exc::type_error(format!(
                    "text() x and y must be numbers, not {}",
                    v.type_name()
                ))
            }),
        }
    };
    let ((x, xr), (y, yr)) = (num(&x, dx)?, num(&y, dy)?);
    let body = text_of(&s);
    let color = kw_val(&mut a, &["color", "c"])
        .map(|v| data::color_arg(&v))
        .transpose()?;
    let size = match kw_val(&mut a, &["fontsize", "size"]) {
        Some(v) => Some(super::font_size(&v)?),
        None => None,
    };
    let ha = kw_val(&mut a, &["ha", "horizontalalignment"]).map(|v| text_of(&v));
    let va = kw_val(&mut a, &["va", "verticalalignment"]).map(|v| text_of(&v));
    for k in [
        "fontweight",
        "weight",
        "rotation",
        "transform",
        "bbox",
        "alpha",
        "zorder",
        "family",
        "style",
        "wrap",
    ] {
        a.take_kw(k);
    }
    super::finish_kw(&a, "Text", if role.is_some() { 1 } else { 3 })?;
    let handle = objects::text_handle(&xr, &yr, &body);
    let t = FigText {
        x,
        y,
        text: body,
        // figure.labelsize ('large') for the super labels.
        size: size.unwrap_or(if role.is_some() { 12.0 } else { 10.0 }),
        color: color.unwrap_or(Rgba::BLACK),
        ha: ha.unwrap_or_else(|| dha.into()),
        va: va.unwrap_or_else(|| dva.into()),
        vertical: role == Some("supylabel"),
        role,
    };
    let mut fig = f.fig.borrow_mut();
    if role.is_some() {
        fig.texts.retain(|old| old.role != role);
    }
    fig.texts.push(t);
    Ok(handle)
}

fn delaxes(f: &Rc<FigObj>, v: &Value) -> Result<Value, Exc> {
    let ax = axes_arg(v, "delaxes")?;
    if !Rc::ptr_eq(&ax.fig, f) {
        return Err(Exc::value_error("Axes is not in this figure"));
    }
    let next = {
        let mut fig = f.fig.borrow_mut();
        if let Some(a) = fig.axes.get_mut(ax.index) {
            a.removed = true;
        }
        (0..fig.axes.len()).rev().find(|i| !fig.axes[*i].removed)
    };
    if f.current.get() == Some(ax.index) {
        f.current.set(next);
    }
    Ok(Value::None)
}

/// `pyplot.sca(ax)`: ax's figure and ax become current.
fn sca(it: &mut dyn Interpreter, ax: &Rc<objects::AxesObj>) -> Result<(), Exc> {
    ax.fig.current.set(Some(ax.index));
    super::with_state(it, |p| {
        *p.current.borrow_mut() = Some(ax.fig.clone());
    })
}

// ------------------------------------------------------------------ pyplot

/// pyplot's functions of this file (and of `axes_more`'s and `charts`' Axes methods).
pub(crate) fn pyplot_fns() -> Vec<(&'static str, &'static str, crate::object::value::BuiltinFn)> {
    let mut v: Vec<(&'static str, &'static str, crate::object::value::BuiltinFn)> = vec![
        (
            "figtext",
            "figtext(x, y, s, **kwargs): text at (x, y) in figure fractions.",
            |it, a| {
                let f = super::gcf(it)?;
                fig_text(&f, a, None)
            },
        ),
        (
            "sca",
            "sca(ax): make ax (and its figure) current.",
            |it, mut a| {
                let v = a.required(0, "ax")?;
                a.finish(1)?;
                let ax = axes_arg(&v, "sca")?;
                sca(it, &ax)?;
                Ok(Value::None)
            },
        ),
        (
            "delaxes",
            "delaxes(ax=None): remove ax (the current Axes) from its figure.",
            |it, mut a| {
                let v = a.take(0, "ax")?.filter(|v| !matches!(v, Value::None));
                a.finish(1)?;
                let v = match v {
                    Some(v) => v,
                    None => axes_value(&super::gca(it)?),
                };
                let ax = axes_arg(&v, "delaxes")?;
                delaxes(&ax.fig.clone(), &v)
            },
        ),
        (
            "get_cmap",
            "get_cmap(name=None, lut=None): a colormap by name, with lut colours.",
            super::colormaps::get_cmap,
        ),
        (
            "colormaps",
            "colormaps(): the names of the colormaps.",
            super::colormaps::colormap_list,
        ),
        (
            "rc",
            "rc(group, **kwargs): set rcParams['group.key'] for each key.",
            rc,
        ),
        (
            "rcdefaults",
            "rcdefaults(): rcParams back to matplotlib's defaults.",
            rcdefaults,
        ),
    ];
    v.push((
        "matshow",
        "matshow(A, fignum=None, cmap=None): a matrix as an image in a new figure, its x axis on top; returns an AxesImage.",
        super::mesh::plt_matshow,
    ));
    for (name, doc) in super::axes_more::PYPLOT_ON_GCA
        .iter()
        .chain(super::charts::PYPLOT_ON_GCA)
        .chain(super::contour::PYPLOT_ON_GCA)
        .chain(super::mesh::PYPLOT_ON_GCA)
    {
        let f: crate::object::value::BuiltinFn = |it, a| {
            let ax = super::gca(it)?;
            let f = super::axes_more::AXES_METHODS
                .iter()
                .chain(super::charts::AXES_METHODS)
                .chain(super::contour::AXES_METHODS)
                .chain(super::mesh::AXES_METHODS)
                .find(|(n, _)| *n == a.fname)
                .map(|(_, f)| *f)
                .ok_or_else(|| Exc::type_error("pyplot: no such Axes method"))?;
            f(it, &ax, a)
        };
        v.push((name, doc, f));
    }
    v
}

/// `fig.legend()`: the labelled artists of every Axes (or every artist, named by `labels`),
/// copied into a legend the figure draws over its Axes.
fn fig_legend(it: &mut dyn Interpreter, f: &Rc<FigObj>, a: Args) -> Result<Value, Exc> {
    let legend = super::legend_args(a)?;
    if legend.artists.is_some() {
        return Err(Exc::new(
            ExcKind::NotImplementedError,
            "fig.legend(handles, labels): devarray's figure legends take labels only (or none)",
        ));
    }
    let mut fig = f.fig.borrow_mut();
    let artists = fig
        .axes
        .iter()
        .filter(|ax| !ax.removed && ax.colorbar.is_none())
        .flat_map(|ax| ax.artists.iter());
    let entries: Vec<(String, Artist)> = match &legend.labels {
        None => artists
            .filter_map(|art| art.label().map(|l| (l.to_string(), art.clone())))
            .collect(),
        Some(labels) => artists
            .filter(|art| !matches!(art, Artist::Text(_) | Artist::Image(_) | Artist::Patches(_)))
            .zip(labels)
            .map(|(art, l)| (l.clone(), art.clone()))
            .collect(),
    };
    if legend.labels.is_none() && entries.is_empty() {
        drop(fig);
        super::warn_no_labels(it)?;
        fig = f.fig.borrow_mut();
    }
    fig.legends.push(plot::FigLegend {
        entries,
        loc: legend.loc,
        fontsize: legend.fontsize,
    });
    Ok(objects::handle("matplotlib.legend.Legend"))
}

// ------------------------------------------------------------------ rcParams

fn rc_dict(it: &mut dyn Interpreter) -> Result<Value, Exc> {
    it.import("matplotlib")?
        .get("rcParams")
        .ok_or_else(|| Exc::new(ExcKind::RuntimeError, "rcParams is missing"))
}

fn rc_set(rc: &Value, key: &str, v: Value) {
    if let Value::Dict(d) = rc {
        d.borrow_mut()
            .insert(HashKey::Str(Rc::from(key)), Value::str(key), v);
    }
}

/// matplotlib's aliases for `rc()` keyword names.
const RC_ALIASES: &[(&str, &str)] = &[
    ("lw", "linewidth"),
    ("ls", "linestyle"),
    ("c", "color"),
    ("fc", "facecolor"),
    ("ec", "edgecolor"),
    ("mew", "markeredgewidth"),
    ("aa", "antialiased"),
];

/// Every rcParams key matplotlib has for the groups programs set through `rc()`; a key
/// outside them is matplotlib's KeyError.
const RC_KEYS: &[&str] = &[
    "lines.linewidth",
    "lines.linestyle",
    "lines.color",
    "lines.marker",
    "lines.markersize",
    "lines.markeredgewidth",
    "lines.antialiased",
    "font.size",
    "font.family",
    "font.weight",
    "font.style",
    "axes.titlesize",
    "axes.labelsize",
    "axes.grid",
    "axes.facecolor",
    "axes.edgecolor",
    "axes.linewidth",
    "axes.prop_cycle",
    "axes.labelcolor",
    "axes.titleweight",
    "axes.spines.top",
    "axes.spines.right",
    "axes.spines.left",
    "axes.spines.bottom",
    "xtick.labelsize",
    "ytick.labelsize",
    "xtick.color",
    "ytick.color",
    "xtick.direction",
    "ytick.direction",
    "grid.color",
    "grid.linestyle",
    "grid.linewidth",
    "grid.alpha",
    "figure.figsize",
    "figure.dpi",
    "figure.facecolor",
    "figure.titlesize",
    "figure.autolayout",
    "legend.fontsize",
    "legend.frameon",
    "legend.loc",
    "savefig.dpi",
    "savefig.bbox",
    "image.cmap",
    "patch.facecolor",
    "patch.edgecolor",
    "text.color",
    "text.usetex",
];

fn rc(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let group = a.required(0, "group")?;
    let kw = std::mem::take(&mut a.kw);
    a.finish(1)?;
    let groups: Vec<String> = match &group {
        Value::Str(s) => vec![s.to_string()],
        Value::List(l) => l.borrow().iter().map(text_of).collect(),
        Value::Tuple(t) => t.iter().map(text_of).collect(),
        other => {
            return Err(Exc::type_error(format!(
                "rc() group must be a str or tuple of str, not {}",
                other.type_name()
            )))
        }
    };
    let rc = rc_dict(it)?;
    for g in &groups {
        for (k, v) in &kw {
            let name = RC_ALIASES
                .iter()
                .find(|(alias, _)| **alias == **k)
                .map_or(k.to_string(), |(_, n)| n.to_string());
            let key = format!("{g}.{name}");
            if !RC_KEYS.contains(&key.as_str()) {
                return Err(Exc::new(
                    ExcKind::KeyError,
                    format!("'Unrecognized key \"{key}\" for group \"{g}\" and name \"{name}\"'"),
                ));
            }
            // matplotlib's validators make numbers floats.
            let v = match v {
                Value::Int(i) => Value::Float(*i as f64),
                other => other.clone(),
            };
            rc_set(&rc, &key, v);
        }
    }
    Ok(Value::None)
}

/// Puts back every default of [`super::rc_params`], keeping keys a program added.
fn rcdefaults(it: &mut dyn Interpreter, a: Args) -> Result<Value, Exc> {
    a.finish(0)?;
    reset_rc(&rc_dict(it)?);
    Ok(Value::None)
}

fn reset_rc(rc: &Value) {
    if let Value::Dict(defaults) = &super::rc_params() {
        for (k, v) in defaults.borrow().entries.iter() {
            rc_set(rc, &text_of(k), v.clone());
        }
    }
}

/// The defaults this file adds to rcParams: what new Axes read.
pub(crate) fn rc_defaults() -> Vec<(&'static str, Value)> {
    vec![
        ("axes.facecolor", Value::str("white")),
        ("axes.edgecolor", Value::str("black")),
        ("grid.color", Value::str("#b0b0b0")),
        (
            "axes.prop_cycle",
            cycler(
                crate::display::plot::TAB10
                    .iter()
                    .map(|s| s.to_string())
                    .collect(),
            ),
        ),
        ("image.cmap", Value::str("viridis")),
    ]
}

/// What a new Axes takes from rcParams: its background, frame and grid colours, whether it
/// has a grid, and its colour cycle.
pub(crate) fn apply_rc(ax: &mut Axes, rc: &Value) {
    let Value::Dict(d) = rc else {
        return;
    };
    let d = d.borrow();
    let get = |k: &str| d.get(&HashKey::Str(Rc::from(k))).cloned();
    let colour = |k: &str| get(k).and_then(|v| data::color_arg(&v).ok());
    if let Some(c) = colour("axes.facecolor") {
        ax.facecolor = c;
    }
    if let Some(c) = colour("axes.edgecolor") {
        ax.edgecolor = c;
    }
    if let Some(c) = colour("grid.color") {
        ax.grid_color = c;
    }
    if let Some(v) = get("axes.grid") {
        ax.grid_on = v.truthy().unwrap_or(false);
    }
    if let Some(Value::Object(o)) = &get("axes.prop_cycle") {
        if let Some(c) = o.as_any().downcast_ref::<Cycler>() {
            ax.colors = c.colors.iter().filter_map(|s| color::parse(s)).collect();
        }
    }
}

// ------------------------------------------------------------------ cycler

/// `rcParams['axes.prop_cycle']`: `cycler('color', [...])`.
pub struct Cycler {
    colors: Vec<String>,
}

pub(crate) fn cycler(colors: Vec<String>) -> Value {
    Value::Object(Rc::new(Cycler { colors }))
}

impl NativeObject for Cycler {
    fn type_name(&self) -> &str {
        "Cycler"
    }
    fn repr(&self) -> String {
        format!(
            "cycler('color', [{}])",
            self.colors
                .iter()
                .map(|c| crate::object::format::str_repr(c))
                .collect::<Vec<_>>()
                .join(", ")
        )
    }
    fn get_attr(&self, this: &Rc<dyn NativeObject>, name: &str) -> Option<Value> {
        let r = Value::Object(this.clone());
        Some(match name {
            "by_key" => method(&r, "by_key", "by_key(): {'color': [...]}.", |_, r, a| {
                a.finish(0)?;
                let colors = match r {
                    Value::Object(o) => o
                        .as_any()
                        .downcast_ref::<Cycler>()
                        .map(|c| c.colors.clone())
                        .unwrap_or_default(),
                    _ => Vec::new(),
                };
                let mut d = Dict::default();
                d.insert(
                    HashKey::Str(Rc::from("color")),
                    Value::str("color"),
                    Value::list(colors.iter().map(|c| Value::str(c)).collect()),
                );
                Ok(Value::Dict(Rc::new(std::cell::RefCell::new(d))))
            }),
            "keys" => Value::tuple(vec![Value::str("color")]),
            _ => return None,
        })
    }
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

// ------------------------------------------------------------------ style

/// The style sheets devarray has: the rcParams each changes (matplotlib 3.10's files, the
/// keys devarray draws).
fn style_sheet(name: &str) -> Option<Vec<(&'static str, Value)>> {
    let cyc = |c: &[&str]| cycler(c.iter().map(|s| format!("#{}", s.to_lowercase())).collect());
    Some(match name {
        "default" => Vec::new(),
        "ggplot" => vec![
            ("axes.facecolor", Value::str("#E5E5E5")),
            ("axes.edgecolor", Value::str("white")),
            ("axes.grid", Value::Bool(true)),
            ("grid.color", Value::str("white")),
            ("patch.facecolor", Value::str("#348ABD")),
            (
                "axes.prop_cycle",
                cyc(&[
                    "E24A33", "348ABD", "988ED5", "777777", "FBC15E", "8EBA42", "FFB5B8",
                ]),
            ),
        ],
        "seaborn-v0_8" | "seaborn-v0_8-darkgrid" => vec![
            ("axes.facecolor", Value::str("#EAEAF2")),
            ("axes.edgecolor", Value::str("white")),
            ("axes.grid", Value::Bool(true)),
            ("grid.color", Value::str("white")),
            ("patch.facecolor", Value::str("#4C72B0")),
            (
                "axes.prop_cycle",
                cyc(&["4C72B0", "55A868", "C44E52", "8172B2", "CCB974", "64B5CD"]),
            ),
        ],
        "classic" => vec![
            (
                "figure.figsize",
                Value::list(vec![Value::Float(8.0), Value::Float(6.0)]),
            ),
            ("figure.dpi", Value::Float(80.0)),
            ("lines.linewidth", Value::Float(1.0)),
            ("font.size", Value::Float(12.0)),
            (
                "axes.prop_cycle",
                cyc(&[
                    "0000FF", "008000", "FF0000", "00BFBF", "BF00BF", "BFBF00", "000000",
                ]),
            ),
            ("patch.facecolor", Value::str("b")),
        ],
        _ => return None,
    })
}

/// matplotlib 3.10's library styles, for an error that says which devarray lacks.
const MATPLOTLIB_STYLES: &[&str] = &[
    "Solarize_Light2",
    "bmh",
    "dark_background",
    "fast",
    "fivethirtyeight",
    "grayscale",
    "petroff10",
    "seaborn-v0_8-bright",
    "seaborn-v0_8-colorblind",
    "seaborn-v0_8-dark",
    "seaborn-v0_8-dark-palette",
    "seaborn-v0_8-deep",
    "seaborn-v0_8-muted",
    "seaborn-v0_8-notebook",
    "seaborn-v0_8-paper",
    "seaborn-v0_8-pastel",
    "seaborn-v0_8-poster",
    "seaborn-v0_8-talk",
    "seaborn-v0_8-ticks",
    "seaborn-v0_8-white",
    "seaborn-v0_8-whitegrid",
    "tableau-colorblind10",
];

const STYLES: &[&str] = &[
    "classic",
    "default",
    "ggplot",
    "seaborn-v0_8",
    "seaborn-v0_8-darkgrid",
];

/// `matplotlib.style`: `use(style)` and `available`.
pub(crate) fn style_module() -> Rc<Module> {
    let m = Rc::new(Module::new(
        "matplotlib.style",
        "style sheets: rcParams in groups",
    ));
    m.set(
        "use",
        builtin(
            "use",
            "use(style): apply a style sheet ('default', 'ggplot', 'seaborn-v0_8', 'classic') or a list of them.",
            |it, mut a| {
                let style = a.required(0, "style")?;
                a.finish(1)?;
                let names: Vec<String> = match &style {
                    Value::List(l) => l.borrow().iter().map(text_of).collect(),
                    Value::Tuple(t) => t.iter().map(text_of).collect(),
                    Value::Str(s) => vec![s.to_string()],
                    other => {
                        return Err(Exc::type_error(format!(
                            "'{}' object is not iterable",
                            other.type_name()
                        )))
                    }
                };
                let rc = rc_dict(it)?;
                for name in names {
                    let sheet = style_sheet(&name).ok_or_else(|| {
                        let known = STYLES.iter().map(|s| format!("'{s}'")).collect::<Vec<_>>().join(", ");
                        if MATPLOTLIB_STYLES.contains(&name.as_str()) {
                            Exc::new(ExcKind::OSError, format!("devarray does not have matplotlib's style '{name}'; it has {known}"))
                        } else {
                            Exc::new(ExcKind::OSError, format!("'{name}' is not a valid package style, path of style file, URL of style file, or library style name (library styles are listed in `style.available`)"))
                        }
                    })?;
                    // These two sheets set every parameter; the others only theirs.
                    if matches!(name.as_str(), "default" | "classic") {
                        reset_rc(&rc);
                    }
                    for (k, v) in sheet {
                        rc_set(&rc, k, v);
                    }
                }
                Ok(Value::None)
            },
        ),
    );
    m.set(
        "available",
        Value::list(STYLES.iter().map(|s| Value::str(s)).collect()),
    );
    m
}
