//! ZooKeeper: the ensemble, sessions and the lock recipe. Baseline safety and liveness, the
//! session expiry of a silent holder against `SessionTrackerImpl`'s rule, and the herd effect.

use lockstep_check::{Options, Validity, check};
use lockstep_models::system::{SystemSpec, counters, history};
use lockstep_models::zookeeper::ZooKeeper;
use lockstep_models::zookeeper::client::{Watch, ZooKeeperLockConfig};
use lockstep_models::zookeeper::server::ZooKeeperServerConfig;
use lockstep_models::{Family, Node};
use lockstep_sim::{Dur, Fault, PartitionMode, ScheduledFault, Shape, Time, When, World};

use crate::support::*;

/// Three servers (tickTime 2 s), `clients` clients with 4 s sessions.
pub(crate) fn zk_spec(clients: u32, watch: Watch) -> SystemSpec<ZooKeeper> {
    let mut client = ZooKeeperLockConfig::new(Vec::new());
    client.session_timeout = Dur::from_secs(4);
    client.watch = watch;
    let mut spec = spec(ZooKeeper {
        server: ZooKeeperServerConfig::new(Vec::new()),
        members: 3,
        client,
    });
    spec.clients = clients;
    spec
}

#[test]
fn without_faults_the_recipe_is_exclusive_and_live() {
    for seed in 1..=5 {
        let spec = zk_spec(2, Watch::Predecessor);
        let mut w = world(&spec, seed, 30, |_| {});
        let outcome = w.run();
        let v = verdict(&w, outcome);
        assert_eq!(v.mutual_exclusion, Validity::Valid, "seed {seed}: {v:?}");
        assert!(v.liveness.grants >= 50, "seed {seed}: {:?}", v.liveness);
        // With the predecessor watch, each release wakes at most the one waiter behind it.
        let c = counters(spec.family.counters(), w.observations());
        assert!(c[1].value <= c[0].value, "seed {seed}: {c:?}");
    }
}

/// When random faults stop, and when the run ends.
const QUIET: Dur = Dur::from_secs(12);
const END: Dur = Dur::from_secs(30);

/// A ZooKeeper world with a random network and fault schedule drawn from `seed`, over every
/// node (servers, storage, clients): partitions of every shape in both modes, crashes with
/// restarts, pauses, drift up to ±25 %, wall-clock steps, delayed links; from [`QUIET`] on
/// every partition heals and every node resumes and restarts. Three or five servers
/// (tickTime 200 ms), three clients with 2 s sessions.
fn random_world(seed: u64) -> World<Node<ZooKeeper>> {
    use lockstep_sim::{Fault, Rng, ScheduledFault, When};
    let mut r = Rng::fork(seed, "schedule");
    let mut spec = zk_spec(3, Watch::Predecessor);
    // A fast ensemble, so that leaders come and go within the run: tickTime 200 ms (a silent
    // leader is given up after syncLimit × tickTime = 1 s), 2 s sessions.
    spec.family.members = if r.chance_ppm(300_000) { 5 } else { 3 };
    spec.family.server = ZooKeeperServerConfig::with_tick(Vec::new(), ms(200));
    spec.family.client.session_timeout = ms(2_000);
    let n = spec.layout().nodes.len() as u32;
    let at = |t: Dur, fault: Fault| ScheduledFault {
        when: When::At(Time::from_nanos(t.as_nanos())),
        fault,
        role: None,
    };
    world(&spec, seed, END.as_millis() / 1_000, |cfg| {
        for node in &mut cfg.nodes {
            node.drift_ppm = r.between(0, 1_000) as i64 - 500;
        }
        cfg.max_events = 3_000_000;
        cfg.link = crate::raft_host::random_link(&mut r);
        for _ in 0..r.between(3, 12) {
            let start = ms(r.between(300, QUIET.as_millis() - 500));
            let fault = crate::raft_host::random_fault(&mut r, n, QUIET.saturating_sub(start));
            cfg.faults.push(at(start, fault));
        }
        cfg.faults.push(at(QUIET, Fault::Heal));
        for i in 0..n {
            let node = lockstep_sim::NodeId(i);
            cfg.faults.push(at(QUIET, Fault::Resume { node }));
            cfg.faults.push(at(QUIET, Fault::Restart { node }));
        }
    })
}

/// What the invariant checks saw in one run.
#[derive(Debug, Default)]
struct Seen {
    epochs_led: u64,
    applied: u64,
    expired: u64,
    grants_after_quiet: u64,
}

