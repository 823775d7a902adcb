"""Who states what: one wording per outside source the pages quote, so an attribution is fixed in one place.

The app's "seed article" is a third-party blog post about Kimi K3, not Moonshot AI's announcement. It quotes the
expert counts (which K3's released config.json states), credits the ~9-10x planner/worker saving to "reported
experiments" and calls such figures directional. K3's price is Moonshot AI's listed one (the seed quotes the same
$3 / $15 input / output).
"""

SEED = "the seed article (a third-party blog post on K3, not Moonshot AI's announcement)"
SEED_SHORT = "the seed article (a third-party blog post)"
EXPERT_COUNTS = "as K3's released config.json states them; the seed article, a third-party blog post, quotes the same"
SPLIT_CLAIM = ("~9-10x cheaper for the same result, a figure the seed article (a third-party blog post) credits to "
               "\"reported experiments\" and calls directional")
SPLIT_BAND = (9.0, 10.0)  # the ~9-10x above
K3_PRICE_SOURCE = ("as Moonshot AI's platform price list gives them for kimi-k3 (platform.kimi.ai/docs/pricing/chat-k3, "
                   "as quoted in public price tables dated 2026-07-16; the seed article quotes the same input / output "
                   "price)")
K3_PRICE = f"$3.00 input (cache miss), $0.30 (cache hit), $15.00 output per M tokens, {K3_PRICE_SOURCE}"
