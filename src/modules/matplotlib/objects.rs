//! The objects programs hold: `Figure`, `Axes` (one per subplot, the same object every time
//! it is reached), the array of axes `subplots` returns (indexes, iterates and flattens like
//! matplotlib's object ndarray), an axis (`ax.get_xaxis()`), and the artist handles plotting
//! returns (`Line2D`, ...), which only print.

use std::cell::{Cell, RefCell};
use std::rc::{Rc, Weak};

use base64::Engine;

use crate::display::plot::{self, Axes, Figure};
use crate::object::value::{Args, NativeObject, Value};
use crate::object::{method, Exc};

/// How a notebook shows figures (`set_matplotlib_formats`).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Format {
    Png,
    Svg,
}

/// What every figure of a session shares.
pub struct Shared {
    pub format: Cell<Format>,
    /// `rcParams`, which new Axes read (`figure_more::apply_rc`).
    pub rc: Value,
}

pub struct FigObj {
    pub fig: RefCell<Figure>,
    pub current: Cell<Option<usize>>,
    pub shared: Rc<Shared>,
    /// Set by pyplot.close: a closed figure still draws when saved or displayed.
    pub closed: Cell<bool>,
    /// The one object programs see for this figure while they hold it. Handles point up to
    /// the figure and the figure only weakly down to them, so a closed figure nobody holds
    /// is freed, as matplotlib's are.
    value: RefCell<Weak<FigValue>>,
    /// One handle per axes of `fig.axes`, made again when none is held.
    handles: RefCell<Vec<Weak<AxesObj>>>,
    /// Function tick formatters (axes index, x axis?, function), run before each drawing.
    pub func_formatters: RefCell<Vec<(usize, bool, Value)>>,
}

pub struct AxesObj {
    pub fig: Rc<FigObj>,
    pub index: usize,
    /// The one object programs see for this axes, so `axes[0, 0] is plt.gca()`.
    value: RefCell<Weak<AxesValue>>,
}

impl AxesObj {
    pub fn with<R>(&self, f: impl FnOnce(&mut Axes) -> R) -> Result<R, Exc> {
        let mut fig = self.fig.fig.borrow_mut();
        match fig.axes.get_mut(self.index) {
            Some(ax) => Ok(f(ax)),
            None => Err(Exc::value_error(
                "The Axes has been removed from its figure (clf)",
            )),
        }
    }
}

impl FigObj {
    pub fn new(fig: Figure, shared: Rc<Shared>) -> Rc<FigObj> {
        Rc::new(FigObj {
            fig: RefCell::new(fig),
            current: Cell::new(None),
            shared,
            closed: Cell::new(false),
            value: RefCell::new(Weak::new()),
            handles: RefCell::new(Vec::new()),
            func_formatters: RefCell::new(Vec::new()),
        })
    }

    /// Adds an axes at `rect` and makes it current.
    pub fn add_axes(self: &Rc<Self>, mut ax: Axes) -> Rc<AxesObj> {
        super::figure_more::apply_rc(&mut ax, &self.shared.rc);
        let index = {
            let mut f = self.fig.borrow_mut();
            f.axes.push(ax);
            f.axes.len() - 1
        };
        self.current.set(Some(index));
        self.axes_at(index).unwrap_or_else(|| {
            Rc::new(AxesObj {
                fig: self.clone(),
                index,
                value: RefCell::new(Weak::new()),
            })
        })
    }

    /// The handle of axes `index` (the one a program holds, else a new one).
    pub fn axes_at(self: &Rc<Self>, index: usize) -> Option<Rc<AxesObj>> {
        if index >= self.fig.borrow().axes.len() {
            return None;
        }
        let mut handles = self.handles.borrow_mut();
        if handles.len() <= index {
            handles.resize(index + 1, Weak::new());
        }
        if let Some(a) = handles[index].upgrade() {
            return Some(a);
        }
        let a = Rc::new(AxesObj {
            fig: self.clone(),
            index,
            value: RefCell::new(Weak::new()),
        });
        handles[index] = Rc::downgrade(&a);
        Some(a)
    }

