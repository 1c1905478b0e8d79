"""How the rule judge reads a user's reply: each clause gets a *reading class* from its form.

(Longer than claw's ~350-line norm on purpose: it is one grammar whose classes are tried in order;
the order is the meaning, so the classes stay in one file, in that order.)

A reply is split into sentences and each sentence into clauses (at , ; : dashes, and before but /
though / except / apart from). Each clause is read by the first class below whose shape it has. A
class is a grammatical shape over the word classes of `claw.judge.lexicon` (approving adjectives,
verbs that edit a text, the parts of a reply), never a list of whole sentences, so it reads replies
it has not seen. Some shapes also look at the turn: the words of the user's request and of the
reply being judged. Corrections are tried before approvals; what fits no class is neutral.

The classes, in the order they are tried (`CORRECTIONS`, then the approvals):

- denial: a leading no / nope / nah — "No, that's descending."
- near_miss: almost / close / nearly / not quite — "Close, but the tone is off."
- negated_approval: a negation before an approving word, a verb of success or of uptake, or a quality the
  request asked for; the reply's own word denied; the reply said not to do something; "not very <word>" —
  "not great", "doesn't look right", "I can't read German", "Not Toronto.", "This doesn't recurse into
  subfolders.", "Not very catchy.", "That wasn't brief." (after "keep it brief"), "still not centred"
- fault: a word that finds fault; mis-…ed / over-…ed; "is off"; "hard to read"; "nothing to do with"; over a
  budget or limit; a magnitude doubted ("that seems high"); "already do / use …" — "Sounds robotic.", "The name is
  misspelled.", "That's over my budget."
- excess: too / overly + word (not "not too"); a hedge (a bit, kind of) + a word that does not approve; "it's
  just a …"; "longer than …"; a count of text over a limit — "Too wordy.", "It's a bit long.", "That's more
  than 20 words."
- value: "X, not Y"; "not Y but X"; a number (digits or spelled, "1,000" = "1000") or name stated that the reply
  does not contain, of a subject the turn is about, unless it is the user's own circumstance, the premise of a
  question asked next, approved ("38 is fine") or a date after a reply that named none; a bare name against a short
  reply that named another ("Ottawa."); "I get 42"; "more like 38";
  "pretty sure …", "surely"; "actually" in a statement — "It should say 42, not 24.", "It was Jane Austen.",
  "eight, surely"
- prohibition: don't / never / stop / no more / no need … — "Don't use bullet points."
- preference: I'd prefer / I'd rather / I (clearly, literally …) asked for / I wanted / I was thinking / more
  than I need / "X means X", not in a hypothetical ("And if I only want …?") — "I wanted it in Python."
- your_fault: you + forgot / missed / ignored / left out / didn't / keep … — "You forgot the units."
- comparative: more / less / fewer + word, <adj>er, not so <adj> — in a request, a fragment, after a
  modal or as an elliptical question — "Shorter.", "Please be more concise.", "More specific?"
- modal: it / this / you + should / needs / could (be); "would be better if", "would be nice" —
  "That should be 42."
- edit_request: a request (imperative, please, can you …, how about …) whose verb edits a text, or
  aimed at the reply by a constraint (just, only, instead, in N words, like a kid) or by a referent
  with a manner ("say it in English"); a fragment with please or a constraint; the form of the reply as a
  fragment (as a / in …); a standing instruction (next time, from now on); an addition ("… in it too") —
  "Use metric units.", "Just tell me the number first, please.", "English please.", "Three bullets max.",
  "as a fraction please", "Only the verdict next time."
- fault_question: why + you / why is it … / why would it be …; why + a verb; did you even …; isn't it …
  / are you sure (with or without "?"); are you kidding; a statement asked back ("$2,499 is under $800?"); a
  value alone, asked ("Nine?" against 8); a question asked in disbelief ("thats spanish??"); a quality the
  request asked for, asked back ("Was that brief?"); "…, remember?"; where's / and the <thing the request named>; how
  is <it> <a word of the request> — "Why is it in French?", "How is beef vegetarian?"
- redo: again / redo / start over, outside a question — "Try again."
- partial: an approval, then but / though / except / apart from + a clause that is no approval, or an
  elided "isn't" — "Good, but drop the intro.", "The first part is fine, the second isn't."
- no_fault: a fault or a reviewer's remark denied by a determiner, or the excess denied, in a statement — "No
  notes.", "I don't see any typos.", "Nothing I'd change.", "Not too long."
- acceptance: a concession, an understanding, the user's own result agreeing, a choice from the reply, acting
  on what the reply offered, the reply kept — "Fair enough.", "That explains it.", "That's what I got too.",
  "Tuesday it is.", "Going with Bubbles.", "Keep it as is.", "Sent."
- approval: thanks; an approving phrase; an approving word said of the reply, not negated, not asked —
  "Sounds good.", "Works for me.", "That trick is amazing."
- brief_approval: a reply made only of yes / ok / sure / cool … and the reply's own words — "ok cool",
  "yep", "ooh sunny, yes", "ok yeah 12".

Beside an approval, a bare "no X" lists what the reply is free of ("Great, no waffle." reads no_fault).

A topic changed on purpose ("Unrelated, but …", "Random question: …") drops its marker before reading, and
"btw" / "tbh" open a clause like "well". A step forward ("now", "next", "another") keeps a request that does not
edit the reply neutral ("Now translate it into Spanish."); approvals inside a question do not count ("How does that
work?"); an approving word said of something else does not count ("the weather is nice"); a brief "ok" approves
only when the whole reply is brief approval ("ok, what's next?" is neutral).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from claw.judge.lexicon import (
    APPROVING,
    APPROVING_COMPARATIVES,
    BRIEF,
    CALENDAR,
    COMMON,
    COPULAS,
    EDITS,
    EDITS_WITH_OBJECT,
    FAULT,
    FILLER,
    INTENSIFIERS,
    NEGATORS,
    NOT_REQUEST_VERBS,
    NUMBER_WORDS,
    REMARKS,
    REPLY_PARTS,
    SUCCEEDS,
    UPTAKE,
    WEAK_APPROVING,
    is_approving,
    is_comparative,
)

# ---- shapes -------------------------------------------------------------------------------------------------------
_PARTS = "|".join(sorted(REPLY_PARTS))
# What points at the reply: a pronoun, or a part of it ("the intro", "your answer").
_REFERENT = rf"(?:it|this|that|them|these|those|(?:the|your|that|this|my) (?:[\w-]+ )?(?:{_PARTS}))"
# Contrast words that open the corrective half of a partial acceptance.
_CONTRAST = (
    "but",
    "though",
    "although",
    "however",
    "except",
    "only",
    "just",
    "apart",
    "aside",
    "other than",
    "save for",
)

# Polite formulas whose words would otherwise read as cues ("thanks again", "no worries", "never mind").
_NOT_CUES = re.compile(
    r"\b(?:thanks|thank you)(?: so much)? again\b|\bno (?:problem|worries|rush|pressure|hurry)\b"
    r"|\bno need to (?:worry|apologi[sz]e|rush)\b|\bdon't (?:worry|apologi[sz]e|mind)\b|\bnever ?mind\b"
    r"|\bno,? thanks?\b|\bno,? thank you\b|\b(?:see (?:you|ya)(?: later| soon| around)?|bye|goodbye|take care)\b"
)
_THANKS = re.compile(r"\b(?:thanks|thank you|thank u|thx|ty|tysm|ta|cheers|appreciate(?:d)?|kudos)\b|[👍🙏🙌😊🎉]|❤️")
_WANTED = r"(?:wanted|needed|asked for|meant|was looking for|had in mind|was after)"
_APPROVING_PHRASE = re.compile(
    r"\b(?:that's it|that is it|that's the one|that'?ll do|that will do|will do|nailed it|got it|bingo|exactly|spot on"
    r"|well done|good job|great job|nice job|nice work|good work|great work|lgtm|makes? sense|made sense"
    rf"|(?:just|exactly|all|precisely|that's|that is|it's|this is) what i {_WANTED}"
    r"|(?:exactly|that's|that is|it's|this is) (?:exactly )?the [\w-]+ (?:i|we) (?:want|need|like|wanted|needed|meant"
    r"|was after|had in mind)\b"
    r"|(?:love|like|liked|loved) (?:it|this|that|the|how|them|these)"
    r"|(?:works|worked|fine|good) (?:for|by|to) (?:me|us)"
    r"|^(?:i'?ll|i will|we'?ll|will|gonna|going to) (?:use|take|go with|send|keep|print|post|submit|try|hand in) "
    r"(?:it|that|this|them|those|these)\b|^(?:sending|using|going with|taking) (?:it|that|this)\b"
    r"|(?:that|it|this) (?:really |actually |totally |definitely )?"
    r"(?:works|worked|helps|helped|does it|did it|did the trick|answers|fixed|solved)"
    r"|\b[\w.,]+ (?:matches|matched|checks out|adds up)\b"
    r"|(?:^|\bi |\bwe )(?:really |do |absolutely |totally )?(?:like|love|appreciate|liked|loved)\b|^works\b"
    r"|(?:^|\bthat's |\bit's )right on|^(?:sure|ok|okay|yes|yeah),? why not|^you'?re (?:a|an|the) (?!worst\b)[\w-]+$)"
)
# A step forward; "next time" is not one, it tells the reply how it should have been ("Just the number next time.").
# "Well explained.", "Really well put.": "well" before a participle praises ("well" alone opens a clause as filler).
_WELL_DONE = re.compile(r"^(?:(?:very|really|so|super|pretty) )?well[ -](?:[a-z]+ed|written|put|said|done|thought)\b")
_NEW_STEP = re.compile(
    r"\b(?:now|next(?! time)|another|one more|afterwards|continue|go on|carry on|keep going"
    r"|try (?:this|these)(?: ones?)?(?=$|[:,.!]))"
)
_REQUEST_FRAME = re.compile(
    r"^(?:(?:can|could|would|will|won't) (?:you|u)|(?:can|could) (?:it|this|that|they|these) (?:be|get|have|sound"
    r"|look|use|go)"
    r"|(?:how|what) about|would you mind|do you mind|i'?d like you to|i want you to|i need you to"
    r"|i'?d appreciate (?:it )?if you"
    r"|let'?s|let us|(?:can|could) we|try to|make sure(?: to| you)?|remember to|you (?:should|need to|have to|must)"
    r"|i'?d like (?:it|this|that|them)|i want (?:it|this|that|them)|i need (?:it|this|that|them))\b"
    r"[ ,]*(?:please |just |also |maybe |actually )*"
)
_CONSTRAINT = re.compile(
    r"\b(?:say|write|use|call|put|add|start with|end with)(?: it as)? ['\"]"  # dictated wording: "say 'you'"
    r"|\b(?:just|only|instead|without|directly|straight|again|anymore|any more|at most|no more than|max(?:imum)?"
    r"|(?:under|below|less than|fewer than|up to|within) \d+"
    r"|(?:in|to|into|with|using) (?:one|two|three|four|five|a few|a couple(?: of)?|\d+|a single|few|fewer) "
    r"(?:words?|sentences?|lines?|paragraphs?|bullets?|points?|steps?|parts?|char(?:acter)?s?|numbers?|digits?)"
    r"|^(?:one|two|three|four|five|six|[1-9]|a few|a couple of|a single|single) (?:words?|sentences?|lines?"
    r"|paragraphs?"
    r"|bullets?|bullet points|points?|steps?|numbers?|digits?)$"  # "One line.": the length itself
    r"|one word|(?:as|in|into) (?:a |an )?(?:bullet(?:ed)?|bullets|numbered|list|table|plain|simple|simpler|single"
    r"|short|one)"
    r"|in (?:bullet )?points|the point|first|at the (?:top|start|end|beginning)|on top"
    r"|next time|from now on|in (?:the )?future|going forward)\b"
    r"|^(?:start|begin|lead|open|end|finish|close|stick) (?:me |us |it |them |the [\w-]+ )?(?:with|by|off|over|to)\b"
    r"|^(?:get rid of|leave out|cut out|take out|leave off|do away with|cut down|sum up|boil down|spell out"
    r"|break down|write out|lay out|set out|write down"
    r"|try using|try a different|try another|try something|try harder)\b"
    r"|\blike (?:a|an|i'm|i am|you're|you are|someone|a real|i was|for)\b|\bas (?:if|though)\b"
    r"|\bin (?:plain|simple|simpler|everyday|layman'?s?|normal|human|fewer|less) \w+"
)
# The form a reply should take, as a fragment: "as a fraction", "in Celsius", "into a table" (not "in the garden").
_FORM = re.compile(
    r"^(?:as|in|into) (?!(?:the|my|your|his|her|our|their|this|that|these|those|it|there|here|case|time|general)\b)"
    r"(?:a |an )?[a-z][\w-]*(?: [a-z][\w-]*)?(?: (?:please|pls|plz|instead|then))?$"
)
# A standing instruction: what the reply did is to change from now on.
_STANDING = re.compile(r"\b(?:next time|from now on|in (?:the )?future|going forward)\b")
# Something added to the reply: "… in it too", "… to that as well".
_ADDITION = re.compile(r"\b(?:in|into|to|on|with) (?:it|there|this|that|them) (?:too|as well|also)\b")
_REFERENT_MANNER = re.compile(
    rf"^[\w'-]+ (?:me |us )?{_REFERENT} "
    r"(?:in|into|as|with|without|using|like|so|to|again|more|less|[\w-]+er\b|properly|correctly|down|up|out|back"
    r"|over)\b"
)
_AIMED = re.compile(
    rf"^[\w'-]+ (?:me |us )?(?:{_REFERENT}|your [\w-]+|the [\w-]+ (?:part|bit|section|line|sentence|paragraph))\b"
)
_PRONOUN_OBJECT = re.compile(r"^[a-z][\w-]* (?:it|this|them|that(?! (?:it|you|he|she|they|we|i|the|there|this)\b))\b")
_COMPARATIVE = re.compile(
    r"\b(?:more|less) (?!(?:about|than|of|on|please|questions?|things?|times?|ones?|and|or|to|like|in|with|for|at|from"
    r"|info|information|here|there|then|now|thing|often|money|people|options?|examples?|ideas?|recipes?"
    r"|help)\b)[a-z][\w-]*"
    r"|\bfewer [\w-]+|\bnot (?:so|as|that|too) (?!(?:sure|bad|much|many|far|long ago)\b)[\w-]+"
)
_ELLIPTICAL_COMPARATIVE = re.compile(
    r"(?:(?:maybe|perhaps|a bit|a little|slightly|much|way|even|a lot|a tad|bit|something|anything|one|a|an) )?"
    r"(?:(?:more|less) [\w-]+|[\w-]+er)(?: (?:one|ones|option|options|version|idea|ideas))?"
    r"(?: (?:maybe|perhaps|please|then|though))?"
)
_COMPARATIVE_SLOT = re.compile(
    r"(?:^|\b(?:make|makes|keep|be|get|go|sound|come|feel|look|read|it|this|that|them|bit|little|lot|much|way|slightly"
    r"|even|far|somewhat|tad|something|one|version|please)) ?$"
)
_MODAL = re.compile(
    rf"(?:^|\b(?:it|this|that|they|these|there|you|{_REFERENT})(?:'s| is| are)?(?: also| really| probably)? )"
    r"(?:should(?:n't)?(?: have)?|needs?(?: to)?|has to|have to|must|ought to|could(?: have)?(?! you)"
    r"|would)\b(?! you\b)"
    r"|\bwould (?:be|have been|look|read|sound|work) (?:[\w-]+ )?"
    r"(?:better|nicer|great|good|clearer|best|preferable|ideal) (?:if|to|with|without)\b"
    r"|^(?:needs?|could use|could do with|should)\b|\bwould be (?:\w+ )?(?:nice|better|good|great|ideal|preferable"
    r"|helpful|clearer)$"
)
_PREFERENCE = re.compile(
    r"(?<!what )(?<!all )(?<!just )(?<!exactly )(?<!precisely )\bi(?: would|'d|'m| was| really| just| [a-z]+ly)?"
    r" (?:really )?"
    r"(?:prefer|rather|asked|said|told you|meant|wanted|want just|want only|need just|need only|was hoping|hoped"
    r"|was expecting|expected|was looking for|was after|specified|mentioned|didn't (?:ask|want|need|say|mean)"
    r"|did not (?:ask|want|need|say|mean)|never (?:asked|said|wanted)|(?:only|just) (?:need|want|needed|wanted|asked)"
    r"|was thinking|had in mind|was going for|was picturing|imagined|was imagining)\b"
    r"|\bthan (?:i|we) (?:need|needed|asked|wanted|expected|requested|hoped)\b|^([\w' -]+) means \1$"
    r"|\b(?:i|we|my [\w-]+|they|he|she) (?:also )?(?:need|needs|want|wants|expect|expects|require|requires)"
    rf"(?: to see)? (?:the|a|an|some|more|your) (?:[\w-]+ )?(?:{_PARTS})\b"
)
_YOUR_FAULT = re.compile(
    r"\b(?:you|you've|you have|you just|you've just)(?: still| again| also| completely| totally| clearly)? "
    r"(?:forgot|forget|missed|ignored|skipped|left|dropped|misread|misunderstood|mixed|confused|keep|kept|didn't"
    r"|did not"
    r"|never|haven't|have not|changed|broke|made up|invented|repeated|used|gave|wrote|put|added|swapped|flipped"
    r"|reversed"
    r"|switched|only|overlooked|omitted|lost|cut off|stopped|told|claimed|called|marked"
    r"|got (?:it|that|this|the [\w-]+) (?:wrong|backwards"
    r"|mixed))\b"
    r"|\byou(?:'re| are)(?: still| just)? "
    r"(?:missing|ignoring|not|using|giving|repeating|making|overcomplicating|overthinking|confusing)\b"
)
_AUX = (
    r"is|are|was|were|do|does|did|can|could|would|should|will|has|have|had|'s|isn't|aren't|wasn't|don't|doesn't|didn't"
    r"|can't|won't|hasn't|haven't"
)
_FAULT_QUESTION = re.compile(
    # why + you, why is it …, why + a verb or a bare word ("Why German?", "Why recommend that?")
    r"^why (?:did|do|does|would|have|has|are|were|is|was|isn't|didn't|doesn't|aren't|wasn't|hasn't|won't|can't|'d"
    r"|'re)? ?"
    r"(?:you|your)\b"
    rf"|^why(?: is|'s| was| are| were| isn't| wasn't| does| doesn't)? (?:it|this|that|there|these|those"
    rf"|the (?:{_PARTS}))\b [\w-]+"
    r"|^why (?:would|should|could|must|will) (?:it|this|that|they|there|these|those) be\b"  # a claim doubted
    r"|^why (?!not\b|is that$|that$)(?:so |all |the |such )?[\w-]+(?: [\w-]+)?$"
    rf"|^why (?!(?:not|that|then|exactly|though|{_AUX})\b)[a-z]+ \w"
    # did you even …, did I ask …, isn't it …
    r"|^(?:did|have) you (?:even|actually|really|read|forget|miss|check|see|look|listen|notice|understand|get|just"
    r"|not|skip"
    r"|ignore)\b|^(?:did|have) i (?:ask|say|tell|want|mention|request)\b|^didn't i (?:say|ask|tell|mention)\b"
    r"|^(?:isn't|aren't|wasn't|weren't|shouldn't|wouldn't|doesn't|don't|didn't|can't|couldn't|hasn't|haven't|won't) "
    r"(?:it|that|this|there|the|you|your|those|these)\b"
    # doubt and disbelief
    r"|\bare you sure\b|^is (?:that|this|it) (?:really |even |actually )?(?:right|correct|true|accurate)\b"
    r"|^is (?:that|this|it) (?:really |even |actually )?(?:it|all)$"
    r"|^(?:really|seriously|huh|what)$|^are you (?:trying to|kidding|serious|joking|for real|okay)\b|\bremember$"
    r"|\bdid you forget\b|^since when\b"
    r"|^what happened to\b|^what's (?:with|up with) (?:the|all|this|that)\b|^how (?:did|do) you (?:get|come up"
    r"|arrive)\b"
    r"|^how (?:is|does) (?:that|this|it) (?:\w+ )?(?:right|correct|make sense|add up|answer|help)\b"
    rf"|^where did (?:the|my|your) \w+ go\b|^(?:and|but|so) (?:where|what about) (?:the|my) (?:{_PARTS})\b"
    # a statement asked back: "$2,499 is under $800?"
    r"|^(?!(?:what|how|who|where|when|why|which|is|are|was|were|do|does|did|can|could|would|should|will|and|or|what's"
    r"|how's|who's|any|so|but)\b)[\w$%.,'-]+ (?:[\w$%.,'-]+ )?(?:is|are|was|'s|equals|makes) [\w$%.,'-]+"
)
# A quality the request asked of the reply, asked back: "Was that brief?" after "Keep it brief".
_QUALITY_BACK = re.compile(
    r"^(?:was|is|were|are) (?:that|this|these|those|your \w+)(?: really| actually| even)?(?: in)? ([a-z-]+)$"
)
# A question asked in disbelief: "??", "?!".
_INCREDULOUS = re.compile(r"(?:\?[?!]+|!\?)\W*$")
_DEMAND = re.compile(
    r"\b(?:keep|make|be|stay)(?: it| this| them| the [\w-]+)?(?: very| really| super| nice and)? ([a-z][\w-]+)\b"
    rf"|\b([a-z][\w-]+) (?:{_PARTS}|version|reminder|note|tip|slogan|overview|description|reply|one)\b"
    r"|\b(?:in|into) (?:a |an )?([a-z][\w-]+)\b"
    r"|\b(?:write|give|draft|compose|create|suggest|send|produce|make)(?: me| us)? (?:a|an|some) ([a-z][\w-]+) [a-z]"
)
_NOT_QUALITIES = COMMON | {
    "sure", "the", "a", "an", "my", "your", "this", "that", "one", "some", "any", "it", "me", "us", "in", "of", "to",
    "for", "and", "or", "as", "is", "be", "each", "every", "no", "own", "same", "other", "new",
}  # fmt: skip
_WH = {"what", "why", "how", "where", "who", "really", "exactly", "seriously"}
_WHERE_IS = re.compile(r"^where(?:'s| is| are|'re)? (?:the|my|your|all the|all my) ([\w-]+(?: [\w-]+){0,2})")
_AND_THE = re.compile(r"^(?:(?:what|how) about )?(?:the|my|your) ((?:[\w-]+ )?[\w-]+)$")  # "and the travel time?"
_CHALLENGE = re.compile(r"^(?:how|since when) (?:is|are|was|were|can|could) (?:this|that|it|[\w-]+) ")
_PROHIBITION = re.compile(
    r"^(?:don't|do not|dont|never(?! \w+ed\b| heard| seen| been| had| knew| thought| got| saw| did| was)|stop|quit"
    r"|avoid"
    r"|no more|no need (?:to|for)|enough (?:with|of)|less of|skip the|lose the|not so much)\b"
    r"|\b(?:please|just|and|so|but|then) (?:don't|do not|dont|stop|avoid|never)\b|^no [\w-]+ (?:please|pls|this time"
    r"|next time)$"
)
_FAULT_NOUNS = "|".join(sorted(REMARKS | FAULT))
_DENIAL = re.compile(
    r"^(?:no+|nope|nah|nop|wrong|incorrect|negative)(?:$|(?=[\s,.!]))(?! (?:problem|worries|thanks|rush|doubt)\b)"
    rf"(?! (?:(?:real|major|big|serious|obvious|further|other|more) )?(?:{_FAULT_NOUNS})\b)"  # "No typos." approves
)
# A fault or remark denied by a determiner, not a verb ("no typos", "I don't see any issues", but not "doesn't fix the
# problem"), within the first words of the clause.
_NO_FAULT = re.compile(
    r"^(?:[\w']+ ){0,3}?(?:no|zero|without|nothing|not (?:a|one|a single|any)|(?:[\w']*n't|not) (?:see |find |spot "
    r"|notice |have |got )?any)(?: (?:real|major|big|serious|obvious|further|other|more|single|glaring|actual))?"
    rf" (?:{_FAULT_NOUNS})\b"
    r"|^(?:[\w']+ ){0,2}?(?:not|isn't|wasn't|never) (?:too|overly) [\w-]+"  # "Not too long.": the excess denied
)
# Nothing left to change: "Nothing to add.", "nothing I'd change", "there's nothing to fix".
_NOTHING_TO_CHANGE = re.compile(
    r"\bnothing (?:else |more |much |at all )?(?:to|i'?d|i would|i want to|i'd want to|that needs? (?:to be )?"
    r"|needs (?:to be )?)\s*(?:add|change|fix|cut|edit|correct|improve|tweak|adjust|remove|added|changed|fixed"
    r"|changing|fixing|adding)\b"
    r"|\bnothing (?:else|more|further)(?: (?:i|we) (?:need|want)| needed| to ask| for now)?$"  # "Nothing more I need."
)
# Acceptance without an approving word: a concession ("Fair enough.", "Point taken."), understanding ("That
# explains it."), the user's own result agreeing ("That's what I got too."), a choice made from the reply
# ("Tuesday it is.").
_ACCEPTANCE = re.compile(
    r"^(?:fair (?:enough|point)|good point|point taken|i stand corrected|(?:you )?got me"
    r"|you'?re (?:so |totally |absolutely )?right"
    r"|true enough|that's true|that's fair)\b"
    r"|^(?:that|this|it|which) (?:explains|clarifies|clear(?:s|ed) (?:it |that |this |things )?up)\b"
    r"|^now i (?:get|see|understand)\b"
    r"|^i (?:get|understand) it now\b"
    r"|^(?:that's|that is|it's|this is) (?:exactly |just )?what i (?:got|get|have|had|thought|figured|calculated"
    r"|found|worked out|expected|guessed)\b"
    r"|^match(?:es|ed)? (?:what i|mine|my|ours|what we)\b|^(?:i |we )?(?:got|get|had|have) (?:that|the same|it) "
    r"(?:too|as well)$"
    r"|^(?:i|we) (?:got|get|have|had|found) the same\b|^(?:the )?same (?:[\w-]+ )?(?:here|as (?:me|mine|what i|i)"
    r"|(?:i|we) (?:got|had|get))\b|^agreed$"
    r"|^(?!(?:so|here|there|what|that|this|how|where|as|which|who|whatever|if|when|because)\b)(?:[\w'-]+ ){1,3}"
    r"it is(?: then)?$"
    r"|^(?:i'?ll|i will|we'?ll|i'm going to|gonna) (?:keep|leave) (?:it|that|this|them)\b"
    r"|^(?:keep|leave) (?:it|that|this|them)(?: (?:as is|as it is|like that|that way|unchanged|in))?$"
    r"|^(?:just )?(?:sent|posted|submitted|printed|booked|ordered|saved|copied|installed|applied|bought|planted"
    r"|added|used|shared)(?: it| that| them| this)?(?: now| already| off)?$"  # "Sent.": the user acted on the reply
)
# The user about to act on something: "I'll grab a snake plant." (`_acceptance`: when the reply offered it).
_ACTING_ON = re.compile(
    r"^(?:(?:i'?ll|i will|we'?ll|we will|i'm going to|we're going to|gonna|let's) (?:go with|use|take|try|get|grab"
    r"|buy|pick|book|order|make|cook|bake|plant|watch|read|visit|wear|play|choose|follow|start with|go(?: on| for)?)"
    r"|going with|using|taking|picking|booking|ordering|trying) "
    r"(?:the |a |an |some |that |this |those |these )?([\w' -]+)$"
)
# The user's own result the same as the reply's: "Got 12 as well.", "I also get 12."
_SAME_RESULT = re.compile(
    r"^(?:i |we )?(?:also )?(?:got|get|had|have|make|made|found|calculated|counted) (.*\d.*?) (?:too|as well)$"
    r"|^(?:i |we )also (?:got|get|had|make|made|found|calculated|counted) (.*\d.*)$"
)
# A topic changed on purpose ("Unrelated, but …", "Random question: …", "Side note: …"): what follows is no
# feedback on the reply, and the marker itself finds no fault.
_TOPIC_CHANGE = re.compile(
    r"^(?:(?:totally|completely|slightly|kinda|somewhat|a bit|bit) )?(?:(?:unrelated|off[- ]topic)"
    r"(?: (?:question|topic|thing|note|q))?|(?:random|different|side|separate|quick|other|unrelated|new) (?:question"
    r"|topic|thing|note|q))(?:[,:.]| -|(?= but\b))\s*(?:but\s+)?(?=\w)"
    r"|^on (?:an?|another) (?:unrelated|different|separate|side|other) note[,:]?\s*"
    r"|^(?:changing|to change) (?:the )?(?:subject|topic)[,:]?\s*",
    re.IGNORECASE,
)
_NEAR_MISS = re.compile(
    r"^(?:almost|close|nearly|so close|not quite|not exactly|getting there|closer|not there yet)\b|\bnot quite\b"
)
_REDO = re.compile(
    r"\b(?:again|redo|start over|from scratch|another go|another try|another attempt|one more time|try harder"
    r"|do over)\b"
)
_FAULT_SHAPE = re.compile(
    r"\balready (?:read|seen|tried|did|done|do|have|had|know|knew|said|told|mentioned|asked|own|watched|made|got"
    r"|use|follow|tried)\b"
    r"|\b(?:is|are|was|'s|seems|looks|sounds|feels|bit|little|way|slightly|totally|completely|still|all|a tad) off\b"
    r"|\b(?:seems?|looks?|sounds?|feels?)(?: a bit| a little| way| kinda| rather| very| really| quite| pretty)?"
    r" (?:high|low|steep|much|a lot|little|few|many|long|short|big|small|early|late)$"  # "that seems high"
    r"|\b(?:the )?other way (?:round|around)\b|\bthe (?:reverse|opposite)(?: order| way)?$"  # the reply reversed
    r"|\boff by\b|\b(?:over|above|beyond|exceeds?|outside) (?:my|our|the|your|a) (?:budget|limit|price range|range)\b"
    r"|\b(?:hard|difficult|impossible|tough|painful) to (?:read|follow|understand|parse|use|get through|skim)\b"
    r"|\bmis[a-z]{3,}(?:ed|en)\b|\b(?:over|under)[a-z]{4,}(?:ed|en)\b"  # misspelled, overcomplicated
    r"|\bnothing to do with\b|\boff (?:topic|track)\b|\bbeside the point\b|\bmiss(?:ed|es|ing)? the point\b"
)
_HEDGE = re.compile(
    r"\b(?:a bit|a little|a tad|kind of|sort of|kinda|sorta|somewhat|slightly|rather|a touch|a little bit"
    r"|bit) ([\w-]+)"
)
_HEDGE_NEUTRAL = {"more", "of", "about", "help", "to", "with", "like", "the", "a", "and", "confused"}
_EXCESS = re.compile(
    r"(?<!not )(?<!n't )(?:\b(?:too|overly|excessively|overkill)\b(?! bad\b)(?=\s+\S)|\btoo much\b|\btoo many\b)"
    r"|\ba bit much\b"
)  # "not too long" denies the excess (`_NO_FAULT`)
# A count of the reply's text over a limit: "that's more than 20 words", "over three lines".
_OVER_COUNT = re.compile(
    rf"\b(?:more than|over|above|longer than|past|exceeds?|went over) (?:the )?(?:\d+|one|{'|'.join(NUMBER_WORDS)})"
    r"(?: (?:words?|sentences?|lines?|char(?:acter)?s?|paragraphs?|bullets?|bullet points|points|items|steps"
    r"|emojis?)\b"
    r"|$)"
)
_DISMISSIVE = re.compile(
    r"\b(?:it|this|that)(?:'s| is| was)(?: really| basically)? (?:just|only|merely|basically) (?:a|an|the"
    r"|some)\b(?! \w+ (?:i|we) )"
)
_LONGER_THAN = re.compile(r"\b(?:it|this|that|it's|that's|this is|it is|that is)\b.*?\b([\w-]+) than\b")
_NEGATED_DOING = re.compile(
    rf"^(?:{_REFERENT}|it|this|that) (?:doesn't|does not|didn't|did not|won't|can't|cannot|never) (?!(?:matter|bother"
    rf"|hurt|mind)\b)\w"
)
_STILL_NOT = re.compile(
    r"\bstill (?:not|no|isn't|doesn't|won't|can't|didn't|don't|wasn't|aren't|nothing|broken|wrong)\b"
)
_NOT_VERY = re.compile(
    r"(?:\bnot|n't) (?:very|particularly|especially|terribly|super|all that|remotely|overly|that) ([a-z][\w-]*)"
)
_NOT_QUALITY = {"much", "many", "long", "far", "often", "sure", "i", "it", "you", "we", "they", "the", "a", "bad"}
_NOT_FITTING = re.compile(
    r"\bnot (?:it|really|quite|exactly|ideal|there)\b|^not really$|\bnot (?:even )?(?:in|within|under|below|near"
    r"|for) (?:my|our|the)\b"
)
# A number; digits joined by / : - are one value (a date, a time, a ratio), so a reordered date differs.
_NUMBER = re.compile(r"(?<![\w.])-?\d+(?:[.,]\d+)*(?:[/:-]\d+(?:[.,]\d+)*)*")
_SPELLED = re.compile(rf"\b(?:{'|'.join(NUMBER_WORDS)})\b")
_STATED_VALUE = re.compile(
    rf"^(?:(?:it|that|this|the (?:[\w-]+ )?(?:{_PARTS})|[\d\s+\-*/x×÷=().]+)"
    r"(?:'s| is| was| equals| should be| comes to| would be"
    r"| are)(?: actually)? )?(?:(?:more like|closer to|nearer|about|around|roughly|approximately|approx) )?"
    rf"(?:-?\d+(?:[.,]\d+)*|{_SPELLED.pattern})(?: ?%| [a-z%]+)?(?: actually)?$"
    r"|^actually,? .*\d|\d.*\bactually$"
)
_VALUE_CONTRAST = re.compile(
    r"[\w'%.-]+\s*,?\s+(?:and )?not\s+(?:the |a |an |in )?(?!(?:only|just|sure|yet|really|bad|at|too|quite|that|even"
    r"|much|so"
    r"|necessarily|always|everything|all|necessary|needed|to|a|the|what|how|if|because|exactly|enough|for"
    r"|anymore)\b)[\w'%.-]+"
    r"(?: [\w'%.-]+)?[.!]?$|\bnot (?:the |a |an |in )?[\w'%.-]+,? but\b(?! also)"
)
_CONTRADICTS = re.compile(
    r"^(?:i'm |i am )?(?:pretty|fairly|quite|100%|very) sure\b|^i'm sure (?:it|that|this)\b|\bsurely\b"
)
_OWN_RESULT = re.compile(
    r"^i (?:get|got|make|made|count|counted|calculate|calculated|reckon|think it's|believe it's|worked out)\b"
    r"|^(?:got|getting) -?\d[\d.,/:]*(?: [a-z%]+)?$"  # "Got 13." (not "got 2 questions for you")
)
_INTERJECTION = re.compile(r"o+h+|a+h+|h+m+|u+m+|e+r+m+|u+h+|o+o+h+|w+o+w+")
# An affirmative opening a clause: with only the reply's own words after it, it takes the reply up ("ok yeah 12").
_AFFIRMATIVE = re.compile(r"^(?:yes|yeah|yep|yup|ya|yea|ok|okay|right|sure|alright|correct|exactly|indeed)\b")
# A negative question typed without its question mark: "isn't it 1945".
_NEGATIVE_INVERSION = re.compile(
    r"^(?:isn't|aren't|wasn't|weren't|shouldn't|wouldn't|doesn't|didn't|can't|couldn't|won't) "
    r"(?:it|that|this|there|you|the|they|he|she)\b|^are you (?:sure|kidding|serious|joking)\b"
)
_USERS_OWN = re.compile(
    r"^(?:i|i'm|i've|we|we're|my|our|if|when)\b"
)  # the user talking about themselves, not the reply
_COPULA = re.compile(r"(?:'s|\b(?:is|are|was|were|has|have|had|equals|makes|gives|comes|(?:would|should|must) be))\b")
# An information question: the statements before it in the message may be its premises (`_asks_anew`).
_INFO_QUESTION = re.compile(
    r"^(?:how (?:many|much|long|far|old|big|tall|fast|often)|what|what's|which|who|whose|when|where|can you"
    r"|could you|(?:is|would|will) (?:that|it|this) (?:still )?(?:ok|okay|fine|possible|a problem|an issue|enough"
    r"|work|matter|change)|does (?:that|it|this) (?:matter|work|change|still work))\b"
)
# The user's own circumstances ("It's for my son's party on Friday."): context for the reply, not a value it got wrong.
_CIRCUMSTANCE = re.compile(
    r"\b(?:my|our|mine|ours|years? old|year-olds?|aged)\b|^(?:it's|it is|this is|that's|they're|these are) for\b"
)
# Contractions typed without the apostrophe, in casual replies ("thats spanish", "doesnt work"); "its" is one only
# where it opens a clause ("its 2.54"), since elsewhere it is the possessive ("its value"), and "were", "well", "ill",
# "id" are words of their own.
_CONTRACTED = {
    **{f"{w}s": f"{w}'s" for w in ("that", "what", "where", "how", "there", "here", "who", "she", "he")},
    **{f"{w}nt": f"{w}n't" for w in ("do", "does", "did", "is", "was", "are", "were", "could", "would", "should")},
    **{f"{w}nt": f"{w}n't" for w in ("has", "have", "had")},
    "cant": "can't", "wont": "won't", "im": "i'm", "ive": "i've", "youre": "you're", "theyre": "they're",
    "youve": "you've", "theyve": "they've", "aint": "ain't",
}  # fmt: skip
_BARE_CONTRACTION = re.compile(rf"\b({'|'.join(_CONTRACTED)})\b")
_OPENING_ITS = re.compile(r"(^|[,.;:!?]\s*|\b(?:no|yes|yeah|so|but|and|because|way|nope|nah|lol|um|hmm)\s+)its\b")
_WORD = re.compile(r"[\w'-]+|[👍🙏🙌]")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|\n+")
_CLAUSE_BREAK = re.compile(
    r"\s*(?:[;:—–]|,(?!\d)|(?<!\d),)\s*|\s+-+\s+"  # not the comma of 4,213
    r"|\s+(?=(?:but|though|although|however|except|apart from|aside from|other than|save for)\b)",
    re.IGNORECASE,
)


# ---- clauses ------------------------------------------------------------------------------------------------------
def normalise(text: str) -> str:
    """Lower case, straight apostrophes, dashes as commas, no space before punctuation, contractions typed without
    their apostrophe restored ("thats" → "that's", "doesnt" → "doesn't", a clause-opening "its" → "it's"): what the
    shapes match."""
    text = text.lower().replace("\u2019", "'").replace("\u2018", "'").replace("`", "'")
    text = re.sub(r"\s+[—–-]+\s+|[—–]", ", ", text)
    text = _BARE_CONTRACTION.sub(lambda m: _CONTRACTED[m.group(1)], text)
    text = _OPENING_ITS.sub(r"\1it's", text)
    return re.sub(r"\s+([,.;!?])", r"\1", text).strip()


def sentences(text: str) -> list[str]:
    """The sentences of a reply as written (a hint quotes them)."""
    return [s.strip() for s in _SENTENCE_END.split(text) if s.strip()]


def clauses(sentence: str) -> list[str]:
    return [c.strip() for c in _CLAUSE_BREAK.split(sentence) if c.strip(" ,;:")]


def words_of(text: str) -> list[str]:
    return _WORD.findall(text)


def request_words(request: str) -> frozenset[str]:
    """The content words of the user's request: what a reply is expected to contain."""
    return frozenset(w for w in re.findall(r"[a-z][a-z'-]{3,}", request.lower()) if w not in COMMON)


