//! Scenarios for any [`KeyStore`]: keys made and read back whole, a name or a digest
//! taken once, revoked once (the first time stays), last use moving only forward, and
//! expiry read from what is stored.

use shortener_core::{KeyInsertError, KeyStore, Owner, StoredKey};
use time::{Duration, OffsetDateTime};

use crate::manage::random_owner;

/// Times as every store keeps them: whole microseconds.
fn instant(seconds: i64) -> OffsetDateTime {
    OffsetDateTime::from_unix_timestamp(1_800_000_000 + seconds).expect("a time")
        + Duration::microseconds(123_456)
}

fn key(name: &Owner, digest_byte: u8) -> StoredKey {
    let mut digest = [0u8; 32];
    digest[..8].copy_from_slice(&name.as_str().as_bytes()[..8.min(name.as_str().len())]);
    digest[31] = digest_byte;
    digest[16..24].copy_from_slice(&rand_bytes(name));
    StoredKey {
        name: name.clone(),
        digest,
        scopes: vec!["create".to_owned(), "read".to_owned()],
        owner: None,
        tier: None,
        created_at: instant(0),
        expires_at: None,
        revoked_at: None,
        last_used_at: None,
    }
}

/// Bytes that differ from one random name to the next, so that scenarios sharing a
/// database never make the same digest.
fn rand_bytes(name: &Owner) -> [u8; 8] {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in name.as_str().bytes() {
        hash = (hash ^ u64::from(byte)).wrapping_mul(0x0000_0100_0000_01b3);
    }
    hash.to_be_bytes()
}

fn find<'a>(keys: &'a [StoredKey], name: &Owner) -> Option<&'a StoredKey> {
    keys.iter().find(|key| key.name == *name)
}

/// A key is stored whole, its name and its digest taken once; revoked once; its last use
/// only moves forward; unknown names change nothing.
pub async fn keys_are_made_revoked_and_touched(store: &impl KeyStore) {
    let (name, owner) = (random_owner(), random_owner());
    let mut made = key(&name, 1);
    made.owner = Some(owner.clone());
    made.tier = Some("pro".to_owned());
    made.expires_at = Some(instant(86_400));
    store.insert_key(made.clone()).await.expect("insert_key");
    let keys = store.keys().await.expect("keys");
    assert_eq!(find(&keys, &name), Some(&made), "stored whole");

    let again = store.insert_key(key(&name, 2)).await;
    assert!(matches!(again, Err(KeyInsertError::NameTaken)), "{again:?}");
    let mut same_digest = key(&random_owner(), 9);
    same_digest.digest = made.digest;
    let twin = store.insert_key(same_digest).await;
    assert!(matches!(twin, Err(KeyInsertError::NameTaken)), "{twin:?}");

    let later = instant(60);
    store
        .touch_keys(&[(name.clone(), later), (random_owner(), later)])
        .await
        .expect("touch_keys");
    store
        .touch_keys(&[(name.clone(), instant(30))])
        .await
        .expect("touch_keys");
    let keys = store.keys().await.expect("keys");
    assert_eq!(
        find(&keys, &name).and_then(|key| key.last_used_at),
        Some(later)
    );

    assert!(store.revoke_key(&name, instant(120)).await.expect("revoke"));
    assert!(!store.revoke_key(&name, instant(180)).await.expect("revoke"));
    assert!(
        !store
            .revoke_key(&random_owner(), instant(120))
            .await
            .expect("revoke")
    );
    let keys = store.keys().await.expect("keys");
    let revoked = find(&keys, &name).expect("a revoked key stays");
    assert_eq!(
        revoked.revoked_at,
        Some(instant(120)),
        "the first revocation stays"
    );
    assert!(revoked.is_ended(instant(121)));
    // Revoked, the name is still taken.
    let reused = store.insert_key(key(&name, 3)).await;
    assert!(
        matches!(reused, Err(KeyInsertError::NameTaken)),
        "{reused:?}"
    );
}

/// A key past its expiry reads as ended, one before it as open; keys of several
/// owners are listed by name.
pub async fn expiry_is_read_from_what_is_stored(store: &impl KeyStore) {
    let owner = random_owner();
    let names = [random_owner(), random_owner()];
    for (index, name) in names.iter().enumerate() {
        let mut made = key(name, 10 + index as u8);
        made.owner = Some(owner.clone());
        made.expires_at = Some(instant(100 * (index as i64 + 1)));
        store.insert_key(made).await.expect("insert_key");
    }
    let keys = store.keys().await.expect("keys");
    let [first, second] = names
        .each_ref()
        .map(|name| find(&keys, name).expect("listed"));
    assert!(first.is_ended(instant(100)) && !first.is_ended(instant(99)));
    assert!(!second.is_ended(instant(150)));
    let listed: Vec<&Owner> = keys.iter().map(|key| &key.name).collect();
    let mut sorted = listed.clone();
    sorted.sort_by(|a, b| a.as_str().cmp(b.as_str()));
    assert_eq!(listed, sorted, "by name");
    let of_owner = keys
        .iter()
        .filter(|key| key.owner.as_ref() == Some(&owner))
        .count();
    assert_eq!(of_owner, 2, "both keys of the owner");
}
