//! The calendar-window model: each spending on hand-picked counts, and the bound on
//! admitted hits over random request sequences.

use proptest::prelude::*;

use super::*;

fn hit(key: &str, limit: u64, hits: u64) -> WindowHit {
    WindowHit {
        key: key.to_owned(),
        limit,
        unit_secs: 60,
        hits,
        expire_secs: 60,
    }
}

fn counts(results: &[Counted]) -> Vec<(u64, u64, bool)> {
    (results.iter())
        .map(|counted| (counted.before, counted.after, counted.over))
        .collect()
}

#[test]
fn each_counts_every_hit_and_a_count_passes_its_limit() {
    let hits = [hit("a_", 3, 2), hit("b_", 10, 1)];
    let counted = decide(&hits, &[2, 0], Spending::Each);
    assert_eq!(counts(&counted), [(2, 4, true), (0, 1, false)]);
}

#[test]
fn stop_when_over_counts_only_the_keys_that_go_over() {
    let hits = [hit("a_", 3, 2), hit("b_", 10, 1)];
    let counted = decide(&hits, &[2, 0], Spending::StopWhenOver);
    assert_eq!(counts(&counted), [(2, 4, true), (0, 0, false)]);
    let under = decide(&hits, &[0, 0], Spending::StopWhenOver);
    assert_eq!(counts(&under), [(0, 2, false), (0, 1, false)]);
}

#[test]
fn all_or_nothing_counts_nothing_when_one_key_goes_over() {
    let hits = [hit("a_", 3, 2), hit("b_", 10, 1)];
    let counted = decide(&hits, &[2, 0], Spending::AllOrNothing);
    assert_eq!(counts(&counted), [(2, 2, true), (0, 0, false)]);
}

#[test]
fn a_key_named_twice_counts_its_hits_one_after_the_other() {
    let hits = [hit("a_", 2, 1), hit("a_", 2, 1)];
    assert_eq!(
        counts(&decide(&hits, &[1, 1], Spending::Each)),
        [(1, 2, false), (2, 3, true)]
    );
    assert_eq!(
        counts(&decide(&hits, &[1, 1], Spending::AllOrNothing)),
        [(1, 1, false), (1, 1, true)]
    );
}

#[test]
fn windows_start_on_the_epoch() {
    assert_eq!(window_start(1_700_000_123, 60), 1_700_000_100);
    assert_eq!(window_start(1_700_000_123, 1), 1_700_000_123);
    assert_eq!(window_start(59, 60), 0);
}

fn spending() -> impl Strategy<Value = Spending> {
    prop_oneof![
        Just(Spending::Each),
        Just(Spending::StopWhenOver),
        Just(Spending::AllOrNothing)
    ]
}

proptest! {
    /// Whatever the spending, the requests admitted (no key over) never hold more hits
    /// of a key than its limit, over any sequence of requests on a few keys.
    #[test]
    fn admitted_hits_never_exceed_a_limit(
        spending in spending(),
        requests in prop::collection::vec(
            prop::collection::vec((0..3usize, 0..4u64), 1..4),
            1..40,
        ),
    ) {
        let limits = [3u64, 5, 1];
        let mut stored = [0u64; 3];
        let mut admitted = [0u64; 3];
        for request in requests {
            let hits: Vec<WindowHit> = (request.iter())
                .map(|&(key, hits)| hit(&format!("k{key}_"), limits[key], hits))
                .collect();
            let before: Vec<u64> = request.iter().map(|&(key, _)| stored[key]).collect();
            let counted = decide(&hits, &before, spending);
            if spending == Spending::AllOrNothing && counted.iter().any(|c| c.over) {
                prop_assert!(counted.iter().all(|c| c.after == c.before));
            }
            for (&(key, _), counted) in request.iter().zip(&counted) {
                stored[key] = counted.after;
            }
            if counted.iter().all(|c| !c.over) {
                for &(key, hits) in &request {
                    admitted[key] += hits;
                }
            }
        }
        for key in 0..3 {
            prop_assert!(admitted[key] <= limits[key], "key {key}: {admitted:?}");
        }
    }
}
