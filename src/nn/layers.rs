//! Gluon-style parameters and blocks: `Dense`, `Conv2D`, `MaxPool2D`, `Flatten`, `Sequential`.
//!
//! Forward passes are built from recorded runtime ops (conv is im2col: strided slices stacked,
//! then one batched matmul), so autograd differentiates them without layer-specific rules.
use std::cell::{Cell, RefCell};
use std::rc::Rc;

use super::autograd::Tape;
use crate::runtime::{
    Array, BinaryOp, DType, Device, IndexItem, Operand, ReduceOp, Result, Runtime, RuntimeError,
    UnaryOp,
};

/// How a parameter's first values are drawn.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Init {
    /// MXNet's default `Uniform(scale)`: U(-scale, scale).
    Uniform(f64),
    Normal(f64),
    Zeros,
    /// Xavier (uniform, gaussian-free variant MXNet uses by default: avg fan, magnitude 3).
    Xavier,
    /// PyTorch's Linear/Conv default: U(-1/sqrt(fan_in), 1/sqrt(fan_in)) for weight and bias.
    FanInUniform,
}

/// A named, possibly not-yet-shaped tensor with one copy per device.
pub struct Parameter {
    pub name: String,
    /// 0 marks a dimension inferred at the first forward pass.
    shape: RefCell<Vec<usize>>,
    pub dtype: DType,
    pub init: Init,
    data: RefCell<Vec<Array>>,
    /// `initialize` was called before the shape was known: the devices to create it on.
    deferred: RefCell<Option<(Vec<Device>, Option<Init>)>>,
    /// The owning layer's input size, for `Init::FanInUniform` on a bias (whose own shape
    /// does not tell it); 0 until known.
    pub fan_in: Cell<usize>,
}

fn shape_text(shape: &[usize]) -> String {
    let parts: Vec<String> = shape.iter().map(|d| d.to_string()).collect();
    if parts.len() == 1 {
        format!("({},)", parts[0])
    } else {
        format!("({})", parts.join(", "))
    }
}

fn device_list(devices: &[Device]) -> String {
    let parts: Vec<String> = devices.iter().map(|d| d.to_string()).collect();
    format!("[{}]", parts.join(", "))
}

impl Parameter {
    pub fn new(name: String, shape: Vec<usize>, init: Init) -> Rc<Parameter> {
        Rc::new(Parameter {
            name,
            shape: RefCell::new(shape),
            dtype: DType::Float32,
            init,
            data: RefCell::new(Vec::new()),
            deferred: RefCell::new(None),
            fan_in: Cell::new(0),
        })
    }

    pub fn shape(&self) -> Vec<usize> {
        self.shape.borrow().clone()
    }

    fn shape_known(&self) -> bool {
        self.shape.borrow().iter().all(|&d| d > 0)
    }

    /// `Parameter dense0_weight (shape=(1, 2), dtype=float32)`; unknown dims print as 0 like MXNet.
    pub fn repr(&self) -> String {
        format!(
            "Parameter {} (shape={}, dtype={})",
            self.name,
            shape_text(&self.shape.borrow()),
            self.dtype.name()
        )
    }

    pub fn list_ctx(&self) -> Vec<Device> {
        self.data.borrow().iter().map(Array::device).collect()
    }

    pub fn is_initialized(&self) -> bool {
        !self.data.borrow().is_empty()
    }

    /// Draws the initial values once on the CPU (the generator MXNet uses) and copies them to
    /// every device, so all copies start identical.
    pub fn initialize(
        &self,
        rt: &Runtime,
        tape: &mut Tape,
        devices: &[Device],
        init: Option<Init>,
        force_reinit: bool,
    ) -> Result<()> {
        if self.is_initialized() && !force_reinit {
            return Ok(());
        }
        for d in devices {
            rt.check_device(*d)?;
        }
        if !self.shape_known() {
            *self.deferred.borrow_mut() = Some((devices.to_vec(), init));
            return Ok(());
        }
        let shape = self.shape();
        let values = self.draw(rt, &shape, init.unwrap_or(self.init))?;
        self.place(rt, tape, &values, devices)
    }

