//! lockstep-check: history types and the checker (history -> verdict).
//!
//! The checker reads a [`History`] and nothing else, so it can judge histories from real
//! systems as well as from the simulator. It must not depend on the simulator (`lockstep-sim`)
//! nor on any lock model: the dependency direction is in ARCHITECTURE.md.
//!
//! Start reading at [`history`] (the events), then [`check`] (the definitions, as
//! `docs/checker.md` states them), then [`verdict`] (what a check returns; [`Verdict::explain`]
//! turns it into sentences).
//!
//! The checker decides with integers only (nanoseconds, parts per million) and iterates only
//! ordered collections, so one history always gives one verdict, byte for byte. A history it
//! cannot judge is a [`HistoryError`], never a panic and never a verdict.
#![deny(missing_docs)]

mod checker;
mod explain;
pub mod history;
pub mod jsonl;
pub mod metrics;
mod text;
pub mod verdict;

pub use checker::{
    HistoryError, Options, acquire_latencies_ns, acquire_waits_ns, acquire_waits_split_ns, check,
    leadership_failovers_ns, nested_waits_ns, queue_lags_ns, read_write_waits_ns, tick_lateness_ns,
    time_waiting_ns,
};
pub use history::{
    Entry, Event, ExitReason, Fault, FaultKind, GrantId, History, NodeId, OpId, OpKind, OpOutcome,
    StorageOp,
};
pub use metrics::{METRICS, Metric, metric};
pub use verdict::*;
