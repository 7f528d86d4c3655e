//! `mxnet.gluon.data`: `ArrayDataset`, `DataLoader`, `vision.datasets.FashionMNIST` and
//! `vision.transforms` (`Compose`, `ToTensor`, `Normalize`). The host-side work lives in
//! `crate::nn::data`; this file binds it to the language.
//!
//! A data set built only from native pieces (FashionMNIST with native transforms) is batched
//! without the interpreter, so `num_workers > 0` prepares the next batch on a worker thread.
//! A data set that calls user functions is batched on the main thread (values are not `Send`).
use std::cell::RefCell;
use std::path::PathBuf;
use std::rc::Rc;
use std::sync::mpsc::Receiver;
use std::sync::Arc;

use crate::nn::data::{self, DataError, HostBatch, HostImage, ImageSet, Transform};
use crate::runtime::{Array, DType, Device, HostData, IndexItem};

use crate::modules::array::arrays::mxnet_flavor as flavor;
use crate::modules::python::native::{bound, downcast, object, usize_arg};
use crate::object::error::{Exc, ExcKind};
use crate::object::ops::{as_f64, as_i64, wrap};
use crate::object::value::{Args, Flavor, Module, NativeObject, Value};
use crate::object::ProgressState;
use crate::object::{builtin, Interpreter};

fn call1(it: &mut dyn Interpreter, f: &Value, x: Value) -> Result<Value, Exc> {
    it.call_value(
        f,
        Args {
            pos: vec![x],
            ..Args::default()
        },
    )
}

// ---- data sets ---------------------------------------------------------------------------

enum Source {
    /// Images read natively, with native transforms applied to the image.
    Images {
        set: Arc<ImageSet>,
        pipeline: Vec<Transform>,
    },
    /// Items already made (`take` of a non-native data set).
    Items(Vec<Value>),
    /// `ArrayDataset(x, y, ...)`: one column per argument (arrays or lists).
    Columns(Vec<Value>),
    /// A program's data set (`class MyData(Dataset)` with `__len__` and `__getitem__`).
    Program(Value),
    /// `Subset(dataset, indices)`: the items of `base` at `indices`, in that order.
    Subset {
        base: Rc<Dataset>,
        indices: Vec<usize>,
    },
    /// `transform_first(fn)` / `transform(fn)` with a function the interpreter must call.
    Mapped {
        base: Rc<Dataset>,
        f: Value,
        first_only: bool,
    },
    /// torchvision's `target_transform`: `f` applied to each item's label.
    Targets { base: Rc<Dataset>, f: Value },
}

struct Dataset {
    type_name: &'static str,
    source: Source,
    /// A `torchvision` / `torch.utils.data` set: images are tensors, batches PyTorch's.
    torch: bool,
}

/// The language object; the data set itself is shared (`Rc`) with loaders and derived sets.
struct DatasetObj(Rc<Dataset>);

fn dataset_value(type_name: &'static str, source: Source) -> Value {
    object(DatasetObj(Rc::new(Dataset {
        type_name,
        source,
        torch: false,
    })))
}

fn torch_dataset_value(type_name: &'static str, source: Source) -> Value {
    object(DatasetObj(Rc::new(Dataset {
        type_name,
        source,
        torch: true,
    })))
}

fn column_len(it: &mut dyn Interpreter, v: &Value) -> Result<usize, Exc> {
    match v {
        Value::Array(a) => a.array.shape().first().copied().ok_or_else(|| {
            Exc::type_error("ArrayDataset: a 0-d array has no items; give arrays with a first axis")
        }),
        other => Ok(it.iterate(other)?.len()),
    }
}

impl Dataset {
    fn len(&self, it: &mut dyn Interpreter) -> Result<usize, Exc> {
        match &self.source {
            Source::Images { set, .. } => Ok(set.len()),
            Source::Items(items) => Ok(items.len()),
            Source::Columns(cols) => match cols.first() {
                Some(c) => column_len(it, c),
                None => Ok(0),
            },
            Source::Mapped { base, .. } | Source::Targets { base, .. } => base.len(it),
            Source::Subset { indices, .. } => Ok(indices.len()),
            Source::Program(v) => {
                let len = it.get_attr(v, "__len__")?;
                match it.call_value(&len, Args::default())? {
                    Value::Int(n) if n >= 0 => Ok(n as usize),
                    other => Err(Exc::type_error(format!(
                        "the data set's __len__ returned {}, not a non-negative int",
                        other.type_name()
                    ))),
                }
            }
        }
    }

    fn get(&self, it: &mut dyn Interpreter, i: usize) -> Result<Value, Exc> {
        match &self.source {
            Source::Images { set, pipeline } => {
                let (mut img, label) = set.item(i).ok_or_else(|| out_of_range(i, set.len()))?;
                for t in pipeline {
                    img = t.apply(img).map_err(Exc::value_error)?;
                }
                let mut x = host_array(it, img, Device::cpu(0))?;
                let fl = if self.torch {
                    Flavor::Torch
                } else {
                    flavor(it)
                };
                if byte_images(self.torch, pipeline) {
                    // Gluon's vision data sets hold uint8 images.
                    x = x.astype(DType::UInt8)?;
                }
                let label = if fl == Flavor::Np {
                    // In numpy mode the label is a 0-d int32 array, as MXNet's is.
                    let y = it.state().rt.from_host(
                        HostData::I32(vec![i32::from(label)]),
                        &[],
                        Device::cpu(0),
                    )?;
                    wrap(y, fl)
                } else {
                    Value::Int(i64::from(label))
                };
                Ok(Value::tuple(vec![wrap(x, fl), label]))
            }
            Source::Items(items) => items
                .get(i)
                .cloned()
                .ok_or_else(|| out_of_range(i, items.len())),
            Source::Subset { base, indices } => match indices.get(i) {
                Some(&j) => base.get(it, j),
                None => Err(out_of_range(i, indices.len())),
            },
            Source::Program(v) => crate::object::ops::get_item(
                it,
                v,
                crate::object::ops::Index::Single(crate::object::ops::IndexItem::Value(
                    Value::Int(i as i64),
                )),
            ),
            Source::Columns(cols) => {
                let mut items = Vec::with_capacity(cols.len());
                for c in cols {
                    items.push(match c {
                        Value::Array(a) => {
                            wrap(a.array.index(&[IndexItem::Int(i as i64)])?, a.flavor)
                        }
                        Value::List(l) => {
                            let l = l.borrow();
                            l.get(i).cloned().ok_or_else(|| out_of_range(i, l.len()))?
                        }
                        other => {
                            let all = it.iterate(other)?;
                            let n = all.len();
                            all.into_iter().nth(i).ok_or_else(|| out_of_range(i, n))?
                        }
                    });
                }
                // PyTorch's TensorDataset items are tuples even of one tensor; Gluon's
                // ArrayDataset gives a lone column's element itself.
                if self.torch {
                    return Ok(Value::tuple(items));
                }
                Ok(match <[Value; 1]>::try_from(items) {
                    Ok([one]) => one,
                    Err(items) => Value::tuple(items),
                })
            }
            Source::Mapped {
                base,
                f,
                first_only,
            } => {
                let item = base.get(it, i)?;
                match (&item, first_only) {
                    (Value::Tuple(parts), true) => {
                        let mut parts = parts.as_ref().clone();
                        if let Some(first) = parts.first_mut() {
                            *first = call1(it, f, first.clone())?;
                        }
                        Ok(Value::tuple(parts))
                    }
                    (_, true) => call1(it, f, item),
                    (Value::Tuple(parts), false) => it.call_value(
                        f,
                        Args {
                            pos: parts.as_ref().clone(),
                            ..Args::default()
                        },
                    ),
                    (_, false) => call1(it, f, item),
                }
            }
            Source::Targets { base, f } => match &base.get(it, i)? {
                Value::Tuple(parts) => {
                    let mut parts = parts.as_ref().clone();
                    if let Some(target) = parts.get_mut(1) {
                        *target = call1(it, f, target.clone())?;
                    }
                    Ok(Value::tuple(parts))
                }
                other => Ok(other.clone()),
            },
        }
    }
}

