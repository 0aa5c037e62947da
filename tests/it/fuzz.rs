//! The scenario loader's fuzz target: malformed scenario files, generated with proptest from
//! every shipped scenario, must each load or be refused with a clear error, never a panic;
//! a file that loads must run one seed to its end.
//!
//! The generator starts from a file of `scenarios/` and applies one to three changes to its
//! keys and values (a key deleted, renamed, moved to another section or copied into one, a
//! value replaced by another type, an extreme number, a long or hostile string, a table or a
//! list, a node, group, mark or role name that does not exist), then sometimes one change to
//! the text (truncated, random bytes inserted, a line deleted or repeated, so a key or a
//! section is given twice). Each result is written to a file and given to [`lockstep::load`]:
//!
//! - it returns, with no panic;
//! - an error names the file on every line, has one line per problem (the documented shape,
//!   `file[:line][: key.path]: message`), contains no control character and no Rust type
//!   name (`struct `, `enum `, `i128`, `u64`, `Option<`, ...), and a problem gives its key
//!   path or, for a syntax error, its line;
//! - a scenario that loads runs its own seed with its event bound lowered to
//!   [`MAX_EVENTS`] (the file's semantics unchanged, only the bound of this run) and
//!   finishes, whatever the verdict.
//!
//! `cargo test` runs [`DEFAULT_CASES`] cases from a fixed seed (a few seconds in the debug
//! test profile). To run it long:
//!
//! ```text
//! LOCKSTEP_FUZZ_CASES=100000 cargo test --release --test it fuzz -- --nocapture
//! ```
//!
//! `LOCKSTEP_FUZZ_SEED=N` draws another sequence of files. The test prints how many cases
//! loaded and how many were refused, and fails listing the first offending files (their text,
//! escaped) with what was wrong.
//!
//! `judge`'s history parser has a target of its own here, after the scenario loader's:
//! `malformed_histories_are_read_or_refused_by_line_and_never_panic` (the same variables);
//! so do review files (`malformed_review_files_load_or_are_refused_by_key_and_never_panic`).

use std::cell::RefCell;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::{Path, PathBuf};

use proptest::prelude::*;
use proptest::sample::Index;
use proptest::test_runner::{Config, RngAlgorithm, TestRng, TestRunner};
use toml::{Table, Value};

use crate::support::{root, scenario_files};

/// Cases `cargo test` runs.
const DEFAULT_CASES: u32 = 1_000;

/// The event bound of the run of a file that loads.
const MAX_EVENTS: u64 = 20_000;

/// Words of Rust's types that an error must never show.
const TYPE_NAMES: &[&str] = &[
    "struct ", "enum ", "variant", "i128", "u128", "i64", "u64", "i32", "u32", "f64", "usize",
    "Option<", "Vec<", "String", "$__", "newtype", "tuple",
];

/// One change to a file's keys and values, at a place chosen among the file's current ones.
#[derive(Clone, Debug)]
enum Edit {
    /// Delete the key (or the list element).
    Delete(Index),
    /// Give the key another name.
    Rename(Index, String),
    /// Replace the value.
    Replace(Index, Gen),
    /// Replace a value by another of its type: a whole number by the first, a number by the
    /// second, a string by the third (so that more files load and run).
    Tweak(Index, Gen, Gen, String),
    /// Move the key into another table (a wrong section).
    Move(Index, Index),
    /// Copy the key into another table, keeping it where it is.
    Copy(Index, Index),
    /// Add a key to a table.
    Insert(Index, String, Gen),
    /// Put the value inside a table or a list where it stood alone.
    Nest(Index, bool),
    /// Add to a table one of the keys its section documents (`faults_per_minute` to
    /// `[chaos]`), with a value: a number, or the value given.
    Documented(Index, Index, bool, Gen, Gen),
}

/// A value to write.
#[derive(Clone, Debug)]
enum Gen {
    Int(i64),
    Float(f64),
    Bool(bool),
    Str(String),
    Datetime,
    Array(Vec<Gen>),
    Table(Vec<(String, Gen)>),
    /// Text written as it is, for numbers TOML cannot hold.
    Raw(&'static str),
}

/// One change to the text once written.
#[derive(Clone, Debug)]
enum TextEdit {
    Truncate(Index),
    InsertBytes(Index, Vec<u8>),
    DeleteLine(Index),
    RepeatLine(Index),
}

/// A generated case: which file, and its changes.
#[derive(Clone, Debug)]
struct Case {
    file: Index,
    edits: Vec<Edit>,
    text: Option<TextEdit>,
}

/// A place in a file: keys and list positions from the top.
#[derive(Clone, Debug, PartialEq)]
enum Seg {
    Key(String),
    At(usize),
}

/// Numbers TOML cannot hold as they are, written raw.
const RAW: &[&str] = &[
    "99999999999999999999",
    "-99999999999999999999",
    "1e999",
    "-1e999",
    "-0",
    "0x7fffffffffffffff",
    "0o777",
    "0b1",
    "1979-05-27T07:32:00Z",
    "07:32:00",
    "1979-05-27",
    "[]",
    "{}",
    "[[]]",
    "123456789012345678901234567890123456789012345678901234567890123456789012345678901234567890123456789012345678901234567890123456789012345678901234567890123456789012345678901234567890123456789012345678901234567890123456789012345678901234567890123456789012345678901234567890123456789012345678901234567890",
];

fn int() -> impl Strategy<Value = i64> + Clone {
    prop_oneof![
        3 => prop::sample::select(vec![
            0i64,
            -1,
            1,
            2,
            3,
            999,
            1000,
            1001,
            1_000_000,
            10_000_000,
            10_000_001,
            i64::from(u32::MAX),
            i64::from(u32::MAX) + 1,
            i64::MAX,
            i64::MIN,
            i64::MAX / 1_000_000,
        ]),
        1 => any::<i64>(),
        2 => -5i64..100_000,
    ]
}

fn float() -> impl Strategy<Value = f64> + Clone {
    prop_oneof![
        3 => prop::sample::select(vec![
            0.0f64,
            -0.0,
            -1.0,
            0.5,
            1.5,
            1e-9,
            1e-300,
            5e-324,
            f64::MIN_POSITIVE,
            1e12,
            1e18,
            1e19,
            1e308,
            -1e308,
            f64::MAX,
            f64::NAN,
            f64::INFINITY,
            f64::NEG_INFINITY,
        ]),
        1 => any::<f64>(),
        2 => -10.0f64..100_000.0,
    ]
}

fn gen_leaf(strings: Vec<String>) -> impl Strategy<Value = Gen> + Clone {
    prop_oneof![
        3 => int().prop_map(Gen::Int),
        3 => float().prop_map(Gen::Float),
        1 => any::<bool>().prop_map(Gen::Bool),
        5 => string(strings).prop_map(Gen::Str),
        1 => Just(Gen::Datetime),
        2 => prop::sample::select(RAW).prop_map(Gen::Raw),
    ]
}

fn gen_value(strings: Vec<String>, keys: Vec<String>) -> impl Strategy<Value = Gen> + Clone {
    let leaf = gen_leaf(strings);
    prop_oneof![
        6 => leaf.clone(),
        1 => prop::collection::vec(leaf.clone(), 0..4).prop_map(Gen::Array),
        1 => prop::collection::vec((prop::sample::select(keys), leaf), 0..4).prop_map(Gen::Table),
    ]
}

/// A string: one of the file's own (a node, group, mark, role, kind...), a near miss of one,
/// or something hostile.
fn string(strings: Vec<String>) -> impl Strategy<Value = String> + Clone {
    let own = prop::sample::select(strings);
    let near = (own.clone(), 0..6u8, any::<char>()).prop_map(|(s, how, c)| {
        let mut chars: Vec<char> = s.chars().collect();
        match how {
            0 => chars.push('s'),
            1 => {
                chars.pop();
            }
            2 => chars.insert(0, c),
            3 => {
                if chars.len() > 2 {
                    chars.swap(1, 2);
                }
            }
            4 => chars.push(c),
            _ => return s.to_uppercase(),
        }
        chars.into_iter().collect()
    });
    let hostile = prop::sample::select(vec![
        String::new(),
        " ".to_string(),
        "client-0".to_string(),
        "client-1001".to_string(),
        "redis-9".to_string(),
        "server-0".to_string(),
        "storage-2".to_string(),
        "validity-chekced".to_string(),
        "leader".to_string(),
        "coordinator".to_string(),
        "sentinels".to_string(),
        "all".to_string(),
        "servers".to_string(),
        "clients".to_string(),
        "a\nb".to_string(),
        "line\r\nbreak".to_string(),
        "tab\there".to_string(),
        "\u{1b}[31mred\u{1b}[0m".to_string(),
        "\u{1b}]0;title\u{7}".to_string(),
        "\u{0}nul".to_string(),
        "\u{7f}\u{9b}".to_string(),
        "クライアント".to_string(),
        "e\u{301}\u{202e}rtl".to_string(),
        "🔒🔓".to_string(),
        "a".repeat(1_000),
        "x".repeat(100_000),
        "{}".to_string(),
        "%s%n".to_string(),
        "`".to_string(),
    ]);
    prop_oneof![4 => own, 3 => near, 3 => hostile, 1 => any::<String>()]
}

fn edit(strings: Vec<String>, keys: Vec<String>) -> impl Strategy<Value = Edit> {
    let value = gen_value(strings.clone(), keys.clone());
    let number = prop_oneof![
        int().prop_map(Gen::Int),
        float().prop_map(Gen::Float),
        prop::sample::select(RAW).prop_map(Gen::Raw),
    ];
    let key = prop_oneof![
        4 => prop::sample::select(keys.clone()),
        1 => prop::sample::select(keys).prop_map(|k| format!("{k}s")),
        1 => any::<String>(),
    ];
    prop_oneof![
        2 => any::<Index>().prop_map(Edit::Delete),
        1 => (any::<Index>(), key.clone()).prop_map(|(i, k)| Edit::Rename(i, k)),
        4 => (any::<Index>(), value.clone()).prop_map(|(i, v)| Edit::Replace(i, v)),
        8 => (any::<Index>(), int().prop_map(Gen::Int), number, string(strings))
            .prop_map(|(i, n, f, s)| Edit::Tweak(i, n, f, s)),
        1 => (any::<Index>(), any::<Index>()).prop_map(|(i, t)| Edit::Move(i, t)),
        1 => (any::<Index>(), any::<Index>()).prop_map(|(i, t)| Edit::Copy(i, t)),
        2 => (any::<Index>(), key, value.clone()).prop_map(|(t, k, v)| Edit::Insert(t, k, v)),
        1 => (any::<Index>(), any::<bool>()).prop_map(|(i, t)| Edit::Nest(i, t)),
        6 => (
            any::<Index>(),
            any::<Index>(),
            prop::bool::weighted(0.7),
            float().prop_map(Gen::Float),
            value
        )
            .prop_map(|(t, k, is_number, n, v)| Edit::Documented(t, k, is_number, n, v)),
    ]
}

fn text_edit() -> impl Strategy<Value = TextEdit> {
    prop_oneof![
        any::<Index>().prop_map(TextEdit::Truncate),
        (any::<Index>(), prop::collection::vec(any::<u8>(), 1..8))
            .prop_map(|(i, b)| TextEdit::InsertBytes(i, b)),
        any::<Index>().prop_map(TextEdit::DeleteLine),
        any::<Index>().prop_map(TextEdit::RepeatLine),
    ]
}

fn case(strings: Vec<String>, keys: Vec<String>) -> impl Strategy<Value = Case> {
    (
        any::<Index>(),
        prop::collection::vec(edit(strings, keys), 1..3),
        prop::option::weighted(0.15, text_edit()),
    )
        .prop_map(|(file, edits, text)| Case { file, edits, text })
}

/// Every place in `t` (keys of tables at any depth, list elements), parents first.
fn places(t: &Table) -> Vec<Vec<Seg>> {
    fn walk(v: &Value, at: &mut Vec<Seg>, out: &mut Vec<Vec<Seg>>) {
        match v {
            Value::Table(t) => {
                for (k, v) in t {
                    at.push(Seg::Key(k.clone()));
                    out.push(at.clone());
                    walk(v, at, out);
                    at.pop();
                }
            }
            Value::Array(a) => {
                for (i, v) in a.iter().enumerate() {
                    at.push(Seg::At(i));
                    out.push(at.clone());
                    walk(v, at, out);
                    at.pop();
                }
            }
            _ => {}
        }
    }
    let mut out = Vec::new();
    walk(&Value::Table(t.clone()), &mut Vec::new(), &mut out);
    out
}

/// Every table in `t`, the top one first.
fn tables(t: &Table) -> Vec<Vec<Seg>> {
    let mut out = vec![Vec::new()];
    out.extend(
        places(t)
            .into_iter()
            .filter(|p| matches!(get(t, p), Some(Value::Table(_)))),
    );
    out
}

fn get<'a>(t: &'a Table, path: &[Seg]) -> Option<&'a Value> {
    let (first, rest) = path.split_first()?;
    let Seg::Key(k) = first else { return None };
    let mut v = t.get(k)?;
    for s in rest {
        v = match (s, v) {
            (Seg::Key(k), Value::Table(t)) => t.get(k)?,
            (Seg::At(i), Value::Array(a)) => a.get(*i)?,
            _ => return None,
        };
    }
    Some(v)
}

