"""The benchmark families of this repository, one package each (`pipeline/families/<name>/`).

The registry they declare themselves with (`Family`, `Table`, `Inference`, ..., `enabled(config)`) is
`pipeline.registry`, which the runtime, the warehouse, the report, the configuration and the DVC generator
read without importing any family. The names below are that module's, kept here so that code importing
them from `pipeline.families` still works; new code imports `pipeline.registry`.
"""

from pipeline.registry import *  # noqa: F401,F403
from pipeline.registry import _MODULES, _is_family_folder  # noqa: F401