/// `dataset[a:b]` of an image set, as Gluon's vision data sets answer it: the images stacked
/// (N, H, W, C) and their labels (int32), both arrays.
fn image_batch(it: &mut dyn Interpreter, d: &Dataset, picked: &[usize]) -> Result<Value, Exc> {
    let Source::Images { set, pipeline } = &d.source else {
        return Err(Exc::type_error(
            "this data set takes integer indices only (slices work on image data sets); index the items one at a time",
        ));
    };
    let mut shape = Vec::new();
    let mut values = Vec::new();
    let mut labels = Vec::with_capacity(picked.len());
    for &i in picked {
        let (mut img, label) = set.item(i).ok_or_else(|| out_of_range(i, set.len()))?;
        for t in pipeline {
            img = t.apply(img).map_err(Exc::value_error)?;
        }
        shape.clone_from(&img.shape);
        values.extend(img.values.iter().map(|&v| f64::from(v)));
        labels.push(f64::from(label));
    }
    if picked.is_empty() {
        shape = vec![set.rows, set.cols, 1];
    }
    let fl = if d.torch { Flavor::Torch } else { flavor(it) };
    let mut full = vec![picked.len()];
    full.extend(shape);
    let rt = &it.state().rt;
    let dtype = if byte_images(d.torch, pipeline) {
        DType::UInt8
    } else {
        DType::Float32
    };
    let x = rt.from_f64(values, &full, dtype, Device::cpu(0))?;
    let y = rt.from_f64(labels, &[picked.len()], DType::Int32, Device::cpu(0))?;
    Ok(Value::tuple(vec![wrap(x, fl), wrap(y, fl)]))
}

/// Whether images through `pipeline` stay 8-bit (only resizes and PILToTensor: Gluon's sets
/// and transforms keep uint8 until ToTensor).
fn keeps_bytes(pipeline: &[Transform]) -> bool {
    pipeline
        .iter()
        .all(|t| matches!(t, Transform::Resize { .. } | Transform::PilToTensor))
}

/// Whether a data set's images come out as uint8 arrays: Gluon's until ToTensor; torchvision's
/// (PIL images here kept as float tensors) once PILToTensor made them tensors.
fn byte_images(torch: bool, pipeline: &[Transform]) -> bool {
    keeps_bytes(pipeline) && (!torch || pipeline.contains(&Transform::PilToTensor))
}

fn out_of_range(i: usize, n: usize) -> Exc {
    Exc::new(
        ExcKind::IndexError,
        format!("index {i} is out of range for a data set of {n} items"),
    )
}

fn host_array(it: &dyn Interpreter, img: HostImage, device: Device) -> Result<Array, Exc> {
    Ok(it
        .state()
        .rt
        .from_host(HostData::F32(img.values), &img.shape, device)?)
}

fn dataset_of(v: &Value) -> Result<Rc<Dataset>, Exc> {
    if let Value::Instance(i) = v {
        if i.class().lookup("__getitem__").is_some() && i.class().lookup("__len__").is_some() {
            let torch = i
                .class()
                .mro
                .iter()
                .any(|c| matches!(c, Value::Class(c) if c.module.starts_with("torch")));
            return Ok(Rc::new(Dataset {
                type_name: "Dataset",
                source: Source::Program(v.clone()),
                torch,
            }));
        }
    }
    downcast::<DatasetObj>(v, "")
        .map(|d| d.0.clone())
        .map_err(|_| {
            Exc::type_error(format!(
                "expected a data set (e.g. gluon.data.ArrayDataset(X, y)), got {}",
                v.type_name()
            ))
        })
}

impl NativeObject for DatasetObj {
    fn type_name(&self) -> &str {
        self.0.type_name
    }
    fn repr(&self) -> String {
        match &self.0.source {
            Source::Images { set, .. } => format!(
                "<{} with {} images of {}x{}>",
                self.0.type_name,
                set.len(),
                set.rows,
                set.cols
            ),
            _ => format!("<{} object>", self.0.type_name),
        }
    }
    fn attr_names(&self) -> Vec<&'static str> {
        vec!["transform_first", "transform", "take"]
    }
    fn get_attr(&self, this: &Rc<dyn NativeObject>, name: &str) -> Option<Value> {
        Some(match name {
            "__len__" => bound(this, "__len__", "len(dataset)", |it, r, a| {
                a.finish(0)?;
                let n = dataset_of(r)?.len(it)?;
                Ok(Value::Int(n as i64))
            }),
            "__getitem__" => bound(this, "__getitem__", "dataset[i]: one item (for an image set: (image, label)).", |it, r, mut a| {
                let key = a.required(0, "index")?;
                a.finish(1)?;
                let d = dataset_of(r)?;
                let n = d.len(it)?;
                if let Some(sl) = crate::object::class::as_slice(&key) {
                    let (start, stop, step) = crate::object::ops::slice_indices(n as i64, &Some(sl.start.clone()), &Some(sl.stop.clone()), &Some(sl.step.clone()))?;
                    let mut picked = Vec::new();
                    let mut i = start;
                    while (step > 0 && i < stop) || (step < 0 && i > stop) {
                        picked.push(i as usize);
                        i += step;
                    }
                    return image_batch(it, &d, &picked);
                }
                let i = as_i64(&key).ok_or_else(|| Exc::type_error(format!("data set indices must be integers, got {}", key.type_name())))?;
                let j = if i < 0 { i + n as i64 } else { i };
                let j = usize::try_from(j).ok().filter(|&j| j < n).ok_or_else(|| out_of_range(i.unsigned_abs() as usize, n))?;
                d.get(it, j)
            }),
            "transform_first" => bound(this, "transform_first", "dataset.transform_first(fn): a data set whose first element (the image) goes through fn.", |_, r, mut a| {
                let f = a.required(0, "fn")?;
                a.take_kw("lazy");
                a.finish(1)?;
                let base = dataset_of(r)?;
                // Native transforms on a native image set stay native (worker-thread capable).
                if let (Source::Images { set, pipeline }, Some(more)) = (&base.source, native_pipeline(&f)) {
                    let mut pipeline = pipeline.clone();
                    pipeline.extend(more);
                    return Ok(dataset_value(base.type_name, Source::Images { set: set.clone(), pipeline }));
                }
                Ok(dataset_value("_LazyTransformDataset", Source::Mapped { base, f, first_only: true }))
            }),
            "take" => bound(this, "take", "dataset.take(count): a data set of the first count items.", |it, r, mut a| {
                let count = usize_arg(&a.required(0, "count")?, "count")?;
                a.finish(1)?;
                let base = dataset_of(r)?;
                if let Source::Images { set, pipeline } = &base.source {
                    return Ok(dataset_value(base.type_name, Source::Images { set: Arc::new(set.take(count)), pipeline: pipeline.clone() }));
                }
                let n = base.len(it)?.min(count);
                let mut items = Vec::with_capacity(n);
                for i in 0..n {
                    items.push(base.get(it, i)?);
                }
                Ok(dataset_value("SimpleDataset", Source::Items(items)))
            }),
            "transform" => bound(this, "transform", "dataset.transform(fn): a data set whose items go through fn(*item).", |_, r, mut a| {
                let f = a.required(0, "fn")?;
                a.take_kw("lazy");
                a.finish(1)?;
                let base = dataset_of(r)?;
                Ok(dataset_value("_LazyTransformDataset", Source::Mapped { base, f, first_only: false }))
            }),
            _ => return None,
        })
    }
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

