//! `matplotlib`, `matplotlib.pyplot` and `matplotlib_inline.backend_inline`: pyplot's state
//! machine (open figures, the current figure and axes, `rcParams`) over the figure model of
//! `crate::display::plot`. In a notebook, figures made in a cell are shown at its end as
//! matplotlib-inline shows them (`flush_inline`); in a terminal `show()` draws them as text
//! and writes an SVG file.

pub mod axes_more;
pub mod charts;
pub mod colormaps;
pub mod composed;
pub mod contour;
pub mod data;
pub mod figure_more;
pub mod mesh;
pub mod objects;
pub mod ticker;

use std::cell::{Cell, RefCell};
use std::rc::Rc;

use crate::display::plot::{
    self, color, Artist, Axes, Bars, Figure, Fill, Legend, Line, LineStyle, RefLine, Rgba, Scale,
    Scatter, Text,
};
use crate::object::ops::as_f64;
use crate::object::value::{Args, Dict, HashKey, MethodFn, Module, NativeObject, Value};
use crate::object::{builtin, DisplayData, Exc, ExcKind, Interpreter};

use data::{brief_repr, numbers, text_of, vector};
use objects::{
    as_axes, as_fig, axes_value, fig_value, handle, AxesArray, AxesObj, FigObj, Format, Shared,
};

/// pyplot's state for one session: the open figures (matplotlib's `Gcf`), in order.
pub struct Pyplot {
    figs: RefCell<Vec<Rc<FigObj>>>,
    current: RefCell<Option<Rc<FigObj>>>,
    shared: Rc<Shared>,
    rc: Value,
}

impl NativeObject for Pyplot {
    fn type_name(&self) -> &str {
        "_pylab_helpers.Gcf"
    }
    fn repr(&self) -> String {
        "<class 'matplotlib._pylab_helpers.Gcf'>".into()
    }
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

fn state(it: &mut dyn Interpreter) -> Result<Rc<dyn NativeObject>, Exc> {
    let m = it.import("matplotlib.pyplot")?;
    match &m.get("_pylab_helpers") {
        Some(Value::Object(o)) if o.as_any().is::<Pyplot>() => Ok(o.clone()),
        _ => Err(Exc::new(ExcKind::RuntimeError, "pyplot's state is missing")),
    }
}

fn with_state<R>(it: &mut dyn Interpreter, f: impl FnOnce(&Pyplot) -> R) -> Result<R, Exc> {
    let o = state(it)?;
    let p = o
        .as_any()
        .downcast_ref::<Pyplot>()
        .ok_or_else(|| Exc::new(ExcKind::RuntimeError, "pyplot's state is missing"))?;
    Ok(f(p))
}

fn rc_get(p: &Pyplot, key: &str) -> Option<Value> {
    match &p.rc {
        Value::Dict(d) => d.borrow().get(&HashKey::Str(Rc::from(key))).cloned(),
        _ => None,
    }
}

fn rc_figsize(p: &Pyplot) -> (f64, f64) {
    let v = rc_get(p, "figure.figsize");
    let pair = v.and_then(|v| match &v {
        Value::List(l) => Some(l.borrow().clone()),
        Value::Tuple(t) => Some(t.as_ref().clone()),
        _ => None,
    });
    match pair.as_deref() {
        Some([w, h]) => match (as_f64(w), as_f64(h)) {
            (Some(w), Some(h)) if w > 0.0 && h > 0.0 => (w, h),
            _ => (6.4, 4.8),
        },
        _ => (6.4, 4.8),
    }
}

fn rc_dpi(p: &Pyplot) -> f64 {
    rc_get(p, "figure.dpi")
        .and_then(|v| as_f64(&v))
        .filter(|d| *d > 0.0)
        .unwrap_or(100.0)
}

fn size_arg(v: Option<Value>) -> Result<Option<(f64, f64)>, Exc> {
    let Some(v) = v else { return Ok(None) };
    if matches!(v, Value::None) {
        return Ok(None);
    }
    let items: Vec<Value> = match &v {
        Value::List(l) => l.borrow().clone(),
        Value::Tuple(t) => t.as_ref().clone(),
        _ => Vec::new(),
    };
    match items.as_slice() {
        [w, h] => match (as_f64(w), as_f64(h)) {
            (Some(w), Some(h)) if w > 0.0 && h > 0.0 && w.is_finite() && h.is_finite() => {
                Ok(Some((w, h)))
            }
            _ => Err(Exc::value_error(format!(
                "figure size must be positive finite not {}",
                brief_repr(&v)
            ))),
        },
        _ => Err(Exc::value_error(format!(
            "figure size must be a pair of numbers (width, height) in inches, not {}",
            brief_repr(&v)
        ))),
    }
}

/// A new figure, registered as current (pyplot.figure).
fn new_figure(
    it: &mut dyn Interpreter,
    size: Option<(f64, f64)>,
    dpi: Option<f64>,
    num: Option<i64>,
) -> Result<Rc<FigObj>, Exc> {
    // pyplot warns once the 21st figure opens (rcParams['figure.max_open_warning']).
    let (open, max_open) = with_state(it, |p| {
        let max = rc_get(p, "figure.max_open_warning")
            .and_then(|v| crate::object::ops::as_i64(&v))
            .unwrap_or(20);
        (p.figs.borrow().len() as i64, max)
    })?;
    if max_open >= 1 && open == max_open {
        crate::modules::python::stdlib::warnings::warn(
            it,
            "RuntimeWarning",
            &format!("More than {max_open} figures have been opened. Figures created through the pyplot interface (`matplotlib.pyplot.figure`) are retained until explicitly closed and may consume too much memory. (To control this warning, see the rcParam `figure.max_open_warning`). Consider using `matplotlib.pyplot.close()`."),
        )?;
    }
    with_state(it, |p| {
        let number = num.unwrap_or_else(|| {
            p.figs
                .borrow()
                .iter()
                .map(|f| f.fig.borrow().number)
                .max()
                .unwrap_or(0)
                + 1
        });
        let fig = Figure::new(
            number,
            size.unwrap_or_else(|| rc_figsize(p)),
            dpi.unwrap_or_else(|| rc_dpi(p)),
        );
        let f = FigObj::new(fig, p.shared.clone());
        p.figs.borrow_mut().push(f.clone());
        *p.current.borrow_mut() = Some(f.clone());
        f
    })
}

fn gcf(it: &mut dyn Interpreter) -> Result<Rc<FigObj>, Exc> {
    if let Some(f) = with_state(it, |p| p.current.borrow().clone())? {
        return Ok(f);
    }
    new_figure(it, None, None, None)
}

fn gca(it: &mut dyn Interpreter) -> Result<Rc<AxesObj>, Exc> {
    Ok(gcf(it)?.gca())
}

// ------------------------------------------------------------------ figures

fn figure(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let num = a.take(0, "num")?;
    let size = size_arg(a.take(1, "figsize")?)?;
    let dpi = a.take(2, "dpi")?.and_then(|v| as_f64(&v));
    for k in ["facecolor", "edgecolor", "frameon", "clear", "layout"] {
        a.take_kw(k);
    }
    a.finish(3)?;
    // figure(n) with an open figure n makes it current again.
    let num = match num {
        Some(Value::Int(n)) => Some(n),
        Some(Value::None) | None => None,
        Some(other) => {
            return Err(Exc::type_error(format!(
                "figure() num must be an int, not {}",
                other.type_name()
            )))
        }
    };
    if let Some(n) = num {
        let found = with_state(it, |p| {
            let f = p
                .figs
                .borrow()
                .iter()
                .find(|f| f.fig.borrow().number == n)
                .cloned();
            if let Some(f) = &f {
                *p.current.borrow_mut() = Some(f.clone());
            }
            f
        })?;
        if let Some(f) = found {
            return Ok(fig_value(&f));
        }
    }
    Ok(fig_value(&new_figure(it, size, dpi, num)?))
}

/// Adds an nrows x ncols grid of axes to `f`, returning matplotlib's squeezed result.
fn add_grid(
    f: &Rc<FigObj>,
    nrows: usize,
    ncols: usize,
    squeeze: bool,
    (sharex, sharey): (&str, &str),
) -> Value {
    // Share groups are numbered apart from other grids of the same figure.
    let base = (f.fig.borrow().axes.len() + 1) * 2048;
    let group = |how: &str, r: usize, c: usize| match how {
        "all" => Some(base),
        "row" => Some(base + 1 + r),
        "col" => Some(base + 1 + nrows + c),
        _ => None,
    };
    let mut items = Vec::new();
    for r in 0..nrows {
        for c in 0..ncols {
            let mut ax = Axes::new(plot::grid_rect(
                nrows,
                ncols,
                r,
                c,
                plot::DEFAULT_MARGINS,
                plot::SUBPLOT_WSPACE,
                plot::SUBPLOT_HSPACE,
            ));
            ax.grid = Some((nrows, ncols, r, c));
            ax.x.share = group(sharex, r, c);
            ax.y.share = group(sharey, r, c);
            // Shared axes label only the outer subplots, as matplotlib's subplots does.
            ax.x.ticklabels_on = !matches!(sharex, "all" | "col") || r + 1 == nrows;
            ax.y.ticklabels_on = !matches!(sharey, "all" | "row") || c == 0;
            items.push(f.add_axes(ax));
        }
    }
    if squeeze && items.len() == 1 {
        return axes_value(&items[0]);
    }
    let shape = if squeeze && (nrows == 1 || ncols == 1) {
        vec![items.len()]
    } else {
        vec![nrows, ncols]
    };
    Value::Object(Rc::new(AxesArray { items, shape }))
}

fn count(v: Option<Value>, name: &str, default: usize) -> Result<usize, Exc> {
    match v {
        None => Ok(default),
        Some(Value::Int(n)) if n >= 1 => Ok(n as usize),
        Some(Value::Int(n)) => Err(Exc::value_error(format!(
            "Number of {name} must be a positive integer, not {n}"
        ))),
        Some(other) => Err(Exc::value_error(format!(
            "Number of {name} must be a positive integer, not {}",
            brief_repr(&other)
        ))),
    }
}

fn subplots(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let nrows = count(a.take(0, "nrows")?, "rows", 1)?;
    let ncols = count(a.take(1, "ncols")?, "columns", 1)?;
    let size = size_arg(a.take_kw("figsize"))?;
    let dpi = a.take_kw("dpi").and_then(|v| as_f64(&v));
    let squeeze = match a.take_kw("squeeze") {
        Some(v) => v.truthy()?,
        None => true,
    };
    let sharex = share_arg(a.take_kw("sharex"), "sharex")?;
    let sharey = share_arg(a.take_kw("sharey"), "sharey")?;
    for k in ["constrained_layout", "layout", "subplot_kw", "gridspec_kw"] {
        a.take_kw(k);
    }
    a.finish(2)?;
    if nrows.saturating_mul(ncols) > 1024 {
        return Err(Exc::value_error(format!(
            "{nrows}x{ncols} subplots are more than devarray draws (1024)"
        )));
    }
    let f = new_figure(it, size, dpi, None)?;
    let axes = add_grid(&f, nrows, ncols, squeeze, (sharex, sharey));
    Ok(Value::tuple(vec![fig_value(&f), axes]))
}

/// How `subplots` shares an axis: "none", "all", "row" or "col".
fn share_arg(v: Option<Value>, name: &str) -> Result<&'static str, Exc> {
    Ok(match &v {
        None | Some(Value::None) | Some(Value::Bool(false)) => "none",
        Some(Value::Bool(true)) => "all",
        Some(Value::Str(s)) => match &**s {
            "all" => "all",
            "none" => "none",
            "row" => "row",
            "col" => "col",
            other => {
                return Err(Exc::value_error(format!(
                    "'{other}' is not a valid value for {name}. Supported values are 'all', 'row', 'col', 'none', False, True"
                )))
            }
        },
        Some(other) => {
            return Err(Exc::value_error(format!(
                "{} is not a valid value for {name}. Supported values are 'all', 'row', 'col', 'none', False, True",
                brief_repr(other)
            )))
        }
    })
}

pub(crate) fn fig_subplots(
    _it: &mut dyn Interpreter,
    f: &Rc<FigObj>,
    mut a: Args,
) -> Result<Value, Exc> {
    let nrows = count(a.take(0, "nrows")?, "rows", 1)?;
    let ncols = count(a.take(1, "ncols")?, "columns", 1)?;
    let sharex = share_arg(a.take_kw("sharex"), "sharex")?;
    let sharey = share_arg(a.take_kw("sharey"), "sharey")?;
    let squeeze = match a.take_kw("squeeze") {
        Some(v) => v.truthy()?,
        None => true,
    };
    for k in ["subplot_kw", "gridspec_kw"] {
        a.take_kw(k);
    }
    a.finish(2)?;
    if nrows.saturating_mul(ncols) > 1024 {
        return Err(Exc::value_error("more than 1024 subplots"));
    }
    Ok(add_grid(f, nrows, ncols, squeeze, (sharex, sharey)))
}

/// `subplot(nrows, ncols, index)` / `add_subplot(...)`, also as one number `221`.
fn subplot_spec(a: &mut Args) -> Result<(usize, usize, usize), Exc> {
    let first = a.take(0, "nrows")?;
    let (nr, nc, idx) = match first {
        None => (1, 1, 1),
        Some(Value::Int(n)) if a.pos.len() <= 1 && (111..=999).contains(&n) => (
            (n / 100) as usize,
            ((n / 10) % 10) as usize,
            (n % 10) as usize,
        ),
        Some(v) => {
            let nr = count(Some(v), "rows", 1)?;
            let nc = count(a.take(1, "ncols")?, "columns", 1)?;
            let idx = count(a.take(2, "index")?, "index", 1)?;
            (nr, nc, idx)
        }
    };
    if nr.saturating_mul(nc) > 1024 {
        return Err(Exc::value_error(format!(
            "{nr}x{nc} subplots are more than devarray draws (1024)"
        )));
    }
    if idx < 1 || idx > nr.saturating_mul(nc) {
        return Err(Exc::value_error(format!(
            "num must be an integer with 1 <= num <= {}, not {idx}",
            nr.saturating_mul(nc)
        )));
    }
    a.take_kw("projection");
    a.take_kw("sharex");
    a.take_kw("sharey");
    a.finish(3)?;
    Ok((nr, nc, idx))
}

