-- Redirect rules: a JSON array of rules (conditions on the visitor, and the URL or the
-- weighted split each sends to), as shortener_core::rules::RuleSpec writes them. NULL:
-- the link sends everyone to its url.
ALTER TABLE links ADD COLUMN rules TEXT NULL;