fn get_mut<'a>(t: &'a mut Table, path: &[Seg]) -> Option<&'a mut Value> {
    let (first, rest) = path.split_first()?;
    let Seg::Key(k) = first else { return None };
    let mut v = t.get_mut(k)?;
    for s in rest {
        v = match (s, v) {
            (Seg::Key(k), Value::Table(t)) => t.get_mut(k)?,
            (Seg::At(i), Value::Array(a)) => a.get_mut(*i)?,
            _ => return None,
        };
    }
    Some(v)
}

fn table_mut<'a>(t: &'a mut Table, path: &[Seg]) -> Option<&'a mut Table> {
    if path.is_empty() {
        return Some(t);
    }
    match get_mut(t, path)? {
        Value::Table(t) => Some(t),
        _ => None,
    }
}

/// Removes the value at `path`, returning it with its key (none for a list element).
fn remove(t: &mut Table, path: &[Seg]) -> Option<(Option<String>, Value)> {
    let (last, parent) = path.split_last()?;
    match last {
        Seg::Key(k) => {
            let parent = table_mut(t, parent)?;
            parent.remove(k).map(|v| (Some(k.clone()), v))
        }
        Seg::At(i) => match get_mut(t, parent)? {
            Value::Array(a) if *i < a.len() => Some((None, a.remove(*i))),
            _ => None,
        },
    }
}

/// `g` as a TOML value; raw text is a placeholder string replaced once written.
fn value(g: &Gen, raws: &mut Vec<&'static str>) -> Value {
    match g {
        Gen::Int(i) => Value::Integer(*i),
        Gen::Float(f) => Value::Float(*f),
        Gen::Bool(b) => Value::Boolean(*b),
        Gen::Str(s) => Value::String(s.clone()),
        Gen::Datetime => Value::Datetime("1979-05-27T07:32:00Z".parse().expect("a datetime")),
        Gen::Array(a) => Value::Array(a.iter().map(|g| value(g, raws)).collect()),
        Gen::Table(t) => Value::Table(t.iter().map(|(k, g)| (k.clone(), value(g, raws))).collect()),
        Gen::Raw(r) => {
            raws.push(r);
            Value::String(format!("@@RAW{}@@", raws.len() - 1))
        }
    }
}

/// A table's section as the docs name it: its keys without list positions (`fault.pause`).
fn section(path: &[Seg]) -> String {
    let keys: Vec<&str> = path
        .iter()
        .filter_map(|s| match s {
            Seg::Key(k) => Some(k.as_str()),
            Seg::At(_) => None,
        })
        .collect();
    keys.join(".")
}

