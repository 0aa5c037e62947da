//! The storage host and the Redis host, each a turmoil host serving TCP connections.

use std::cell::RefCell;
use std::net::{IpAddr, Ipv4Addr};
use std::rc::Rc;

use lockstep_check::{OpOutcome, StorageOp};
use lockstep_models::Storage;
use lockstep_models::storage::{StorageReply, StorageResult};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use turmoil::net::{TcpListener, TcpStream};

use crate::keyspace::{Keyspace, ticket_of};
use crate::protocol::{parse_request, reply_line};
use crate::recorder::Recorder;
use crate::resp::{Reply, decode_command, encode_reply};

/// The storage host's port.
pub const STORAGE_PORT: u16 = 7000;
/// The Redis host's port.
pub const REDIS_PORT: u16 = 6379;

/// Serves the storage line protocol (crate::protocol) on [`STORAGE_PORT`]. `storage` is
/// kept outside the host's software, so a crash loses nothing (lockstep's storage is
/// durable). Each operation is decided by `Storage::apply` (lockstep's own fencing) and
/// recorded as it is handled, so a delayed or duplicated delivery is judged where it lands.
pub async fn storage_host(storage: Rc<RefCell<Storage>>, recorder: Recorder) -> turmoil::Result {
    let listener = TcpListener::bind((IpAddr::V4(Ipv4Addr::UNSPECIFIED), STORAGE_PORT)).await?;
    loop {
        let (stream, _) = listener.accept().await?;
        let (storage, recorder) = (storage.clone(), recorder.clone());
        tokio::task::spawn_local(async move {
            let _ = serve_storage(stream, storage, recorder).await;
        });
    }
}

async fn serve_storage(
    mut stream: TcpStream,
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
        }
        let n = stream.read(&mut chunk).await?;
        if n == 0 {
            return Ok(());
        }
        buf.extend_from_slice(&chunk[..n]);
    }
}

/// Serves RESP2 on [`REDIS_PORT`] over a fresh keyspace (no persistence: a crash loses it,
/// as `persistence = "none"`). Expiry is judged on this host's turmoil clock. A `SET .. NX`
/// that takes the key records `Issued` for the connection's client, with the ticket of the
/// value it set ([`ticket_of`]), as the native Redis model does.
pub async fn redis_host(recorder: Recorder) -> turmoil::Result {
    let keyspace = Rc::new(RefCell::new(Keyspace::new()));
    let listener = TcpListener::bind((IpAddr::V4(Ipv4Addr::UNSPECIFIED), REDIS_PORT)).await?;
    loop {
        let (stream, peer) = listener.accept().await?;
        let client = turmoil::reverse_lookup(peer.ip()).and_then(|name| recorder.node(&name));
        let (keyspace, recorder) = (keyspace.clone(), recorder.clone());
        tokio::task::spawn_local(async move {
            let _ = serve_redis(stream, keyspace, recorder, client).await;
        });
    }
}

async fn serve_redis(
    mut stream: TcpStream,
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
                    return Ok(());
                }
                Ok(Some((args, used))) => {
                    buf.drain(..used);
                    let now_ms = u64::try_from(turmoil::elapsed().as_millis()).unwrap_or(u64::MAX);
                    let effect = keyspace.borrow_mut().exec(now_ms, &args);
                    if let (Some(value), Some(client)) = (&effect.issued, client) {
                        recorder.issued(client, ticket_of(value));
                    }
                    stream.write_all(&encode_reply(&effect.reply)).await?;
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
