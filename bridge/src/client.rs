//! The example client: the seed's Go Redis lock (`TryAcquire` = `SET key value NX PX ttl`
//! with a random value, `Release` = `EVAL` compare-and-delete, `Renew` = `EVAL`
//! compare-and-pexpire) in async Rust over the runtime's `TcpStream`, and the workload loop
//! lockstep's clients run (`models/src/workload/mod.rs`: think, acquire, read storage, work,
//! check validity, write value + 1 with the token, release), calling the recorder.
//!
//! Written once for every runtime ([`Sim`]). Nothing here knows it is under test except the
//! recorder calls and [`Sim::reach`] at the marks.

use std::rc::Rc;
use std::time::Duration;

use lockstep_check::{ExitReason, GrantId, NodeId};
use lockstep_models::StorageMode;
use lockstep_models::storage::{RequestKind, StorageRequest, StorageResult};
use lockstep_sim::rng::Rng;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::hosts::{REDIS_PORT, STORAGE_PORT};
use crate::keyspace::{COMPARE_AND_DELETE, COMPARE_AND_PEXPIRE, ticket_of};
use crate::marks::Marks;
use crate::plan::Plan;
use crate::protocol::{parse_reply, request_line};
use crate::recorder::Recorder;
use crate::resp::{Reply, decode_reply, encode_command};
use crate::sim::Sim;

/// The lock's key, and the fencing counter's.
pub const LOCK_KEY: &str = "lock";
const FENCE_KEY: &str = "lock:fence";

fn std_dur(d: lockstep_sim::time::Dur) -> Duration {
    Duration::from_nanos(d.as_nanos())
}

/// A RESP connection that reconnects after any failure (as go-redis's pool does).
#[derive(Debug)]
pub struct RedisConn<S: Sim> {
    host: String,
    stream: Option<S::Stream>,
    buf: Vec<u8>,
}

impl<S: Sim> RedisConn<S> {
    /// A connection to `host` (opened on first use).
    pub fn new(host: &str) -> RedisConn<S> {
        RedisConn {
            host: host.to_string(),
            stream: None,
            buf: Vec::new(),
        }
    }

    /// Sends one command and waits at most `limit` for its reply; `None` on a timeout or a
    /// broken connection (which is then dropped: a late reply is never taken for another).
    pub async fn call(&mut self, args: &[&[u8]], limit: Duration) -> Option<Reply> {
        let reply = S::timeout(limit, self.exchange(args)).await.flatten();
        if reply.is_none() {
            self.stream = None;
            self.buf.clear();
        }
        reply
    }

    async fn exchange(&mut self, args: &[&[u8]]) -> Option<Reply> {
        if self.stream.is_none() {
            self.stream = Some(S::connect(&self.host, REDIS_PORT).await.ok()?);
        }
        let stream = self.stream.as_mut()?;
        stream.write_all(&encode_command(args)).await.ok()?;
        stream.flush().await.ok()?;
        let mut chunk = [0u8; 1024];
        loop {
            if let Some((reply, used)) = decode_reply(&self.buf).ok()? {
                self.buf.drain(..used);
                return Some(reply);
            }
            let n = stream.read(&mut chunk).await.ok()?;
            if n == 0 {
                return None;
            }
            self.buf.extend_from_slice(&chunk[..n]);
        }
    }
}

/// The seed's Go Redis lock, in async Rust.
#[derive(Debug)]
pub struct RedisLock<S: Sim> {
    conn: RedisConn<S>,
    ttl: Duration,
    timeout: Duration,
    /// The value of the current acquisition.
    value: Option<String>,
}

impl<S: Sim> RedisLock<S> {
    /// A lock on `host` with `ttl`; each command waits at most `timeout`.
    pub fn new(host: &str, ttl: Duration, timeout: Duration) -> RedisLock<S> {
        RedisLock {
            conn: RedisConn::new(host),
            ttl,
            timeout,
            value: None,
        }
    }

