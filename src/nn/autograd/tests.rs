//! Every backward rule against central finite differences (float64, so the check is tight).
use super::*;
use crate::runtime::{HostData, RuntimeConfig};

type Forward = dyn Fn(&mut Tape, &[Array]) -> Result<Array>;

fn rt() -> Runtime {
    Runtime::new(RuntimeConfig {
        sim_gpus: 1,
        ..RuntimeConfig::default()
    })
}

fn arr(rt: &Runtime, values: &[f64], shape: &[usize]) -> Array {
    rt.from_f64(values.to_vec(), shape, DType::Float64, Device::cpu(0))
        .expect("test array")
}

fn values(a: &Array) -> Vec<f64> {
    a.to_host().to_f64_vec()
}

/// Sum of the output, so every op reduces to a scalar loss.
fn loss(tape: &mut Tape, f: &Forward, inputs: &[Array]) -> Result<Array> {
    let y = f(tape, inputs)?;
    tape.reduce(&y, ReduceOp::Sum, None, false)
}

fn check(name: &str, inputs: Vec<Array>, f: &Forward) {
    let rt = rt();
    let mut tape = Tape::default();
    for x in &inputs {
        tape.attach_grad(&rt, x, false).expect("attach");
    }
    let prev = tape.set_recording(true, true);
    let y = loss(&mut tape, f, &inputs).expect("forward");
    tape.restore(prev);
    tape.backward(&rt, &y, None, false).expect("backward");
    let eps = 1e-6;
    for (k, x) in inputs.iter().enumerate() {
        let analytic = values(&tape.grad(x).expect("grad"));
        let base = values(x);
        for i in 0..base.len() {
            let eval_at = |delta: f64| {
                let mut v = base.clone();
                v[i] += delta;
                let moved = arr(&rt, &v, x.shape());
                let mut args = inputs.clone();
                args[k] = moved;
                let mut plain = Tape::default();
                values(&loss(&mut plain, f, &args).expect("forward"))[0]
            };
            let numeric = (eval_at(eps) - eval_at(-eps)) / (2.0 * eps);
            let diff = (numeric - analytic[i]).abs();
            assert!(
                diff <= 1e-5 * (1.0 + numeric.abs()),
                "{name}: input {k} element {i}: analytic {} numeric {numeric}",
                analytic[i]
            );
        }
    }
}

fn a23(rt: &Runtime) -> Array {
    arr(rt, &[0.5, -1.2, 2.0, 0.3, 1.7, -0.4], &[2, 3])
}

fn pos23(rt: &Runtime) -> Array {
    arr(rt, &[0.5, 1.2, 2.0, 0.3, 1.7, 0.4], &[2, 3])
}

#[test]
fn binary_ops_with_broadcasting() {
    let rt = rt();
    for op in [
        BinaryOp::Add,
        BinaryOp::Sub,
        BinaryOp::Mul,
        BinaryOp::Div,
        BinaryOp::Maximum,
        BinaryOp::Minimum,
    ] {
        let b = arr(&rt, &[0.7, 1.5, -0.9], &[3]);
        check(
            op.name(),
            vec![a23(&rt), b],
            &move |t: &mut Tape, x: &[Array]| {
                t.binary(op, Operand::Array(&x[0]), Operand::Array(&x[1]))
            },
        );
    }
    check("pow", vec![pos23(&rt), a23(&rt)], &|t, x| {
        t.binary(BinaryOp::Pow, Operand::Array(&x[0]), Operand::Array(&x[1]))
    });
    check("pow scalar exponent", vec![pos23(&rt)], &|t, x| {
        t.binary(
            BinaryOp::Pow,
            Operand::Array(&x[0]),
            Operand::Scalar(Scalar::Float(3.0)),
        )
    });
    check("scalar minus array", vec![a23(&rt)], &|t, x| {
        t.binary(
            BinaryOp::Sub,
            Operand::Scalar(Scalar::Int(2)),
            Operand::Array(&x[0]),
        )
    });
    check("scalar over array", vec![pos23(&rt)], &|t, x| {
        t.binary(
            BinaryOp::Div,
            Operand::Scalar(Scalar::Float(2.0)),
            Operand::Array(&x[0]),
        )
    });
    check("scalar to the power", vec![a23(&rt)], &|t, x| {
        t.binary(
            BinaryOp::Pow,
            Operand::Scalar(Scalar::Float(2.0)),
            Operand::Array(&x[0]),
        )
    });
    // Broadcasting along a kept unit axis.
    check(
        "mul (2,1)x(2,3)",
        vec![arr(&rt, &[0.3, -2.0], &[2, 1]), a23(&rt)],
        &|t, x| t.binary(BinaryOp::Mul, Operand::Array(&x[0]), Operand::Array(&x[1])),
    );
}

