"""The offline built-in corpus: evaluation items and a demonstration pool synthesized with eSpeak NG, in the
same schema as a local Speech-IFEval / ALICE copy, so every stage runs without the real data.

What is synthetic, and how:
- ASR: sentences written for audioeval, spoken by eSpeak NG; the label is the sentence.
- GR: eSpeak's male (m1-m7) and female (f1-f5) voice variants; the label is the variant's gender.
- SER: four classes rendered through prosody only — base pitch, pitch range, speaking rate, loudness and
  word gaps (EMOTION_PROSODY). This is a synthetic stand-in that makes the classes acoustically separable;
  it is not a claim that these settings sound like real human emotion.
- MMAU-style multiple choice about synthesized speech, in four sub-categories: how many words are spoken,
  which of four words is spoken first, how many different voices speak (utterances by one to three voices
  joined with pauses), and a fact stated in a two-voice exchange.

The demonstration pool is disjoint from the evaluation items (other sentences, other voice variants, other
dialogues), label-balanced (each list of eight ASR/SER/GR demonstrations covers every emotion twice and each
gender four times, as ALICE's CREMA-D selection does), and uses the rephrased banks of banks.py.
"""

from __future__ import annotations

import re
import zlib
from dataclasses import dataclass
from functools import cache
from typing import Any

import numpy as np

from audioeval.benchmarks.alice import banks as B
from audioeval.benchmarks.alice import constraints as C
from audioeval.benchmarks.alice import cot
from audioeval.benchmarks.alice.items import AudioRef, PoolEntry, PoolKey, TestItem

EVAL_VOICES = {"male": ("m1", "m2", "m3", "m4"), "female": ("f1", "f2", "f3")}
DEMO_VOICES = {"male": ("m5", "m6", "m7"), "female": ("f4", "f5")}
GENDERS = ("male", "female")

# eSpeak NG settings per synthetic emotion: pitch and pitch range 0-100, rate in words per minute, volume
# 0-200, word gap in units of 10 ms. Each clip jitters them slightly so no two clips are identical.
EMOTION_PROSODY = {
    "neutral": {"pitch": 50, "pitch_range": 45, "rate": 165, "volume": 100, "wordgap": 0},
    "happy": {"pitch": 72, "pitch_range": 95, "rate": 190, "volume": 125, "wordgap": 0},
    "sad": {"pitch": 30, "pitch_range": 10, "rate": 115, "volume": 65, "wordgap": 3},
    "angry": {"pitch": 58, "pitch_range": 80, "rate": 205, "volume": 180, "wordgap": 0},
}
_JITTER = {"pitch": 4, "pitch_range": 5, "rate": 8, "volume": 8}

TASK_CODE = {"asr": 1, "ser": 2, "gr": 3, "mmau": 4}
CATEGORY_CODE = {"ceq": 1, "cot": 2}
SUB_CATEGORIES = tuple(B.MMAU_SUBCATEGORIES)
_OPTION_STOPWORDS = {"the", "a", "an"}


@dataclass(frozen=True)
class Utterance:
    text: str
    variant: str
    pitch: int
    pitch_range: int
    rate: int
    volume: int
    wordgap: int

    def describe(self) -> str:
        return (
            f"en+{self.variant} pitch={self.pitch} range={self.pitch_range} rate={self.rate} "
            f"volume={self.volume} wordgap={self.wordgap}: {self.text!r}"
        )


@dataclass(frozen=True)
class Recipe:
    utterances: tuple[Utterance, ...]
    pause_s: float = 0.35

    def describe(self) -> str:
        return "espeak-ng | " + " | ".join(u.describe() for u in self.utterances)

    def render(self, sampling_rate: int) -> np.ndarray:
        from audioeval.audio.speech import synthesize

        silence = np.zeros(int(round(self.pause_s * sampling_rate)), dtype=np.float32)
        parts: list[np.ndarray] = []
        for i, u in enumerate(self.utterances):
            if i:
                parts.append(silence)
            parts.append(
                synthesize(
                    u.text,
                    variant=u.variant,
                    rate=u.rate,
                    pitch=u.pitch,
                    pitch_range=u.pitch_range,
                    volume=u.volume,
                    wordgap=u.wordgap,
                    sampling_rate=sampling_rate,
                )
            )
        return np.concatenate(parts).astype(np.float32)

    def ref(self) -> AudioRef:
        return AudioRef(self.describe(), self.render)


