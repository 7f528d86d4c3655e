//! Traced graphs and the plan that runs them, shared by the dialects that compile a model:
//! MXNet's `hybridize()` / `SymbolBlock.imports` (whose symbols and JSON live in
//! `dialects/mxnet/symbol.rs`) and PyTorch's `torch.jit.script` / `trace`.
//!
//! A `Node` is a variable (an input, a parameter, a free variable) or an operator applied to
//! earlier nodes; it keeps the name and attributes a framework's exporter writes for it.
//! `Plan::compile` orders a graph once and `Plan::run` evaluates it with the runtime ops of the
//! imperative layers (the same functions, so the same bits, and recorded on the autograd tape
//! like them), with no interpreter in between. The graph holds no shapes: one plan serves every
//! input shape, dtype and training mode, and deferred parameter shapes are inferred on the
//! first run.
use std::collections::HashMap;
use std::rc::Rc;

use crate::nn::cnn::ConvLayer;
use crate::nn::layers::{Activation, Block, BlockKind, Parameter};
use crate::object::error::{Exc, ExcKind};
use crate::object::ops::wrap;
use crate::object::value::{Flavor, Value};
use crate::object::Interpreter;
use crate::runtime::host::Scalar;
use crate::runtime::ops::{BinaryOp, ReduceOp, UnaryOp};
use crate::runtime::{Array, Operand};

/// What a graph node computes.
pub enum Op {
    /// An input (`data`), a parameter's value, or a free variable (`sym.var('x')`).
    Var(Option<Rc<Parameter>>),
    /// `FullyConnected`: inputs data, weight and (unless `no_bias`) bias. `layer`: the Dense
    /// layer it came from, whose deferred input size the first run fixes.
    FullyConnected {
        units: usize,
        no_bias: bool,
        flatten: bool,
        layer: Option<Rc<Block>>,
    },
    Activation(Activation),
    Unary(UnaryOp),
    /// Array (op) scalar, or scalar (op) array when `reverse`.
    Scalar {
        op: BinaryOp,
        scalar: Scalar,
        reverse: bool,
    },
    Binary(BinaryOp),
    /// A reduction over `axes` (all when None).
    Reduce {
        op: ReduceOp,
        axes: Option<Vec<isize>>,
        keepdims: bool,
    },
    Flatten,
    /// A built-in layer (convolution, pooling, batch norm, dropout); its other inputs are its
    /// parameters, listed for the graph's JSON. `linear`: a convolution without its
    /// activation, which an `Activation` node after it applies (as MXNet's graph has it).
    Layer {
        block: Rc<Block>,
        linear: bool,
    },
}

/// One node of a symbolic graph.
pub struct Node {
    pub op: Op,
    pub name: String,
    /// MXNet's operator name (`FullyConnected`, `_npx_relu`, `null` for variables).
    pub json_op: String,
    /// MXNet's attributes, as the JSON lists them (sorted by key when written).
    pub attrs: Vec<(String, String)>,
    pub inputs: Vec<Rc<Node>>,
}

impl Node {
    pub fn is_var(&self) -> bool {
        matches!(self.op, Op::Var(_))
    }
}

/// The graph's nodes in MXNet's order (the JSON's node list) (depth first, inputs before the node), each once.
pub fn topo(heads: &[Rc<Node>]) -> Vec<Rc<Node>> {
    fn visit(n: &Rc<Node>, seen: &mut HashMap<*const Node, ()>, out: &mut Vec<Rc<Node>>) {
        if seen.contains_key(&Rc::as_ptr(n)) {
            return;
        }
        seen.insert(Rc::as_ptr(n), ());
        for i in &n.inputs {
            visit(i, seen, out);
        }
        out.push(n.clone());
    }
    let mut seen = HashMap::new();
    let mut out = Vec::new();
    for h in heads {
        visit(h, &mut seen, &mut out);
    }
    out
}

/// Whose rules a run follows where the frameworks differ: the training mode of dropout and
/// batch norm (Gluon's `autograd.record(train_mode)`, or a PyTorch module's `train()`/`eval()`)
/// and the names of gradient functions.
#[derive(Clone, Copy)]
pub enum Mode {
    Gluon,
    Torch { training: bool },
}