#[test]
fn unary_ops() {
    let rt = rt();
    for op in [
        UnaryOp::Neg,
        UnaryOp::Abs,
        UnaryOp::Exp,
        UnaryOp::Square,
        UnaryOp::Tanh,
        UnaryOp::Sigmoid,
        UnaryOp::Relu,
        UnaryOp::Sin,
        UnaryOp::Cos,
    ] {
        check(op.name(), vec![a23(&rt)], &move |t, x| t.unary(&x[0], op));
    }
    for op in [
        UnaryOp::Log,
        UnaryOp::Log2,
        UnaryOp::Log10,
        UnaryOp::Sqrt,
        UnaryOp::Reciprocal,
    ] {
        check(op.name(), vec![pos23(&rt)], &move |t, x| t.unary(&x[0], op));
    }
}

#[test]
fn reductions_with_axes() {
    let rt = rt();
    for op in [
        ReduceOp::Sum,
        ReduceOp::Mean,
        ReduceOp::Max,
        ReduceOp::Min,
        ReduceOp::Prod,
    ] {
        for (axes, keep) in [
            (None, false),
            (Some(vec![0isize]), false),
            (Some(vec![1]), true),
        ] {
            let ax = axes.clone();
            check(op.name(), vec![a23(&rt)], &move |t, x| {
                // Square first so the reduction's gradient is not a constant.
                let y = t.binary(BinaryOp::Mul, Operand::Array(&x[0]), Operand::Array(&x[0]))?;
                let r = t.reduce(&y, op, ax.as_deref(), keep)?;
                t.binary(BinaryOp::Mul, Operand::Array(&r), Operand::Array(&r))
            });
        }
    }
}

#[test]
fn matmul_and_dot() {
    let rt = rt();
    let b32 = arr(&rt, &[0.2, -0.5, 1.1, 0.8, -1.3, 0.6], &[3, 2]);
    check("matmul 2d", vec![a23(&rt), b32.clone()], &|t, x| {
        t.matmul(&x[0], &x[1])
    });
    check("dot 2d", vec![a23(&rt), b32], &|t, x| t.dot(&x[0], &x[1]));
    let v3 = arr(&rt, &[0.4, -0.1, 0.9], &[3]);
    check(
        "matmul matrix-vector",
        vec![a23(&rt), v3.clone()],
        &|t, x| t.matmul(&x[0], &x[1]),
    );
    check(
        "dot vector-vector",
        vec![v3.clone(), arr(&rt, &[1.5, 0.2, -0.7], &[3])],
        &|t, x| t.dot(&x[0], &x[1]),
    );
    // Batched with a broadcast left operand: (2,3) @ (4,3,2).
    let batch: Vec<f64> = (0..24).map(|i| (i as f64 * 0.37).sin()).collect();
    check(
        "matmul batched",
        vec![a23(&rt), arr(&rt, &batch, &[4, 3, 2])],
        &|t, x| t.matmul(&x[0], &x[1]),
    );
    // Two batch axes on the right, and a broadcast right operand: (2,2,2,3) @ (3,2).
    check(
        "matmul two batch axes",
        vec![a23(&rt), arr(&rt, &batch, &[2, 2, 3, 2])],
        &|t, x| t.matmul(&x[0], &x[1]),
    );
    let b32 = arr(&rt, &[0.2, -0.5, 1.1, 0.8, -1.3, 0.6], &[3, 2]);
    check(
        "matmul batched left",
        vec![arr(&rt, &batch, &[2, 2, 2, 3]), b32],
        &|t, x| t.matmul(&x[0], &x[1]),
    );
}

