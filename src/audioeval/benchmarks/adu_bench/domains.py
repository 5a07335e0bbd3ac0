"""ADU-Bench's taxonomy: its four datasets, the domains of each (the paper's Table 8), the languages the
built-in corpus speaks and the names the upstream ADU-Bench folders use for all of them."""

from __future__ import annotations

import hashlib
import re

DATASETS: dict[str, str] = {
    "general": "ADU-General",
    "skill": "ADU-Skill",
    "multilingual": "ADU-Multilingual",
    "ambiguity": "ADU-Ambiguity",
}

DOMAINS: dict[str, tuple[str, ...]] = {
    "general": ("helpful_question", "daily_question", "daily_statement"),
    "skill": (
        "mathematics",
        "physics",
        "chemistry",
        "biology",
        "computer_science",
        "code",
        "law",
        "finance",
        "common_sense",
        "writing",
        "roleplay",
        "medicine",
    ),
    "multilingual": (
        "arabic",
        "chinese",
        "english",
        "french",
        "german",
        "japanese",
        "korean",
        "russian",
        "spanish",
    ),
    "ambiguity": ("intonation", "pause", "homophone", "repetition"),
}

#: the paper's Table 8: items per domain in the released ADU-Bench (20,715 in all)
PAPER_DOMAIN_SIZES: dict[str, dict[str, int]] = {
    "general": {"helpful_question": 4000, "daily_question": 4000, "daily_statement": 4000},
    "skill": {
        "mathematics": 1000,
        "physics": 210,
        "chemistry": 180,
        "biology": 180,
        "computer_science": 115,
        "code": 1000,
        "law": 325,
        "finance": 60,
        "common_sense": 500,
        "writing": 40,
        "roleplay": 20,
        "medicine": 95,
    },
    "multilingual": dict.fromkeys(DOMAINS["multilingual"], 400),
    "ambiguity": {"intonation": 395, "pause": 250, "homophone": 490, "repetition": 255},
}

#: datasets whose mean is the plain mean of its domain means, whatever their sizes (the paper's arithmetic)
EQUAL_DOMAIN_WEIGHTS = ("ambiguity",)


def domain_weight(dataset: str, domain: str) -> float:
    """The weight of a domain's mean in its dataset's mean, as the paper computes its Tables 2, 9 and 10.

    ADU-Ambiguity is the plain mean of its four type means (Whisper+GPT-4: 4.02, 5.02, 3.64, 9.03 -> 5.43
    printed; weighting by the items would give 4.99). ADU-Skill weights each skill by its items in the full
    dataset (Table 8; 8.54 printed, 8.69 unweighted) — by the paper's sizes, not by the items of this run,
    so `--limit` (which samples domains evenly) and judge failures do not change the weighting. General and
    Multilingual have equal-sized domains, where both rules agree. A domain the paper does not list weighs
    like an average listed one.
    """
    sizes = PAPER_DOMAIN_SIZES.get(dataset) or {}
    if dataset in EQUAL_DOMAIN_WEIGHTS or not sizes:
        return 1.0
    return float(sizes.get(domain, sum(sizes.values()) / len(sizes)))


def domain_stratum(dataset: str, domain: str) -> float:
    """A number naming the domain within its dataset (stratum ids for the per-sample score columns)."""
    known = DOMAINS.get(dataset, ())
    if domain in known:
        return float(known.index(domain))
    return float(1000 + int.from_bytes(hashlib.sha256(domain.encode()).digest()[:4], "little"))


#: ambiguity types judged with the 10-or-0 correctness template (the reading is fixed by how it was spoken)
CORRECTNESS_JUDGED = ("pause", "intonation")

# language code -> (domain name in ADU-Multilingual, eSpeak NG voice)
LANGUAGES: dict[str, tuple[str, str]] = {
    "ar": ("arabic", "ar"),
    "de": ("german", "de"),
    "en": ("english", "en-us"),
    "es": ("spanish", "es"),
    "fr": ("french", "fr"),
    "ja": ("japanese", "ja"),
    "ko": ("korean", "ko"),
    "ru": ("russian", "ru"),
    "zh": ("chinese", "cmn"),
}

# names seen in the upstream files (file stems, `category` values) -> our domain names
_ALIASES: dict[str, str] = {
    "helpful": "helpful_question",
    "helpful_questions": "helpful_question",
    "daily_questions": "daily_question",
    "daily_statements": "daily_statement",
    "math": "mathematics",
    "maths": "mathematics",
    "cs": "computer_science",
    "computer": "computer_science",
    "coding": "code",
    "common": "common_sense",
    "commonsense": "common_sense",
    "medical": "medicine",
    "role_play": "roleplay",
    "homophones": "homophone",
    "homophone_based": "homophone",
    "intonation_based": "intonation",
    "pause_based": "pause",
    "repetition_based": "repetition",
    "repetitions": "repetition",
    "pauses": "pause",
    "intonations": "intonation",
}


def slug(text: str) -> str:
    """'Computer Science' / 'computer-science' -> 'computer_science'."""
    return re.sub(r"[^a-z0-9]+", "_", str(text).strip().lower()).strip("_")


def canonical_domain(dataset: str, name: str) -> str | None:
    """Our name for a domain of `dataset` written as `name` (a file stem, category or language), or None."""
    key = slug(name)
    key = _ALIASES.get(key, key)
    if dataset == "multilingual":
        if key in LANGUAGES:
            return LANGUAGES[key][0]
    return key if key in DOMAINS[dataset] else None


def language_of_domain(domain: str) -> str | None:
    for code, (name, _voice) in LANGUAGES.items():
        if name == domain:
            return code
    return None


def domain_label(domain: str) -> str:
    """'computer_science' -> 'Computer Science' (for tables and plots)."""
    return domain.replace("_", " ").title()
