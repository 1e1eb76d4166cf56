//! The service's visit flush over more links than one write carries (`FLUSH_BATCH`):
//! written in several writes, every visit of every link.

use shortener_core::{
    Alias, AlphabetCodeGenerator, CreateLink, Domain, LinkOptions, LinkRepository, Shortener, Tags,
    TargetUrl, Visitor,
};
use shortener_memory::MemoryRepository;
use time::OffsetDateTime;

fn request(alias: &str) -> CreateLink {
    CreateLink {
        domain: Domain::default(),
        url: TargetUrl::parse("https://example.com/target").unwrap(),
        alias: Some(Alias::parse(alias).unwrap()),
        expires_at: None,
        max_visits: None,
        owner: None,
        tags: Tags::default(),
        options: LinkOptions::default(),
    }
}

/// Visits of more links than one write carries are flushed in several, all of them.
#[tokio::test]
async fn a_flush_over_many_links_writes_every_visit() {
    let generator = AlphabetCodeGenerator::new("abcdefghijklmnopqrstuvwxyz", 7).unwrap();
    let shortener = Shortener::new(MemoryRepository::default(), generator);
    let now = OffsetDateTime::now_utc();
    let mut keys = Vec::new();
    for i in 0..2500 {
        let link = shortener
            .create(request(&format!("many{i}")), now)
            .await
            .unwrap();
        shortener
            .resolve(&link.key(), now, Some(Visitor::Person))
            .await
            .unwrap();
        keys.push(link.key());
    }
    assert_eq!(shortener.flush_visits().await.unwrap(), 2500);
    for key in &keys {
        let stored = shortener.repository().get(key).await.unwrap().unwrap();
        assert_eq!(stored.visits, 1, "{key:?}");
    }
    assert_eq!(shortener.flush_visits().await.unwrap(), 0);
}
