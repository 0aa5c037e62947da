//! The history's interchange format: JSON Lines, one header line and then one event per line
//! (`docs/history.md` of the project, with `docs/history.schema.json` the JSON Schema of one
//! line). [`write`] gives the text of a [`History`]; [`parse`] reads one back, or every
//! problem it finds, each with its line.
//!
//! Processes are named, never numbered: the header lists the names (`nodes`) in the order of
//! their [`NodeId`]s, and a name an event uses that the header does not list is a new process,
//! appended in the order names first appear, so a history recorded by a real system need not
//! know every process in advance.
//!
//! Like the checker, the parser never panics on its input: a line it cannot read is a
//! [`LineError`] in the user's words (what is missing, what was found instead), never a Rust
//! type's name.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde_json::{Map, Value};

use crate::checker::Options;
use crate::history::{
    Entry, Event, ExitReason, Fault, FaultKind, GrantId, History, NodeId, OpId, OpKind, OpOutcome,
    StorageOp,
};
use crate::verdict::Property;

/// The version of the format, the header's `lockstep_history`.
pub const VERSION: u64 = 1;

/// How the header says to judge the history: the checker's [`Options`] that a history cannot
/// show by itself, and the property.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Judging {
    /// The property to judge (`property`); `None` when the header does not say.
    pub property: Option<Property>,
    /// `tokens_monotonic`: the family promises increasing fencing tokens.
    pub tokens_monotonic: bool,
    /// `leadership`: measure leader terms.
    pub leadership: bool,
    /// `quiet_from_ns`: from when no fault is in force, to measure recovery.
    pub quiet_from_ns: Option<u64>,
    /// `fault_from_ns`: from when a fault may come; with `quiet_from_ns`, the fault window.
    pub fault_from_ns: Option<u64>,
    /// `initial_value`: storage's value before the first write.
    pub initial_value: u64,
}

impl Judging {
    /// What a header records for `options` and `property`.
    pub fn of(options: &Options, property: Property) -> Judging {
        Judging {
            property: Some(property),
            tokens_monotonic: options.tokens_monotonic,
            leadership: options.leadership,
            quiet_from_ns: options.quiet_from_ns,
            fault_from_ns: options.fault_from_ns,
            initial_value: options.initial_value,
        }
    }

    /// The checker's options for this judging (examples kept as by default).
    pub fn options(&self) -> Options {
        Options {
            tokens_monotonic: self.tokens_monotonic,
            initial_value: self.initial_value,
            quiet_from_ns: self.quiet_from_ns,
            fault_from_ns: self.fault_from_ns,
            leadership: self.leadership,
            ..Options::default()
        }
    }
}

/// A history read from its text.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Parsed {
    /// The history.
    pub history: History,
    /// How its header says to judge it.
    pub judging: Judging,
    /// The line (from 1) of each entry of `history.entries`.
    pub lines: Vec<usize>,
}

impl Parsed {
    /// The line of entry `entry`, as a [`HistoryError`](crate::HistoryError) names it.
    pub fn line_of(&self, entry: usize) -> Option<usize> {
        self.lines.get(entry).copied()
    }
}

/// One problem of a history's text.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LineError {
    /// The line (from 1); 0 for a problem of the whole text (no header at all).
    pub line: usize,
    /// What is wrong, in words.
    pub problem: String,
}

impl LineError {
    /// `FILE:LINE: problem` (`FILE: problem` for the whole text).
    pub fn in_file(&self, file: &str) -> String {
        match self.line {
            0 => format!("{file}: {}", self.problem),
            n => format!("{file}:{n}: {}", self.problem),
        }
    }
}

/// The text of `history`: the header (with `judging`), then one line per entry, each ending
/// in a newline.
pub fn write(history: &History, judging: &Judging) -> String {
    let mut out = String::new();
    let names: Vec<String> = history.names.iter().map(|n| json_str(n)).collect();
    let _ = write!(
        out,
        "{{\"lockstep_history\":{VERSION},\"nodes\":[{}],\"end_ns\":{},\"complete\":{}",
        names.join(","),
        history.end_ns,
        history.complete
    );
    if let Some(p) = judging.property {
        let _ = write!(out, ",\"property\":\"{}\"", property_name(p));
    }
    let _ = write!(
        out,
        ",\"tokens_monotonic\":{},\"leadership\":{}",
        judging.tokens_monotonic, judging.leadership
    );
    if let Some(q) = judging.quiet_from_ns {
        let _ = write!(out, ",\"quiet_from_ns\":{q}");
    }
    if let Some(f) = judging.fault_from_ns {
        let _ = write!(out, ",\"fault_from_ns\":{f}");
    }
    let _ = writeln!(out, ",\"initial_value\":{}}}", judging.initial_value);
    for entry in &history.entries {
        write_entry(&mut out, history, entry);
    }
    out
}