/// One step of a plan: a node's computation with its inputs as earlier steps.
struct Step {
    node: Rc<Node>,
    inputs: Vec<usize>,
    /// A `FullyConnected` step that also applies the `Activation` reading it (its only
    /// reader): bias and activation in one op (`nn::layers::linear_act`).
    act: Option<Activation>,
    /// An `Activation` step whose value that fused step computed.
    fused_into: Option<usize>,
}

/// A graph compiled once for a hybridized block (or a `SymbolBlock`): its nodes in order of
/// evaluation, run by `run` with no interpreter in between.
pub struct Plan {
    steps: Vec<Step>,
    /// The steps that are inputs, in argument order.
    inputs: Vec<usize>,
    heads: Vec<usize>,
    pub head_nodes: Vec<Rc<Node>>,
    /// Written in numpy mode.
    pub np: bool,
}

impl Plan {
    /// Orders the graph; `input_names` are the variables the caller's arguments fill.
    pub fn compile(heads: Vec<Rc<Node>>, input_names: &[String], np: bool) -> Result<Plan, Exc> {
        let nodes = topo(&heads);
        let index: HashMap<*const Node, usize> = nodes
            .iter()
            .enumerate()
            .map(|(i, n)| (Rc::as_ptr(n), i))
            .collect();
        let mut inputs = Vec::new();
        for name in input_names {
            let i = nodes
                .iter()
                .position(|n| matches!(n.op, Op::Var(None)) && &n.name == name)
                .ok_or_else(|| {
                    Exc::new(
                        ExcKind::ValueError,
                        format!("the graph has no input named '{name}'"),
                    )
                })?;
            inputs.push(i);
        }
        if let Some(free) = nodes
            .iter()
            .enumerate()
            .find(|(i, n)| matches!(n.op, Op::Var(None)) && !inputs.contains(i))
        {
            return Err(Exc::new(
                ExcKind::ValueError,
                format!(
                    "the graph's variable '{}' is neither an input nor a parameter: name it among the inputs, or give its value in the parameter file",
                    free.1.name
                ),
            ));
        }
        let mut steps: Vec<Step> = nodes
            .iter()
            .map(|n| Step {
                node: n.clone(),
                inputs: n.inputs.iter().map(|i| index[&Rc::as_ptr(i)]).collect(),
                act: None,
                fused_into: None,
            })
            .collect();
        let heads: Vec<usize> = heads.iter().map(|h| index[&Rc::as_ptr(h)]).collect();
        fuse_bias_activations(&mut steps, &heads);
        Ok(Plan {
            steps,
            inputs,
            head_nodes: heads.iter().map(|&h| nodes[h].clone()).collect(),
            heads,
            np,
        })
    }

    pub fn n_inputs(&self) -> usize {
        self.inputs.len()
    }

    /// The parameters' variable nodes, in graph order.
    pub fn param_nodes(&self) -> impl Iterator<Item = &Rc<Node>> {
        self.steps
            .iter()
            .map(|s| &s.node)
            .filter(|n| matches!(n.op, Op::Var(Some(_))))
    }

    /// The parameters the graph reads, in graph order.
    pub fn params(&self) -> Vec<Rc<Parameter>> {
        self.steps
            .iter()
            .filter_map(|s| match &s.node.op {
                Op::Var(Some(p)) => Some(p.clone()),
                _ => None,
            })
            .collect()
    }

