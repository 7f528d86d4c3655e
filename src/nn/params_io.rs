//! `net.save_parameters(path)` / `net.load_parameters(path, ctx=...)` as safetensors files.
//!
//! Saving writes a temporary file in the target's directory and renames it over the target, so a
//! crash or a full disk never leaves a half-written file under the real name. Loading reads and
//! checks the whole file (format, names, dtypes, shapes) and builds every device copy before it
//! replaces any parameter, so a bad file or a failed copy changes nothing.
use std::collections::HashMap;
use std::path::Path;
use std::rc::Rc;

use super::autograd::Tape;
use super::layers::Parameter;
use super::tensor_file::{self, Hint, OutTensor, Source};
use crate::runtime::{Array, DType, Device, HostData, Runtime, RuntimeError};

/// Why saving or loading failed; `modules::mxnet::gluon` maps each to an exception class.
pub use super::tensor_file::TensorFileError as ParamsIoError;

type IoResult<T> = std::result::Result<T, ParamsIoError>;

const HINT: Hint = Hint {
    what: "parameter file",
    how: "net.save_parameters(path)",
};

fn shape_text(shape: &[usize]) -> String {
    let parts: Vec<String> = shape.iter().map(|d| d.to_string()).collect();
    if parts.len() == 1 {
        format!("({},)", parts[0])
    } else {
        format!("({})", parts.join(", "))
    }
}

/// Writes every parameter (its first copy: all copies are identical) under its structural name,
/// streamed from its device (a parameter that is not float32 is converted on the host first).
pub fn save(params: &[(String, Rc<Parameter>)], path: &Path) -> IoResult<()> {
    let mut arrays: Vec<(String, Array)> = Vec::with_capacity(params.len());
    let mut converted: Vec<(String, Vec<usize>, HostData)> = Vec::new();
    for (name, p) in params {
        // Any copy will do (all are identical); `data(None)` would insist on cpu(0).
        let first = p
            .list_data()
            .ok()
            .and_then(|copies| copies.into_iter().next());
        let data = first.ok_or_else(|| {
            ParamsIoError::Runtime(RuntimeError::Value(format!(
                "cannot save: parameter '{}' ({name}) has no values yet. Initialize the network and run it on a batch (net(x)) before saving",
                p.name
            )))
        })?;
        if data.dtype() == DType::Float32 {
            arrays.push((name.clone(), data));
        } else {
            let values = HostData::F32(float32_values(&data)?);
            converted.push((name.clone(), data.shape().to_vec(), values));
        }
    }
    let mut out: Vec<OutTensor<'_>> = arrays
        .iter()
        .map(|(name, a)| OutTensor {
            name,
            shape: a.shape(),
            source: Source::Array(a),
        })
        .collect();
    out.extend(converted.iter().map(|(name, shape, data)| OutTensor {
        name,
        shape,
        source: Source::Host(data),
    }));
    let metadata = HashMap::from([(
        tensor_file::FORMAT_KEY.to_string(),
        "devarray-gluon".to_string(),
    )]);
    tensor_file::write_streamed(path, &out, metadata)
}

fn float32_values(a: &Array) -> IoResult<Vec<f32>> {
    Ok(match a.try_to_host()? {
        HostData::F32(v) => v,
        other => other.to_f64_vec().into_iter().map(|x| x as f32).collect(),
    })
}

/// Reads `path` and puts its values into `params` on `devices`.
pub fn load(
    rt: &Runtime,
    tape: &mut Tape,
    params: &[(String, Rc<Parameter>)],
    path: &Path,
    devices: &[Device],
    allow_missing: bool,
    ignore_extra: bool,
) -> IoResult<()> {
    for d in devices {
        rt.check_device(*d)?;
    }
    let file = tensor_file::read(path, HINT)?;
    let wanted: HashMap<&str, &Rc<Parameter>> =
        params.iter().map(|(n, p)| (n.as_str(), p)).collect();
    if !ignore_extra {
        let mut extra: Vec<&str> = file
            .tensors
            .iter()
            .map(|t| t.name.as_str())
            .filter(|n| !wanted.contains_key(n))
            .collect();
        extra.sort_unstable();
        if let Some(first) = extra.first() {
            return Err(ParamsIoError::Invalid(format!(
                "'{}' has parameter '{first}' that the network does not have{}. Was it saved from a different network? Build the same layers, or pass ignore_extra=True",
                path.display(),
                if extra.len() > 1 { format!(" (and {} more)", extra.len() - 1) } else { String::new() }
            )));
        }
    }
    // Phase 1: check everything and build every copy; no parameter is touched yet.
    let mut staged: Vec<(&Rc<Parameter>, Vec<Array>)> = Vec::with_capacity(params.len());
    for (name, p) in params {
        let view = match file.get(name) {
            Some(v) => v,
            None if allow_missing => continue,
            None => {
                return Err(ParamsIoError::Invalid(format!(
                    "'{}' lacks parameter '{name}' ({}). Was it saved from a different network? Build the same layers, or pass allow_missing=True",
                    path.display(),
                    p.name
                )))
            }
        };
        if !p.accepts_shape(&view.shape) {
            return Err(ParamsIoError::Invalid(format!(
                "'{}' has shape {} for parameter '{name}' but the network expects {}. Build the network with the same layer sizes as the one that was saved",
                path.display(),
                shape_text(&view.shape),
                shape_text(&p.shape())
            )));
        }
        let host = rt.from_host(view.data.clone(), &view.shape, Device::cpu(0))?;
        let host = if host.dtype() == p.dtype.get() {
            host
        } else {
            host.astype(p.dtype.get())?
        };
        staged.push((p, p.prepare_copies(rt, tape, &host, devices)?));
    }
    // Phase 2: install (infallible).
    for (p, copies) in staged {
        p.install_copies(tape, copies);
    }
    Ok(())
}

#[cfg(test)]
mod tests;
