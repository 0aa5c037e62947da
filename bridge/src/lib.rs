//! Your own lock client under lockstep: hosts that speak real protocols over a simulated
//! async runtime's TCP, a recorder that writes lockstep's history from async code, and a
//! fault driver that plays a scenario's fault schedule as the runtime's own calls. The
//! history is judged by `lockstep_check::check`, the checker of every native run.
//!
//! Runtime-neutral pieces sit at the top ([`recorder`], [`protocol`], [`resp`],
//! [`keyspace`], [`plan`]; with a runtime, the example client and the hosts written once
//! against [`sim::Sim`]); each runtime has its module behind its feature: `turmoil`
//! (`--features turmoil`) and `madsim` (`--features madsim`, built with
//! `RUSTFLAGS="--cfg madsim"`). See docs/bridge.md.

#![deny(missing_docs)]

// (Not in doctests: rustdoc reads RUSTDOCFLAGS, not RUSTFLAGS; the crate has no doctest.)
#[cfg(all(feature = "madsim", not(madsim), not(doctest)))]
compile_error!(
    "the `madsim` feature simulates only when the whole build has `--cfg madsim`; build it in \
     its own target directory: RUSTFLAGS=\"--cfg madsim\" cargo test -p lockstep-bridge \
     --features madsim --target-dir target/madsim"
);

#[cfg(any(feature = "turmoil", all(feature = "madsim", madsim)))]
pub mod client;
#[cfg(any(feature = "turmoil", all(feature = "madsim", madsim)))]
pub mod hosts;
pub mod keyspace;
#[cfg(all(feature = "madsim", madsim))]
pub mod madsim;
#[cfg(any(feature = "turmoil", all(feature = "madsim", madsim)))]
pub mod marks;
pub mod plan;
pub mod protocol;
pub mod recorder;
pub mod resp;
#[cfg(any(feature = "turmoil", all(feature = "madsim", madsim)))]
pub mod sim;
#[cfg(feature = "turmoil")]
pub mod turmoil;

pub use plan::{Plan, PlanError, Runtime};
pub use recorder::Recorder;
