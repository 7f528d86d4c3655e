//! Device identity: a plain value type. Creating one never fails (`gpu(10)` is a fine value);
//! only allocating on a device the runtime does not have is an error (see `Runtime::check_device`).
use std::fmt;

#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum DeviceKind {
    Cpu,
    Gpu,
}

#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub struct Device {
    pub kind: DeviceKind,
    pub id: usize,
}

impl Device {
    pub fn cpu(id: usize) -> Self {
        Device {
            kind: DeviceKind::Cpu,
            id,
        }
    }

    pub fn gpu(id: usize) -> Self {
        Device {
            kind: DeviceKind::Gpu,
            id,
        }
    }

    pub fn is_cpu(self) -> bool {
        self.kind == DeviceKind::Cpu
    }
}

impl fmt::Display for Device {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let kind = match self.kind {
            DeviceKind::Cpu => "cpu",
            DeviceKind::Gpu => "gpu",
        };
        write!(f, "{kind}({})", self.id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn display_and_equality() {
        assert_eq!(Device::cpu(0).to_string(), "cpu(0)");
        assert_eq!(Device::gpu(1).to_string(), "gpu(1)");
        assert_eq!(Device::gpu(0), Device::gpu(0));
        assert_ne!(Device::gpu(0), Device::gpu(1));
        assert_ne!(Device::gpu(0), Device::cpu(0));
    }
}
