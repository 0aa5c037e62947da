//! Variants of a scenario file made on the command line: the same system under a named chaos
//! profile instead of its hand-placed faults (`--chaos PROFILE` of `sweep` and `hunt`).

use std::path::Path;

use toml_edit::{DocumentMut, Item, Table, Value};

use super::{ScenarioError, line_of};

/// Faults the default profile gets at least this long to draw in, beyond its start and tail.
const CHAOS_WINDOW_MS: f64 = 60_000.0;

/// The text of `text` with its `[[fault]]` list and any `[chaos]` section replaced by
/// `[chaos] profile = PROFILE`, and the run made long enough for the profile: its start, a
/// minute of faults and the quiet tail the profile derives from `model.ttl_ms`. The system,
/// workload, storage, network, clocks, expectation and comments are kept; the text is
/// re-checked when it is parsed, so a bad file still gets errors naming its keys.
///
/// # Errors
/// A [`ScenarioError`] naming `path` when the text is not TOML.
pub fn with_chaos(text: &str, path: &Path, profile: &str) -> Result<String, ScenarioError> {
    let mut doc: DocumentMut = text.parse().map_err(|e: toml_edit::TomlError| {
        let line = e.span().map(|s| line_of(text, s.start));
        ScenarioError::one(path, "", line, e.message().to_string())
    })?;
    doc.remove("fault");
    doc.remove("chaos");
    let mut chaos = Table::new();
    chaos["profile"] = toml_edit::value(profile);
    doc.insert("chaos", Item::Table(chaos));
    let number = |v: Option<&Item>| match v.and_then(Item::as_value) {
        Some(Value::Integer(i)) => Some(*i.value() as f64),
        Some(Value::Float(f)) => Some(*f.value()),
        _ => None,
    };
    let ttl_ms = doc
        .get("model")
        .and_then(|m| number(m.get("ttl_ms")))
        .unwrap_or(0.0);
    // The default profile's start (1 s) and tail (liveness 2 x TTL + 10 s, plus 1 s).
    let needed_ms = 1_000.0 + CHAOS_WINDOW_MS + 2.0 * ttl_ms.max(0.0) + 11_000.0;
    if let Some(s) = doc.get_mut("scenario").and_then(Item::as_table_like_mut) {
        let duration = number(s.get("duration_ms")).unwrap_or(0.0);
        if duration < needed_ms {
            s.insert("duration_ms", toml_edit::value(needed_ms.ceil() as i64));
        }
    }
    Ok(doc.to_string())
}
