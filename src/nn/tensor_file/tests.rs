use super::*;
use crate::runtime::{Device, Runtime, RuntimeConfig};
use std::path::PathBuf;

const HINT: Hint = Hint {
    what: "array file",
    how: "torch.save(obj, path)",
};

/// A per-test scratch directory (tests run in parallel).
fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("devarray-tfile-{}-{name}", std::process::id()));
    let _ = fs::remove_dir_all(&dir);
    fs::create_dir_all(&dir).expect("scratch dir");
    dir
}

#[test]
fn every_dtype_round_trips_in_file_order_with_metadata() {
    let dir = scratch("dtypes");
    let path = dir.join("all.safetensors");
    let tensors = vec![
        HostTensor {
            name: "z".into(),
            shape: vec![2],
            data: HostData::F32(vec![1.5, -2.0]),
        },
        HostTensor {
            name: "a".into(),
            shape: vec![],
            data: HostData::F64(vec![f64::NAN]),
        },
        HostTensor {
            name: "i".into(),
            shape: vec![1, 2],
            data: HostData::I32(vec![-1, 7]),
        },
        HostTensor {
            name: "l".into(),
            shape: vec![0, 3],
            data: HostData::I64(vec![]),
        },
        HostTensor {
            name: "b".into(),
            shape: vec![3],
            data: HostData::Bool(vec![true, false, true]),
        },
    ];
    let meta = HashMap::from([(FORMAT_KEY.to_string(), "test".to_string())]);
    write(&path, &tensors, meta.clone()).expect("write");
    let file = read(&path, HINT).expect("read");
    assert_eq!(file.metadata, meta);
    assert_eq!(file.tensors.len(), 5);
    for t in &tensors {
        let got = file.get(&t.name).expect("present");
        assert_eq!(got.shape, t.shape);
        match (&got.data, &t.data) {
            (HostData::F64(g), HostData::F64(w)) => assert!(g[0].is_nan() && w[0].is_nan()),
            (g, w) => assert_eq!(g, w),
        }
    }
    // No temp file is left beside the target.
    assert_eq!(fs::read_dir(&dir).expect("dir").count(), 1);
}

#[test]
fn arrays_on_a_simulated_gpu_are_saved_and_named() {
    let rt = Runtime::new(RuntimeConfig {
        sim_gpus: 1,
        ..RuntimeConfig::default()
    });
    let a = rt
        .from_host(HostData::F32(vec![1.0, 2.0, 3.0]), &[3], Device::gpu(0))
        .expect("on gpu");
    let dir = scratch("gpu");
    let path = dir.join("x.safetensors");
    save_named(&path, &[("w".into(), a)], HashMap::new()).expect("save");
    let back = load_named(&path, HINT).expect("load");
    assert_eq!(
        back,
        vec![HostTensor {
            name: "w".into(),
            shape: vec![3],
            data: HostData::F32(vec![1.0, 2.0, 3.0])
        }]
    );
}

#[test]
fn bad_files_are_refused_with_the_hint() {
    let dir = scratch("bad");
    let junk = dir.join("junk");
    fs::write(&junk, b"hello world, not safetensors").expect("write");
    let err = read(&junk, HINT).expect_err("junk");
    assert!(matches!(err, TensorFileError::Invalid(_)));
    let msg = err.to_string();
    assert!(
        msg.contains("is not a valid array file (safetensors)"),
        "{msg}"
    );
    assert!(
        msg.ends_with("save it again with torch.save(obj, path)"),
        "{msg}"
    );

    // An 8-bit float array: valid safetensors, but not a dtype devarray has.
    let half = dir.join("half");
    let bytes = [0u8; 2];
    let view = TensorView::new(Dtype::F8_E4M3, vec![2], &bytes).expect("view");
    let encoded = safetensors::serialize(vec![("h", view)], None).expect("encode");
    fs::write(&half, encoded).expect("write");
    let err = read(&half, HINT).expect_err("f8");
    assert!(err.to_string().ends_with("array 'h' cannot be read: it is stored as F8_E4M3; devarray reads bool, the integers, float16/32/64 and bfloat16"), "{err}");

    // A bool byte other than 0 or 1.
    let weird = dir.join("weird");
    let bytes = [0u8, 2];
    let view = TensorView::new(Dtype::BOOL, vec![2], &bytes).expect("view");
    fs::write(
        &weird,
        safetensors::serialize(vec![("b", view)], None).expect("encode"),
    )
    .expect("write");
    let err = read(&weird, HINT).expect_err("bool");
    assert!(
        err.to_string().ends_with("a bool holds the byte 2"),
        "{err}"
    );

    let err = read(&dir.join("missing"), HINT).expect_err("missing");
    assert!(matches!(err, TensorFileError::NotFound(_)));
}
