//! PyTorch's tensor repr (`torch/_tensor_str.py` with default print options:
//! precision 4, threshold 1000, edge items 3, line width 80).

use super::arrayprint::{shown_offsets, strides, ArrayView, Scalar, EDGE_ITEMS, THRESHOLD};
use super::floatfmt::{exponent_text, rounded_fixed, rounded_sig};

const PRECISION: usize = 4;
const LINE_WIDTH: usize = 80;

/// PyTorch's print options (`torch.set_printoptions`), one set per thread (a session).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TorchPrintOptions {
    pub precision: usize,
    pub threshold: usize,
    pub edgeitems: usize,
    pub linewidth: usize,
    /// `Some(true)` always scientific, `Some(false)` never; None decides per tensor.
    pub sci_mode: Option<bool>,
}

impl Default for TorchPrintOptions {
    fn default() -> Self {
        TorchPrintOptions {
            precision: PRECISION,
            threshold: THRESHOLD,
            edgeitems: EDGE_ITEMS,
            linewidth: LINE_WIDTH,
            sci_mode: None,
        }
    }
}

thread_local! {
    static OPTIONS: std::cell::Cell<TorchPrintOptions> = std::cell::Cell::new(TorchPrintOptions::default());
}

/// The PyTorch print options in effect.
pub fn torch_print_options() -> TorchPrintOptions {
    OPTIONS.with(|o| o.get())
}

/// Sets PyTorch's print options; returns the ones they replace.
pub fn set_torch_print_options(options: TorchPrintOptions) -> TorchPrintOptions {
    OPTIONS.with(|o| o.replace(options))
}

/// Python's `'{:.4f}'.format(x)` / `'{:.4e}'` for the values PyTorch prints.
fn python_fixed(x: f64, precision: usize) -> String {
    if let Some(text) = non_finite(x) {
        return text.into();
    }
    let sign = if x.is_sign_negative() { "-" } else { "" };
    let (int_part, frac_part) = rounded_fixed(x, precision);
    if frac_part.is_empty() {
        format!("{sign}{int_part}")
    } else {
        format!("{sign}{int_part}.{frac_part}")
    }
}

fn python_exp(x: f64, precision: usize) -> String {
    if let Some(text) = non_finite(x) {
        return text.into();
    }
    let sign = if x.is_sign_negative() { "-" } else { "" };
    let digits = rounded_sig(x, precision + 1);
    let (first, rest) = digits.digits.split_at(1);
    let rest = format!("{rest:0<precision$}");
    let dot = if precision == 0 { "" } else { "." };
    format!(
        "{sign}{first}{dot}{rest}e{}",
        exponent_text(digits.exp10(), 2)
    )
}

fn non_finite(x: f64) -> Option<&'static str> {
    if x.is_nan() {
        Some("nan")
    } else if x == f64::INFINITY {
        Some("inf")
    } else if x == f64::NEG_INFINITY {
        Some("-inf")
    } else {
        None
    }
}

/// PyTorch's `_Formatter`, fitted to the values that will be shown.
struct Formatter {
    floating: bool,
    int_mode: bool,
    sci_mode: bool,
    max_width: usize,
}

impl Formatter {
    fn fit(values: &[Scalar], floating: bool) -> Formatter {
        let mut formatter = Formatter {
            floating,
            int_mode: true,
            sci_mode: false,
            max_width: 1,
        };
        if !floating {
            for &value in values {
                formatter.max_width = formatter.max_width.max(integer_text(value).len());
            }
            return formatter;
        }
        let nonzero_finite: Vec<f64> = values
            .iter()
            .map(|v| v.as_f64())
            .filter(|x| x.is_finite() && *x != 0.0)
            .collect();
        if nonzero_finite.is_empty() {
            return formatter;
        }
        let max = nonzero_finite.iter().map(|x| x.abs()).fold(0.0, f64::max);
        let min = nonzero_finite
            .iter()
            .map(|x| x.abs())
            .fold(f64::INFINITY, f64::min);
        formatter.int_mode = nonzero_finite.iter().all(|x| x.ceil() == *x);
        let wide_range = max / min > 1000.0 || max > 1.0e8;
        let options = torch_print_options();
        formatter.sci_mode = match options.sci_mode {
            Some(forced) => forced,
            None if formatter.int_mode => wide_range,
            None => wide_range || min < 1.0e-4,
        };
        let precision = options.precision;
        for &x in &nonzero_finite {
            let width = if formatter.sci_mode {
                python_exp(x, precision).len()
            } else if formatter.int_mode {
                // room for the "." that marks a float tensor
                python_fixed(x, 0).len() + 1
            } else {
                python_fixed(x, precision).len()
            };
            formatter.max_width = formatter.max_width.max(width);
        }
        formatter
    }

