//! Scenarios of each link's own redirect options for any [`LinkRepository`]: stored and
//! edited like every other field, the crawlable ones listed for `/robots.txt`, titles
//! matched by a listing's search, a password's hash set, replaced and removed.

use shortener_core::{
    Access, LinkOptions, LinkPatch, LinkRepository, ListQuery, RedirectStatus, Title,
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
        offset: 0,
        after: None,
        limit: 10,
        search: Some("rterly rep".to_owned()),
        tags: shortener_core::Tags::default(),
        domain: None,
    };
    let found = repo
        .list(Access::Owner(&owner), &query)
        .await
        .expect("list");
    let codes: Vec<_> = found.iter().map(|link| &link.code).collect();
    assert_eq!(codes, [&titled.code]);
}
