"""The extractor's word lists and the pattern atoms its rules are written with (SPEC §8)."""

from __future__ import annotations

import re

# ---------------------------------------------------------------------------------------------
# Word lists

_PRONOUNS = frozenset(
    "i me my mine myself you your yours yourself yourselves he him his himself she her hers "
    "herself it its itself we us our ours ourselves they them their theirs themselves this "
    "that these those".split()
)

# A people-rule subject must not be one of these (SPEC §8: pronouns never become subjects).
_STOP_SUBJECTS = _PRONOUNS | frozenset(
    """
    there here who whom whose what which where when why how everyone everybody everything
    someone somebody something anyone anybody anything nobody noone nothing none one all both
    each some many most few a an the and or but so if then also actually now just well oh yes
    yeah yep no nope not ok okay please thanks thank hello hi hey today tomorrow yesterday
    tonight life time work home love weather world nature music coffee tea rain morning
    mornings night evening plant dog cat pet user people person guy man woman lady kid kids
    baby family god sir madam mister miss boss let lets is was are were be been being do does
    did has have had will would can could should may might must works lives moved like likes
    loves call name mine ours named called renamed hate hates at to in on of for from with by
    as into about anymore again too not never
    """.split()
)

_RELATIONS = (
    r"(?:best\s+)?(?:friend|sister|brother|mom|mum|mother|dad|father|wife|husband|partner|"
    r"coworker|co-worker|colleague|cousin|aunt|uncle|roommate|flatmate|neighbou?r|son|"
    r"daughter|girlfriend|boyfriend|fiancée?|grandma|grandpa|grandmother|grandfather|niece|"
    r"nephew|manager|boss|teacher|mentor|buddy|pal|stepmom|stepdad|sibling)"
)

# First words that show a "name" is not a name ("call me tomorrow", "named after grandma").
_NAME_BAD_FIRST = _PRONOUNS | frozenset(
    """
    a an the when whenever if at after before back later tomorrow tonight today soon sometime
    anytime maybe again crazy now in on by for with from to up out please what whatever
    anything something not never right old-fashioned silly paranoid asap around once twice
    every any because since so but and or as very too really just is are was were named called
    renamed do does don't
    """.split()
)

_FUNCTION_WORDS = frozenset(
    "is are was were am be at in on of and or but not now anymore again named called renamed "
    "don't do does".split()
)
_PLACE_BAD_FIRST = _FUNCTION_WORDS | frozenset(
    "with together here there it that this them him her me myself yourself you us to".split()
)

_PREF_BAD_FIRST = _FUNCTION_WORDS | frozenset("it you him her them me us".split())

# Head nouns that are plainly not a role ("Boston is a great city").
_NON_ROLE = frozenset(
    """
    city town village place country state area day night week thing time idea lot bit mess
    joke problem question pain nightmare dream movie film book song game show word dog cat
    puppy kitten pet bird fish plant tree flower boy girl baby sweetheart sweetie gem
    treasure friend fan name one person human angel saint legend star hero genius
    """.split()
)

# Words between the subject and the verb that belong to neither ("Priya now works at Acme").
_ADV = (
    r"(?:(?:now|just|recently|really|also|still|currently|finally|actually|truly|totally|"
    r"absolutely|definitely|honestly|already|officially|genuinely|seriously|literally|mostly|"
    r"so|kinda|kind\s+of|sort\s+of|do|does|did)\s+)*"
)

# A word: letters first, then letters/digits/hyphens, or an inner apostrophe before two more
# letters ("O'Brien", but "Dana's" stops at "Dana").
_W = r"[^\W\d_](?:[\w-]|'(?=[^\W\d_]{2}))*"
_NP = rf"{_W}(?:\s+{_W}){{0,3}}?"
_DET = r"(?:the|my|our)"
_I = r"i\b\s*"  # "I like", "I'd …", "I've …", "i'm …"


def _c(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern, re.IGNORECASE)
