//! Backends: where array bytes live and kernels run. (Being written.)
