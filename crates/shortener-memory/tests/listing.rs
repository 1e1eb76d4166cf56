//! The listing cursor as a property: whatever the interleaving of inserts and page
//! reads, a walk never yields a link twice and yields every link that existed before
//! it began; filtered by tags, it yields only the links that have every one, and all of
//! those that existed.

use std::collections::HashSet;

use proptest::prelude::*;
use shortener_core::{
    Access, Domain, LinkRepository, ListCursor, ListQuery, NewLink, Owner, ShortCode, Tags,
    TargetUrl,
};
use shortener_memory::MemoryRepository;
use time::{Duration, OffsetDateTime};

#[derive(Debug, Clone)]
enum Step {
    /// A link created this many seconds after the base time (negative: a node whose
    /// clock is behind, or a create that took long), with a small code so ties happen,
    /// on one of three domains.
    Insert { offset: i64, code: u16, domain: u8 },
    /// The next page of the walk.
    Page { limit: usize },
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        (-20i64..40, 0u16..400, 0u8..3).prop_map(|(offset, code, domain)| Step::Insert {
            offset,
            code,
            domain
        }),
        (1usize..6).prop_map(|limit| Step::Page { limit }),
    ]
}

/// A link of `owner`, `offset` seconds after a base time, with code `c{code}`, on the
/// default domain (`domain` 0) or one of two others: the same code at the same time on
/// two domains is told apart by its domain alone.
fn link(owner: &Owner, offset: i64, code: u16, domain: u8) -> NewLink {
    let base = OffsetDateTime::from_unix_timestamp(1_800_000_000).unwrap();
    let tags = tags_of(code);
    let code = ShortCode::parse(&format!("c{code}")).unwrap();
    NewLink {
        domain: match domain {
            0 => Domain::default(),
            other => Domain::parse(&format!("d{other}.example")).unwrap(),
        },
        url: TargetUrl::parse(&format!("https://example.com/{code}")).unwrap(),
        code,
        created_at: base + Duration::seconds(offset),
        expires_at: None,
        max_visits: None,
        owner: Some(owner.clone()),
        tags,
        options: shortener_core::LinkOptions::default(),
    }
}

/// Tags drawn from the code, so that some links have one, some both, some none.
fn tags_of(code: u16) -> Tags {
    let red = code.is_multiple_of(3).then_some("red");
    let blue = code.is_multiple_of(2).then_some("blue");
    Tags::parse(red.into_iter().chain(blue)).unwrap()
}

/// The filters a walk may take: none, one tag, two tags.
const FILTERS: [&[&str]; 3] = [&[], &["red"], &["blue", "red"]];

proptest! {
    #[test]
    fn walks_never_repeat_and_never_miss_what_existed(
        before in prop::collection::vec((-20i64..20, 0u16..40, 0u8..3), 0..40),
        steps in prop::collection::vec(step(), 0..60),
        filter in 0..FILTERS.len(),
    ) {
        let wanted = Tags::parse(FILTERS[filter].iter().copied()).unwrap();
        let runtime = tokio::runtime::Builder::new_current_thread().build().unwrap();
        runtime.block_on(async {
            let repo = MemoryRepository::default();
            let owner = Owner::parse("walker").unwrap();
            let mut existed = HashSet::new();
            for (offset, code, domain) in before {
                // A taken code is refused and stays out of `existed`.
                if let Ok(link) = repo.insert(link(&owner, offset, code, domain)).await
                    && link.tags.contains_all(&wanted)
                {
                    existed.insert(link.key());
                }
            }
            let mut seen = HashSet::new();
            let mut cursor: Option<ListCursor> = None;
            let mut done = false;
            let page = |cursor: Option<ListCursor>, limit| {
                let query = ListQuery {  order: shortener_core::ListOrder::Newest,offset: 0, after: cursor, limit, search: None, tags: wanted.clone(), domain: None, within: shortener_core::ListWithin::default() };
                let repo = &repo;
                let owner = owner.clone();
                async move { repo.list(Access::Owner(&owner), &query).await.unwrap() }
            };
            let mut read = |items: Vec<shortener_core::Link>, cursor: &mut Option<ListCursor>| {
                for item in &items {
                    prop_assert!(seen.insert(item.key()), "{} twice", item.key());
                    prop_assert!(item.tags.contains_all(&wanted), "{} has not every tag", item.code);
                }
                match items.last() {
                    Some(last) => *cursor = Some(ListCursor::after(last)),
                    None => return Ok(true),
                }
                Ok(false)
            };
            for step in steps {
                match step {
                    Step::Insert { offset, code, domain } => {
                        let _ = repo.insert(link(&owner, offset, code, domain)).await;
                    }
                    Step::Page { limit } if !done => {
                        let items = page(cursor.clone(), limit).await;
                        done = read(items, &mut cursor)?;
                    }
                    Step::Page { .. } => {}
                }
            }
            while !done {
                let items = page(cursor.clone(), 7).await;
                done = read(items, &mut cursor)?;
            }
            let missed: Vec<_> = existed.difference(&seen).collect();
            prop_assert!(missed.is_empty(), "missed {missed:?}");
            Ok(())
        })?;
    }
}
