//! The layers of convolutional networks for both dialects: convolution, pooling, batch and
//! layer normalization, dropout, identity. Each is a [`LayerOp`] a `layers::Block` carries
//! (`BlockKind::Op`), computing with `nn::conv` / `nn::norm`, with its framework's repr.
use std::any::Any;
use std::cell::Cell;
use std::rc::Rc;

use super::autograd::Tape;
use super::conv::{self, PoolKind, Window};
use super::layers::{map_opt, Activation, ParamMap, Parameter};
use super::norm::{self, RunningUpdate};
use crate::runtime::{Array, DType, Device, Operand, Result, Runtime, RuntimeError};

/// Whose conventions a layer follows (init, reprs, ceil-mode rule, running statistics).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Style {
    Torch,
    Gluon,
}

/// A built-in layer's behaviour, beyond what every `Block` has.
pub trait LayerOp {
    /// Own parameters (and buffers) by attribute name, in registration order.
    fn params(&self) -> Vec<(&'static str, Rc<Parameter>)>;
    fn forward(&self, rt: &Runtime, tape: &mut Tape, x: &Array) -> Result<Array>;
    /// Gluon: the whole repr (`np`: numpy mode). PyTorch: the `extra_repr` text.
    fn repr(&self, np: bool) -> String;
    /// Fixes input-dependent parameter shapes from an input shape, drawing nothing.
    fn infer_shapes(&self, _shape: &[usize]) {}
    /// After loading parameters: take the input size from the loaded weight.
    fn sync_input_sizes(&self) {}
    /// PyTorch's `train()`/`eval()`, or Gluon's `autograd.record(train_mode)`, for this call.
    fn set_training(&self, _training: bool) {}
    /// Whether a lazy PyTorch layer still waits for its first input to size its parameters.
    fn is_lazy(&self) -> bool {
        false
    }
    /// The same layer on `map`'s copies of its parameters (`copy.deepcopy` of a model).
    fn deep_copy(&self, map: &mut ParamMap) -> Result<Rc<dyn LayerOp>>;
    fn as_any(&self) -> &dyn Any;
}

fn tuple_text(v: &[usize]) -> String {
    let parts: Vec<String> = v.iter().map(|d| d.to_string()).collect();
    if parts.len() == 1 {
        format!("({},)", parts[0])
    } else {
        format!("({})", parts.join(", "))
    }
}

fn shape_err(name: &str, want: &str, x: &Array) -> RuntimeError {
    RuntimeError::Shape(format!(
        "{name}: expected {want}, got an input of shape {}",
        tuple_text(x.shape())
    ))
}

/// A convolution's padding: explicit sizes, or PyTorch's `'same'` / `'valid'`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum ConvPad {
    Fixed([usize; 2]),
    Same,
    Valid,
}

/// What a PyTorch convolution pads with (`padding_mode`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PadMode {
    Zeros,
    Reflect,
    Replicate,
    Circular,
}

impl PadMode {
    pub fn parse(s: &str) -> Option<PadMode> {
        Some(match s {
            "zeros" => PadMode::Zeros,
            "reflect" => PadMode::Reflect,
            "replicate" => PadMode::Replicate,
            "circular" => PadMode::Circular,
            _ => return None,
        })
    }

    pub fn name(self) -> &'static str {
        match self {
            PadMode::Zeros => "zeros",
            PadMode::Reflect => "reflect",
            PadMode::Replicate => "replicate",
            PadMode::Circular => "circular",
        }
    }
}

/// Pads the spatial axes of `x` (N, C, ...) by `pads` (last `pads.len()` axes) in `mode`, on
/// the tape so the gradient flows back to the copied elements.
pub fn pad_input(
    tape: &mut Tape,
    x: &Array,
    pads: &[(usize, usize)],
    mode: PadMode,
) -> Result<Array> {
    let mut y = x.clone();
    let first = x.ndim() - pads.len();
    // PyTorch checks the last axis first.
    for (k, &(lo, hi)) in pads.iter().enumerate().rev() {
        if lo == 0 && hi == 0 {
            continue;
        }
        let axis = first + k;
        let n = y.shape()[axis];
        match mode {
            PadMode::Reflect if lo >= n || hi >= n => {
                return Err(RuntimeError::Shape(format!(
                    "Argument #4: Padding size should be less than the corresponding input dimension, but got: padding ({lo}, {hi}) at dimension {axis} of input {}",
                    size_text(x.shape())
                )))
            }
            PadMode::Circular | PadMode::Replicate if n == 0 => {
                return Err(RuntimeError::Shape(format!(
                    "padding a zero-length dimension {axis} of input {} is not possible",
                    size_text(x.shape())
                )))
            }
            PadMode::Circular if lo > n || hi > n => {
                return Err(RuntimeError::Shape(
                    "Padding value causes wrapping around more than once.".into(),
                ))
            }
            _ => {}
        }
        // The padding is slices of `y` joined on: each element's gradient adds up over the
        // copies (slices, not a gather, so repeated sources accumulate).
        let slice = |tape: &mut Tape, y: &Array, start: i64, stop: Option<i64>, step: i64| {
            let mut items = vec![
                crate::runtime::IndexItem::Slice {
                    start: None,
                    stop: None,
                    step: None,
                };
                axis
            ];
            items.push(crate::runtime::IndexItem::Slice {
                start: Some(start),
                stop,
                step: Some(step),
            });
            tape.index(y, &items)
        };
        let (n, lo, hi) = (n as i64, lo as i64, hi as i64);
        let mut parts = Vec::new();
        match mode {
            PadMode::Reflect => {
                if lo > 0 {
                    parts.push(slice(tape, &y, lo, Some(0), -1)?);
                }
                parts.push(y.clone());
                if hi > 0 {
                    let stop = n - 2 - hi;
                    parts.push(slice(tape, &y, n - 2, (stop >= 0).then_some(stop), -1)?);
                }
            }
            PadMode::Replicate => {
                for _ in 0..lo {
                    parts.push(slice(tape, &y, 0, Some(1), 1)?);
                }
                parts.push(y.clone());
                for _ in 0..hi {
                    parts.push(slice(tape, &y, n - 1, Some(n), 1)?);
                }
            }
            PadMode::Circular | PadMode::Zeros => {
                if lo > 0 {
                    parts.push(slice(tape, &y, n - lo, Some(n), 1)?);
                }
                parts.push(y.clone());
                if hi > 0 {
                    parts.push(slice(tape, &y, 0, Some(hi), 1)?);
                }
            }
        }
        y = tape.concat(&parts, axis as isize)?;
    }
    Ok(y)
}

