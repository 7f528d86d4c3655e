//! `contour`, `contourf` and `clabel`: matplotlib 3.10's `QuadContourSet` on the artists
//! that exist. Levels are `MaxNLocator(N + 1, min_n_ticks=1)` on the data range, trimmed as
//! `ContourSet._autolev` trims them; lines are marching squares (`display::plot::contour`),
//! one `Line` per piece; filled bands are one `Patches` per band. Colours come from the
//! colormap at the levels (lines) or at the band midpoints (filled), the norm spanning the
//! levels, as `_process_colors` picks them. A `Patches` carrying the norm makes the set what
//! `colorbar()` finds, and its bounds make the view the grid's, as matplotlib's tight view.

use std::cell::RefCell;
use std::rc::Rc;

use crate::display::plot::{
    self, contour, tickers, ticks, Artist, Line, LineStyle, Norm, Patches, Rgba, Text,
};
use crate::object::format::float_repr;
use crate::object::value::{Args, NativeObject, Value};
use crate::object::{method, Exc, ExcKind, Interpreter};
use crate::runtime::{Device, HostData};

use super::data::{self, numbers, text_of};
use super::objects::{self, axes_value, AxesObj};
use super::{colormaps, finish_kw, kw_f64, kw_val, AxFn};

pub(crate) const AXES_METHODS: &[(&str, AxFn)] = &[
    ("contour", |it, ax, a| contour_set(it, ax, a, false)),
    ("contourf", |it, ax, a| contour_set(it, ax, a, true)),
    ("clabel", ax_clabel),
];

pub(crate) const PYPLOT_ON_GCA: &[(&str, &str)] = &[
    ("contour", "contour([X, Y,] Z, [levels], colors=None, cmap=None, linewidths=1.5): contour lines; returns a QuadContourSet."),
    ("contourf", "contourf([X, Y,] Z, [levels], colors=None, cmap=None): filled contours; returns a QuadContourSet."),
    ("clabel", "clabel(CS, levels=None, fmt=None, fontsize=None, colors=None): labels on a contour set's lines."),
];

/// A grid of points and its values, as the program gave them (Z's shape: ny rows of nx).
struct GridData {
    x: Vec<f64>,
    y: Vec<f64>,
    z: Vec<f64>,
    nx: usize,
    ny: usize,
}

/// `_contour_args`/`_check_xyz`: Z alone (x = column, y = row) or X, Y, Z.
fn grid_args(
    it: &mut dyn Interpreter,
    xy: Option<(Value, Value)>,
    z: &Value,
) -> Result<GridData, Exc> {
    let zd = numbers(it, z)?;
    let (ny, nx) = match zd.shape.as_slice() {
        [ny, nx] if *ny >= 2 && *nx >= 2 => (*ny, *nx),
        [_, _] => {
            return Err(Exc::type_error(format!(
                "Input z must be at least a (2, 2) shaped array, but has shape {}",
                zd.shape_text()
            )))
        }
        s => {
            return Err(Exc::type_error(format!(
                "Input z must be 2D, not {}D",
                s.len()
            )))
        }
    };
    let (x, y) = match xy {
        None => (
            (0..nx * ny).map(|k| (k % nx) as f64).collect(),
            (0..nx * ny).map(|k| (k / nx) as f64).collect(),
        ),
        Some((xv, yv)) => {
            let (xd, yd) = (numbers(it, &xv)?, numbers(it, &yv)?);
            if xd.shape.len() != yd.shape.len() {
                return Err(Exc::type_error(format!(
                    "Number of dimensions of x ({}) and y ({}) do not match",
                    xd.shape.len(),
                    yd.shape.len()
                )));
            }
            match xd.shape.len() {
                1 => {
                    if xd.values.len() != nx {
                        return Err(Exc::type_error(format!(
                            "Length of x ({}) must match number of columns in z ({nx})",
                            xd.values.len()
                        )));
                    }
                    if yd.values.len() != ny {
                        return Err(Exc::type_error(format!(
                            "Length of y ({}) must match number of rows in z ({ny})",
                            yd.values.len()
                        )));
                    }
                    (
                        (0..nx * ny).map(|k| xd.values[k % nx]).collect(),
                        (0..nx * ny).map(|k| yd.values[k / nx]).collect(),
                    )
                }
                2 => {
                    for (name, d) in [("x", &xd), ("y", &yd)] {
                        if d.shape != zd.shape {
                            return Err(Exc::type_error(format!(
                                "Shapes of {name} {} and z {} do not match",
                                d.shape_text(),
                                zd.shape_text()
                            )));
                        }
                    }
                    (xd.values, yd.values)
                }
                n => {
                    return Err(Exc::type_error(format!(
                        "Inputs x and y must be 1D or 2D, not {n}D"
                    )))
                }
            }
        }
    };
    Ok(GridData {
        x,
        y,
        z: zd.values,
        nx,
        ny,
    })
}