/// Missing files are a FileNotFoundError, broken ones a ValueError.
fn data_error(e: DataError) -> Exc {
    match e {
        DataError::Missing(m) => Exc::new(ExcKind::FileNotFoundError, m),
        DataError::Corrupt(m) => Exc::value_error(m),
    }
}

fn fashion_mnist(_it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let root = match &a.take(0, "root")? {
        None | Some(Value::None) => None,
        Some(Value::Str(s)) => Some(PathBuf::from(expand_home(s))),
        Some(other) => {
            return Err(Exc::type_error(format!(
                "root must be a directory name, got {}",
                other.type_name()
            )))
        }
    };
    let train = a.flag(1, "train", true)?;
    let transform = a.take(2, "transform")?;
    a.finish(3)?;
    // MXNet keeps its copy in ~/.mxnet/datasets/fashion-mnist unless the program names a root.
    let preferred = match root {
        Some(r) => vec![r],
        None => vec![PathBuf::from(expand_home(
            "~/.mxnet/datasets/fashion-mnist",
        ))],
    };
    let dir = data::locate(&preferred, train).map_err(data_error)?;
    let set = data::load_mnist_format(&dir, train).map_err(data_error)?;
    let ds = dataset_value(
        "FashionMNIST",
        Source::Images {
            set: Arc::new(set),
            pipeline: Vec::new(),
        },
    );
    match transform {
        None | Some(Value::None) => Ok(ds),
        Some(f) => {
            let base = dataset_of(&ds)?;
            Ok(dataset_value(
                "_LazyTransformDataset",
                Source::Mapped {
                    base,
                    f,
                    first_only: false,
                },
            ))
        }
    }
}

/// `~/x` as the shell would (MXNet's default roots are spelled that way).
fn expand_home(path: &str) -> String {
    match (path.strip_prefix("~/"), std::env::var("HOME")) {
        (Some(rest), Ok(home)) => format!("{home}/{rest}"),
        _ => path.to_string(),
    }
}

fn array_dataset(it: &mut dyn Interpreter, a: Args) -> Result<Value, Exc> {
    if a.pos.is_empty() {
        return Err(Exc::type_error(
            "ArrayDataset needs at least one array or list, e.g. ArrayDataset(X, y)",
        ));
    }
    a.finish(a.pos.len())?;
    let mut n = None;
    for (k, c) in a.pos.iter().enumerate() {
        let len = column_len(it, c)?;
        match n {
            None => n = Some(len),
            Some(n0) if n0 != len => {
                return Err(Exc::value_error(format!(
                    "ArrayDataset: all arguments must have the same length; the first has {n0} items, argument {} has {len}",
                    k + 1
                )))
            }
            _ => {}
        }
    }
    Ok(dataset_value(
        "ArrayDataset",
        Source::Columns(a.pos.clone()),
    ))
}

// ---- transforms ----------------------------------------------------------------------------

/// A chain of native transforms (one for `ToTensor()`, several for a native `Compose`).
struct TransformObj(Vec<Transform>);

/// `Compose` with at least one user function in it.
struct ComposeObj(Vec<Value>);

/// torchvision's `Lambda(f)`: a transform that calls `f`.
struct LambdaObj(Value);

impl NativeObject for LambdaObj {
    fn type_name(&self) -> &str {
        "Lambda"
    }
    fn repr(&self) -> String {
        "Lambda()".into()
    }
    fn get_attr(&self, this: &Rc<dyn NativeObject>, name: &str) -> Option<Value> {
        match name {
            "lambd" => Some(self.0.clone()),
            "__call__" => Some(bound(this, "Lambda", "t(x): lambd(x).", |it, r, mut a| {
                let x = a.required(0, "img")?;
                a.finish(1)?;
                let f = downcast::<LambdaObj>(r, "a Lambda")?.0.clone();
                call1(it, &f, x)
            })),
            _ => None,
        }
    }
    fn attr_names(&self) -> Vec<&'static str> {
        vec!["lambd"]
    }
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

/// `torchvision.transforms.Lambda(lambd)`.
fn lambda_transform(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let f = a.required(0, "lambd")?;
    a.finish(1)?;
    let args = Args {
        pos: vec![f.clone()],
        ..Args::default()
    };
    if !crate::modules::python::builtins::callable(it, args)?.truthy()? {
        return Err(Exc::type_error(format!(
            "Argument lambd should be callable, got '{}'",
            f.type_name()
        )));
    }
    Ok(object(LambdaObj(f)))
}

fn native_pipeline(v: &Value) -> Option<Vec<Transform>> {
    downcast::<TransformObj>(v, "").ok().map(|t| t.0.clone())
}

