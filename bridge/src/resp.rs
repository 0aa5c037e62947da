//! A minimal RESP2 codec, by hand: commands are arrays of bulk strings, replies the five
//! RESP2 types. No crate: the small ones on crates.io are either async-framework-bound
//! (tokio codecs) or unmaintained, and the whole codec is under 150 lines.

/// A RESP2 reply.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Reply {
    /// `+OK`.
    Simple(String),
    /// `-ERR ...`.
    Error(String),
    /// `:1`.
    Integer(i64),
    /// `$3\r\nfoo` or the null bulk string `$-1`.
    Bulk(Option<Vec<u8>>),
}

/// Encodes a command as an array of bulk strings.
pub fn encode_command(args: &[&[u8]]) -> Vec<u8> {
    let mut out = format!("*{}\r\n", args.len()).into_bytes();
    for a in args {
        out.extend_from_slice(format!("${}\r\n", a.len()).as_bytes());
        out.extend_from_slice(a);
        out.extend_from_slice(b"\r\n");
    }
    out
}

/// Encodes a reply.
pub fn encode_reply(reply: &Reply) -> Vec<u8> {
    match reply {
        Reply::Simple(s) => format!("+{s}\r\n").into_bytes(),
        Reply::Error(e) => format!("-{e}\r\n").into_bytes(),
        Reply::Integer(i) => format!(":{i}\r\n").into_bytes(),
        Reply::Bulk(None) => b"$-1\r\n".to_vec(),
        Reply::Bulk(Some(b)) => {
            let mut out = format!("${}\r\n", b.len()).into_bytes();
            out.extend_from_slice(b);
            out.extend_from_slice(b"\r\n");
            out
        }
    }
}

/// One line ending in CRLF at the start of `buf`: its text and the bytes it takes.
fn line(buf: &[u8]) -> Option<(&[u8], usize)> {
    let end = buf.windows(2).position(|w| w == b"\r\n")?;
    Some((&buf[..end], end + 2))
}

fn number(text: &[u8]) -> Result<i64, String> {
    std::str::from_utf8(text)
        .ok()
        .and_then(|t| t.parse().ok())
        .ok_or_else(|| format!("`{}` is not a number", String::from_utf8_lossy(text)))
}

/// What a decoder found at the start of a buffer: `Ok(None)` when more bytes are needed,
/// else the item and the bytes it takes.
pub type Decoded<T> = Result<Option<(T, usize)>, String>;

/// A bulk string at the start of `buf`.
fn bulk(buf: &[u8]) -> Decoded<Option<Vec<u8>>> {
    let Some((head, used)) = line(buf) else {
        return Ok(None);
    };
    if head.first() != Some(&b'$') {
        return Err("expected a bulk string (`$`)".to_string());
    }
    let len = number(&head[1..])?;
    if len < 0 {
        return Ok(Some((None, used)));
    }
    let len = usize::try_from(len).map_err(|_| "bulk length out of range".to_string())?;
    if len > 512 * 1024 * 1024 {
        return Err("bulk string over 512 MB".to_string());
    }
    if buf.len() < used + len + 2 {
        return Ok(None);
    }
    if &buf[used + len..used + len + 2] != b"\r\n" {
        return Err("bulk string not ended by CRLF".to_string());
    }
    Ok(Some((Some(buf[used..used + len].to_vec()), used + len + 2)))
}

/// Decodes a command at the start of `buf`: its arguments and the bytes it takes, or
/// `Ok(None)` when more bytes are needed.
pub fn decode_command(buf: &[u8]) -> Decoded<Vec<Vec<u8>>> {
    let Some((head, mut used)) = line(buf) else {
        return Ok(None);
    };
    if head.first() != Some(&b'*') {
        return Err("expected an array of bulk strings (`*`)".to_string());
    }
    let n = number(&head[1..])?;
    if !(1..=1024 * 1024).contains(&n) {
        return Err(format!("command of {n} arguments"));
    }
    let mut args = Vec::new();
    for _ in 0..n {
        match bulk(&buf[used..])? {
            None => return Ok(None),
            Some((None, _)) => return Err("null argument".to_string()),
            Some((Some(a), u)) => {
                args.push(a);
                used += u;
            }
        }
    }
    Ok(Some((args, used)))
}

/// Decodes a reply at the start of `buf`: the reply and the bytes it takes, or `Ok(None)`
/// when more bytes are needed.
pub fn decode_reply(buf: &[u8]) -> Decoded<Reply> {
    let Some((head, used)) = line(buf) else {
        return Ok(None);
    };
    let text = || String::from_utf8_lossy(&head[1..]).into_owned();
    Ok(Some(match head.first() {
        Some(b'+') => (Reply::Simple(text()), used),
        Some(b'-') => (Reply::Error(text()), used),
        Some(b':') => (Reply::Integer(number(&head[1..])?), used),
        Some(b'$') => match bulk(buf)? {
            None => return Ok(None),
            Some((b, u)) => (Reply::Bulk(b), u),
        },
        _ => return Err("unknown RESP2 reply type".to_string()),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commands_and_replies_round_trip_in_pieces() {
        let cmd = encode_command(&[b"SET", b"k", b"v\r\nx"]);
        for cut in 0..cmd.len() {
            assert_eq!(decode_command(&cmd[..cut]), Ok(None), "cut at {cut}");
        }
        let args = vec![b"SET".to_vec(), b"k".to_vec(), b"v\r\nx".to_vec()];
        assert_eq!(decode_command(&cmd), Ok(Some((args, cmd.len()))));
        for reply in [
            Reply::Simple("OK".into()),
            Reply::Error("ERR x".into()),
            Reply::Integer(-3),
            Reply::Bulk(None),
            Reply::Bulk(Some(b"a\r\nb".to_vec())),
        ] {
            let bytes = encode_reply(&reply);
            assert_eq!(decode_reply(&bytes), Ok(Some((reply, bytes.len()))));
        }
        assert!(decode_command(b"PING\r\n").is_err());
    }
}
