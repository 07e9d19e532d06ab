"""Retrieval diagnosis: what judges cannot see because they only read the chunks the retriever returned.

- ``coverage``: for questions with a reference answer, does any chunk of the whole corpus hold the reference's
  key facts? Lists the missing-document candidates with their closest chunks (``facts``, ``corpus_search``,
  ``coverage_judge`` for the optional one-call-per-question LLM check).
- ``retriever_diff``: replay queries (``queries``) through an old and a new retriever configuration, or
  against the logged chunk ids, and diff the chunk lists per query and in aggregate.
"""
