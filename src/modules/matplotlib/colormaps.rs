//! Colormaps and norms as objects: `matplotlib.cm` (`cm.viridis(0.5)` gives matplotlib's
//! RGBA), `pyplot.get_cmap`, `pyplot.colormaps()`, `matplotlib.colormaps[...]`,
//! `colors.Normalize`/`LogNorm`, `colors.ListedColormap`, `LinearSegmentedColormap` and
//! `cm.ScalarMappable` (a norm and a colormap, for `colorbar`). The tables are
//! `display::plot::color`'s, which images and scatter plots draw with.

use std::cell::Cell;
use std::rc::Rc;

use crate::display::plot::{color, Norm, Rgba};
use crate::object::ops::{as_f64, as_i64};
use crate::object::value::{Args, Module, NativeObject, Value};
use crate::object::{builtin, method, Exc, ExcKind, Interpreter};

use super::data::{self, numbers, text_of};

/// A colormap: its name, its table, and how matplotlib classes it.
pub struct ColormapValue {
    pub name: String,
    /// The name its table is registered under for drawing.
    key: String,
    table: Vec<[f64; 3]>,
    listed: bool,
}

fn cmap_of(v: &Value) -> Option<&ColormapValue> {
    match v {
        Value::Object(o) => o.as_any().downcast_ref::<ColormapValue>(),
        _ => None,
    }
}

thread_local! {
    static MADE: Cell<usize> = const { Cell::new(0) };
}

/// A colormap a program made: its table registered under a key of its own.
fn made(name: &str, table: Vec<[f64; 3]>, listed: bool) -> Value {
    let k = MADE.with(|m| {
        m.set(m.get() + 1);
        m.get()
    });
    let key = format!("{name}#{k}");
    color::register(&key, table.clone());
    Value::Object(Rc::new(ColormapValue {
        name: name.to_string(),
        key,
        table,
        listed,
    }))
}

/// Segment-defined colormaps in matplotlib (the rest are listed).
fn is_listed(name: &str) -> bool {
    matches!(
        name.trim_end_matches("_r"),
        "viridis" | "plasma" | "inferno" | "magma" | "cividis"
    )
}

/// The built-in colormap `name` with `n` colours; None for an unknown name.
fn builtin_cmap(name: &str, n: Option<usize>) -> Option<Value> {
    let table = color::lut(name, n.unwrap_or(256))?;
    if n.is_some_and(|n| n != 256) {
        return Some(made(name, table, is_listed(name)));
    }
    Some(Value::Object(Rc::new(ColormapValue {
        name: name.to_string(),
        key: name.to_string(),
        table,
        listed: is_listed(name),
    })))
}

/// What `imshow(cmap=)`/`scatter(cmap=)` draw with: a name, or a colormap object's table.
pub(crate) fn cmap_name(v: &Value) -> String {
    match cmap_of(v) {
        Some(c) => c.key.clone(),
        None => text_of(v),
    }
}

/// The names matplotlib lists after "supported values are" (sorted).
pub(crate) fn supported_list() -> String {
    let mut names = color::colormap_names();
    names.sort();
    names
        .iter()
        .map(|n| format!("'{n}'"))
        .collect::<Vec<_>>()
        .join(", ")
}

fn unknown(name: &str, what: &str) -> Exc {
    Exc::value_error(format!(
        "'{name}' is not a valid value for {what}; supported values are {}",
        supported_list()
    ))
}

impl ColormapValue {
    /// The colour at `x`: floats in [0, 1] (below: the first colour, above: the last, NaN:
    /// transparent black), ints index the table.
    fn at(&self, x: &Value) -> Result<Rgba, Exc> {
        let n = self.table.len();
        let i = match x {
            Value::Int(i) => (*i).clamp(0, n as i64 - 1) as usize,
            Value::Bool(b) => usize::from(*b).min(n - 1),
            other => {
                let v = as_f64(other).ok_or_else(|| {
                    Exc::type_error(format!(
                        "colormap values must be numbers, not {}",
                        other.type_name()
                    ))
                })?;
                if v.is_nan() {
                    return Ok(Rgba(0.0, 0.0, 0.0, 0.0));
                }
                color::index_of(v.clamp(0.0, 1.0), n)
            }
        };
        let [r, g, b] = self.table[i];
        Ok(Rgba(r, g, b, 1.0))
    }
}

