//! The counter loop (`kind = "counter"`, the default): think, acquire, one critical section
//! (claim on compare-and-set storage, read, work, check the lease, write `value + 1` with the
//! token), release, again. Every other kind is a variation of it.

use super::{Shared, Workload};
use crate::keys::{Check, NoKeys};

/// The counter loop, which takes no keys of its own.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counter;

impl Workload for Counter {
    const KIND: &'static str = "counter";
    const WHAT: &'static str = "the counter loop";
    type Keys = NoKeys;

    fn resolve(_: &NoKeys, _: &Shared, _: &mut Check) -> Counter {
        Counter
    }
}
