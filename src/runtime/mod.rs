//! Devices, arrays, dtypes and op dispatch. (Being written.)