def numbers(text: str, spelled: bool = True) -> frozenset[str]:
    """The numbers a text states, each written one way so that a value compares with the reply's however it is
    typed: "1,000" → "1000", "05" → "5", "09/04" → "9/4", and with `spelled`, "eight" → "8"."""
    found = {re.sub(r",(?=\d{3}\b)", "", n) for n in _NUMBER.findall(text)}
    found = {re.sub(r"(?<![\d.,])0+(?=\d)", "", n) for n in found}
    if spelled:
        found |= {str(NUMBER_WORDS[w]) for w in _SPELLED.findall(text.lower())}
    return frozenset(found)


def _names_something(response: str) -> bool:
    """The reply is a short answer that states a name: it is one ("Toronto.") or has a capital inside a sentence
    ("… is Toronto."), and asks nothing back (a bare name after "Which city?" answers it, it does not correct it)."""
    text = response.strip()
    if not text or text.endswith("?") or len(text.split()) > 10:
        return False
    inside = re.search(r"(?<![.!?:\n]) (?!I\b)[A-Z][a-z]", text)
    return bool(inside or re.fullmatch(r"(?:[A-Z][\w'.-]+ ?){1,3}[.!]?", text))


def demands(request: str) -> frozenset[str]:
    """The qualities a request asks of the reply: a word after keep / make / be ("keep it brief") or before a part
    of the reply ("a quick answer", "a short reminder") — not what it says of other things ("a long flight")."""
    found = {w for m in _DEMAND.finditer(normalise(request)) for w in m.groups() if w}
    return frozenset(found - _NOT_QUALITIES)


