//! Scenarios of tags for any [`LinkRepository`]: stored and replaced with the link,
//! listings filtered by every tag asked (with the cursor walking the filtered listing),
//! the counts of a caller's tags, renames and deletes of a tag over them, and listings
//! narrowed past their tags (any tag, creation range, live links).
//!
//! Each scenario tags the links of an owner drawn at random, so the counts it reads are
//! its own even in a shared database.

use shortener_core::{
    Access, LinkPatch, LinkRepository, ListCursor, ListOrder, ListQuery, ListWithin, Tags,
};

use crate::manage::{owned, random_owner};
use crate::repository::{key, tally};

fn tags(names: &[&str]) -> Tags {
    Tags::parse(names.iter().copied()).expect("valid tags")
}

/// Tags come back with the link, a listing by tags holds the links with every one of
/// them (page by page), and a patch replaces them whole.
pub async fn tags_are_stored_filtered_and_replaced(repo: &impl LinkRepository) {
    let owner = random_owner();
    let mut codes = Vec::new();
    for (age, names) in [
        &["q4", "launch"][..],
        &["q4"],
        &[],
        &["launch", "q4", "ads"],
    ]
    .into_iter()
    .enumerate()
    {
        let mut link = owned(&owner, i64::try_from(age).expect("small"));
        link.tags = tags(names);
        let inserted = repo.insert(link.clone()).await.expect("insert");
        assert_eq!(inserted.tags, link.tags);
        codes.push(link.code);
    }
    let found = repo
        .get(&key(&codes[3]))
        .await
        .expect("get")
        .expect("the link");
    assert_eq!(found.tags, tags(&["ads", "launch", "q4"]));

    // Newest first, in pages of one: the walk by cursor sees each match once.
    let mut seen = Vec::new();
    let mut after = None;
    loop {
        let query = ListQuery {
            order: shortener_core::ListOrder::Newest,
            offset: 0,
            after: after.clone(),
            limit: 1,
            search: None,
            tags: tags(&["LAUNCH", "q4"]),
            domain: None,
            within: shortener_core::ListWithin::default(),
        };
        let page = repo
            .list(Access::Owner(&owner), &query)
            .await
            .expect("list");
        let Some(last) = page.last() else { break };
        after = Some(ListCursor::after(last));
        seen.extend(page.into_iter().map(|link| link.code));
    }
    assert_eq!(seen, [codes[0].clone(), codes[3].clone()]);

    let patch = LinkPatch {
        tags: Some(tags(&["renamed"])),
        ..LinkPatch::default()
    };
    let updated = repo
        .update(&key(&codes[0]), Access::All, &patch)
        .await
        .expect("update");
    assert_eq!(updated.expect("the link").tags, tags(&["renamed"]));
    let cleared = LinkPatch {
        tags: Some(Tags::default()),
        ..LinkPatch::default()
    };
    let updated = repo
        .update(&key(&codes[0]), Access::All, &cleared)
        .await
        .expect("update");
    assert!(updated.expect("the link").tags.is_empty());
    let absent = LinkPatch {
        max_visits: Some(None),
        ..LinkPatch::default()
    };
    let updated = repo
        .update(&key(&codes[3]), Access::All, &absent)
        .await
        .expect("update");
    assert_eq!(
        updated.expect("the link").tags.as_slice().len(),
        3,
        "tags stay"
    );
}

/// A caller's tags, in order, with how many of its links have each and their visits;
/// another owner's links count for that owner only.
pub async fn tag_counts_are_the_caller_s(repo: &impl LinkRepository) {
    let (me, other) = (random_owner(), random_owner());
    let mut a = owned(&me, 0);
    a.tags = tags(&["b-tag", "a-tag"]);
    let mut b = owned(&me, 1);
    b.tags = tags(&["b-tag"]);
    let mut theirs = owned(&other, 0);
    theirs.tags = tags(&["b-tag", "z-tag"]);
    for link in [&a, &b, &theirs] {
        repo.insert(link.clone()).await.expect("insert");
    }
    let day = a.created_at.date();
    let visits = [tally(&a.code, day, 3, 9), tally(&b.code, day, 4, 0)];
    repo.add_visits(&visits).await.expect("add_visits");
    let counts = repo.tags(Access::Owner(&me)).await.expect("tags");
    let counts: Vec<(&str, u64, u64, u64)> = (counts.iter())
        .map(|count| (count.tag.as_str(), count.links, count.visits, count.bots))
        .collect();
    assert_eq!(
        counts,
        [("a-tag", 1, 3, 9), ("b-tag", 2, 7, 9)],
        "bots are counted apart"
    );
    let all = repo.tags(Access::All).await.expect("tags");
    assert!(all.iter().any(|count| count.tag.as_str() == "z-tag"));
    assert!(all.is_sorted_by(|x, y| x.tag <= y.tag), "in order");
}

