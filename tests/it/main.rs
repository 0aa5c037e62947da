//! Integration tests of the `lockstep` package: one binary, one module per subject.

mod architecture;
mod catalogue;
mod check_cmd;
mod cli;
mod scenario_errors;
mod support;
mod sweep_cmd;
mod tidy;