def _strip_filler(text: str) -> str:
    """The text without the words that open it without changing what it says (`FILLER`, and interjections however
    drawn out: "ohh", "hmmm", "ahhh")."""
    while True:
        head, _, rest = text.partition(" ")
        head = head.strip(",")
        if not rest or (head not in FILLER and not _INTERJECTION.fullmatch(head)):
            return text
        text = rest.strip(" ,")


def _negated(words: list[str], i: int, window: int = 3) -> bool:
    """A negator among the `window` words before words[i]."""
    return any(w in NEGATORS or w.endswith("n't") for w in words[max(0, i - window) : i])


@dataclass(frozen=True)
class TurnContext:
    """What the shapes know besides the clause: the request's content words and the qualities it asked of the
    reply, the reply's numbers and words."""

    request: frozenset[str] = frozenset()
    response_numbers: frozenset[str] = frozenset()
    response_words: frozenset[str] = frozenset()
    demands: frozenset[str] = frozenset()
    dated: bool = False  # the reply names a day or month (capitalised: "may" the verb is no date)
    named: bool = False  # the reply states a name (a capital inside a sentence, or the whole reply), asking nothing

    @classmethod
    def of(cls, request: str, response: str) -> TurnContext:
        dated = any(w.lower() in CALENDAR for w in re.findall(r"\b[A-Z][a-z]+", response))
        return cls(
            request_words(request),
            numbers(response),
            frozenset(re.findall(r"[a-z][\w'-]*|\d+", normalise(response))),
            demands(request),
            dated,
            _names_something(response),
        )