fn write_entry(out: &mut String, h: &History, entry: &Entry) {
    let name = |n: NodeId| json_str(&h.name(n));
    let id = |client: NodeId, seq: u32| format!("{{\"client\":{},\"seq\":{seq}}}", name(client));
    let _ = write!(out, "{{\"time_ns\":{},\"event\":", entry.time_ns);
    match &entry.event {
        Event::Request { client } => {
            let _ = write!(out, "\"request\",\"client\":{}", name(*client));
        }
        Event::Grant {
            grant,
            token,
            ticket,
        } => {
            let _ = write!(out, "\"grant\",\"grant\":{}", id(grant.client, grant.seq));
            if let Some(t) = token {
                let _ = write!(out, ",\"token\":{t}");
            }
            if let Some(t) = ticket {
                let _ = write!(out, ",\"ticket\":{t}");
            }
        }
        Event::AcquireFailed { client } => {
            let _ = write!(out, "\"acquire-failed\",\"client\":{}", name(*client));
        }
        Event::Exit { grant, why } => {
            let _ = write!(
                out,
                "\"exit\",\"grant\":{},\"why\":\"{}\"",
                id(grant.client, grant.seq),
                EXIT_REASONS
                    .iter()
                    .find(|(_, r)| r == why)
                    .map_or("", |(n, _)| n)
            );
        }
        Event::Storage(op) => {
            let _ = write!(
                out,
                "\"storage\",\"op\":{},\"grant\":{}",
                id(op.op.client, op.op.seq),
                id(op.grant.client, op.grant.seq)
            );
            match op.kind {
                OpKind::Read { value } => {
                    let _ = write!(out, ",\"kind\":\"read\",\"value\":{value}");
                }
                OpKind::Write { value, base } => {
                    let _ = write!(out, ",\"kind\":\"write\",\"value\":{value},\"base\":{base}");
                }
                OpKind::Claim => out.push_str(",\"kind\":\"claim\""),
            }
            if let Some(t) = op.token {
                let _ = write!(out, ",\"token\":{t}");
            }
            let outcome = match op.outcome {
                OpOutcome::Accepted => "accepted",
                OpOutcome::Rejected => "rejected",
            };
            let _ = write!(out, ",\"outcome\":\"{outcome}\"");
        }
        Event::Fault(f) => {
            let nodes: Vec<String> = f.nodes.iter().map(|&n| name(n)).collect();
            let _ = write!(
                out,
                "\"fault\",\"kind\":\"{}\",\"nodes\":[{}],\"detail\":{}",
                FAULT_KINDS
                    .iter()
                    .find(|(_, k)| *k == f.kind)
                    .map_or("", |(n, _)| n),
                nodes.join(","),
                json_str(&f.detail)
            );
        }
        Event::Issued { client, ticket } => {
            let _ = write!(
                out,
                "\"issued\",\"client\":{},\"ticket\":{ticket}",
                name(*client)
            );
        }
        Event::Enqueued { job } => {
            let _ = write!(out, "\"enqueued\",\"job\":{job}");
        }
        Event::Dequeued { job, client } => {
            let _ = write!(
                out,
                "\"dequeued\",\"job\":{job},\"client\":{}",
                name(*client)
            );
        }
        Event::Claimed { job, client } => {
            let _ = write!(
                out,
                "\"claimed\",\"job\":{job},\"client\":{}",
                name(*client)
            );
        }
        Event::Done { job, client } => {
            let _ = write!(out, "\"done\",\"job\":{job},\"client\":{}", name(*client));
        }
        Event::Due { tick, client } => {
            let _ = write!(out, "\"due\",\"tick\":{tick},\"client\":{}", name(*client));
        }
        Event::Shared { client } => {
            let _ = write!(out, "\"shared\",\"client\":{}", name(*client));
        }
        Event::Nest { client } => {
            let _ = write!(out, "\"nest\",\"client\":{}", name(*client));
        }
        Event::Nested { client } => {
            let _ = write!(out, "\"nested\",\"client\":{}", name(*client));
        }
        Event::Pick {
            client,
            lock,
            resource,
        } => {
            let _ = write!(
                out,
                "\"pick\",\"client\":{},\"lock\":{lock},\"resource\":{resource}",
                name(*client)
            );
        }
    }
    out.push_str("}\n");
}

