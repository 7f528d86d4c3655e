use super::*;
use crate::nn::layers::Block;
use crate::runtime::{DType, RuntimeConfig};
use safetensors::tensor::SafeTensors;
use std::fs;
use std::path::PathBuf;

fn rt(gpus: usize) -> Runtime {
    Runtime::new(RuntimeConfig {
        sim_gpus: gpus,
        ..RuntimeConfig::default()
    })
}

/// A per-test scratch directory (tests run in parallel).
fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("devarray-params-{}-{name}", std::process::id()));
    let _ = fs::remove_dir_all(&dir);
    fs::create_dir_all(&dir).expect("scratch dir");
    dir
}

/// Sequential(Dense(units) with in_units given), initialized on cpu(0).
fn net(rt: &Runtime, tape: &mut Tape, name: &str, units: usize, in_units: usize) -> Rc<Block> {
    let net = Block::sequential(format!("{name}seq"));
    net.add(Block::dense(
        format!("{name}dense"),
        units,
        None,
        in_units,
        true,
    ))
    .expect("add");
    for p in net.collect_params() {
        p.initialize(rt, tape, &[Device::cpu(0)], None, false)
            .expect("init");
    }
    net
}

fn values(p: &Parameter, d: Device) -> Vec<f64> {
    p.data(Some(d)).expect("data").to_host().to_f64_vec()
}

#[test]
fn round_trip_onto_two_devices_with_structural_names() {
    let rt = rt(2);
    let mut tape = Tape::default();
    rt.seed(1);
    let a = net(&rt, &mut tape, "a", 3, 2);
    // Give the bias non-zero values so that the test sees it load too.
    let bias = a.collect_params()[1].clone();
    bias.data(None)
        .expect("bias")
        .binary_inplace(
            crate::runtime::BinaryOp::Add,
            crate::runtime::Operand::Scalar(crate::runtime::Scalar::Float(0.5)),
        )
        .expect("add");
    let dir = scratch("roundtrip");
    let path = dir.join("net.params");
    // Saved from two devices (no copy on cpu(0)): any copy is written.
    for p in a.collect_params() {
        p.reset_ctx(&rt, &mut tape, &[Device::gpu(0), Device::gpu(1)])
            .expect("reset_ctx");
    }
    save(&a.structural_params(), &path).expect("save");
    for p in a.collect_params() {
        p.reset_ctx(&rt, &mut tape, &[Device::cpu(0)])
            .expect("reset_ctx");
    }
    let file = fs::read(&path).expect("read back");
    let parsed = SafeTensors::deserialize(&file).expect("valid safetensors");
    let mut names = parsed.names();
    names.sort_unstable();
    assert_eq!(names, vec!["0.bias", "0.weight"]);

    // A fresh network with different layer names and a deferred input size.
    let b = Block::sequential("bseq".into());
    b.add(Block::dense("bdense".into(), 3, None, 0, true))
        .expect("add");
    let devices = [Device::gpu(0), Device::gpu(1)];
    load(
        &rt,
        &mut tape,
        &b.structural_params(),
        &path,
        &devices,
        false,
        false,
    )
    .expect("load");
    b.sync_input_sizes();
    assert_eq!(b.repr(), "Sequential(\n  (0): Dense(2 -> 3, linear)\n)");
    for (pa, pb) in a.collect_params().iter().zip(b.collect_params()) {
        assert_eq!(pb.list_ctx(), devices.to_vec());
        for d in devices {
            assert_eq!(values(pa, Device::cpu(0)), values(&pb, d));
        }
    }
    assert_eq!(values(&b.collect_params()[1], Device::gpu(1)), vec![0.5; 3]);
    // No temp file is left beside the target.
    let leftovers: Vec<_> = fs::read_dir(&dir).expect("dir").collect();
    assert_eq!(leftovers.len(), 1);
}