/// Every ephemeral node of a running server's tree belongs to a session in its table.
fn ephemerals_have_sessions(w: &World<Node<ZooKeeper>>, members: u32) -> Result<(), String> {
    for i in 0..members {
        let id = lockstep_sim::NodeId(i);
        if w.status(id) != lockstep_sim::Status::Up {
            continue;
        }
        let Node::Service(s) = w.process(id) else {
            unreachable!()
        };
        let tree = s.tree();
        for (path, owner) in tree.ephemerals() {
            if !tree.sessions().contains_key(&owner) {
                return Err(format!(
                    "zk-{} at {}: {path} outlives its session {owner:x}",
                    i + 1,
                    w.now()
                ));
            }
        }
    }
    Ok(())
}

/// The ensemble's invariants over what every server applied, across restarts: zxids
/// increase on each server and name the same transaction everywhere; at most one leader per
/// epoch; no ephemeral node is created for a session that is not open (so none outlives its
/// session's close, which deletes the session's nodes in the same transaction).
fn audit_invariants(
    w: &World<Node<ZooKeeper>>,
    members: u32,
    seen: &mut Seen,
) -> Result<(), String> {
    use lockstep_models::zookeeper::Zxid;
    use lockstep_models::zookeeper::server::Audit;
    use lockstep_models::zookeeper::tree::{Txn, TxnResult};
    use std::collections::{BTreeMap, BTreeSet};
    let mut by_zxid: BTreeMap<Zxid, Txn> = BTreeMap::new();
    let mut leaders: BTreeMap<u64, u32> = BTreeMap::new();
    for i in 0..members {
        let Node::Service(s) = w.process(lockstep_sim::NodeId(i)) else {
            unreachable!()
        };
        let (mut last, mut live) = (None::<Zxid>, BTreeSet::new());
        for a in s.audit() {
            match a {
                Audit::Boot => (last, live) = (None, BTreeSet::new()),
                Audit::Leading { epoch } => {
                    seen.epochs_led += 1;
                    if let Some(other) = leaders.insert(*epoch, i) {
                        return Err(format!(
                            "epoch {epoch} led by zk-{} and zk-{}",
                            other + 1,
                            i + 1
                        ));
                    }
                }
                Audit::Expired { .. } => seen.expired += 1,
                Audit::Applied { zxid, txn, result } => {
                    seen.applied += 1;
                    if last.is_some_and(|l| *zxid <= l) {
                        return Err(format!("zk-{}: zxid {zxid:?} after {last:?}", i + 1));
                    }
                    last = Some(*zxid);
                    if let Some(other) = by_zxid.insert(*zxid, txn.clone()) {
                        if other != *txn {
                            return Err(format!("zxid {zxid:?} is {other:?} and {txn:?}"));
                        }
                    }
                    match txn {
                        Txn::CreateSession { session, .. } => {
                            live.insert(*session);
                        }
                        Txn::CloseSession { session } => {
                            live.remove(session);
                        }
                        Txn::Create {
                            session,
                            ephemeral: true,
                            ..
                        } if matches!(result, TxnResult::Created { .. })
                            && !live.contains(session) =>
                        {
                            return Err(format!(
                                "zk-{}: ephemeral {result:?} created for closed session {session:x}",
                                i + 1
                            ));
                        }
                        _ => {}
                    }
                }
            }
        }
    }
    Ok(())
}

fn random_run(seed: u64) -> Seen {
    random_run_world(seed).1
}