#[test]
fn shape_ops_and_indexing() {
    let rt = rt();
    let weight = arr(&rt, &[1.0, 2.0, 3.0, 4.0, 5.0, 6.0], &[6]);
    let weighted = move |t: &mut Tape, y: Array| -> Result<Array> {
        // Multiply by distinct weights so a wrong permutation shows.
        let flat = t.reshape(&y, &[-1])?;
        t.binary(
            BinaryOp::Mul,
            Operand::Array(&flat),
            Operand::Array(&weight),
        )
    };
    let w1 = weighted.clone();
    check("transpose", vec![a23(&rt)], &move |t, x| {
        let y = t.transpose(&x[0], None)?;
        w1(t, y)
    });
    let w2 = weighted.clone();
    check("reshape", vec![a23(&rt)], &move |t, x| {
        let y = t.reshape(&x[0], &[3, 2])?;
        w2(t, y)
    });
    check("index row", vec![a23(&rt)], &|t, x| {
        let y = t.index(&x[0], &[IndexItem::Int(1)])?;
        t.unary(&y, UnaryOp::Square)
    });
    check("slice", vec![a23(&rt)], &|t, x| {
        let items = [
            full_slice(),
            IndexItem::Slice {
                start: Some(1),
                stop: None,
                step: None,
            },
        ];
        let y = t.index(&x[0], &items)?;
        t.unary(&y, UnaryOp::Exp)
    });
    let w3 = weighted;
    check(
        "concat and stack",
        vec![a23(&rt), a23(&rt)],
        &move |t, x| {
            let c = t.concat(&[x[0].clone(), x[1].clone()], 1)?;
            let s = t.stack(&[c.clone(), c], 0)?;
            let r = t.reduce(&s, ReduceOp::Sum, Some(&[0, 1]), false)?;
            let r = t.unary(&r, UnaryOp::Square)?;
            let r = t.index(
                &r,
                &[IndexItem::Slice {
                    start: Some(0),
                    stop: Some(6),
                    step: None,
                }],
            )?;
            w3(t, r)
        },
    );
    check("clip", vec![a23(&rt)], &|t, x| {
        let y = t.clip(&x[0], Some(-1.0), Some(1.0))?;
        t.unary(&y, UnaryOp::Square)
    });
}

#[test]
fn gradient_follows_device_and_accumulates() {
    let rt = rt();
    let mut tape = Tape::default();
    let x = rt
        .from_f64(vec![1.0, 2.0, 3.0], &[3], DType::Float32, Device::gpu(0))
        .expect("x");
    tape.attach_grad(&rt, &x, false).expect("attach");
    for _ in 0..2 {
        let prev = tape.set_recording(true, true);
        let y = tape
            .binary(BinaryOp::Mul, Operand::Array(&x), Operand::Array(&x))
            .expect("y");
        tape.restore(prev);
        tape.backward(&rt, &y, None, false).expect("backward");
    }
    let g = tape.grad(&x).expect("grad");
    assert_eq!(g.device(), Device::gpu(0));
    // grad_req='write': the second backward overwrites, not adds.
    assert_eq!(g.to_host(), HostData::F32(vec![2.0, 4.0, 6.0]));
    assert!(tape.is_empty(), "backward frees the graph");

    tape.attach_grad(&rt, &x, true).expect("attach add");
    for _ in 0..2 {
        let prev = tape.set_recording(true, true);
        let y = tape.unary(&x, UnaryOp::Square).expect("y");
        tape.restore(prev);
        tape.backward(&rt, &y, None, false).expect("backward");
    }
    let g = tape.grad(&x).expect("grad");
    assert_eq!(g.to_host(), HostData::F32(vec![4.0, 8.0, 12.0]));
}

