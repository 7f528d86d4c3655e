//! Runtime errors. Each message names the problem and the way out; `ename` is the exception class
//! the language shows for it.
use super::device::Device;
use thiserror::Error;

#[derive(Debug, Clone, PartialEq, Error)]
pub enum RuntimeError {
    #[error("{op}: inputs are on different devices: the first is on {first}, the second on {second}. Move one explicitly, e.g. x.copyto({second}) or y.as_in_context({first})")]
    DeviceMismatch {
        op: String,
        first: Device,
        second: Device,
    },
    #[error("{}", no_such_device_message(*device, *num_gpus))]
    NoSuchDevice { device: Device, num_gpus: usize },
    #[error("{}", out_of_memory_message(*device, *requested, *free, *total, *setting))]
    OutOfMemory {
        device: Device,
        requested: u64,
        free: u64,
        total: u64,
        /// The environment variable that sets this device's budget, when a user can raise it.
        setting: Option<&'static str>,
    },
    #[error("{0}")]
    Shape(String),
    #[error("{0}")]
    DType(String),
    #[error("{0}")]
    Index(String),
    #[error("{0}")]
    Value(String),
    /// A parameter used before it holds data where it is asked for (MXNet raises these as
    /// RuntimeError, which programs catch: `except RuntimeError`).
    #[error("{0}")]
    Uninitialized(String),
    /// A blocking wait for device work gave up because the user interrupted it; the work
    /// itself carries on, so every array stays valid.
    #[error("")]
    Interrupted,
}

impl RuntimeError {
    /// The exception class name the language reports.
    pub fn ename(&self) -> &'static str {
        match self {
            RuntimeError::DeviceMismatch { .. } | RuntimeError::NoSuchDevice { .. } => {
                "DeviceError"
            }
            RuntimeError::OutOfMemory { .. } => "OutOfMemoryError",
            RuntimeError::Shape(_) => "ShapeError",
            RuntimeError::DType(_) => "TypeError",
            RuntimeError::Index(_) => "IndexError",
            RuntimeError::Value(_) => "ValueError",
            RuntimeError::Uninitialized(_) => "RuntimeError",
            RuntimeError::Interrupted => "KeyboardInterrupt",
        }
    }
}

pub type Result<T> = std::result::Result<T, RuntimeError>;

fn no_such_device_message(device: Device, num_gpus: usize) -> String {
    let head = format!("{device} does not exist: this machine has ");
    let fallback = format!("try_gpu({}) falls back to cpu(0)", device.id);
    match num_gpus {
        0 => format!(
            "{head}no GPU; {fallback}. To simulate GPUs, start devarray with --sim-gpus 2 or set DEVARRAY_SIM_GPUS=2"
        ),
        1 => format!("{head}1 GPU (gpu(0)); {fallback}"),
        n => {
            let list: Vec<String> = (0..n).map(|i| format!("gpu({i})")).collect();
            format!("{head}{n} GPUs ({}); {fallback}", list.join(", "))
        }
    }
}

fn out_of_memory_message(
    device: Device,
    requested: u64,
    free: u64,
    total: u64,
    setting: Option<&'static str>,
) -> String {
    let head = format!(
        "out of memory on {device}: cannot allocate {}, only {} of {} is free. Free arrays you no longer need (del x)",
        human_bytes(requested),
        human_bytes(free),
        human_bytes(total)
    );
    match setting {
        Some(name) => format!("{head}, use a smaller shape, or raise {name}"),
        None => format!("{head} or use a smaller shape"),
    }
}

/// Sizes as people read them: "512 bytes", "1.5 GiB", "4 GiB".
pub fn human_bytes(bytes: u64) -> String {
    const UNITS: [&str; 6] = ["KiB", "MiB", "GiB", "TiB", "PiB", "EiB"];
    if bytes < 1024 {
        return if bytes == 1 {
            "1 byte".to_string()
        } else {
            format!("{bytes} bytes")
        };
    }
    let mut value = bytes as f64 / 1024.0;
    let mut unit = 0;
    while value >= 1024.0 && unit + 1 < UNITS.len() {
        value /= 1024.0;
        unit += 1;
    }
    let text = format!("{value:.1}");
    let text = text.strip_suffix(".0").unwrap_or(&text);
    format!("{text} {}", UNITS[unit])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn device_mismatch_message() {
        let e = RuntimeError::DeviceMismatch {
            op: "add".into(),
            first: Device::cpu(0),
            second: Device::gpu(0),
        };
        assert_eq!(
            e.to_string(),
            "add: inputs are on different devices: the first is on cpu(0), the second on gpu(0). Move one explicitly, e.g. x.copyto(gpu(0)) or y.as_in_context(cpu(0))"
        );
        assert_eq!(e.ename(), "DeviceError");
    }

    #[test]
    fn no_such_device_messages() {
        let e = |n| {
            RuntimeError::NoSuchDevice {
                device: Device::gpu(10),
                num_gpus: n,
            }
            .to_string()
        };
        assert_eq!(
            e(2),
            "gpu(10) does not exist: this machine has 2 GPUs (gpu(0), gpu(1)); try_gpu(10) falls back to cpu(0)"
        );
        assert_eq!(
            e(1),
            "gpu(10) does not exist: this machine has 1 GPU (gpu(0)); try_gpu(10) falls back to cpu(0)"
        );
        assert_eq!(
            e(0),
            "gpu(10) does not exist: this machine has no GPU; try_gpu(10) falls back to cpu(0). To simulate GPUs, start devarray with --sim-gpus 2 or set DEVARRAY_SIM_GPUS=2"
        );
    }

    #[test]
    fn out_of_memory_message_uses_human_sizes() {
        let e = RuntimeError::OutOfMemory {
            device: Device::gpu(0),
            requested: 6 << 30,
            free: 3 << 29,
            total: 4 << 30,
            setting: None,
        };
        assert_eq!(
            e.to_string(),
            "out of memory on gpu(0): cannot allocate 6 GiB, only 1.5 GiB of 4 GiB is free. Free arrays you no longer need (del x) or use a smaller shape"
        );
        assert_eq!(e.ename(), "OutOfMemoryError");
    }

    #[test]
    fn out_of_memory_names_the_setting_that_raises_the_budget() {
        let e = RuntimeError::OutOfMemory {
            device: Device::cpu(0),
            requested: 8 << 20,
            free: 1 << 20,
            total: 64 << 20,
            setting: Some("DEVARRAY_CPU_MEMORY"),
        };
        assert_eq!(
            e.to_string(),
            "out of memory on cpu(0): cannot allocate 8 MiB, only 1 MiB of 64 MiB is free. Free arrays you no longer need (del x), use a smaller shape, or raise DEVARRAY_CPU_MEMORY"
        );
    }

    #[test]
    fn human_sizes() {
        assert_eq!(human_bytes(0), "0 bytes");
        assert_eq!(human_bytes(1), "1 byte");
        assert_eq!(human_bytes(1536), "1.5 KiB");
        assert_eq!(human_bytes(u64::MAX), "16 EiB");
    }

    #[test]
    fn enames() {
        assert_eq!(RuntimeError::Shape(String::new()).ename(), "ShapeError");
        assert_eq!(RuntimeError::DType(String::new()).ename(), "TypeError");
        assert_eq!(RuntimeError::Index(String::new()).ename(), "IndexError");
        assert_eq!(RuntimeError::Value(String::new()).ename(), "ValueError");
    }
}
