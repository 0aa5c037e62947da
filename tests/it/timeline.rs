//! The timeline of one run: built from K1's failing run it shows the two holders overlapping
//! where the verdict says, the pause on the paused client's lane, the stale write and a clock
//! line per node; its SVG parses, escapes what users wrote and is the same bytes every time.
//!
//! `LOCKSTEP_TIMELINE_SVG=/tmp/k1.svg cargo test timeline` also writes K1's picture there, to
//! look at.

use std::path::Path;

use lockstep::timeline;
use lockstep::{Scenario, load, parse};
use lockstep_reports::timeline::{FaultMark, LaneKind, Timeline, svg};

use crate::support::root;

fn k1() -> Scenario {
    load(&root().join("scenarios/catalogue/k1-gc-pause-unfenced.toml"))
        .expect("K1 loads")
        .scenario
}

fn lane(t: &Timeline, name: &str) -> usize {
    t.lanes
        .iter()
        .position(|l| l.name == name)
        .unwrap_or_else(|| panic!("no lane {name}"))
}

/// The elements of `doc` whose class list holds `class`.
fn count_class(doc: &roxmltree::Document<'_>, class: &str) -> usize {
    doc.descendants()
        .filter(|n| {
            n.attribute("class")
                .is_some_and(|c| c.split_whitespace().any(|c| c == class))
        })
        .count()
}

#[test]
fn k1_timeline_shows_the_overlap_the_pause_and_the_stale_write() {
    let s = k1();
    let (r, t) = timeline::of_seed(&s, 1);
    let (c1, c2) = (lane(&t, "client-1"), lane(&t, "client-2"));
    assert_eq!(t.lanes[c1].kind, LaneKind::Client);
    assert_eq!(t.lanes[lane(&t, "redis")].kind, LaneKind::Server);
    assert_eq!(t.storage_lane, Some(lane(&t, "storage")));

    // The held bars of both clients cover the overlap the verdict reports.
    let overlap = &r.verdict.double_holders.examples[0];
    assert_eq!(t.overlaps.len(), r.verdict.double_holders.examples.len());
    assert_eq!(
        (t.overlaps[0].from_ns, t.overlaps[0].to_ns),
        (overlap.from_ns, overlap.to_ns)
    );
    for (l, grant) in [(c1, overlap.first), (c2, overlap.second)] {
        assert_eq!(grant.client.0 as usize, l);
        let bar = t
            .held
            .iter()
            .find(|h| h.grant == grant)
            .expect("a held bar per grant");
        assert_eq!(bar.lane, l);
        assert!(bar.from_ns <= overlap.from_ns && overlap.to_ns <= bar.to_ns);
    }

    // The server granted client-1 the lock for its 10 s TTL, then client-2, while client-1
    // still believed it held the lock.
    let redis = lane(&t, "redis");
    let c1_bar = t
        .held
        .iter()
        .find(|h| h.grant == overlap.first)
        .expect("bar");
    let at = t
        .granted
        .iter()
        .rposition(|g| g.from_ns <= c1_bar.from_ns)
        .expect("the server granted client-1's lock");
    let first = &t.granted[at];
    assert_eq!((first.lane, first.holder), (redis, c1));
    assert_eq!(first.detail, "expired");
    assert!(
        first.from_ns <= c1_bar.from_ns,
        "the server grants before the client hears"
    );
    assert!(
        (10_000_000_000..10_010_000_000).contains(&(first.to_ns - first.from_ns)),
        "{first:?}"
    );
    let second = &t.granted[at + 1];
    assert_eq!(second.holder, c2);
    assert!(first.to_ns <= second.from_ns && second.from_ns <= overlap.from_ns);
    assert!(second.from_ns < c1_bar.to_ns);
    for g in &t.granted {
        assert!(g.from_ns <= g.to_ns);
    }
    assert!(
        t.granted.windows(2).all(|w| w[0].to_ns <= w[1].from_ns),
        "one holder at a time"
    );

    // The 15 s pause is shaded on client-1's lane.
    let pauses: Vec<_> = t
        .faults
        .iter()
        .filter(|f| f.kind == FaultMark::Pause)
        .collect();
    assert_eq!(pauses.len(), 1);
    assert_eq!(pauses[0].lanes, vec![c1]);
    assert_eq!(pauses[0].to_ns - pauses[0].from_ns, 15_000_000_000);

    // The stale accepted write is client-1's, at the time the verdict gives.
    let stale: Vec<_> = t.ops.iter().filter(|o| o.stale).collect();
    let example = &r.verdict.stale_accepted.examples[0];
    assert_eq!(stale.len(), r.verdict.stale_accepted.examples.len());
    assert_eq!((stale[0].lane, stale[0].time_ns), (c1, example.time_ns));

    // A clock line per node: K1's clocks are perfect, so every offset is zero, exactly.
    assert_eq!(t.clocks.len(), t.lanes.len());
    for series in &t.clocks {
        assert!(series.points.len() >= 2, "{series:?}");
        assert!(
            series
                .points
                .iter()
                .all(|p| p.wall_offset_ns == 0 && p.mono_offset_ns == 0)
        );
    }
    assert!(!t.notes.iter().any(|n| n.contains("approximate")));

    let picture = svg(&t);
    if let Some(path) = std::env::var_os("LOCKSTEP_TIMELINE_SVG") {
        std::fs::write(Path::new(&path), &picture).expect("the SVG is written");
    }
    let doc = roxmltree::Document::parse(&picture).expect("the SVG is well-formed XML");
    // One of each in the legend, plus the drawing's own.
    assert_eq!(count_class(&doc, "held"), t.held.len() + 1);
    // Overlap examples that touch are drawn as one frame.
    let frames = count_class(&doc, "overlap") - 1;
    assert!(0 < frames && frames <= t.overlaps.len(), "{frames}");
    assert_eq!(count_class(&doc, "granted"), t.granted.len() + 1);
    assert_eq!(count_class(&doc, "fault-pause"), 1 + 1);
    assert_eq!(count_class(&doc, "op-stale"), stale.len() + 1);
    assert_eq!(count_class(&doc, "clock-wall"), t.lanes.len());
    assert_eq!(count_class(&doc, "clock-mono"), t.lanes.len());
    let accepted = t
        .ops
        .iter()
        .filter(|o| !o.stale && o.outcome == lockstep_check::OpOutcome::Accepted)
        .count();
    let drawn = count_class(&doc, "op-accepted") - 1;
    assert!(0 < drawn && drawn <= accepted, "{drawn} of {accepted}");
    assert_eq!(
        count_class(&doc, "op-rejected"),
        1,
        "unfenced: the legend's only"
    );
    for bad in [
        "<script",
        "http://www.w3.org/1999/xlink",
        "href=",
        "@import",
        "url(http",
    ] {
        assert!(!picture.contains(bad), "{bad}");
    }
}

