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
    Constant(f64),
    /// Xavier/Glorot and He/Kaiming (MXNet's `Xavier`, `MSRAPrelu`; PyTorch's `xavier_*_`,
    /// `kaiming_*_`): U(-s, s) or N(0, s) with s = sqrt(magnitude / fan).
    Xavier {
        gaussian: bool,
        fan: Fan,
        magnitude: f64,
    },
    /// PyTorch's Linear/Conv default: U(-1/sqrt(fan_in), 1/sqrt(fan_in)) for weight and bias.
    FanInUniform,
}

/// Which fan scales a Xavier-family initializer: MXNet's `factor_type`, PyTorch's `mode`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Fan {
    In,
    Out,
    Avg,
}

impl Init {
    /// MXNet's default `Xavier()`: uniform, average fan, magnitude 3.
    pub const XAVIER: Init = Init::Xavier {
        gaussian: false,
        fan: Fan::Avg,
        magnitude: 3.0,
    };
}

/// (fan_in, fan_out) of a weight of `shape`, as both frameworks count them: the second and first
/// dimensions times the receptive field (the product of the rest).
pub fn fans(shape: &[usize]) -> (f64, f64) {
    let receptive: usize = shape.iter().skip(2).product();
    let fan_out = shape.first().copied().unwrap_or(1) * receptive;
    let fan_in = shape.get(1).copied().unwrap_or(1) * receptive;
    (fan_in as f64, fan_out as f64)
}

/// Values of `shape` drawn by `init` on the CPU (the generator MXNet uses). `fan_in` is the
/// owning layer's input size, which a bias under `FanInUniform` needs.
pub fn draw(
    rt: &Runtime,
    shape: &[usize],
    dtype: DType,
    init: Init,
    fan_in: usize,
) -> Result<Array> {
    let cpu = Device::cpu(0);
    match init {
        Init::Zeros => rt.zeros(shape, dtype, cpu),
        Init::Constant(v) => rt.full(shape, v, dtype, cpu),
        Init::Uniform(scale) => rt.uniform(-scale, scale, shape, dtype, cpu),
        Init::Normal(sigma) => rt.normal(0.0, sigma, shape, dtype, cpu),
        Init::Xavier {
            gaussian,
            fan,
            magnitude,
        } => {
            let (fan_in, fan_out) = fans(shape);
            let factor = match fan {
                Fan::In => fan_in,
                Fan::Out => fan_out,
                Fan::Avg => (fan_in + fan_out) / 2.0,
            };
            let scale = (magnitude / factor.max(1.0)).sqrt();
            if gaussian {
                rt.normal(0.0, scale, shape, dtype, cpu)
            } else {
                rt.uniform(-scale, scale, shape, dtype, cpu)
            }
        }
        Init::FanInUniform => {
            let fan_in = if shape.len() >= 2 {
                shape.iter().skip(1).product::<usize>()
            } else {
                fan_in
            };
            let bound = 1.0 / (fan_in.max(1) as f64).sqrt();
            rt.uniform(-bound, bound, shape, dtype, cpu)
        }
    }
}

