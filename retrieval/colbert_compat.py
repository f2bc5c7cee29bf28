"""Runtime patches that let colbert-ai 0.2.22 run under transformers 5 inside an ordinary Python process.

`retrieval.colbert` reaches colbert-ai only through `import_colbert()`, which imports it and applies these patches
once. Nothing here copies colbert code: each patch wraps or undoes one upstream behaviour. Drop a patch when the
pinned colbert-ai release carries the fix named beside it.

1. `post_init` (transformers >= 5). colbert's `HF_ColBERT.__init__` (colbert/modeling/hf_colbert.py) ends with
   `self.init_weights()`. transformers 5 records per-model bookkeeping (`all_tied_weights_keys`, ...) in
   `PreTrainedModel.post_init()`, so every checkpoint load fails in `from_pretrained` with "AttributeError:
   'HF_ColBERT' object has no attribute 'all_tied_weights_keys'". We wrap `class_factory` so the class it makes
   runs `post_init()` where colbert asks for `init_weights()` (post_init then calls the real `init_weights`, as it
   has since transformers 4.16). Upstream: https://github.com/stanford-futuredata/ColBERT/pull/412 (open).
2. Process-wide settings changed by `import colbert`. colbert/infra/launcher.py calls
   `torch.multiprocessing.set_start_method("spawn", force=True)` and colbert/infra/run.py sets
   `TOKENIZERS_PARALLELISM=true`, both at import, for the whole process: the caller's own pools and DataLoaders
   would start differently afterwards, and tokenizers' threads would be re-enabled in processes that fork. We
   restore both right after the import. Safe because we only use colbert's in-process path
   (`avoid_fork_if_possible=True`, one rank), which never starts a process. Upstream has no issue for this;
   colbert's own launcher assumes it owns the process.
3. ninja on PATH (not a colbert patch). colbert JIT-compiles its C++ extensions with torch.utils.cpp_extension,
   which runs `ninja` from PATH. colbert-ai depends on the `ninja` pip package, but its binary sits in the
   virtualenv's bin/, off PATH when the venv is not activated (`.venv/bin/python -m pytest`); `check_toolchain`
   then prepends that folder to PATH.
"""

from __future__ import annotations

import importlib
import multiprocessing
import os
import shutil
import threading

_lock = threading.Lock()
_patched = False

# colbert modules that bound `class_factory` by name at import (`from colbert.modeling.hf_colbert import ...`).
_FACTORY_USERS = ("colbert.modeling.hf_colbert", "colbert.modeling.base_colbert",
                  "colbert.modeling.tokenization.query_tokenization",
                  "colbert.modeling.tokenization.doc_tokenization")


class ToolchainMissing(RuntimeError):
    """colbert-ai compiles C++ extensions with torch.utils.cpp_extension on first use; this machine cannot."""


def check_toolchain() -> None:
    """Raise `ToolchainMissing` unless a C++ compiler and ninja are available for colbert's JIT extensions."""
    from torch.utils.cpp_extension import is_ninja_available

    if not is_ninja_available():
        try:
            import ninja

            os.environ["PATH"] = ninja.BIN_DIR + os.pathsep + os.environ.get("PATH", "")
        except ImportError:
            pass
    compiler = os.environ.get("CXX", "c++")
    missing = [what for what, ok in ((f"a C++ compiler ({compiler})", shutil.which(compiler) is not None),
                                     ("ninja", is_ninja_available())) if not ok]
    if missing:
        raise ToolchainMissing(f"colbert-ai compiles C++ extensions on first use and needs {' and '.join(missing)}; "
                               "install g++ (apt-get install g++) and the `ninja` pip package")


def _with_post_init(factory):
    def class_factory(name_or_path):
        base = factory(name_or_path)

        class HF_ColBERT(base):  # noqa: N801 -- keeps colbert's class name in reprs and load reports
            def init_weights(self):
                if not hasattr(self, "all_tied_weights_keys"):  # set by post_init, which calls us back
                    return self.post_init()
                return super().init_weights()

        return HF_ColBERT

    class_factory.__wrapped__ = factory
    return class_factory


def import_colbert():
    """Import colbert-ai with the patches above applied (once per process); returns the `colbert` package."""
    global _patched
    with _lock:
        if _patched:
            return importlib.import_module("colbert")
        start_method = multiprocessing.get_start_method(allow_none=True)
        tokenizers_parallelism = os.environ.get("TOKENIZERS_PARALLELISM")
        try:
            colbert = importlib.import_module("colbert")
            for name in _FACTORY_USERS:
                importlib.import_module(name)
        finally:
            if multiprocessing.get_start_method(allow_none=True) != start_method:
                multiprocessing.set_start_method(start_method, force=True)
            if tokenizers_parallelism is None:
                os.environ.pop("TOKENIZERS_PARALLELISM", None)
            else:
                os.environ["TOKENIZERS_PARALLELISM"] = tokenizers_parallelism
        original = importlib.import_module("colbert.modeling.hf_colbert").class_factory
        patched = _with_post_init(original)
        for name in _FACTORY_USERS:
            module = importlib.import_module(name)
            if getattr(module, "class_factory", None) is original:
                module.class_factory = patched
        _patched = True
        return colbert