/// `ContourSet._autolev(N)`: `MaxNLocator(N + 1, min_n_ticks=1)` over the data, keeping one
/// level below the data and one above at most.
fn auto_levels(n: usize, zmin: f64, zmax: f64) -> Vec<f64> {
    // MaxNLocator.tick_values widens a constant range by a hair only.
    let (lo, hi) = ticks::nonsingular_with(zmin, zmax, 1e-13, 1e-14);
    let lev = ticks::max_n_with(lo, hi, (n + 1) as f64, &ticks::MAXN_STEPS, false, 1);
    let i0 = lev.iter().rposition(|l| *l < zmin).unwrap_or(0);
    let i1 = lev
        .iter()
        .position(|l| *l > zmax)
        .map_or(lev.len(), |i| i + 1);
    if i1 < i0 + 3 {
        return lev;
    }
    lev[i0..i1].to_vec()
}

/// The levels argument: a count or the levels themselves.
fn levels_arg(
    it: &mut dyn Interpreter,
    v: Option<Value>,
    zmin: f64,
    zmax: f64,
) -> Result<Vec<f64>, Exc> {
    match v {
        None => Ok(auto_levels(7, zmin, zmax)),
        Some(Value::Int(n)) => {
            // A negative count reaches MaxNLocator's log10 as matplotlib's does.
            let n = usize::try_from(n).map_err(|_| Exc::value_error("math domain error"))?;
            Ok(auto_levels(n.min(1000), zmin, zmax))
        }
        Some(v) => data::vector(it, &v),
    }
}

fn numpy_array(it: &mut dyn Interpreter, v: Vec<f64>, shape: &[usize]) -> Result<Value, Exc> {
    let arr = it
        .state_mut()
        .rt
        .from_host(HostData::F64(v), shape, Device::cpu(0))?;
    Ok(crate::object::ops::wrap(
        arr,
        crate::object::value::Flavor::Numpy,
    ))
}

fn colors_array(it: &mut dyn Interpreter, colors: &[Rgba]) -> Result<Value, Exc> {
    let v = colors.iter().flat_map(|c| [c.0, c.1, c.2, c.3]).collect();
    numpy_array(it, v, &[colors.len(), 4])
}

