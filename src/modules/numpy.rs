//! `import numpy as np`: NumPy's spelling of the array API on host arrays (cpu(0)), with NumPy's
//! defaults (float64, int64) and display (`array([1., 2.])`). `x.asnumpy()` / `x.numpy()` give
//! such arrays, and `nd.array(a)`, `np.array(a)` (MXNet), `torch.tensor(a)`,
//! `torch.from_numpy(a)` take them. Only the functions the array API shares with the other
//! dialects exist; any other name is an AttributeError that lists what there is.
//!
//! `numpy.random` is NumPy's legacy `RandomState` number for number (`numpy_random.rs`).

use std::rc::Rc;

use crate::object::error::ExcKind;
use crate::object::value::{Module, TypeKind};
use crate::object::Value;

use super::arrays::{self, NUMPY};

pub fn build(dotted: &str) -> Option<Rc<Module>> {
    match dotted {
        "numpy" => {
            let m = Rc::new(Module::new(
                "numpy",
                "NumPy's array API on host arrays (float64 and int64 by default)",
            ));
            arrays::fill_namespace::<NUMPY>(&m);
            m.set("ndarray", Value::Type(TypeKind::NumpyArray));
            m.set("pi", Value::Float(std::f64::consts::PI));
            m.set("e", Value::Float(std::f64::consts::E));
            m.set("inf", Value::Float(f64::INFINITY));
            m.set("nan", Value::Float(f64::NAN));
            m.set("newaxis", Value::None);
            m.set("__version__", Value::str("1.23.5 (devarray)"));
            m.set("random", Value::Module(super::numpy_random::build()));
            super::numpy_fns::install(&m);
            m.set("AxisError", Value::ExcType(ExcKind::AxisError));
            Some(m)
        }
        _ => None,
    }
}
