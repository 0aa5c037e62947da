//! The Redis keyspace the bridge's Redis host serves: the commands a lock client needs,
//! with expiry judged on the host's clock at each command (as `models/src/redis/server.rs`:
//! a key is expired once the clock reads past its deadline's millisecond).
//!
//! `EVAL` runs no Lua: it recognises the two scripts every Redis lock uses (their text with
//! whitespace collapsed, [`COMPARE_AND_DELETE`] and [`COMPARE_AND_PEXPIRE`]) and answers any
//! other script with an error reply.

use std::collections::BTreeMap;

use crate::resp::Reply;

/// The release script (redis.io "Distributed locks", go-redsync, the seed's Go lock).
pub const COMPARE_AND_DELETE: &str = r#"if redis.call("get",KEYS[1]) == ARGV[1] then return redis.call("del",KEYS[1]) else return 0 end"#;

/// The renewal script (go-redsync's `touchScript`, the seed's Go lock `Renew`).
pub const COMPARE_AND_PEXPIRE: &str = r#"if redis.call("get",KEYS[1]) == ARGV[1] then return redis.call("pexpire",KEYS[1],ARGV[2]) else return 0 end"#;

/// The ticket of an acquisition named by its lock value: the value itself when it is a
/// decimal `u64` (the example client's values), else its FNV-1a hash. The client derives
/// its grant's ticket the same way.
pub fn ticket_of(value: &[u8]) -> u64 {
    if let Some(n) = std::str::from_utf8(value).ok().and_then(|s| s.parse().ok()) {
        return n;
    }
    value.iter().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
        (h ^ u64::from(*b)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

#[derive(Clone, Debug, PartialEq, Eq)]
struct Item {
    value: Vec<u8>,
    /// Deadline in the host's milliseconds.
    expires_at_ms: Option<u64>,
}

/// The keyspace.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Keyspace {
    db: BTreeMap<Vec<u8>, Item>,
}

/// What one command did beyond its reply.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Effect {
    /// The reply.
    pub reply: Reply,
    /// A `SET .. NX` that took the key: the value it set (the service issued an acquisition).
    pub issued: Option<Vec<u8>>,
}

fn collapse(script: &[u8]) -> String {
    String::from_utf8_lossy(script)
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
}

fn int(arg: &[u8]) -> Option<i64> {
    std::str::from_utf8(arg).ok()?.parse().ok()
}

fn err(text: &str) -> Effect {
    Effect {
        reply: Reply::Error(text.to_string()),
        issued: None,
    }
}

fn ok(reply: Reply) -> Effect {
    Effect {
        reply,
        issued: None,
    }
}

impl Keyspace {
    /// An empty keyspace.
    pub fn new() -> Keyspace {
        Keyspace::default()
    }

    /// The live value of `key` at `now_ms`, dropping it if expired.
    fn live(&mut self, key: &[u8], now_ms: u64) -> Option<&Item> {
        let expired = self
            .db
            .get(key)
            .is_some_and(|i| i.expires_at_ms.is_some_and(|at| now_ms > at));
        if expired {
            self.db.remove(key);
        }
        self.db.get(key)
    }

    /// Runs one command (its arguments, the name first) at the host's `now_ms`.
    pub fn exec(&mut self, now_ms: u64, args: &[Vec<u8>]) -> Effect {
        let Some(name) = args.first() else {
            return err("ERR empty command");
        };
        let name = String::from_utf8_lossy(name).to_ascii_uppercase();
        let arity = |n: usize| args.len() == n;
        match name.as_str() {
            "GET" if arity(2) => ok(Reply::Bulk(
                self.live(&args[1], now_ms).map(|i| i.value.clone()),
            )),
            "DEL" if args.len() >= 2 => {
                let mut n = 0;
                for key in &args[1..] {
                    if self.live(key, now_ms).is_some() {
                        self.db.remove(key);
                        n += 1;
                    }
                }
                ok(Reply::Integer(n))
            }
            "PEXPIRE" if arity(3) => match int(&args[2]) {
                Some(ms) => ok(Reply::Integer(i64::from(
                    self.pexpire(&args[1], ms, now_ms),
                ))),
                None => err("ERR value is not an integer or out of range"),
            },
            "INCR" if arity(2) => {
                let current = match self.live(&args[1], now_ms) {
                    None => 0,
                    Some(i) => match int(&i.value) {
                        Some(n) => n,
                        None => return err("ERR value is not an integer or out of range"),
                    },
                };
                let Some(next) = current.checked_add(1) else {
                    return err("ERR increment or decrement would overflow");
                };
                let expires_at_ms = self.db.get(&args[1]).and_then(|i| i.expires_at_ms);
                self.db.insert(
                    args[1].clone(),
                    Item {
                        value: next.to_string().into_bytes(),
                        expires_at_ms,
                    },
                );
                ok(Reply::Integer(next))
            }
            "SET" if args.len() >= 3 => self.set(now_ms, args),
            "EVAL" if args.len() >= 3 => self.eval(now_ms, args),
            "GET" | "DEL" | "PEXPIRE" | "INCR" | "SET" | "EVAL" => err(&format!(
                "ERR wrong number of arguments for '{}' command",
                name.to_ascii_lowercase()
            )),
            _ => err(&format!(
                "ERR unknown command '{}'",
                name.to_ascii_lowercase()
            )),
        }
    }