@dataclass(frozen=True)
class Clause:
    """One clause, with what the reading classes look at computed once."""

    text: str  # as written
    body: str  # lower case, polite formulas removed, no trailing punctuation, no opening filler
    words: list[str]
    question: bool
    polite: bool  # its sentence says please
    turn: TurnContext
    setup: bool = False  # it sets up a new question: a step forward came before it, or a question follows it

    @classmethod
    def of(
        cls, text: str, turn: TurnContext, question: bool = False, polite: bool = False, setup: bool = False
    ) -> Clause:
        raw = normalise(text)
        body = _NOT_CUES.sub(lambda m: "thanks" if m.group(0).startswith("thank") else " ", raw)
        body = _strip_filler(re.sub(r"\s+", " ", body.strip(" ,").rstrip(".!?…").strip()))
        asked = question or raw.endswith("?") or bool(_NEGATIVE_INVERSION.match(body))
        return cls(text, body, words_of(body), asked, polite, turn, setup)

    @property
    def action(self) -> str:
        """The body without a request frame ("could you please …", "I'd like it …") or a leading just / only."""
        frame = _REQUEST_FRAME.match(self.body)
        return re.sub(r"^(?:just|only|simply|first|then)\b ?", "", self.body[frame.end() :] if frame else self.body)

    @property
    def directive(self) -> bool:
        """A request: a frame (can you …), please, an editing verb first, or a verb with the reply as its object."""
        action = words_of(self.action)
        if _REQUEST_FRAME.match(self.body) or self.polite or (action and action[0] in EDITS):
            return True
        return bool(_PRONOUN_OBJECT.match(self.action)) and action[0] not in NOT_REQUEST_VERBS | APPROVING | FAULT

    @property
    def fragment(self) -> bool:
        """Four words or fewer, no request frame, not asked, and no subject of its own ("we might drive instead" is a
        clause about the user)."""
        own_subject = re.match(r"^(?:i|we|he|she|they|i'm|we're|i'll|we'll|i'd|we'd|i've|we've|my|our)\b", self.body)
        return len(self.words) <= 4 and not _REQUEST_FRAME.match(self.body) and not self.question and not own_subject

    @property
    def new_step(self) -> bool:
        return bool(_NEW_STEP.search(self.text.lower()))