    fn draw(&self, rt: &Runtime, shape: &[usize], init: Init) -> Result<Array> {
        // Biases stay zero whatever initializer the user passes, as in MXNet.
        let init = if self.init == Init::Zeros {
            Init::Zeros
        } else {
            init
        };
        let cpu = Device::cpu(0);
        match init {
            Init::Zeros => rt.zeros(shape, self.dtype, cpu),
            Init::Uniform(scale) => rt.uniform(-scale, scale, shape, self.dtype, cpu),
            Init::Normal(sigma) => rt.normal(0.0, sigma, shape, self.dtype, cpu),
            Init::Xavier => {
                let fan_out = shape.first().copied().unwrap_or(1) as f64;
                let receptive: usize = shape.iter().skip(2).product();
                let fan_in = shape.get(1).copied().unwrap_or(1) as f64 * receptive as f64;
                let fan_out = fan_out * receptive as f64;
                let scale = (3.0 / ((fan_in + fan_out) / 2.0).max(1.0)).sqrt();
                rt.uniform(-scale, scale, shape, self.dtype, cpu)
            }
            Init::FanInUniform => {
                let fan_in = if shape.len() >= 2 {
                    shape.iter().skip(1).product::<usize>()
                } else {
                    self.fan_in.get()
                };
                let bound = 1.0 / (fan_in.max(1) as f64).sqrt();
                rt.uniform(-bound, bound, shape, self.dtype, cpu)
            }
        }
    }

    /// Replaces the copies with `values` on each of `devices` (gradients attached).
    fn place(
        &self,
        rt: &Runtime,
        tape: &mut Tape,
        values: &Array,
        devices: &[Device],
    ) -> Result<()> {
        let mut copies = Vec::with_capacity(devices.len());
        for d in devices {
            let copy = values.copy_to(rt, *d)?;
            tape.attach_grad(rt, &copy, false)?;
            copies.push(copy);
        }
        for old in self.data.borrow().iter() {
            tape.detach(old);
        }
        *self.data.borrow_mut() = copies;
        *self.deferred.borrow_mut() = None;
        Ok(())
    }

    /// Completes deferred initialization once the forward pass knows the shape.
    fn infer(&self, rt: &Runtime, tape: &mut Tape, shape: Vec<usize>) -> Result<()> {
        if self.is_initialized() {
            return Ok(());
        }
        *self.shape.borrow_mut() = shape;
        let deferred = self.deferred.borrow().clone();
        if let Some((devices, init)) = deferred {
            let values = self.draw(rt, &self.shape(), init.unwrap_or(self.init))?;
            self.place(rt, tape, &values, &devices)?;
        }
        Ok(())
    }

    fn not_initialized(&self) -> RuntimeError {
        if self.deferred.borrow().is_some() {
            RuntimeError::Value(format!(
                "Parameter '{}' has not been initialized yet because initialization was deferred: its shape {} is only known after the first forward pass. Run the network on a batch first (net(x)), or give the input size (e.g. in_units=) when creating the layer",
                self.name,
                shape_text(&self.shape.borrow())
            ))
        } else {
            RuntimeError::Value(format!(
                "Parameter '{}' has not been initialized. Call net.initialize() (or net.initialize(ctx=gpu(0))) before using it",
                self.name
            ))
        }
    }

    /// The copy on `device`; without one, the only copy, or else the one on cpu(0).
    pub fn data(&self, device: Option<Device>) -> Result<Array> {
        let data = self.data.borrow();
        if data.is_empty() {
            return Err(self.not_initialized());
        }
        let wanted = match device {
            Some(d) => d,
            None if data.len() == 1 => {
                return data.first().cloned().ok_or_else(|| self.not_initialized())
            }
            None => Device::cpu(0),
        };
        data.iter()
            .find(|a| a.device() == wanted)
            .cloned()
            .ok_or_else(|| {
                let here: Vec<Device> = data.iter().map(Array::device).collect();
                RuntimeError::Value(format!(
                    "Parameter '{}' was not initialized on {wanted}; it is on {}. Put the input on one of those devices, or move the parameters with net.collect_params().reset_ctx({wanted}) (or initialize them there with net.initialize(ctx={wanted}, force_reinit=True))",
                    self.name,
                    device_list(&here)
                ))
            })
    }

    /// Every copy, in device order.
    pub fn list_data(&self) -> Result<Vec<Array>> {
        let data = self.data.borrow();
        if data.is_empty() {
            return Err(self.not_initialized());
        }
        Ok(data.clone())
    }

