"""Label quality: `remark eval` against hand-labelled gold (gold, scoring), and the checks
against the partial gold that ships with the corpus (corpus_checks)."""
