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
