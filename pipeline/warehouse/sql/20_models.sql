-- Every trained model with its random twin (the twin's card names it in `twin_of`): the pairs the
-- families' "against the twin" views read.
CREATE VIEW model_twins AS
SELECT m.name AS model, twin.name AS twin
FROM models m JOIN models twin ON twin.random AND json_extract_string(twin.card, '$.twin_of') = m.name
WHERE NOT m.random;
