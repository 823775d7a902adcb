"""Checks on a figure's Plotly JSON that tests in several folders share (importable: tests/ is on sys.path)."""
import math


def log_shape_problems(spec: dict) -> list[str]:
    """Lines and labels on a log x axis placed far outside the data. Plotly reads a shape's x there as a data value
    but an annotation's x as log10, so `add_vline(x=50, annotation_text=...)` put the label at 10^50 and stretched
    the axis (style.log_vline places each in its own convention)."""
    layout, problems = spec.get("layout", {}), []

    def data_x(ref):
        return [x for t in spec.get("data", []) if t.get("xaxis", "x") == ref
                for x in (t.get("x") or []) if isinstance(x, (int, float)) and x > 0]

    def log_axis_of(ref):
        return layout.get(str(ref).replace("x", "xaxis", 1), {}).get("type") == "log"

    for shape in layout.get("shapes", []):
        ref, x0 = shape.get("xref", "x"), shape.get("x0")
        xs = data_x(ref)
        if log_axis_of(ref) and xs and isinstance(x0, (int, float)) and not min(xs) / 10 <= x0 <= max(xs) * 10:
            problems.append(f"a line at x={x0} on a log axis lies outside the data (use style.log_vline)")
    for note in layout.get("annotations", []):
        ref, x = note.get("xref", "x"), note.get("x")
        xs = data_x(ref)
        if log_axis_of(ref) and xs and isinstance(x, (int, float)) \
                and not math.log10(min(xs)) - 1 <= x <= math.log10(max(xs)) + 1:
            problems.append(f"a label at x={x} on a log axis lies at 10^{x}, outside the data (use style.log_vline)")
    return problems
