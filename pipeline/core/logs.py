"""The one logging set-up of the pipeline's command-line entry points."""

from __future__ import annotations

import logging
import sys

FORMAT = "%(asctime)s %(levelname)s %(message)s"


def setup(verbose: bool = False) -> None:
    """Root logger to stderr, one format, INFO (DEBUG when `verbose`).

    Like `logging.basicConfig`, it does nothing when the root logger already has handlers (a
    test harness, or a caller that configured logging itself)."""
    logging.basicConfig(level=logging.DEBUG if verbose else logging.INFO, format=FORMAT, stream=sys.stderr)