/// `Conv1d`/`Conv2d` (PyTorch) and `Conv1D`/`Conv2D` (Gluon). One-dimensional layers keep
/// their sizes in the second slot of each pair (height 1).
#[derive(Clone)]
pub struct ConvLayer {
    pub name: String,
    pub style: Style,
    pub dims: usize,
    pub channels: usize,
    pub in_channels: Cell<usize>,
    pub kernel: [usize; 2],
    pub stride: [usize; 2],
    pub padding: ConvPad,
    pub padding_mode: PadMode,
    pub dilation: [usize; 2],
    pub groups: usize,
    pub activation: Option<Activation>,
    pub weight: Rc<Parameter>,
    pub bias: Option<Rc<Parameter>>,
    /// Made as `LazyConv*d` (printed so until the input size is known).
    pub lazy: bool,
}

impl ConvLayer {
    /// The sizes that apply to this layer's dimensionality (`(k,)` or `(kh, kw)`).
    fn used(&self, v: [usize; 2]) -> Vec<usize> {
        if self.dims == 1 {
            vec![v[1]]
        } else {
            v.to_vec()
        }
    }

    pub fn weight_shape(&self, in_channels: usize) -> Vec<usize> {
        let mut s = vec![self.channels, in_channels / self.groups.max(1)];
        s.extend(self.used(self.kernel));
        s
    }

    fn fan_in(&self, in_channels: usize) -> usize {
        in_channels / self.groups.max(1) * self.kernel[0] * self.kernel[1]
    }

    fn set_in_channels(&self, c: usize) {
        self.in_channels.set(c);
        if let Some(b) = &self.bias {
            b.fan_in.set(self.fan_in(c));
        }
        self.weight.set_shape(self.weight_shape(c));
    }

    /// The convolution, with its activation when `activation` (a hybridized graph applies
    /// it as a node of its own, as MXNet's Conv2D does).
    pub fn forward_with(
        &self,
        rt: &Runtime,
        tape: &mut Tape,
        x: &Array,
        activation: bool,
    ) -> Result<Array> {
        let rank = self.dims + 2;
        let unbatched = self.style == Style::Torch && x.ndim() == rank - 1;
        let x = if unbatched {
            let mut s: Vec<isize> = vec![1];
            s.extend(x.shape().iter().map(|&d| d as isize));
            tape.reshape(x, &s)?
        } else {
            x.clone()
        };
        if x.ndim() != rank {
            let want = if self.dims == 1 {
                "a 3-d input (batch, channels, length)"
            } else {
                "a 4-d input (batch, channels, height, width)"
            };
            return Err(shape_err(&self.name, want, &x));
        }
        let c = x.shape()[1];
        if self.in_channels.get() == 0 {
            if c % self.groups.max(1) != 0 {
                return Err(RuntimeError::Shape(format!(
                    "{}: {c} input channels do not split into groups={}",
                    self.name, self.groups
                )));
            }
            self.set_in_channels(c);
            self.weight.infer(rt, tape, self.weight_shape(c))?;
        } else if self.in_channels.get() != c {
            return Err(match self.style {
                Style::Torch => RuntimeError::Shape(format!(
                    "Given groups={}, weight of size {}, expected input{} to have {} channels, but got {c} channels instead",
                    self.groups,
                    size_text(&self.weight.shape()),
                    size_text(x.shape()),
                    self.in_channels.get()
                )),
                Style::Gluon => RuntimeError::Shape(format!(
                    "{}: expects {} input channels but the input has {c}",
                    self.name,
                    self.in_channels.get()
                )),
            });
        }
        if let Some(b) = &self.bias {
            b.infer(rt, tape, vec![self.channels])?;
        }
        let w = self.weight.data(Some(x.device()))?;
        let b = match &self.bias {
            Some(b) => Some(b.data(Some(x.device()))?),
            None => None,
        };
        let mut pads = self.pads();
        // Other modes than zeros pad the input first, then convolve without padding.
        let x = if self.padding_mode != PadMode::Zeros && pads != [(0, 0); 2] {
            let spatial = if self.dims == 1 {
                &pads[1..]
            } else {
                &pads[..]
            };
            let y = pad_input(tape, &x, spatial, self.padding_mode)?;
            pads = [(0, 0); 2];
            y
        } else {
            x
        };
        let y = if self.dims == 1 {
            conv::conv1d(
                rt,
                tape,
                &x,
                &w,
                b.as_ref(),
                self.stride[1],
                pads[1],
                self.dilation[1],
                self.groups,
            )?
        } else {
            let win = Window {
                kernel: self.kernel,
                stride: self.stride,
                pad: pads,
                dilation: self.dilation,
            };
            // A ReLU right after the convolution is fused into it where the fast path allows.
            let relu = activation && self.activation == Some(Activation::Relu);
            conv::conv2d_act(rt, tape, &x, &w, b.as_ref(), &win, self.groups, relu)?
        };
        let y = match self
            .activation
            .filter(|a| activation && (self.dims == 1 || *a != Activation::Relu))
        {
            Some(a) => a.apply(tape, &y)?,
            None => y,
        };
        let y = if unbatched {
            let s: Vec<isize> = y.shape().iter().skip(1).map(|&d| d as isize).collect();
            tape.reshape(&y, &s)?
        } else {
            y
        };
        if self.style == Style::Torch && self.activation.is_none() {
            tape.rename(&y, "ConvolutionBackward0");
        }
        Ok(y)
    }

