//! Seed ranges never wrap: a range whose last seed would pass the largest seed (2^64 - 1) is
//! refused, naming the flags or the file that gave it, before anything runs.

use crate::support::{CLEAN, lockstep, stderr, stdout, temp_scenario};

const LAST: &str = "18446744073709551615";
const BEFORE_LAST: &str = "18446744073709551614";

#[test]
fn sweep_and_hunt_refuse_a_range_past_the_largest_seed_and_take_one_up_to_it() {
    let clean = temp_scenario("seed-range", CLEAN);
    let min = clean.with_file_name("min.toml");
    let (clean, min) = (clean.to_str().expect("utf-8"), min.to_str().expect("utf-8"));
    for cmd in ["sweep", "hunt"] {
        let run = |from: &str, seeds: &str| {
            let mut args = vec![cmd, clean, "--from", from, "--seeds", seeds];
            if cmd == "hunt" {
                args.extend(["--out", min]);
            }
            lockstep(&args)
        };
        // Formerly the seeds 18446744073709551614, 18446744073709551615 and then 0.
        let o = run(BEFORE_LAST, "3");
        assert_eq!(o.status.code(), Some(2), "{cmd}: {}", stdout(&o));
        assert!(stdout(&o).is_empty(), "{cmd}: nothing ran: {}", stdout(&o));
        let err = stderr(&o);
        assert!(
            err.contains(&format!("--from {BEFORE_LAST} --seeds 3:")) && err.contains(LAST),
            "{cmd}: {err}"
        );
        assert!(err.contains("at most 2 seeds"), "{cmd}: {err}");
        for (from, seeds) in [(BEFORE_LAST, "2"), (LAST, "1")] {
            let o = run(from, seeds);
            assert_eq!(o.status.code(), Some(0), "{cmd}: {}", stderr(&o));
        }
    }
}

#[test]
fn a_sweep_summary_whose_range_passes_the_largest_seed_is_refused() {
    let clean = temp_scenario("seed-range-summary", CLEAN);
    let sweep = lockstep(&[
        "sweep",
        clean.to_str().expect("utf-8"),
        "--seeds",
        "3",
        "--format",
        "json",
    ]);
    assert_eq!(sweep.status.code(), Some(0), "{}", stderr(&sweep));
    let text = stdout(&sweep);
    let range = "\"seeds\":{\"from\":1,\"count\":3}";
    assert!(text.contains(range), "{text}");
    let wrapped = text.replace(
        range,
        &format!("\"seeds\":{{\"from\":{BEFORE_LAST},\"count\":3}}"),
    );
    let json = clean.with_file_name("wrapped.json");
    std::fs::write(&json, wrapped).expect("write");
    let json = json.to_str().expect("utf-8");
    let out = clean.with_file_name("report.md");
    for args in [
        vec!["merge", json],
        vec!["report", json, "--out", out.to_str().expect("utf-8")],
    ] {
        let o = lockstep(&args);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stdout(&o));
        let err = stderr(&o);
        assert!(
            err.starts_with(&format!("{json}: ")) && err.contains("seeds") && err.contains(LAST),
            "{args:?}: {err}"
        );
    }
    assert!(!out.exists());
}

#[test]
fn a_range_is_made_only_when_its_last_seed_fits() {
    use lockstep::Seeds;
    assert_eq!(
        Seeds::range(u64::MAX - 1, 2),
        Ok(Seeds::Range {
            from: u64::MAX - 1,
            count: 2
        })
    );
    assert_eq!(
        Seeds::range(u64::MAX - 1, 2).map(|s| s.iter().last()),
        Ok(Some(u64::MAX))
    );
    assert_eq!(Seeds::range(0, u64::MAX).map(|s| s.len()), Ok(u64::MAX));
    let e = Seeds::range(u64::MAX - 1, 3).expect_err("past the last seed");
    assert!(e.contains(LAST) && e.contains("at most 2 seeds"), "{e}");
    assert!(Seeds::range(7, 0).is_err());
}
