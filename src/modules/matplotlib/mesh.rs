//! `pcolormesh`/`pcolor` (a `Patches` artist of one quad per value, coloured through the
//! colormap, with matplotlib's `shading` rules: 'flat' grids one larger than C, 'nearest'
//! grids the size of C whose cells are centred on the points) and `matshow` (`imshow` with
//! the x axis on top and integer `MaxNLocator(nbins=9, steps=[1, 2, 5, 10])` ticks; pyplot's
//! in a new figure shaped as the matrix, `figaspect`). Each is also pyplot's on `gca()`.

use std::rc::Rc;

use crate::display::plot::{tickers, Artist, Axes, Norm, Patches, Rgba};
use crate::object::value::{Args, Value};
use crate::object::{Exc, ExcKind, Interpreter};

use super::data::{numbers, text_of};
use super::objects::{self, AxesObj};
use super::{colormaps, finish_kw, kw_f64, kw_val, AxFn};

pub(crate) const AXES_METHODS: &[(&str, AxFn)] = &[
    ("pcolormesh", |it, ax, a| mesh(it, ax, a, "pcolormesh")),
    ("pcolor", |it, ax, a| mesh(it, ax, a, "pcolor")),
    ("matshow", ax_matshow),
];

pub(crate) const PYPLOT_ON_GCA: &[(&str, &str)] = &[
    ("pcolormesh", "pcolormesh([X, Y,] C, cmap=None, vmin=None, vmax=None, shading='auto'): a grid of coloured quads; returns a QuadMesh."),
    ("pcolor", "pcolor([X, Y,] C, cmap=None, vmin=None, vmax=None, shading='auto'): a grid of coloured quads; returns a PolyQuadMesh."),
];

/// Cell edges from cell centres along one row (`_interp_grid`): halfway between
/// neighbours, half a step beyond each end.
fn centres_to_edges(v: &[f64]) -> Vec<f64> {
    match v {
        [] => Vec::new(),
        [x] => vec![x - 0.5, x + 0.5],
        _ => {
            let d: Vec<f64> = v.windows(2).map(|w| (w[1] - w[0]) / 2.0).collect();
            let mut out = vec![v[0] - d[0]];
            out.extend(v[..v.len() - 1].iter().zip(&d).map(|(x, h)| x + h));
            out.push(v[v.len() - 1] + d[d.len() - 1]);
            out
        }
    }
}

/// A (rows x cols) grid given centres: (rows + 1) x (cols + 1) edges, along x in each row
/// then along y in each column.
fn grid_edges(g: &[f64], rows: usize, cols: usize) -> Vec<f64> {
    let wide: Vec<Vec<f64>> = (0..rows)
        .map(|r| centres_to_edges(&g[r * cols..(r + 1) * cols]))
        .collect();
    let mut out = vec![0.0; (rows + 1) * (cols + 1)];
    for c in 0..=cols {
        let column: Vec<f64> = wide.iter().map(|row| row[c]).collect();
        for (r, v) in centres_to_edges(&column).into_iter().enumerate() {
            out[r * (cols + 1) + c] = v;
        }
    }
    out
}

/// `_pcolorargs`: the quads' corner grids ((rows + 1) x (cols + 1) each) for C.
fn corner_grids(
    it: &mut dyn Interpreter,
    fname: &str,
    xy: Option<(Value, Value)>,
    shape: (usize, usize),
    shading: &str,
) -> Result<(Vec<f64>, Vec<f64>), Exc> {
    let (rows, cols) = shape;
    let (x, y, nx, ny) = match xy {
        None if shading == "nearest" => (
            (0..rows * cols)
                .map(|k| (k % cols) as f64)
                .collect::<Vec<_>>(),
            (0..rows * cols)
                .map(|k| (k / cols) as f64)
                .collect::<Vec<_>>(),
            cols,
            rows,
        ),
        None => (
            (0..(rows + 1) * (cols + 1))
                .map(|k| (k % (cols + 1)) as f64)
                .collect(),
            (0..(rows + 1) * (cols + 1))
                .map(|k| (k / (cols + 1)) as f64)
                .collect(),
            cols + 1,
            rows + 1,
        ),
        Some((xv, yv)) => {
            let (xd, yd) = (numbers(it, &xv)?, numbers(it, &yv)?);
            match (xd.shape.as_slice(), yd.shape.as_slice()) {
                ([nx], [ny]) => (
                    (0..nx * ny).map(|k| xd.values[k % nx]).collect(),
                    (0..nx * ny).map(|k| yd.values[k / nx]).collect(),
                    *nx,
                    *ny,
                ),
                ([ny, nx], [ny2, nx2]) if (ny, nx) == (ny2, nx2) => {
                    (xd.values, yd.values, *nx, *ny)
                }
                _ => {
                    return Err(Exc::type_error(format!(
                        "Incompatible X, Y inputs to {fname}; see help({fname})"
                    )))
                }
            }
        }
    };
    let shape_text = format!("({rows}, {cols})");
    let nearest = match shading {
        "nearest" => true,
        "flat" => false,
        // 'auto': centres when X and Y have C's size, edges otherwise.
        _ => (nx, ny) == (cols, rows),
    };
    if nearest {
        if (nx, ny) != (cols, rows) {
            return Err(Exc::type_error(format!(
                "Dimensions of C {shape_text} are incompatible with X ({nx}) and/or Y ({ny}); see help({fname})"
            )));
        }
        return Ok((grid_edges(&x, rows, cols), grid_edges(&y, rows, cols)));
    }
    if (nx, ny) != (cols + 1, rows + 1) {
        return Err(Exc::type_error(format!(
            "Dimensions of C {shape_text} should be one smaller than X({nx}) and Y({ny}) while using shading='flat' see help({fname})"
        )));
    }
    Ok((x, y))
}