fn apply(t: &mut Table, e: &Edit, raws: &mut Vec<&'static str>, documented: &Documented) {
    let all = places(t);
    let pick = |i: &Index| (!all.is_empty()).then(|| all[i.index(all.len())].clone());
    let tabs = tables(t);
    let table = |i: &Index| tabs[i.index(tabs.len())].clone();
    match e {
        Edit::Delete(i) => {
            if let Some(p) = pick(i) {
                remove(t, &p);
            }
        }
        Edit::Rename(i, name) => {
            if let Some(p) = pick(i) {
                if let (Some(Seg::Key(_)), parent) = (p.last(), &p[..p.len() - 1]) {
                    let parent = parent.to_vec();
                    if let Some((_, v)) = remove(t, &p) {
                        if let Some(parent) = table_mut(t, &parent) {
                            parent.insert(name.clone(), v);
                        }
                    }
                }
            }
        }
        Edit::Replace(i, g) => {
            if let Some(p) = pick(i) {
                let new = value(g, raws);
                if let Some(v) = get_mut(t, &p) {
                    *v = new;
                }
            }
        }
        Edit::Tweak(i, int, number, string) => {
            if let Some(p) = pick(i) {
                let g = match get(t, &p) {
                    Some(Value::Integer(_)) => int,
                    Some(Value::Float(_)) => number,
                    Some(Value::String(_)) => &Gen::Str(string.clone()),
                    _ => return,
                };
                let new = value(g, raws);
                if let Some(v) = get_mut(t, &p) {
                    *v = new;
                }
            }
        }
        Edit::Move(i, to) | Edit::Copy(i, to) => {
            if let Some(p) = pick(i) {
                let target = table(to);
                if target.starts_with(&p) {
                    return;
                }
                let moved = if matches!(e, Edit::Move(..)) {
                    remove(t, &p)
                } else {
                    let key = match p.last() {
                        Some(Seg::Key(k)) => Some(k.clone()),
                        _ => None,
                    };
                    get(t, &p).map(|v| (key, v.clone()))
                };
                if let Some((key, v)) = moved {
                    let key = key.unwrap_or_else(|| "moved".to_string());
                    if let Some(target) = table_mut(t, &target) {
                        target.insert(key, v);
                    }
                }
            }
        }
        Edit::Documented(to, k, is_number, number, other) => {
            let target = table(to);
            let Some((_, keys)) = documented.iter().find(|(s, _)| *s == section(&target)) else {
                return;
            };
            let key = keys[k.index(keys.len())].clone();
            // Mostly a number: most documented keys take one.
            let g = if *is_number { number } else { other };
            let v = value(g, raws);
            if let Some(target) = table_mut(t, &target) {
                target.insert(key, v);
            }
        }
        Edit::Insert(to, key, g) => {
            let target = table(to);
            let v = value(g, raws);
            if let Some(target) = table_mut(t, &target) {
                target.insert(key.clone(), v);
            }
        }
        Edit::Nest(i, as_table) => {
            if let Some(p) = pick(i) {
                if let Some(v) = get_mut(t, &p) {
                    let inner = v.clone();
                    *v = if *as_table {
                        let mut t = Table::new();
                        t.insert("value".to_string(), inner);
                        Value::Table(t)
                    } else {
                        Value::Array(vec![inner])
                    };
                }
            }
        }
    }
}

fn apply_text(text: Vec<u8>, e: &TextEdit) -> Vec<u8> {
    let mut b = text;
    let lines = |b: &[u8]| -> Vec<(usize, usize)> {
        let mut out = Vec::new();
        let mut start = 0;
        for (i, &c) in b.iter().enumerate() {
            if c == b'\n' {
                out.push((start, i + 1));
                start = i + 1;
            }
        }
        if start < b.len() {
            out.push((start, b.len()));
        }
        out
    };
    match e {
        TextEdit::Truncate(i) => {
            let at = i.index(b.len() + 1);
            b.truncate(at);
        }
        TextEdit::InsertBytes(i, bytes) => {
            let at = i.index(b.len() + 1);
            b.splice(at..at, bytes.iter().copied());
        }
        TextEdit::DeleteLine(i) | TextEdit::RepeatLine(i) => {
            let ls = lines(&b);
            if ls.is_empty() {
                return b;
            }
            let (s, e2) = ls[i.index(ls.len())];
            if matches!(e, TextEdit::DeleteLine(_)) {
                b.drain(s..e2);
            } else {
                let mut line = b[s..e2].to_vec();
                if !line.ends_with(b"\n") {
                    line.insert(0, b'\n');
                }
                b.splice(e2..e2, line);
            }
        }
    }
    b
}

/// The bytes of the file `case` makes from `base`.
fn render(base: &Table, case: &Case, documented: &Documented) -> Vec<u8> {
    let mut t = base.clone();
    let mut raws = Vec::new();
    for e in &case.edits {
        apply(&mut t, e, &mut raws, documented);
    }
    let mut text = toml::to_string(&t).unwrap_or_else(|e| format!("# not written: {e}\n"));
    for (i, r) in raws.iter().enumerate() {
        text = text.replace(&format!("\"@@RAW{i}@@\""), r);
    }
    let bytes = text.into_bytes();
    match &case.text {
        Some(e) => apply_text(bytes, e),
        None => bytes,
    }
}

/// What one case came to.
#[derive(Debug)]
enum Outcome {
    /// Loaded and ran to its end (or its event bound).
    Ran,
    /// Refused with an error of the right shape.
    Refused,
    /// Something wrong: what.
    Bad(String),
}

/// The most faults a chaos schedule may hold for its run to be tried: drawn up front, a
/// larger one could exhaust memory (issue 14, item 2). The schedule stops at the event bound,
/// which the run lowers, so a larger one is a failure.
const MAX_CHAOS_FAULTS: u64 = 100_000;

thread_local! {
    /// Set while this thread runs a case: its panics are caught and reported, not printed.
    static QUIET: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Installs, once, a panic hook that stays silent for cases and prints everything else as
/// before.
fn quiet_panics_of_cases() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let before = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if !QUIET.with(std::cell::Cell::get) {
                before(info);
            }
        }));
    });
}

/// Runs `f`, turning a panic into its message.
fn caught<T>(f: impl FnOnce() -> T) -> Result<T, String> {
    QUIET.with(|q| q.set(true));
    let r = catch_unwind(AssertUnwindSafe(f));
    QUIET.with(|q| q.set(false));
    r.map_err(|p| {
        p.downcast_ref::<String>()
            .cloned()
            .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
            .unwrap_or_else(|| "a panic without a message".to_string())
    })
}

/// What is wrong with `e`'s text as an error of `file`, if anything.
fn error_problem(e: &lockstep::ScenarioError, file: &Path, input: &str) -> Option<String> {
    let text = e.to_string();
    let name = file.display().to_string();
    let lines: Vec<&str> = text.split('\n').collect();
    if lines.len() != e.problems.len() {
        return Some(format!(
            "{} lines for {} problems",
            lines.len(),
            e.problems.len()
        ));
    }
    for (line, p) in lines.iter().zip(&e.problems) {
        if !line.starts_with(&name) {
            return Some(format!("a line does not name the file: {line}"));
        }
        if let Some(c) = line.chars().find(|c| c.is_control()) {
            return Some(format!(
                "control character {c:?} in: {}",
                line.escape_debug()
            ));
        }
        // Only the file's own text may show such a word (a key or a name it contains).
        let internal = |w: &&&str| line.contains(**w) && !input.contains(**w);
        if let Some(w) = TYPE_NAMES.iter().find(internal) {
            return Some(format!("Rust type name `{w}` in: {line}"));
        }
        let rust_path = line.match_indices("::").any(|(at, _)| {
            let before = line[..at].chars().next_back();
            let after = line[at + 2..].chars().next();
            before.is_some_and(|c| c.is_ascii_alphanumeric())
                && after.is_some_and(|c| c.is_ascii_uppercase())
        });
        if rust_path && !input.contains("::") {
            return Some(format!("a Rust path in: {line}"));
        }
        // A whole file that cannot be read, or a missing section (named in the message).
        let whole_file = p.message.starts_with("cannot read the file")
            || p.message.starts_with("missing field `");
        if p.path.is_empty() && p.line.is_none() && !whole_file {
            return Some(format!("neither key path nor line: {line}"));
        }
    }
    None
}

/// Loads `bytes` as the file `path` and runs what loads.
fn check(path: &Path, bytes: &[u8]) -> Outcome {
    std::fs::write(path, bytes).expect("write the case's file");
    let loaded = match caught(|| lockstep::load(path)) {
        Err(panic) => return Outcome::Bad(format!("load panicked: {panic}")),
        Ok(Err(e)) => {
            let input = String::from_utf8_lossy(bytes);
            return match error_problem(&e, path, &input) {
                Some(problem) => Outcome::Bad(problem),
                None => Outcome::Refused,
            };
        }
        Ok(Ok(loaded)) => loaded,
    };
    let mut scenario = loaded.scenario;
    scenario.max_events = scenario.max_events.min(MAX_EVENTS);
    let seed = scenario.seed;
    if let Some(c) = &mut scenario.chaos {
        // The schedule is bounded by the event bound: lowered with it.
        c.max_faults = c.max_faults.min(MAX_EVENTS);
        let span = c.quiet_from.saturating_since(c.start).as_nanos();
        let faults = (span / c.mean_gap.as_nanos().max(1)).min(c.max_faults);
        if faults > MAX_CHAOS_FAULTS {
            return Outcome::Bad(format!(
                "loads with a chaos schedule of about {faults} faults, drawn before the run"
            ));
        }
    }
    match caught(|| lockstep::run(&scenario, seed, false)) {
        Err(panic) => Outcome::Bad(format!("the run of seed {seed} panicked: {panic}")),
        Ok(r) if r.events > MAX_EVENTS => {
            Outcome::Bad(format!("the run handled {} events", r.events))
        }
        Ok(_) => Outcome::Ran,
    }
}

/// The keys each section takes, as the docs list them: `("chaos", ["profile", ...])`, the
/// top level as `""`, a fault's own table as `fault.pause`, every family's `[model]` keys
/// together.
type Documented = Vec<(String, Vec<String>)>;

