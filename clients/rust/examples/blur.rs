//! The blur example of examples/kernels/blur/rust, built here so this crate's tests run it.
include!("../../../examples/kernels/blur/rust/src/main.rs");