    fn pexpire(&mut self, key: &[u8], ms: i64, now_ms: u64) -> bool {
        if self.live(key, now_ms).is_none() {
            return false;
        }
        if ms <= 0 {
            self.db.remove(key);
        } else if let Some(item) = self.db.get_mut(key) {
            item.expires_at_ms = Some(now_ms.saturating_add(ms.unsigned_abs()));
        }
        true
    }

    /// `SET key value [NX] [PX ms]`.
    fn set(&mut self, now_ms: u64, args: &[Vec<u8>]) -> Effect {
        let (mut nx, mut px) = (false, None);
        let mut rest = args[3..].iter();
        while let Some(opt) = rest.next() {
            match String::from_utf8_lossy(opt).to_ascii_uppercase().as_str() {
                "NX" => nx = true,
                "PX" => match rest.next().and_then(|a| int(a)) {
                    Some(ms) if ms > 0 => px = Some(ms.unsigned_abs()),
                    Some(_) => return err("ERR invalid expire time in 'set' command"),
                    None => return err("ERR value is not an integer or out of range"),
                },
                _ => return err("ERR syntax error"),
            }
        }
        if nx && self.live(&args[1], now_ms).is_some() {
            return ok(Reply::Bulk(None));
        }
        self.db.insert(
            args[1].clone(),
            Item {
                value: args[2].clone(),
                expires_at_ms: px.map(|ms| now_ms.saturating_add(ms)),
            },
        );
        Effect {
            reply: Reply::Simple("OK".to_string()),
            issued: nx.then(|| args[2].clone()),
        }
    }

    /// `EVAL script numkeys key [arg ..]` of the two known scripts.
    fn eval(&mut self, now_ms: u64, args: &[Vec<u8>]) -> Effect {
        let script = collapse(&args[1]);
        let keys = int(&args[2]);
        let owner = |ks: &mut Keyspace, key: &[u8], value: &[u8]| {
            ks.live(key, now_ms).is_some_and(|i| i.value == value)
        };
        if script == collapse(COMPARE_AND_DELETE.as_bytes()) {
            if keys != Some(1) || args.len() != 5 {
                return err("ERR compare-and-delete takes 1 key and 1 argument");
            }
            let n = owner(self, &args[3], &args[4]) && self.db.remove(&args[3]).is_some();
            return ok(Reply::Integer(i64::from(n)));
        }
        if script == collapse(COMPARE_AND_PEXPIRE.as_bytes()) {
            if keys != Some(1) || args.len() != 6 {
                return err("ERR compare-and-pexpire takes 1 key and 2 arguments");
            }
            let Some(ms) = int(&args[5]) else {
                return err("ERR value is not an integer or out of range");
            };
            let n = owner(self, &args[3], &args[4]) && self.pexpire(&args[3], ms, now_ms);
            return ok(Reply::Integer(i64::from(n)));
        }
        err(
            "ERR the bridge's Redis host runs only the compare-and-delete and compare-and-pexpire scripts",
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(ks: &mut Keyspace, now: u64, args: &[&str]) -> Effect {
        let args: Vec<Vec<u8>> = args.iter().map(|a| a.as_bytes().to_vec()).collect();
        ks.exec(now, &args)
    }

    #[test]
    fn set_nx_px_expires_past_its_deadline_millisecond() {
        let mut ks = Keyspace::new();
        let e = run(&mut ks, 0, &["SET", "k", "7", "NX", "PX", "100"]);
        assert_eq!(e.issued, Some(b"7".to_vec()));
        assert_eq!(
            run(&mut ks, 100, &["SET", "k", "8", "NX", "PX", "100"]).reply,
            Reply::Bulk(None)
        );
        assert_eq!(
            run(&mut ks, 100, &["GET", "k"]).reply,
            Reply::Bulk(Some(b"7".to_vec()))
        );
        assert_eq!(run(&mut ks, 101, &["GET", "k"]).reply, Reply::Bulk(None));
        let e = run(&mut ks, 101, &["SET", "k", "8", "NX", "PX", "100"]);
        assert_eq!(e.issued, Some(b"8".to_vec()));
    }

    #[test]
    fn scripts_are_recognised_by_their_text_and_others_refused() {
        let mut ks = Keyspace::new();
        run(&mut ks, 0, &["SET", "k", "v", "NX", "PX", "100"]);
        let spaced = COMPARE_AND_PEXPIRE.replace(' ', "\n  ");
        assert_eq!(
            run(&mut ks, 50, &["EVAL", &spaced, "1", "k", "v", "1000"]).reply,
            Reply::Integer(1)
        );
        assert_eq!(
            run(&mut ks, 500, &["EVAL", COMPARE_AND_DELETE, "1", "k", "w"]).reply,
            Reply::Integer(0)
        );
        assert_eq!(
            run(&mut ks, 500, &["EVAL", COMPARE_AND_DELETE, "1", "k", "v"]).reply,
            Reply::Integer(1)
        );
        assert!(matches!(
            run(&mut ks, 0, &["EVAL", "return 1", "0"]).reply,
            Reply::Error(_)
        ));
        assert!(matches!(
            run(&mut ks, 0, &["FLUSHALL"]).reply,
            Reply::Error(_)
        ));
        assert_eq!(run(&mut ks, 0, &["INCR", "n"]).reply, Reply::Integer(1));
        assert_eq!(run(&mut ks, 0, &["DEL", "n", "x"]).reply, Reply::Integer(1));
        assert_eq!(ticket_of(b"42"), 42);
        assert_ne!(ticket_of(b"abc"), ticket_of(b"abd"));
    }
}