    fn pads(&self) -> [(usize, usize); 2] {
        match self.padding {
            ConvPad::Fixed(p) => [(p[0], p[0]), (p[1], p[1])],
            ConvPad::Valid => [(0, 0), (0, 0)],
            ConvPad::Same => super::conv::same_padding(self.kernel, self.dilation),
        }
    }
}

impl LayerOp for ConvLayer {
    fn params(&self) -> Vec<(&'static str, Rc<Parameter>)> {
        let mut out = vec![("weight", self.weight.clone())];
        if let Some(b) = &self.bias {
            out.push(("bias", b.clone()));
        }
        out
    }

    fn forward(&self, rt: &Runtime, tape: &mut Tape, x: &Array) -> Result<Array> {
        self.forward_with(rt, tape, x, true)
    }

    fn repr(&self, np: bool) -> String {
        let k = tuple_text(&self.used(self.kernel));
        let s = tuple_text(&self.used(self.stride));
        match self.style {
            Style::Torch => {
                let mut out = format!(
                    "{}, {}, kernel_size={k}, stride={s}",
                    self.in_channels.get(),
                    self.channels
                );
                match self.padding {
                    ConvPad::Fixed(p) if p != [0, 0] => {
                        out.push_str(&format!(", padding={}", tuple_text(&self.used(p))))
                    }
                    ConvPad::Same => out.push_str(", padding=same"),
                    ConvPad::Valid => out.push_str(", padding=valid"),
                    _ => {}
                }
                if self.dilation != [1, 1] {
                    out.push_str(&format!(
                        ", dilation={}",
                        tuple_text(&self.used(self.dilation))
                    ));
                }
                if self.groups != 1 {
                    out.push_str(&format!(", groups={}", self.groups));
                }
                if self.bias.is_none() {
                    out.push_str(", bias=False");
                }
                if self.padding_mode != PadMode::Zeros {
                    out.push_str(&format!(", padding_mode={}", self.padding_mode.name()));
                }
                out
            }
            Style::Gluon => {
                // MXNet prints the weight's input size: the channels of one group.
                let inc = match self.in_channels.get() / self.groups.max(1) {
                    0 if np => "-1".to_string(),
                    0 => "None".to_string(),
                    n => n.to_string(),
                };
                let mut out = format!(
                    "Conv{}D({inc} -> {}, kernel_size={k}, stride={s}",
                    self.dims, self.channels
                );
                if let ConvPad::Fixed(p) = self.padding {
                    if p != [0, 0] {
                        out.push_str(&format!(", padding={}", tuple_text(&self.used(p))));
                    }
                }
                if self.dilation != [1, 1] {
                    out.push_str(&format!(
                        ", dilation={}",
                        tuple_text(&self.used(self.dilation))
                    ));
                }
                if self.groups != 1 {
                    out.push_str(&format!(", groups={}", self.groups));
                }
                if self.bias.is_none() {
                    out.push_str(", bias=False");
                }
                if let Some(a) = self.activation {
                    out.push_str(&format!(", Activation({})", a.name()));
                }
                out.push(')');
                out
            }
        }
    }

    fn infer_shapes(&self, shape: &[usize]) {
        if self.in_channels.get() == 0 && shape.len() == self.dims + 2 {
            self.set_in_channels(shape[1]);
        }
    }