fn documented() -> Documented {
    let mut out: Documented = Vec::new();
    let mut add = |section: &str, key: &str| {
        let key = key.trim().to_string();
        if key.is_empty() || !key.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
            return;
        }
        match out.iter_mut().find(|(s, _)| s == section) {
            Some((_, keys)) => {
                if !keys.contains(&key) {
                    keys.push(key);
                }
            }
            None => out.push((section.to_string(), vec![key])),
        }
    };
    let mut pages = vec![root().join("docs/scenarios.md")];
    let families = std::fs::read_dir(root().join("docs/families")).expect("docs/families");
    pages.extend(families.map(|e| e.expect("a docs page").path()));
    pages.sort();
    for page in pages {
        let text = std::fs::read_to_string(&page).expect("a docs page");
        let mut section = String::new();
        for line in text.lines() {
            if let Some(h) = line.strip_prefix("## `[") {
                section = h
                    .trim_start_matches('[')
                    .split(']')
                    .next()
                    .unwrap_or("")
                    .into();
                add("", section.split('.').next().unwrap_or(""));
            } else if line.starts_with("## ") {
                section.clear();
            } else if let Some(cell) = line.strip_prefix("| `") {
                if section.is_empty() {
                    continue;
                }
                let cell = cell.split(" |").next().unwrap_or("");
                for (i, word) in cell.split('`').enumerate() {
                    if i % 2 == 1 {
                        continue;
                    }
                    // `pause = { node, for_ms }`: a key and the keys of its table.
                    let (key, inner) = word.split_once(" = {").unwrap_or((word, ""));
                    add(&section, key);
                    for k in inner.trim_end_matches('}').split(',') {
                        add(&format!("{section}.{}", key.trim()), k);
                    }
                }
            }
        }
    }
    out
}

/// Every string value and every key of the shipped files, sorted and without duplicates.
fn pools(files: &[Table]) -> (Vec<String>, Vec<String>) {
    fn walk(v: &Value, strings: &mut Vec<String>, keys: &mut Vec<String>) {
        match v {
            Value::String(s) => strings.push(s.clone()),
            Value::Table(t) => {
                for (k, v) in t {
                    keys.push(k.clone());
                    walk(v, strings, keys);
                }
            }
            Value::Array(a) => a.iter().for_each(|v| walk(v, strings, keys)),
            _ => {}
        }
    }
    let (mut strings, mut keys) = (Vec::new(), Vec::new());
    for t in files {
        walk(&Value::Table(t.clone()), &mut strings, &mut keys);
    }
    // The documented keys and values, which the shipped files do not all use
    // (`faults_per_minute`, `max_occurrence`, the marks...): every `word` of the docs.
    let mut docs = vec![root().join("docs/scenarios.md")];
    let families = std::fs::read_dir(root().join("docs/families")).expect("docs/families");
    docs.extend(families.map(|e| e.expect("a docs page").path()));
    docs.sort();
    for doc in docs {
        let text = std::fs::read_to_string(&doc).expect("a docs page");
        for (i, word) in text.split('`').enumerate() {
            let plain = |c: char| c.is_ascii_alphanumeric() || c == '_' || c == '-';
            if i % 2 == 1 && !word.is_empty() && word.len() < 40 && word.chars().all(plain) {
                strings.push(word.to_string());
                if !word.contains('-') {
                    keys.push(word.to_string());
                }
            }
        }
    }
    for v in [&mut strings, &mut keys] {
        v.sort();
        v.dedup();
    }
    (strings, keys)
}

/// A proptest runner of `cases` cases drawn from `seed` (ChaCha): the same cases for the same
/// seed, with nothing persisted.
fn runner(cases: u32, seed: u64) -> TestRunner {
    let mut seed_bytes = [0u8; 32];
    seed_bytes[..8].copy_from_slice(&seed.to_le_bytes());
    let config = Config {
        cases,
        failure_persistence: None,
        ..Config::default()
    };
    TestRunner::new_with_rng(
        config,
        TestRng::from_seed(RngAlgorithm::ChaCha, &seed_bytes),
    )
}

/// A case that went wrong: what, its edits and the first `chars` of its text.
fn bad_case(what: &str, edits: &impl std::fmt::Debug, bytes: &[u8], chars: usize) -> String {
    format!(
        "{what}\n  {edits:?}\n  text: {}",
        String::from_utf8_lossy(bytes)
            .chars()
            .take(chars)
            .collect::<String>()
            .escape_debug()
    )
}

/// Prints a target's tally (`cases` names the cases, `read` what became of those read) and
/// fails unless both kinds came up and no case went wrong.
fn verdict_of_cases(cases: &str, read_as: &str, (read, refused, bad): (u64, u64, &[String])) {
    eprintln!(
        "fuzz: {cases}: {read} {read_as}, {refused} refused, {} bad",
        bad.len()
    );
    assert!(
        read > 0 && refused > 0,
        "both kinds: {read} read, {refused} refused"
    );
    assert!(
        bad.is_empty(),
        "{} of the {cases} went wrong; the first:\n{}",
        bad.len(),
        bad.iter().take(3).cloned().collect::<Vec<_>>().join("\n\n")
    );
}

fn env_u64(name: &str) -> Option<u64> {
    let v = std::env::var(name).ok()?;
    Some(
        v.trim()
            .replace('_', "")
            .parse()
            .unwrap_or_else(|_| panic!("{name}={v} is not a whole number")),
    )
}

#[test]
fn malformed_scenario_files_load_or_are_refused_clearly_and_never_panic() {
    quiet_panics_of_cases();
    let cases = env_u64("LOCKSTEP_FUZZ_CASES").map_or(DEFAULT_CASES, |n| n as u32);
    let seed = env_u64("LOCKSTEP_FUZZ_SEED").unwrap_or(14);
    let paths: Vec<PathBuf> = scenario_files("scenarios");
    let bases: Vec<Table> = paths
        .iter()
        .map(|p| {
            let text = std::fs::read_to_string(p).expect("a shipped scenario");
            toml::from_str(&text).expect("a shipped scenario is TOML")
        })
        .collect();
    let (strings, keys) = pools(&bases);
    let documented = documented();
    let takes = |section: &str, key: &str| {
        documented
            .iter()
            .any(|(s, keys)| s == section && keys.iter().any(|k| k == key))
    };
    assert!(
        takes("chaos", "faults_per_minute") && takes("fault.pause", "for_ms"),
        "the docs' keys are read: {documented:?}"
    );
    let dir = crate::support::TempDir::new("fuzz");
    let path = dir.join("fuzzed.toml");

    let mut runner = runner(cases, seed);
    let tally = RefCell::new(Tally::default());
    runner
        .run(&case(strings, keys), |case| {
            let i = case.file.index(bases.len());
            let bytes = render(&bases[i], &case, &documented);
            let mut t = tally.borrow_mut();
            let shown = || {
                let text = String::from_utf8_lossy(&bytes);
                let text: String = text.chars().take(3_000).collect();
                let from = paths[i].strip_prefix(root()).unwrap_or(&paths[i]);
                format!(
                    "\n  from {}, {case:?}\n  file: {}",
                    from.display(),
                    text.escape_debug()
                )
            };
            match check(&path, &bytes) {
                Outcome::Ran => t.ran += 1,
                Outcome::Refused => t.refused += 1,
                Outcome::Bad(what) => t.bad.push((what, shown())),
            }
            Ok(())
        })
        .expect("the cases never fail in the runner");
    let t = tally.into_inner();
    let file = path.display().to_string();
    eprintln!(
        "fuzz: {cases} cases from seed {seed}: {} loaded and ran, {} refused, {} bad",
        t.ran,
        t.refused,
        t.bad.len(),
    );
    assert!(
        t.bad.is_empty(),
        "{} of {cases} cases went wrong: {}",
        t.bad.len(),
        summary(&t.bad, &file)
    );
}

/// What the cases came to.
#[derive(Debug, Default)]
struct Tally {
    ran: u64,
    refused: u64,
    /// What went wrong, and the case.
    bad: Vec<(String, String)>,
}

/// The distinct ways `found` went wrong (the file named `FILE`, numbers as `N`) with how
/// often, and the first three cases in full.
fn summary(found: &[(String, String)], file: &str) -> String {
    let mut ways: Vec<String> = found
        .iter()
        .map(|(what, _)| {
            let what = what.replace(file, "FILE");
            let what: String = what
                .chars()
                .map(|c| if c.is_ascii_digit() { 'N' } else { c })
                .collect();
            what.chars().take(160).collect()
        })
        .collect();
    ways.sort();
    let mut counted: Vec<String> = Vec::new();
    for way in ways.chunk_by(|a, b| a == b) {
        counted.push(format!("{} × {}", way.len(), way[0]));
    }
    let ways = counted;
    let first: Vec<String> = found
        .iter()
        .take(3)
        .map(|(w, c)| format!("{w}{c}"))
        .collect();
    format!(
        "{} ways:\n{}\n\nThe first:\n{}",
        ways.len(),
        ways.join("\n"),
        first.join("\n\n")
    )
}

