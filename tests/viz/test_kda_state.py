"""The KDA state animation's layout (k3lite/viz/kda_state.py): its controls readable on a phone."""
import numpy as np

from k3lite.viz.kda_state import state_animation

# heights in px at 390 px wide, read off the page's screenshot (tools/screenshots --width 390 --pages kda)
AXIS_TITLES = 50  # the x axes' tick labels and "value dim"
BUTTONS = 32  # play / pause
SLIDER = 55  # the token slider, its ticks and their labels
TITLE = 18  # the one-line title under the controls
LEGEND = 40  # two legend rows in the bottom margin


def test_animation_controls_each_have_their_own_band_at_390px():
    """At 390 px the pause button sat on the slider's start (its thumb and ticks 0-12) and the "value dim" axis title
    overlapped "▸ play": buttons and slider shared one row 57 px under the plot. Each now has its own band, below
    the axis titles, and everything fits the bottom margin above the legend."""
    T, K = 12, 8
    rng = np.random.default_rng(0)
    fig = state_animation(rng.normal(size=(T, K, K)), rng.normal(size=(T, K)), rng.normal(size=(T, K)),
                          rng.uniform(size=T), [f"x{t}" for t in range(T)], "layer 1, head 0")
    lay = fig.layout
    plot_h = lay.height - lay.margin.t - lay.margin.b

    def below(y):  # paper y (negative: under the plot) -> px under the plot
        return -y * plot_h

    buttons, slider, title = below(lay.updatemenus[0].y), below(lay.sliders[0].y), below(lay.annotations[-1].y)  # the last: subplot titles come first
    assert buttons >= AXIS_TITLES, "play / pause sit on the axis titles"
    assert slider >= buttons + BUTTONS, "the slider shares the buttons' row"
    assert title >= slider + SLIDER, "the title sits on the slider's ticks"
    assert title + TITLE + LEGEND <= lay.margin.b, "the legend runs into the title"
    assert lay.sliders[0].x == 0 and lay.sliders[0].len == 1, "the slider uses the whole width, on its own row"
