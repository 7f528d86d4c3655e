//! Turning program values into plot data and styles: numbers from lists, NumPy/MXNet arrays
//! and CPU tensors (a GPU tensor is refused as PyTorch refuses `.numpy()`), colours, format
//! strings (`'m--'`), with matplotlib's error messages.

use crate::display::plot::{color, LineStyle, Marker, Rgba};
use crate::object::ops::as_f64;
use crate::object::value::{Flavor, Value};
use crate::object::{Exc, ExcKind, Interpreter};
use crate::runtime::{DType, HostData};

/// Numbers and their shape.
pub struct Data {
    pub values: Vec<f64>,
    pub shape: Vec<usize>,
}

impl Data {
    pub fn shape_text(&self) -> String {
        match self.shape.len() {
            1 => format!("({},)", self.shape[0]),
            _ => format!(
                "({})",
                self.shape
                    .iter()
                    .map(|d| d.to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        }
    }
}

/// The numbers of an array-like, as `np.asarray(v, float)` gives them.
pub fn numbers(it: &mut dyn Interpreter, v: &Value) -> Result<Data, Exc> {
    if let Value::Array(a) = v {
        let dev = a.array.device();
        if !dev.is_cpu() && a.flavor == Flavor::Torch {
            return Err(Exc::type_error(format!(
                "can't convert cuda:{} device type tensor to numpy. Use Tensor.cpu() to copy the tensor to host memory first.",
                dev.id
            )));
        }
    }
    if let Some(x) = as_f64(v) {
        return Ok(Data {
            values: vec![x],
            shape: Vec::new(),
        });
    }
    if matches!(v, Value::Str(_)) {
        return Err(Exc::new(
            ExcKind::ValueError,
            format!("could not convert string to float: {}", brief_repr(v)),
        ));
    }
    let arr = crate::modules::array::numpy_fns::as_array(it, v)?;
    let shape = arr.array.shape().to_vec();
    let values = match arr.array.to_host() {
        HostData::F64(d) => d,
        other => other.to_f64_vec(),
    };
    let _ = DType::Float64;
    Ok(Data { values, shape })
}

/// A 1-D sequence of numbers (a scalar is one number).
pub fn vector(it: &mut dyn Interpreter, v: &Value) -> Result<Vec<f64>, Exc> {
    Ok(numbers(it, v)?.values)
}

/// Strings of a list or tuple of str (categorical data), or None when `v` is not one.
pub fn strings(v: &Value) -> Option<Vec<String>> {
    let items: Vec<Value> = match v {
        Value::List(l) => l.borrow().clone(),
        Value::Tuple(t) => t.as_ref().clone(),
        _ => return None,
    };
    if items.is_empty() {
        return None;
    }
    items
        .iter()
        .map(|x| match x {
            Value::Str(s) => Some(s.to_string()),
            _ => None,
        })
        .collect()
}

pub fn text_of(v: &Value) -> String {
    match v {
        Value::Str(s) => s.to_string(),
        Value::None => String::new(),
        other => brief_repr(other),
    }
}

/// A colour argument: a name, hex, gray level, or an (r, g, b[, a]) tuple.
pub fn color_arg(v: &Value) -> Result<Rgba, Exc> {
    match v {
        Value::Str(s) => color::parse(s).ok_or_else(|| {
            Exc::value_error(format!(
                "{} is not a valid value for color: {COLOR_INPUTS}",
                brief_repr(v)
            ))
        }),
        Value::Tuple(_) | Value::List(_) => {
            let items: Vec<Value> = match v {
                Value::List(l) => l.borrow().clone(),
                Value::Tuple(t) => t.as_ref().clone(),
                _ => Vec::new(),
            };
            let f: Option<Vec<f64>> = items.iter().map(as_f64).collect();
            match f.as_deref() {
                Some([r, g, b]) if [r, g, b].iter().all(|x| (0.0..=1.0).contains(*x)) => {
                    Ok(Rgba(*r, *g, *b, 1.0))
                }
                Some([r, g, b, a]) if [r, g, b, a].iter().all(|x| (0.0..=1.0).contains(*x)) => {
                    Ok(Rgba(*r, *g, *b, *a))
                }
                _ => Err(Exc::value_error(format!(
                    "{} is not a valid value for color",
                    brief_repr(v)
                ))),
            }
        }
        _ => Err(Exc::value_error(format!(
            "{} is not a valid value for color",
            brief_repr(v)
        ))),
    }
}

const COLOR_INPUTS: &str = "supported inputs are (r, g, b) and (r, g, b, a) 0-1 float tuples; '#rrggbb', '#rrggbbaa', '#rgb', '#rgba' strings; named color strings; string reprs of 0-1 floats for grayscale values; 'C0', 'C1', ... strings for colors of the color cycle; and pairs combining one of the above with an alpha value";

const MARKERS: &str = ".,ov^<>1234sp*hH+xDd|_PX8";

pub fn marker_arg(v: &Value) -> Result<Option<Marker>, Exc> {
    match v {
        Value::None => Ok(None),
        Value::Str(s) if s.as_ref() == "None" || s.as_ref() == "none" || s.is_empty() => Ok(None),
        Value::Str(s) if s.chars().count() == 1 && MARKERS.contains(s.as_ref()) => {
            let c = s.chars().next().unwrap_or('o');
            // P and X are the filled plus and cross.
            Ok(Some(match c {
                'P' => '+',
                'X' => 'x',
                c => c,
            }))
        }
        other => Err(Exc::value_error(format!(
            "Unrecognized marker style {}",
            brief_repr(other)
        ))),
    }
}

pub fn linestyle_arg(v: &Value) -> Result<LineStyle, Exc> {
    let s = text_of(v);
    Ok(match s.as_str() {
        "-" | "solid" => LineStyle::Solid,
        "--" | "dashed" => LineStyle::Dashed,
        "-." | "dashdot" => LineStyle::DashDot,
        ":" | "dotted" => LineStyle::Dotted,
        "None" | "none" | " " | "" => LineStyle::None,
        _ => {
            return Err(not_in_list(
                &s,
                "ls",
                &[
                    "-", "--", "-.", ":", "None", " ", "", "solid", "dashed", "dashdot", "dotted",
                ],
            ))
        }
    })
}

/// What a format string sets: line style, marker, colour (None: the default).
pub type Format = (Option<LineStyle>, Option<Marker>, Option<Rgba>);

/// A format string as matplotlib's `_process_plot_format` reads it: (line style, marker,
/// colour), each None when the string leaves it to the defaults.
pub fn format_string(fmt: &str) -> Result<Format, Exc> {
    // A colour alone ('red', '0.5', 'C3'), except a number that is a marker ('1').
    if let Some(c) = color::parse(fmt) {
        if fmt.parse::<i64>().is_err() {
            return Ok((None, None, Some(c)));
        }
    }
    let err =
        |why: String| Exc::value_error(format!("'{fmt}' is not a valid format string ({why})"));
    let (mut ls, mut mk, mut col): (Option<LineStyle>, Option<Marker>, Option<Rgba>) =
        (None, None, None);
    let chars: Vec<char> = fmt.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let two: String = chars[i..(i + 2).min(chars.len())].iter().collect();
        if two == "--" || two == "-." {
            if ls.is_some() {
                return Err(err("two linestyle symbols".into()));
            }
            ls = Some(if two == "--" {
                LineStyle::Dashed
            } else {
                LineStyle::DashDot
            });
            i += 2;
        } else if c == '-' || c == ':' {
            if ls.is_some() {
                return Err(err("two linestyle symbols".into()));
            }
            ls = Some(if c == '-' {
                LineStyle::Solid
            } else {
                LineStyle::Dotted
            });
            i += 1;
        } else if MARKERS.contains(c) {
            if mk.is_some() {
                return Err(err("two marker symbols".into()));
            }
            mk = Some(c);
            i += 1;
        } else if "bgrcmykw".contains(c) {
            if col.is_some() {
                return Err(err("two color symbols".into()));
            }
            col = color::parse(&c.to_string());
            i += 1;
        } else if c == 'C' {
            let digits: String = chars[i + 1..]
                .iter()
                .take_while(|d| d.is_ascii_digit())
                .collect();
            if digits.is_empty() {
                return Err(err("'C' must be followed by a number".into()));
            }
            col = color::parse(&format!("C{digits}"));
            i += 1 + digits.len();
        } else {
            return Err(err(format!("unrecognized character '{c}'")));
        }
    }
    let ls = match (ls, mk) {
        (None, None) => Some(LineStyle::Solid),
        (None, Some(_)) => Some(LineStyle::None),
        (l, _) => l,
    };
    Ok((ls, mk, col))
}

/// A value's repr for error messages, without running program code.
pub fn brief_repr(v: &Value) -> String {
    use crate::object::format::{float_repr, str_repr};
    match v {
        Value::Str(s) => str_repr(s),
        Value::Int(i) => i.to_string(),
        Value::Bool(b) => if *b { "True" } else { "False" }.to_string(),
        Value::Float(f) => float_repr(*f),
        Value::None => "None".into(),
        Value::Tuple(t) => {
            let parts: Vec<String> = t.iter().map(brief_repr).collect();
            if parts.len() == 1 {
                format!("({},)", parts[0])
            } else {
                format!("({})", parts.join(", "))
            }
        }
        Value::List(l) => format!(
            "[{}]",
            l.borrow()
                .iter()
                .map(brief_repr)
                .collect::<Vec<_>>()
                .join(", ")
        ),
        other => format!("<{} object>", other.type_name()),
    }
}

/// difflib's `SequenceMatcher.ratio` (Ratcliff/Obershelp: longest common blocks, recursively).
fn ratio(a: &[char], b: &[char]) -> f64 {
    fn matches(a: &[char], b: &[char]) -> usize {
        let (mut best, mut bi, mut bj) = (0, 0, 0);
        for i in 0..a.len() {
            for j in 0..b.len() {
                let mut k = 0;
                while i + k < a.len() && j + k < b.len() && a[i + k] == b[j + k] {
                    k += 1;
                }
                if k > best {
                    (best, bi, bj) = (k, i, j);
                }
            }
        }
        if best == 0 {
            return 0;
        }
        best + matches(&a[..bi], &b[..bj]) + matches(&a[bi + best..], &b[bj + best..])
    }
    let t = a.len() + b.len();
    if t == 0 {
        1.0
    } else {
        2.0 * matches(a, b) as f64 / t as f64
    }
}

/// matplotlib's `_api.check_in_list` message for `value` not among `values` of `key`: with more
/// than 5 choices the close matches (difflib, cutoff 0.5, best 3), else the whole list.
pub fn not_in_list(value: &str, key: &str, values: &[&str]) -> Exc {
    let r = crate::object::format::str_repr(value);
    let all = || {
        values
            .iter()
            .map(|v| crate::object::format::str_repr(v))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let suggestion = if values.len() > 5 {
        let w: Vec<char> = value.chars().collect();
        let mut scored: Vec<(f64, &str)> = values
            .iter()
            .map(|v| (ratio(&w, &v.chars().collect::<Vec<_>>()), *v))
            .filter(|(r, _)| *r >= 0.5)
            .collect();
        scored.sort_by(|a, b| {
            b.0.partial_cmp(&a.0)
                .unwrap_or(std::cmp::Ordering::Equal)
                .then(b.1.cmp(a.1))
        });
        scored.truncate(3);
        let best: Vec<String> = scored
            .iter()
            .map(|(_, v)| crate::object::format::str_repr(v))
            .collect();
        match best.len() {
            0 => String::new(),
            1 => format!(" Did you mean: {}?", best[0]),
            _ => format!(" Did you mean one of: {}?", best.join(", ")),
        }
    } else {
        format!(" Supported values are {}", all())
    };
    Exc::value_error(format!("{r} is not a valid value for {key}.{suggestion}"))
}
