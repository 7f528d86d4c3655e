//! NumPy's `.npz` archives: `np.savez` (stored) and `np.savez_compressed` (deflated) write a
//! ZIP file of `.npy` members (`python::stdlib::archive` writes and reads the ZIP), and
//! `np.load` of one gives an `NpzFile` (the class is written in the language,
//! `library/numpy/more.da`: `files`, `[name]`, `keys()`, `with`), its members decoded here.
use std::path::Path;

use crate::modules::python::stdlib::archive::{zip_archive, zip_members};
use crate::object::error::{Exc, ExcKind};
use crate::object::value::{Args, Module, Value};
use crate::object::{builtin, Interpreter};
use crate::runtime::save_file::SaveFile;

use super::numpy_fns::as_array;
use super::numpy_io::{encode, npy_array, path_arg, save_error};

pub fn install(m: &Module) {
    m.set("savez", builtin("savez", "savez(file, *args, **kwds): write several arrays into an uncompressed .npz archive (positional ones as arr_0, arr_1, ...; the extension is added when missing).", |it, a| savez(it, a, false)));
    m.set(
        "savez_compressed",
        builtin(
            "savez_compressed",
            "savez_compressed(file, *args, **kwds): savez's archive with its members deflated.",
            |it, a| savez(it, a, true),
        ),
    );
}

fn savez(it: &mut dyn Interpreter, mut a: Args, deflate: bool) -> Result<Value, Exc> {
    if a.pos.is_empty() {
        let file = a.take_kw("file").ok_or_else(|| {
            Exc::type_error(format!(
                "{}() missing 1 required positional argument: 'file'",
                a.fname
            ))
        })?;
        a.pos.push(file);
    }
    let file = a.pos.remove(0);
    let mut path = path_arg(
        &crate::modules::python::stdlib::os::fspath_arg(it, &file)?,
        a.fname,
    )?;
    if !path.ends_with(".npz") {
        path.push_str(".npz");
    }
    // NumPy's order: the keyword arrays, then the positional ones as arr_0, arr_1, ...
    let mut named: Vec<(String, Value)> =
        a.kw.iter()
            .map(|(k, v)| (k.to_string(), v.clone()))
            .collect();
    for (i, v) in a.pos.iter().enumerate() {
        let key = format!("arr_{i}");
        if named.iter().any(|(k, _)| *k == key) {
            return Err(Exc::value_error(format!(
                "Cannot use un-named variables and keyword {key}"
            )));
        }
        named.push((key, v.clone()));
    }
    let mut members = Vec::with_capacity(named.len());
    for (name, v) in &named {
        let x = as_array(it, v)?;
        let host = x.array.to_host();
        members.push((format!("{name}.npy"), encode(&host, x.array.shape())));
    }
    let fail = |e| save_error(e, &path);
    let mut out = SaveFile::create(Path::new(&path)).map_err(fail)?;
    out.write_bytes(&zip_archive(&members, deflate))
        .map_err(fail)?;
    out.commit().map_err(fail)?;
    Ok(Value::None)
}

/// `np.load` of an `.npz` archive: an `NpzFile` over its members (name without `.npy` ->
/// array), in the archive's order.
pub fn open(it: &mut dyn Interpreter, path: &str, bytes: &[u8]) -> Result<Value, Exc> {
    let members = zip_members(bytes).map_err(|why| {
        Exc::new(
            ExcKind::ValueError,
            format!("{}: not a valid .npz archive ({why})", path),
        )
    })?;
    let mut entries = Vec::with_capacity(members.len());
    for m in members {
        let Some(data) = m.data else { continue };
        let name = m.name.strip_suffix(".npy").unwrap_or(&m.name).to_string();
        let arr = npy_array(it, &data, path)?;
        entries.push(Value::tuple(vec![Value::str(&name), arr]));
    }
    let class = it
        .import("numpy._more")?
        .get("NpzFile")
        .ok_or_else(|| Exc::new(ExcKind::RuntimeError, "numpy's NpzFile is missing"))?;
    it.call_value(
        &class,
        Args::new("NpzFile", vec![Value::list(entries), Value::str(path)]),
    )
}
