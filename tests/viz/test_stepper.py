"""k3lite/viz/stepper.py: the forward pass's stages as frames of the map, stepped in the browser."""
import pytest

from k3lite.model.presets import get_preset
from k3lite.viz.archmap import architecture_map
from k3lite.viz.model import stages
from k3lite.viz.stepper import at_stage, stage_points, stage_rows, stepper_map

LITE = get_preset("lite")
STAGES = stages(list(zip(LITE.layer_types(), LITE.ffn_types())))


def test_one_frame_per_stage_with_the_band_on_its_row():
    fig = stepper_map(architecture_map(LITE), LITE, STAGES, start=3)
    assert len(fig.frames) == len(STAGES) == len(fig.layout.sliders[0].steps)
    rows, points = stage_rows(LITE, STAGES), stage_points(LITE, STAGES)
    n_fixed = len(architecture_map(LITE).layout.shapes)
    for i, frame in enumerate(fig.frames):
        bands = frame.layout.shapes[: len(frame.layout.shapes) - n_fixed]
        assert sorted(round(b.y0 + 0.45) for b in bands) == rows[i]
        assert list(frame.data[0].x) == points[i][0] and list(frame.data[0].y) == points[i][1]
        assert fig.layout.sliders[0].steps[i].label.startswith(f"stage {i + 1}/{len(STAGES)} · {STAGES[i].title}")
    # stages in one row are told apart by the ring, not the band
    same_row = [i for i in range(len(STAGES)) if rows[i] == rows[3]]
    assert len(same_row) > 1 and len({tuple(points[i][0]) for i in same_row}) == len(same_row)
    assert fig.layout.sliders[0].active == 3 and list(fig.data[-1].x) == points[3][0]
    # the figure as first drawn (before the slider moves) marks the start stage's row with the band, as frame 3 does
    assert fig.layout.shapes == fig.frames[3].layout.shapes


def test_stepper_rejects_a_stage_outside_the_list():
    with pytest.raises(ValueError, match="start must be a stage in 0..41"):
        stepper_map(architecture_map(LITE), LITE, STAGES, start=len(STAGES))


def test_at_stage_is_the_flipbook_built_on_that_stage():
    """The page builds the flip-book once per prompt and re-opens it on the chosen stage with `at_stage`: the
    copy must be the very figure `stepper_map` builds for that start (band, ring, slider position, frames)."""
    base = architecture_map(LITE)
    book = stepper_map(base, LITE, STAGES)
    for start in (0, 3, len(STAGES) - 1):
        assert at_stage(book, start).to_plotly_json() == stepper_map(base, LITE, STAGES, start).to_plotly_json()
    assert at_stage(book, 3).to_plotly_json() != book.to_plotly_json()  # it did move
    assert book.layout.sliders[0].active == 0, "the cached flip-book is not changed by a copy"
    before = book.to_plotly_json()
    opened = at_stage(book, 5)
    opened.data[-1].marker.size = 99  # a copy's ring and band are its own (the frames are shared, never changed)
    opened.layout.shapes[0].opacity = 0.9
    assert book.to_plotly_json() == before
    assert at_stage(book, 5).to_plotly_json() == stepper_map(base, LITE, STAGES, 5).to_plotly_json()
    with pytest.raises(ValueError, match="start must be a stage in 0..41"):
        at_stage(book, len(STAGES))


def test_at_stage_without_the_slider_shows_one_stage_named_in_its_title():
    """The forward-pass page picks the stage with its own control: the map it draws has no slider of its own (two
    pickers drifted apart), no frames to step, the stage named in the title and the band and ring of that stage."""
    base = architecture_map(LITE)
    book = stepper_map(base, LITE, STAGES)
    shown, full = at_stage(book, 7, slider=False), at_stage(book, 7)
    assert not shown.layout.sliders and not shown.frames
    assert shown.layout.title.text == full.layout.sliders[0].steps[7].label
    assert shown.layout.shapes == full.layout.shapes and shown.data == full.data
    assert shown.layout.height < full.layout.height and shown.layout.margin.t < full.layout.margin.t
    assert book.layout.sliders[0].active == 0 and len(book.frames) == len(STAGES), "the cached flip-book unchanged"


def test_experts_stage_says_only_copies_to_other_gpus_cross_the_interconnect():
    """It said every copy crosses the interconnect under expert parallelism; a copy to an expert on the token's own
    GPU does not (the interconnect page counts only what leaves it), and DeepEP's normal kernels send one NIC copy
    per remote node and fan it out over NVLink."""
    from k3lite.viz.model import WHAT

    text = WHAT["experts"]
    assert "every copy crosses" not in text
    assert "own GPU" in text and "one copy per remote node" in text
