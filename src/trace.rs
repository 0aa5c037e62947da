//! `lockstep run --trace`: one line per event of the world, as docs/trace.md describes.
//!
//! A line is the true time, the node the event happened at, its kind and its text. The text is
//! the event's own description: a message or a history event in its Rust form, with every
//! `NodeId(n)` in it replaced by the node's name (the names the scenario and the history use).

use lockstep_sim::{TraceEntry, TraceKind};

/// The lines of a trace, nodes named by `names` (by node id).
pub fn render(entries: &[TraceEntry], names: &[String]) -> Vec<String> {
    let width = names.iter().map(String::len).max().unwrap_or(4);
    entries
        .iter()
        .map(|e| {
            let node = names.get(e.node.index()).map_or("?", String::as_str);
            let kind = kind(e.kind);
            // The world's own text of a mark, a timer or a start begins with the word the
            // kind column already gives.
            let text = match e.text.strip_prefix(kind) {
                Some(rest)
                    if matches!(
                        e.kind,
                        TraceKind::Mark | TraceKind::Timer | TraceKind::Start
                    ) =>
                {
                    rest.trim_start()
                }
                _ => e.text.as_str(),
            };
            format!(
                "{:>14}  {node:<width$}  {kind:<7}  {}",
                e.time.to_string(),
                named(text, names)
            )
            .trim_end()
            .to_string()
        })
        .collect()
}

/// The word a line gives its kind.
pub fn kind(k: TraceKind) -> &'static str {
    match k {
        TraceKind::Deliver => "recv",
        TraceKind::Drop => "lost",
        TraceKind::Hold => "held",
        TraceKind::Defer => "waits",
        TraceKind::Timer => "timer",
        TraceKind::Fault => "FAULT",
        TraceKind::Mark => "mark",
        TraceKind::Record => "history",
        TraceKind::Start => "start",
        TraceKind::Reset => "reset",
        TraceKind::Stall => "stall",
        TraceKind::Retransmit => "rexmit",
    }
}

/// `text` with each `NodeId(n)` of a node in `names` replaced by its name; any other text,
/// and an id with no name, is kept as it is.
fn named(text: &str, names: &[String]) -> String {
    const OPEN: &str = "NodeId(";
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find(OPEN) {
        out.push_str(&rest[..at]);
        let after = &rest[at + OPEN.len()..];
        let digits = after.bytes().take_while(u8::is_ascii_digit).count();
        let name = (digits > 0 && after[digits..].starts_with(')'))
            .then(|| after[..digits].parse::<usize>().ok())
            .flatten()
            .and_then(|i| names.get(i));
        match name {
            Some(name) => {
                out.push_str(name);
                rest = &after[digits + 1..];
            }
            None => {
                out.push_str(OPEN);
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::named;

    #[test]
    fn node_ids_become_names_and_nothing_else_changes() {
        let names = ["server".to_string(), "client-1".to_string()];
        assert_eq!(
            named(
                "Grant { grant: GrantId { client: NodeId(1), seq: 2 } }",
                &names
            ),
            "Grant { grant: GrantId { client: client-1, seq: 2 } }"
        );
        assert_eq!(
            named("NodeId(0) -> NodeId(1)", &names),
            "server -> client-1"
        );
        // Unknown ids, malformed ones and the text around them stay.
        assert_eq!(
            named("NodeId(7) NodeId() NodeId(x", &names),
            "NodeId(7) NodeId() NodeId(x"
        );
        assert_eq!(
            named("NodeId(99999999999999999999999)", &names),
            "NodeId(99999999999999999999999)"
        );
        assert_eq!(named("µs NodeId(1)é", &names), "µs client-1é");
    }
}