fn subplot_in(f: &Rc<FigObj>, (nr, nc, idx): (usize, usize, usize)) -> Value {
    let (r, c) = ((idx - 1) / nc, (idx - 1) % nc);
    // An existing axes at the same place is reused, as pyplot.subplot does.
    let existing = f.all_axes().into_iter().find(|a| {
        a.with(|ax| ax.grid == Some((nr, nc, r, c)))
            .unwrap_or(false)
    });
    if let Some(ax) = existing {
        f.current.set(Some(ax.index));
        return axes_value(&ax);
    }
    let mut ax = Axes::new(plot::grid_rect(
        nr,
        nc,
        r,
        c,
        plot::DEFAULT_MARGINS,
        0.2,
        0.2,
    ));
    ax.grid = Some((nr, nc, r, c));
    axes_value(&f.add_axes(ax))
}

fn subplot(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let spec = subplot_spec(&mut a)?;
    let f = gcf(it)?;
    Ok(subplot_in(&f, spec))
}

pub(crate) fn fig_add_subplot(
    _it: &mut dyn Interpreter,
    f: &Rc<FigObj>,
    mut a: Args,
) -> Result<Value, Exc> {
    let spec = subplot_spec(&mut a)?;
    Ok(subplot_in(f, spec))
}

pub(crate) fn fig_suptitle(
    _it: &mut dyn Interpreter,
    f: &Rc<FigObj>,
    mut a: Args,
) -> Result<Value, Exc> {
    let t = a.required(0, "t")?;
    let size = kw_font_size(&mut a)?;
    a.take_kw("y");
    a.finish(1)?;
    let t = text_of(&t);
    let mut fig = f.fig.borrow_mut();
    fig.suptitle = Some(t.clone());
    fig.suptitle_size = size.unwrap_or(plot::layout::SUPTITLE_FONT);
    Ok(objects::text_handle("0.5", "0.98", &t))
}

pub(crate) fn fig_set_size(
    _it: &mut dyn Interpreter,
    f: &Rc<FigObj>,
    mut a: Args,
) -> Result<Value, Exc> {
    let w = a.required(0, "w")?;
    let size = match a.take(1, "h")? {
        Some(h) => size_arg(Some(Value::tuple(vec![w, h])))?,
        None => size_arg(Some(w))?,
    };
    a.take_kw("forward");
    a.finish(2)?;
    if let Some(s) = size {
        f.fig.borrow_mut().size = s;
    }
    Ok(Value::None)
}

pub(crate) fn subplots_adjust(
    _it: &mut dyn Interpreter,
    f: &Rc<FigObj>,
    mut a: Args,
) -> Result<Value, Exc> {
    let mut m = plot::DEFAULT_MARGINS;
    let mut ws = plot::SUBPLOT_WSPACE;
    let mut hs = plot::SUBPLOT_HSPACE;
    for (i, k) in ["left", "bottom", "right", "top", "wspace", "hspace"]
        .iter()
        .enumerate()
    {
        if let Some(v) = a.take(i, k)?.and_then(|v| as_f64(&v)) {
            match i {
                0..=3 => m[i] = v,
                4 => ws = v,
                _ => hs = v,
            }
        }
    }
    a.finish(6)?;
    if m[0] >= m[2] {
        return Err(Exc::value_error("left cannot be >= right"));
    }
    if m[1] >= m[3] {
        return Err(Exc::value_error("bottom cannot be >= top"));
    }
    for ax in f.fig.borrow_mut().axes.iter_mut() {
        if let Some((nr, nc, r, c)) = ax.grid {
            ax.rect = plot::grid_rect(nr, nc, r, c, m, ws, hs);
        }
    }
    Ok(Value::None)
}

fn close(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let which = a.take(0, "fig")?;
    a.finish(1)?;
    with_state(it, |p| -> Result<(), Exc> {
        let mut figs = p.figs.borrow_mut();
        let remove: Vec<usize> = match &which {
            None | Some(Value::None) => p
                .current
                .borrow()
                .iter()
                .filter_map(|c| figs.iter().position(|f| Rc::ptr_eq(f, c)))
                .collect(),
            Some(Value::Str(s)) if s.as_ref() == "all" => (0..figs.len()).collect(),
            Some(Value::Int(n)) => figs
                .iter()
                .position(|f| f.fig.borrow().number == *n)
                .into_iter()
                .collect(),
            Some(v) => match as_fig(v) {
                Some(f) => figs
                    .iter()
                    .position(|g| Rc::ptr_eq(g, &f))
                    .into_iter()
                    .collect(),
                None => {
                    return Err(Exc::type_error(format!(
                        "close() argument must be a Figure, an int, a string, or None, not {}",
                        v.type_name()
                    )))
                }
            },
        };
        for i in remove.into_iter().rev() {
            figs[i].closed.set(true);
            figs.remove(i);
        }
        *p.current.borrow_mut() = figs.last().cloned();
        Ok(())
    })??;
    Ok(Value::None)
}

fn get_fignums(it: &mut dyn Interpreter, a: Args) -> Result<Value, Exc> {
    a.finish(0)?;
    with_state(it, |p| {
        Value::list(
            p.figs
                .borrow()
                .iter()
                .map(|f| Value::Int(f.fig.borrow().number))
                .collect(),
        )
    })
}

// ------------------------------------------------------------------ showing

fn color_terminal() -> bool {
    use std::io::IsTerminal;
    std::env::var_os("NO_COLOR").is_none() && std::io::stdout().is_terminal()
}

/// Where `show()` writes a figure's SVG in a terminal session.
fn show_path(number: i64) -> std::path::PathBuf {
    std::env::temp_dir().join(format!("devarray-figure-{number}.svg"))
}

/// Shows one figure: in a notebook as an image now, in a terminal as text plus an SVG file.
pub(crate) fn show_figure(it: &mut dyn Interpreter, f: &Rc<FigObj>) {
    if let Err(e) = ticker::resolve_functions(it, f) {
        it.out()
            .stderr(&format!("{}: {}\n", e.class_name(), e.message));
    }
    if it.out().rich_display() {
        let plain = f.repr();
        match f.image() {
            Ok(img) => it.out().display(
                &DisplayData {
                    plain,
                    html: None,
                    image: Some(img),
                },
                false,
            ),
            Err(e) => it.out().stderr(&format!("{}\n", e.message)),
        }
        return;
    }
    let text = plot::term::render(&f.fig.borrow(), color_terminal());
    let number = f.fig.borrow().number;
    let path = show_path(number);
    let note = match std::fs::write(&path, f.svg(None)) {
        Ok(()) => format!("Figure {number} written to {}\n", path.display()),
        Err(e) => format!("Figure {number}: could not write {}: {e}\n", path.display()),
    };
    it.out().stdout(&format!("{text}{note}"));
}

fn show(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    a.take(0, "block")?;
    a.finish(1)?;
    if composed::file_backend(it) {
        return Ok(Value::None);
    }
    let figs = with_state(it, |p| p.figs.borrow().clone())?;
    for f in &figs {
        show_figure(it, f);
    }
    // Shown figures are closed, as matplotlib-inline's show and a blocking show leave them.
    with_state(it, |p| {
        for f in p.figs.borrow().iter() {
            f.closed.set(true);
        }
        p.figs.borrow_mut().clear();
        *p.current.borrow_mut() = None;
    })?;
    Ok(Value::None)
}

/// The end of a notebook cell: figures still open are shown and closed, as
/// matplotlib-inline's `flush_figures` does after each cell.
pub fn flush_inline(it: &mut dyn Interpreter) {
    if !it.state().modules.contains_key("matplotlib.pyplot") {
        return;
    }
    let _ = show(it, Args::new("show", Vec::new()));
}

pub(crate) fn savefig(it: &mut dyn Interpreter, f: &Rc<FigObj>, mut a: Args) -> Result<Value, Exc> {
    ticker::resolve_functions(it, f)?;
    let fname = a.required(0, "fname")?;
    let dpi = a.take_kw("dpi").and_then(|v| as_f64(&v));
    let format = a.take_kw("format").map(|v| text_of(&v));
    let tight = match a.take_kw("bbox_inches").as_ref() {
        None | Some(Value::None) => false,
        Some(Value::Str(s)) if &**s == "tight" => true,
        Some(other) => {
            return Err(Exc::value_error(format!(
                "bbox_inches must be 'tight' or None here, got {}",
                brief_repr(other)
            )))
        }
    };
    let pad = match a.take_kw("pad_inches") {
        None | Some(Value::None) => 0.1,
        Some(v) => as_f64(&v).ok_or_else(|| {
            Exc::type_error(format!(
                "pad_inches must be a number, not {}",
                v.type_name()
            ))
        })?,
    };
    for k in ["transparent", "facecolor", "edgecolor", "metadata"] {
        a.take_kw(k);
    }
    a.finish(1)?;
    let path = match &fname {
        Value::Str(s) => s.to_string(),
        other => {
            return Err(Exc::type_error(format!(
                "savefig() fname must be a path (str), not {}",
                other.type_name()
            )))
        }
    };
    let ext = format.unwrap_or_else(|| {
        std::path::Path::new(&path)
            .extension()
            .map(|e| e.to_string_lossy().to_lowercase())
            .unwrap_or_else(|| "png".into())
    });
    // Without an extension matplotlib adds the format's.
    let path = if std::path::Path::new(&path).extension().is_none() {
        format!("{path}.{ext}")
    } else {
        path
    };
    let bytes = match ext.as_str() {
        "svg" => f.svg(tight.then_some(pad)).into_bytes(),
        "png" => f.png(dpi, tight.then_some(pad))?,
        "avif" | "eps" | "gif" | "jpeg" | "jpg" | "pdf" | "pgf" | "ps" | "raw" | "rgba" | "svgz" | "tif" | "tiff" | "webp" => {
            return Err(Exc::value_error(format!(
                "Format '{ext}' is one matplotlib writes but devarray does not: save as .png or .svg"
            )))
        }
        other => {
            return Err(Exc::value_error(format!(
                "Format '{other}' is not supported (supported formats: avif, eps, gif, jpeg, jpg, pdf, pgf, png, ps, raw, rgba, svg, svgz, tif, tiff, webp)"
            )))
        }
    };
    std::fs::write(&path, bytes).map_err(|e| {
        let kind = if e.kind() == std::io::ErrorKind::NotFound {
            ExcKind::FileNotFoundError
        } else {
            ExcKind::OSError
        };
        Exc::new(
            kind,
            format!(
                "[Errno {}] {}: '{path}'",
                e.raw_os_error().unwrap_or(2),
                io_text(&e)
            ),
        )
    })?;
    let _ = it;
    Ok(Value::None)
}

fn io_text(e: &std::io::Error) -> String {
    match e.kind() {
        std::io::ErrorKind::NotFound => "No such file or directory".into(),
        std::io::ErrorKind::PermissionDenied => "Permission denied".into(),
        _ => e.to_string(),
    }
}

fn set_formats(it: &mut dyn Interpreter, a: Args) -> Result<Value, Exc> {
    let mut fmt = None;
    for v in &a.pos {
        let s = text_of(v);
        fmt = Some(match s.as_str() {
            "svg" => Format::Svg,
            "png" | "retina" | "png2x" => Format::Png,
            "jpg" | "jpeg" | "pdf" => {
                return Err(Exc::value_error(format!(
                    "devarray shows figures as png or svg, not {s}"
                )))
            }
            _ => {
                return Err(Exc::value_error(format!(
                    "supported formats are: 'png', 'retina', 'jpeg', 'jpg', 'svg', 'pdf', 'png2x' not {}",
                    brief_repr(v)
                )))
            }
        });
    }
    if let Some(f) = fmt {
        with_state(it, |p| p.shared.format.set(f))?;
    }
    Ok(Value::None)
}

// ------------------------------------------------------------------ plotting on an Axes

/// A font size: points, or one of matplotlib's names relative to font.size (10).
fn font_size(v: &Value) -> Result<f64, Exc> {
    if let Some(x) = as_f64(v) {
        return Ok(x);
    }
    let scale = match v {
        Value::Str(s) => match &**s {
            "xx-small" => 0.579,
            "x-small" => 0.694,
            "small" | "smaller" => 0.833,
            "medium" => 1.0,
            "large" | "larger" => 1.2,
            "x-large" => 1.44,
            "xx-large" => 1.728,
            _ => {
                return Err(Exc::value_error(
                    "Size is invalid. Valid font size are xx-small, x-small, small, medium, large, x-large, xx-large, larger, smaller, None",
                ))
            }
        },
        other => {
            return Err(Exc::type_error(format!(
                "fontsize must be a number or a size name such as 'large', not {}",
                other.type_name()
            )))
        }
    };
    Ok(plot::layout::FONT * scale)
}

/// `fontsize=` / `size=` / `fontdict={'fontsize': ...}`, when given.
fn kw_font_size(a: &mut Args) -> Result<Option<f64>, Exc> {
    let mut out = None;
    if let Some(Value::Dict(d)) = a.take_kw("fontdict").as_ref() {
        let v = d.borrow().get(&HashKey::Str(Rc::from("fontsize"))).cloned();
        if let Some(v) = v {
            out = Some(font_size(&v)?);
        }
    }
    for k in ["fontsize", "size"] {
        match a.take_kw(k) {
            None | Some(Value::None) => {}
            Some(v) => out = Some(font_size(&v)?),
        }
    }
    Ok(out)
}