fn rgba_value(c: Rgba, bytes: bool) -> Value {
    let v = [c.0, c.1, c.2, c.3];
    Value::tuple(
        v.iter()
            .map(|x| match bytes {
                // matplotlib truncates: (lut * 255).astype(uint8).
                true => Value::Int((x * 255.0) as i64),
                false => Value::Float(*x),
            })
            .collect(),
    )
}

/// An (n, 4) NumPy array.
fn rgba_array(it: &mut dyn Interpreter, rows: Vec<Rgba>) -> Result<Value, Exc> {
    let n = rows.len();
    let flat: Vec<f64> = rows.iter().flat_map(|c| [c.0, c.1, c.2, c.3]).collect();
    let arr = it.state_mut().rt.from_host(
        crate::runtime::HostData::F64(flat),
        &[n, 4],
        crate::runtime::Device::cpu(0),
    )?;
    Ok(crate::object::ops::wrap(
        arr,
        crate::object::value::Flavor::Numpy,
    ))
}

fn is_scalar(v: &Value) -> bool {
    matches!(v, Value::Int(_) | Value::Float(_) | Value::Bool(_))
}

impl NativeObject for ColormapValue {
    fn type_name(&self) -> &str {
        if self.listed {
            "ListedColormap"
        } else {
            "LinearSegmentedColormap"
        }
    }
    fn repr(&self) -> String {
        format!(
            "<matplotlib.colors.{} object at {:#x}>",
            self.type_name(),
            self as *const ColormapValue as usize
        )
    }
    fn get_attr(&self, this: &Rc<dyn NativeObject>, name: &str) -> Option<Value> {
        let r = Value::Object(this.clone());
        Some(match name {
            "name" => Value::str(&self.name),
            "N" => Value::Int(self.table.len() as i64),
            "__call__" => method(
                &r,
                "__call__",
                "cmap(X, alpha=None, bytes=False): RGBA of X (0-1 floats, or table indices).",
                |it, r, mut a| {
                    let x = a.required(0, "X")?;
                    let alpha = a.take(1, "alpha")?.and_then(|v| as_f64(&v));
                    let bytes = a
                        .take(2, "bytes")?
                        .map(|v| v.truthy())
                        .transpose()?
                        .unwrap_or(false);
                    a.finish(3)?;
                    let c = cmap_of(r).ok_or_else(|| Exc::type_error("not a colormap"))?;
                    let with_alpha = |col: Rgba| match alpha {
                        Some(al) if col.3 > 0.0 => col.with_alpha(al.clamp(0.0, 1.0)),
                        _ => col,
                    };
                    if is_scalar(&x) {
                        return Ok(rgba_value(with_alpha(c.at(&x)?), bytes));
                    }
                    let d = numbers(it, &x)?;
                    let rows = d
                        .values
                        .iter()
                        .map(|v| c.at(&Value::Float(*v)).map(with_alpha))
                        .collect::<Result<Vec<_>, _>>()?;
                    rgba_array(it, rows)
                },
            ),
            "reversed" => method(
                &r,
                "reversed",
                "reversed(): the colormap backwards.",
                |_, r, a| {
                    a.finish(1)?;
                    let c = cmap_of(r).ok_or_else(|| Exc::type_error("not a colormap"))?;
                    let name = match c.name.strip_suffix("_r") {
                        Some(base) => base.to_string(),
                        None => format!("{}_r", c.name),
                    };
                    if let Some(v) = builtin_cmap(&name, Some(c.table.len())) {
                        return Ok(v);
                    }
                    let mut table = c.table.clone();
                    table.reverse();
                    Ok(made(&name, table, c.listed))
                },
            ),
            "resampled" => method(
                &r,
                "resampled",
                "resampled(lutsize): the colormap with lutsize colours.",
                |_, r, mut a| {
                    let n = lut_size(&a.required(0, "lutsize")?)?;
                    a.finish(1)?;
                    let c = cmap_of(r).ok_or_else(|| Exc::type_error("not a colormap"))?;
                    if let Some(v) = builtin_cmap(&c.name, Some(n)) {
                        return Ok(v);
                    }
                    let m = c.table.len();
                    let table = (0..n)
                        .map(|i| {
                            let x = if n == 1 {
                                0.0
                            } else {
                                i as f64 / (n - 1) as f64
                            };
                            c.table[color::index_of(x, m)]
                        })
                        .collect();
                    Ok(made(&c.name, table, c.listed))
                },
            ),
            _ => return None,
        })
    }
    fn attr_names(&self) -> Vec<&'static str> {
        vec!["N", "name", "resampled", "reversed"]
    }
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