    /// Every axes' handle, in order.
    pub fn all_axes(self: &Rc<Self>) -> Vec<Rc<AxesObj>> {
        let shown: Vec<usize> = {
            let f = self.fig.borrow();
            (0..f.axes.len()).filter(|i| !f.axes[*i].removed).collect()
        };
        shown.into_iter().filter_map(|i| self.axes_at(i)).collect()
    }

    /// The current axes, made when there is none (`gca()`).
    pub fn gca(self: &Rc<Self>) -> Rc<AxesObj> {
        if let Some(i) = self.current.get() {
            if let Some(a) = self.axes_at(i) {
                return a;
            }
        }
        let mut ax = Axes::new(plot::grid_rect(1, 1, 0, 0, plot::DEFAULT_MARGINS, 0.2, 0.2));
        ax.grid = Some((1, 1, 0, 0));
        self.add_axes(ax)
    }

    pub fn clf(&self) {
        self.fig.borrow_mut().axes.clear();
        self.fig.borrow_mut().suptitle = None;
        self.fig.borrow_mut().legends.clear();
        self.handles.borrow_mut().clear();
        self.func_formatters.borrow_mut().clear();
        self.current.set(None);
    }

    pub fn repr(&self) -> String {
        let f = self.fig.borrow();
        let (w, h) = f.pixels();
        format!(
            "<Figure size {}x{} with {} Axes>",
            fmt_num(w),
            fmt_num(h),
            f.axes.iter().filter(|a| !a.removed).count()
        )
    }

    /// The figure as SVG; `tight` (a pad in inches) cuts the page to the content
    /// (`bbox_inches='tight'`).
    pub fn svg(&self, tight: Option<f64>) -> String {
        let opts = plot::svg::Options {
            tight,
            ..Default::default()
        };
        plot::svg::render(&self.fig.borrow(), opts)
    }

    /// The figure as PNG at `dpi` (the figure's when None).
    pub fn png(&self, dpi: Option<f64>, tight: Option<f64>) -> Result<Vec<u8>, Exc> {
        let f = self.fig.borrow();
        plot::raster::png(&f, dpi.unwrap_or(f.dpi), tight).map_err(Exc::value_error)
    }

    /// (mime type, data) for a notebook in the session's format.
    pub fn image(&self) -> Result<(String, String), Exc> {
        Ok(match self.shared.format.get() {
            // matplotlib-inline saves with bbox_inches='tight'.
            Format::Svg => ("image/svg+xml".into(), self.svg(Some(0.1))),
            Format::Png => (
                "image/png".into(),
                base64::engine::general_purpose::STANDARD.encode(self.png(None, Some(0.1))?),
            ),
        })
    }
}

/// matplotlib prints sizes with `%g`.
pub fn fmt_num(v: f64) -> String {
    if v == v.trunc() && v.abs() < 1e15 {
        format!("{}", v as i64)
    } else {
        format!("{v}")
    }
}

pub struct FigValue(pub Rc<FigObj>);
pub struct AxesValue(pub Rc<AxesObj>);

// The objects a program holds keep their figure; pyplot's list keeps open figures.
pub fn fig_value(f: &Rc<FigObj>) -> Value {
    let mut slot = f.value.borrow_mut();
    let v = slot.upgrade().unwrap_or_else(|| {
        let v = Rc::new(FigValue(f.clone()));
        *slot = Rc::downgrade(&v);
        v
    });
    Value::Object(v)
}

pub fn axes_value(a: &Rc<AxesObj>) -> Value {
    let mut slot = a.value.borrow_mut();
    let v = slot.upgrade().unwrap_or_else(|| {
        let v = Rc::new(AxesValue(a.clone()));
        *slot = Rc::downgrade(&v);
        v
    });
    Value::Object(v)
}

pub fn as_fig(v: &Value) -> Option<Rc<FigObj>> {
    match v {
        Value::Object(o) => o.as_any().downcast_ref::<FigValue>().map(|f| f.0.clone()),
        _ => None,
    }
}