/// `rotation=`: degrees, or 'vertical' / 'horizontal'.
fn rotation_of(v: &Value) -> Result<f64, Exc> {
    match v {
        Value::Str(s) if &**s == "vertical" => Ok(90.0),
        Value::Str(s) if &**s == "horizontal" => Ok(0.0),
        Value::None => Ok(0.0),
        other => as_f64(other).ok_or_else(|| {
            Exc::value_error(format!(
                "rotation must be 'vertical', 'horizontal' or a number, not {}",
                brief_repr(other)
            ))
        }),
    }
}

/// The tick-label keywords of `xticks`, `set_xticklabels` and `tick_params`.
fn tick_style(a: &mut Args, spec: &mut plot::AxisSpec, rotation_kw: &str) -> Result<(), Exc> {
    if let Some(v) = a.take_kw(rotation_kw) {
        spec.tick_rotation = rotation_of(&v)?;
    }
    for k in ["ha", "horizontalalignment"] {
        if let Some(v) = a.take_kw(k) {
            spec.tick_ha = Some(text_of(&v));
        }
    }
    Ok(())
}

fn kw_f64(a: &mut Args, names: &[&str]) -> Result<Option<f64>, Exc> {
    for n in names {
        if let Some(v) = a.take_kw(n) {
            return match v {
                Value::None => Ok(None),
                v => as_f64(&v).map(Some).ok_or_else(|| {
                    Exc::type_error(format!("{n} must be a number, not {}", v.type_name()))
                }),
            };
        }
    }
    Ok(None)
}

fn kw_val(a: &mut Args, names: &[&str]) -> Option<Value> {
    names
        .iter()
        .find_map(|n| a.take_kw(n))
        .filter(|v| !matches!(v, Value::None))
}

fn apply_alpha(c: Rgba, alpha: Option<f64>) -> Rgba {
    match alpha {
        Some(al) => c.with_alpha(al),
        None => c,
    }
}

/// Keyword arguments a call must not leave unread, in matplotlib's words.
fn finish_kw(a: &Args, class: &str, max_pos: usize) -> Result<(), Exc> {
    if let Some((k, _)) = a.kw.first() {
        return Err(Exc::new(
            ExcKind::AttributeError,
            format!("{class}.set() got an unexpected keyword argument '{k}'"),
        ));
    }
    a.finish(max_pos)
}

/// What a filled patch's call says about its face: `color` (or `facecolor`, `fc`), `alpha`
/// and `label`.
struct FaceStyle {
    color: Option<Rgba>,
    alpha: Option<f64>,
    label: Option<String>,
}

impl FaceStyle {
    /// Reads the face keywords, drops those the patch accepts but does not draw (`ignored`),
    /// and refuses any other keyword as `class` does.
    fn take(a: &mut Args, ignored: &[&str], class: &str, max_pos: usize) -> Result<Self, Exc> {
        let color = kw_val(a, &["color", "facecolor", "fc"])
            .map(|v| data::color_arg(&v))
            .transpose()?;
        let alpha = kw_f64(a, &["alpha"])?;
        let label = kw_val(a, &["label"]).map(|v| text_of(&v));
        for k in ignored {
            a.take_kw(k);
        }
        finish_kw(a, class, max_pos)?;
        Ok(FaceStyle {
            color,
            alpha,
            label,
        })
    }

    /// The face colour: the given one, else `default`, with the alpha applied.
    fn face(&self, default: impl FnOnce() -> Rgba) -> Rgba {
        apply_alpha(self.color.unwrap_or_else(default), self.alpha)
    }
}

fn ax_plot(it: &mut dyn Interpreter, ax: &Rc<AxesObj>, mut a: Args) -> Result<Value, Exc> {
    let color = kw_val(&mut a, &["color", "c"])
        .map(|v| data::color_arg(&v))
        .transpose()?;
    let style = kw_val(&mut a, &["linestyle", "ls"])
        .map(|v| data::linestyle_arg(&v))
        .transpose()?;
    let width = kw_f64(&mut a, &["linewidth", "lw"])?;
    let marker = match a.take_kw("marker") {
        Some(v) => Some(data::marker_arg(&v)?),
        None => None,
    };
    let msize = kw_f64(&mut a, &["markersize", "ms"])?;
    let label = kw_val(&mut a, &["label"]).map(|v| text_of(&v));
    let alpha = kw_f64(&mut a, &["alpha"])?;
    let in_axes = axes_more::in_axes(a.take_kw("transform"))?;
    let marker_face = kw_val(&mut a, &["markerfacecolor", "mfc"])
        .map(|v| data::color_arg(&v))
        .transpose()?;
    for k in [
        "zorder",
        "markeredgecolor",
        "mec",
        "drawstyle",
        "scalex",
        "scaley",
        "antialiased",
        "solid_capstyle",
        "dash_capstyle",
    ] {
        a.take_kw(k);
    }
    finish_kw(&a, "Line2D", usize::MAX)?;
    // Groups of (x, y, fmt) or (y, fmt) or (y,).
    let mut groups: Vec<(Option<Value>, Value, Option<String>)> = Vec::new();
    let pos = std::mem::take(&mut a.pos);
    let mut i = 0;
    while i < pos.len() {
        let first = pos[i].clone();
        if matches!(first, Value::Str(_)) {
            return Err(Exc::value_error("third arg must be a format string"));
        }
        let second = pos.get(i + 1).cloned();
        match second {
            Some(Value::Str(ref s)) => {
                groups.push((None, first, Some(s.to_string())));
                i += 2;
            }
            Some(y) => {
                let fmt = match pos.get(i + 2) {
                    Some(Value::Str(s)) => Some(s.to_string()),
                    _ => None,
                };
                i += if fmt.is_some() { 3 } else { 2 };
                groups.push((Some(first), y, fmt));
            }
            None => {
                groups.push((None, first, None));
                i += 1;
            }
        }
    }
    let mut handles = Vec::new();
    for (x, y, fmt) in groups {
        let (fls, fmk, fcol) = match &fmt {
            Some(f) => data::format_string(f)?,
            None => (None, None, None),
        };
        let yd = numbers(it, &y)?;
        let xd = match &x {
            Some(x) => Some(numbers(it, x)?),
            None => None,
        };
        // Columns of a 2-D y are separate lines.
        let (ycols, nrows) = columns(&yd);
        let xs: Vec<f64> = match &xd {
            Some(xd) => {
                let xn = xd.shape.first().copied().unwrap_or(1);
                if xn != nrows {
                    return Err(Exc::value_error(format!(
                        "x and y must have same first dimension, but have shapes {} and {}",
                        xd.shape_text(),
                        yd.shape_text()
                    )));
                }
                if xd.shape.len() > 2 || yd.shape.len() > 2 {
                    return Err(Exc::value_error(format!(
                        "x and y can be no greater than 2D, but have shapes {} and {}",
                        xd.shape_text(),
                        yd.shape_text()
                    )));
                }
                columns(xd).0.into_iter().next().unwrap_or_default()
            }
            None => (0..nrows).map(|i| i as f64).collect(),
        };
        for ys in ycols {
            let c = ax.with(|axr| match color.or(fcol) {
                Some(c) => c,
                None => axr.next_color(),
            })?;
            let line = Line {
                xs: xs.clone(),
                ys,
                color: apply_alpha(c, alpha),
                width: width.unwrap_or(1.5),
                style: style.or(fls).unwrap_or(LineStyle::Solid),
                marker: marker.unwrap_or(fmk),
                marker_size: msize.unwrap_or(6.0),
                label: label.clone(),
                in_axes,
                marker_face,
            };
            let index = ax.with(|axr| {
                axr.artists.push(Artist::Line(line));
                axr.artists.len() - 1
            })?;
            handles.push(objects::line_handle(index));
        }
    }
    Ok(Value::list(handles))
}

/// The columns of a 1-D or 2-D array, and the row count.
fn columns(d: &data::Data) -> (Vec<Vec<f64>>, usize) {
    match d.shape.as_slice() {
        [] => (vec![d.values.clone()], 1),
        [n] => (vec![d.values.clone()], *n),
        [r, c, ..] => {
            let (r, c) = (*r, *c);
            let cols = (0..c)
                .map(|j| {
                    (0..r)
                        .map(|i| d.values.get(i * c + j).copied().unwrap_or(f64::NAN))
                        .collect()
                })
                .collect();
            (cols, r)
        }
    }
}

fn ax_scatter(it: &mut dyn Interpreter, ax: &Rc<AxesObj>, mut a: Args) -> Result<Value, Exc> {
    let x = a.required(0, "x")?;
    let y = a.required(1, "y")?;
    let s = a.take(2, "s")?;
    let c = a.take(3, "c")?.or_else(|| a.take_kw("color"));
    let marker = match a.take(4, "marker")? {
        Some(v) => data::marker_arg(&v)?,
        None => Some('o'),
    };
    let cmap = a.take(5, "cmap")?.map(|v| colormaps::cmap_name(&v));
    let alpha = kw_f64(&mut a, &["alpha"])?;
    let label = kw_val(&mut a, &["label"]).map(|v| text_of(&v));
    for k in ["edgecolors", "edgecolor", "linewidths", "zorder"] {
        a.take_kw(k);
    }
    let (vmin, vmax) = colormaps::limits_with_norm(&mut a)?;
    finish_kw(&a, "PathCollection", 6)?;
    let xs = vector(it, &x)?;
    let ys = vector(it, &y)?;
    if xs.len() != ys.len() {
        return Err(Exc::value_error("x and y must be the same size"));
    }
    let sizes = match s {
        Some(Value::None) | None => vec![20.0],
        Some(v) => vector(it, &v)?,
    };
    // Colours from values through a colormap make the scatter a mappable, for colorbar().
    let mut mapped = None;
    let colors = match c {
        Some(Value::None) | None => vec![ax.with(|axr| axr.next_color())?],
        Some(v @ Value::Str(_)) => vec![data::color_arg(&v)?],
        Some(ref t @ Value::Tuple(ref items)) if items.len() == 3 || items.len() == 4 => {
            vec![data::color_arg(t)?]
        }
        Some(v) => {
            let vals = vector(it, &v)?;
            if vals.len() != xs.len() {
                return Err(Exc::value_error(format!(
                    "'c' argument has {} elements, which is inconsistent with 'x' and 'y' with size {}.",
                    vals.len(),
                    xs.len()
                )));
            }
            let (lo, hi) = vals
                .iter()
                .filter(|v| v.is_finite())
                .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), v| {
                    (a.min(*v), b.max(*v))
                });
            let (lo, hi) = (vmin.unwrap_or(lo), vmax.unwrap_or(hi));
            let name = cmap.clone().unwrap_or_else(|| "viridis".into());
            mapped = Some(plot::Norm {
                cmap: name.clone(),
                lo,
                hi,
                levels: Vec::new(),
                band_colors: Vec::new(),
            });
            vals.iter()
                .map(|v| {
                    let t = if hi > lo { (v - lo) / (hi - lo) } else { 0.0 };
                    colormap(&name, t)
                })
                .collect::<Result<_, _>>()?
        }
    };
    let colors = colors.into_iter().map(|c| apply_alpha(c, alpha)).collect();
    ax.with(|axr| {
        axr.artists.push(Artist::Scatter(Scatter {
            xs,
            ys,
            colors,
            sizes,
            marker: marker.unwrap_or('o'),
            label,
        }))
    })?;
    Ok(Value::Object(Rc::new(objects::Handle {
        text: None,
        class: "matplotlib.collections.PathCollection",
        repr: None,
        artist: None,
        image: mapped.map(|norm| (ax.clone(), norm)),
    })))
}

fn colormap(name: &str, t: f64) -> Result<Rgba, Exc> {
    color::colormap(name, t).ok_or_else(|| {
        Exc::value_error(format!(
            "'{name}' is not a valid value for cmap; supported values are {}",
            colormaps::supported_list()
        ))
    })
}

fn bars(
    it: &mut dyn Interpreter,
    ax: &Rc<AxesObj>,
    mut a: Args,
    vertical: bool,
) -> Result<Value, Exc> {
    let (xn, hn, wn, bn) = if vertical {
        ("x", "height", "width", "bottom")
    } else {
        ("y", "width", "height", "left")
    };
    let x = a.required(0, xn)?;
    let h = a.required(1, hn)?;
    let w = a.take(2, wn)?;
    let b = a.take(3, bn)?;
    let color = kw_val(&mut a, &["color"])
        .map(|v| data::color_arg(&v))
        .transpose()?;
    let edge = kw_val(&mut a, &["edgecolor", "ec"])
        .map(|v| data::color_arg(&v))
        .transpose()?;
    let label = kw_val(&mut a, &["label"]).map(|v| text_of(&v));
    let alpha = kw_f64(&mut a, &["alpha"])?;
    let align = kw_val(&mut a, &["align"])
        .map(|v| text_of(&v))
        .unwrap_or_else(|| "center".into());
    for k in [
        "tick_label",
        "linewidth",
        "lw",
        "zorder",
        "yerr",
        "xerr",
        "capsize",
        "hatch",
    ] {
        a.take_kw(k);
    }
    finish_kw(&a, "Rectangle", 4)?;
    // Categories: strings become positions 0, 1, ... labelled with them.
    let (xs, cats) = match data::strings(&x) {
        Some(c) => ((0..c.len()).map(|i| i as f64).collect(), Some(c)),
        None => (vector(it, &x)?, None),
    };
    let hs = vector(it, &h)?;
    let n = xs.len().max(hs.len());
    let bcast = |v: &[f64], what: &str| -> Result<Vec<f64>, Exc> {
        match v.len() {
            1 => Ok(vec![v[0]; n]),
            m if m == n => Ok(v.to_vec()),
            m => Err(Exc::value_error(format!(
                "shape mismatch: objects cannot be broadcast to a single shape.  Mismatch is between '{xn}' with shape ({},) and '{what}' with shape ({m},).",
                xs.len()
            ))),
        }
    };
    let hs = bcast(&hs, hn)?;
    let ws = bcast(
        &match w {
            Some(Value::None) | None => vec![0.8],
            Some(v) => vector(it, &v)?,
        },
        wn,
    )?;
    let bs = bcast(
        &match b {
            Some(Value::None) | None => vec![0.0],
            Some(v) => vector(it, &v)?,
        },
        bn,
    )?;
    let xs = bcast(&xs, xn)?;
    let rects: Vec<[f64; 4]> = (0..n)
        .map(|i| {
            let left = if align == "edge" {
                xs[i]
            } else {
                xs[i] - ws[i] / 2.0
            };
            [left, ws[i], bs[i], hs[i]]
        })
        .collect();
    let mut count = 0;
    ax.with(|axr| {
        let c = color.unwrap_or_else(|| axr.next_color());
        let n = rects.len();
        axr.artists.push(Artist::Bars(Bars {
            rects,
            color: apply_alpha(c, alpha),
            edge,
            label,
            vertical,
        }));
        count = n;
        if let Some(c) = cats {
            let spec = if vertical { &mut axr.x } else { &mut axr.y };
            spec.ticks = Some((0..c.len()).map(|i| i as f64).collect());
            spec.ticklabels = Some(c);
        }
    })?;
    Ok(objects::bar_container(count))
}