    fn format(&self, value: Scalar) -> String {
        let text = if !self.floating {
            integer_text(value)
        } else {
            let x = value.as_f64();
            if self.sci_mode {
                python_exp(x, torch_print_options().precision)
            } else if self.int_mode {
                let mut text = python_fixed(x, 0);
                if x.is_finite() {
                    text.push('.');
                }
                text
            } else {
                python_fixed(x, torch_print_options().precision)
            }
        };
        format!("{text:>width$}", width = self.max_width)
    }
}

fn integer_text(value: Scalar) -> String {
    match value {
        Scalar::Int(i) => i.to_string(),
        Scalar::Bool(b) => if b { "True" } else { "False" }.into(),
        other => format!("{}", other.as_f64()),
    }
}

struct TensorLayout<'a> {
    view: &'a ArrayView<'a>,
    strides: Vec<usize>,
    formatter: Formatter,
    summarize: bool,
}

impl TensorLayout<'_> {
    fn element(&self, offset: usize) -> String {
        self.view
            .values
            .get(offset)
            .map_or_else(|| "?".into(), |v| self.formatter.format(v))
    }

    /// The rows of a summarised axis: edge items and `None` for the elision.
    fn indices(&self, len: usize) -> Vec<Option<usize>> {
        let edge = torch_print_options().edgeitems;
        if self.summarize && len > 2 * edge {
            (0..edge)
                .map(Some)
                .chain(std::iter::once(None))
                .chain((len - edge..len).map(Some))
                .collect()
        } else {
            (0..len).map(Some).collect()
        }
    }

    /// `_tensor_str_with_formatter` for the sub-tensor at `axis`/`offset`.
    fn recurse(&self, axis: usize, offset: usize, indent: usize) -> String {
        let ndim = self.view.shape.len();
        let len = self.view.shape.get(axis).copied().unwrap_or(0);
        let stride = self.strides.get(axis).copied().unwrap_or(1);
        if ndim - axis == 1 {
            return self.vector(offset, len, stride, indent);
        }
        let slices: Vec<String> = self
            .indices(len)
            .into_iter()
            .map(|i| match i {
                Some(i) => self.recurse(axis + 1, offset + i * stride, indent + 1),
                None => "...".into(),
            })
            .collect();
        let joiner = format!(
            ",{}{}",
            "\n".repeat(ndim - axis - 1),
            " ".repeat(indent + 1)
        );
        format!("[{}]", slices.join(&joiner))
    }

    /// `_vector_str`: elements packed `elements_per_line` to a line.
    fn vector(&self, offset: usize, len: usize, stride: usize, indent: usize) -> String {
        let element_length = self.formatter.max_width + 2;
        let per_line =
            (torch_print_options().linewidth.saturating_sub(indent) / element_length).max(1);
        let data: Vec<String> = self
            .indices(len)
            .into_iter()
            .map(|i| match i {
                Some(i) => self.element(offset + i * stride),
                None => " ...".into(),
            })
            .collect();
        let lines: Vec<String> = data.chunks(per_line).map(|line| line.join(", ")).collect();
        let joiner = format!(",\n{}", " ".repeat(indent + 1));
        format!("[{}]", lines.join(&joiner))
    }
}

/// PyTorch's dtype spelling and whether repr leaves it implicit.
fn torch_dtype(dtype_name: &str) -> (String, bool) {
    let implied = matches!(dtype_name, "float32" | "int64" | "bool");
    (format!("torch.{dtype_name}"), implied)
}