    pub fn grad(&self, tape: &Tape, device: Option<Device>) -> Result<Array> {
        let data = self.data(device)?;
        tape.grad(&data).ok_or_else(|| {
            RuntimeError::Value(format!(
                "Parameter '{}' has no gradient buffer (grad_req='null')",
                self.name
            ))
        })
    }

    /// Moves every copy to `devices` (values kept).
    pub fn reset_ctx(&self, rt: &Runtime, tape: &mut Tape, devices: &[Device]) -> Result<()> {
        for d in devices {
            rt.check_device(*d)?;
        }
        let first = self.data.borrow().first().cloned();
        match first {
            Some(values) => self.place(rt, tape, &values, devices),
            None => {
                // The borrow ends before `not_initialized`, which borrows `deferred` again.
                let moved = match self.deferred.borrow_mut().as_mut() {
                    Some((devs, _)) => {
                        *devs = devices.to_vec();
                        true
                    }
                    None => false,
                };
                if moved {
                    Ok(())
                } else {
                    Err(self.not_initialized())
                }
            }
        }
    }

    /// Loads `values` (already checked for shape) onto `devices`.
    pub fn set_values(
        &self,
        rt: &Runtime,
        tape: &mut Tape,
        values: &Array,
        devices: &[Device],
    ) -> Result<()> {
        *self.shape.borrow_mut() = values.shape().to_vec();
        self.place(rt, tape, values, devices)
    }

    /// Whether `shape` fits this parameter: same rank, and equal wherever the size is known
    /// (0 marks a size deferred to the first forward pass).
    pub fn accepts_shape(&self, shape: &[usize]) -> bool {
        let own = self.shape.borrow();
        own.len() == shape.len() && own.iter().zip(shape).all(|(&a, &b)| a == 0 || a == b)
    }

    /// Copies of `values` on each device with gradients attached, without touching this
    /// parameter yet: loading builds every copy first so that a failure changes nothing.
    pub fn prepare_copies(
        &self,
        rt: &Runtime,
        tape: &mut Tape,
        values: &Array,
        devices: &[Device],
    ) -> Result<Vec<Array>> {
        let mut copies = Vec::with_capacity(devices.len());
        for d in devices {
            let copy = values.copy_to(rt, *d)?;
            tape.attach_grad(rt, &copy, false)?;
            copies.push(copy);
        }
        Ok(copies)
    }

    /// Replaces the copies with ones made by `prepare_copies` (cannot fail).
    pub fn install_copies(&self, tape: &mut Tape, copies: Vec<Array>) {
        if let Some(first) = copies.first() {
            *self.shape.borrow_mut() = first.shape().to_vec();
        }
        for old in self.data.borrow().iter() {
            tape.detach(old);
        }
        *self.data.borrow_mut() = copies;
        *self.deferred.borrow_mut() = None;
    }
}

/// Elementwise activations a layer may end with.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Activation {
    Relu,
    Sigmoid,
    Tanh,
}

impl Activation {
    pub fn parse(name: &str) -> Result<Activation> {
        Ok(match name {
            "relu" => Activation::Relu,
            "sigmoid" => Activation::Sigmoid,
            "tanh" => Activation::Tanh,
            other => {
                return Err(RuntimeError::Value(format!(
                    "unknown activation '{other}'; use 'relu', 'sigmoid' or 'tanh'"
                )))
            }
        })
    }
    pub fn name(self) -> &'static str {
        match self {
            Activation::Relu => "relu",
            Activation::Sigmoid => "sigmoid",
            Activation::Tanh => "tanh",
        }
    }
    fn apply(self, tape: &mut Tape, x: &Array) -> Result<Array> {
        tape.unary(
            x,
            match self {
                Activation::Relu => UnaryOp::Relu,
                Activation::Sigmoid => UnaryOp::Sigmoid,
                Activation::Tanh => UnaryOp::Tanh,
            },
        )
    }
}