fn lut_size(v: &Value) -> Result<usize, Exc> {
    as_i64(v)
        .filter(|n| *n >= 1 && *n <= 1 << 20)
        .map(|n| n as usize)
        .ok_or_else(|| {
            Exc::value_error(format!(
                "lutsize must be a positive int, not {}",
                data::brief_repr(v)
            ))
        })
}

/// `pyplot.get_cmap(name=None, lut=None)`.
pub(crate) fn get_cmap(_it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let name = a.take(0, "name")?;
    let lut = a.take(1, "lut")?.filter(|v| !matches!(v, Value::None));
    a.finish(2)?;
    let n = lut.as_ref().map(lut_size).transpose()?;
    match &name {
        None | Some(Value::None) => {
            builtin_cmap("viridis", n).ok_or_else(|| unknown("viridis", "name"))
        }
        Some(v) if cmap_of(v).is_some() => match n {
            None => Ok(v.clone()),
            Some(_) => Err(Exc::type_error(
                "get_cmap(cmap, lut): resample a Colormap object with .resampled(lut)",
            )),
        },
        Some(Value::Str(s)) => builtin_cmap(s, n).ok_or_else(|| unknown(s, "name")),
        Some(v) => Err(unknown(&text_of(v), "name")),
    }
}

/// `pyplot.colormaps()`: the registered names.
pub(crate) fn colormap_list(_it: &mut dyn Interpreter, a: Args) -> Result<Value, Exc> {
    a.finish(0)?;
    Ok(Value::list(
        color::colormap_names()
            .iter()
            .map(|n| Value::str(n))
            .collect(),
    ))
}

/// `matplotlib.cm`: every built-in colormap as an attribute, `ScalarMappable`,
/// `get_cmap`-free as in matplotlib 3.9+.
pub(crate) fn cm_module() -> Rc<Module> {
    let m = Rc::new(Module::new("matplotlib.cm", "built-in colormaps"));
    for name in color::colormap_names() {
        if let Some(v) = builtin_cmap(&name, None) {
            m.set(&name, v);
        }
    }
    m.set(
        "ScalarMappable",
        builtin(
            "ScalarMappable",
            "ScalarMappable(norm=None, cmap=None): a norm and a colormap, for colorbar().",
            |_, mut a| {
                let norm = a.take(0, "norm")?.filter(|v| !matches!(v, Value::None));
                let cmap = a.take(1, "cmap")?.filter(|v| !matches!(v, Value::None));
                a.finish(2)?;
                let (lo, hi) = norm
                    .as_ref()
                    .and_then(norm_of)
                    .map(|n| (n.vmin.get(), n.vmax.get()))
                    .unwrap_or((None, None));
                let cmap = cmap.map_or_else(|| "viridis".to_string(), |c| cmap_name(&c));
                if color::colormap(&cmap, 0.0).is_none() {
                    return Err(unknown(&cmap, "cmap"));
                }
                Ok(Value::Object(Rc::new(Mappable {
                    norm: Norm {
                        cmap,
                        lo: lo.unwrap_or(0.0),
                        hi: hi.unwrap_or(1.0),
                        levels: Vec::new(),
                        band_colors: Vec::new(),
                    },
                })))
            },
        ),
    );
    m
}

