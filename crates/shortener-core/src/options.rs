//! How one link redirects, beside its target: [`LinkOptions`], with its parsed parts
//! [`RedirectStatus`], [`Title`] and [`PasswordHash`]. An option left unset takes the service's default
//! (the configuration's `server.redirect_status`, `links.forward_query`), so that an
//! operator's change of a default reaches every link that did not choose.

use std::fmt;

use crate::domain::{ParseError, TargetUrl};
use crate::rules::{RuleSpec, Rules};

/// Longest accepted title, in characters.
pub const MAX_TITLE_CHARS: usize = 512;

/// A link's own redirect options; `Default` is "as the service is configured", not
/// crawlable.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LinkOptions {
    /// The status of its redirects; `None`: the service's.
    pub redirect_status: Option<RedirectStatus>,
    /// Whether a redirect merges the request's query string into the target's; `None`:
    /// the service's.
    pub forward_query: Option<bool>,
    /// Where the link sends its visitors once expired or used up, instead of answering
    /// 410.
    pub expired_url: Option<TargetUrl>,
    /// Free text shown in listings; nothing is fetched from the target.
    pub title: Option<Title>,
    /// Whether `/robots.txt` lets crawlers follow it.
    pub crawlable: bool,
    /// The hash of the password a visitor must give before the link redirects; `None`:
    /// the link is open.
    pub password: Option<PasswordHash>,
    /// Where a visitor goes by who they are (device, language, country...): the first
    /// rule that matches wins, else the link's own URL. Empty for most links.
    pub rules: Rules,
}

/// The options as the SQL adapters store them, a column each: the status as its code,
/// the URLs and the title as text.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct OptionColumns {
    pub redirect_status: Option<i64>,
    pub forward_query: Option<bool>,
    pub expired_url: Option<String>,
    pub title: Option<String>,
    pub crawlable: bool,
    pub password_hash: Option<String>,
    /// The rules as JSON (a list of `RuleSpec`), NULL when there are none.
    pub rules: Option<String>,
}

impl From<&LinkOptions> for OptionColumns {
    fn from(options: &LinkOptions) -> Self {
        Self {
            redirect_status: options.redirect_status.map(|status| status.code().into()),
            forward_query: options.forward_query,
            expired_url: (options.expired_url.as_ref()).map(|url| url.as_str().to_owned()),
            title: options
                .title
                .as_ref()
                .map(|title| title.as_str().to_owned()),
            crawlable: options.crawlable,
            password_hash: (options.password.as_ref()).map(|hash| hash.as_str().to_owned()),
            rules: (!options.rules.is_empty())
                .then(|| serde_json::to_string(&options.rules.to_specs()).unwrap_or_default()),
        }
    }
}

/// Reads stored options back; the error names the column that holds a value this
/// program would not have written.
impl TryFrom<OptionColumns> for LinkOptions {
    type Error = ParseError;

    fn try_from(columns: OptionColumns) -> Result<Self, ParseError> {
        fn named(column: &'static str) -> impl Fn(ParseError) -> ParseError {
            move |error| ParseError(format!("{column}: {error}"))
        }
        let redirect_status = (columns.redirect_status)
            .map(|code| RedirectStatus::parse(u64::try_from(code).unwrap_or(0)))
            .transpose()
            .map_err(named("redirect_status"))?;
        let expired_url = (columns.expired_url.as_deref())
            .map(TargetUrl::parse)
            .transpose()
            .map_err(named("expired_url"))?;
        let title = (columns.title.as_deref())
            .map(Title::parse)
            .transpose()
            .map_err(named("title"))?;
        let password = (columns.password_hash.as_deref())
            .map(PasswordHash::parse)
            .transpose()
            .map_err(named("password_hash"))?;
        let rules = match columns.rules.as_deref() {
            None => Rules::default(),
            Some(json) => {
                let specs: Vec<RuleSpec> = serde_json::from_str(json)
                    .map_err(|error| ParseError(format!("rules: {error}")))?;
                Rules::parse(&specs).map_err(|error| ParseError(format!("rules: {error}")))?
            }
        };
        Ok(Self {
            redirect_status,
            forward_query: columns.forward_query,
            expired_url,
            title,
            crawlable: columns.crawlable,
            password,
            rules,
        })
    }
}

/// The status of a redirect to a link's target: 301, 302, 307 or 308.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RedirectStatus {
    MovedPermanently,
    Found,
    TemporaryRedirect,
    PermanentRedirect,
}

impl RedirectStatus {
    /// 301, 302, 307 or 308; `None` for any other number.
    pub fn from_code(code: u16) -> Option<Self> {
        match code {
            301 => Some(Self::MovedPermanently),
            302 => Some(Self::Found),
            307 => Some(Self::TemporaryRedirect),
            308 => Some(Self::PermanentRedirect),
            _ => None,
        }
    }

    /// The status code, which is also how it is stored.
    pub fn code(self) -> u16 {
        match self {
            Self::MovedPermanently => 301,
            Self::Found => 302,
            Self::TemporaryRedirect => 307,
            Self::PermanentRedirect => 308,
        }
    }