/// `contour`/`contourf` on `ax`.
fn contour_set(
    it: &mut dyn Interpreter,
    ax: &Rc<AxesObj>,
    mut a: Args,
    filled: bool,
) -> Result<Value, Exc> {
    let fname = if filled { "contourf" } else { "contour" };
    let npos = a.pos.len();
    let (xy, z, levels_pos) = match npos {
        1 | 2 => {
            let mut pos = std::mem::take(&mut a.pos).into_iter();
            let z = pos.next();
            (None, z, pos.next())
        }
        3 | 4 => {
            let mut pos = std::mem::take(&mut a.pos).into_iter();
            let (x, y, z) = (pos.next(), pos.next(), pos.next());
            (x.zip(y), z, pos.next())
        }
        n => {
            return Err(Exc::type_error(format!(
                "{fname}() takes from 1 to 4 positional arguments but {n} were given"
            )))
        }
    };
    let z = z.ok_or_else(|| {
        Exc::type_error(format!(
            "{fname}() takes from 1 to 4 positional arguments but 0 were given"
        ))
    })?;
    let levels_kw = kw_val(&mut a, &["levels"]);
    let colors_kw = kw_val(&mut a, &["colors"]);
    let cmap_kw = kw_val(&mut a, &["cmap"]);
    if colors_kw.is_some() && cmap_kw.is_some() {
        return Err(Exc::value_error("Either colors or cmap must be None"));
    }
    let (vmin, vmax) = colormaps::limits_with_norm(&mut a)?;
    let alpha = kw_f64(&mut a, &["alpha"])?;
    let width = kw_f64(&mut a, &["linewidths"])?.unwrap_or(1.5);
    let style = kw_val(&mut a, &["linestyles"])
        .map(|v| data::linestyle_arg(&v))
        .transpose()?;
    match kw_val(&mut a, &["extend"]) {
        None => {}
        Some(Value::Str(ref s)) if &**s == "neither" => {}
        Some(v) => {
            return Err(Exc::new(
                ExcKind::NotImplementedError,
                format!(
                    "{fname}(extend={}): devarray draws contours with extend='neither' only",
                    data::brief_repr(&v)
                ),
            ))
        }
    }
    for k in [
        "antialiased",
        "zorder",
        "corner_mask",
        "algorithm",
        "nchunk",
    ] {
        a.take_kw(k);
    }
    finish_kw(&a, "QuadContourSet", 0)?;
    let g = grid_args(it, xy, &z)?;
    let finite = g.z.iter().copied().filter(|v| v.is_finite());
    let zmin = finite.clone().fold(f64::INFINITY, f64::min);
    let zmax = finite.fold(f64::NEG_INFINITY, f64::max);
    // All missing: matplotlib's minimum and maximum are masked, which widen to a hair
    // around 0 and trim nothing; NaN does the same here.
    let (zlo, zhi) = if zmin <= zmax {
        (zmin, zmax)
    } else {
        (f64::NAN, f64::NAN)
    };
    let levels = levels_arg(it, levels_kw.or(levels_pos), zlo, zhi)?;
    if filled && levels.len() < 2 {
        return Err(Exc::value_error(
            "Filled contours require at least 2 levels.",
        ));
    }
    if levels.windows(2).any(|w| w[1] - w[0] <= 0.0) {
        return Err(Exc::value_error("Contour levels must be increasing"));
    }
    // Lines are coloured at their levels, bands at their midpoints.
    let layers: Vec<f64> = if filled {
        levels.windows(2).map(|w| 0.5 * (w[0] + w[1])).collect()
    } else {
        levels.clone()
    };
    let first = levels.first().copied().unwrap_or(0.0);
    let last = levels.last().copied().unwrap_or(1.0);
    let cmap = cmap_kw
        .as_ref()
        .map_or_else(|| "viridis".to_string(), colormaps::cmap_name);
    let norm = Norm {
        cmap: cmap.clone(),
        lo: vmin.unwrap_or(first),
        hi: vmax.unwrap_or(last),
        levels: levels.clone(),
        band_colors: Vec::new(),
    };
    let given: Option<Vec<Rgba>> = match &colors_kw {
        None => None,
        Some(v @ (Value::List(_) | Value::Tuple(_))) if data::color_arg(v).is_err() => {
            let items: Vec<Value> = match v {
                Value::List(l) => l.borrow().clone(),
                Value::Tuple(t) => t.to_vec(),
                _ => Vec::new(),
            };
            Some(
                items
                    .iter()
                    .map(data::color_arg)
                    .collect::<Result<_, _>>()?,
            )
        }
        Some(v) => Some(vec![data::color_arg(v)?]),
    };
    let monochrome = given.as_ref().is_some_and(|c| c.len() == 1);
    let colors: Vec<Rgba> = layers
        .iter()
        .enumerate()
        .map(|(k, v)| {
            let c = match &given {
                Some(cs) if !cs.is_empty() => Ok(cs[k % cs.len()]),
                _ => {
                    let t = if norm.hi > norm.lo {
                        (v - norm.lo) / (norm.hi - norm.lo)
                    } else {
                        0.0
                    };
                    super::colormap(&cmap, t)
                }
            };
            c.map(|c| super::apply_alpha(c, alpha))
        })
        .collect::<Result<_, _>>()?;
    let grid = contour::Grid {
        x: &g.x,
        y: &g.y,
        z: &g.z,
        nx: g.nx,
        ny: g.ny,
    };
    let allsegs: Vec<Vec<Vec<[f64; 2]>>> = if filled {
        levels
            .windows(2)
            .map(|w| contour::band(&grid, w[0], w[1]))
            .collect()
    } else {
        levels.iter().map(|l| contour::lines(&grid, *l)).collect()
    };
    let norm = Norm {
        band_colors: if filled { colors.clone() } else { Vec::new() },
        ..norm
    };
    ax.with(|axr| {
        if filled {
            for (rings, c) in allsegs.iter().zip(&colors) {
                axr.artists.push(Artist::Patches(Patches {
                    rings: rings.clone(),
                    colors: vec![*c],
                    norm: Some(norm.clone()),
                }));
            }
        } else {
            for ((segs, c), level) in allsegs.iter().zip(&colors).zip(&levels) {
                // contour.negative_linestyle: a one-colour set dashes its negative levels.
                let style = style.unwrap_or(if monochrome && *level < 0.0 {
                    LineStyle::Dashed
                } else {
                    LineStyle::Solid
                });
                for seg in segs {
                    axr.artists.push(Artist::Line(Line {
                        xs: seg.iter().map(|p| p[0]).collect(),
                        ys: seg.iter().map(|p| p[1]).collect(),
                        color: *c,
                        width,
                        style,
                        marker: None,
                        marker_size: 6.0,
                        label: None,
                        in_axes: false,
                        marker_face: None,
                    }));
                }
            }
            // The grid's bounds, which the view takes, and the norm `colorbar()` finds.
            let (xs, ys) = (&g.x, &g.y);
            let fold = |v: &[f64]| {
                v.iter()
                    .filter(|x| x.is_finite())
                    .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), x| {
                        (a.min(*x), b.max(*x))
                    })
            };
            let ((x0, x1), (y0, y1)) = (fold(xs), fold(ys));
            axr.artists.push(Artist::Patches(Patches {
                rings: vec![vec![[x0, y0], [x1, y0], [x1, y1], [x0, y1]]],
                colors: Vec::new(),
                norm: Some(norm.clone()),
            }));
        }
    })?;
    let segs_value = allsegs
        .iter()
        .map(|level| {
            // A level without lines holds one empty (0, 2) array, as contourpy gives it.
            let empty = [Vec::new()];
            let pieces = if level.is_empty() {
                &empty[..]
            } else {
                &level[..]
            };
            let arrays = pieces
                .iter()
                .map(|seg| {
                    let flat = seg.iter().flat_map(|p| [p[0], p[1]]).collect();
                    numpy_array(it, flat, &[seg.len(), 2])
                })
                .collect::<Result<Vec<_>, _>>()?;
            Ok(Value::list(arrays))
        })
        .collect::<Result<Vec<_>, Exc>>()?;
    let levels_value = numpy_array(it, levels.clone(), &[levels.len()])?;
    let layers_value = numpy_array(it, layers.clone(), &[layers.len()])?;
    Ok(Value::Object(Rc::new(ContourSet {
        ax: ax.clone(),
        filled,
        levels,
        levels_value,
        layers_value,
        allsegs,
        allsegs_value: Value::list(segs_value),
        zmin,
        zmax,
        colors,
        width,
        norm,
        label_texts: RefCell::new(Vec::new()),
    })))
}

