//! Gradients of the convolution, pooling and normalization ops against finite differences, on
//! the CPU and a simulated GPU (the same code through the runtime).
use super::*;
use crate::nn::norm::{batch_norm, dropout, layer_norm, RunningUpdate};
use crate::runtime::{Device, RuntimeConfig};

fn rt(gpus: usize) -> Runtime {
    Runtime::new(RuntimeConfig {
        sim_gpus: gpus,
        ..RuntimeConfig::default()
    })
}

fn values(a: &Array) -> Vec<f64> {
    a.to_host().to_f64_vec()
}

/// A float64 array of `shape` with distinct values (no ties, so max pooling is smooth).
fn input(rt: &Runtime, shape: &[usize], seed: u64, dev: Device) -> Array {
    let n: usize = shape.iter().product();
    let data: Vec<f64> = (0..n)
        .map(|i| {
            let v = ((i as u64 * 2654435761 + seed * 97) % 1000) as f64 / 1000.0;
            v - 0.5 + i as f64 * 1e-4
        })
        .collect();
    rt.from_f64(data, shape, DType::Float64, dev)
        .expect("input")
}

/// Checks d(sum(f(inputs) * proj))/d(input) against central differences for every input.
fn check(rt: &Runtime, inputs: &[Array], f: &dyn Fn(&mut Tape, &[Array]) -> Result<Array>) {
    let mut tape = Tape::default();
    for x in inputs {
        tape.attach_grad(rt, x, false).expect("attach");
    }
    let prev = tape.set_recording(true, true);
    let y = f(&mut tape, inputs).expect("forward");
    let proj = input(rt, y.shape(), 7, y.device());
    let head = tape
        .binary(BinaryOp::Mul, Operand::Array(&y), Operand::Array(&proj))
        .expect("mul");
    let head = tape.reduce(&head, ReduceOp::Sum, None, false).expect("sum");
    tape.restore(prev);
    tape.backward(rt, &head, None, false).expect("backward");
    let pv = values(&proj);
    let eval = |xs: &[Array]| -> f64 {
        let mut t = Tape::default();
        let y = f(&mut t, xs).expect("forward");
        values(&y).iter().zip(&pv).map(|(a, b)| a * b).sum()
    };
    let h = 1e-6;
    for (k, x) in inputs.iter().enumerate() {
        let g = values(&tape.grad(x).expect("grad"));
        let base = values(x);
        for i in 0..base.len() {
            let shifted = |d: f64| {
                let mut v = base.clone();
                v[i] += d;
                let xi = rt
                    .from_f64(v, x.shape(), DType::Float64, x.device())
                    .expect("shift");
                let mut xs = inputs.to_vec();
                xs[k] = xi;
                eval(&xs)
            };
            let num = (shifted(h) - shifted(-h)) / (2.0 * h);
            assert!(
                (num - g[i]).abs() < 1e-5 * (1.0 + num.abs()),
                "input {k} element {i}: numeric {num} analytic {}",
                g[i]
            );
        }
    }
}

fn devices(rt: &Runtime) -> Vec<Device> {
    vec![Device::cpu(0), Device::gpu(0)]
        .into_iter()
        .filter(|d| rt.check_device(*d).is_ok())
        .collect()
}

#[test]
fn conv2d_matches_a_direct_loop() {
    let rt = rt(0);
    let mut tape = Tape::default();
    let dev = Device::cpu(0);
    let x = input(&rt, &[1, 2, 5, 5], 1, dev);
    let w = input(&rt, &[2, 1, 3, 3], 2, dev);
    let win = Window {
        kernel: [3, 3],
        stride: [2, 1],
        pad: [(1, 1), (1, 1)],
        dilation: [1, 2],
    };
    let y = conv2d(&rt, &mut tape, &x, &w, None, &win, 2).expect("conv");
    assert_eq!(y.shape(), &[1, 2, 3, 3]);
    let (xv, wv, yv) = (values(&x), values(&w), values(&y));
    for o in 0..2 {
        for i in 0..3 {
            for j in 0..3 {
                let mut s = 0.0;
                for a in 0..3 {
                    for b in 0..3 {
                        let r = (i * 2 + a) as i64 - 1;
                        let c = (j + b * 2) as i64 - 1;
                        if (0..5).contains(&r) && (0..5).contains(&c) {
                            s += xv[o * 25 + r as usize * 5 + c as usize] * wv[o * 9 + a * 3 + b];
                        }
                    }
                }
                assert!((s - yv[o * 9 + i * 3 + j]).abs() < 1e-12);
            }
        }
    }
}

