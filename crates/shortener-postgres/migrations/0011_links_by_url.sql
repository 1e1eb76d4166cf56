-- A create with find-if-exists looks for the caller's link to the same target: one
-- look-up by target (then domain and owner), not a walk of every link. A hash index,
-- since a B-tree entry cannot hold a target of up to 8 KiB.
CREATE INDEX links_by_url ON links USING hash (url);
