//! What a Redis server keeps across a crash (Redis's persistence docs; `aof.c`, `rdb.c`):
//! nothing, the last RDB snapshot, or its append-only file, split into what reached the disk
//! (fsynced) and what is only in the operating system's page cache (written, not yet fsynced).
//!
//! The AOF is modelled by the dataset it replays to, not by its commands: replaying `SET ..
//! PXAT`, `PEXPIREAT` and `DEL` in order yields exactly the dataset after the last of them, and
//! a restarted server only ever sees that result. `write()` of `aof_buf` happens in
//! `beforeSleep` before the replies go out, so the page-cache image is updated with every
//! write. The postponed-write case of `everysec` (a background fsync still running,
//! `aof.c:1108-1127`) is not modelled: a process crash never loses an acknowledged write here.

use std::cmp::Ordering;
use std::fmt;

use lockstep_sim::Dur;

use super::Key;
use super::server::Entry;

/// A dataset: every key with its value and absolute deadline, in key order.
///
/// A server holds a handful of keys (the lock's, the fencing counter, a `keys` workload's
/// locks), so they are kept in a vector sorted by key rather than a `BTreeMap`: a lookup of
/// a key made from the same `&'static str` (every key is: [`super::LOCK_KEY`],
/// [`super::FENCE_KEY`], [`super::lock_key`]) is a pointer comparison, and emptying and
/// refilling the dataset, as every acquisition and release does, allocates nothing. It
/// compares, hashes and prints exactly as the `BTreeMap<Key, Entry>` of the same entries
/// (the length, then each key and entry in key order), so messages carrying a dataset hash
/// into a trace as they always did.
#[derive(Default, PartialEq, Eq, Hash)]
pub struct Db {
    /// The entries, sorted by key, each key once.
    entries: Vec<(Key, Entry)>,
}

/// `a.cmp(b)`, at once when both are the same string in memory.
#[inline]
fn key_cmp(a: Key, b: Key) -> Ordering {
    if std::ptr::eq(a, b) {
        Ordering::Equal
    } else {
        a.cmp(b)
    }
}

impl Db {
    /// An empty dataset.
    pub(crate) fn new() -> Db {
        Db::default()
    }

    #[inline]
    fn find(&self, key: Key) -> Result<usize, usize> {
        self.entries.binary_search_by(|&(k, _)| key_cmp(k, key))
    }

    /// The entry under `key`.
    #[inline]
    pub(crate) fn get(&self, key: Key) -> Option<&Entry> {
        self.find(key).ok().map(|i| &self.entries[i].1)
    }

    /// The entry under `key`, to change.
    #[inline]
    pub(crate) fn get_mut(&mut self, key: Key) -> Option<&mut Entry> {
        self.find(key).ok().map(|i| &mut self.entries[i].1)
    }

    /// Sets `key` to `entry`, replacing what was there.
    pub(crate) fn insert(&mut self, key: Key, entry: Entry) {
        match self.find(key) {
            Ok(i) => self.entries[i].1 = entry,
            Err(i) => self.entries.insert(i, (key, entry)),
        }
    }

    /// Deletes `key`.
    pub(crate) fn remove(&mut self, key: Key) {
        if let Ok(i) = self.find(key) {
            self.entries.remove(i);
        }
    }

    /// Deletes every key.
    pub(crate) fn clear(&mut self) {
        self.entries.clear();
    }

    /// Keeps only the entries `keep` says yes to.
    pub(crate) fn retain(&mut self, mut keep: impl FnMut(Key, &Entry) -> bool) {
        self.entries.retain(|(k, e)| keep(k, e));
    }
}

impl Clone for Db {
    fn clone(&self) -> Db {
        Db {
            entries: self.entries.clone(),
        }
    }

    /// Keeps `self`'s allocation (the AOF images follow the dataset after every write).
    fn clone_from(&mut self, source: &Db) {
        self.entries.clone_from(&source.entries);
    }
}

impl fmt::Debug for Db {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_map()
            .entries(self.entries.iter().map(|(k, e)| (k, e)))
            .finish()
    }
}

/// One RDB save point: snapshot when at least `changes` writes happened and more than
/// `seconds` passed since the last save (`save <seconds> <changes>`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct SavePoint {
    /// Seconds since the last save, on the server's wall clock (`server.unixtime`).
    pub seconds: u64,
    /// Writes since the last save (`server.dirty`).
    pub changes: u64,
}

/// The save points Redis uses when the configuration names none (`server.c:2123-2125`).
pub const DEFAULT_SAVE_POINTS: [SavePoint; 3] = [
    SavePoint {
        seconds: 3600,
        changes: 1,
    },
    SavePoint {
        seconds: 300,
        changes: 100,
    },
    SavePoint {
        seconds: 60,
        changes: 10_000,
    },
];