# ---- the reading classes ------------------------------------------------------------------------------------------
def _negated_approval(c: Clause) -> bool:
    if re.match(r"^why (?:didn't|don't|did not|do not) (?:i|we)\b", c.body):
        return False  # "why didn't I think of that" admires
    if _NOTHING_TO_CHANGE.search(c.body) or _NO_FAULT.match(c.body):
        return False  # "nothing to add", "I don't see any typos" approve (`_no_fault`)
    for i, w in enumerate(c.words):
        wanted = (
            is_approving(w) or w in SUCCEEDS or w in UPTAKE or w in c.turn.demands
        )  # "not brief" after "keep it brief"
        if not ((wanted or w in ("what", "how")) and _negated(c.words, i)):
            continue
        if w == "better" and re.search(
            r"\b(?:couldn't|can't|cannot|could not) (?:be |get |have been )?better", c.body
        ):
            continue  # "couldn't be better" approves
        if w in ("what", "how") and not re.search(r"\bnot (?:what|how) \w", c.body):
            continue
        if (w in ("mean", "think") and c.question) or ("without" in c.words[max(0, i - 3) : i] and w not in APPROVING):
            continue
        if w == "sure" and not re.search(r"\bsure (?:that|it|this|about|if (?:that|it|this)|that's|it's)\b", c.body):
            continue  # "Not sure yet." is the user undecided; "not sure that's right" doubts the reply
        return True
    if not c.question:  # "Not Toronto.", "Toronto isn't the capital.": the reply's own word, denied
        offered = [
            i
            for i, w in enumerate(c.words)
            if (w in c.turn.response_words and len(w) > 3 and w not in COMMON | NEGATORS)
            or w in c.turn.response_numbers
        ]
        if any(_negated(c.words, i, 1) or _negated(c.words[: i + 3], i + 3, 2) for i in offered):
            return True
    if _NEGATED_DOING.search(c.body) or _NOT_FITTING.search(c.body):  # "This doesn't recurse.", "not in my budget"
        return True
    if _STILL_NOT.search(normalise(c.text)):
        return True  # "still not centred": the fault persists
    at_all = re.search(r"(?:\bnot|n't) ([\w-]+) at all\b", c.body)
    if at_all and at_all.group(1) not in FAULT:
        return True
    # "not very catchy", "isn't particularly clear": a quality said to be lacking (a fault so denied approves)
    lacking = _NOT_VERY.search(c.body)
    return bool(lacking) and lacking.group(1) not in FAULT | _NOT_QUALITY and not c.question


