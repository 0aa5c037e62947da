//! A job queue's workers (`kind = "queue"`): each client takes a job (its lock client's
//! acquire is the dequeue), works on it, records it done and commits it, again. The history
//! holds jobs, not grants (see the module's documentation, "A job queue's workers").

use super::{Needs, Shared, Workload};
use crate::keys::{Check, NoKeys};

/// A job queue's workers, which take no keys of their own.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Queue;

impl Workload for Queue {
    const KIND: &'static str = "queue";
    const WHAT: &'static str = "a job queue's workers";
    const RECORDS: &'static [&'static str] = &["dequeued", "done"];
    const MEASURES: &'static [&'static str] = &["queue"];
    const NEEDS: Needs = Needs {
        dequeues: true,
        ..Needs::NONE
    };
    type Keys = NoKeys;

    fn resolve(_: &NoKeys, _: &Shared, _: &mut Check) -> Queue {
        Queue
    }
}
