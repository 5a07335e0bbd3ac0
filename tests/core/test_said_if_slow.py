"""A slow stretch of a run says what it is; a quick one prints nothing (so a one-line error stays one line)."""

import logging
import threading
import time

from audioeval.run.progress import said_if_slow


def test_a_slow_block_is_announced_once(caplog):
    with caplog.at_level(logging.INFO, logger="audioeval"), said_if_slow("synthesizing", after_s=0.01):
        time.sleep(0.5)
    assert [r.getMessage() for r in caplog.records] == ["synthesizing"]


def test_a_quick_block_says_nothing_and_leaves_no_thread(caplog):
    before = set(threading.enumerate())
    with caplog.at_level(logging.INFO, logger="audioeval"), said_if_slow("synthesizing", after_s=60):
        pass
    assert caplog.records == []
    assert set(threading.enumerate()) == before