/// `matplotlib.colormaps`: the registry, indexed by name.
pub struct Registry;

impl NativeObject for Registry {
    fn type_name(&self) -> &str {
        "ColormapRegistry"
    }
    fn repr(&self) -> String {
        format!(
            "ColormapRegistry; available colormaps:\n{}",
            color::colormap_names()
                .iter()
                .map(|n| format!("'{n}'"))
                .collect::<Vec<_>>()
                .join(", ")
        )
    }
    fn get_attr(&self, this: &Rc<dyn NativeObject>, name: &str) -> Option<Value> {
        let r = Value::Object(this.clone());
        Some(match name {
            "__getitem__" => method(&r, "__getitem__", "", |it, _, mut a| {
                let k = a.required(0, "item")?;
                match &k {
                    Value::Str(s) => builtin_cmap(s, None).ok_or_else(|| {
                        Exc::new(
                            ExcKind::KeyError,
                            format!("\"'{s}' is not a known colormap name\""),
                        )
                    }),
                    _ => Err(Exc::key_error(it, &k)),
                }
            }),
            "__iter__" => method(&r, "__iter__", "", |it, _, a| colormap_list(it, a)),
            "__len__" => method(&r, "__len__", "", |_, _, _| {
                Ok(Value::Int(color::colormap_names().len() as i64))
            }),
            "__contains__" => method(&r, "__contains__", "", |_, _, mut a| {
                let k = a.required(0, "item")?;
                Ok(Value::Bool(
                    matches!(&k, Value::Str(s) if color::lut(s, 2).is_some()),
                ))
            }),
            "get_cmap" => method(
                &r,
                "get_cmap",
                "get_cmap(cmap): the colormap of that name.",
                |it, _, mut a| {
                    let v = a.required(0, "cmap")?;
                    a.finish(1)?;
                    get_cmap(it, Args::new("get_cmap", vec![v]))
                },
            ),
            _ => return None,
        })
    }
    fn contains(&self, item: &Value) -> Option<Result<bool, Exc>> {
        Some(Ok(
            matches!(item, Value::Str(s) if color::lut(s, 2).is_some()),
        ))
    }
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

// ------------------------------------------------------------------ norms

/// `Normalize(vmin, vmax, clip)` and `LogNorm`: data values to [0, 1].
pub struct NormValue {
    vmin: Cell<Option<f64>>,
    vmax: Cell<Option<f64>>,
    clip: bool,
    log: bool,
}

fn norm_of(v: &Value) -> Option<&NormValue> {
    match v {
        Value::Object(o) => o.as_any().downcast_ref::<NormValue>(),
        _ => None,
    }
}

impl NormValue {
    fn scale(&self, v: f64) -> f64 {
        if self.log {
            if v > 0.0 {
                v.log10()
            } else {
                f64::NAN
            }
        } else {
            v
        }
    }
    /// Sets the unset limits from `values` (matplotlib's `autoscale_None`).
    fn fill_limits(&self, values: &[f64]) {
        let finite = values.iter().copied().filter(|v| v.is_finite());
        let (lo, hi) = finite.fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), v| {
            (a.min(v), b.max(v))
        });
        if self.vmin.get().is_none() && lo.is_finite() {
            self.vmin.set(Some(lo));
        }
        if self.vmax.get().is_none() && hi.is_finite() {
            self.vmax.set(Some(hi));
        }
    }
    fn apply(&self, v: f64) -> Result<f64, Exc> {
        let (lo, hi) = (
            self.vmin.get().unwrap_or(0.0),
            self.vmax.get().unwrap_or(0.0),
        );
        if lo > hi {
            return Err(Exc::value_error(
                "minvalue must be less than or equal to maxvalue",
            ));
        }
        if lo == hi {
            return Ok(0.0);
        }
        let v = if self.clip { v.clamp(lo, hi) } else { v };
        let (a, b) = (self.scale(lo), self.scale(hi));
        if self.log && !(a.is_finite() && b.is_finite()) {
            return Err(Exc::value_error("Invalid vmin or vmax"));
        }
        Ok((self.scale(v) - a) / (b - a))
    }
}