fn mesh(
    it: &mut dyn Interpreter,
    ax: &Rc<AxesObj>,
    mut a: Args,
    fname: &str,
) -> Result<Value, Exc> {
    let pos = std::mem::take(&mut a.pos);
    let (xy, c) = match pos.len() {
        1 => (None, pos[0].clone()),
        3 => (Some((pos[0].clone(), pos[1].clone())), pos[2].clone()),
        n => {
            return Err(Exc::type_error(format!(
                "{fname}() takes 1 or 3 positional arguments but {n} were given"
            )))
        }
    };
    let cmap = kw_val(&mut a, &["cmap"])
        .map_or_else(|| "viridis".to_string(), |v| colormaps::cmap_name(&v));
    let (vmin, vmax) = colormaps::limits_with_norm(&mut a)?;
    let alpha = kw_f64(&mut a, &["alpha"])?;
    let shading = kw_val(&mut a, &["shading"]).map_or_else(|| "auto".to_string(), |v| text_of(&v));
    let shading = match shading.as_str() {
        "flat" | "nearest" | "auto" => shading,
        "gouraud" => {
            return Err(Exc::new(
                ExcKind::NotImplementedError,
                format!("{fname}(shading='gouraud'): devarray draws flat and nearest shading only"),
            ))
        }
        _ => "auto".to_string(),
    };
    for k in [
        "edgecolors",
        "edgecolor",
        "linewidth",
        "linewidths",
        "antialiased",
        "snap",
        "rasterized",
        "zorder",
    ] {
        a.take_kw(k);
    }
    let class = if fname == "pcolor" {
        "PolyQuadMesh"
    } else {
        "QuadMesh"
    };
    finish_kw(&a, class, 0)?;
    let cd = numbers(it, &c)?;
    let (rows, cols) = match cd.shape.as_slice() {
        [r, c] => (*r, *c),
        [_] => {
            return Err(Exc::value_error(
                "not enough values to unpack (expected 2, got 1)",
            ))
        }
        s => {
            return Err(Exc::type_error(format!(
                "{fname}(): C must be 2-D, not {}-D",
                s.len()
            )))
        }
    };
    let (gx, gy) = if rows == 0 || cols == 0 {
        // Nothing to draw (and no cells to find edges between).
        (Vec::new(), Vec::new())
    } else {
        corner_grids(it, fname, xy, (rows, cols), &shading)?
    };
    let finite = cd.values.iter().copied().filter(|v| v.is_finite());
    let lo = vmin.unwrap_or_else(|| finite.clone().fold(f64::INFINITY, f64::min));
    let hi = vmax.unwrap_or_else(|| finite.fold(f64::NEG_INFINITY, f64::max));
    let (lo, hi) = if lo.is_finite() && hi.is_finite() {
        (lo, hi)
    } else {
        (0.0, 1.0)
    };
    let norm = Norm {
        cmap: cmap.clone(),
        lo,
        hi,
        levels: Vec::new(),
        band_colors: Vec::new(),
    };
    let w = cols + 1;
    let mut rings = Vec::with_capacity(rows * cols);
    let mut colors = Vec::with_capacity(rows * cols);
    for r in 0..rows {
        for k in 0..cols {
            let at = |rr: usize, kk: usize| [gx[rr * w + kk], gy[rr * w + kk]];
            rings.push(vec![at(r, k), at(r, k + 1), at(r + 1, k + 1), at(r + 1, k)]);
            let v = cd.values[r * cols + k];
            colors.push(if v.is_finite() {
                let t = if hi > lo { (v - lo) / (hi - lo) } else { 0.0 };
                super::apply_alpha(super::colormap(&cmap, t)?, alpha)
            } else {
                // Masked: not drawn.
                Rgba(0.0, 0.0, 0.0, 0.0)
            });
        }
    }
    ax.with(|axr| {
        axr.artists.push(Artist::Patches(Patches {
            rings,
            colors,
            norm: Some(norm.clone()),
        }))
    })?;
    Ok(Value::Object(Rc::new(objects::Handle {
        text: None,
        class: if fname == "pcolor" {
            "matplotlib.collections.PolyQuadMesh"
        } else {
            "matplotlib.collections.QuadMesh"
        },
        repr: None,
        artist: None,
        image: Some((ax.clone(), norm)),
    })))
}

