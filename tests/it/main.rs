//! Integration tests of the `lockstep` package: one binary, one module per subject.

mod architecture;
mod bounds;
mod catalogue;
mod chaos;
mod check_cmd;
mod cli;
mod consul_timing;
mod fault_keys;
mod fuzz;
mod hunt;
mod judge;
mod kubernetes_keys;
mod leadership;
mod outputs;
mod report;
mod scenario_errors;
mod seed_ranges;
mod service_order;
mod shrink;
mod support;
mod sweep_cmd;
mod sweepmap;
mod tidy;
mod timeline;
mod triggers;
mod workload_keys;