pub enum BlockKind {
    Sequential(RefCell<Vec<Rc<Block>>>),
    Dense {
        units: usize,
        in_units: Cell<usize>,
        activation: Option<Activation>,
        weight: Rc<Parameter>,
        bias: Option<Rc<Parameter>>,
    },
    Conv2D {
        channels: usize,
        in_channels: Cell<usize>,
        kernel: (usize, usize),
        strides: (usize, usize),
        padding: (usize, usize),
        activation: Option<Activation>,
        weight: Rc<Parameter>,
        bias: Option<Rc<Parameter>>,
    },
    MaxPool2D {
        pool: (usize, usize),
        strides: (usize, usize),
    },
    Flatten,
    Activation(Activation),
}

/// A layer or a container of layers.
pub struct Block {
    /// `dense0`, `sequential1`, ...: parameter names start with it.
    pub name: String,
    pub kind: BlockKind,
}

fn pair(p: (usize, usize)) -> String {
    format!("({}, {})", p.0, p.1)
}

fn known(n: usize) -> String {
    if n == 0 {
        "None".into()
    } else {
        n.to_string()
    }
}

fn full() -> IndexItem {
    IndexItem::Slice {
        start: None,
        stop: None,
        step: None,
    }
}

impl Block {
    pub fn sequential(name: String) -> Rc<Block> {
        Rc::new(Block {
            name,
            kind: BlockKind::Sequential(RefCell::new(Vec::new())),
        })
    }

    pub fn dense(
        name: String,
        units: usize,
        activation: Option<Activation>,
        in_units: usize,
        use_bias: bool,
    ) -> Rc<Block> {
        let weight = Parameter::new(
            format!("{name}_weight"),
            vec![units, in_units],
            Init::Uniform(0.07),
        );
        let bias =
            use_bias.then(|| Parameter::new(format!("{name}_bias"), vec![units], Init::Zeros));
        Rc::new(Block {
            name,
            kind: BlockKind::Dense {
                units,
                in_units: Cell::new(in_units),
                activation,
                weight,
                bias,
            },
        })
    }

    #[allow(clippy::too_many_arguments)]
    pub fn conv2d(
        name: String,
        channels: usize,
        kernel: (usize, usize),
        strides: (usize, usize),
        padding: (usize, usize),
        activation: Option<Activation>,
        in_channels: usize,
        use_bias: bool,
    ) -> Rc<Block> {
        let weight = Parameter::new(
            format!("{name}_weight"),
            vec![channels, in_channels, kernel.0, kernel.1],
            Init::Uniform(0.07),
        );
        let bias =
            use_bias.then(|| Parameter::new(format!("{name}_bias"), vec![channels], Init::Zeros));
        Rc::new(Block {
            name,
            kind: BlockKind::Conv2D {
                channels,
                in_channels: Cell::new(in_channels),
                kernel,
                strides,
                padding,
                activation,
                weight,
                bias,
            },
        })
    }

    pub fn children(&self) -> Vec<Rc<Block>> {
        match &self.kind {
            BlockKind::Sequential(c) => c.borrow().clone(),
            _ => Vec::new(),
        }
    }

    /// True when `block` is this block or one of its descendants.
    fn contains(&self, block: &Block) -> bool {
        std::ptr::eq(self, block) || self.children().iter().any(|c| c.contains(block))
    }

    pub fn add(&self, child: Rc<Block>) -> Result<()> {
        match &self.kind {
            BlockKind::Sequential(c) => {
                // A block inside itself would make forward passes and reprs recurse forever.
                if child.contains(self) {
                    return Err(RuntimeError::Value(format!(
                        "{}: a block cannot be added inside itself",
                        self.name
                    )));
                }
                c.borrow_mut().push(child);
                Ok(())
            }
            _ => Err(RuntimeError::Value(format!(
                "{}: only Sequential blocks take children with add()",
                self.name
            ))),
        }
    }

    /// Own parameters, then the children's, in order (MXNet's collect_params order).
    pub fn collect_params(&self) -> Vec<Rc<Parameter>> {
        let mut out = Vec::new();
        match &self.kind {
            BlockKind::Dense { weight, bias, .. } | BlockKind::Conv2D { weight, bias, .. } => {
                out.push(weight.clone());
                out.extend(bias.clone());
            }
            BlockKind::Sequential(c) => {
                for child in c.borrow().iter() {
                    out.extend(child.collect_params());
                }
            }
            _ => {}
        }
        out
    }

