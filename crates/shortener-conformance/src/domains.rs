//! Scenarios of domains: a link belongs to one domain, and its code is unique there only;
//! the links to a target are found by domain and owner.

use shortener_core::{
    Access, Domain, InsertError, LinkKey, LinkPatch, LinkRepository, ListCursor, ListQuery,
    ShortCode, Tags,
};

use crate::manage::{owned, random_owner};
use crate::repository::{random_code, tally, url};

/// A domain no other scenario uses.
fn random_domain() -> Domain {
    let label = random_code()
        .as_str()
        .to_ascii_lowercase()
        .replace('_', "u");
    Domain::parse(&format!("d{label}.example")).expect("a valid host")
}

/// One code on three domains: each its own link for every operation (insert, batch
/// insert, get, get_many, update, visits, crawlable list, delete), and a listing tells
/// them apart, walking them one at a time by the cursor.
pub async fn codes_are_unique_per_domain(repo: &impl LinkRepository) {
    let owner = random_owner();
    let (go, other) = (random_domain(), random_domain());
    let mut on_default = owned(&owner, 0);
    let code = on_default.code.clone();
    let mut on_go = on_default.clone();
    on_go.domain = go.clone();
    on_go.url = url("https://example.org/go");
    on_go.options.crawlable = true;
    on_default.options.crawlable = true;
    repo.insert(on_default.clone())
        .await
        .expect("insert on the default domain");
    repo.insert(on_go.clone())
        .await
        .expect("the same code on another domain");
    assert_eq!(
        repo.insert(on_go.clone()).await,
        Err(InsertError::CodeTaken)
    );
    let mut on_other = on_default.clone();
    on_other.domain = other.clone();
    on_other.options.crawlable = false;
    let results = (repo.insert_many(vec![on_other.clone(), on_go.clone(), on_other.clone()]))
        .await
        .expect("insert_many");
    assert_eq!(
        results,
        vec![
            Ok(on_other.clone().into_link()),
            Err(InsertError::CodeTaken),
            Err(InsertError::CodeTaken)
        ]
    );

    let (default_key, go_key) = (on_default.key(), on_go.key());
    let unknown = LinkKey::new(random_domain(), code.clone());
    let found = repo.get(&go_key).await.expect("get").expect("the go link");
    assert_eq!(found, on_go.clone().into_link());
    assert_eq!(repo.get(&unknown).await.expect("get"), None);
    let many = (repo.get_many(&[go_key.clone(), unknown, default_key.clone()]))
        .await
        .expect("get_many");
    let expected = [
        Some(on_go.clone().into_link()),
        None,
        Some(on_default.clone().into_link()),
    ];
    assert_eq!(many, expected);

    let patch = LinkPatch {
        url: Some(url("https://example.org/edited")),
        ..LinkPatch::default()
    };
    let edited = repo
        .update(&go_key, Access::All, &patch)
        .await
        .expect("update");
    assert_eq!(edited.map(|link| link.url), patch.url.clone());
    let untouched = repo
        .get_fresh(&default_key)
        .await
        .expect("get")
        .expect("default");
    assert_eq!(untouched.url, on_default.url, "an edit stays on its domain");

    let mut visits = tally(&code, untouched.created_at.date(), 3, 1);
    visits.key = go_key.clone();
    repo.add_visits(&[visits]).await.expect("add_visits");
    let fresh = |key: LinkKey| async move {
        repo.get_fresh(&key)
            .await
            .expect("get")
            .expect("the link")
            .visits
    };
    assert_eq!(
        (
            fresh(go_key.clone()).await,
            fresh(default_key.clone()).await
        ),
        (3, 0)
    );
    let day = untouched.created_at.date();
    let days = repo
        .visits_by_day(&default_key, day, day)
        .await
        .expect("days");
    assert!(days.is_empty(), "visits stay with their domain's link");

    let crawlable = repo.crawlable(&go, 5_000).await.expect("crawlable");
    assert_eq!(crawlable, vec![code.clone()]);
    assert!(
        repo.crawlable(&other, 5_000)
            .await
            .expect("crawlable")
            .is_empty()
    );

    let mut query = ListQuery {
        order: shortener_core::ListOrder::Newest,
        offset: 0,
        after: None,
        limit: 10,
        search: None,
        tags: Tags::default(),
        domain: Some(go.clone()),
        within: shortener_core::ListWithin::default(),
    };
    let listed = repo
        .list(Access::Owner(&owner), &query)
        .await
        .expect("list");
    let listed: Vec<LinkKey> = listed.iter().map(|link| link.key()).collect();
    assert_eq!(listed, std::slice::from_ref(&go_key));
    // One page per link: the three share their creation time and code, so only the
    // domain orders them, and the cursor must carry it to go on past each.
    query.domain = None;
    query.limit = 1;
    let mut walked = Vec::new();
    loop {
        let page = repo
            .list(Access::Owner(&owner), &query)
            .await
            .expect("list");
        let Some(link) = page.into_iter().next() else {
            break;
        };
        query.after = Some(ListCursor::after(&link));
        walked.push(link.domain);
        assert!(walked.len() <= 3, "the walk repeats a link: {walked:?}");
    }
    let mut expected = vec![Domain::default(), go.clone(), other.clone()];
    expected.sort();
    expected.reverse();
    assert_eq!(
        walked, expected,
        "newest first, then code, then domain, descending"
    );

    assert!(repo.delete(&go_key, Access::All).await.expect("delete"));
    assert_eq!(repo.get(&go_key).await.expect("get"), None);
    assert!(repo.get(&default_key).await.expect("get").is_some());
    assert!(
        repo.visits_by_day(&go_key, day, day)
            .await
            .expect("days")
            .is_empty()
    );
}