/// `serverCron` runs `hz` times a second; the default `hz` is 10 (`server.h:100`).
pub const SERVER_CRON_PERIOD: Dur = Dur::from_millis(100);

/// `appendfsync everysec` fsyncs the AOF when at least this long has passed since the last
/// fsync (`flushAppendOnlyFile`: `server.mstime - server.aof_last_fsync >= 1000`).
pub const AOF_FSYNC_PERIOD: Dur = Dur::from_secs(1);

/// How a server persists its dataset.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Persistence {
    /// `save ""`, `appendonly no`: a crash loses every key.
    None,
    /// RDB snapshots at the save points; a restart loads the last snapshot.
    Rdb {
        /// The save points, checked by `serverCron`.
        save: Vec<SavePoint>,
    },
    /// `appendonly yes`, `appendfsync everysec`: fsync right after a write when the last
    /// fsync is a second old or more, else as soon as it is.
    AofEverysec,
    /// `appendonly yes`, `appendfsync always`: write and fsync before the replies.
    AofAlways,
}

/// What a crash of the server takes with it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum CrashLoses {
    /// The process dies; the operating system survives, and with it the page cache: every
    /// AOF write that reached `write()` is kept.
    #[default]
    Process,
    /// The machine loses power (or the kernel crashes): only what was fsynced survives.
    Power,
}

/// The server's files and the page cache in front of them.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Disk {
    /// The last completed RDB snapshot.
    pub(crate) rdb: Option<Db>,
    /// The AOF as fsynced to the disk.
    pub(crate) aof_synced: Db,
    /// The AOF as written: the synced part plus the page cache.
    pub(crate) aof_written: Db,
}

impl Disk {
    /// What survives a crash of the given kind.
    pub(crate) fn crash(&mut self, loses: CrashLoses) {
        if loses == CrashLoses::Power {
            self.aof_written.clone_from(&self.aof_synced);
        }
    }

    /// A write reached `write()` (every AOF mode) and, with `always`, `fsync()`.
    pub(crate) fn append(&mut self, persistence: &Persistence, db: &Db) {
        match persistence {
            Persistence::None | Persistence::Rdb { .. } => {}
            Persistence::AofEverysec => self.aof_written.clone_from(db),
            Persistence::AofAlways => {
                self.aof_written.clone_from(db);
                self.aof_synced.clone_from(db);
            }
        }
    }

    /// An fsync of the AOF: everything written is on the disk.
    pub(crate) fn fsync(&mut self) {
        self.aof_synced.clone_from(&self.aof_written);
    }

    /// Nothing written waits for an fsync.
    pub(crate) fn synced(&self) -> bool {
        self.aof_synced == self.aof_written
    }

    /// The dataset a restarted server loads, before expired keys are judged: RDB load on a
    /// primary drops keys already past their deadline (`rdb.c:3579-3605`); AOF replay keeps
    /// them until they are touched, which changes no reply.
    pub(crate) fn load(&self, persistence: &Persistence) -> Db {
        match persistence {
            Persistence::None => Db::new(),
            Persistence::Rdb { .. } => self.rdb.clone().unwrap_or_default(),
            Persistence::AofEverysec | Persistence::AofAlways => self.aof_written.clone(),
        }
    }
}

/// True when the save point is due (`serverCron`: `dirty >= changes && unixtime - lastsave >
/// seconds`).
pub(crate) fn save_due(save: &[SavePoint], dirty: u64, secs_since_save: i64) -> bool {
    save.iter()
        .any(|sp| dirty >= sp.changes && secs_since_save > sp.seconds as i64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_save_points_are_redis_defaults() {
        let pairs: Vec<(u64, u64)> = DEFAULT_SAVE_POINTS
            .iter()
            .map(|sp| (sp.seconds, sp.changes))
            .collect();
        assert_eq!(pairs, vec![(3600, 1), (300, 100), (60, 10_000)]);
        assert_eq!(SERVER_CRON_PERIOD, Dur::from_millis(100), "hz 10");
        assert_eq!(AOF_FSYNC_PERIOD, Dur::from_secs(1));
    }

    #[test]
    fn a_save_point_needs_both_its_changes_and_more_than_its_seconds() {
        let save = DEFAULT_SAVE_POINTS;
        assert!(!save_due(&save, 1, 3600), "strictly more than 3600 s");
        assert!(save_due(&save, 1, 3601));
        assert!(!save_due(&save, 0, 100_000), "nothing changed");
        assert!(!save_due(&save, 99, 301));
        assert!(save_due(&save, 100, 301));
        assert!(save_due(&save, 10_000, 61));
    }
}
