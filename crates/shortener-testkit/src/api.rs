//! [`Api`]: the service's HTTP API as a test calls it, typed, so that its paths and its
//! key header are written once here rather than in every test.
//!
//! It sends what a test asks and hands back every answer ([`Answer`]): asserting the
//! status is the test's business, since a refusal is as often the point as a success.
//! Paths a test sends on purpose (a malformed code, a method the route refuses) are
//! still the test's to write, through [`Api::request`].

use reqwest::header::HeaderMap;
use reqwest::{Method, RequestBuilder, StatusCode};
use serde_json::Value;

use crate::app::Served;

/// The prefix of every path of the API.
pub const API: &str = "/api/v1";

/// The API of one service, with or without an API key.
#[derive(Clone, Debug)]
pub struct Api {
    http: reqwest::Client,
    base: String,
    key: Option<String>,
}

/// What the service answered: its status, headers and JSON body (`Null` for none or one
/// that is not JSON).
#[derive(Debug)]
pub struct Answer {
    pub status: StatusCode,
    pub headers: HeaderMap,
    pub body: Value,
}

impl Answer {
    /// The body, after asserting the status is `expected`.
    ///
    /// # Panics
    /// When it is not, with the body.
    #[track_caller]
    pub fn expect(self, expected: StatusCode) -> Value {
        assert_eq!(self.status, expected, "{}", self.body);
        self.body
    }

    /// A header's value as text ("" when absent).
    pub fn header(&self, name: &str) -> &str {
        self.headers
            .get(name)
            .and_then(|value| value.to_str().ok())
            .unwrap_or_default()
    }
}

impl Api {
    /// The API of `served`, with no key, through the kit's [`crate::client`] (no redirects
    /// followed, a 30 s timeout).
    pub fn of(served: &impl Served) -> Self {
        Self::at(served.base())
    }

    /// The API of the service at `base` (`http://ADDRESS`).
    pub fn at(base: &str) -> Self {
        Self {
            http: crate::client(),
            base: base.trim_end_matches('/').to_owned(),
            key: None,
        }
    }

    /// The same API, through `http` (a test's own client: its timeout, its pool).
    #[must_use]
    pub fn with_client(self, http: reqwest::Client) -> Self {
        Self { http, ..self }
    }

    /// The same API, sending `secret` as `X-Api-Key`.
    #[must_use]
    pub fn with_key(&self, secret: &str) -> Self {
        Self {
            key: Some(secret.to_owned()),
            ..self.clone()
        }
    }

    /// The URL of the API's `path` (`/links/abc`), for a test that builds its own request.
    pub fn url(&self, path: &str) -> String {
        format!("{}{API}{path}", self.base)
    }

    /// `method` on the API's `path` (`/links?limit=5`), with the key if any: for what the
    /// typed calls below do not say (a header, a raw body).
    pub fn request(&self, method: Method, path: &str) -> RequestBuilder {
        let request = self.http.request(method, self.url(path));
        match &self.key {
            Some(key) => request.header("x-api-key", key),
            None => request,
        }
    }

    /// Sends `request` and reads its answer.
    ///
    /// # Panics
    /// When the service does not answer.
    pub async fn send(&self, request: RequestBuilder) -> Answer {
        let response = request.send().await.expect("the service answers");
        let status = response.status();
        let headers = response.headers().clone();
        let text = response.text().await.expect("a body");
        Answer {
            status,
            headers,
            body: serde_json::from_str(&text).unwrap_or(Value::Null),
        }
    }

    /// `POST /links`: a link made of `body`.
    pub async fn create(&self, body: &Value) -> Answer {
        self.send(self.request(Method::POST, "/links").json(body))
            .await
    }

    /// `POST /links/bulk`.
    pub async fn create_bulk(&self, body: &Value) -> Answer {
        self.send(self.request(Method::POST, "/links/bulk").json(body))
            .await
    }

    /// `GET /links/{code}`.
    pub async fn get(&self, code: &str) -> Answer {
        self.send(self.request(Method::GET, &format!("/links/{code}")))
            .await
    }

    /// `PATCH /links/{code}` with `body`.
    pub async fn patch(&self, code: &str, body: &Value) -> Answer {
        let request = self.request(Method::PATCH, &format!("/links/{code}"));
        self.send(request.json(body)).await
    }

    /// `DELETE /links/{code}`.
    pub async fn delete(&self, code: &str) -> Answer {
        self.send(self.request(Method::DELETE, &format!("/links/{code}")))
            .await
    }

    /// `GET /links` with `query` (`limit=5&tag=a`, or "").
    pub async fn list(&self, query: &str) -> Answer {
        self.send(self.request(Method::GET, &with_query("/links", query)))
            .await
    }

    /// `GET /links/{code}/visits` with `query` (`days=7`, or "").
    pub async fn visits(&self, code: &str, query: &str) -> Answer {
        let path = with_query(&format!("/links/{code}/visits"), query);
        self.send(self.request(Method::GET, &path)).await
    }

    /// `GET /visits` with `query` (every link's visits, or "").
    pub async fn all_visits(&self, query: &str) -> Answer {
        self.send(self.request(Method::GET, &with_query("/visits", query)))
            .await
    }

    /// `GET /tags`.
    pub async fn tags(&self) -> Answer {
        self.send(self.request(Method::GET, "/tags")).await
    }

    /// `GET /domains`.
    pub async fn domains(&self) -> Answer {
        self.send(self.request(Method::GET, "/domains")).await
    }

    /// `POST /keys` with `body` (an admin key's call).
    pub async fn create_key(&self, body: &Value) -> Answer {
        self.send(self.request(Method::POST, "/keys").json(body))
            .await
    }

    /// `GET /keys`.
    pub async fn keys(&self) -> Answer {
        self.send(self.request(Method::GET, "/keys")).await
    }

    /// `DELETE /keys/{name}`.
    pub async fn revoke_key(&self, name: &str) -> Answer {
        self.send(self.request(Method::DELETE, &format!("/keys/{name}")))
            .await
    }
}

/// `path`, and `?query` when there is one.
fn with_query(path: &str, query: &str) -> String {
    if query.is_empty() {
        path.to_owned()
    } else {
        format!("{path}?{query}")
    }
}
