-- Redirect rules: a JSON array of rules (conditions on the visitor, and the URL or the
-- weighted split each sends to), as shortener_core::rules::RuleSpec writes them. NULL:
-- the link sends everyone to its url. A nullable column without a default rewrites no
-- row.
ALTER TABLE links ADD COLUMN rules JSONB NULL;
