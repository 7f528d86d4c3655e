//! Data sets and batching that need no interpreter: FashionMNIST read from the standard IDX
//! files, the native image transforms (`ToTensor`, `Normalize`) and batch preparation. All of
//! it is plain host data (`Send`), so a DataLoader worker thread can prepare the next batch
//! while the main thread trains on the current one.
use std::fs;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Where the Debian/Ubuntu package `dataset-fashion-mnist` puts the files.
pub const DEBIAN_ROOT: &str = "/usr/share/datasets/fashion-mnist";
/// Overrides the default root when set.
pub const ROOT_ENV: &str = "DEVARRAY_FASHION_MNIST";

/// Why a data set could not be read.
#[derive(Debug, Clone, PartialEq)]
pub enum DataError {
    /// A file is absent (`FileNotFoundError`).
    Missing(String),
    /// A file is present but unreadable or not what it should be (`ValueError`).
    Corrupt(String),
}

impl std::fmt::Display for DataError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            DataError::Missing(m) | DataError::Corrupt(m) => f.write_str(m),
        }
    }
}

/// Images of one size with one label each, as bytes (0..=255).
#[derive(Debug)]
pub struct ImageSet {
    pub rows: usize,
    pub cols: usize,
    /// `len * rows * cols` pixels, row-major, one image after the other.
    pub pixels: Vec<u8>,
    pub labels: Vec<u8>,
}

impl ImageSet {
    pub fn len(&self) -> usize {
        self.labels.len()
    }

    pub fn is_empty(&self) -> bool {
        self.labels.is_empty()
    }

    /// The first `count` items (all of them if there are fewer).
    pub fn take(&self, count: usize) -> ImageSet {
        let n = count.min(self.len());
        ImageSet {
            rows: self.rows,
            cols: self.cols,
            pixels: self
                .pixels
                .get(..n * self.rows * self.cols)
                .unwrap_or_default()
                .to_vec(),
            labels: self.labels.get(..n).unwrap_or_default().to_vec(),
        }
    }

    /// Image `i` as (rows, cols, 1) float values 0..=255 and its label.
    pub fn item(&self, i: usize) -> Option<(HostImage, u8)> {
        let size = self.rows * self.cols;
        let start = i.checked_mul(size)?;
        let px = self.pixels.get(start..start.checked_add(size)?)?;
        let label = *self.labels.get(i)?;
        Some((
            HostImage {
                shape: vec![self.rows, self.cols, 1],
                values: px.iter().map(|&p| f32::from(p)).collect(),
            },
            label,
        ))
    }
}

/// The first place that holds a split's images and labels: `preferred` (the places the
/// program's framework keeps them: a `root` it names, torchvision's `root/FashionMNIST/raw`,
/// MXNet's `~/.mxnet/datasets/fashion-mnist`), then `$DEVARRAY_FASHION_MNIST`, then Debian's
/// folder. Nothing is downloaded: when none has the files, the error names every place tried.
pub fn locate(preferred: &[PathBuf], train: bool) -> Result<PathBuf, DataError> {
    let env = std::env::var_os(ROOT_ENV)
        .filter(|v| !v.is_empty())
        .map(PathBuf::from);
    locate_among(preferred, env.as_deref(), Path::new(DEBIAN_ROOT), train)
}

/// `locate` with the environment's folder and Debian's given (tests name their own).
pub fn locate_among(
    preferred: &[PathBuf],
    env: Option<&Path>,
    debian: &Path,
    train: bool,
) -> Result<PathBuf, DataError> {
    let mut tried: Vec<String> = Vec::new();
    let mut candidates: Vec<&Path> = preferred.iter().map(PathBuf::as_path).collect();
    candidates.extend(env);
    candidates.push(debian);
    for dir in &candidates {
        if has_mnist_files(dir, train) {
            return Ok(dir.to_path_buf());
        }
    }
    for dir in preferred {
        tried.push(dir.display().to_string());
    }
    tried.push(match env {
        Some(dir) => format!("{} (${ROOT_ENV})", dir.display()),
        None => format!("${ROOT_ENV} (not set)"),
    });
    tried.push(format!("{} (the Debian package)", debian.display()));
    let prefix = if train { "train" } else { "t10k" };
    Err(DataError::Missing(format!(
        "Fashion-MNIST's {prefix}-images-idx3-ubyte and {prefix}-labels-idx1-ubyte (plain or .gz) are in none of: {}. devarray never downloads: install them with `apt-get install dataset-fashion-mnist`, or put the files from the Fashion-MNIST project in one of these places",
        tried.join(", ")
    )))
}

