//! A real headless Chromium driven over WebDriver: `chromedriver` (Debian:
//! `chromium-driver`) on a free port, killed on drop, and a `fantoccini` client of it.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use fantoccini::{Client, ClientBuilder};
use hyper_util::client::legacy::connect::HttpConnector;

use crate::ports::free_port;
use crate::process::{Guard, require_binary};

/// A chromedriver process and one browser session of it.
#[derive(Debug)]
pub struct Browser {
    pub client: Client,
    _driver: Guard,
}

impl Browser {
    /// Starts chromedriver and a headless Chromium in a window of `width` x `height`.
    ///
    /// # Panics
    /// With one line naming the Debian package when `chromium` or `chromedriver` is not
    /// installed, or when the session cannot be made.
    pub async fn start(width: u32, height: u32) -> Self {
        let chromium = require_binary("chromium").unwrap_or_else(|missing| panic!("{missing}"));
        require_binary("chromedriver").unwrap_or_else(|missing| panic!("{missing}"));
        let port = free_port().expect("a free port");
        let driver = Guard::spawn(
            "chromedriver",
            Command::new("chromedriver")
                .arg(format!("--port={port}"))
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null()),
        )
        .unwrap_or_else(|error| panic!("{error}"));
        let mut capabilities = serde_json::Map::new();
        capabilities.insert(
            "goog:chromeOptions".into(),
            serde_json::json!({
                "binary": chromium,
                "args": [
                    "--headless=new",
                    "--no-sandbox",
                    "--disable-gpu",
                    "--disable-dev-shm-usage",
                    format!("--window-size={width},{height}"),
                ],
            }),
        );
        let url = format!("http://127.0.0.1:{port}");
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            match ClientBuilder::new(HttpConnector::new())
                .capabilities(capabilities.clone())
                .connect(&url)
                .await
            {
                Ok(client) => {
                    return Self {
                        client,
                        _driver: driver,
                    };
                }
                // chromedriver takes a moment to listen.
                Err(_) if Instant::now() < deadline => {
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
                Err(error) => panic!("no WebDriver session with chromium: {error}"),
            }
        }
    }

    /// Ends the session (closing the browser); chromedriver is killed on drop.
    pub async fn close(self) {
        let _ = self.client.close().await;
    }
}
