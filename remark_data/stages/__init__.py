"""The pipeline stages, in order: scrape → extract → ground → aggregate → stats.

Each stage module declares one `Stage` record (`remark_data.runner.Stage`); package
`__init__` files import nothing, so pure modules (the matcher) stay cheap to import.
"""
