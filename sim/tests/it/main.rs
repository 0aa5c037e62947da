//! Integration tests of the world: one binary, one module per subject.

mod clocks;
mod connections;
mod determinism;
mod faults;
mod network;
mod roles;
mod support;