fn random_run_world(seed: u64) -> (World<Node<ZooKeeper>>, Seen) {
    let mut w = random_world(seed);
    let members = (0..w.names().len())
        .filter(|&i| w.names()[i].starts_with("zk-"))
        .count() as u32;
    let mut seen = Seen::default();
    // A nemesis on top of the schedule: every 250 ms until the quiet tail, one time in six,
    // it crashes, pauses, isolates, slows or cuts off the current leader.
    let mut r = lockstep_sim::Rng::fork(seed, "nemesis");
    let n = w.names().len() as u32;
    let mut t = Time::from_millis(250);
    while t < w.end() {
        assert_eq!(
            w.run_until(t),
            lockstep_sim::Outcome::Completed,
            "seed {seed}"
        );
        if let Err(e) = ephemerals_have_sessions(&w, members) {
            panic!("seed {seed}: {e}");
        }
        let left = QUIET.saturating_sub(Dur::from_nanos(t.as_nanos()));
        if left > ms(500) && r.chance_ppm(166_667) {
            let leader = (0..members)
                .map(lockstep_sim::NodeId)
                .find(|&id| matches!(w.process(id), Node::Service(s) if s.is_ready_leader()));
            if let Some(leader) = leader {
                let fault = crate::raft_host::leader_fault(&mut r, n, leader, left);
                w.schedule(lockstep_sim::ScheduledFault {
                    when: lockstep_sim::When::At(t),
                    fault,
                    role: None,
                });
            }
        }
        t += ms(250);
    }
    assert_eq!(w.run(), lockstep_sim::Outcome::Completed, "seed {seed}");
    if let Err(e) = audit_invariants(&w, members, &mut seen) {
        panic!("seed {seed}: {e}");
    }
    // Every grant names a ticket a member issued to its client before it, through crashed
    // members' replays and leader changes: the checker refuses no history.
    let h = history(&w, lockstep_sim::Outcome::Completed);
    if let Err(e) = check(&h, &Options::default()) {
        panic!("seed {seed}: {e}");
    }
    let quiet = QUIET.as_nanos();
    seen.grants_after_quiet = w
        .history()
        .iter()
        .filter(|r| r.time.as_nanos() >= quiet)
        .filter(|r| matches!(r.event, lockstep_check::Event::Grant { .. }))
        .count() as u64;
    (w, seen)
}

fn random_runs(seeds: std::ops::Range<u64>) {
    let runs = seeds.end - seeds.start;
    let mut total = Seen::default();
    let mut stuck = Vec::new();
    for seed in seeds {
        let s = random_run(seed);
        total.epochs_led += s.epochs_led;
        total.applied += s.applied;
        total.expired += s.expired;
        if s.grants_after_quiet == 0 {
            stuck.push(seed);
        }
    }
    eprintln!("{runs} runs: {total:?}; no grant after the faults stopped: {stuck:?}");
    // The schedules must be disruptive: leaders change and sessions expire.
    assert!(total.epochs_led > 2 * runs, "{total:?}");
    assert!(total.expired > runs, "{total:?}");
    assert!(stuck.is_empty(), "{stuck:?}");
}

#[test]
fn zookeeper_invariants_hold_under_random_faults_seeds_0_to_499() {
    random_runs(0..500);
}

#[test]
fn zookeeper_invariants_hold_under_random_faults_seeds_500_to_999() {
    random_runs(500..1_000);
}

// Node ids of `zk_spec(2, _)`: the three servers, storage, then the clients.
const ZK_1: lockstep_sim::NodeId = lockstep_sim::NodeId(0);
const ZK_2: lockstep_sim::NodeId = lockstep_sim::NodeId(1);
const ZK_3: lockstep_sim::NodeId = lockstep_sim::NodeId(2);
const ZK_CLIENT_2: lockstep_sim::NodeId = lockstep_sim::NodeId(5);

/// Cuts client-2 off from `servers` (dropping) from `start_ms` for `for_ms`.
fn cut_client_2(start_ms: u64, for_ms: u64, servers: &[lockstep_sim::NodeId]) -> ScheduledFault {
    at(
        start_ms,
        Fault::Partition {
            shape: Shape::Split {
                groups: vec![vec![ZK_CLIENT_2], servers.to_vec()],
            },
            mode: PartitionMode::Drop,
            duration: Some(ms(for_ms)),
        },
    )
}

/// The grants of `client` at or after `from_ms`.
fn grants_after(w: &World<Node<ZooKeeper>>, client: lockstep_sim::NodeId, from_ms: u64) -> usize {
    w.history()
        .iter()
        .filter(|r| r.node == client && r.time >= Time::from_millis(from_ms))
        .filter(|r| matches!(r.event, lockstep_check::Event::Grant { .. }))
        .count()
}

