//! A kube-apiserver, as far as one Lease goes: `GET`, `POST` and `PUT` of
//! `coordination.k8s.io/v1` Lease, stored in etcd as keys written together in one transaction
//! (`staging/src/k8s.io/apiserver/pkg/storage/etcd3/store.go`).
//!
//! - `Get` is a linearizable range read of the Lease's keys (client-go asks with an empty
//!   resourceVersion, a quorum read); no keys is 404.
//! - `Create` is a transaction guarded by `create_revision(holder) == 0` (`store.Create`);
//!   otherwise 409 AlreadyExists.
//! - `Update` is a transaction guarded by `mod_revision(holder) == rv`, the precondition of
//!   `GuaranteedUpdate` with the object's resourceVersion; otherwise 409 Conflict.
//! - The `resourceVersion` of the object is the mod revision of its keys (all put together).
//! - It talks to etcd like clientv3: it sends to the member it believes leads, follows
//!   `NotLeader { leader }`, waits [`NO_LEADER_BACKOFF`] when no leader is known, and after
//!   [`ATTEMPT_TIMEOUT`] without an answer tries the next member. A retried `Update` whose
//!   first attempt did apply finds its precondition stale and answers 409, as a real retry
//!   would. (Choice: clientv3's per-attempt deadline is the caller's; 1 s is about what a
//!   dead TCP connection costs with etcd's keepalives.) After [`REQUEST_TIMEOUT`] it answers
//!   503 (kube-apiserver's storage timeout is its `--request-timeout`; the elector's own
//!   deadline, RenewDeadline, is shorter by default, so this only stops the retries).
//! - The owner audit, an observer's record: every Lease record it learns from etcd (a
//!   successful write, a read, a conflict's current state) that is newer than the last one it
//!   noted, by revision, names an owner: its holder and `leaseTransitions`. A new owner is
//!   recorded as `Issued` (the API server that served the write records it at the instant it
//!   learns the write applied; others when they first see it).

use std::collections::BTreeMap;

use lockstep_sim::{ClockKind, Dur, LocalTime, NodeId};

use super::{holder_node, ApiReply, ApiRequest, LeaseObject, LeaseRecord, Msg, Timer};
use crate::audit::{Owner, OwnerAudit};
use crate::env::Host;
use crate::etcd;
use crate::etcd::mvcc::{Cmp, Compare, Op, OpResult, Range, Target, Txn, TxnResult};
use crate::etcd::proto::{Reply, Request};
use crate::observe::Observation;

/// How long one attempt at an etcd member may take before the next member is tried.
pub const ATTEMPT_TIMEOUT: Dur = Dur::from_secs(1);
/// How long to wait before trying again when a member knows no leader.
pub const NO_LEADER_BACKOFF: Dur = Dur::from_millis(100);
/// How long the API server keeps trying before it answers 503.
pub const REQUEST_TIMEOUT: Dur = Dur::from_secs(5);

/// The Lease's keys in etcd: `/registry/leases/<namespace>/<name>` split by field.
pub const LEASE_PREFIX: &str = "/registry/leases/kube-system/lock/";
const HOLDER: &str = "/registry/leases/kube-system/lock/holder";
const DURATION: &str = "/registry/leases/kube-system/lock/duration";
const ACQUIRE: &str = "/registry/leases/kube-system/lock/acquire";
const RENEW: &str = "/registry/leases/kube-system/lock/renew";
const TRANSITIONS: &str = "/registry/leases/kube-system/lock/transitions";

/// An API server's timers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ApiTimer {
    /// Attempt `attempt` (an etcd request id) got no answer.
    Attempt {
        /// The etcd request id.
        attempt: u64,
    },
    /// Try call `call` again (no leader was known).
    Retry {
        /// The call.
        call: u64,
    },
}

#[derive(Clone, Debug, PartialEq, Eq)]
struct Call {
    client: NodeId,
    client_id: u64,
    req: ApiRequest,
    /// The etcd request id of the current attempt (0 while it waits to try again).
    attempt: u64,
    /// The member the current attempt went to.
    member: NodeId,
    /// When the API server gives up (MONO).
    deadline: LocalTime,
}