def _fault(c: Clause) -> bool:
    return bool(_FAULT_SHAPE.search(c.body)) or any(
        w in FAULT and not _negated(c.words, i) for i, w in enumerate(c.words)
    )


def _excess(c: Clause) -> bool:
    if _EXCESS.search(c.body) or _DISMISSIVE.search(c.body) or (_OVER_COUNT.search(c.body) and not c.question):
        return True
    than = _LONGER_THAN.search(c.body)  # "This is longer than the notes themselves."
    if than and is_comparative(than.group(1)) and than.group(1) not in APPROVING_COMPARATIVES:
        return True
    hedge = _HEDGE.search(c.body)
    return bool(hedge) and hedge.group(1) not in APPROVING | APPROVING_COMPARATIVES | _HEDGE_NEUTRAL and not c.question


def _value(c: Clause) -> bool:
    """A value other than the reply's: "X, not Y", a number or name the reply lacks, "I get 42", "pretty sure …",
    "surely" (asked or not: "Pretty sure that was Austen?" still asserts).

    A number or name stated in passing is no correction when it is the user's own circumstance ("It's for my son's
    party on Friday.") or sets up a question the message goes on to ask (`Clause.setup`: "Ben has 30 marbles and
    loses 8. How many are left?")."""
    if _VALUE_CONTRAST.search(c.body) or _CONTRADICTS.search(c.body):
        return True
    if c.question:
        return False
    t = c.turn
    if _OWN_RESULT.match(c.body) and numbers(c.body) - t.response_numbers:
        return True  # "I get 42." against a reply that said 41
    if _USERS_OWN.match(c.body) or c.directive or c.new_step or c.setup or _CIRCUMSTANCE.search(c.body):
        return False
    short_statement = len(c.words) <= 8 and re.search(
        r"(?:'s|\b(?:is|was|are|were|it|that|this|wrote|made|did|said))\b", c.body
    )
    names = [
        w.lower()
        for w in re.findall(r"(?<=\s)[A-Z][\w'-]+", " " + c.text.split(" ", 1)[-1])
        if not re.match(r"I(?:'\w+)?$", w)
    ]
    if not t.dated:
        names = [n for n in names if n not in CALENDAR]  # "The wedding is in June." after a reply with no date
    if short_statement and any(
        n not in t.response_words and n.removesuffix("'s") not in t.response_words for n in names
    ):
        return True  # "It was Jane Austen." against a reply that named someone else
    if not t.response_numbers:
        return False
    if _STATED_VALUE.search(c.body):  # the clause is a value: "It's 42.", "eight", "so 33.3%"
        return not numbers(c.body) <= t.response_numbers
    copula = _COPULA.search(c.body)
    predicate = words_of(c.body[copula.end() :]) if copula else []
    if predicate and all(is_approving(w) or w in INTENSIFIERS for w in predicate):
        return False  # "38 is fine": a value of the user's, approved
    if len(c.words) <= 8 and copula and _of_the_turn(c.body[: copula.start()], t):  # "ISO would be 2024-03-05."
        stated = numbers(c.body, spelled=False)
        return bool(stated) and not stated <= t.response_numbers  # "6 x 7 is 42." against "6 x 7 = 24"
    return False


_SUM_WORDS = {"times", "plus", "minus", "divided", "over", "squared", "cubed", "root", "percent", "half", "twice"}
_POINTERS = {"it", "that", "this", "these", "those", "they", "the", "your", "which", "actually", "that's", "it's"}


def _of_the_turn(subject: str, t: TurnContext) -> bool:
    """Whether a statement's subject is the reply or what the turn is about: a pronoun, a part of the reply, a sum,
    a word of the request or the reply ("ISO would be …" after a request for ISO format) — not something else the
    user brings up ("The kids are 8 and 9.")."""
    said = t.request | t.response_words | REPLY_PARTS | _SUM_WORDS | _POINTERS | set(NUMBER_WORDS)
    words = re.findall(r"[a-z][\w'-]*", subject)
    return all(len(w) <= 3 or w in said or w + "s" in said or w.removesuffix("s") in said for w in words)


