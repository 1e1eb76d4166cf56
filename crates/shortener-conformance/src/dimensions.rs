//! Scenarios of visits per dimension value for any [`LinkRepository`]: counts added up
//! over flushes and days, at most `top_values` values per link, day and dimension (the
//! rest as `other`, across flushes too), top values of one link or of an owner's links
//! (with every tag asked for),
//! unknown links skipped, and rows that go with their link.

use shortener_core::{
    Access, Dimension, DimensionTally, LinkKey, LinkRepository, OTHER, Tags, TopQuery, ValueCount,
    VisitScope,
};
use time::Date;
use time::macros::date;

use crate::manage::{owned, random_owner};
use crate::repository::key;

const DAY: Date = date!(2026 - 12 - 01);
const NEXT_DAY: Date = date!(2026 - 12 - 02);

fn tally(
    key: &LinkKey,
    day: Date,
    dimension: Dimension,
    value: &str,
    visits: u64,
) -> DimensionTally {
    DimensionTally {
        key: key.clone(),
        day,
        dimension,
        value: value.to_owned(),
        visits,
    }
}

async fn top(
    repo: &impl LinkRepository,
    scope: VisitScope<'_>,
    dimension: Dimension,
    (from, to): (Date, Date),
) -> Vec<(String, u64)> {
    let query = TopQuery {
        scope,
        dimension,
        from,
        to,
        limit: 100,
    };
    let values = repo.top_values(&query).await.expect("top_values");
    (values.into_iter())
        .map(|ValueCount { value, visits }| (value, visits))
        .collect()
}

fn pairs(expected: &[(&str, u64)]) -> Vec<(String, u64)> {
    (expected.iter())
        .map(|(value, visits)| ((*value).to_owned(), *visits))
        .collect()
}

/// Counts add up over flushes and days; a link's values beyond the cap go to `other`,
/// however many flushes bring them; an owner's links are summed; a deleted link's rows
/// go with it.
pub async fn dimensions_are_counted_capped_and_summed(repo: &impl LinkRepository) {
    let owner = random_owner();
    let (first, mut second) = (owned(&owner, 0), owned(&owner, 1));
    second.tags = Tags::parse(["launch"]).expect("tags");
    let any = Tags::default();
    let stranger = owned(&random_owner(), 2);
    for link in [&first, &second, &stranger] {
        repo.insert(link.clone()).await.expect("insert");
    }
    let (a, b, c) = (key(&first.code), key(&second.code), key(&stranger.code));
    let unknown = key(&crate::repository::random_code());
    let referrer = Dimension::Referrer;
    repo.add_dimensions(
        &[
            tally(&a, DAY, referrer, "x.example", 3),
            tally(&a, DAY, referrer, "y.example", 1),
            tally(&a, NEXT_DAY, referrer, "x.example", 2),
            tally(&a, DAY, Dimension::Browser, "Firefox", 4),
            tally(&b, DAY, referrer, "y.example", 5),
            tally(&c, DAY, referrer, "z.example", 7),
            tally(&unknown, DAY, referrer, "x.example", 9),
        ],
        3,
    )
    .await
    .expect("add_dimensions");
    let both_days = (DAY, NEXT_DAY);
    assert_eq!(
        top(repo, VisitScope::Link(&a), referrer, both_days).await,
        pairs(&[("x.example", 5), ("y.example", 1)])
    );
    assert_eq!(
        top(repo, VisitScope::Link(&a), referrer, (NEXT_DAY, NEXT_DAY)).await,
        pairs(&[("x.example", 2)])
    );
    assert_eq!(
        top(repo, VisitScope::Link(&a), Dimension::Browser, both_days).await,
        pairs(&[("Firefox", 4)])
    );
    // Every dimension is stored and read as its own, the redirect rule's and the split
    // variant's as well.
    let every: Vec<DimensionTally> = (Dimension::ALL.iter())
        .map(|&dimension| tally(&c, NEXT_DAY, dimension, dimension.as_str(), 2))
        .collect();
    repo.add_dimensions(&every, 3)
        .await
        .expect("add_dimensions");
    for dimension in Dimension::ALL {
        assert_eq!(
            top(repo, VisitScope::Link(&c), dimension, (NEXT_DAY, NEXT_DAY)).await,
            pairs(&[(dimension.as_str(), 2)]),
            "{dimension}"
        );
    }
    // A later flush: one free place left on `a`'s first day, then `other`; a stored value
    // keeps counting as itself.
    let flood: Vec<DimensionTally> = (0..10)
        .map(|n| tally(&a, DAY, referrer, &format!("h{n}.example"), 1))
        .chain([tally(&a, DAY, referrer, "y.example", 1)])
        .collect();
    repo.add_dimensions(&flood, 3)
        .await
        .expect("add_dimensions");
    repo.add_dimensions(&[tally(&a, DAY, referrer, "h9.example", 1)], 3)
        .await
        .expect("add_dimensions");
    assert_eq!(
        top(repo, VisitScope::Link(&a), referrer, (DAY, DAY)).await,
        pairs(&[
            (OTHER, 10),
            ("x.example", 3),
            ("y.example", 2),
            ("h0.example", 1)
        ])
    );
    // Every link of the owner, and every link at all.
    assert_eq!(
        top(
            repo,
            VisitScope::Within(Access::Owner(&owner), &any),
            referrer,
            (DAY, DAY)
        )
        .await,
        pairs(&[
            (OTHER, 10),
            ("y.example", 7),
            ("x.example", 3),
            ("h0.example", 1)
        ])
    );
    let everyone = top(
        repo,
        VisitScope::Within(Access::All, &any),
        referrer,
        (DAY, DAY),
    )
    .await;
    assert!(
        everyone.contains(&("z.example".to_owned(), 7)),
        "{everyone:?}"
    );
    // Only the links with every tag asked for: `second` has one of them.
    let tagged = Tags::parse(["launch"]).expect("tags");
    let both = Tags::parse(["launch", "q4"]).expect("tags");
    let within = |tags| VisitScope::Within(Access::All, tags);
    assert_eq!(
        top(repo, within(&tagged), referrer, (DAY, DAY)).await,
        pairs(&[("y.example", 5)])
    );
    assert_eq!(top(repo, within(&both), referrer, (DAY, DAY)).await, []);
    assert!(repo.delete(&a, Access::All).await.expect("delete"));
    assert_eq!(
        top(repo, VisitScope::Link(&a), referrer, both_days).await,
        []
    );
    assert_eq!(
        top(
            repo,
            VisitScope::Within(Access::Owner(&owner), &any),
            referrer,
            (DAY, DAY)
        )
        .await,
        pairs(&[("y.example", 5)])
    );
}

