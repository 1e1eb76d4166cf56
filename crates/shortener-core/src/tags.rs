//! Tags: labels a link's owner gives it, to find it again ([`Tag`], the set of a link
//! [`Tags`], and what a listing of them counts, [`TagCount`]).

use std::fmt;

use crate::domain::ParseError;

/// The most tags a link has.
pub const MAX_TAGS: usize = 10;
/// The longest tag, in characters.
pub const MAX_TAG_CHARS: usize = 50;

/// A tag: 1 to 50 characters, none of them a control character, a comma, a quote or a
/// backslash, stored in lower case, so that `Launch` and `launch` are one tag.
///
/// The characters left out are those that separate or quote tags in the formats tags
/// travel in (query strings, CSV cells, JSON), so that a tag reads back as it was written
/// everywhere.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Tag(String);

impl Tag {
    /// # Errors
    /// When the tag is empty (or only spaces), longer than 50 characters, or has a
    /// character that is refused.
    pub fn parse(raw: &str) -> Result<Self, ParseError> {
        let trimmed = raw.trim();
        let length = trimmed.chars().count();
        if length == 0 || length > MAX_TAG_CHARS {
            return Err(ParseError(format!(
                "a tag must be 1 to {MAX_TAG_CHARS} characters long"
            )));
        }
        let refused = |c: char| c.is_control() || matches!(c, ',' | '"' | '\\');
        if trimmed.chars().any(refused) {
            return Err(ParseError(
                "a tag must not contain control characters, commas, quotes or backslashes".into(),
            ));
        }
        Ok(Self(trimmed.to_lowercase()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for Tag {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// A link's tags: at most [`MAX_TAGS`], each once, in order.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct Tags(Vec<Tag>);

impl Tags {
    /// Reads a list of tags; the same tag twice (in any case) counts once.
    ///
    /// # Errors
    /// When a tag is refused by [`Tag::parse`], or there are more than 10 distinct ones.
    pub fn parse<'a>(raw: impl IntoIterator<Item = &'a str>) -> Result<Self, ParseError> {
        let mut tags = raw
            .into_iter()
            .map(Tag::parse)
            .collect::<Result<Vec<_>, _>>()?;
        tags.sort_unstable();
        tags.dedup();
        if tags.len() > MAX_TAGS {
            return Err(ParseError(format!("at most {MAX_TAGS} tags per link")));
        }
        Ok(Self(tags))
    }

    pub fn as_slice(&self) -> &[Tag] {
        &self.0
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The tags as text, in order.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.0.iter().map(Tag::as_str)
    }

    /// Whether one tag of `wanted` at least is one of these (none wanted: yes).
    pub fn contains_any(&self, wanted: &Tags) -> bool {
        wanted.0.is_empty() || wanted.0.iter().any(|tag| self.0.binary_search(tag).is_ok())
    }

    /// Whether every tag of `wanted` is one of these.
    pub fn contains_all(&self, wanted: &Tags) -> bool {
        wanted.0.iter().all(|tag| self.0.binary_search(tag).is_ok())
    }

    /// These tags with `from` renamed to `to` (once, in order), or `None` when `from` is
    /// not one of them.
    pub fn renamed(&self, from: &Tag, to: &Tag) -> Option<Tags> {
        self.0.binary_search(from).ok()?;
        let mut tags: Vec<Tag> = (self.0.iter())
            .map(|tag| if tag == from { to.clone() } else { tag.clone() })
            .collect();
        tags.sort_unstable();
        tags.dedup();
        Some(Self(tags))
    }

    /// These tags without `tag`, or `None` when it is not one of them.
    pub fn without(&self, tag: &Tag) -> Option<Tags> {
        let at = self.0.binary_search(tag).ok()?;
        let mut tags = self.0.clone();
        tags.remove(at);
        Some(Self(tags))
    }
}

/// A tag of a caller's links: on how many, their visits by people and by bots in all.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TagCount {
    pub tag: Tag,
    pub links: u64,
    pub visits: u64,
    pub bots: u64,
}

impl TagCount {
    /// A count as the SQL adapters read it: the tag's text, and counts signed as SQL has
    /// them. The error names what does not fit.
    ///
    /// # Errors
    /// When the tag is not one this program would have stored, or a count is negative.
    pub fn from_columns(tag: &str, links: i64, visits: i64, bots: i64) -> Result<Self, ParseError> {
        let count = |value: i64, what: &str| {
            u64::try_from(value).map_err(|_| ParseError(format!("tag {tag:?}: {what} {value}")))
        };
        Ok(Self {
            tag: Tag::parse(tag).map_err(|e| ParseError(format!("tag {tag:?}: {e}")))?,
            links: count(links, "link count")?,
            visits: count(visits, "visit total")?,
            bots: count(bots, "bot total")?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tags_are_lower_case_trimmed_and_bounded() {
        assert_eq!(Tag::parse(" Q4 Launch ").unwrap().as_str(), "q4 launch");
        assert_eq!(Tag::parse("ÉTÉ").unwrap().as_str(), "été");
        assert!(Tag::parse(&"é".repeat(50)).is_ok());
        for bad in [
            "",
            "  ",
            "a,b",
            "say \"hi\"",
            "back\\slash",
            "t\tab",
            &"x".repeat(51),
        ] {
            assert!(Tag::parse(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn a_link_has_at_most_ten_distinct_tags_in_order() {
        let tags = Tags::parse(["b", "A", "a", "c"]).unwrap();
        assert_eq!(tags.names().collect::<Vec<_>>(), ["a", "b", "c"]);
        let eleven: Vec<String> = (0..11).map(|n| format!("t{n}")).collect();
        assert!(Tags::parse(eleven.iter().map(String::as_str)).is_err());
        // Ten distinct, written twice each, are ten.
        let twice: Vec<String> = (0..20).map(|n| format!("T{}", n % 10)).collect();
        assert_eq!(
            Tags::parse(twice.iter().map(String::as_str))
                .unwrap()
                .as_slice()
                .len(),
            10
        );
        assert!(tags.contains_all(&Tags::parse(["c", "a"]).unwrap()));
        assert!(!tags.contains_all(&Tags::parse(["a", "d"]).unwrap()));
        assert!(tags.contains_all(&Tags::default()));
    }
}
