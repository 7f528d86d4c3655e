//! The paths a training loop takes through the runtime, checked against the plain ones: a small
//! convolutional network trained for a few steps prints the same losses on a simulated GPU as on
//! the CPU (both run their kernels on a thread per core, so every kernel splits its work the same
//! way), and the same with the reuse of large buffers turned off (`backend/cpu/pool.rs`) as with
//! it on (a step's im2col matrices come back from the pool, holding the last step's values).

use snapbox::cmd::{cargo_bin, Command};

/// Three SGD steps of conv-bn-relu (twice), max and average pooling and a dense layer on a batch
/// of 8 one-channel 32x32 images: each 3x3 convolution's patch matrix is 4.7 MB, above the
/// pool's 4 MiB. Prints the losses, and whether gpu(0) gives exactly the same ones.
const PROGRAM: &str = r#"
import torch
from torch import nn
def run(device):
    torch.manual_seed(0)
    net = nn.Sequential(nn.Conv2d(1, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(),
                        nn.Conv2d(16, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(),
                        nn.MaxPool2d(2), nn.AdaptiveAvgPool2d((1, 1)), nn.Flatten(),
                        nn.Linear(16, 10)).to(device)
    opt = torch.optim.SGD(net.parameters(), lr=0.5)
    X = torch.randn(8, 1, 32, 32)
    y = torch.arange(8) % 10
    losses = []
    for _ in range(3):
        l = nn.functional.cross_entropy(net(X.to(device)), y.to(device))
        opt.zero_grad()
        l.backward()
        opt.step()
        losses.append(l.item())
    return losses
on_cpu = run('cpu')
print([f'{l:.9g}' for l in on_cpu])
print(on_cpu == run('cuda:0'), on_cpu == run('cpu'))
"#;

fn train(buffer_reuse: bool) -> String {
    let mut cmd = Command::new(cargo_bin!("devarray"))
        .env("NO_COLOR", "1")
        .env("DEVARRAY_SIM_GPUS", "2")
        .env_remove("DEVARRAY_SIM_GPU_THREADS")
        .env_remove("RAYON_NUM_THREADS")
        .args(["-c", PROGRAM]);
    cmd = if buffer_reuse {
        cmd.env_remove("DEVARRAY_NO_BUFFER_REUSE")
    } else {
        cmd.env("DEVARRAY_NO_BUFFER_REUSE", "1")
    };
    let out = cmd.output().expect("run devarray");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("utf-8 output")
}

#[test]
fn a_simulated_gpu_trains_exactly_as_the_cpu_and_reused_buffers_change_nothing() {
    let reused = train(true);
    let lines: Vec<&str> = reused.lines().collect();
    assert_eq!(lines.len(), 2, "{reused}");
    assert_eq!(
        lines[1], "True True",
        "gpu(0) or a second run differs:\n{reused}"
    );
    assert_eq!(reused, train(false), "buffer reuse changed the losses");
}