/// 100 000 distinct referrers over four flushes: storage keeps `top_values` of them and
/// `other`, and every visit is counted.
pub async fn a_flood_of_values_stays_bounded(repo: &impl LinkRepository) {
    const TOP: usize = 50;
    let link = owned(&random_owner(), 0);
    repo.insert(link.clone()).await.expect("insert");
    let a = key(&link.code);
    for flush in 0..4 {
        let flood: Vec<DimensionTally> = (0..25_000)
            .map(|n| {
                tally(
                    &a,
                    DAY,
                    Dimension::Referrer,
                    &format!("h{flush}-{n}.example"),
                    1,
                )
            })
            .collect();
        repo.add_dimensions(&flood, TOP)
            .await
            .expect("add_dimensions");
    }
    let stored = top(repo, VisitScope::Link(&a), Dimension::Referrer, (DAY, DAY)).await;
    assert_eq!(stored.len(), TOP + 1, "{stored:?}");
    assert_eq!(stored[0], (OTHER.to_owned(), 100_000 - TOP as u64));
    assert_eq!(
        stored.iter().map(|(_, visits)| visits).sum::<u64>(),
        100_000
    );
}

/// Flushes of several nodes at once, each bringing values the others do not have, keep
/// the cap: an adapter reads what is stored and writes what it placed against it in one
/// step, so no flush places a value in a free place that another one took meanwhile.
pub async fn concurrent_flushes_keep_the_cap(repo: &impl LinkRepository) {
    const TOP: usize = 5;
    const FLUSHES: usize = 8;
    let link = owned(&random_owner(), 0);
    repo.insert(link.clone()).await.expect("insert");
    let a = key(&link.code);
    let outcomes = shortener_testkit::concurrently(FLUSHES, |flush| {
        let tallies: Vec<DimensionTally> = (0..10)
            .map(|n| {
                tally(
                    &a,
                    DAY,
                    Dimension::Referrer,
                    &format!("n{flush}-{n}.example"),
                    1,
                )
            })
            .collect();
        async move { repo.add_dimensions(&tallies, TOP).await }
    })
    .await;
    assert!(outcomes.iter().all(Result::is_ok), "{outcomes:?}");
    let stored = top(repo, VisitScope::Link(&a), Dimension::Referrer, (DAY, DAY)).await;
    assert_eq!(stored.len(), TOP + 1, "{stored:?}");
    let total = 10 * FLUSHES as u64;
    assert_eq!(stored[0], (OTHER.to_owned(), total - TOP as u64));
}