fn ax_bar(it: &mut dyn Interpreter, ax: &Rc<AxesObj>, a: Args) -> Result<Value, Exc> {
    bars(it, ax, a, true)
}

fn ax_barh(it: &mut dyn Interpreter, ax: &Rc<AxesObj>, a: Args) -> Result<Value, Exc> {
    bars(it, ax, a, false)
}

pub(crate) fn numpy_value(it: &mut dyn Interpreter, v: Vec<f64>) -> Result<Value, Exc> {
    let n = v.len();
    let arr = it.state_mut().rt.from_host(
        crate::runtime::HostData::F64(v),
        &[n],
        crate::runtime::Device::cpu(0),
    )?;
    Ok(crate::object::ops::wrap(
        arr,
        crate::object::value::Flavor::Numpy,
    ))
}

fn ax_hist(it: &mut dyn Interpreter, ax: &Rc<AxesObj>, mut a: Args) -> Result<Value, Exc> {
    let x = a.required(0, "x")?;
    let bins = a.take(1, "bins")?;
    let range = a.take(2, "range")?;
    let density = a.flag(3, "density", false)?;
    let color = kw_val(&mut a, &["color"])
        .map(|v| data::color_arg(&v))
        .transpose()?;
    let edge = kw_val(&mut a, &["edgecolor", "ec"])
        .map(|v| data::color_arg(&v))
        .transpose()?;
    let label = kw_val(&mut a, &["label"]).map(|v| text_of(&v));
    let alpha = kw_f64(&mut a, &["alpha"])?;
    let rwidth = kw_f64(&mut a, &["rwidth"])?;
    for k in ["histtype", "zorder", "linewidth", "lw", "align"] {
        a.take_kw(k);
    }
    finish_kw(&a, "Rectangle", 4)?;
    let xs: Vec<f64> = vector(it, &x)?
        .into_iter()
        .filter(|v| v.is_finite())
        .collect();
    let (mut lo, mut hi) = match &range {
        Some(Value::None) | None => xs
            .iter()
            .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), v| {
                (a.min(*v), b.max(*v))
            }),
        Some(r) => match vector(it, r)?.as_slice() {
            [a, b] => (*a, *b),
            _ => return Err(Exc::value_error("range must be a pair (min, max)")),
        },
    };
    if lo > hi {
        if xs.is_empty() {
            lo = 0.0;
            hi = 1.0;
        } else {
            return Err(Exc::value_error(
                "max must be larger than min in range parameter.",
            ));
        }
    }
    if lo == hi {
        lo -= 0.5;
        hi += 0.5;
    }
    let edges: Vec<f64> = match &bins {
        Some(Value::None) | None => uniform_edges(lo, hi, 10),
        Some(Value::Int(n)) if *n > 1_000_000 => {
            return Err(Exc::value_error(format!(
                "{n} bins are more than devarray draws (1000000)"
            )))
        }
        Some(Value::Int(n)) if *n >= 1 => uniform_edges(lo, hi, *n as usize),
        Some(Value::Int(_)) => {
            return Err(Exc::value_error("`bins` must be positive, when an integer"))
        }
        Some(v) => {
            let e = vector(it, v)?;
            if e.windows(2).any(|w| w[1] < w[0]) {
                return Err(Exc::value_error(
                    "`bins` must increase monotonically, when an array",
                ));
            }
            e
        }
    };
    let nb = edges.len().saturating_sub(1);
    let mut counts = vec![0.0; nb];
    for v in &xs {
        if nb == 0 || *v < edges[0] || *v > edges[nb] {
            continue;
        }
        // The last bin includes its right edge, as numpy.histogram.
        let i = edges
            .partition_point(|e| e <= v)
            .saturating_sub(1)
            .min(nb - 1);
        counts[i] += 1.0;
    }
    if density {
        let total: f64 = counts.iter().sum();
        for (i, c) in counts.iter_mut().enumerate() {
            let w = edges[i + 1] - edges[i];
            *c = if total > 0.0 && w > 0.0 {
                *c / (total * w)
            } else {
                0.0
            };
        }
    }
    let rw = rwidth.unwrap_or(1.0);
    let rects = (0..nb)
        .map(|i| {
            let w = edges[i + 1] - edges[i];
            [edges[i] + w * (1.0 - rw) / 2.0, w * rw, 0.0, counts[i]]
        })
        .collect();
    ax.with(|axr| {
        let c = color.unwrap_or_else(|| axr.next_color());
        axr.artists.push(Artist::Bars(Bars {
            rects,
            color: apply_alpha(c, alpha),
            edge,
            label,
            vertical: true,
        }))
    })?;
    let n = numpy_value(it, counts)?;
    let e = numpy_value(it, edges)?;
    Ok(Value::tuple(vec![n, e, objects::bar_container(nb)]))
}

/// `np.linspace(lo, hi, n + 1)` as NumPy computes it (start plus i steps, the last edge
/// exactly `hi`), so the largest value falls in the last bin as `np.histogram` puts it.
fn uniform_edges(lo: f64, hi: f64, n: usize) -> Vec<f64> {
    let step = (hi - lo) / n as f64;
    let mut edges: Vec<f64> = (0..=n).map(|i| lo + i as f64 * step).collect();
    if let Some(last) = edges.last_mut() {
        *last = hi;
    }
    edges
}

fn ax_imshow(it: &mut dyn Interpreter, ax: &Rc<AxesObj>, mut a: Args) -> Result<Value, Exc> {
    let x = a.required(0, "X")?;
    let cmap = a
        .take(1, "cmap")?
        .filter(|v| !matches!(v, Value::None))
        .map(|v| colormaps::cmap_name(&v));
    let (vmin, vmax) = colormaps::limits_with_norm(&mut a)?;
    let extent = match a.take_kw("extent") {
        None | Some(Value::None) => None,
        Some(v) => {
            let e = vector(it, &v)?;
            match e.as_slice() {
                [l, r, b, t] => Some([*l, *r, *b, *t]),
                _ => {
                    return Err(Exc::value_error(format!(
                        "not enough values to unpack (expected 4, got {})",
                        e.len()
                    )))
                }
            }
        }
    };
    let origin = match a.take_kw("origin") {
        None | Some(Value::None) => "upper".to_string(),
        Some(v) => text_of(&v),
    };
    if origin != "upper" && origin != "lower" {
        return Err(data::not_in_list(&origin, "origin", &["upper", "lower"]));
    }
    // 'equal' (imshow's default) keeps pixels square; 'auto' fills the axes.
    let square = match &a.take_kw("aspect") {
        None | Some(Value::None) => true,
        Some(Value::Str(s)) if &**s == "auto" => false,
        Some(Value::Str(s)) if &**s == "equal" => true,
        Some(Value::Str(s)) => {
            return Err(Exc::value_error(format!(
                "could not convert string to float: {}",
                crate::object::format::str_repr(s)
            )))
        }
        Some(v) => as_f64(v) == Some(1.0),
    };
    // Interpolation is for screens showing the image larger than its pixels: drawn as
    // pixels here.
    for k in ["interpolation", "alpha", "norm", "resample", "filternorm"] {
        a.take_kw(k);
    }
    finish_kw(&a, "AxesImage", 2)?;
    let is_int = matches!(&x, Value::Array(arr) if !arr.array.dtype().is_float());
    let d = numbers(it, &x)?;
    let (h, w, ch) = match d.shape.as_slice() {
        [h, w] => (*h, *w, 1),
        [h, w, c] if *c == 3 || *c == 4 => (*h, *w, *c),
        [_, _, 1] => {
            return Err(Exc::type_error(format!(
                "Invalid shape {} for image data",
                d.shape_text()
            )))
        }
        _ => {
            return Err(Exc::type_error(format!(
                "Invalid shape {} for image data",
                d.shape_text()
            )))
        }
    };
    if h == 0 || w == 0 {
        return Err(Exc::type_error(format!(
            "Invalid shape {} for image data",
            d.shape_text()
        )));
    }
    let mut rgba = Vec::with_capacity(h * w * 4);
    let name = cmap.unwrap_or_else(|| "viridis".into());
    let finite = d.values.iter().copied().filter(|v| v.is_finite());
    let lo = vmin.unwrap_or_else(|| finite.clone().fold(f64::INFINITY, f64::min));
    let hi = vmax.unwrap_or_else(|| finite.fold(f64::NEG_INFINITY, f64::max));
    // All NaN: matplotlib's norm falls back to (0, 1) for a colorbar.
    let (lo, hi) = if lo.is_finite() && hi.is_finite() {
        (lo, hi)
    } else {
        (0.0, 1.0)
    };
    let norm = plot::Norm {
        cmap: name.clone(),
        lo,
        hi,
        levels: Vec::new(),
        band_colors: Vec::new(),
    };
    if ch == 1 {
        for v in &d.values {
            let t = if hi > lo { (v - lo) / (hi - lo) } else { 0.0 };
            rgba.extend(colormap(&name, t)?.bytes());
        }
    } else {
        // RGB(A): floats in [0, 1] or integers in [0, 255], clipped as matplotlib clips them.
        let scale = if is_int { 1.0 / 255.0 } else { 1.0 };
        for px in d.values.chunks(ch) {
            let c = |i: usize| (px.get(i).copied().unwrap_or(1.0) * scale).clamp(0.0, 1.0);
            let al = if ch == 4 { c(3) } else { 1.0 };
            rgba.extend(Rgba(c(0), c(1), c(2), al).bytes());
        }
    }
    // Checked here, as matplotlib checks it when the colorbar or the image is drawn.
    colormap(&norm.cmap, 0.0)?;
    // origin='lower': row 0 at the bottom, the y axis upright.
    let extent = if origin == "lower" {
        let rows: Vec<&[u8]> = rgba.chunks(w * 4).collect();
        rgba = rows.into_iter().rev().flatten().copied().collect();
        Some(extent.unwrap_or([-0.5, w as f64 - 0.5, -0.5, h as f64 - 0.5]))
    } else {
        extent
    };
    let index = ax.with(|axr| {
        axr.artists.push(Artist::Image(plot::Image {
            width: w,
            height: h,
            rgba,
            extent,
            norm: Some(norm.clone()),
        }));
        axr.equal_aspect = square;
        axr.artists.len() - 1
    })?;
    Ok(Value::Object(Rc::new(objects::Handle {
        text: None,
        class: "matplotlib.image.AxesImage",
        repr: None,
        artist: Some(index),
        image: Some((ax.clone(), norm)),
    })))
}