    /// Evaluates the graph on `args` with the imperative layers' runtime ops (recorded on the
    /// tape when autograd records, like them).
    pub fn run(
        &self,
        it: &mut dyn Interpreter,
        args: &[Array],
        mode: Mode,
    ) -> Result<Vec<Array>, Exc> {
        if args.len() != self.inputs.len() {
            return Err(Exc::type_error(format!(
                "the block takes {} input(s), got {}",
                self.inputs.len(),
                args.len()
            )));
        }
        let device = args[0].device();
        let st = it.state_mut();
        let (rt, tape) = (&st.rt, &mut st.nn.tape);
        let mut values: Vec<Option<Array>> = vec![None; self.steps.len()];
        for (k, &i) in self.inputs.iter().enumerate() {
            values[i] = Some(args[k].clone());
        }
        // A parameter's value is read when a step uses it, after that step inferred its shape.
        let get = |values: &[Option<Array>], i: usize| -> Result<Array, Exc> {
            match &values[i] {
                Some(a) => Ok(a.clone()),
                None => match &self.steps[i].node.op {
                    Op::Var(Some(p)) => Ok(p.data(Some(device))?),
                    _ => Err(Exc::new(
                        ExcKind::RuntimeError,
                        format!("graph node '{}' has no value", self.steps[i].node.name),
                    )),
                },
            }
        };
        for (i, step) in self.steps.iter().enumerate() {
            if let Some(j) = step.fused_into {
                values[i] = values[j].take();
                continue;
            }
            let y = match &step.node.op {
                Op::Var(_) => continue,
                Op::FullyConnected {
                    units,
                    no_bias,
                    flatten,
                    layer,
                } => {
                    let x = get(&values, step.inputs[0])?;
                    if let Some(l) = layer {
                        l.prepare_dense(rt, tape, &x)?;
                    }
                    let rows = x.ndim();
                    let x2 = if *flatten && rows != 2 {
                        crate::nn::layers::flatten(tape, &x)?
                    } else {
                        x
                    };
                    let w = get(&values, step.inputs[1])?;
                    if w.shape().first() != Some(units) {
                        return Err(Exc::new(
                            ExcKind::MXNetError,
                            format!(
                                "{}: the weight has shape {:?} but num_hidden is {units}",
                                step.node.name,
                                w.shape()
                            ),
                        ));
                    }
                    let b = if *no_bias {
                        None
                    } else {
                        Some(get(&values, step.inputs[2])?)
                    };
                    let y = crate::nn::layers::linear_act(tape, &x2, &w, b.as_ref(), step.act)?;
                    if let (Mode::Torch { .. }, None) = (mode, step.act) {
                        crate::nn::layers::torch_linear_name(tape, &y, rows, !*no_bias);
                    }
                    y
                }
                Op::Activation(act) => act.apply(tape, &get(&values, step.inputs[0])?)?,
                Op::Unary(op) => tape.unary(&get(&values, step.inputs[0])?, *op)?,
                Op::Scalar {
                    op,
                    scalar,
                    reverse,
                } => {
                    let x = get(&values, step.inputs[0])?;
                    if *reverse {
                        tape.binary(*op, Operand::Scalar(*scalar), Operand::Array(&x))?
                    } else {
                        tape.binary(*op, Operand::Array(&x), Operand::Scalar(*scalar))?
                    }
                }
                Op::Binary(op) => {
                    let l = get(&values, step.inputs[0])?;
                    let r = get(&values, step.inputs[1])?;
                    tape.binary(*op, Operand::Array(&l), Operand::Array(&r))?
                }
                Op::Flatten => crate::nn::layers::flatten(tape, &get(&values, step.inputs[0])?)?,
                Op::Reduce { op, axes, keepdims } => tape.reduce(
                    &get(&values, step.inputs[0])?,
                    *op,
                    axes.as_deref(),
                    *keepdims,
                )?,
                Op::Layer { block, linear } => {
                    let x = get(&values, step.inputs[0])?;
                    match &block.kind {
                        BlockKind::Op(op) => {
                            op.set_training(match mode {
                                Mode::Gluon => tape.is_recording() && tape.is_training(),
                                Mode::Torch { training } => training,
                            });
                            match op.as_any().downcast_ref::<ConvLayer>() {
                                Some(conv) if *linear => conv.forward_with(rt, tape, &x, false)?,
                                _ => op.forward(rt, tape, &x)?,
                            }
                        }
                        _ => block.forward(rt, tape, &x)?,
                    }
                }
            };
            values[i] = Some(y);
        }
        self.heads.iter().map(|&h| get(&values, h)).collect()
    }
}

