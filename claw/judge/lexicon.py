"""The word classes the rule judge reads with (`claw.judge.reading`).

Each set is one kind of word — adjectives that approve, verbs that edit a text, the parts of a reply —
never a list of whole feedback sentences: the reading classes combine them with a grammatical shape
("not" + an approving word, a request + an editing verb), so a sentence no list names still reads.
Nothing here names a task or a persona.
"""

from __future__ import annotations

import re

# Adjectives that approve of a reply; negated ("not great") they find fault.
APPROVING = {
    "good", "great", "fine", "nice", "perfect", "excellent", "right", "correct", "helpful", "useful", "clear",
    "accurate", "brilliant", "fantastic", "awesome", "amazing", "lovely", "wonderful", "superb", "ideal", "neat",
    "solid", "sweet", "best", "happy", "satisfied", "convinced", "sure", "ok", "okay", "fan", "cool", "clean",
    "readable", "informative", "spot-on", "better", "true", "enough", "impressive", "terrific", "outstanding", "fab",
    "faultless", "flawless", "beautiful", "elegant", "gorgeous", "delightful", "charming", "splendid", "marvellous",
    "marvelous", "stellar", "handy", "concise", "succinct", "thorough", "insightful", "lucid", "crisp", "smart",
    "clever", "exquisite", "fascinating", "riveting", "enlightening", "illuminating", "eye-opening",
}  # fmt: skip
# ... of which these approve only predicated ("Looks right.") or alone, never as a modifier ("a fine line").
WEAK_APPROVING = {"fine", "right", "ok", "okay", "cool", "sure", "fan", "enough", "true", "better"}
# Morphology of approving adjectives not listed ("doable", "kid-friendly"); negated they find fault.
APPROVING_SUFFIX = re.compile(r"[a-z](?:ful|able|ible|-friendly|-ready|-appropriate|-proof)$")
# Comparatives of approving words: "much better" approves, "could be better" asks.
APPROVING_COMPARATIVES = {"better", "clearer", "nicer", "neater", "cleaner", "easier"}

# Verbs by which a reply succeeds: "it works" approves, "doesn't work" finds fault.
SUCCEEDS = {
    "work", "works", "worked", "help", "helps", "helped", "answer", "answers", "answered", "fix", "fixes", "fixed",
    "solve", "solves", "solved", "like", "love", "sense", "pass", "passes", "passed",
}  # fmt: skip
# Verbs of taking a reply up: only negated do they speak ("I can't read German", "it doesn't rhyme").
UPTAKE = {
    "read", "follow", "understand", "get", "see", "find", "use", "rhyme", "compile", "run", "load", "open", "match",
    "add", "look", "looks", "sound", "sounds", "seem", "seems", "feel", "mean", "want", "wanted", "ask", "asked",
    "need", "needed", "think", "expect", "make", "exist", "apply", "fit", "fits", "afford", "trust", "send", "submit",
    "print", "post", "publish", "hand", "close", "near",
}  # fmt: skip

# Words that find fault with a reply: adjectives, nouns and verbs of faults.
FAULT = {
    "wrong", "incorrect", "inaccurate", "untrue", "false", "bad", "terrible", "awful", "horrible", "poor", "confusing",
    "confused", "unclear", "vague", "wordy", "verbose", "rambling", "long-winded", "repetitive", "redundant",
    "irrelevant", "useless", "unhelpful", "pointless", "generic", "robotic", "stiff", "bland", "boring", "cold",
    "rude", "harsh", "blunt", "condescending", "patronising", "patronizing", "clunky", "awkward", "messy", "sloppy",
    "garbled", "incomplete", "outdated", "misleading", "broken", "buggy", "nonsense", "rubbish", "garbage", "weird",
    "strange", "overkill", "excessive", "dense", "cluttered", "cheesy", "salesy", "pushy", "preachy", "bloated",
    "lazy", "shallow", "meaningless", "backwards", "backward", "mistake", "mistakes", "error", "errors", "typo",
    "typos", "bug", "bugs", "missing", "lacking", "lacks", "hate", "dislike", "annoying", "overwhelming",
    "complicated", "unreadable", "unnecessary", "unrelated", "inconsistent", "contradicts", "ugh", "meh", "flat",
    "stilted", "unnatural", "tedious", "dull", "made-up", "wrongly", "incorrectly", "nowhere", "disappointing",
    "disappointed", "rambles", "drags", "waffles", "waffling", "padded", "fluff", "filler", "fails", "failed",
    "crashes", "crashed", "breaks", "confuses", "overcomplicates", "contradict", "contradictory", "nonsensical",
    "gibberish", "hallucinated", "invented", "obsolete", "deprecated", "dated", "off-topic", "mixed", "muddled",
    "jumbled", "insane", "crazy", "ridiculous", "absurd", "unrealistic", "dangerous", "unsafe", "impossible", "silly",
    "lame", "cringe", "cringy", "cringey", "worse", "worst", "padding",
}  # fmt: skip

