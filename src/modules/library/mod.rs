//! Libraries written in devarray's own language. In the real world they are Python code that
//! only orchestrates the frameworks (the book's `d2l`), so here they are source files, kept in
//! this folder, compiled into the binary with `include_str!` and run on first import like any
//! module (`crate::modules::import`): their top-level names become the module's attributes and
//! their functions keep that module as their globals (`Interpreter::run_module`). They reach
//! other modules only through `import` statements, so this folder names no other layer, and
//! `obj??` shows their source as it shows a program's own.
//!
//! Adding one: put `NAME.da` (or `PACKAGE/__init__.da` and `PACKAGE/SUB.da`) here and list it
//! in `SOURCES`.

/// One module written in the language.
pub struct SourceModule {
    /// The dotted name it is imported by (`d2l.torch`).
    pub name: &'static str,
    /// Its path under `src/modules/library/`.
    pub file: &'static str,
    pub text: &'static str,
}

macro_rules! source {
    ($name:literal, $file:literal) => {
        SourceModule {
            name: $name,
            file: $file,
            text: include_str!($file),
        }
    };
}

pub const SOURCES: &[SourceModule] = &[
    source!("argparse", "argparse.da"),
    source!("io", "io.da"),
    source!("contextlib", "contextlib.da"),
    source!("pathlib", "pathlib.da"),
    source!("fnmatch", "fnmatch.da"),
    source!("glob", "glob.da"),
    source!("shutil", "shutil.da"),
    source!("tempfile", "tempfile.da"),
    source!("datetime", "datetime.da"),
    source!("timeit", "timeit.da"),
    source!("logging", "logging.da"),
    source!("enum", "enum.da"),
    source!("abc", "abc.da"),
    source!("types", "types.da"),
    source!("numbers", "numbers.da"),
    source!("heapq", "heapq.da"),
    source!("bisect", "bisect.da"),
    source!("statistics", "statistics.da"),
    source!("textwrap", "textwrap.da"),
    source!("pprint", "pprint.da"),
    source!("csv", "csv.da"),
    source!("binascii", "binascii.da"),
    source!("base64", "base64.da"),
    source!("uuid", "uuid.da"),
    source!("queue", "queue.da"),
    source!("threading", "threading.da"),
    source!("weakref", "weakref.da"),
    source!("atexit", "atexit.da"),
    source!("errno", "errno.da"),
    source!("struct", "struct.da"),
    source!("gzip", "gzip.da"),
    source!("pickle", "pickle.da"),
    source!("fileinput", "fileinput.da"),
    source!("d2l", "d2l/__init__.da"),
    source!("d2l.torch", "d2l/torch.da"),
    source!("d2l.mxnet", "d2l/mxnet.da"),
    source!("torch.jit", "torch/jit/__init__.da"),
    source!("torch.jit._script", "torch/jit/_script.da"),
    source!("torch.jit._trace", "torch/jit/_trace.da"),
    source!("torch.jit.frontend", "torch/jit/frontend.da"),
    source!("torch.nn.parallel.data_parallel", "torch/data_parallel.da"),
    source!("torch.nn._more", "torch/nn_more.da"),
    source!("torch.nn._functional_more", "torch/functional_more.da"),
    source!("mxnet.gluon.nn._more", "mxnet/gluon_nn_more.da"),
    source!("mxnet.gluon.rnn", "mxnet/gluon_rnn.da"),
    source!("mxnet.numpy_extension._more", "mxnet/npx_more.da"),
    source!("mxnet.gluon.data._more", "mxnet/gluon_data_more.da"),
    source!("mxnet.gluon.loss._more", "mxnet/gluon_loss.da"),
    source!("numpy._more", "numpy/more.da"),
];

/// The library module named `dotted`, if it is one.
pub fn find(dotted: &str) -> Option<&'static SourceModule> {
    SOURCES.iter().find(|s| s.name == dotted)
}