/// `fig.colorbar(mappable, cax=None, ax=None, ...)` and `plt.colorbar(mappable=None, ...)`: a
/// vertical colorbar beside the mappable's axes (or `ax`), which gives up the room for it as
/// matplotlib's `make_axes_gridspec` takes it. Without a mappable, the figure's latest image.
pub(crate) fn fig_colorbar(
    _it: &mut dyn Interpreter,
    f: &Rc<FigObj>,
    mut a: Args,
) -> Result<Value, Exc> {
    let mappable = a.take(0, "mappable")?.filter(|v| !matches!(v, Value::None));
    if let Some(v) = a.take(1, "cax")?.filter(|v| !matches!(v, Value::None)) {
        return Err(Exc::new(
            ExcKind::NotImplementedError,
            format!(
                "colorbar(cax={}): devarray draws a colorbar only in room it takes from an Axes; pass ax= instead",
                brief_repr(&v)
            ),
        ));
    }
    let ax_arg = a.take(2, "ax")?.filter(|v| !matches!(v, Value::None));
    let label = kw_val(&mut a, &["label"]).map(|v| text_of(&v));
    let fraction = kw_f64(&mut a, &["fraction"])?.unwrap_or(0.15);
    let pad = kw_f64(&mut a, &["pad"])?.unwrap_or(0.05);
    let shrink = kw_f64(&mut a, &["shrink"])?.unwrap_or(1.0);
    let aspect = kw_f64(&mut a, &["aspect"])?.unwrap_or(20.0);
    match kw_val(&mut a, &["orientation", "location"]) {
        None => {}
        Some(Value::Str(ref s)) if matches!(&**s, "vertical" | "right") => {}
        Some(v) => {
            return Err(Exc::new(
                ExcKind::NotImplementedError,
                format!(
                    "colorbar: devarray draws vertical colorbars on the right only, not {}",
                    brief_repr(&v)
                ),
            ))
        }
    }
    for k in ["ticks", "format", "extend", "drawedges", "use_gridspec"] {
        a.take_kw(k);
    }
    finish_kw(&a, "Colorbar", 3)?;
    if !(0.0..1.0).contains(&fraction) || !(0.0..1.0).contains(&pad) || fraction + pad >= 1.0 {
        return Err(Exc::value_error(format!(
            "colorbar: fraction ({fraction}) and pad ({pad}) must be between 0 and 1 and leave room for the Axes"
        )));
    }
    if !(shrink > 0.0 && shrink <= 1.0 && aspect > 0.0 && aspect.is_finite()) {
        return Err(Exc::value_error(format!(
            "colorbar: shrink ({shrink}) must be in (0, 1] and aspect ({aspect}) positive"
        )));
    }
    let (image_axes, norm) = match &mappable {
        Some(v) => match v {
            Value::Object(o) => match o.as_any().downcast_ref::<objects::Handle>() {
                Some(objects::Handle {
                    image: Some((ax, norm)),
                    ..
                }) => (ax.clone(), norm.clone()),
                Some(h) => return Err(no_cmap(h.type_name())),
                None if contour::mappable(v).is_some() => {
                    contour::mappable(v).ok_or_else(|| no_cmap("QuadContourSet"))?
                }
                None => match colormaps::mappable_norm(v) {
                    // A ScalarMappable belongs to no Axes: it takes room from ax= only.
                    Some(norm) => match ax_arg.as_ref().and_then(as_axes) {
                        Some(ax) => (ax, norm),
                        None => return Err(Exc::value_error("Unable to determine Axes to steal space for Colorbar. Either provide the *cax* argument to use as the Axes for the Colorbar, provide the *ax* argument to steal space from it, or add *mappable* to an Axes.")),
                    },
                    None => return Err(not_mappable(v, ax_arg.is_some())),
                },
            },
            _ => return Err(not_mappable(v, ax_arg.is_some())),
        },
        None => latest_image(f).ok_or_else(|| {
            Exc::new(
                ExcKind::RuntimeError,
                "No mappable was found to use for colorbar creation. First define a mappable such as an image (with imshow) or a contour set (with contourf).",
            )
        })?,
    };
    let parent = match &ax_arg {
        None => image_axes,
        Some(v) => as_axes(v).ok_or_else(|| {
            Exc::type_error(format!(
                "colorbar(ax=) takes one Axes, not {}",
                brief_repr(v)
            ))
        })?,
    };
    let fig = parent.fig.clone();
    let geometry = plot::ColorbarOf {
        parent: parent.index,
        fraction,
        pad,
        shrink,
    };
    let cell = parent.with(|p| {
        let (main, cell) = plot::colorbar_split(p.rect, &geometry);
        p.rect = main;
        p.anchor = (1.0, 0.5);
        cell
    })?;
    let mut cax = Axes::new(cell);
    let steps = 256;
    let mut rgba = Vec::with_capacity(steps * 4);
    let (lo, hi) = match norm.levels.as_slice() {
        // A contour set's colorbar spans its levels.
        [first, .., last] => (*first, *last),
        _ if norm.hi > norm.lo => (norm.lo, norm.hi),
        // A constant image: matplotlib widens the norm around the value.
        _ => (norm.lo - 0.1, norm.lo + 0.1),
    };
    for r in 0..steps {
        // Top row first: the high end.
        let t = 1.0 - (r as f64 + 0.5) / steps as f64;
        rgba.extend(colorbar_color(&norm, lo + (hi - lo) * t)?.bytes());
    }
    if norm.levels.len() >= 2 {
        cax.y.locator = Some(plot::tickers::Locator::Fixed(level_ticks(&norm.levels)));
    }
    cax.artists.push(Artist::Image(plot::Image {
        width: 1,
        height: steps,
        rgba,
        extent: Some([0.0, 1.0, lo, hi]),
        norm: None,
    }));
    cax.x.lim = (Some(0.0), Some(1.0));
    cax.x.visible = false;
    cax.y.lim = (Some(lo), Some(hi));
    cax.y.opposite = true;
    cax.y.label = label.unwrap_or_default();
    cax.box_aspect = Some(aspect);
    cax.anchor = (0.0, 0.5);
    cax.colorbar = Some(geometry);
    // The colorbar does not become the current axes.
    let current = fig.current.get();
    let cax = fig.add_axes(cax);
    fig.current.set(current);
    Ok(Value::Object(Rc::new(objects::ColorbarValue {
        ax: cax,
        norm,
    })))
}

/// The colour a colorbar shows at value `v`: the colormap through the norm, or for a
/// contour set the colour of the band holding `v`.
fn colorbar_color(norm: &plot::Norm, v: f64) -> Result<Rgba, Exc> {
    let scaled = |v: f64| {
        if norm.hi > norm.lo {
            (v - norm.lo) / (norm.hi - norm.lo)
        } else {
            0.0
        }
    };
    if norm.levels.len() < 2 {
        return colormap(&norm.cmap, scaled(v));
    }
    let band = norm
        .levels
        .windows(2)
        .position(|w| v < w[1])
        .unwrap_or(norm.levels.len() - 2);
    match norm.band_colors.get(band) {
        Some(c) => Ok(*c),
        // Line contours: the band's middle through the norm.
        None => colormap(
            &norm.cmap,
            scaled(0.5 * (norm.levels[band] + norm.levels[band + 1])),
        ),
    }
}

/// A contour set colorbar's ticks: `FixedLocator(levels, nbins=10)`, every k-th level
/// from the offset whose smallest tick is nearest zero.
fn level_ticks(levels: &[f64]) -> Vec<f64> {
    let step = levels.len().div_ceil(10).max(1);
    let pick = |i: usize| -> Vec<f64> { levels.iter().skip(i).step_by(step).copied().collect() };
    let least = |v: &[f64]| v.iter().fold(f64::INFINITY, |m, x| m.min(x.abs()));
    let mut ticks = pick(0);
    for i in 1..step {
        let other = pick(i);
        if least(&other) < least(&ticks) {
            ticks = other;
        }
    }
    ticks
}

/// matplotlib's errors for a mappable that is not one: it looks for the axes first.
fn not_mappable(v: &Value, has_ax: bool) -> Exc {
    if has_ax {
        return no_cmap(&v.type_name());
    }
    Exc::value_error(
        "Unable to determine Axes to steal space for Colorbar. Either provide the *cax* argument to use as the Axes for the Colorbar, provide the *ax* argument to steal space from it, or add *mappable* to an Axes.",
    )
}

fn no_cmap(type_name: &str) -> Exc {
    Exc::new(
        ExcKind::AttributeError,
        format!("'{type_name}' object has no attribute 'cmap'"),
    )
}

/// matplotlib's `gci()`: the latest image of the current axes, else of the figure's others.
fn latest_image(f: &Rc<FigObj>) -> Option<(Rc<AxesObj>, plot::Norm)> {
    let axes = f.all_axes();
    let current = f.current.get();
    let order = current
        .into_iter()
        .chain((0..axes.len()).rev().filter(|i| Some(*i) != current));
    for i in order {
        let ax = axes.get(i)?;
        let norm = ax
            .with(|a| {
                a.artists.iter().rev().find_map(|art| match art {
                    Artist::Image(im) => im.norm.clone(),
                    Artist::Patches(p) => p.norm.clone(),
                    _ => None,
                })
            })
            .ok()
            .flatten();
        if let Some(norm) = norm {
            return Some((ax.clone(), norm));
        }
    }
    None
}

fn ax_fill_between(it: &mut dyn Interpreter, ax: &Rc<AxesObj>, mut a: Args) -> Result<Value, Exc> {
    let x = a.required(0, "x")?;
    let y1 = a.required(1, "y1")?;
    let y2 = a.take(2, "y2")?;
    let style = FaceStyle::take(
        &mut a,
        &[
            "where",
            "interpolate",
            "step",
            "edgecolor",
            "linewidth",
            "zorder",
        ],
        "PolyCollection",
        3,
    )?;
    let xs = vector(it, &x)?;
    let n = xs.len();
    let fit = |v: Vec<f64>, name: &str| -> Result<Vec<f64>, Exc> {
        match v.len() {
            1 => Ok(vec![v[0]; n]),
            m if m == n => Ok(v),
            m => Err(Exc::value_error(format!(
                "'x' has size {n}, but '{name}' has an unequal size of {m}"
            ))),
        }
    };
    let y1 = fit(vector(it, &y1)?, "y1")?;
    let y2 = fit(
        match y2 {
            Some(Value::None) | None => vec![0.0],
            Some(v) => vector(it, &v)?,
        },
        "y2",
    )?;
    ax.with(|axr| {
        let color = style.face(|| axr.next_color());
        axr.artists.push(Artist::Fill(Fill {
            xs,
            y1,
            y2,
            color,
            label: style.label,
        }))
    })?;
    Ok(handle("matplotlib.collections.PolyCollection"))
}

fn refline(ax: &Rc<AxesObj>, mut a: Args, horizontal: bool) -> Result<Value, Exc> {
    let at = a
        .take(0, if horizontal { "y" } else { "x" })?
        .map(|v| as_f64(&v).ok_or_else(|| Exc::type_error("the position must be a number")))
        .transpose()?
        .unwrap_or(0.0);
    a.take(1, if horizontal { "xmin" } else { "ymin" })?;
    a.take(2, if horizontal { "xmax" } else { "ymax" })?;
    let color = kw_val(&mut a, &["color", "c"])
        .map(|v| data::color_arg(&v))
        .transpose()?;
    let style = kw_val(&mut a, &["linestyle", "ls"])
        .map(|v| data::linestyle_arg(&v))
        .transpose()?;
    let width = kw_f64(&mut a, &["linewidth", "lw"])?;
    let alpha = kw_f64(&mut a, &["alpha"])?;
    let label = kw_val(&mut a, &["label"]).map(|v| text_of(&v));
    a.take_kw("zorder");
    finish_kw(&a, "Line2D", 3)?;
    ax.with(|axr| {
        // axhline does not advance the colour cycle: its default is the cycle's first colour.
        let c = color.unwrap_or_else(|| color::parse(plot::TAB10[0]).unwrap_or(Rgba::BLACK));
        axr.artists.push(Artist::RefLine(RefLine {
            at,
            horizontal,
            color: apply_alpha(c, alpha),
            width: width.unwrap_or(1.5),
            style: style.unwrap_or(LineStyle::Solid),
            label,
        }))
    })?;
    Ok(handle("matplotlib.lines.Line2D"))
}

fn ax_axhline(_it: &mut dyn Interpreter, ax: &Rc<AxesObj>, a: Args) -> Result<Value, Exc> {
    refline(ax, a, true)
}

fn ax_axvline(_it: &mut dyn Interpreter, ax: &Rc<AxesObj>, a: Args) -> Result<Value, Exc> {
    refline(ax, a, false)
}

fn ax_text(_it: &mut dyn Interpreter, ax: &Rc<AxesObj>, mut a: Args) -> Result<Value, Exc> {
    let x = a.required(0, "x")?;
    let y = a.required(1, "y")?;
    let s = a.required(2, "s")?;
    let num = |v: &Value| {
        as_f64(v).ok_or_else(|| {
            Exc::type_error(format!(
                "text() x and y must be numbers, not {}",
                v.type_name()
            ))
        })
    };
    let (xr, yr) = (brief_repr(&x), brief_repr(&y));
    let (x, y) = (num(&x)?, num(&y)?);
    let body = text_of(&s);
    let h = objects::text_handle(&xr, &yr, &body);
    let color = kw_val(&mut a, &["color", "c"])
        .map(|v| data::color_arg(&v))
        .transpose()?;
    let size = kw_f64(&mut a, &["fontsize", "size"])?;
    let ha = kw_val(&mut a, &["ha", "horizontalalignment"])
        .map(|v| text_of(&v))
        .unwrap_or_else(|| "left".into());
    let va = kw_val(&mut a, &["va", "verticalalignment"])
        .map(|v| text_of(&v))
        .unwrap_or_else(|| "baseline".into());
    let in_axes = axes_more::in_axes(a.take_kw("transform"))?;
    for k in [
        "fontweight",
        "bbox",
        "rotation",
        "zorder",
        "alpha",
        "family",
    ] {
        a.take_kw(k);
    }
    finish_kw(&a, "Text", 3)?;
    ax.with(|axr| {
        axr.artists.push(Artist::Text(Text {
            x,
            y,
            text: body,
            color: color.unwrap_or(Rgba::BLACK),
            size: size.unwrap_or(10.0),
            ha,
            va,
            offset: (0.0, 0.0),
            arrow: None,
            in_axes,
        }))
    })?;
    Ok(h)
}

const LOCS: [&str; 11] = [
    "best",
    "upper right",
    "upper left",
    "lower left",
    "lower right",
    "right",
    "center left",
    "center right",
    "lower center",
    "upper center",
    "center",
];

fn ax_legend(it: &mut dyn Interpreter, ax: &Rc<AxesObj>, a: Args) -> Result<Value, Exc> {
    let legend = legend_args(a)?;
    let labelled = ax.with(|axr| axr.artists.iter().any(|art| art.label().is_some()))?;
    if legend.labels.is_none() && legend.artists.is_none() && !labelled {
        warn_no_labels(it)?;
    }
    ax.with(|axr| axr.legend = Some(legend))?;
    Ok(handle("matplotlib.legend.Legend"))
}

/// matplotlib's warning for `legend()` with nothing labelled.
pub(crate) fn warn_no_labels(it: &mut dyn Interpreter) -> Result<(), Exc> {
    crate::modules::python::stdlib::warnings::warn(
        it,
        "UserWarning",
        "No artists with labels found to put in legend.  Note that artists whose label start with an underscore are ignored when legend() is called with no argument.",
    )
}

