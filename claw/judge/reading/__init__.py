"""How the rule judge reads a user's reply: each clause gets a *reading class* from its form.

A reply is split into sentences and each sentence into clauses (at , ; : dashes, and before but /
though / except / apart from). Each clause is read by the first class below whose shape it has. A
class is a grammatical shape over the word classes of `claw.judge.lexicon` (approving adjectives,
verbs that edit a text, the parts of a reply), never a list of whole sentences, so it reads replies
it has not seen. Some shapes also look at the turn: the words of the user's request and of the
reply being judged. Corrections are tried before approvals; what fits no class is neutral.

The classes, in the order they are tried (`reply.CORRECTIONS`, then `approvals.APPROVALS`):

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
  reply that named another ("Ottawa."); "I get 42"; "more like 38"; a value with its unit on it or as a rate ("212°F",
  "11 per side"); a list of values for the turn's subject ("the next two are Mar 17 and Mar 31");
  "pretty sure …", "surely"; "actually" in a statement; the reply's language named against the one the request named
  ("that's French" after "… into Spanish", "I need JS" after "… in JavaScript"); a unit named against the reply's
  unit of the same measure, without a number ("km per second" after "km per hour") — "It should say 42, not 24.",
  "It was Jane Austen.", "eight, surely"
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
- emphasis: a content word of the request typed again in capitals — "ha, for TEENAGERS.", "I said BRIEF".
- fault_question: why + you / why is it … / why would it be …; why + a verb; did you even …; isn't it …; a tag
  question saying of another subject what the reply said of its own ("so the 3kg bag is heavier, right?");
  / are you sure (with or without "?"); are you kidding; a statement asked back ("$2,499 is under $800?"); a
  value alone, asked ("Nine?" against 8); a question asked in disbelief ("thats spanish??"); a quality the
  request asked for, asked back ("Was that brief?"); "…, remember?"; where's / and the <thing the request named>; "and
  …?" / "what about …?" naming a word of the request the reply left out ("and chile?"); how is <it> <a word of the
  request> — "Why is it in French?", "How is beef vegetarian?"
- redo: again / redo / start over, outside a question — "Try again."
- partial: an approval, then but / though / except / apart from + a clause that is no approval, or an
  elided "isn't" — "Good, but drop the intro.", "The first part is fine, the second isn't."
- no_fault: a fault or a reviewer's remark denied by a determiner, or the excess denied, in a statement — "No
  notes.", "I don't see any typos.", "Nothing I'd change.", "Not too long."
- acceptance: a concession, an understanding, the user's own result agreeing, a choice from the reply, acting
  on what the reply offered, the reply kept — "Fair enough.", "That explains it.", "That's what I got too.",
  "Tuesday it is.", "Going with Bubbles.", "Keep it as is.", "Sent."
- approval: thanks; an approving phrase; an approving word said of the reply, not negated, not asked; what the user
  lacked, supplied ("the flag was what I was missing"); nothing better possible ("couldn't wish for a better one");
  relief at having asked ("good thing I checked"); a noun of praise ("this page is gold", "I'd call it a win"); a
  high rating ("9/10"); the reply put to use in any tense ("forwarding it to my boss"); the reply singled out ("the
  first explanation that didn't lose me") — "Sounds good.", "Works for me.", "That trick is amazing."
- outcome: how acting on the reply turned out — a result verb said of anything ("the second one did it", "runs
  now"), a result described ("came out fluffy"), relief ("feels better already") — `outcomes`.
- agreement: "I agree", "couldn't agree more", a verb of disagreement denied ("can't argue with that") — `outcomes`.
- brief_approval: a reply made only of yes / ok / sure / cool … and the reply's own words — "ok cool",
  "yep", "ooh sunny, yes", "ok yeah 12".

Tone is read per sentence after its clauses (`tone`): an emoji's sentiment comes from its Unicode name (a smile,
heart, check mark approves a sentence that says nothing else about the reply: "85 ✔️"; rolling eyes, a raised
eyebrow, a thumbs down correct: "🤨 3/5 = 0.6"), and sarcasm ("/s", "yeah right", a disapproving emoji beside praise,
"Sure, and pigs can fly.") turns the sentence's approvals into corrections that are bare verdicts for the hint.
A sentence of self-blame ("Ugh, my bad.") finds no fault with the reply, nor does a fault the user owns ("I always make
this mistake") or pity ("poor mars"). An approving verb over a clause approves what the clause says, a negation in it
included ("I like that you didn't pad it", "thanks for not lecturing me"); a failing said there without one
keeps its reading ("love how you ignored the limit"). A statement closed by a lone "though" sets itself against the
reply ("57 = 3 × 19 though", the `contrast` class of `reply`). Value also reads the user's own equation
("so 2×9+4 = 22"), preference a target quantity ("I need around 50"), fault_question a negative question about the
reply's word ("Isn't Gd gadolinium?") and "what about" a numbered part the request named and the reply lacks ("what
about day 3?"); the request's own task asked again on a new input is a new task ("Can you round 2.71828 …?" after
"Round 3.14159 …"), "much punchier" notices an improvement, and "please" / thanks read in other languages.

Beside an approval, a bare "no X" lists what the reply is free of ("Great, no waffle." reads no_fault).

Value also reads an order stated the other way round from the reply's ("pear goes after lime"), a claim reported
from a source ("the catalogue says it was Austen"), a reply's word named as another language ("prost is
german") and a year restated by its last two digits ("right, 45."); "actually" corrects as a disjunct (opening or
closing a clause, or after its copula), not as a stress between a subject and its verb ("that actually helps me").

A fault word said of what a question asks about is no fault of the reply: the degree asked ("how windy does it get?"),
an adjective before a noun that is no part of the reply ("any good in really bad weather?"), an alternative weighed
("is a camper worth renting instead or is that overkill"); nor is a negation inside a condition ("do I need one if the
form doesn't ask for it?"). "is it true that …" asks about a new claim; "no idea", "no wonder", "no way I'm …" deny
nothing; "never again will I …" vows; laughter closing a clause ("… lol") says nothing; "first time" is an occasion,
not an order.

A question about the user's own next step ("how do I undo it??") asks and reads no correction; a bare "no" after a
reply that offered more ("Want me to add a PS?") declines the offer; a disapproving emoji or an "again" in a sentence
about something the turn is not about ("long day at work 😩") is the user's mood; a plan of the user's own after an
approval and a contrast ("great, though I'll tweak the ending myself") asks nothing of the reply.

A topic changed on purpose ("Unrelated, but …", "Random question: …") drops its marker before reading, and
"btw" / "tbh" open a clause like "well". A step forward ("now", "next", "another") keeps a request that does not
edit the reply neutral ("Now translate it into Spanish."); approvals inside a question do not count ("How does that
work?"); an approving word said of something else does not count ("the weather is nice"); a brief "ok" approves
only when the whole reply is brief approval ("ok, what's next?" is neutral).

Follow-ups that ask stay neutral: a yes/no question about the user's own step, its mark typed or not ("should I unplug
the modem as well"), a request to say more about a part ("could you explain the second step a bit more?"), an indirect
question ("remind me how the negative case works"), whether the reply holds for another case ("would it be any
different in winter?"), the requests inside a supposition of the user's own ("what if we're eight, just double it?")
and a thanks dated before the turn ("thanks for the tips last week"). Corrections also read a version of the reply of a
given length ("could I have a one-paragraph version?"), a verb of arranging with the reply as object ("arrange it by
price"), the form the user needs it in ("I need it in German"), what the request named and the reply left out, needed
("I need Lisbon"), a kind of thing wanted ("I want something plain and elegant"), "did you even …" typed without its
mark, a claim after a premise ("I'm allergic so it should be almond flour right?"), a tagged claim with a quotation
or a value the reply lacks ("it's 'carry the one' isn't it?") and a quantity of the turn's thing ("8 oz in a cup").
Approvals also read understanding arriving ("oh that finally clicks"), an alternative chosen by its label ("I'll go
with plan 2"), the reply put to use with a particle or a recipient ("printed it out and taped it up", "forwarding to my
brother"), the thing acted on working with a word of how ("it connects fine now"), someone the reply was for answering
well ("my landlord said yes"), "100%" alone, "the feel I was going for", and an approval restated after a contrast ("no
clue how that worked, but it did"). A past form opening a clause reports ("tried it on my laptop"), what the user said
in a clause of time narrates ("… when I said it"), the user's own trouble, past ("the stray bracket was driving me
mad"), is no fault of the reply, and a name the reply gave in quotation marks is its own word.

Value also reads a claim put as the user's belief, asked or not ("I think it might be 212°F?", "I always thought it was
Ottawa?"), an estimate of any subject ("hard boiled is more like 10-12"), a few words closed by an asterisk ("da
vinci*", "56*"), the reply's value changed by the user to another of its form ("changed it to A1:A10"), a source's
classification against the reply's ("my teacher said it's a fruit"), a day typed in lower case ("it's a wednesday"), a
power ("3x^2") and a decimal as one word. A "tho" typed at the end of a clause closes it like a lone "though" ("a haiku
is 3 lines tho"); a negative question about "a" / "an" doubts ("wouldn't a 6mm plug need a 6mm bit?"); a model in
quotation marks asks for a reply like it ("just something like 'running late'"). A dot that opens a word (".2f") ends
no sentence and a colon inside a range or a time ("A1:A10") splits no clause. Approvals also read something learned
("TIL", "never knew it was about scattering"), a guess borne out ("knew it!"), the cause found ("that was it"), the
reply named as the thing the request asked for ("that's the word"), nothing wrong found with its "I" left out ("don't
see anything wrong"), "exactly <any word> I needed" however the word is typed, and thanks in German. No verdict: a
grumble about something the turn is not about ("ugh, mondays"), the user's own difficulty against what they expected
("it's harder than I thought"), an apology for a thing of the user's own ("sorry my english is not so good"), trying
the reply put off until a condition of the user's is met ("will try it tomorrow when I'm home") and a move to another
thing of the user's ("can we switch to my resume now?").

Value also reads a belief whose claim names its subject ("I believe Apollo 11 was 1969"), holds "actually" between its
modal and "be" ("it might actually be 212°F?") or comes before its hedge ("16 I thought?"), the user's own result asked
("i got 4?") and a certainty closing a claim that approves nothing ("… i'm fairly sure"); "supposed to be" is a modal.
A progressive denied after a statement sets no value ("best I've made, not kidding"). Corrections also read a
determiner that denies the whole reply ("none of this is right"), a failing with its subject left out said of the reply
or the request ("really missed the mark"), something left out asked ("forgot the group by?") and less of the reply
allowed ("just one word is fine"). Approvals also read a result with an adverb or a time ("worked instantly", "worked
tonight"), a past report with a simile ("peeled like a dream"), litotes ("this doesn't suck"), a brief word typed
stretched ("yesss"), a noun of praise said of a compound part ("the colour palette tip is genius") and a closing
candour marker ("… honestly") as laughter. No verdict: the time gone by for the user ("it's been 9 days"), a feeling of
the user's after a hedge ("bit nervous tbh"), whether an act in general has a quality ("is it rude to …?"), a modal
question whether a kind of thing suits ("would a pivot table be the way to go?") and an existential question typed
without its mark ("is there anything like that in python").

The modules, by what they read (the order of the classes is the meaning, so it is kept in one place,
`reply.CORRECTIONS`):

- `text`: typing normalisation, sentences, clauses, words and the numbers a text states;
- `clause`: the `Clause` a class looks at and the `TurnContext` it is read against;
- `faults`: denial, near_miss, negated_approval, fault, excess, prohibition, preference, your_fault;
- `values`: value ("X, not Y", a number or name the reply lacks, "actually");
- `edits`: comparative, modal, edit_request, redo;
- `questions`: fault_question, and the information question whose premises stay neutral;
- `approvals`: no_fault, acceptance, approval (and the classes of `outcomes`: outcome, agreement);
- `tone`: emoji sentiment and sarcasm markers;
- `reply`: the classes tried in order, brief_approval, partial, and the reading of a whole reply.
"""

from claw.judge.reading.approvals import APPROVALS
from claw.judge.reading.clause import Clause, TurnContext, demands, request_words
from claw.judge.reading.reply import CORRECTIONS, Reading, ReplyReading, read_clause, read_reply
from claw.judge.reading.text import clauses, normalise, numbers, sentences, words_of

__all__ = [
    "APPROVALS", "CORRECTIONS", "Clause", "Reading", "ReplyReading", "TurnContext", "clauses", "demands", "normalise",
    "numbers", "read_clause", "read_reply", "request_words", "sentences", "words_of",
]  # fmt: skip