#[test]
fn conv_gradients() {
    let rt = rt(1);
    for dev in devices(&rt) {
        let x = input(&rt, &[2, 4, 5, 6], 1, dev);
        let w = input(&rt, &[6, 2, 3, 2], 2, dev);
        let b = input(&rt, &[6], 3, dev);
        let win = Window {
            kernel: [3, 2],
            stride: [2, 1],
            pad: [(1, 1), (0, 1)],
            dilation: [1, 2],
        };
        check(&rt, &[x, w, b], &|t, a| {
            conv2d(&rt, t, &a[0], &a[1], Some(&a[2]), &win, 2)
        });
        let x = input(&rt, &[2, 3, 7], 4, dev);
        let w = input(&rt, &[2, 3, 3], 5, dev);
        check(&rt, &[x, w], &|t, a| {
            conv1d(&rt, t, &a[0], &a[1], None, 2, (1, 1), 1, 1)
        });
    }
}

#[test]
fn pooling_gradients_and_sizes() {
    let rt = rt(1);
    for dev in devices(&rt) {
        let x = input(&rt, &[1, 2, 5, 5], 1, dev);
        let win = Window::new([3, 3], [2, 2], [1, 1]);
        for kind in [
            PoolKind::Max,
            PoolKind::Avg {
                count_include_pad: true,
            },
            PoolKind::Avg {
                count_include_pad: false,
            },
        ] {
            check(&rt, std::slice::from_ref(&x), &|t, a| {
                pool2d(&rt, t, &a[0], &win, kind, true, true)
            });
        }
        let x = input(&rt, &[1, 2, 7, 5], 2, dev);
        check(&rt, std::slice::from_ref(&x), &|t, a| {
            adaptive_pool2d(&rt, t, &a[0], [3, 2], false)
        });
        check(&rt, &[x], &|t, a| {
            adaptive_pool2d(&rt, t, &a[0], [3, 2], true)
        });
    }
    // PyTorch: a 5x5 input, kernel 2, stride 2, ceil_mode -> 3x3; the last window's divisor
    // counts only what lies inside the (unpadded) input.
    assert_eq!(pool_out(5, 2, 2, 0, 1, true, true), Some(3));
    // A last window starting in the right padding: PyTorch drops it, MXNet keeps it.
    assert_eq!(pool_out(5, 2, 2, 1, 1, true, true), Some(3));
    assert_eq!(pool_out(5, 2, 2, 1, 1, true, false), Some(4));
    let mut tape = Tape::default();
    let x = rt
        .from_f64(
            (0..16).map(f64::from).collect(),
            &[1, 1, 4, 4],
            DType::Float32,
            Device::cpu(0),
        )
        .expect("x");
    let y = pool2d(
        &rt,
        &mut tape,
        &x,
        &Window::new([3, 3], [3, 3], [0, 0]),
        PoolKind::Avg {
            count_include_pad: true,
        },
        true,
        true,
    )
    .expect("pool");
    // torch.nn.functional.avg_pool2d(torch.arange(16.).reshape(1,1,4,4), 3, ceil_mode=True)
    assert_eq!(values(&y), vec![5.0, 7.0, 13.0, 15.0]);
}

