"""Synthetic long multi-session conversations with planted facts, for bench/recall.py.

Each persona (one end-user scope) talks with the assistant over many sessions. A few turns
plant personal facts, said in other words than the later question, sometimes spread over
neighbouring turns (the fact's value only in the user's follow-up), sometimes updated in a
later session (then only the newest statement counts as evidence). The rest of the first
`per_persona` messages is filler chat on topics that share the questions' vocabulary (hard
negatives); the history grown beyond that (the 1M scale) is mostly unrelated everyday chat,
with one session in ten still on the facts' topics. Deterministic for a seed; written to a
directory the caller chooses (never the repository).
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

# ----------------------------------------------------------------------------- facts
# Each fact: values, ways to state it ({v} = value), optional spread form (opener the user
# says first, assistant follow-up, then the user's answer carrying the value), questions,
# and update statements (said in a later session; only the newest counts as evidence).

FACTS: list[dict] = [
    {
        "key": "pet",
        "values": ["Biscuit", "Pepper", "Waffles", "Juniper", "Otis", "Mochi"],
        "say": [
            "We just adopted a beagle puppy and named him {v}, he's chewing everything.",
            "Our new rescue pup is called {v} and he already owns the couch.",
        ],
        "spread": (
            "Big news at home, a new four-legged family member arrived on Saturday!",
            "Congratulations, that's exciting! What did you decide to call the little one?",
            "{v}. The kids picked it after a long debate.",
        ),
        "ask": ["What is my dog's name?", "What did we name the puppy?"],
    },
    {
        "key": "city",
        "values": ["Denver", "Porto", "Austin", "Leipzig", "Halifax", "Kyoto"],
        "say": [
            "I relocated to {v} in March for the new role, still unpacking boxes.",
            "Moving to {v} was the best decision, the neighbourhood is lovely.",
        ],
        "update": ["Plot twist: we're moving again, signed a lease in {v} yesterday."],
        "ask": ["Which city do I live in now?", "Where did I move to?"],
    },
    {
        "key": "job",
        "values": [
            "Atlassian",
            "Siemens",
            "a small robotics startup",
            "the city library",
            "Moderna",
            "a regional bank",
        ],
        "say": [
            "I accepted an offer as a data engineer at {v}, starting in two weeks.",
            "First week at {v} went well, my team is friendly.",
        ],
        "update": ["I handed in my notice, next month I'm joining {v} instead."],
        "ask": ["Where do I work?", "Which company did I join?"],
    },
    {
        "key": "sister",
        "values": ["Clara", "Ines", "Maya", "Rosalind", "Tess", "Yuki"],
        "say": ["My younger sister {v} is visiting this weekend, any ideas for a day out?"],
        "spread": (
            "My sibling is flying in on Friday and I want to plan something nice.",
            "Lovely! Tell me a bit about them so I can suggest something.",
            "Her name is {v}, she loves museums and spicy food.",
        ),
        "ask": ["What is my sister's name?", "Who is my sister?"],
    },
    {
        "key": "allergy",
        "values": ["peanuts", "shellfish", "sesame", "kiwi", "walnuts", "eggs"],
        "say": [
            "Please keep {v} out of any recipe, I'm seriously allergic.",
            "I react badly to {v}, so recipes without them please.",
            "My {v} allergy flared up again after the work dinner.",
        ],
        "ask": ["What food allergy do I have?", "Which ingredient must my recipes avoid?"],
    },
    {
        "key": "car",
        "values": [
            "Subaru Outback",
            "Tesla Model 3",
            "Mazda CX-5",
            "Volvo V60",
            "Honda Civic",
            "Ford Maverick",
        ],
        "say": [
            "I finally picked up my {v} from the dealer, it drives like a dream.",
            "Traded in the old hatchback for a {v}.",
        ],
        "update": ["Sold the car, I'm driving a {v} now."],
        "ask": ["What car do I drive?", "Which vehicle did I buy?"],
    },
    {
        "key": "marathon",
        "values": ["Berlin", "Chicago", "Boston", "Tokyo", "London", "Valencia"],
        "say": [
            "Training plan check: the {v} marathon is in eleven weeks and my long runs are at 28 km.",
            "I signed up for the {v} marathon this autumn!",
        ],
        "ask": ["Which marathon am I running?", "What race am I training for?"],
    },
    {
        "key": "instrument",
        "values": ["cello", "banjo", "piano", "trumpet", "ukulele", "violin"],
        "say": [
            "Two months into {v} lessons and my fingers finally cooperate.",
            "I've been practising the {v} every evening after dinner.",
            "Learning an instrument as an adult is humbling, the {v} especially.",
        ],
        "ask": ["What instrument am I learning?", "Which instrument do I play?"],
    },
    {
        "key": "book",
        "values": [
            "The Overstory",
            "Middlemarch",
            "Project Hail Mary",
            "Piranesi",
            "Dune",
            "The Name of the Wind",
        ],
        "say": [
            "I'm halfway through {v} and can't put it down.",
            "Started reading {v} on the train, it's gripping.",
            "The book club picked {v} this month, I'm loving it.",
        ],
        "ask": ["Which book am I reading at the moment?", "What novel did I start?"],
    },
    {
        "key": "trip",
        "values": ["Lisbon", "Iceland", "Vietnam", "the Dolomites", "Patagonia", "Crete"],
        "say": ["We booked two weeks in {v} for August, flights are sorted."],
        "spread": (
            "Finally locked in our summer holiday after months of arguing!",
            "Nice, where are you heading?",
            "{v}! Two weeks, leaving the first of August.",
        ),
        "update": ["Change of plans for the summer: we cancelled and are going to {v} instead."],
        "ask": ["Where am I going on vacation?", "What is the destination of my summer trip?"],
    },
    {
        "key": "diet",
        "values": ["vegetarian", "vegan", "pescatarian", "keto", "gluten-free", "low-FODMAP"],
        "say": [
            "Since January I've been eating {v}, and honestly I feel better.",
            "Switching to a {v} diet was hard the first month, now it's easy.",
        ],
        "ask": ["What diet do I follow?", "What kind of eating plan am I on?"],
    },
    {
        "key": "coffee",
        "values": [
            "flat white",
            "cortado",
            "oat latte",
            "double espresso",
            "cold brew",
            "cappuccino",
        ],
        "say": [
            "My usual order at the café is a {v}, every single morning.",
            "I can't start a workday without coffee, and it has to be a {v}.",
        ],
        "ask": ["How do I take my coffee?", "What is my usual coffee order?"],
    },
    {
        "key": "team",
        "values": [
            "Liverpool",
            "the Green Bay Packers",
            "Boca Juniors",
            "the Seattle Sounders",
            "Celtic",
            "the Chicago Cubs",
        ],
        "say": [
            "I've supported {v} since I was seven, my dad took me to my first match.",
            "Huge game for {v} on Sunday, I'm a nervous wreck.",
        ],
        "ask": ["Which team do I support?", "What team do I root for?"],
    },
    {
        "key": "partner",
        "values": ["Daniel", "Priya", "Marco", "Sofia", "Hannah", "Kenji"],
        "say": ["My husband {v} is planning the anniversary dinner, so I'm off the hook."],
        "spread": (
            "It's our tenth wedding anniversary next week and I have no gift yet.",
            "Ten years, congratulations! What does your spouse enjoy?",
            "{v} is into woodworking and old jazz records.",
        ),
        "ask": ["What is my spouse's name?", "Who am I married to?"],
    },
    {
        "key": "degree",
        "values": [
            "marine biology",
            "economics",
            "mechanical engineering",
            "art history",
            "linguistics",
            "nursing",
        ],
        "say": [
            "Back when I studied {v} at university I never thought I'd end up here.",
            "My degree is in {v}, though I barely use it now.",
        ],
        "ask": ["What did I study in college?", "What is my degree in?"],
    },
    {
        "key": "language",
        "values": ["Portuguese", "Japanese", "Italian", "Korean", "Dutch", "Turkish"],
        "say": ["I'm practising my {v} on an app for twenty minutes a day before work."],
        "ask": ["Which language am I learning?", "What language do I practise every day?"],
    },
    {
        "key": "renovation",
        "values": ["kitchen", "bathroom", "attic", "basement", "garden shed", "hallway"],
        "say": [
            "We're tearing out the old {v} this month, contractors start Monday.",
            "Renovating the {v} is taking forever, the tiles arrived broken.",
        ],
        "ask": ["Which room are we renovating?", "What part of the house is being remodelled?"],
    },
    {
        "key": "podcast",
        "values": [
            "Hardcore History",
            "99% Invisible",
            "Radiolab",
            "Reply All",
            "Planet Money",
            "Song Exploder",
        ],
        "assistant": (
            "Can you suggest something to listen to on my commute?",
            "For the commute I'd recommend the podcast {v}: episodes are well researched "
            "and about the right length.",
        ),
        "ask": ["What podcast did you recommend to me?", "Which show did you suggest I listen to?"],
    },
    {
        "key": "plant",
        "values": [
            "fiddle-leaf fig",
            "monstera",
            "peace lily",
            "snake plant",
            "rubber plant",
            "calathea",
        ],
        "say": ["The {v} on my windowsill keeps dropping leaves, what am I doing wrong?"],
        "ask": ["Which houseplant was losing leaves?", "What plant was I worried about?"],
    },
    {
        "key": "commute",
        "values": ["25 minutes", "40 minutes", "an hour", "15 minutes", "50 minutes", "35 minutes"],
        "say": [
            "I cycle to the office, it takes about {v} each way.",
            "My commute is {v} by bike, which I secretly enjoy.",
        ],
        "ask": ["How long is my commute?", "How long does my ride to work take?"],
    },
    {
        "key": "phone",
        "values": [
            "Pixel 8",
            "iPhone 15",
            "Galaxy S24",
            "Fairphone 5",
            "OnePlus 12",
            "Nothing Phone",
        ],
        "say": [
            "Switched to a {v} last month and the battery is so much better.",
            "My new phone is a {v}, the camera is ridiculous.",
        ],
        "update": ["Dropped my phone in the lake, so I replaced it with a {v}."],
        "ask": ["What phone do I use?", "Which smartphone do I have now?"],
    },
    {
        "key": "restaurant",
        "values": ["Nopa", "Chez Panisse", "Dishoom", "Lilia", "Zuni Café", "Noma"],
        "assistant": (
            "Any tips for a birthday dinner spot that does great vegetables?",
            "{v} is a strong pick: seasonal menu, lively room, book a week ahead.",
        ),
        "ask": [
            "Which restaurant did you recommend for the birthday dinner?",
            "What place did you suggest for dinner?",
        ],
    },
]

# ----------------------------------------------------------------------------- filler

TOPICS: dict[str, dict[str, list[str]]] = {
    "cooking": {
        "ask": [
            "How do I make a {a} {b} without it going soggy?",
            "What can I cook with leftover {b}?",
            "Is it okay to freeze {b}?",
            "My friend is allergic to {b}, what can I use instead?",
        ],
        "a": ["crispy", "quick", "spicy", "creamy", "vegan", "one-pan", "weeknight"],
        "b": [
            "rice",
            "chicken",
            "tofu",
            "pasta",
            "lentils",
            "salmon",
            "eggs",
            "peanut sauce",
            "sesame noodles",
            "coffee cake",
            "kiwi salad",
            "mushrooms",
        ],
    },
    "travel": {
        "ask": [
            "What should I pack for a week in {b}?",
            "Is {b} expensive for a vacation?",
            "Best way to get around {b} without a car?",
            "My sister wants to move to {b}, thoughts?",
        ],
        "a": ["cheap", "scenic", "quiet", "family"],
        "b": [
            "Lisbon",
            "Kyoto",
            "Denver",
            "Iceland",
            "Crete",
            "Austin",
            "Berlin",
            "Chicago",
            "Patagonia",
            "Halifax",
            "Valencia",
            "Tokyo",
        ],
    },
    "fitness": {
        "ask": [
            "How many rest days should I take when training for a {a} race?",
            "Is {b} good for building endurance?",
            "What should I eat before a long {b} session?",
        ],
        "a": ["10k", "half marathon", "marathon", "trail"],
        "b": ["running", "cycling", "swimming", "rowing", "yoga", "the gym", "interval training"],
    },
    "tech": {
        "ask": [
            "My {b} battery drains fast, any fixes?",
            "Should I upgrade my {b}?",
            "How do I back up photos from my {b}?",
            "Which {a} apps help with learning a language?",
        ],
        "a": ["free", "offline", "popular", "privacy-friendly"],
        "b": ["phone", "laptop", "iPhone", "Pixel", "tablet", "smartwatch", "router"],
    },
    "home": {
        "ask": [
            "How long does a {b} renovation usually take?",
            "What paint works for a {a} {b}?",
            "My {b} plant keeps dying, too much water?",
            "How do I stop a {b} draft?",
        ],
        "a": ["damp", "small", "north-facing", "old"],
        "b": [
            "kitchen",
            "bathroom",
            "attic",
            "basement",
            "hallway",
            "garden",
            "monstera",
            "peace lily",
        ],
    },
    "pets": {
        "ask": [
            "How often should I walk a {b}?",
            "What are good names for a {a} dog?",
            "Is it normal for a {b} to chew furniture?",
            "My neighbour's {b} barks all night, advice?",
        ],
        "a": ["small", "playful", "rescue", "senior"],
        "b": ["beagle", "puppy", "terrier", "cat", "retriever", "dog"],
    },
    "work": {
        "ask": [
            "How do I prepare for a {a} interview?",
            "Is it rude to leave a job after {b}?",
            "How do I ask my manager about a {a} promotion?",
            "Tips for a long {b} commute?",
        ],
        "a": ["technical", "remote", "final-round", "internal"],
        "b": ["six months", "a year", "two weeks", "an hour", "train", "bike"],
    },
    "money": {
        "ask": [
            "Should I pay off my {b} or invest?",
            "How much should I save for a {a} trip?",
            "Is leasing a {b} a bad idea?",
            "How do I budget for a {a} wedding anniversary?",
        ],
        "a": ["summer", "big", "modest", "tenth"],
        "b": ["car loan", "student debt", "credit card", "car", "mortgage"],
    },
    "culture": {
        "ask": [
            "Can you recommend a {a} book like {b}?",
            "What's a good {a} podcast about history?",
            "Which {b} album should I start with?",
            "Is the {a} series worth reading?",
        ],
        "a": ["gripping", "funny", "short", "classic", "science fiction"],
        "b": ["Dune", "Middlemarch", "jazz", "Radiolab", "Piranesi", "cello", "piano"],
    },
    "sport": {
        "ask": [
            "Who won the {b} match last night?",
            "How do I get tickets for {b}?",
            "Why do people support {b} so passionately?",
        ],
        "a": ["home", "away"],
        "b": ["Liverpool", "Celtic", "the Cubs", "Boca Juniors", "the Packers", "the Sounders"],
    },
}

TIPS: dict[str, list[str]] = {
    "cooking": [
        "Roast the {b} hot and fast so the edges crisp up.",
        "A splash of acid at the end wakes up any {b} dish.",
        "Most recipes with {b} freeze well for about three months.",
        "If anyone at the table has an allergy, check every sauce label twice.",
    ],
    "travel": [
        "In {b} the trains are the easiest way to get around.",
        "Book flights to {b} about two months ahead for the best fares.",
        "Pack layers: the weather in {b} changes quickly.",
        "A city pass often pays for itself if you visit three museums.",
    ],
    "fitness": [
        "Build your long runs slowly, about ten percent more distance per week.",
        "{b} twice a week complements running nicely.",
        "Eat something light with carbs about two hours before {b}.",
        "Rest days are when the training actually turns into fitness.",
    ],
    "tech": [
        "Turn off background refresh to save battery on your {b}.",
        "Most {b} backups can run automatically overnight on wifi.",
        "Language apps work best with a daily streak of ten to twenty minutes.",
        "Check whether your {b} still gets security updates before upgrading.",
    ],
    "home": [
        "A {b} renovation usually runs two to four weeks past the estimate.",
        "Let the soil dry out between waterings; most houseplants hate wet feet.",
        "Seal gaps around the {b} windows with foam tape before winter.",
        "Get three quotes from contractors before you commit.",
    ],
    "pets": [
        "Most dogs need at least two walks a day, more for a young {b}.",
        "Puppies chew because they are teething; give them something allowed to chew.",
        "Short names with two syllables are easiest for a dog to learn.",
        "Crate training helps a new {b} settle in at night.",
    ],
    "work": [
        "Practise the interview out loud, ideally with a friend.",
        "Leaving a job after {b} is fine if you explain it calmly.",
        "Bring concrete examples of your work to the promotion conversation.",
        "A long commute by {b} is easier with podcasts or audiobooks.",
    ],
    "money": [
        "Pay off high-interest debt like a {b} before investing.",
        "A simple budget splits needs, wants and savings.",
        "Put a little aside every month for the trip instead of one big payment.",
        "Leasing a {b} makes sense only if you change vehicles often.",
    ],
    "culture": [
        "If you liked {b}, try something by the same publisher or label.",
        "The best history podcasts mix primary sources with good storytelling.",
        "Start a new author with their most recommended novel.",
        "Listening to a whole album in order is a different experience.",
    ],
    "sport": [
        "Tickets for {b} home games sell out fast; join the members list.",
        "Supporting a team is mostly about community and family memories.",
        "The away end is usually cheaper and louder.",
        "Watching the match at a local pub with other fans is half the fun.",
    ],
}

# Everyday topics that do not aim at the planted facts: most of a big history is like this.
# Slots combine freely, so even 100k messages rarely repeat a sentence word for word.
GENERIC: dict[str, dict[str, list[str]]] = {
    "code": {
        "ask": [
            "How do I {v} a {n} in {x}?",
            "Why does my {x} {n} fail to {v}?",
            "What is the cleanest way to {v} {n} objects in {x}?",
        ],
        "v": [
            "parse",
            "serialize",
            "sort",
            "cache",
            "validate",
            "stream",
            "merge",
            "profile",
            "refactor",
            "mock",
            "retry",
            "paginate",
        ],
        "n": [
            "JSON",
            "CSV",
            "date",
            "query",
            "socket",
            "thread",
            "regex",
            "config",
            "template",
            "migration",
            "websocket",
            "queue",
            "iterator",
            "decorator",
        ],
        "x": ["Python", "Rust", "Go", "TypeScript", "Kotlin", "SQL", "Bash", "Elixir"],
    },
    "history": {
        "ask": [
            "What caused the {n} of the {x}?",
            "Who led the {x} during the {n}?",
            "How did the {x} {v} after the {n}?",
        ],
        "v": ["recover", "expand", "collapse", "trade", "modernise", "rebuild"],
        "n": ["decline", "rise", "reform", "famine", "schism", "treaty", "revolt", "census"],
        "x": [
            "Byzantine Empire",
            "Hanseatic League",
            "Ming dynasty",
            "Aztec state",
            "Ottoman navy",
            "Venetian republic",
            "Mughal court",
            "Inca road network",
        ],
    },
    "science": {
        "ask": [
            "Why does {n} {v} at low {x}?",
            "How do scientists measure {n} in {x}?",
            "Can {n} really {v} without {x}?",
        ],
        "v": ["condense", "oscillate", "decay", "diffuse", "crystallise", "ionise"],
        "n": [
            "helium",
            "plankton",
            "granite",
            "neutrinos",
            "enzymes",
            "magma",
            "ozone",
            "graphene",
            "lichen",
            "quasars",
        ],
        "x": ["pressure", "temperature", "gravity", "salinity", "altitude", "light"],
    },
    "writing": {
        "ask": [
            "How do I make the {n} of my {x} more {v}?",
            "Can you tighten this {x} {n} and keep it {v}?",
        ],
        "v": ["vivid", "concise", "formal", "playful", "persuasive", "neutral"],
        "n": ["opening", "ending", "dialogue", "summary", "outline", "pacing", "title"],
        "x": [
            "essay",
            "cover letter",
            "short story",
            "grant proposal",
            "newsletter",
            "speech",
            "blog post",
        ],
    },
}
GENERIC_ANSWERS = [
    "Start with the {n} and check each step against a small {x} example.",
    "The usual trick is to {v} early and keep the {n} separate from the rest.",
    "Historians and engineers alike warn that {n} problems compound over time.",
    "A quick experiment with {x} will tell you more than any rule of thumb about {n}.",
    "Consider whether you need to {v} at all; sometimes the {n} is fine as it is.",
    "Documentation for {x} covers the {n} case in its advanced section.",
    "Measure first: the {n} is rarely where the time actually goes.",
    "Keep a short log of what you tried with the {n}, it saves repeating mistakes.",
]

ANSWER_SENTENCES = [
    "A good rule of thumb is to start small and adjust as you learn what works for you.",
    "Many people find that planning ahead saves a lot of stress later on.",
    "It depends on your budget, your schedule and how much time you want to invest.",
    "If you are unsure, try it for a couple of weeks and keep notes on how it goes.",
    "Experts usually recommend consistency over intensity when building a new habit.",
    "Keep an eye on the details, but don't let perfect become the enemy of good.",
    "You could also ask a friend or a local group for first-hand recommendations.",
    "Prices vary a lot by season, so compare a few options before you commit.",
    "Make a short checklist so nothing important slips through the cracks.",
    "Safety first: if anything feels off, stop and get a professional opinion.",
    "Here is a simple plan: pick one step for today, one for this week, one for this month.",
    "Lots of people struggle with this at first, so be patient with yourself.",
    "A quick search of reviews from the last year will tell you what has changed recently.",
    "Water, sleep and a bit of movement fix more problems than we like to admit.",
    "The cheapest option is rarely the best value over the long run.",
    "Write down what you actually enjoy about it; that tells you what to keep.",
]

ACKS = [
    "Thanks, that helps!",
    "Good point, I'll try that.",
    "Makes sense.",
    "Got it, cheers.",
    "Interesting, I didn't know that.",
    "Okay, what else should I keep in mind?",
]

REACTIONS = {
    "pet": "Congratulations on the new puppy! Dogs settle in faster with a routine.",
    "city": "Moving is a big change; give yourself time to settle into the new city.",
    "job": "Congratulations on the new job! The first weeks at a new company are about listening.",
    "car": "Enjoy the new car! Keep the first service appointment in mind.",
    "trip": "That sounds like a wonderful vacation destination.",
    "phone": "A new phone is always a treat; don't forget to move your backups over.",
}


@dataclass
class Question:
    persona: str
    query: str
    key: str
    kind: str  # direct | spread | updated | assistant
    evidence: list[tuple[str, int]] = field(default_factory=list)


@dataclass
class Persona:
    user: str
    sessions: list[dict] = field(default_factory=list)
    questions: list[Question] = field(default_factory=list)


class Generator:
    """Builds personas whose sessions hold planted facts inside filler chat."""

    def __init__(self, seed: int = 7, prefix: str = "s") -> None:
        self.rng = random.Random(seed)
        self.prefix = prefix
        self._session_no = 0

    # -- filler --------------------------------------------------------------------------

    def _filler_pair(self, topic: str | None = None) -> tuple[str, str]:
        rng = self.rng
        topic = topic or rng.choice(list(TOPICS))
        bank = TOPICS[topic]
        ask = rng.choice(bank["ask"]).format(a=rng.choice(bank["a"]), b=rng.choice(bank["b"]))
        tips = [t.format(b=rng.choice(bank["b"])) for t in rng.sample(TIPS[topic], 2)]
        general = rng.sample(ANSWER_SENTENCES, rng.randint(1, 4))
        sentences = tips + general
        rng.shuffle(sentences)
        return ask, " ".join(sentences)

    def _generic_pair(self, topic: str) -> tuple[str, str]:
        rng, bank = self.rng, GENERIC[topic]

        def fill(t: str) -> str:
            return t.format(
                v=rng.choice(bank["v"]), n=rng.choice(bank["n"]), x=rng.choice(bank["x"])
            )

        answer = [fill(t) for t in rng.sample(GENERIC_ANSWERS, rng.randint(2, 4))]
        return fill(rng.choice(bank["ask"])), " ".join(answer)

    def generic_messages(self, n_pairs: int) -> list[dict]:
        topic = self.rng.choice(list(GENERIC))
        out: list[dict] = []
        for _ in range(n_pairs):
            ask, answer = self._generic_pair(topic)
            out += [{"role": "user", "content": ask}, {"role": "assistant", "content": answer}]
        return out

    def filler_messages(self, n_pairs: int) -> list[dict]:
        topic = self.rng.choice(list(TOPICS))
        out: list[dict] = []
        for _ in range(n_pairs):
            if out and self.rng.random() < 0.3:
                ask, answer = self.rng.choice(ACKS), self._filler_pair(topic)[1]
            else:
                ask, answer = self._filler_pair(topic)
            out += [{"role": "user", "content": ask}, {"role": "assistant", "content": answer}]
        return out

    def _session(self, user: str, messages: list[dict], start: float) -> dict:
        self._session_no += 1
        for i, m in enumerate(messages):
            m["timestamp"] = start + 30 * i
        return {
            "id": f"{user}-{self.prefix}{self._session_no:06d}",
            "started_at": start,
            "messages": messages,
            "title": None,
            "source": "import",
        }

    # -- planted facts -------------------------------------------------------------------

    def _plant(self, fact: dict, value: str, *, update: bool) -> tuple[list[dict], int, str]:
        """Messages stating the fact; returns (messages, evidence offset, kind)."""
        rng = self.rng
        if update:
            text = rng.choice(fact["update"]).format(v=value)
            return (
                [
                    {"role": "user", "content": text},
                    {"role": "assistant", "content": self._reaction(fact)},
                ],
                0,
                "updated",
            )
        if "assistant" in fact:
            ask, rec = fact["assistant"]
            return (
                [
                    {"role": "user", "content": ask},
                    {"role": "assistant", "content": rec.format(v=value)},
                ],
                1,
                "assistant",
            )
        if "spread" in fact and rng.random() < 0.5:
            opener, follow, answer = fact["spread"]
            return (
                [
                    {"role": "user", "content": opener},
                    {"role": "assistant", "content": follow},
                    {"role": "user", "content": answer.format(v=value)},
                    {"role": "assistant", "content": self._reaction(fact)},
                ],
                2,
                "spread",
            )
        text = rng.choice(fact["say"]).format(v=value)
        return (
            [
                {"role": "user", "content": text},
                {"role": "assistant", "content": self._reaction(fact)},
            ],
            0,
            "direct",
        )

    def _reaction(self, fact: dict) -> str:
        lead = REACTIONS.get(fact["key"], "Thanks for sharing that.")
        return f"{lead} {' '.join(self.rng.sample(ANSWER_SENTENCES, 2))}"

    def persona(self, index: int, *, total_messages: int, facts_per_persona: int = 18) -> Persona:
        """One user's sessions: facts planted early (updates later) inside filler sessions."""
        rng = self.rng
        user = f"p{index:02d}"
        persona = Persona(user=user)
        chosen = rng.sample(FACTS, min(facts_per_persona, len(FACTS)))
        plants: list[tuple[dict, str, bool]] = []
        for fact in chosen:
            first, second = rng.sample(fact["values"], 2)
            plants.append((fact, first, False))
            if "update" in fact:
                plants.append((fact, second, True))
        base = 1_700_000_000.0 + index * 10_000_000
        n_sessions = max(len(plants) + 2, total_messages // 24)
        fact_slots = sorted(rng.sample(range(n_sessions), len(plants)))
        # originals before updates: sort plants so updates come last in time
        plants.sort(key=lambda p: p[2])
        slot_of = dict(zip(fact_slots, plants, strict=True))
        remaining = total_messages
        for s in range(n_sessions):
            left = n_sessions - s
            size = max(4, remaining // left + rng.randint(-6, 6)) if left > 1 else max(4, remaining)
            size -= size % 2
            start = base + s * 86_400
            if s in slot_of:
                fact, value, update = slot_of[s]
                planted, offset, kind = self._plant(fact, value, update=update)
                before = self.filler_messages(rng.randint(1, max(1, (size - len(planted)) // 4)))
                after_n = max(1, (size - len(planted) - len(before)) // 2)
                messages = before + planted + self.filler_messages(after_n)
                session = self._session(user, messages, start)
                evidence = (session["id"], len(before) + offset)
                self._record(persona, fact, kind, evidence, update)
            else:
                session = self._session(user, self.filler_messages(size // 2), start)
            persona.sessions.append(session)
            remaining -= len(session["messages"])
        return persona

    def _record(
        self, persona: Persona, fact: dict, kind: str, evidence: tuple[str, int], update: bool
    ) -> None:
        existing = [q for q in persona.questions if q.key == fact["key"]]
        if update:  # the newer statement replaces the evidence of the earlier one
            for q in existing:
                q.evidence = [evidence]
                q.kind = "updated"
            return
        for query in fact["ask"]:
            persona.questions.append(Question(persona.user, query, fact["key"], kind, [evidence]))


def filler_sessions(
    gen: Generator, user: str, n_messages: int, span: tuple[float, float]
) -> Iterator[dict]:
    """Extra sessions to grow the store, at random times in `span`: mostly everyday topics
    unrelated to the facts, one in ten on the facts' topics (hard negatives keep growing)."""
    made = 0
    while made < n_messages:
        size = min(n_messages - made, 2 * gen.rng.randint(10, 30))
        size = max(2, size - size % 2)
        start = gen.rng.uniform(*span)
        make = gen.filler_messages if gen.rng.random() < 0.1 else gen.generic_messages
        session = gen._session(user, make(size // 2), start)
        made += len(session["messages"])
        yield session


def write_dataset(
    out: Path, *, personas: int, per_persona: int, extra_per_persona: int = 0, seed: int = 7
) -> list[Question]:
    """Write <out>/<user>.jsonl per persona (+ filler) and <out>/questions.jsonl."""
    out.mkdir(parents=True, exist_ok=True)
    gen = Generator(seed)
    grow = Generator(seed + 1, prefix="x")  # its own stream: the 10k core is the same at 1M
    questions: list[Question] = []
    for i in range(personas):
        p = gen.persona(i, total_messages=per_persona)
        with (out / f"{p.user}.jsonl").open("w", encoding="utf-8") as fh:
            for session in p.sessions:
                fh.write(json.dumps(session) + "\n")
            if extra_per_persona:  # more history, interleaved in time with the planted facts
                span = (p.sessions[0]["started_at"], p.sessions[-1]["started_at"])
                for session in filler_sessions(grow, p.user, extra_per_persona, span):
                    fh.write(json.dumps(session) + "\n")
        questions.extend(p.questions)
    with (out / "questions.jsonl").open("w", encoding="utf-8") as fh:
        for q in questions:
            fh.write(
                json.dumps(
                    {
                        "persona": q.persona,
                        "query": q.query,
                        "key": q.key,
                        "kind": q.kind,
                        "evidence": q.evidence,
                    }
                )
                + "\n"
            )
    return questions
