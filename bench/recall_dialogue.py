"""Generated long conversations between two people, with questions about what was said.

Each conversation pairs two named friends who chat in sessions spread over months (session
dates matter). Planted events are said in other words than the later question asks them,
some split over two turns (a teaser, then the detail after the friend asks), some stated
with a relative date ("yesterday", "last Tuesday") so only the session's date places them,
some superseded by a later update (only the newest statement is evidence), and the other
speaker says similar things about themselves (distractors the question's name rules out;
where the asked person voices one about an event they are asked about, it is true of them
too, so it counts as evidence: "What is Jon allergic to?" has two right answers when Jon
said both "I react to gluten" and, as Gina's distractor, "I react to shellfish").
Questions refer to the speakers by name and come in six kinds: single (one turn holds the
answer), split (the answer sits in the reply after a teaser), temporal (when did it
happen), update (what is true now), multi (two events of the same person together), period
(what was someone up to in a named month: any of their news from then).
Filler turns chat about the same topics (hard negatives); the 1M scale adds filler
conversations between other people. Deterministic for a seed. Imported as user/assistant
turns (first speaker = user); all conversations share one scope, as one busy user would.
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path

from recall_data import Generator

PAIRS = [
    ("Caroline", "Melanie"),
    ("Jon", "Gina"),
    ("Audrey", "Andrew"),
    ("Priya", "Tomas"),
    ("Deborah", "Jolene"),
    ("Evan", "Sam"),
    ("Maria", "John"),
    ("Nate", "Joanna"),
    ("Tim", "John"),
    ("Calvin", "Dave"),
    ("Lena", "Omar"),
    ("Rosa", "Kenji"),
]

# Each event: what the subject says (`say`, {v} = value), an optional split form (teaser,
# friend's prompt, detail), an optional update, the question ({n} = subject's name) and
# values. `when` marks events whose question asks for the date.
EVENTS: list[dict] = [
    {
        "key": "pottery",
        "values": ["pottery", "watercolour", "salsa dancing", "woodworking"],
        "say": [
            "I finally signed up for a {v} course at the community centre, first one is Monday!"
        ],
        "split": (
            "Guess what I committed to this week, something I've wanted forever.",
            "Ooh tell me, what is it?",
            "A {v} course! Every Monday evening for ten weeks.",
        ),
        "ask": "What class did {n} enroll in?",
    },
    {
        "key": "pet",
        "values": ["Luna", "Oscar", "Pickles", "Bailey"],
        "say": ["We brought home a tabby kitten last weekend, the kids named her {v}."],
        "split": (
            "Our household got a new furry member, total chaos already.",
            "No way! What's the little one called?",
            "{v}, she's a tabby and she climbs the curtains.",
        ),
        "ask": "What is the name of {n}'s cat?",
    },
    {
        "key": "race",
        "values": ["half marathon", "10k charity run", "triathlon", "trail race"],
        "say": ["I ran my first {v} {when}, my legs are still sore!"],
        "when": True,
        "ask": "When did {n} complete the {v}?",
    },
    {
        "key": "support",
        "values": ["support group", "book club", "volunteer shift", "mentoring session"],
        "say": ["I went to a {v} {when} and it really moved me, everyone was so open."],
        "when": True,
        "ask": "When did {n} attend the {v}?",
    },
    {
        "key": "job",
        "values": ["the bakery on Elm Street", "a dental clinic", "the city museum", "a law firm"],
        "say": ["Started my new position at {v}, the team seems lovely so far."],
        "update": "Big change, I left my old job and I'm now working at {v}.",
        "ask": "Where does {n} work now?",
    },
    {
        "key": "home",
        "values": ["Portland", "Lisbon", "Edinburgh", "Austin"],
        "say": ["We signed the lease on an apartment in {v}, moving day is soon."],
        "update": "Plot twist, we're relocating again, this time to {v}.",
        "ask": "Which city does {n} live in at the moment?",
    },
    {
        "key": "instrument",
        "values": ["violin", "cello", "ukulele", "saxophone"],
        "say": ["I bought a secondhand {v} and I practise scales every night now."],
        "split": (
            "I picked up something at the flea market that's going to annoy my neighbours.",
            "Haha, what did you get?",
            "A {v}! I've been practising scales every night.",
        ),
        "ask": "What musical instrument is {n} learning to play?",
    },
    {
        "key": "trip",
        "values": ["Iceland", "Morocco", "Vietnam", "Peru"],
        "say": ["Just got back from two weeks in {v}, the landscapes were unreal."],
        "ask": "Which country did {n} travel to?",
    },
    {
        "key": "child",
        "values": ["Lily", "Noah", "Ava", "Leo"],
        "say": ["My daughter {v} lost her first tooth, she was so proud of herself."],
        "ask": "What is the name of {n}'s daughter?",
    },
    {
        "key": "book",
        "values": ["Becoming", "Educated", "The Overstory", "Circe"],
        "say": ["I couldn't put down '{v}', I read it in two nights."],
        "split": (
            "I stayed up way too late two nights in a row because of a novel.",
            "Which one hooked you like that?",
            "'{v}'. I could not put it down.",
        ),
        "ask": "Which book did {n} read recently?",
    },
    {
        "key": "injury",
        "values": ["ankle", "wrist", "knee", "shoulder"],
        "say": ["I twisted my {v} {when} while hiking, so I'm resting for a bit."],
        "when": True,
        "ask": "When did {n} get hurt?",
    },
    {
        "key": "car",
        "values": ["a red hatchback", "an electric SUV", "a vintage Beetle", "a pickup truck"],
        "say": ["We traded in the old sedan for {v}, it drives like a dream."],
        "update": "We sold it already and got {v} instead, much better for us.",
        "ask": "What vehicle does {n} drive now?",
    },
    {
        "key": "garden",
        "values": ["tomatoes", "sunflowers", "strawberries", "lavender"],
        "say": ["The {v} I planted in spring are finally blooming in the backyard."],
        "ask": "What is {n} growing in the garden?",
    },
    {
        "key": "painting",
        "values": ["a sunset over the lake", "my grandmother's portrait", "a field of poppies"],
        "say": ["I just finished painting {v}, it took me three weekends."],
        "ask": "What did {n} paint?",
    },
    {
        "key": "concert",
        "values": ["Coldplay", "Adele", "the symphony orchestra", "a jazz quartet"],
        "say": ["We saw {v} live {when}, the energy in the crowd was amazing."],
        "when": True,
        "ask": "When did {n} go to the concert?",
    },
    {
        "key": "allergy",
        "values": ["peanuts", "shellfish", "gluten", "dairy"],
        "say": ["The doctor confirmed I react to {v}, so I'm reading every food label now."],
        "ask": "What is {n} allergic to?",
    },
]

MULTI = [  # two events of one person that a question joins
    ("trip", "book", "What did {n} do for fun recently, reading or travel?"),
    ("pet", "child", "Who are the new members of {n}'s family?"),
    ("pottery", "painting", "What creative hobbies does {n} have?"),
    ("race", "injury", "What happened to {n} physically this year?"),
]

RELATIVE = [("yesterday", 1), ("last Saturday", None), ("two days ago", 2), ("last week", 7)]

FILLER = [
    "How has your week been? Mine flew by.",
    "Work has been hectic, lots of meetings and deadlines.",
    "The weather finally turned, we had a picnic in the park.",
    "I've been trying to cook more at home, made a curry last night.",
    "Did you watch anything good lately? I need a new series.",
    "My family came over for dinner, it was loud but fun.",
    "I'm thinking about taking a class of some kind, maybe art or music.",
    "We went hiking along the river, the trail was muddy but beautiful.",
    "I read an article about running that made me want to start again.",
    "The kids have a school project about animals, the house is full of glue.",
    "Honestly I just need a holiday somewhere warm.",
    "My car needs a service again, it's always something.",
    "We're redoing the garden this year, lots of planning.",
    "I went to a gallery opening, some of the paintings were stunning.",
    "A friend invited me to a concert next month, I might go.",
    "I've been journaling every morning, it helps me feel calm.",
    "Thanks for listening, it means a lot to have someone to talk to.",
    "That's so great to hear, you deserve it!",
    "Wow, I'm really happy for you.",
    "Haha, that sounds exactly like something you would do.",
    "Take care of yourself, okay? Talk soon!",
    "What are your plans for the weekend?",
    "I'm proud of you for sticking with it.",
    "Same here, it's been a lot but we're managing.",
    "Moving always sounds exciting until you have to pack.",
    "New jobs are scary but you'll do great.",
    "Books are the best escape, I'm always looking for recommendations.",
    "Pets make a house feel like a home.",
]
REACT = [
    "That's amazing, {n}! How did it feel?",
    "Oh wow, tell me more about it.",
    "I love that for you, {n}.",
    "That's so cool, I'm a bit jealous!",
    "Good for you! I'd never have the patience.",
]
# `varied` dialogues: small talk composed from parts, so that (as in real chat) a whole turn
# is rarely said twice; the same topics, the same hard negatives, in ever other words
OPENERS = [
    "",
    "Honestly, ",
    "Ha, ",
    "So ",
    "Anyway, ",
    "Oh, ",
    "Well, ",
    "Ugh, ",
    "Okay so ",
    "You know, ",
    "Right, ",
    "Hmm, ",
]
CLOSERS = [
    "",
    " What about you?",
    " Crazy, right?",
    " Anyway.",
    " Long story.",
    " Ha.",
    " More soon.",
    " It's been a week.",
    " Can't complain.",
    " How's your side?",
]
WHEN = ["Yesterday", "On Sunday", "This morning", "Last night", "After work", "On Friday"]
DID = [
    "grabbed coffee",
    "went for a walk",
    "cleaned the kitchen",
    "caught up on emails",
    "called my mum",
    "fixed the sink",
    "did some shopping",
    "met an old colleague",
    "tried a new recipe",
    "sorted the garage",
]
WHERE = ["", " downtown", " near the station", " with a neighbour", " in the rain"]
HOW = ["nice", "a bit boring", "surprisingly fun", "exhausting", "relaxing", "chaotic"]


def vary(rng: random.Random, text: str) -> str:
    """`text` with an opener and a closer drawn at random (one turn in 120 gets neither)."""
    opener, closer = rng.choice(OPENERS), rng.choice(CLOSERS)
    if opener and text[:1].isupper() and not text.startswith("I "):
        text = text[:1].lower() + text[1:]
    return opener + text + closer


def small_talk(rng: random.Random) -> str:
    """A filler line, or a composed one ("After work I fixed the sink, it was chaotic.")."""
    if rng.random() < 0.5:
        return vary(rng, rng.choice(FILLER))
    when, did, where, how = (rng.choice(x) for x in (WHEN, DID, WHERE, HOW))
    return vary(rng, f"{when} I {did}{where}, it was {how}.")


GREET = [
    "Hey {n}! Long time no talk.",
    "Hi {n}, how are you doing?",
    "{n}! So good to hear from you.",
]


@dataclass
class Question:
    query: str
    kind: str
    evidence: list[tuple[str, int]] = field(default_factory=list)


@dataclass
class Turn:
    speaker: int
    text: str
    mark: tuple[str, int] | None = None  # (event id, which part) for evidence bookkeeping


class Conversation:
    """One pair of friends: sessions of turns, planted events, questions."""

    def __init__(
        self,
        rng: random.Random,
        no: int,
        names: tuple[str, str],
        sessions: int,
        *,
        varied: bool = False,
        long: bool = False,
    ) -> None:
        self.rng, self.no, self.names, self.varied = rng, no, names, varied
        self.long = long
        start = datetime(2023, 1, 9, 19, 0, tzinfo=UTC) + timedelta(days=3 * no)
        self.dates = []
        day = start
        for _ in range(sessions):
            self.dates.append(day)
            day += timedelta(days=rng.randint(5, 14), hours=rng.randint(-3, 3))
        self.plan: dict[int, list[list[Turn]]] = {i: [] for i in range(sessions)}
        self.questions: list[Question] = []
        self._pending: list[tuple[Question, list[str]]] = []
        # what each question is about, to widen its evidence once both people are built:
        # (its place in _pending, whose, event keys, month asked about or None)
        self._about: list[tuple[int, int, tuple[str, ...], str | None]] = []
        # distractors: (speaker, event key) -> [(session, mark ref)]; a distractor says
        # something true of its speaker, so where that speaker is asked about that event
        # (without naming its value) it answers the question too
        self._voiced: dict[tuple[int, str], list[tuple[int, str]]] = {}
        # update questions: (place in _pending, whose, event key, session of the update)
        self._updates: list[tuple[int, int, str, int]] = []

    def chat(self, text: str) -> str:
        """A stock line as said this time (varied, or word for word)."""
        return vary(self.rng, text) if self.varied else text

    def filler(self) -> str:
        return small_talk(self.rng) if self.varied else self.rng.choice(FILLER)

    def longer(self, text: str) -> str:
        """A turn as people write them in long chats: the point among other sentences
        ("Hey! The kids are wild this week. I signed up for a pottery course. How's work?")."""
        before = self.filler() + " " if self.rng.random() < 0.6 else ""
        after = " " + self.filler() if self.rng.random() < 0.6 else ""
        return f"{before}{text}{after}"

    def sid(self, s: int) -> str:
        return f"c{self.no:02d}-s{s + 1:02d}"

    def _relative(self, s: int) -> tuple[str, str]:
        phrase, days = self.rng.choice(RELATIVE)
        date = self.dates[s]
        if days is None:  # the Saturday before the session
            days = (date.weekday() - 5) % 7 or 7
        when = date - timedelta(days=days)
        return phrase, when.strftime("%-d %B %Y")

    def plant(self, event: dict, who: int, s: int, value: str, *, teaser: bool) -> tuple[str, int]:
        """Turns stating the event in session `s`; returns the evidence mark."""
        eid = f"{event['key']}-{who}-{s}"
        phrase, _ = self._relative(s)
        text = self.rng.choice(event["say"]).format(v=value, when=phrase)
        friend = self.names[1 - who]
        if teaser and "split" in event:
            a, b, c = event["split"]
            block = [
                Turn(who, a, (eid, 0)),
                Turn(1 - who, self.chat(b)),
                Turn(who, c.format(v=value), (eid, 1)),
                Turn(1 - who, self.chat(self.rng.choice(REACT).format(n=self.names[who]))),
            ]
            self.plan[s].append(block)
            return eid, 1
        react = self.chat(self.rng.choice(REACT).format(n=self.names[who]))
        self.plan[s].append([Turn(who, text, (eid, 0)), Turn(1 - who, react)])
        del friend
        return eid, 0

    def build(self, events_per_person: int) -> None:
        rng, n = self.rng, len(self.dates)
        for who in (0, 1):
            chosen = rng.sample(EVENTS, events_per_person)
            marks: dict[str, tuple[str, int]] = {}
            said: list[tuple[int, tuple[str, int]]] = []  # (session, mark) of every event turn
            for event in chosen:
                value, other = rng.sample(event["values"], 2)
                s = rng.randrange(0, n - 2 if "update" in event else n)
                teaser = "split" in event and rng.random() < 0.6
                mark = self.plant(event, who, s, value, teaser=teaser)
                said.append((s, mark))
                kind = "split" if teaser else ("temporal" if event.get("when") else "single")
                if "update" in event:
                    later = rng.randrange(s + 1, n)
                    eid = f"{event['key']}-{who}-{later}-u"
                    text = event["update"].format(v=other)
                    react = self.chat(rng.choice(REACT).format(n=self.names[who]))
                    self.plan[later].append([Turn(who, text, (eid, 0)), Turn(1 - who, react)])
                    mark, kind = (eid, 0), "update"
                    said.append((later, mark))
                marks[event["key"]] = mark
                q = event["ask"].format(n=self.names[who], v=value)
                if kind in ("single", "split"):  # (a date: only this one)
                    self._about.append((len(self._pending), who, (event["key"],), None))
                if kind == "update":
                    self._updates.append((len(self._pending), who, event["key"], later))
                self._pending.append((Question(q, kind), [f"{mark[0]}#{mark[1]}"]))
                # the friend says something alike about themselves (a distractor)
                d = rng.randrange(n)
                dtext = rng.choice(event["say"]).format(v=other, when="recently")
                dmark = (f"{event['key']}-{1 - who}-{d}-d", 0)
                self.plan[d].append(
                    [Turn(1 - who, dtext, dmark), Turn(who, self.chat("Oh nice, good for you!"))]
                )
                voiced = self._voiced.setdefault((1 - who, event["key"]), [])
                voiced.append((d, f"{dmark[0]}#{dmark[1]}"))
            for a, b, ask in MULTI:
                if a in marks and b in marks:
                    refs = [f"{marks[k][0]}#{marks[k][1]}" for k in (a, b)]
                    self._about.append((len(self._pending), who, (a, b), None))
                    self._pending.append((Question(ask.format(n=self.names[who]), "multi"), refs))
            self._ask_period(who, said)
        self._widen()

    def _widen(self) -> None:
        """Add to each question the distractors that are true answers to it: said by its
        person, about its event (or, for a month, any of theirs from then)."""
        for at, who, keys, month in self._about:
            question, refs = self._pending[at]
            for (speaker, key), voiced in sorted(self._voiced.items()):
                if speaker != who or (month is None and key not in keys):
                    continue
                for s, ref in voiced:
                    if month is None or self.dates[s].strftime("%B %Y") == month:
                        refs.append(ref)
        # what is true now: a distractor the person voiced after their update is newer
        for at, who, key, updated in self._updates:
            newer = [(s, ref) for s, ref in self._voiced.get((who, key), []) if s > updated]
            if newer:
                self._pending[at][1][:] = [max(newer)[1]]

    def _ask_period(self, who: int, said: list[tuple[int, tuple[str, int]]]) -> None:
        """A question naming a month, answered by any of the person's news that month (no
        random draws: the rest of the data stays as it was without these questions)."""
        months: dict[str, list[str]] = {}
        for s, mark in said:
            months.setdefault(self.dates[s].strftime("%B %Y"), []).append(f"{mark[0]}#{mark[1]}")
        month = max(sorted(months), key=lambda m: len(months[m]))
        query = f"What was {self.names[who]} up to in {month}?"
        self._about.append((len(self._pending), who, (), month))
        self._pending.append((Question(query, "period"), months[month]))

    def sessions(self) -> Iterator[dict]:
        """Sessions as import records; resolves the questions' evidence to (session, index)."""
        where: dict[str, tuple[str, int]] = {}
        for s, date in enumerate(self.dates):
            turns = [Turn(1, self.chat(self.rng.choice(GREET).format(n=self.names[0])))]
            turns.append(Turn(0, self.filler()))
            blocks = self.plan[s]
            for block in blocks:
                for _ in range(self.rng.randint(2, 6)):
                    turns.append(Turn(1 - turns[-1].speaker, self.filler()))
                turns.extend(block)
            for _ in range(self.rng.randint(14, 26)):
                turns.append(Turn(1 - turns[-1].speaker, self.filler()))
            messages = []
            for i, t in enumerate(turns):
                if t.mark is not None:
                    where[f"{t.mark[0]}#{t.mark[1]}"] = (self.sid(s), i)
                messages.append(
                    {
                        "role": "user" if t.speaker == 0 else "assistant",
                        "name": self.names[t.speaker],
                        "content": self.longer(t.text) if self.long else t.text,
                        "timestamp": (date + timedelta(seconds=40 * i)).timestamp(),
                    }
                )
            yield {
                "id": self.sid(s),
                "title": f"{self.names[0]} and {self.names[1]}",
                "started_at": date.timestamp(),
                "source": "import",
                "messages": messages,
            }
        for q, refs in self._pending:
            q.evidence = [where[r] for r in refs]
            self.questions.append(q)