    /// `TryAcquire`: `SET lock value NX PX ttl` with the random `value`; true when taken.
    pub async fn try_acquire(&mut self, value: u64) -> bool {
        let (v, px) = (value.to_string(), self.ttl.as_millis().to_string());
        let args: [&[u8]; 6] = [
            b"SET",
            LOCK_KEY.as_bytes(),
            v.as_bytes(),
            b"NX",
            b"PX",
            px.as_bytes(),
        ];
        let taken = matches!(self.conn.call(&args, self.timeout).await, Some(Reply::Simple(s)) if s == "OK");
        if taken {
            self.value = Some(v);
        }
        taken
    }

    /// A fencing token: `INCR` on the counter key.
    pub async fn token(&mut self) -> Option<u64> {
        let args: [&[u8]; 2] = [b"INCR", FENCE_KEY.as_bytes()];
        match self.conn.call(&args, self.timeout).await {
            Some(Reply::Integer(n)) => u64::try_from(n).ok(),
            _ => None,
        }
    }

    /// `Release`: the compare-and-delete script; true when this acquisition's key was
    /// deleted.
    pub async fn release(&mut self) -> bool {
        let Some(v) = self.value.take() else {
            return false;
        };
        let args: [&[u8]; 5] = [
            b"EVAL",
            COMPARE_AND_DELETE.as_bytes(),
            b"1",
            LOCK_KEY.as_bytes(),
            v.as_bytes(),
        ];
        matches!(
            self.conn.call(&args, self.timeout).await,
            Some(Reply::Integer(1))
        )
    }

    /// The naive release: a plain `DEL`, whoever holds the key now.
    pub async fn release_by_del(&mut self) -> bool {
        self.value = None;
        let args: [&[u8]; 2] = [b"DEL", LOCK_KEY.as_bytes()];
        matches!(
            self.conn.call(&args, self.timeout).await,
            Some(Reply::Integer(1))
        )
    }

    /// `Renew`: the compare-and-pexpire script; true when the key was still this
    /// acquisition's and got a new TTL.
    pub async fn renew(&mut self) -> bool {
        let Some(v) = self.value.clone() else {
            return false;
        };
        let px = self.ttl.as_millis().to_string();
        let args: [&[u8]; 6] = [
            b"EVAL",
            COMPARE_AND_PEXPIRE.as_bytes(),
            b"1",
            LOCK_KEY.as_bytes(),
            v.as_bytes(),
            px.as_bytes(),
        ];
        matches!(
            self.conn.call(&args, self.timeout).await,
            Some(Reply::Integer(1))
        )
    }
}

/// A connection to the storage host (crate::protocol), reconnecting after a failure.
#[derive(Debug)]
pub struct StorageConn<S: Sim> {
    host: String,
    stream: Option<S::Stream>,
    buf: Vec<u8>,
}

impl<S: Sim> StorageConn<S> {
    /// A connection to `host`.
    pub fn new(host: &str) -> StorageConn<S> {
        StorageConn {
            host: host.to_string(),
            stream: None,
            buf: Vec::new(),
        }
    }

    /// Sends `req` and waits at most `limit` for its answer; `None` on a timeout.
    pub async fn op(&mut self, req: StorageRequest, limit: Duration) -> Option<StorageResult> {
        let result = S::timeout(limit, self.exchange(req)).await.flatten();
        if result.is_none() {
            self.stream = None;
            self.buf.clear();
        }
        result
    }

    async fn exchange(&mut self, req: StorageRequest) -> Option<StorageResult> {
        if self.stream.is_none() {
            self.stream = Some(S::connect(&self.host, STORAGE_PORT).await.ok()?);
        }
        let stream = self.stream.as_mut()?;
        stream.write_all(request_line(&req).as_bytes()).await.ok()?;
        stream.flush().await.ok()?;
        let mut chunk = [0u8; 256];
        loop {
            while let Some(end) = self.buf.iter().position(|b| *b == b'\n') {
                let line: Vec<u8> = self.buf.drain(..=end).collect();
                let text = String::from_utf8_lossy(&line[..line.len() - 1]).into_owned();
                match parse_reply(&text) {
                    Ok(reply) if reply.op == req.op => return Some(reply.result),
                    Ok(_) => {} // a late answer to an operation given up on
                    Err(_) => return None,
                }
            }
            let n = stream.read(&mut chunk).await.ok()?;
            if n == 0 {
                return None;
            }
            self.buf.extend_from_slice(&chunk[..n]);
        }
    }
}