/// A named, possibly not-yet-shaped tensor with one copy per device.
pub struct Parameter {
    pub name: String,
    /// 0 marks a dimension inferred at the first forward pass.
    shape: RefCell<Vec<usize>>,
    /// The shape as made, its inferred dimensions 0 for good: MXNet's graph files keep them
    /// unknown (-1) after the first pass fixed them.
    pub made_shape: Vec<usize>,
    /// Changed only by PyTorch's `module.double()` / `float()`.
    pub dtype: Cell<DType>,
    /// How values are drawn when `initialize` gives no initializer (or this one is `own_init`).
    pub init: Cell<Init>,
    data: RefCell<Vec<Array>>,
    /// `initialize` was called before the shape was known: the devices to create it on.
    deferred: RefCell<Option<(Vec<Device>, Option<Init>)>>,
    /// The owning layer's input size, for `Init::FanInUniform` on a bias (whose own shape
    /// does not tell it); 0 until known.
    pub fan_in: Cell<usize>,
    /// `init` was given when the parameter was made (Gluon's `Parameter.init`): it wins over
    /// the initializer `net.initialize(init)` passes.
    pub own_init: Cell<bool>,
    /// Gradients add up across backward passes (PyTorch; MXNet's grad_req='add').
    pub accumulate_grad: bool,
    /// How the dtype prints in the repr: `float32`, or `<class 'numpy.float32'>` for a
    /// parameter made by `params.get` with the default dtype, as MXNet prints it.
    pub dtype_text: RefCell<Option<String>>,
    /// A constant (Gluon's `params.get_constant`): training leaves it alone, and it prints as
    /// `Constant name (...)`.
    pub constant: Cell<bool>,
    /// A buffer (batch norm's running statistics): no gradient, never trained, not among
    /// PyTorch's `parameters()`.
    pub buffer: Cell<bool>,
    /// False for a PyTorch buffer registered with `persistent=False`: moved with its module,
    /// left out of its state dict.
    pub persistent: Cell<bool>,
    /// A program-defined initializer waiting for the shape (see `pending_custom`).
    custom_init: RefCell<Option<Rc<dyn std::any::Any>>>,
    /// The language layer's object for this parameter, weakly (so `net[0].weight is
    /// net[0].weight` while a program holds it, without a reference cycle); opaque here.
    pub handle: RefCell<Option<Box<dyn std::any::Any>>>,
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
            made_shape: shape.clone(),
            shape: RefCell::new(shape),
            dtype: Cell::new(DType::Float32),
            init: Cell::new(init),
            data: RefCell::new(Vec::new()),
            deferred: RefCell::new(None),
            fan_in: Cell::new(0),
            own_init: Cell::new(false),
            accumulate_grad: false,
            dtype_text: RefCell::new(None),
            constant: Cell::new(false),
            buffer: Cell::new(false),
            persistent: Cell::new(true),
            custom_init: RefCell::new(None),
            handle: RefCell::new(None),
        })
    }

    /// A PyTorch parameter: its gradient accumulates.
    pub fn new_accumulating(name: String, shape: Vec<usize>, init: Init) -> Rc<Parameter> {
        let mut p = Parameter::new(name, shape, init);
        if let Some(p) = Rc::get_mut(&mut p) {
            p.accumulate_grad = true;
        }
        p
    }

    pub fn shape(&self) -> Vec<usize> {
        self.shape.borrow().clone()
    }

    fn shape_known(&self) -> bool {
        self.shape.borrow().iter().all(|&d| d > 0)
    }

    /// The shape as a Python tuple with unknown sizes as `unknown`; with `as_made`, also the
    /// sizes the first pass inferred (what MXNet's graph files write).
    pub fn shape_text(&self, unknown: i64, as_made: bool) -> String {
        let dims: Vec<String> = self
            .shape
            .borrow()
            .iter()
            .enumerate()
            .map(|(i, &d)| {
                if d == 0 || (as_made && self.made_shape.get(i) == Some(&0)) {
                    unknown.to_string()
                } else {
                    d.to_string()
                }
            })
            .collect();
        if dims.len() == 1 {
            format!("({},)", dims[0])
        } else {
            format!("({})", dims.join(", "))
        }
    }

    /// `Parameter dense0_weight (shape=(1, 2), dtype=float32)`; unknown dims print as 0 (legacy
    /// MXNet) or -1 (`unknown = -1`, MXNet's numpy mode).
    pub fn repr(&self, unknown: i64) -> String {
        let shape = self.shape_text(unknown, false);
        let dtype = self
            .dtype_text
            .borrow()
            .clone()
            .unwrap_or_else(|| self.dtype.get().name().to_string());
        let kind = if self.constant.get() {
            "Constant"
        } else {
            "Parameter"
        };
        format!("{kind} {} (shape={shape}, dtype={dtype})", self.name)
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
        let values = self.draw(rt, &shape, init.unwrap_or(self.init.get()))?;
        self.place(rt, tape, &values, devices)?;
        // PyTorch draws a layer's parameters in place (`init.uniform_`): version 1, which
        // its "modified by an inplace operation" errors count from.
        for a in self.data.borrow().iter() {
            a.count_inplace_write();
        }
        Ok(())
    }

    fn draw(&self, rt: &Runtime, shape: &[usize], init: Init) -> Result<Array> {
        // A parameter created with its own initializer (a Dense bias: zeros) keeps it whatever
        // the network-wide one is, as Gluon's `Parameter.init` does.
        let init = if self.own_init.get() {
            self.init.get()
        } else {
            init
        };
        draw(rt, shape, self.dtype.get(), init, self.fan_in.get())
    }

    /// The initializer a program's `Initializer` subclass stands for, kept opaque here (the
    /// language layer owns what it is) while initialization waits for the shape.
    pub fn pending_custom(&self) -> Option<Rc<dyn std::any::Any>> {
        self.custom_init.borrow().clone()
    }

    pub fn set_pending_custom(&self, init: Option<Rc<dyn std::any::Any>>) {
        *self.custom_init.borrow_mut() = init;
    }

    /// The devices a deferred initialization will create the parameter on.
    pub fn deferred_devices(&self) -> Option<Vec<Device>> {
        self.deferred.borrow().as_ref().map(|(d, _)| d.clone())
    }

    /// Records `devices` for a deferred initialization without drawing (the caller draws
    /// once the shape is known).
    pub fn defer(&self, devices: &[Device]) {
        *self.deferred.borrow_mut() = Some((devices.to_vec(), None));
    }

    /// Makes `init` this parameter's own initializer (`weight_initializer=`), which the
    /// network-wide one does not override.
    pub fn override_init(&self, init: Init) {
        self.init.set(init);
        self.own_init.set(true);
    }

    /// Sets the shape (a layer learned its input size) unless values already fix it.
    pub fn set_shape(&self, shape: Vec<usize>) {
        if !self.is_initialized() {
            *self.shape.borrow_mut() = shape;
        }
    }

    /// Whether every dimension of the shape is known.
    pub fn has_shape(&self) -> bool {
        self.shape_known()
    }

    /// Places `values` as the parameter's data on `devices` (gradients attached; `accumulate`
    /// for PyTorch's `.grad`, which adds up across backward passes).
    pub fn place_values(
        &self,
        rt: &Runtime,
        tape: &mut Tape,
        values: &Array,
        devices: &[Device],
    ) -> Result<()> {
        *self.shape.borrow_mut() = values.shape().to_vec();
        self.place(rt, tape, values, devices)
    }

    /// Gives a new copy its gradient: MXNet's zero buffer (grad_req='write'), or for a PyTorch
    /// parameter a leaf that requires grad (its `.grad` None until a backward reaches it).
    fn track(&self, rt: &Runtime, tape: &mut Tape, copy: &Array) -> Result<()> {
        if self.buffer.get() {
            Ok(())
        } else if self.accumulate_grad {
            tape.set_requires_grad(copy, true);
            Ok(())
        } else {
            tape.attach_grad(rt, copy, false)
        }
    }

    /// Every copy converted to `dtype`, tracked anew (PyTorch's `module.double()`/`float()`; a
    /// parameter not made yet is made in that dtype).
    pub fn cast(&self, rt: &Runtime, tape: &mut Tape, dtype: DType) -> Result<()> {
        self.dtype.set(dtype);
        let old = self.data.borrow().clone();
        if old.iter().all(|a| a.dtype() == dtype) {
            return Ok(());
        }
        let mut copies = Vec::with_capacity(old.len());
        for a in &old {
            let copy = a.astype(dtype)?;
            self.track(rt, tape, &copy)?;
            copies.push(copy);
        }
        for a in &old {
            tape.detach(a);
        }
        *self.data.borrow_mut() = copies;
        Ok(())
    }

    /// Makes `array` itself the parameter's only copy (PyTorch's `nn.Parameter(t)` shares t's
    /// storage).
    pub fn adopt(&self, rt: &Runtime, tape: &mut Tape, array: Array) -> Result<()> {
        self.track(rt, tape, &array)?;
        *self.shape.borrow_mut() = array.shape().to_vec();
        for old in self.data.borrow().iter() {
            tape.detach(old);
        }
        *self.data.borrow_mut() = vec![array];
        *self.deferred.borrow_mut() = None;
        Ok(())
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
            self.track(rt, tape, &copy)?;
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
    pub fn infer(&self, rt: &Runtime, tape: &mut Tape, shape: Vec<usize>) -> Result<()> {
        if self.is_initialized() {
            return Ok(());
        }
        *self.shape.borrow_mut() = shape;
        let deferred = self.deferred.borrow().clone();
        if let Some((devices, init)) = deferred {
            let values = self.draw(rt, &self.shape(), init.unwrap_or(self.init.get()))?;
            self.place(rt, tape, &values, &devices)?;
        }
        Ok(())
    }

    fn not_initialized(&self) -> RuntimeError {
        if self.deferred.borrow().is_some() {
            RuntimeError::Uninitialized(format!(
                "Parameter '{}' has not been initialized yet because initialization was deferred: its shape {} is only known after the first forward pass. Run the network on a batch first (net(x)), or give the input size (e.g. in_units=) when creating the layer",
                self.name,
                shape_text(&self.shape.borrow())
            ))
        } else {
            RuntimeError::Uninitialized(format!(
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
                // MXNet 1.9.1's words (`Parameter._check_and_get`).
                RuntimeError::Uninitialized(format!(
                    "Parameter '{}' was not initialized on context {wanted}. It was only initialized on {}.",
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
                    // MXNet's reset_ctx raises ValueError here, not the RuntimeError of a read.
                    Err(RuntimeError::Value(self.not_initialized().to_string()))
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
            self.track(rt, tape, &copy)?;
            copies.push(copy);
        }
        Ok(copies)
    }

    /// Adds a replica's copy (`torch.nn.DataParallel`): a tensor computed from this parameter,
    /// not a leaf, so it is neither tracked nor detached; `pop_replica` takes it away again.
    pub fn push_replica(&self, copy: Array) {
        self.data.borrow_mut().push(copy);
    }

    /// Drops the copy `push_replica` added last.
    pub fn pop_replica(&self) {
        self.data.borrow_mut().pop();
    }

    /// A parameter of its own with copies of these values on the same devices (`copy.deepcopy`
    /// of a model). A PyTorch copy is a leaf that requires grad when this one does, as
    /// `Parameter.__deepcopy__` makes it. A Gluon copy gets a zero gradient buffer: MXNet
    /// 1.9.1 copies the buffer but not its link to the values, so its backward on the copy
    /// fails inside the engine; here the copy trains.
    pub fn deep_copy(&self, rt: &Runtime, tape: &mut Tape) -> Result<Rc<Parameter>> {
        let mut copies = Vec::new();
        for a in self.data.borrow().iter() {
            let c = a.copy_to(rt, a.device())?;
            if !self.accumulate_grad || tape.requires_grad(a) {
                self.track(rt, tape, &c)?;
            }
            copies.push(c);
        }
        Ok(Rc::new(Parameter {
            name: self.name.clone(),
            shape: RefCell::new(self.shape()),
            made_shape: self.made_shape.clone(),
            dtype: Cell::new(self.dtype.get()),
            init: Cell::new(self.init.get()),
            data: RefCell::new(copies),
            deferred: RefCell::new(self.deferred.borrow().clone()),
            fan_in: Cell::new(self.fan_in.get()),
            own_init: Cell::new(self.own_init.get()),
            accumulate_grad: self.accumulate_grad,
            dtype_text: RefCell::new(self.dtype_text.borrow().clone()),
            constant: Cell::new(self.constant.get()),
            buffer: Cell::new(self.buffer.get()),
            persistent: Cell::new(self.persistent.get()),
            custom_init: RefCell::new(self.custom_init.borrow().clone()),
            handle: RefCell::new(None),
        }))
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
    pub fn unary_op(self) -> UnaryOp {
        match self {
            Activation::Relu => UnaryOp::Relu,
            Activation::Sigmoid => UnaryOp::Sigmoid,
            Activation::Tanh => UnaryOp::Tanh,
        }
    }
    pub fn apply(self, tape: &mut Tape, x: &Array) -> Result<Array> {
        tape.unary(x, self.unary_op())
    }
}

pub enum BlockKind {
    Sequential(RefCell<Vec<Rc<Block>>>),
    Dense {
        units: usize,
        in_units: Cell<usize>,
        activation: Option<Activation>,
        /// Gluon's `flatten=True`: an n-d input is (batch, features); False (and PyTorch's
        /// Linear): the layer acts on the last axis.
        flatten: bool,
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
    /// The layers of `nn::cnn` (convolution, pooling, normalization, dropout, identity).
    Op(Rc<dyn super::cnn::LayerOp>),
}

/// What a model copy does with each parameter: gives the copy's own (the same copy for a
/// parameter met twice, so shared parameters stay shared inside the copy).
pub type ParamMap<'a> = dyn FnMut(&Rc<Parameter>) -> Result<Rc<Parameter>> + 'a;

/// `map` applied to an optional parameter.
pub fn map_opt(map: &mut ParamMap, p: &Option<Rc<Parameter>>) -> Result<Option<Rc<Parameter>>> {
    p.as_ref().map(map).transpose()
}

/// A layer or a container of layers.
pub struct Block {
    /// `dense0`, `sequential1`, ...: parameter names start with it.
    pub name: String,
    pub kind: BlockKind,
}

/// A bias: Gluon layers create it with `bias_initializer='zeros'`, which the network-wide
/// initializer does not override.
fn own_zeros(name: String, shape: Vec<usize>) -> Rc<Parameter> {
    let p = Parameter::new(name, shape, Init::Zeros);
    p.own_init.set(true);
    p
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
        let bias = use_bias.then(|| own_zeros(format!("{name}_bias"), vec![units]));
        Block::dense_with(name, units, activation, in_units, weight, bias, true)
    }

    /// A Dense layer on given parameters (Gluon's `params=other.params` shares them).
    pub fn dense_with(
        name: String,
        units: usize,
        activation: Option<Activation>,
        in_units: usize,
        weight: Rc<Parameter>,
        bias: Option<Rc<Parameter>>,
        flatten: bool,
    ) -> Rc<Block> {
        let in_units = match weight.shape().get(1) {
            Some(&d) if d > 0 => d,
            _ => in_units,
        };
        Rc::new(Block {
            name,
            kind: BlockKind::Dense {
                units,
                in_units: Cell::new(in_units),
                activation,
                flatten,
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
        let bias = use_bias.then(|| own_zeros(format!("{name}_bias"), vec![channels]));
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

    /// A block of the same kind computing with `map`'s copies of its parameters (and copies of
    /// its children), for `copy.deepcopy` of a model.
    pub fn deep_copy(&self, map: &mut ParamMap) -> Result<Rc<Block>> {
        let kind = match &self.kind {
            BlockKind::Sequential(c) => {
                let children = c
                    .borrow()
                    .iter()
                    .map(|b| b.deep_copy(map))
                    .collect::<Result<Vec<_>>>()?;
                BlockKind::Sequential(RefCell::new(children))
            }
            BlockKind::Dense {
                units,
                in_units,
                activation,
                flatten,
                weight,
                bias,
            } => BlockKind::Dense {
                units: *units,
                in_units: in_units.clone(),
                activation: *activation,
                flatten: *flatten,
                weight: map(weight)?,
                bias: map_opt(map, bias)?,
            },
            BlockKind::Conv2D {
                channels,
                in_channels,
                kernel,
                strides,
                padding,
                activation,
                weight,
                bias,
            } => BlockKind::Conv2D {
                channels: *channels,
                in_channels: in_channels.clone(),
                kernel: *kernel,
                strides: *strides,
                padding: *padding,
                activation: *activation,
                weight: map(weight)?,
                bias: map_opt(map, bias)?,
            },
            BlockKind::MaxPool2D { pool, strides } => BlockKind::MaxPool2D {
                pool: *pool,
                strides: *strides,
            },
            BlockKind::Flatten => BlockKind::Flatten,
            BlockKind::Activation(a) => BlockKind::Activation(*a),
            BlockKind::Op(op) => BlockKind::Op(op.deep_copy(map)?),
        };
        Ok(Rc::new(Block {
            name: self.name.clone(),
            kind,
        }))
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
            BlockKind::Op(op) => out.extend(op.params().into_iter().map(|(_, p)| p)),
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
            BlockKind::Op(op) => {
                for (k, p) in op.params() {
                    out.push((format!("{prefix}{k}"), p));
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
            BlockKind::Op(op) => op.sync_input_sizes(),
            BlockKind::Sequential(c) => {
                for child in c.borrow().iter() {
                    child.sync_input_sizes();
                }
            }
            _ => {}
        }
    }

    /// Fixes the shapes that depend on the input (a Dense's input size, a Conv2D's channels)
    /// from an input of `shape`, drawing nothing: a program's own initializer then fills the
    /// parameters before the first forward pass uses them.
    pub fn infer_shapes(&self, shape: &[usize]) {
        match &self.kind {
            BlockKind::Dense {
                units,
                in_units,
                weight,
                bias,
                flatten,
                ..
            } if in_units.get() == 0 && shape.len() >= 2 => {
                let features: usize = if *flatten {
                    shape.iter().skip(1).product()
                } else {
                    shape[shape.len() - 1]
                };
                in_units.set(features);
                if let Some(b) = bias {
                    b.fan_in.set(features);
                }
                weight.set_shape(vec![*units, features]);
            }
            BlockKind::Conv2D {
                channels,
                in_channels,
                kernel,
                weight,
                ..
            } if in_channels.get() == 0 && shape.len() == 4 => {
                in_channels.set(shape[1]);
                weight.set_shape(vec![*channels, shape[1], kernel.0, kernel.1]);
            }
            BlockKind::Op(op) => op.infer_shapes(shape),
            _ => {}
        }
    }

    /// The parameters of a built-in layer by attribute name (`weight`, `bias`).
    pub fn own_params(&self) -> Vec<(&'static str, Rc<Parameter>)> {
        match &self.kind {
            BlockKind::Dense { weight, bias, .. } | BlockKind::Conv2D { weight, bias, .. } => {
                let mut out = vec![("weight", weight.clone())];
                if let Some(b) = bias {
                    out.push(("bias", b.clone()));
                }
                out
            }
            BlockKind::Op(op) => op.params(),
            _ => Vec::new(),
        }
    }

    /// The repr legacy MXNet prints (an unknown input size is `None`).
    pub fn repr(&self) -> String {
        self.repr_mode(false)
    }

    /// The repr MXNet prints; in numpy mode (`np`) an unknown input size is -1.
    pub fn repr_mode(&self, np: bool) -> String {
        let known = |n: usize| {
            if n == 0 && np {
                "-1".to_string()
            } else {
                known(n)
            }
        };
        let act = |a: &Option<Activation>| match a {
            Some(a) => format!("Activation({})", a.name()),
            None => "linear".into(),
        };
        match &self.kind {
            BlockKind::Sequential(c) => {
                let mut s = String::from("Sequential(\n");
                for (i, child) in c.borrow().iter().enumerate() {
                    let inner = child.repr_mode(np).replace('\n', "\n  ");
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
            BlockKind::Op(op) => op.repr(np),
        }
    }

    /// The forward pass on `x`'s device (recorded when the tape is recording).
    /// A Dense layer's checks before its product: the input size fixed by the first input
    /// (drawing the deferred weight), or the error for a wrong one. Shared with the compiled
    /// graphs of hybridized blocks (`modules/dialects/mxnet/symbol.rs`).
    pub fn prepare_dense(&self, rt: &Runtime, tape: &mut Tape, x: &Array) -> Result<()> {
        let BlockKind::Dense {
            units,
            in_units,
            weight,
            bias,
            flatten,
            ..
        } = &self.kind
        else {
            return Ok(());
        };
        let features = match (x.ndim(), flatten) {
            (2, _) | (_, false) => x.shape().last().copied().unwrap_or(1),
            _ => x.shape().iter().skip(1).product(),
        };
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
        Ok(())
    }

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
            BlockKind::Op(op) => op.forward(rt, tape, x),
            BlockKind::Dense {
                activation,
                weight,
                bias,
                flatten: flat,
                ..
            } => {
                let x2 = if x.ndim() == 2 || !flat {
                    x.clone()
                } else {
                    flatten(tape, x)?
                };
                self.prepare_dense(rt, tape, x)?;
                let w = weight.data(Some(x.device()))?;
                let b = bias
                    .as_ref()
                    .map(|b| b.data(Some(x.device())))
                    .transpose()?;
                linear_act(tape, &x2, &w, b.as_ref(), *activation)
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

/// (N, ...) to (N, -1), recorded.
/// `x @ w^T + b`, the one body of Gluon's Dense, PyTorch's Linear and `F.linear`, and a
/// hybridized graph's `FullyConnected`: `w` is read transposed in place.
pub fn linear(tape: &mut Tape, x: &Array, w: &Array, b: Option<&Array>) -> Result<Array> {
    linear_act(tape, x, w, b, None)
}

/// PyTorch's `grad_fn` name for a linear layer's output on an input of `ndim` axes: one addmm
/// (mm without a bias) for a matrix, the view of the folded rows' product for more axes.
pub fn linear_grad_name(ndim: usize, bias: bool) -> Option<&'static str> {
    match ndim {
        2 if bias => Some("AddmmBackward0"),
        2 => Some("MmBackward0"),
        n if n > 2 => Some("UnsafeViewBackward0"),
        _ => None,
    }
}

/// Names `y` as PyTorch names a linear layer's output (`linear_grad_name`).
pub fn torch_linear_name(tape: &mut Tape, y: &Array, ndim: usize, bias: bool) {
    if let Some(name) = linear_grad_name(ndim, bias) {
        tape.rename(y, name);
    }
}

/// `act(x @ W^T + b)` on the last axis of `x` (a dense layer): W (N, K) is read transposed in
/// place by the GEMM; more than two axes are folded into rows (one GEMM) and unfolded after;
/// the bias and the activation are one op (`Tape::bias_act`: one pass for a single row).
pub fn linear_act(
    tape: &mut Tape,
    x: &Array,
    w: &Array,
    b: Option<&Array>,
    act: Option<Activation>,
) -> Result<Array> {
    if x.ndim() > 2 && w.ndim() == 2 {
        // Sizes spelled out (no -1): an empty axis leaves -1 undetermined.
        let (lead, k) = x.shape().split_at(x.ndim() - 1);
        let rows = lead.iter().product::<usize>() as isize;
        let folded = tape.reshape(x, &[rows, k[0] as isize])?;
        let y = linear_act(tape, &folded, w, b, act)?;
        let mut out: Vec<isize> = lead.iter().map(|&d| d as isize).collect();
        out.push(w.shape().first().copied().unwrap_or(0) as isize);
        return tape.reshape(&y, &out);
    }
    let y = tape.matmul_nt(x, w)?;
    match (b, act) {
        (Some(b), Some(act)) => tape.bias_act(&y, b, act.unary_op()),
        (Some(b), None) => tape.binary(BinaryOp::Add, Operand::Array(&y), Operand::Array(b)),
        (None, Some(act)) => act.apply(tape, &y),
        (None, None) => Ok(y),
    }
}

pub fn flatten(tape: &mut Tape, x: &Array) -> Result<Array> {
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
