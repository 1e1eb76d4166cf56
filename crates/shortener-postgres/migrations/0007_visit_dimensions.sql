-- Where visits come from: per link, UTC day and dimension, the visits of each value
-- (a referring host, a country code, a browser or OS family, a device class), never a
-- row per visit and nothing that names a visitor. The flush keeps at most the service's
-- `visits.top_values` values per link, day and dimension; the rest count as 'other'.
-- Deleted with the link.
CREATE TABLE link_dimensions (
    code      TEXT   COLLATE "C" NOT NULL,
    domain    TEXT   COLLATE "C" NOT NULL,
    day       DATE   NOT NULL,
    dimension TEXT   NOT NULL
        CHECK (dimension IN ('referrer', 'country', 'browser', 'os', 'device')),
    value     TEXT   NOT NULL,
    visits    BIGINT NOT NULL CHECK (visits >= 0),
    PRIMARY KEY (code, domain, day, dimension, value)
);