    fn sync_input_sizes(&self) {
        if self.in_channels.get() == 0 {
            if let Some(&d) = self.weight.shape().get(1) {
                if d > 0 {
                    self.set_in_channels(d * self.groups.max(1));
                }
            }
        }
    }

    fn is_lazy(&self) -> bool {
        self.lazy && self.in_channels.get() == 0
    }

    fn deep_copy(&self, map: &mut ParamMap) -> Result<Rc<dyn LayerOp>> {
        let mut c = self.clone();
        c.weight = map(&self.weight)?;
        c.bias = map_opt(map, &self.bias)?;
        Ok(Rc::new(c))
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}

/// `torch.Size([1, 2, 3])`, as PyTorch's messages print sizes.
fn size_text(shape: &[usize]) -> String {
    let parts: Vec<String> = shape.iter().map(|d| d.to_string()).collect();
    format!("[{}]", parts.join(", "))
}

/// What a pooling layer covers.
#[derive(Clone, Debug, PartialEq)]
pub enum PoolSpan {
    Window {
        kernel: [usize; 2],
        stride: [usize; 2],
        pad: [usize; 2],
        ceil_mode: bool,
    },
    Global,
    Adaptive([usize; 2]),
}

/// Max/average pooling, global and adaptive forms, both dialects.
#[derive(Clone)]
pub struct PoolLayer {
    pub name: String,
    pub style: Style,
    pub max: bool,
    pub span: PoolSpan,
    pub count_include_pad: bool,
    /// PyTorch's repr prints the arguments as given (`kernel_size=2` or `(2, 2)`).
    pub torch_repr: String,
}

impl LayerOp for PoolLayer {
    fn params(&self) -> Vec<(&'static str, Rc<Parameter>)> {
        Vec::new()
    }

    fn forward(&self, rt: &Runtime, tape: &mut Tape, x: &Array) -> Result<Array> {
        let unbatched = self.style == Style::Torch && x.ndim() == 3;
        let x = if unbatched {
            let s: Vec<isize> = std::iter::once(1)
                .chain(x.shape().iter().map(|&d| d as isize))
                .collect();
            tape.reshape(x, &s)?
        } else {
            x.clone()
        };
        if x.ndim() != 4 {
            return Err(shape_err(
                &self.name,
                "a 4-d input (batch, channels, height, width)",
                &x,
            ));
        }
        let y = match &self.span {
            PoolSpan::Global => conv::global_pool2d(rt, tape, &x, self.max)?,
            PoolSpan::Adaptive(out) => conv::adaptive_pool2d(rt, tape, &x, *out, self.max)?,
            PoolSpan::Window {
                kernel,
                stride,
                pad,
                ceil_mode,
            } => {
                if self.style == Style::Torch && (pad[0] * 2 > kernel[0] || pad[1] * 2 > kernel[1])
                {
                    return Err(RuntimeError::Shape(format!(
                        "pad should be at most half of effective kernel size, but got pad={}, kernel_size={} and dilation=1",
                        pad[0].max(pad[1]),
                        kernel[0].max(kernel[1])
                    )));
                }
                let kind = if self.max {
                    PoolKind::Max
                } else {
                    PoolKind::Avg {
                        count_include_pad: self.count_include_pad,
                    }
                };
                let win = Window::new(*kernel, *stride, *pad);
                conv::pool2d(
                    rt,
                    tape,
                    &x,
                    &win,
                    kind,
                    *ceil_mode,
                    self.style == Style::Torch,
                )?
            }
        };
        let y = if unbatched {
            let s: Vec<isize> = y.shape().iter().skip(1).map(|&d| d as isize).collect();
            tape.reshape(&y, &s)?
        } else {
            y
        };
        if self.style == Style::Torch {
            tape.rename(&y, self.grad_fn_name(x.shape()));
        }
        Ok(y)
    }

    fn repr(&self, _np: bool) -> String {
        match self.style {
            Style::Torch => self.torch_repr.clone(),
            Style::Gluon => self.gluon_repr(2),
        }
    }

    fn deep_copy(&self, _: &mut ParamMap) -> Result<Rc<dyn LayerOp>> {
        Ok(Rc::new(self.clone()))
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}

/// 1-d pooling (`MaxPool1d`, `AvgPool1D`, `AdaptiveAvgPool1d`, `GlobalAvgPool1D`, ...): the
/// 2-d layer over (N, C, 1, L), as PyTorch itself computes it (unsqueeze, pool, squeeze).
/// `inner`'s windows are (1, k).
#[derive(Clone)]
pub struct Pool1dLayer {
    pub inner: PoolLayer,
}

impl Pool1dLayer {
    fn torch_fn(&self) -> &'static str {
        match (&self.inner.span, self.inner.max) {
            (PoolSpan::Window { .. }, true) => "max_pool1d",
            (PoolSpan::Window { .. }, false) => "avg_pool1d",
            (_, true) => "adaptive_max_pool1d",
            (_, false) => "adaptive_avg_pool1d",
        }
    }
}

impl LayerOp for Pool1dLayer {
    fn params(&self) -> Vec<(&'static str, Rc<Parameter>)> {
        Vec::new()
    }