/// Marks each `FullyConnected` with a bias whose only reader is an `Activation` (and which is
/// no output) to apply that activation itself: a dense layer's bias add and activation then
/// run as one op, forward and backward, with the composed ops' values.
fn fuse_bias_activations(steps: &mut [Step], heads: &[usize]) {
    let mut readers = vec![0usize; steps.len()];
    for s in steps.iter() {
        for &i in &s.inputs {
            readers[i] += 1;
        }
    }
    for i in 0..steps.len() {
        let Op::Activation(act) = steps[i].node.op else {
            continue;
        };
        let Some(&j) = steps[i].inputs.first() else {
            continue;
        };
        let fc_with_bias = matches!(steps[j].node.op, Op::FullyConnected { no_bias: false, .. });
        if fc_with_bias && readers[j] == 1 && !heads.contains(&j) && steps[j].act.is_none() {
            steps[j].act = Some(act);
            steps[i].fused_into = Some(j);
        }
    }
}

/// Runs a compiled plan on a call's arguments (arrays) and wraps the outputs as the first
/// input's flavor: one array, or a tuple for several heads.
pub fn run_plan(
    it: &mut dyn Interpreter,
    plan: &Plan,
    args: &[Value],
    mode: Mode,
) -> Result<Value, Exc> {
    let mut arrays = Vec::with_capacity(args.len());
    let mut flavor = if plan.np { Flavor::Np } else { Flavor::Nd };
    for (k, v) in args.iter().enumerate() {
        let av = v.as_array().ok_or_else(|| {
            Exc::type_error(format!(
                "a hybridized block takes arrays, got {}",
                v.type_name()
            ))
        })?;
        if k == 0 {
            flavor = av.flavor;
        }
        arrays.push(av.array.clone());
    }
    let mut outs = plan.run(it, &arrays, mode)?;
    Ok(if outs.len() == 1 {
        wrap(outs.remove(0), flavor)
    } else {
        Value::tuple(outs.into_iter().map(|a| wrap(a, flavor)).collect())
    })
}

/// The graph of a PyTorch module built of built-in layers (`Linear`, activations, `Flatten`,
/// convolution, pooling, normalization and dropout layers, `Sequential`s of them), on the input
/// variable `data`: what `torch.jit.script`/`trace` compile. None for a module with a forward
/// of its own, which runs as written.
pub fn module_graph(module: &Value) -> Option<Rc<Node>> {
    fn var(name: String, p: Option<Rc<Parameter>>) -> Rc<Node> {
        Rc::new(Node {
            op: Op::Var(p),
            name,
            json_op: "null".into(),
            attrs: Vec::new(),
            inputs: Vec::new(),
        })
    }
    fn walk(module: &Value, x: Rc<Node>) -> Option<Rc<Node>> {
        let core = crate::modules::array::blocks::core_of(module)?;
        let own_forward = match module {
            Value::Instance(inst) => matches!(inst.class().lookup("forward"), Some(Value::Func(_))),
            _ => true,
        };
        if own_forward {
            return None;
        }
        if let Some(layer) = core.layer.clone() {
            let op = |op: Op, inputs: Vec<Rc<Node>>| {
                Rc::new(Node {
                    op,
                    name: layer.name.clone(),
                    json_op: String::new(),
                    attrs: Vec::new(),
                    inputs,
                })
            };
            return Some(match &layer.kind {
                BlockKind::Dense {
                    units,
                    weight,
                    bias,
                    activation: None,
                    ..
                } => {
                    let mut inputs = vec![x, var(weight.name.clone(), Some(weight.clone()))];
                    if let Some(b) = bias {
                        inputs.push(var(b.name.clone(), Some(b.clone())));
                    }
                    op(
                        Op::FullyConnected {
                            units: *units,
                            no_bias: bias.is_none(),
                            // PyTorch's Linear acts on the last axis.
                            flatten: false,
                            layer: Some(layer.clone()),
                        },
                        inputs,
                    )
                }
                BlockKind::Activation(a) => op(Op::Activation(*a), vec![x]),
                BlockKind::Flatten => op(Op::Flatten, vec![x]),
                BlockKind::Op(l) => {
                    let mut inputs = vec![x];
                    for (_, p) in l.params() {
                        inputs.push(var(p.name.clone(), Some(p)));
                    }
                    op(
                        Op::Layer {
                            block: layer.clone(),
                            linear: false,
                        },
                        inputs,
                    )
                }
                _ => return None,
            });
        }
        if !core.sequential {
            return None;
        }
        let mut h = x;
        for c in crate::modules::array::blocks::children(&core) {
            h = walk(&c.block, h)?;
        }
        Some(h)
    }
    walk(module, var("data".into(), None))
}
