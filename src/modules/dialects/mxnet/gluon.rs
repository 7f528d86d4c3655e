//! Language bindings of `crate::nn`: `mxnet.autograd`, `mxnet.gluon` (`nn`, `loss`, `utils`,
//! `Trainer`) and `mxnet.init`. Layers, parameters and the trainer are native objects; the
//! work is done in `crate::nn` on the session's runtime and tape.
use std::cell::RefCell;
use std::rc::Rc;

use crate::nn::train::split_and_load;
use crate::runtime::Device;

use crate::modules::array::arrays::device_arg;
use crate::object::error::Exc;
use crate::object::ops::{as_i64, wrap};
use crate::object::value::{Args, Module, NativeObject, Value};
use crate::object::{builtin, Interpreter};

pub(crate) use crate::modules::array::arrays::mxnet_flavor as flavor;
pub(crate) use crate::modules::python::native::{bound, downcast, object, usize_arg};

/// One device or a list of them (`ctx=gpu(0)` or `ctx=[gpu(0), gpu(1)]`); None is cpu(0).
pub(crate) fn devices_arg(it: &mut dyn Interpreter, v: Option<Value>) -> Result<Vec<Device>, Exc> {
    match v {
        None | Some(Value::None) => Ok(vec![Device::cpu(0)]),
        Some(v @ (Value::List(_) | Value::Tuple(_))) => {
            let items = it.iterate(&v)?;
            if items.is_empty() {
                return Err(Exc::value_error(
                    "the device list is empty; pass e.g. [gpu(0), gpu(1)]",
                ));
            }
            items.iter().map(device_arg).collect()
        }
        Some(v) => Ok(vec![device_arg(&v)?]),
    }
}

// ---- autograd ----------------------------------------------------------------------------

/// `autograd.record()` / `autograd.pause()`: a context manager that sets the tape's state.
struct RecordScope {
    recording: bool,
    training: bool,
    saved: RefCell<Vec<(bool, bool)>>,
}