#[test]
fn a_timeline_is_the_same_bytes_every_time() {
    let s = k1();
    let a = svg(&timeline::of_seed(&s, 1).1);
    let b = svg(&timeline::of_seed(&s, 1).1);
    assert_eq!(a, b);
}

#[test]
fn a_timeline_escapes_the_scenario_and_node_names() {
    let mut s = k1();
    s.name = "<script>&\"'".to_string();
    let (_, mut t) = timeline::of_seed(&s, 1);
    t.lanes[0].name = "</text><script>alert(1)</script>".to_string();
    let picture = svg(&t);
    assert!(picture.contains("&lt;script&gt;&amp;&quot;&#39;"));
    assert!(!picture.contains("<script"));
    let doc = roxmltree::Document::parse(&picture).expect("still well-formed");
    let texts: Vec<&str> = doc.descendants().filter_map(|n| n.text()).collect();
    assert!(texts.contains(&"<script>&\"'"));
    assert!(texts.contains(&"</text><script>alert(1)</script>"));
}

#[test]
fn clock_lines_follow_steps_slews_drift_and_strobes_exactly() {
    let text = r#"
[scenario]
name = "clocks"
duration_ms = 20_000

[model]
kind = "redis"
ttl_ms = 5_000

[workload]
clients = 1

[storage]
mode = "unfenced"

[[clock]]
node = "client-1"
offset_ms = -3

[[fault]]
at_ms = 1_000
clock_step = { node = "redis", delta_ms = 2_000 }

[[fault]]
at_ms = 4_000
clock_slew = { node = "redis", delta_ms = 1, rate_ppm = 1_000 }

[[fault]]
at_ms = 3_000
clock_drift = { node = "storage", drift_ppm = 100 }

[[fault]]
at_ms = 2_000
clock_strobe = { node = "client-1", delta_ms = 50, period_ms = 1_000, for_ms = 3_500 }
"#;
    let s = parse(text, Path::new("clocks.toml")).expect("the scenario parses");
    let (_, t) = timeline::of_seed(&s, 3);
    assert!(
        !t.notes.iter().any(|n| n.contains("approximate")),
        "{:?}",
        t.notes
    );
    let at = |name: &str, t_ms: u64| -> Vec<i64> {
        let l = lane(&t, name);
        t.clocks[l]
            .points
            .iter()
            .filter(|p| p.t_ns == t_ms * 1_000_000)
            .map(|p| p.wall_offset_ns)
            .collect()
    };
    // The step: 0 just before, +2 s just after.
    assert_eq!(at("redis", 1_000), vec![0, 2_000_000_000]);
    // The slew of 1 ms at 1000 ppm takes 1 s: a corner at each end, no jump.
    assert_eq!(at("redis", 4_000), vec![2_000_000_000]);
    assert_eq!(at("redis", 5_000), vec![2_001_000_000]);
    // The drift: the monotonic clock gains 100 µs a second from 3 s on.
    let storage = &t.clocks[lane(&t, "storage")];
    let last = storage.points.last().expect("points");
    assert_eq!(last.mono_offset_ns, 17 * 100_000);
    // The strobe: steps at 2, 3, 4 and 5 s, back at 5.5 s; the initial offset stays.
    assert_eq!(at("client-1", 0), vec![-3_000_000]);
    assert_eq!(at("client-1", 2_000), vec![-3_000_000, 47_000_000]);
    assert_eq!(at("client-1", 3_000), vec![47_000_000, -3_000_000]);
    assert_eq!(at("client-1", 5_000), vec![47_000_000, -3_000_000]);
    assert!(at("client-1", 5_500).is_empty(), "even steps: no step back");
    assert_eq!(
        t.faults
            .iter()
            .filter(|f| f.kind == FaultMark::ClockStrobe)
            .map(|f| (f.from_ns, f.to_ns))
            .collect::<Vec<_>>(),
        vec![(2_000_000_000, 5_500_000_000)]
    );
    roxmltree::Document::parse(&svg(&t)).expect("well-formed");
}

