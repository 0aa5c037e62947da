//! lockstep: a deterministic simulation and chaos-test harness for distributed locks and
//! leader election.
//!
//! This package holds what touches the outside world: the scenario files ([`scenario`]), chaos
//! profiles ([`chaos`]), one run of a scenario ([`run`]), expectations ([`expect`]), checking
//! many scenarios over many seeds ([`suite`]) and its JUnit XML ([`junit`]), one scenario over
//! many seeds on several threads and the merge of its shards ([`sweep`], with its [`stats`],
//! on the worker threads of [`pool`]),
//! a scenario over a grid of its parameters ([`sweepmap`]), designs compared side by side
//! ([`report`]), shrinking a failing fault schedule ([`shrink`]) and hunting for one
//! ([`hunt`]), judging a history file ([`judge`]), the files the commands write ([`files`]),
//! and the command line (the `lockstep` binary). The simulator, the models, the checker and the
//! reports are the crates `lockstep-sim`, `lockstep-models`, `lockstep-check` and
//! `lockstep-reports`; the map and the rules between them are in ARCHITECTURE.md.
#![deny(missing_docs)]

pub mod chaos;
pub mod expect;
pub mod families;
pub mod files;
pub mod hunt;
pub mod judge;
pub mod junit;
pub mod pool;
pub mod report;
pub mod review;
pub mod run;
pub mod scenario;
pub mod shrink;
pub mod stats;
pub mod suite;
pub mod sweep;
pub mod sweepmap;
pub mod timeline;
pub mod trace;

pub use expect::{Expect, MetricBound};
pub use run::{RunResult, run, run_schedule};
pub use scenario::{Loaded, MAX_SEEDS, Scenario, ScenarioError, Schedule, Seeds, load, parse};
pub use suite::{SuiteResult, check_suite};