pub fn as_axes(v: &Value) -> Option<Rc<AxesObj>> {
    match v {
        Value::Object(o) => o.as_any().downcast_ref::<AxesValue>().map(|a| a.0.clone()),
        _ => None,
    }
}

fn fig_of(r: &Value) -> Result<Rc<FigObj>, Exc> {
    as_fig(r).ok_or_else(|| Exc::type_error("a Figure method called on something else"))
}

impl NativeObject for FigValue {
    fn type_name(&self) -> &str {
        "Figure"
    }
    fn repr(&self) -> String {
        self.0.repr()
    }
    fn class_value(&self) -> Option<Value> {
        Some(class_of("Figure", "matplotlib.figure"))
    }
    fn get_attr(&self, this: &Rc<dyn NativeObject>, name: &str) -> Option<Value> {
        let r = Value::Object(this.clone());
        let f = &self.0;
        Some(match name {
            "number" => Value::Int(f.fig.borrow().number),
            "dpi" => Value::Float(f.fig.borrow().dpi),
            "axes" => Value::list(f.all_axes().iter().map(axes_value).collect()),
            "figure" => r,
            // The notebook's image of the figure (what matplotlib-inline's formatter makes).
            "_repr_image_" => match f.image() {
                Ok((mime, data)) => Value::tuple(vec![Value::str(&mime), Value::str(&data)]),
                Err(_) => return None,
            },
            _ => {
                let (doc, m): (&'static str, crate::object::value::MethodFn) = match name {
                    "add_subplot" => ("add_subplot(nrows=1, ncols=1, index=1): a new Axes in the grid.", |it, r, a| super::fig_add_subplot(it, &fig_of(r)?, a)),
                    "subplots" => ("subplots(nrows=1, ncols=1, sharex=False, sharey=False): a grid of Axes.", |it, r, a| super::fig_subplots(it, &fig_of(r)?, a)),
                    "gca" => ("gca(): the current Axes.", |_, r, _| Ok(axes_value(&fig_of(r)?.gca()))),
                    "savefig" => ("savefig(fname, dpi=None, format=None): write the figure to a file.", |it, r, a| super::savefig(it, &fig_of(r)?, a)),
                    "suptitle" => ("suptitle(t, fontsize=None): a title over all subplots.", |it, r, a| super::fig_suptitle(it, &fig_of(r)?, a)),
                    "colorbar" => ("colorbar(mappable, ax=None, label='', shrink=1.0, fraction=0.15, pad=0.05, aspect=20): a colorbar for an image.", |it, r, a| super::fig_colorbar(it, &fig_of(r)?, a)),
                    "tight_layout" => ("tight_layout(): fit subplots and their labels into the figure.", |_, r, _| { plot::layout::tight_layout(&mut fig_of(r)?.fig.borrow_mut()); Ok(Value::None) }),
                    "set_size_inches" => ("set_size_inches(w, h): the figure's size in inches.", |it, r, a| super::fig_set_size(it, &fig_of(r)?, a)),
                    "get_size_inches" => ("get_size_inches(): (w, h) in inches.", |_, r, _| { let s = fig_of(r)?.fig.borrow().size; Ok(Value::tuple(vec![Value::Float(s.0), Value::Float(s.1)])) }),
                    "clf" | "clear" => ("clf(): remove all Axes.", |_, r, _| { fig_of(r)?.clf(); Ok(Value::None) }),
                    "show" => ("show(): draw the figure.", |it, r, _| { super::show_figure(it, &fig_of(r)?); Ok(Value::None) }),
                    "subplots_adjust" => ("subplots_adjust(left, bottom, right, top, wspace, hspace): the grid's margins.", |it, r, a| super::subplots_adjust(it, &fig_of(r)?, a)),
                    _ => {
                        if let Some(v) = super::figure_more::figure_attr(f, name) {
                            return Some(v);
                        }
                        let (name, doc, m) = super::composed::figure_method(name)
                            .or_else(|| super::figure_more::figure_method(name))?;
                        return Some(method(&r, name, doc, m));
                    }
                };
                method(&r, leak(name), doc, m)
            }
        })
    }
    fn attr_names(&self) -> Vec<&'static str> {
        vec![
            "add_subplot",
            "axes",
            "clf",
            "colorbar",
            "dpi",
            "gca",
            "get_size_inches",
            "number",
            "savefig",
            "set_size_inches",
            "show",
            "subplots",
            "subplots_adjust",
            "suptitle",
            "tight_layout",
        ]
        .into_iter()
        .chain(super::composed::FIGURE_METHODS.iter().map(|(n, _, _)| *n))
        .chain(
            super::figure_more::FIGURE_METHODS
                .iter()
                .map(|(n, _, _)| *n),
        )
        .chain(["canvas"])
        .collect()
    }
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

