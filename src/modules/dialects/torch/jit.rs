//! `torch._jit`: the compiled side of `torch.jit` (whose classes and functions are written in
//! the language, `library/torch/jit/`). `_attach(script_module,
//! module)` builds the module's graph once (`array::graph::module_graph`) into a plan kept in the
//! script module's core; `_call` is the script module's `__call__` and `forward`: a call with
//! arrays runs that plan with the runtime ops of the module (the same bits, recorded for
//! autograd), with neither a language-level `forward` nor the interpreter between the layers.
//! A module the graph cannot describe (its own `forward`) is called as written by a scripted
//! module; a traced one records the ops its forward ran on the example (`Tape::start_trace`)
//! and replays them (`nn::autograd::Trace`), frozen as PyTorch's trace freezes them. `_code`
//! writes `.code`, PyTorch's TorchScript text for a scripted module of built-in layers.
use std::cell::RefCell;
use std::rc::Rc;

use super::jit_script;
use crate::modules::array::blocks::{all_params, children, core_of, named_modules, Core};
use crate::modules::array::graph::{module_graph, run_plan, Mode, Plan};
use crate::nn::autograd::Trace;
use crate::nn::layers::Parameter;
use crate::object::error::{Exc, ExcKind};
use crate::object::ops::wrap;
use crate::object::value::{Args, Flavor, Module, Value};
use crate::object::{builtin, unbound_method, Interpreter};
use crate::runtime::{Array, DType, Device};

/// What a script module holds in its core: the module it was made from and, when the module
/// is built of built-in layers, that module's plan; for a traced module with a forward of its
/// own, the ops its forward ran on the example.
struct Compiled {
    original: Value,
    plan: Option<Plan>,
    trace: Option<Traced>,
    /// A scripted module whose own forward is straight-line (`jit_script::straight`): its
    /// passes recorded per input signature.
    script: Option<RefCell<Scripted>>,
}

/// What a straight-line forward's calls with one signature ran: PyTorch compiles the forward
/// once, devarray records its ops per signature (the ops are the same for the same shapes,
/// dtypes, devices and training flags). The first call records, the second records again and
/// compares: the same ops and constants make the pass replayable from the third call on; a
/// difference (random draws) or an op without a replay makes the module run as written.
#[derive(Default)]
struct Scripted {
    passes: Vec<(Signature, Pass)>,
    as_written: bool,
}

enum Pass {
    Recorded(Trace),
    Ready(Rc<Traced>),
}

#[derive(PartialEq)]
struct Signature {
    inputs: Vec<(Vec<usize>, DType, Device)>,
    training: Vec<bool>,
}

/// Signatures kept per scripted module; calls with more run as written.
const MAX_SIGNATURES: usize = 16;

/// A forward's trace, with what its outside arrays are now: a parameter's data (read at each
/// call, so training and device moves are followed) or a constant the forward made.
struct Traced {
    trace: Trace,
    consts: Vec<TraceConst>,
    inputs: usize,
}

enum TraceConst {
    Param(Rc<Parameter>),
    Array(Array),
}

fn compiled(this: &Value) -> Result<Rc<Compiled>, Exc> {
    core_of(this)
        .and_then(|core| core.compiled.borrow().clone())
        .and_then(|any| any.downcast::<Compiled>().ok())
        .ok_or_else(|| {
            Exc::type_error(format!(
                "expected a module made by torch.jit.script or torch.jit.trace, got {}",
                this.type_name()
            ))
        })
}

/// `_attach(script_module, module)`: compiles `module` for `script_module` (already set up as a
/// Module); True when a plan was made, False when calls run the module as written.
fn attach(_: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let this = a.required(0, "script_module")?;
    let module = a.required(1, "module")?;
    a.finish(2)?;
    let core = core_of(&this).ok_or_else(|| Exc::type_error("_attach needs a set-up Module"))?;
    let plan = match module_graph(&module) {
        Some(head) => Some(Plan::compile(vec![head], &["data".to_string()], false)?),
        None => None,
    };
    let made = plan.is_some();
    *core.compiled.borrow_mut() = Some(Rc::new(Compiled {
        original: module,
        plan,
        trace: None,
        script: None,
    }));
    Ok(Value::Bool(made))
}

