//! The storage host and the Redis host, each serving TCP connections on a runtime's host;
//! written once for every runtime ([`Sim`]).

use std::cell::RefCell;
use std::io;
use std::rc::Rc;

use lockstep_check::{OpOutcome, StorageOp};
use lockstep_models::Storage;
use lockstep_models::storage::{StorageReply, StorageResult};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::keyspace::{Keyspace, ticket_of};
use crate::protocol::{parse_request, reply_line};
use crate::recorder::Recorder;
use crate::resp::{Reply, decode_command, encode_reply};
use crate::sim::Sim;

/// The storage host's port.
pub const STORAGE_PORT: u16 = 7000;
/// The Redis host's port.
pub const REDIS_PORT: u16 = 6379;

/// Serves the storage line protocol (crate::protocol) on [`STORAGE_PORT`]. `storage` is
/// kept outside the host's software, so a crash loses nothing (lockstep's storage is
/// durable). Each operation is decided by `Storage::apply` (lockstep's own fencing) and
/// recorded as it is handled, so a delayed or duplicated delivery is judged where it lands.
pub async fn storage_host<S: Sim>(
    storage: Rc<RefCell<Storage>>,
    recorder: Recorder,
) -> io::Result<()> {
    let listener = S::bind(STORAGE_PORT).await?;
    loop {
        let (stream, _) = S::accept(&listener).await?;
        let (storage, recorder) = (storage.clone(), recorder.clone());
        S::spawn_local(async move {
            let _ = serve_storage::<S>(stream, storage, recorder).await;
        });
    }
}

async fn serve_storage<S: Sim>(
    mut stream: S::Stream,
    storage: Rc<RefCell<Storage>>,
    recorder: Recorder,
) -> std::io::Result<()> {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 1024];
    loop {
        while let Some(end) = buf.iter().position(|b| *b == b'\n') {
            let line: Vec<u8> = buf.drain(..=end).collect();
            let text = String::from_utf8_lossy(&line[..line.len() - 1]).into_owned();
            let out = match parse_request(text.trim_end_matches('\r')) {
                Err(problem) => format!("ERR {problem}\n"),
                Ok(req) => {
                    let (kind, result) = storage.borrow_mut().apply(req);
                    let outcome = if result == StorageResult::Rejected {
                        OpOutcome::Rejected
                    } else {
                        OpOutcome::Accepted
                    };
                    recorder.storage(StorageOp {
                        op: req.op,
                        grant: req.grant,
                        kind,
                        token: req.token,
                        outcome,
                    });
                    reply_line(&StorageReply { op: req.op, result })
                }
            };
            stream.write_all(out.as_bytes()).await?;
            stream.flush().await?;
        }
        let n = stream.read(&mut chunk).await?;
        if n == 0 {
            return Ok(());
        }
        buf.extend_from_slice(&chunk[..n]);
    }
}

/// Serves RESP2 on [`REDIS_PORT`] over a fresh keyspace (no persistence: a crash loses it,
/// as `persistence = "none"`). Expiry is judged on this host's clock ([`Sim::host_ms`]). A `SET .. NX`
/// that takes the key records `Issued` for the connection's client, with the ticket of the
/// value it set ([`ticket_of`]), as the native Redis model does.
pub async fn redis_host<S: Sim>(recorder: Recorder) -> io::Result<()> {
    let keyspace = Rc::new(RefCell::new(Keyspace::new()));
    let listener = S::bind(REDIS_PORT).await?;
    loop {
        let (stream, peer) = S::accept(&listener).await?;
        let client = peer.and_then(|name| recorder.node(&name));
        let (keyspace, recorder) = (keyspace.clone(), recorder.clone());
        S::spawn_local(async move {
            let _ = serve_redis::<S>(stream, keyspace, recorder, client).await;
        });
    }
}

async fn serve_redis<S: Sim>(
    mut stream: S::Stream,
    keyspace: Rc<RefCell<Keyspace>>,
    recorder: Recorder,
    client: Option<lockstep_check::NodeId>,
) -> std::io::Result<()> {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    loop {
        loop {
            match decode_command(&buf) {
                Ok(None) => break,
                Err(problem) => {
                    let reply = Reply::Error(format!("ERR Protocol error: {problem}"));
                    stream.write_all(&encode_reply(&reply)).await?;
                    stream.flush().await?;
                    return Ok(());
                }
                Ok(Some((args, used))) => {
                    buf.drain(..used);
                    let now_ms = S::host_ms();
                    let effect = keyspace.borrow_mut().exec(now_ms, &args);
                    if let (Some(value), Some(client)) = (&effect.issued, client) {
                        recorder.issued(client, ticket_of(value));
                    }
                    stream.write_all(&encode_reply(&effect.reply)).await?;
                    stream.flush().await?;
                }
            }
        }
        let n = stream.read(&mut chunk).await?;
        if n == 0 {
            return Ok(());
        }
        buf.extend_from_slice(&chunk[..n]);
    }
}