/// One API server.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ApiServer {
    members: Vec<NodeId>,
    /// The member it sends to (index in `members`).
    target: usize,
    calls: BTreeMap<u64, Call>,
    next: u64,
    /// Who the newest Lease record it saw makes the owner (an observer's record, kept across
    /// crashes).
    audit: OwnerAudit,
    audit_rev: u64,
}

impl ApiServer {
    /// An API server in front of the etcd `members`.
    pub fn new(members: Vec<NodeId>) -> ApiServer {
        ApiServer {
            members,
            target: 0,
            calls: BTreeMap::new(),
            next: 0,
            audit: OwnerAudit::default(),
            audit_rev: 0,
        }
    }

    /// Who the newest Lease record it saw makes the owner.
    pub fn owner_audit(&self) -> &OwnerAudit {
        &self.audit
    }

    pub(super) fn on_crash(&mut self) {
        let mut audit = std::mem::take(&mut self.audit);
        audit.crashed();
        *self = ApiServer::new(std::mem::take(&mut self.members));
        self.audit = audit;
    }

    pub(super) fn on_api(
        &mut self,
        env: &mut impl Host<Msg, Timer>,
        client: NodeId,
        client_id: u64,
        req: ApiRequest,
    ) {
        self.next += 1;
        let call = self.next;
        self.calls.insert(
            call,
            Call {
                client,
                client_id,
                req,
                attempt: 0,
                member: self.members[self.target],
                deadline: env.mono() + REQUEST_TIMEOUT,
            },
        );
        self.attempt(env, call);
    }

    /// Sends call `call` to the current target member as a new attempt.
    fn attempt(&mut self, env: &mut impl Host<Msg, Timer>, call: u64) {
        let Some(c) = self.calls.get(&call) else {
            return;
        };
        if env.mono() >= c.deadline {
            self.answer(env, call, ApiReply::Unavailable);
            return;
        }
        let req = c.req;
        self.next += 1;
        let attempt = self.next;
        let to = self.members[self.target];
        let c = self.calls.get_mut(&call).expect("live call");
        c.attempt = attempt;
        c.member = to;
        let request = match req {
            ApiRequest::Get => Request::Get(prefix()),
            ApiRequest::Create(record) => Request::Txn(Txn {
                compares: vec![Compare {
                    key: HOLDER.into(),
                    target: Target::Create,
                    cmp: Cmp::Equal,
                    value: 0,
                }],
                success: puts(&record),
                failure: vec![Op::Get(prefix())],
            }),
            ApiRequest::Update { rv, record } => Request::Txn(Txn {
                compares: vec![Compare {
                    key: HOLDER.into(),
                    target: Target::Mod,
                    cmp: Cmp::Equal,
                    value: rv,
                }],
                success: puts(&record),
                failure: vec![Op::Get(prefix())],
            }),
        };
        env.send(
            to,
            Msg::Etcd(etcd::Msg::Request {
                id: attempt,
                req: Box::new(request),
            }),
        );
        env.set_timer(
            ClockKind::Mono,
            ATTEMPT_TIMEOUT,
            Timer::Api(ApiTimer::Attempt { attempt }),
        );
    }

    /// The connection to etcd member `peer` was reset (it crashed, or refused a request):
    /// the attempts in flight there fail at once and go to the next member, as after an
    /// attempt's timeout but without the wait (gRPC sees the broken connection).
    pub(super) fn on_reset(&mut self, env: &mut impl Host<Msg, Timer>, peer: NodeId) {
        let lost: Vec<u64> = self
            .calls
            .iter()
            .filter(|(_, c)| c.attempt != 0 && c.member == peer)
            .map(|(&k, _)| k)
            .collect();
        if lost.is_empty() {
            return;
        }
        if self.members[self.target] == peer {
            self.target = (self.target + 1) % self.members.len();
        }
        for call in lost {
            self.attempt(env, call);
        }
    }

    fn call_of(&self, attempt: u64) -> Option<u64> {
        self.calls
            .iter()
            .find(|(_, c)| c.attempt == attempt)
            .map(|(&k, _)| k)
    }

    pub(super) fn on_timer(&mut self, env: &mut impl Host<Msg, Timer>, timer: ApiTimer) {
        match timer {
            ApiTimer::Attempt { attempt } => {
                if let Some(call) = self.call_of(attempt) {
                    self.target = (self.target + 1) % self.members.len();
                    self.attempt(env, call);
                }
            }
            ApiTimer::Retry { call } => self.attempt(env, call),
        }
    }