/// `legend`'s arguments, as the Axes's and the Figure's legends take them.
pub(crate) fn legend_args(mut a: Args) -> Result<Legend, Exc> {
    // `legend(labels)`, `legend(handles, labels)` or `legend(handles=..., labels=...)`.
    let mut first = a.take(0, "labels")?;
    let mut handles = a.take_kw("handles");
    let second_is_labels = matches!(a.pos.get(1), Some(Value::List(_) | Value::Tuple(_)));
    if second_is_labels {
        handles = first.take();
        first = a.take(1, "labels")?;
    }
    let artists = match handles {
        None | Some(Value::None) => None,
        Some(h) => {
            let items: Vec<Value> = match &h {
                Value::List(l) => l.borrow().clone(),
                Value::Tuple(t) => t.to_vec(),
                other => vec![other.clone()],
            };
            let mut found = Vec::new();
            for item in &items {
                match item {
                    Value::Object(o) => match o.as_any().downcast_ref::<objects::Handle>() {
                        Some(objects::Handle {
                            artist: Some(i), ..
                        }) => found.push(*i),
                        _ => {
                            return Err(Exc::type_error(format!(
                                "legend() handles must be artists that plot() returned, not {}",
                                brief_repr(item)
                            )))
                        }
                    },
                    other => {
                        return Err(Exc::type_error(format!(
                            "legend() handles must be artists that plot() returned, not {}",
                            other.type_name()
                        )))
                    }
                }
            }
            Some(found)
        }
    };
    let loc_arg = if second_is_labels {
        a.take_kw("loc")
    } else {
        a.take(1, "loc")?
    };
    let loc = match &loc_arg {
        None | Some(Value::None) => 0u8,
        Some(Value::Int(n)) if (0..=10).contains(n) => *n as u8,
        Some(Value::Str(s)) => LOCS
            .iter()
            .position(|l| *l == s.as_ref())
            .map(|i| i as u8)
            .ok_or_else(|| {
                // `_api.check_getitem`'s words: the whole list, no suggestion.
                let all: Vec<String> = LOCS
                    .iter()
                    .map(|l| crate::object::format::str_repr(l))
                    .collect();
                Exc::value_error(format!(
                    "{} is not a valid value for loc; supported values are {}",
                    crate::object::format::str_repr(s),
                    all.join(", ")
                ))
            })?,
        Some(other) => {
            return Err(Exc::value_error(format!(
                "{} is not a valid value for loc",
                brief_repr(other)
            )))
        }
    };
    let fontsize = kw_font_size(&mut a)?.unwrap_or(plot::layout::FONT);
    for k in [
        "frameon",
        "ncol",
        "ncols",
        "title",
        "bbox_to_anchor",
        "framealpha",
        "shadow",
    ] {
        a.take_kw(k);
    }
    finish_kw(&a, "Legend", 2)?;
    let labels = match first {
        None | Some(Value::None) => None,
        Some(v) => Some(match &v {
            Value::List(l) => l.borrow().iter().map(text_of).collect(),
            Value::Tuple(t) => t.iter().map(text_of).collect(),
            Value::Str(s) => s.chars().map(|c| c.to_string()).collect(),
            other => {
                return Err(Exc::type_error(format!(
                    "legend() labels must be a list of str, not {}",
                    other.type_name()
                )))
            }
        }),
    };
    Ok(Legend {
        labels,
        loc,
        artists,
        fontsize,
    })
}

/// A pair of limits, either possibly left as it is.
type Limits = (Option<f64>, Option<f64>);

fn lim_pair(
    it: &mut dyn Interpreter,
    a: &mut Args,
    lo: &str,
    hi: &str,
) -> Result<Option<Limits>, Exc> {
    let first = a.take(0, lo)?;
    let second = a.take(1, hi)?;
    let num = |v: Option<Value>| -> Result<Option<f64>, Exc> {
        match v {
            None | Some(Value::None) => Ok(None),
            Some(v) => as_f64(&v).map(Some).ok_or_else(|| {
                Exc::type_error(format!("limits must be numbers, not {}", v.type_name()))
            }),
        }
    };
    let _ = it;
    match (first, second) {
        (None, None) => Ok(None),
        (Some(v @ (Value::List(_) | Value::Tuple(_))), None) => {
            let items: Vec<Value> = match &v {
                Value::List(l) => l.borrow().clone(),
                Value::Tuple(t) => t.as_ref().clone(),
                _ => Vec::new(),
            };
            match items.as_slice() {
                [x, y] => Ok(Some((num(Some(x.clone()))?, num(Some(y.clone()))?))),
                _ => Err(Exc::value_error("too many values to unpack (expected 2)")),
            }
        }
        (a, b) => Ok(Some((num(a)?, num(b)?))),
    }
}

fn set_lim(
    it: &mut dyn Interpreter,
    ax: &Rc<AxesObj>,
    mut a: Args,
    is_x: bool,
) -> Result<Value, Exc> {
    let (lo, hi) = if is_x {
        ("left", "right")
    } else {
        ("bottom", "top")
    };
    let pair = lim_pair(it, &mut a, lo, hi)?;
    let kw_lo = kw_f64(&mut a, &[if is_x { "xmin" } else { "ymin" }])?;
    let kw_hi = kw_f64(&mut a, &[if is_x { "xmax" } else { "ymax" }])?;
    a.take_kw("emit");
    a.take_kw("auto");
    a.finish(2)?;
    let (l, h) = pair.unwrap_or((None, None));
    let (l, h) = (l.or(kw_lo), h.or(kw_hi));
    if l.is_some_and(|v| !v.is_finite()) || h.is_some_and(|v| !v.is_finite()) {
        return Err(Exc::value_error("Axis limits cannot be NaN or Inf"));
    }
    let view = ax.with(|axr| {
        let spec = if is_x { &mut axr.x } else { &mut axr.y };
        if l.is_some() {
            spec.lim.0 = l;
        }
        if h.is_some() {
            spec.lim.1 = h;
        }
        plot::layout::view_limits(axr, is_x)
    })?;
    Ok(Value::tuple(vec![
        Value::Float(view.0),
        Value::Float(view.1),
    ]))
}

fn ax_set_xlim(it: &mut dyn Interpreter, ax: &Rc<AxesObj>, a: Args) -> Result<Value, Exc> {
    set_lim(it, ax, a, true)
}
fn ax_set_ylim(it: &mut dyn Interpreter, ax: &Rc<AxesObj>, a: Args) -> Result<Value, Exc> {
    set_lim(it, ax, a, false)
}

fn set_scale(ax: &Rc<AxesObj>, mut a: Args, is_x: bool) -> Result<Value, Exc> {
    let v = a.required(0, "value")?;
    for k in ["base", "nonpositive", "subs"] {
        a.take_kw(k);
    }
    a.finish(1)?;
    let s = text_of(&v);
    let scale = match s.as_str() {
        "linear" => Scale::Linear,
        "log" => Scale::Log,
        _ => {
            return Err(data::not_in_list(
                &s,
                "scale",
                &[
                    "asinh",
                    "function",
                    "functionlog",
                    "linear",
                    "log",
                    "logit",
                    "mercator",
                    "symlog",
                ],
            ))
        }
    };
    ax.with(|axr| {
        if is_x {
            axr.x.scale = scale
        } else {
            axr.y.scale = scale
        }
    })?;
    Ok(Value::None)
}

fn ax_set_xscale(_it: &mut dyn Interpreter, ax: &Rc<AxesObj>, a: Args) -> Result<Value, Exc> {
    set_scale(ax, a, true)
}
fn ax_set_yscale(_it: &mut dyn Interpreter, ax: &Rc<AxesObj>, a: Args) -> Result<Value, Exc> {
    set_scale(ax, a, false)
}

fn set_label(ax: &Rc<AxesObj>, mut a: Args, which: u8) -> Result<Value, Exc> {
    let v = a.required(0, "label")?;
    let size = kw_font_size(&mut a)?;
    for k in [
        "labelpad",
        "loc",
        "fontdict",
        "pad",
        "color",
        "fontweight",
        "y",
    ] {
        a.take_kw(k);
    }
    a.finish(2)?;
    let s = text_of(&v);
    let (x, y) = match which {
        0 => ("0.5", "0"),
        1 => ("0", "0.5"),
        _ => ("0.5", "1.0"),
    };
    let h = objects::text_handle(x, y, &s);
    ax.with(|axr| match which {
        0 => {
            axr.x.label = s;
            axr.x.label_size = size.unwrap_or(plot::layout::FONT);
        }
        1 => {
            axr.y.label = s;
            axr.y.label_size = size.unwrap_or(plot::layout::FONT);
        }
        _ => {
            axr.title = s;
            axr.title_size = size.unwrap_or(plot::layout::TITLE_FONT);
        }
    })?;
    Ok(h)
}

fn ax_set_xlabel(_it: &mut dyn Interpreter, ax: &Rc<AxesObj>, a: Args) -> Result<Value, Exc> {
    set_label(ax, a, 0)
}
pub(crate) fn ax_set_ylabel(
    _it: &mut dyn Interpreter,
    ax: &Rc<AxesObj>,
    a: Args,
) -> Result<Value, Exc> {
    set_label(ax, a, 1)
}
fn ax_set_title(_it: &mut dyn Interpreter, ax: &Rc<AxesObj>, a: Args) -> Result<Value, Exc> {
    set_label(ax, a, 2)
}

/// Sets what `set_xticks` / `xticks` were given; the new ticks' handles when ticks were given.
fn set_ticks(
    it: &mut dyn Interpreter,
    ax: &Rc<AxesObj>,
    mut a: Args,
    is_x: bool,
) -> Result<Option<Value>, Exc> {
    let ticks = a.take(0, "ticks")?;
    let labels = a.take(1, "labels")?;
    let size = kw_font_size(&mut a)?;
    let mut style = ax.with(|axr| if is_x { axr.x.clone() } else { axr.y.clone() })?;
    tick_style(&mut a, &mut style, "rotation")?;
    a.take_kw("minor");
    a.finish(2)?;
    let ticks = match ticks {
        None | Some(Value::None) => None,
        Some(v) => Some(vector(it, &v)?),
    };
    let labels = match labels {
        None | Some(Value::None) => None,
        Some(v) => Some(match &v {
            Value::List(l) => l.borrow().iter().map(text_of).collect::<Vec<_>>(),
            Value::Tuple(t) => t.iter().map(text_of).collect(),
            other => {
                return Err(Exc::type_error(format!(
                    "labels must be a list of str, not {}",
                    other.type_name()
                )))
            }
        }),
    };
    if let (Some(t), Some(l)) = (&ticks, &labels) {
        if t.len() != l.len() {
            return Err(Exc::value_error(format!(
                "The number of FixedLocator locations ({}), usually from a call to set_ticks, does not match the number of labels ({}).",
                t.len(),
                l.len()
            )));
        }
    }
    let given = ticks.as_ref().map(Vec::len);
    ax.with(|axr| {
        let spec = if is_x { &mut axr.x } else { &mut axr.y };
        if ticks.is_some() {
            spec.ticks = ticks;
        }
        // New ticks without labels keep the labels set before, as matplotlib's FixedFormatter
        // does; with neither, the call only styles them.
        if labels.is_some() {
            spec.ticklabels = labels;
        }
        spec.tick_rotation = style.tick_rotation;
        spec.tick_ha = style.tick_ha;
        if let Some(size) = size {
            spec.tick_size = size;
        }
    })?;
    Ok(given.map(|n| tick_handles(n, is_x)))
}

/// What `set_xticks` returns: one `XTick` (or `YTick`) per location.
fn tick_handles(n: usize, is_x: bool) -> Value {
    let class = if is_x {
        "matplotlib.axis.XTick"
    } else {
        "matplotlib.axis.YTick"
    };
    Value::list((0..n).map(|_| objects::handle(class)).collect())
}

/// An axis's major tick locations and labels now (see `layout::major_ticks`).
fn major_ticks(ax: &Rc<AxesObj>, is_x: bool) -> Result<(Vec<f64>, Vec<String>), Exc> {
    let fig = ax.fig.fig.borrow();
    let resolved = plot::layout::resolve_shared(&fig);
    match resolved.axes.get(ax.index) {
        Some(a) => Ok(plot::layout::major_ticks(a, fig.size, is_x)),
        None => Err(Exc::value_error(
            "The Axes has been removed from its figure (clf)",
        )),
    }
}

/// The tick labels as `Text` objects: `Text(x, 0, 'label')` on the x axis, `Text(0, y, ...)`
/// on the y axis, locations as Python writes them (integers when the program gave integers).
fn tick_label_texts(ax: &Rc<AxesObj>, is_x: bool) -> Result<Value, Exc> {
    let (locs, labels) = major_ticks(ax, is_x)?;
    let given = ax.with(|axr| {
        if is_x {
            axr.x.ticks.is_some()
        } else {
            axr.y.ticks.is_some()
        }
    })?;
    let texts = locs
        .iter()
        .zip(&labels)
        .map(|(&v, label)| {
            let loc = if given && v.fract() == 0.0 && v.abs() < 1e15 {
                format!("{}", v as i64)
            } else {
                crate::object::format::float_repr(v)
            };
            if is_x {
                objects::text_handle(&loc, "0", label)
            } else {
                objects::text_handle("0", &loc, label)
            }
        })
        .collect();
    Ok(Value::list(texts))
}

fn ax_set_xticks(it: &mut dyn Interpreter, ax: &Rc<AxesObj>, a: Args) -> Result<Value, Exc> {
    Ok(set_ticks(it, ax, a, true)?.unwrap_or_else(|| Value::list(Vec::new())))
}
fn ax_set_yticks(it: &mut dyn Interpreter, ax: &Rc<AxesObj>, a: Args) -> Result<Value, Exc> {
    Ok(set_ticks(it, ax, a, false)?.unwrap_or_else(|| Value::list(Vec::new())))
}