/// Method names are few and fixed: the registration API wants a `&'static str`.
fn leak(name: &str) -> &'static str {
    super::METHOD_NAMES
        .iter()
        .find(|n| **n == name)
        .copied()
        .unwrap_or("method")
}

impl NativeObject for AxesValue {
    fn type_name(&self) -> &str {
        "Axes"
    }
    fn repr(&self) -> String {
        let a = &self.0;
        let mut parts = Vec::new();
        let _ = a.with(|ax| {
            if !ax.title.is_empty() {
                parts.push(format!(
                    "title={{'center': {}}}",
                    crate::object::format::str_repr(&ax.title)
                ));
            }
            if !ax.x.label.is_empty() {
                parts.push(format!(
                    "xlabel={}",
                    crate::object::format::str_repr(&ax.x.label)
                ));
            }
            if !ax.y.label.is_empty() {
                parts.push(format!(
                    "ylabel={}",
                    crate::object::format::str_repr(&ax.y.label)
                ));
            }
        });
        format!("<Axes: {}>", parts.join(", "))
    }
    fn class_value(&self) -> Option<Value> {
        Some(class_of("Axes", "matplotlib.axes._axes"))
    }
    fn get_attr(&self, this: &Rc<dyn NativeObject>, name: &str) -> Option<Value> {
        let r = Value::Object(this.clone());
        match name {
            "figure" => return Some(fig_value(&self.0.fig)),
            "axes" => return Some(r),
            "xaxis" => return Some(axis_value(&self.0, true)),
            "yaxis" => return Some(axis_value(&self.0, false)),
            _ => {}
        }
        if let Some(v) = super::axes_more::axes_attr(&self.0, name) {
            return Some(v);
        }
        let (name, f) = super::axes_method(name)?;
        Some(method(&r, name, "", f))
    }
    fn attr_names(&self) -> Vec<&'static str> {
        super::all_axes_methods().map(|(n, _)| *n).collect()
    }
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

/// `ax.xaxis` / `ax.get_xaxis()`.
pub struct AxisValue {
    pub axes: Rc<AxesObj>,
    pub is_x: bool,
}

pub fn axis_value(a: &Rc<AxesObj>, is_x: bool) -> Value {
    Value::Object(Rc::new(AxisValue {
        axes: a.clone(),
        is_x,
    }))
}

