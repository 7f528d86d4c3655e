//! The long form of the public functions' documentation: parameters and an
//! example, in numpydoc's layout (as MXNet's, NumPy's and PyTorch's own docs
//! are written). The one-line doc each built-in carries gives the signature
//! and what it does; `help(f)`, `f?` and Shift+Tab all add this.

/// `Parameters` and `Example` sections for the public function or method
/// `name` (methods are documented on an array `x`).
pub fn extended(name: &str, method: bool) -> Option<String> {
    let creation_params = "shape : int or tuple of ints\n    The dimensions, e.g. (2, 3) (or 2, 3 as separate ints).\n\
ctx / device : Context, optional\n    Where the array lives: cpu(0) (default), gpu(0), ...; PyTorch spells it device='cuda:0'.\n\
dtype : str or dtype, optional\n    Element type, float32 by default.";
    let reduce = |what: &str| {
        format!(
            "Parameters\n----------\naxis : int or tuple of ints, optional\n    The axes to reduce; all of them by default.\n\
keepdims : bool, optional\n    Keep the reduced axes with length 1.\n\n\
Example\n-------\n>>> x = array([[1, 2], [3, 4]])\n>>> x.{what}(axis=0)"
        )
    };
    let unary = |what: &str| {
        if method {
            format!("Parameters\n----------\n(none: applies to x elementwise, on x's device)\n\nExample\n-------\n>>> x = array([1., 4.])\n>>> x.{what}()")
        } else {
            format!("Parameters\n----------\nx : array\n    Applied elementwise; the result is on x's device.\n\nExample\n-------\n>>> {what}(array([1., 4.]))")
        }
    };
    let text = match name {
        "ones" | "zeros" | "empty" => format!(
            "Parameters\n----------\n{creation_params}\n\nExample\n-------\n>>> {name}(2, 3, ctx=gpu(0))\n>>> nd.{name}((2, 3), ctx=mx.gpu(0))"
        ),
        "full" => format!(
            "Parameters\n----------\n{creation_params}\nfill_value : number\n    The value of every element.\n\nExample\n-------\n>>> full((2, 3), 7.0, ctx=gpu(0))"
        ),
        "array" | "tensor" => "Parameters\n----------\ndata : number, (nested) list or array\n    The values; ints give an integer array, floats float32.\n\
ctx / device : Context, optional\n    Where the array lives (cpu(0) by default).\n\
dtype : str or dtype, optional\n    Element type.\n\nExample\n-------\n>>> array([[1, 2], [3, 4]], ctx=gpu(0))".to_string(),
        "arange" => "Parameters\n----------\nstart : number, optional\n    First value (0 by default).\nstop : number\n    End, not included.\n\
step : number, optional\n    Spacing (1 by default).\nctx / device, dtype : optional\n    As for ones().\n\nExample\n-------\n>>> arange(0, 10, 2)".to_string(),
        "eye" => "Parameters\n----------\nN : int\n    Rows.\nM : int, optional\n    Columns (N by default).\nctx / device, dtype : optional\n    As for ones().\n\nExample\n-------\n>>> eye(3, ctx=gpu(0))".to_string(),
        "ones_like" | "zeros_like" | "empty_like" | "full_like" | "rand_like" | "randn_like" if !method => format!(
            "Parameters\n----------\nx : array\n    The result has x's shape, and its dtype and device unless given.\n{}\
dtype : dtype, optional\n    The element type (x's by default).\ndevice / ctx : optional\n    Where the result lives (x's device by default).\n\nExample\n-------\n>>> {name}(torch.ones(2, 3){}, dtype=torch.float64)",
            if name == "full_like" { "fill_value : number\n    The value of every element.\n" } else { "" },
            if name == "full_like" { ", 7" } else { "" }
        ),
        "ones_like" | "zeros_like" => format!(
            "Parameters\n----------\n(none: the result has x's shape, dtype and device)\n\nExample\n-------\n>>> x.{name}()"
        ),
        "concat" | "concatenate" | "cat" | "stack" => format!(
            "Parameters\n----------\narrays : arrays (or a list of them)\n    All on one device, shapes equal except along the axis.\n\
axis / dim : int, optional\n    The axis to join along ({}).\n\nExample\n-------\n>>> {name}(ones(2, 3), zeros(2, 3))",
            if name == "stack" { "a new axis, 0 by default" } else { "0 by default; MXNet's nd.concat uses dim=1" }
        ),
        "dot" | "matmul" => format!(
            "Parameters\n----------\na, b : arrays\n    On the same device; the inner dimensions must agree.\n\nExample\n-------\n>>> {}",
            if method { "x.dot(ones(3, 2))".to_string() } else { format!("{name}(ones(2, 3), ones(3, 2))") }
        ),
        "reshape" => format!(
            "Parameters\n----------\nshape : ints or a tuple of ints\n    The new dimensions; one may be -1 (inferred).\n\nExample\n-------\n>>> {}",
            if method { "arange(6).reshape(2, 3)" } else { "reshape(arange(6), (2, 3))" }
        ),
        "transpose" => "Parameters\n----------\naxes : ints, optional\n    The new order of the axes (reversed by default).\n\nExample\n-------\n>>> ones(2, 3).transpose()".to_string(),
        "sum" | "mean" | "max" | "min" | "prod" | "argmax" | "argmin" if method => reduce(name),
        "sum" | "mean" | "max" | "min" | "prod" | "argmax" | "argmin" => format!(
            "Parameters\n----------\nx : array (or, for the Python built-in, an iterable)\n    What to reduce.\n\
axis : int or tuple of ints, optional\n    The axes to reduce; all of them by default.\n\nExample\n-------\n>>> {name}(array([[1, 2], [3, 4]]), axis=0)"
        ),
        "exp" | "log" | "sqrt" | "relu" | "sigmoid" | "tanh" | "square" | "abs" => unary(name),
        "maximum" | "minimum" => format!(
            "Parameters\n----------\na, b : arrays or numbers\n    Broadcast together; arrays on one device.\n\nExample\n-------\n>>> {name}(array([1, 5]), 3)"
        ),
        "clip" => "Parameters\n----------\na_min, a_max : numbers or None\n    The bounds (None: unbounded on that side).\n\nExample\n-------\n>>> array([-2., 0.5, 3.]).clip(0, 1)".to_string(),
        "norm" => "Parameters\n----------\nord : 2, optional\n    Only the L2 (Frobenius) norm.\naxis : int or tuple, optional\n    Reduce only these axes.\n\
keepdims : bool, optional\n    Keep reduced axes with length 1.\n\nExample\n-------\n>>> array([3., 4.]).norm()".to_string(),
        "waitall" => "Parameters\n----------\n(none)\n\nExample\n-------\n>>> y = ones(1000, 1000) @ gpu(0)\n>>> waitall()   # every device has finished its queued work".to_string(),
        "uniform" => "Parameters\n----------\nlow, high : numbers, optional\n    The interval [low, high); 0 and 1 by default.\nshape : int or tuple\n    The dimensions.\n\
ctx / device, dtype : optional\n    As for ones().\n\nExample\n-------\n>>> nd.random.uniform(-1, 1, shape=(2, 3), ctx=mx.gpu(0))".to_string(),
        "normal" => "Parameters\n----------\nloc, scale : numbers, optional\n    Mean and standard deviation; 0 and 1 by default.\nshape : int or tuple\n    The dimensions.\n\
ctx / device, dtype : optional\n    As for ones().\n\nExample\n-------\n>>> nd.random.normal(0, 0.01, shape=(3, 2))".to_string(),
        "seed" => "Parameters\n----------\nn : int\n    The seed; every device's generator is reseeded, so samples reproduce.\n\nExample\n-------\n>>> mx.random.seed(42)".to_string(),
        "rand" | "randn" => format!(
            "Parameters\n----------\n*shape : ints\n    The dimensions.\n\nExample\n-------\n>>> {name}(2, 3)"
        ),
        "gpu" | "cpu" if !method => format!(
            "Parameters\n----------\ni : int, optional\n    The device's index, 0 by default.\n\nExample\n-------\n>>> x = ones(2, 3, ctx={name}(0))"
        ),
        "try_gpu" => "Parameters\n----------\ni : int, optional\n    The GPU wanted, 0 by default.\n\nExample\n-------\n>>> x = ones(2, 3, ctx=try_gpu())   # gpu(0), or cpu(0) without GPUs".to_string(),
        "try_all_gpus" => "Parameters\n----------\n(none)\n\nExample\n-------\n>>> ctxs = try_all_gpus()   # [gpu(0), gpu(1)], or [cpu(0)]".to_string(),
        "num_gpus" => "Parameters\n----------\n(none)\n\nExample\n-------\n>>> num_gpus()".to_string(),
        "devices" => "Parameters\n----------\n(none)\n\nExample\n-------\n>>> devices()   # a table: memory, live arrays and copies per device".to_string(),
        "print" => "Parameters\n----------\n*values : any\n    Written as str() does, separated by sep.\nsep : str, optional\n    Between values (' ').\n\
end : str, optional\n    After the last value ('\\n').\nfile : sys.stdout or sys.stderr, optional\n\nExample\n-------\n>>> print('x is', ones(2))".to_string(),
        "len" => "Parameters\n----------\nobj : sized object\n    A list, str, dict, or an array (the length of its first axis).\n\nExample\n-------\n>>> len(ones(4, 2))".to_string(),
        "range" => "Parameters\n----------\nstart : int, optional\nstop : int\nstep : int, optional\n\nExample\n-------\n>>> list(range(0, 10, 3))".to_string(),
        "help" => "Parameters\n----------\nobj : any, optional\n    What to document (the same report as obj? and Shift+Tab).\n\nExample\n-------\n>>> help(ones)".to_string(),
        "display" => "Parameters\n----------\n*objs : any\n    Each shown as its rich form (HTML in a notebook).\n\nExample\n-------\n>>> display(ones(2, 3))".to_string(),
        "copyto" => "Parameters\n----------\nother : Context or array\n    A device (a new array there, always new memory) or an array to copy into.\n\nExample\n-------\n>>> y = x.copyto(gpu(1))".to_string(),
        "as_in_context" | "as_in_ctx" => format!(
            "Parameters\n----------\nctx : Context\n    The device wanted; x itself when it is already there (no copy).\n\nExample\n-------\n>>> y = x.{name}(gpu(0))"
        ),
        "to" => "Parameters\n----------\ndevice : torch.device or str, optional\n    'cuda:0', 'cpu', ...; self when already there.\ndtype : torch dtype, optional\n\nExample\n-------\n>>> y = x.to('cuda:0')".to_string(),
        "cuda" | "cpu" => format!(
            "Parameters\n----------\n{}\n\nExample\n-------\n>>> y = x.{name}()",
            if name == "cuda" { "device : int, optional\n    The GPU's index, 0 by default." } else { "(none)" }
        ),
        "asnumpy" | "numpy" => format!(
            "Parameters\n----------\n(none: copies x to the host, waiting for its pending work)\n\nExample\n-------\n>>> x.{name}()"
        ),
        "asscalar" | "item" => format!(
            "Parameters\n----------\n(none: x must have one element)\n\nExample\n-------\n>>> ones(1).{name}()"
        ),
        "astype" => "Parameters\n----------\ndtype : str or dtype\n    The new element type.\n\nExample\n-------\n>>> arange(3).astype('int32')".to_string(),
        "attach_grad" => "Parameters\n----------\n(none: gradients of x are then kept in x.grad)\n\nExample\n-------\n>>> x.attach_grad()\n>>> with autograd.record():\n...     y = (x * x).sum()\n>>> y.backward()".to_string(),
        "backward" => "Parameters\n----------\n(none: fills .grad of every array that called attach_grad)\n\nExample\n-------\n>>> y.backward()".to_string(),
        "copy" | "detach" | "flatten" | "tolist" | "wait_to_read" => format!(
            "Parameters\n----------\n(none)\n\nExample\n-------\n>>> x.{name}()"
        ),
        "expand_dims" => "Parameters\n----------\naxis : int\n    Where the new axis of length 1 goes.\n\nExample\n-------\n>>> ones(3).expand_dims(0).shape".to_string(),
        "device" if !method => "Parameters\n----------\ntype : str\n    'cpu', 'cuda' or 'cuda:i'.\nindex : int, optional\n    The GPU's index.\n\nExample\n-------\n>>> torch.device('cuda:1')".to_string(),
        "is_tensor" => "Parameters\n----------\nobj : any\n\nExample\n-------\n>>> torch.is_tensor(torch.ones(2))".to_string(),
        "manual_seed" => "Parameters\n----------\nn : int\n    The seed; every device's generator is reseeded (PyTorch's CPU generator included, so torch.rand and torch.randn give PyTorch's numbers).\n\nExample\n-------\n>>> torch.manual_seed(0)".to_string(),
        "mm" => "Parameters\n----------\na, b : 2-d tensors\n    On the same device; a's columns must equal b's rows.\n\nExample\n-------\n>>> torch.mm(torch.ones(2, 3), torch.ones(3, 2))".to_string(),
        "size" if method => "Parameters\n----------\ndim : int, optional\n    One axis (negative counts from the end); the whole shape as torch.Size without it.\n\nExample\n-------\n>>> torch.ones(2, 3).size(), torch.ones(2, 3).size(-1)".to_string(),
        "numel" | "dim" => format!(
            "Parameters\n----------\n(none)\n\nExample\n-------\n>>> {}",
            if method { format!("torch.ones(2, 3).{name}()") } else { format!("torch.{name}(torch.ones(2, 3))") }
        ),
        "view" => "Parameters\n----------\n*shape : ints or a tuple\n    The new dimensions (one may be -1); the result shares x's memory.\n\nExample\n-------\n>>> y = x.view(2, -1)\n>>> y[0, 0] = 7   # x changes too".to_string(),
        "clone" => "Parameters\n----------\n(none: a copy in new memory on x's device; gradients flow back to x)\n\nExample\n-------\n>>> y = x.clone()".to_string(),
        "cumsum" => format!(
            "Parameters\n----------\naxis / dim : int, optional\n    The axis to accumulate along; the flattened array when None.\ndtype : dtype, optional\n    The type to sum in.\n\nExample\n-------\n>>> {}",
            if method { "arange(6).reshape(2, 3).cumsum(axis=0)" } else { "cumsum(arange(6).reshape(2, 3), axis=1)" }
        ),
        "new_ones" | "new_zeros" | "new_empty" | "new_full" | "new_tensor" => format!(
            "Parameters\n----------\n{}\ndtype, device : optional\n    x's dtype and device by default.\n\nExample\n-------\n>>> x.{name}({})",
            if name == "new_tensor" { "data : number or nested lists" } else if name == "new_full" { "size : ints or a tuple\nfill_value : number" } else { "size : ints or a tuple" },
            if name == "new_tensor" { "[1, 2]" } else if name == "new_full" { "(2, 3), 7" } else { "(2, 3)" }
        ),
        "add" | "subtract" | "multiply" | "divide" | "power" | "sub" | "mul" | "div" | "pow" | "true_divide" => format!(
            "Parameters\n----------\n{}\nalpha : number, optional\n    (add/sub) other is scaled by alpha first.\nout : array, optional\n    Write the result into this array and return it.\n\nExample\n-------\n>>> {}",
            if method { "other : array or number" } else { "x1, x2 : arrays or numbers\n    Broadcast together, arrays on one device." },
            if method { format!("x.{name}(2)") } else { format!("{name}(ones(2, 3), 2)") }
        ),
        "mv" => "Parameters\n----------\ninput : 2-d tensor\nvec : 1-d tensor\n    Its length is input's number of columns.\n\nExample\n-------\n>>> torch.mv(torch.ones(2, 3), torch.ones(3))".to_string(),
        "synchronize" => "Parameters\n----------\ndevice : optional\n    Accepted for PyTorch's spelling; every device is waited for.\n\nExample\n-------\n>>> torch.cuda.synchronize()".to_string(),
        "save" if !method => "Parameters\n----------\nfile / fname / f : str\n    The file to write (written to a temporary file beside it, then renamed over it).\n\
arr / data / obj : array, list, dict\n    npx.save and nd.save: an array, a list of arrays or a dict str -> array.\n    \
torch.save: tensors, numbers, strings, None and lists, tuples, dicts and OrderedDicts of them.\n\n\
The file is safetensors; the containers are kept in its metadata (README, \"Files\").\n\n\
Example\n-------\n>>> npx.save('x.params', {'w': np.ones(3)})\n>>> torch.save(net.state_dict(), 'net.pt')".to_string(),
        "load" if !method => "Parameters\n----------\nfile / fname / f : str\n    A file written by npx.save, nd.save, torch.save or save_parameters.\n\
map_location : device, str, dict or function, optional (torch.load only)\n    Where tensors go: torch.device('cpu'), 'cuda:1', {'cuda:1': 'cuda:0'}, or\n    fn(tensor, location) returning a tensor. By default each goes back to its saved device.\n\n\
npx.load and nd.load return a list of arrays or a dict str -> array; torch.load returns the\n\
object saved. The whole file is checked before anything is returned.\n\n\
Example\n-------\n>>> npx.load('x.params')\n>>> torch.load('net.pt', map_location='cpu')".to_string(),
        _ => return None,
    };
    Some(text)
}

#[cfg(test)]
mod tests {
    use super::extended;

    #[test]
    fn core_functions_have_parameters_and_an_example() {
        for name in [
            "ones",
            "zeros",
            "array",
            "arange",
            "full",
            "copyto",
            "as_in_context",
            "asnumpy",
            "try_gpu",
            "try_all_gpus",
            "num_gpus",
            "sum",
            "dot",
            "reshape",
            "print",
            "len",
        ] {
            for method in [false, true] {
                if let Some(doc) = extended(name, method) {
                    assert!(doc.starts_with("Parameters\n----------\n"), "{name}");
                    assert!(doc.contains("\n\nExample\n-------\n>>> "), "{name}");
                }
            }
            assert!(
                extended(name, false).is_some() || extended(name, true).is_some(),
                "{name}"
            );
        }
    }
}