impl NativeObject for NormValue {
    fn type_name(&self) -> &str {
        if self.log {
            "LogNorm"
        } else {
            "Normalize"
        }
    }
    fn repr(&self) -> String {
        format!(
            "<matplotlib.colors.{} object at {:#x}>",
            self.type_name(),
            self as *const NormValue as usize
        )
    }
    fn get_attr(&self, this: &Rc<dyn NativeObject>, name: &str) -> Option<Value> {
        let r = Value::Object(this.clone());
        let opt = |v: Option<f64>| v.map_or(Value::None, Value::Float);
        Some(match name {
            "vmin" => opt(self.vmin.get()),
            "vmax" => opt(self.vmax.get()),
            "clip" => Value::Bool(self.clip),
            "__call__" => method(
                &r,
                "__call__",
                "norm(value): value scaled to 0-1.",
                |it, r, mut a| {
                    let x = a.required(0, "value")?;
                    a.take(1, "clip")?;
                    a.finish(2)?;
                    let n = norm_of(r).ok_or_else(|| Exc::type_error("not a norm"))?;
                    let d = numbers(it, &x)?;
                    n.fill_limits(&d.values);
                    let out = d
                        .values
                        .iter()
                        .map(|v| n.apply(*v))
                        .collect::<Result<Vec<_>, _>>()?;
                    if is_scalar(&x) {
                        return Ok(Value::Float(out.first().copied().unwrap_or(0.0)));
                    }
                    super::numpy_value(it, out)
                },
            ),
            "inverse" => method(
                &r,
                "inverse",
                "inverse(value): 0-1 back to data values.",
                |_, r, mut a| {
                    let x = a.required(0, "value")?;
                    a.finish(1)?;
                    let n = norm_of(r).ok_or_else(|| Exc::type_error("not a norm"))?;
                    let t =
                        as_f64(&x).ok_or_else(|| Exc::type_error("inverse() takes a number"))?;
                    let (lo, hi) = match (n.vmin.get(), n.vmax.get()) {
                        (Some(lo), Some(hi)) => (lo, hi),
                        _ => {
                            return Err(Exc::value_error(
                                "Not invertible until both vmin and vmax are set",
                            ))
                        }
                    };
                    Ok(Value::Float(if n.log {
                        lo * (hi / lo).powf(t)
                    } else {
                        lo + t * (hi - lo)
                    }))
                },
            ),
            "autoscale" => method(
                &r,
                "autoscale",
                "autoscale(A): vmin and vmax from A.",
                |it, r, mut a| {
                    let x = a.required(0, "A")?;
                    a.finish(1)?;
                    let n = norm_of(r).ok_or_else(|| Exc::type_error("not a norm"))?;
                    let d = numbers(it, &x)?;
                    n.vmin.set(None);
                    n.vmax.set(None);
                    n.fill_limits(&d.values);
                    Ok(Value::None)
                },
            ),
            "autoscale_None" => method(
                &r,
                "autoscale_None",
                "autoscale_None(A): the unset limits from A.",
                |it, r, mut a| {
                    let x = a.required(0, "A")?;
                    a.finish(1)?;
                    let n = norm_of(r).ok_or_else(|| Exc::type_error("not a norm"))?;
                    n.fill_limits(&numbers(it, &x)?.values);
                    Ok(Value::None)
                },
            ),
            "scaled" => method(
                &r,
                "scaled",
                "scaled(): whether vmin and vmax are both set.",
                |_, r, a| {
                    a.finish(0)?;
                    let n = norm_of(r).ok_or_else(|| Exc::type_error("not a norm"))?;
                    Ok(Value::Bool(
                        n.vmin.get().is_some() && n.vmax.get().is_some(),
                    ))
                },
            ),
            _ => return None,
        })
    }
    fn attr_names(&self) -> Vec<&'static str> {
        vec![
            "autoscale",
            "autoscale_None",
            "clip",
            "inverse",
            "scaled",
            "vmax",
            "vmin",
        ]
    }
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