    fn forward(&self, rt: &Runtime, tape: &mut Tape, x: &Array) -> Result<Array> {
        let torch = self.inner.style == Style::Torch;
        let ok = if torch {
            matches!(x.ndim(), 2 | 3)
        } else {
            x.ndim() == 3
        };
        if !ok {
            let f = self.torch_fn();
            return Err(RuntimeError::Shape(match (torch, f) {
                (true, "max_pool1d") => format!(
                    "max_pool1d: Expected 2D or 3D (batch mode) tensor with optional 0 dim batch size for input, but got:{}",
                    size_text(x.shape())
                ),
                (true, _) => format!(
                    "Expected 2 to 3 dimensions, but got {}-dimensional tensor for argument #1 'self' (while checking arguments for {f})",
                    x.ndim()
                ),
                (false, _) => format!(
                    "Pooling: Check failed: dshape.ndim() == 3U ({} vs. 3) : Input data should be 3D in (batch, channel, x)",
                    x.ndim()
                ),
            }));
        }
        let mut s4: Vec<isize> = x.shape().iter().map(|&d| d as isize).collect();
        if s4.len() == 2 {
            s4.insert(0, 1);
        }
        s4.insert(2, 1);
        let x4 = tape.reshape(x, &s4)?;
        let y4 = self.inner.forward(rt, tape, &x4)?;
        let mut out: Vec<isize> = y4.shape().iter().map(|&d| d as isize).collect();
        out.remove(2);
        if x.ndim() == 2 {
            out.remove(0);
        }
        let y = tape.reshape(&y4, &out)?;
        if torch {
            tape.rename(&y, "SqueezeBackward1");
        }
        Ok(y)
    }

    fn repr(&self, _np: bool) -> String {
        match self.inner.style {
            Style::Torch => self.inner.torch_repr.clone(),
            Style::Gluon => self.inner.gluon_repr(1),
        }
    }

    fn deep_copy(&self, _: &mut ParamMap) -> Result<Rc<dyn LayerOp>> {
        Ok(Rc::new(self.clone()))
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}

impl PoolLayer {
    /// Gluon's repr over `dims` (1 or 2) spatial axes; a 1-d layer's windows are (1, k).
    fn gluon_repr(&self, dims: usize) -> String {
        let pool_type = if self.max { "max" } else { "avg" };
        let prefix = if matches!(self.span, PoolSpan::Window { .. }) {
            ""
        } else {
            "Global"
        };
        let kind = if self.max { "Max" } else { "Avg" };
        let (k, s, p, ceil, global) = match &self.span {
            PoolSpan::Window {
                kernel,
                stride,
                pad,
                ceil_mode,
            } => (*kernel, *stride, *pad, *ceil_mode, false),
            _ => ([1, 1], [1, 1], [0, 0], true, true),
        };
        let axes = |v: [usize; 2]| tuple_text(&v[2 - dims.min(2)..]);
        let py = |b: bool| if b { "True" } else { "False" };
        let layout = if dims == 1 { "NCW" } else { "NCHW" };
        format!(
            "{prefix}{kind}Pool{dims}D(size={}, stride={}, padding={}, ceil_mode={}, global_pool={}, pool_type={pool_type}, layout={layout})",
            axes(k),
            axes(s),
            axes(p),
            py(ceil),
            py(global)
        )
    }

    /// The `grad_fn` PyTorch shows for this pooling's output.
    fn grad_fn_name(&self, shape: &[usize]) -> &'static str {
        match (&self.span, self.max) {
            (PoolSpan::Window { .. }, true) => "MaxPool2DWithIndicesBackward0",
            (PoolSpan::Window { .. }, false) => "AvgPool2DBackward0",
            (PoolSpan::Adaptive(_), true) | (PoolSpan::Global, true) => {
                "AdaptiveMaxPool2DBackward0"
            }
            (PoolSpan::Adaptive(o), false) if *o != [1, 1] || shape.len() < 2 => {
                "AdaptiveAvgPool2DBackward0"
            }
            _ => "MeanBackward1",
        }
    }
}

/// Batch normalization (PyTorch's `BatchNorm1d`/`2d`, Gluon's `BatchNorm`). The running
/// statistics are buffer parameters, updated in place after each training batch.
#[derive(Clone)]
pub struct BatchNormLayer {
    pub name: String,
    pub style: Style,
    /// PyTorch's 1d/2d (what input ranks it accepts); Gluon's is 0 (any rank from 2).
    pub dims: usize,
    pub features: Cell<usize>,
    pub eps: f64,
    /// The framework's own momentum (PyTorch 0.1, Gluon 0.9).
    pub momentum: f64,
    pub weight: Option<Rc<Parameter>>,
    pub bias: Option<Rc<Parameter>>,
    pub running_mean: Option<Rc<Parameter>>,
    pub running_var: Option<Rc<Parameter>>,
    pub num_batches: Option<Rc<Parameter>>,
    pub use_global_stats: bool,
    /// Gluon's `fix_gamma` is printed; `center`/`scale` decide the parameters.
    pub training: Cell<bool>,
    pub lazy: bool,
    /// The names Gluon gives the affine parameters (`gamma`, `beta`); PyTorch's are
    /// `weight`, `bias`.
    pub affine_names: (&'static str, &'static str),
}

impl BatchNormLayer {
    fn all(&self) -> Vec<&Rc<Parameter>> {
        [
            &self.weight,
            &self.bias,
            &self.running_mean,
            &self.running_var,
        ]
        .into_iter()
        .flatten()
        .collect()
    }

