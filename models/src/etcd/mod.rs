//! etcd: the lease lock over Raft (docs/semantics.md §3). The key space and the lessor are
//! the replicated state machine; the server applies raft entries to them; the client keeps a
//! session alive and runs the Mutex and Election recipes. The protected resource may live in
//! the key space too, written by guarded transactions ([`resource`]). Each member keeps an
//! owner audit ([`crate::audit`]): the key first in line in its applied state, recorded as
//! `Issued` with the key's create revision, which the client's grant names as its ticket.

pub mod client;
pub mod lease;
pub mod mvcc;
pub mod proto;
pub mod resource;
pub mod server;