// What the fuzz found, each kept as a test of its own.

// The base file of the regressions below.
use crate::support::GOOD as BASE;

/// The error of `text` as printed, asserting it is one.
fn error_of(text: &str) -> String {
    let path = Path::new("fuzzed.toml");
    match lockstep::parse(text, path) {
        Ok(_) => panic!("loads: {text}"),
        Err(e) => e.to_string(),
    }
}

/// A date where a table is expected was named with the TOML reader's internal key
/// (`workload.work_ms.$__toml_private_datetime`).
#[test]
fn a_date_where_a_table_is_expected_is_named_by_its_key_alone() {
    let e = error_of(&format!(
        "{BASE}\n[workload]\nwork_ms = 1979-05-27T07:32:00Z\n"
    ));
    assert_eq!(
        e,
        "fuzzed.toml:11: workload.work_ms: a date or time is not a value this key takes"
    );
    let e = error_of("scenario = 07:32:00\n[model]\nkind = \"redis\"\nttl_ms = 1_000\n");
    assert_eq!(
        e,
        "fuzzed.toml:1: scenario: a date or time is not a value this key takes"
    );
}

/// A date given as `[storage]` was taken for a table with one key, the TOML reader's own
/// (`storage.$__toml_private_datetime`).
#[test]
fn a_date_as_the_storage_section_is_refused_as_one() {
    let e = error_of(&format!("storage = 1979-05-27T07:32:00Z\n{BASE}"));
    assert_eq!(
        e,
        "fuzzed.toml:1: storage: a date or time is not a value this key takes"
    );
}

/// A whole number past the largest TOML integer was refused in the reader's words (`u64
/// value was too large`).
#[test]
fn a_number_past_the_largest_integer_is_too_large_in_plain_words() {
    let e = error_of(&BASE.replace("ttl_ms = 1_000", "ttl_ms = 9223372036854775808"));
    assert_eq!(e, "fuzzed.toml:8: model.ttl_ms: the number is too large");
}

/// A positive duration shorter than the simulator's nanosecond loaded as zero: a ZooKeeper or
/// etcd `tick_ms = 1e-9` then panicked in the run (`Rng::below(0)`, drawing a first tick).
#[test]
fn a_duration_below_a_nanosecond_is_refused_not_rounded_to_zero() {
    for kind in ["zookeeper", "etcd"] {
        let text = BASE.replace("\"redis\"", &format!("\"{kind}\"\ntick_ms = 1e-9"));
        let e = error_of(&text);
        assert_eq!(
            e,
            "fuzzed.toml: model.tick_ms: must be at least a nanosecond (0.000001), not 0.000000001"
        );
    }
}

/// The most negative drift overflowed its own range check (`ppm.abs()` of `i64::MIN`): a
/// panic at load in a debug build, and in a release build a wrapped value accepted.
#[test]
fn the_most_negative_drift_is_out_of_range_not_an_overflow() {
    for section in [
        "[[clock]]\nnode = \"redis\"\ndrift_ppm = -9223372036854775808",
        "[[fault]]\nat_ms = 1\nclock_drift = { node = \"redis\", drift_ppm = -9223372036854775808 }",
    ] {
        let e = error_of(&format!("{BASE}\n{section}\n"));
        assert!(
            e.contains("drift_ppm: must be within ±250000 ppm, not -9223372036854775808"),
            "{e}"
        );
    }
}

// ---------------------------------------------------------------------------------------------
// `lockstep judge`'s history parser (check/src/jsonl.rs, docs/history.md).
//
// The generator starts from the first lines of catalogue histories (seed 1, written by
// `jsonl::write`) and applies one to four changes: a key deleted, renamed or given another
// value (wrong types, extreme numbers, hostile or unknown names, a grant id broken), a line
// deleted, repeated or swapped with another, the text truncated or random bytes inserted.
// Each result is read by `jsonl::parse` and, when it reads, judged by the checker:
//
// - nothing panics;
// - a refusal names, on every line, the file and a line of the text (or the file alone for
//   a problem of the whole text), with no control character and no Rust type name;
// - a history that reads is written again and reads back the same, and is judged or refused
//   by the checker naming the line of an entry.
//
// `LOCKSTEP_FUZZ_CASES` and `LOCKSTEP_FUZZ_SEED` work as for the scenario target.

/// Lines of each catalogue history the cases start from.
const HISTORY_LINES: usize = 40;

#[derive(Clone, Debug)]
enum HistoryEdit {
    DeleteKey(Index, Index),
    RenameKey(Index, Index, String),
    Replace(Index, Index, serde_json::Value),
    /// Replace a key of the line's `grant` or `op` object.
    ReplaceInId(Index, bool, serde_json::Value),
    DeleteLine(Index),
    RepeatLine(Index),
    SwapLines(Index, Index),
    Truncate(Index),
    InsertBytes(Index, Vec<u8>),
}

fn json_value() -> impl Strategy<Value = serde_json::Value> {
    use serde_json::{Value as J, json};
    prop_oneof![
        Just(J::Null),
        any::<bool>().prop_map(J::Bool),
        prop_oneof![
            Just(json!(-1)),
            Just(json!(0)),
            Just(json!(1)),
            Just(json!(u32::MAX)),
            Just(json!(u64::from(u32::MAX) + 1)),
            Just(json!(u64::MAX)),
            Just(json!(u64::MAX - 1)),
            Just(json!(i64::MIN)),
            Just(json!(1.5)),
            Just(json!(1e300)),
        ],
        any::<u64>().prop_map(|n| json!(n)),
        prop_oneof![
            Just(json!("")),
            Just(json!("client-9")),
            Just(json!("client-1")),
            Just(json!("storage")),
            Just(json!("released")),
            Just(json!("write")),
            Just(json!("grant")),
            Just(json!("exit")),
            Just(json!("storage")),
            Just(json!("\u{0}\u{1b}[31m\u{202e}\r\n")),
            Just(json!("x".repeat(300))),
        ],
        Just(json!([1, "a", null])),
        Just(json!({"client": "client-1", "seq": 1})),
        Just(json!({"client": "client-9", "seq": 7, "extra": true})),
    ]
}

fn history_edit() -> impl Strategy<Value = HistoryEdit> {
    let key = prop_oneof![
        Just("time_ns".to_string()),
        Just("event".to_string()),
        Just("client".to_string()),
        Just("grant".to_string()),
        Just("nodes".to_string()),
        Just("Time_ns".to_string()),
        Just("lockstep_history".to_string()),
        "[a-z_]{1,8}",
    ];
    prop_oneof![
        (any::<Index>(), any::<Index>()).prop_map(|(l, k)| HistoryEdit::DeleteKey(l, k)),
        (any::<Index>(), any::<Index>(), key).prop_map(|(l, k, n)| HistoryEdit::RenameKey(l, k, n)),
        (any::<Index>(), any::<Index>(), json_value())
            .prop_map(|(l, k, v)| HistoryEdit::Replace(l, k, v)),
        (any::<Index>(), any::<bool>(), json_value())
            .prop_map(|(l, s, v)| HistoryEdit::ReplaceInId(l, s, v)),
        any::<Index>().prop_map(HistoryEdit::DeleteLine),
        any::<Index>().prop_map(HistoryEdit::RepeatLine),
        (any::<Index>(), any::<Index>()).prop_map(|(a, b)| HistoryEdit::SwapLines(a, b)),
        any::<Index>().prop_map(HistoryEdit::Truncate),
        (any::<Index>(), proptest::collection::vec(any::<u8>(), 1..6))
            .prop_map(|(i, b)| HistoryEdit::InsertBytes(i, b)),
    ]
}