/// `_trace(traced_module, *examples)`: for a module with a forward of its own, runs that
/// forward on the examples twice, recording its ops; when both runs did the same (no random
/// draws) and every op can be replayed, later calls replay them (True). Otherwise the module
/// keeps running as written (False).
fn trace(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let this = a.required(0, "traced_module")?;
    let examples: Vec<Value> = a.pos.drain(..).skip(1).collect();
    a.finish(0)?;
    let c = compiled(&this)?;
    let Some(arrays) = examples
        .iter()
        .map(|v| v.as_array().map(|av| av.array.clone()))
        .collect::<Option<Vec<Array>>>()
    else {
        return Ok(Value::Bool(false));
    };
    let mut traces = Vec::new();
    for _ in 0..2 {
        let start = it.state_mut().nn.tape.start_trace(&arrays);
        let out = it.call_value(&c.original, Args::positional(examples.clone()));
        let y = out
            .as_ref()
            .ok()
            .and_then(|v| v.as_array().map(|av| av.array.clone()));
        let traced = it
            .state_mut()
            .nn
            .tape
            .finish_trace(start, &arrays, y.as_ref());
        out?;
        traces.push(traced);
    }
    // A module of built-in layers runs its plan; its forward ran as often as PyTorch's trace
    // runs it (batch norm's running statistics move as there).
    if c.plan.is_some() {
        return Ok(Value::Bool(true));
    }
    let (Some(Some(check)), Some(Some(first))) = (traces.pop(), traces.pop()) else {
        return Ok(Value::Bool(false));
    };
    if !first.same_as(&check) {
        return Ok(Value::Bool(false));
    }
    let core = core_of(&this).ok_or_else(|| Exc::type_error("_trace needs a set-up Module"))?;
    *core.compiled.borrow_mut() = Some(Rc::new(Compiled {
        original: c.original.clone(),
        plan: None,
        trace: Some(traced(&c.original, first, arrays.len())),
        script: None,
    }));
    Ok(Value::Bool(true))
}

/// A trace of `module`'s forward with its outside arrays sorted: the module's parameters and
/// buffers (read anew at each call) and constants.
fn traced(module: &Value, trace: Trace, inputs: usize) -> Traced {
    let params = core_of(module)
        .map(|core| all_params(&core))
        .unwrap_or_default();
    let consts = trace
        .consts
        .iter()
        .map(|a| {
            params
                .iter()
                .find(|p| {
                    p.list_data()
                        .is_ok_and(|d| d.iter().any(|x| x.id() == a.id()))
                })
                .map_or_else(
                    || TraceConst::Array(a.clone()),
                    |p| TraceConst::Param(p.clone()),
                )
        })
        .collect();
    Traced {
        trace,
        consts,
        inputs,
    }
}

/// `_script(script_module)`: for a module with a forward of its own, what TorchScript's
/// frontend would refuse in it, as (exception class name, message) for `torch.jit.script` to
/// raise; None when it compiles. A straight-line forward is then recorded and replayed by
/// `call`; any other runs as written.
fn script(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let this = a.required(0, "script_module")?;
    a.finish(1)?;
    let c = compiled(&this)?;
    let Some(f) = jit_script::own_forward(&c.original) else {
        return Ok(Value::None);
    };
    if let Some(e) = jit_script::frontend_error(&f) {
        return Ok(Value::Tuple(Rc::new(vec![
            Value::str(e.class),
            Value::str(&e.text),
        ])));
    }
    if c.plan.is_none() && !in_place_layer(it, &c.original) && jit_script::straight(it, &c.original)
    {
        let core =
            core_of(&this).ok_or_else(|| Exc::type_error("_script needs a set-up Module"))?;
        *core.compiled.borrow_mut() = Some(Rc::new(Compiled {
            original: c.original.clone(),
            plan: None,
            trace: None,
            script: Some(RefCell::new(Scripted::default())),
        }));
    }
    Ok(Value::None)
}

/// Gives `to` and the modules under it the training flags of `from` and its (same-shaped) tree.
fn sync_training(from: &Core, to: &Core) {
    to.training.set(from.training.get());
    for (a, b) in children(from).iter().zip(children(to).iter()) {
        if let (Some(a), Some(b)) = (core_of(&a.block), core_of(&b.block)) {
            sync_training(&a, &b);
        }
    }
}

