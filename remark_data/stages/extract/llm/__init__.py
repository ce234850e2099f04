"""Stage 2, extract with an LLM over any OpenAI-compatible endpoint.

- Structured output (`schema`): a strict `json_schema` built from the pydantic `Extraction` model,
  with bounded list and string lengths; `temperature` and `seed` from the `LLMSpec`.
- Cost (`cache`): identical texts are sent once; an on-disk SQLite cache keyed by sha256(model,
  prompt version, schema, kinds, text) answers re-runs, so an unchanged re-run sends zero
  requests. Each answer is committed as it arrives: Ctrl-C or SIGKILL loses only the requests in
  flight.
- Faults (`client`): 429, 5xx, timeouts and dropped connections are retried with exponential
  backoff and jitter; when the budget is spent the text is recorded `transient` and retried by the
  next run. A reply that fails the schema is retried once, then recorded `permanent` with the raw
  reply.
- Hallucination guard (`schema.title_in_text`): a title must occur in the text (normalised, or
  fuzzy ≥ 90); others are dropped and counted.
- Fail fast (`client`, `failures`): the first request goes alone (a probe); a refused
  connection, unknown host, timeout or HTTP 401/403/404 there ends the run with a RemarkError
  naming the endpoint, instead of hours of retries per text. 401/403/404 later in the run end it
  the same way (they do not heal).
- Progress (`progress`): done/total, retries, texts waiting for a retry and failures, as
  `ExtractionProgress` snapshots handed to an optional callback; the library prints nothing.
- The `mentions` table (`mentions`): one row per kept title.

The API key comes from ``REMARK_LLM_API_KEY`` (or ``OPENAI_API_KEY``), never from the spec:
`api_key_from_env`.
"""

from remark_data.stages.extract.llm.cache import ExtractionCache, cache_key
from remark_data.stages.extract.llm.client import api_key_from_env
from remark_data.stages.extract.llm.extractor import extract_with_llm
from remark_data.stages.extract.llm.mentions import llm_mentions
from remark_data.stages.extract.llm.progress import (
    ExtractionProgress,
    ExtractionSummary,
    ProgressCallback,
)
from remark_data.stages.extract.llm.schema import (
    PROMPT_VERSION,
    ExtractedTitle,
    Extraction,
    strict_json_schema,
    title_in_text,
)

__all__ = [
    "PROMPT_VERSION",
    "ExtractedTitle",
    "Extraction",
    "ExtractionCache",
    "ExtractionProgress",
    "ExtractionSummary",
    "ProgressCallback",
    "api_key_from_env",
    "cache_key",
    "extract_with_llm",
    "llm_mentions",
    "strict_json_schema",
    "title_in_text",
]