impl NativeObject for AxisValue {
    fn type_name(&self) -> &str {
        if self.is_x {
            "XAxis"
        } else {
            "YAxis"
        }
    }
    fn repr(&self) -> String {
        format!("<matplotlib.axis.{} object>", self.type_name())
    }
    fn get_attr(&self, this: &Rc<dyn NativeObject>, name: &str) -> Option<Value> {
        let r = Value::Object(this.clone());
        match name {
            "set_visible" => Some(method(
                &r,
                "set_visible",
                "set_visible(b): show or hide the axis's ticks and labels.",
                |_, r, mut a| {
                    let b = a.required(0, "b")?.truthy()?;
                    a.finish(1)?;
                    if let Value::Object(o) = r {
                        if let Some(ax) = o.as_any().downcast_ref::<AxisValue>() {
                            let is_x = ax.is_x;
                            ax.axes.with(|x| {
                                if is_x {
                                    x.x.visible = b
                                } else {
                                    x.y.visible = b
                                }
                            })?;
                        }
                    }
                    Ok(Value::None)
                },
            )),
            _ => {
                let (name, f) = super::ticker::axis_method(name)?;
                Some(method(&r, name, "", f))
            }
        }
    }
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

/// What `plot`, `scatter`, `bar`, `imshow` return: a handle that prints as matplotlib's.
pub struct Handle {
    pub class: &'static str,
    /// matplotlib's own repr where it has one (`Text(0.5, 1.0, 'T')`).
    pub repr: Option<String>,
    /// The artist it stands for (its index in its axes), for `legend(handles, labels)`.
    pub artist: Option<usize>,
    /// An image's axes and norm, for `colorbar(im)`.
    pub image: Option<(Rc<AxesObj>, plot::Norm)>,
    /// A `Text`'s string, for `get_text()`.
    pub text: Option<String>,
}

impl NativeObject for Handle {
    fn type_name(&self) -> &str {
        self.class.rsplit('.').next().unwrap_or(self.class)
    }
    fn get_attr(&self, this: &Rc<dyn NativeObject>, name: &str) -> Option<Value> {
        match (name, &self.text) {
            ("get_text", Some(_)) => Some(method(
                &Value::Object(this.clone()),
                "get_text",
                "get_text(): the string.",
                |_, r, a| {
                    a.finish(0)?;
                    Ok(match r {
                        Value::Object(o) => o
                            .as_any()
                            .downcast_ref::<Handle>()
                            .and_then(|h| h.text.clone())
                            .map_or(Value::None, |t| Value::str(&t)),
                        _ => Value::None,
                    })
                },
            )),
            _ => None,
        }
    }
    fn repr(&self) -> String {
        match &self.repr {
            Some(r) => r.clone(),
            None => format!(
                "<{} object at {:#x}>",
                self.class, self as *const Handle as usize
            ),
        }
    }
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

pub fn handle(class: &'static str) -> Value {
    Value::Object(Rc::new(Handle {
        text: None,
        class,
        repr: None,
        artist: None,
        image: None,
    }))
}

/// What `bar` and `hist` return: `<BarContainer object of 3 artists>`.
pub fn bar_container(count: usize) -> Value {
    Value::Object(Rc::new(Handle {
        text: None,
        class: "matplotlib.container.BarContainer",
        repr: Some(format!("<BarContainer object of {count} artists>")),
        artist: None,
        image: None,
    }))
}

/// The handle of the line at `index` in its axes (what `plot` returns).
pub fn line_handle(index: usize) -> Value {
    Value::Object(Rc::new(Handle {
        text: None,
        class: "matplotlib.lines.Line2D",
        repr: None,
        artist: Some(index),
        image: None,
    }))
}

/// A `Text` handle: `Text(x, y, 'text')` with x and y as the program gave them.
pub fn text_handle(x: &str, y: &str, text: &str) -> Value {
    Value::Object(Rc::new(Handle {
        text: Some(text.to_string()),
        class: "matplotlib.text.Text",
        artist: None,
        image: None,
        repr: Some(format!(
            "Text({x}, {y}, {})",
            crate::object::format::str_repr(text)
        )),
    }))
}

/// What `colorbar()` returns: its axes and the norm it shows.
pub struct ColorbarValue {
    pub ax: Rc<AxesObj>,
    pub norm: plot::Norm,
}

impl NativeObject for ColorbarValue {
    fn type_name(&self) -> &str {
        "Colorbar"
    }
    fn repr(&self) -> String {
        format!(
            "<matplotlib.colorbar.Colorbar object at {:#x}>",
            self as *const ColorbarValue as usize
        )
    }
    fn class_value(&self) -> Option<Value> {
        Some(class_of("Colorbar", "matplotlib.colorbar"))
    }
    fn get_attr(&self, this: &Rc<dyn NativeObject>, name: &str) -> Option<Value> {
        let r = Value::Object(this.clone());
        Some(match name {
            "ax" => axes_value(&self.ax),
            "vmin" => Value::Float(self.norm.lo),
            "vmax" => Value::Float(self.norm.hi),
            "cmap" => Value::str(&self.norm.cmap),
            "set_label" => method(
                &r,
                "set_label",
                "set_label(label, fontsize=None): the label along the colorbar.",
                |it, r, a| match r {
                    Value::Object(o) => match o.as_any().downcast_ref::<ColorbarValue>() {
                        Some(c) => super::ax_set_ylabel(it, &c.ax, a),
                        None => Err(Exc::type_error("set_label called on something else")),
                    },
                    _ => Err(Exc::type_error("set_label called on something else")),
                },
            ),
            _ => return None,
        })
    }
    fn attr_names(&self) -> Vec<&'static str> {
        vec!["ax", "cmap", "set_label", "vmax", "vmin"]
    }
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

/// The classes `type(fig)` and `type(ax)` name.
fn class_of(name: &str, module: &str) -> Value {
    thread_local! {
        static CLASSES: RefCell<Vec<(String, Value)>> = const { RefCell::new(Vec::new()) };
    }
    CLASSES.with(|c| {
        if let Some((_, v)) = c.borrow().iter().find(|(n, _)| n == name) {
            return v.clone();
        }
        let cls = Value::Class(crate::modules::python::stdlib::native_class(
            name,
            module,
            Value::Type(crate::object::value::TypeKind::Object),
            "",
            &[],
        ));
        c.borrow_mut().push((name.to_string(), cls.clone()));
        cls
    })
}

/// `subplots`' array of axes: shape (rows, cols), or one dimension when squeezed.
pub struct AxesArray {
    pub items: Vec<Rc<AxesObj>>,
    pub shape: Vec<usize>,
}

impl AxesArray {
    fn rows(&self) -> Vec<Value> {
        if self.shape.len() < 2 {
            return self.items.iter().map(axes_value).collect();
        }
        let cols = self.shape[1];
        self.items
            .chunks(cols.max(1))
            .map(|row| {
                Value::Object(Rc::new(AxesArray {
                    items: row.to_vec(),
                    shape: vec![row.len()],
                }))
            })
            .collect()
    }

