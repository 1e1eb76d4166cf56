//! Scenarios of link management for any [`LinkRepository`]: ownership, edits,
//! listings and visit statistics.
//!
//! Listings are scoped to an owner drawn at random, so these scenarios can share a
//! database with every other one.

use shortener_core::{
    Access, Link, LinkOptions, LinkPatch, LinkRepository, ListCursor, ListQuery, NewLink, Owner,
    ShortCode,
};
use time::{Duration, OffsetDateTime};

use crate::repository::{key, new_link, now_micros, random_code, tally, url, visits};

/// A patch changes what it names, `Some(None)` clears, and visits stay.
pub async fn update_changes_named_fields_only(repo: &impl LinkRepository) {
    let owner = random_owner();
    let mut link = owned(&owner, 0);
    link.max_visits = Some(9);
    let code = link.code.clone();
    repo.insert(link.clone()).await.expect("insert");
    repo.add_visits(&[tally(&code, now_micros().date(), 4, 0)])
        .await
        .expect("add_visits");
    let later = now_micros() + Duration::days(2);
    let patch = LinkPatch {
        url: Some(url("https://example.org/fixed")),
        expires_at: Some(Some(later)),
        ..LinkPatch::default()
    };
    let updated = repo
        .update(&key(&code), Access::Owner(&owner), &patch)
        .await
        .expect("update")
        .expect("the owner reaches the link");
    assert_eq!(updated.url, url("https://example.org/fixed"));
    assert_eq!(updated.expires_at, Some(later));
    assert_eq!(updated.max_visits, Some(9), "an absent field stays");
    assert_eq!(updated.created_at, link.created_at);
    assert_eq!(
        repo.get_fresh(&key(&code)).await.expect("get"),
        Some(updated)
    );
    let clear = LinkPatch {
        expires_at: Some(None),
        max_visits: Some(None),
        ..LinkPatch::default()
    };
    let cleared = repo
        .update(&key(&code), Access::All, &clear)
        .await
        .expect("update")
        .expect("admin reaches the link");
    assert_eq!((cleared.expires_at, cleared.max_visits), (None, None));
    assert_eq!(
        cleared.visits, 0,
        "a link with max_visits kept no total in the flush"
    );
    assert_eq!(
        repo.update(&key(&random_code()), Access::All, &clear)
            .await
            .expect("update"),
        None
    );
}

/// Another owner's link, or an anonymous one, is out of reach: not updated, not deleted.
pub async fn update_and_delete_stay_within_access(repo: &impl LinkRepository) {
    let (me, other) = (random_owner(), random_owner());
    let mine = owned(&me, 0);
    let anonymous = new_link(random_code());
    repo.insert(mine.clone()).await.expect("insert");
    repo.insert(anonymous.clone()).await.expect("insert");
    let patch = LinkPatch {
        url: Some(url("https://evil.example/")),
        ..LinkPatch::default()
    };
    for code in [&mine.code, &anonymous.code] {
        assert_eq!(
            repo.update(&key(code), Access::Owner(&other), &patch)
                .await
                .expect("update"),
            None
        );
        assert!(
            !repo
                .delete(&key(code), Access::Owner(&other))
                .await
                .expect("delete")
        );
    }
    assert!(
        !repo
            .delete(&anonymous.key(), Access::Owner(&me))
            .await
            .expect("delete")
    );
    assert_eq!(
        repo.get(&mine.key()).await.expect("get"),
        Some(mine.clone().into_link())
    );
    assert!(
        repo.delete(&mine.key(), Access::Owner(&me))
            .await
            .expect("delete")
    );
    assert!(
        repo.delete(&anonymous.key(), Access::All)
            .await
            .expect("delete")
    );
}

