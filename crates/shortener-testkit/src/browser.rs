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
        Self::launch(width, height, false).await
    }

    /// Starts a headless Chromium emulating a phone's screen of `width` x `height` CSS
    /// pixels (a window cannot be narrower than 500 px; an emulated screen can).
    ///
    /// # Panics
    /// As [`Browser::start`].
    pub async fn start_phone(width: u32, height: u32) -> Self {
        Self::launch(width, height, true).await
    }

    async fn launch(width: u32, height: u32, phone: bool) -> Self {
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
        let window = if phone { width.max(500) } else { width };
        let mut options = serde_json::json!({
            "binary": chromium,
            "args": [
                "--headless=new",
                "--no-sandbox",
                "--disable-gpu",
                "--disable-dev-shm-usage",
                format!("--window-size={window},{height}"),
            ],
        });
        if phone {
            options["mobileEmulation"] = serde_json::json!({
                "deviceMetrics": {"width": width, "height": height, "pixelRatio": 1.0},
            });
        }
        capabilities.insert("goog:chromeOptions".into(), options);
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