/// The ticks `matshow` sets on both axes.
fn matrix_locator() -> tickers::Locator {
    tickers::Locator::MaxN {
        nbins: Some(9.0),
        steps: vec![1.0, 2.0, 5.0, 10.0],
        integer: true,
    }
}

/// `Axes.matshow(Z, **kwargs)`: `imshow` with origin 'upper', nearest pixels and equal
/// aspect unless given, then the x axis on top.
fn ax_matshow(it: &mut dyn Interpreter, ax: &Rc<AxesObj>, mut a: Args) -> Result<Value, Exc> {
    for (k, v) in [
        ("origin", "upper"),
        ("interpolation", "nearest"),
        ("aspect", "equal"),
    ] {
        if !a.kw.iter().any(|(name, _)| &**name == k) {
            a.kw.push((k.into(), Value::str(v)));
        }
    }
    let im = super::ax_imshow(it, ax, a)?;
    ax.with(|axr| {
        axr.x.opposite = true;
        axr.x.mirror = true;
        axr.x.locator = Some(matrix_locator());
        axr.y.locator = Some(matrix_locator());
    })?;
    Ok(im)
}

/// `figaspect(A)`: a figure as tall as rcParams' and as wide as A's shape asks, within
/// (4, 2) and (16, 16) inches.
fn figaspect(rows: usize, cols: usize, height: f64) -> (f64, f64) {
    let ratio = rows as f64 / cols as f64;
    let (mut w, mut h) = (height / ratio, height);
    let shrink = 1f64.min(w / 4.0).min(h / 2.0);
    (w, h) = (w / shrink, h / shrink);
    let grow = 1f64.max(w / 16.0).max(h / 16.0);
    (w, h) = (w / grow, h / grow);
    (w.clamp(4.0, 16.0), h.clamp(2.0, 16.0))
}

/// pyplot's `matshow(A, fignum=None, **kwargs)`: in a new figure shaped as A (fignum None),
/// in figure `fignum`, or on the current axes (fignum 0 or False).
pub(crate) fn plt_matshow(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let m = a.required(0, "A")?;
    let fignum = a.take(1, "fignum")?;
    let on_current = matches!(fignum, Some(Value::Int(0)) | Some(Value::Bool(false)));
    let ax = if on_current {
        super::gca(it)?
    } else {
        let d = numbers(it, &m)?;
        let (rows, cols) = match d.shape.as_slice() {
            [r, c, ..] if *r > 0 && *c > 0 => (*r, *c),
            [_, _, ..] => (1, 1),
            // figaspect's `nr, nc = arg.shape[:2]`.
            s => {
                return Err(Exc::value_error(format!(
                    "not enough values to unpack (expected 2, got {})",
                    s.len()
                )))
            }
        };
        let height = super::with_state(it, super::rc_figsize)?.1;
        let size = figaspect(rows, cols, height);
        let num = match fignum {
            Some(Value::Int(n)) => Some(n),
            Some(Value::None) | None => None,
            Some(v) => {
                return Err(Exc::type_error(format!(
                    "matshow() fignum must be an int, not {}",
                    v.type_name()
                )))
            }
        };
        let f = super::new_figure(it, Some(size), None, num)?;
        f.add_axes(Axes::new([0.15, 0.09, 0.775, 0.775]))
    };
    // Taken arguments leave None in their places: the matrix is the only positional one.
    a.pos = vec![m];
    ax_matshow(it, &ax, a)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn figaspect_keeps_matplotlib_bounds() {
        assert_eq!(figaspect(3, 3, 4.8), (4.8, 4.8));
        assert_eq!(figaspect(2, 10, 4.8), (16.0, 3.2));
        assert_eq!(figaspect(10, 2, 4.8), (4.0, 16.0));
    }

    #[test]
    fn centres_become_edges_halfway() {
        assert_eq!(
            centres_to_edges(&[0.0, 1.0, 3.0]),
            vec![-0.5, 0.5, 2.0, 4.0]
        );
        let e = grid_edges(&[0.0, 1.0, 0.0, 1.0], 2, 2);
        assert_eq!(e.len(), 9);
        assert_eq!(&e[..3], &[-0.5, 0.5, 1.5]);
    }
}