    /// Parameters by their place in the network (`0.weight`, `1.bias`), as MXNet's
    /// `save_parameters` names them: these names do not depend on the layer counters, so a file
    /// loads into a freshly built network of the same structure.
    pub fn structural_params(&self) -> Vec<(String, Rc<Parameter>)> {
        let mut out = Vec::new();
        self.collect_structural("", &mut out);
        out
    }

    fn collect_structural(&self, prefix: &str, out: &mut Vec<(String, Rc<Parameter>)>) {
        match &self.kind {
            BlockKind::Dense { weight, bias, .. } | BlockKind::Conv2D { weight, bias, .. } => {
                out.push((format!("{prefix}weight"), weight.clone()));
                if let Some(b) = bias {
                    out.push((format!("{prefix}bias"), b.clone()));
                }
            }
            BlockKind::Sequential(c) => {
                for (i, child) in c.borrow().iter().enumerate() {
                    child.collect_structural(&format!("{prefix}{i}."), out);
                }
            }
            _ => {}
        }
    }

    /// After parameters were loaded into a layer whose input size was still unknown, the
    /// layer takes the size from the loaded weight (so its repr and shape checks know it).
    pub fn sync_input_sizes(&self) {
        match &self.kind {
            BlockKind::Dense {
                in_units: n,
                weight,
                ..
            }
            | BlockKind::Conv2D {
                in_channels: n,
                weight,
                ..
            } if n.get() == 0 => {
                if let Some(&d) = weight.shape().get(1) {
                    n.set(d);
                }
            }
            BlockKind::Sequential(c) => {
                for child in c.borrow().iter() {
                    child.sync_input_sizes();
                }
            }
            _ => {}
        }
    }

    /// The repr MXNet prints.
    pub fn repr(&self) -> String {
        let act = |a: &Option<Activation>| match a {
            Some(a) => format!("Activation({})", a.name()),
            None => "linear".into(),
        };
        match &self.kind {
            BlockKind::Sequential(c) => {
                let mut s = String::from("Sequential(\n");
                for (i, child) in c.borrow().iter().enumerate() {
                    let inner = child.repr().replace('\n', "\n  ");
                    s.push_str(&format!("  ({i}): {inner}\n"));
                }
                s.push(')');
                s
            }
            BlockKind::Dense {
                units,
                in_units,
                activation,
                ..
            } => format!("Dense({} -> {units}, {})", known(in_units.get()), act(activation)),
            BlockKind::Conv2D {
                channels,
                in_channels,
                kernel,
                strides,
                padding,
                activation,
                bias,
                ..
            } => {
                let mut s = format!(
                    "Conv2D({} -> {channels}, kernel_size={}, stride={}",
                    known(in_channels.get()),
                    pair(*kernel),
                    pair(*strides)
                );
                if *padding != (0, 0) {
                    s.push_str(&format!(", padding={}", pair(*padding)));
                }
                if bias.is_none() {
                    s.push_str(", bias=False");
                }
                if let Some(a) = activation {
                    s.push_str(&format!(", Activation({})", a.name()));
                }
                s.push(')');
                s
            }
            BlockKind::MaxPool2D { pool, strides } => format!(
                "MaxPool2D(size={}, stride={}, padding=(0, 0), ceil_mode=False, global_pool=False, pool_type=max, layout=NCHW)",
                pair(*pool),
                pair(*strides)
            ),
            BlockKind::Flatten => "Flatten".into(),
            BlockKind::Activation(a) => format!("Activation({})", a.name()),
        }
    }

