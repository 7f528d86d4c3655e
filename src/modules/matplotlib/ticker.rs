//! `matplotlib.ticker`: locators and formatters as objects programs make and hand to
//! `ax.xaxis.set_major_locator` / `set_major_formatter` (and the minor ones), which set the
//! axis's `display::plot::tickers` data so the ticks drawn change. A `FuncFormatter` (or a
//! plain function) is run on each tick before the figure is drawn (`resolve_functions`).

use std::rc::Rc;

use crate::display::plot::tickers::{Formatter, Locator};
use crate::display::plot::{layout, AxisSpec};
use crate::object::ops::{as_f64, as_i64};
use crate::object::value::{Args, Module, NativeObject, Value};
use crate::object::{builtin, method, Exc, Interpreter};

use super::data::{text_of, vector};
use super::objects::{AxesObj, FigObj};

/// A locator or formatter object.
pub enum Ticker {
    Locator(Locator),
    Formatter(Formatter),
    /// `FuncFormatter(func)`: `func(x, pos)` gives each label.
    Func(Value),
}

pub struct TickerValue {
    class: &'static str,
    ticker: Ticker,
}

fn ticker_value(class: &'static str, ticker: Ticker) -> Value {
    Value::Object(Rc::new(TickerValue { class, ticker }))
}

fn ticker_of(v: &Value) -> Option<&TickerValue> {
    match v {
        Value::Object(o) => o.as_any().downcast_ref::<TickerValue>(),
        _ => None,
    }
}

