//! The PostgreSQL family: the server `postgres`, optionally `pgbouncer` in front of it (group
//! `poolers`), and one lock client per workload client (docs/families/postgres.md).

use lockstep_sim::{Dur, NodeId};
use serde::Deserialize;

use super::bouncer::{Bouncer, BouncerConfig, PoolMode};
use super::client::{silent_holder_keeps, PgLock, PgLockConfig, Recipe, Row, ROW_GONE, UNLOCK_FALSE};
use super::server::{
    CLEANED, Cleanup, Keepalive, PROMOTIONS, PgServer, PgServerConfig, Producer, Replication,
};
use super::{Msg, PgNode, Timer};
use crate::family::{Counter, Family, Fencing, Role, Tokens};
use crate::keys::{Check, NoKeys};

/// The group pgbouncer is in, in scenario files.
pub const POOLERS: &str = "poolers";

/// The PostgreSQL family's settings.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Postgres {
    /// The server's settings.
    pub server: PgServerConfig,
    /// pgbouncer's pool mode, if there is one.
    pub pooler: Option<PoolMode>,
    /// pgbouncer's `default_pool_size`.
    pub pool_size: u32,
    /// pgbouncer's `server_round_robin`.
    pub round_robin: bool,
    /// The clients' recipe.
    pub recipe: Recipe,
    /// Blocking lock functions rather than `try`.
    pub wait: bool,
    /// The clients' socket timeout.
    pub socket_timeout: Option<Dur>,
    /// The clients count their lock calls (the herd figure).
    pub count_requests: bool,
    /// A streaming standby, `postgres-replica`, promoted when it has heard no primary for
    /// this long; `None` without a standby.
    pub failover_after: Option<Dur>,
}

/// Between the servers' status messages when there is a standby.
const HEARTBEAT: Dur = Dur::from_secs(1);

/// The `[model]` keys of `kind = "postgres"`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PostgresKeys {
    kind: String,
    recipe: Option<RecipeName>,
    wait: Option<WaitName>,
    lock_timeout_ms: Option<f64>,
    tcp_keepalives_idle_ms: Option<f64>,
    tcp_keepalives_interval_ms: Option<f64>,
    tcp_keepalives_count: Option<u32>,
    idle_session_timeout_ms: Option<f64>,
    idle_in_transaction_session_timeout_ms: Option<f64>,
    pooler: Option<PoolerName>,
    pool_size: Option<u32>,
    server_round_robin: Option<bool>,
    socket_timeout_ms: Option<f64>,
    replica: Option<bool>,
    failover_after_ms: Option<f64>,
    cleanup_ttl_ms: Option<f64>,
    cleanup_every_ms: Option<f64>,
    acquired_at: Option<ClockName>,
    skip_locked: Option<bool>,
    jobs: Option<u64>,
    enqueue_every_ms: Option<f64>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
enum RecipeName {
    Session,
    Xact,
    Table,
    Queue,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
enum ClockName {
    Server,
    Client,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
enum WaitName {
    Block,
    Try,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
enum PoolerName {
    None,
    Session,
    Transaction,
}

/// An optional duration where 0 means off, as PostgreSQL's settings.
fn off_or_ms(check: &mut Check, path: &str, v: Option<f64>) -> Option<Dur> {
    let d = check.ms(path, v?);
    (d != Dur::ZERO).then_some(d)
}

impl Family for Postgres {
    const KIND: &'static str = "postgres";
    const NAME: &'static str = "PostgreSQL";
    const FENCING: &'static [Fencing] = &[];
    const RESOURCE_MODE: Option<&'static str> = Some("postgres");

    type Msg = Msg;
    type Timer = Timer;
    type Node = PgNode;
    type Lock = PgLock;
    type Keys = PostgresKeys;
    type ResourceKeys = NoKeys;