/// Applies `edit` to the history `lines` (one line of text each, JSON while the key edits
/// can read it).
fn apply_history_edit(lines: &mut Vec<Vec<u8>>, edit: &HistoryEdit) {
    use serde_json::{Map, Value as J};
    let line = |i: &Index, lines: &Vec<Vec<u8>>| i.index(lines.len().max(1));
    let object = |bytes: &[u8]| match serde_json::from_slice::<J>(bytes) {
        Ok(J::Object(m)) => Some(m),
        _ => None,
    };
    let put = |lines: &mut Vec<Vec<u8>>, i: usize, m: Map<String, J>| {
        lines[i] = J::Object(m).to_string().into_bytes();
    };
    if lines.is_empty() {
        return;
    }
    match edit {
        HistoryEdit::DeleteKey(l, k) => {
            let i = line(l, lines);
            if let Some(mut m) = object(&lines[i]) {
                if let Some(key) = m.keys().nth(k.index(m.len().max(1))).cloned() {
                    m.remove(&key);
                }
                put(lines, i, m);
            }
        }
        HistoryEdit::RenameKey(l, k, name) => {
            let i = line(l, lines);
            if let Some(mut m) = object(&lines[i]) {
                if let Some(key) = m.keys().nth(k.index(m.len().max(1))).cloned() {
                    let v = m.remove(&key).unwrap_or(J::Null);
                    m.insert(name.clone(), v);
                }
                put(lines, i, m);
            }
        }
        HistoryEdit::Replace(l, k, v) => {
            let i = line(l, lines);
            if let Some(mut m) = object(&lines[i]) {
                if let Some(key) = m.keys().nth(k.index(m.len().max(1))).cloned() {
                    m.insert(key, v.clone());
                }
                put(lines, i, m);
            }
        }
        HistoryEdit::ReplaceInId(l, seq, v) => {
            let i = line(l, lines);
            if let Some(mut m) = object(&lines[i]) {
                for id in ["grant", "op"] {
                    if let Some(J::Object(inner)) = m.get_mut(id) {
                        inner.insert(if *seq { "seq" } else { "client" }.into(), v.clone());
                        break;
                    }
                }
                put(lines, i, m);
            }
        }
        HistoryEdit::DeleteLine(l) => {
            let i = line(l, lines);
            lines.remove(i);
        }
        HistoryEdit::RepeatLine(l) => {
            let i = line(l, lines);
            let copy = lines[i].clone();
            lines.insert(i, copy);
        }
        HistoryEdit::SwapLines(a, b) => {
            let (a, b) = (line(a, lines), line(b, lines));
            lines.swap(a, b);
        }
        HistoryEdit::Truncate(at) => {
            let mut text = lines.join(&b'\n');
            text.truncate(at.index(text.len().max(1)));
            *lines = text.split(|&b| b == b'\n').map(<[u8]>::to_vec).collect();
        }
        HistoryEdit::InsertBytes(at, bytes) => {
            let mut text = lines.join(&b'\n');
            let at = at.index(text.len() + 1);
            text.splice(at..at, bytes.iter().copied());
            *lines = text.split(|&b| b == b'\n').map(<[u8]>::to_vec).collect();
        }
    }
}

/// What is wrong with the refusal `errors` of a text of `lines` lines, if anything.
fn history_error_problem(
    errors: &[lockstep_check::jsonl::LineError],
    lines: usize,
) -> Option<String> {
    const FILE: &str = "fuzzed.jsonl";
    if errors.is_empty() {
        return Some("refused with no problem named".to_string());
    }
    for e in errors {
        let text = e.in_file(FILE);
        if e.line > lines {
            return Some(format!(
                "line {} of a text of {lines} lines: {text}",
                e.line
            ));
        }
        let prefix = match e.line {
            0 => format!("{FILE}: "),
            n => format!("{FILE}:{n}: "),
        };
        if !text.starts_with(&prefix) || text.len() == prefix.len() {
            return Some(format!("does not start with the file and line: {text}"));
        }
        if text.chars().any(char::is_control) {
            return Some(format!("a control character: {}", text.escape_debug()));
        }
        if let Some(t) = TYPE_NAMES.iter().find(|t| text.contains(*t)) {
            return Some(format!("a Rust type name `{t}`: {text}"));
        }
    }
    None
}

/// One fuzzed history: `None` when all is well, else what went wrong.
fn judge_case(bytes: &[u8]) -> Option<String> {
    use lockstep::judge::{Overrides, judge};
    use lockstep_check::jsonl;
    let lines = bytes.split(|&b| b == b'\n').count();
    let parsed = match caught(|| jsonl::parse(bytes)) {
        Err(panic) => return Some(format!("the parser panicked: {panic}")),
        Ok(Err(errors)) => return history_error_problem(&errors, lines),
        Ok(Ok(parsed)) => parsed,
    };
    let again = jsonl::write(&parsed.history, &parsed.judging);
    match jsonl::parse(again.as_bytes()) {
        Ok(p) if p.history == parsed.history && p.judging == parsed.judging => {}
        Ok(_) => return Some("written again, it reads back differently".to_string()),
        Err(e) => return Some(format!("written again, it is refused: {e:?}")),
    }
    match caught(|| {
        judge(bytes, &Overrides::default()).map(|j| j.verdict.explain(&j.parsed.history).len())
    }) {
        Err(panic) => Some(format!("the checker panicked: {panic}")),
        Ok(Err(errors)) => history_error_problem(&errors, lines),
        Ok(Ok(_)) => None,
    }
}

#[test]
fn malformed_histories_are_read_or_refused_by_line_and_never_panic() {
    quiet_panics_of_cases();
    let cases = env_u64("LOCKSTEP_FUZZ_CASES").map_or(DEFAULT_CASES, |n| n as u32);
    let seed = env_u64("LOCKSTEP_FUZZ_SEED").unwrap_or(16);
    let bases: Vec<Vec<Vec<u8>>> = scenario_files("scenarios/catalogue")
        .iter()
        .map(|path| {
            let s = lockstep::load(path).expect("a catalogue scenario").scenario;
            let r = lockstep::run(&s, 1, false);
            let judging = lockstep_check::jsonl::Judging::of(&s.check_options, r.property);
            let text = lockstep_check::jsonl::write(&r.history, &judging);
            text.lines()
                .take(HISTORY_LINES)
                .map(|l| l.as_bytes().to_vec())
                .collect()
        })
        .collect();
    let mut runner = runner(cases, seed);
    let strategy = (
        any::<Index>(),
        proptest::collection::vec(history_edit(), 1..5),
    );
    let tally = RefCell::new((0u64, 0u64, Vec::<String>::new()));
    runner
        .run(&strategy, |(base, edits)| {
            let mut lines = bases[base.index(bases.len())].clone();
            for e in &edits {
                apply_history_edit(&mut lines, e);
            }
            let bytes = lines.join(&b'\n');
            let read = lockstep_check::jsonl::parse(&bytes).is_ok();
            let mut t = tally.borrow_mut();
            match judge_case(&bytes) {
                None if read => t.0 += 1,
                None => t.1 += 1,
                Some(what) => t.2.push(bad_case(&what, &edits, &bytes, 2_000)),
            }
            Ok(())
        })
        .expect("the cases never fail in the runner");
    let (read, refused, bad) = tally.into_inner();
    verdict_of_cases(
        &format!("{cases} histories from seed {seed}"),
        "read and judged",
        (read, refused, &bad),
    );
}

// ---------------------------------------------------------------------------------------------
// Review files
//
// `lockstep review`'s loader has a target of its own: review files made from the shipped one
// (its first designs) and from the one docs/review.md shows with every key, with one to three
// of the scenario target's key and value changes and sometimes a change to the text, written
// beside a link to `scenarios/` so that their designs' relative paths resolve. Each is given to
// `review::load`:
//
// - nothing panics;
// - a refusal has one line per problem, each naming the file and a key path or a line, with no
//   control character and no Rust type name;
// - a review that loads has a cell for every design and class, and its first cell runs one
//   seed with the event bound lowered (the cell's semantics unchanged) and finishes.
//
// Loading builds and checks every cell of every design, so a case costs more than a scenario
// file's: `cargo test` runs `REVIEW_CASES`; `LOCKSTEP_FUZZ_CASES` and `LOCKSTEP_FUZZ_SEED` work
// as for the other targets.

/// Review cases `cargo test` runs.
const REVIEW_CASES: u32 = 500;

/// The review file docs/review.md shows, every key given, over two shipped designs.
const REVIEW_WITH_EVERY_KEY: &str = r#"
[review]
name = "a lock for one writer at a time"
job = "what the lock protects, for people"
seeds = 200
from = 1
classes = ["pauses", "partitions-drop", "partitions-hold", "crashes",
           "clock-steps", "drift-slew", "slow-links"]
cost = "latency"
workload = { clients = 2, think_ms = { uniform = [0, 100] }, work_ms = { uniform = [50, 200] } }
set = { "model.ttl_ms" = 10_000 }

[[design]]
name = "Redis, unfenced"
scenario = "../scenarios/chaos/redis-unfenced.toml"
keep_workload = false
set = { "workload.clients" = 3 }

[[design]]
name = "etcd Mutex + revision fencing"
scenario = "../scenarios/chaos/etcd-revision-fenced.toml"
set = { "workload.work_ms" = { uniform = [10, 50] }, "clock[1].drift_ppm" = 20 }
"#;