def _preference(c: Clause) -> bool:
    """What the user wanted, set against the reply — not a hypothetical, which asks about another case ("And if I
    only want the first two?")."""
    if re.match(r"^(?:what |and |but |so )?(?:if|suppose|supposing|assuming|in case|unless|say)\b", c.body):
        return False
    return bool(_PREFERENCE.search(c.body)) and not re.search(
        r"\b(?:exactly|just|precisely|all) (?:the |what )", c.body
    )


def _your_fault(c: Clause) -> bool:
    return bool(_YOUR_FAULT.search(c.body)) and not re.search(r"\byou (?:got it|nailed|did it)\b", c.body)


def _comparative(c: Clause) -> bool:
    """A comparative asked for: in a request, a fragment, after a modal, or as an elliptical question ("More
    specific?", "Maybe shorter?": "could it be …?" left unsaid)."""
    if _NOTHING_TO_CHANGE.search(c.body):
        return False  # "Nothing more I need." approves (`_no_fault`)
    modal = bool(_MODAL.search(c.body))
    elliptical = c.question and bool(_ELLIPTICAL_COMPARATIVE.fullmatch(c.body))
    if not (c.directive or c.fragment or modal or elliptical) or (c.question and not (c.directive or elliptical)):
        return False
    comparative = _COMPARATIVE.search(c.action)
    if comparative and (c.directive or modal or not comparative.group(0).startswith("not too")):
        return True  # "Not so formal." asks; "Not too long, good." describes
    words = words_of(c.action)
    for i, w in enumerate(words):
        if not is_comparative(w) and w not in APPROVING_COMPARATIVES:
            continue
        if w in APPROVING_COMPARATIVES and not (c.directive or modal):
            continue  # "Much better." approves
        if (
            c.fragment
            or elliptical
            or _COMPARATIVE_SLOT.search(" ".join(words[max(0, i - 2) : i]))
            or words[i + 1 : i + 2] == ["than"]
        ):
            return True
    return False


def _modal(c: Clause) -> bool:
    own = re.match(r"^(?:i|we|what|how|when|where|who|which|should i|could i|can i|do i)\b", c.body)
    return bool(_MODAL.search(c.body)) and not own


def _edit_request(c: Clause) -> bool:
    """A request aimed at the reply. Besides the shapes in the module docstring: the form the reply should take,
    asked for, or asked when the request named it ("as a fraction please", "In Celsius?"), a standing
    instruction ("Only the verdict next time."), and something added to the reply ("Mention the deadline in it
    too.") even when it is new. An elliptical "and …?" asks about a further case instead ("And in Java?")."""
    constrained = bool(_CONSTRAINT.search(c.body))
    if c.fragment and constrained and not c.new_step:
        return True  # "Three bullets max.", "Just the number."
    if c.question and re.match(r"^(?:and|or)\b", normalise(c.text)) and len(c.words) <= 4:
        return False  # "and redo?" asks about the next case
    form = _FORM.match(c.body)
    named = form and any(w in c.turn.request for w in words_of(c.body)[1:])
    if form and (c.polite or (c.question and named)) and not c.new_step:
        return True  # "as a fraction please"; "In Celsius?" after a request for Celsius
    if _STANDING.search(c.body) and not c.question and not re.search(r"\b(?:i|we|i'll|we'll|i'm|we're)\b", c.body):
        return True  # "Only the verdict next time.": how replies should be from now on
    words = words_of(c.action)
    if not c.directive or not words or _ACCEPTANCE.search(c.body):
        return False  # "Keep it." retains the reply
    if _ADDITION.search(c.body):
        return True  # "Suggest a backup plan in it too."
    if words[0] in EDITS and words[0] not in EDITS_WITH_OBJECT and not (len(words) == 1 and words[0] in APPROVING):
        return True  # "Drop the intro." (but "Correct!" approves)
    if words[0] in EDITS and (constrained or _AIMED.match(c.action)) and (constrained or not c.new_step):
        return True
    if (constrained or _REFERENT_MANNER.match(c.action)) and not c.new_step:
        return True
    # a noun phrase with please after a reply asks for the reply in that form ("English please.")
    return (
        c.fragment
        and c.polite
        and not c.new_step
        and not re.search(r"\b(?:a|an|some|any|more|the next|help|me)\b", c.body)
        and not all(w in BRIEF or w in APPROVING for w in c.words)
    )


def _fault_question(c: Clause) -> bool:
    if not c.question:
        return False
    if _FAULT_QUESTION.search(c.body):
        return True
    quality = _QUALITY_BACK.match(c.body)
    if quality and quality.group(1) in c.turn.demands:
        return True  # "Was that brief?" after "Keep it brief"
    asked_anew = len(c.words) > 1 and _INFO_QUESTION.match(c.body)  # "how many calories??" is impatient, not doubting
    if (
        _INCREDULOUS.search(c.text)
        and not asked_anew
        and not re.match(r"^(?:what|how) about\b|^and\b", normalise(c.text))
    ):
        return True  # "you used 12 there??"
    offered = c.turn.response_words | c.turn.response_numbers
    if 0 < len(c.words) <= 3 and any(w in offered for w in c.words) and all(w in offered or w in _WH for w in c.words):
        return True  # "86?", "180 what?", "Beef?": the reply's own words asked back
    another_case = re.match(r"^(?:and|or|what about|how about|then)\b", normalise(c.text))
    if c.turn.response_numbers and _STATED_VALUE.fullmatch(c.body) and numbers(c.body) and not another_case:
        return True  # "Twelve?" against a reply that said 14: a value of the user's, offered as a doubt
    where = _WHERE_IS.match(c.body) or _AND_THE.match(c.body)
    if where and any(w in REPLY_PARTS or w in c.turn.request for w in where.group(1).split()):
        return True  # "Where's the German?", "And the travel time?": something the request named is missing
    challenge = _CHALLENGE.match(c.body)  # "How is beef vegetarian?" about a word of the request
    return bool(challenge) and any(w in c.turn.request for w in words_of(c.body[challenge.end() :]))


def _redo(c: Clause) -> bool:
    return not c.question and bool(_REDO.search(c.body))


def _actually(c: Clause) -> bool:
    """A statement with "actually" that approves nothing sets the reply right ("He doesn't drink, actually.")."""
    return (
        not c.question
        and bool(re.search(r"\bactually\b", c.body + " " + normalise(c.text)))
        and not c.directive
        and not _approves(c)
    )


CORRECTIONS: tuple[tuple[str, Callable[[Clause], bool]], ...] = (
    ("denial", lambda c: bool(_DENIAL.match(c.body))),
    ("near_miss", lambda c: bool(_NEAR_MISS.search(c.body))),
    ("negated_approval", _negated_approval),
    ("fault", _fault),
    ("excess", _excess),
    ("value", _value),
    ("prohibition", lambda c: bool(_PROHIBITION.search(c.body))),
    ("preference", _preference),
    ("your_fault", _your_fault),
    ("comparative", _comparative),
    ("modal", _modal),
    ("edit_request", _edit_request),
    ("fault_question", _fault_question),
    ("redo", _redo),
    ("value", _actually),
)


def _about_reply(c: Clause, i: int) -> bool:
    """Whether the approving word at i evaluates the reply: it opens the clause ("Great, …", "Perfect tone."), the
    clause is short, or it is predicated of the reply ("this is great", "that trick is amazing", "biscuit is perfect"
    when the reply offered Biscuit) — not of something else ("the weather is nice", "his best friend")."""
    words, j = c.words, i - 1
    while j >= 0 and words[j] in INTENSIFIERS:
        j -= 1
    if j < 0 or len(words) <= 3:
        return True
    if words[j] not in COPULAS:
        return False
    subject = words[j - 1] if j > 0 else ""
    pointed = j > 1 and words[j - 2] in ("that", "this", "these", "those", "your")
    return (
        j == 0
        or words[j] in ("that's", "it's", "thats", "its", "this's", "you're", "they're")
        or subject
        in {"it", "this", "that", "these", "those", "they", "you", "yours", "everything", "all"} | REPLY_PARTS
        or subject in c.turn.response_words
        or pointed
    )


def _no_fault(c: Clause) -> bool:
    """A fault or a remark denied near the start of a statement approves: "No typos.", "I have no complaints.",
    "Not a single error.", "Nothing to add." — the user looked for something to correct and found nothing. Asked
    ("No errors?") or asked for ("No typos next time, please.") it approves nothing."""
    if c.question or c.polite or _NEW_STEP.search(c.body) or re.search(r"\b(?:next|this) time\b", c.body):
        return False
    return bool(_NOTHING_TO_CHANGE.search(c.body) or _NO_FAULT.match(c.body))


