//! Array files across sessions: a file saved where there are GPUs and loaded where there are
//! none, files from other writers, and what a save leaves in its directory.
use std::collections::HashMap;
use std::path::PathBuf;

use super::{error, run};
use crate::eval::session::{Session, SessionConfig};
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

/// Issue 29, finding 1: every save API writes through a link at its target (the link stays),
/// keeps a private file private, refuses a FIFO, and never writes through a link planted at a
/// guessable temporary name.
#[test]
fn every_save_api_follows_links_keeps_modes_and_refuses_special_files() {
    use std::os::unix::fs::{symlink, FileTypeExt, PermissionsExt};
    let dir = scratch("secure");
    let mut s = session(0);
    run(
        &mut s,
        "import numpy as np\nimport torch\nfrom mxnet import nd, npx\nimport mxnet as mx\n\
         net = mx.gluon.nn.Dense(2)\nnet.initialize()\nnet(nd.ones((1, 3)))",
    );
    let saves = [
        ("a.npy", "np.save({p:?}, np.arange(3))"),
        ("b.txt", "np.savetxt({p:?}, np.arange(3))"),
        ("c.pt", "torch.save(torch.ones(2), {p:?})"),
        ("d.nd", "nd.save({p:?}, nd.ones(2))"),
        ("e.npx", "npx.save({p:?}, mx.np.ones(2))"),
        ("f.params", "net.save_parameters({p:?})"),
    ];
    for (name, code) in saves {
        // A link at the target: its destination gets the data, the link stays.
        let private = dir.join(format!("{name}.private"));
        std::fs::write(&private, b"old").expect("write");
        std::fs::set_permissions(&private, std::fs::Permissions::from_mode(0o600)).expect("chmod");
        let link = dir.join(name);
        symlink(&private, &link).expect("symlink");
        // Links planted at the names the old scheme used point at a victim.
        let victim = dir.join(format!("{name}.victim"));
        std::fs::write(&victim, b"victim").expect("write");
        for n in 0..3 {
            for planted in [
                format!(".{name}.tmp-{}-{n}", std::process::id()),
                format!(".{name}.{}.tmp", std::process::id()),
            ] {
                let _ = symlink(&victim, dir.join(planted));
            }
        }
        let p = link.to_string_lossy().to_string();
        run(&mut s, &code.replace("{p:?}", &format!("{p:?}")));
        let meta = std::fs::symlink_metadata(&link).expect("meta");
        assert!(
            meta.file_type().is_symlink(),
            "{name}: the link was replaced"
        );
        assert_ne!(std::fs::read(&private).expect("read"), b"old", "{name}");
        let mode = std::fs::metadata(&private)
            .expect("meta")
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600, "{name}: mode {mode:o}");
        assert_eq!(std::fs::read(&victim).expect("read"), b"victim", "{name}");
        // A FIFO is refused with an OSError-like error and stays a FIFO.
        let fifo = dir.join(format!("fifo-{name}"));
        let c = std::ffi::CString::new(fifo.to_string_lossy().as_bytes()).expect("cstring");
        // SAFETY: a valid NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        let p = fifo.to_string_lossy().to_string();
        let (_, msg) = error(&mut s, &code.replace("{p:?}", &format!("{p:?}")));
        assert!(msg.contains("not a regular file"), "{name}: {msg}");
        let kind = std::fs::symlink_metadata(&fifo).expect("meta").file_type();
        assert!(kind.is_fifo(), "{name}");
    }
    // Nothing hidden is left beside the files but the planted links.
    for entry in std::fs::read_dir(&dir).expect("read_dir").flatten() {
        let n = entry.file_name().to_string_lossy().to_string();
        if n.starts_with('.') {
            let is_link = entry.file_type().is_ok_and(|t| t.is_symlink());
            assert!(is_link, "left behind: {n}");
        }
    }
}