/// `_mode(script_module)`: how its calls run: 'plan' (a module of built-in layers), 'trace' (a
/// traced forward), 'script' with the number of input signatures whose pass is recorded and
/// replayed, or 'as written'.
fn mode(_: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let this = a.required(0, "script_module")?;
    a.finish(1)?;
    let c = compiled(&this)?;
    let text = if c.plan.is_some() {
        "plan".to_string()
    } else if c.trace.is_some() {
        "trace".to_string()
    } else if let Some(cell) = &c.script {
        let s = cell.borrow();
        if s.as_written {
            "as written".to_string()
        } else {
            let n = s
                .passes
                .iter()
                .filter(|(_, p)| matches!(p, Pass::Ready(_)))
                .count();
            format!("script, {n} replayed")
        }
    } else {
        "as written".to_string()
    };
    Ok(Value::str(&text))
}

/// Whether a layer in `module` works in place (`nn.ReLU(inplace=True)`): on an input it would
/// change the caller's tensor, which a recording cannot replay.
fn in_place_layer(it: &mut dyn Interpreter, module: &Value) -> bool {
    let mut all = Vec::new();
    named_modules(module, "", &mut all);
    all.iter().any(|(_, m)| {
        it.get_attr(m, "inplace")
            .ok()
            .is_some_and(|v| matches!(v, Value::Bool(true)))
    })
}

/// The training flags of `core` and every module under it, in preorder.
fn training_flags(core: &Core, out: &mut Vec<bool>) {
    out.push(core.training.get());
    for c in children(core) {
        if let Some(child) = core_of(&c.block) {
            training_flags(&child, out);
        }
    }
}

/// A call of a scripted straight-line forward on arrays: the replay of its pass for these
/// inputs once two recordings agreed, else the forward as written (recorded while grad mode
/// is on, as a trace records).
fn scripted_call(
    it: &mut dyn Interpreter,
    this: &Value,
    c: &Compiled,
    cell: &RefCell<Scripted>,
    pos: Vec<Value>,
) -> Result<Value, Exc> {
    let arrays: Vec<Array> = pos
        .iter()
        .filter_map(|v| v.as_array().map(|av| av.array.clone()))
        .collect();
    // The script module's training flags are the ones that count (PyTorch's scripted module
    // has its own): the original runs with them.
    let mut training = Vec::new();
    if let (Some(mine), Some(core)) = (core_of(this), core_of(&c.original)) {
        sync_training(&mine, &core);
        training_flags(&core, &mut training);
    }
    let sig = Signature {
        inputs: arrays
            .iter()
            .map(|a| (a.shape().to_vec(), a.dtype(), a.device()))
            .collect(),
        training,
    };
    let (ready, known) = {
        let s = cell.borrow();
        let found = s.passes.iter().position(|(k, _)| *k == sig);
        let ready = found.and_then(|i| match &s.passes[i].1 {
            Pass::Ready(t) => Some(t.clone()),
            Pass::Recorded(_) => None,
        });
        (ready, found.is_some() || s.passes.len() < MAX_SIGNATURES)
    };
    if let Some(t) = ready {
        return replay(it, &t, &pos);
    }
    // Recording tracks the inputs for gradients; where nothing would be tracked (grad mode
    // off, no tensor requiring grad) the output must stay untracked, so such calls run as
    // written.
    let tape = &it.state().nn.tape;
    let tracked = tape.grad_enabled()
        && (arrays.iter().any(|a| tape.requires_grad(a))
            || core_of(&c.original).is_some_and(|core| {
                all_params(&core).iter().any(|p| {
                    p.list_data()
                        .is_ok_and(|d| d.iter().any(|a| tape.requires_grad(a)))
                })
            }));
    if !known || !tracked || cell.borrow().as_written {
        return it.call_value(&c.original, Args::positional(pos));
    }
    let start = it.state_mut().nn.tape.start_trace(&arrays);
    let out = it.call_value(&c.original, Args::positional(pos));
    let y = out
        .as_ref()
        .ok()
        .and_then(|v| v.as_array().map(|av| av.array.clone()));
    let recorded = it
        .state_mut()
        .nn
        .tape
        .finish_trace(start, &arrays, y.as_ref());
    let out = out?;
    let mut s = cell.borrow_mut();
    let Some(recorded) = recorded else {
        s.as_written = true;
        return Ok(out);
    };
    match s.passes.iter().position(|(k, _)| *k == sig) {
        None => s.passes.push((sig, Pass::Recorded(recorded))),
        Some(i) => {
            let agree = matches!(&s.passes[i].1, Pass::Recorded(first) if first.same_as(&recorded));
            if agree {
                s.passes[i].1 = Pass::Ready(Rc::new(traced(&c.original, recorded, arrays.len())));
            } else {
                s.as_written = true;
            }
        }
    }
    Ok(out)
}