#[test]
fn max_pool_gradient_goes_to_the_first_maximum() {
    let rt = rt(0);
    let mut tape = Tape::default();
    let x = rt
        .from_f64(
            vec![1.0, 1.0, 0.0, 1.0],
            &[1, 1, 2, 2],
            DType::Float32,
            Device::cpu(0),
        )
        .expect("x");
    tape.attach_grad(&rt, &x, false).expect("attach");
    let prev = tape.set_recording(true, true);
    let y = pool2d(
        &rt,
        &mut tape,
        &x,
        &Window::new([2, 2], [2, 2], [0, 0]),
        PoolKind::Max,
        false,
        true,
    )
    .expect("pool");
    tape.restore(prev);
    tape.backward(&rt, &y, None, false).expect("backward");
    assert_eq!(
        values(&tape.grad(&x).expect("grad")),
        vec![1.0, 0.0, 0.0, 0.0]
    );
}

#[test]
fn norm_gradients() {
    let rt = rt(1);
    for dev in devices(&rt) {
        let x = input(&rt, &[3, 2, 2, 2], 1, dev);
        let g = input(&rt, &[2], 2, dev);
        let b = input(&rt, &[2], 3, dev);
        let upd = RunningUpdate {
            batch_weight: 0.1,
            unbiased: true,
        };
        check(&rt, &[x.clone(), g.clone(), b.clone()], &|t, a| {
            Ok(batch_norm(t, &a[0], Some(&a[1]), Some(&a[2]), None, true, upd, 1e-5)?.y)
        });
        let rm = input(&rt, &[2], 4, dev);
        let rv = rt.full(&[2], 2.0, DType::Float64, dev).expect("rv");
        check(&rt, &[x.clone(), g, b], &|t, a| {
            Ok(batch_norm(
                t,
                &a[0],
                Some(&a[1]),
                Some(&a[2]),
                Some((&rm, &rv)),
                false,
                upd,
                1e-5,
            )?
            .y)
        });
        let w = input(&rt, &[2, 2], 5, dev);
        check(&rt, &[x, w], &|t, a| {
            layer_norm(t, &a[0], 2, Some(&a[1]), None, 1e-5)
        });
    }
}

#[test]
fn batch_norm_running_statistics() {
    let rt = rt(0);
    let mut tape = Tape::default();
    let dev = Device::cpu(0);
    let x = rt
        .from_f64(vec![1.0, 2.0, 3.0, 5.0], &[2, 2], DType::Float32, dev)
        .expect("x");
    let rm = rt.zeros(&[2], DType::Float32, dev).expect("rm");
    let rv = rt.ones(&[2], DType::Float32, dev).expect("rv");
    let torch = RunningUpdate {
        batch_weight: 0.1,
        unbiased: true,
    };
    let out = batch_norm(
        &mut tape,
        &x,
        None,
        None,
        Some((&rm, &rv)),
        true,
        torch,
        1e-5,
    )
    .expect("bn");
    let (m, v) = out.running.expect("running");
    // Batch means (2, 3.5); unbiased variances (2, 4.5).
    assert_eq!(values(&m), vec![0.2f32 as f64, 0.35f32 as f64]);
    assert_eq!(values(&v), vec![1.1f32 as f64, 1.35f32 as f64]);
}

#[test]
fn dropout_scales_what_it_keeps() {
    let rt = rt(0);
    let mut tape = Tape::default();
    let x = rt.ones(&[1000], DType::Float32, Device::cpu(0)).expect("x");
    let y = dropout(&rt, &mut tape, &x, 0.5, true, None).expect("dropout");
    let v = values(&y);
    assert!(v.iter().all(|&a| a == 0.0 || a == 2.0));
    let kept = v.iter().filter(|&&a| a == 2.0).count();
    assert!((400..600).contains(&kept), "{kept}");
    let same = dropout(&rt, &mut tape, &x, 0.5, false, None).expect("eval");
    assert!(same.same(&x));
    assert!(dropout(&rt, &mut tape, &x, 1.5, true, None).is_err());
}
