//! lockstep-sim: the deterministic world that lockstep's models run in.
//!
//! One process, one thread, one `u64` seed: true time in integer nanoseconds, events ordered by
//! (time, sequence), per-node monotonic and wall clocks with drift, steps and slews, a network
//! with latency distributions, loss, duplication and partitions (drop or hold), pauses, crashes
//! and restarts, all as data driven from ChaCha8 streams forked from the seed. Every event is
//! folded into a stable trace hash.
//!
//! This crate knows nothing of locks or of the checker: models plug in through the
//! [`Process`] trait, see the world only through [`Env`], and record whatever history type they like. It must not read the host's
//! clocks, iterate hash maps, spawn threads or do IO.
//!
//! Start reading at [`world`]; then [`clock`], [`net`] and [`fault`].
#![deny(missing_docs)]

pub mod clock;
pub mod dist;
pub mod env;
pub mod fault;
pub mod net;
pub mod rng;
pub mod time;
pub mod trace;
pub mod world;

pub use clock::{ClockKind, Clocks};
pub use dist::Distribution;
pub use env::{Env, EnvOf};
pub use fault::{AppliedFault, Fault, ScheduledFault, Unfired, Unreached, When};
pub use net::{LinkConfig, PartitionMode, Shape, TcpConfig};
pub use rng::Rng;
pub use time::{Dur, LocalTime, Time};
pub use trace::{TraceEntry, TraceKind};
pub use world::{
    Ctx, Interrupt, NodeConfig, NodeId, Outcome, Process, Record, Status, TimerId, Watchdog, World,
    WorldConfig,
};