    /// Parses a status code given by a user.
    ///
    /// # Errors
    /// When the number is not 301, 302, 307 or 308.
    pub fn parse(code: u64) -> Result<Self, ParseError> {
        u16::try_from(code)
            .ok()
            .and_then(Self::from_code)
            .ok_or_else(|| ParseError("must be 301, 302, 307 or 308".into()))
    }
}

/// A link's title: 1 to [`MAX_TITLE_CHARS`] characters, no control characters.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Title(String);

impl Title {
    /// # Errors
    /// When the title is empty, longer than 512 characters or has a control character
    /// (a line break, a tab).
    pub fn parse(raw: &str) -> Result<Self, ParseError> {
        let length = raw.chars().count();
        if length == 0 || length > MAX_TITLE_CHARS {
            return Err(ParseError(format!(
                "must be 1 to {MAX_TITLE_CHARS} characters long"
            )));
        }
        if raw.chars().any(char::is_control) {
            return Err(ParseError("must not contain control characters".into()));
        }
        Ok(Self(raw.to_owned()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for Title {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// The argon2id hash of a link's password, in the PHC string format
/// (`$argon2id$v=19$m=...,t=...,p=...$salt$hash`), which carries its own parameters and
/// salt. The core stores and compares it; hashing and verifying are the server's (the
/// core depends on no hashing library). Its `Debug` shows no part of it.
#[derive(Clone, PartialEq, Eq)]
pub struct PasswordHash(String);

impl PasswordHash {
    /// # Errors
    /// When the text is not an argon2id PHC string.
    pub fn parse(phc: &str) -> Result<Self, ParseError> {
        let fields: Vec<&str> = phc.split('$').collect();
        let well_formed = matches!(fields[..], ["", "argon2id", version, params, salt, hash]
            if version.starts_with("v=") && params.starts_with("m=")
                && !salt.is_empty() && !hash.is_empty()
                && phc.bytes().all(|b| b.is_ascii_graphic()));
        if well_formed {
            Ok(Self(phc.to_owned()))
        } else {
            Err(ParseError(
                "must be an argon2id hash in the PHC string format".into(),
            ))
        }
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// Whether the hash's parameters are within the band the service checks: argon2id
    /// version 19, one lane, at most the service's memory ([`PASSWORD_MEMORY_KIB`]) and
    /// memory times passes, and at least OWASP's cheapest recommendation (7 MiB, 5
    /// passes). Outside it, a check would either cost more than the service's own (a
    /// 1 GiB `m` takes a node's memory with one guess) or the hash be cheap to crack.
    ///
    /// # Errors
    /// The reason, naming the parameter.
    pub fn check_cost(&self) -> Result<(), ParseError> {
        let bad = |why: String| Err(ParseError(why));
        let fields: Vec<&str> = self.0.split('$').collect();
        if fields.get(2) != Some(&"v=19") {
            return bad("must be argon2 version 19 (v=19)".to_owned());
        }
        let (mut m, mut t, mut p) = (None, None, None);
        for pair in fields.get(3).copied().unwrap_or_default().split(',') {
            let (name, value) = pair.split_once('=').unwrap_or((pair, ""));
            let value = value.parse::<u32>().ok();
            match name {
                "m" => m = value,
                "t" => t = value,
                "p" => p = value,
                _ => return bad(format!("unknown parameter `{name}`")),
            }
        }
        let (Some(m), Some(t), Some(p)) = (m, t, p) else {
            return bad("must give m, t and p as numbers".to_owned());
        };
        if p != 1 {
            return bad("p must be 1".to_owned());
        }
        if !(MIN_PASSWORD_MEMORY_KIB..=PASSWORD_MEMORY_KIB).contains(&m) {
            return bad(format!(
                "m must be between {MIN_PASSWORD_MEMORY_KIB} and {PASSWORD_MEMORY_KIB} (KiB)"
            ));
        }
        let work = u64::from(m) * u64::from(t);
        let max_work = u64::from(PASSWORD_MEMORY_KIB) * u64::from(PASSWORD_PASSES);
        if !(MIN_PASSWORD_WORK..=max_work).contains(&work) {
            return bad(format!(
                "m times t must be between {MIN_PASSWORD_WORK} and {max_work}"
            ));
        }
        Ok(())
    }
}

/// The memory of the service's own password hashes, in KiB: argon2's default and
/// OWASP's recommendation (m = 19 MiB, with t = 2, p = 1).
pub const PASSWORD_MEMORY_KIB: u32 = 19 * 1024;
/// The passes of the service's own password hashes.
pub const PASSWORD_PASSES: u32 = 2;
/// The least memory of a hash that is checked, in KiB: OWASP's cheapest setting
/// (m = 7 MiB, t = 5).
const MIN_PASSWORD_MEMORY_KIB: u32 = 7 * 1024;
/// The least memory times passes of a hash that is checked: OWASP's five settings
/// (7 MiB x 5 to 19 MiB x 2) all reach it, and a cheaper hash would be quicker to crack.
const MIN_PASSWORD_WORK: u64 = 7 * 1024 * 5;

impl fmt::Debug for PasswordHash {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("PasswordHash(..)")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_four_redirect_statuses_parse() {
        for code in [301, 302, 307, 308] {
            let status = RedirectStatus::parse(code).unwrap();
            assert_eq!(u64::from(status.code()), code);
        }
        for bad in [0, 200, 303, 304, 65_837] {
            assert!(RedirectStatus::parse(bad).is_err(), "{bad}");
        }
        assert_eq!(RedirectStatus::from_code(303), None);
    }

    #[test]
    fn options_round_trip_through_their_columns() {
        let options = LinkOptions {
            redirect_status: Some(RedirectStatus::PermanentRedirect),
            forward_query: Some(false),
            expired_url: Some(TargetUrl::parse("https://example.com/over").unwrap()),
            title: Some(Title::parse("Launch").unwrap()),
            crawlable: true,
            password: Some(PasswordHash::parse(HASH).unwrap()),
            rules: crate::rules::Rules::parse(&[crate::rules::RuleSpec {
                name: Some("mobile".into()),
                conditions: vec![crate::rules::ConditionSpec {
                    kind: "device".into(),
                    key: None,
                    value: Some("mobile".into()),
                }],
                url: Some("https://m.example.com/".into()),
                split: None,
                redirect_status: None,
            }])
            .unwrap(),
        };
        let columns = OptionColumns::from(&options);
        assert_eq!(columns.redirect_status, Some(308));
        assert_eq!(
            columns.rules.as_deref(),
            Some(
                r#"[{"name":"mobile","conditions":[{"type":"device","value":"mobile"}],"url":"https://m.example.com/"}]"#
            )
        );
        assert_eq!(LinkOptions::try_from(columns.clone()), Ok(options));
        let corrupt = OptionColumns {
            redirect_status: Some(200),
            ..columns.clone()
        };
        let error = LinkOptions::try_from(corrupt).unwrap_err();
        assert!(error.0.starts_with("redirect_status: "), "{error}");
        let corrupt = OptionColumns {
            rules: Some("[{}]".into()),
            ..columns
        };
        let error = LinkOptions::try_from(corrupt).unwrap_err();
        assert!(error.0.starts_with("rules: "), "{error}");
        assert_eq!(OptionColumns::from(&LinkOptions::default()).rules, None);
    }

    const HASH: &str = "$argon2id$v=19$m=19456,t=2,p=1$c2FsdHNhbHRzYWx0$q5PfnEmCSjWMr/1xBsIjXJr4YQmQnrwUqdmyLUAqfHM";

    #[test]
    fn only_hashes_within_owasps_band_are_checked() {
        let with =
            |params: &str| PasswordHash::parse(&HASH.replace("m=19456,t=2,p=1", params)).unwrap();
        for good in [
            "m=19456,t=2,p=1",
            "m=12288,t=3,p=1",
            "m=9216,t=4,p=1",
            "m=7168,t=5,p=1",
        ] {
            assert_eq!(with(good).check_cost(), Ok(()), "{good}");
        }
        for (bad, named) in [
            ("m=1048576,t=2,p=1", "m must"),
            ("m=4194304,t=1000,p=1", "m must"),
            ("m=19456,t=1000,p=1", "m times t"),
            ("m=8,t=1,p=1", "m must"),
            ("m=19456,t=1,p=1", "m times t"),
            ("m=19456,t=2,p=4", "p must"),
            ("m=19456,t=two,p=1", "must give"),
        ] {
            let reason = with(bad).check_cost().unwrap_err().0;
            assert!(reason.starts_with(named), "{bad}: {reason}");
        }
        let old = PasswordHash::parse(&HASH.replace("v=19", "v=16")).unwrap();
        assert!(old.check_cost().unwrap_err().0.contains("v=19"));
    }

    #[test]
    fn only_argon2id_phc_strings_are_password_hashes() {
        let hash = PasswordHash::parse(HASH).unwrap();
        assert_eq!(hash.as_str(), HASH);
        assert_eq!(format!("{hash:?}"), "PasswordHash(..)");
        for bad in [
            "",
            "hunter22",
            &HASH.replace("argon2id", "argon2i"),
            "$argon2id$v=19$m=19456,t=2,p=1$$abc",
            &HASH.replace("$q5", "$ q5"),
        ] {
            assert!(PasswordHash::parse(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn titles_are_bounded_text_on_one_line() {
        assert_eq!(
            Title::parse("Q4 launch · été").unwrap().as_str(),
            "Q4 launch · été"
        );
        // 512 characters of two bytes each are accepted: the bound counts characters.
        assert!(Title::parse(&"é".repeat(512)).is_ok());
        for bad in ["", "a\nb", "tab\there", &"x".repeat(513)] {
            assert!(Title::parse(bad).is_err(), "{bad:?}");
        }
    }
}
