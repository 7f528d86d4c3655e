//! MXNet's own binary array files (`nd.save` and `export` of real MXNet 1.x: a list header, each
//! dense array as `NDArray::Save` writes it with its type flag, then the names), read into host
//! data of each array's dtype, for `nd.load`/`npx.load` and `SymbolBlock.imports`.

use crate::object::error::{Exc, ExcKind};

/// The magic number that starts a list of NDArrays saved by MXNet (`nd.save`, `export`).
const LIST_MAGIC: u64 = 0x112;

/// Whether `bytes` is a parameter file in MXNet's binary format (rather than devarray's).
pub fn is_mxnet_params(bytes: &[u8]) -> bool {
    bytes.len() >= 8 && u64::from_le_bytes(bytes[..8].try_into().unwrap_or([0; 8])) == LIST_MAGIC
}

/// The named arrays of a file MXNet wrote (`NDArray::Save` of each dense array after the list
/// header, then the names), as host data of the array's own dtype.
pub fn read_mxnet_params(
    bytes: &[u8],
    path: &str,
) -> Result<Vec<(String, Vec<usize>, crate::runtime::host::HostData)>, Exc> {
    use crate::runtime::host::HostData;
    let bad = |why: &str| {
        Exc::new(
            ExcKind::MXNetError,
            format!("'{path}' is not a parameter file MXNet wrote: {why}"),
        )
    };
    let mut pos = 0usize;
    let mut take = |n: usize| -> Result<&[u8], Exc> {
        let end = pos
            .checked_add(n)
            .filter(|&e| e <= bytes.len())
            .ok_or_else(|| bad("it ends early"))?;
        let s = &bytes[pos..end];
        pos = end;
        Ok(s)
    };
    let u64_of = |s: &[u8]| u64::from_le_bytes(s.try_into().unwrap_or([0; 8]));
    let u32_of = |s: &[u8]| u32::from_le_bytes(s.try_into().unwrap_or([0; 4]));
    if u64_of(take(8)?) != LIST_MAGIC {
        return Err(bad("no list header"));
    }
    take(8)?;
    let count = u64_of(take(8)?) as usize;
    let mut arrays = Vec::new();
    for _ in 0..count.min(1 << 20) {
        let magic = u32_of(take(4)?);
        if magic != 0xF993_FAC9 && magic != 0xF993_FACA {
            return Err(bad(
                "an array with an unknown format (saved by MXNet before 1.0?)",
            ));
        }
        if u32_of(take(4)?) != 0 {
            return Err(bad("a sparse array (only dense arrays are read)"));
        }
        let ndim = u32_of(take(4)?) as usize;
        if ndim > 32 {
            return Err(bad("an array with too many dimensions"));
        }
        let mut shape = Vec::with_capacity(ndim);
        for _ in 0..ndim {
            let d = i64::from_le_bytes(take(8)?.try_into().unwrap_or([0; 8]));
            shape.push(usize::try_from(d).map_err(|_| bad("a negative size"))?);
        }
        let n = shape
            .iter()
            .try_fold(1usize, |a, &d| a.checked_mul(d))
            .ok_or_else(|| bad("an array too large"))?;
        take(8)?; // the device it was saved from
        let flag = u32_of(take(4)?);
        // MXNet's type flags (mshadow's kFloat32 = 0, ... kUint64 = 11).
        use crate::runtime::DType;
        let dtype = match flag {
            0 => DType::Float32,
            1 => DType::Float64,
            2 => DType::Float16,
            3 => DType::UInt8,
            4 => DType::Int32,
            5 => DType::Int8,
            6 => DType::Int64,
            7 => DType::Bool,
            8 => DType::Int16,
            9 => DType::UInt16,
            10 => DType::UInt32,
            11 => DType::UInt64,
            _ => return Err(bad("an array of a type devarray does not read")),
        };
        let raw = take(
            n.checked_mul(dtype.size_bytes())
                .ok_or_else(|| bad("an array too large"))?,
        )?;
        let data = HostData::from_le_bytes(raw, dtype);
        arrays.push((shape, data));
    }
    let names = u64_of(take(8)?) as usize;
    if names == 0 {
        // A list saved without names.
        return Ok(arrays
            .into_iter()
            .map(|(shape, data)| (String::new(), shape, data))
            .collect());
    }
    if names != arrays.len() {
        return Err(bad("the names do not match the arrays"));
    }
    let mut out = Vec::with_capacity(names);
    for (shape, data) in arrays {
        let len = u64_of(take(8)?) as usize;
        let name = String::from_utf8_lossy(take(len)?).into_owned();
        out.push((name, shape, data));
    }
    Ok(out)
}