/// A client process that crashes and restarts numbers its connections and xids from 1
/// again, under a new session. The leader must know a request by its `(sessionId, cxid)`:
/// one that took `(connection, xid)` as monotonic per client dropped the restarted client's
/// requests as duplicates once it came back to a member it had used before with a higher
/// connection number; a dropped release left its lock node in place under a live session,
/// and every waiter behind it stuck (chaos-zookeeper-czxid-fenced, seeds 186, 514, 596).
#[test]
fn a_restarted_client_is_served_by_a_member_it_used_before_the_crash() {
    for seed in 1..=3 {
        let faults = vec![
            // Before the crash client-2 can only use zk-3, and is cut off twice, so that
            // it cycles through the other servers and reaches zk-3 again on connection 7
            // or later.
            cut_client_2(0, 20_000, &[ZK_1, ZK_2]),
            cut_client_2(3_000, 3_000, &[ZK_3]),
            cut_client_2(11_000, 3_000, &[ZK_3]),
            at(
                20_000,
                Fault::Crash {
                    node: ZK_CLIENT_2,
                    restart_after: Some(ms(1_000)),
                },
            ),
            // The restarted client makes its session through zk-1 (connection 3 at most),
            // then moves to zk-3 (two connections later).
            cut_client_2(20_000, 8_000, &[ZK_2, ZK_3]),
            cut_client_2(28_000, 22_000, &[ZK_1, ZK_2]),
        ];
        let mut w = world(&zk_spec(2, Watch::Predecessor), seed, 50, |cfg| {
            cfg.faults = faults
        });
        assert_eq!(w.names()[ZK_CLIENT_2.index()], "client-2");
        w.run();
        assert!(grants_after(&w, ZK_CLIENT_2, 21_000) > 0, "seed {seed}");
        let late = grants_after(&w, ZK_CLIENT_2, 35_000);
        assert!(late > 0, "seed {seed}: client-2 is never granted on zk-3");
    }
}

/// A create held on the network from a connection the client has left arrives after the
/// client reconnected elsewhere and created its node again. ZooKeeper refuses it: the
/// session's owner is now the member the client reconnected to, and a request through any
/// other member is `SessionMovedException` (ZOOKEEPER-710), which closes the stale
/// connection. Applied, it made a second lock node the client never learns of, kept by its
/// live session, that every later acquisition queued behind for good
/// (chaos-zookeeper-czxid-fenced, seed 670).
#[test]
fn a_create_from_a_connection_the_client_left_is_refused_as_session_moved() {
    for seed in 1..=3 {
        // Client-2 starts on zk-3, the only server it can reach for the first 4 s.
        let mut w = world(&zk_spec(2, Watch::Predecessor), seed, 40, |cfg| {
            cfg.trace = true;
            cfg.faults = vec![cut_client_2(0, 4_000, &[ZK_1, ZK_2])];
        });
        w.run_until(Time::from_millis(5_000));
        let creates = w
            .trace()
            .expect("traced")
            .iter()
            .filter(|e| e.node == ZK_CLIENT_2 && e.kind == lockstep_sim::TraceKind::Mark)
            .filter(|e| e.text == "mark lock-create-sent")
            .count() as u32;
        // Its next create is held on the way to zk-3 for 6 s: client-2 hears nothing,
        // reconnects to zk-1 with its session, finds no node of its own, and creates it
        // again; the held create reaches zk-3 afterwards, on the old connection.
        w.schedule(ScheduledFault {
            when: When::OnMark {
                node: ZK_CLIENT_2,
                mark: "lock-create-sent".into(),
                occurrence: creates + 1,
                before: None,
            },
            fault: Fault::Partition {
                shape: Shape::OneWay {
                    from: vec![ZK_CLIENT_2],
                    to: vec![ZK_3],
                },
                mode: PartitionMode::Hold,
                duration: Some(ms(6_000)),
            },
            role: None,
        });
        w.run();
        let held = w.fault_log().iter().any(|f| {
            matches!(f.fault, Fault::Partition { .. }) && f.time > Time::from_millis(5_000)
        });
        assert!(held, "seed {seed}: the create was not held");
        assert!(
            grants_after(&w, lockstep_sim::NodeId(4), 25_000)
                + grants_after(&w, ZK_CLIENT_2, 25_000)
                > 0,
            "seed {seed}: no grant after the heal"
        );
    }
}

const ZK_CLIENT_1: lockstep_sim::NodeId = lockstep_sim::NodeId(4);