# Nouns of praise: said of the reply ("this page is gold", "that's a keeper", "I'd call it a win") or alone
# ("Genius.", "Lifesaver!") they approve it, as an approving adjective would.
PRAISE_NOUNS = {
    "gold", "goldmine", "gem", "gems", "lifesaver", "life-saver", "keeper", "winner", "godsend", "genius", "magic",
    "treasure", "masterpiece", "legend", "hero", "win", "jackpot", "perfection",
}  # fmt: skip

# Verbs of putting a reply to use (send it, print it, bookmark it): said by the user in any tense, with the reply as
# object, they report or plan acting on it. Each as (base, -ing, past).
USE_VERBS = (
    ("send", "sending", "sent"), ("use", "using", "used"), ("print", "printing", "printed"),
    ("post", "posting", "posted"), ("share", "sharing", "shared"), ("forward", "forwarding", "forwarded"),
    ("show", "showing", "showed"), ("save", "saving", "saved"), ("bookmark", "bookmarking", "bookmarked"),
    ("copy", "copying", "copied"), ("steal", "stealing", "stole"), ("frame", "framing", "framed"),
    ("submit", "submitting", "submitted"), ("pin", "pinning", "pinned"), ("screenshot", "screenshotting",
    "screenshotted"),
)  # fmt: skip

# Verbs of failing to do what was asked: beside an approving verb ("love how you ignored the limit") they are sarcasm.
FAILINGS = {
    "forgot", "forget", "forgets", "missed", "misses", "ignored", "ignores", "skipped", "skips", "misread",
    "misunderstood", "overlooked", "omitted", "lost", "broke", "breaks", "invented", "dropped", "ruined", "butchered",
}  # fmt: skip

# Nouns of what a reviewer has to say about a reply: denied ("no notes", "I have no complaints") they approve it.
REMARKS = {
    "note", "notes", "complaint", "complaints", "problem", "problems", "issue", "issues", "objection", "objections",
    "change", "changes", "edit", "edits", "fix", "fixes", "correction", "corrections", "concern", "concerns",
    "quibble", "quibbles", "nitpick", "nitpicks", "comment", "comments", "feedback", "gripe", "gripes", "fault",
    "faults", "flaw", "flaws", "argument", "arguments",
}  # fmt: skip