    /// The forward pass on `x`'s device (recorded when the tape is recording).
    pub fn forward(&self, rt: &Runtime, tape: &mut Tape, x: &Array) -> Result<Array> {
        match &self.kind {
            BlockKind::Sequential(c) => {
                let children = c.borrow().clone();
                let mut h = x.clone();
                for child in children {
                    h = child.forward(rt, tape, &h)?;
                }
                Ok(h)
            }
            BlockKind::Flatten => flatten(tape, x),
            BlockKind::Activation(a) => a.apply(tape, x),
            BlockKind::Dense {
                units,
                in_units,
                activation,
                weight,
                bias,
            } => {
                let x2 = if x.ndim() == 2 {
                    x.clone()
                } else {
                    flatten(tape, x)?
                };
                let features = x2.shape().get(1).copied().unwrap_or(1);
                if in_units.get() == 0 {
                    in_units.set(features);
                    if let Some(b) = bias {
                        b.fan_in.set(features);
                    }
                    weight.infer(rt, tape, vec![*units, features])?;
                } else if in_units.get() != features {
                    return Err(RuntimeError::Shape(format!(
                        "{}: expects {} input features but the input has {features} (shape {}); reshape the input or create the layer with in_units={features}",
                        self.name,
                        in_units.get(),
                        shape_text(x.shape())
                    )));
                }
                if let Some(b) = bias {
                    b.infer(rt, tape, vec![*units])?;
                }
                let w = weight.data(Some(x.device()))?;
                let wt = tape.transpose(&w, None)?;
                let mut y = tape.matmul(&x2, &wt)?;
                if let Some(b) = bias {
                    let b = b.data(Some(x.device()))?;
                    y = tape.binary(BinaryOp::Add, Operand::Array(&y), Operand::Array(&b))?;
                }
                match activation {
                    Some(a) => a.apply(tape, &y),
                    None => Ok(y),
                }
            }
            BlockKind::Conv2D {
                channels,
                in_channels,
                kernel,
                strides,
                padding,
                activation,
                weight,
                bias,
            } => {
                let [n, c, _, _] = *x.shape() else {
                    return Err(RuntimeError::Shape(format!(
                        "{}: expects a 4-d input (batch, channels, height, width), got shape {}",
                        self.name,
                        shape_text(x.shape())
                    )));
                };
                if in_channels.get() == 0 {
                    in_channels.set(c);
                    weight.infer(rt, tape, vec![*channels, c, kernel.0, kernel.1])?;
                } else if in_channels.get() != c {
                    return Err(RuntimeError::Shape(format!(
                        "{}: expects {} input channels but the input has {c}",
                        self.name,
                        in_channels.get()
                    )));
                }
                if let Some(b) = bias {
                    b.infer(rt, tape, vec![*channels])?;
                }
                let padded = pad2d(rt, tape, x, *padding)?;
                let (cols, ho, wo) = windows(tape, &padded, *kernel, *strides, &self.name)?;
                // cols: (N, C, kh*kw, Ho, Wo) -> (N, C*kh*kw, Ho*Wo)
                let k = (c * kernel.0 * kernel.1) as isize;
                let cols = tape.reshape(&cols, &[n as isize, k, (ho * wo) as isize])?;
                let w = weight.data(Some(x.device()))?;
                let w2 = tape.reshape(&w, &[*channels as isize, k])?;
                let y = tape.matmul(&w2, &cols)?;
                let mut y = tape.reshape(
                    &y,
                    &[n as isize, *channels as isize, ho as isize, wo as isize],
                )?;
                if let Some(b) = bias {
                    let b = b.data(Some(x.device()))?;
                    let b4 = tape.reshape(&b, &[1, *channels as isize, 1, 1])?;
                    y = tape.binary(BinaryOp::Add, Operand::Array(&y), Operand::Array(&b4))?;
                }
                match activation {
                    Some(a) => a.apply(tape, &y),
                    None => Ok(y),
                }
            }
            BlockKind::MaxPool2D { pool, strides } => {
                if x.ndim() != 4 {
                    return Err(RuntimeError::Shape(format!(
                        "{}: expects a 4-d input (batch, channels, height, width), got shape {}",
                        self.name,
                        shape_text(x.shape())
                    )));
                }
                let (stacked, _, _) = windows(tape, x, *pool, *strides, &self.name)?;
                tape.reduce(&stacked, ReduceOp::Max, Some(&[2]), false)
            }
        }
    }
}

fn flatten(tape: &mut Tape, x: &Array) -> Result<Array> {
    let n = x.shape().first().copied().unwrap_or(1) as isize;
    tape.reshape(x, &[n, -1])
}

/// Zero padding of the two spatial axes, as concatenations (so it is differentiable).
fn pad2d(rt: &Runtime, tape: &mut Tape, x: &Array, padding: (usize, usize)) -> Result<Array> {
    let mut h = x.clone();
    for (axis, p) in [(2usize, padding.0), (3, padding.1)] {
        if p == 0 {
            continue;
        }
        let mut shape = h.shape().to_vec();
        if let Some(d) = shape.get_mut(axis) {
            *d = p;
        }
        let zeros = rt.zeros(&shape, h.dtype(), h.device())?;
        h = tape.concat(&[zeros.clone(), h, zeros], axis as isize)?;
    }
    Ok(h)
}

