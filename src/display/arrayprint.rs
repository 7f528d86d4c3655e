//! numpy's array printing (`str`, `repr`) with default print options, and the
//! two MXNet layouts built on it (legacy `NDArray` and numpy mode).
//!
//! The algorithm follows numpy 1.23's `arrayprint.py`: one element formatter is
//! fitted to the elements that will be shown (all of them, or the edge items
//! when the array has more than 1000 elements), then the nested brackets are
//! laid out with line wrapping at 75 columns.

use super::floatfmt::{
    exponent_text, repr_style, rounded_fixed, rounded_sig, shortest_f16, shortest_f32,
    shortest_f64, Digits,
};

/// numpy's default print options.
pub(crate) const THRESHOLD: usize = 1000;
pub(crate) const EDGE_ITEMS: usize = 3;
const LINE_WIDTH: usize = 75;
const PRECISION: usize = 8;

/// NumPy's print options (`np.set_printoptions`): what the printer reads for NumPy's and
/// MXNet's arrays. One set per thread (a session runs on one thread).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PrintOptions {
    pub precision: usize,
    pub threshold: usize,
    pub edgeitems: usize,
    pub linewidth: usize,
    /// Never switch to scientific notation (small values print as zeros).
    pub suppress: bool,
}

impl Default for PrintOptions {
    fn default() -> Self {
        PrintOptions {
            precision: PRECISION,
            threshold: THRESHOLD,
            edgeitems: EDGE_ITEMS,
            linewidth: LINE_WIDTH,
            suppress: false,
        }
    }
}

thread_local! {
    static OPTIONS: std::cell::Cell<PrintOptions> = std::cell::Cell::new(PrintOptions::default());
}

/// The print options in effect.
pub fn print_options() -> PrintOptions {
    OPTIONS.with(|o| o.get())
}

/// Sets the print options; returns the ones they replace.
pub fn set_print_options(options: PrintOptions) -> PrintOptions {
    OPTIONS.with(|o| o.replace(options))
}

