"""The offline demo: a procedural toy world with fictional facts, a tiny from-scratch model for fast mechanics tests,
the toy policy and rubric tasks, the toy oracles (match judge, rubric scorer, synthesis), the quickstarts and their
warm-up. It sits above the library: the library never imports it, and it adds its judge, scorer and synthesis kinds
through the entry points in pyproject.toml (plumbing/plugins.py).

    python -m toy.quickstart                        # make quickstart: the SmolLM2 judge on the toy world
    python -m toy.policy_quickstart --out runs/policy
    python -m toy.rubric_quickstart --out runs/rubrics
"""