    fn set_features(&self, c: usize) {
        self.features.set(c);
        for p in self.all() {
            p.set_shape(vec![c]);
        }
    }
}

impl LayerOp for BatchNormLayer {
    fn params(&self) -> Vec<(&'static str, Rc<Parameter>)> {
        let mut out = Vec::new();
        if let Some(w) = &self.weight {
            out.push((self.affine_names.0, w.clone()));
        }
        if let Some(b) = &self.bias {
            out.push((self.affine_names.1, b.clone()));
        }
        if let Some(m) = &self.running_mean {
            out.push(("running_mean", m.clone()));
        }
        if let Some(v) = &self.running_var {
            out.push(("running_var", v.clone()));
        }
        if let Some(n) = &self.num_batches {
            out.push(("num_batches_tracked", n.clone()));
        }
        out
    }

    fn forward(&self, rt: &Runtime, tape: &mut Tape, x: &Array) -> Result<Array> {
        let ok = match (self.style, self.dims) {
            (Style::Torch, 1) => matches!(x.ndim(), 2 | 3),
            (Style::Torch, 2) => x.ndim() == 4,
            _ => x.ndim() >= 2,
        };
        if !ok {
            let want = if self.dims == 1 {
                "2D or 3D input"
            } else {
                "4D input"
            };
            return Err(RuntimeError::Value(format!(
                "expected {want} (got {}D input)",
                x.ndim()
            )));
        }
        let c = x.shape()[1];
        if self.features.get() == 0 {
            self.set_features(c);
        } else if self.features.get() != c {
            return Err(RuntimeError::Shape(format!(
                "{}: running_mean should contain {c} elements not {}",
                self.name,
                self.features.get()
            )));
        }
        for p in self.all() {
            p.infer(rt, tape, vec![c])?;
        }
        if let Some(n) = &self.num_batches {
            n.infer(rt, tape, Vec::new())?;
        }
        let dev = Some(x.device());
        let data = |p: &Option<Rc<Parameter>>| -> Result<Option<Array>> {
            p.as_ref().map(|p| p.data(dev)).transpose()
        };
        let (w, b) = (data(&self.weight)?, data(&self.bias)?);
        let (rm, rv) = (data(&self.running_mean)?, data(&self.running_var)?);
        let running = match (&rm, &rv) {
            (Some(m), Some(v)) => Some((m, v)),
            _ => None,
        };
        let training = self.training.get() && !self.use_global_stats;
        let update = match self.style {
            Style::Torch => RunningUpdate {
                batch_weight: self.momentum,
                unbiased: true,
            },
            // MXNet moves its running statistics when the backward pass goes through the
            // layer: here the batch's statistics wait in `PENDING` for the next backward.
            Style::Gluon => RunningUpdate {
                batch_weight: 1.0,
                unbiased: false,
            },
        };
        let out = norm::batch_norm(
            tape,
            x,
            w.as_ref(),
            b.as_ref(),
            running,
            training,
            update,
            self.eps,
        )?;
        if let (Style::Gluon, Some((m, v)), Some(pm), Some(pv)) = (
            self.style,
            &out.running,
            &self.running_mean,
            &self.running_var,
        ) {
            PENDING.with(|p| {
                p.borrow_mut().push(PendingStats {
                    mean: (pm.clone(), m.clone()),
                    var: (pv.clone(), v.clone()),
                    momentum: self.momentum,
                })
            });
        } else if let (Some((m, v)), Some(old_m), Some(old_v)) = (&out.running, &rm, &rv) {
            old_m.set_index(&[], Operand::Array(m))?;
            old_v.set_index(&[], Operand::Array(v))?;
            if let Some(n) = &self.num_batches {
                let count = n.data(dev)?;
                let next = Array::binary(
                    crate::runtime::BinaryOp::Add,
                    Operand::Array(&count),
                    Operand::Scalar(crate::runtime::Scalar::Int(1)),
                )?;
                count.set_index(&[], Operand::Array(&next))?;
            }
        }
        if self.style == Style::Torch {
            tape.rename(&out.y, "NativeBatchNormBackward0");
        }
        Ok(out.y)
    }

    fn repr(&self, np: bool) -> String {
        let py = |b: bool| if b { "True" } else { "False" };
        match self.style {
            Style::Torch => format!(
                "{}, eps={}, momentum={}, affine={}, bias={}, track_running_stats={}",
                self.features.get(),
                float_text(self.eps),
                float_text(self.momentum),
                py(self.weight.is_some()),
                py(self.bias.is_some()),
                py(self.running_mean.is_some())
            ),
            Style::Gluon => {
                let inc = match self.features.get() {
                    0 if np => "-1".to_string(),
                    0 => "None".to_string(),
                    n => n.to_string(),
                };
                format!(
                    "BatchNorm(axis=1, eps={}, momentum={}, fix_gamma=False, use_global_stats={}, in_channels={inc})",
                    float_text(self.eps),
                    float_text(self.momentum),
                    py(self.use_global_stats)
                )
            }
        }
    }