/// What is wrong with the refusal `e` of the review file `file`, if anything.
fn review_error_problem(
    e: &lockstep::review::ReviewError,
    file: &Path,
    input: &str,
) -> Option<String> {
    let text = e.to_string();
    let name = file.display().to_string();
    let lines: Vec<&str> = text.split('\n').collect();
    if e.problems.is_empty() || lines.len() != e.problems.len() {
        return Some(format!(
            "{} lines for {} problems",
            lines.len(),
            e.problems.len()
        ));
    }
    for (line, p) in lines.iter().zip(&e.problems) {
        if !line.starts_with(&name) {
            return Some(format!("a line does not name the file: {line}"));
        }
        if let Some(c) = line.chars().find(|c| c.is_control()) {
            return Some(format!(
                "control character {c:?} in: {}",
                line.escape_debug()
            ));
        }
        let internal = |w: &&&str| line.contains(**w) && !input.contains(**w);
        if let Some(w) = TYPE_NAMES.iter().find(internal) {
            return Some(format!("Rust type name `{w}` in: {line}"));
        }
        let whole_file = p.message.starts_with("cannot read")
            || p.message.starts_with("missing field `")
            || p.message.contains("bytes, more than");
        if p.path.is_empty() && p.line.is_none() && !whole_file {
            return Some(format!("neither key path nor line: {line}"));
        }
    }
    None
}

/// Loads `bytes` as the review file `path` and runs one seed of what loads.
fn check_review(path: &Path, bytes: &[u8]) -> Outcome {
    std::fs::write(path, bytes).expect("write the case's file");
    let plan = match caught(|| lockstep::review::load(path, Some(1))) {
        Err(panic) => return Outcome::Bad(format!("load panicked: {panic}")),
        Ok(Err(e)) => {
            let input = String::from_utf8_lossy(bytes);
            return match review_error_problem(&e, path, &input) {
                Some(problem) => Outcome::Bad(problem),
                None => Outcome::Refused,
            };
        }
        Ok(Ok(plan)) => plan,
    };
    if plan.designs.is_empty() {
        return Outcome::Bad("loads with no design".to_string());
    }
    if let Some(d) = plan
        .designs
        .iter()
        .find(|d| d.cells.len() != plan.classes.len())
    {
        return Outcome::Bad(format!(
            "{} has {} cells for {} classes",
            d.name,
            d.cells.len(),
            plan.classes.len()
        ));
    }
    let Some((_, cell)) = plan.designs[0].cells.first() else {
        return Outcome::Bad("loads with no class".to_string());
    };
    let mut scenario = cell.clone();
    scenario.max_events = scenario.max_events.min(MAX_EVENTS);
    if let Some(c) = &mut scenario.chaos {
        c.max_faults = c.max_faults.min(MAX_EVENTS);
    }
    match caught(|| lockstep::run(&scenario, plan.from, false)) {
        Err(panic) => Outcome::Bad(format!("the first cell's run panicked: {panic}")),
        Ok(r) if r.events > MAX_EVENTS => {
            Outcome::Bad(format!("the run handled {} events", r.events))
        }
        Ok(_) => Outcome::Ran,
    }
}

#[test]
fn malformed_review_files_load_or_are_refused_by_key_and_never_panic() {
    quiet_panics_of_cases();
    let cases = env_u64("LOCKSTEP_FUZZ_CASES").map_or(REVIEW_CASES, |n| n as u32);
    let seed = env_u64("LOCKSTEP_FUZZ_SEED").unwrap_or(17);
    let shipped = std::fs::read_to_string(root().join("reviews/designs.toml")).expect("the review");
    let mut shipped: Table = toml::from_str(&shipped).expect("the shipped review is TOML");
    if let Some(Value::Array(designs)) = shipped.get_mut("design") {
        designs.truncate(3);
    }
    let every: Table = toml::from_str(REVIEW_WITH_EVERY_KEY).expect("TOML");
    let bases = [shipped, every];
    // The strings and keys of the reviews, and of the scenario files their `set` keys reach.
    let mut tables: Vec<Table> = bases.to_vec();
    for p in scenario_files("scenarios/chaos") {
        let text = std::fs::read_to_string(&p).expect("a shipped scenario");
        tables.push(toml::from_str(&text).expect("TOML"));
    }
    let (mut strings, mut keys) = pools(&tables);
    for class in [
        "pauses",
        "partitions-drop",
        "partitions-hold",
        "crashes",
        "clock-steps",
        "drift-slew",
        "slow-links",
        "latency",
        "availability",
        "throughput",
        "model.ttl_ms",
        "workload.clients",
        "clock[1].drift_ppm",
        "fault[0].pause.for_ms",
        "chaos.weights.pause",
    ] {
        strings.push(class.to_string());
        keys.push(class.to_string());
    }
    for k in [
        "review",
        "design",
        "name",
        "job",
        "seeds",
        "from",
        "classes",
        "cost",
        "set",
        "scenario",
        "workload",
        "keep_workload",
        "clients",
        "think_ms",
        "work_ms",
    ] {
        keys.push(k.to_string());
    }
    strings.sort();
    strings.dedup();
    keys.sort();
    keys.dedup();
    let documented = Documented::new();
    let dir = crate::support::TempDir::new("fuzz-review");
    std::fs::create_dir_all(dir.join("reviews")).expect("temp dir");
    std::os::unix::fs::symlink(root().join("scenarios"), dir.join("scenarios"))
        .expect("a link to scenarios/");
    let path = dir.join("reviews/fuzzed.toml");
    let mut runner = runner(cases, seed);
    let tally = RefCell::new(Tally::default());
    runner
        .run(&case(strings, keys), |case| {
            let i = case.file.index(bases.len());
            let bytes = render(&bases[i], &case, &documented);
            let mut t = tally.borrow_mut();
            match check_review(&path, &bytes) {
                Outcome::Ran => t.ran += 1,
                Outcome::Refused => t.refused += 1,
                Outcome::Bad(what) => {
                    let text: String = String::from_utf8_lossy(&bytes)
                        .chars()
                        .take(3_000)
                        .collect();
                    t.bad.push((
                        what,
                        format!("\n  {case:?}\n  file: {}", text.escape_debug()),
                    ));
                }
            }
            Ok(())
        })
        .expect("the cases never fail in the runner");
    let t = tally.into_inner();
    eprintln!(
        "fuzz: {cases} review files from seed {seed}: {} loaded and ran, {} refused, {} bad",
        t.ran,
        t.refused,
        t.bad.len(),
    );
    assert!(
        t.ran > 0 && t.refused > 0,
        "both kinds: {} ran, {} refused",
        t.ran,
        t.refused
    );
    assert!(
        t.bad.is_empty(),
        "{} of {cases} cases went wrong: {}",
        t.bad.len(),
        summary(&t.bad, &path.display().to_string())
    );
}

// ---------------------------------------------------------------------------------------------
// Sweep summaries
//
// `lockstep merge` reads what `sweep --format json` wrote, which a CI job may have stored,
// cut off or edited. Its target starts from the summaries of the four shards of two sweeps (a
// chaos sweep of Redis that fails and measures recovery, and a Kubernetes leader election that
// measures failovers) and applies one to four changes: a key at any depth deleted, renamed or
// given another value (the history target's values: wrong types, extreme numbers, hostile
// text), an array's entry repeated or dropped, the text truncated or random bytes inserted.
// Each result is read by `SweepSummary::from_json` and, when it reads, merged with the other
// three shards:
//
// - nothing panics;
// - a refusal is one line naming a key path (`` `shard.count`: ``), or the reader's line and
//   column for text that is not JSON, with no control character and no Rust type name;
// - a summary that reads is written again and reads back the same;
// - a merge that fails names one of its inputs; one that succeeds counts the runs of its four
//   inputs, and its JSON reads back.
//
// `LOCKSTEP_FUZZ_CASES` and `LOCKSTEP_FUZZ_SEED` work as for the other targets.

#[derive(Clone, Debug)]
enum SummaryEdit {
    /// Delete the value at a place (a key of an object, an entry of an array).
    Delete(Index),
    /// Rename the key at a place (objects only).
    Rename(Index, String),
    /// Give the place another value.
    Replace(Index, serde_json::Value),
    /// Repeat an array's entry at a place.
    Repeat(Index),
    Truncate(Index),
    InsertBytes(Index, Vec<u8>),
}

fn summary_edit() -> impl Strategy<Value = SummaryEdit> {
    let key = prop_oneof![
        Just("runs".to_string()),
        Just("shard".to_string()),
        Just("count".to_string()),
        Just("seed".to_string()),
        Just("failures".to_string()),
        Just("format".to_string()),
        "[a-z_]{1,10}",
    ];
    prop_oneof![
        any::<Index>().prop_map(SummaryEdit::Delete),
        (any::<Index>(), key).prop_map(|(i, k)| SummaryEdit::Rename(i, k)),
        (any::<Index>(), json_value()).prop_map(|(i, v)| SummaryEdit::Replace(i, v)),
        (any::<Index>(), json_value()).prop_map(|(i, v)| SummaryEdit::Replace(i, v)),
        any::<Index>().prop_map(SummaryEdit::Repeat),
        any::<Index>().prop_map(SummaryEdit::Truncate),
        (any::<Index>(), proptest::collection::vec(any::<u8>(), 1..6))
            .prop_map(|(i, b)| SummaryEdit::InsertBytes(i, b)),
    ]
}

