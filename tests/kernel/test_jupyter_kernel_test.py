"""The official jupyter_kernel_test conformance suite, configured for devarray.

Every test of the suite runs (none is skipped). Not included: IopubWelcomeTests,
a separate class for kernels on an XPUB socket (JEP 65); the kernel publishes on
a plain PUB socket.
"""

from __future__ import annotations

import jupyter_kernel_test


class DevarrayKernelTests(jupyter_kernel_test.KernelTests):
    kernel_name = "devarray"
    language_name = "devarray"
    file_extension = ".dva"

    code_hello_world = 'print("hello, world")'
    code_stderr = 'import sys\nprint("a warning", file=sys.stderr)'

    completion_samples = [
        {"text": "num_gp", "matches": {"num_gpus"}},
        {"text": "try_all_g", "matches": {"try_all_gpus"}},
    ]

    complete_code_samples = [
        "x = 1",
        "print(x)",
        "ones(2, 3) @ gpu(0)",
        "from mxnet import nd",
    ]
    incomplete_code_samples = [
        "for i in range(3):",
        "def f(x):",
        "x = [1,",
        "y = (2 +",
    ]
    invalid_code_samples = [
        "x = )",
        "ones(2, 3))",
    ]

    code_generate_error = "undefined_name_for_the_test"

    code_execute_result = [
        {"code": "1 + 2", "result": "3"},
        {
            "code": "ones(2, 3)",
            "result": "\n[[1. 1. 1.]\n [1. 1. 1.]]\n<NDArray 2x3 @cpu(0)>",
        },
        {"code": "ones(2, 3)", "mime": "text/html"},
        {"code": "devices()", "mime": "text/html"},
    ]

    code_display_data = [
        {"code": "display(ones(2, 3))", "mime": "text/plain"},
        {"code": "display(ones(2, 3))", "mime": "text/html"},
    ]

    # Matches exactly one distinct input of code_execute_result ("1 + 2").
    code_history_pattern = "1 + ?"
    supported_history_operations = ("tail", "range", "search")

    code_inspect_sample = "ones"

    # `ones?` pages the help, as IPython's `?` does.
    code_page_something = "ones?"

    code_clear_output = "clear_output()"
