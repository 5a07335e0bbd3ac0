"""Additive noise at a requested SNR: white, pink and brown noise, babble (several eSpeak NG talkers at
once) and environmental noise (the procedural animal calls and rain of audio/distractors.py).

Noise is mixed here rather than by audiomentations: AddColorNoise and AddGaussianSNR draw a fresh noise
signal from numpy's legacy global generator for every clip (slower than the whole synthesis of some
episodes, and global state), and AddBackgroundNoise only reads files. White, pink and brown noise are
instead cut, at an offset drawn from the clip's generator, from a minute-long noise recording synthesized
once per colour and sampling rate from a fixed seed, the way noise corpora are used. Babble and
environmental noise are synthesized per clip from the clip's generator.

SNR is the energy ratio of the clip to the added noise over the whole clip. A clip with no energy gets no
noise. `measured_snr_db` is what the harness checks on every noisy clip once it is on the 16-bit grid.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from audioeval.audio import distractors
from audioeval.audio.dsp import EPS
from audioeval.audio.speech import FEMALE_VARIANTS, MALE_VARIANTS, synthesize
from audioeval.seeds import stable_seed

# Our own sentences, spoken by the babble talkers (content does not matter, only that it is speech).
BABBLE_SENTENCES = (
    "The small boat drifted slowly past the old stone bridge before noon.",
    "Please bring the green folder and two pencils to the meeting room.",
    "A cold wind came down from the hills and rattled every window.",
    "They planted tomatoes along the fence behind the yellow house.",
    "We will need more chairs if everyone from the office turns up.",
    "The bakery on the corner sells warm bread early every morning.",
)
BABBLE_TALKERS = 6
BABBLE_VOICES = MALE_VARIANTS + FEMALE_VARIANTS
# power spectral density proportional to 1 / f^exponent; below the floor frequency the spectrum is flat
COLOR_EXPONENTS = {"white": 0.0, "pink": 1.0, "brown": 2.0}
COLOR_FLOOR_HZ = 20.0
NOISE_BANK_SECONDS = 60
NOISE_BANK_VERSION = "v1"


def rms(x: np.ndarray) -> float:
    x = np.asarray(x, dtype=np.float32)
    return float(np.sqrt(np.dot(x, x) / len(x))) if len(x) else 0.0


def measured_snr_db(clean: np.ndarray, noisy: np.ndarray) -> float | None:
    """10 log10(clean energy / energy of noisy - clean); None for a clip with no energy."""
    clean = np.asarray(clean, dtype=np.float32)
    residual = np.asarray(noisy, dtype=np.float32) - clean
    signal, noise = float(np.dot(clean, clean)), float(np.dot(residual, residual))
    if signal == 0.0:
        return None
    if noise == 0.0:
        return float("inf")
    return float(10 * np.log10(signal / noise))


def mix_at_snr(clean: np.ndarray, noise: np.ndarray, snr_db: float) -> np.ndarray:
    """clean + noise scaled so that the clip-to-noise energy ratio is `snr_db`."""
    noise_rms = rms(noise)
    gain = rms(clean) / (noise_rms * 10 ** (snr_db / 20)) if noise_rms > 0 else 0.0
    return np.asarray(clean, dtype=np.float32) + np.float32(gain) * np.asarray(noise, dtype=np.float32)


@lru_cache(maxsize=16)
def noise_bank(color: str, sampling_rate: int) -> np.ndarray:
    """NOISE_BANK_SECONDS of Gaussian noise whose power falls as 1/f^exponent, unit RMS. Shaped in the
    frequency domain, so the recording loops without a seam."""
    import scipy.fft

    n = NOISE_BANK_SECONDS * sampling_rate
    rng = np.random.default_rng(stable_seed("noise-bank", NOISE_BANK_VERSION, color, sampling_rate))
    noise = rng.standard_normal(n)
    exponent = COLOR_EXPONENTS[color]
    if exponent:
        spectrum = scipy.fft.rfft(noise)
        spectrum *= np.maximum(scipy.fft.rfftfreq(n, 1.0 / sampling_rate), COLOR_FLOOR_HZ) ** (-exponent / 2)
        spectrum[0] = 0.0
        noise = scipy.fft.irfft(spectrum, n)
    bank = (noise / np.sqrt(np.mean(noise**2))).astype(np.float32)
    bank.setflags(write=False)
    return bank


def colored(color: str, n: int, sampling_rate: int, rng: np.random.Generator) -> tuple[np.ndarray, dict]:
    """n samples of the colour's noise recording from an offset drawn by `rng` (looping past its end)."""
    bank = noise_bank(color, sampling_rate)
    offset = int(rng.integers(len(bank)))
    if offset + n <= len(bank):
        return bank[offset : offset + n], {"color": color, "offset": offset}
    return np.take(bank, np.arange(offset, offset + n) % len(bank)), {"color": color, "offset": offset}


@lru_cache(maxsize=256)
def _utterance(sentence: int, voice: str, sampling_rate: int) -> np.ndarray:
    return synthesize(BABBLE_SENTENCES[sentence], variant=voice, sampling_rate=sampling_rate)


def babble(n: int, sampling_rate: int, rng: np.random.Generator) -> tuple[np.ndarray, dict]:
    """BABBLE_TALKERS talkers, each a looped sentence from a random point, at equal loudness."""
    out = np.zeros(n, dtype=np.float32)
    talkers = []
    for _ in range(BABBLE_TALKERS):
        sentence = int(rng.integers(len(BABBLE_SENTENCES)))
        voice = BABBLE_VOICES[int(rng.integers(len(BABBLE_VOICES)))]
        speech = _utterance(sentence, voice, sampling_rate)
        offset = int(rng.integers(len(speech)))
        looped = np.take(speech, np.arange(offset, offset + n) % len(speech))
        out += looped / np.float32(rms(looped) + EPS)
        talkers.append({"sentence": sentence, "voice": voice, "offset": offset})
    return out, {"talkers": talkers}


def environment(n: int, sampling_rate: int, rng: np.random.Generator) -> tuple[np.ndarray, dict]:
    """A procedural background (animal calls or rain); redrawn when a sparse bed happens to be silent."""
    for _ in range(8):
        category = distractors.CATEGORIES[int(rng.integers(len(distractors.CATEGORIES)))]
        bed = distractors.bed(category, n / sampling_rate, sampling_rate, rng)[:n]
        if rms(bed) > 0:
            return bed, {"category": category}
    return np.zeros(n, dtype=np.float32), {"category": None}
