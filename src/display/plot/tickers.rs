//! The locators and formatters a program sets on an axis (`matplotlib.ticker`'s
//! `MaxNLocator`, `MultipleLocator`, `FixedLocator`, `NullLocator`, `LogLocator`,
//! `AutoMinorLocator`; `FormatStrFormatter`, `StrMethodFormatter`, `PercentFormatter`,
//! `NullFormatter`, `FixedFormatter`, `ScalarFormatter`), as plain data; each computes what
//! matplotlib's computes. The axis's defaults are in `ticks.rs`.

use super::ticks;
use crate::display::pyfmt::{format_spec, percent_format, FmtValue};

#[derive(Clone, Debug, PartialEq)]
pub enum Locator {
    /// `MaxNLocator(nbins, steps, integer=)`; nbins None is 'auto' (the axis's tick space,
    /// 1..=9).
    MaxN {
        nbins: Option<f64>,
        steps: Vec<f64>,
        integer: bool,
    },
    /// `MultipleLocator(base, offset)`: every multiple of `base`, shifted by `offset`.
    Multiple {
        base: f64,
        offset: f64,
    },
    Fixed(Vec<f64>),
    Null,
    /// `LogLocator(base)`: powers of `base`.
    Log {
        base: f64,
    },
    /// `AutoMinorLocator(n)`: `n` intervals per major step (None: 5, or 4 for steps of 2).
    AutoMinor(Option<usize>),
}

impl Locator {
    /// The tick values for the view (lo, hi), lo <= hi, on an axis with room for `space`
    /// ticks; those just outside the view included, as matplotlib returns them.
    pub fn values(&self, lo: f64, hi: f64, space: usize) -> Vec<f64> {
        match self {
            Locator::MaxN {
                nbins,
                steps,
                integer,
            } => {
                let n = nbins.unwrap_or(space.clamp(1, 9) as f64).max(1.0);
                ticks::max_n(lo, hi, n, steps, *integer)
            }
            Locator::Multiple { base, offset } => multiples(lo, hi, *base, *offset),
            Locator::Fixed(v) => v.clone(),
            Locator::Null | Locator::AutoMinor(_) => Vec::new(),
            Locator::Log { base } => {
                if !(lo > 0.0 && hi > 0.0 && *base > 1.0) {
                    return Vec::new();
                }
                let (a, b) = (lo.log(*base).floor() as i32, hi.log(*base).ceil() as i32);
                (a - 1..=b + 1).map(|k| base.powi(k)).collect()
            }
        }
    }

    /// Minor ticks between the major ticks `major` over the view (`AutoMinorLocator`).
    pub fn minor_values(&self, major: &[f64], lo: f64, hi: f64) -> Vec<f64> {
        match self {
            Locator::AutoMinor(ndivs) => {
                if major.len() < 2 {
                    return Vec::new();
                }
                let step = major[1] - major[0];
                let ndivs = ndivs.unwrap_or_else(|| {
                    let mantissa = 10f64.powf(step.log10().rem_euclid(1.0));
                    let close = |v: f64| (mantissa - v).abs() <= 1e-8 + 1e-5 * v;
                    if [1.0, 2.5, 5.0, 10.0].into_iter().any(close) {
                        5
                    } else {
                        4
                    }
                });
                let minor = step / ndivs.max(1) as f64;
                let t0 = major[0];
                let (tmin, tmax) = (
                    ((lo - t0) / minor).round() as i64,
                    ((hi - t0) / minor).round() as i64 + 1,
                );
                (tmin..tmax)
                    .map(|k| k as f64 * minor + t0)
                    // matplotlib leaves out minor ticks that fall on major ones.
                    .filter(|v| !major.iter().any(|m| (m - v).abs() < minor * 1e-3))
                    .collect()
            }
            other => other.values(lo, hi, 9),
        }
    }
}

/// `MultipleLocator.tick_values`: multiples of `base` from one below the view to one past it.
fn multiples(lo: f64, hi: f64, base: f64, offset: f64) -> Vec<f64> {
    if !(base > 0.0 && base.is_finite() && lo.is_finite() && hi.is_finite()) {
        return Vec::new();
    }
    let (v0, v1) = (lo - offset, hi - offset);
    // _Edge_integer(base, 0).ge(v0).
    let (d, m) = ticks::py_divmod(v0, base);
    let first = if (m / base).abs() < 1e-10 { d } else { d + 1.0 };
    let start = first * base;
    let n = ((v1 - start + 0.001 * base) / base).floor();
    if !(0.0..1e5).contains(&(n + 3.0)) {
        return Vec::new();
    }
    (0..(n as i64 + 3))
        .map(|k| start - base + k as f64 * base + offset)
        .collect()
}

