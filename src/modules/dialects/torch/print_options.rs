//! `torch.set_printoptions(precision=None, threshold=None, edgeitems=None, linewidth=None,
//! profile=None, sci_mode=None)`: what the tensor printer (`display::torch`) reads. As
//! PyTorch's, a profile sets all four numbers first and `sci_mode` is set by every call.

use crate::display::torch::{set_torch_print_options, torch_print_options, TorchPrintOptions};
use crate::object::error::Exc;
use crate::object::ops::as_i64;
use crate::object::value::{Args, Module, Value};
use crate::object::{builtin, Interpreter};

fn set_printoptions(_it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let mut o = torch_print_options();
    let number = |v: Option<Value>, name: &str| -> Result<Option<usize>, Exc> {
        match v {
            None => Ok(None),
            Some(Value::None) => Ok(None),
            Some(Value::Float(f)) if f.is_infinite() => Ok(Some(usize::MAX)),
            Some(v) => as_i64(&v).map(|n| Some(n.max(0) as usize)).ok_or_else(|| {
                Exc::type_error(format!("{name} must be an int, not {}", v.type_name()))
            }),
        }
    };
    let precision = number(a.take(0, "precision")?, "precision")?;
    let threshold = number(a.take(1, "threshold")?, "threshold")?;
    let edgeitems = number(a.take(2, "edgeitems")?, "edgeitems")?;
    let linewidth = number(a.take(3, "linewidth")?, "linewidth")?;
    let profile = a.take(4, "profile")?;
    let sci_mode = a.take(5, "sci_mode")?;
    a.finish(6)?;
    if let Some(Value::Str(p)) = &profile {
        let (precision, threshold, edgeitems) = match &**p {
            "short" => (2, 1000, 2),
            "full" => (4, usize::MAX, 3),
            _ => (4, 1000, 3),
        };
        o = TorchPrintOptions {
            precision,
            threshold,
            edgeitems,
            linewidth: 80,
            sci_mode: o.sci_mode,
        };
    }
    if let Some(p) = precision {
        o.precision = p;
    }
    if let Some(t) = threshold {
        o.threshold = t;
    }
    if let Some(e) = edgeitems {
        o.edgeitems = e;
    }
    if let Some(w) = linewidth {
        o.linewidth = w;
    }
    o.sci_mode = match &sci_mode {
        None | Some(Value::None) => None,
        Some(v) => Some(v.truthy()?),
    };
    set_torch_print_options(o);
    Ok(Value::None)
}

/// Adds `set_printoptions` to `torch`.
pub fn install(m: &Module) {
    m.set(
        "set_printoptions",
        builtin(
            "set_printoptions",
            "set_printoptions(precision=None, threshold=None, edgeitems=None, linewidth=None, profile=None, sci_mode=None): how tensors print.",
            set_printoptions,
        ),
    );
}
