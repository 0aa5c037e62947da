//! pgbouncer between the clients and the server (pgbouncer's feature table, where
//! session-level advisory locks "never" work in transaction pooling; its `pool_mode`,
//! `default_pool_size`, `server_round_robin`, `server_reset_query`).
//!
//! Clients connect to pgbouncer; pgbouncer keeps up to `pool_size` connections to the server
//! and hands one to a client for as long as its pool mode says:
//!
//! - `session`: from the client's first statement until it disconnects; then pgbouncer runs
//!   `DISCARD ALL` on it (the default `server_reset_query`), which ends the session's advisory
//!   locks, and the connection goes back to the pool. Session locks behave as without
//!   pgbouncer.
//! - `transaction`: for one transaction: a statement outside a transaction block, or a block
//!   from `BEGIN` to `COMMIT`/`ROLLBACK`. No reset query runs between clients. A session lock
//!   stays on the server connection it was taken on: an unlock that lands on another one
//!   returns false and the lock leaks, and a client whose try-lock lands on the one that holds
//!   it is granted it too (the lock is re-entrant for its backend).
//!
//! An idle server connection is taken last-in first-out (`server_round_robin = 0`, the
//! default) or in turn (`1`). A client with no connection free waits in line. A client that
//! disconnects while its server connection is in a statement or in a transaction block loses
//! that server connection: pgbouncer closes it, and the server rolls back and frees its locks.
//! A server connection that is lost ends its client's connection.

use std::collections::{BTreeMap, VecDeque};

use lockstep_sim::NodeId;

use super::server::{Keepalive, Probe, Probing};
use super::{Conn, Msg, Stmt, Timer};
use crate::env::Host;

/// `pool_mode`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PoolMode {
    /// A server connection per client connection.
    Session,
    /// A server connection per transaction.
    Transaction,
}

/// pgbouncer's settings.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BouncerConfig {
    /// The server.
    pub server: NodeId,
    /// `pool_mode`.
    pub mode: PoolMode,
    /// `default_pool_size` (20).
    pub pool_size: u32,
    /// `server_round_robin`.
    pub round_robin: bool,
    /// TCP keepalive of its client connections (`tcp_keepalive = 1` with the OS defaults).
    pub keepalive: Keepalive,
}

#[derive(Clone, Debug, PartialEq, Eq)]
struct Client {
    server: Option<u32>,
    next_seq: u32,
    early: BTreeMap<u32, (u64, Stmt)>,
    queue: VecDeque<(u64, Stmt)>,
    busy: bool,
    probing: Probing,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Server {
    client: Option<Conn>,
    in_txn: bool,
    /// Statements sent on it.
    sent: u32,
}

/// A statement pgbouncer forwarded: for which client (none for its own `DISCARD ALL`), the
/// client's request id, on which server connection.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Forwarded {
    client: Option<Conn>,
    id: u64,
    server: u32,
    stmt: Stmt,
}

/// pgbouncer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Bouncer {
    config: BouncerConfig,
    next_conn: u32,
    servers: BTreeMap<u32, Server>,
    idle: VecDeque<u32>,
    clients: BTreeMap<Conn, Client>,
    waiting: VecDeque<Conn>,
    inflight: BTreeMap<u64, Forwarded>,
    next_id: u64,
    opened: BTreeMap<NodeId, u32>,
}

impl Bouncer {
    /// pgbouncer with an empty pool.
    pub fn new(config: BouncerConfig) -> Bouncer {
        Bouncer {
            config,
            next_conn: 0,
            servers: BTreeMap::new(),
            idle: VecDeque::new(),
            clients: BTreeMap::new(),
            waiting: VecDeque::new(),
            inflight: BTreeMap::new(),
            next_id: 0,
            opened: BTreeMap::new(),
        }
    }

