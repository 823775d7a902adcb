"""The forward pass's stage figures (k3lite.viz.model): geometry a phone can read."""
import re

import pytest
import torch

from k3lite.model.presets import get_preset
from k3lite.model.stack import K3Model
from k3lite.base.tokenizer import encode
from k3lite.viz.model import stage_figure, stages

PHONE_FIGURE_PX = 390 - 2 * 16  # a 390 px phone, less Streamlit's side padding
AXIS_PX = 60  # the margins and the position ticks and title beside the grid
CHAR_EM = 0.62  # a glyph's width in ems, generous for Source Sans' digits


def trace_for(prompt: str):
    cfg = get_preset("lite").with_(n_layers=4)
    torch.manual_seed(0)
    with torch.inference_mode():
        return K3Model(cfg).eval()(torch.tensor([encode(prompt)]), trace=True).trace


@pytest.mark.parametrize("prompt", ["def greet(name):\n    return 'Hello, ' + name", "é" * 60 + "x" * 200])
def test_token_ids_fit_their_cells_on_a_phone(prompt):
    """Each cell's label and id fit the cell's width at 390 px: the 44-token prompt drew 44 cells in one row,
    ~7 px each, and its ids overprinted into one unreadable run."""
    trace = trace_for(prompt)
    fig = stage_figure(trace, stages(trace)[0])
    heat = fig.data[0]
    columns = max(len(row) for row in heat.z)
    cell_px = (PHONE_FIGURE_PX - AXIS_PX) / columns
    font = heat.textfont.size or 12  # plotly's default
    widest = max(len(line) for row in heat.text for cell in row for line in re.split("<br>", cell or ""))
    assert widest * CHAR_EM * font <= cell_px, (columns, cell_px, widest, font)
    shown = [int(line) for row in heat.text for cell in row if cell for line in cell.split("<br>")[1:]]
    assert shown == list(trace.tokens)  # every token once, in order
    assert fig.layout.height >= 30 * len(heat.z)  # rows are not squeezed as the grid grows