#[test]
fn copy_between_devices_sends_the_gradient_back() {
    let rt = rt();
    let mut tape = Tape::default();
    let x = rt
        .from_f64(vec![1.0, 2.0], &[2], DType::Float32, Device::cpu(0))
        .expect("x");
    tape.attach_grad(&rt, &x, false).expect("attach");
    let prev = tape.set_recording(true, true);
    let moved = tape.as_in_device(&rt, &x, Device::gpu(0)).expect("move");
    let y = tape
        .binary(
            BinaryOp::Mul,
            Operand::Array(&moved),
            Operand::Scalar(Scalar::Int(3)),
        )
        .expect("y");
    tape.restore(prev);
    tape.backward(&rt, &y, None, false).expect("backward");
    let g = tape.grad(&x).expect("grad");
    assert_eq!(g.device(), Device::cpu(0));
    assert_eq!(g.to_host(), HostData::F32(vec![3.0, 3.0]));
}

#[test]
fn backward_outside_a_recording_is_a_clear_error() {
    let rt = rt();
    let mut tape = Tape::default();
    let x = rt.ones(&[2], DType::Float32, Device::cpu(0)).expect("x");
    let err = tape
        .backward(&rt, &x, None, false)
        .expect_err("not recorded");
    assert!(err.to_string().contains("autograd.record()"), "{err}");
    // Nothing is recorded when not recording.
    tape.attach_grad(&rt, &x, false).expect("attach");
    let _ = tape.unary(&x, UnaryOp::Exp).expect("exp");
    assert!(tape.is_empty());
}

fn scalar_sum(tape: &mut Tape, x: &Array) -> Array {
    let sq = tape
        .binary(BinaryOp::Mul, Operand::Array(x), Operand::Array(x))
        .expect("square");
    tape.reduce(&sq, ReduceOp::Sum, None, false).expect("sum")
}

#[test]
fn pytorch_leaves_record_without_a_scope_and_accumulate() {
    let rt = rt();
    let mut tape = Tape::default();
    let x = arr(&rt, &[1.0, 2.0], &[2]);
    tape.set_requires_grad(&x, true);
    assert!(tape.grad(&x).is_none(), "no gradient before a backward");
    for _ in 0..2 {
        let y = scalar_sum(&mut tape, &x);
        assert_eq!(tape.grad_fn(&y), Some("SumBackward0"));
        tape.torch_backward(&rt, &y, None, false).expect("backward");
    }
    assert_eq!(values(&tape.grad(&x).expect("grad")), vec![4.0, 8.0]);
    // no_grad: nothing recorded.
    let prev = tape.set_grad_enabled(false);
    let y = scalar_sum(&mut tape, &x);
    tape.set_grad_enabled(prev);
    assert!(tape.grad_fn(&y).is_none());
    assert!(matches!(
        tape.torch_backward(&rt, &y, None, false),
        Err(TorchBackwardError::NotRequiring)
    ));
}

#[test]
fn a_second_backward_through_a_freed_graph_is_refused_unless_retained() {
    let rt = rt();
    let mut tape = Tape::default();
    let x = arr(&rt, &[1.0, 2.0], &[2]);
    tape.set_requires_grad(&x, true);
    let y = scalar_sum(&mut tape, &x);
    tape.torch_backward(&rt, &y, None, true).expect("retained");
    tape.torch_backward(&rt, &y, None, false).expect("second");
    assert!(matches!(
        tape.torch_backward(&rt, &y, None, false),
        Err(TorchBackwardError::Freed)
    ));
    // The output keeps its grad_fn after the graph is freed, as in PyTorch.
    assert_eq!(tape.grad_fn(&y), Some("SumBackward0"));
}

