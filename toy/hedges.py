"""Wordings of hedged negatives for `toy.world.ToyWorld.hedged`."""

# Hedged negatives: the right value and the wrong one in one answer, so that a judge which only checks that
# the evidence's value appears somewhere ties against a candidate naming every value. The right sentence comes first
# in some wordings and last in others. `eval.hostile`'s hedge is worded differently, so an audit measures a judge on
# a hedge it never trained on.
HEDGES = ("{right}, or possibly {wrong_value}", "{wrong}, or perhaps {true_value}",
          "{right} (some accounts give {wrong_value})", "{wrong}; others say {true_value}",
          "Either {true_value} or {wrong_value}: {right}", "It is {wrong_value} or {true_value}. {right}")
# `HEDGES` and twelve more: bare values in either order, and the whole wrong answer set beside the whole right one
# behind a connective (the shape of `eval.hostile`'s hedge, whose connective none of these uses).
HEDGES_WIDE = HEDGES + (
    "{right}, though it may be {wrong_value}", "{right} Or {wrong_value}.", "{wrong_value} or {true_value}",
    "{true_value} or {wrong_value}", "{right} Possibly {wrong_value} instead.", "{right} Others report: {wrong}",
    "{right} Alternatively, {wrong}", "{right} Then again, {wrong}", "{wrong} Another account: {right}",
    "{wrong} Or else: {right}", "{right} Accounts differ; one says: {wrong}", "{wrong} Yet a second reading: {right}")
HEDGE_WORDINGS = {"six": HEDGES, "wide": HEDGES_WIDE}
