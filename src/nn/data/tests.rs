use super::*;
use std::io::Write;

/// A scratch directory per test (tests run in parallel).
pub fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("devarray-data-{}-{name}", std::process::id()));
    let _ = fs::remove_dir_all(&dir);
    fs::create_dir_all(&dir).expect("scratch dir");
    dir
}

fn idx(ndim: u8, dims: &[u32], payload: &[u8]) -> Vec<u8> {
    let mut out = vec![0, 0, 0x08, ndim];
    for d in dims {
        out.extend_from_slice(&d.to_be_bytes());
    }
    out.extend_from_slice(payload);
    out
}

/// Writes `n` images of 2x3 pixels (image i's pixel p = 10 * i + p) with labels i % 10, as the
/// four training/test files; gzip'd when `gz`.
pub fn write_tiny_set(dir: &Path, n: u32, gz: bool) {
    let pixels: Vec<u8> = (0..n)
        .flat_map(|i| (0..6).map(move |p| (10 * i + p) as u8))
        .collect();
    let labels: Vec<u8> = (0..n).map(|i| (i % 10) as u8).collect();
    for prefix in ["train", "t10k"] {
        let files = [
            (
                format!("{prefix}-images-idx3-ubyte"),
                idx(3, &[n, 2, 3], &pixels),
            ),
            (format!("{prefix}-labels-idx1-ubyte"), idx(1, &[n], &labels)),
        ];
        for (name, bytes) in files {
            if gz {
                let f = fs::File::create(dir.join(format!("{name}.gz"))).expect("create");
                let mut enc = flate2::write::GzEncoder::new(f, flate2::Compression::fast());
                enc.write_all(&bytes).expect("gzip");
                enc.finish().expect("finish");
            } else {
                fs::write(dir.join(name), bytes).expect("write");
            }
        }
    }
}

#[test]
fn reads_plain_and_gzipped_idx() {
    for gz in [false, true] {
        let dir = scratch(if gz { "gz" } else { "plain" });
        write_tiny_set(&dir, 5, gz);
        let set = load_mnist_format(&dir, true).expect("load");
        assert_eq!((set.len(), set.rows, set.cols), (5, 2, 3));
        let (img, label) = set.item(2).expect("item");
        assert_eq!(img.shape, vec![2, 3, 1]);
        assert_eq!(img.values, vec![20.0, 21.0, 22.0, 23.0, 24.0, 25.0]);
        assert_eq!(label, 2);
        assert!(set.item(5).is_none());
    }
}

#[test]
fn locate_tries_the_root_then_the_environment_then_debian_and_names_them_all() {
    let root = scratch("locate-root");
    let env = scratch("locate-env");
    let debian = scratch("locate-debian");
    let err =
        locate_among(std::slice::from_ref(&root), Some(&env), &debian, true).expect_err("none");
    assert_eq!(
        err.to_string(),
        format!(
            "Fashion-MNIST's train-images-idx3-ubyte and train-labels-idx1-ubyte (plain or .gz) are in none of: {}, {} ($DEVARRAY_FASHION_MNIST), {} (the Debian package). devarray never downloads: install them with `apt-get install dataset-fashion-mnist`, or put the files from the Fashion-MNIST project in one of these places",
            root.display(),
            env.display(),
            debian.display()
        )
    );
    let err = locate_among(&[], None, &debian, false).expect_err("none");
    assert!(
        err.to_string().contains("t10k-images-idx3-ubyte and t10k-labels-idx1-ubyte (plain or .gz) are in none of: $DEVARRAY_FASHION_MNIST (not set), "),
        "{err}"
    );
    write_tiny_set(&debian, 3, false);
    assert_eq!(
        locate_among(std::slice::from_ref(&root), Some(&env), &debian, true).ok(),
        Some(debian.clone())
    );
    write_tiny_set(&env, 3, false);
    assert_eq!(
        locate_among(std::slice::from_ref(&root), Some(&env), &debian, true).ok(),
        Some(env.clone())
    );
    write_tiny_set(&root, 3, false);
    assert_eq!(
        locate_among(std::slice::from_ref(&root), Some(&env), &debian, true).ok(),
        Some(root)
    );
}