#[test]
fn unreachable_graphs_are_collected() {
    let rt = rt();
    let mut tape = Tape::default();
    let x = arr(&rt, &[1.0, 2.0], &[2]);
    tape.set_requires_grad(&x, true);
    // A loop that records but never calls backward (PyTorch frees each graph with its output).
    for _ in 0..5000 {
        let y = scalar_sum(&mut tape, &x);
        drop(y);
    }
    assert!(tape.len() < 2 * COLLECT_MIN, "tape grew to {}", tape.len());
    // Leaves nobody holds go too; a held output keeps its whole graph.
    for _ in 0..1000 {
        let t = arr(&rt, &[1.0], &[1]);
        tape.set_requires_grad(&t, true);
    }
    let kept = scalar_sum(&mut tape, &x);
    tape.collect();
    assert_eq!(tape.len(), 2);
    tape.torch_backward(&rt, &kept, None, false)
        .expect("backward");
    assert_eq!(values(&tape.grad(&x).expect("grad")), vec![2.0, 4.0]);
}

#[test]
fn in_place_on_a_leaf_that_requires_grad_is_refused() {
    let rt = rt();
    let mut tape = Tape::default();
    let x = arr(&rt, &[1.0, 2.0], &[2]);
    tape.set_requires_grad(&x, true);
    let add = |t: &mut Tape, s: &Array| {
        t.binary(
            BinaryOp::Add,
            Operand::Array(s),
            Operand::Scalar(Scalar::Int(1)),
        )
    };
    assert!(matches!(
        tape.inplace(&rt, &x, &[], add),
        Err(InplaceError::Leaf)
    ));
    assert_eq!(values(&x), vec![1.0, 2.0], "a refused op changes nothing");
    let prev = tape.set_grad_enabled(false);
    tape.inplace(&rt, &x, &[], add).expect("under no_grad");
    tape.set_grad_enabled(prev);
    assert_eq!(values(&x), vec![2.0, 3.0]);
}

#[test]
fn a_walk_stops_for_hooked_tensors_in_order_and_takes_replacements() {
    let rt = rt();
    let mut tape = Tape::default();
    let x = arr(&rt, &[1.0, 2.0], &[2]);
    tape.set_requires_grad(&x, true);
    let y = tape
        .binary(
            BinaryOp::Mul,
            Operand::Array(&x),
            Operand::Scalar(Scalar::Float(3.0)),
        )
        .expect("mul");
    let z = tape.reduce(&y, ReduceOp::Sum, None, false).expect("sum");
    let leaf_hook = tape.add_hook(&x, Rc::new("x"));
    tape.add_hook(&y, Rc::new("y"));
    let mut walk = tape.begin_torch_backward(&rt, &z, None).expect("begin");
    // The non-leaf first, with its complete gradient; replaced by 10x.
    let (id, g) = tape
        .walk_step(&rt, &mut walk)
        .expect("step")
        .expect("y's hook");
    assert_eq!((id, values(&g)), (y.id(), vec![1.0, 1.0]));
    assert_eq!(tape.hooks_of(id).len(), 1);
    walk.set_grad(id, arr(&rt, &[10.0, 10.0], &[2]));
    // Then the leaf, before accumulation, with what flowed from the replacement.
    let (id, g) = tape
        .walk_step(&rt, &mut walk)
        .expect("step")
        .expect("x's hook");
    assert_eq!((id, values(&g)), (x.id(), vec![30.0, 30.0]));
    assert!(tape.walk_step(&rt, &mut walk).expect("step").is_none());
    tape.end_torch_backward(&rt, walk, true, false)
        .expect("end");
    assert_eq!(values(&tape.grad(&x).expect("grad")), vec![30.0, 30.0]);
    // A removed hook no longer stops the walk; a walk a hook stopped writes nothing.
    tape.remove_hook(leaf_hook);
    assert!(tape.hooks_of(x.id()).is_empty());
    let y2 = scalar_sum(&mut tape, &x);
    let walk = tape.begin_torch_backward(&rt, &y2, None).expect("begin");
    tape.end_torch_backward(&rt, walk, false, false)
        .expect("end");
    assert_eq!(values(&tape.grad(&x).expect("grad")), vec![30.0, 30.0]);
}