fn json_str(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_else(|_| "\"\"".to_string())
}

fn property_name(p: Property) -> &'static str {
    match p {
        Property::Resource => "resource",
        Property::MutualExclusion => "mutual-exclusion",
    }
}

const EXIT_REASONS: &[(&str, ExitReason)] = &[
    ("released", ExitReason::Released),
    ("lost", ExitReason::Lost),
    ("abandoned", ExitReason::Abandoned),
    ("crashed", ExitReason::Crashed),
    ("terminated", ExitReason::Terminated),
];

const FAULT_KINDS: &[(&str, FaultKind)] = &[
    ("pause", FaultKind::Pause),
    ("resume", FaultKind::Resume),
    ("crash", FaultKind::Crash),
    ("terminate", FaultKind::Terminate),
    ("restart", FaultKind::Restart),
    ("partition", FaultKind::Partition),
    ("heal", FaultKind::Heal),
    ("clock-step", FaultKind::ClockStep),
    ("clock-slew", FaultKind::ClockSlew),
    ("clock-drift", FaultKind::ClockDrift),
    ("network", FaultKind::Network),
];

const HEADER_KEYS: &[&str] = &[
    "lockstep_history",
    "nodes",
    "end_ns",
    "complete",
    "property",
    "tokens_monotonic",
    "leadership",
    "quiet_from_ns",
    "fault_from_ns",
    "initial_value",
];

/// The event kinds and the keys of each, besides `time_ns` and `event`.
const EVENT_KEYS: &[(&str, &[&str])] = &[
    ("request", &["client"]),
    ("grant", &["grant", "token", "ticket"]),
    ("acquire-failed", &["client"]),
    ("exit", &["grant", "why"]),
    (
        "storage",
        &["op", "grant", "kind", "value", "base", "token", "outcome"],
    ),
    ("fault", &["kind", "nodes", "detail"]),
    ("issued", &["client", "ticket"]),
    ("enqueued", &["job"]),
    ("claimed", &["job", "client"]),
    ("dequeued", &["job", "client"]),
    ("done", &["job", "client"]),
    ("due", &["tick", "client"]),
    ("pick", &["client", "lock", "resource"]),
    ("shared", &["client"]),
    ("nest", &["client"]),
    ("nested", &["client"]),
];

/// Reads a history from its text (UTF-8, one JSON object a line; blank lines are skipped; a
/// leading byte-order mark is skipped, as RFC 8259 allows, since Windows editors write one).
///
/// # Errors
/// Every problem found, each with its line, in line order: a line that is not UTF-8 or not a
/// JSON object, a missing header, a key missing, unknown or of the wrong type, a value out of
/// range, a time before the previous event's or after the header's `end_ns`.
pub fn parse(text: &[u8]) -> Result<Parsed, Vec<LineError>> {
    let text = text.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(text);
    let mut reader = Reader::default();
    let mut header_seen = false;
    for (i, raw) in text.split(|&b| b == b'\n').enumerate() {
        let line = i + 1;
        let raw = raw.strip_suffix(b"\r").unwrap_or(raw);
        if raw.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        let Ok(raw) = std::str::from_utf8(raw) else {
            reader.error(line, "not UTF-8 text".to_string());
            header_seen = true;
            continue;
        };
        let object = match read_json(raw) {
            Ok((Value::Object(map), twice)) => {
                if !twice.is_empty() {
                    let twice: Vec<String> =
                        twice.iter().map(|k| format!("`{}`", cut(k))).collect();
                    reader.error(
                        line,
                        format!("a key given twice in one object: {}", twice.join(", ")),
                    );
                    header_seen = true;
                    continue;
                }
                map
            }
            Ok((other, _)) => {
                reader.error(
                    line,
                    format!("expected a JSON object {{...}}, got {}", shown(&other)),
                );
                header_seen = true;
                continue;
            }
            Err(e) => {
                reader.error(line, json_problem(&e));
                header_seen = true;
                continue;
            }
        };
        if !header_seen {
            header_seen = true;
            if object.contains_key("lockstep_history") {
                reader.header(line, &object);
                continue;
            }
            reader.error(
                line,
                "the first line must be the header, {\"lockstep_history\": 1, \"nodes\": [...], ...}; this line has no `lockstep_history`".to_string(),
            );
        } else if object.contains_key("lockstep_history") {
            reader.error(
                line,
                "a second header: only the first line is the header".to_string(),
            );
            continue;
        }
        reader.event(line, &object);
    }
    if !header_seen {
        reader.error(
            0,
            "the history is empty: it needs at least its header line, {\"lockstep_history\": 1, \"nodes\": [...]}".to_string(),
        );
    }
    reader.finish()
}

