//! `mxnet.gluon.data` through a whole session: FashionMNIST files, transforms, loaders, progress.
use super::{error, run};
use crate::eval::session::{Session, SessionConfig};
use crate::nn::data::tests::{scratch, write_tiny_set};

fn session() -> Session {
    Session::new(SessionConfig {
        sim_gpus: Some(0),
        ..SessionConfig::default()
    })
}

#[test]
fn fashion_mnist_items_transforms_and_loader() {
    let dir = scratch("eval-fm");
    write_tiny_set(&dir, 5, true);
    let mut s = session();
    run(
        &mut s,
        &format!(
            "from mxnet import gluon\nfrom mxnet.gluon.data.vision import transforms\nds = gluon.data.vision.datasets.FashionMNIST(root='{}', train=False)",
            dir.display()
        ),
    );
    assert_eq!(run(&mut s, "len(ds)"), "5\n");
    assert_eq!(
        run(
            &mut s,
            "small = ds.take(2)\nprint(len(small), small[1][1], len(ds.take(9)))"
        ),
        "2 1 5\n"
    );
    assert_eq!(
        run(
            &mut s,
            "x, y = ds[3]\nprint(x.shape, x.dtype, y)\nprint(x[0, :, 0])"
        ),
        // Gluon's vision sets hold uint8 images, as MXNet's.
        "(2, 3, 1) <class 'numpy.uint8'> 3\n\n[30 31 32]\n<NDArray 3 @cpu(0)>\n"
    );
    run(
        &mut s,
        "t = transforms.Compose([transforms.ToTensor(), transforms.Normalize(0.5, 0.5)])\nloader = gluon.data.DataLoader(ds.transform_first(t), batch_size=2, num_workers=1)",
    );
    assert_eq!(run(&mut s, "len(loader)"), "3\n");
    assert_eq!(
        run(&mut s, "for X, y in loader:\n    print(X.shape, y.dtype, y.asnumpy().tolist())"),
        "(2, 1, 2, 3) <class 'numpy.int32'> [0, 1]\n(2, 1, 2, 3) <class 'numpy.int32'> [2, 3]\n(1, 1, 2, 3) <class 'numpy.int32'> [4]\n"
    );
    // (40 / 255 - 0.5) / 0.5 for the first pixel of image 4.
    assert_eq!(
        run(
            &mut s,
            "X, y = list(loader)[2]\nprint(round(X[0, 0, 0, 0].asscalar(), 4))"
        ),
        "-0.6863\n"
    );
    // A user function goes through the interpreter, batched on the main thread.
    run(&mut s, "def scale(x):\n    return x / 10\nl2 = gluon.data.DataLoader(ds.transform_first(scale), 4, last_batch='discard', num_workers=2)");
    assert_eq!(run(&mut s, "len(l2)"), "1\n");
    assert_eq!(
        run(
            &mut s,
            "for X, y in l2:\n    print(X.shape, X[1, 0, :, 0].asnumpy().tolist())"
        ),
        "(4, 2, 3, 1) [1.0, 1.100000023841858, 1.2000000476837158]\n"
    );
    // Shuffling yields every item once, reproducibly after a seed.
    run(
        &mut s,
        "import mxnet as mx\nsh = gluon.data.DataLoader(ds, batch_size=5, shuffle=True)",
    );
    let a = run(&mut s, "mx.random.seed(3)\nfor X, y in sh:\n    print(sorted(y.asnumpy().tolist()), y.asnumpy().tolist())");
    let b = run(&mut s, "mx.random.seed(3)\nfor X, y in sh:\n    print(sorted(y.asnumpy().tolist()), y.asnumpy().tolist())");
    assert_eq!(a, b);
    assert!(a.starts_with("[0, 1, 2, 3, 4] "), "{a}");
}

#[test]
fn array_dataset_and_errors() {
    let mut s = session();
    run(&mut s, "from mxnet import gluon, nd\nd = gluon.data.ArrayDataset(nd.arange(6).reshape((3, 2)), [7, 8, 9])");
    assert_eq!(run(&mut s, "len(d)"), "3\n");
    assert_eq!(
        run(&mut s, "for X, y in gluon.data.DataLoader(d, batch_size=2):\n    print(X.asnumpy().tolist(), y.asnumpy().tolist(), y.dtype)"),
        "[[0.0, 1.0], [2.0, 3.0]] [7, 8] <class 'numpy.int32'>\n[[4.0, 5.0]] [9] <class 'numpy.int32'>\n"
    );
    assert_eq!(
        error(&mut s, "gluon.data.ArrayDataset(nd.ones((3, 2)), [1, 2])"),
        ("ValueError".into(), "ArrayDataset: all arguments must have the same length; the first has 3 items, argument 2 has 2".into())
    );
    assert_eq!(
        error(&mut s, "gluon.data.DataLoader(d, batch_size=2, last_batch='rollover')"),
        ("ValueError".into(), "DataLoader: last_batch must be 'keep' or 'discard' ('rollover' is not supported), got 'rollover'".into())
    );
    assert_eq!(error(&mut s, "d[3]").0, "IndexError");
    // A root without the files: torchvision without download=True says so as PyTorch does (with
    // it, and in Gluon, the other copies are read: nn::data's locate tests).
    let dir = scratch("eval-missing");
    run(&mut s, "import torchvision");
    let (ename, evalue) = error(
        &mut s,
        &format!(
            "torchvision.datasets.FashionMNIST(root='{}')",
            dir.display()
        ),
    );
    assert_eq!(
        (ename.as_str(), evalue.as_str()),
        (
            "RuntimeError",
            "Dataset not found. You can use download=True to download it"
        )
    );
}

#[test]
fn progress_bar_redraws_one_line() {
    let mut s = session();
    run(&mut s, "from mxnet import gluon, nd\nloader = gluon.data.DataLoader(gluon.data.ArrayDataset(nd.arange(4)), batch_size=2)");
    let bar = |n: usize| format!("[{}{}]", "#".repeat(n), ".".repeat(30 - n));
    assert_eq!(
        run(
            &mut s,
            "for X in gluon.utils.Progress(loader, 'epoch 0'):\n    pass"
        ),
        format!("\repoch 0 {} 1/2\repoch 0 {} 2/2\n", bar(15), bar(30))
    );
    assert_eq!(
        run(
            &mut s,
            "p = gluon.utils.Progress(3)\np.update(2)\np.close()\np"
        ),
        format!("\r{} 2/3\n{} 2/3\n", bar(20), bar(20))
    );
}