/// Host copies of an array's elements, row-major, in the array's own type.
#[derive(Debug, Clone, Copy)]
pub enum HostValues<'a> {
    F32(&'a [f32]),
    F64(&'a [f64]),
    I32(&'a [i32]),
    I64(&'a [i64]),
    Bool(&'a [bool]),
    F16(&'a [half::f16]),
}

impl HostValues<'_> {
    pub fn len(&self) -> usize {
        match self {
            HostValues::F32(v) => v.len(),
            HostValues::F64(v) => v.len(),
            HostValues::I32(v) => v.len(),
            HostValues::I64(v) => v.len(),
            HostValues::Bool(v) => v.len(),
            HostValues::F16(v) => v.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub(crate) fn get(&self, index: usize) -> Option<Scalar> {
        match self {
            HostValues::F32(v) => v.get(index).map(|&x| Scalar::F32(x)),
            HostValues::F64(v) => v.get(index).map(|&x| Scalar::F64(x)),
            HostValues::I32(v) => v.get(index).map(|&x| Scalar::Int(i64::from(x))),
            HostValues::I64(v) => v.get(index).map(|&x| Scalar::Int(x)),
            HostValues::Bool(v) => v.get(index).map(|&x| Scalar::Bool(x)),
            HostValues::F16(v) => v.get(index).map(|&x| Scalar::F16(x)),
        }
    }

    pub(crate) fn is_float(&self) -> bool {
        matches!(
            self,
            HostValues::F32(_) | HostValues::F64(_) | HostValues::F16(_)
        )
    }
}

/// A row-major view of an array's host values with its shape.
#[derive(Debug, Clone, Copy)]
pub struct ArrayView<'a> {
    pub values: HostValues<'a>,
    pub shape: &'a [usize],
}

impl ArrayView<'_> {
    /// Number of elements the shape describes.
    pub fn size(&self) -> usize {
        self.shape.iter().product()
    }

    /// Whether the values fill the shape exactly; every renderer checks this
    /// first so a malformed view prints a note instead of panicking.
    pub(crate) fn is_consistent(&self) -> bool {
        self.values.len() == self.size()
    }

    pub(crate) fn inconsistency_note(&self) -> String {
        format!(
            "<array of shape {} holding {} values>",
            shape_tuple(self.shape),
            self.values.len()
        )
    }
}

/// One element, widened: f32 stays f32 so it prints with f32's shortest digits.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Scalar {
    F16(half::f16),
    F32(f32),
    F64(f64),
    Int(i64),
    Bool(bool),
}

impl Scalar {
    pub(crate) fn as_f64(self) -> f64 {
        match self {
            Scalar::F32(x) => f64::from(x),
            Scalar::F16(x) => x.to_f64(),
            Scalar::F64(x) => x,
            Scalar::Int(x) => x as f64,
            Scalar::Bool(x) => f64::from(u8::from(x)),
        }
    }

    fn shortest(self) -> Digits {
        match self {
            Scalar::F32(x) => shortest_f32(x),
            Scalar::F16(x) => shortest_f16(x),
            other => shortest_f64(other.as_f64()),
        }
    }
}

/// Python's tuple repr of a shape: `(3,)`, `(2, 3)`, `()`.
pub(crate) fn shape_tuple(shape: &[usize]) -> String {
    match shape {
        [single] => format!("({single},)"),
        _ => {
            let parts: Vec<String> = shape.iter().map(usize::to_string).collect();
            format!("({})", parts.join(", "))
        }
    }
}

/// Row-major strides (in elements) of `shape`.
pub(crate) fn strides(shape: &[usize]) -> Vec<usize> {
    let mut strides = vec![1; shape.len()];
    for axis in (0..shape.len().saturating_sub(1)).rev() {
        strides[axis] = strides[axis + 1] * shape[axis + 1];
    }
    strides
}

/// The indices shown along an axis of length `len`: all of them, or the first
/// and last `edge` when summarising.
pub(crate) fn shown_indices(len: usize, summarize: bool, edge: usize) -> Vec<usize> {
    if summarize && len > 2 * edge {
        (0..edge).chain(len - edge..len).collect()
    } else {
        (0..len).collect()
    }
}

/// Flat offsets of every element that will be printed (numpy's `_leading_trailing`).
pub(crate) fn shown_offsets(shape: &[usize], summarize: bool, edge: usize) -> Vec<usize> {
    let mut offsets = vec![0usize];
    for (&len, stride) in shape.iter().zip(strides(shape)) {
        let indices = shown_indices(len, summarize, edge);
        offsets = offsets
            .iter()
            .flat_map(|&base| indices.iter().map(move |&i| base + i * stride))
            .collect();
    }
    offsets
}

/// numpy's `dragon4_positional(x, precision, unique=True, fractional=True, trim='.')`
/// without sign or padding: shortest digits, cut to `precision` fractional digits.
fn positional_unique(value: Scalar, precision: usize) -> (String, String) {
    let shortest = value.shortest();
    if shortest.frac_len() <= precision {
        shortest.positional_parts()
    } else {
        let (int_part, frac_part) = rounded_fixed(value.as_f64(), precision);
        (int_part, frac_part.trim_end_matches('0').to_string())
    }
}

/// numpy's `dragon4_scientific(x, precision, unique=True, min_digits)` digits:
/// shortest, cut to `precision` digits after the point, and extended with the
/// value's exact further digits up to `min_digits` (not with zeros).
fn scientific_unique(value: Scalar, precision: usize, min_digits: usize) -> Digits {
    let shortest = value.shortest();
    if shortest.digits.len() > precision + 1 {
        rounded_sig(value.as_f64(), precision + 1).trimmed()
    } else if shortest.digits.len() < min_digits + 1 && shortest.digits != "0" {
        rounded_sig(value.as_f64(), min_digits + 1)
    } else {
        shortest
    }
}

fn sign_of(value: Scalar) -> &'static str {
    if value.as_f64().is_sign_negative() {
        "-"
    } else {
        ""
    }
}

/// numpy's FloatingFormat after `fillFormat`.
#[derive(Debug, Clone)]
struct FloatFormat {
    /// `Some(exponent digits)` in scientific mode.
    exp_size: Option<usize>,
    precision: usize,
    pad_left: usize,
    pad_right: usize,
}

impl FloatFormat {
    fn fit(values: &[Scalar]) -> FloatFormat {
        let finite: Vec<Scalar> = values
            .iter()
            .copied()
            .filter(|v| v.as_f64().is_finite())
            .collect();
        let options = print_options();
        let precision_opt = options.precision;
        let exp_mode = !options.suppress && needs_exponent(&finite);
        let mut format = FloatFormat {
            exp_size: None,
            precision: precision_opt,
            pad_left: 0,
            pad_right: 0,
        };
        if finite.is_empty() {
            // only nan/inf: nothing to measure
        } else if exp_mode {
            let mut precision = 0;
            let mut exp_size = 0;
            let mut pad_left = 0;
            for &value in &finite {
                let digits = scientific_unique(value, precision_opt, 0);
                precision = precision.max(digits.digits.len() - 1);
                exp_size = exp_size.max(exponent_text(digits.exp10(), 2).len() - 1);
                pad_left = pad_left.max(sign_of(value).len() + 1);
            }
            format = FloatFormat {
                exp_size: Some(exp_size),
                precision,
                pad_left,
                pad_right: exp_size + 2 + precision,
            };
        } else {
            for &value in &finite {
                let (int_part, frac_part) = positional_unique(value, precision_opt);
                format.pad_left = format.pad_left.max(sign_of(value).len() + int_part.len());
                format.pad_right = format.pad_right.max(frac_part.len());
            }
        }
        let non_finite: Vec<f64> = values
            .iter()
            .map(|v| v.as_f64())
            .filter(|x| !x.is_finite())
            .collect();
        if !non_finite.is_empty() {
            let neg_inf = non_finite.contains(&f64::NEG_INFINITY);
            let offset = format.pad_right + 1;
            let nan_len = 3usize;
            let inf_len = 3 + usize::from(neg_inf);
            format.pad_left = format
                .pad_left
                .max(nan_len.saturating_sub(offset))
                .max(inf_len.saturating_sub(offset));
        }
        format
    }

    fn format(&self, value: Scalar) -> String {
        let x = value.as_f64();
        if !x.is_finite() {
            let text = if x.is_nan() {
                "nan"
            } else if x < 0.0 {
                "-inf"
            } else {
                "inf"
            };
            let width = self.pad_left + self.pad_right + 1;
            return format!("{text:>width$}");
        }
        let sign = sign_of(value);
        match self.exp_size {
            Some(exp_size) => {
                let digits = scientific_unique(value, self.precision, self.precision);
                let (first, rest) = digits.digits.split_at(1);
                let lead = format!("{sign}{first}");
                format!(
                    "{lead:>pad$}.{rest:0<prec$}e{exp}",
                    pad = self.pad_left,
                    prec = self.precision,
                    exp = exponent_text(digits.exp10(), exp_size)
                )
            }
            None => {
                let (int_part, frac_part) = positional_unique(value, self.precision);
                let lead = format!("{sign}{int_part}");
                format!(
                    "{lead:>pad_left$}.{frac_part:<pad_right$}",
                    pad_left = self.pad_left,
                    pad_right = self.pad_right
                )
            }
        }
    }
}

/// numpy's switch to scientific notation, decided on the non-zero finite values.
fn needs_exponent(finite: &[Scalar]) -> bool {
    let abs_non_zero: Vec<Scalar> = finite
        .iter()
        .copied()
        .filter(|v| v.as_f64() != 0.0)
        .collect();
    if abs_non_zero.is_empty() {
        return false;
    }
    let max = abs_non_zero
        .iter()
        .map(|v| v.as_f64().abs())
        .fold(0.0, f64::max);
    let min = abs_non_zero
        .iter()
        .map(|v| v.as_f64().abs())
        .fold(f64::INFINITY, f64::min);
    // numpy divides in the array's dtype: float32 quotients round (and may overflow) as f32.
    let ratio = if matches!(abs_non_zero.first(), Some(Scalar::F32(_))) {
        f64::from((max as f32) / (min as f32))
    } else if matches!(abs_non_zero.first(), Some(Scalar::F16(_))) {
        half::f16::from_f64(max / min).to_f64()
    } else {
        max / min
    };
    max >= 1e8 || min < 1e-4 || ratio > 1000.0
}

/// The element formatter numpy picks for the dtype.
enum ElementFormat {
    Float(FloatFormat),
    Int { width: usize },
    Bool { true_text: &'static str },
}

impl ElementFormat {
    fn fit(values: &[Scalar], is_float: bool, zero_dim: bool) -> ElementFormat {
        if is_float {
            return ElementFormat::Float(FloatFormat::fit(values));
        }
        if matches!(values.first(), Some(Scalar::Bool(_))) {
            // ' True' lines up with 'False' except in a 0-d array
            let true_text = if zero_dim { "True" } else { " True" };
            return ElementFormat::Bool { true_text };
        }
        let ints = values.iter().map(|v| match v {
            Scalar::Int(i) => *i,
            other => other.as_f64() as i64,
        });
        let (min, max) = ints.fold((i64::MAX, i64::MIN), |(lo, hi), x| (lo.min(x), hi.max(x)));
        let width = if values.is_empty() {
            0
        } else {
            min.to_string().len().max(max.to_string().len())
        };
        ElementFormat::Int { width }
    }

    fn format(&self, value: Scalar) -> String {
        match (self, value) {
            (ElementFormat::Float(format), value) => format.format(value),
            (ElementFormat::Bool { true_text }, Scalar::Bool(b)) => {
                if b { *true_text } else { "False" }.to_string()
            }
            (ElementFormat::Int { width }, Scalar::Int(i)) => format!("{i:>width$}"),
            (_, other) => format!("{}", other.as_f64()),
        }
    }
}

/// Line layout settings of one `array2string` call.
struct Layout<'a> {
    view: &'a ArrayView<'a>,
    strides: Vec<usize>,
    format: ElementFormat,
    separator: &'a str,
    summarize: bool,
}

impl Layout<'_> {
    fn element(&self, offset: usize) -> String {
        match self.view.values.get(offset) {
            Some(value) => self.format.format(value),
            None => "?".into(),
        }
    }

    /// numpy's `_formatArray` recursion for the sub-array at `axis` starting at `offset`.
    fn recurse(&self, axis: usize, offset: usize, hanging_indent: &str, width: isize) -> String {
        let ndim = self.view.shape.len();
        if axis == ndim {
            return self.element(offset);
        }
        let axes_left = ndim - axis;
        let next_indent = format!("{hanging_indent} ");
        let next_width = width - 1;
        let len = self.view.shape[axis];
        let stride = self.strides[axis];
        let edge = print_options().edgeitems;
        let show_summary = self.summarize && 2 * edge < len;
        let (leading, trailing) = if show_summary { (edge, edge) } else { (0, len) };
        let child =
            |i: usize| self.recurse(axis + 1, offset + i * stride, &next_indent, next_width);
        let mut s = String::new();
        if axes_left == 1 {
            let separator_width = self.separator.trim_end().len().max(1) as isize;
            let elem_width = width - separator_width;
            let mut line = hanging_indent.to_string();
            for i in 0..leading {
                extend_line(&mut s, &mut line, &child(i), elem_width, hanging_indent);
                line.push_str(self.separator);
            }
            if show_summary {
                extend_line(&mut s, &mut line, "...", elem_width, hanging_indent);
                line.push_str(self.separator);
            }
            for back in (2..=trailing).rev() {
                extend_line(
                    &mut s,
                    &mut line,
                    &child(len - back),
                    elem_width,
                    hanging_indent,
                );
                line.push_str(self.separator);
            }
            if len > 0 {
                extend_line(
                    &mut s,
                    &mut line,
                    &child(len - 1),
                    elem_width,
                    hanging_indent,
                );
            }
            s.push_str(&line);
        } else {
            let line_sep = format!(
                "{}{}",
                self.separator.trim_end(),
                "\n".repeat(axes_left - 1)
            );
            for i in 0..leading {
                s.push_str(hanging_indent);
                s.push_str(&child(i));
                s.push_str(&line_sep);
            }
            if show_summary {
                s.push_str(hanging_indent);
                s.push_str("...");
                s.push_str(&line_sep);
            }
            for back in (2..=trailing).rev() {
                s.push_str(hanging_indent);
                s.push_str(&child(len - back));
                s.push_str(&line_sep);
            }
            if len > 0 {
                s.push_str(hanging_indent);
                s.push_str(&child(len - 1));
            }
        }
        format!("[{}]", s.get(hanging_indent.len()..).unwrap_or(""))
    }
}

/// numpy's `_extendLine`: wrap before `word` if it would pass `width`, unless
/// the line holds nothing but the indent (wrapping would not help).
fn extend_line(s: &mut String, line: &mut String, word: &str, width: isize, indent: &str) {
    let needs_wrap = (line.len() + word.len()) as isize > width && line.len() > indent.len();
    if needs_wrap {
        s.push_str(line.trim_end());
        s.push('\n');
        *line = indent.to_string();
    }
    line.push_str(word);
}

/// numpy's `array2string` for a non-empty array.
fn array2string(view: &ArrayView, separator: &str, prefix: &str, line_width: usize) -> String {
    let options = print_options();
    let summarize = view.size() > options.threshold;
    let shown: Vec<Scalar> = shown_offsets(view.shape, summarize, options.edgeitems)
        .into_iter()
        .filter_map(|offset| view.values.get(offset))
        .collect();
    let format = ElementFormat::fit(&shown, view.values.is_float(), view.shape.is_empty());
    let layout = Layout {
        view,
        strides: strides(view.shape),
        format,
        separator,
        summarize,
    };
    let next_line_prefix = format!(" {}", " ".repeat(prefix.len()));
    layout.recurse(0, 0, &next_line_prefix, line_width as isize)
}

/// The element formatter numpy would use for `view` (fitted to the elements
/// shown at the default threshold), for renderers that lay elements out
/// themselves (HTML). Returns the text of the element at a flat offset.
pub(crate) fn element_formatter<'a>(view: &'a ArrayView<'a>) -> impl Fn(usize) -> String + 'a {
    let summarize = view.size() > THRESHOLD;
    let shown: Vec<Scalar> = shown_offsets(view.shape, summarize, EDGE_ITEMS)
        .into_iter()
        .filter_map(|offset| view.values.get(offset))
        .collect();
    let format = ElementFormat::fit(&shown, view.values.is_float(), view.shape.is_empty());
    move |offset| {
        view.values
            .get(offset)
            .map_or_else(|| "?".into(), |value| format.format(value))
    }
}

/// numpy's `str()` of a 0-d array: the scalar's own str (f32 keeps f32 digits).
fn scalar_str(value: Scalar) -> String {
    match value {
        Scalar::Bool(b) => if b { "True" } else { "False" }.into(),
        Scalar::Int(i) => i.to_string(),
        float => {
            let x = float.as_f64();
            if x.is_nan() {
                return "nan".into();
            }
            if x.is_infinite() {
                return if x < 0.0 { "-inf" } else { "inf" }.into();
            }
            // numpy decides on the value itself: float32(1e-4) is just below 1e-4
            let scientific = x != 0.0 && !(1e-4..1e16).contains(&x.abs());
            format!(
                "{}{}",
                sign_of(float),
                repr_style(&float.shortest(), scientific, true)
            )
        }
    }
}

/// numpy's `str(arr)` with default print options.
pub fn numpy_str(a: &ArrayView) -> String {
    if !a.is_consistent() {
        return a.inconsistency_note();
    }
    if a.shape.is_empty() {
        return a.values.get(0).map(scalar_str).unwrap_or_default();
    }
    if a.size() == 0 {
        return "[]".into();
    }
    array2string(a, " ", "", print_options().linewidth)
}

/// dtypes numpy's repr leaves implicit.
fn numpy_implies_dtype(dtype_name: &str) -> bool {
    matches!(dtype_name, "float64" | "int64" | "bool")
}

/// numpy's `repr(arr)` (`array([...], dtype=...)`).
pub fn numpy_repr(a: &ArrayView, dtype_name: &str) -> String {
    const PREFIX: &str = "array(";
    let body = if a.size() > 0 {
        // numpy keeps room for the closing ")" on every line
        array2string(a, ", ", PREFIX, print_options().linewidth.saturating_sub(1))
    } else if a.shape == [0] {
        "[]".into()
    } else {
        format!("[], shape={}", shape_tuple(a.shape))
    };
    let arr_str = format!("{PREFIX}{body}");
    if numpy_implies_dtype(dtype_name) && a.size() > 0 {
        return format!("{arr_str})");
    }
    let dtype_str = format!("dtype={dtype_name})");
    let arr_str = format!("{arr_str},");
    let last_line_len = arr_str.len() - arr_str.rfind('\n').map_or(0, |i| i + 1);
    let spacer = if last_line_len + dtype_str.len() + 1 > print_options().linewidth {
        format!("\n{}", " ".repeat(PREFIX.len()))
    } else {
        " ".into()
    };
    format!("{arr_str}{spacer}{dtype_str}")
}

/// MXNet numpy-mode `repr`: numpy's repr, then `dtype=` shown unless float32 or
/// bool, and `, ctx=...` added when `ctx` (the device text) is given for a
/// non-CPU device.
pub fn mxnet_np_repr(a: &ArrayView, dtype_name: &str, ctx: Option<&str>) -> String {
    if !a.is_consistent() {
        return a.inconsistency_note();
    }
    let numpy = numpy_repr(a, dtype_name);
    let mut text = if numpy.contains("dtype=") {
        if dtype_name == "float32" {
            let cut = numpy.rfind(',').unwrap_or(numpy.len());
            format!("{})", &numpy[..cut])
        } else {
            numpy
        }
    } else if dtype_name != "float32" && dtype_name != "bool" {
        format!(
            "{}, dtype={dtype_name})",
            numpy.strip_suffix(')').unwrap_or(&numpy)
        )
    } else {
        numpy
    };
    if let Some(ctx) = ctx.filter(|c| !c.starts_with("cpu")) {
        text = format!("{}, ctx={ctx})", text.strip_suffix(')').unwrap_or(&text));
    }
    text
}

/// MXNet's legacy `NDArray` repr and print: `\n[...]\n<NDArray 2x3 @cpu(0)>`.
pub fn mxnet_legacy_repr(a: &ArrayView, device: &str) -> String {
    let shape: Vec<String> = a.shape.iter().map(usize::to_string).collect();
    format!(
        "\n{}\n<NDArray {} @{device}>",
        numpy_str(a),
        shape.join("x")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn f32_view<'a>(values: &'a [f32], shape: &'a [usize]) -> ArrayView<'a> {
        ArrayView {
            values: HostValues::F32(values),
            shape,
        }
    }

    fn arange_f32(n: usize) -> Vec<f32> {
        (0..n).map(|i| i as f32).collect()
    }

    fn str_f32(values: &[f32]) -> String {
        numpy_str(&f32_view(values, &[values.len()]))
    }

    fn str_f64(values: &[f64]) -> String {
        numpy_str(&ArrayView {
            values: HostValues::F64(values),
            shape: &[values.len()],
        })
    }

    // ---- every case of the MXNet 1.9.1 reference file ----

    #[test]
    fn reference_legacy_vector() {
        let a = f32_view(&[1.0, 2.0, 3.0], &[3]);
        assert_eq!(
            mxnet_legacy_repr(&a, "cpu(0)"),
            "\n[1. 2. 3.]\n<NDArray 3 @cpu(0)>"
        );
    }

    #[test]
    fn reference_legacy_ones_and_zeros() {
        let ones = [1.0f32; 6];
        assert_eq!(
            mxnet_legacy_repr(&f32_view(&ones, &[2, 3]), "cpu(0)"),
            "\n[[1. 1. 1.]\n [1. 1. 1.]]\n<NDArray 2x3 @cpu(0)>"
        );
        assert_eq!(
            mxnet_legacy_repr(&f32_view(&ones, &[2, 3]), "gpu(0)"),
            "\n[[1. 1. 1.]\n [1. 1. 1.]]\n<NDArray 2x3 @gpu(0)>"
        );
        let zeros = [0.0f32; 6];
        assert_eq!(
            mxnet_legacy_repr(&f32_view(&zeros, &[3, 2]), "cpu(0)"),
            "\n[[0. 0.]\n [0. 0.]\n [0. 0.]]\n<NDArray 3x2 @cpu(0)>"
        );
    }

    const UNIFORM: [f32; 6] = [
        0.548_813_5,
        0.592_844_6,
        0.715_189_34,
        0.844_265_76,
        0.602_763_35,
        0.857_945_6,
    ];

    #[test]
    fn reference_legacy_uniform() {
        assert_eq!(
            mxnet_legacy_repr(&f32_view(&UNIFORM, &[2, 3]), "cpu(0)"),
            "\n[[0.5488135  0.5928446  0.71518934]\n [0.84426576 0.60276335 0.8579456 ]]\n<NDArray 2x3 @cpu(0)>"
        );
    }

    #[test]
    fn reference_exp_times_x() {
        let values = [20.085_537f32, 109.1963, 445.2395];
        assert_eq!(str_f32(&values), "[ 20.085537 109.1963   445.2395  ]");
        assert_eq!(
            mxnet_np_repr(&f32_view(&values, &[3]), "float32", None),
            "array([ 20.085537, 109.1963  , 445.2395  ])"
        );
    }

    #[test]
    fn reference_sums() {
        assert_eq!(
            mxnet_legacy_repr(&f32_view(&[6.0], &[1]), "cpu(0)"),
            "\n[6.]\n<NDArray 1 @cpu(0)>"
        );
        let zero_dim = f32_view(&[6.0], &[]);
        assert_eq!(mxnet_np_repr(&zero_dim, "float32", None), "array(6.)");
        assert_eq!(numpy_str(&zero_dim), "6.0");
        assert_eq!(
            mxnet_legacy_repr(&f32_view(&[0.0], &[1]), "cpu(0)"),
            "\n[0.]\n<NDArray 1 @cpu(0)>"
        );
    }

    const BLOCKS_STR: &str = "[[[ 0.  1.  2.  3.]\n  [ 4.  5.  6.  7.]\n  [ 8.  9. 10. 11.]]\n\n [[12. 13. 14. 15.]\n  [16. 17. 18. 19.]\n  [20. 21. 22. 23.]]]";

    #[test]
    fn reference_three_dimensional_blocks() {
        let values = arange_f32(24);
        let view = f32_view(&values, &[2, 3, 4]);
        assert_eq!(numpy_str(&view), BLOCKS_STR);
        assert_eq!(
            mxnet_legacy_repr(&view, "cpu(0)"),
            format!("\n{BLOCKS_STR}\n<NDArray 2x3x4 @cpu(0)>")
        );
        assert_eq!(
            mxnet_np_repr(&view, "float32", None),
            "array([[[ 0.,  1.,  2.,  3.],\n        [ 4.,  5.,  6.,  7.],\n        [ 8.,  9., 10., 11.]],\n\n       [[12., 13., 14., 15.],\n        [16., 17., 18., 19.],\n        [20., 21., 22., 23.]]])"
        );
    }

    const BIG_STR: &str = "[[0.00000e+00 1.00000e+00 2.00000e+00 ... 9.97000e+02 9.98000e+02
  9.99000e+02]
 [1.00000e+03 1.00100e+03 1.00200e+03 ... 1.99700e+03 1.99800e+03
  1.99900e+03]
 [2.00000e+03 2.00100e+03 2.00200e+03 ... 2.99700e+03 2.99800e+03
  2.99900e+03]
 ...
 [9.97000e+05 9.97001e+05 9.97002e+05 ... 9.97997e+05 9.97998e+05
  9.97999e+05]
 [9.98000e+05 9.98001e+05 9.98002e+05 ... 9.98997e+05 9.98998e+05
  9.98999e+05]
 [9.99000e+05 9.99001e+05 9.99002e+05 ... 9.99997e+05 9.99998e+05
  9.99999e+05]]";

    const BIG_REPR: &str = "array([[0.00000e+00, 1.00000e+00, 2.00000e+00, ..., 9.97000e+02,
        9.98000e+02, 9.99000e+02],
       [1.00000e+03, 1.00100e+03, 1.00200e+03, ..., 1.99700e+03,
        1.99800e+03, 1.99900e+03],
       [2.00000e+03, 2.00100e+03, 2.00200e+03, ..., 2.99700e+03,
        2.99800e+03, 2.99900e+03],
       ...,
       [9.97000e+05, 9.97001e+05, 9.97002e+05, ..., 9.97997e+05,
        9.97998e+05, 9.97999e+05],
       [9.98000e+05, 9.98001e+05, 9.98002e+05, ..., 9.98997e+05,
        9.98998e+05, 9.98999e+05],
       [9.99000e+05, 9.99001e+05, 9.99002e+05, ..., 9.99997e+05,
        9.99998e+05, 9.99999e+05]])";

    #[test]
    fn reference_million_elements_are_elided() {
        let values = arange_f32(1_000_000);
        let view = f32_view(&values, &[1000, 1000]);
        assert_eq!(numpy_str(&view), BIG_STR);
        assert_eq!(
            mxnet_legacy_repr(&view, "cpu(0)"),
            format!("\n{BIG_STR}\n<NDArray 1000x1000 @cpu(0)>")
        );
        assert_eq!(mxnet_np_repr(&view, "float32", None), BIG_REPR);
    }

    #[test]
    fn reference_dense_outputs() {
        let out = [0.032_269_83f32, 0.045_538_18, 0.045_496_78];
        let view = f32_view(&out, &[3, 1]);
        assert_eq!(
            mxnet_legacy_repr(&view, "cpu(0)"),
            "\n[[0.03226983]\n [0.04553818]\n [0.04549678]]\n<NDArray 3x1 @cpu(0)>"
        );
        assert_eq!(
            mxnet_np_repr(&view, "float32", None),
            "array([[0.03226983],\n       [0.04553818],\n       [0.04549678]])"
        );
        let weight = [0.006_283_65f32, 0.048_615_24];
        let view = f32_view(&weight, &[1, 2]);
        assert_eq!(
            mxnet_legacy_repr(&view, "cpu(0)"),
            "\n[[0.00628365 0.04861524]]\n<NDArray 1x2 @cpu(0)>"
        );
        assert_eq!(
            mxnet_np_repr(&view, "float32", None),
            "array([[0.00628365, 0.04861524]])"
        );
    }

    #[test]
    fn reference_numpy_mode() {
        let ones = [1.0f32; 6];
        let view = f32_view(&ones, &[2, 3]);
        assert_eq!(
            mxnet_np_repr(&view, "float32", None),
            "array([[1., 1., 1.],\n       [1., 1., 1.]])"
        );
        assert_eq!(numpy_str(&view), "[[1. 1. 1.]\n [1. 1. 1.]]");
        assert_eq!(
            mxnet_np_repr(&f32_view(&UNIFORM, &[2, 3]), "float32", None),
            "array([[0.5488135 , 0.5928446 , 0.71518934],\n       [0.84426576, 0.60276335, 0.8579456 ]])"
        );
        assert_eq!(
            mxnet_np_repr(&f32_view(&[0.0; 6], &[3, 2]), "float32", None),
            "array([[0., 0.],\n       [0., 0.],\n       [0., 0.]])"
        );
        let x = f32_view(&[1.0, 2.0, 3.0], &[3]);
        assert_eq!(mxnet_np_repr(&x, "float32", None), "array([1., 2., 3.])");
        assert_eq!(numpy_str(&x), "[1. 2. 3.]");
    }

    // ---- MXNet numpy-mode suffixes ----

    #[test]
    fn np_repr_adds_ctx_off_the_cpu() {
        let ones = [1.0f32; 6];
        let view = f32_view(&ones, &[2, 3]);
        assert_eq!(
            mxnet_np_repr(&view, "float32", Some("gpu(0)")),
            "array([[1., 1., 1.],\n       [1., 1., 1.]], ctx=gpu(0))"
        );
        assert_eq!(
            mxnet_np_repr(&view, "float32", Some("cpu(0)")),
            "array([[1., 1., 1.],\n       [1., 1., 1.]])"
        );
    }

    #[test]
    fn np_repr_shows_non_default_dtypes() {
        let f64s = [1.0f64, 2.5];
        let view = ArrayView {
            values: HostValues::F64(&f64s),
            shape: &[2],
        };
        assert_eq!(
            mxnet_np_repr(&view, "float64", Some("gpu(1)")),
            "array([1. , 2.5], dtype=float64, ctx=gpu(1))"
        );
        let ints = [1i32, 2, 3];
        let view = ArrayView {
            values: HostValues::I32(&ints),
            shape: &[3],
        };
        assert_eq!(
            mxnet_np_repr(&view, "int32", None),
            "array([1, 2, 3], dtype=int32)"
        );
        let longs = [1i64, -20];
        let view = ArrayView {
            values: HostValues::I64(&longs),
            shape: &[2],
        };
        assert_eq!(
            mxnet_np_repr(&view, "int64", None),
            "array([  1, -20], dtype=int64)"
        );
        let bools = [true, false];
        let view = ArrayView {
            values: HostValues::Bool(&bools),
            shape: &[2],
        };
        assert_eq!(mxnet_np_repr(&view, "bool", None), "array([ True, False])");
    }

    #[test]
    fn np_repr_of_empty_arrays() {
        let none: [f32; 0] = [];
        assert_eq!(
            mxnet_np_repr(&f32_view(&none, &[0]), "float32", None),
            "array([])"
        );
        assert_eq!(
            mxnet_np_repr(&f32_view(&none, &[2, 0]), "float32", None),
            "array([], shape=(2, 0))"
        );
        let none64: [f64; 0] = [];
        let view = ArrayView {
            values: HostValues::F64(&none64),
            shape: &[0],
        };
        assert_eq!(
            mxnet_np_repr(&view, "float64", None),
            "array([], dtype=float64)"
        );
        assert_eq!(numpy_str(&f32_view(&none, &[2, 0])), "[]");
    }

    #[test]
    fn int32_dtype_moves_to_its_own_line_when_too_long() {
        let values: Vec<i32> = (0..18).map(|i| i * 1000).collect();
        let view = ArrayView {
            values: HostValues::I32(&values),
            shape: &[18],
        };
        assert_eq!(
            mxnet_np_repr(&view, "int32", None),
            "array([    0,  1000,  2000,  3000,  4000,  5000,  6000,  7000,  8000,\n        9000, 10000, 11000, 12000, 13000, 14000, 15000, 16000, 17000],\n      dtype=int32)"
        );
    }

    #[test]
    fn int32_repr_wraps_rows_and_keeps_dtype() {
        let values: Vec<i32> = (0..20).map(|i| i * 1000).collect();
        let view = ArrayView {
            values: HostValues::I32(&values),
            shape: &[20],
        };
        assert_eq!(
            mxnet_np_repr(&view, "int32", None),
            "array([    0,  1000,  2000,  3000,  4000,  5000,  6000,  7000,  8000,\n        9000, 10000, 11000, 12000, 13000, 14000, 15000, 16000, 17000,\n       18000, 19000], dtype=int32)"
        );
    }

    // ---- numpy rules, verified by reasoning from arrayprint.py ----

    #[test]
    fn tiny_values_switch_to_scientific() {
        assert_eq!(str_f64(&[1e-5, 1.0]), "[1.e-05 1.e+00]");
        assert_eq!(str_f32(&[1e9]), "[1.e+09]");
        assert_eq!(str_f64(&[1e100, 1.5]), "[1.0e+100 1.5e+000]");
    }

    #[test]
    fn positional_padding() {
        assert_eq!(str_f64(&[0.1, 0.25]), "[0.1  0.25]");
        assert_eq!(str_f64(&[-1.5, 2.0]), "[-1.5  2. ]");
        assert_eq!(str_f64(&[-0.0, 1.0]), "[-0.  1.]");
        assert_eq!(str_f64(&[1000.0, 1.0]), "[1000.    1.]");
        assert_eq!(str_f64(&[1001.0, 1.0]), "[1.001e+03 1.000e+00]");
    }

    #[test]
    fn precision_is_capped_at_eight_digits() {
        assert_eq!(str_f64(&[0.1 + 0.2]), "[0.3]");
        assert_eq!(str_f64(&[1.0 / 3.0]), "[0.33333333]");
        assert_eq!(str_f64(&[2.0 / 3.0, 10.0]), "[ 0.66666667 10.        ]");
        assert_eq!(str_f32(&[0.1]), "[0.1]");
        assert_eq!(str_f64(&[f64::from(0.1f32)]), "[0.1]");
        assert_eq!(
            str_f64(&[1.0 / 3.0, 1e-4]),
            "[3.33333333e-01 1.00000000e-04]"
        );
    }

    #[test]
    fn non_finite_values() {
        assert_eq!(str_f64(&[f64::NAN, 1.0]), "[nan  1.]");
        assert_eq!(str_f64(&[f64::NEG_INFINITY, 1.5]), "[-inf  1.5]");
        assert_eq!(str_f64(&[f64::NAN, f64::INFINITY]), "[nan inf]");
        assert_eq!(str_f64(&[f64::NAN, 1e-7]), "[   nan 1.e-07]");
    }

    #[test]
    fn integers_and_booleans() {
        let ints = [1i64, -2, 300];
        let view = ArrayView {
            values: HostValues::I64(&ints),
            shape: &[3],
        };
        assert_eq!(numpy_str(&view), "[  1  -2 300]");
        let bools = [true, false, true];
        let view = ArrayView {
            values: HostValues::Bool(&bools),
            shape: &[3],
        };
        assert_eq!(numpy_str(&view), "[ True False  True]");
        let view = ArrayView {
            values: HostValues::Bool(&bools[..1]),
            shape: &[],
        };
        assert_eq!(numpy_str(&view), "True");
        assert_eq!(mxnet_np_repr(&view, "bool", None), "array(True)");
    }

    #[test]
    fn zero_dim_scalars() {
        assert_eq!(numpy_str(&f32_view(&[0.1], &[])), "0.1");
        assert_eq!(numpy_str(&f32_view(&[1e16], &[])), "1e+16");
        assert_eq!(numpy_str(&f32_view(&[-2.5e-5], &[])), "-2.5e-05");
        assert_eq!(numpy_str(&f32_view(&[1e-4], &[])), "1e-04");
        let ints = [7i32];
        let view = ArrayView {
            values: HostValues::I32(&ints),
            shape: &[],
        };
        assert_eq!(numpy_str(&view), "7");
        assert_eq!(mxnet_np_repr(&view, "int32", None), "array(7, dtype=int32)");
    }

    #[test]
    fn long_rows_wrap_at_75_columns() {
        let values: Vec<f32> = (0..30).map(|i| i as f32 * 0.5).collect();
        assert_eq!(
            str_f32(&values),
            "[ 0.   0.5  1.   1.5  2.   2.5  3.   3.5  4.   4.5  5.   5.5  6.   6.5\n  7.   7.5  8.   8.5  9.   9.5 10.  10.5 11.  11.5 12.  12.5 13.  13.5\n 14.  14.5]"
        );
    }

    #[test]
    fn long_vectors_are_summarised() {
        let values = arange_f32(2000);
        assert_eq!(
            str_f32(&values),
            "[0.000e+00 1.000e+00 2.000e+00 ... 1.997e+03 1.998e+03 1.999e+03]"
        );
        let ints: Vec<i64> = (0..2000).collect();
        let view = ArrayView {
            values: HostValues::I64(&ints),
            shape: &[2000],
        };
        assert_eq!(numpy_str(&view), "[   0    1    2 ... 1997 1998 1999]");
        assert_eq!(
            mxnet_np_repr(&view, "int64", None),
            "array([   0,    1,    2, ..., 1997, 1998, 1999], dtype=int64)"
        );
    }

    #[test]
    fn malformed_view_does_not_panic() {
        let view = f32_view(&[1.0, 2.0], &[2, 3]);
        assert_eq!(numpy_str(&view), "<array of shape (2, 3) holding 2 values>");
    }
}