/// The links to one target are found by domain and owner (or none), newest first, and
/// no other: another owner's, another domain's, another target's, a longer target that
/// starts with it.
pub async fn links_to_a_target_are_found_by_domain_and_owner(repo: &impl LinkRepository) {
    let (owner, other) = (random_owner(), random_owner());
    let target = url(&format!("https://example.com/find/{}", random_code()));
    let elsewhere = random_domain();
    let mut made = Vec::new();
    for (age, who, domain, to) in [
        (3, Some(&owner), Domain::default(), target.clone()),
        (1, Some(&owner), Domain::default(), target.clone()),
        (2, Some(&other), Domain::default(), target.clone()),
        (2, None, Domain::default(), target.clone()),
        (2, Some(&owner), elsewhere.clone(), target.clone()),
        (
            2,
            Some(&owner),
            Domain::default(),
            url(&format!("{}/more", target.as_str())),
        ),
    ] {
        let mut link = owned(&owner, age);
        link.owner = who.cloned();
        link.domain = domain;
        link.url = to;
        made.push(repo.insert(link).await.expect("insert").code);
    }
    let codes = |links: Vec<shortener_core::Link>| -> Vec<ShortCode> {
        links.into_iter().map(|link| link.code).collect()
    };
    let found = repo
        .links_to(&Domain::default(), Some(&owner), &target, 10)
        .await;
    assert_eq!(
        codes(found.expect("links_to")),
        [made[1].clone(), made[0].clone()],
        "newest first"
    );
    let newest = repo
        .links_to(&Domain::default(), Some(&owner), &target, 1)
        .await;
    assert_eq!(codes(newest.expect("links_to")), [made[1].clone()]);
    let nobody = repo.links_to(&Domain::default(), None, &target, 10).await;
    assert_eq!(
        codes(nobody.expect("links_to")),
        [made[3].clone()],
        "the links nobody owns"
    );
    let there = repo.links_to(&elsewhere, Some(&owner), &target, 10).await;
    assert_eq!(codes(there.expect("links_to")), [made[4].clone()]);
    let unknown = url(&format!("https://example.com/none/{}", random_code()));
    let none = repo
        .links_to(&Domain::default(), Some(&owner), &unknown, 10)
        .await;
    assert!(none.expect("links_to").is_empty());
}