/// A trace run again on the arrays of `pos`, with the parameters' current data.
fn replay(it: &mut dyn Interpreter, t: &Traced, pos: &[Value]) -> Result<Value, Exc> {
    if pos.len() != t.inputs {
        return Err(arity_error(t.inputs, pos.len()));
    }
    let mut inputs = Vec::with_capacity(pos.len());
    let mut flavor = Flavor::Torch;
    for (k, v) in pos.iter().enumerate() {
        if let Some(av) = v.as_array() {
            if k == 0 {
                flavor = av.flavor;
            }
            inputs.push(av.array.clone());
        }
    }
    let device = inputs
        .first()
        .map(|a| a.device())
        .ok_or_else(|| arity_error(t.inputs, 0))?;
    let consts = t
        .consts
        .iter()
        .map(|k| match k {
            TraceConst::Param(p) => p.data(Some(device)),
            TraceConst::Array(a) => Ok(a.clone()),
        })
        .collect::<Result<Vec<Array>, _>>()?;
    let st = it.state_mut();
    let y = t.trace.replay(&st.rt, &mut st.nn.tape, &inputs, &consts)?;
    Ok(wrap(y, flavor))
}

/// PyTorch's words for a call with the wrong number of inputs (without its declaration).
fn arity_error(expected: usize, got: usize) -> Exc {
    Exc::new(
        ExcKind::RuntimeError,
        format!(
            "forward() expected at most {} argument(s) but received {} argument(s)",
            expected + 1,
            got + 1
        ),
    )
}

/// `_original(script_module)`: the module it was made from.
fn original(_: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let this = a.required(0, "script_module")?;
    a.finish(1)?;
    Ok(compiled(&this)?.original.clone())
}

/// A script module's `__call__` and `forward`: its plan on arrays, in its own training mode;
/// anything else (keywords, other values, a module without a plan) goes to the module.
fn call(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let this = a.required(0, "self")?;
    a.pos.remove(0);
    let c = compiled(&this)?;
    let arrays = !a.pos.is_empty() && a.pos.iter().all(|v| v.as_array().is_some());
    if arrays && a.kw.is_empty() {
        if let Some(plan) = &c.plan {
            if a.pos.len() != plan.n_inputs() {
                return Err(arity_error(plan.n_inputs(), a.pos.len()));
            }
            let training = core_of(&this).is_some_and(|core| core.training.get());
            return run_plan(it, plan, &a.pos, Mode::Torch { training });
        }
        if let Some(t) = &c.trace {
            return replay(it, t, &a.pos);
        }
        if let Some(cell) = &c.script {
            return scripted_call(it, &this, &c, cell, a.pos);
        }
    }
    it.call_value(&c.original, a)
}

/// A float as TorchScript's printer writes it: C's `%.17g`, with a `.` after an integral value
/// (`0.10000000000000001`, `1.0000000000000001e-05`, `0.5`, `1.`).
fn ts_float(x: f64) -> String {
    if x.fract() == 0.0 && x.abs() < 1e16 {
        return format!("{}.", x as i64);
    }
    let sci = format!("{x:.16e}");
    let Some((mant, exp)) = sci.split_once('e') else {
        return sci;
    };
    let exp: i32 = exp.parse().unwrap_or(0);
    let trim = |s: &str| s.trim_end_matches('0').trim_end_matches('.').to_string();
    if !(-4..17).contains(&exp) {
        let sign = if exp < 0 { '-' } else { '+' };
        format!("{}e{sign}{:02}", trim(mant), exp.abs())
    } else {
        trim(&format!("{x:.*}", (16 - exp).max(0) as usize))
    }
}

