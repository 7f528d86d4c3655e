//! Array files across sessions: a file saved where there are GPUs and loaded where there are
//! none, files from other writers, and what a save leaves in its directory.
use std::collections::HashMap;
use std::path::PathBuf;

use crate::eval::session::{Output, Session, SessionConfig};
use crate::nn::tensor_file::{self, HostTensor};
use crate::runtime::HostData;

fn session(gpus: usize) -> Session {
    Session::new(SessionConfig {
        sim_gpus: Some(gpus),
        ..SessionConfig::default()
    })
}

/// A per-test scratch directory (tests run in parallel).
fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("devarray-files-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("scratch dir");
    dir
}

/// Runs `code` and returns its printed and displayed text; panics on an error.
fn run(s: &mut Session, code: &str) -> String {
    let out = s.eval(code);
    if let Some(e) = &out.error {
        panic!("{code:?} failed: {}: {}", e.ename, e.evalue);
    }
    out.outputs
        .iter()
        .map(|o| match o {
            Output::Stdout(t) | Output::Stderr(t) => t.clone(),
            Output::Display { data, .. } => format!("{}\n", data.plain),
        })
        .collect()
}

fn error(s: &mut Session, code: &str) -> (String, String) {
    let e = s.eval(code).error.expect("an error");
    (e.ename, e.evalue)
}

#[test]
fn gpu_files_on_a_machine_without_gpus() {
    let dir = scratch("nogpu");
    let t = dir.join("t.pt");
    let m = dir.join("m.params");
    let mut two = session(2);
    run(
        &mut two,
        &format!(
            "import torch\nfrom mxnet import nd\nimport mxnet as mx\n\
             torch.save({{'w': torch.ones(2, device='cuda:1'), 'c': torch.zeros(1)}}, {t:?})\n\
             nd.save({m:?}, [nd.ones(2, ctx=mx.gpu(1))])"
        ),
    );
    let mut none = session(0);
    run(&mut none, "import torch\nfrom mxnet import nd");
    // PyTorch refuses a CUDA location without CUDA, and says how to map it.
    let (ename, evalue) = error(&mut none, &format!("x = torch.load({t:?})"));
    assert_eq!(ename, "RuntimeError");
    assert!(evalue.starts_with("Attempting to deserialize object on a CUDA device but torch.cuda.is_available() is False."), "{evalue}");
    assert_eq!(
        run(
            &mut none,
            &format!("x = torch.load({t:?}, map_location='cpu')\nprint(x)")
        ),
        "{'w': tensor([1., 1.]), 'c': tensor([0.])}\n"
    );
    // MXNet loads an array saved on a GPU onto the CPU when there is none.
    assert_eq!(
        run(&mut none, &format!("print(nd.load({m:?}))")),
        "[\n[1. 1.]\n<NDArray 2 @cpu(0)>]\n"
    );
    // With GPUs, MXNet puts it back on its GPU; a GPU index the machine lacks is an error.
    let mut one = session(1);
    run(&mut one, "from mxnet import nd");
    let (ename, _) = error(&mut one, &format!("nd.load({m:?})"));
    assert_eq!(ename, "DeviceError");
}

#[test]
fn files_of_other_writers_and_dialects() {
    let dir = scratch("foreign");
    // A safetensors file with no devarray metadata (as other tools write them).
    let foreign = dir.join("foreign.safetensors");
    tensor_file::write(
        &foreign,
        &[
            HostTensor {
                name: "b".into(),
                shape: vec![2],
                data: HostData::I64(vec![1, 2]),
            },
            HostTensor {
                name: "a".into(),
                shape: vec![1],
                data: HostData::F64(vec![0.5]),
            },
        ],
        HashMap::new(),
    )
    .expect("write");
    let mut s = session(0);
    run(
        &mut s,
        "import torch\nfrom mxnet import np, npx, nd\nnpx.set_np()",
    );
    let loaded = run(&mut s, &format!("print(torch.load({foreign:?}))"));
    assert!(
        loaded == "{'a': tensor([0.5000], dtype=torch.float64), 'b': tensor([1, 2])}\n"
            || loaded == "{'b': tensor([1, 2]), 'a': tensor([0.5000], dtype=torch.float64)}\n",
        "{loaded}"
    );
    // An npx file read by torch.load: the same arrays as tensors.
    let npx_file = dir.join("x.npx");
    run(
        &mut s,
        &format!("npx.save({npx_file:?}, [np.arange(3), np.ones(2)])"),
    );
    assert_eq!(
        run(&mut s, &format!("print(torch.load({npx_file:?}))")),
        "[tensor([0., 1., 2.]), tensor([1., 1.])]\n"
    );
    // save_parameters files read by nd.load give the parameters by name, as MXNet's do.
    let params = dir.join("net.params");
    run(
        &mut s,
        &format!(
            "from mxnet.gluon import nn\nnpx.reset_np()\nnet = nn.Dense(2, in_units=3)\nnet.initialize()\n\
             net.save_parameters({params:?})\nd = nd.load({params:?})\nprint(sorted(d))"
        ),
    );
    assert_eq!(run(&mut s, "print(sorted(d))"), "['bias', 'weight']\n");
}