    pub(super) fn on_etcd(&mut self, env: &mut impl Host<Msg, Timer>, msg: etcd::Msg) {
        let etcd::Msg::Reply { id, reply } = msg else {
            return;
        };
        let Some(call) = self.call_of(id) else {
            return; // A late answer to an attempt given up on.
        };
        let req = self.calls[&call].req;
        match reply {
            Reply::NotLeader { leader } => {
                self.calls.get_mut(&call).expect("live call").attempt = 0;
                match leader.and_then(|l| self.members.iter().position(|&m| m == l)) {
                    Some(i) if i != self.target => {
                        self.target = i;
                        self.attempt(env, call);
                    }
                    _ => {
                        self.target = (self.target + 1) % self.members.len();
                        env.set_timer(
                            ClockKind::Mono,
                            NO_LEADER_BACKOFF,
                            Timer::Api(ApiTimer::Retry { call }),
                        );
                    }
                }
            }
            Reply::Txn(result) => {
                let answer = match req {
                    ApiRequest::Get => match lease_of(&result) {
                        Some(obj) => {
                            self.audit(env, obj);
                            ApiReply::Lease(obj)
                        }
                        None => ApiReply::NotFound,
                    },
                    ApiRequest::Create(record) | ApiRequest::Update { record, .. } => {
                        if result.succeeded {
                            let obj = LeaseObject {
                                record,
                                rv: result.revision,
                            };
                            self.audit(env, obj);
                            ApiReply::Lease(obj)
                        } else {
                            match lease_of(&result) {
                                Some(obj) => {
                                    self.audit(env, obj);
                                    env.observe(Observation::Count("conflicts"));
                                    ApiReply::Conflict
                                }
                                // An update of a Lease that does not exist.
                                None if matches!(req, ApiRequest::Update { .. }) => {
                                    ApiReply::NotFound
                                }
                                None => ApiReply::Conflict,
                            }
                        }
                    }
                };
                self.answer(env, call, answer);
            }
            other => unreachable!("an API server got {other:?} from etcd"),
        }
    }

    fn answer(&mut self, env: &mut impl Host<Msg, Timer>, call: u64, reply: ApiReply) {
        let c = self.calls.remove(&call).expect("live call");
        env.send(
            c.client,
            Msg::ApiReply {
                id: c.client_id,
                reply,
            },
        );
    }

    fn audit(&mut self, env: &mut impl Host<Msg, Timer>, obj: LeaseObject) {
        if obj.rv < self.audit_rev {
            return;
        }
        self.audit_rev = obj.rv;
        let owner = holder_node(obj.record.holder).map(|client| Owner {
            client,
            ticket: obj.record.transitions,
        });
        self.audit.observe(env, owner);
    }
}

fn prefix() -> Range {
    Range {
        key: LEASE_PREFIX.into(),
        prefix: true,
        first: None,
        max_create_rev: None,
    }
}

fn puts(r: &LeaseRecord) -> Vec<Op> {
    [
        (HOLDER, r.holder),
        (DURATION, r.lease_duration_s),
        (ACQUIRE, r.acquire_us),
        (RENEW, r.renew_us),
        (TRANSITIONS, r.transitions),
    ]
    .into_iter()
    .map(|(key, value)| Op::Put {
        key: key.into(),
        value,
        lease: None,
    })
    .collect()
}

/// The Lease in a range result over its keys, if it exists.
fn lease_of(result: &TxnResult) -> Option<LeaseObject> {
    let kvs = result.results.iter().find_map(|r| match r {
        OpResult::Get(kvs) => Some(kvs),
        _ => None,
    })?;
    let mut obj = LeaseObject::default();
    let mut found = false;
    for kv in kvs {
        match kv.key.as_str() {
            HOLDER => {
                found = true;
                obj.record.holder = kv.value;
                obj.rv = kv.mod_revision;
            }
            DURATION => obj.record.lease_duration_s = kv.value,
            ACQUIRE => obj.record.acquire_us = kv.value,
            RENEW => obj.record.renew_us = kv.value,
            TRANSITIONS => obj.record.transitions = kv.value,
            _ => {}
        }
    }
    found.then_some(obj)
}