    fn infer_shapes(&self, shape: &[usize]) {
        if self.features.get() == 0 && shape.len() >= 2 {
            self.set_features(shape[1]);
        }
    }

    fn sync_input_sizes(&self) {
        if self.features.get() == 0 {
            if let Some(&d) = self
                .all()
                .first()
                .and_then(|p| p.shape().first().copied())
                .as_ref()
            {
                if d > 0 {
                    self.features.set(d);
                }
            }
        }
    }

    fn set_training(&self, training: bool) {
        self.training.set(training);
    }

    fn is_lazy(&self) -> bool {
        self.lazy && self.features.get() == 0
    }

    fn deep_copy(&self, map: &mut ParamMap) -> Result<Rc<dyn LayerOp>> {
        let mut c = self.clone();
        c.weight = map_opt(map, &self.weight)?;
        c.bias = map_opt(map, &self.bias)?;
        c.running_mean = map_opt(map, &self.running_mean)?;
        c.running_var = map_opt(map, &self.running_var)?;
        c.num_batches = map_opt(map, &self.num_batches)?;
        Ok(Rc::new(c))
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}

/// Python's repr of a float (`1e-05`, `0.1`, `0.9`): Rust's shortest digits with Python's
/// exponent form (nn sits beside `display`, so it does not use its formatter).
/// A Gluon batch normalization's batch statistics, waiting for the backward pass.
struct PendingStats {
    mean: (Rc<Parameter>, Array),
    var: (Rc<Parameter>, Array),
    momentum: f64,
}

thread_local! {
    static PENDING: std::cell::RefCell<Vec<PendingStats>> =
        const { std::cell::RefCell::new(Vec::new()) };
}

/// After a backward pass: Gluon's batch normalizations recorded since `autograd.record()`
/// move their running statistics, last layer first as MXNet's backward reaches them
/// (running = running * momentum + batch * (1 - momentum), in float32 as MXNet computes it).
pub fn apply_pending_running_stats() -> Result<()> {
    let pending = PENDING.with(|p| std::mem::take(&mut *p.borrow_mut()));
    for p in pending.into_iter().rev() {
        let m32 = p.momentum as f32;
        let w32 = 1.0f32 - m32;
        for (param, batch) in [p.mean, p.var] {
            let old = param.data(Some(batch.device()))?;
            let a = Array::binary(
                crate::runtime::BinaryOp::Mul,
                Operand::Array(&old),
                Operand::Scalar(crate::runtime::Scalar::Float(f64::from(m32))),
            )?;
            let b = Array::binary(
                crate::runtime::BinaryOp::Mul,
                Operand::Array(&batch.astype(old.dtype())?),
                Operand::Scalar(crate::runtime::Scalar::Float(f64::from(w32))),
            )?;
            let new = Array::binary(
                crate::runtime::BinaryOp::Add,
                Operand::Array(&a),
                Operand::Array(&b),
            )?;
            old.set_index(&[], Operand::Array(&new))?;
        }
    }
    Ok(())
}

/// A new `autograd.record()` scope: statistics of forward passes no backward went through
/// are dropped, as MXNet never applies them.
pub fn drop_pending_running_stats() {
    PENDING.with(|p| p.borrow_mut().clear());
}

pub fn float_text(v: f64) -> String {
    let s = format!("{v:?}");
    match s.split_once('e') {
        Some((m, e)) => {
            let (sign, digits) = match e.strip_prefix('-') {
                Some(d) => ('-', d),
                None => ('+', e),
            };
            format!("{m}e{sign}{digits:0>2}")
        }
        None => s,
    }
}

/// Layer normalization over the trailing `shape`.
#[derive(Clone)]
pub struct LayerNormLayer {
    pub name: String,
    pub style: Style,
    pub shape: Vec<usize>,
    pub eps: f64,
    pub weight: Option<Rc<Parameter>>,
    pub bias: Option<Rc<Parameter>>,
}

impl LayerOp for LayerNormLayer {
    fn params(&self) -> Vec<(&'static str, Rc<Parameter>)> {
        let names = match self.style {
            Style::Torch => ("weight", "bias"),
            Style::Gluon => ("gamma", "beta"),
        };
        let mut out = Vec::new();
        if let Some(w) = &self.weight {
            out.push((names.0, w.clone()));
        }
        if let Some(b) = &self.bias {
            out.push((names.1, b.clone()));
        }
        out
    }

