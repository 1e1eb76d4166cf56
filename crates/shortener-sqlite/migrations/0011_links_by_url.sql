-- A create with find-if-exists looks for the caller's link to the same target: one
-- look-up by target (then domain and owner), not a walk of every link.
CREATE INDEX links_by_url ON links (url, domain);