fn transform_repr(t: &Transform) -> String {
    match t {
        Transform::ToTensor => "ToTensor".into(),
        Transform::PilToTensor => "PILToTensor()".into(),
        Transform::Normalize { mean, std } => {
            let list = |v: &[f32]| match v {
                [one] => format!("{one}"),
                many => format!(
                    "({})",
                    many.iter()
                        .map(|x| x.to_string())
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            };
            format!("Normalize(mean={}, std={})", list(mean), list(std))
        }
        Transform::Resize {
            height,
            width,
            torch: true,
            ..
        } => {
            let size = if *height == 0 {
                width.to_string()
            } else {
                format!("({height}, {width})")
            };
            format!("Resize(size={size}, interpolation=bilinear, max_size=None, antialias=True)")
        }
        Transform::Resize { .. } => "Resize(\n\n)".into(),
    }
}

impl NativeObject for TransformObj {
    fn type_name(&self) -> &str {
        match self.0.as_slice() {
            [Transform::ToTensor] => "ToTensor",
            [Transform::PilToTensor] => "PILToTensor",
            [Transform::Normalize { .. }] => "Normalize",
            [Transform::Resize { .. }] => "Resize",
            _ => "Compose",
        }
    }
    fn repr(&self) -> String {
        match self.0.as_slice() {
            [one] => transform_repr(one),
            many => {
                let mut s = String::from("Compose(\n");
                for (i, t) in many.iter().enumerate() {
                    s.push_str(&format!("  ({i}): {}\n", transform_repr(t)));
                }
                s.push(')');
                s
            }
        }
    }
    fn get_attr(&self, this: &Rc<dyn NativeObject>, name: &str) -> Option<Value> {
        match name {
            "__call__" => Some(bound(
                this,
                "transform",
                "t(x): apply the transform to an image array.",
                |it, r, mut a| {
                    let x = a.required(0, "x")?;
                    a.finish(1)?;
                    let mut chain = downcast::<TransformObj>(r, "a transform")?.0.clone();
                    let xv = x.as_array().ok_or_else(|| {
                        Exc::type_error(format!(
                            "transforms take an image array, got {}",
                            x.type_name()
                        ))
                    })?;
                    let host = xv.array.try_to_host()?;
                    if matches!(host, HostData::F32(_) | HostData::F64(_)) {
                        // A float image is resized without 8-bit rounding.
                        for t in &mut chain {
                            if let Transform::Resize { float, .. } = t {
                                *float = true;
                            }
                        }
                    }
                    let values = match host {
                        HostData::F32(v) => v,
                        other => other.to_f64_vec().into_iter().map(|v| v as f32).collect(),
                    };
                    let mut img = HostImage {
                        shape: xv.array.shape().to_vec(),
                        values,
                    };
                    for t in &chain {
                        img = t.apply(img).map_err(Exc::value_error)?;
                    }
                    let mut out = host_array(it, img, xv.array.device())?;
                    if chain.contains(&Transform::PilToTensor) && keeps_bytes(&chain) {
                        out = out.astype(DType::UInt8)?;
                    } else if xv.array.dtype().is_int() && keeps_bytes(&chain) {
                        // A resized uint8 image stays uint8; ToTensor makes float32.
                        out = out.astype(xv.array.dtype())?;
                    }
                    Ok(wrap(out, xv.flavor))
                },
            )),
            _ => None,
        }
    }
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

impl NativeObject for ComposeObj {
    fn type_name(&self) -> &str {
        "Compose"
    }
    fn repr(&self) -> String {
        format!("Compose({} transforms)", self.0.len())
    }
    fn get_attr(&self, this: &Rc<dyn NativeObject>, name: &str) -> Option<Value> {
        match name {
            "__call__" => Some(bound(
                this,
                "Compose",
                "t(x): apply each transform in order.",
                |it, r, mut a| {
                    let mut x = a.required(0, "x")?;
                    a.finish(1)?;
                    let steps = downcast::<ComposeObj>(r, "a Compose")?.0.clone();
                    for f in &steps {
                        x = call1(it, f, x)?;
                    }
                    Ok(x)
                },
            )),
            _ => None,
        }
    }
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

/// `transforms.Resize`: torchvision's (an int is the shorter edge, a pair is (height, width))
/// or Gluon's (an int is a square unless keep_ratio, a pair is (width, height)).
fn resize_transform(it: &mut dyn Interpreter, mut a: Args, torch: bool) -> Result<Value, Exc> {
    let size = a.required(0, "size")?;
    let keep = if torch {
        a.take(1, "interpolation")?;
        if !matches!(a.take(2, "max_size")?, None | Some(Value::None)) {
            return Err(Exc::value_error("Resize: max_size is not supported"));
        }
        a.take(3, "antialias")?;
        true
    } else {
        let keep = a.flag(1, "keep_ratio", false)?;
        if let Some(v) = a.take(2, "interpolation")? {
            if crate::object::ops::as_i64(&v) != Some(1) {
                return Err(Exc::value_error(
                    "Resize: only interpolation=1 (bilinear) is supported",
                ));
            }
        }
        keep
    };
    a.finish(4)?;
    let dim = |v: &Value| {
        crate::object::ops::as_i64(v)
            .and_then(|i| usize::try_from(i).ok())
            .filter(|&n| n > 0)
            .ok_or_else(|| {
                Exc::value_error("Resize: size must be a positive integer or a pair of them")
            })
    };
    let (height, width) = match &size {
        Value::Tuple(_) | Value::List(_) => {
            let items = it.iterate(&size)?;
            match items.as_slice() {
                [one] => (0, dim(one)?),
                [x, y] if torch => (dim(x)?, dim(y)?),
                [x, y] => (dim(y)?, dim(x)?),
                _ => return Err(Exc::value_error("Resize: size must be an int or a pair")),
            }
        }
        v if keep => (0, dim(v)?),
        v => (dim(v)?, dim(v)?),
    };
    Ok(object(TransformObj(vec![Transform::Resize {
        height,
        width,
        torch,
        float: false,
    }])))
}

fn floats_arg(it: &mut dyn Interpreter, v: Value, what: &str) -> Result<Vec<f32>, Exc> {
    let items = match &v {
        Value::List(_) | Value::Tuple(_) => it.iterate(&v)?,
        _ => vec![v],
    };
    items
        .iter()
        .map(|x| {
            as_f64(x)
                .map(|f| f as f32)
                .ok_or_else(|| Exc::type_error(format!("Normalize: {what} must be numbers")))
        })
        .collect()
}

fn transforms_module() -> Rc<Module> {
    let m = Rc::new(Module::new(
        "mxnet.gluon.data.vision.transforms",
        "image transforms",
    ));
    m.set(
        "ToTensor",
        builtin(
            "ToTensor",
            "ToTensor(): (H, W, C) values 0..255 to (C, H, W) float32 values in [0, 1].",
            |_, a| {
                a.finish(0)?;
                Ok(object(TransformObj(vec![Transform::ToTensor])))
            },
        ),
    );
    m.set(
        "Normalize",
        builtin(
            "Normalize",
            "Normalize(mean=0.0, std=1.0): (x - mean) / std per channel (one value or one per channel).",
            |it, mut a| {
                let mean = a.take(0, "mean")?.unwrap_or(Value::Float(0.0));
                let std = a.take(1, "std")?.unwrap_or(Value::Float(1.0));
                a.finish(2)?;
                let mean = floats_arg(it, mean, "mean")?;
                let std = floats_arg(it, std, "std")?;
                if std.contains(&0.0) {
                    return Err(Exc::value_error("Normalize: std must not be 0"));
                }
                Ok(object(TransformObj(vec![Transform::Normalize { mean, std }])))
            },
        ),
    );
    m.set("Resize", builtin("Resize", "Resize(size, keep_ratio=False, interpolation=1): bilinear resize of an (H, W, C) image to size (an int: square; a tuple: (width, height)).", |it, a| resize_transform(it, a, false)));
    m.set(
        "Compose",
        builtin(
            "Compose",
            "Compose([t1, t2, ...]): apply the transforms in order.",
            |it, mut a| {
                let list = a.required(0, "transforms")?;
                a.finish(1)?;
                let steps = it.iterate(&list)?;
                let natives: Option<Vec<Vec<Transform>>> =
                    steps.iter().map(native_pipeline).collect();
                Ok(match natives {
                    Some(chains) => object(TransformObj(chains.into_iter().flatten().collect())),
                    None => object(ComposeObj(steps)),
                })
            },
        ),
    );
    m
}

// ---- DataLoader ----------------------------------------------------------------------------

struct LoaderObj {
    /// PyTorch's DataLoader: tensors, int64 labels, each batch a list.
    torch: bool,
    dataset: Rc<Dataset>,
    /// The data set as the program passed it (`loader.dataset` is that object).
    dataset_value: Value,
    batch_size: usize,
    shuffle: bool,
    keep_last: bool,
    workers: usize,
}

impl LoaderObj {
    fn plan(&self, it: &mut dyn Interpreter) -> Result<Vec<Vec<usize>>, Exc> {
        let n = self.dataset.len(it)?;
        let mut order: Vec<usize> = (0..n).collect();
        if self.torch {
            // PyTorch's iterator draws its base seed from the default generator, and its
            // RandomSampler a seed for a private generator that permutes: the same draws keep
            // torch.manual_seed programs on PyTorch's numbers (and its shuffled order).
            let rt = &it.state_mut().rt;
            rt.torch_int64_draw()?;
            if self.shuffle {
                let seed = rt.torch_int64_draw()?;
                order = crate::runtime::random::TorchGen::new(seed as u64).randperm(n);
            }
        } else if self.shuffle && n > 1 {
            // Keys from the session's generator, so mx.random.seed makes the order reproducible.
            let keys = it
                .state_mut()
                .rt
                .uniform(0.0, 1.0, &[n], DType::Float64, Device::cpu(0))?
                .to_host()
                .to_f64_vec();
            order.sort_by(|&a, &b| {
                let ka = keys.get(a).copied().unwrap_or(0.0);
                let kb = keys.get(b).copied().unwrap_or(0.0);
                ka.total_cmp(&kb)
            });
        }
        Ok(data::batches(&order, self.batch_size, self.keep_last))
    }
}

impl NativeObject for LoaderObj {
    fn type_name(&self) -> &str {
        "DataLoader"
    }
    fn repr(&self) -> String {
        format!(
            "<DataLoader batch_size={}, shuffle={}, last_batch='{}', num_workers={}>",
            self.batch_size,
            if self.shuffle { "True" } else { "False" },
            if self.keep_last { "keep" } else { "discard" },
            self.workers
        )
    }
    fn get_attr(&self, this: &Rc<dyn NativeObject>, name: &str) -> Option<Value> {
        Some(match name {
            "__lazy_iter__" => Value::Bool(true),
            "dataset" if self.torch => self.dataset_value.clone(),
            "_dataset" if !self.torch => self.dataset_value.clone(),
            "batch_size" => Value::Int(self.batch_size as i64),
            "drop_last" if self.torch => Value::Bool(!self.keep_last),
            "__len__" => bound(
                this,
                "__len__",
                "len(loader): the number of batches.",
                |it, r, a| {
                    a.finish(0)?;
                    let l = downcast::<LoaderObj>(r, "a DataLoader")?;
                    let n = l.dataset.len(it)?;
                    let full = n / l.batch_size;
                    let batches = if l.keep_last && n % l.batch_size != 0 {
                        full + 1
                    } else {
                        full
                    };
                    Ok(Value::Int(batches as i64))
                },
            ),
            "__iter__" => bound(
                this,
                "__iter__",
                "iter(loader): the batches of one epoch.",
                |it, r, a| {
                    a.finish(0)?;
                    let l = downcast::<LoaderObj>(r, "a DataLoader")?;
                    let plan = l.plan(it)?;
                    let fl = if l.torch { Flavor::Torch } else { flavor(it) };
                    let bytes = matches!(&l.dataset.source, Source::Images { pipeline, .. } if byte_images(l.torch, pipeline));
                    let state = match (&l.dataset.source, l.workers) {
                        (Source::Images { set, pipeline }, w) if w > 0 => IterState::Worker {
                            // Each worker keeps one batch ready; more would only hold memory.
                            rx: data::spawn_worker(set.clone(), pipeline.clone(), plan, w),
                        },
                        _ => IterState::Inline {
                            dataset: l.dataset.clone(),
                            plan,
                            pos: 0,
                        },
                    };
                    Ok(object(LoaderIter {
                        state: RefCell::new(state),
                        flavor: fl,
                        torch: l.torch,
                        bytes,
                    }))
                },
            ),
            _ => return None,
        })
    }
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

enum IterState {
    Worker {
        rx: Receiver<Result<HostBatch, String>>,
    },
    Inline {
        dataset: Rc<Dataset>,
        plan: Vec<Vec<usize>>,
        pos: usize,
    },
}

struct LoaderIter {
    state: RefCell<IterState>,
    flavor: Flavor,
    torch: bool,
    /// Batches of a Gluon image set without ToTensor: uint8 images.
    bytes: bool,
}

fn stop() -> Exc {
    Exc::new(ExcKind::StopIteration, "")
}

impl LoaderIter {
    fn host_batch(&self, it: &dyn Interpreter, b: HostBatch) -> Result<Value, Exc> {
        let n = b.labels.len();
        let mut x = host_array(it, b.data, Device::cpu(0))?;
        if self.bytes {
            x = x.astype(DType::UInt8)?;
        }
        let y = it
            .state()
            .rt
            .from_host(HostData::I32(b.labels), &[n], Device::cpu(0))?;
        if self.torch {
            // PyTorch's default collate: int64 labels, the batch a list.
            let y = y.astype(DType::Int64)?;
            return Ok(Value::list(vec![
                wrap(x, self.flavor),
                wrap(y, self.flavor),
            ]));
        }
        Ok(Value::tuple(vec![
            wrap(x, self.flavor),
            wrap(y, self.flavor),
        ]))
    }

    fn next(&self, it: &mut dyn Interpreter) -> Result<Value, Exc> {
        let step = {
            let mut state = self.state.borrow_mut();
            match &mut *state {
                IterState::Worker { rx } => match rx.recv() {
                    Ok(Ok(b)) => Ok(b),
                    Ok(Err(msg)) => return Err(Exc::value_error(msg)),
                    Err(_) => return Err(stop()),
                },
                IterState::Inline { dataset, plan, pos } => {
                    let Some(indices) = plan.get(*pos).cloned() else {
                        return Err(stop());
                    };
                    *pos += 1;
                    Err((dataset.clone(), indices))
                }
            }
        };
        match step {
            Ok(b) => self.host_batch(it, b),
            Err((dataset, indices)) => {
                if let Source::Images { set, pipeline } = &dataset.source {
                    let b =
                        data::prepare_batch(set, &indices, pipeline).map_err(Exc::value_error)?;
                    return self.host_batch(it, b);
                }
                let mut items = Vec::with_capacity(indices.len());
                for i in indices {
                    items.push(dataset.get(it, i)?);
                }
                let batch = batchify(it, items, self.flavor)?;
                match (&batch, self.torch) {
                    (Value::Tuple(parts), true) => Ok(Value::list(parts.to_vec())),
                    _ => Ok(batch),
                }
            }
        }
    }
}

/// Stacks items: tuples column by column, arrays along a new first axis, numbers into an array
/// (int32 for integers, float32 otherwise), as Gluon's default batchify does.
fn batchify(it: &mut dyn Interpreter, items: Vec<Value>, fl: Flavor) -> Result<Value, Exc> {
    let Some(first) = items.first() else {
        return Err(stop());
    };
    match first {
        Value::Tuple(t) => {
            let width = t.len();
            let mut columns: Vec<Vec<Value>> = vec![Vec::with_capacity(items.len()); width];
            for item in &items {
                let Value::Tuple(parts) = item else {
                    return Err(Exc::type_error("DataLoader: items mix tuples and non-tuples"));
                };
                if parts.len() != width {
                    return Err(Exc::value_error(format!(
                        "DataLoader: items have different lengths ({width} and {})",
                        parts.len()
                    )));
                }
                for (col, v) in columns.iter_mut().zip(parts.iter()) {
                    col.push(v.clone());
                }
            }
            let mut out = Vec::with_capacity(width);
            for col in columns {
                out.push(batchify(it, col, fl)?);
            }
            Ok(Value::tuple(out))
        }
        Value::Array(a0) => {
            let arrays: Option<Vec<Array>> = items
                .iter()
                .map(|v| v.as_array().map(|a| a.array.clone()))
                .collect();
            let arrays = arrays
                .ok_or_else(|| Exc::type_error("DataLoader: items mix arrays and other values"))?;
            Ok(wrap(Array::stack(&arrays, 0)?, a0.flavor))
        }
        Value::Int(_) | Value::Bool(_) | Value::Float(_) => {
            let ints = items.iter().all(|v| matches!(v, Value::Int(_) | Value::Bool(_)));
            let values: Option<Vec<f64>> = items.iter().map(as_f64).collect();
            let values =
                values.ok_or_else(|| Exc::type_error("DataLoader: items mix numbers and other values"))?;
            let n = values.len();
            let dtype = match (ints, fl) {
                (true, Flavor::Torch) => DType::Int64,
                (true, _) => DType::Int32,
                (false, _) => DType::Float32,
            };
            Ok(wrap(
                it.state_mut().rt.from_f64(values, &[n], dtype, Device::cpu(0))?,
                fl,
            ))
        }
        other => Err(Exc::type_error(format!(
            "DataLoader: cannot batch items of type {}; items should be arrays, numbers or tuples of them",
            other.type_name()
        ))),
    }
}

impl NativeObject for LoaderIter {
    fn type_name(&self) -> &str {
        "_MultiWorkerIter"
    }
    fn repr(&self) -> String {
        "<DataLoader iterator>".into()
    }
    fn get_attr(&self, this: &Rc<dyn NativeObject>, name: &str) -> Option<Value> {
        match name {
            "__next__" => Some(bound(this, "__next__", "the next batch", |it, r, a| {
                a.finish(0)?;
                downcast::<LoaderIter>(r, "a DataLoader iterator")?.next(it)
            })),
            _ => None,
        }
    }
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

fn data_loader(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let ds = a.required(0, "dataset")?;
    let dataset = match dataset_of(&ds) {
        Ok(d) => d,
        // A bare array or list is a one-column data set, as in Gluon.
        Err(_) if matches!(ds, Value::Array(_) | Value::List(_)) => dataset_of(&array_dataset(
            it,
            Args {
                pos: vec![ds.clone()],
                ..Args::default()
            },
        )?)?,
        Err(e) => return Err(e),
    };
    let batch_size = match a.take(1, "batch_size")? {
        None | Some(Value::None) => {
            return Err(Exc::type_error(
                "DataLoader needs batch_size, e.g. DataLoader(dataset, batch_size=256)",
            ))
        }
        Some(v) => usize_arg(&v, "batch_size")?,
    };
    if batch_size == 0 {
        return Err(Exc::value_error(
            "DataLoader: batch_size must be at least 1",
        ));
    }
    let shuffle = a.flag(2, "shuffle", false)?;
    a.take(3, "sampler")?;
    let last = a.take(4, "last_batch")?;
    a.take(5, "batch_sampler")?;
    a.take(6, "batchify_fn")?;
    let workers = a
        .take(7, "num_workers")?
        .map(|v| usize_arg(&v, "num_workers"))
        .transpose()?
        .unwrap_or(0);
    a.take_kw("pin_memory");
    a.take_kw("prefetch");
    a.take_kw("thread_pool");
    a.take_kw("timeout");
    a.finish(8)?;
    let keep_last = match &last {
        None | Some(Value::None) => true,
        Some(Value::Str(s)) if &**s == "keep" => true,
        Some(Value::Str(s)) if &**s == "discard" => false,
        Some(other) => {
            return Err(Exc::value_error(format!(
                "DataLoader: last_batch must be 'keep' or 'discard' ('rollover' is not supported), got {}",
                crate::object::format::repr(it, other)?
            )))
        }
    };
    Ok(object(LoaderObj {
        torch: false,
        dataset,
        dataset_value: ds,
        batch_size,
        shuffle,
        keep_last,
        workers,
    }))
}

/// `torch.utils.data.DataLoader(dataset, batch_size=1, shuffle=False, num_workers=0,
/// drop_last=False)`.
fn torch_data_loader(_: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let ds = a.required(0, "dataset")?;
    let dataset = dataset_of(&ds)?;
    let batch_size = match a.take(1, "batch_size")? {
        None => 1,
        Some(v) => usize_arg(&v, "batch_size")?,
    };
    if batch_size == 0 {
        return Err(Exc::value_error(
            "batch_size should be a positive integer value, but got batch_size=0",
        ));
    }
    let shuffle = a.flag(2, "shuffle", false)?;
    a.take(3, "sampler")?;
    a.take(4, "batch_sampler")?;
    let workers = a
        .take(5, "num_workers")?
        .map(|v| usize_arg(&v, "num_workers"))
        .transpose()?
        .unwrap_or(0);
    a.take(6, "collate_fn")?;
    a.take(7, "pin_memory")?;
    let drop_last = a.flag(8, "drop_last", false)?;
    for k in [
        "timeout",
        "worker_init_fn",
        "generator",
        "prefetch_factor",
        "persistent_workers",
    ] {
        a.take_kw(k);
    }
    a.finish(9)?;
    Ok(object(LoaderObj {
        torch: true,
        dataset,
        dataset_value: ds,
        batch_size,
        shuffle,
        keep_last: !drop_last,
        workers,
    }))
}

/// `torchvision.datasets.FashionMNIST(root, train=True, transform=None, download=False)`:
/// (image, label) items; a native `transform` (ToTensor, Normalize) stays native.
fn torch_fashion_mnist(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let root = a.take(0, "root")?;
    let train = a.take(1, "train")?;
    let transform = a.take(2, "transform")?;
    let target_transform = a
        .take(3, "target_transform")?
        .filter(|t| !matches!(t, Value::None));
    let download = a
        .take(4, "download")?
        .map(|d| d.truthy())
        .transpose()?
        .unwrap_or(false);
    a.finish(5)?;
    let is_train = train
        .as_ref()
        .map(|t| t.truthy())
        .transpose()?
        .unwrap_or(true);
    let dir = match &root {
        None | Some(Value::None) => data::locate(&[], is_train).map_err(data_error)?,
        Some(Value::Str(r)) => {
            let r = PathBuf::from(expand_home(r));
            // torchvision keeps the files in root/FashionMNIST/raw; a root holding them is read too.
            let preferred = [r.join("FashionMNIST").join("raw"), r.clone()];
            let found = preferred
                .iter()
                .find(|d| data::has_mnist_files(d, is_train))
                .cloned();
            match found {
                Some(d) => d,
                // download=True fetches what is missing; devarray reads its local copy instead.
                None if download => data::locate(&preferred, is_train).map_err(data_error)?,
                None => {
                    return Err(Exc::new(
                        ExcKind::RuntimeError,
                        "Dataset not found. You can use download=True to download it",
                    ))
                }
            }
        }
        Some(other) => {
            return Err(Exc::type_error(format!(
                "root must be a directory name, got {}",
                other.type_name()
            )))
        }
    };
    let args = Args {
        pos: vec![Value::str(&dir.to_string_lossy()), Value::Bool(is_train)],
        ..Args::default()
    };
    let ds = fashion_mnist(it, args)?;
    let base = dataset_of(&ds)?;
    let source = match (&base.source, &transform) {
        (Source::Images { set, pipeline }, None | Some(Value::None)) => Source::Images {
            set: set.clone(),
            pipeline: pipeline.clone(),
        },
        (Source::Images { set, pipeline }, Some(f)) if native_pipeline(f).is_some() => {
            let mut pipeline = pipeline.clone();
            pipeline.extend(native_pipeline(f).unwrap_or_default());
            Source::Images {
                set: set.clone(),
                pipeline,
            }
        }
        (_, Some(f)) => Source::Mapped {
            base: Rc::new(Dataset {
                type_name: "FashionMNIST",
                source: match &base.source {
                    Source::Images { set, pipeline } => Source::Images {
                        set: set.clone(),
                        pipeline: pipeline.clone(),
                    },
                    _ => return Err(Exc::type_error("FashionMNIST: unexpected data set")),
                },
                torch: true,
            }),
            f: f.clone(),
            first_only: true,
        },
        _ => return Err(Exc::type_error("FashionMNIST: unexpected data set")),
    };
    let source = match target_transform {
        None => source,
        Some(f) => Source::Targets {
            base: Rc::new(Dataset {
                type_name: "FashionMNIST",
                source,
                torch: true,
            }),
            f,
        },
    };
    Ok(torch_dataset_value("FashionMNIST", source))
}

/// `torch.utils.data.Subset(dataset, indices)`.
fn subset(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let ds = a.required(0, "dataset")?;
    let idx = a.required(1, "indices")?;
    a.finish(2)?;
    let base = dataset_of(&ds)?;
    let n = base.len(it)?;
    let mut indices = Vec::new();
    for v in it.iterate(&idx)? {
        let i = as_i64(&v).ok_or_else(|| {
            Exc::type_error(format!(
                "Subset indices must be integers, got {}",
                v.type_name()
            ))
        })?;
        let j = if i < 0 { i + n as i64 } else { i };
        let j = usize::try_from(j)
            .ok()
            .filter(|&j| j < n)
            .ok_or_else(|| out_of_range(i.unsigned_abs() as usize, n))?;
        indices.push(j);
    }
    let torch = base.torch;
    Ok(object(DatasetObj(Rc::new(Dataset {
        type_name: "Subset",
        source: Source::Subset { base, indices },
        torch,
    }))))
}

/// `torch.utils.data.TensorDataset(*tensors)`: items are tuples of the tensors' i-th rows.
fn tensor_dataset(it: &mut dyn Interpreter, a: Args) -> Result<Value, Exc> {
    let ds = array_dataset(it, a)?;
    let base = dataset_of(&ds)?;
    match &base.source {
        Source::Columns(cols) => Ok(torch_dataset_value(
            "TensorDataset",
            Source::Columns(cols.clone()),
        )),
        _ => Ok(ds),
    }
}

/// `torchvision`, `torchvision.datasets`, `torchvision.transforms`, `torch.utils.data`.
pub fn build_torch(dotted: &str) -> Option<Rc<Module>> {
    Some(match dotted {
        "torchvision" => {
            let m = Rc::new(Module::new(
                "torchvision",
                "PyTorch's vision data sets and transforms",
            ));
            m.set(
                "datasets",
                Value::Module(build_torch("torchvision.datasets")?),
            );
            m.set(
                "transforms",
                Value::Module(build_torch("torchvision.transforms")?),
            );
            m
        }
        "torchvision.datasets" => {
            let m = Rc::new(Module::new(
                "torchvision.datasets",
                "image data sets read from local files",
            ));
            m.set("FashionMNIST", builtin("FashionMNIST", "FashionMNIST(root=None, train=True, transform=None, download=False): (image, label) items from the IDX files in root, $DEVARRAY_FASHION_MNIST or /usr/share/datasets/fashion-mnist. Nothing is downloaded.", torch_fashion_mnist));
            m
        }
        "torchvision.transforms" => {
            let t = transforms_module();
            let m = Rc::new(Module::new("torchvision.transforms", "image transforms"));
            m.set("Resize", builtin("Resize", "Resize(size, interpolation=InterpolationMode.BILINEAR, max_size=None, antialias=True): bilinear resize; an int size is the shorter edge's.", |it, a| resize_transform(it, a, true)));
            for name in ["ToTensor", "Normalize", "Compose"] {
                if let Some(v) = t.get(name) {
                    m.set(name, v);
                }
            }
            m.set(
                "PILToTensor",
                builtin(
                    "PILToTensor",
                    "PILToTensor(): an (H, W, C) image to a (C, H, W) uint8 tensor, values kept.",
                    |_, a| {
                        a.finish(0)?;
                        Ok(object(TransformObj(vec![Transform::PilToTensor])))
                    },
                ),
            );
            m.set(
                "Lambda",
                builtin(
                    "Lambda",
                    "Lambda(lambd): a transform that calls lambd (e.g. on a target_transform's label).",
                    lambda_transform,
                ),
            );
            m
        }
        "torch.utils" => {
            let m = Rc::new(Module::new("torch.utils", "utilities"));
            m.set("data", Value::Module(build_torch("torch.utils.data")?));
            m
        }
        "torch.utils.data" => {
            let m = Rc::new(Module::new("torch.utils.data", "data sets and loaders"));
            m.set("DataLoader", builtin("DataLoader", "DataLoader(dataset, batch_size=1, shuffle=False, num_workers=0, drop_last=False): batches [X, y] of tensors (labels int64); with num_workers > 0 a worker thread prepares the next batch of a native data set.", torch_data_loader));
            m.set(
                "TensorDataset",
                builtin(
                    "TensorDataset",
                    "TensorDataset(*tensors): items are tuples of the tensors' i-th rows.",
                    tensor_dataset,
                ),
            );
            m.set("Dataset", dataset_class().value());
            m.set(
                "Subset",
                builtin(
                    "Subset",
                    "Subset(dataset, indices): the items of dataset at indices.",
                    subset,
                ),
            );
            m
        }
        _ => return None,
    })
}

thread_local! {
    static DATASET_CLASS: RefCell<Option<Rc<crate::object::class::Class>>> = const { RefCell::new(None) };
}

/// `torch.utils.data.Dataset`: the base of a program's data sets (define `__len__` and
/// `__getitem__`).
fn dataset_class() -> Rc<crate::object::class::Class> {
    DATASET_CLASS.with(|c| {
        if let Some(k) = c.borrow().as_ref() {
            return k.clone();
        }
        let k = crate::modules::python::stdlib::native_class(
            "Dataset",
            "torch.utils.data.dataset",
            Value::Type(crate::object::value::TypeKind::Object),
            "An abstract data set: subclass it and define __getitem__(self, i) and __len__(self).",
            &[],
        );
        *c.borrow_mut() = Some(k.clone());
        k
    })
}

/// The modules this file provides, by dotted name.
pub fn build(dotted: &str) -> Option<Rc<Module>> {
    Some(match dotted {
        "mxnet.gluon.data.vision.transforms" => transforms_module(),
        "mxnet.gluon.data.vision.datasets" => {
            let m = Rc::new(Module::new(
                "mxnet.gluon.data.vision.datasets",
                "image data sets read from local files",
            ));
            m.set("FashionMNIST", builtin("FashionMNIST", "FashionMNIST(root=None, train=True, transform=None): the IDX files from root, $DEVARRAY_FASHION_MNIST or /usr/share/datasets/fashion-mnist (apt-get install dataset-fashion-mnist). Nothing is downloaded.", fashion_mnist));
            m
        }
        "mxnet.gluon.data.vision" => {
            let m = Rc::new(Module::new(
                "mxnet.gluon.data.vision",
                "vision data sets and transforms",
            ));
            let datasets = build("mxnet.gluon.data.vision.datasets")?;
            // Gluon's vision package re-exports its data sets (gluon.data.vision.FashionMNIST).
            if let Some(f) = datasets.get("FashionMNIST") {
                m.set("FashionMNIST", f);
            }
            m.set("datasets", Value::Module(datasets));
            m.set(
                "transforms",
                Value::Module(build("mxnet.gluon.data.vision.transforms")?),
            );
            m
        }
        "mxnet.gluon.data" => {
            let m = Rc::new(Module::new("mxnet.gluon.data", "data sets and loaders"));
            m.set("vision", Value::Module(build("mxnet.gluon.data.vision")?));
            m.set(
                "ArrayDataset",
                builtin(
                    "ArrayDataset",
                    "ArrayDataset(*columns): items are tuples of the columns' i-th elements.",
                    array_dataset,
                ),
            );
            m.set("DataLoader", builtin("DataLoader", "DataLoader(dataset, batch_size, shuffle=False, last_batch='keep', num_workers=0): batches of (data, label); with num_workers > 0 a worker thread prepares the next batch (for native data sets).", data_loader));
            // `Dataset`, `SimpleDataset` and the samplers are written in the language.
            m.set(
                "__getattr__",
                builtin("__getattr__", "", |it, a| {
                    crate::modules::python::library_names::library_attr(
                        it,
                        a,
                        "mxnet.gluon.data",
                        "mxnet.gluon.data._more",
                        GLUON_DATA_NAMES,
                    )
                }),
            );
            m
        }
        _ => return None,
    })
}

/// `gluon.data`'s classes that `mxnet.gluon.data._more` defines.
const GLUON_DATA_NAMES: &[&str] = &[
    "Dataset",
    "SimpleDataset",
    "Sampler",
    "SequentialSampler",
    "RandomSampler",
    "BatchSampler",
    "FilterSampler",
];

// ---- progress ------------------------------------------------------------------------------

/// `gluon.utils.Progress(total_or_iterable, desc='')`: a one-line text bar redrawn with `\r`,
/// which a terminal and Jupyter's stream output both overwrite in place. Wrapping a DataLoader
/// (`for X, y in Progress(train_iter, 'epoch 1')`) advances it once per batch.
struct ProgressObj {
    total: usize,
    desc: String,
    done: std::cell::Cell<usize>,
    source: Option<Value>,
    /// Names this bar's output, so a notebook updates it in place.
    display_id: String,
    shown: std::cell::Cell<bool>,
}

/// Makes progress bars' display ids unique within the process.
static NEXT_PROGRESS_ID: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

const BAR_WIDTH: usize = 30;

impl ProgressObj {
    fn line(&self) -> String {
        let done = self.done.get().min(self.total);
        let filled = (done * BAR_WIDTH)
            .checked_div(self.total)
            .unwrap_or(BAR_WIDTH);
        let bar: String = (0..BAR_WIDTH)
            .map(|i| if i < filled { '#' } else { '.' })
            .collect();
        let label = if self.desc.is_empty() {
            String::new()
        } else {
            format!("{} ", self.desc)
        };
        format!("{label}[{bar}] {done}/{}", self.total)
    }

    /// The text line and, for notebooks, an HTML bar (as tqdm.notebook draws one).
    fn data(&self) -> crate::object::DisplayData {
        let done = self.done.get().min(self.total);
        crate::object::DisplayData {
            plain: self.line(),
            html: Some(crate::display::html::progress_html(
                &self.desc, done, self.total,
            )),
            ..Default::default()
        }
    }

    /// Ends the bar's line; nothing when it was never drawn (an empty iterable).
    fn end(&self, it: &mut dyn Interpreter) {
        if self.shown.replace(false) {
            it.out()
                .progress(&self.display_id, &self.data(), ProgressState::End);
        }
    }

    fn advance(&self, it: &mut dyn Interpreter, n: usize) {
        self.done.set(self.done.get().saturating_add(n));
        let state = if self.shown.replace(true) {
            ProgressState::Update
        } else {
            ProgressState::Start
        };
        it.out().progress(&self.display_id, &self.data(), state);
    }
}

fn progress_of(v: &Value) -> Result<&ProgressObj, Exc> {
    downcast::<ProgressObj>(v, "a Progress bar")
}

impl NativeObject for ProgressObj {
    fn type_name(&self) -> &str {
        "Progress"
    }
    fn repr(&self) -> String {
        self.line()
    }
    fn attr_names(&self) -> Vec<&'static str> {
        vec!["update", "close"]
    }
    fn get_attr(&self, this: &Rc<dyn NativeObject>, name: &str) -> Option<Value> {
        Some(match name {
            "__lazy_iter__" if self.source.is_some() => Value::Bool(true),
            "__len__" => bound(this, "__len__", "len(progress)", |_, r, a| {
                a.finish(0)?;
                Ok(Value::Int(progress_of(r)?.total as i64))
            }),
            "update" => bound(
                this,
                "update",
                "p.update(n=1): advance the bar by n steps and redraw it.",
                |it, r, mut a| {
                    let n = a
                        .take(0, "n")?
                        .map(|v| usize_arg(&v, "n"))
                        .transpose()?
                        .unwrap_or(1);
                    a.finish(1)?;
                    progress_of(r)?.advance(it, n);
                    Ok(Value::None)
                },
            ),
            "close" => bound(
                this,
                "close",
                "p.close(): end the bar's line.",
                |it, r, a| {
                    a.finish(0)?;
                    progress_of(r)?.end(it);
                    Ok(Value::None)
                },
            ),
            "__iter__" if self.source.is_some() => bound(
                this,
                "__iter__",
                "iterate the wrapped iterable, advancing the bar",
                |it, r, a| {
                    a.finish(0)?;
                    let source = progress_of(r)?.source.clone().unwrap_or(Value::None);
                    let next = match &source {
                        Value::Object(o) if o.get_attr(o, "__lazy_iter__").is_some() => {
                            let iter_fn = o.get_attr(o, "__iter__").ok_or_else(|| {
                                Exc::type_error("Progress: the wrapped object is not iterable")
                            })?;
                            let iterator = it.call_value(&iter_fn, Args::default())?;
                            match &iterator {
                                Value::Object(i) => i.get_attr(i, "__next__"),
                                _ => None,
                            }
                        }
                        _ => None,
                    };
                    let items = match next {
                        Some(_) => Vec::new(),
                        None => it.iterate(&source)?,
                    };
                    Ok(object(ProgressIter {
                        bar: r.clone(),
                        next,
                        items: RefCell::new(items.into_iter()),
                    }))
                },
            ),
            _ => return None,
        })
    }
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

struct ProgressIter {
    bar: Value,
    /// The wrapped iterator's `__next__` when it is lazy; otherwise the materialised items.
    next: Option<Value>,
    items: RefCell<std::vec::IntoIter<Value>>,
}

impl NativeObject for ProgressIter {
    fn type_name(&self) -> &str {
        "ProgressIterator"
    }
    fn repr(&self) -> String {
        "<Progress iterator>".into()
    }
    fn get_attr(&self, this: &Rc<dyn NativeObject>, name: &str) -> Option<Value> {
        match name {
            "__next__" => Some(bound(this, "__next__", "the next item", |it, r, a| {
                a.finish(0)?;
                let me = downcast::<ProgressIter>(r, "a Progress iterator")?;
                let item = match &me.next {
                    Some(f) => match it.call_value(f, Args::default()) {
                        Ok(v) => Some(v),
                        Err(e) if e.kind == ExcKind::StopIteration => None,
                        Err(e) => return Err(e),
                    },
                    None => me.items.borrow_mut().next(),
                };
                let bar = progress_of(&me.bar)?;
                match item {
                    Some(v) => {
                        bar.advance(it, 1);
                        Ok(v)
                    }
                    None => {
                        // Through the sink: a terminal ends the line, a
                        // notebook's bar (an HTML output) needs no newline.
                        bar.end(it);
                        Err(stop())
                    }
                }
            })),
            _ => None,
        }
    }
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

pub fn progress(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let what = a.required(0, "total")?;
    let desc = match &a.take(1, "desc")? {
        None | Some(Value::None) => String::new(),
        Some(Value::Str(s)) => s.to_string(),
        Some(other) => {
            return Err(Exc::type_error(format!(
                "desc must be a string, got {}",
                other.type_name()
            )))
        }
    };
    a.finish(2)?;
    let (total, source) = match &what {
        Value::Int(_) => (usize_arg(&what, "total")?, None),
        other => {
            let n = crate::modules::python::builtins::len(
                it,
                Args {
                    pos: vec![other.clone()],
                    ..Args::default()
                },
            )?;
            (usize_arg(&n, "len(iterable)")?, Some(other.clone()))
        }
    };
    Ok(object(ProgressObj {
        total,
        desc,
        done: std::cell::Cell::new(0),
        source,
        display_id: format!(
            "devarray-progress-{}",
            NEXT_PROGRESS_ID.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
        ),
        shown: std::cell::Cell::new(false),
    }))
}