def filler_conversations(seed: int, n_messages: int) -> Iterator[dict]:
    """Chat between other people to grow the store: everyday topics with a wide vocabulary
    (bench/recall_data.py's generators), one session in ten on this file's topics."""
    gen = Generator(seed, prefix="x")
    rng = gen.rng
    made, no = 0, 0
    base = datetime(2022, 6, 1, tzinfo=UTC)
    names = [p for pair in PAIRS for p in pair]
    while made < n_messages:
        a, b = rng.sample(names, 2)
        pairs = min((n_messages - made + 1) // 2, rng.randint(10, 20))
        if rng.random() < 0.1:
            texts = [rng.choice(FILLER) for _ in range(2 * pairs)]
        else:
            texts = [m["content"] for m in gen.generic_messages(pairs)]
        date = base + timedelta(days=rng.uniform(0, 600))
        no += 1
        made += len(texts)
        yield {
            "id": f"x{no:07d}",
            "title": f"{a} and {b}",
            "started_at": date.timestamp(),
            "source": "import",
            "messages": [
                {
                    "role": "user" if i % 2 == 0 else "assistant",
                    "name": a if i % 2 == 0 else b,
                    "content": t,
                    "timestamp": (date + timedelta(seconds=40 * i)).timestamp(),
                }
                for i, t in enumerate(texts)
            ],
        }


def write_dialogues(
    out: Path,
    *,
    conversations: int = 10,
    sessions: int = 24,
    extra: int = 0,
    seed: int = 11,
    varied: bool = False,
    long: bool = False,
) -> list[dict]:
    """Write <out>/dialogues.jsonl and <out>/filler-*.jsonl; return the questions.
    `varied`: small talk and reactions are rarely said twice word for word; `long` (with
    `varied`): most turns say their point among one or two other sentences, as in long
    chats, where a whole turn's embedding is diluted by the rest."""
    rng = random.Random(seed)
    out.mkdir(parents=True, exist_ok=True)
    questions: list[dict] = []
    with (out / "dialogues.jsonl").open("w", encoding="utf-8") as fh:
        for no in range(conversations):
            convo = Conversation(
                rng, no, PAIRS[no % len(PAIRS)], sessions, varied=varied, long=long
            )
            convo.build(events_per_person=8)
            for session in convo.sessions():
                fh.write(json.dumps(session) + "\n")
            questions += [
                {"query": q.query, "kind": q.kind, "evidence": q.evidence} for q in convo.questions
            ]
    # the growth goes to files of ~100k messages: one import each (bounded memory)
    part, size, fh = 0, 0, None
    for session in filler_conversations(seed + 1, extra):
        if fh is None or size >= 100_000:
            if fh is not None:
                fh.close()
            part, size = part + 1, 0
            fh = (out / f"filler-{part:03d}.jsonl").open("w", encoding="utf-8")
        fh.write(json.dumps(session) + "\n")
        size += len(session["messages"])
    if fh is not None:
        fh.close()
    return questions