/// `plt.xticks(ticks=None, labels=None, **kwargs)`: sets what it is given, then returns
/// `(locs, labels)` as pyplot does: the locations (an array, or the new `XTick`s when ticks were
/// given) and the labels as `Text` objects.
fn plt_ticks(
    it: &mut dyn Interpreter,
    ax: &Rc<AxesObj>,
    a: Args,
    is_x: bool,
) -> Result<Value, Exc> {
    let set = set_ticks(it, ax, a, is_x)?;
    let locs = match set {
        Some(handles) => handles,
        None => {
            let (locs, _) = major_ticks(ax, is_x)?;
            numpy_value(it, locs)?
        }
    };
    Ok(Value::tuple(vec![locs, tick_label_texts(ax, is_x)?]))
}
fn plt_xticks(it: &mut dyn Interpreter, ax: &Rc<AxesObj>, a: Args) -> Result<Value, Exc> {
    plt_ticks(it, ax, a, true)
}
fn plt_yticks(it: &mut dyn Interpreter, ax: &Rc<AxesObj>, a: Args) -> Result<Value, Exc> {
    plt_ticks(it, ax, a, false)
}

fn ax_get_ticks(
    it: &mut dyn Interpreter,
    ax: &Rc<AxesObj>,
    a: Args,
    is_x: bool,
) -> Result<Value, Exc> {
    let mut a = a;
    a.take_kw("minor");
    a.finish(0)?;
    let (locs, _) = major_ticks(ax, is_x)?;
    numpy_value(it, locs)
}
fn ax_get_xticks(it: &mut dyn Interpreter, ax: &Rc<AxesObj>, a: Args) -> Result<Value, Exc> {
    ax_get_ticks(it, ax, a, true)
}
fn ax_get_yticks(it: &mut dyn Interpreter, ax: &Rc<AxesObj>, a: Args) -> Result<Value, Exc> {
    ax_get_ticks(it, ax, a, false)
}
fn ax_get_ticklabels(ax: &Rc<AxesObj>, mut a: Args, is_x: bool) -> Result<Value, Exc> {
    a.take_kw("minor");
    a.take_kw("which");
    a.finish(0)?;
    tick_label_texts(ax, is_x)
}
fn ax_get_xticklabels(_: &mut dyn Interpreter, ax: &Rc<AxesObj>, a: Args) -> Result<Value, Exc> {
    ax_get_ticklabels(ax, a, true)
}
fn ax_get_yticklabels(_: &mut dyn Interpreter, ax: &Rc<AxesObj>, a: Args) -> Result<Value, Exc> {
    ax_get_ticklabels(ax, a, false)
}

fn set_ticklabels(ax: &Rc<AxesObj>, mut a: Args, is_x: bool) -> Result<Value, Exc> {
    let v = a.required(0, "labels")?;
    let size = kw_font_size(&mut a)?;
    let mut style = ax.with(|axr| if is_x { axr.x.clone() } else { axr.y.clone() })?;
    tick_style(&mut a, &mut style, "rotation")?;
    a.finish(1)?;
    let labels: Vec<String> = match &v {
        Value::List(l) => l.borrow().iter().map(text_of).collect(),
        Value::Tuple(t) => t.iter().map(text_of).collect(),
        other => {
            return Err(Exc::type_error(format!(
                "labels must be a list of str, not {}",
                other.type_name()
            )))
        }
    };
    ax.with(|axr| {
        let spec = if is_x { &mut axr.x } else { &mut axr.y };
        spec.ticklabels = Some(labels);
        spec.tick_rotation = style.tick_rotation;
        spec.tick_ha = style.tick_ha;
        if let Some(size) = size {
            spec.tick_size = size;
        }
    })?;
    Ok(Value::list(Vec::new()))
}

fn ax_set_xticklabels(_it: &mut dyn Interpreter, ax: &Rc<AxesObj>, a: Args) -> Result<Value, Exc> {
    set_ticklabels(ax, a, true)
}
fn ax_set_yticklabels(_it: &mut dyn Interpreter, ax: &Rc<AxesObj>, a: Args) -> Result<Value, Exc> {
    set_ticklabels(ax, a, false)
}

fn ax_grid(_it: &mut dyn Interpreter, ax: &Rc<AxesObj>, mut a: Args) -> Result<Value, Exc> {
    let visible = a.take(0, "visible")?.or_else(|| a.take_kw("b"));
    for k in [
        "which",
        "axis",
        "color",
        "linestyle",
        "ls",
        "linewidth",
        "lw",
        "alpha",
    ] {
        a.take_kw(k);
    }
    a.finish(1)?;
    ax.with(|axr| {
        axr.grid_on = match &visible {
            None | Some(Value::None) => !axr.grid_on,
            Some(v) => v.truthy().unwrap_or(true),
        }
    })?;
    Ok(Value::None)
}

fn ax_cla(_it: &mut dyn Interpreter, ax: &Rc<AxesObj>, a: Args) -> Result<Value, Exc> {
    a.finish(0)?;
    ax.with(|axr| axr.clear())?;
    Ok(Value::None)
}

/// An axis's view limits, those of its share group when it has one.
fn shared_view(ax: &Rc<AxesObj>, is_x: bool) -> Result<(f64, f64), Exc> {
    let fig = ax.fig.fig.borrow();
    let resolved = plot::layout::resolve_shared(&fig);
    match resolved.axes.get(ax.index) {
        Some(a) => Ok(plot::layout::view_limits(a, is_x)),
        None => Err(Exc::value_error(
            "The Axes has been removed from its figure (clf)",
        )),
    }
}

fn ax_get_xlim(_it: &mut dyn Interpreter, ax: &Rc<AxesObj>, a: Args) -> Result<Value, Exc> {
    a.finish(0)?;
    let v = shared_view(ax, true)?;
    Ok(Value::tuple(vec![Value::Float(v.0), Value::Float(v.1)]))
}
fn ax_get_ylim(_it: &mut dyn Interpreter, ax: &Rc<AxesObj>, a: Args) -> Result<Value, Exc> {
    a.finish(0)?;
    let v = shared_view(ax, false)?;
    Ok(Value::tuple(vec![Value::Float(v.0), Value::Float(v.1)]))
}

fn ax_get_xaxis(_it: &mut dyn Interpreter, ax: &Rc<AxesObj>, a: Args) -> Result<Value, Exc> {
    a.finish(0)?;
    Ok(objects::axis_value(ax, true))
}
fn ax_get_yaxis(_it: &mut dyn Interpreter, ax: &Rc<AxesObj>, a: Args) -> Result<Value, Exc> {
    a.finish(0)?;
    Ok(objects::axis_value(ax, false))
}

fn ax_axis(_it: &mut dyn Interpreter, ax: &Rc<AxesObj>, mut a: Args) -> Result<Value, Exc> {
    let arg = a.take(0, "arg")?;
    a.finish(1)?;
    match &arg {
        Some(Value::Str(s)) => match s.as_ref() {
            "off" => ax.with(|axr| axr.axis_on = false)?,
            "on" => ax.with(|axr| axr.axis_on = true)?,
            "equal" | "scaled" | "image" | "square" => ax.with(|axr| axr.equal_aspect = true)?,
            "tight" | "auto" | "normal" => {}
            _ => {
                return Err(Exc::value_error(format!(
                    "Unrecognized string '{s}' to axis; try 'on' or 'off'"
                )))
            }
        },
        Some(Value::Bool(b)) => ax.with(|axr| axr.axis_on = *b)?,
        Some(v @ (Value::List(_) | Value::Tuple(_))) => {
            let items: Vec<f64> = match v {
                Value::List(l) => l.borrow().iter().filter_map(as_f64).collect(),
                Value::Tuple(t) => t.iter().filter_map(as_f64).collect(),
                _ => Vec::new(),
            };
            if items.len() != 4 {
                return Err(Exc::type_error("The first argument to axis() must be an iterable of the form [xmin, xmax, ymin, ymax]"));
            }
            ax.with(|axr| {
                axr.x.lim = (Some(items[0]), Some(items[1]));
                axr.y.lim = (Some(items[2]), Some(items[3]));
            })?;
        }
        _ => {}
    }
    let (x, y) = ax.with(|axr| {
        (
            plot::layout::view_limits(axr, true),
            plot::layout::view_limits(axr, false),
        )
    })?;
    Ok(Value::tuple(vec![
        Value::Float(x.0),
        Value::Float(x.1),
        Value::Float(y.0),
        Value::Float(y.1),
    ]))
}

fn ax_set_aspect(_it: &mut dyn Interpreter, ax: &Rc<AxesObj>, mut a: Args) -> Result<Value, Exc> {
    let v = a.required(0, "aspect")?;
    a.take_kw("adjustable");
    a.finish(1)?;
    let equal = match &v {
        Value::Str(s) => s.as_ref() == "equal",
        other => as_f64(other) == Some(1.0),
    };
    ax.with(|axr| axr.equal_aspect = equal)?;
    Ok(Value::None)
}

fn ax_invert_yaxis(_it: &mut dyn Interpreter, ax: &Rc<AxesObj>, a: Args) -> Result<Value, Exc> {
    a.finish(0)?;
    ax.with(|axr| axr.y.inverted = !axr.y.inverted)?;
    Ok(Value::None)
}

fn ax_tick_params(_it: &mut dyn Interpreter, ax: &Rc<AxesObj>, mut a: Args) -> Result<Value, Exc> {
    let which = match a.take(0, "axis")? {
        None => "both".to_string(),
        Some(v) => text_of(&v),
    };
    if !["x", "y", "both"].contains(&which.as_str()) {
        return Err(Exc::value_error(format!(
            "'{which}' is not a valid value for axis. Supported values are 'x', 'y', 'both'"
        )));
    }
    let size = match a.take_kw("labelsize") {
        None | Some(Value::None) => None,
        Some(v) => Some(font_size(&v)?),
    };
    let rotation = match a.take_kw("labelrotation") {
        None => None,
        Some(v) => Some(rotation_of(&v)?),
    };
    // Tick lengths, directions and colours keep matplotlib's defaults here.
    a.pos.clear();
    a.kw.clear();
    ax.with(|axr| {
        for (name, spec) in [("x", &mut axr.x), ("y", &mut axr.y)] {
            if which == name || which == "both" {
                if let Some(s) = size {
                    spec.tick_size = s;
                }
                if let Some(r) = rotation {
                    spec.tick_rotation = r;
                }
            }
        }
    })?;
    Ok(Value::None)
}

fn ax_set(it: &mut dyn Interpreter, ax: &Rc<AxesObj>, mut a: Args) -> Result<Value, Exc> {
    a.finish(0)?;
    for (k, v) in std::mem::take(&mut a.kw) {
        let f = match &*k {
            "xlabel" => ax_set_xlabel,
            "ylabel" => ax_set_ylabel,
            "title" => ax_set_title,
            "xlim" => ax_set_xlim,
            "ylim" => ax_set_ylim,
            "xscale" => ax_set_xscale,
            "yscale" => ax_set_yscale,
            "xticks" => ax_set_xticks,
            "yticks" => ax_set_yticks,
            other => {
                return Err(Exc::new(
                    ExcKind::AttributeError,
                    format!("Axes.set() got an unexpected keyword argument '{other}'"),
                ))
            }
        };
        f(it, ax, Args::new("set", vec![v]))?;
    }
    Ok(Value::None)
}

fn ax_semilogy(it: &mut dyn Interpreter, ax: &Rc<AxesObj>, a: Args) -> Result<Value, Exc> {
    ax.with(|axr| axr.y.scale = Scale::Log)?;
    ax_plot(it, ax, a)
}
fn ax_semilogx(it: &mut dyn Interpreter, ax: &Rc<AxesObj>, a: Args) -> Result<Value, Exc> {
    ax.with(|axr| axr.x.scale = Scale::Log)?;
    ax_plot(it, ax, a)
}
fn ax_loglog(it: &mut dyn Interpreter, ax: &Rc<AxesObj>, a: Args) -> Result<Value, Exc> {
    ax.with(|axr| {
        axr.x.scale = Scale::Log;
        axr.y.scale = Scale::Log;
    })?;
    ax_plot(it, ax, a)
}

fn ax_get_text(which: u8) -> AxFn {
    match which {
        0 => |_, ax, a| {
            a.finish(0)?;
            Ok(Value::str(&ax.with(|x| x.x.label.clone())?))
        },
        1 => |_, ax, a| {
            a.finish(0)?;
            Ok(Value::str(&ax.with(|x| x.y.label.clone())?))
        },
        _ => |_, ax, a| {
            a.finish(0)?;
            Ok(Value::str(&ax.with(|x| x.title.clone())?))
        },
    }
}

type AxFn = fn(&mut dyn Interpreter, &Rc<AxesObj>, Args) -> Result<Value, Exc>;