#[derive(Default)]
struct Reader {
    errors: Vec<LineError>,
    names: Vec<String>,
    ids: BTreeMap<String, u32>,
    entries: Vec<Entry>,
    lines: Vec<usize>,
    judging: Judging,
    end_ns: Option<(u64, usize)>,
    complete: bool,
    header: bool,
    last_time: Option<(u64, usize)>,
}

impl Reader {
    fn error(&mut self, line: usize, problem: String) {
        self.errors.push(LineError { line, problem });
    }

    fn finish(mut self) -> Result<Parsed, Vec<LineError>> {
        if let Some((end, end_line)) = self.end_ns {
            for (entry, &line) in self.entries.iter().zip(&self.lines) {
                if entry.time_ns > end {
                    self.errors.push(LineError {
                        line,
                        problem: format!(
                            "`time_ns` {} is after the header's `end_ns` {end} (line {end_line})",
                            entry.time_ns
                        ),
                    });
                }
            }
        }
        if !self.errors.is_empty() {
            self.errors.sort_by_key(|e| e.line);
            return Err(self.errors);
        }
        let end_ns = match self.end_ns {
            Some((end, _)) => end,
            None => self.entries.last().map_or(0, |e| e.time_ns),
        };
        Ok(Parsed {
            history: History {
                entries: self.entries,
                names: self.names,
                end_ns,
                complete: !self.header || self.complete,
            },
            judging: self.judging,
            lines: self.lines,
        })
    }

    fn header(&mut self, line: usize, object: &Map<String, Value>) {
        self.header = true;
        self.complete = true;
        let mut p = Line::new(line);
        for key in object.keys() {
            if !HEADER_KEYS.contains(&key.as_str()) {
                p.problem(format!(
                    "unknown key `{}` in the header; its keys are {}",
                    cut(key),
                    list(HEADER_KEYS)
                ));
            }
        }
        match object.get("lockstep_history") {
            Some(v) if v.as_u64() == Some(VERSION) => {}
            Some(v) => p.problem(format!(
                "`lockstep_history` must be {VERSION}, the version of the format this lockstep reads; got {}",
                shown(v)
            )),
            None => {}
        }
        match object.get("nodes") {
            None => p.problem("missing `nodes`, the list of the processes' names".to_string()),
            Some(Value::Array(items)) => {
                for (i, item) in items.iter().enumerate() {
                    match item.as_str() {
                        Some(name) if self.ids.contains_key(name) => {
                            p.problem(format!("`nodes` names {} twice", shown(item)))
                        }
                        Some("") => p.problem(format!("`nodes[{i}]` is empty: a name is needed")),
                        Some(name) if name.chars().any(char::is_control) => p.problem(format!(
                            "`nodes[{i}]` has a control character: {}",
                            shown(item)
                        )),
                        Some(name) => {
                            self.add_name(name);
                        }
                        None => p.problem(format!(
                            "`nodes[{i}]` must be a name (a string), got {}",
                            shown(item)
                        )),
                    }
                }
            }
            Some(v) => p.problem(format!("`nodes` must be a list of names, got {}", shown(v))),
        }
        if let Some(v) = object.get("end_ns") {
            if let Some(end) = p.number(v, "end_ns") {
                self.end_ns = Some((end, line));
            }
        }
        if let Some(v) = object.get("complete") {
            self.complete = p.boolean(v, "complete").unwrap_or(true);
        }
        if let Some(v) = object.get("property") {
            match v.as_str() {
                Some("resource") => self.judging.property = Some(Property::Resource),
                Some("mutual-exclusion") => {
                    self.judging.property = Some(Property::MutualExclusion);
                }
                _ => p.problem(format!(
                    "`property` must be \"resource\" or \"mutual-exclusion\", got {}",
                    shown(v)
                )),
            }
        }
        if let Some(v) = object.get("tokens_monotonic") {
            self.judging.tokens_monotonic = p.boolean(v, "tokens_monotonic").unwrap_or(false);
        }
        if let Some(v) = object.get("leadership") {
            self.judging.leadership = p.boolean(v, "leadership").unwrap_or(false);
        }
        match object.get("quiet_from_ns") {
            None | Some(Value::Null) => {}
            Some(v) => self.judging.quiet_from_ns = p.number(v, "quiet_from_ns"),
        }
        match object.get("fault_from_ns") {
            None | Some(Value::Null) => {}
            Some(v) => self.judging.fault_from_ns = p.number(v, "fault_from_ns"),
        }
        if let Some(v) = object.get("initial_value") {
            self.judging.initial_value = p.number(v, "initial_value").unwrap_or(0);
        }
        self.errors.extend(p.problems);
    }

