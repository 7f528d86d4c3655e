//! PyTorch's lazy modules: `nn.LazyLinear`, `LazyConv1d`/`2d`, `LazyBatchNorm1d`/`2d`. Each is
//! its own class, as in PyTorch (`LazyConv2d(_LazyConvXdMixin, Conv2d)`, with
//! `LazyModuleMixin` behind the mixin), so `type(m) == nn.Conv2d` is False and
//! `isinstance(m, nn.Conv2d)` True until the first forward pass. That pass sizes the parameters,
//! and the block's built-in `forward` then sets the instance's class to the class's
//! `cls_to_become` (`array::blocks`), as PyTorch's `_infer_parameters` hook assigns `__class__`.
use std::cell::RefCell;
use std::rc::Rc;

use super::conv;
use super::nn::TorchClasses;
use crate::modules::array::blocks::{self, core_of};
use crate::nn::layers::Parameter;
use crate::object::class::Class;
use crate::object::error::Exc;
use crate::object::value::{Args, BuiltinFn, Flavor, Module, TypeKind, Value};
use crate::object::Interpreter;
use crate::runtime::{Device, DeviceKind};

thread_local! {
    /// Made once per thread, so `nn.LazyConv2d` is one object however torch is imported.
    static CLASSES: RefCell<Option<Vec<Rc<Class>>>> = const { RefCell::new(None) };
}

/// Adds the lazy classes to `torch.nn`.
pub fn register(m: &Module, k: &TorchClasses) {
    for c in classes(k) {
        if !c.name.starts_with('_') && &*c.name != "LazyModuleMixin" {
            m.set(&c.name, c.value());
        }
    }
}

/// `nn.UninitializedParameter`: the class of a lazy module's parameters until the first input.
fn uninitialized_class(k: &TorchClasses) -> Rc<Class> {
    crate::modules::python::stdlib::native_class(
        "UninitializedParameter",
        "torch.nn.parameter",
        k.parameter.value(),
        "A parameter that is not initialized: a lazy module's, until its first forward pass gives it a shape and draws its values.",
        &[("__new__", |_, _| {
            Err(Exc::type_error(
                "UninitializedParameter() is made by the lazy modules (nn.LazyLinear, nn.LazyConv2d, ...), not by a program",
            ))
        })],
    )
}

/// `nn.UninitializedBuffer`: a lazy batch norm's running statistics until the first input.
fn uninitialized_buffer_class() -> Rc<Class> {
    crate::modules::python::stdlib::native_class(
        "UninitializedBuffer",
        "torch.nn.parameter",
        Value::Type(TypeKind::Object),
        "A buffer that is not initialized: a lazy batch norm's running statistics, until its first forward pass gives them a shape.",
        &[("__new__", |_, _| {
            Err(Exc::type_error(
                "UninitializedBuffer() is made by the lazy modules (nn.LazyBatchNorm2d, ...), not by a program",
            ))
        })],
    )
}

/// What PyTorch answers for an uninitialized parameter without its values: where it will be
/// made (`device`, `get_device()`), its `dtype`, `size()` (`torch.Size([0])`, the empty
/// placeholder's), `ndim`, `is_leaf`.
fn uninitialized_attr(p: &Rc<Parameter>, name: &str) -> Option<Value> {
    let device = p
        .deferred_devices()
        .and_then(|d| d.first().copied())
        .unwrap_or(Device::cpu(0));
    Some(match name {
        "device" => super::TorchDevice::of_tensor(device).value(),
        "dtype" => Value::DType(p.dtype.get(), Flavor::Torch),
        "is_leaf" => Value::Bool(true),
        "ndim" => Value::Int(1),
        "is_cuda" => Value::Bool(device.kind == DeviceKind::Gpu),
        "size" => crate::object::builtin("size", "", |it, _| super::size::value(it, &[0])),
        "is_floating_point" => {
            crate::object::builtin("is_floating_point", "", |_, _| Ok(Value::Bool(true)))
        }
        "is_complex" => crate::object::builtin("is_complex", "", |_, _| Ok(Value::Bool(false))),
        _ => return None,
    })
}

fn classes(k: &TorchClasses) -> Vec<Rc<Class>> {
    CLASSES.with(|c| {
        if let Some(list) = c.borrow().as_ref() {
            return list.clone();
        }
        let list = make(k);
        *c.borrow_mut() = Some(list.clone());
        list
    })
}

