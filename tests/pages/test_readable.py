"""The sweep's own rules (`tests/pages/readable.py`): what it reads of a page, and that each
mark of an internal word it looks for is found where the issue saw it, and not in plain words."""

import pytest

from tests.pages.readable import internal_words, visible_text


def test_what_a_person_reads_of_a_page():
    markup = (
        "<p>Goblin <b>falls</b></p><script>let creature_id = 1</script>"
        "<details><summary>Details</summary><code>start_combat</code></details>"
        "<details open><summary>More</summary>opened</details>"
        '<p hidden>gm_only</p><input value="x_y"><br>end'
    )
    assert visible_text(markup) == "Goblin falls Details More opened end"
    assert "start_combat" in visible_text(markup, open_details=True)


@pytest.mark.parametrize(
    "seen",
    [
        "Thorin gets 2 × healing_potion",
        "Goblin is now ['dead']",
        "asked by scripted/1",
        "campaign 2540710d-2f00-49c2-b214-f459cf708d89",
        "creature:7 hp",
        "start combat with creatures 3, 4",
        "active_encounter_id: None",
        "conditions: {'x': 1}",
    ],
)
def test_each_internal_word_the_issue_saw_is_found(seen: str):
    assert internal_words(seen) != []


def test_plain_words_pass():
    text = (
        "Combat starts: Thorin 17, Goblin 12 — in that order. Thorin gets 2 × healing potion "
        "(0 → 2). HP 20 / 24. The scene moves to Crypt: Water drips. Dec 2, 01:57"
    )
    assert internal_words(text) == []