# Verbs that edit a text only with the reply as object, a constraint or a comparative ("make it shorter", not
# "make a cake").
EDITS_WITH_OBJECT = {
    "leave", "get", "go", "make", "keep", "answer", "start", "begin", "lead", "open", "end", "finish", "check", "show",
    "state", "give", "say", "write", "explain", "tell", "translate", "convert", "list", "do", "talk", "speak", "take",
    "express", "present", "number", "label", "break", "expand", "try", "suggest", "recommend", "provide", "offer",
    "count", "group", "regroup", "organise", "organize", "reorganise", "reorganize", "arrange", "rearrange",
    "categorise", "categorize", "restructure",
}  # fmt: skip
# Verbs that edit a text: a request built on one asks to change the reply ("Drop the intro.", "Use metric units.").
EDITS = EDITS_WITH_OBJECT | {
    "cut", "drop", "remove", "delete", "trim", "shorten", "lengthen", "skip", "omit", "lose", "ditch", "rewrite",
    "rephrase", "reword", "redo", "reformat", "format", "fix", "correct", "simplify", "condense", "tighten", "soften",
    "tone", "spell", "round", "recheck", "double-check", "recalculate", "recount", "replace", "swap", "switch", "use",
    "stick", "avoid", "include", "mention", "add", "change", "adjust", "edit", "revise", "update", "clarify", "split",
    "merge", "move", "reorder", "put", "focus", "proofread", "capitalise", "capitalize", "be", "stop", "quit", "try",
    "reduce", "sum", "boil", "narrow", "cite", "name", "bold", "indent", "highlight", "lower", "raise", "increase",
    "decrease", "ease", "scale", "slow", "speed", "widen", "rename", "sort", "double", "halve",
}  # fmt: skip
# Words that open a clause and take "it"/"that" after them without being a request ("love it", "forget it").
NOT_REQUEST_VERBS = {
    "forget", "is", "was", "and", "but", "or", "so", "because", "if", "when", "what", "how", "why", "where", "like",
    "about", "than", "with", "of", "for", "to", "in", "on", "at", "by", "from", "love", "loved", "liked", "hate",
    "got", "did", "does", "do", "done", "keep", "think", "thought", "guess", "suppose", "believe", "know", "knew",
    "said", "say", "read", "saw", "see", "try", "tried", "made", "nailed", "get", "call", "mean", "meant", "want",
    "need", "found",
}  # fmt: skip

# The parts of a reply a user points at ("the intro", "your answer").
REPLY_PARTS = {
    "answer", "reply", "response", "result", "output", "summary", "text", "list", "intro", "introduction", "opening",
    "greeting", "conclusion", "ending", "number", "numbers", "total", "sum", "units", "unit", "format", "formatting",
    "tone", "table", "example", "examples", "explanation", "translation", "email", "draft", "message", "letter",
    "paragraph", "paragraphs", "sentence", "sentences", "word", "words", "title", "heading", "headings", "bullet",
    "bullets", "working", "calculation", "steps", "step", "figure", "value", "date", "name", "spelling", "code",
    "function", "version", "wording", "style", "layout", "language", "part", "bit", "section", "point", "points",
    "jargon", "emojis", "emoji", "comment", "line", "lines", "math", "maths", "arithmetic", "amounts", "quantities",
    "details", "source", "sources", "link", "links", "gist", "essentials", "highlights", "basics", "takeaway",
    "takeaways", "tldr", "length", "structure", "order", "query", "clause", "formula", "multiplication", "division",
    "addition", "subtraction", "product", "difference", "quotient", "method", "approach", "reasoning", "logic",
    "calculations", "command", "commands",
}  # fmt: skip

# Languages a reply is written in, natural and programming, by the names users type (each mapped to one name): the
# reply's language set against the one the request asked for ("that's French" after a request in Spanish).
LANGUAGES = {
    **{w: w for w in (
        "english", "french", "spanish", "german", "italian", "portuguese", "dutch", "russian", "chinese", "mandarin",
        "japanese", "korean", "arabic", "hindi", "turkish", "polish", "swedish", "greek", "latin", "hebrew",
        "python", "javascript", "typescript", "java", "rust", "ruby", "php", "kotlin", "swift", "sql", "bash", "html",
        "css", "perl", "haskell", "scala",
    )},
    "js": "javascript", "ts": "typescript", "py": "python", "español": "spanish", "castellano": "spanish",
    "français": "french", "deutsch": "german", "italiano": "italian", "português": "portuguese",
}  # fmt: skip