/// Listings are newest first (ties by code, descending), one owner's only, paged by
/// cursor without repeats or gaps, and filtered by code or URL text, ASCII case ignored.
pub async fn list_pages_newest_first_within_owner(repo: &impl LinkRepository) {
    let (owner, other) = (random_owner(), random_owner());
    let mut expected = Vec::new();
    let mut needle = None;
    for index in 0..25 {
        // Pairs share a creation time, so that the tie-break by code is exercised.
        let mut link = owned(&owner, index / 2);
        if index == 7 {
            link.url = url("https://example.com/Needle/x");
            needle = Some(link.code.clone());
        }
        expected.push(repo.insert(link).await.expect("insert"));
        repo.insert(owned(&other, index)).await.expect("insert");
    }
    repo.insert(new_link(random_code())).await.expect("insert");
    expected.sort_by(|a, b| (b.created_at, &b.code).cmp(&(a.created_at, &a.code)));

    let walked = walk(repo, Access::Owner(&owner), 10, None).await;
    assert_eq!(walked, expected, "every link once, newest first");

    let found = walk(repo, Access::Owner(&owner), 10, Some("nEEDle")).await;
    let needle = needle.expect("a needle was inserted");
    assert_eq!(
        found.iter().map(|link| &link.code).collect::<Vec<_>>(),
        vec![&needle]
    );
    let by_code = expected[4].code.as_str().to_ascii_uppercase();
    let found = walk(repo, Access::Owner(&owner), 10, Some(&by_code)).await;
    assert!(found.contains(&expected[4]), "a code matches its own text");
    assert!(found.iter().all(|link| link.owner.as_ref() == Some(&owner)));
}

/// A page asked for by number skips `offset` matching links in listing order, and
/// `count` is how many match the filters, whatever the offset and limit, and their visits.
pub async fn pages_by_number_skip_and_count_what_matches(repo: &impl LinkRepository) {
    let (owner, other) = (random_owner(), random_owner());
    let tagged = shortener_core::Tags::parse(["paged"]).expect("a tag");
    let mut expected = Vec::new();
    for index in 0..12 {
        let mut link = owned(&owner, index);
        if index % 3 == 0 {
            link.tags = tagged.clone();
        }
        expected.push(repo.insert(link).await.expect("insert"));
        repo.insert(owned(&other, index)).await.expect("insert");
    }
    let query = |offset: usize, limit: usize| ListQuery {
        order: shortener_core::ListOrder::Newest,
        offset,
        after: None,
        limit,
        search: None,
        tags: shortener_core::Tags::default(),
        domain: None,
        within: shortener_core::ListWithin::default(),
    };
    let access = Access::Owner(&owner);
    let page = repo.list(access, &query(3, 4)).await.expect("list");
    assert_eq!(page, expected[3..7], "the 4th to the 7th newest");
    let past = repo.list(access, &query(12, 4)).await.expect("list");
    assert!(past.is_empty(), "nothing past the end");
    repo.add_visits(&[tally(&expected[2].code, now_micros().date(), 3, 1)])
        .await
        .expect("add_visits");
    let totals = repo.count(access, &query(5, 1)).await.expect("count");
    assert_eq!(
        (totals.links, totals.visits, totals.bots),
        (12, 3, 1),
        "bots are counted apart"
    );
    let mut by_tag = query(1, 1);
    by_tag.tags = tagged;
    assert_eq!(repo.count(access, &by_tag).await.expect("count").links, 4);
    let page = repo.list(access, &by_tag).await.expect("list");
    assert_eq!(page, [expected[3].clone()], "the second tagged link");
    let mut by_code = query(0, 1);
    by_code.search = Some(expected[5].code.as_str().to_ascii_lowercase());
    assert_eq!(repo.count(access, &by_code).await.expect("count").links, 1);
    let everyone = (repo.count(Access::All, &query(0, 1)).await.expect("count")).links;
    assert!(everyone >= 24, "every owner's links: {everyone}");
}

/// Links created during a walk never make it repeat or skip a link that existed when it
/// began, whether they sort before the cursor (newer) or among the rest (a clock behind).
pub async fn list_walk_survives_concurrent_inserts(repo: &impl LinkRepository) {
    let owner = random_owner();
    let mut before = Vec::new();
    for index in 0..25 {
        before.push(repo.insert(owned(&owner, index)).await.expect("insert"));
    }
    let mut seen: Vec<Link> = Vec::new();
    let mut cursor = None;
    let mut extra = 0;
    loop {
        let page = repo
            .list(
                Access::Owner(&owner),
                &ListQuery {
                    order: shortener_core::ListOrder::Newest,
                    offset: 0,
                    after: cursor.clone(),
                    limit: 10,
                    search: None,
                    tags: shortener_core::Tags::default(),
                    domain: None,
                    within: shortener_core::ListWithin::default(),
                },
            )
            .await
            .expect("list");
        let Some(last) = page.last() else { break };
        cursor = Some(ListCursor::after(last));
        seen.extend(page);
        for _ in 0..5 {
            // Newer than everything, and one as old as the middle of the walk.
            let age = if extra % 2 == 0 { -1 } else { 12 };
            repo.insert(owned(&owner, age)).await.expect("insert");
            extra += 1;
        }
    }
    for link in &before {
        assert_eq!(
            seen.iter().filter(|s| s.code == link.code).count(),
            1,
            "{} appears exactly once",
            link.code
        );
    }
    let mut codes: Vec<_> = seen.iter().map(|link| &link.code).collect();
    codes.dedup();
    assert_eq!(codes.len(), seen.len(), "no link twice");
}