/// Every grant names its lock node's czxid as its ticket, fenced or not (the token is the
/// czxid only when fencing), and a member recorded `Issued` of that ticket to that client
/// before it: the checker places it in service order and refuses none of the histories.
#[test]
fn every_grant_names_a_ticket_a_member_issued_to_its_client_before_it() {
    use lockstep_check::Event;
    use std::collections::BTreeSet;
    for fencing in [false, true] {
        for seed in 1..=5 {
            let mut spec = zk_spec(3, Watch::Predecessor);
            spec.family.client.fencing = fencing;
            let mut w = world(&spec, seed, 30, |_| {});
            let outcome = w.run();
            let h = history(&w, outcome);
            let mut issued = BTreeSet::new();
            let mut grants = 0;
            for (i, e) in h.entries.iter().enumerate() {
                match &e.event {
                    Event::Issued { client, ticket } => {
                        assert!(
                            issued.insert((*client, *ticket)),
                            "seed {seed}: entry {i}: the history keeps one Issued per ticket"
                        );
                    }
                    Event::Grant {
                        grant,
                        token,
                        ticket,
                    } => {
                        let ticket = ticket.expect("a ZooKeeper grant names its ticket");
                        assert!(
                            issued.contains(&(grant.client, ticket)),
                            "seed {seed} fencing {fencing}: entry {i}: {grant:?} ticket {ticket:x} \
                             was not issued to its client before it"
                        );
                        assert_eq!(*token, fencing.then_some(ticket), "seed {seed}");
                        grants += 1;
                    }
                    _ => {}
                }
            }
            assert!(grants >= 50, "seed {seed}: {grants} grants");
            let v = check(&h, &Options::default()).expect("well formed");
            assert_eq!(v.mutual_exclusion, Validity::Valid, "seed {seed}: {v:?}");
            assert_eq!(v.token_order.count, 0, "seed {seed}: {v:?}");
        }
    }
}

/// A change of the node first in line, found by replaying what a member applied.
#[derive(Debug)]
struct InLine {
    /// The first node's path, czxid, sequence number and ephemeral owner; `None` when empty.
    first: Option<(String, lockstep_models::zookeeper::Zxid, u64, u64)>,
    /// The transaction that made the change.
    txn: lockstep_models::zookeeper::tree::Txn,
}

/// Replays a member's applied transactions on a fresh tree and lists every change of the
/// node first in line, the lowest sequence number parsed from the name (independently of
/// the model's own ordering code).
fn replay_first_in_line(s: &lockstep_models::zookeeper::server::ZooKeeperServer) -> Vec<InLine> {
    use lockstep_models::zookeeper::LOCK_PATH;
    use lockstep_models::zookeeper::server::Audit;
    use lockstep_models::zookeeper::tree::DataTree;
    let mut tree = DataTree::with_parents(&[LOCK_PATH]);
    let mut changes: Vec<InLine> = Vec::new();
    let mut current = None;
    for a in s.audit() {
        match a {
            Audit::Boot => {
                assert!(changes.is_empty(), "a member of this test never restarts");
            }
            Audit::Applied { zxid, txn, .. } => {
                tree.apply(txn, *zxid);
                let first = tree
                    .children(LOCK_PATH)
                    .expect("the lock node")
                    .into_iter()
                    .map(|name| {
                        let seq: u64 = name
                            .rsplit("lock-")
                            .next()
                            .and_then(|n| n.parse().ok())
                            .expect("a sequence number");
                        (name, seq)
                    })
                    .min_by_key(|&(_, seq)| seq)
                    .map(|(name, seq)| {
                        let path = format!("{LOCK_PATH}/{name}");
                        let stat = *tree.stat(&path).expect("listed");
                        let session = stat.ephemeral_owner.expect("lock nodes are ephemeral");
                        (path, stat.czxid, seq, session)
                    });
                if first != current {
                    current = first.clone();
                    changes.push(InLine {
                        first,
                        txn: txn.clone(),
                    });
                }
            }
            Audit::Leading { .. } | Audit::Expired { .. } => {}
        }
    }
    changes
}