/// TorchScript's text for `torch.jit.script(module).code`, as PyTorch 2.x prints it, for the
/// modules whose scripted source devarray knows exactly: `Sequential`s and the built-in layers
/// below, with their hyperparameters; None for anything else.
fn script_code(it: &mut dyn Interpreter, module: &Value) -> Result<Option<String>, Exc> {
    use crate::nn::cnn::{BatchNormLayer, ConvLayer, DropoutLayer, PoolLayer, PoolSpan};
    use crate::nn::layers::{Activation, BlockKind};
    let Some(core) = core_of(module) else {
        return Ok(None);
    };
    let class = module.type_name();
    let own_forward = match module {
        Value::Instance(inst) => matches!(inst.class().lookup("forward"), Some(Value::Func(_))),
        _ => true,
    };
    if own_forward {
        return Ok(None);
    }
    let mut body: Vec<String> = Vec::new();
    if core.sequential {
        let children = crate::modules::array::blocks::children(&core);
        let mut locals = Vec::new();
        for c in &children {
            let key = &*c.key;
            let ident = key
                .chars()
                .next()
                .is_some_and(|ch| ch.is_alphabetic() || ch == '_')
                && key.chars().all(|ch| ch.is_alphanumeric() || ch == '_');
            if ident {
                body.push(format!("{key} = self.{key}"));
                locals.push(key.to_string());
            } else if key.chars().all(|ch| ch.is_ascii_digit()) {
                body.push(format!("_{key} = getattr(self, \"{key}\")"));
                locals.push(format!("_{key}"));
            } else {
                return Ok(None);
            }
        }
        let Some((last, rest)) = locals.split_last() else {
            return Ok(None);
        };
        let mut prev = "input".to_string();
        for (k, local) in rest.iter().enumerate() {
            body.push(format!("input{k} = ({local}).forward({prev}, )"));
            prev = format!("input{k}");
        }
        body.push(format!("return ({last}).forward({prev}, )"));
    } else {
        let Some(layer) = core.layer.clone() else {
            return Ok(None);
        };
        let flag = |b: bool| if b { "True" } else { "False" };
        match &layer.kind {
            BlockKind::Dense {
                activation: None, ..
            } if class == "Linear" => body.extend([
                "weight = self.weight".to_string(),
                "bias = self.bias".to_string(),
                "return torch.linear(input, weight, bias)".to_string(),
            ]),
            BlockKind::Activation(Activation::Relu) if class == "ReLU" => {
                let inplace = it.get_attr(module, "inplace")?.truthy()?;
                body.push(format!(
                    "_0 = __torch__.torch.nn.functional.relu(input, {}, )",
                    flag(inplace)
                ));
                body.push("return _0".to_string());
            }
            BlockKind::Activation(Activation::Sigmoid) if class == "Sigmoid" => {
                body.push("return torch.sigmoid(input)".to_string())
            }
            BlockKind::Activation(Activation::Tanh) if class == "Tanh" => {
                body.push("return torch.tanh(input)".to_string())
            }
            // devarray's Flatten has start_dim=1, end_dim=-1.
            BlockKind::Flatten if class == "Flatten" => {
                body.push("return torch.flatten(input, 1)".to_string())
            }
            BlockKind::Op(op) => {
                let any = op.as_any();
                if any.is::<ConvLayer>() && (class == "Conv1d" || class == "Conv2d") {
                    body.extend([
                        "weight = self.weight".to_string(),
                        "bias = self.bias".to_string(),
                        "_0 = (self)._conv_forward(input, weight, bias, )".to_string(),
                        "return _0".to_string(),
                    ]);
                } else if let Some(b) = any.downcast_ref::<BatchNormLayer>() {
                    if !(class == "BatchNorm1d" || class == "BatchNorm2d") {
                        return Ok(None);
                    }
                    let (m, e) = (ts_float(b.momentum), ts_float(b.eps));
                    body.push("_0 = __torch__.torch.nn.functional.batch_norm".to_string());
                    body.push("_1 = (self)._check_input_dim(input, )".to_string());
                    if b.running_mean.is_some() {
                        body.extend(
                            [
                                "training = self.training",
                                "if training:",
                                "  num_batches_tracked = self.num_batches_tracked",
                                "  _2 = torch.add_(num_batches_tracked, 1)",
                                "else:",
                                "  pass",
                                "training0 = self.training",
                                "if training0:",
                                "  bn_training = True",
                                "else:",
                                "  bn_training = False",
                                "running_mean = self.running_mean",
                                "running_var = self.running_var",
                                "weight = self.weight",
                                "bias = self.bias",
                            ]
                            .map(String::from),
                        );
                        body.push(format!("_3 = _0(input, running_mean, running_var, weight, bias, bn_training, {m}, {e}, )"));
                        body.push("return _3".to_string());
                    } else {
                        body.extend(
                            [
                                "training = self.training",
                                "if torch.__not__(training):",
                                "  _2 = self.running_mean",
                                "else:",
                                "  _2 = None",
                                "training0 = self.training",
                                "if torch.__not__(training0):",
                                "  _3 = self.running_var",
                                "else:",
                                "  _3 = None",
                                "weight = self.weight",
                                "bias = self.bias",
                            ]
                            .map(String::from),
                        );
                        body.push(format!(
                            "_4 = _0(input, _2, _3, weight, bias, True, {m}, {e}, )"
                        ));
                        body.push("return _4".to_string());
                    }
                } else if let Some(p) = any.downcast_ref::<PoolLayer>() {
                    let PoolSpan::Window {
                        kernel,
                        stride,
                        pad,
                        ceil_mode,
                    } = p.span
                    else {
                        return Ok(None);
                    };
                    let pair = |v: [usize; 2]| format!("[{}, {}]", v[0], v[1]);
                    let (k, st, pd) = (pair(kernel), pair(stride), pair(pad));
                    if p.max && class == "MaxPool2d" {
                        body.push("_0 = __torch__.torch.nn.functional._max_pool2d".to_string());
                        body.push(format!(
                            "_1 = _0(input, {k}, {st}, {pd}, [1, 1], {}, False, )",
                            flag(ceil_mode)
                        ));
                        body.push("return _1".to_string());
                    } else if !p.max && class == "AvgPool2d" {
                        // Trailing arguments at their defaults are left out.
                        let tail = if ceil_mode || !p.count_include_pad {
                            format!(", {}, {}", flag(ceil_mode), flag(p.count_include_pad))
                        } else {
                            String::new()
                        };
                        body.push(format!(
                            "_0 = torch.avg_pool2d(input, {k}, {st}, {pd}{tail})"
                        ));
                        body.push("return _0".to_string());
                    } else {
                        return Ok(None);
                    }
                } else if let Some(d) = any.downcast_ref::<DropoutLayer>() {
                    if d.channels || class != "Dropout" {
                        return Ok(None);
                    }
                    body.push("training = self.training".to_string());
                    body.push(format!(
                        "_0 = __torch__.torch.nn.functional.dropout(input, {}, training, {}, )",
                        ts_float(d.p),
                        flag(d.inplace)
                    ));
                    body.push("return _0".to_string());
                } else {
                    return Ok(None);
                }
            }
            _ => return Ok(None),
        }
    }
    let mut out = String::from("def forward(self,\n    input: Tensor) -> Tensor:\n");
    for line in body {
        out.push_str("  ");
        out.push_str(&line);
        out.push('\n');
    }
    Ok(Some(out))
}

