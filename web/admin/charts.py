"""Charts drawn on the server as SVG geometry: the template only places what is computed here,
so there is no chart library, no script and nothing fetched from elsewhere."""

from dataclasses import dataclass
from datetime import date

WIDTH = 680
LABEL_WIDTH = 260  # the names left of a bar chart's bars: a whole "openai/<model>" fits
BAR_HEIGHT, BAR_GAP = 18, 6
PLOT_HEIGHT = 160  # the over-time chart's plot, above its date labels
GRID = (0.0, 0.25, 0.5, 0.75, 1.0)


@dataclass(frozen=True)
class Bar:
    label: str
    value: str  # "25% of 40"
    y: int
    width: float  # of the bar, in the bar area (WIDTH - LABEL_WIDTH)


@dataclass(frozen=True)
class BarChart:
    bars: list[Bar]
    height: int
    bar_height: int = BAR_HEIGHT
    label_width: int = LABEL_WIDTH
    width: int = WIDTH


@dataclass(frozen=True)
class Column:
    x: float
    y: float
    width: float
    height: float
    title: str  # the day, its rate and how many calls ran: the column's tooltip


@dataclass(frozen=True)
class TimeChart:
    columns: list[Column]
    gridlines: list[tuple[float, str]]  # (y, "25%")
    first: str
    last: str
    width: int = WIDTH
    plot_height: int = PLOT_HEIGHT
    height: int = PLOT_HEIGHT + 24


def percent(rate: float) -> str:
    return f"{rate * 100:.0f}%" if rate * 100 == round(rate * 100) else f"{rate * 100:.1f}%"


def bar_chart(items: list[tuple[str, float, int]]) -> BarChart:
    """One bar per (name, revert rate, calls that ran); the longest bar is a rate of 100 %."""
    area = WIDTH - LABEL_WIDTH - 90  # room for the value after the longest bar
    bars = [
        Bar(
            label=name or "(none)",
            value=f"{percent(rate)} of {ran}",
            y=i * (BAR_HEIGHT + BAR_GAP),
            width=round(rate * area, 1),
        )
        for i, (name, rate, ran) in enumerate(items)
    ]
    return BarChart(bars=bars, height=max(len(bars), 1) * (BAR_HEIGHT + BAR_GAP))


def time_chart(days: list[tuple[date, float, int]]) -> TimeChart:
    """One column per day that had calls which ran, oldest on the left; height is the rate."""
    step = WIDTH / max(len(days), 1)
    columns = [
        Column(
            x=round(i * step + step * 0.1, 1),
            y=round(PLOT_HEIGHT * (1 - rate), 1),
            width=round(step * 0.8, 1),
            height=round(PLOT_HEIGHT * rate, 1),
            title=f"{day.isoformat()}: {percent(rate)} of {ran} undone",
        )
        for i, (day, rate, ran) in enumerate(days)
    ]
    gridlines = [(round(PLOT_HEIGHT * (1 - g), 1), percent(g)) for g in GRID]
    first, last = (days[0][0].isoformat(), days[-1][0].isoformat()) if days else ("", "")
    if last == first:  # one day: one label, not the same date at both ends
        last = ""
    return TimeChart(columns=columns, gridlines=gridlines, first=first, last=last)
