"""Reasoning traces for the built-in chain-of-thought demonstrations.

ALICE's demonstration traces were written by a strong LALM and checked by a person; here they are filled
from templates with facts the synthesizer knows (the words, the voice, the prosody settings behind an
emotion), so every statement in a trace is true of its clip. Each trace ends with the answer.
"""

from __future__ import annotations

from typing import Any

# How each synthetic emotion is rendered (see corpus.EMOTION_PROSODY), described in words.
EMOTION_CUES = {
    "neutral": {
        "loudness": "moderate",
        "pace": "steady",
        "pace_adv": "at an even, steady rate",
        "pitch_level": "in a middle range",
        "contour": "moves only a little",
    },
    "happy": {
        "loudness": "fairly loud and bright",
        "pace": "brisk",
        "pace_adv": "quickly and lightly",
        "pitch_level": "high",
        "contour": "rises and falls over a wide range",
    },
    "sad": {
        "loudness": "soft",
        "pace": "slow",
        "pace_adv": "slowly, with longer gaps between words",
        "pitch_level": "low",
        "contour": "stays almost flat",
    },
    "angry": {
        "loudness": "very loud",
        "pace": "fast",
        "pace_adv": "fast and forcefully",
        "pitch_level": "raised",
        "contour": "jumps sharply on stressed words",
    },
}
VOICE_CUES = {
    "male": {"pitch": "low", "timbre": "deep and resonant", "desc": "a lower-pitched male voice"},
    "female": {"pitch": "high", "timbre": "light and bright", "desc": "a higher-pitched female voice"},
}

_ASR = (
    "Step 1: The recording holds one {gender} voice speaking at a {pace} pace, with no background noise.\n"
    "Step 2: I follow the words in order and check each against the sound; there are {n} of them, beginning "
    'with "{first}" and ending with "{last}".\n'
    "Step 3: Putting the words together gives the whole sentence.\n"
    "Transcript: {answer}",
    'Let me work through the clip. The speech is clear and {pace}. It opens with "{first}" and runs for {n} '
    'words until "{last}". Reading the words back in order, the speaker says: {answer}',
    "First, I check how many people speak: only one, {voice}. Next, I split the utterance into words at the "
    "short pauses, which gives {n} words. Finally, I write them out in order.\nThe transcript is: {answer}",
)
_SER = (
    "Step 1: Loudness. The voice is {loudness}.\nStep 2: Speaking rate. The words come {pace_adv}.\n"
    "Step 3: Pitch. It sits {pitch_level} and {contour}.\n"
    "Together these cues fit a {emotion} delivery better than any other option.\nAnswer: {answer}",
    "To judge the emotion I look at three cues. The pace is {pace}, the loudness is {loudness}, and the pitch "
    "{contour}. That combination is what I would expect from someone who sounds {emotion}. So the emotion "
    "is {answer}.",
    "Let me break this down. **Pitch**: {pitch_level}; it {contour}. **Tempo**: {pace}. **Energy**: "
    "{loudness}. Weighing these cues, the speaker sounds {emotion}. The answer is {answer}.",
)
_GR = (
    "Step 1: The speaker's pitch is {pitch}.\nStep 2: The voice sounds {timbre}.\n"
    "Step 3: A {pitch} pitch with this timbre is typical of a {gender} speaker.\nAnswer: {answer}",
    "To tell the gender I listen to the pitch and the timbre of the voice. Here the pitch is {pitch} and the "
    "timbre is {timbre}, which points to a {gender} voice. So the answer is {answer}.",
    "Let me reason about it. **Pitch**: {pitch}. **Timbre**: {timbre}. Both cues agree and indicate a "
    "{gender} speaker. The answer is {answer}.",
)
_MMAU = {
    "Word Counting": (
        "I go through the utterance word by word: {enumerated}. That makes {n} words in total, so the answer is "
        '"{answer}".',
        'Step 1: The speaker says "{sentence}".\nStep 2: Counting the words one at a time gives {n}.\n'
        'Step 3: The option that matches {n} is "{answer}".\nAnswer: {answer}',
    ),
    "Word Order": (
        'The speaker says "{sentence}". Of the options, {positions}. The earliest of these is "{answer}", '
        "so it is spoken first. Answer: {answer}",
        'Step 1: I note where each option occurs in the sentence "{sentence}": {positions}.\n'
        'Step 2: The smallest position belongs to "{answer}".\nAnswer: {answer}',
    ),
    "Speaker Counting": (
        "I listen for changes of voice between the utterances. {voices} Counting the distinct voices gives "
        '{n}, so the answer is "{answer}".',
        "Step 1: The clip has {turns} utterances.\nStep 2: {voices}\nStep 3: That is {n} different "
        "speaker(s).\nAnswer: {answer}",
    ),
    "Conversational Fact Retrieval": (
        'The first speaker asks "{question}" and the second replies "{reply}". The reply gives the detail '
        'the question is about, so the answer is "{answer}".',
        'Step 1: Speaker one asks: "{question}"\nStep 2: Speaker two answers: "{reply}"\n'
        'Step 3: The option that matches the reply is "{answer}".\nAnswer: {answer}',
    ),
}


def _words(sentence: str) -> list[str]:
    return [w.strip(".,?!") for w in sentence.split()]


def trace(task: str, facts: dict[str, Any], answer: str, index: int) -> str:
    """A reasoning trace for one demonstration clip; `index` picks the template."""
    if task == "asr":
        words = _words(facts["sentence"])
        gender = facts["gender"]
        emotion = EMOTION_CUES[facts["emotion"]]
        template = _ASR[index % len(_ASR)]
        return template.format(
            gender=gender,
            voice=VOICE_CUES[gender]["desc"],
            pace=emotion["pace"],
            n=len(words),
            first=words[0],
            last=words[-1],
            answer=answer,
        )
    if task == "ser":
        template = _SER[index % len(_SER)]
        return template.format(emotion=facts["emotion"], answer=answer, **EMOTION_CUES[facts["emotion"]])
    if task == "gr":
        template = _GR[index % len(_GR)]
        cues = VOICE_CUES[facts["gender"]]
        return template.format(
            pitch=cues["pitch"], timbre=cues["timbre"], gender=facts["gender"], answer=answer
        )
    sub = facts["sub_category"]
    template = _MMAU[sub][index % len(_MMAU[sub])]
    if sub == "Word Counting":
        words = _words(facts["sentence"])
        enumerated = ", ".join(f"{w} ({i})" for i, w in enumerate(words, start=1))
        return template.format(enumerated=enumerated, n=len(words), sentence=facts["sentence"], answer=answer)
    if sub == "Word Order":
        lowered = [w.lower() for w in _words(facts["sentence"])]
        positions = "; ".join(f'"{o}" is word {lowered.index(o.lower()) + 1}' for o in facts["options"])
        return template.format(sentence=facts["sentence"], positions=positions, answer=answer)
    if sub == "Speaker Counting":
        labels: dict[str, int] = {}
        parts = []
        for turn, voice in enumerate(facts["voices"], start=1):
            labels.setdefault(voice, len(labels) + 1)
            gender = "male" if voice.startswith("m") else "female"
            parts.append(f"Utterance {turn} is {VOICE_CUES[gender]['desc']} (speaker {labels[voice]}).")
        return template.format(
            voices=" ".join(parts), turns=len(facts["voices"]), n=len(labels), answer=answer
        )
    return template.format(question=facts["question"], reply=facts["reply"], answer=answer)