    fn forward(&self, rt: &Runtime, tape: &mut Tape, x: &Array) -> Result<Array> {
        let n = self.shape.len();
        let tail = x.shape().get(x.ndim().saturating_sub(n)..).unwrap_or(&[]);
        if self.style == Style::Gluon && self.shape == [0] {
            if let Some(&last) = x.shape().last() {
                for p in [&self.weight, &self.bias].into_iter().flatten() {
                    p.infer(rt, tape, vec![last])?;
                }
            }
        } else if x.ndim() < n || tail != self.shape.as_slice() {
            return Err(RuntimeError::Shape(format!(
                "Given normalized_shape={}, expected input with shape [*, {}], but got input of size{}",
                size_text(&self.shape),
                self.shape.iter().map(|d| d.to_string()).collect::<Vec<_>>().join(", "),
                size_text(x.shape())
            )));
        }
        let dims = if self.style == Style::Gluon { 1 } else { n };
        let dev = Some(x.device());
        let w = self.weight.as_ref().map(|p| p.data(dev)).transpose()?;
        let b = self.bias.as_ref().map(|p| p.data(dev)).transpose()?;
        let y = norm::layer_norm(tape, x, dims, w.as_ref(), b.as_ref(), self.eps)?;
        if self.style == Style::Torch {
            tape.rename(&y, "NativeLayerNormBackward0");
        }
        Ok(y)
    }

    fn repr(&self, np: bool) -> String {
        let py = |b: bool| if b { "True" } else { "False" };
        match self.style {
            Style::Torch => format!(
                "{}, eps={}, elementwise_affine={}, bias={}",
                tuple_text(&self.shape),
                float_text(self.eps),
                py(self.weight.is_some()),
                py(self.bias.is_some())
            ),
            Style::Gluon => {
                let inc = self
                    .weight
                    .as_ref()
                    .and_then(|w| w.shape().first().copied())
                    .filter(|&d| d > 0)
                    .map_or(if np { "-1" } else { "None" }.to_string(), |d| {
                        d.to_string()
                    });
                format!(
                    "LayerNorm(eps={}, axis=-1, center={}, scale={}, in_channels={inc})",
                    float_text(self.eps),
                    py(self.bias.is_some()),
                    py(self.weight.is_some())
                )
            }
        }
    }

    fn deep_copy(&self, map: &mut ParamMap) -> Result<Rc<dyn LayerOp>> {
        let mut c = self.clone();
        c.weight = map_opt(map, &self.weight)?;
        c.bias = map_opt(map, &self.bias)?;
        Ok(Rc::new(c))
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}

/// Dropout (`Dropout`, PyTorch's `Dropout2d` with `channels`), active only in training.
#[derive(Clone)]
pub struct DropoutLayer {
    pub style: Style,
    pub p: f64,
    pub channels: bool,
    pub inplace: bool,
    pub training: Cell<bool>,
}

impl LayerOp for DropoutLayer {
    fn params(&self) -> Vec<(&'static str, Rc<Parameter>)> {
        Vec::new()
    }

    fn forward(&self, rt: &Runtime, tape: &mut Tape, x: &Array) -> Result<Array> {
        let mask_shape: Option<Vec<usize>> = (self.channels && x.ndim() >= 2).then(|| {
            x.shape()
                .iter()
                .enumerate()
                .map(|(i, &d)| if i < 2 { d } else { 1 })
                .collect()
        });
        norm::dropout(
            rt,
            tape,
            x,
            self.p,
            self.training.get(),
            mask_shape.as_deref(),
        )
    }

    fn repr(&self, _np: bool) -> String {
        match self.style {
            Style::Torch => format!(
                "p={}, inplace={}",
                float_text(self.p),
                if self.inplace { "True" } else { "False" }
            ),
            Style::Gluon => format!("Dropout(p = {}, axes=())", float_text(self.p)),
        }
    }

    fn set_training(&self, training: bool) {
        self.training.set(training);
    }

    fn deep_copy(&self, _: &mut ParamMap) -> Result<Rc<dyn LayerOp>> {
        Ok(Rc::new(self.clone()))
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}

/// `nn.Identity()`: returns its input.
#[derive(Clone)]
pub struct IdentityLayer;

impl LayerOp for IdentityLayer {
    fn params(&self) -> Vec<(&'static str, Rc<Parameter>)> {
        Vec::new()
    }
    fn forward(&self, _: &Runtime, _: &mut Tape, x: &Array) -> Result<Array> {
        Ok(x.clone())
    }
    fn repr(&self, _np: bool) -> String {
        String::new()
    }
    fn deep_copy(&self, _: &mut ParamMap) -> Result<Rc<dyn LayerOp>> {
        Ok(Rc::new(IdentityLayer))
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}

/// A buffer or non-trained parameter of `shape` (0 = deferred) with constant initial values.
pub fn constant_param(
    name: String,
    shape: Vec<usize>,
    value: f64,
    buffer: bool,
    torch: bool,
) -> Rc<Parameter> {
    let p = if torch {
        Parameter::new_accumulating(name, shape, super::layers::Init::Constant(value))
    } else {
        Parameter::new(name, shape, super::layers::Init::Constant(value))
    };
    p.own_init.set(true);
    p.buffer.set(buffer);
    p
}

/// PyTorch's `num_batches_tracked`: an int64 scalar buffer, 0.
pub fn batch_counter(rt: &Runtime, tape: &mut Tape, name: String) -> Result<Rc<Parameter>> {
    let p = constant_param(name, Vec::new(), 0.0, true, true);
    let zero = rt.zeros(&[], DType::Int64, Device::cpu(0))?;
    p.place_values(rt, tape, &zero, &[Device::cpu(0)])?;
    Ok(p)
}
