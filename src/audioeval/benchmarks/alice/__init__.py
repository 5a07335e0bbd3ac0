"""ALICE (Audio-Language In-Context learning Evaluation) on top of Speech-IFEval: the pieces the builder,
parsers, metrics and report share.

    constraints  constraint ids, their kwargs, and how a plain answer is formatted for each
    checkers     rule-based format compliance (Speech-IFEval's modified IFEval checkers), strict and loose
    extract      undoing a format to get the answer; answer matching for SER/GR/MMAU
    wer          the two WER normalizers and per-utterance edit counts
    judging      reading the LLM judge panel's verdicts for the three ALICE judge roles
    items        the test-item / demonstration schema both data sources produce
    banks        instruction, constraint and phrase banks written for the built-in corpus
    corpus       the offline built-in corpus (eSpeak NG speech), same schema as the real data
    cot          reasoning-trace templates for the built-in chain-of-thought demonstrations
    layout       reading and validating a local copy of the Speech-IFEval / ALICE data
    demos        demonstration sampling (nested across k) and the alignment rewrite
"""

TASKS = ("asr", "ser", "gr", "mmau")
CATEGORIES = ("ceq", "cot")