    fn index(&self, i: i64, dim: usize) -> Result<usize, Exc> {
        let n = self.shape.get(dim).copied().unwrap_or(0) as i64;
        let j = if i < 0 { i + n } else { i };
        if j < 0 || j >= n {
            return Err(Exc::new(
                crate::object::ExcKind::IndexError,
                format!("index {i} is out of bounds for axis {dim} with size {n}"),
            ));
        }
        Ok(j as usize)
    }

    pub fn get(&self, key: &Value) -> Result<Value, Exc> {
        match key {
            Value::Int(i) => {
                let j = self.index(*i, 0)?;
                Ok(self.rows().swap_remove(j))
            }
            Value::Tuple(t) if t.len() == 2 && self.shape.len() == 2 => {
                match (&t[0], &t[1]) {
                    (Value::Int(r), Value::Int(c)) => {
                        let (r, c) = (self.index(*r, 0)?, self.index(*c, 1)?);
                        Ok(axes_value(&self.items[r * self.shape[1] + c]))
                    }
                    _ => Err(Exc::new(
                        crate::object::ExcKind::IndexError,
                        "only integers can index an array of Axes here",
                    )),
                }
            }
            Value::Tuple(t) => Err(Exc::new(
                crate::object::ExcKind::IndexError,
                format!(
                    "too many indices for array: array is {}-dimensional, but {} were indexed",
                    self.shape.len(),
                    t.len()
                ),
            )),
            _ => Err(Exc::new(
                crate::object::ExcKind::IndexError,
                "only integers, slices (`:`), ellipsis (`...`), numpy.newaxis (`None`) and integer or boolean arrays are valid indices",
            )),
        }
    }
}

impl NativeObject for AxesArray {
    fn type_name(&self) -> &str {
        "ndarray"
    }
    fn class_value(&self) -> Option<Value> {
        Some(class_of("ndarray", "numpy"))
    }
    fn repr(&self) -> String {
        // NumPy's repr of an object array of Axes.
        let items: Vec<String> = self
            .items
            .iter()
            .map(|a| AxesValue(a.clone()).repr())
            .collect();
        if self.shape.len() < 2 {
            return format!("array([{}], dtype=object)", items.join(", "));
        }
        let cols = self.shape[1].max(1);
        let rows: Vec<String> = items
            .chunks(cols)
            .map(|r| format!("[{}]", r.join(", ")))
            .collect();
        format!("array([{}], dtype=object)", rows.join(",\n       "))
    }
    fn get_attr(&self, this: &Rc<dyn NativeObject>, name: &str) -> Option<Value> {
        let r = Value::Object(this.clone());
        Some(match name {
            "shape" => Value::tuple(self.shape.iter().map(|d| Value::Int(*d as i64)).collect()),
            "size" => Value::Int(self.items.len() as i64),
            "__getitem__" => method(&r, "__getitem__", "", |_, r, mut a| {
                let k = a.required(0, "key")?;
                array_of(r)?.get(&k)
            }),
            "__iter__" => method(&r, "__iter__", "", |_, r, _| {
                Ok(Value::list(array_of(r)?.iter_items()))
            }),
            "__len__" => method(&r, "__len__", "", |_, r, _| {
                Ok(Value::Int(array_of(r)?.shape[0] as i64))
            }),
            "ndim" => Value::Int(self.shape.len() as i64),
            "flatten" | "ravel" | "flat" => {
                let flat = Value::Object(Rc::new(AxesArray {
                    items: self.items.clone(),
                    shape: vec![self.items.len()],
                }));
                if name == "flat" {
                    return Some(flat);
                }
                method(
                    &r,
                    if name == "flatten" {
                        "flatten"
                    } else {
                        "ravel"
                    },
                    "The axes in one dimension.",
                    |_, r, a| {
                        a.finish(0)?;
                        match r {
                            Value::Object(o) => match o.as_any().downcast_ref::<AxesArray>() {
                                Some(arr) => Ok(Value::Object(Rc::new(AxesArray {
                                    items: arr.items.clone(),
                                    shape: vec![arr.items.len()],
                                }))),
                                None => Ok(Value::None),
                            },
                            _ => Ok(Value::None),
                        }
                    },
                )
            }
            "tolist" => method(
                &r,
                "tolist",
                "The axes as (nested) lists.",
                |_, r, _| match r {
                    Value::Object(o) => match o.as_any().downcast_ref::<AxesArray>() {
                        Some(arr) => Ok(Value::list(arr.rows_as_lists())),
                        None => Ok(Value::None),
                    },
                    _ => Ok(Value::None),
                },
            ),
            _ => return None,
        })
    }
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

impl AxesArray {
    fn rows_as_lists(&self) -> Vec<Value> {
        if self.shape.len() < 2 {
            return self.items.iter().map(axes_value).collect();
        }
        self.items
            .chunks(self.shape[1].max(1))
            .map(|row| Value::list(row.iter().map(axes_value).collect()))
            .collect()
    }

    /// The items `for ax in axes` gives: Axes, or rows of a 2-D array.
    pub fn iter_items(&self) -> Vec<Value> {
        self.rows()
    }
}

/// Arguments pyplot passes on unchanged.
pub fn args_rest(a: &mut Args, from: usize) -> Args {
    Args {
        pos: a.pos.split_off(from.min(a.pos.len())),
        kw: std::mem::take(&mut a.kw),
        fname: a.fname,
    }
}

fn array_of(r: &Value) -> Result<&AxesArray, Exc> {
    match r {
        Value::Object(o) => o
            .as_any()
            .downcast_ref::<AxesArray>()
            .ok_or_else(|| Exc::type_error("not an array of Axes")),
        _ => Err(Exc::type_error("not an array of Axes")),
    }
}