#[derive(Clone, Debug, PartialEq)]
pub enum Formatter {
    Scalar,
    Null,
    /// `FormatStrFormatter('%1.2f')`: the value through printf-style `%`.
    FormatStr(String),
    /// `StrMethodFormatter('{x:.2f}')`: `str.format` with `x` (the value) and `pos`.
    StrMethod(String),
    /// `PercentFormatter(xmax=100, decimals=None, symbol='%')`.
    Percent {
        xmax: f64,
        decimals: Option<usize>,
        symbol: String,
    },
    /// `FixedFormatter(seq)`: the labels in order of the ticks.
    Fixed(Vec<String>),
    /// Labels the program's function gave each tick (`FuncFormatter`, resolved before
    /// drawing by the caller, which can run the function): (value, label).
    Table(Vec<(f64, String)>),
}

impl Formatter {
    /// Labels for `locs` (all of them, in order) over the view (lo, hi), and the offset
    /// text shown at the axis's end.
    pub fn labels(&self, locs: &[f64], lo: f64, hi: f64) -> (Vec<String>, String) {
        let each = |f: &dyn Fn(usize, f64) -> String| -> (Vec<String>, String) {
            (
                locs.iter().enumerate().map(|(i, v)| f(i, *v)).collect(),
                String::new(),
            )
        };
        match self {
            Formatter::Scalar => ticks::scalar_labels(locs, (lo, hi)),
            Formatter::Null => each(&|_, _| String::new()),
            Formatter::FormatStr(f) => each(&|_, v| percent_one(f, v)),
            Formatter::StrMethod(f) => each(&|i, v| str_method_one(f, v, i)),
            Formatter::Percent {
                xmax,
                decimals,
                symbol,
            } => {
                let pct = |x: f64| 100.0 * x / xmax;
                let decimals = decimals.unwrap_or_else(|| {
                    let range = pct(hi - lo);
                    if range <= 0.0 {
                        0
                    } else {
                        (2.0 - (2.0 * range).log10()).ceil().clamp(0.0, 5.0) as usize
                    }
                });
                each(&|_, v| ticks::minus(format!("{:.*}{symbol}", decimals, pct(v))))
            }
            Formatter::Fixed(seq) => each(&|i, _| seq.get(i).cloned().unwrap_or_default()),
            Formatter::Table(t) => each(&|_, v| {
                t.iter()
                    .find(|(x, _)| *x == v)
                    .map(|(_, s)| s.clone())
                    .unwrap_or_default()
            }),
        }
    }
}

/// `fmt % x` (an error reads as the text matplotlib would not draw: empty).
fn percent_one(fmt: &str, x: f64) -> String {
    percent_format(fmt, &[FmtValue::Float(x)]).unwrap_or_default()
}

/// `fmt.format(x=x, pos=pos)` with matplotlib's minus sign: the fields `{x[:spec]}` and
/// `{pos[:spec]}`, `{{`/`}}` as braces.
fn str_method_one(fmt: &str, x: f64, pos: usize) -> String {
    let mut out = String::new();
    let mut rest = fmt;
    while let Some(i) = rest.find(['{', '}']) {
        out.push_str(&rest[..i]);
        let tail = &rest[i..];
        if tail.starts_with("{{") || tail.starts_with("}}") {
            out.push_str(&tail[..1]);
            rest = &tail[2..];
            continue;
        }
        let Some(end) = tail.find('}') else {
            return out;
        };
        let field = &tail[1..end];
        let (name, spec) = field.split_once(':').unwrap_or((field, ""));
        let value = match name {
            "x" => FmtValue::Float(x),
            "pos" => FmtValue::Int(pos as i64),
            _ => return String::new(),
        };
        out.push_str(&format_spec(value, spec).unwrap_or_default());
        rest = &tail[end + 1..];
    }
    out.push_str(rest);
    ticks::minus(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn multiple_locator_as_matplotlib() {
        // MultipleLocator(0.5).tick_values(0.1, 2.3) -> [0. 0.5 1. 1.5 2. 2.5]
        assert_eq!(
            multiples(0.1, 2.3, 0.5, 0.0),
            vec![0.0, 0.5, 1.0, 1.5, 2.0, 2.5]
        );
    }

    #[test]
    fn percent_decimals_follow_the_range() {
        let f = Formatter::Percent {
            xmax: 1.0,
            decimals: None,
            symbol: "%".into(),
        };
        assert_eq!(f.labels(&[0.0, 0.5], 0.0, 1.0).0, vec!["0%", "50%"]);
    }

    #[test]
    fn string_formatters() {
        assert_eq!(percent_one("%.1f km", 2.0), "2.0 km");
        assert_eq!(
            str_method_one("{x:.2f} ({pos})", -1.5, 3),
            "\u{2212}1.50 (3)"
        );
    }
}
