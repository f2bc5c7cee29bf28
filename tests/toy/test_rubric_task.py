"""The rubric proof's entity-naming shares: counted over valid rubrics only, the query's own entity apart from
any other entity of the task."""

import json

from toy.rubric_task import entity_naming


def item(title: str, description: str = "Says so.", weight: float = 1) -> dict:
    return {"title": title, "description": description, "weight": weight}


def test_entity_naming_counts_valid_rubrics_only_and_tells_own_from_other():
    entities = frozenset({"Velaen", "Kalon", "Galria"})
    rubrics = [
        ("Velaen", json.dumps([item("Covers Velaen"), item("Clarity")])),                 # own
        ("Velaen", json.dumps([item("Covers Kalon", "Not about Velaen.")])),              # own and other
        ("Kalon", json.dumps([item("Covers Galria")])),                                   # other only
        ("Kalon", json.dumps([item("Clarity")])),                                         # none
        ("Kalon", '[{"title": "Covers Kalon", "description": "x", "weight": 0}]'),        # invalid: weight 0
        ("Galria", "not json at all, Galria"),                                            # invalid
    ]
    got = entity_naming(rubrics, entities)
    assert got == {"valid_rubrics": 4, "names_own_entity": 0.5, "names_other_entity": 0.5}
    assert entity_naming([("Kalon", "broken")], entities) == {"valid_rubrics": 0, "names_own_entity": None,
                                                              "names_other_entity": None}
