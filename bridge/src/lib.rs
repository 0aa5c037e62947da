//! Your own lock client under lockstep: hosts that speak real protocols over a simulated
//! async runtime's TCP, a recorder that writes lockstep's history from async code, and a
//! fault driver that plays a scenario's fault schedule as the runtime's own calls. The
//! history is judged by `lockstep_check::check`, the checker of every native run.
//!
//! Runtime-neutral pieces sit at the top ([`recorder`], [`protocol`], [`resp`],
//! [`keyspace`], [`plan`]); each runtime has its module behind its feature: [`turmoil`]
//! (`--features turmoil`). A `madsim` module is meant to sit beside it behind its own
//! feature, reusing everything above. See docs/bridge.md.

#![deny(missing_docs)]

pub mod keyspace;
pub mod plan;
pub mod protocol;
pub mod recorder;
pub mod resp;
#[cfg(feature = "turmoil")]
pub mod turmoil;

pub use plan::{Plan, PlanError};
pub use recorder::Recorder;
