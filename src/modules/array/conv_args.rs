//! The arguments convolution and pooling layers read in both dialects (Gluon's `Conv2D`/
//! `MaxPool2D`/`nd.Convolution`, PyTorch's `nn.Conv2d`/`F.conv2d`/`MaxPool2d`): `self`, an int or
//! a tuple as the (height, width) pair the layers use, numbers and flags, and PyTorch's error for
//! an input and a weight of different types or devices. The output-size arithmetic is
//! `nn::conv` (`pool_out`, `same_padding`), which the layers themselves use.
use crate::modules::python::native::usize_arg;
use crate::object::error::{Exc, ExcKind};
use crate::object::ops::as_f64;
use crate::object::value::{Args, Value};
use crate::object::Interpreter;
use crate::runtime::{Array, DType, Device, DeviceKind};

/// The receiver of a native `__init__`/`forward`: `self` may come by keyword; only a positional
/// one shifts the others.
pub fn self_arg(a: &mut Args) -> Result<Value, Exc> {
    let positional = !a.pos.is_empty();
    let this = a.required(0, "self")?;
    if positional {
        a.pos.remove(0);
    }
    Ok(this)
}

/// How a dialect names an int in its messages: MXNet says "integer", PyTorch "int".
#[derive(Clone, Copy)]
pub enum IntWord {
    Integer,
    Int,
}

impl IntWord {
    fn text(self) -> &'static str {
        match self {
            IntWord::Integer => "integer",
            IntWord::Int => "int",
        }
    }
}

/// An int or a tuple of `n` ints (`kernel_size=3`, `(3, 5)`) as the pair the layers use, a
/// one-dimensional value in the second slot; None (or Python's None) is `default` everywhere.
pub fn int_pair(
    it: &mut dyn Interpreter,
    v: Option<&Value>,
    n: usize,
    default: usize,
    what: &str,
    word: IntWord,
) -> Result<[usize; 2], Exc> {
    let vals: Vec<usize> = match v {
        None | Some(Value::None) => vec![default; n],
        Some(v @ (Value::Tuple(_) | Value::List(_))) => {
            let items = it.iterate(v)?;
            if items.len() != n {
                let word = word.text();
                return Err(Exc::value_error(format!(
                    "{what} must be an {word} or a tuple of {n} {word}s, got {} values",
                    items.len()
                )));
            }
            items
                .iter()
                .map(|x| usize_arg(x, what))
                .collect::<Result<_, _>>()?
        }
        Some(v) => vec![usize_arg(v, what)?; n],
    };
    Ok(match vals[..] {
        [one] => [1, one],
        [h, w, ..] => [h, w],
        [] => [default, default],
    })
}

/// A number argument, `default` when absent.
pub fn float(v: Option<Value>, what: &str, default: f64) -> Result<f64, Exc> {
    match v {
        None => Ok(default),
        Some(v) => as_f64(&v).ok_or_else(|| {
            Exc::type_error(format!("{what} must be a number, got {}", v.type_name()))
        }),
    }
}

/// A flag argument by Python truth, `default` when absent.
pub fn truth(v: Option<Value>, default: bool) -> Result<bool, Exc> {
    v.map(|v| v.truthy())
        .transpose()
        .map(|b| b.unwrap_or(default))
}

/// PyTorch's legacy type name of a tensor: `torch.FloatTensor`, `torch.cuda.LongTensor`.
pub fn torch_type_name(a: &Array) -> String {
    type_name(a.dtype(), a.device())
}

fn type_name(dtype: DType, device: Device) -> String {
    // PyTorch's legacy type names: the scalar type's name (`Byte`, `Half`...) + `Tensor`.
    let base = super::arrays::torch_scalar_type_name(dtype);
    match device.kind {
        DeviceKind::Gpu => format!("torch.cuda.{base}Tensor"),
        DeviceKind::Cpu => format!("torch.{base}Tensor"),
    }
}

/// PyTorch's check before a convolution runs (ATen's `check_input_same_type_as_parameters`)
/// where the weight or the bias (`params`: name, dtype, device) is on another kind of device
/// than the input: their types differ (`torch.FloatTensor` against `torch.cuda.FloatTensor`).
/// An input on the CPU names the MKLDNN alternative, as the CPU path says it. Two GPUs have the
/// same type and are left to the device check; nothing is copied either way.
pub fn torch_conv_devices(x: &Array, params: &[(&str, DType, Device)]) -> Result<(), Exc> {
    for &(what, dtype, device) in params {
        if device.kind == x.device().kind {
            continue;
        }
        let mkldnn = if x.device().kind == DeviceKind::Cpu {
            format!(" or input should be a MKLDNN tensor and {what} is a dense tensor")
        } else {
            String::new()
        };
        return Err(Exc::new(
            ExcKind::RuntimeError,
            format!(
                "Input type ({}) and {what} type ({}) should be the same{mkldnn}",
                torch_type_name(x),
                type_name(dtype, device)
            ),
        ));
    }
    Ok(())
}