#[test]
fn saving_replaces_the_file_and_leaves_nothing_beside_it() {
    let dir = scratch("atomic");
    let f = dir.join("x.pt");
    let mut s = session(0);
    run(&mut s, "import torch");
    run(&mut s, &format!("torch.save(torch.ones(2), {f:?})"));
    run(&mut s, &format!("torch.save([1, 'two'], {f:?})"));
    assert_eq!(
        run(&mut s, &format!("print(torch.load({f:?}))")),
        "[1, 'two']\n"
    );
    let names: Vec<_> = std::fs::read_dir(&dir)
        .expect("dir")
        .map(|e| e.expect("entry").file_name())
        .collect();
    assert_eq!(names, vec![std::ffi::OsString::from("x.pt")]);
    // A failed save (an object the format cannot hold) leaves the old file as it was.
    let (ename, _) = error(
        &mut s,
        &format!("torch.save([torch.ones(1), print], {f:?})"),
    );
    assert_eq!(ename, "TypeError");
    assert_eq!(
        run(&mut s, &format!("print(torch.load({f:?}))")),
        "[1, 'two']\n"
    );
    // A failed load leaves the variable it was assigned to unchanged.
    std::fs::write(dir.join("junk"), b"junk").expect("write");
    let junk = dir.join("junk");
    run(&mut s, "x = 1");
    let (ename, _) = error(&mut s, &format!("x = torch.load({junk:?})"));
    assert_eq!(ename, "RuntimeError");
    assert_eq!(run(&mut s, "print(x)"), "1\n");
}

#[test]
fn broken_trees_are_errors_that_name_the_file() {
    let dir = scratch("trees");
    let t = HostTensor {
        name: "w".into(),
        shape: vec![1],
        data: HostData::F32(vec![1.0]),
    };
    let write = |name: &str, tree: &str| {
        let path = dir.join(name);
        let meta = HashMap::from([
            ("format".to_string(), "devarray".to_string()),
            ("devarray".to_string(), tree.to_string()),
        ]);
        tensor_file::write(&path, std::slice::from_ref(&t), meta).expect("write");
        path
    };
    let mut s = session(0);
    run(&mut s, "import torch\nfrom mxnet import nd");
    let cases = [
        (
            "json",
            "{not json",
            "has devarray metadata that is not valid JSON",
        ),
        (
            "missing",
            r#"{"version":1,"root":{"tensor":"nope"}}"#,
            "it names tensor 'nope', which the file lacks",
        ),
        (
            "node",
            r#"{"version":1,"root":{"set":[]}}"#,
            "an unknown node 'set'",
        ),
        (
            "device",
            r#"{"version":1,"root":{"tensor":"w","device":"tpu(0)"}}"#,
            "unknown device 'tpu(0)'",
        ),
        (
            "newer",
            r#"{"version":9,"root":{"none":null}}"#,
            "was written by a newer devarray (format version 9; this one reads 1)",
        ),
    ];
    for (name, tree, wanted) in cases {
        let path = write(name, tree);
        let (ename, evalue) = error(&mut s, &format!("torch.load({path:?})"));
        assert_eq!(ename, "RuntimeError", "{name}: {evalue}");
        assert!(evalue.contains(wanted), "{name}: {evalue}");
        assert!(
            evalue.contains(&path.display().to_string()),
            "{name}: {evalue}"
        );
        let (ename, _) = error(&mut s, &format!("nd.load({path:?})"));
        assert_eq!(ename, "MXNetError", "{name}");
    }
}