    fn resolve(k: &PostgresKeys, check: &mut Check) -> Postgres {
        debug_assert_eq!(k.kind, Self::KIND);
        let mut keepalive = Keepalive::LINUX;
        if let Some(v) = k.tcp_keepalives_idle_ms {
            keepalive.idle = check.positive_ms("model.tcp_keepalives_idle_ms", v);
        }
        if let Some(v) = k.tcp_keepalives_interval_ms {
            keepalive.interval = check.positive_ms("model.tcp_keepalives_interval_ms", v);
        }
        if let Some(n) = k.tcp_keepalives_count {
            keepalive.count = check.count("model.tcp_keepalives_count", n, 1, 127);
        }
        let server = PgServerConfig {
            lock_timeout: off_or_ms(check, "model.lock_timeout_ms", k.lock_timeout_ms),
            keepalive,
            idle_session_timeout: off_or_ms(
                check,
                "model.idle_session_timeout_ms",
                k.idle_session_timeout_ms,
            ),
            idle_in_transaction_timeout: off_or_ms(
                check,
                "model.idle_in_transaction_session_timeout_ms",
                k.idle_in_transaction_session_timeout_ms,
            ),
            replication: None,
            cleanup: None,
            producer: None,
        };
        let table = k.recipe == Some(RecipeName::Table);
        let queue = k.recipe == Some(RecipeName::Queue);
        let server = PgServerConfig {
            producer: queue.then(|| Producer {
                every: check.positive_ms(
                    "model.enqueue_every_ms",
                    k.enqueue_every_ms.unwrap_or(100.0),
                ),
                jobs: check.count("model.jobs", k.jobs.unwrap_or(100), 1, 1_000_000),
            }),
            ..server
        };
        if !queue {
            for (key, set) in [
                ("model.skip_locked", k.skip_locked.is_some()),
                ("model.jobs", k.jobs.is_some()),
                ("model.enqueue_every_ms", k.enqueue_every_ms.is_some()),
            ] {
                if set {
                    check
                        .problems
                        .push(key, "is a job queue setting: set model.recipe = \"queue\" too");
                }
            }
        }
        if queue && k.wait.is_some() {
            check.problems.push(
                "model.wait",
                "a dequeue waits for a locked row unless model.skip_locked = true: leave out \
                 model.wait",
            );
        }
        let server = PgServerConfig {
            cleanup: table.then(|| Cleanup {
                ttl: match k.cleanup_ttl_ms {
                    Some(v) => check.positive_ms("model.cleanup_ttl_ms", v),
                    None => {
                        check.problems.push(
                            "model.cleanup_ttl_ms",
                            "is required with recipe = \"table\": the age past which the \
                             cleanup job deletes a lock row",
                        );
                        Dur::ZERO
                    }
                },
                every: check.positive_ms(
                    "model.cleanup_every_ms",
                    k.cleanup_every_ms.unwrap_or(60_000.0),
                ),
            }),
            ..server
        };
        if !table {
            for (key, set) in [
                ("model.cleanup_ttl_ms", k.cleanup_ttl_ms.is_some()),
                ("model.cleanup_every_ms", k.cleanup_every_ms.is_some()),
                ("model.acquired_at", k.acquired_at.is_some()),
            ] {
                if set {
                    check
                        .problems
                        .push(key, "is a lock table setting: set model.recipe = \"table\" too");
                }
            }
        }
        if table && k.wait.is_some() {
            check.problems.push(
                "model.wait",
                "the lock table has no blocking form (INSERT ... ON CONFLICT DO NOTHING returns \
                 at once; the client tries again after its retry delay): leave out model.wait",
            );
        }
        let replica = k.replica.unwrap_or(false);
        if !replica && k.failover_after_ms.is_some() {
            check.problems.push(
                "model.failover_after_ms",
                "is the standby's setting: set model.replica = true too",
            );
        }
        let failover_after = replica.then(|| match k.failover_after_ms {
            Some(v) => check.positive_ms("model.failover_after_ms", v),
            None => Dur::from_secs(30),
        });
        let pooler = match k.pooler {
            None | Some(PoolerName::None) => None,
            Some(PoolerName::Session) => Some(PoolMode::Session),
            Some(PoolerName::Transaction) => Some(PoolMode::Transaction),
        };
        if pooler.is_none() && (k.pool_size.is_some() || k.server_round_robin.is_some()) {
            let key = if k.pool_size.is_some() {
                "model.pool_size"
            } else {
                "model.server_round_robin"
            };
            check.problems.push(key, "is a pgbouncer setting: set model.pooler too");
        }
        if replica && queue {
            check.problems.push(
                "model.replica",
                "a standby of the job queue is not modelled (its jobs table is not streamed): \
                 leave out model.replica or use another recipe",
            );
        }
        if replica && !matches!(k.pooler, None | Some(PoolerName::None)) {
            check.problems.push(
                "model.replica",
                "a standby behind pgbouncer is not modelled: pgbouncer connects to one host; \
                 leave out model.pooler or model.replica",
            );
        }
        let pool_size = check.count("model.pool_size", k.pool_size.unwrap_or(20), 1, 1_000);
        Postgres {
            server,
            pooler,
            pool_size,
            round_robin: k.server_round_robin.unwrap_or(false),
            recipe: match k.recipe {
                None | Some(RecipeName::Session) => Recipe::Session,
                Some(RecipeName::Xact) => Recipe::Xact,
                Some(RecipeName::Table) => Recipe::Table {
                    client_clock: k.acquired_at == Some(ClockName::Client),
                },
                Some(RecipeName::Queue) => Recipe::Queue {
                    skip_locked: k.skip_locked.unwrap_or(true),
                },
            },
            wait: k.wait != Some(WaitName::Try),
            socket_timeout: off_or_ms(check, "model.socket_timeout_ms", k.socket_timeout_ms),
            count_requests: false,
            failover_after,
        }
    }