fn how_to_get(dir: &Path) -> String {
    format!(
        "FashionMNIST expects the IDX files (train-images-idx3-ubyte[.gz], train-labels-idx1-ubyte[.gz], t10k-images-idx3-ubyte[.gz], t10k-labels-idx1-ubyte[.gz]) in {}. devarray never downloads: install them with `apt-get install dataset-fashion-mnist` (they go to {DEBIAN_ROOT}), or put the files from the Fashion-MNIST project in a directory and pass root='...' or set {ROOT_ENV}",
        dir.display()
    )
}

/// Reads `name` or `name.gz` from `dir`, decompressing the latter.
fn read_file(dir: &Path, name: &str) -> Result<(PathBuf, Vec<u8>), DataError> {
    let plain = dir.join(name);
    let gz = dir.join(format!("{name}.gz"));
    let (path, compressed) = if plain.is_file() {
        (plain, false)
    } else if gz.is_file() {
        (gz, true)
    } else {
        return Err(DataError::Missing(format!(
            "{name} (or {name}.gz) is not in {}. {}",
            dir.display(),
            how_to_get(dir)
        )));
    };
    let raw = fs::read(&path).map_err(|e| {
        DataError::Corrupt(format!(
            "cannot read {}: {e}. {}",
            path.display(),
            how_to_get(dir)
        ))
    })?;
    if !compressed {
        return Ok((path, raw));
    }
    let mut out = Vec::new();
    flate2::read::GzDecoder::new(raw.as_slice())
        .read_to_end(&mut out)
        .map_err(|e| {
            DataError::Corrupt(format!(
                "{} is not a valid gzip file ({e}); it may be truncated. Replace it. {}",
                path.display(),
                how_to_get(dir)
            ))
        })?;
    Ok((path, out))
}

/// Splits an IDX file of unsigned bytes into its dimensions and payload, checking both.
pub fn parse_idx<'a>(
    bytes: &'a [u8],
    ndim: usize,
    path: &Path,
) -> Result<(Vec<usize>, &'a [u8]), String> {
    let corrupt = |why: String| format!("{} is not a valid IDX file: {why}", path.display());
    let header = 4 + 4 * ndim;
    let (Some(magic), Some(dims)) = (bytes.get(..4), bytes.get(4..header)) else {
        return Err(corrupt(format!("it has only {} bytes", bytes.len())));
    };
    // Magic: two zero bytes, the element type (0x08 = unsigned byte), the number of dims.
    if magic != [0, 0, 0x08, ndim as u8] {
        return Err(corrupt(format!(
            "its header {magic:02x?} is not that of a {ndim}-d unsigned-byte file [00, 00, 08, {ndim:02x}]"
        )));
    }
    let dims: Vec<usize> = dims
        .chunks_exact(4)
        .map(|c| u32::from_be_bytes(c.try_into().unwrap_or_default()) as usize)
        .collect();
    let expected = dims.iter().try_fold(1usize, |acc, &d| acc.checked_mul(d));
    let payload = bytes.get(header..).unwrap_or_default();
    if expected != Some(payload.len()) {
        return Err(corrupt(format!(
            "the header promises {dims:?} = {} bytes of data but the file has {} (truncated?)",
            expected.map_or("too many".to_string(), |n| n.to_string()),
            payload.len()
        )));
    }
    Ok((dims, payload))
}

/// Whether `dir` holds the images and labels of the training (or test) split, plain or gzipped.
pub fn has_mnist_files(dir: &Path, train: bool) -> bool {
    let prefix = if train { "train" } else { "t10k" };
    ["images-idx3-ubyte", "labels-idx1-ubyte"]
        .iter()
        .all(|kind| {
            let name = format!("{prefix}-{kind}");
            dir.join(&name).is_file() || dir.join(format!("{name}.gz")).is_file()
        })
}