/// Every place in `v` below its top, as JSON pointers.
fn json_places(v: &serde_json::Value, at: &str, out: &mut Vec<String>) {
    let escape = |k: &str| k.replace('~', "~0").replace('/', "~1");
    match v {
        serde_json::Value::Object(m) => {
            for (k, inner) in m {
                let here = format!("{at}/{}", escape(k));
                out.push(here.clone());
                json_places(inner, &here, out);
            }
        }
        serde_json::Value::Array(a) => {
            for (i, inner) in a.iter().enumerate() {
                let here = format!("{at}/{i}");
                out.push(here.clone());
                json_places(inner, &here, out);
            }
        }
        _ => {}
    }
}

/// Applies `edit` to the summary text `text`.
fn apply_summary_edit(text: &mut Vec<u8>, edit: &SummaryEdit) {
    use serde_json::Value as J;
    let tree = |text: &[u8]| serde_json::from_slice::<J>(text).ok();
    // The place an index picks, split into its parent's pointer and its last step.
    let place = |v: &J, i: &Index| {
        let mut places = Vec::new();
        json_places(v, "", &mut places);
        let p = places.get(i.index(places.len().max(1)))?.clone();
        let cut = p.rfind('/')?;
        Some((
            p[..cut].to_string(),
            p[cut + 1..].replace("~1", "/").replace("~0", "~"),
        ))
    };
    let edit_tree = |text: &mut Vec<u8>, i: &Index, f: &dyn Fn(&mut J, &str)| {
        let Some(mut v) = tree(text) else { return };
        let Some((parent, last)) = place(&v, i) else {
            return;
        };
        if let Some(p) = v.pointer_mut(&parent) {
            f(p, &last);
        }
        *text = v.to_string().into_bytes();
    };
    match edit {
        SummaryEdit::Delete(i) => edit_tree(text, i, &|p, last| match p {
            J::Object(m) => {
                m.remove(last);
            }
            J::Array(a) => {
                if let Ok(n) = last.parse::<usize>() {
                    a.remove(n);
                }
            }
            _ => {}
        }),
        SummaryEdit::Rename(i, name) => edit_tree(text, i, &|p, last| {
            if let J::Object(m) = p {
                let v = m.remove(last).unwrap_or(J::Null);
                m.insert(name.clone(), v);
            }
        }),
        SummaryEdit::Replace(i, value) => edit_tree(text, i, &|p, last| match p {
            J::Object(m) => {
                m.insert(last.to_string(), value.clone());
            }
            J::Array(a) => {
                if let Some(slot) = last.parse::<usize>().ok().and_then(|n| a.get_mut(n)) {
                    *slot = value.clone();
                }
            }
            _ => {}
        }),
        SummaryEdit::Repeat(i) => edit_tree(text, i, &|p, last| {
            if let (J::Array(a), Ok(n)) = (p, last.parse::<usize>()) {
                let copy = a[n].clone();
                a.insert(n, copy);
            }
        }),
        SummaryEdit::Truncate(at) => {
            let at = at.index(text.len().max(1));
            text.truncate(at);
        }
        SummaryEdit::InsertBytes(at, bytes) => {
            let at = at.index(text.len() + 1);
            text.splice(at..at, bytes.iter().copied());
        }
    }
}

/// What is wrong with the refusal `error` of a summary, if anything.
fn summary_error_problem(error: &str, input: &str) -> Option<String> {
    if error.contains('\n') {
        return Some(format!("more than one line: {}", error.escape_debug()));
    }
    if let Some(c) = error.chars().find(|c| c.is_control()) {
        return Some(format!(
            "control character {c:?} in: {}",
            error.escape_debug()
        ));
    }
    let internal = |w: &&&str| error.contains(**w) && !input.contains(**w);
    if let Some(w) = TYPE_NAMES.iter().find(internal) {
        return Some(format!("Rust type name `{w}` in: {error}"));
    }
    let keyed = error.starts_with('`') && error.contains("`: ");
    let not_json = error.starts_with("not the JSON of `lockstep sweep --format json`: ")
        && error.contains(" at line ");
    if !keyed && !not_json && !error.starts_with("format `") {
        return Some(format!("neither a key path nor a line: {error}"));
    }
    None
}

/// One fuzzed summary, shard `shard` of `shards`: `None` when all is well, else what went wrong.
fn summary_case(bytes: &[u8], shard: usize, shards: &[SummaryOf]) -> Option<String> {
    use lockstep::sweep::{self, SweepSummary};
    let text = String::from_utf8_lossy(bytes);
    let read = match caught(|| SweepSummary::from_json(&text)) {
        Err(panic) => return Some(format!("the reader panicked: {panic}")),
        Ok(Err(e)) => return summary_error_problem(&e, &text),
        Ok(Ok(s)) => s,
    };
    match SweepSummary::from_json(&read.json()) {
        Ok(again) if again == read => {}
        Ok(_) => return Some("written again, it reads back differently".to_string()),
        Err(e) => return Some(format!("written again, it is refused: {e}")),
    }
    let inputs: Vec<(String, SweepSummary)> = shards
        .iter()
        .enumerate()
        .map(|(i, (_, s))| {
            let s = if i == shard { read.clone() } else { s.clone() };
            (format!("s{i}.json"), s)
        })
        .collect();
    match caught(|| sweep::merge(&inputs)) {
        Err(panic) => Some(format!("the merge panicked: {panic}")),
        Ok(Err(e)) => {
            let e = e.to_string();
            if let Some(c) = e.chars().find(|c| c.is_control()) {
                return Some(format!("control character {c:?} in: {}", e.escape_debug()));
            }
            (!(0..shards.len()).any(|i| e.contains(&format!("s{i}.json"))))
                .then(|| format!("the merge's error names no input: {e}"))
        }
        Ok(Ok(merged)) => {
            let runs: u64 = inputs.iter().map(|(_, s)| s.runs).sum();
            if merged.runs != runs {
                return Some(format!("merged {} runs of {runs}", merged.runs));
            }
            SweepSummary::from_json(&merged.json())
                .err()
                .map(|e| format!("the merge's JSON is refused: {e}"))
        }
    }
}

/// A shard's JSON and its summary.
type SummaryOf = (Vec<u8>, lockstep::sweep::SweepSummary);

#[test]
fn malformed_sweep_summaries_are_read_or_refused_by_key_and_merge_never_panics() {
    use lockstep::sweep::{self, Shard, SweepConfig, SweepSummary};
    quiet_panics_of_cases();
    let cases = env_u64("LOCKSTEP_FUZZ_CASES").map_or(DEFAULT_CASES, |n| n as u32);
    let seed = env_u64("LOCKSTEP_FUZZ_SEED").unwrap_or(18);
    const SHARDS: u64 = 4;
    let sweeps: Vec<Vec<SummaryOf>> = [
        "scenarios/chaos/redis-unfenced.toml",
        "scenarios/catalogue/k8s-control-plane-failover.toml",
    ]
    .iter()
    .map(|file| {
        let target = sweep::load(&root().join(file), None).expect("the scenario loads");
        (0..SHARDS)
            .map(|index| {
                let config = SweepConfig {
                    from: 1,
                    count: 8,
                    shard: Some(Shard {
                        index: index + 1,
                        count: SHARDS,
                    }),
                    jobs: 1,
                    check_determinism: false,
                };
                let s = sweep::sweep(&target, &config, |_| {});
                let json = s.json();
                let read = SweepSummary::from_json(&json).expect("a sweep's own JSON reads");
                (json.into_bytes(), read)
            })
            .collect()
    })
    .collect();
    let mut runner = runner(cases, seed);
    let strategy = (
        any::<Index>(),
        any::<Index>(),
        proptest::collection::vec(summary_edit(), 1..5),
    );
    let tally = RefCell::new((0u64, 0u64, Vec::<String>::new()));
    runner
        .run(&strategy, |(which, shard, edits)| {
            let shards = &sweeps[which.index(sweeps.len())];
            let shard = shard.index(shards.len());
            let mut bytes = shards[shard].0.clone();
            for e in &edits {
                apply_summary_edit(&mut bytes, e);
            }
            let read = SweepSummary::from_json(&String::from_utf8_lossy(&bytes)).is_ok();
            let mut t = tally.borrow_mut();
            match summary_case(&bytes, shard, shards) {
                None if read => t.0 += 1,
                None => t.1 += 1,
                Some(what) => t.2.push(bad_case(&what, &edits, &bytes, 3_000)),
            }
            Ok(())
        })
        .expect("the cases never fail in the runner");
    let (read, refused, bad) = tally.into_inner();
    verdict_of_cases(
        &format!("{cases} sweep summaries from seed {seed}"),
        "read and merged",
        (read, refused, &bad),
    );
}