/// PyTorch's `repr(tensor)`: `tensor([[1., 1.]], device='cuda:0')`. `device` is
/// PyTorch's device text (`cuda:0`); `None` or `cpu` prints no device.
/// float32, int64 and bool print no dtype; others add `dtype=torch.float64` etc.
pub fn torch_repr(a: &ArrayView, device: Option<&str>, dtype_name: &str) -> String {
    torch_repr_with(a, device, dtype_name, None)
}

/// [`torch_repr`] with autograd's suffix (`grad_fn=<SumBackward0>` or `requires_grad=True`),
/// which PyTorch puts after the device and dtype.
pub fn torch_repr_with(
    a: &ArrayView,
    device: Option<&str>,
    dtype_name: &str,
    grad: Option<&str>,
) -> String {
    const PREFIX: &str = "tensor(";
    if !a.is_consistent() {
        return a.inconsistency_note();
    }
    let mut suffixes = Vec::new();
    if let Some(device) = device.filter(|d| !d.starts_with("cpu")) {
        suffixes.push(format!("device='{device}'"));
    }
    let (dtype_text, implied) = torch_dtype(dtype_name);
    let body = if a.size() == 0 {
        if a.shape.len() != 1 {
            let dims: Vec<String> = a.shape.iter().map(usize::to_string).collect();
            suffixes.push(format!("size=({})", tuple_body(&dims)));
        }
        if dtype_name != "float32" {
            suffixes.push(format!("dtype={dtype_text}"));
        }
        "[]".to_string()
    } else {
        if !implied {
            suffixes.push(format!("dtype={dtype_text}"));
        }
        let options = torch_print_options();
        let summarize = a.size() > options.threshold;
        let shown: Vec<Scalar> = shown_offsets(a.shape, summarize, options.edgeitems)
            .into_iter()
            .filter_map(|offset| a.values.get(offset))
            .collect();
        let layout = TensorLayout {
            view: a,
            strides: strides(a.shape),
            formatter: Formatter::fit(&shown, a.values.is_float()),
            summarize,
        };
        if a.shape.is_empty() {
            layout.element(0)
        } else {
            layout.recurse(0, 0, PREFIX.len())
        }
    };
    suffixes.extend(grad.map(str::to_string));
    add_suffixes(&format!("{PREFIX}{body}"), &suffixes, PREFIX.len())
}

fn tuple_body(items: &[String]) -> String {
    match items {
        [single] => format!("{single},"),
        _ => items.join(", "),
    }
}

/// `_add_suffixes`, including PyTorch's own measure of the last line (which
/// counts two more characters than it has; kept so wrapping matches).
fn add_suffixes(tensor_str: &str, suffixes: &[String], indent: usize) -> String {
    let mut out = tensor_str.to_string();
    let rfind = tensor_str.rfind('\n').map_or(-1, |i| i as isize);
    let mut last_line_len = (tensor_str.len() as isize - rfind + 1) as usize;
    for suffix in suffixes {
        if last_line_len + suffix.len() + 2 > torch_print_options().linewidth {
            out.push_str(&format!(",\n{}{suffix}", " ".repeat(indent)));
            last_line_len = indent + suffix.len();
        } else {
            out.push_str(&format!(", {suffix}"));
            last_line_len += suffix.len() + 2;
        }
    }
    out.push(')');
    out
}

#[cfg(test)]
mod tests {
    use super::super::arrayprint::HostValues;
    use super::*;

    fn f32_repr(values: &[f32], shape: &[usize], device: Option<&str>) -> String {
        torch_repr(
            &ArrayView {
                values: HostValues::F32(values),
                shape,
            },
            device,
            "float32",
        )
    }

    #[test]
    fn seed_chapter_ones_on_cuda() {
        assert_eq!(
            f32_repr(&[1.0; 6], &[2, 3], Some("cuda:0")),
            "tensor([[1., 1., 1.],\n        [1., 1., 1.]], device='cuda:0')"
        );
    }