/// `_code(script_module)`: the TorchScript source PyTorch shows as `.code` for the module it
/// was made from, or None where devarray does not know it exactly.
fn code(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let this = a.required(0, "script_module")?;
    a.finish(1)?;
    let original = compiled(&this)?.original.clone();
    Ok(match script_code(it, &original)? {
        Some(text) => Value::str(&text),
        None => Value::None,
    })
}

pub fn build() -> Rc<Module> {
    let m = Rc::new(Module::new(
        "torch._jit",
        "devarray's compiler behind torch.jit: a module's graph, run without the interpreter",
    ));
    m.set(
        "_attach",
        builtin(
            "_attach",
            "_attach(script_module, module): compiles module's plan into script_module.",
            attach,
        ),
    );
    m.set(
        "_trace",
        builtin(
            "_trace",
            "_trace(traced_module, *examples): records the ops of a forward of its own.",
            trace,
        ),
    );
    m.set(
        "_script",
        builtin(
            "_script",
            "_script(script_module): compiles a forward of its own; (error class, message) where TorchScript refuses it.",
            script,
        ),
    );
    m.set(
        "_mode",
        builtin(
            "_mode",
            "_mode(script_module): how its calls run ('plan', 'trace', 'script, N replayed', 'as written').",
            mode,
        ),
    );
    m.set(
        "_code",
        builtin(
            "_code",
            "_code(script_module): the TorchScript source of a scripted module of built-in layers, or None.",
            code,
        ),
    );
    m.set(
        "_original",
        builtin(
            "_original",
            "_original(script_module): the module it was made from.",
            original,
        ),
    );
    m.set(
        "_call",
        unbound_method(
            "RecursiveScriptModule.forward",
            "forward(*inputs): runs the compiled module.",
            call,
        ),
    );
    m
}
