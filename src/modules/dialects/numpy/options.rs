//! NumPy's print options and floating-point settings: `set_printoptions`/`get_printoptions`/
//! `printoptions` (precision, threshold, edgeitems, linewidth, suppress: what the array printer,
//! `display::arrayprint`, reads), `seterr`/`geterr`/`errstate` (kept and reported; devarray's
//! arrays print no floating-point warnings), and `finfo`/`iinfo` with NumPy 1.23's reprs.

use std::cell::RefCell;
use std::rc::Rc;

use crate::display::arrayprint::{print_options, set_print_options, PrintOptions};
use crate::modules::array::scalars::scalar;
use crate::object::error::Exc;
use crate::object::ops::{as_i64, as_number};
use crate::object::value::{Args, Dict, Flavor, HashKey, Module, NativeObject, Value};
use crate::object::{builtin, Interpreter};
use crate::runtime::{DType, Scalar};

fn dict(entries: Vec<(&str, Value)>) -> Value {
    let mut d = Dict::default();
    for (k, v) in entries {
        d.insert(HashKey::Str(Rc::from(k)), Value::str(k), v);
    }
    Value::Dict(Rc::new(RefCell::new(d)))
}

fn options_dict(o: &PrintOptions) -> Value {
    dict(vec![
        ("edgeitems", Value::Int(o.edgeitems as i64)),
        ("threshold", Value::Int(o.threshold as i64)),
        ("floatmode", Value::str("maxprec")),
        ("precision", Value::Int(o.precision as i64)),
        ("suppress", Value::Bool(o.suppress)),
        ("linewidth", Value::Int(o.linewidth as i64)),
        ("nanstr", Value::str("nan")),
        ("infstr", Value::str("inf")),
        ("sign", Value::str("-")),
        ("formatter", Value::None),
        ("legacy", Value::Bool(false)),
    ])
}

/// The options `a` sets over `base` (the keywords `set_printoptions` takes).
fn options_from(a: &mut Args, base: PrintOptions) -> Result<PrintOptions, Exc> {
    let mut o = base;
    let count = |v: Option<Value>, name: &str| -> Result<Option<usize>, Exc> {
        match v {
            None => Ok(None),
            Some(Value::None) => Ok(None),
            Some(v) => {
                let n = as_i64(&v)
                    .ok_or_else(|| Exc::type_error(format!("{name} must be an integer")))?;
                if name == "precision" && n < 0 {
                    return Err(Exc::value_error("precision must be >= 0"));
                }
                Ok(Some(n.max(0) as usize))
            }
        }
    };
    if let Some(p) = count(a.take(0, "precision")?, "precision")? {
        o.precision = p;
    }
    if let Some(t) = count(a.take(1, "threshold")?, "threshold")? {
        o.threshold = t;
    }
    if let Some(e) = count(a.take(2, "edgeitems")?, "edgeitems")? {
        o.edgeitems = e;
    }
    if let Some(w) = count(a.take(3, "linewidth")?, "linewidth")? {
        o.linewidth = w;
    }
    match a.take(4, "suppress")? {
        None => {}
        Some(Value::None) => {}
        Some(v) => o.suppress = v.truthy()?,
    }
    for (k, name) in ["nanstr", "infstr", "formatter", "sign", "floatmode"]
        .iter()
        .enumerate()
    {
        a.take(5 + k, name)?;
    }
    a.take_kw("legacy");
    a.finish(10)?;
    Ok(o)
}

fn set_printoptions(_it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let o = options_from(&mut a, print_options())?;
    set_print_options(o);
    Ok(Value::None)
}

fn get_printoptions(_it: &mut dyn Interpreter, a: Args) -> Result<Value, Exc> {
    a.finish(0)?;
    Ok(options_dict(&print_options()))
}

/// `with np.printoptions(...)`: the options for the block, the old ones restored after.
struct PrintOptionsContext {
    options: PrintOptions,
    saved: RefCell<Vec<PrintOptions>>,
}