    fn resource(_: &NoKeys, _: &mut Check) -> Option<Row> {
        Some(Row)
    }

    fn layout(&self) -> Vec<(String, Role)> {
        let mut nodes = vec![("postgres".to_string(), Role::Server)];
        if self.failover_after.is_some() {
            nodes.push(("postgres-replica".to_string(), Role::Server));
        }
        if self.pooler.is_some() {
            nodes.push((
                "pgbouncer".to_string(),
                Role::Coordinator { group: POOLERS },
            ));
        }
        nodes
    }

    fn played(&self) -> &'static [&'static str] {
        &[crate::family::played::PRIMARY]
    }

    fn groups(&self) -> &'static [&'static str] {
        &[POOLERS]
    }

    fn build(&self, _: Option<&Row>) -> (Vec<PgNode>, PgLock) {
        let server = NodeId(0);
        let mut nodes = vec![];
        let mut standby = None;
        match self.failover_after {
            None => nodes.push(PgNode::Server(PgServer::new(self.server))),
            Some(failover_after) => {
                let replication = |peer| PgServerConfig {
                    replication: Some(Replication {
                        peer,
                        failover_after,
                        heartbeat: HEARTBEAT,
                    }),
                    ..self.server
                };
                nodes.push(PgNode::Server(PgServer::new(replication(NodeId(1)))));
                nodes.push(PgNode::Server(PgServer::standby(replication(server))));
                standby = Some(NodeId(1));
            }
        }
        let endpoint = match self.pooler {
            Some(mode) => {
                nodes.push(PgNode::Bouncer(Bouncer::new(BouncerConfig {
                    server,
                    mode,
                    pool_size: self.pool_size,
                    round_robin: self.round_robin,
                    keepalive: Keepalive::LINUX,
                })));
                NodeId(1)
            }
            None => server,
        };
        let lock = PgLock::new(PgLockConfig {
            endpoint,
            standby,
            recipe: self.recipe,
            wait: self.wait,
            socket_timeout: self.socket_timeout,
            count_requests: self.count_requests,
        });
        (nodes, lock)
    }

    fn tokens(&self) -> Tokens {
        Tokens::None
    }

    fn ttl(&self) -> Dur {
        match self.server.cleanup {
            // A dead owner's row lives until the first cleanup past its TTL.
            Some(c) => c.ttl.saturating_add(c.every),
            None => silent_holder_keeps(&self.server),
        }
    }

    fn expiry_wall_clocks(&self) -> &'static [Role] {
        // The cleanup job ages a lock table row by the primary's wall clock against
        // `acquired_at`, which the server stamps, or the client.
        match self.recipe {
            Recipe::Table {
                client_clock: false,
            } => &[Role::Server],
            Recipe::Table { client_clock: true } => &[Role::Server, Role::Client],
            Recipe::Session | Recipe::Xact | Recipe::Queue { .. } => &[],
        }
    }

    /// Advisory locks take any key: lock `n` is key `1 + n`. The lock table's one row and the
    /// job queue are not locks per key.
    fn many_locks(&self) -> bool {
        matches!(self.recipe, Recipe::Session | Recipe::Xact)
    }

    /// The `pg_try_` lock functions (`wait = "try"`). The lock table's client tries its insert
    /// again after its retry delay, and the job queue dequeues: neither has a try form here.
    fn count_requests(&mut self) -> bool {
        self.count_requests = true;
        true
    }

