//! The Consul servers' timing rules (docs/families/consul.md, "The servers"), pinned with a
//! scripted client: it sends requests at fixed times to the leader (following `NotLeader`
//! answers) and keeps every answer, over links of a constant 2 ms, so every time is exact to
//! the millisecond.
//!
//! - A session with TTL T and no renewals is destroyed by the leader between `2T` after its
//!   timer was armed and `2T` plus one apply (`session_ttl.go`: `SessionTTLMultiplier`).
//! - The key's lock-delay refuses an acquire on the leader for its full length, and not after
//!   (`state/delay.go`, `kvs_endpoint.go`).
//! - A new leader gives every session a full `2T` from its election (`initializeSessionTimers`),
//!   whatever was left on the old leader's timers.
//! - A write of the resource kept in the KV store lands while its transaction's check on the
//!   lock key holds (`check-session`, `check-index`), and fails once the key moved on.

use std::collections::BTreeMap;

use lockstep_check::{Event, GrantId, NodeId as Who, OpId};
use lockstep_models::Observation;
use lockstep_models::consul::resource::{ResourceGuard, TxnCheck};
use lockstep_models::consul::server::{ConsulServer, ConsulServerConfig};
use lockstep_models::consul::{Behavior, Msg, Reply, Request, ServerTimer, SessionId};
use lockstep_models::env::{Scoped, Side};
use lockstep_models::family::Service;
use lockstep_models::storage::{RequestKind, StorageReply, StorageRequest, StorageResult};
use lockstep_sim::{
    ClockKind, Distribution, Dur, EnvOf, Fault, LinkConfig, LocalTime, NodeConfig, NodeId, Process,
    ScheduledFault, Time, TimerId, TraceKind, When, World, WorldConfig,
};

const SERVERS: u32 = 3;
const SCRIPT: NodeId = NodeId(SERVERS);
/// The one-way latency of every link.
const LATENCY_MS: u64 = 2;
const TTL_MS: u64 = 10_000;
const LOCK_DELAY_MS: u64 = 15_000;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum TestTimer {
    Server(ServerTimer),
    Step(usize),
    /// Send step `n` again (no leader was known).
    Again(usize),
}

#[derive(Debug)]
struct ServerSide;

impl Side for ServerSide {
    type OuterMsg = Msg;
    type OuterTimer = TestTimer;
    type Msg = Msg;
    type Timer = ServerTimer;
    fn msg(msg: Msg) -> Msg {
        msg
    }
    fn timer(timer: ServerTimer) -> TestTimer {
        TestTimer::Server(timer)
    }
}

/// A scripted request; sessions are named by the step that created them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Step {
    Create,
    Renew(usize),
    Acquire(usize),
    Destroy(usize),
    /// A write of the resource with `guard`'s check, by the session of the step given, with
    /// the `ModifyIndex` the acquisition of the other step given answered.
    Write(usize, usize, ResourceGuard, u64),
    Read,
}

/// A client that sends its steps at their times (ms), to the leader it last heard of.
#[derive(Clone, Debug)]
struct Script {
    steps: Vec<(u64, Step)>,
    leader: NodeId,
    sessions: BTreeMap<usize, SessionId>,
    /// (ms, step, answer).
    answers: Vec<(u64, usize, Reply)>,
}

#[allow(clippy::large_enum_variant)]
#[derive(Clone, Debug)]
enum TestNode {
    Server(ConsulServer),
    Script(Script),
}

fn now_ms(env: &impl EnvOf<TestNode>) -> u64 {
    (env.mono().as_nanos() / 1_000_000) as u64
}

impl Script {
    fn send(&self, env: &mut impl EnvOf<TestNode>, n: usize) {
        let session = |k: usize| self.sessions[&k];
        let req = match self.steps[n].1 {
            Step::Create => Request::SessionCreate {
                ttl: Dur::from_millis(TTL_MS),
                lock_delay: Dur::from_millis(LOCK_DELAY_MS),
                behavior: Behavior::Release,
            },
            Step::Renew(k) => Request::SessionRenew {
                session: session(k),
            },
            Step::Acquire(k) => Request::Acquire {
                session: session(k),
            },
            Step::Destroy(k) => Request::SessionDestroy {
                session: session(k),
            },
            Step::Write(k, acquired, guard, value) => {
                let modify_index = match self.answers.iter().find(|a| a.1 == acquired) {
                    Some((_, _, Reply::Acquire { modify_index, .. })) => *modify_index,
                    other => panic!("step {acquired} is no acquisition: {other:?}"),
                };
                Request::Resource {
                    op: op(n, RequestKind::Write { value, base: 0 }),
                    check: guard.check(session(k), modify_index),
                }
            }
            Step::Read => Request::Resource {
                op: op(n, RequestKind::Read),
                check: TxnCheck::None,
            },
        };
        env.send(self.leader, Msg::Request { id: n as u64, req });
    }
}