    fn add_name(&mut self, name: &str) -> NodeId {
        if let Some(&id) = self.ids.get(name) {
            return NodeId(id);
        }
        let id = u32::try_from(self.names.len()).unwrap_or(u32::MAX);
        self.names.push(name.to_string());
        self.ids.insert(name.to_string(), id);
        NodeId(id)
    }

    fn event(&mut self, line: usize, object: &Map<String, Value>) {
        let mut p = Line::new(line);
        let time = match object.get("time_ns") {
            None => {
                p.problem("missing `time_ns`, the event's true time in nanoseconds".to_string());
                None
            }
            Some(v) => p.number(v, "time_ns"),
        };
        let kind = match object.get("event") {
            None => {
                p.problem(format!(
                    "missing `event`, the kind of event: {}",
                    list(&kinds())
                ));
                None
            }
            Some(v) => match v
                .as_str()
                .and_then(|k| EVENT_KEYS.iter().find(|(n, _)| *n == k))
            {
                Some(found) => Some(*found),
                None => {
                    p.problem(format!(
                        "unknown `event` {}; the kinds are {}",
                        shown(v),
                        list(&kinds())
                    ));
                    None
                }
            },
        };
        if let Some((name, keys)) = kind {
            for key in object.keys() {
                if key != "time_ns" && key != "event" && !keys.contains(&key.as_str()) {
                    p.problem(format!(
                        "unknown key `{}` in a `{name}` event; its keys are `time_ns`, `event`, {}",
                        cut(key),
                        list(keys)
                    ));
                }
            }
        }
        let event = kind.and_then(|(name, _)| self.read_event(&mut p, name, object));
        if let Some(t) = time {
            if let Some((last, last_line)) = self.last_time {
                if t < last {
                    p.problem(format!(
                        "time goes backwards: `time_ns` {t} is before {last}, the time of line {last_line}"
                    ));
                }
            }
            if self.last_time.is_none_or(|(last, _)| t >= last) {
                self.last_time = Some((t, line));
            }
        }
        match (time, event, p.problems.is_empty()) {
            (Some(time_ns), Some(event), true) => {
                self.entries.push(Entry { time_ns, event });
                self.lines.push(line);
            }
            _ => self.errors.extend(p.problems),
        }
    }