/// Visits add up per day, people and bots apart; people add to the total of links
/// without `max_visits` only; a range selects days; a delete takes the days with it.
pub async fn visits_by_day_add_up_and_go_with_the_link(repo: &impl LinkRepository) {
    let (plain, limited) = (new_link(random_code()), {
        let mut link = new_link(random_code());
        link.max_visits = Some(100);
        link
    });
    repo.insert(plain.clone()).await.expect("insert");
    repo.insert(limited.clone()).await.expect("insert");
    let today = now_micros().date();
    let yesterday = today.previous_day().expect("a day before");
    let mut batch = vec![
        tally(&plain.code, yesterday, 2, 1),
        tally(&plain.code, today, 3, 0),
        tally(&limited.code, today, 1, 4),
    ];
    batch.sort_by(|a, b| (&a.key, a.day).cmp(&(&b.key, b.day)));
    repo.add_visits(&batch).await.expect("add_visits");
    repo.add_visits(&[tally(&plain.code, today, 1, 2)])
        .await
        .expect("add_visits");
    assert_eq!(visits(repo, &plain.code).await, 6);
    assert_eq!(visits(repo, &limited.code).await, 0);
    let days = repo
        .visits_by_day(&plain.key(), yesterday, today)
        .await
        .expect("visits_by_day");
    let pairs: Vec<_> = days.iter().map(|d| (d.day, d.visits, d.bots)).collect();
    assert_eq!(pairs, vec![(yesterday, 2, 1), (today, 4, 2)]);
    let only_today = repo
        .visits_by_day(&plain.key(), today, today)
        .await
        .expect("visits_by_day");
    assert_eq!(only_today.len(), 1);
    let limited_days = repo
        .visits_by_day(&limited.key(), yesterday, today)
        .await
        .expect("visits_by_day");
    assert_eq!(
        (limited_days[0].visits, limited_days[0].bots),
        (1, 4),
        "a limited link still has its day"
    );
    assert!(
        repo.delete(&plain.key(), Access::All)
            .await
            .expect("delete")
    );
    repo.insert(plain.clone()).await.expect("insert again");
    assert!(
        repo.visits_by_day(&plain.key(), yesterday, today)
            .await
            .expect("visits_by_day")
            .is_empty(),
        "a new link under an old code starts without the old one's days"
    );
}

/// Walks a whole listing in pages of `limit`.
async fn walk(
    repo: &impl LinkRepository,
    access: Access<'_>,
    limit: usize,
    search: Option<&str>,
) -> Vec<Link> {
    let mut all = Vec::new();
    let mut after = None;
    loop {
        let query = ListQuery {
            order: shortener_core::ListOrder::Newest,
            offset: 0,
            after,
            limit,
            search: search.map(str::to_owned),
            tags: shortener_core::Tags::default(),
            domain: None,
            within: shortener_core::ListWithin::default(),
        };
        let page = repo.list(access, &query).await.expect("list");
        assert!(page.len() <= limit);
        let Some(last) = page.last() else {
            return all;
        };
        after = Some(ListCursor::after(last));
        all.extend(page);
    }
}

pub(crate) fn random_owner() -> Owner {
    Owner::parse(&format!("key-{}", random_code())).expect("a valid owner")
}

/// A link of `owner`, created `age` minutes before now.
pub(crate) fn owned(owner: &Owner, age: i64) -> NewLink {
    let code: ShortCode = random_code();
    NewLink {
        domain: shortener_core::Domain::default(),
        url: url(&format!("https://example.com/{code}")),
        code,
        created_at: minutes_ago(age),
        expires_at: None,
        max_visits: None,
        owner: Some(owner.clone()),
        tags: shortener_core::Tags::default(),
        options: LinkOptions::default(),
    }
}

pub(crate) fn minutes_ago(age: i64) -> OffsetDateTime {
    // A fixed base, so that links of one scenario share creation times exactly.
    let base = now_micros()
        .replace_second(0)
        .and_then(|at| at.replace_nanosecond(0))
        .expect("a valid time");
    base - Duration::minutes(age)
}