/// Resource operation `n` of the script.
fn op(n: usize, kind: RequestKind) -> StorageRequest {
    StorageRequest {
        op: OpId {
            client: Who(SCRIPT.0),
            seq: n as u32,
        },
        grant: GrantId {
            client: Who(SCRIPT.0),
            seq: 1,
        },
        token: None,
        kind,
    }
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
            TestNode::Server(n) => n.on_start(&mut Scoped::<_, ServerSide>::new(env)),
        }
    }

    fn on_message(&mut self, env: &mut impl EnvOf<Self>, from: NodeId, msg: Msg) {
        match self {
            TestNode::Server(n) => {
                n.on_message(&mut Scoped::<_, ServerSide>::new(env), from, msg);
            }
            TestNode::Script(s) => {
                let Msg::Reply { id, reply } = msg else {
                    return;
                };
                let n = id as usize;
                match reply {
                    Reply::NotLeader { leader: Some(l) } => {
                        s.leader = l;
                        s.send(env, n);
                    }
                    Reply::NotLeader { leader: None } => {
                        env.set_timer(ClockKind::Mono, Dur::from_millis(100), TestTimer::Again(n));
                    }
                    reply => {
                        if let Reply::Session(id) = reply {
                            s.sessions.insert(n, id);
                        }
                        s.answers.push((now_ms(env), n, reply));
                    }
                }
            }
        }
    }

    fn on_timer(&mut self, env: &mut impl EnvOf<Self>, _: TimerId, timer: TestTimer) {
        match (self, timer) {
            (TestNode::Server(n), TestTimer::Server(t)) => {
                n.on_timer(&mut Scoped::<_, ServerSide>::new(env), t);
            }
            (TestNode::Script(s), TestTimer::Step(n) | TestTimer::Again(n)) => s.send(env, n),
            _ => unreachable!(),
        }
    }

    fn on_crash(&mut self) {
        if let TestNode::Server(n) = self {
            n.on_crash();
        }
    }

    fn on_restart(&mut self, env: &mut impl EnvOf<Self>) {
        if let TestNode::Server(n) = self {
            n.on_restart(&mut Scoped::<_, ServerSide>::new(env));
        }
    }
}

/// Three servers with Consul's default timing (no health check: the TTL alone) and the script,
/// every clock perfect and reading true time, ending at `secs`.
fn world(seed: u64, steps: Vec<(u64, Step)>, secs: u64) -> World<TestNode> {
    let members: Vec<NodeId> = (0..SERVERS).map(NodeId).collect();
    let mut config = ConsulServerConfig::new(members.clone());
    config.health_check = None;
    let mut procs: Vec<TestNode> = members
        .iter()
        .map(|m| TestNode::Server(ConsulServer::new(config.clone(), *m)))
        .collect();
    procs.push(TestNode::Script(Script {
        steps,
        leader: NodeId(0),
        sessions: BTreeMap::new(),
        answers: Vec::new(),
    }));
    let nodes = (0..procs.len())
        .map(|i| NodeConfig {
            mono_start: Some(LocalTime::from_nanos(0)),
            ..NodeConfig::named(if i < SERVERS as usize {
                format!("consul-{}", i + 1)
            } else {
                "script".to_string()
            })
        })
        .collect();
    let mut cfg = WorldConfig::new(seed, Time::from_millis(secs * 1_000), nodes);
    cfg.link = LinkConfig {
        latency: Distribution::Constant(Dur::from_millis(LATENCY_MS)),
        ..LinkConfig::default()
    };
    cfg.trace = true;
    // Wall clocks read true time too.
    cfg.wall_epoch = LocalTime::from_nanos(0);
    World::new(cfg, procs)
}

fn script(w: &World<TestNode>) -> &Script {
    match w.process(SCRIPT) {
        TestNode::Script(s) => s,
        TestNode::Server(_) => panic!("not the script"),
    }
}

fn server(w: &World<TestNode>, m: u32) -> &ConsulServer {
    match w.process(NodeId(m)) {
        TestNode::Server(s) => s,
        TestNode::Script(_) => panic!("not a server"),
    }
}

/// The answer to step `n`: (ms, reply).
fn answer(w: &World<TestNode>, n: usize) -> (u64, Reply) {
    let a = script(w).answers.iter().find(|a| a.1 == n);
    let &(at, _, reply) = a.unwrap_or_else(|| panic!("step {n} unanswered: {:?}", script(w)));
    (at, reply)
}

/// Whether the session made by step `n` lives on each server, as it applied its log.
fn alive(w: &World<TestNode>, n: usize) -> Vec<bool> {
    let id = script(w).sessions[&n];
    (0..SERVERS)
        .map(|m| server(w, m).sessions().contains_key(&id))
        .collect()
}

