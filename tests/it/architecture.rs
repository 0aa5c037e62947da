//! The dependency direction of ARCHITECTURE.md, enforced: a crate that depends against it, or
//! that pulls a heavy dependency into `sim` or `check`, fails here.

use crate::support::root;

/// Each crate's allowed dependencies, lockstep crates and external crates alike.
const ALLOWED: &[(&str, &[&str])] = &[
    ("sim", &["rand_chacha", "rand_core", "serde"]),
    ("check", &["serde"]),
    ("models", &["lockstep-sim", "lockstep-check", "serde"]),
    (
        "reports",
        &["lockstep-check", "serde", "serde_json", "tabled"],
    ),
];

fn dependencies(manifest: &str) -> Vec<String> {
    let text = std::fs::read_to_string(root().join(manifest)).expect("manifest");
    let doc: toml::Table = text.parse().expect("valid manifest");
    doc.get("dependencies")
        .and_then(|d| d.as_table())
        .map(|t| t.keys().cloned().collect())
        .unwrap_or_default()
}

#[test]
fn every_crate_depends_only_in_the_allowed_direction() {
    for (krate, allowed) in ALLOWED {
        for dep in dependencies(&format!("{krate}/Cargo.toml")) {
            assert!(
                allowed.contains(&dep.as_str()),
                "{krate} must not depend on {dep} (ARCHITECTURE.md)"
            );
        }
    }
}

#[test]
fn sim_and_check_know_nothing_of_each_other_or_of_locks() {
    let sim = dependencies("sim/Cargo.toml");
    let check = dependencies("check/Cargo.toml");
    assert!(!sim.iter().any(|d| d.starts_with("lockstep")), "{sim:?}");
    assert!(
        !check.iter().any(|d| d.starts_with("lockstep")),
        "{check:?}"
    );
}

#[test]
fn only_the_binary_touches_the_process_environment() {
    // Library code of every crate: no exit codes, no environment, no stdout.
    for dir in [
        "sim/src",
        "check/src",
        "models/src",
        "reports/src",
        "src/scenario",
    ] {
        for entry in walk(&root().join(dir)) {
            let text = std::fs::read_to_string(&entry).expect("source");
            for banned in [
                "std::process::exit",
                "std::env::var",
                "println!",
                "eprintln!",
            ] {
                assert!(!text.contains(banned), "{} uses {banned}", entry.display());
            }
        }
    }
}

fn walk(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).expect("dir") {
        let p = e.expect("entry").path();
        if p.is_dir() {
            out.extend(walk(&p));
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
    out
}