    fn try_once(&mut self) -> bool {
        self.wait = false;
        matches!(self.recipe, Recipe::Session | Recipe::Xact)
    }

    fn reentry(&self) -> Option<&'static str> {
        let pooled = self.pooler == Some(PoolMode::Transaction);
        match self.recipe {
            Recipe::Session if pooled => Some(
                "counted by whichever backend the pooler picks: the nested pg_advisory_lock may \
                 run on another backend and wait for the lock its own client holds",
            ),
            Recipe::Session => Some(
                "counted by the server: pg_advisory_lock again in the same session, and \
                 pg_advisory_unlock takes the count down",
            ),
            Recipe::Xact => Some(
                "counted by the server: pg_advisory_xact_lock again in the same transaction, \
                 held until COMMIT",
            ),
            Recipe::Table { .. } => Some("not re-entrant: the lock table's INSERT finds its own row"),
            Recipe::Queue { .. } => None,
        }
    }

    /// The lock table's row is aged from `acquired_at`, which nothing refreshes.
    fn lapses(&self) -> Option<&'static str> {
        matches!(self.recipe, Recipe::Table { .. }).then_some(
            "the cleanup job deletes its row cleanup_ttl_ms after the grant, as nothing \
             refreshes acquired_at: use recipe = \"session\" or \"xact\", whose lock lasts as \
             long as its connection",
        )
    }

    fn dequeues(&self) -> bool {
        matches!(self.recipe, Recipe::Queue { .. })
    }

    fn counters(&self) -> &'static [Counter] {
        const fn counter(name: &'static str) -> Counter {
            Counter { name, per: None }
        }
        const UNLOCKS: Counter = counter(UNLOCK_FALSE);
        const TABLE: [Counter; 2] = [counter(ROW_GONE), counter(CLEANED)];
        const PROMOTED: Counter = counter(PROMOTIONS);
        if self.server.producer.is_some() {
            return &[];
        }
        match (self.server.cleanup.is_some(), self.failover_after.is_some()) {
            (false, false) => &[UNLOCKS],
            (false, true) => &[UNLOCKS, PROMOTED],
            (true, false) => &TABLE,
            (true, true) => &[TABLE[0], TABLE[1], PROMOTED],
        }
    }

    fn describe(&self) -> Vec<String> {
        let mut p = vec![
            "postgres".to_string(),
            match self.recipe {
                Recipe::Session => "session lock",
                Recipe::Xact => "xact lock, work in its transaction",
                Recipe::Table {
                    client_clock: false,
                } => "lock table",
                Recipe::Table { client_clock: true } => "lock table, acquired_at client clock",
                Recipe::Queue { skip_locked: true } => "job queue, FOR UPDATE SKIP LOCKED",
                Recipe::Queue { skip_locked: false } => "job queue, FOR UPDATE",
            }
            .to_string(),
        ];
        if let Some(q) = self.server.producer {
            p.push(format!("{} jobs every {}", q.jobs, q.every));
        }
        if let Some(c) = self.server.cleanup {
            p.push(format!("cleanup past {} every {}", c.ttl, c.every));
        }
        if !self.wait && self.server.cleanup.is_none() && self.server.producer.is_none() {
            p.push("try".to_string());
        }
        match self.pooler {
            Some(PoolMode::Session) => p.push("pgbouncer session pool".to_string()),
            Some(PoolMode::Transaction) => p.push("pgbouncer transaction pool".to_string()),
            None => {}
        }
        let ka = self.server.keepalive;
        if ka != Keepalive::LINUX {
            p.push(format!("keepalive {} + {} × {}", ka.idle, ka.count, ka.interval));
        }
        if let Some(t) = self.failover_after {
            p.push(format!("standby, failover after {t}"));
        }
        if let Some(t) = self.socket_timeout {
            p.push(format!("socket timeout {t}"));
        }
        if let Some(t) = self.server.lock_timeout {
            p.push(format!("lock_timeout {t}"));
        }
        if let Some(t) = self.server.idle_session_timeout {
            p.push(format!("idle_session_timeout {t}"));
        }
        if let Some(t) = self.server.idle_in_transaction_timeout {
            p.push(format!("idle_in_transaction_session_timeout {t}"));
        }
        p
    }

    fn describe_resource(_: &Row) -> String {
        "postgres (counter row)".to_string()
    }
}