/// FashionMNIST (or any MNIST-format set) from `dir`.
pub fn load_mnist_format(dir: &Path, train: bool) -> Result<ImageSet, DataError> {
    let prefix = if train { "train" } else { "t10k" };
    let (img_path, img_bytes) = read_file(dir, &format!("{prefix}-images-idx3-ubyte"))?;
    let (lbl_path, lbl_bytes) = read_file(dir, &format!("{prefix}-labels-idx1-ubyte"))?;
    let bad = |m: String| DataError::Corrupt(format!("{m}. {}", how_to_get(dir)));
    let (img_dims, pixels) = parse_idx(&img_bytes, 3, &img_path).map_err(bad)?;
    let (lbl_dims, labels) = parse_idx(&lbl_bytes, 1, &lbl_path).map_err(bad)?;
    let (n, rows, cols) = match img_dims.as_slice() {
        [n, r, c] => (*n, *r, *c),
        _ => (0, 0, 0),
    };
    if lbl_dims.first() != Some(&n) {
        return Err(DataError::Corrupt(format!(
            "{} has {n} images but {} has {} labels; the files do not belong together. {}",
            img_path.display(),
            lbl_path.display(),
            labels.len(),
            how_to_get(dir)
        )));
    }
    Ok(ImageSet {
        rows,
        cols,
        pixels: pixels.to_vec(),
        labels: labels.to_vec(),
    })
}

/// An image (or any array) on the host: shape and float values.
#[derive(Debug, Clone, PartialEq)]
pub struct HostImage {
    pub shape: Vec<usize>,
    pub values: Vec<f32>,
}

/// The transforms that run natively (and so on a worker thread).
#[derive(Debug, Clone, PartialEq)]
pub enum Transform {
    /// (H, W, C) values 0..=255 to (C, H, W) values in [0, 1]; (N, H, W, C) to (N, C, H, W).
    ToTensor,
    /// torchvision's `PILToTensor`: (H, W, C) to (C, H, W), the 8-bit values kept.
    PilToTensor,
    /// `(x - mean[c]) / std[c]` per channel of a (C, H, W) or (N, C, H, W) image.
    Normalize { mean: Vec<f32>, std: Vec<f32> },
    /// Bilinear resize to (height, width) (`nn::resize`): an (H, W, C) image of 0..=255
    /// values stays integral, as the frameworks' uint8 images do; a (C, H, W) tensor does not.
    /// `height == 0`: `width` is the shorter edge's new size (torchvision's `Resize(int)`,
    /// Gluon's `keep_ratio=True`). `torch`: PIL's arithmetic and repr, else OpenCV's.
    /// `float`: the image is a float array (no 8-bit rounding), set when a program calls the
    /// transform on one; data sets' images are 8-bit.
    Resize {
        height: usize,
        width: usize,
        torch: bool,
        float: bool,
    },
}

impl Transform {
    pub fn apply(&self, img: HostImage) -> Result<HostImage, String> {
        match self {
            Transform::ToTensor => to_tensor(img, 255.0),
            Transform::PilToTensor => to_tensor(img, 1.0),
            Transform::Normalize { mean, std } => normalize(img, mean, std),
            Transform::Resize {
                height,
                width,
                torch,
                float,
            } => {
                let (h, w) = super::resize::target(&img.shape, *height, *width)?;
                super::resize::resize_with(img, h, w, !torch, !float)
            }
        }
    }
}

fn shape_text(shape: &[usize]) -> String {
    let parts: Vec<String> = shape.iter().map(|d| d.to_string()).collect();
    if parts.len() == 1 {
        format!("({},)", parts[0])
    } else {
        format!("({})", parts.join(", "))
    }
}

/// (H, W, C) to (C, H, W) (and a batch likewise), every value divided by `scale`.
fn to_tensor(img: HostImage, scale: f32) -> Result<HostImage, String> {
    let (n, h, w, c) = match *img.shape.as_slice() {
        [h, w, c] => (None, h, w, c),
        [n, h, w, c] => (Some(n), h, w, c),
        _ => {
            return Err(format!(
                "ToTensor: expects an image of shape (H, W, C) or a batch (N, H, W, C), got {}",
                shape_text(&img.shape)
            ))
        }
    };
    let plane = h * w;
    let per_image = plane * c;
    if img.values.len() != per_image * n.unwrap_or(1) {
        return Err(format!(
            "ToTensor: {} values do not fill shape {}",
            img.values.len(),
            shape_text(&img.shape)
        ));
    }
    let mut out = vec![0f32; img.values.len()];
    for (src, dst) in img
        .values
        .chunks_exact(per_image.max(1))
        .zip(out.chunks_exact_mut(per_image.max(1)))
    {
        for (p, pixel) in src.chunks_exact(c.max(1)).enumerate() {
            for (ch, &v) in pixel.iter().enumerate() {
                if let Some(slot) = dst.get_mut(ch * plane + p) {
                    *slot = v / scale;
                }
            }
        }
    }
    let shape = match n {
        Some(n) => vec![n, c, h, w],
        None => vec![c, h, w],
    };
    Ok(HostImage { shape, values: out })
}

