"""ADU-Bench's taxonomy: its four datasets, the domains of each (the paper's Table 8), the languages the
built-in corpus speaks and the names the upstream ADU-Bench folders use for all of them."""

from __future__ import annotations

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
