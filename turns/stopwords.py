"""The stopword list of the relevance order (SPEC §7, I6). Standard library only.

A fixed list of English function words that ships with the planner. Terms are compared after
the term rules (NFKC, casefold, split on every character that is not a letter or digit), so
the list holds casefolded words without apostrophes: "don't" becomes the terms ``don`` and
``t`` (dropped as one character), which is why the stems of contractions (``don``, ``isn``,
``ll``, ``ve`` …) are listed too. Terms of one character are dropped by the term rules
themselves and are not listed.

The list is part of the plan parameters: ``STOPWORDS_VERSION`` enters ``plan_hash`` for every
plan ordered by relevance, so a change to the list must come with a new version (a test pins
the list's content to its version).
"""

from __future__ import annotations

STOPWORDS_VERSION = "en-2026.1"

STOPWORDS: frozenset[str] = frozenset(
    """
    about above after again against all also am an and any are aren as at
    be because been before being below between both but by
    can cannot could couldn
    did didn do does doesn doing don down during
    each either else ever every
    few for from further
    had hadn has hasn have haven having he her here hers herself him himself his how
    if in into is isn it its itself
    just
    let ll
    may me might more most must mustn my myself
    neither no nor not now
    of off on once only or other ought our ours ourselves out over own
    re
    same shall shan she should shouldn so some such
    than that the their theirs them themselves then there these they this those through
    to too
    under until up upon us
    ve very
    was wasn we were weren what when where which while who whom whose why will with won
    would wouldn
    yes yet you your yours yourself yourselves
    """.split()
)