fn make(k: &TorchClasses) -> Vec<Rc<Class>> {
    let module = k.module.value();
    let class = |name: &str,
                 file: &str,
                 bases: Vec<Value>,
                 doc: &str,
                 methods: &[(&'static str, BuiltinFn)]| {
        blocks::native_block_class_bases(
            name,
            &format!("torch.nn.modules.{file}"),
            bases,
            doc,
            methods,
        )
    };
    let mixin = class(
        "LazyModuleMixin",
        "lazy",
        vec![Value::Type(TypeKind::Object)],
        "A mixin for modules that lazily initialize parameters, also known as \"lazy modules\": their parameters are UninitializedParameter until the first forward pass sizes them, and the module then becomes its cls_to_become.",
        &[("has_uninitialized_params", has_uninitialized_params)],
    );
    set_becomes(&mixin, Value::None);
    let conv_mixin = class("_LazyConvXdMixin", "conv", vec![mixin.value()], "", &[]);
    // `_LazyNormBase(LazyModuleMixin, _NormBase)`; a lazy batch norm derives from it and from
    // `_BatchNorm` (whose base `_NormBase` is the 2-d classes' grandparent).
    let batch_norm = base_of(&conv_layer(&module, "BatchNorm2d"));
    let norm_base = class(
        "_LazyNormBase",
        "batchnorm",
        vec![mixin.value(), base_of(&batch_norm)],
        "",
        &[],
    );
    let layer = |name: &str| conv_layer(&module, name);
    let lazy = |name: &str, file: &str, base: Value, target: Value, doc: &str, init: BuiltinFn| {
        let c = class(
            name,
            file,
            vec![base, target.clone()],
            doc,
            &[("__init__", init)],
        );
        set_becomes(&c, target);
        c
    };
    let linear = lazy(
        "LazyLinear",
        "linear",
        mixin.value(),
        k.linear.value(),
        "LazyLinear(out_features, bias=True): a torch.nn.Linear module where in_features is inferred from the first input; it becomes a Linear then.",
        super::nn::lazy_linear_init,
    );
    let conv1 = lazy(
        "LazyConv1d",
        "conv",
        conv_mixin.value(),
        layer("Conv1d"),
        "LazyConv1d(out_channels, kernel_size, stride=1, padding=0, dilation=1, groups=1, bias=True): a torch.nn.Conv1d module with lazy initialization of in_channels, inferred from the first input; it becomes a Conv1d then.",
        |it, a| conv::lazy_conv_init(it, a, 1),
    );
    let conv2 = lazy(
        "LazyConv2d",
        "conv",
        conv_mixin.value(),
        layer("Conv2d"),
        "LazyConv2d(out_channels, kernel_size, stride=1, padding=0, dilation=1, groups=1, bias=True): a torch.nn.Conv2d module with lazy initialization of in_channels, inferred from the first input; it becomes a Conv2d then.",
        |it, a| conv::lazy_conv_init(it, a, 2),
    );
    // PyTorch's lazy batch norms derive from `_BatchNorm`, not from `BatchNorm2d`: an
    // unmaterialised one is no `nn.BatchNorm2d` instance, and becomes one.
    let norm = |name: &str, target: &str, doc: &str, init: BuiltinFn| {
        let c = class(
            name,
            "batchnorm",
            vec![norm_base.value(), batch_norm.clone()],
            doc,
            &[("__init__", init)],
        );
        set_becomes(&c, layer(target));
        c
    };
    let bn1 = norm(
        "LazyBatchNorm1d",
        "BatchNorm1d",
        "LazyBatchNorm1d(eps=1e-05, momentum=0.1, affine=True, track_running_stats=True): a torch.nn.BatchNorm1d module with lazy initialization of num_features, inferred from the first input; it becomes a BatchNorm1d then.",
        |it, a| conv::lazy_batch_norm_init(it, a, 1),
    );
    let bn2 = norm(
        "LazyBatchNorm2d",
        "BatchNorm2d",
        "LazyBatchNorm2d(eps=1e-05, momentum=0.1, affine=True, track_running_stats=True): a torch.nn.BatchNorm2d module with lazy initialization of num_features, inferred from the first input; it becomes a BatchNorm2d then.",
        |it, a| conv::lazy_batch_norm_init(it, a, 2),
    );
    let uninit = uninitialized_class(k);
    let uninit_buffer = uninitialized_buffer_class();
    blocks::UNINITIALIZED_CLASS.with(|c| {
        *c.borrow_mut() = Some(Value::tuple(vec![uninit.value(), uninit_buffer.value()]))
    });
    blocks::UNINITIALIZED_ATTR.with(|c| c.set(Some(uninitialized_attr)));
    vec![
        uninit,
        uninit_buffer,
        mixin,
        conv_mixin,
        norm_base,
        linear,
        conv1,
        conv2,
        bn1,
        bn2,
    ]
}

/// A class's first base (`_BatchNorm` of `BatchNorm2d`).
fn base_of(class: &Value) -> Value {
    match class {
        Value::Class(c) => c.bases.first().cloned().unwrap_or(Value::None),
        _ => Value::None,
    }
}

fn conv_layer(module: &Value, name: &str) -> Value {
    conv::modules(module.clone())
        .into_iter()
        .find(|c| &*c.name == name)
        .map_or(Value::None, |c| c.value())
}

/// The class attribute PyTorch's lazy modules name their materialised class by.
fn set_becomes(class: &Rc<Class>, target: Value) {
    class
        .attrs
        .borrow_mut()
        .set(Rc::from("cls_to_become"), target);
}

/// `m.has_uninitialized_params()`: whether a parameter still waits for the first input.
fn has_uninitialized_params(_: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let this = a.required(0, "self")?;
    a.finish(1)?;
    let waiting = core_of(&this).is_some_and(|core| {
        core.params
            .borrow()
            .iter()
            .any(|(_, p)| !p.buffer.get() && !p.is_initialized())
    });
    Ok(Value::Bool(waiting))
}
