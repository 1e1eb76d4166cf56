//! Scenarios of each link's own redirect options for any [`LinkRepository`]: stored and
//! edited like every other field, the crawlable ones listed for `/robots.txt`, titles
//! matched by a listing's search, a password's hash set, replaced and removed, and the
//! orders a listing may ask for.

use shortener_core::{
    Access, LinkOptions, LinkPatch, LinkRepository, ListOrder, ListQuery, RedirectStatus, Title,
};

use crate::manage::{owned, random_owner};
use crate::repository::{every_option, key, new_link, password_hash, random_code, rules};

/// A limit above every crawlable link of a test database.
const ALL: usize = 1 << 30;

/// A patch sets the options it names, leaves the others, and `Some(None)` clears one.
pub async fn options_are_edited_like_every_field(repo: &impl LinkRepository) {
    let mut link = new_link(random_code());
    link.options = every_option();
    let code = link.code.clone();
    repo.insert(link).await.expect("insert");
    let patch = LinkPatch {
        redirect_status: Some(Some(RedirectStatus::MovedPermanently)),
        title: Some(None),
        crawlable: Some(false),
        password: Some(Some(password_hash("b3RoZXJzYWx0"))),
        ..LinkPatch::default()
    };
    let updated = repo
        .update(&key(&code), Access::All, &patch)
        .await
        .expect("update");
    let updated = updated.expect("the link is there");
    let expected = LinkOptions {
        redirect_status: Some(RedirectStatus::MovedPermanently),
        title: None,
        crawlable: false,
        password: Some(password_hash("b3RoZXJzYWx0")),
        ..every_option()
    };
    assert_eq!(
        updated.options, expected,
        "named options change, the others stay"
    );
    let replaced = rules(&[r#"{"conditions": [{"type": "language", "value": "fr"}],
        "url": "https://example.fr/"}"#]);
    let patch = LinkPatch {
        rules: Some(replaced.clone()),
        ..LinkPatch::default()
    };
    let updated = (repo.update(&key(&code), Access::All, &patch).await)
        .expect("update")
        .expect("the link is there");
    assert_eq!(updated.options.rules, replaced, "rules are replaced whole");
    assert_eq!(updated.options.title, None, "and nothing else changes");
    let clear = LinkPatch {
        redirect_status: Some(None),
        forward_query: Some(None),
        expired_url: Some(None),
        password: Some(None),
        rules: Some(shortener_core::rules::Rules::default()),
        ..LinkPatch::default()
    };
    let cleared = repo
        .update(&key(&code), Access::All, &clear)
        .await
        .expect("update");
    let cleared = cleared.expect("the link is there");
    assert_eq!(cleared.options, LinkOptions::default());
    assert_eq!(
        repo.get_fresh(&key(&code)).await.expect("get"),
        Some(cleared)
    );
}

/// The crawlable links are listed in code order, up to the limit; a link that stops
/// being crawlable leaves the list.
pub async fn crawlable_links_are_listed_in_code_order(repo: &impl LinkRepository) {
    let mut marked = Vec::new();
    for crawlable in [true, false, true] {
        let mut link = new_link(random_code());
        link.options.crawlable = crawlable;
        repo.insert(link.clone()).await.expect("insert");
        if crawlable {
            marked.push(link.code);
        }
    }
    // Other scenarios share the database: only this one's codes are looked at.
    let listed = repo
        .crawlable(&shortener_core::Domain::default(), ALL)
        .await
        .expect("crawlable");
    assert!(listed.is_sorted(), "in code order");
    for code in &marked {
        assert!(listed.contains(code), "{code} is crawlable");
    }
    assert!(
        repo.crawlable(&shortener_core::Domain::default(), 1)
            .await
            .expect("crawlable")
            .len()
            <= 1
    );
    let patch = LinkPatch {
        crawlable: Some(false),
        ..LinkPatch::default()
    };
    repo.update(&key(&marked[0]), Access::All, &patch)
        .await
        .expect("update");
    let listed = repo
        .crawlable(&shortener_core::Domain::default(), ALL)
        .await
        .expect("crawlable");
    assert!(!listed.contains(&marked[0]), "no longer crawlable");
    assert!(listed.contains(&marked[1]));
}

/// A listing's search matches a link's title as it matches its code and URL, ASCII case
/// ignored.
pub async fn search_matches_titles(repo: &impl LinkRepository) {
    let owner = random_owner();
    let mut titled = owned(&owner, 0);
    titled.options.title = Some(Title::parse("Quarterly Report").expect("a valid title"));
    let untitled = owned(&owner, 1);
    repo.insert(titled.clone()).await.expect("insert");
    repo.insert(untitled).await.expect("insert");
    let query = ListQuery {
        order: shortener_core::ListOrder::Newest,
        offset: 0,
        after: None,
        limit: 10,
        search: Some("rterly rep".to_owned()),
        tags: shortener_core::Tags::default(),
        domain: None,
        within: shortener_core::ListWithin::default(),
    };
    let found = repo
        .list(Access::Owner(&owner), &query)
        .await
        .expect("list");
    let codes: Vec<_> = found.iter().map(|link| &link.code).collect();
    assert_eq!(codes, [&titled.code]);
}

/// A listing in each order: oldest first, and by visits (most or fewest first, ties
/// newest first), paged by offset to the same sequence.
pub async fn listings_are_ordered_by_age_and_visits(repo: &impl LinkRepository) {
    let owner = random_owner();
    let mut links = Vec::new();
    for (age, visits) in [(5, 2), (4, 0), (3, 5), (2, 2), (1, 0), (0, 1)] {
        let link = repo.insert(owned(&owner, age)).await.expect("insert");
        if visits > 0 {
            let day = crate::repository::now_micros().date();
            let tally = crate::repository::tally(&link.code, day, visits, 0);
            repo.add_visits(&[tally]).await.expect("add_visits");
        }
        links.push(link.code);
    }
    let query = |order, offset| ListQuery {
        order,
        offset,
        after: None,
        limit: 4,
        search: None,
        tags: shortener_core::Tags::default(),
        domain: None,
        within: shortener_core::ListWithin::default(),
    };
    let access = Access::Owner(&owner);
    let in_order = |order| async move {
        let mut codes = Vec::new();
        for offset in [0, 4] {
            let page = repo
                .list(access, &query(order, offset))
                .await
                .expect("list");
            codes.extend(page.into_iter().map(|link| (link.code, link.visits)));
        }
        codes
    };
    let newest = in_order(ListOrder::Newest).await;
    let by_age: Vec<_> = newest.iter().map(|(code, _)| code.clone()).collect();
    assert_eq!(by_age, links.iter().rev().cloned().collect::<Vec<_>>());
    let mut oldest = newest.clone();
    oldest.reverse();
    assert_eq!(in_order(ListOrder::Oldest).await, oldest, "oldest first");
    // A stable sort keeps the newest-first order among equal counts.
    let mut most = newest.clone();
    most.sort_by_key(|(_, visits)| std::cmp::Reverse(*visits));
    assert_eq!(
        in_order(ListOrder::MostVisited).await,
        most,
        "most visited first"
    );
    let mut least = newest;
    least.sort_by_key(|(_, visits)| *visits);
    assert_eq!(
        in_order(ListOrder::LeastVisited).await,
        least,
        "least visited first"
    );
    let visits: Vec<u64> = most.iter().map(|(_, visits)| *visits).collect();
    assert_eq!(visits, [5, 2, 2, 1, 0, 0], "the visits were counted");
}