/// Each member's owners, as it observed them, follow the recipe: owners come in sequence (and
/// czxid) order, the same on every member; the lock passes on when the holder's node is
/// deleted (a release) or when its session expires (the holder paused past its session
/// timeout, whose close deletes its ephemeral node); and an owner is named by the client that
/// made the node's session, as that client's grants of the ticket confirm.
#[test]
fn members_owner_audits_pass_the_lock_in_sequence_order_on_delete_and_expiry() {
    use lockstep_check::Event;
    use lockstep_models::zookeeper::tree::Txn;
    use std::collections::BTreeMap;
    for seed in 1..=3 {
        // Client-1 pauses at its first grant for 10 s, past its 4 s session (expired by the
        // leader within T + tickTime = 6 s).
        let pause = on_mark(
            ZK_CLIENT_1,
            "granted",
            Fault::Pause {
                node: ZK_CLIENT_1,
                duration: Some(ms(10_000)),
            },
        );
        let mut w = world(&zk_spec(2, Watch::Predecessor), seed, 30, |cfg| {
            cfg.faults = vec![pause]
        });
        let outcome = w.run();
        assert!(
            w.fault_log()
                .iter()
                .any(|f| matches!(f.fault, Fault::Pause { .. })),
            "seed {seed}: client-1 was never granted"
        );
        // The clients' grants, by ticket.
        let mut granted = BTreeMap::new();
        for e in &history(&w, outcome).entries {
            if let Event::Grant {
                grant,
                ticket: Some(t),
                ..
            } = &e.event
            {
                granted.insert(*t, grant.client.0);
            }
        }
        let mut first_member: Option<Vec<Option<lockstep_models::audit::Owner>>> = None;
        for member in [ZK_1, ZK_2, ZK_3] {
            let Node::Service(s) = w.process(member) else {
                unreachable!()
            };
            let owners = owners(&w, member);
            let replay = replay_first_in_line(s);
            assert_eq!(
                owners
                    .iter()
                    .map(|o| o.map(|o| o.ticket))
                    .collect::<Vec<_>>(),
                replay
                    .iter()
                    .map(|c| c.first.as_ref().map(|f| f.1.as_u64()))
                    .collect::<Vec<_>>(),
                "seed {seed} {member:?}: the observed owners are not the replay's first in line"
            );
            let (mut deleted, mut expired) = (0, 0);
            for (i, pair) in replay.windows(2).enumerate() {
                let (Some(before), after) = (&pair[0].first, &pair[1].first) else {
                    continue;
                };
                if let Some(after) = after {
                    assert!(
                        after.1 > before.1 && after.2 > before.2,
                        "seed {seed} {member:?}: {after:?} after {before:?}"
                    );
                }
                match &pair[1].txn {
                    Txn::Delete { path, .. } if *path == before.0 => deleted += 1,
                    Txn::CloseSession { session } if *session == before.3 => {
                        expired += 1;
                        // Client-1's session expired while it held: client-2 holds next.
                        let (from, to) = (owners[i], owners[i + 1]);
                        assert_eq!(from.map(|o| o.client), Some(ZK_CLIENT_1), "seed {seed}");
                        assert_eq!(to.map(|o| o.client), Some(ZK_CLIENT_2), "seed {seed}");
                    }
                    // A waiter's node created behind the holder changes nothing; a change of
                    // the first node is its deletion or its session's close.
                    other => panic!("seed {seed} {member:?}: {other:?} moved {before:?}"),
                }
            }
            assert!(deleted >= 10, "seed {seed} {member:?}: {deleted} releases");
            assert_eq!(expired, 1, "seed {seed} {member:?}: {expired} expiries");
            for owner in owners.iter().flatten() {
                if let Some(&client) = granted.get(&owner.ticket) {
                    assert_eq!(client, owner.client.0, "seed {seed}: ticket {owner:?}");
                }
            }
            // Every member applies the same log: the same owners in the same order.
            match &first_member {
                None => first_member = Some(owners),
                Some(first) => assert_eq!(*first, owners, "seed {seed} {member:?}"),
            }
        }
    }
}

