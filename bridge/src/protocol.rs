//! The storage host's line protocol (docs/bridge.md): one request per line, one reply per
//! line, ASCII, fields separated by one space.
//!
//! ```text
//! READ  <op> <grant> <token>                  →  VALUE <op> <value> | REJECTED <op>
//! WRITE <op> <grant> <token> <value> <base>   →  WRITTEN <op>       | REJECTED <op>
//! CLAIM <op> <grant> <token>                  →  CLAIMED <op>       | REJECTED <op>
//! ```
//!
//! `<op>` and `<grant>` are `node.seq` (the history's `OpId` and `GrantId`: the client's
//! node id and its sequence number), `<token>` a decimal fencing token or `-` for none. A
//! line the host cannot read is answered `ERR <problem>`.

use lockstep_check::{GrantId, NodeId, OpId};
use lockstep_models::storage::{RequestKind, StorageReply, StorageRequest, StorageResult};

/// Writes a request as one line (with its newline).
pub fn request_line(req: &StorageRequest) -> String {
    let token = req.token.map_or("-".to_string(), |t| t.to_string());
    let (op, grant) = (
        pair(req.op.client, req.op.seq),
        pair(req.grant.client, req.grant.seq),
    );
    match req.kind {
        RequestKind::Read => format!("READ {op} {grant} {token}\n"),
        RequestKind::Claim => format!("CLAIM {op} {grant} {token}\n"),
        RequestKind::Write { value, base } => {
            format!("WRITE {op} {grant} {token} {value} {base}\n")
        }
    }
}

/// Writes a reply as one line (with its newline).
pub fn reply_line(reply: &StorageReply) -> String {
    let op = pair(reply.op.client, reply.op.seq);
    match reply.result {
        StorageResult::Read(v) => format!("VALUE {op} {v}\n"),
        StorageResult::Written => format!("WRITTEN {op}\n"),
        StorageResult::Claimed => format!("CLAIMED {op}\n"),
        StorageResult::Rejected => format!("REJECTED {op}\n"),
    }
}

fn pair(node: NodeId, seq: u32) -> String {
    format!("{}.{seq}", node.0)
}

fn parse_pair(field: Option<&str>, what: &str) -> Result<(NodeId, u32), String> {
    let field = field.ok_or_else(|| format!("missing {what}"))?;
    let (node, seq) = field
        .split_once('.')
        .ok_or_else(|| format!("{what} `{field}` is not node.seq"))?;
    let node = node
        .parse()
        .map_err(|_| format!("{what} `{field}`: node is not a number"))?;
    let seq = seq
        .parse()
        .map_err(|_| format!("{what} `{field}`: seq is not a number"))?;
    Ok((NodeId(node), seq))
}

fn parse_u64(field: Option<&str>, what: &str) -> Result<u64, String> {
    let field = field.ok_or_else(|| format!("missing {what}"))?;
    field
        .parse()
        .map_err(|_| format!("{what} `{field}` is not a number"))
}

/// Reads a request line (without its newline).
pub fn parse_request(line: &str) -> Result<StorageRequest, String> {
    let mut f = line.split(' ');
    let verb = f.next().unwrap_or("");
    if !matches!(verb, "READ" | "WRITE" | "CLAIM") {
        return Err(format!("unknown request `{verb}` (READ, WRITE or CLAIM)"));
    }
    let (c, seq) = parse_pair(f.next(), "op")?;
    let op = OpId { client: c, seq };
    let (c, seq) = parse_pair(f.next(), "grant")?;
    let grant = GrantId { client: c, seq };
    let token = match f.next() {
        Some("-") => None,
        t => Some(parse_u64(t, "token")?),
    };
    let kind = match verb {
        "READ" => RequestKind::Read,
        "CLAIM" => RequestKind::Claim,
        _ => RequestKind::Write {
            value: parse_u64(f.next(), "value")?,
            base: parse_u64(f.next(), "base")?,
        },
    };
    if let Some(extra) = f.next() {
        return Err(format!("unexpected `{extra}` after the request"));
    }
    Ok(StorageRequest {
        op,
        grant,
        token,
        kind,
    })
}

/// Reads a reply line (without its newline).
pub fn parse_reply(line: &str) -> Result<StorageReply, String> {
    let mut f = line.split(' ');
    let verb = f.next().unwrap_or("");
    if verb == "ERR" {
        return Err(line.to_string());
    }
    let (client, seq) = parse_pair(f.next(), "op")?;
    let result = match verb {
        "VALUE" => StorageResult::Read(parse_u64(f.next(), "value")?),
        "WRITTEN" => StorageResult::Written,
        "CLAIMED" => StorageResult::Claimed,
        "REJECTED" => StorageResult::Rejected,
        _ => return Err(format!("unknown reply `{verb}`")),
    };
    Ok(StorageReply {
        op: OpId { client, seq },
        result,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_and_replies_round_trip_and_bad_lines_are_named() {
        let client = NodeId(2);
        let req = StorageRequest {
            op: OpId { client, seq: 4 },
            grant: GrantId { client, seq: 3 },
            token: Some(17),
            kind: RequestKind::Write { value: 6, base: 5 },
        };
        let line = request_line(&req);
        assert_eq!(line, "WRITE 2.4 2.3 17 6 5\n");
        assert_eq!(parse_request(line.trim_end()), Ok(req));
        let read = StorageRequest {
            token: None,
            kind: RequestKind::Read,
            ..req
        };
        assert_eq!(parse_request(request_line(&read).trim_end()), Ok(read));
        let reply = StorageReply {
            op: req.op,
            result: StorageResult::Read(9),
        };
        assert_eq!(parse_reply(reply_line(&reply).trim_end()), Ok(reply));
        assert_eq!(
            parse_request("DROP 1.1 1.1 -").unwrap_err(),
            "unknown request `DROP` (READ, WRITE or CLAIM)"
        );
        assert_eq!(
            parse_request("READ 1 1.1 -").unwrap_err(),
            "op `1` is not node.seq"
        );
        assert_eq!(
            parse_request("WRITE 1.1 1.1 - 5").unwrap_err(),
            "missing base"
        );
    }
}