    pub(crate) fn on_message(&mut self, env: &mut impl Host<Msg, Timer>, from: NodeId, msg: Msg) {
        if from == self.config.server {
            self.on_server(env, msg);
            return;
        }
        match msg {
            Msg::Query {
                conn,
                seq,
                id,
                stmt,
            } => {
                let c = (from, conn);
                if !self.clients.contains_key(&c) {
                    let opened = self.opened.entry(from).or_insert(0);
                    if conn <= *opened {
                        env.send(from, Msg::Close { conn });
                        return;
                    }
                    *opened = conn;
                    let probing = Probing::new(env.mono());
                    self.clients.insert(
                        c,
                        Client {
                            server: None,
                            next_seq: 1,
                            early: BTreeMap::new(),
                            queue: VecDeque::new(),
                            busy: false,
                            probing,
                        },
                    );
                }
                self.heard(env, c);
                let client = self.clients.get_mut(&c).expect("a client");
                if seq < client.next_seq {
                    return; // a duplicate
                }
                client.early.insert(seq, (id, stmt));
                while let Some(next) = client.early.remove(&client.next_seq) {
                    client.next_seq += 1;
                    if next.1 == Stmt::Terminate {
                        self.close_client(env, c);
                        return;
                    }
                    client.queue.push_back(next);
                }
                self.pump(env, c);
            }
            Msg::ProbeAck { conn, alive } => {
                let c = (from, conn);
                if self.clients.contains_key(&c) {
                    if alive {
                        self.heard(env, c);
                    } else {
                        self.close_client(env, c);
                    }
                }
            }
            Msg::Close { conn } => {
                if self.clients.contains_key(&(from, conn)) {
                    self.close_client(env, (from, conn));
                }
            }
            // Its kernel answers (`PgNode::kernel_answer`).
            Msg::Probe { .. } => {}
            Msg::Answer { .. } | Msg::Wal(_) => {}
        }
    }

    fn heard(&mut self, env: &mut impl Host<Msg, Timer>, c: Conn) {
        let ka = self.config.keepalive;
        if let Some(client) = self.clients.get_mut(&c) {
            client.probing.heard(env, ka, c);
        }
    }

    /// Sends `c`'s next statement, on its server connection or one it gets now.
    fn pump(&mut self, env: &mut impl Host<Msg, Timer>, c: Conn) {
        let Some(client) = self.clients.get(&c) else {
            return;
        };
        if client.busy || client.queue.is_empty() {
            return;
        }
        let s = match client.server {
            Some(s) => s,
            None => {
                let taken = if self.config.round_robin {
                    self.idle.pop_front()
                } else {
                    self.idle.pop_back()
                };
                let s = match taken {
                    Some(s) => s,
                    None if (self.servers.len() as u64) < u64::from(self.config.pool_size) => {
                        self.next_conn += 1;
                        self.servers.insert(
                            self.next_conn,
                            Server {
                                client: None,
                                in_txn: false,
                                sent: 0,
                            },
                        );
                        self.next_conn
                    }
                    None => {
                        if !self.waiting.contains(&c) {
                            self.waiting.push_back(c);
                        }
                        return;
                    }
                };
                self.servers.get_mut(&s).expect("a server connection").client = Some(c);
                s
            }
        };
        let client = self.clients.get_mut(&c).expect("a client");
        client.server = Some(s);
        let (id, stmt) = client.queue.pop_front().expect("a statement");
        client.busy = true;
        self.forward(
            env,
            Forwarded {
                client: Some(c),
                id,
                server: s,
                stmt,
            },
        );
    }

    fn forward(&mut self, env: &mut impl Host<Msg, Timer>, f: Forwarded) {
        self.next_id += 1;
        self.inflight.insert(self.next_id, f);
        let id = self.next_id;
        self.send(env, f.server, id, f.stmt);
    }

    /// Sends `stmt` on server connection `s`, in its turn.
    fn send(&mut self, env: &mut impl Host<Msg, Timer>, s: u32, id: u64, stmt: Stmt) {
        let Some(server) = self.servers.get_mut(&s) else {
            return;
        };
        server.sent += 1;
        let msg = Msg::Query {
            conn: s,
            seq: server.sent,
            id,
            stmt,
        };
        env.send(self.config.server, msg);
    }

    fn on_server(&mut self, env: &mut impl Host<Msg, Timer>, msg: Msg) {
        match msg {
            Msg::Answer { id, answer, .. } => {
                let Some(f) = self.inflight.remove(&id) else {
                    return;
                };
                let Some(server) = self.servers.get_mut(&f.server) else {
                    return;
                };
                server.in_txn = match f.stmt {
                    Stmt::Begin | Stmt::Lock { begin: true, .. } | Stmt::Dequeue { .. } => true,
                    Stmt::Commit | Stmt::Rollback | Stmt::DiscardAll | Stmt::Complete { .. } => {
                        false
                    }
                    _ => server.in_txn,
                };
                let in_txn = server.in_txn;
                let Some(c) = f.client else {
                    // Its own `DISCARD ALL`: the connection is clean again.
                    self.release(env, f.server);
                    return;
                };
                match self.clients.get_mut(&c) {
                    Some(client) => {
                        client.busy = false;
                        env.send(
                            c.0,
                            Msg::Answer {
                                conn: c.1,
                                id: f.id,
                                answer,
                            },
                        );
                        if self.config.mode == PoolMode::Transaction && !in_txn {
                            client.server = None;
                            self.release(env, f.server);
                        }
                        self.pump(env, c);
                    }
                    None if in_txn => self.close_server(env, f.server),
                    None => self.release(env, f.server),
                }
            }
            Msg::Probe { .. } => {}
            Msg::Close { conn } => self.server_lost(env, conn),
            Msg::Query { .. } | Msg::ProbeAck { .. } | Msg::Wal(_) => {}
        }
    }