def _acceptance(c: Clause) -> bool:
    """The reply accepted without an approving word (`_ACCEPTANCE`): "Fair enough.", "That explains it.",
    "That's what I got too.", "Tuesday it is.", "Keep it as is.", "Sent." — a concession, an understanding, an
    agreement, a choice, the reply kept or acted on; or the user acting on what the reply offered ("I'll book the
    7pm train." after a reply that named it)."""
    if c.question:
        return False
    acting = _ACTING_ON.match(c.body)
    offered = acting and [w for w in acting.group(1).split() if len(w) > 2 and w not in COMMON]
    if offered and all(w in c.turn.response_words or w + "s" in c.turn.response_words for w in offered):
        return True
    agreeing = _SAME_RESULT.match(c.body)  # "Got 12 as well." after a reply that said 12
    stated = numbers(next(g for g in agreeing.groups() if g)) if agreeing else frozenset()
    return bool(_ACCEPTANCE.search(c.body)) or bool(stated and stated <= c.turn.response_numbers)


def _approval(c: Clause) -> bool:
    if c.question or re.match(r"^(?:if|unless|in case|whether)\b", c.body):
        return False  # "if that helps" approves nothing
    if _THANKS.search(c.text.lower()) or _APPROVING_PHRASE.search(c.body) or _WELL_DONE.match(normalise(c.text)):
        return True
    for i, w in enumerate(c.words):
        negated = _negated(c.words, i)
        strong = (
            w in APPROVING_COMPARATIVES or (w in APPROVING and w not in WEAK_APPROVING) or (w in FAULT and negated)
        )
        if strong and _about_reply(c, i):
            return not negated or w in FAULT  # "not bad" approves
        j = i - 1
        while j > 0 and c.words[j] in ("about", "just", "really", "pretty", "quite", "very", "so", "exactly"):
            j -= 1  # "sounds about right"
        predicated = c.words[j : j + 1] in (["looks"], ["sounds"], ["seems"], ["is"], ["that's"], ["it's"], ["all"])
        if predicated and (w in WEAK_APPROVING or (len(w) >= 6 and is_approving(w))):
            return not negated  # "Looks right.", "That sounds doable."; a lone "Fine." is a brief approval
    return False


APPROVALS: tuple[tuple[str, Callable[[Clause], bool]], ...] = (
    ("no_fault", _no_fault),
    ("acceptance", _acceptance),
    ("approval", _approval),
)


def _approves(c: Clause) -> bool:
    return any(fits(c) for _, fits in APPROVALS)


@dataclass(frozen=True)
class Reading:
    score: int  # +1 approval, -1 correction, 0 neutral
    kind: str  # the reading class ("comparative", "approval", …); "" when neutral
    clause: str  # the clause read that way, as written
    request: bool = False  # a neutral clause that asks for something ("Can you explain why?")


def read_clause(c: Clause) -> Reading:
    if not c.words:
        return Reading(0, "", c.text)
    for kind, fits in CORRECTIONS:
        if fits(c):
            return Reading(-1, kind, c.text)
    for kind, fits in APPROVALS:
        if fits(c):
            return Reading(1, kind, c.text)
    if all(w in BRIEF for w in c.words) and not c.question:
        return Reading(1, "brief_approval", c.text)
    offered = c.turn.response_words | c.turn.response_numbers
    if _AFFIRMATIVE.match(normalise(c.text)) and not c.question and all(w in offered for w in c.words):
        return Reading(1, "brief_approval", c.text)  # "ok yeah 12": an affirmative and the reply's own words
    return Reading(0, "", c.text, request=c.directive and not c.new_step)


@dataclass(frozen=True)
class ReplyReading:
    score: int  # +1, -1 or 0 for the whole reply
    readings: list[tuple[str, Reading]]  # (sentence, reading) per clause, in order
    kind: str  # the deciding class ("" when neutral)
    cue: str  # the deciding clause


def _absence_listed(r: Reading) -> bool:
    """A denial that only names a thing ("no jargon"): beside an approval it says what the reply is free of."""
    body = normalise(r.clause).strip(" .!")
    return (
        r.kind == "denial"
        and bool(re.fullmatch(r"no [a-z][\w-]*(?: [a-z][\w-]*)?", body))
        and not any(w in FILLER or w in _CONTRAST or w in ("time", "more") for w in body.split()[1:])
    )


def _other_name(text: str, turn: TurnContext) -> bool:
    """A reply that is only a name the reply did not give, after a short reply that gave one: "Ottawa." against "The
    capital is Toronto.", "Wednesday!" against "… on Thursday." — the user's answer set against the reply's."""
    words = words_of(normalise(text))
    lone_name = re.fullmatch(r"(?:[A-Z][\w'-]+ ?){1,3}[.!]*", text.strip()) and not any(
        w in BRIEF
        or w in FILLER
        or w in APPROVING
        or w in FAULT
        or w in NEGATORS
        or _THANKS.match(w)
        or _INTERJECTION.fullmatch(w)
        for w in words
    )
    if not lone_name or set(words) & turn.response_words or read_clause(Clause.of(text, turn)).score != 0:
        return False  # "Sent." reads as acting on the reply
    return (all(w in CALENDAR for w in words) and turn.dated) or turn.named


def _asks_anew(sentence: str, turn: TurnContext) -> bool:
    """An information question (how many / what / which / who / when / where …?) that takes up none of the reply's
    numbers: the statements before it are its premises ("Ben has 30 marbles and loses 8. How many are left?"), not
    values set against the reply's ("It's 2.54. Where did 3.54 come from?" takes the reply's number up)."""
    text = normalise(sentence)
    asks = text.endswith("?") and bool(_INFO_QUESTION.match(_strip_filler(text)))
    return asks and not numbers(text) & turn.response_numbers


def read_reply(text: str, request: str = "", response: str = "") -> ReplyReading:
    """Read every clause of `text`, the user's reply to `response`, which answered `request`.

    Any correction makes the reply a correction; otherwise any approval an approval — a brief one ("ok",
    "sure") only when the reply holds nothing else."""
    turn = TurnContext.of(request, response)
    if _other_name(text, turn):
        return ReplyReading(-1, [(text.strip(), Reading(-1, "value", text.strip()))], "value", text.strip())
    readings: list[tuple[str, Reading]] = []
    written = sentences(text)
    stepped = False  # a step forward came earlier in the message ("Next one: …")
    for k, sentence in enumerate(written):
        question, polite = sentence.endswith("?"), bool(re.search(r"\b(?:please|pls|plz)\b", sentence.lower()))
        if _VALUE_CONTRAST.search(Clause.of(sentence, turn, question, polite).body):  # "42, not 24" spans the comma
            readings.append((sentence, Reading(-1, "value", sentence)))
            continue
        asked_later = any(_asks_anew(later, turn) for later in written[k + 1 :])
        parts = clauses(_TOPIC_CHANGE.sub("", sentence, count=1))
        asked_last = question and _asks_anew(parts[-1], turn)  # "The list has 10,000 items, is that ok?"
        for i, part in enumerate(parts):
            setup = stepped or asked_later or (asked_last and i < len(parts) - 1)
            clause = Clause.of(part, turn, question and i == len(parts) - 1, polite, setup)
            reading = read_clause(clause)
            stepped = stepped or (clause.new_step and reading.score == 0)
            approved_before = any(r.score == 1 for _, r in readings)
            contrast = part.lower().startswith(_CONTRAST) and len(words_of(part)) > 1
            elided = bool(re.search(r"n't[.!]?$", normalise(part)))  # "the first part is fine, the second isn't"
            if reading.score == 0 and (approved_before and contrast or elided):
                reading = Reading(-1, "partial", part)
            readings.append((sentence, reading))
        if not polite and any(r.score == 1 and r.kind != "brief_approval" for s, r in readings if s == sentence):
            readings = [  # "Nice, no jargon.": beside an approval, "no X" lists what the reply is free of
                (s, Reading(1, "no_fault", r.clause) if s == sentence and _absence_listed(r) else r)
                for s, r in readings
            ]
    corrections = [r for _, r in readings if r.score == -1]
    if corrections:
        return ReplyReading(-1, readings, corrections[0].kind, corrections[0].clause)
    approvals = [r for _, r in readings if r.score == 1 and r.kind != "brief_approval"]
    if approvals:
        return ReplyReading(1, readings, approvals[0].kind, approvals[0].clause)

    def accepting(r: Reading) -> bool:  # "ooh sunny, yes": picking one of the reply's own words takes it up
        words = words_of(_NOT_CUES.sub(" ", normalise(r.clause)))  # "Cool, see you.": a farewell adds nothing
        offered = turn.response_words | turn.response_numbers
        echo = len(words) <= 3 and all(w in offered or w in BRIEF or w in FILLER for w in words)
        return r.score == 1 or not words or echo

    brief = [r for _, r in readings if r.kind == "brief_approval"]
    if brief and all(accepting(r) for _, r in readings):
        return ReplyReading(1, readings, "brief_approval", brief[0].clause)
    return ReplyReading(0, readings, "", "")