impl NativeObject for RecordScope {
    fn type_name(&self) -> &str {
        if self.recording {
            "_RecordingStateScope"
        } else {
            "_PauseScope"
        }
    }
    fn repr(&self) -> String {
        format!(
            "<autograd {} scope>",
            if self.recording { "record" } else { "pause" }
        )
    }
    fn enter(&self, interp: &mut dyn Interpreter) -> Result<Value, Exc> {
        if self.recording {
            crate::nn::cnn::drop_pending_running_stats();
        }
        let prev = interp
            .state_mut()
            .nn
            .tape
            .set_recording(self.recording, self.training);
        self.saved.borrow_mut().push(prev);
        Ok(Value::None)
    }
    fn exit(&self, interp: &mut dyn Interpreter) -> Result<(), Exc> {
        if let Some(prev) = self.saved.borrow_mut().pop() {
            interp.state_mut().nn.tape.restore(prev);
        }
        Ok(())
    }
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

fn record(_it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let train = a.flag(0, "train_mode", true)?;
    a.finish(1)?;
    Ok(object(RecordScope {
        recording: true,
        training: train,
        saved: RefCell::new(Vec::new()),
    }))
}

fn pause(_it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let train = a.flag(0, "train_mode", false)?;
    a.finish(1)?;
    Ok(object(RecordScope {
        recording: false,
        training: train,
        saved: RefCell::new(Vec::new()),
    }))
}

fn autograd_module() -> Rc<Module> {
    let m = Rc::new(Module::new("mxnet.autograd", "automatic differentiation"));
    m.set(
        "record",
        builtin(
            "record",
            "with autograd.record(): record array ops so that y.backward() can compute gradients.",
            record,
        ),
    );
    m.set(
        "pause",
        builtin(
            "pause",
            "with autograd.pause(): stop recording inside a record() block.",
            pause,
        ),
    );
    m.set(
        "is_recording",
        builtin(
            "is_recording",
            "is_recording(): whether ops are being recorded.",
            |it, a| {
                a.finish(0)?;
                Ok(Value::Bool(it.state_mut().nn.tape.is_recording()))
            },
        ),
    );
    m.set(
        "is_training",
        builtin(
            "is_training",
            "is_training(): whether record() was entered in training mode.",
            |it, a| {
                a.finish(0)?;
                Ok(Value::Bool(it.state_mut().nn.tape.is_training()))
            },
        ),
    );
    m.set(
        "backward",
        builtin(
            "backward",
            "backward(heads): heads[i].backward() for each head.",
            |it, mut a| {
                let heads = a.required(0, "heads")?;
                a.take_kw("retain_graph");
                a.finish(1)?;
                let items = match &heads {
                    Value::Array(_) => vec![heads.clone()],
                    other => it.iterate(other)?,
                };
                for h in items {
                    let x = h
                        .as_array()
                        .ok_or_else(|| Exc::type_error("backward: heads must be arrays"))?;
                    let st = it.state_mut();
                    st.nn.tape.backward(&st.rt, &x.array, None, false)?;
                    crate::nn::cnn::apply_pending_running_stats()?;
                }
                Ok(Value::None)
            },
        ),
    );
    m
}

// ---- utils ----------------------------------------------------------------------------------

fn split_and_load_fn(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let data = a.required(0, "data")?;
    let ctx = a.required(1, "ctx_list")?;
    let axis = a.take(2, "batch_axis")?;
    let even = a.flag(3, "even_split", true)?;
    a.finish(4)?;
    if axis.as_ref().and_then(as_i64).unwrap_or(0) != 0 {
        return Err(Exc::value_error(
            "split_and_load: only batch_axis=0 is supported",
        ));
    }
    let x = data
        .as_array()
        .ok_or_else(|| Exc::type_error("split_and_load: data must be an array"))?;
    let devices = devices_arg(it, Some(ctx))?;
    let parts = split_and_load(&it.state_mut().rt, &x.array, &devices, even)?;
    Ok(Value::list(
        parts.into_iter().map(|p| wrap(p, x.flavor)).collect(),
    ))
}

/// The modules this file provides, by dotted name.
pub fn build(dotted: &str) -> Option<Rc<Module>> {
    Some(match dotted {
        "mxnet.autograd" => autograd_module(),
        "mxnet.init" | "mxnet.initializer" => super::gluon_blocks::init_module(),
        "mxnet.gluon.nn" => {
            let m = Rc::new(Module::new("mxnet.gluon.nn", "neural network layers"));
            super::gluon_blocks::set_nn_classes(&m);
            super::gluon_more::register(&m);
            m
        }
        "mxnet.gluon.loss" => super::gluon_train::loss_module(),
        "mxnet.gluon.utils" => {
            let m = Rc::new(Module::new("mxnet.gluon.utils", "Gluon utilities"));
            m.set("Progress", builtin("Progress", "Progress(total_or_iterable, desc=''): a text progress bar; p.update(n=1), p.close(), or iterate it to wrap a DataLoader.", crate::modules::array::data::progress));
            m.set("split_and_load", builtin("split_and_load", "split_and_load(data, ctx_list, batch_axis=0, even_split=True): one slice of the batch per device.", split_and_load_fn));
            m
        }
        "mxnet.gluon" => {
            let m = Rc::new(Module::new("mxnet.gluon", "MXNet's Gluon API"));
            m.set("nn", Value::Module(build("mxnet.gluon.nn")?));
            m.set("loss", Value::Module(build("mxnet.gluon.loss")?));
            m.set("utils", Value::Module(build("mxnet.gluon.utils")?));
            m.set("data", Value::Module(build("mxnet.gluon.data")?));
            m.set("parameter", Value::Module(build("mxnet.gluon.parameter")?));
            super::gluon_blocks::set_gluon_names(&m);
            m.set(
                "Trainer",
                builtin(
                    "Trainer",
                    "Trainer(params, optimizer, optimizer_params=None): 'sgd' (momentum, wd), 'nag', 'adam' (beta1, beta2, epsilon, wd), 'rmsprop' (gamma1), 'adagrad' (eps), 'adadelta' (rho, epsilon); trainer.step(batch_size).",
                    super::gluon_train::trainer,
                ),
            );
            m
        }
        // Where MXNet defines `Parameter` and `ParameterDict` (`gluon.parameter.ParameterDict`).
        "mxnet.gluon.parameter" => {
            let m = Rc::new(Module::new(
                "mxnet.gluon.parameter",
                "Neural network parameter.",
            ));
            super::gluon_blocks::set_gluon_names(&m);
            for name in ["Block", "HybridBlock"] {
                m.attrs.borrow_mut().remove(name);
            }
            m
        }
        other => return crate::modules::array::data::build(other),
    })
}
