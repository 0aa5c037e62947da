//! etcd: the lease lock over Raft (docs/semantics.md §3). The key space and the lessor are
//! the replicated state machine; the server applies raft entries to them; the client keeps a
//! session alive and runs the Mutex and Election recipes.

pub mod client;
pub mod lease;
pub mod mvcc;
pub mod proto;
pub mod server;