/// A rename reaches every link of the caller that has the tag (a link that has both
/// names keeps one, in order) and no other owner's; a delete takes the tag off; each says
/// how many links changed.
pub async fn tags_are_renamed_and_deleted_within_the_caller_s_links(repo: &impl LinkRepository) {
    let (me, other) = (random_owner(), random_owner());
    let tag = |name: &str| shortener_core::Tag::parse(name).expect("a tag");
    let mut plain = owned(&me, 0);
    plain.tags = tags(&["old", "zz"]);
    let mut both = owned(&me, 1);
    both.tags = tags(&["new", "old"]);
    let mut untouched = owned(&me, 2);
    untouched.tags = tags(&["zz"]);
    let mut theirs = owned(&other, 0);
    theirs.tags = tags(&["old"]);
    for link in [&plain, &both, &untouched, &theirs] {
        repo.insert(link.clone()).await.expect("insert");
    }
    let tags_of = |code: &shortener_core::ShortCode| {
        let code = code.clone();
        async move {
            let link = repo.get(&key(&code)).await.expect("get").expect("a link");
            link.tags.names().map(str::to_owned).collect::<Vec<_>>()
        }
    };
    let renamed = (repo.rename_tag(Access::Owner(&me), &tag("old"), &tag("aa")))
        .await
        .expect("rename_tag");
    assert_eq!(renamed, 2);
    assert_eq!(
        tags_of(&plain.code).await,
        ["aa", "zz"],
        "renamed, in order"
    );
    assert_eq!(tags_of(&both.code).await, ["aa", "new"]);
    assert_eq!(tags_of(&untouched.code).await, ["zz"]);
    assert_eq!(tags_of(&theirs.code).await, ["old"], "another owner's");
    let merged = (repo.rename_tag(Access::Owner(&me), &tag("aa"), &tag("new")))
        .await
        .expect("rename_tag");
    assert_eq!(merged, 2);
    assert_eq!(tags_of(&both.code).await, ["new"], "both names: one kept");
    let deleted = (repo.delete_tag(Access::Owner(&me), &tag("zz")))
        .await
        .expect("delete_tag");
    assert_eq!(deleted, 2);
    assert_eq!(tags_of(&plain.code).await, ["new"]);
    assert!(tags_of(&untouched.code).await.is_empty());
    let none = (repo.delete_tag(Access::Owner(&me), &tag("absent")))
        .await
        .expect("delete_tag");
    assert_eq!(none, 0);
    let everyone = (repo.rename_tag(Access::All, &tag("old"), &tag("older")))
        .await
        .expect("rename_tag");
    assert!(everyone >= 1, "an admin reaches every owner's links");
    assert_eq!(tags_of(&theirs.code).await, ["older"]);
}

/// A listing narrowed past its tags ([`shortener_core::ListWithin`]): any of the tags
/// rather than every one, a creation range, links with visits left, links not expired;
/// the count agrees with the list each time.
pub async fn listings_narrow_by_any_tag_creation_and_live_links(repo: &impl LinkRepository) {
    let owner = random_owner();
    let now = crate::repository::now_micros();
    let mut codes = Vec::new();
    // (age in minutes, tags, max_visits, expired)
    for (age, names, max_visits, expired) in [
        (30, &["x"][..], None, false),
        (20, &["y"][..], None, false),
        (10, &["x", "y"][..], Some(1), false),
        (5, &[][..], None, true),
    ] {
        let mut link = owned(&owner, age);
        link.tags = tags(names);
        link.max_visits = max_visits;
        link.expires_at = expired.then(|| now - time::Duration::minutes(1));
        let link = repo.insert(link).await.expect("insert");
        codes.push(link.code);
    }
    // The third link's one visit uses it up (a limited link counts each visit as it
    // happens).
    repo.record_visit(&key(&codes[2]), now)
        .await
        .expect("record_visit");
    let access = Access::Owner(&owner);
    let codes = &codes;
    let listed = |query: ListQuery| async move {
        let page = repo.list(access, &query).await.expect("list");
        let count = repo.count(access, &query).await.expect("count").links;
        assert_eq!(count, page.len() as u64, "the count agrees with the list");
        page.into_iter()
            .map(|link| {
                codes
                    .iter()
                    .position(|code| *code == link.code)
                    .expect("ours")
            })
            .collect::<Vec<_>>()
    };
    let query = |wanted: &[&str], within: ListWithin| ListQuery {
        order: ListOrder::Newest,
        offset: 0,
        after: None,
        limit: 10,
        search: None,
        tags: tags(wanted),
        domain: None,
        within,
    };
    let any = ListWithin {
        any_tag: true,
        ..ListWithin::default()
    };
    assert_eq!(listed(query(&["x", "y"], any)).await, [2, 1, 0], "any tag");
    let every = ListWithin::default();
    assert_eq!(listed(query(&["x", "y"], every)).await, [2], "every tag");
    let range = ListWithin {
        created_from: Some(crate::manage::minutes_ago(25)),
        created_to: Some(crate::manage::minutes_ago(10)),
        ..ListWithin::default()
    };
    assert_eq!(listed(query(&[], range)).await, [2, 1], "created within");
    let left = ListWithin {
        with_visits_left: true,
        ..ListWithin::default()
    };
    assert_eq!(listed(query(&[], left)).await, [3, 1, 0], "visits left");
    let live = ListWithin {
        live_at: Some(now),
        ..ListWithin::default()
    };
    assert_eq!(listed(query(&[], live)).await, [2, 1, 0], "not expired");
}