/// J8's timeline: each ZooKeeper member's lane shows whom its applied tree made the owner
/// (its owner audit). Client-1 owns the lock on every member until the leader expires its
/// paused session, whose close passes the lock on to client-2 while client-1 still believes
/// it holds it; the members grant client-2 before client-2 hears of it.
/// In the timeline of `file`'s first seed, where client-1 and then client-2 hold the lock at
/// once, every server lane (an ensemble member) shows one owner at a time, and client-2 first
/// in line since before it heard, taken over from client-1 ("passed on"), while client-1
/// still believed it held. Returns the member lanes.
fn members_pass_the_lock_from_client_1_to_client_2(file: &str) -> Vec<String> {
    let s = load(&root().join(file)).expect("loads").scenario;
    let (r, t) = timeline::of_seed(&s, 1);
    let overlap = &r.verdict.double_holders.examples[0];
    let (c1, c2) = (lane(&t, "client-1"), lane(&t, "client-2"));
    assert_eq!(overlap.first.client.0 as usize, c1);
    let c2_bar = t
        .held
        .iter()
        .find(|h| h.grant == overlap.second)
        .expect("client-2's held bar");
    let members: Vec<usize> = (0..t.lanes.len())
        .filter(|&l| t.lanes[l].kind == LaneKind::Server)
        .collect();
    for &m in &members {
        let member = &t.lanes[m].name;
        let bars: Vec<_> = t.granted.iter().filter(|g| g.lane == m).collect();
        assert!(
            bars.windows(2).all(|w| w[0].to_ns <= w[1].from_ns),
            "{member}: one owner at a time"
        );
        let i = bars
            .iter()
            .rposition(|g| g.from_ns <= c2_bar.from_ns)
            .unwrap_or_else(|| panic!("{member} granted client-2's lock"));
        assert_eq!(bars[i].holder, c2, "{member}: {:?}", bars[i]);
        let before = bars[i - 1];
        assert_eq!(
            (before.holder, before.detail.as_str()),
            (c1, "passed on"),
            "{member}"
        );
        assert!(before.to_ns <= bars[i].from_ns && bars[i].from_ns <= overlap.from_ns);
    }
    roxmltree::Document::parse(&svg(&t)).expect("well-formed");
    members.iter().map(|&m| t.lanes[m].name.clone()).collect()
}

#[test]
fn j8_timeline_shows_each_zookeeper_members_owner_passing_on_at_the_expiry() {
    let members = members_pass_the_lock_from_client_1_to_client_2(
        "scenarios/catalogue/j8-zk-client-pause.toml",
    );
    assert_eq!(members, ["zk-1", "zk-2", "zk-3"]);
}

#[test]
fn j3_timeline_shows_each_etcd_members_owner_passing_on_at_the_revoke() {
    let members = members_pass_the_lock_from_client_1_to_client_2(
        "scenarios/catalogue/j3-etcd-client-pause.toml",
    );
    assert_eq!(members.len(), 3, "{members:?}");
}
