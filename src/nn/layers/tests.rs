use super::*;
use crate::nn::train::{split_and_load, Trainer};
use crate::runtime::{HostData, RuntimeConfig};

fn rt(gpus: usize) -> Runtime {
    Runtime::new(RuntimeConfig {
        sim_gpus: gpus,
        ..RuntimeConfig::default()
    })
}

fn close(a: &[f64], b: &[f64]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| (x - y).abs() < 1e-7)
}

fn pool(name: &str) -> Rc<Block> {
    Rc::new(Block {
        name: name.into(),
        kind: BlockKind::MaxPool2D {
            pool: (2, 2),
            strides: (2, 2),
        },
    })
}

#[test]
fn dense_matches_mxnet_reference() {
    let rt = rt(0);
    let mut tape = Tape::default();
    rt.seed(0);
    let net = Block::sequential("sequential0".into());
    net.add(Block::dense("dense0".into(), 1, None, 0, true))
        .expect("add");
    for p in net.collect_params() {
        p.initialize(&rt, &mut tape, &[Device::cpu(0)], None, false)
            .expect("init");
    }
    let x = rt
        .uniform(0.0, 1.0, &[3, 2], DType::Float32, Device::cpu(0))
        .expect("x");
    let y = net.forward(&rt, &mut tape, &x).expect("forward");
    assert!(close(
        &y.to_host().to_f64_vec(),
        &[0.03226983, 0.04553818, 0.04549678]
    ));
    let params = net.collect_params();
    let w = params[0].data(None).expect("weight");
    assert!(close(&w.to_host().to_f64_vec(), &[0.00628365, 0.04861524]));
    assert_eq!(
        params[0].repr(0),
        "Parameter dense0_weight (shape=(1, 2), dtype=float32)"
    );
    assert_eq!(net.repr(), "Sequential(\n  (0): Dense(2 -> 1, linear)\n)");
}

#[test]
fn parameters_not_on_the_input_device_are_a_clear_error() {
    let rt = rt(3);
    let mut tape = Tape::default();
    let dense = Block::dense("dense0".into(), 2, None, 3, true);
    for p in dense.collect_params() {
        p.initialize(
            &rt,
            &mut tape,
            &[Device::gpu(0), Device::gpu(1)],
            None,
            false,
        )
        .expect("init");
    }
    let x = rt.ones(&[1, 3], DType::Float32, Device::gpu(2)).expect("x");
    let err = dense
        .forward(&rt, &mut tape, &x)
        .expect_err("wrong device")
        .to_string();
    assert!(
        err.starts_with(
            "Parameter 'dense0_weight' was not initialized on context gpu(2). It was only initialized on [gpu(0), gpu(1)]."
        ),
        "{err}"
    );
}

#[test]
fn conv_and_pool_shapes_and_values() {
    let rt = rt(0);
    let mut tape = Tape::default();
    let conv = Block::conv2d("conv0".into(), 2, (3, 3), (1, 1), (1, 1), None, 0, true);
    for p in conv.collect_params() {
        p.initialize(
            &rt,
            &mut tape,
            &[Device::cpu(0)],
            Some(Init::Uniform(1.0)),
            false,
        )
        .expect("init");
    }
    let x = rt
        .ones(&[1, 1, 4, 4], DType::Float32, Device::cpu(0))
        .expect("x");
    let y = conv.forward(&rt, &mut tape, &x).expect("conv");
    assert_eq!(y.shape(), &[1, 2, 4, 4]);
    // The output at (1, 1) of channel 0 sees the whole 3x3 kernel over ones.
    let w = conv.collect_params()[0]
        .data(None)
        .expect("w")
        .to_host()
        .to_f64_vec();
    let inner = y.to_host().to_f64_vec()[5];
    let expected: f64 = w[..9].iter().sum();
    assert!((inner - expected).abs() < 1e-5, "{inner} vs {expected}");
    assert_eq!(
        conv.repr(),
        "Conv2D(1 -> 2, kernel_size=(3, 3), stride=(1, 1), padding=(1, 1))"
    );

    let v = rt
        .arange(0.0, 16.0, 1.0, DType::Float32, Device::cpu(0))
        .expect("v")
        .reshape(&[1, 1, 4, 4])
        .expect("r");
    let p = pool("pool0").forward(&rt, &mut tape, &v).expect("pool");
    assert_eq!(p.to_host(), HostData::F32(vec![5.0, 7.0, 13.0, 15.0]));
}

/// A small conv net on 2 simulated GPUs: after each step the copies are identical and the
/// loss goes down.
#[test]
fn data_parallel_training_keeps_copies_identical() {
    let rt = rt(2);
    let mut tape = Tape::default();
    rt.seed(1);
    let net = Block::sequential("sequential0".into());
    let conv = Block::conv2d(
        "conv0".into(),
        4,
        (3, 3),
        (1, 1),
        (0, 0),
        Some(Activation::Relu),
        0,
        true,
    );
    net.add(conv).expect("add");
    net.add(pool("pool0")).expect("add");
    net.add(Block::dense("dense0".into(), 3, None, 0, true))
        .expect("add");
    let devices = [Device::gpu(0), Device::gpu(1)];
    for p in net.collect_params() {
        p.initialize(&rt, &mut tape, &devices, Some(Init::XAVIER), false)
            .expect("init");
    }
    let x = rt
        .uniform(0.0, 1.0, &[4, 1, 6, 6], DType::Float32, Device::cpu(0))
        .expect("x");
    let label = rt
        .from_f64(
            vec![0.0, 1.0, 2.0, 1.0],
            &[4],
            DType::Float32,
            Device::cpu(0),
        )
        .expect("y");
    let sgd = crate::nn::optim::Algorithm::MxSgd {
        momentum: 0.0,
        wd: 0.0,
        clip_gradient: None,
        nag: false,
    };
    let trainer = Trainer::new(net.collect_params(), "sgd", sgd, 0.5, 1.0);
    let mut losses = Vec::new();
    for _ in 0..4 {
        let xs = split_and_load(&rt, &x, &devices, true).expect("split");
        let ys = split_and_load(&rt, &label, &devices, true).expect("split");
        let prev = tape.set_recording(true, true);
        let mut ls = Vec::new();
        for (xi, yi) in xs.iter().zip(&ys) {
            let out = net.forward(&rt, &mut tape, xi).expect("forward");
            ls.push(softmax_cross_entropy(&rt, &mut tape, &out, yi).expect("loss"));
        }
        tape.restore(prev);
        let mut total = 0.0;
        for l in &ls {
            tape.backward(&rt, l, None, false).expect("backward");
            total += l.to_host().to_f64_vec().iter().sum::<f64>();
        }
        losses.push(total);
        trainer.step(&rt, &tape, 4.0).expect("step");
        for p in net.collect_params() {
            let copies = p.list_data().expect("data");
            assert_eq!(copies[0].device(), Device::gpu(0));
            assert_eq!(
                copies[0].to_host(),
                copies[1].to_host(),
                "{} copies differ",
                p.name
            );
        }
    }
    assert!(losses[3] < losses[0], "loss did not fall: {losses:?}");
    let five = rt
        .ones(&[5, 2], DType::Float32, Device::cpu(0))
        .expect("five");
    let err = split_and_load(&rt, &five, &devices, true).expect_err("uneven");
    assert!(
        err.to_string().starts_with(
            "data with shape (5, 2) cannot be evenly split into 2 slices along axis 0."
        ),
        "{err}"
    );
}