/// A learner's answers to its leader's pings, held while the leader loses its quorum, reach
/// the old leader only after it stepped down. They are the leader's tracker's business and
/// die with its epoch (`LearnerHandler`, PING: `learnerMaster.touch`): kept in the old
/// leader's own touch table and reported to the next leader, they renewed sessions nobody
/// had touched since before the fault, and a dead client's lock node outlived the new
/// leader's `now + T` by a tick or more (chaos-zookeeper-czxid-fenced, seed 277: no grant in
/// the quiet tail). Here client-2 dies for good while the old leader's pings are answered:
/// every later ready leader's tracker keeps the expiry it gave client-2's session at
/// `become_ready`, until the session is closed.
#[test]
fn ping_replies_reaching_a_member_that_no_longer_leads_renew_no_session() {
    use lockstep_sim::NodeId;
    use std::collections::BTreeMap;
    let mut renewals = 0;
    let mut expired = 0;
    for seed in 1..=8 {
        let mut w = world(&zk_spec(2, Watch::Predecessor), seed, 60, |_| {});
        w.run_until(Time::from_millis(5_000));
        let leader = (0..3)
            .map(NodeId)
            .find(|&id| matches!(w.process(id), Node::Service(s) if s.is_ready_leader()))
            .expect("a leader by 5 s");
        let others: Vec<NodeId> = (0..3).map(NodeId).filter(|&n| n != leader).collect();
        let (f1, f2) = (others[0], others[1]);
        let split = |from_ms, for_ms, a: Vec<NodeId>, b: Vec<NodeId>| {
            at(
                from_ms,
                Fault::Partition {
                    shape: Shape::Split { groups: vec![a, b] },
                    mode: PartitionMode::Drop,
                    duration: Some(ms(for_ms)),
                },
            )
        };
        // Both clients move to f1.
        w.schedule(split(
            5_000,
            8_000,
            vec![ZK_CLIENT_1, ZK_CLIENT_2],
            vec![leader, f2],
        ));
        // From 13 s for 25 s the leader hears nothing from f1 (its answers are held) nor f2:
        // it steps down; f1 still hears it, and answers its pings with client-2's session.
        w.schedule(at(
            13_000,
            Fault::Partition {
                shape: Shape::OneWay {
                    from: vec![f1],
                    to: vec![leader],
                },
                mode: PartitionMode::Hold,
                duration: Some(ms(25_000)),
            },
        ));
        w.schedule(split(13_000, 25_000, vec![leader], vec![f2]));
        w.run_until(Time::from_millis(14_900));
        let dead = match w.process(ZK_CLIENT_2) {
            Node::Client(c) => c.lock().session().expect("client-2 has a session"),
            other => panic!("{other:?}"),
        };
        w.schedule(at(
            15_000,
            Fault::Crash {
                node: ZK_CLIENT_2,
                restart_after: None,
            },
        ));
        // The expiry each ready leader (member, epoch) first gave the dead session.
        let mut first: BTreeMap<(NodeId, u64), lockstep_sim::LocalTime> = BTreeMap::new();
        let mut t = Time::from_millis(15_000);
        while t < w.end() {
            w.run_until(t);
            for id in (0..3).map(NodeId) {
                let Node::Service(s) = w.process(id) else {
                    continue;
                };
                let Some(expiry) = s.tracked().and_then(|t| t.get(&dead).copied()) else {
                    continue;
                };
                let given = *first.entry((id, s.raft().term())).or_insert(expiry);
                if expiry != given {
                    renewals += 1;
                    eprintln!("seed {seed}: {id:?} renewed the dead session at {t:?}");
                }
            }
            t += ms(10);
        }
        w.run();
        let gone = (0..3).map(NodeId).all(|id| match w.process(id) {
            Node::Service(s) => !s.tree().sessions().contains_key(&dead),
            _ => true,
        });
        expired += u32::from(gone);
    }
    assert_eq!(renewals, 0, "a dead session was renewed");
    assert!(
        expired >= 6,
        "the dead session expired in {expired} of 8 runs"
    );
}

/// True time (ms) of client-1's first `suspended` mark after `from_ms`, with one client of
/// 6 s sessions whose servers all suffer `fault` at `from_ms`.
fn suspended_after(fault: impl Fn(u32) -> Fault, from_ms: u64, seed: u64) -> Option<u64> {
    let mut spec = zk_spec(1, Watch::Predecessor);
    spec.family.client.session_timeout = Dur::from_secs(6);
    let mut w = world(&spec, seed, 30, |cfg| {
        cfg.trace = true;
        cfg.faults = (0..3).map(|i| at(from_ms, fault(i))).collect();
    });
    w.run();
    let client = node_id(&spec, "client-1");
    w.trace()
        .expect("traced")
        .iter()
        .filter(|e| e.node == client && e.text == "mark suspended")
        .map(|e| e.time.as_nanos() / 1_000_000)
        .find(|&t| t >= from_ms)
}

/// A crashed server closes the client's connection: the client is Disconnected (SUSPENDED)
/// a latency after the crash, where a paused one leaves it waiting for its read timeout
/// (2T/3 = 4 s of silence).
#[test]
fn a_crashed_server_disconnects_its_client_at_once_and_a_paused_one_after_the_read_timeout() {
    for seed in 1..=5 {
        let crash = |i: u32| Fault::Crash {
            node: lockstep_sim::NodeId(i),
            restart_after: None,
        };
        let crashed = suspended_after(crash, 10_000, seed).expect("suspended");
        assert!(
            crashed - 10_000 <= 150,
            "seed {seed}: suspended at {crashed} ms"
        );
        let pause = |i: u32| Fault::Pause {
            node: lockstep_sim::NodeId(i),
            duration: None,
        };
        let paused = suspended_after(pause, 10_000, seed).expect("suspended");
        assert!(
            (10_000 + 3_000..=10_000 + 4_300).contains(&paused),
            "seed {seed}: suspended at {paused} ms"
        );
    }
}

