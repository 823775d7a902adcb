"""Who states what: one wording per outside source the pages quote, so an attribution is fixed in one place.

The app's "seed article" is a third-party blog post about Kimi K3, not Moonshot AI's announcement. It quotes the
expert counts (which K3's released config.json states), credits the ~9-10x planner/worker saving to "reported
experiments" and calls such figures directional; the $3 / $15 price is as it quotes it.
"""

SEED = "the seed article (a third-party blog post on K3, not Moonshot AI's announcement)"
SEED_SHORT = "the seed article (a third-party blog post)"
EXPERT_COUNTS = "as K3's released config.json states them; the seed article, a third-party blog post, quotes the same"
SPLIT_CLAIM = ("~9-10x cheaper for the same result, a figure the seed article (a third-party blog post) credits to "
               "\"reported experiments\" and calls directional")
SPLIT_BAND = (9.0, 10.0)  # the ~9-10x above
K3_PRICE_SOURCE = ("as quoted in the seed article (a third-party blog post), not checked against Moonshot AI's "
                   "price list")
K3_PRICE = f"$3 / $15 per M input / output tokens {K3_PRICE_SOURCE}"