impl NativeObject for TickerValue {
    fn type_name(&self) -> &str {
        self.class
    }
    fn repr(&self) -> String {
        format!(
            "<matplotlib.ticker.{} object at {:#x}>",
            self.class, self as *const TickerValue as usize
        )
    }
    fn get_attr(&self, this: &Rc<dyn NativeObject>, name: &str) -> Option<Value> {
        let r = Value::Object(this.clone());
        match (name, &self.ticker) {
            ("tick_values", Ticker::Locator(_)) => Some(method(
                &r,
                "tick_values",
                "tick_values(vmin, vmax): the tick locations for that view.",
                |it, r, mut a| {
                    let lo = number(&a.required(0, "vmin")?)?;
                    let hi = number(&a.required(1, "vmax")?)?;
                    a.finish(2)?;
                    let Some(Ticker::Locator(l)) = ticker_of(r).map(|t| &t.ticker) else {
                        return Err(Exc::type_error("tick_values called on something else"));
                    };
                    let (lo, hi) = (lo.min(hi), lo.max(hi));
                    if matches!(l, Locator::MaxN { nbins: Some(n), .. } if *n == 0.0) {
                        return Err(Exc::new(
                            crate::object::ExcKind::ZeroDivisionError,
                            "float division by zero",
                        ));
                    }
                    // NullLocator gives a plain empty list.
                    if *l == Locator::Null {
                        return Ok(Value::list(Vec::new()));
                    }
                    super::numpy_value(it, l.values(lo, hi, 9))
                },
            )),
            ("__call__", Ticker::Formatter(_) | Ticker::Func(_)) => Some(method(
                &r,
                "__call__",
                "formatter(x, pos=None): the label of the tick at x.",
                |it, r, mut a| {
                    let x = a.required(0, "x")?;
                    let pos = a.take(1, "pos")?.unwrap_or(Value::None);
                    a.finish(2)?;
                    match ticker_of(r).map(|t| &t.ticker) {
                        Some(Ticker::Func(f)) => {
                            let f = f.clone();
                            it.call_value(&f, Args::new("func", vec![x, pos]))
                        }
                        Some(Ticker::Formatter(f)) => {
                            let x = number(&x)?;
                            let i = as_i64(&pos).unwrap_or(0).max(0) as usize;
                            let (labels, _) = f.labels(&[x], x, x);
                            let one = match f {
                                // FixedFormatter reads the label at pos.
                                Formatter::Fixed(seq) => seq.get(i).cloned().unwrap_or_default(),
                                _ => labels.into_iter().next().unwrap_or_default(),
                            };
                            Ok(Value::str(&one))
                        }
                        _ => Err(Exc::type_error("a formatter called on something else")),
                    }
                },
            )),
            _ => None,
        }
    }
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

fn number(v: &Value) -> Result<f64, Exc> {
    as_f64(v).ok_or_else(|| Exc::type_error(format!("must be real number, not {}", v.type_name())))
}

fn opt_number(v: Option<Value>) -> Result<Option<f64>, Exc> {
    match v {
        None | Some(Value::None) => Ok(None),
        Some(v) => number(&v).map(Some),
    }
}

/// `matplotlib.ticker`.
pub(crate) fn module() -> Rc<Module> {
    let m = Rc::new(Module::new(
        "matplotlib.ticker",
        "tick locating and formatting",
    ));
    let classes: &[(&str, &str, crate::object::value::BuiltinFn)] = &[
        ("MaxNLocator", "MaxNLocator(nbins=10, steps=None, integer=False): at most nbins intervals at nice values.", |it, mut a| {
            let nbins = match a.take(0, "nbins")? {
                None => Some(10.0),
                Some(v) if matches!(&v, Value::Str(s) if &**s == "auto") => None,
                Some(v) => opt_number(Some(v))?,
            };
            let integer = a.take_kw("integer").map(|v| v.truthy()).transpose()?.unwrap_or(false);
            let steps = match a.take_kw("steps").filter(|v| !matches!(v, Value::None)) {
                Some(v) => vector(it, &v)?,
                None => crate::display::plot::ticks::MAXN_STEPS.to_vec(),
            };
            if steps.is_empty() || steps.iter().any(|s| !(1.0..=10.0).contains(s)) {
                return Err(Exc::value_error("steps argument must be an increasing sequence of numbers between 1 and 10 inclusive"));
            }
            for k in ["symmetric", "prune", "min_n_ticks"] {
                a.take_kw(k);
            }
            a.finish(1)?;
            Ok(ticker_value("MaxNLocator", Ticker::Locator(Locator::MaxN { nbins, steps, integer })))
        }),
        ("AutoLocator", "AutoLocator(): the default locator (MaxNLocator with nbins='auto').", |_, a| {
            a.finish(0)?;
            Ok(ticker_value("AutoLocator", Ticker::Locator(Locator::MaxN { nbins: None, steps: crate::display::plot::ticks::AUTO_STEPS.to_vec(), integer: false })))
        }),
        ("MultipleLocator", "MultipleLocator(base=1.0, offset=0.0): a tick at every multiple of base.", |_, mut a| {
            let base = opt_number(a.take(0, "base")?)?.unwrap_or(1.0);
            let offset = opt_number(a.take(1, "offset")?)?.unwrap_or(0.0);
            a.finish(2)?;
            if base <= 0.0 {
                return Err(Exc::value_error("'step' must be positive"));
            }
            Ok(ticker_value("MultipleLocator", Ticker::Locator(Locator::Multiple { base, offset })))
        }),
        ("FixedLocator", "FixedLocator(locs): ticks at exactly these values.", |it, mut a| {
            let locs = vector(it, &a.required(0, "locs")?)?;
            a.take(1, "nbins")?;
            a.finish(2)?;
            Ok(ticker_value("FixedLocator", Ticker::Locator(Locator::Fixed(locs))))
        }),
        ("NullLocator", "NullLocator(): no ticks.", |_, a| {
            a.finish(0)?;
            Ok(ticker_value("NullLocator", Ticker::Locator(Locator::Null)))
        }),
        ("LogLocator", "LogLocator(base=10.0): ticks at powers of base.", |_, mut a| {
            let base = opt_number(a.take(0, "base")?)?.unwrap_or(10.0);
            for k in ["subs", "numticks", "numdecs"] {
                a.take_kw(k);
            }
            a.finish(2)?;
            Ok(ticker_value("LogLocator", Ticker::Locator(Locator::Log { base })))
        }),
        ("AutoMinorLocator", "AutoMinorLocator(n=None): minor ticks dividing each major interval into n.", |_, mut a| {
            let n = match a.take(0, "n")? {
                None => None,
                Some(v) if matches!(&v, Value::None) => None,
                Some(v) if matches!(&v, Value::Str(s) if &**s == "auto") => None,
                Some(v) => Some(as_i64(&v).filter(|n| *n > 0).ok_or_else(|| {
                    Exc::value_error(format!("n must be a positive integer or 'auto', not {}", super::data::brief_repr(&v)))
                })? as usize),
            };
            a.finish(1)?;
            Ok(ticker_value("AutoMinorLocator", Ticker::Locator(Locator::AutoMinor(n))))
        }),
        ("ScalarFormatter", "ScalarFormatter(): the default labels.", |_, mut a| {
            for k in ["useOffset", "useMathText", "useLocale"] {
                a.take_kw(k);
            }
            a.finish(3)?;
            Ok(ticker_value("ScalarFormatter", Ticker::Formatter(Formatter::Scalar)))
        }),
        ("NullFormatter", "NullFormatter(): no labels.", |_, a| {
            a.finish(0)?;
            Ok(ticker_value("NullFormatter", Ticker::Formatter(Formatter::Null)))
        }),
        ("FormatStrFormatter", "FormatStrFormatter(fmt): labels as fmt % x ('%.2f').", |_, mut a| {
            let fmt = text_of(&a.required(0, "fmt")?);
            a.finish(1)?;
            Ok(ticker_value("FormatStrFormatter", Ticker::Formatter(Formatter::FormatStr(fmt))))
        }),
        ("StrMethodFormatter", "StrMethodFormatter(fmt): labels as fmt.format(x=x, pos=pos) ('{x:.2f}').", |_, mut a| {
            let fmt = text_of(&a.required(0, "fmt")?);
            a.finish(1)?;
            Ok(ticker_value("StrMethodFormatter", Ticker::Formatter(Formatter::StrMethod(fmt))))
        }),
        ("PercentFormatter", "PercentFormatter(xmax=100, decimals=None, symbol='%'): labels as percentages of xmax.", |_, mut a| {
            let xmax = opt_number(a.take(0, "xmax")?)?.unwrap_or(100.0);
            let decimals = match a.take(1, "decimals")? {
                None | Some(Value::None) => None,
                Some(v) => Some(as_i64(&v).ok_or_else(|| Exc::type_error("decimals must be an int"))?.max(0) as usize),
            };
            let symbol = match a.take(2, "symbol")? {
                None => "%".to_string(),
                Some(Value::None) => String::new(),
                Some(v) => text_of(&v),
            };
            a.take(3, "is_latex")?;
            a.finish(4)?;
            Ok(ticker_value("PercentFormatter", Ticker::Formatter(Formatter::Percent { xmax, decimals, symbol })))
        }),
        ("FixedFormatter", "FixedFormatter(seq): the labels in order.", |_, mut a| {
            let seq = a.required(0, "seq")?;
            a.finish(1)?;
            let labels = super::data::strings(&seq).unwrap_or_default();
            Ok(ticker_value("FixedFormatter", Ticker::Formatter(Formatter::Fixed(labels))))
        }),
        ("FuncFormatter", "FuncFormatter(func): labels as func(x, pos).", |_, mut a| {
            let f = a.required(0, "func")?;
            a.finish(1)?;
            Ok(ticker_value("FuncFormatter", Ticker::Func(f)))
        }),
    ];
    for (name, doc, f) in classes {
        m.set(name, builtin(name, doc, *f));
    }
    m
}

// ------------------------------------------------------------------ on an axis

/// The methods of `ax.xaxis` this file adds.
pub(crate) fn axis_method(name: &str) -> Option<(&'static str, crate::object::value::MethodFn)> {
    Some(match name {
        "set_major_locator" => ("set_major_locator", |_, r, a| set_locator(r, a, true)),
        "set_minor_locator" => ("set_minor_locator", |_, r, a| set_locator(r, a, false)),
        "set_major_formatter" => ("set_major_formatter", |it, r, a| {
            set_formatter(it, r, a, true)
        }),
        "set_minor_formatter" => ("set_minor_formatter", |it, r, a| {
            set_formatter(it, r, a, false)
        }),
        _ => return None,
    })
}

fn axis_of(r: &Value) -> Result<(Rc<AxesObj>, bool), Exc> {
    match r {
        Value::Object(o) => o
            .as_any()
            .downcast_ref::<super::objects::AxisValue>()
            .map(|a| (a.axes.clone(), a.is_x)),
        _ => None,
    }
    .ok_or_else(|| Exc::type_error("an Axis method called on something else"))
}

fn with_spec<R>(
    ax: &Rc<AxesObj>,
    is_x: bool,
    f: impl FnOnce(&mut AxisSpec) -> R,
) -> Result<R, Exc> {
    ax.with(|x| f(if is_x { &mut x.x } else { &mut x.y }))
}

fn class_text(v: &Value) -> String {
    match ticker_of(v) {
        Some(t) => format!("a matplotlib.ticker.{}", t.class),
        None => format!("a {}", v.type_name()),
    }
}

fn set_locator(r: &Value, mut a: Args, major: bool) -> Result<Value, Exc> {
    let v = a.required(0, "locator")?;
    a.finish(1)?;
    let (ax, is_x) = axis_of(r)?;
    let Some(Ticker::Locator(l)) = ticker_of(&v).map(|t| &t.ticker) else {
        return Err(Exc::type_error(format!(
            "'locator' must be an instance of matplotlib.ticker.Locator, not {}",
            class_text(&v)
        )));
    };
    with_spec(&ax, is_x, |s| {
        if major {
            // Ticks set by hand give way to the locator, as matplotlib's FixedLocator does.
            s.ticks = None;
            s.locator = Some(l.clone());
        } else {
            s.minor_locator = Some(l.clone());
        }
    })?;
    Ok(Value::None)
}

fn set_formatter(
    it: &mut dyn Interpreter,
    r: &Value,
    mut a: Args,
    major: bool,
) -> Result<Value, Exc> {
    let v = a.required(0, "formatter")?;
    a.finish(1)?;
    let (ax, is_x) = axis_of(r)?;
    // A str is a StrMethodFormatter, a function a FuncFormatter.
    let (formatter, func) = match (&v, ticker_of(&v).map(|t| &t.ticker)) {
        (Value::Str(s), _) => (Formatter::StrMethod(s.to_string()), None),
        (_, Some(Ticker::Formatter(f))) => (f.clone(), None),
        (_, Some(Ticker::Func(f))) => (Formatter::Table(Vec::new()), Some(f.clone())),
        _ if is_callable(it, &v)? => (Formatter::Table(Vec::new()), Some(v.clone())),
        _ => {
            return Err(Exc::type_error(format!(
                "'formatter' must be an instance of matplotlib.ticker.Formatter, not {}",
                class_text(&v)
            )))
        }
    };
    if !major {
        // Minor tick labels are not drawn.
        return Ok(Value::None);
    }
    with_spec(&ax, is_x, |s| {
        s.ticklabels = None;
        s.formatter = Some(formatter);
    })?;
    let mut funcs = ax.fig.func_formatters.borrow_mut();
    funcs.retain(|(i, x, _)| (*i, *x) != (ax.index, is_x));
    if let Some(f) = func {
        funcs.push((ax.index, is_x, f));
    }
    Ok(Value::None)
}

fn is_callable(it: &mut dyn Interpreter, v: &Value) -> Result<bool, Exc> {
    crate::modules::python::builtins::callable(it, Args::new("callable", vec![v.clone()]))?.truthy()
}

/// Runs each function formatter of the figure on its axis's ticks as they will be drawn,
/// keeping the labels for the drawing (matplotlib calls them while drawing).
pub(crate) fn resolve_functions(it: &mut dyn Interpreter, f: &Rc<FigObj>) -> Result<(), Exc> {
    let funcs = f.func_formatters.borrow().clone();
    for (index, is_x, func) in funcs {
        let locs = {
            let fig = f.fig.borrow();
            let resolved = layout::resolve_shared(&fig);
            let Some(ax) = resolved.axes.get(index) else {
                continue;
            };
            let mut ax = ax.clone();
            // The locations only: the labels are what this computes.
            let spec = if is_x { &mut ax.x } else { &mut ax.y };
            spec.formatter = None;
            layout::major_ticks(&ax, fig.size, is_x).0
        };
        let mut table = Vec::new();
        for (pos, x) in locs.iter().enumerate() {
            let label = it.call_value(
                &func,
                Args::new("func", vec![Value::Float(*x), Value::Int(pos as i64)]),
            )?;
            table.push((*x, text_of(&label)));
        }
        if let Some(ax) = f.fig.borrow_mut().axes.get_mut(index) {
            let spec = if is_x { &mut ax.x } else { &mut ax.y };
            spec.formatter = Some(Formatter::Table(table));
        }
    }
    Ok(())
}