# Units of measure by the names and abbreviations users type, each to (its unit, what it measures): a unit set against
# the reply's unit of the same measure ("km per second" after "km per hour", "Celsius" after "°F").
_UNIT_NAMES = {
    "time": {
        "second": ("second", "seconds", "sec", "secs"), "minute": ("minute", "minutes", "min", "mins"),
        "hour": ("hour", "hours", "hr", "hrs", "h"), "day": ("day", "days"), "week": ("week", "weeks"),
        "month": ("month", "months"), "year": ("year", "years"),
    },
    "length": {
        "millimetre": ("mm", "millimetre", "millimetres", "millimeter", "millimeters"),
        "centimetre": ("cm", "centimetre", "centimetres", "centimeter", "centimeters"),
        "metre": ("metre", "metres", "meter", "meters"), "kilometre": ("km", "kilometre", "kilometres", "kilometer",
        "kilometers"), "inch": ("inch", "inches"), "foot": ("foot", "feet", "ft"), "yard": ("yard", "yards"),
        "mile": ("mile", "miles", "mi"),
    },
    "mass": {
        "gram": ("g", "gram", "grams"), "kilogram": ("kg", "kilo", "kilos", "kilogram", "kilograms"),
        "pound": ("lb", "lbs", "pound", "pounds"), "ounce": ("oz", "ounce", "ounces"), "ton": ("ton", "tons", "tonne",
        "tonnes"),
    },
    "volume": {
        "millilitre": ("ml", "millilitre", "millilitres", "milliliter", "milliliters"), "litre": ("litre", "litres",
        "liter", "liters", "l"), "cup": ("cup", "cups"), "pint": ("pint", "pints"), "gallon": ("gallon", "gallons"),
        "tablespoon": ("tbsp", "tablespoon", "tablespoons"), "teaspoon": ("tsp", "teaspoon", "teaspoons"),
    },
    "temperature": {
        "celsius": ("celsius", "centigrade", "°c", "c"), "fahrenheit": ("fahrenheit", "°f", "f"),
        "kelvin": ("kelvin",),
    },
}  # fmt: skip
UNITS = {
    name: (unit, measure) for measure, units in _UNIT_NAMES.items() for unit, names in units.items() for name in names
}
# Abbreviations that are other words too name a unit only written after a number ("5h", "38.5°F", "3 mi").
UNIT_ABBREVIATIONS = {"c", "f", "g", "h", "l", "mi", "°c", "°f"}

# A reply made only of these is a brief approval ("ok cool", "yep"); beside other words they approve nothing.
BRIEF = {
    "gotcha", "noted", "understood", "roger", "done", "okie", "okey", "oki", "okk", "ok", "okay", "k", "kk", "yes",
    "yeah", "yep", "yup", "ya", "sure", "alright", "right", "cool", "mhm", "aha", "fine", "good", "great", "nice",
    "perfect", "thanks", "thank", "you", "thx", "ty", "please", "all", "oh", "ah", "ooh", "now", "then", "that's",
    "it", "that", "absolutely", "definitely", "indeed", "correct", "exactly", "fair", "👍", "🙏", "🙌",
}  # fmt: skip
# Words that open a clause without changing what it says.
FILLER = {
    "lol", "haha", "ha", "lmao", "wait", "hmm", "hm", "hmmm", "um", "umm", "uh", "well", "oh", "ah", "so", "and",
    "but", "also", "then", "ok", "okay", "alright", "honestly", "please", "pls", "plz", "kindly", "maybe", "actually",
    "yeah", "yes", "sorry", "erm", "though", "however", "although", "except", "still", "again", "now", "right",
    "yep", "yup", "ya", "yea", "yah", "btw", "fyi", "anyway", "anyways", "tbh", "imo", "incidentally",
}  # fmt: skip
NEGATORS = {
    "not", "never", "no", "hardly", "barely", "cannot", "nothing", "nobody", "neither", "nor", "dont", "doesnt",
    "didnt", "isnt", "wasnt", "arent", "werent", "cant", "couldnt", "wont", "wouldnt", "shouldnt", "aint", "without",
}  # fmt: skip
# Words between an approving word and what it is said of ("that is really very good").
INTENSIFIERS = {
    "really", "very", "so", "pretty", "super", "quite", "just", "absolutely", "totally", "much", "way", "truly", "all",
    "actually", "genuinely", "exactly", "not", "too", "soo", "sooo", "a", "an", "the", "most", "more",
}  # fmt: skip
COPULAS = {
    "that's", "it's", "this's", "looks", "look", "sounds", "sound", "seems", "seem", "reads", "feels", "is", "are",
    "was", "were", "be", "these're", "they're", "you're", "thats", "its",
}  # fmt: skip