/// The times (ns) of the marks named `mark`, with their node.
fn marks(w: &World<TestNode>, mark: &str) -> Vec<(u64, NodeId)> {
    let text = format!("mark {mark}");
    w.trace()
        .expect("traced")
        .iter()
        .filter(|e| e.kind == TraceKind::Mark && e.text == text)
        .map(|e| (e.time.as_nanos(), e.node))
        .collect()
}

fn run_to(w: &mut World<TestNode>, ms: u64) {
    w.run_until(Time::from_millis(ms));
}

const MS: u64 = 1_000_000;

// A session is created at 20 s (the cluster elected its first leader by then: election
// timeouts of 5-10 s); the leader arms its timer as it applies the creation, which its answer
// leaves 2 ms later.

#[test]
fn a_session_without_renewals_is_destroyed_between_twice_its_ttl_and_one_apply_later() {
    for seed in 1..=20 {
        let steps = vec![(20_000, Step::Create), (20_100, Step::Acquire(0))];
        let mut w = world(seed, steps, 90);
        run_to(&mut w, 20_500);
        let (answered, reply) = answer(&w, 0);
        assert!(matches!(reply, Reply::Session(_)), "seed {seed}: {reply:?}");
        assert!(matches!(
            answer(&w, 1).1,
            Reply::Acquire { locked: true, .. }
        ));
        // Armed at the leader's apply, which the answer left 2 ms later.
        let armed = answered - LATENCY_MS;
        let expires = armed + 2 * TTL_MS;
        // Alive on every server until the timer runs out.
        run_to(&mut w, expires - 1);
        assert_eq!(alive(&w, 0), vec![true; 3], "seed {seed}");
        // The leader proposes the destroy as its timer fires; it applies once a majority has
        // the entry: one round trip. Every member applies it once it hears of the commit.
        run_to(&mut w, expires + 2 * LATENCY_MS);
        let leader = script(&w).leader;
        assert!(
            !server(&w, leader.0)
                .sessions()
                .contains_key(&script(&w).sessions[&0]),
            "seed {seed}: the leader applied the destroy within one round trip"
        );
        let invalidated = marks(&w, "session-invalidated");
        assert_eq!(
            invalidated.first().map(|m| m.0),
            Some((expires + 2 * LATENCY_MS) * MS),
            "seed {seed}: {invalidated:?}"
        );
        run_to(&mut w, expires + 200);
        assert_eq!(alive(&w, 0), vec![false; 3], "seed {seed}");
    }
}

#[test]
fn the_lock_delay_refuses_an_acquire_on_the_leader_for_its_full_length_and_not_after() {
    for seed in 1..=20 {
        // Session A takes the key and is destroyed at 25 s; session B tries the key just
        // inside the lock-delay and just past it.
        let destroy = 25_000;
        let steps = vec![
            (20_000, Step::Create),
            (20_100, Step::Create),
            (20_200, Step::Acquire(0)),
            (destroy, Step::Destroy(0)),
            (destroy + 1_000, Step::Acquire(1)),
            (destroy + LOCK_DELAY_MS - 10, Step::Acquire(1)),
            (destroy + LOCK_DELAY_MS + 10, Step::Acquire(1)),
        ];
        let mut w = world(seed, steps, 60);
        run_to(&mut w, destroy + 500);
        assert!(matches!(
            answer(&w, 2).1,
            Reply::Acquire { locked: true, .. }
        ));
        assert_eq!(answer(&w, 3), (destroy + 4 * LATENCY_MS, Reply::Done));
        // Every server set the delay as it applied the destroy, on its own wall clock.
        let leader = script(&w).leader;
        let applied_at_leader = destroy + 3 * LATENCY_MS;
        let until = server(&w, leader.0)
            .lock_delay_until()
            .expect("the leader set the delay");
        assert_eq!(
            until.as_nanos() / 1_000_000,
            (applied_at_leader + LOCK_DELAY_MS) as i64,
            "seed {seed}"
        );
        for m in 0..SERVERS {
            assert!(server(&w, m).lock_delay_until().is_some(), "seed {seed}");
        }
        w.run();
        // Refused at once by the leader (no raft round: one hop there and back) while the
        // delay runs, granted after it.
        for (n, locked) in [(4, false), (5, false), (6, true)] {
            let (at, reply) = answer(&w, n);
            let Reply::Acquire { locked: got, .. } = reply else {
                panic!("seed {seed}: step {n}: {reply:?}");
            };
            assert_eq!(got, locked, "seed {seed}: step {n}");
            let sent = w_step_time(&w, n);
            let rounds = if locked { 2 } else { 1 };
            assert_eq!(at, sent + 2 * rounds * LATENCY_MS, "seed {seed}: step {n}");
        }
    }
}