fn normalize(mut img: HostImage, mean: &[f32], std: &[f32]) -> Result<HostImage, String> {
    let (c, plane) = match *img.shape.as_slice() {
        [c, h, w] | [_, c, h, w] => (c, h * w),
        _ => {
            return Err(format!(
                "Normalize: expects a (C, H, W) tensor (apply ToTensor first), got shape {}",
                shape_text(&img.shape)
            ))
        }
    };
    if img.values.len() != img.shape.iter().product::<usize>() {
        return Err(format!(
            "Normalize: {} values do not fill shape {}",
            img.values.len(),
            shape_text(&img.shape)
        ));
    }
    let pick = |v: &[f32], ch: usize, what: &str| -> Result<f32, String> {
        match v {
            [one] => Ok(*one),
            many if many.len() == c => many
                .get(ch)
                .copied()
                .ok_or_else(|| format!("Normalize: no {what} for channel {ch}")),
            many => Err(format!(
                "Normalize: {} {what} values for an image with {c} channels; give one value or one per channel",
                many.len()
            )),
        }
    };
    for ch in 0..c {
        let (m, s) = (pick(mean, ch, "mean")?, pick(std, ch, "std")?);
        if s == 0.0 {
            return Err("Normalize: std must not be 0".into());
        }
        for (i, v) in img.values.iter_mut().enumerate() {
            if (i / plane.max(1)) % c.max(1) == ch {
                *v = (*v - m) / s;
            }
        }
    }
    Ok(img)
}

/// One batch on the host: images stacked on a new first axis, labels as int32.
#[derive(Debug, Clone, PartialEq)]
pub struct HostBatch {
    pub data: HostImage,
    pub labels: Vec<i32>,
}

/// Items `indices` of `set`, each put through `pipeline`, stacked.
pub fn prepare_batch(
    set: &ImageSet,
    indices: &[usize],
    pipeline: &[Transform],
) -> Result<HostBatch, String> {
    let mut shape: Option<Vec<usize>> = None;
    let mut values = Vec::new();
    let mut labels = Vec::with_capacity(indices.len());
    for &i in indices {
        let (mut img, label) = set
            .item(i)
            .ok_or_else(|| format!("index {i} is out of range for {} items", set.len()))?;
        for t in pipeline {
            img = t.apply(img)?;
        }
        if shape.is_none() {
            values.reserve(img.values.len() * indices.len());
            shape = Some(img.shape.clone());
        }
        values.extend_from_slice(&img.values);
        labels.push(i32::from(label));
    }
    let mut full = vec![indices.len()];
    full.extend(shape.unwrap_or_default());
    Ok(HostBatch {
        data: HostImage {
            shape: full,
            values,
        },
        labels,
    })
}

/// The item indices of each batch: `order` cut into `batch_size` pieces, the short last one
/// kept or dropped.
pub fn batches(order: &[usize], batch_size: usize, keep_last: bool) -> Vec<Vec<usize>> {
    order
        .chunks(batch_size.max(1))
        .filter(|c| keep_last || c.len() == batch_size)
        .map(<[usize]>::to_vec)
        .collect()
}

/// Prepares `plan` on a worker thread, at most `ahead` batches before the consumer.
/// Dropping the receiver stops the worker at its next batch.
pub fn spawn_worker(
    set: Arc<ImageSet>,
    pipeline: Vec<Transform>,
    plan: Vec<Vec<usize>>,
    ahead: usize,
) -> std::sync::mpsc::Receiver<Result<HostBatch, String>> {
    let (tx, rx) = std::sync::mpsc::sync_channel(ahead.max(1));
    std::thread::spawn(move || {
        for indices in plan {
            let batch = prepare_batch(&set, &indices, &pipeline);
            let failed = batch.is_err();
            if tx.send(batch).is_err() || failed {
                return;
            }
        }
    });
    rx
}

#[cfg(test)]
pub mod tests;