/// Every (i, j) offset of a `window` sliding with `strides` over the last two axes, stacked on a
/// new axis 2: (N, C, kh*kw, Ho, Wo).
fn windows(
    tape: &mut Tape,
    x: &Array,
    window: (usize, usize),
    strides: (usize, usize),
    name: &str,
) -> Result<(Array, usize, usize)> {
    let (h, w) = (
        x.shape().get(2).copied().unwrap_or(0),
        x.shape().get(3).copied().unwrap_or(0),
    );
    if window.0 == 0 || window.1 == 0 || strides.0 == 0 || strides.1 == 0 {
        return Err(RuntimeError::Value(format!(
            "{name}: kernel and stride sizes must be at least 1"
        )));
    }
    if window.0 > h || window.1 > w {
        return Err(RuntimeError::Shape(format!(
            "{name}: the window {} is larger than the input's spatial size ({h}, {w})",
            pair(window)
        )));
    }
    let ho = (h - window.0) / strides.0 + 1;
    let wo = (w - window.1) / strides.1 + 1;
    let mut parts = Vec::with_capacity(window.0 * window.1);
    for i in 0..window.0 {
        for j in 0..window.1 {
            let items = [
                full(),
                full(),
                IndexItem::Slice {
                    start: Some(i as i64),
                    stop: Some((i + strides.0 * (ho - 1) + 1) as i64),
                    step: Some(strides.0 as i64),
                },
                IndexItem::Slice {
                    start: Some(j as i64),
                    stop: Some((j + strides.1 * (wo - 1) + 1) as i64),
                    step: Some(strides.1 as i64),
                },
            ];
            parts.push(tape.index(x, &items)?);
        }
    }
    Ok((tape.stack(&parts, 2)?, ho, wo))
}

/// `gluon.loss.SoftmaxCrossEntropyLoss` (sparse labels): per-sample loss of shape (N,).
pub fn softmax_cross_entropy(
    rt: &Runtime,
    tape: &mut Tape,
    pred: &Array,
    label: &Array,
) -> Result<Array> {
    let [n, classes] = *pred.shape() else {
        return Err(RuntimeError::Shape(format!(
            "SoftmaxCrossEntropyLoss: expects predictions of shape (batch, classes), got {}",
            shape_text(pred.shape())
        )));
    };
    if label.size() != n {
        return Err(RuntimeError::Shape(format!(
            "SoftmaxCrossEntropyLoss: {} labels for a batch of {n}; give one class index per sample",
            label.size()
        )));
    }
    if label.device() != pred.device() {
        return Err(RuntimeError::DeviceMismatch {
            op: "SoftmaxCrossEntropyLoss".into(),
            first: pred.device(),
            second: label.device(),
        });
    }
    // The max only stabilises exp; it is a constant for the gradient.
    let shift = pred.reduce(ReduceOp::Max, Some(&[1]), true)?;
    let z = tape.binary(BinaryOp::Sub, Operand::Array(pred), Operand::Array(&shift))?;
    let e = tape.unary(&z, UnaryOp::Exp)?;
    let s = tape.reduce(&e, ReduceOp::Sum, Some(&[1]), true)?;
    let lse = tape.unary(&s, UnaryOp::Log)?;
    let logp = tape.binary(BinaryOp::Sub, Operand::Array(&z), Operand::Array(&lse))?;
    let classes_row = rt.arange(0.0, classes as f64, 1.0, pred.dtype(), pred.device())?;
    let labels = label.astype(pred.dtype())?.reshape(&[n as isize, 1])?;
    let onehot = Array::binary(
        BinaryOp::Eq,
        Operand::Array(&labels),
        Operand::Array(&classes_row),
    )?
    .astype(pred.dtype())?;
    let picked = tape.binary(
        BinaryOp::Mul,
        Operand::Array(&logp),
        Operand::Array(&onehot),
    )?;
    let per_sample = tape.reduce(&picked, ReduceOp::Sum, Some(&[1]), false)?;
    tape.unary(&per_sample, UnaryOp::Neg)
}

#[cfg(test)]
mod tests;