/// matplotlib's `QuadContourSet`.
pub struct ContourSet {
    ax: Rc<AxesObj>,
    filled: bool,
    levels: Vec<f64>,
    levels_value: Value,
    layers_value: Value,
    allsegs: Vec<Vec<Vec<[f64; 2]>>>,
    allsegs_value: Value,
    zmin: f64,
    zmax: f64,
    /// One per level (lines) or band (filled).
    colors: Vec<Rgba>,
    width: f64,
    norm: Norm,
    /// What `clabel` placed, kept as matplotlib's `labelTexts`.
    label_texts: RefCell<Vec<Value>>,
}

fn this(r: &Value) -> Result<&ContourSet, Exc> {
    match r {
        Value::Object(o) => o.as_any().downcast_ref::<ContourSet>(),
        _ => None,
    }
    .ok_or_else(|| Exc::type_error("a QuadContourSet method called on something else"))
}

impl NativeObject for ContourSet {
    fn type_name(&self) -> &str {
        "QuadContourSet"
    }
    fn repr(&self) -> String {
        format!(
            "<matplotlib.contour.QuadContourSet object at {:#x}>",
            self as *const ContourSet as usize
        )
    }
    fn get_attr(&self, this_: &Rc<dyn NativeObject>, name: &str) -> Option<Value> {
        let r = Value::Object(this_.clone());
        Some(match name {
            "levels" => self.levels_value.clone(),
            "layers" => self.layers_value.clone(),
            "allsegs" => self.allsegs_value.clone(),
            "filled" => Value::Bool(self.filled),
            "zmin" => Value::Float(self.zmin),
            "zmax" => Value::Float(self.zmax),
            "extend" => Value::str("neither"),
            "axes" => axes_value(&self.ax),
            "cmap" => Value::str(&self.norm.cmap),
            "labelTexts" => Value::list(self.label_texts.borrow().clone()),
            "get_array" => method(
                &r,
                "get_array",
                "get_array(): the values coloured (levels, or band midpoints).",
                |_, r, a| {
                    a.finish(0)?;
                    Ok(this(r)?.layers_value.clone())
                },
            ),
            "get_edgecolor" => method(
                &r,
                "get_edgecolor",
                "get_edgecolor(): the lines' colours (none for filled contours).",
                |it, r, a| {
                    a.finish(0)?;
                    let cs = this(r)?;
                    colors_array(it, if cs.filled { &[] } else { &cs.colors })
                },
            ),
            "get_facecolor" => method(
                &r,
                "get_facecolor",
                "get_facecolor(): the bands' colours (none for line contours).",
                |it, r, a| {
                    a.finish(0)?;
                    let cs = this(r)?;
                    colors_array(it, if cs.filled { &cs.colors } else { &[] })
                },
            ),
            "get_linewidth" => method(
                &r,
                "get_linewidth",
                "get_linewidth(): the lines' widths.",
                |it, r, a| {
                    a.finish(0)?;
                    let cs = this(r)?;
                    let n = if cs.filled { 0 } else { cs.levels.len() };
                    numpy_array(it, vec![cs.width; n], &[n])
                },
            ),
            "clabel" => method(
                &r,
                "clabel",
                "clabel(levels=None, fmt=None, fontsize=None, colors=None): labels on the lines.",
                |it, r, a| {
                    let Value::Object(o) = r else {
                        return Err(Exc::type_error("clabel called on something else"));
                    };
                    clabel(it, o, a)
                },
            ),
            _ => return None,
        })
    }
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

/// A contour set's axes and norm, for `colorbar(cs)`.
pub(crate) fn mappable(v: &Value) -> Option<(Rc<AxesObj>, Norm)> {
    match v {
        Value::Object(o) => o
            .as_any()
            .downcast_ref::<ContourSet>()
            .map(|cs| (cs.ax.clone(), cs.norm.clone())),
        _ => None,
    }
}

/// `ax.clabel(CS, ...)` and `plt.clabel(CS, ...)`: `CS.clabel(...)`.
fn ax_clabel(it: &mut dyn Interpreter, _ax: &Rc<AxesObj>, mut a: Args) -> Result<Value, Exc> {
    let cs = a.required(0, "CS")?;
    a.pos.remove(0);
    match &cs {
        Value::Object(o) if o.as_any().downcast_ref::<ContourSet>().is_some() => clabel(it, o, a),
        // Anything else: `CS.clabel(...)` as Python looks it up, with its AttributeError.
        other => {
            let m = it.get_attr(other, "clabel")?;
            it.call_value(&m, a)
        }
    }
}

/// `ContourSet.clabel`: a label on each line long enough to hold one (a tenth of the grid
/// across), at its middle point, in the line's colour; the level as `fmt` writes it
/// (`ScalarFormatter` over the levels by default).
fn clabel(it: &mut dyn Interpreter, o: &Rc<dyn NativeObject>, mut a: Args) -> Result<Value, Exc> {
    let cs = o
        .as_any()
        .downcast_ref::<ContourSet>()
        .ok_or_else(|| Exc::type_error("clabel called on something else"))?;
    let wanted = a.take(0, "levels")?.filter(|v| !matches!(v, Value::None));
    let fmt = kw_val(&mut a, &["fmt"]);
    let size = kw_f64(&mut a, &["fontsize"])?.unwrap_or(plot::layout::FONT);
    let color = kw_val(&mut a, &["colors"])
        .map(|v| data::color_arg(&v))
        .transpose()?;
    for k in [
        "inline",
        "inline_spacing",
        "use_clabeltext",
        "rightside_up",
        "zorder",
        "manual",
    ] {
        a.take_kw(k);
    }
    finish_kw(&a, "Text", 1)?;
    let indices: Vec<usize> = match &wanted {
        None => (0..cs.levels.len()).collect(),
        Some(v) => {
            let want = data::vector(it, v)?;
            let found: Vec<Option<usize>> = want
                .iter()
                .map(|w| cs.levels.iter().position(|l| l == w))
                .collect();
            if found.iter().any(Option::is_none) {
                let wanted = crate::object::format::to_str(it, v)?;
                let available = crate::object::format::to_str(it, &cs.levels_value)?;
                return Err(Exc::value_error(format!(
                    "Specified levels {wanted} don't match available levels {available}"
                )));
            }
            found.into_iter().flatten().collect()
        }
    };
    let (lo, hi) = (
        cs.levels.first().copied().unwrap_or(0.0),
        cs.levels.last().copied().unwrap_or(1.0),
    );
    let labels: Vec<String> = match &fmt {
        None => tickers::Formatter::Scalar.labels(&cs.levels, lo, hi).0,
        Some(Value::Str(f)) => {
            tickers::Formatter::FormatStr(f.to_string())
                .labels(&cs.levels, lo, hi)
                .0
        }
        Some(f) => {
            let mut out = Vec::new();
            for l in &cs.levels {
                out.push(text_of(
                    &it.call_value(f, Args::positional(vec![Value::Float(*l)]))?,
                ));
            }
            out
        }
    };
    // "Long enough": a tenth of the grid's extent along either axis.
    let (mut x0, mut x1, mut y0, mut y1) = (
        f64::INFINITY,
        f64::NEG_INFINITY,
        f64::INFINITY,
        f64::NEG_INFINITY,
    );
    for p in cs.allsegs.iter().flatten().flatten() {
        (x0, x1, y0, y1) = (x0.min(p[0]), x1.max(p[0]), y0.min(p[1]), y1.max(p[1]));
    }
    let mut made = Vec::new();
    let mut texts = Vec::new();
    for k in indices {
        let c = color.unwrap_or(cs.colors.get(k).copied().unwrap_or(Rgba::BLACK));
        for seg in cs.allsegs.get(k).map(Vec::as_slice).unwrap_or(&[]) {
            let span = |i: usize| {
                seg.iter().map(|p| p[i]).fold(f64::NEG_INFINITY, f64::max)
                    - seg.iter().map(|p| p[i]).fold(f64::INFINITY, f64::min)
            };
            if !(span(0) >= 0.1 * (x1 - x0) || span(1) >= 0.1 * (y1 - y0)) {
                continue;
            }
            let Some(p) = seg.get(seg.len() / 2) else {
                continue;
            };
            let label = labels.get(k).cloned().unwrap_or_default();
            texts.push(Artist::Text(Text {
                x: p[0],
                y: p[1],
                text: label.clone(),
                color: c,
                size,
                ha: "center".into(),
                va: "center".into(),
                offset: (0.0, 0.0),
                arrow: None,
                in_axes: false,
            }));
            made.push(objects::text_handle(
                &float_repr(p[0]),
                &float_repr(p[1]),
                &label,
            ));
        }
    }
    cs.ax.with(|axr| axr.artists.extend(texts))?;
    let mut all = cs.label_texts.borrow_mut();
    all.extend(made);
    let repr = format!("<a list of {} text.Text objects>", all.len());
    Ok(super::axes_more::artist_list(repr, all.clone()))
}
