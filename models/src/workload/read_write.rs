//! Readers and writers of one read-write lock (`kind = "read-write"`).
//!
//! The first `writers` clients (`client-1` ...) are writers, the rest readers, for the whole
//! run: the seed's question is "many readers or one writer", and fixed roles make a writer
//! starved by a stream of readers show as one long wait. Both run the counter loop (think,
//! acquire, read, work, release) on their own side of the lock ([`crate::Access`]); a
//! reader records `Shared` before each `Request`, which makes its grant a reader's for the
//! checker (readers share), and leaves after its work without writing; a writer writes
//! `value + 1` as the counter loop does. A family's client decides what the two sides are:
//! etcd's `recipes.RWMutex`, Curator's `InterProcessReadWriteLock`.

use serde::Deserialize;

use super::{Needs, Shared, Workload};
use crate::keys::Check;
use crate::lock::Access;

/// How a read-write workload's clients are split.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ReadWriteConfig {
    /// How many of the clients write (the first ones); the others read.
    pub writers: u32,
}

impl ReadWriteConfig {
    /// The side of client `index` (1-based, as in its name `client-<index>`).
    pub fn access_of(&self, index: u32) -> Access {
        if index <= self.writers {
            Access::Write
        } else {
            Access::Read
        }
    }
}

/// A read-write lock's `[workload]` keys.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReadWriteKeys {
    /// How many of the clients write (the first ones); 1 when absent.
    writers: Option<u32>,
}

impl Workload for ReadWriteConfig {
    const KIND: &'static str = "read-write";
    const WHAT: &'static str = "a read-write lock";
    const RECORDS: &'static [&'static str] = &["shared"];
    const MEASURES: &'static [&'static str] = &["read_write"];
    const NEEDS: Needs = Needs {
        read_write: true,
        storage_node: true,
        shared_storage: true,
        ..Needs::NONE
    };
    type Keys = ReadWriteKeys;

    /// The first `writers` clients write (1 when absent), the rest read; at least one writes.
    fn resolve(keys: &ReadWriteKeys, shared: &Shared, check: &mut Check) -> ReadWriteConfig {
        let writers = keys.writers.unwrap_or(1);
        if !(1..=shared.clients).contains(&writers) {
            check.problems.push(
                "workload.writers",
                format!(
                    "must be between 1 and workload.clients ({}): the first clients write and \
                     the others read, not {writers}",
                    shared.clients
                ),
            );
        }
        ReadWriteConfig {
            writers: writers.clamp(1, shared.clients.max(1)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_clients_write_and_the_rest_read() {
        let rw = ReadWriteConfig { writers: 2 };
        let sides: Vec<Access> = (1..=4).map(|i| rw.access_of(i)).collect();
        assert_eq!(
            sides,
            [Access::Write, Access::Write, Access::Read, Access::Read]
        );
    }
}