    fn read_event(&mut self, p: &mut Line, kind: &str, o: &Map<String, Value>) -> Option<Event> {
        match kind {
            "request" => Some(Event::Request {
                client: self.node(p, o, "client")?,
            }),
            "acquire-failed" => Some(Event::AcquireFailed {
                client: self.node(p, o, "client")?,
            }),
            "shared" => Some(Event::Shared {
                client: self.node(p, o, "client")?,
            }),
            "nest" => Some(Event::Nest {
                client: self.node(p, o, "client")?,
            }),
            "nested" => Some(Event::Nested {
                client: self.node(p, o, "client")?,
            }),
            "enqueued" => Some(Event::Enqueued {
                job: p.required(o, "job").and_then(|v| p.number(v, "job"))?,
            }),
            "claimed" | "dequeued" | "done" => {
                let job = p.required(o, "job").and_then(|v| p.number(v, "job"));
                let client = self.node(p, o, "client");
                let (job, client) = (job?, client?);
                Some(match kind {
                    "claimed" => Event::Claimed { job, client },
                    "done" => Event::Done { job, client },
                    _ => Event::Dequeued { job, client },
                })
            }
            "pick" => {
                let client = self.node(p, o, "client");
                let lock = p.required(o, "lock").and_then(|v| p.number(v, "lock"));
                let resource = p
                    .required(o, "resource")
                    .and_then(|v| p.number(v, "resource"));
                Some(Event::Pick {
                    client: client?,
                    lock: lock?,
                    resource: resource?,
                })
            }
            "due" => {
                let tick = p.required(o, "tick").and_then(|v| p.number(v, "tick"));
                let client = self.node(p, o, "client");
                Some(Event::Due {
                    tick: tick?,
                    client: client?,
                })
            }
            "issued" => {
                let client = self.node(p, o, "client");
                let ticket = p.required(o, "ticket").and_then(|v| p.number(v, "ticket"));
                Some(Event::Issued {
                    client: client?,
                    ticket: ticket?,
                })
            }
            "grant" => {
                let grant = self.grant_id(p, o, "grant");
                let token = p.optional_number(o, "token");
                let ticket = p.optional_number(o, "ticket");
                Some(Event::Grant {
                    grant: grant?,
                    token: token?,
                    ticket: ticket?,
                })
            }
            "exit" => {
                let grant = self.grant_id(p, o, "grant");
                let why = p.required(o, "why").and_then(|v| {
                    let found = v
                        .as_str()
                        .and_then(|s| EXIT_REASONS.iter().find(|(n, _)| *n == s));
                    if found.is_none() {
                        p.problem(format!(
                            "`why` must be one of {}, got {}",
                            list(&EXIT_REASONS.iter().map(|(n, _)| *n).collect::<Vec<_>>()),
                            shown(v)
                        ));
                    }
                    found.map(|(_, r)| *r)
                });
                Some(Event::Exit {
                    grant: grant?,
                    why: why?,
                })
            }
            "storage" => self.storage(p, o),
            "fault" => {
                let kind = p.required(o, "kind").and_then(|v| {
                    let found = v
                        .as_str()
                        .and_then(|s| FAULT_KINDS.iter().find(|(n, _)| *n == s));
                    if found.is_none() {
                        p.problem(format!(
                            "`kind` of a fault must be one of {}, got {}",
                            list(&FAULT_KINDS.iter().map(|(n, _)| *n).collect::<Vec<_>>()),
                            shown(v)
                        ));
                    }
                    found.map(|(_, k)| *k)
                });
                let nodes = match p.required(o, "nodes") {
                    Some(Value::Array(items)) => {
                        let mut nodes = Vec::new();
                        let mut ok = true;
                        for (i, item) in items.iter().enumerate() {
                            match self.name(p, item, &format!("nodes[{i}]")) {
                                Some(n) => nodes.push(n),
                                None => ok = false,
                            }
                        }
                        ok.then_some(nodes)
                    }
                    Some(v) => {
                        p.problem(format!(
                            "`nodes` must be a list of node names, got {}",
                            shown(v)
                        ));
                        None
                    }
                    None => None,
                };
                let detail = match o.get("detail") {
                    None => Some(String::new()),
                    Some(Value::String(s)) => Some(s.clone()),
                    Some(v) => {
                        p.problem(format!("`detail` must be text, got {}", shown(v)));
                        None
                    }
                };
                Some(Event::Fault(Fault {
                    kind: kind?,
                    nodes: nodes?,
                    detail: detail?,
                }))
            }
            _ => None,
        }
    }

    fn storage(&mut self, p: &mut Line, o: &Map<String, Value>) -> Option<Event> {
        let op = self.id(p, o, "op");
        let grant = self.grant_id(p, o, "grant");
        let token = p.optional_number(o, "token");
        let outcome = p.required(o, "outcome").and_then(|v| match v.as_str() {
            Some("accepted") => Some(OpOutcome::Accepted),
            Some("rejected") => Some(OpOutcome::Rejected),
            _ => {
                p.problem(format!(
                    "`outcome` must be \"accepted\" or \"rejected\", got {}",
                    shown(v)
                ));
                None
            }
        });
        let value = |p: &mut Line, key: &str| p.required(o, key).and_then(|v| p.number(v, key));
        let kind = match p.required(o, "kind").map(|v| (v.as_str(), v)) {
            None => None,
            Some((Some("read"), _)) => {
                if o.contains_key("base") {
                    p.problem("`base` is only for a write, not a read".to_string());
                }
                value(p, "value").map(|value| OpKind::Read { value })
            }
            Some((Some("write"), _)) => {
                let v = value(p, "value");
                let base = value(p, "base");
                v.zip(base)
                    .map(|(value, base)| OpKind::Write { value, base })
            }
            Some((Some("claim"), _)) => {
                for key in ["value", "base"] {
                    if o.contains_key(key) {
                        p.problem(format!("`{key}` is not for a claim, which has no value"));
                    }
                }
                Some(OpKind::Claim)
            }
            Some((_, v)) => {
                p.problem(format!(
                    "`kind` of a storage operation must be \"read\", \"write\" or \"claim\", got {}",
                    shown(v)
                ));
                None
            }
        };
        Some(Event::Storage(StorageOp {
            op: op.map(|(client, seq)| OpId { client, seq })?,
            grant: grant?,
            kind: kind?,
            token: token?,
            outcome: outcome?,
        }))
    }