    #[test]
    fn seed_chapter_rand_on_cuda() {
        let values = [0.6174f32, 0.9236, 0.1390, 0.0169, 0.4551, 0.1881];
        assert_eq!(
            f32_repr(&values, &[2, 3], Some("cuda:0")),
            "tensor([[0.6174, 0.9236, 0.1390],\n        [0.0169, 0.4551, 0.1881]], device='cuda:0')"
        );
        let plus_one: Vec<f32> = values.iter().map(|v| v + 1.0).collect();
        assert_eq!(
            f32_repr(&plus_one, &[2, 3], Some("cuda:0")),
            "tensor([[1.6174, 1.9236, 1.1390],\n        [1.0169, 1.4551, 1.1881]], device='cuda:0')"
        );
        assert_eq!(
            f32_repr(&[-0.5338, -0.5338], &[2, 1], Some("cuda:0")),
            "tensor([[-0.5338],\n        [-0.5338]], device='cuda:0')"
        );
    }

    #[test]
    fn cpu_device_is_omitted() {
        assert_eq!(f32_repr(&[1.0, 2.0], &[2], Some("cpu")), "tensor([1., 2.])");
        assert_eq!(
            f32_repr(&[1.5, 2.0], &[2], None),
            "tensor([1.5000, 2.0000])"
        );
    }

    #[test]
    fn integer_and_other_dtypes() {
        let longs = [1i64, 2, 3];
        let view = ArrayView {
            values: HostValues::I64(&longs),
            shape: &[3],
        };
        assert_eq!(torch_repr(&view, None, "int64"), "tensor([1, 2, 3])");
        let ints = [1i32, -20];
        let view = ArrayView {
            values: HostValues::I32(&ints),
            shape: &[2],
        };
        assert_eq!(
            torch_repr(&view, None, "int32"),
            "tensor([  1, -20], dtype=torch.int32)"
        );
        let doubles = [0.5f64, 0.25];
        let view = ArrayView {
            values: HostValues::F64(&doubles),
            shape: &[2],
        };
        assert_eq!(
            torch_repr(&view, Some("cuda:1"), "float64"),
            "tensor([0.5000, 0.2500], device='cuda:1', dtype=torch.float64)"
        );
        let bools = [true, false];
        let view = ArrayView {
            values: HostValues::Bool(&bools),
            shape: &[2],
        };
        assert_eq!(torch_repr(&view, None, "bool"), "tensor([ True, False])");
    }

    #[test]
    fn scientific_mode() {
        assert_eq!(
            f32_repr(&[1e-5, 1.0], &[2], None),
            "tensor([1.0000e-05, 1.0000e+00])"
        );
        assert_eq!(
            f32_repr(&[1e9, 1.0], &[2], None),
            "tensor([1.0000e+09, 1.0000e+00])"
        );
        assert_eq!(
            f32_repr(&[100.0, 2000.0], &[2], None),
            "tensor([ 100., 2000.])"
        );
    }

    #[test]
    fn scalars_and_empty() {
        assert_eq!(f32_repr(&[6.0], &[], None), "tensor(6.)");
        assert_eq!(f32_repr(&[0.25], &[], None), "tensor(0.2500)");
        assert_eq!(f32_repr(&[], &[0], None), "tensor([])");
        assert_eq!(f32_repr(&[], &[2, 0], None), "tensor([], size=(2, 0))");
        assert_eq!(
            f32_repr(&[f32::NAN, 1.0, f32::INFINITY], &[3], None),
            "tensor([nan, 1., inf])"
        );
    }

    #[test]
    fn long_vectors_wrap_and_summarise() {
        let values: Vec<f32> = (0..20).map(|i| i as f32 * 0.5).collect();
        assert_eq!(
            f32_repr(&values, &[20], None),
            "tensor([0.0000, 0.5000, 1.0000, 1.5000, 2.0000, 2.5000, 3.0000, 3.5000, 4.0000,\n        4.5000, 5.0000, 5.5000, 6.0000, 6.5000, 7.0000, 7.5000, 8.0000, 8.5000,\n        9.0000, 9.5000])"
        );
        let values: Vec<f32> = (0..2000).map(|i| i as f32).collect();
        assert_eq!(
            f32_repr(&values, &[2000], None),
            "tensor([0.0000e+00, 1.0000e+00, 2.0000e+00,  ..., 1.9970e+03, 1.9980e+03,\n        1.9990e+03])"
        );
    }
}