/// The workload loop of one client, forever (the driver stops the run at its end).
pub async fn workload<S: Sim>(
    plan: Rc<Plan>,
    me_name: String,
    recorder: Recorder,
    marks: Marks,
    mut rng: Rng,
) {
    let me: NodeId = recorder.node(&me_name).expect("registered");
    let cfg = &plan.workload;
    let s = &plan.lock;
    let mut lock = RedisLock::<S>::new(&plan.redis, std_dur(s.ttl), std_dur(s.request_timeout));
    let mut storage = StorageConn::<S>::new(&plan.storage);
    let op_timeout = std_dur(cfg.storage_timeout);
    // The Redlock drift allowance of the native client: validity = TTL − (TTL × factor + 2 ms).
    let ttl_ns = s.ttl.as_nanos();
    let margin = Duration::from_nanos(ttl_ns / 1_000_000 * s.drift_ppm + 2_000_000);
    let validity = std_dur(s.ttl).saturating_sub(margin);
    loop {
        S::sleep(std_dur(cfg.think.sample(&mut rng))).await;
        recorder.request(me);
        let (sent, value) = loop {
            let value = rng.next_u64() >> 1;
            let sent = S::now();
            if lock.try_acquire(value).await {
                break (sent, value);
            }
            S::sleep(std_dur(s.retry_delay.sample(&mut rng))).await;
        };
        let token = if s.fencing {
            match lock.token().await {
                Some(t) => Some(t),
                None => {
                    // No token: give the key back and try again later, as the native client.
                    lock.release().await;
                    recorder.acquire_failed(me);
                    continue;
                }
            }
        } else {
            None
        };
        let grant = recorder.grant(me, token, Some(ticket_of(value.to_string().as_bytes())));
        S::reach(&marks, &me_name, "granted").await;
        let why = critical_section::<S>(
            &plan,
            me,
            grant,
            token,
            &recorder,
            &marks,
            &me_name,
            &mut storage,
            &mut rng,
            op_timeout,
            sent + validity,
        )
        .await;
        recorder.exit(grant, why);
        if s.release_del {
            lock.release_by_del().await;
        } else {
            lock.release().await;
        }
    }
}

#[allow(clippy::too_many_arguments)]
async fn critical_section<S: Sim>(
    plan: &Plan,
    me: NodeId,
    grant: GrantId,
    token: Option<u64>,
    recorder: &Recorder,
    marks: &Marks,
    me_name: &str,
    storage: &mut StorageConn<S>,
    rng: &mut Rng,
    op_timeout: Duration,
    validity_end: S::Instant,
) -> ExitReason {
    let op = |kind| StorageRequest {
        op: recorder.next_op(me),
        grant,
        token,
        kind,
    };
    if plan.storage_mode == StorageMode::CasToken {
        match storage.op(op(RequestKind::Claim), op_timeout).await {
            Some(StorageResult::Claimed) => {}
            _ => return ExitReason::Abandoned,
        }
    }
    let base = match storage.op(op(RequestKind::Read), op_timeout).await {
        Some(StorageResult::Read(v)) => v,
        _ => return ExitReason::Abandoned,
    };
    S::reach(marks, me_name, "read-done").await;
    S::sleep(std_dur(plan.workload.work.sample(rng))).await;
    S::reach(marks, me_name, "work-done").await;
    if plan.workload.check_validity_before_write {
        if S::now() >= validity_end {
            return ExitReason::Lost;
        }
        S::reach(marks, me_name, "validity-checked").await;
    }
    let write = RequestKind::Write {
        value: base + 1,
        base,
    };
    match storage.op(op(write), op_timeout).await {
        Some(StorageResult::Written) => ExitReason::Released,
        _ => ExitReason::Abandoned,
    }
}
