"""SPADE: self-play in adaptive synthetic executable environments.

The public API is re-exported from the subpackages: ``spade.envs`` (the environment
contract), ``spade.sandbox`` (isolated execution), ``spade.validate`` (the verdict), and the
self-play pieces. Importing ``spade`` never imports torch, transformers or vllm.
"""

from __future__ import annotations

__version__ = "0.1.0"