/// `vmin=`, `vmax=` and `norm=` of `imshow`/`scatter`: the limits (a norm's where given;
/// matplotlib refuses both).
pub(crate) fn limits_with_norm(a: &mut Args) -> Result<(Option<f64>, Option<f64>), Exc> {
    let vmin = super::kw_f64(a, &["vmin"])?;
    let vmax = super::kw_f64(a, &["vmax"])?;
    match a.take_kw("norm").filter(|v| !matches!(v, Value::None)) {
        None => Ok((vmin, vmax)),
        Some(_) if vmin.is_some() || vmax.is_some() => Err(Exc::value_error(
            "Passing a Normalize instance simultaneously with vmin/vmax is not supported.  Please pass vmin/vmax directly to the norm when creating it.",
        )),
        Some(n) => norm_limits(&n),
    }
}

/// A norm's limits; an error for anything else.
fn norm_limits(v: &Value) -> Result<(Option<f64>, Option<f64>), Exc> {
    match norm_of(v) {
        Some(n) if n.log => Err(Exc::new(
            ExcKind::NotImplementedError,
            "devarray draws images on a linear norm only (not LogNorm)",
        )),
        Some(n) => Ok((n.vmin.get(), n.vmax.get())),
        None => Err(Exc::value_error(format!(
            "Invalid norm str name; the following values are supported: 'linear', 'log', not {}",
            data::brief_repr(v)
        ))),
    }
}

fn make_norm(mut a: Args, log: bool) -> Result<Value, Exc> {
    let num = |v: Option<Value>| -> Result<Option<f64>, Exc> {
        match v {
            None | Some(Value::None) => Ok(None),
            Some(v) => as_f64(&v).map(Some).ok_or_else(|| {
                Exc::type_error(format!(
                    "vmin and vmax must be numbers, not {}",
                    v.type_name()
                ))
            }),
        }
    };
    let vmin = num(a.take(0, "vmin")?)?;
    let vmax = num(a.take(1, "vmax")?)?;
    let clip = a
        .take(2, "clip")?
        .map(|v| v.truthy())
        .transpose()?
        .unwrap_or(false);
    a.finish(3)?;
    Ok(Value::Object(Rc::new(NormValue {
        vmin: Cell::new(vmin),
        vmax: Cell::new(vmax),
        clip,
        log,
    })))
}

/// `cm.ScalarMappable(norm, cmap)`: what `colorbar` reads.
pub struct Mappable {
    pub norm: Norm,
}