    /// Whether `conn` from `from` is one of its open server connections (what its kernel
    /// knows when the server probes it).
    pub(crate) fn knows_server_conn(&self, from: NodeId, conn: u32) -> bool {
        from == self.config.server && self.servers.contains_key(&conn)
    }

    /// Server connection `s` is free: back in the pool, to the first client waiting.
    fn release(&mut self, env: &mut impl Host<Msg, Timer>, s: u32) {
        if let Some(server) = self.servers.get_mut(&s) {
            server.client = None;
            self.idle.push_back(s);
        }
        while let Some(c) = self.waiting.pop_front() {
            if self.clients.get(&c).is_some_and(|cl| cl.server.is_none()) {
                self.pump(env, c);
                return;
            }
        }
    }

    /// pgbouncer closes server connection `s`.
    fn close_server(&mut self, env: &mut impl Host<Msg, Timer>, s: u32) {
        self.send(env, s, 0, Stmt::Terminate);
        self.forget_server(s);
    }

    fn forget_server(&mut self, s: u32) {
        self.servers.remove(&s);
        self.idle.retain(|x| *x != s);
        self.inflight.retain(|_, f| f.server != s);
    }

    /// The server ended connection `s` (or all of them): its client's statement fails, and
    /// the client's connection is closed.
    fn server_lost(&mut self, env: &mut impl Host<Msg, Timer>, s: u32) {
        let Some(server) = self.servers.get(&s).copied() else {
            return;
        };
        self.forget_server(s);
        if let Some(c) = server.client
            && let Some(client) = self.clients.remove(&c)
        {
            let mut probing = client.probing;
            probing.cancel(env);
            self.waiting.retain(|x| *x != c);
            env.send(c.0, Msg::Close { conn: c.1 });
        }
    }

    /// Client connection `c` is gone.
    fn close_client(&mut self, env: &mut impl Host<Msg, Timer>, c: Conn) {
        let Some(mut client) = self.clients.remove(&c) else {
            return;
        };
        client.probing.cancel(env);
        self.waiting.retain(|x| *x != c);
        let Some(s) = client.server else {
            return;
        };
        let in_txn = self.servers.get(&s).is_some_and(|x| x.in_txn);
        if client.busy || in_txn {
            self.close_server(env, s);
        } else if self.config.mode == PoolMode::Session {
            if let Some(server) = self.servers.get_mut(&s) {
                server.client = None;
            }
            self.forward(
                env,
                Forwarded {
                    client: None,
                    id: 0,
                    server: s,
                    stmt: Stmt::DiscardAll,
                },
            );
        } else {
            self.release(env, s);
        }
    }

    pub(crate) fn on_timer(&mut self, env: &mut impl Host<Msg, Timer>, timer: Timer) {
        if let Timer::KeepAlive(c) = timer {
            let ka = self.config.keepalive;
            let Some(client) = self.clients.get_mut(&c) else {
                return;
            };
            match client.probing.fired(env, ka, c) {
                Probe::Wait => {}
                // A keepalive probe is a bare segment, never retransmitted.
                Probe::Send => env.send_datagram(c.0, Msg::Probe { conn: c.1 }),
                Probe::Dead => self.close_client(env, c),
            }
        }
    }

    pub(crate) fn on_crash(&mut self) {
        let config = self.config;
        let next_conn = self.next_conn;
        *self = Bouncer::new(config);
        // A new process opens new connections (new ports).
        self.next_conn = next_conn;
    }

    pub(crate) fn on_reset(&mut self, env: &mut impl Host<Msg, Timer>, peer: NodeId) {
        if peer == self.config.server {
            let all: Vec<u32> = self.servers.keys().copied().collect();
            for s in all {
                self.server_lost(env, s);
            }
            return;
        }
        let gone: Vec<Conn> = self.clients.keys().filter(|c| c.0 == peer).copied().collect();
        for c in gone {
            self.close_client(env, c);
        }
    }
}