impl NativeObject for PrintOptionsContext {
    fn type_name(&self) -> &str {
        "_GeneratorContextManager"
    }
    fn repr(&self) -> String {
        format!(
            "<contextlib._GeneratorContextManager object at {:#x}>",
            self as *const _ as usize
        )
    }
    fn enter(&self, _interp: &mut dyn Interpreter) -> Result<Value, Exc> {
        self.saved
            .borrow_mut()
            .push(set_print_options(self.options));
        Ok(options_dict(&self.options))
    }
    fn exit(&self, _interp: &mut dyn Interpreter) -> Result<(), Exc> {
        if let Some(old) = self.saved.borrow_mut().pop() {
            set_print_options(old);
        }
        Ok(())
    }
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

fn printoptions(_it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let options = options_from(&mut a, print_options())?;
    Ok(Value::Object(Rc::new(PrintOptionsContext {
        options,
        saved: RefCell::new(Vec::new()),
    })))
}

// ------------------------------------------------------------------ seterr / errstate

const ERR_KEYS: [&str; 4] = ["divide", "over", "under", "invalid"];
const ERR_MODES: [&str; 6] = ["ignore", "warn", "raise", "call", "print", "log"];

thread_local! {
    static ERR: RefCell<[&'static str; 4]> = const { RefCell::new(["warn", "warn", "ignore", "warn"]) };
}

/// The current mode for error kind `k` (an index of `ERR_KEYS`: divide, over, under,
/// invalid), as `seterr`/`errstate` set it.
pub fn err_mode(k: usize) -> &'static str {
    ERR.with(|e| e.borrow().get(k).copied().unwrap_or("warn"))
}

fn err_dict(e: &[&'static str; 4]) -> Value {
    dict(
        ERR_KEYS
            .iter()
            .zip(e)
            .map(|(k, v)| (*k, Value::str(v)))
            .collect(),
    )
}

/// The settings `a` gives over `base` (`all=` first, then each kind).
fn err_from(a: &mut Args, base: [&'static str; 4]) -> Result<[&'static str; 4], Exc> {
    let mode = |v: &Value| -> Result<Option<&'static str>, Exc> {
        match v {
            Value::None => Ok(None),
            Value::Str(s) => ERR_MODES
                .iter()
                .find(|m| **m == &**s)
                .copied()
                .map(Some)
                .ok_or_else(|| Exc::value_error(format!("invalid error mode '{s}'"))),
            other => Err(Exc::type_error(format!(
                "error mode must be a string, not {}",
                other.type_name()
            ))),
        }
    };
    let mut e = base;
    if let Some(v) = a.take(0, "all")? {
        if let Some(m) = mode(&v)? {
            e = [m; 4];
        }
    }
    for (k, key) in ERR_KEYS.iter().enumerate() {
        if let Some(v) = a.take(k + 1, key)? {
            if let Some(m) = mode(&v)? {
                e[k] = m;
            }
        }
    }
    a.finish(5)?;
    Ok(e)
}

fn seterr(_it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let old = ERR.with(|e| *e.borrow());
    let new = err_from(&mut a, old)?;
    ERR.with(|e| *e.borrow_mut() = new);
    Ok(err_dict(&old))
}

fn geterr(_it: &mut dyn Interpreter, a: Args) -> Result<Value, Exc> {
    a.finish(0)?;
    Ok(ERR.with(|e| err_dict(&e.borrow())))
}

struct ErrState {
    settings: [&'static str; 4],
    saved: RefCell<Vec<[&'static str; 4]>>,
}

impl NativeObject for ErrState {
    fn type_name(&self) -> &str {
        "errstate"
    }
    fn repr(&self) -> String {
        format!(
            "<numpy.errstate object at {:#x}>",
            self as *const _ as usize
        )
    }
    fn enter(&self, _interp: &mut dyn Interpreter) -> Result<Value, Exc> {
        let old = ERR.with(|e| std::mem::replace(&mut *e.borrow_mut(), self.settings));
        self.saved.borrow_mut().push(old);
        Ok(Value::None)
    }
    fn exit(&self, _interp: &mut dyn Interpreter) -> Result<(), Exc> {
        if let Some(old) = self.saved.borrow_mut().pop() {
            ERR.with(|e| *e.borrow_mut() = old);
        }
        Ok(())
    }
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

fn errstate(_it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    a.take_kw("call");
    let base = ERR.with(|e| *e.borrow());
    let settings = err_from(&mut a, base)?;
    Ok(Value::Object(Rc::new(ErrState {
        settings,
        saved: RefCell::new(Vec::new()),
    })))
}

// ------------------------------------------------------------------ finfo / iinfo

/// The dtype named by a dtype object, a scalar type, a Python type or a string.
fn dtype_of(v: &Value) -> Result<Option<DType>, Exc> {
    match v {
        Value::Type(crate::object::value::TypeKind::Float) => Ok(Some(DType::Float64)),
        Value::Type(crate::object::value::TypeKind::Int) => Ok(Some(DType::Int64)),
        Value::Array(a) => Ok(Some(a.array.dtype())),
        other => match as_number(other).as_ref() {
            Value::Float(_) if !matches!(other, Value::Object(_)) => Ok(Some(DType::Float64)),
            _ => crate::modules::array::arrays::dtype_arg(other).or(Ok(None)),
        },
    }
}

/// Float32's and float64's limits, as NumPy's `finfo` reports them.
struct FloatInfo {
    dtype: DType,
}

impl FloatInfo {
    fn limits(&self) -> (f64, f64, f64, f64, i64, i64) {
        // (eps, max, tiny, resolution, bits, precision)
        match self.dtype {
            DType::Float32 => (
                f64::from(f32::EPSILON),
                f64::from(f32::MAX),
                f64::from(f32::MIN_POSITIVE),
                1e-6,
                32,
                6,
            ),
            _ => (f64::EPSILON, f64::MAX, f64::MIN_POSITIVE, 1e-15, 64, 15),
        }
    }
    fn value(&self, v: f64) -> Value {
        scalar(self.dtype, Scalar::Float(v))
    }
}

impl NativeObject for FloatInfo {
    fn type_name(&self) -> &str {
        "finfo"
    }
    fn repr(&self) -> String {
        let (_, max, _, _, _, _) = self.limits();
        let (res, hi) = match self.dtype {
            DType::Float32 => ("1e-06", format!("{:e}", max as f32)),
            _ => ("1e-15", format!("{max:e}")),
        };
        let hi = hi.replace('e', "e+");
        format!(
            "finfo(resolution={res}, min=-{hi}, max={hi}, dtype={})",
            self.dtype.name()
        )
    }
    fn get_attr(&self, _this: &Rc<dyn NativeObject>, name: &str) -> Option<Value> {
        let (eps, max, tiny, resolution, bits, precision) = self.limits();
        Some(match name {
            "eps" => self.value(eps),
            "max" => self.value(max),
            "min" => self.value(-max),
            "tiny" | "smallest_normal" => self.value(tiny),
            "resolution" => self.value(resolution),
            "epsneg" => self.value(eps / 2.0),
            "bits" => Value::Int(bits),
            "precision" => Value::Int(precision),
            "dtype" => Value::DType(self.dtype, Flavor::Numpy),
            _ => return None,
        })
    }
    fn attr_names(&self) -> Vec<&'static str> {
        vec![
            "bits",
            "dtype",
            "eps",
            "epsneg",
            "max",
            "min",
            "precision",
            "resolution",
            "smallest_normal",
            "tiny",
        ]
    }
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

struct IntInfo {
    dtype: DType,
}

impl IntInfo {
    fn limits(&self) -> (i64, i64, i64) {
        match self.dtype {
            DType::Int32 => (i64::from(i32::MIN), i64::from(i32::MAX), 32),
            _ => (i64::MIN, i64::MAX, 64),
        }
    }
}

impl NativeObject for IntInfo {
    fn type_name(&self) -> &str {
        "iinfo"
    }
    fn repr(&self) -> String {
        let (lo, hi, _) = self.limits();
        format!("iinfo(min={lo}, max={hi}, dtype={})", self.dtype.name())
    }
    fn get_attr(&self, _this: &Rc<dyn NativeObject>, name: &str) -> Option<Value> {
        let (lo, hi, bits) = self.limits();
        Some(match name {
            "min" => Value::Int(lo),
            "max" => Value::Int(hi),
            "bits" => Value::Int(bits),
            "dtype" => Value::DType(self.dtype, Flavor::Numpy),
            "kind" => Value::str("i"),
            _ => return None,
        })
    }
    fn attr_names(&self) -> Vec<&'static str> {
        vec!["bits", "dtype", "kind", "max", "min"]
    }
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

/// NumPy's one-letter code of a dtype (what its errors name).
fn char_code(d: DType) -> &'static str {
    match d {
        DType::Float32 => "f",
        DType::Float64 => "d",
        DType::Int32 => "i",
        DType::Int64 => "l",
        _ => "?",
    }
}

fn finfo(_it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let t = a.required(0, "dtype")?;
    a.finish(1)?;
    match dtype_of(&t)? {
        Some(d @ (DType::Float32 | DType::Float64)) => {
            Ok(Value::Object(Rc::new(FloatInfo { dtype: d })))
        }
        Some(d) => Err(Exc::value_error(format!(
            "data type <class 'numpy.{}'> not inexact",
            if d == DType::Bool { "bool_" } else { d.name() }
        ))),
        None => Err(Exc::type_error(format!(
            "data type '{}' not understood",
            t.type_name()
        ))),
    }
}

fn iinfo(_it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let t = a.required(0, "int_type")?;
    a.finish(1)?;
    match dtype_of(&t)? {
        Some(d @ (DType::Int32 | DType::Int64)) => Ok(Value::Object(Rc::new(IntInfo { dtype: d }))),
        Some(d) => Err(Exc::value_error(format!(
            "Invalid integer data type '{}'.",
            char_code(d)
        ))),
        None => Err(Exc::type_error(format!(
            "data type '{}' not understood",
            t.type_name()
        ))),
    }
}

/// Adds the functions to `numpy`.
pub fn install(m: &Module) {
    let fns: [(&'static str, &'static str, crate::object::value::BuiltinFn); 8] = [
        ("set_printoptions", "set_printoptions(precision=None, threshold=None, edgeitems=None, linewidth=None, suppress=None, ...): how arrays print.", set_printoptions),
        ("get_printoptions", "get_printoptions(): the print options, as a dict.", get_printoptions),
        ("printoptions", "printoptions(*args, **kwargs): a context manager setting print options for its block.", printoptions),
        ("seterr", "seterr(all=None, divide=None, over=None, under=None, invalid=None): set how floating-point errors are treated; returns the old settings.", seterr),
        ("geterr", "geterr(): how floating-point errors are treated, as a dict.", geterr),
        ("errstate", "errstate(**kwargs): a context manager for floating-point error handling.", errstate),
        ("finfo", "finfo(dtype): the limits of a float type (eps, max, min, tiny, resolution...).", finfo),
        ("iinfo", "iinfo(int_type): the limits of an integer type (min, max, bits).", iinfo),
    ];
    for (name, doc, f) in fns {
        m.set(name, builtin(name, doc, f));
    }
    // `np.absolute` is `np.abs` under its ufunc name.
    if let (None, Some(abs)) = (m.get("absolute"), m.get("abs")) {
        m.set("absolute", abs);
    }
}
