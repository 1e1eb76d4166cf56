//! `shortener keys new` prints a key that works (or stores one that a running node takes),
//! `keys list` and `keys revoke` work on the stored ones, `--version` names the version and the
//! commit (so does `shortener_build_info`), and a config that names one key twice (by
//! name or by digest) does not start.

use reqwest::StatusCode;
use serde_json::json;
use shortener_tests::{Api, Launch, TestApp, TestConfig, binary, check_config, client, spawn_app};

#[tokio::test]
async fn keys_new_prints_a_working_key_and_duplicates_are_refused() {
    let dir = shortener_tests::TempDir::new();
    let output = Launch::one_shot(binary(), dir.path())
        .args(["keys", "new", "--name", "ci", "--scopes", "create,read"])
        .output()
        .unwrap();
    assert!(output.status.success());
    let printed = String::from_utf8(output.stdout).unwrap();
    let key = printed
        .lines()
        .find_map(|line| line.strip_prefix("# shk_"))
        .map(|rest| format!("shk_{rest}"))
        .expect("the key is printed");
    let block: String = printed
        .lines()
        .filter(|line| !line.starts_with('#'))
        .map(|line| format!("{line}\n"))
        .collect();
    // The block as printed, pasted into the file: the file's own text.
    let base = TestConfig::default().file_text(dir.path());
    let app = TestApp::start_with_file_text(dir.path(), &format!("{base}\n{block}"), &[]);
    let keyed = Api::of(&app).with_key(&key);
    let created = keyed
        .create(&json!({"url": "https://keyed.example/"}))
        .await;
    assert_eq!(created.status, StatusCode::CREATED);
    assert_eq!(keyed.list("").await.status, StatusCode::OK);

    let version = Launch::one_shot(binary(), dir.path())
        .arg("--version")
        .output()
        .unwrap();
    let version = String::from_utf8(version.stdout).unwrap();
    // The workspace's version, and the commit of this checkout.
    let commit = std::process::Command::new("git")
        .args(["rev-parse", "--short=12", "HEAD"])
        .output()
        .unwrap();
    // Outside a git checkout (a source tarball) there is no commit to report.
    let expected = match String::from_utf8(commit.stdout).unwrap().trim() {
        _ if !commit.status.success() => "shortener 0.1.0".to_owned(),
        commit => format!("shortener 0.1.0 ({commit})"),
    };
    assert_eq!(version.trim(), expected);
    let build = shortener_tests::metric(&app.base, "shortener_build_info").await;
    assert_eq!(build, 1.0, "shortener_build_info is 1");

    let twice = format!("{base}\n{block}\n{block}");
    let (code, stderr) = check_config(app.dir.as_path(), &twice);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(
        stderr.contains("api_keys[1].name") && stderr.contains("api_keys[0]"),
        "{stderr}"
    );
    let renamed = block.replace("name = \"ci\"", "name = \"ci2\"");
    let same_digest = format!("{base}\n{block}\n{renamed}");
    let (code, stderr) = check_config(app.dir.as_path(), &same_digest);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(
        stderr.contains("api_keys[1].sha256") && stderr.contains("api_keys[0]"),
        "{stderr}"
    );
}

/// `shortener keys new --store` on a running node's database: the node takes the key
/// without a restart; `keys list` shows it, and after `keys revoke` the node refuses it,
/// each within a second; a stored name that is also in the file stops the next start.
#[tokio::test]
async fn stored_keys_are_made_listed_and_revoked_from_the_command_line() {
    use crate::process::cli::{shortener, text};
    let app = spawn_app(&TestConfig::default());
    let args = [
        "keys",
        "new",
        "--store",
        "--name",
        "cli",
        "--scopes",
        "read",
        "--config",
        "shortener.toml",
    ];
    let made = shortener(&app.dir, &args);
    assert!(made.status.success(), "{}", text(&made.stderr));
    let key = (text(&made.stdout).lines())
        .find(|line| line.starts_with("shk_"))
        .expect("the key is printed")
        .to_owned();
    let http = client();
    let links = Api::of(&app).url("/links");
    let within_a_second = |status: StatusCode| {
        let (http, links, key) = (http.clone(), links.clone(), key.clone());
        async move {
            let waited = crate::support::until_status(&http, &links, &key, status).await;
            assert!(
                waited < std::time::Duration::from_secs(1),
                "{status} after {waited:?}"
            );
        }
    };
    within_a_second(StatusCode::OK).await;
    let again = shortener(&app.dir, &args);
    assert!(!again.status.success());
    assert!(
        text(&again.stderr).contains("`cli` is stored already"),
        "{}",
        text(&again.stderr)
    );
    let listed = shortener(&app.dir, &["keys", "list", "--config", "shortener.toml"]);
    let listed = text(&listed.stdout);
    assert!(
        listed.lines().any(|line| line.starts_with("cli\tread\t")),
        "{listed}"
    );
    assert!(!listed.contains(&key), "no secret is listed");
    let revoked = shortener(
        &app.dir,
        &["keys", "revoke", "cli", "--config", "shortener.toml"],
    );
    assert!(revoked.status.success(), "{}", text(&revoked.stderr));
    within_a_second(StatusCode::UNAUTHORIZED).await;

    // A configured key of the same name: the next start is refused, naming both places.
    let digest = crate::support::sha256_hex("another-secret");
    let clash = TestConfig::default()
        .api_key("cli", &digest, None)
        .file_text(&app.dir);
    std::fs::write(app.dir.join("clash.toml"), clash).unwrap();
    let refused = shortener(&app.dir, &["serve", "--config", "clash.toml"]);
    assert!(!refused.status.success());
    let said = text(&refused.stdout) + &text(&refused.stderr);
    assert!(
        said.contains("API key `cli` is both in the configuration file"),
        "{said}"
    );
}