    fn node(&mut self, p: &mut Line, o: &Map<String, Value>, key: &str) -> Option<NodeId> {
        let v = p.required(o, key)?;
        self.name(p, v, key)
    }

    fn name(&mut self, p: &mut Line, v: &Value, key: &str) -> Option<NodeId> {
        match v.as_str() {
            Some("") => {
                p.problem(format!("`{key}` is empty: a node name is needed"));
                None
            }
            Some(name) if name.chars().any(char::is_control) => {
                p.problem(format!(
                    "`{key}` has a control character: {}; a name is printable text",
                    shown(v)
                ));
                None
            }
            Some(name) => Some(self.add_name(name)),
            None => {
                p.problem(format!(
                    "`{key}` must be a node name (a string), got {}",
                    shown(v)
                ));
                None
            }
        }
    }

    fn grant_id(&mut self, p: &mut Line, o: &Map<String, Value>, key: &str) -> Option<GrantId> {
        self.id(p, o, key)
            .map(|(client, seq)| GrantId { client, seq })
    }

    /// `{"client": NAME, "seq": N}`, N from 1.
    fn id(&mut self, p: &mut Line, o: &Map<String, Value>, key: &str) -> Option<(NodeId, u32)> {
        let v = p.required(o, key)?;
        let Value::Object(id) = v else {
            p.problem(format!(
                "`{key}` must be {{\"client\": NAME, \"seq\": N}}, got {}",
                shown(v)
            ));
            return None;
        };
        for k in id.keys() {
            if k != "client" && k != "seq" {
                p.problem(format!(
                    "unknown key `{}` in `{key}`; its keys are `client` and `seq`",
                    cut(k)
                ));
            }
        }
        let client = match id.get("client") {
            None => {
                p.problem(format!("missing `{key}.client`"));
                None
            }
            Some(c) => self.name(p, c, &format!("{key}.client")),
        };
        let seq = match id.get("seq") {
            None => {
                p.problem(format!("missing `{key}.seq`"));
                None
            }
            Some(s) => match s.as_u64().and_then(|n| u32::try_from(n).ok()) {
                Some(n) if n >= 1 => Some(n),
                _ => {
                    p.problem(format!(
                        "`{key}.seq` must be a whole number from 1 to {}, got {}",
                        u32::MAX,
                        shown(s)
                    ));
                    None
                }
            },
        };
        Some((client?, seq?))
    }
}

/// The problems of one line.
struct Line {
    problems: Vec<LineError>,
    line: usize,
}

impl Line {
    fn new(line: usize) -> Line {
        Line {
            problems: Vec::new(),
            line,
        }
    }

    fn problem(&mut self, problem: String) {
        self.problems.push(LineError {
            line: self.line,
            problem,
        });
    }

    fn required<'a>(&mut self, o: &'a Map<String, Value>, key: &str) -> Option<&'a Value> {
        let v = o.get(key);
        if v.is_none() {
            self.problem(format!("missing `{key}`"));
        }
        v
    }

    fn number(&mut self, v: &Value, key: &str) -> Option<u64> {
        let n = v.as_u64();
        if n.is_none() {
            self.problem(format!(
                "`{key}` must be a whole number from 0 to {}, got {}",
                u64::MAX,
                shown(v)
            ));
        }
        n
    }

    /// An optional number: absent or `null` is `Some(None)`; a bad value is `None`.
    fn optional_number(&mut self, o: &Map<String, Value>, key: &str) -> Option<Option<u64>> {
        match o.get(key) {
            None | Some(Value::Null) => Some(None),
            Some(v) => self.number(v, key).map(Some),
        }
    }

    fn boolean(&mut self, v: &Value, key: &str) -> Option<bool> {
        let b = v.as_bool();
        if b.is_none() {
            self.problem(format!("`{key}` must be true or false, got {}", shown(v)));
        }
        b
    }
}