# Numbers a user spells out when setting a value right ("eight, surely"). "one" is left out: in feedback it is mostly a
# pronoun ("that one", "the other one"), not a value.
NUMBER_WORDS = {
    "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8, "nine": 9, "ten": 10, "eleven": 11,
    "twelve": 12, "thirteen": 13, "fourteen": 14, "fifteen": 15, "sixteen": 16, "seventeen": 17, "eighteen": 18,
    "nineteen": 19, "twenty": 20, "thirty": 30, "forty": 40, "fifty": 50, "sixty": 60, "seventy": 70, "eighty": 80,
    "ninety": 90,
}  # fmt: skip

# Names of days and months: stated, they set a value against the reply only if it named one too ("It's on Friday."
# corrects "Thursday" but only informs after a reply that named no day).
CALENDAR = {
    "monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday", "january", "february", "march",
    "april", "may", "june", "july", "august", "september", "october", "november", "december",
}  # fmt: skip

# Short adjectives whose -er comparative a user asks for ("Shorter.", "make it warmer"); longer ones take "more".
SHORT_ADJECTIVES = {
    "short", "long", "simple", "clear", "brief", "tight", "calm", "warm", "cold", "soft", "plain", "crisp", "quick",
    "fast", "slow", "big", "small", "bold", "light", "dark", "deep", "broad", "wide", "narrow", "high", "low", "loud",
    "quiet", "strong", "weak", "sharp", "smooth", "rough", "neat", "clean", "fresh", "kind", "nice", "fine", "firm",
    "harsh", "lean", "dense", "sweet", "cool", "hard", "tough", "blunt", "terse", "curt", "flat", "dry", "large",
    "late", "young", "old", "cheap", "safe", "tall", "thin", "thick", "slim", "close", "wise", "smart", "bright",
    "cute", "rich", "poor", "great", "tame", "wild", "mild",
}  # fmt: skip
# -ier words that are not comparatives.
NOT_COMPARATIVE_IER = {
    "cashier", "barrier", "carrier", "soldier", "frontier", "premier", "courier", "dossier", "pier", "tier", "glazier",
    "clothier", "hosier", "earlier",
}  # fmt: skip

# Words too common to show that a question is about what the request named.
COMMON = {
    "what", "with", "that", "this", "have", "from", "your", "about", "give", "tell", "make", "please", "write",
    "could", "would", "should", "there", "their", "them", "they", "then", "than", "when", "where", "which", "while",
    "will", "just", "like", "some", "into", "also", "only", "very", "more", "most", "much", "many", "does", "done",
    "help", "need", "want", "know", "show", "find", "good", "best", "first", "last", "next", "time", "thing", "things",
    "here", "been", "were", "each",
}  # fmt: skip


def is_comparative(word: str) -> bool:
    """<adj>er / <adj>ier of a short adjective: shorter, simpler, bigger, friendlier (not answer or lifesaver)."""
    if word.endswith("ier"):
        return len(word) > 4 and word not in NOT_COMPARATIVE_IER
    if not word.endswith("er") or len(word) < 5:
        return False
    stem = word[:-2]
    doubled = stem[-1:] == stem[-2:-1] and stem[:-1] in SHORT_ADJECTIVES  # bigger, hotter
    return stem in SHORT_ADJECTIVES or stem + "e" in SHORT_ADJECTIVES or doubled


def is_approving(word: str) -> bool:
    return word in APPROVING or (bool(APPROVING_SUFFIX.search(word)) and word not in FAULT)
