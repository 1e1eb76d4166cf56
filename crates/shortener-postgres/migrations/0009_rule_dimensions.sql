-- Visits counted by the redirect rule and the split variant that sent them: two more
-- dimensions. The new constraint is checked against the rows already there, which all
-- hold one of the five earlier dimensions.
ALTER TABLE link_dimensions DROP CONSTRAINT link_dimensions_dimension_check;
ALTER TABLE link_dimensions ADD CONSTRAINT link_dimensions_dimension_check
    CHECK (dimension IN ('referrer', 'country', 'browser', 'os', 'device', 'rule', 'variant'));