#[test]
fn missing_and_corrupt_files_say_where_and_how() {
    let dir = scratch("bad");
    let err = load_mnist_format(&dir, true).expect_err("missing");
    let DataError::Missing(msg) = &err else {
        panic!("expected Missing, got {err:?}")
    };
    assert!(msg.starts_with(&format!(
        "train-images-idx3-ubyte (or train-images-idx3-ubyte.gz) is not in {}. FashionMNIST expects the IDX files",
        dir.display()
    )));
    assert!(
        msg.contains("apt-get install dataset-fashion-mnist"),
        "{msg}"
    );
    assert!(msg.contains("DEVARRAY_FASHION_MNIST"), "{msg}");

    write_tiny_set(&dir, 4, false);
    // Truncate the images: the header promises more than there is.
    let path = dir.join("train-images-idx3-ubyte");
    let bytes = fs::read(&path).expect("read");
    fs::write(&path, &bytes[..bytes.len() - 1]).expect("write");
    let err = load_mnist_format(&dir, true).expect_err("truncated");
    assert!(
        err.to_string().starts_with(&format!(
            "{} is not a valid IDX file: the header promises [4, 2, 3] = 24 bytes of data but the file has 23 (truncated?)",
            path.display()
        )),
        "{err}"
    );

    // A broken gzip file.
    fs::remove_file(&path).expect("rm");
    fs::write(dir.join("train-images-idx3-ubyte.gz"), b"\x1f\x8bnot gzip").expect("write");
    let err = load_mnist_format(&dir, true).expect_err("bad gzip");
    assert!(
        err.to_string().contains("is not a valid gzip file"),
        "{err}"
    );

    // Wrong magic.
    let err = parse_idx(&[0, 0, 0x0d, 1, 0, 0, 0, 0], 1, Path::new("x")).expect_err("magic");
    assert_eq!(err, "x is not a valid IDX file: its header [00, 00, 0d, 01] is not that of a 1-d unsigned-byte file [00, 00, 08, 01]");
}

#[test]
fn transforms_and_batches() {
    let img = HostImage {
        shape: vec![1, 2, 2],
        values: vec![0.0, 255.0, 51.0, 102.0],
    };
    // H=1, W=2, C=2: the channels are interleaved per pixel and come out as planes.
    let t = Transform::ToTensor.apply(img).expect("to_tensor");
    assert_eq!(t.shape, vec![2, 1, 2]);
    assert!(Transform::ToTensor
        .apply(HostImage {
            shape: vec![1, 1, 2],
            values: vec![0.0; 3]
        })
        .is_err());
    assert_eq!(
        t.values
            .iter()
            .map(|v| (v * 255.0).round())
            .collect::<Vec<_>>(),
        vec![0.0, 51.0, 255.0, 102.0]
    );
    let n = Transform::Normalize {
        mean: vec![0.0, 1.0],
        std: vec![1.0, 0.5],
    }
    .apply(HostImage {
        shape: vec![2, 1, 1],
        values: vec![3.0, 3.0],
    })
    .expect("normalize");
    assert_eq!(n.values, vec![3.0, 4.0]);
    assert!(Transform::Normalize {
        mean: vec![0.0; 3],
        std: vec![1.0; 3]
    }
    .apply(HostImage {
        shape: vec![2, 1, 1],
        values: vec![0.0; 2]
    })
    .is_err());

    assert_eq!(
        batches(&[0, 1, 2, 3, 4], 2, true),
        vec![vec![0, 1], vec![2, 3], vec![4]]
    );
    assert_eq!(
        batches(&[0, 1, 2, 3, 4], 2, false),
        vec![vec![0, 1], vec![2, 3]]
    );

    let dir = scratch("batch");
    write_tiny_set(&dir, 5, false);
    let set = Arc::new(load_mnist_format(&dir, false).expect("load"));
    let b = prepare_batch(&set, &[4, 1], &[Transform::ToTensor]).expect("batch");
    assert_eq!(b.data.shape, vec![2, 1, 2, 3]);
    assert_eq!(b.labels, vec![4, 1]);
    assert!((b.data.values[0] - 40.0 / 255.0).abs() < 1e-7);

    // The worker delivers the same batches, in order.
    let plan = batches(&[0, 1, 2, 3, 4], 2, true);
    let rx = spawn_worker(set.clone(), vec![], plan.clone(), 1);
    let got: Vec<Vec<i32>> = rx.iter().map(|b| b.expect("batch").labels).collect();
    assert_eq!(got, vec![vec![0, 1], vec![2, 3], vec![4]]);
}
