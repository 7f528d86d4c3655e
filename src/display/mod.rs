//! Text and HTML rendering of values, and Python-style string formatting.
//!
//! Everything here takes plain data (slices, shapes, strings) so it does not
//! depend on the runtime's array types.
pub mod arrayprint;
pub mod error;
mod floatfmt;
pub mod html;
pub mod plot;
pub mod pyfmt;
pub mod pytrace;
pub mod timeline;
pub mod torch;

pub use arrayprint::{
    mxnet_legacy_repr, mxnet_np_repr, numpy_repr, numpy_str, ArrayView, HostValues,
};
pub use floatfmt::py_float_repr;
pub use html::{array_html, html_escape, table_html, table_text};
pub use pyfmt::{format_spec, percent_format, py_str_repr, FmtValue, FormatError};
pub use torch::{torch_repr, torch_repr_with};