fn kinds() -> Vec<&'static str> {
    EVENT_KEYS.iter().map(|(n, _)| *n).collect()
}

/// `` `a`, `b` or `c` ``.
fn list(items: &[&str]) -> String {
    let quoted: Vec<String> = items.iter().map(|i| format!("`{i}`")).collect();
    match quoted.split_last() {
        None => String::new(),
        Some((last, [])) => last.clone(),
        Some((last, rest)) => format!("{} or {last}", rest.join(", ")),
    }
}

/// A value as an error shows it: what kind it is, and its text cut to 40 characters with
/// control characters escaped.
fn shown(v: &Value) -> String {
    match v {
        Value::Null => "null".to_string(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => {
            let text = n.to_string();
            if n.is_f64() {
                format!("the number {}", cut(&text))
            } else {
                cut(&text)
            }
        }
        Value::String(s) => format!("the text \"{}\"", cut(s)),
        Value::Array(_) => "a list".to_string(),
        Value::Object(_) => "an object".to_string(),
    }
}

/// `s` cut to 40 characters, with control characters (and other invisible ones) escaped.
fn cut(s: &str) -> String {
    cut_to(s, 40)
}

fn cut_to(s: &str, max: usize) -> String {
    let mut out: String = s
        .chars()
        .take(max)
        .flat_map(|c| {
            let visible = !c.is_control() && !matches!(c, '\u{200b}'..='\u{200f}' | '\u{2028}'..='\u{202e}' | '\u{2066}'..='\u{2069}' | '\u{feff}');
            let escaped: Vec<char> = if visible {
                vec![c]
            } else {
                c.escape_unicode().collect()
            };
            escaped
        })
        .collect();
    if s.chars().count() > max {
        out.push_str("...");
    }
    out
}

/// One line of JSON, and the keys given twice in one of its objects (`serde_json` keeps the
/// last silently; a history that says two things of one key is refused instead).
fn read_json(text: &str) -> Result<(Value, Vec<String>), serde_json::Error> {
    use serde::de::DeserializeSeed;
    let twice = std::cell::RefCell::new(Vec::new());
    let mut de = serde_json::Deserializer::from_str(text);
    let value = Strict(&twice).deserialize(&mut de)?;
    de.end()?;
    Ok((value, twice.into_inner()))
}

/// A [`Value`] read as serde_json reads it, noting the keys an object repeats.
struct Strict<'a>(&'a std::cell::RefCell<Vec<String>>);

impl<'de> serde::de::DeserializeSeed<'de> for Strict<'_> {
    type Value = Value;

    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> serde::de::Visitor<'de> for Strict<'_> {
    type Value = Value;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_bool<E>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }

    fn visit_i64<E>(self, v: i64) -> Result<Value, E> {
        Ok(Value::from(v))
    }

    fn visit_u64<E>(self, v: u64) -> Result<Value, E> {
        Ok(Value::from(v))
    }

    fn visit_f64<E>(self, v: f64) -> Result<Value, E> {
        Ok(Value::from(v))
    }

    fn visit_str<E>(self, v: &str) -> Result<Value, E> {
        Ok(Value::String(v.to_string()))
    }

    fn visit_string<E>(self, v: String) -> Result<Value, E> {
        Ok(Value::String(v))
    }

    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_none<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut items = Vec::new();
        while let Some(v) = seq.next_element_seed(Strict(self.0))? {
            items.push(v);
        }
        Ok(Value::Array(items))
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut object = Map::new();
        while let Some(key) = map.next_key::<String>()? {
            let value = map.next_value_seed(Strict(self.0))?;
            if object.insert(key.clone(), value).is_some() {
                self.0.borrow_mut().push(key);
            }
        }
        Ok(Value::Object(object))
    }
}

/// A JSON syntax error in words, with its column.
fn json_problem(e: &serde_json::Error) -> String {
    let text = e.to_string();
    let what = match text.find(" at line ") {
        Some(at) => &text[..at],
        None => text.as_str(),
    };
    format!(
        "not valid JSON at column {}: {}",
        e.column(),
        cut_to(what, 200)
    )
}