/// The Axes methods, by name.
pub(crate) const AXES_METHODS: &[(&str, AxFn)] = &[
    ("plot", ax_plot),
    ("scatter", ax_scatter),
    ("bar", ax_bar),
    ("barh", ax_barh),
    ("hist", ax_hist),
    ("imshow", ax_imshow),
    ("fill_between", ax_fill_between),
    ("axhline", ax_axhline),
    ("axvline", ax_axvline),
    ("text", ax_text),
    ("legend", ax_legend),
    ("set_xlabel", ax_set_xlabel),
    ("set_ylabel", ax_set_ylabel),
    ("set_title", ax_set_title),
    ("set_xlim", ax_set_xlim),
    ("set_ylim", ax_set_ylim),
    ("get_xlim", ax_get_xlim),
    ("get_ylim", ax_get_ylim),
    ("set_xscale", ax_set_xscale),
    ("set_yscale", ax_set_yscale),
    ("set_xticks", ax_set_xticks),
    ("set_yticks", ax_set_yticks),
    ("get_xticks", ax_get_xticks),
    ("get_yticks", ax_get_yticks),
    ("get_xticklabels", ax_get_xticklabels),
    ("get_yticklabels", ax_get_yticklabels),
    ("set_xticklabels", ax_set_xticklabels),
    ("set_yticklabels", ax_set_yticklabels),
    ("grid", ax_grid),
    ("cla", ax_cla),
    ("clear", ax_cla),
    ("get_xaxis", ax_get_xaxis),
    ("get_yaxis", ax_get_yaxis),
    ("axis", ax_axis),
    ("set_aspect", ax_set_aspect),
    ("invert_yaxis", ax_invert_yaxis),
    ("tick_params", ax_tick_params),
    ("set", ax_set),
    ("semilogy", ax_semilogy),
    ("semilogx", ax_semilogx),
    ("loglog", ax_loglog),
    ("get_xlabel", |it, ax, a| ax_get_text(0)(it, ax, a)),
    ("get_ylabel", |it, ax, a| ax_get_text(1)(it, ax, a)),
    ("get_title", |it, ax, a| ax_get_text(2)(it, ax, a)),
];

/// Names of Figure methods, as `&'static str` for the registration API.
pub(crate) const METHOD_NAMES: &[&str] = &[
    "add_subplot",
    "colorbar",
    "subplots",
    "gca",
    "savefig",
    "suptitle",
    "tight_layout",
    "set_size_inches",
    "get_size_inches",
    "clf",
    "clear",
    "show",
    "subplots_adjust",
];

/// Every Axes method: this file's and those composed of them (`composed.rs`).
pub(crate) fn all_axes_methods() -> impl Iterator<Item = &'static (&'static str, AxFn)> {
    AXES_METHODS
        .iter()
        .chain(composed::AXES_METHODS)
        .chain(axes_more::AXES_METHODS)
        .chain(charts::AXES_METHODS)
        .chain(contour::AXES_METHODS)
        .chain(mesh::AXES_METHODS)
}

/// The Axes method `name` as a method of the object it is looked up on: its name as the
/// registration API keeps it, and one function that finds the method by the name it was
/// called by (a `MethodFn` cannot capture which one it is).
pub(crate) fn axes_method(name: &str) -> Option<(&'static str, MethodFn)> {
    let (name, _) = all_axes_methods().find(|(n, _)| *n == name)?;
    Some((name, |it: &mut dyn Interpreter, r: &Value, a: Args| {
        let ax =
            as_axes(r).ok_or_else(|| Exc::type_error("an Axes method called on something else"))?;
        let f = all_axes_methods()
            .find(|(n, _)| *n == a.fname)
            .map(|(_, f)| *f)
            .ok_or_else(|| Exc::type_error(format!("Axes has no method {}", a.fname)))?;
        f(it, &ax, a)
    }))
}

// ------------------------------------------------------------------ pyplot functions

/// pyplot's function `name`: the Axes method on the current axes, with pyplot's names
/// (`xlabel` for `set_xlabel`, `xlim()` reading the limits when called bare).
fn pyplot_fns() -> Vec<(&'static str, &'static str, crate::object::value::BuiltinFn)> {
    macro_rules! on_gca {
        ($f:expr) => {
            |it: &mut dyn Interpreter, a: Args| -> Result<Value, Exc> {
                let ax = gca(it)?;
                $f(it, &ax, a)
            }
        };
    }
    vec![
        ("figure", "figure(num=None, figsize=None, dpi=None): a new figure (or figure num again).", figure),
        ("subplots", "subplots(nrows=1, ncols=1, figsize=None): (fig, axes); axes is one Axes or an array of them.", subplots),
        ("subplot", "subplot(nrows, ncols, index): an Axes of a grid on the current figure.", subplot),
        ("gcf", "gcf(): the current figure.", |it, a| { a.finish(0)?; Ok(fig_value(&gcf(it)?)) }),
        ("gca", "gca(): the current Axes.", |it, a| { a.finish(0)?; Ok(axes_value(&gca(it)?)) }),
        ("cla", "cla(): clear the current Axes.", on_gca!(ax_cla)),
        ("clf", "clf(): clear the current figure.", |it, a| { a.finish(0)?; gcf(it)?.clf(); Ok(Value::None) }),
        ("close", "close(fig=None): close the current figure, figure fig, or 'all'.", close),
        ("get_fignums", "get_fignums(): the numbers of the open figures.", get_fignums),
        ("plot", "plot([x], y, [fmt], ...): lines and/or markers; fmt like 'r--', 'g-.', 'o'.", on_gca!(ax_plot)),
        ("scatter", "scatter(x, y, s=None, c=None, marker=None, cmap=None): points.", on_gca!(ax_scatter)),
        ("bar", "bar(x, height, width=0.8, bottom=None): vertical bars.", on_gca!(ax_bar)),
        ("barh", "barh(y, width, height=0.8, left=None): horizontal bars.", on_gca!(ax_barh)),
        ("hist", "hist(x, bins=10, range=None, density=False): a histogram; returns (n, bins, patches).", on_gca!(ax_hist)),
        ("imshow", "imshow(X, cmap=None): an image (2-D with a colormap, or RGB/RGBA).", on_gca!(ax_imshow)),
        ("fill_between", "fill_between(x, y1, y2=0): the area between two curves.", on_gca!(ax_fill_between)),
        ("axhline", "axhline(y=0): a horizontal line across the Axes.", on_gca!(ax_axhline)),
        ("axvline", "axvline(x=0): a vertical line across the Axes.", on_gca!(ax_axvline)),
        ("text", "text(x, y, s): text at data coordinates.", on_gca!(ax_text)),
        ("legend", "legend(labels=None, loc='best'): the legend.", on_gca!(ax_legend)),
        ("xlabel", "xlabel(s): the x axis label.", on_gca!(ax_set_xlabel)),
        ("ylabel", "ylabel(s): the y axis label.", on_gca!(ax_set_ylabel)),
        ("title", "title(s): the Axes title.", on_gca!(ax_set_title)),
        ("suptitle", "suptitle(t): the figure's title.", |it, a| { let f = gcf(it)?; fig_suptitle(it, &f, a) }),
        ("xlim", "xlim(left, right) or xlim(): set or get the x limits.", |it, a| { let ax = gca(it)?; if a.pos.is_empty() && a.kw.is_empty() { ax_get_xlim(it, &ax, a) } else { ax_set_xlim(it, &ax, a) } }),
        ("ylim", "ylim(bottom, top) or ylim(): set or get the y limits.", |it, a| { let ax = gca(it)?; if a.pos.is_empty() && a.kw.is_empty() { ax_get_ylim(it, &ax, a) } else { ax_set_ylim(it, &ax, a) } }),
        ("xscale", "xscale('linear' | 'log').", on_gca!(ax_set_xscale)),
        ("yscale", "yscale('linear' | 'log').", on_gca!(ax_set_yscale)),
        ("xticks", "xticks(ticks=None, labels=None): set the x ticks; returns (locs, labels).", on_gca!(plt_xticks)),
        ("yticks", "yticks(ticks=None, labels=None): set the y ticks; returns (locs, labels).", on_gca!(plt_yticks)),
        ("grid", "grid(visible=None): toggle or set grid lines.", on_gca!(ax_grid)),
        ("colorbar", "colorbar(mappable=None, ax=None, label='', shrink=1.0, fraction=0.15, pad=0.05, aspect=20): a colorbar for an image.", |it, a| { let f = gcf(it)?; fig_colorbar(it, &f, a) }),
        ("tick_params", "tick_params(axis='both', labelsize=None, labelrotation=None): the tick labels' look.", on_gca!(ax_tick_params)),
        ("axis", "axis('off' | 'on' | 'equal' | [xmin, xmax, ymin, ymax]).", on_gca!(ax_axis)),
        ("semilogy", "semilogy(...): plot with a log y axis.", on_gca!(ax_semilogy)),
        ("semilogx", "semilogx(...): plot with a log x axis.", on_gca!(ax_semilogx)),
        ("loglog", "loglog(...): plot with log axes.", on_gca!(ax_loglog)),
        ("tight_layout", "tight_layout(): fit subplots and labels into the figure.", |it, _a| { let f = gcf(it)?; plot::layout::tight_layout(&mut f.fig.borrow_mut()); Ok(Value::None) }),
        ("subplots_adjust", "subplots_adjust(left, bottom, right, top, wspace, hspace).", |it, a| { let f = gcf(it)?; subplots_adjust(it, &f, a) }),
        ("savefig", "savefig(fname, dpi=None, format=None): write the current figure (png or svg).", |it, a| { let f = gcf(it)?; savefig(it, &f, a) }),
        ("show", "show(): show the open figures (notebook: images; terminal: text and an SVG file).", show),
        ("ion", "ion(): interactive mode (figures show at the end of each cell anyway).", |_, _| Ok(Value::None)),
        ("ioff", "ioff(): leave interactive mode.", |_, _| Ok(Value::None)),
        ("pause", "pause(interval): show the figures now.", |it, _| { let f = gcf(it)?; show_figure(it, &f); Ok(Value::None) }),
        ("draw", "draw(): redraw the current figure (figures are drawn when shown).", |_, _| Ok(Value::None)),
    ]
}

fn rc_params() -> Value {
    let mut d = Dict::default();
    let entries: Vec<(&str, Value)> = vec![
        (
            "figure.figsize",
            Value::list(vec![Value::Float(6.4), Value::Float(4.8)]),
        ),
        ("figure.dpi", Value::Float(100.0)),
        ("savefig.dpi", Value::str("figure")),
        ("font.size", Value::Float(10.0)),
        ("lines.linewidth", Value::Float(1.5)),
        ("lines.markersize", Value::Float(6.0)),
        ("axes.grid", Value::Bool(false)),
        ("figure.max_open_warning", Value::Int(20)),
    ];
    let entries = entries.into_iter().chain(figure_more::rc_defaults());
    for (k, v) in entries {
        d.insert(HashKey::Str(Rc::from(k)), Value::str(k), v);
    }
    Value::Dict(Rc::new(RefCell::new(d)))
}

pub fn build(dotted: &str) -> Option<Rc<Module>> {
    Some(match dotted {
        "matplotlib" => {
            let m = Rc::new(Module::new(
                "matplotlib",
                "matplotlib: figures and plots (pyplot)",
            ));
            m.set("__version__", Value::str("3.8.4"));
            m.set("rcParams", rc_params());
            m.set("colormaps", Value::Object(Rc::new(colormaps::Registry)));
            for (name, doc, f) in figure_more::pyplot_fns() {
                if matches!(name, "rc" | "rcdefaults") {
                    m.set(name, builtin(name, doc, f));
                }
            }
            m.set("use", builtin("use", "use(backend): 'Agg' (or another file backend) makes show() show nothing, as in a script; otherwise devarray shows figures inline in notebooks, as text in terminals.", composed::use_backend));
            m
        }
        "matplotlib.pyplot" => {
            let m = Rc::new(Module::new(
                "matplotlib.pyplot",
                "pyplot: figures, axes and plots as matplotlib draws them",
            ));
            for (name, doc, f) in pyplot_fns()
                .into_iter()
                .chain(composed::pyplot_fns())
                .chain(figure_more::pyplot_fns())
            {
                m.set(name, builtin(name, doc, f));
            }
            m
        }
        "matplotlib.colors" => composed::colors_module(),
        "matplotlib.ticker" => ticker::module(),
        "matplotlib.cm" => colormaps::cm_module(),
        "matplotlib.style" => figure_more::style_module(),
        "matplotlib_inline" => Rc::new(Module::new("matplotlib_inline", "the inline backend")),
        "matplotlib_inline.backend_inline" => {
            let m = Rc::new(Module::new(
                "matplotlib_inline.backend_inline",
                "how notebooks show figures",
            ));
            m.set(
                "set_matplotlib_formats",
                builtin(
                    "set_matplotlib_formats",
                    "set_matplotlib_formats(*formats): 'png' (the default) or 'svg' for figures in notebooks.",
                    set_formats,
                ),
            );
            m
        }
        _ => return None,
    })
}

/// Finishes `matplotlib.pyplot` after it is built: its state and the shared `rcParams`.
pub fn init_pyplot(it: &mut dyn Interpreter, m: &Rc<Module>) -> Result<(), Exc> {
    let mpl = it.import("matplotlib")?;
    // pyplot imports matplotlib.colors, so `matplotlib.colors` is there after it.
    it.import("matplotlib.colors")?;
    // pyplot's `cm` and `style`, and matplotlib's submodules as attributes.
    for (sub, short) in [
        ("matplotlib.ticker", "ticker"),
        ("matplotlib.cm", "cm"),
        ("matplotlib.style", "style"),
    ] {
        let sm = Value::Module(it.import(sub)?);
        mpl.set(short, sm.clone());
        if short != "ticker" {
            m.set(short, sm);
        }
    }
    let rc = mpl.get("rcParams").unwrap_or_else(rc_params);
    m.set("rcParams", rc.clone());
    let state = Pyplot {
        figs: RefCell::new(Vec::new()),
        current: RefCell::new(None),
        shared: Rc::new(Shared {
            format: Cell::new(Format::Png),
            rc: rc.clone(),
        }),
        rc,
    };
    m.set("_pylab_helpers", Value::Object(Rc::new(state)));
    Ok(())
}

/// `IPython.display.set_matplotlib_formats` and `matplotlib_inline`'s.
pub fn set_matplotlib_formats(it: &mut dyn Interpreter, a: Args) -> Result<Value, Exc> {
    set_formats(it, a)
}
