//! The PostgreSQL server's and pgbouncer's rules (docs/families/postgres.md), pinned with
//! scripted clients: each sends statements at fixed times on connections it names and keeps
//! every answer, in a world with no latency, so every answer's time is exact.

use lockstep_check::Event;
use lockstep_check::{GrantId, NodeId as Who, OpId};
use lockstep_models::Observation;
use lockstep_models::env::{Scoped, Side};
use lockstep_models::family::Service;
use lockstep_models::postgres::bouncer::{Bouncer, BouncerConfig, PoolMode};
use lockstep_models::postgres::server::{Keepalive, PgServer, PgServerConfig, Replication};
use lockstep_models::postgres::{Answer, Msg, PgNode, Stmt, Timer};
use lockstep_models::storage::{RequestKind, StorageReply, StorageRequest, StorageResult};
use lockstep_sim::{
    ClockKind, Dur, EnvOf, Fault, LocalTime, NodeConfig, NodeId, PartitionMode, Process,
    ScheduledFault, Shape, Time, TimerId, When, World, WorldConfig,
};

const SERVER: NodeId = NodeId(0);

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum TestTimer {
    Pg(Timer),
    Step(usize),
}

/// The service node's side of a test node.
#[derive(Debug)]
struct PgSide;

impl Side for PgSide {
    type OuterMsg = Msg;
    type OuterTimer = TestTimer;
    type Msg = Msg;
    type Timer = Timer;
    fn msg(msg: Msg) -> Msg {
        msg
    }
    fn timer(timer: Timer) -> TestTimer {
        TestTimer::Pg(timer)
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Step {
    Send(u32, Stmt),
    /// A statement with its place on the connection given.
    Raw(u32, u32, Stmt),
    Close(u32),
}

/// A client that plays its steps at their times (ms) against `to`.
#[derive(Clone, Debug)]
struct Script {
    to: NodeId,
    steps: Vec<(u64, Step)>,
    answer_probes: bool,
    /// (ms, connection, step index, answer).
    answers: Vec<(u64, u32, u64, Answer)>,
    /// Statements sent on each connection.
    sent: std::collections::BTreeMap<u32, u32>,
    /// (ms, connection) of each connection closed by the other end.
    closed: Vec<(u64, u32)>,
}

// (A handful of nodes per test: their size does not matter.)
#[allow(clippy::large_enum_variant)]
#[derive(Clone, Debug)]
enum TestNode {
    Pg(PgNode),
    Script(Script),
}

fn ms(env: &impl EnvOf<TestNode>) -> u64 {
    (env.mono().as_nanos() / 1_000_000) as u64
}

impl Process for TestNode {
    type Msg = Msg;
    type Timer = TestTimer;
    type Event = Event;
    type Observation = Observation;

    fn on_start(&mut self, env: &mut impl EnvOf<Self>) {
        match self {
            TestNode::Script(s) => {
                for (i, (at, _)) in s.steps.iter().enumerate() {
                    env.set_timer(ClockKind::Mono, Dur::from_millis(*at), TestTimer::Step(i));
                }
            }
            TestNode::Pg(n) => n.on_start(&mut Scoped::<_, PgSide>::new(env)),
        }
    }

    fn on_message(&mut self, env: &mut impl EnvOf<Self>, from: NodeId, msg: Msg) {
        match self {
            TestNode::Pg(n) => n.on_message(&mut Scoped::<_, PgSide>::new(env), from, msg),
            TestNode::Script(s) => match msg {
                Msg::Answer { conn, id, answer } => s.answers.push((ms(env), conn, id, answer)),
                Msg::Close { conn } => s.closed.push((ms(env), conn)),
                _ => {}
            },
        }
    }

    fn on_timer(&mut self, env: &mut impl EnvOf<Self>, _: TimerId, timer: TestTimer) {
        match (self, timer) {
            (TestNode::Pg(n), TestTimer::Pg(t)) => {
                n.on_timer(&mut Scoped::<_, PgSide>::new(env), t);
            }
            (TestNode::Script(s), TestTimer::Step(i)) => match s.steps[i].1 {
                Step::Send(conn, stmt) => {
                    let id = i as u64;
                    let seq = s.sent.entry(conn).or_insert(0);
                    *seq += 1;
                    let seq = *seq;
                    env.send(
                        s.to,
                        Msg::Query {
                            conn,
                            seq,
                            id,
                            stmt,
                        },
                    );
                }
                Step::Raw(conn, seq, stmt) => {
                    let id = i as u64;
                    env.send(
                        s.to,
                        Msg::Query {
                            conn,
                            seq,
                            id,
                            stmt,
                        },
                    );
                }
                Step::Close(conn) => env.send(s.to, Msg::Close { conn }),
            },
            _ => unreachable!(),
        }
    }

    fn on_crash(&mut self) {
        if let TestNode::Pg(n) = self {
            n.on_crash();
        }
    }

    fn on_restart(&mut self, env: &mut impl EnvOf<Self>) {
        if let TestNode::Pg(n) = self {
            n.on_restart(&mut Scoped::<_, PgSide>::new(env));
        }
    }

    fn kernel_answer(&self, from: NodeId, msg: &Msg) -> Option<Msg> {
        match (self, msg) {
            (TestNode::Pg(n), _) => n.kernel_answer(from, msg),
            (TestNode::Script(s), &Msg::Probe { conn }) if s.answer_probes => {
                Some(Msg::ProbeAck { conn, alive: true })
            }
            _ => None,
        }
    }

    fn on_reset(&mut self, env: &mut impl EnvOf<Self>, peer: NodeId) {
        if let TestNode::Pg(n) = self {
            n.on_reset(&mut Scoped::<_, PgSide>::new(env), peer);
        }
    }
}

fn script(to: NodeId, steps: Vec<(u64, Step)>) -> Script {
    Script {
        to,
        steps,
        answer_probes: true,
        sent: std::collections::BTreeMap::new(),
        answers: Vec::new(),
        closed: Vec::new(),
    }
}

/// Runs `service` nodes then `scripts` for `secs` with `faults`; the world after.
fn run(
    service: Vec<PgNode>,
    scripts: Vec<Script>,
    secs: u64,
    faults: Vec<ScheduledFault>,
) -> World<TestNode> {
    let mut procs: Vec<TestNode> = service.into_iter().map(TestNode::Pg).collect();
    procs.extend(scripts.into_iter().map(TestNode::Script));
    let nodes = (0..procs.len())
        .map(|i| NodeConfig {
            mono_start: Some(LocalTime::from_nanos(0)),
            ..NodeConfig::named(format!("n{i}"))
        })
        .collect();
    let mut config = WorldConfig::new(1, Time::from_nanos(secs * 1_000_000_000), nodes);
    config.faults = faults;
    config.trace = true;
    let mut world = World::new(config, procs);
    world.run();
    world
}

fn answers(world: &World<TestNode>, node: u32) -> Vec<(u64, u32, u64, Answer)> {
    match world.process(NodeId(node)) {
        TestNode::Script(s) => s.answers.clone(),
        TestNode::Pg(_) => panic!("not a script"),
    }
}

/// When (ms) `node`'s kernel answered a keepalive probe.
fn kernel_answers(world: &World<TestNode>, node: &str) -> Vec<u64> {
    world
        .trace()
        .expect("traced")
        .iter()
        .filter(|e| e.text.contains(&format!("-> {node}: Probe")))
        .filter(|e| e.text.ends_with("answered by its kernel"))
        .map(|e| e.time.as_nanos() / 1_000_000)
        .collect()
}

fn the_script(world: &World<TestNode>, node: u32) -> &Script {
    match world.process(NodeId(node)) {
        TestNode::Script(s) => s,
        TestNode::Pg(_) => panic!("not a script"),
    }
}

fn server(world: &World<TestNode>) -> &PgServer {
    server_at(world, SERVER)
}

fn server_at(world: &World<TestNode>, node: NodeId) -> &PgServer {
    match world.process(node) {
        TestNode::Pg(PgNode::Server(s)) => s,
        _ => panic!("not the server"),
    }
}

fn pg(config: PgServerConfig) -> PgNode {
    PgNode::Server(PgServer::new(config))
}

fn lock(xact: bool, wait: bool) -> Stmt {
    Stmt::Lock {
        key: 1,
        xact,
        wait,
        begin: false,
    }
}

const UNLOCK: Stmt = Stmt::Unlock { key: 1 };

/// The answers' (step, answer) pairs, in order.
fn by_step(a: &[(u64, u32, u64, Answer)]) -> Vec<(u64, Answer)> {
    a.iter().map(|(_, _, id, ans)| (*id, *ans)).collect()
}

#[test]
fn a_session_lock_is_reentrant_with_a_count_and_unlock_says_whether_it_held() {
    let a = script(
        SERVER,
        vec![
            (10, Step::Send(1, lock(false, true))),
            (20, Step::Send(1, lock(false, false))),
            (30, Step::Send(1, UNLOCK)),
            (40, Step::Send(1, UNLOCK)),
            (50, Step::Send(1, UNLOCK)),
        ],
    );
    // Another client tries between the two unlocks and after them.
    let b = script(
        SERVER,
        vec![
            (35, Step::Send(1, lock(false, false))),
            (45, Step::Send(1, lock(false, false))),
        ],
    );
    let w = run(vec![pg(PgServerConfig::default())], vec![a, b], 1, vec![]);
    assert_eq!(
        by_step(&answers(&w, 1)),
        [
            (0, Answer::Locked),
            (1, Answer::Bool(true)),
            (2, Answer::Bool(true)),
            (3, Answer::Bool(true)),
            // `WARNING: you don't own a lock of type ExclusiveLock`.
            (4, Answer::Bool(false)),
        ]
    );
    assert_eq!(
        by_step(&answers(&w, 2)),
        [(0, Answer::Bool(false)), (1, Answer::Bool(true))],
        "held twice, it takes two unlocks to free it"
    );
}

#[test]
fn rollback_does_not_release_a_session_lock_and_commit_releases_a_transaction_lock() {
    let a = script(
        SERVER,
        vec![
            (10, Step::Send(1, Stmt::Begin)),
            (20, Step::Send(1, lock(false, true))),
            (30, Step::Send(1, Stmt::Rollback)),
            (50, Step::Send(2, Stmt::Begin)),
            (60, Step::Send(2, lock(true, true))),
            // A transaction lock cannot be unlocked explicitly.
            (70, Step::Send(2, UNLOCK)),
            (90, Step::Send(2, Stmt::Commit)),
        ],
    );
    let b = script(
        SERVER,
        vec![
            (40, Step::Send(1, lock(false, false))),
            (80, Step::Send(2, lock(true, false))),
            (100, Step::Send(2, lock(true, false))),
        ],
    );
    let w = run(vec![pg(PgServerConfig::default())], vec![a, b], 1, vec![]);
    let got_a = by_step(&answers(&w, 1));
    assert_eq!(
        got_a[4],
        (5, Answer::Bool(false)),
        "no explicit xact unlock"
    );
    let got_b = by_step(&answers(&w, 2));
    assert_eq!(
        got_b,
        [
            (0, Answer::Bool(false)), // ROLLBACK kept a's session lock on connection 1
            (1, Answer::Bool(false)), // still held at 80 ms (and by a's connection 1)
            (2, Answer::Bool(false)),
        ]
    );
    // a's session lock on connection 1 holds to the end; its transaction lock went at COMMIT.
    let (holder, session, xact) = server(&w).holder(1).expect("held");
    assert_eq!((holder, session, xact), ((NodeId(1), 1), 1, 0));
}

#[test]
fn a_blocking_lock_waits_in_line_until_the_holder_ends_or_lock_timeout() {
    let holder = script(
        SERVER,
        vec![
            (10, Step::Send(1, lock(false, true))),
            (500, Step::Close(1)),
        ],
    );
    let waiter = script(SERVER, vec![(20, Step::Send(1, lock(false, true)))]);
    let w = run(
        vec![pg(PgServerConfig::default())],
        vec![holder, waiter.clone()],
        1,
        vec![],
    );
    assert_eq!(
        answers(&w, 2),
        [(500, 1, 0, Answer::Locked)],
        "granted at the FIN"
    );
    let config = PgServerConfig {
        lock_timeout: Some(Dur::from_millis(100)),
        ..PgServerConfig::default()
    };
    let holder = script(SERVER, vec![(10, Step::Send(1, lock(false, true)))]);
    let w = run(vec![pg(config)], vec![holder, waiter], 1, vec![]);
    assert_eq!(answers(&w, 2), [(120, 1, 0, Answer::LockTimeout)]);
}

#[test]
fn keepalive_ends_a_silent_holders_backend_after_idle_plus_count_intervals() {
    let ka = Keepalive {
        idle: Dur::from_secs(10),
        interval: Dur::from_secs(2),
        count: 3,
    };
    let config = PgServerConfig {
        keepalive: ka,
        ..PgServerConfig::default()
    };
    let mut holder = script(SERVER, vec![(1_000, Step::Send(1, lock(false, true)))]);
    holder.answer_probes = true;
    let other = script(
        SERVER,
        vec![
            (1_500, Step::Send(1, lock(false, true))),
            (40_000, Step::Send(2, lock(false, false))),
        ],
    );
    // While the holder's kernel answers, its backend lives: probes at 11 s, 21 s, 31 s...,
    // each a kernel timer the wheel rounds up (by 8 ms here).
    let w = run(
        vec![pg(config)],
        vec![holder.clone(), other.clone()],
        45,
        vec![],
    );
    assert_eq!(&kernel_answers(&w, "n1")[..3], [11_008, 21_008, 31_008]);
    assert_eq!(answers(&w, 2), [(40_000, 2, 1, Answer::Bool(false))]);
    // Paused from 2 s on (GC, SIGSTOP): its kernel still answers, so it keeps the lock for
    // as long as it is paused, as a SIGSTOPped client keeps it on a real server.
    let at_2s = |fault| ScheduledFault {
        when: When::At(Time::from_millis(2_000)),
        fault,
        role: None,
    };
    let paused = at_2s(Fault::Pause {
        node: NodeId(1),
        duration: None,
    });
    let w = run(
        vec![pg(config)],
        vec![holder.clone(), other.clone()],
        45,
        vec![paused],
    );
    assert_eq!(&kernel_answers(&w, "n1")[..3], [11_008, 21_008, 31_008]);
    assert_eq!(answers(&w, 2), [(40_000, 2, 1, Answer::Bool(false))]);
    // Its whole host frozen from 2 s on: the probes at 11 s, 13 s, 15 s go unanswered, and
    // the backend ends at 17 s = 1 s (last heard) + 10 s + 3 × 2 s, late by the timer wheel's
    // rounding of each kernel timer (56 ms); the waiter gets the lock then.
    let frozen = at_2s(Fault::Freeze {
        node: NodeId(1),
        duration: None,
    });
    let w = run(vec![pg(config)], vec![holder, other], 45, vec![frozen]);
    assert!(kernel_answers(&w, "n1").is_empty());
    assert_eq!(answers(&w, 2)[0], (17_056, 1, 0, Answer::Locked));
    assert_eq!(ka.gives_up_after(), Dur::from_secs(16));
    // With Linux's defaults it would be 7200 s + 9 × 75 s.
    assert_eq!(Keepalive::LINUX.gives_up_after(), Dur::from_secs(7_875));
}

#[test]
fn a_crashed_client_loses_its_locks_at_once_and_a_server_crash_frees_every_lock() {
    let holder = script(SERVER, vec![(10, Step::Send(1, lock(false, true)))]);
    let waiter = script(SERVER, vec![(20, Step::Send(1, lock(false, true)))]);
    let crash_client = ScheduledFault {
        when: When::At(Time::from_millis(300)),
        fault: Fault::Crash {
            node: NodeId(1),
            restart_after: None,
        },
        role: None,
    };
    let w = run(
        vec![pg(PgServerConfig::default())],
        vec![holder.clone(), waiter.clone()],
        1,
        vec![crash_client],
    );
    assert_eq!(answers(&w, 2), [(300, 1, 0, Answer::Locked)], "its RST");
    let crash_server = ScheduledFault {
        when: When::At(Time::from_millis(300)),
        fault: Fault::Crash {
            node: SERVER,
            restart_after: Some(Dur::from_millis(100)),
        },
        role: None,
    };
    let w = run(
        vec![pg(PgServerConfig::default())],
        vec![holder, waiter],
        1,
        vec![crash_server],
    );
    assert!(server(&w).holder(1).is_none(), "the lock table is gone");
    assert!(server(&w).backends().is_empty());
}

#[test]
fn pgbouncer_transaction_mode_leaks_a_session_lock_and_hands_it_to_another_client() {
    let bouncer = |mode, pool_size| {
        PgNode::Bouncer(Bouncer::new(BouncerConfig {
            server: SERVER,
            mode,
            pool_size,
            round_robin: false,
            keepalive: Keepalive::LINUX,
        }))
    };
    let via = NodeId(1);
    // a locks on server connection 1, which goes back to the pool. b's transaction takes
    // connection 1; a's unlock gets a new one, 2, and returns false: the lock leaks. c's first
    // try runs on 2 and is refused; after b's COMMIT the pool hands out 1 first (LIFO), where
    // the lock is, and c's second try is granted: the lock is re-entrant for that backend.
    let a = script(
        via,
        vec![
            (10, Step::Send(1, lock(false, true))),
            (25, Step::Send(1, UNLOCK)),
        ],
    );
    let b = script(
        via,
        vec![
            (20, Step::Send(1, Stmt::Begin)),
            (40, Step::Send(1, Stmt::Commit)),
        ],
    );
    let c = script(
        via,
        vec![
            (30, Step::Send(1, lock(false, false))),
            (50, Step::Send(1, lock(false, false))),
        ],
    );
    let w = run(
        vec![
            pg(PgServerConfig::default()),
            bouncer(PoolMode::Transaction, 2),
        ],
        vec![a.clone(), b.clone(), c.clone()],
        1,
        vec![],
    );
    assert_eq!(
        by_step(&answers(&w, 4)),
        [(0, Answer::Bool(false)), (1, Answer::Bool(true))],
        "c is granted the lock a holds"
    );
    assert_eq!(
        by_step(&answers(&w, 2)),
        [(0, Answer::Locked), (1, Answer::Bool(false))],
        "a's unlock ran elsewhere"
    );
    let (holder, session, _) = server(&w).holder(1).expect("leaked");
    assert_eq!(holder.0, via, "held by a pooled backend");
    assert_eq!(session, 2, "a's lock and c's");
    // Session pooling: each client keeps its server connection; a's unlock runs where its
    // lock is, and c takes the free lock (twice, on its own backend).
    let w = run(
        vec![pg(PgServerConfig::default()), bouncer(PoolMode::Session, 3)],
        vec![a, b, c],
        1,
        vec![],
    );
    assert_eq!(
        by_step(&answers(&w, 2)),
        [(0, Answer::Locked), (1, Answer::Bool(true))]
    );
    assert_eq!(
        by_step(&answers(&w, 4)),
        [(0, Answer::Bool(true)), (1, Answer::Bool(true))]
    );
    let (holder, session, _) = server(&w).holder(1).expect("c's");
    assert_eq!((holder.0, session), (via, 2));
}

#[test]
fn a_connections_statements_run_in_their_order_once_each_as_tcp_delivers_them() {
    // The unlock (second on the connection) arrives first: it waits for the lock statement,
    // then both run; a duplicate of the first is dropped.
    let a = script(
        SERVER,
        vec![
            (10, Step::Raw(1, 2, UNLOCK)),
            (20, Step::Raw(1, 1, lock(false, true))),
            (30, Step::Raw(1, 1, lock(false, true))),
        ],
    );
    let w = run(vec![pg(PgServerConfig::default())], vec![a], 1, vec![]);
    assert_eq!(
        answers(&w, 1),
        [(20, 1, 1, Answer::Locked), (20, 1, 0, Answer::Bool(true))]
    );
    assert!(server(&w).holder(1).is_none());
}

/// A write of `value` over `base` by client node `client`, its `seq`th operation.
fn write(client: u32, seq: u32, value: u64, base: u64) -> Stmt {
    Stmt::Resource(StorageRequest {
        op: OpId {
            client: Who(client),
            seq,
        },
        grant: GrantId {
            client: Who(client),
            seq: 1,
        },
        token: None,
        kind: RequestKind::Write { value, base },
    })
}

/// The primary `SERVER` and its standby, node 1, which promotes after `failover_after` of
/// silence; status every second.
fn primary_and_standby(failover_after: Dur) -> Vec<PgNode> {
    let config = |peer| PgServerConfig {
        replication: Some(Replication {
            peer,
            failover_after,
            heartbeat: Dur::from_secs(1),
        }),
        ..PgServerConfig::default()
    };
    vec![
        PgNode::Server(PgServer::new(config(NodeId(1)))),
        PgNode::Server(PgServer::standby(config(SERVER))),
    ]
}

#[test]
fn a_standby_refuses_connections_promotes_after_silence_and_has_no_locks_nor_unstreamed_commits() {
    let standby = NodeId(1);
    let servers = primary_and_standby(Dur::from_secs(5));
    // Node 2 holds the lock on the primary and commits 1 (streamed), then 2 (not: the link to
    // the standby is cut from 100 ms); the primary crashes at 1 s.
    let a = script(
        SERVER,
        vec![
            (10, Step::Send(1, lock(false, true))),
            (20, Step::Send(1, write(2, 1, 1, 0))),
            (200, Step::Send(1, write(2, 2, 2, 1))),
        ],
    );
    // Node 3 asks the standby before and after its promotion.
    let b = script(
        standby,
        vec![
            (3_000, Step::Send(1, lock(false, false))),
            (5_500, Step::Send(2, lock(false, false))),
            (6_500, Step::Send(3, lock(false, false))),
            (
                6_600,
                Step::Send(
                    3,
                    Stmt::Resource(StorageRequest {
                        op: OpId {
                            client: Who(3),
                            seq: 1,
                        },
                        grant: GrantId {
                            client: Who(3),
                            seq: 1,
                        },
                        token: None,
                        kind: RequestKind::Read,
                    }),
                ),
            ),
        ],
    );
    let faults = vec![
        ScheduledFault {
            when: When::At(Time::from_millis(100)),
            fault: Fault::Partition {
                shape: Shape::OneWay {
                    from: vec![SERVER],
                    to: vec![standby],
                },
                mode: PartitionMode::Drop,
                duration: None,
            },
            role: None,
        },
        ScheduledFault {
            when: When::At(Time::from_millis(1_000)),
            fault: Fault::Crash {
                node: SERVER,
                restart_after: None,
            },
            role: None,
        },
    ];
    let w = run(servers, vec![a, b], 8, faults);
    let got = by_step(&answers(&w, 3));
    // In recovery it turns connections down (libpq then tries the next host). It last heard
    // the primary at 20 ms (the streamed commit); its heartbeat at 6 s is the first at least
    // 5 s later: it promotes, on timeline 2, with no lock held and the commit of 2 lost.
    assert_eq!(got[0], (0, Answer::ReadOnly));
    assert_eq!(got[1], (1, Answer::ReadOnly), "5.5 s: not yet");
    assert_eq!(got[2], (2, Answer::Bool(true)), "the lock did not survive");
    assert_eq!(
        got[3],
        (
            3,
            Answer::Resource(StorageReply {
                op: OpId {
                    client: Who(3),
                    seq: 1
                },
                result: StorageResult::Read(1)
            })
        ),
        "the unstreamed commit of 2 is lost"
    );
    assert_eq!(server_at(&w, standby).role(), (true, 2));
}

#[test]
fn a_primary_that_hears_a_later_timeline_demotes_ends_its_sessions_and_rewinds() {
    let standby = NodeId(1);
    let servers = primary_and_standby(Dur::from_secs(3));
    // The primary is cut off from the standby from 100 ms to 6 s: the standby, which last
    // heard it at 0 s, promotes at its heartbeat at 3 s; there are two primaries until the
    // link is back. Node 2 holds the lock on the old primary and commits 5 there at 5 s.
    // The link is back at the first retransmission after the heal, not at the heal: both
    // ends' status messages of 1 s stalled (TCP, RTO 200 ms on these zero-latency links):
    // the tail loss probe at 1.2 s, then retransmissions 2, 4, 8 and 32 RTOs after the send,
    // each rounded up by the kernel's timer wheel (1.4, 1.824, 2.656, 4.288, 7.68 s), so the
    // primary hears timeline 2 at 7.68 s.
    let a = script(
        SERVER,
        vec![
            (10, Step::Send(1, lock(false, true))),
            (5_000, Step::Send(1, write(2, 1, 5, 0))),
        ],
    );
    let faults = vec![ScheduledFault {
        when: When::At(Time::from_millis(100)),
        fault: Fault::Partition {
            shape: Shape::Split {
                groups: vec![vec![SERVER], vec![standby]],
            },
            mode: PartitionMode::Drop,
            duration: Some(Dur::from_millis(5_900)),
        },
        role: None,
    }];
    let w = run(servers, vec![a], 9, faults);
    let old = server_at(&w, SERVER);
    assert_eq!(old.role(), (false, 2), "it follows timeline 2");
    assert_eq!(old.value(), 0, "its commit of 5 is rewound away");
    assert!(old.backends().is_empty() && old.holder(1).is_none());
    let s = the_script(&w, 2);
    assert_eq!(
        s.closed.len(),
        1,
        "its session ended with a FIN: {:?}",
        s.closed
    );
    assert!((7_680..=7_780).contains(&s.closed[0].0), "{:?}", s.closed);
    assert_eq!(server_at(&w, standby).role(), (true, 2));
}

#[test]
fn a_lock_table_row_outlives_its_owner_and_the_server_until_the_cleanup_job_deletes_it() {
    use lockstep_models::postgres::server::Cleanup;
    use lockstep_sim::world::DEFAULT_WALL_EPOCH;
    let config = PgServerConfig {
        cleanup: Some(Cleanup {
            ttl: Dur::from_secs(2),
            every: Dur::from_secs(1),
        }),
        ..PgServerConfig::default()
    };
    let insert = |owner: u32| Stmt::InsertLock {
        owner: NodeId(owner),
        at: None,
    };
    // Node 1 takes the row (`now()` = 10 ms) and closes its connection; node 2 tries around
    // it. The server crashes at 500 ms and is back at 600 ms; its job runs every second from
    // then on, and the row is older than 2 s at the run of 2.6 s.
    let a = script(
        SERVER,
        vec![
            (10, Step::Send(1, insert(1))),
            (100, Step::Close(1)),
            (3_000, Step::Send(2, Stmt::DeleteLock { owner: NodeId(1) })),
        ],
    );
    let b = script(
        SERVER,
        vec![
            (20, Step::Send(1, insert(2))),
            (200, Step::Send(1, insert(2))),
            (700, Step::Send(2, insert(2))),
            (2_500, Step::Send(2, insert(2))),
            (2_700, Step::Send(2, insert(2))),
        ],
    );
    let restart = ScheduledFault {
        when: When::At(Time::from_millis(500)),
        fault: Fault::Crash {
            node: SERVER,
            restart_after: Some(Dur::from_millis(100)),
        },
        role: None,
    };
    let w = run(vec![pg(config)], vec![a, b], 4, vec![restart]);
    assert_eq!(
        by_step(&answers(&w, 1)),
        [(0, Answer::Bool(true)), (2, Answer::Bool(false))]
    );
    let got: Vec<(u64, Answer)> = answers(&w, 2).iter().map(|(t, _, _, a)| (*t, *a)).collect();
    assert_eq!(
        got,
        [
            (20, Answer::Bool(false)),
            (200, Answer::Bool(false)),
            (700, Answer::Bool(false)),
            (2_500, Answer::Bool(false)),
            (2_700, Answer::Bool(true)),
        ],
        "the row outlives its owner's connection and the server's restart, until the job of 2.6 s"
    );
    assert_eq!(server(&w).lock_row().map(|r| r.owner), Some(NodeId(2)));
    // `acquired_at` from a client whose wall clock is 5 s behind the server's: the first run
    // of the job deletes the row though it is 0.99 s old.
    let behind = LocalTime::from_nanos(DEFAULT_WALL_EPOCH.as_nanos() - 5_000_000_000);
    let a = script(
        SERVER,
        vec![(
            10,
            Step::Send(
                1,
                Stmt::InsertLock {
                    owner: NodeId(1),
                    at: Some(behind),
                },
            ),
        )],
    );
    let b = script(SERVER, vec![(1_100, Step::Send(1, insert(2)))]);
    let w = run(vec![pg(config)], vec![a, b], 2, vec![]);
    assert_eq!(answers(&w, 2)[0].3, Answer::Bool(true));
}

#[test]
fn skip_locked_passes_over_locked_jobs_for_update_waits_and_a_rollback_returns_the_job() {
    use lockstep_models::postgres::server::Producer;
    let config = PgServerConfig {
        producer: Some(Producer {
            every: Dur::from_millis(10),
            jobs: 3,
        }),
        ..PgServerConfig::default()
    };
    // Each script dequeues for itself: node n is the worker of its statements.
    let dequeue = |skip_locked, n| Stmt::Dequeue {
        skip_locked,
        worker: NodeId(n),
    };
    // Jobs 1, 2, 3 are enqueued at 10, 20 and 30 ms.
    let a = script(
        SERVER,
        vec![
            (50, Step::Send(1, dequeue(true, 1))),
            (100, Step::Send(1, Stmt::Complete { job: 1 })),
        ],
    );
    let b = script(
        SERVER,
        vec![(60, Step::Send(1, dequeue(true, 2))), (150, Step::Close(1))],
    );
    // Without SKIP LOCKED: waits for job 1's row; at its commit goes on to job 2, locked by
    // node 2, and waits again; node 2's session ends and its transaction rolls back, so job 2
    // is back in the queue, and node 3 has it.
    let c = script(SERVER, vec![(70, Step::Send(1, dequeue(false, 3)))]);
    let d = script(
        SERVER,
        vec![
            (200, Step::Send(1, dequeue(true, 4))),
            (210, Step::Send(2, dequeue(true, 4))),
        ],
    );
    let w = run(vec![pg(config)], vec![a, b, c, d], 1, vec![]);
    let at = |node| -> Vec<(u64, Answer)> {
        answers(&w, node)
            .iter()
            .map(|(t, _, _, a)| (*t, *a))
            .collect()
    };
    assert_eq!(at(1), [(50, Answer::Job(Some(1))), (100, Answer::Done)]);
    assert_eq!(at(2), [(60, Answer::Job(Some(2)))]);
    assert_eq!(at(3), [(150, Answer::Job(Some(2)))]);
    assert_eq!(
        at(4),
        [(200, Answer::Job(Some(3))), (210, Answer::Job(None))],
        "SKIP LOCKED: jobs 2 and 3 are locked, job 1 done: no row"
    );
    assert_eq!(server(&w).pending_jobs(), [2, 3]);
    // The server records each row it locks as claimed for its worker, when it locks it.
    let claims: Vec<(u64, u64, u32)> = w
        .history()
        .iter()
        .filter_map(|r| match r.event {
            Event::Claimed { job, client } => Some((r.time.as_nanos() / 1_000_000, job, client.0)),
            _ => None,
        })
        .collect();
    assert_eq!(claims, [(50, 1, 1), (60, 2, 2), (150, 2, 3), (200, 3, 4)]);
}
