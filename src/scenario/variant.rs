//! Variants of a scenario file made on the command line: the same system under a named chaos
//! profile instead of its hand-placed faults (`--chaos PROFILE` of `sweep` and `hunt`).

use std::path::Path;

use super::{ScenarioError, line_of};

/// Faults the default profile gets at least this long to draw in, beyond its start and tail.
const CHAOS_WINDOW_MS: f64 = 60_000.0;

/// The text of `text` with its `[[fault]]` list and any `[chaos]` section replaced by
/// `[chaos] profile = PROFILE`, and the run made long enough for the profile: its start, a
/// minute of faults and the quiet tail the profile derives from `model.ttl_ms`. The system,
/// workload, storage, network, clocks and expectation are kept; the text is re-checked when it
/// is parsed, so a bad file still gets errors naming its keys.
///
/// # Errors
/// A [`ScenarioError`] naming `path` when the text is not TOML.
pub fn with_chaos(text: &str, path: &Path, profile: &str) -> Result<String, ScenarioError> {
    let mut doc: toml::Table = text.parse().map_err(|e: toml::de::Error| {
        let line = e.span().map(|s| line_of(text, s.start));
        ScenarioError::one(path, "", line, e.message().to_string())
    })?;
    doc.remove("fault");
    let mut chaos = toml::Table::new();
    chaos.insert("profile".into(), toml::Value::String(profile.to_string()));
    doc.insert("chaos".into(), toml::Value::Table(chaos));
    let number = |v: Option<&toml::Value>| match v {
        Some(toml::Value::Integer(i)) => Some(*i as f64),
        Some(toml::Value::Float(f)) => Some(*f),
        _ => None,
    };
    let ttl_ms = doc
        .get("model")
        .and_then(|m| number(m.get("ttl_ms")))
        .unwrap_or(0.0);
    // The default profile's start (1 s) and tail (liveness 2 x TTL + 10 s, plus 1 s).
    let needed_ms = 1_000.0 + CHAOS_WINDOW_MS + 2.0 * ttl_ms.max(0.0) + 11_000.0;
    if let Some(toml::Value::Table(s)) = doc.get_mut("scenario") {
        let duration = number(s.get("duration_ms")).unwrap_or(0.0);
        if duration < needed_ms {
            s.insert(
                "duration_ms".into(),
                toml::Value::Integer(needed_ms.ceil() as i64),
            );
        }
    }
    Ok(toml::to_string(&doc).expect("a TOML table serializes"))
}
