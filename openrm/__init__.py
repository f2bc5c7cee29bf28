"""openrm: a tool-augmented generative reward model (a judge that searches before it decides).

Core modules are import-light: `protocol`, `parsing` and `reward` use the standard library only.
"""

__version__ = "0.1.0"