#[test]
fn bad_files_are_clear_errors_that_change_nothing() {
    let rt = rt(0);
    let mut tape = Tape::default();
    rt.seed(2);
    let small = net(&rt, &mut tape, "s", 3, 2);
    let dir = scratch("bad");
    let path = dir.join("small.params");
    save(&small.structural_params(), &path).expect("save");

    let target = net(&rt, &mut tape, "t", 4, 2);
    let before: Vec<Vec<f64>> = target
        .collect_params()
        .iter()
        .map(|p| values(p, Device::cpu(0)))
        .collect();
    let cpu = [Device::cpu(0)];
    let unchanged = |tape: &Tape| {
        let _ = tape;
        let now: Vec<Vec<f64>> = target
            .collect_params()
            .iter()
            .map(|p| values(p, Device::cpu(0)))
            .collect();
        assert_eq!(now, before);
    };

    // Mismatched shapes.
    let err = load(
        &rt,
        &mut tape,
        &target.structural_params(),
        &path,
        &cpu,
        false,
        false,
    )
    .expect_err("shape mismatch");
    assert_eq!(
        err.to_string(),
        format!(
            "'{}' has shape (3, 2) for parameter '0.weight' but the network expects (4, 2). Build the network with the same layer sizes as the one that was saved",
            path.display()
        )
    );
    unchanged(&tape);

    // Truncated.
    let bytes = fs::read(&path).expect("read");
    let cut = dir.join("cut.params");
    fs::write(&cut, &bytes[..bytes.len() - 5]).expect("write");
    let err = load(
        &rt,
        &mut tape,
        &target.structural_params(),
        &cut,
        &cpu,
        false,
        false,
    )
    .expect_err("truncated");
    assert!(matches!(err, ParamsIoError::Invalid(_)));
    assert!(
        err.to_string()
            .contains("is not a valid parameter file (safetensors)"),
        "{err}"
    );
    unchanged(&tape);

    // Not a parameter file at all.
    let junk = dir.join("junk.params");
    fs::write(&junk, b"hello").expect("write");
    assert!(matches!(
        load(
            &rt,
            &mut tape,
            &target.structural_params(),
            &junk,
            &cpu,
            false,
            false
        ),
        Err(ParamsIoError::Invalid(_))
    ));

    // Missing file.
    let err = load(
        &rt,
        &mut tape,
        &target.structural_params(),
        &dir.join("nope.params"),
        &cpu,
        false,
        false,
    )
    .expect_err("missing");
    assert!(matches!(err, ParamsIoError::NotFound(_)));
    unchanged(&tape);

    // Different structure: a two-layer network lacks nothing but has extra names in the file.
    let two = Block::sequential("two".into());
    two.add(Block::dense("two0".into(), 3, None, 2, true))
        .expect("add");
    two.add(Block::dense("two1".into(), 1, None, 3, true))
        .expect("add");
    let err = load(
        &rt,
        &mut tape,
        &two.structural_params(),
        &path,
        &cpu,
        false,
        false,
    )
    .expect_err("missing names");
    assert_eq!(
        err.to_string(),
        format!(
            "'{}' lacks parameter '1.weight' (two1_weight). Was it saved from a different network? Build the same layers, or pass allow_missing=True",
            path.display()
        )
    );
    assert!(!two.collect_params()[0].is_initialized());
}

#[test]
fn saving_an_uninitialized_network_says_what_to_do() {
    let dir = scratch("uninit");
    let n = Block::sequential("u".into());
    n.add(Block::dense("u0".into(), 3, None, 0, true))
        .expect("add");
    let err = save(&n.structural_params(), &dir.join("u.params")).expect_err("uninitialized");
    assert_eq!(err.to_string(), "cannot save: parameter 'u0_weight' (0.weight) has no values yet. Initialize the network and run it on a batch (net(x)) before saving");
    assert!(!dir.join("u.params").exists());
    let _ = DType::Float32;
}

#[test]
fn saving_follows_links_and_never_replaces_what_is_not_a_regular_file() {
    use std::os::unix::fs::{symlink, FileTypeExt};
    let rt = rt(0);
    let mut tape = Tape::default();
    let small = net(&rt, &mut tape, "l", 3, 2);
    let dir = scratch("links");
    // Through a (relative) link: the target gets the file, the link stays a link.
    fs::create_dir_all(dir.join("real")).expect("dir");
    symlink("real/net.params", dir.join("link.params")).expect("symlink");
    save(&small.structural_params(), &dir.join("link.params")).expect("save through link");
    assert!(fs::symlink_metadata(dir.join("link.params"))
        .expect("link")
        .file_type()
        .is_symlink());
    assert!(fs::metadata(dir.join("real/net.params"))
        .expect("target")
        .is_file());
    let cpu = [Device::cpu(0)];
    load(
        &rt,
        &mut tape,
        &small.structural_params(),
        &dir.join("link.params"),
        &cpu,
        false,
        false,
    )
    .expect("load through link");

    // A FIFO, directly or through a link, is refused for saving and for loading, and stays a FIFO.
    let fifo = dir.join("pipe");
    let c = std::ffi::CString::new(fifo.to_str().expect("utf-8")).expect("path");
    // SAFETY: a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    symlink(&fifo, dir.join("to-pipe")).expect("symlink");
    for p in [fifo.clone(), dir.join("to-pipe")] {
        let err = save(&small.structural_params(), &p).expect_err("a FIFO is not a file");
        assert_eq!(
            err.to_string(),
            format!("cannot save to '{}': it is a named pipe (FIFO), not a regular file; give a file name such as 'net.params'", p.display())
        );
        let err = load(
            &rt,
            &mut tape,
            &small.structural_params(),
            &p,
            &cpu,
            false,
            false,
        )
        .expect_err("a FIFO is not a parameter file");
        assert_eq!(
            err.to_string(),
            format!("cannot load '{}': it is a named pipe (FIFO), not a parameter file; give the path of a file written by net.save_parameters(path)", p.display())
        );
    }
    assert!(fs::symlink_metadata(&fifo)
        .expect("fifo")
        .file_type()
        .is_fifo());

    // /dev/zero would never end; a device is refused before anything is read.
    let err = load(
        &rt,
        &mut tape,
        &small.structural_params(),
        Path::new("/dev/zero"),
        &cpu,
        false,
        false,
    )
    .expect_err("a device is not a parameter file");
    assert_eq!(err.to_string(), "cannot load '/dev/zero': it is a character device, not a parameter file; give the path of a file written by net.save_parameters(path)");

    // A header that announces more than the file holds is refused without reading on.
    let lying = dir.join("lying.params");
    fs::write(&lying, [0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0, b'{']).expect("write");
    let err = load(
        &rt,
        &mut tape,
        &small.structural_params(),
        &lying,
        &cpu,
        false,
        false,
    )
    .expect_err("lying header");
    assert!(
        err.to_string()
            .contains("its header announces 4294967295 bytes but the file has 9"),
        "{err}"
    );
}