/// `zk_spec(2, _)` with sessions of `t_ms` whose clients hold the lock (or wait for it) for
/// longer than the run: once the lock is queued, the connections are idle.
fn idle_spec(t_ms: u64) -> SystemSpec<ZooKeeper> {
    let mut spec = zk_spec(2, Watch::Predecessor);
    spec.family.client.session_timeout = ms(t_ms);
    spec.workload.work = lockstep_sim::Distribution::Constant(Dur::from_secs(1_000));
    spec
}

/// The times client-1's pings reach a server, traced.
fn pings(w: &World<Node<ZooKeeper>>) -> Vec<Time> {
    w.trace()
        .expect("traced")
        .iter()
        .filter(|e| e.kind == lockstep_sim::TraceKind::Deliver)
        .filter(|e| e.text.starts_with("client-1 -> zk-") && e.text.contains("req: Ping"))
        .map(|e| e.time)
        .collect()
}

/// The real 3.8 client, idle, pinged every 2.0 / 5.0 / 13.3 s at T = 6 / 15 / 40 s
/// (`readTimeout / 2 = T/3`, docs/conformance.md): within 5 % on every seed, over 50
/// seeds. The intervals are between deliveries, so they carry 1-5 ms of link jitter.
#[test]
fn an_idle_client_pings_every_third_of_the_session_timeout() {
    for (t_ms, real_ms) in [(6_000u64, 2_000u64), (15_000, 5_000), (40_000, 13_333)] {
        let secs = 20 + 5 * t_ms / 1_000;
        let mut all = Vec::new();
        for seed in 1..=50 {
            let mut w = world(&idle_spec(t_ms), seed, secs, |cfg| cfg.trace = true);
            w.run();
            let p = pings(&w);
            assert!(
                p.len() >= 4,
                "T = {t_ms} ms, seed {seed}: {} pings",
                p.len()
            );
            for pair in p.windows(2) {
                let gap = (pair[1].as_nanos() - pair[0].as_nanos()) / 1_000_000;
                assert!(
                    gap.abs_diff(real_ms) * 20 <= real_ms,
                    "T = {t_ms} ms, seed {seed}: a ping {gap} ms after the last, real {real_ms}"
                );
                all.push(gap);
            }
        }
        let mean = all.iter().sum::<u64>() / all.len() as u64;
        eprintln!(
            "T = {t_ms} ms: {} ping intervals, {}..={} ms, mean {mean} ms (real {real_ms})",
            all.len(),
            all.iter().min().unwrap(),
            all.iter().max().unwrap()
        );
    }
}

/// Disconnected (Curator: SUSPENDED) comes 100 ms after the read timeout 2T/3 passes without
/// a receive (the socket cleanup's sleep): measured 4.10-4.12 s after the last receive on
/// the real client at T = 6 s. Client-1, idle, is cut off from every server; from the last
/// message it received to its `suspended` mark, over 50 seeds.
#[test]
fn a_client_cut_off_is_disconnected_a_tenth_of_a_second_after_its_read_timeout() {
    let servers = vec![ZK_1, ZK_2, ZK_3];
    let client_1 = lockstep_sim::NodeId(4);
    for seed in 1..=50 {
        let cut_at = 10_000 + seed * 37;
        let mut w = world(&idle_spec(6_000), seed, 20, |cfg| cfg.trace = true);
        w.schedule(at(
            cut_at,
            Fault::Partition {
                shape: Shape::Split {
                    groups: vec![vec![client_1], servers.clone()],
                },
                mode: PartitionMode::Drop,
                duration: None,
            },
        ));
        w.run();
        let trace = w.trace().expect("traced");
        let last_heard = trace
            .iter()
            .filter(|e| e.kind == lockstep_sim::TraceKind::Deliver && e.node == client_1)
            .filter(|e| e.text.starts_with("zk-"))
            .map(|e| e.time)
            .next_back()
            .expect("client-1 heard from a server");
        let suspended = trace
            .iter()
            .find(|e| e.node == client_1 && e.text == "mark suspended")
            .expect("client-1 is Disconnected")
            .time;
        let after = (suspended.as_nanos() - last_heard.as_nanos()) / 1_000_000;
        assert!(
            (4_095..=4_120).contains(&after),
            "seed {seed}: Disconnected {after} ms after the last receive"
        );
        assert!(last_heard <= Time::from_millis(cut_at), "seed {seed}");
    }
}