def speak(text: str, variant: str, emotion: str, rng: np.random.Generator) -> Utterance:
    settings = dict(EMOTION_PROSODY[emotion])
    for name, spread in _JITTER.items():
        settings[name] = int(settings[name] + rng.integers(-spread, spread + 1))
    return Utterance(text=text, variant=variant, **settings)


def words_of(sentence: str) -> list[str]:
    return [w.strip(".,?!") for w in sentence.split()]


def transcript_label(sentence: str) -> str:
    """A LibriSpeech-style reference: upper case, no punctuation."""
    return " ".join(re.sub(r"[^A-Za-z' ]", " ", sentence).upper().split())


def _lower_first(text: str) -> str:
    return text[:1].lower() + text[1:]


@dataclass
class _Content:
    recipe: Recipe
    facts: dict[str, Any]
    plain: str  # the answer
    choices: list[str]
    question: str  # the task question (for MMAU: with its options)
    sub_category: str | None = None


class BuiltinCorpus:
    """Evaluation items per (task, category) and the demonstration pool, all pure functions of the counts
    and `corpus_seed`."""

    def __init__(self, n_per_constraint: int = 4, n_cot: int = 24, pool_size: int = 8, corpus_seed: int = 0):
        self.n_per_constraint = int(n_per_constraint)
        self.n_cot = int(n_cot)
        self.pool_size = int(pool_size)
        self.seed = int(corpus_seed)
        self._pool: dict[PoolKey, list[PoolEntry]] | None = None

    # --- evaluation items -----------------------------------------------------------------------------------
    def items(self, task: str, category: str) -> list[TestItem]:
        if category == "ceq":
            # round-robin over constraints, so that the first N items (--limit N) cover every constraint
            specs = [(iid, r) for r in range(self.n_per_constraint) for iid in C.CEQ_IDS]
        else:
            specs = [(C.CHAIN_OF_THOUGHT, t) for t in range(self.n_cot)]
        base = [self.seed, 11, TASK_CODE[task], CATEGORY_CODE[category]]
        order = np.random.default_rng(base).permutation(len(B.EVAL_SENTENCES))
        out = []
        for t, (iid, rank) in enumerate(specs):
            rng = np.random.default_rng(base + [t])
            content = self._eval_content(task, category, t, rng, order)
            kwargs: dict[str, Any] = {}
            if category == "cot":
                constraint = B.TEST_COT[t % len(B.TEST_COT)]
            else:
                phrasing = B.TEST_CONSTRAINT[iid][t % len(B.TEST_CONSTRAINT[iid])]
                if iid == C.REPEAT_PROMPT:
                    kwargs = {"prompt_to_repeat": str(rng.choice(B.TEST_REPEAT_PHRASES))}
                elif iid == C.END_CHECKER:
                    kwargs = {"end_phrase": str(rng.choice(B.TEST_END_PHRASES))}
                constraint = phrasing.format(phrase=C.phrase_of(iid, kwargs) or "")
                if iid == C.JSON_FORMAT and rank % 4 == 3:
                    constraint += " " + B.JSON_EXAMPLE_TAIL
            sub = content.sub_category
            out.append(
                TestItem(
                    uid=f"builtin-{task}-{category}-{t:04d}",
                    task=task,
                    category=category,
                    instruction_id=iid,
                    kwargs=kwargs,
                    task_text=content.question,
                    constraint_text=constraint,
                    label=content.plain,
                    choices=content.choices,
                    audio=content.recipe.ref(),
                    rank=rank,
                    mmau_category=B.MMAU_SUBCATEGORIES[sub] if sub else None,
                    sub_category=sub,
                    source={"corpus": "builtin", "audio": content.recipe.describe(), "facts": content.facts},
                )
            )
        return out

    def _eval_content(
        self, task: str, category: str, t: int, rng: np.random.Generator, order: np.ndarray
    ) -> _Content:
        sentence = B.EVAL_SENTENCES[int(order[t % len(order)])]
        if task == "mmau":
            return self._mmau_content(
                SUB_CATEGORIES[t % len(SUB_CATEGORIES)], t // len(SUB_CATEGORIES), rng, "eval"
            )
        if task == "ser":
            emotion, gender = B.EMOTIONS[t % 4], GENDERS[int(rng.integers(2))]
        elif task == "gr":
            emotion, gender = B.EMOTIONS[int(rng.integers(4))], GENDERS[t % 2]
        else:
            emotion, gender = B.EMOTIONS[int(rng.integers(4))], GENDERS[int(rng.integers(2))]
        variant = str(rng.choice(EVAL_VOICES[gender]))
        recipe = Recipe((speak(sentence, variant, emotion, rng),))
        facts = {"sentence": sentence, "gender": gender, "emotion": emotion, "variant": variant}
        if task == "asr":
            label = transcript_label(sentence) if category == "ceq" else sentence
            others = [s for s in B.EVAL_SENTENCES if s != sentence]
            picks = [others[int(i)] for i in rng.choice(len(others), size=3, replace=False)]
            choices = [transcript_label(s) if category == "ceq" else s for s in picks] + [label]
            rng.shuffle(choices)
            question = B.TEST_TASK["asr"][t % len(B.TEST_TASK["asr"])]
            return _Content(recipe, facts, label, choices, question)
        if task == "ser":
            question = B.TEST_TASK["ser"][t % len(B.TEST_TASK["ser"])]
            return _Content(recipe, facts, emotion, list(B.EMOTIONS), question)
        wording = "male" if category == "cot" else ("man", "male")[(t // 2) % 2]
        answers = ("Man", "Woman") if wording == "man" else ("Male", "Female")
        bank = B.TEST_TASK[f"gr:{wording}"]
        question = bank[(t // 4) % len(bank)]
        return _Content(recipe, facts, answers[GENDERS.index(gender)], list(answers), question)

    def _mmau_content(self, sub: str, n: int, rng: np.random.Generator, side: str) -> _Content:
        """One MMAU-style clip and question; `side` is "eval" or "demo" (different material and voices)."""
        voices = EVAL_VOICES if side == "eval" else DEMO_VOICES
        all_voices = voices["male"] + voices["female"]
        if sub == "Word Counting":
            lines: tuple[str, ...] = B.COUNT_EVAL if side == "eval" else B.COUNT_DEMO
            sentence = lines[int(rng.integers(len(lines)))] if side == "eval" else lines[n % len(lines)]
            count = len(words_of(sentence))
            start = max(1, count - int(rng.integers(0, 4)))
            options = list(B.NUMBER_WORDS[start : start + 4])
            plain = B.NUMBER_WORDS[count]
            variant = str(rng.choice(all_voices))
            recipe = Recipe((speak(sentence, variant, "neutral", rng),))
            facts = {"sentence": sentence, "count": count, "variant": variant}
        elif sub == "Word Order":
            pool = B.EVAL_SENTENCES if side == "eval" else B.DEMO_SENTENCES
            sentence = pool[int(rng.integers(len(pool)))] if side == "eval" else pool[n % len(pool)]
            lowered = [w.lower() for w in words_of(sentence)]
            candidates = []
            for w in lowered:
                if len(w) >= 2 and w not in _OPTION_STOPWORDS and w not in candidates:
                    candidates.append(w)
            options = [candidates[int(i)] for i in sorted(rng.choice(len(candidates), size=4, replace=False))]
            plain = min(options, key=lowered.index)
            rng.shuffle(options)
            variant = str(rng.choice(all_voices))
            recipe = Recipe((speak(sentence, variant, "neutral", rng),))
            facts = {"sentence": sentence, "options": list(options), "variant": variant}
        elif sub == "Speaker Counting":
            lines = B.SPEAKER_LINES_EVAL if side == "eval" else B.SPEAKER_LINES_DEMO
            speakers = 1 + n % 3
            chosen = [str(v) for v in rng.choice(all_voices, size=speakers, replace=False)]
            turns = list(chosen) + [chosen[int(rng.integers(speakers))] for _ in range(3 - speakers)]
            picked = [lines[int(i)] for i in rng.choice(len(lines), size=3, replace=False)]
            recipe = Recipe(
                tuple(speak(text, v, "neutral", rng) for text, v in zip(picked, turns, strict=True))
            )
            options = list(B.NUMBER_WORDS[1:5])
            plain = B.NUMBER_WORDS[speakers]
            facts = {"lines": picked, "voices": turns, "speakers": speakers}
        else:
            dialogues = B.DIALOGUES_EVAL if side == "eval" else B.DIALOGUES_DEMO
            question, reply, probe, options_t = dialogues[n % len(dialogues)]
            plain = str(rng.choice(options_t))
            options = list(options_t)
            male, female = str(rng.choice(voices["male"])), str(rng.choice(voices["female"]))
            first, second = (male, female) if rng.random() < 0.5 else (female, male)
            reply_text = reply.format(x=plain)
            recipe = Recipe(
                (speak(question, first, "neutral", rng), speak(reply_text, second, "neutral", rng))
            )
            facts = {"question": question, "reply": reply_text, "probe": probe, "voices": [first, second]}
        facts["sub_category"] = sub
        if side == "eval":
            if sub == "Conversational Fact Retrieval":
                stem = facts["probe"]
            else:
                bank = B.MMAU_TEST_QUESTION[sub]
                stem = bank[n % len(bank)]
            question_text = f"{stem} {B.choose_clause(options)}"
        else:
            question_text = ""  # demonstrations get their wording in _pool_list
        facts["options"] = list(options)
        return _Content(recipe, facts, plain, options, question_text, sub)

    # --- demonstration pool ---------------------------------------------------------------------------------
    def pool(self) -> dict[PoolKey, list[PoolEntry]]:
        if self._pool is None:
            self._pool = self._build_pool()
        return self._pool

    def _general_demo_clips(self) -> list[_Content]:
        clips = []
        for j in range(self.pool_size):
            rng = np.random.default_rng([self.seed, 21, j])
            emotion, gender = B.EMOTIONS[j % 4], GENDERS[(j // 4) % 2]
            sentence = B.DEMO_SENTENCES[j % len(B.DEMO_SENTENCES)]
            variant = DEMO_VOICES[gender][j % len(DEMO_VOICES[gender])]
            recipe = Recipe((speak(sentence, variant, emotion, rng),))
            facts = {"sentence": sentence, "gender": gender, "emotion": emotion, "variant": variant}
            clips.append(_Content(recipe, facts, "", [], ""))
        return clips

    def _build_pool(self) -> dict[PoolKey, list[PoolEntry]]:
        pool: dict[PoolKey, list[PoolEntry]] = {}
        general = self._general_demo_clips()
        list_index = 0
        for task in ("asr", "ser", "gr"):
            for iid in (*C.CEQ_IDS, C.CHAIN_OF_THOUGHT):
                category = "cot" if iid == C.CHAIN_OF_THOUGHT else "ceq"
                key: PoolKey = (task, category, iid, None, None)
                pool[key] = self._pool_list(key, general, list_index)
                list_index += 1
        for s, sub in enumerate(SUB_CATEGORIES):
            clips = [
                self._mmau_content(sub, j, np.random.default_rng([self.seed, 22, s, j]), "demo")
                for j in range(self.pool_size)
            ]
            for iid in (*C.CEQ_IDS, C.CHAIN_OF_THOUGHT):
                category = "cot" if iid == C.CHAIN_OF_THOUGHT else "ceq"
                key = ("mmau", category, iid, B.MMAU_SUBCATEGORIES[sub], sub)
                pool[key] = self._pool_list(key, clips, list_index)
                list_index += 1
        return pool

    def _pool_list(self, key: PoolKey, clips: list[_Content], list_index: int) -> list[PoolEntry]:
        task, category, iid, _, sub = key
        words = _Wordings(self.seed, list_index)
        entries = []
        for j, clip in enumerate(clips):
            facts = clip.facts
            if task == "asr":
                plain = facts["sentence"].rstrip(".?!")
                question = words.pick(B.DEMO_TASK["asr"], j)
            elif task == "ser":
                plain = facts["emotion"]
                question = words.pick(B.DEMO_TASK["ser"], j)
            elif task == "gr":
                wording = "male" if category == "cot" else ("man", "male")[j % 2]
                answers = ("Man", "Woman") if wording == "man" else ("Male", "Female")
                plain = answers[GENDERS.index(facts["gender"])]
                question = words.pick(B.DEMO_TASK[f"gr:{wording}"], j)
            else:
                plain = clip.plain
                if sub == "Conversational Fact Retrieval":
                    prefix = words.pick(B.MMAU_DEMO_PROBE_PREFIX, j)
                    probe = facts["probe"]
                    stem = prefix + (_lower_first(probe) if prefix.endswith((", ", ": ")) else probe)
                else:
                    assert sub is not None  # MMAU pool lists are keyed by sub-category
                    stem = words.pick(B.MMAU_DEMO_QUESTION[sub], j)
                question = f"{stem} {B.demo_choose_clause(clip.choices, j + list_index)}"
            kwargs: dict[str, Any] = {}
            if iid == C.CHAIN_OF_THOUGHT:
                constraint = words.pick(B.DEMO_COT, j)
                answer = cot.trace(task, facts, plain, j + list_index)
            else:
                if iid == C.REPEAT_PROMPT:
                    kwargs = {
                        "prompt_to_repeat": B.DEMO_REPEAT_PHRASES[
                            (j + list_index) % len(B.DEMO_REPEAT_PHRASES)
                        ]
                    }
                elif iid == C.END_CHECKER:
                    kwargs = {"end_phrase": B.DEMO_END_PHRASES[(j + list_index) % len(B.DEMO_END_PHRASES)]}
                constraint = words.pick(B.DEMO_CONSTRAINT[iid], j).format(
                    phrase=C.phrase_of(iid, kwargs) or ""
                )
                answer = C.format_answer(plain, iid, kwargs, task)
            sub_part = f"/{sub}" if sub else ""
            entries.append(
                PoolEntry(
                    pool_id=f"builtin/{task}/{category}/{iid}{sub_part}/{j}",
                    key=key,
                    task_text=question,
                    constraint_text=constraint,
                    answer=answer,
                    answer_plain=plain,
                    audio=clip.recipe.ref(),
                    source={"corpus": "builtin", "audio": clip.recipe.describe(), "facts": facts},
                )
            )
        return entries


class _Wordings:
    """Per-list shuffles of the wording banks, so that each demonstration list pairs task and constraint
    wordings differently (as upstream's shuffled pairing of prefix and postfix banks does)."""

    def __init__(self, seed: int, list_index: int) -> None:
        self.parts = [seed, 23, list_index]

    def pick(self, bank: tuple[str, ...], j: int) -> str:
        salt = zlib.crc32("\x1f".join(bank).encode())
        order = np.random.default_rng([*self.parts, salt]).permutation(len(bank))
        return bank[int(order[j % len(bank)])]


@cache
def builtin_corpus(n_per_constraint: int, n_cot: int, pool_size: int, corpus_seed: int) -> BuiltinCorpus:
    return BuiltinCorpus(n_per_constraint, n_cot, pool_size, corpus_seed)
