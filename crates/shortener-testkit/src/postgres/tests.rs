//! The test databases: which names may be dropped, URLs, and the drop itself.

use super::*;

#[test]
fn only_test_database_names_are_dropped() {
    assert_eq!(
        created_at("shortener_test_65f0a1b2_0123456789abcdef"),
        Some(0x65f0_a1b2)
    );
    for other in [
        "shortener",
        "shortener_test_65f0a1b2",
        "shortener_test_65f0a1b2_0123",
        "shortener_test_65f0a1b2_0123456789abcdeF",
        "shortener_test_65f0a1b2_0123456789abcde;",
        "shortener_test__0123456789abcdef",
        "other_test_65f0a1b2_0123456789abcdef",
    ] {
        assert_eq!(created_at(other), None, "{other}");
    }
    let name = format!("{PREFIX}{:x}_{}", unix_seconds(), random_hex());
    assert!(created_at(&name).is_some(), "{name}");
}

#[test]
fn urls_name_the_database_and_hide_the_password() {
    assert_eq!(
        with_database("postgres://u:p@h:5/postgres?sslmode=require", "t"),
        "postgres://u:p@h:5/t?sslmode=require"
    );
    assert_eq!(with_database("postgres://u@h:1", "t"), "postgres://u@h:1/t");
    assert_eq!(redacted("postgres://u:secret@h/db"), "postgres://u@h/db");
}

/// A database is there while its value lives, and gone after drop.
#[test]
fn a_test_database_is_dropped_with_its_value() {
    let database = TestDatabase::create();
    let exists = format!(
        "SELECT count(*) FROM pg_database WHERE datname = '{}'",
        database.name()
    );
    assert_eq!(database.query(&exists).trim(), "1");
    let admin = admin_url();
    drop(database);
    assert_eq!(psql(&admin, &exists).unwrap().trim(), "0");
}

/// The watchdog's promise: the database of a process that exits without dropping it
/// (the shared one is in a static) is dropped once that process is gone.
#[test]
fn the_shared_database_is_dropped_after_its_process_exits() {
    const CHILD: &str = "SHORTENER_TESTKIT_SHARED_DATABASE";
    if std::env::var_os(CHILD).is_some() {
        println!("database {}", TestDatabase::shared().name());
        std::process::exit(0);
    }
    let output = Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "postgres::tests::the_shared_database_is_dropped_after_its_process_exits",
            "--nocapture",
        ])
        .env(CHILD, "1")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let name = stdout
        .lines()
        .find_map(|line| line.strip_prefix("database "))
        .unwrap_or_else(|| panic!("the child names its database: {stdout}"))
        .trim()
        .to_owned();
    let exists = format!("SELECT count(*) FROM pg_database WHERE datname = '{name}'");
    let deadline = Instant::now() + Duration::from_secs(30);
    while psql(&admin_url(), &exists).unwrap().trim() != "0" {
        assert!(Instant::now() < deadline, "{name} is still there");
        std::thread::sleep(Duration::from_millis(100));
    }
}