fn w_step_time(w: &World<TestNode>, n: usize) -> u64 {
    script(w).steps[n].0
}

#[test]
fn a_new_leader_gives_every_session_a_full_twice_ttl_from_its_election() {
    for seed in 1..=20 {
        // Sessions A and B at 20 s; A renewed at 23 s. On the first leader they would die at
        // 40 s (B) and 43 s (A). That leader's process is killed at 25 s.
        let steps = vec![
            (20_000, Step::Create),
            (20_000, Step::Create),
            (23_000, Step::Renew(0)),
        ];
        let mut w = world(seed, steps, 120);
        run_to(&mut w, 24_000);
        assert_eq!(answer(&w, 2).1, Reply::Renewed, "seed {seed}");
        let old = script(&w).leader;
        w.schedule(ScheduledFault {
            when: When::At(Time::from_millis(25_000)),
            fault: Fault::Crash {
                node: old,
                restart_after: None,
            },
            role: None,
        });
        // The survivors elect a leader once their election timeouts (5-10 s) pass without
        // the old one's heartbeats; it starts the timers as it applies its term's first entry.
        run_to(&mut w, 40_000);
        let ready: Vec<(u64, NodeId)> = marks(&w, "leader-ready")
            .into_iter()
            .filter(|m| m.0 > 25_000 * MS)
            .collect();
        let [(elected, new)] = ready[..] else {
            panic!("seed {seed}: {ready:?}");
        };
        assert!(
            (29_000 * MS..36_000 * MS).contains(&elected),
            "seed {seed}: elected at {elected} ns"
        );
        assert_ne!(new, old, "seed {seed}");
        let new = new.0;
        // Both sessions outlive the old leader's timers (40 s and 43 s), to the new leader's
        // 2T.
        let expires = elected + 2 * TTL_MS * MS;
        assert!(expires > 44_000 * MS, "seed {seed}");
        w.run_until(Time::from_nanos(expires - MS));
        for n in [0, 1] {
            let id = script(&w).sessions[&n];
            assert!(
                server(&w, new).sessions().contains_key(&id),
                "seed {seed}: session {n} died before {expires} ns"
            );
        }
        w.run_until(Time::from_nanos(expires + 2 * LATENCY_MS * MS));
        for n in [0, 1] {
            let id = script(&w).sessions[&n];
            assert!(
                !server(&w, new).sessions().contains_key(&id),
                "seed {seed}: session {n} lives past {expires} ns plus one apply"
            );
        }
    }
}

#[test]
fn a_resource_write_lands_while_its_check_holds_on_the_lock_key_and_fails_after() {
    use ResourceGuard::{CheckIndex, CheckSession, None as Plain};
    let result = |w: &World<TestNode>, n: usize| match answer(w, n).1 {
        Reply::Resource(StorageReply { result, .. }) => result,
        other => panic!("step {n}: {other:?}"),
    };
    for seed in 1..=10 {
        // Session A takes the key (step 1) and writes under each guard; A is destroyed; its
        // writes under each guard again; B takes the key after the lock-delay (step 9).
        let steps = vec![
            (20_000, Step::Create),
            (20_100, Step::Acquire(0)),
            (20_200, Step::Write(0, 1, CheckSession, 1)),
            (20_300, Step::Write(0, 1, CheckIndex, 2)),
            (21_000, Step::Destroy(0)),
            (21_100, Step::Write(0, 1, CheckSession, 3)),
            (21_200, Step::Write(0, 1, CheckIndex, 4)),
            (21_300, Step::Create),
            (21_400, Step::Read),
            (37_000, Step::Acquire(7)),
            (37_100, Step::Write(0, 1, CheckSession, 5)),
            (37_200, Step::Write(0, 1, CheckIndex, 6)),
            (37_300, Step::Write(7, 9, CheckIndex, 7)),
            (37_400, Step::Write(0, 1, Plain, 8)),
            (37_500, Step::Read),
        ];
        let mut w = world(seed, steps, 40);
        w.run();
        assert!(matches!(
            answer(&w, 9).1,
            Reply::Acquire { locked: true, .. }
        ));
        let got: Vec<StorageResult> = [2, 3, 5, 6, 8, 10, 11, 12, 13, 14]
            .iter()
            .map(|&n| result(&w, n))
            .collect();
        use StorageResult::{Read, Rejected, Written};
        assert_eq!(
            got,
            vec![
                Written,
                Written,
                Rejected,
                Rejected,
                Read(2),
                Rejected,
                Rejected,
                Written,
                Written,
                Read(8),
            ],
            "seed {seed}"
        );
        // Every server applied the same writes.
        for m in 0..SERVERS {
            assert_eq!(server(&w, m).resource(), 8, "seed {seed}");
        }
    }
}