impl NativeObject for Mappable {
    fn type_name(&self) -> &str {
        "ScalarMappable"
    }
    fn repr(&self) -> String {
        format!(
            "<matplotlib.cm.ScalarMappable object at {:#x}>",
            self as *const Mappable as usize
        )
    }
    fn get_attr(&self, _this: &Rc<dyn NativeObject>, name: &str) -> Option<Value> {
        match name {
            "cmap" => Some(Value::str(&self.norm.cmap)),
            _ => None,
        }
    }
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

/// The norm of a `ScalarMappable`, for `colorbar(sm, ax=...)`.
pub(crate) fn mappable_norm(v: &Value) -> Option<Norm> {
    match v {
        Value::Object(o) => o
            .as_any()
            .downcast_ref::<Mappable>()
            .map(|m| m.norm.clone()),
        _ => None,
    }
}

// ------------------------------------------------------------------ matplotlib.colors

/// The colour list of `ListedColormap(colors)` / `from_list(name, colors)`.
fn color_list(v: &Value) -> Result<Vec<[f64; 3]>, Exc> {
    let items: Vec<Value> = match v {
        Value::List(l) => l.borrow().clone(),
        Value::Tuple(t) => t.to_vec(),
        other => {
            return Err(Exc::type_error(format!(
                "colors must be a list of colours, not {}",
                other.type_name()
            )))
        }
    };
    if items.is_empty() {
        return Err(Exc::value_error("No colors were given to the colormap"));
    }
    items
        .iter()
        .map(|c| {
            let c = data::color_arg(c).map_err(|_| {
                Exc::value_error(format!("Invalid RGBA argument: {}", data::brief_repr(c)))
            })?;
            Ok([c.0, c.1, c.2])
        })
        .collect()
}

/// Adds `Normalize`, `LogNorm`, `ListedColormap`, `LinearSegmentedColormap` to
/// `matplotlib.colors`.
pub(crate) fn add_to_colors(m: &Rc<Module>) {
    m.set(
        "Normalize",
        builtin(
            "Normalize",
            "Normalize(vmin=None, vmax=None, clip=False): data values to 0-1, linearly.",
            |_, a| make_norm(a, false),
        ),
    );
    m.set(
        "LogNorm",
        builtin(
            "LogNorm",
            "LogNorm(vmin=None, vmax=None, clip=False): data values to 0-1 on a log scale.",
            |_, a| make_norm(a, true),
        ),
    );
    m.set(
        "ListedColormap",
        builtin(
            "ListedColormap",
            "ListedColormap(colors, name='from_list', N=None): a colormap of these colours.",
            |_, mut a| {
                let colors = color_list(&a.required(0, "colors")?)?;
                let name = a
                    .take(1, "name")?
                    .map_or_else(|| "from_list".to_string(), |v| text_of(&v));
                let n = a.take(2, "N")?.filter(|v| !matches!(v, Value::None));
                a.finish(3)?;
                let table = match n {
                    // N cycles through the colours.
                    Some(v) => {
                        let n = lut_size(&v)?;
                        (0..n).map(|i| colors[i % colors.len()]).collect()
                    }
                    None => colors,
                };
                Ok(made(&name, table, true))
            },
        ),
    );
    let lsc = Rc::new(Module::new(
        "LinearSegmentedColormap",
        "colormaps interpolated between colours",
    ));
    lsc.set(
        "from_list",
        builtin(
            "from_list",
            "from_list(name, colors, N=256): a colormap blending the colours evenly.",
            |_, mut a| {
                let name = text_of(&a.required(0, "name")?);
                let colors = color_list(&a.required(1, "colors")?)?;
                let n = a
                    .take(2, "N")?
                    .map(|v| lut_size(&v))
                    .transpose()?
                    .unwrap_or(256);
                a.take(3, "gamma")?;
                a.finish(4)?;
                Ok(made(&name, even_table(&colors, n), false))
            },
        ),
    );
    m.set("LinearSegmentedColormap", Value::Module(lsc));
}

/// `n` colours blending `colors` placed evenly from 0 to 1 (matplotlib's `from_list`).
fn even_table(colors: &[[f64; 3]], n: usize) -> Vec<[f64; 3]> {
    let m = colors.len();
    if m == 1 {
        return vec![colors[0]; n];
    }
    (0..n)
        .map(|i| {
            let x = if n == 1 {
                0.0
            } else {
                i as f64 / (n - 1) as f64
            };
            let pos = x * (m - 1) as f64;
            let k = (pos.floor() as usize).min(m - 2);
            let f = pos - k as f64;
            let mix = |c: usize| colors[k][c] + (colors[k + 1][c] - colors[k][c]) * f;
            [mix(0), mix(1), mix(2)]
        })
        .collect()
}
