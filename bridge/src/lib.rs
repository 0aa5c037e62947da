//! Your own lock client under lockstep: hosts that speak real protocols over a simulated
//! async runtime's TCP, a recorder that writes lockstep's history from async code, and a
//! fault driver that plays a scenario's fault schedule as the runtime's own calls. The
//! history is judged by `lockstep_check::check`, the checker of every native run.
//!
//! Runtime-neutral pieces sit at the top ([`recorder`], [`protocol`], [`resp`],
//! [`keyspace`], [`plan`]; with a runtime, the example client and the hosts written once
//! against [`sim::Sim`]); each runtime has its module behind its feature: `turmoil`
//! (`--features turmoil`). A `madsim` module is meant to sit beside it. See docs/bridge.md.

#![deny(missing_docs)]

#[cfg(feature = "turmoil")]
pub mod client;
#[cfg(feature = "turmoil")]
pub mod hosts;
pub mod keyspace;
#[cfg(feature = "turmoil")]
pub mod marks;
pub mod plan;
pub mod protocol;
pub mod recorder;
pub mod resp;
#[cfg(feature = "turmoil")]
pub mod sim;
#[cfg(feature = "turmoil")]
pub mod turmoil;

pub use plan::{Plan, PlanError, Runtime};
pub use recorder::Recorder;
