from __future__ import annotations

import pytest

from activity.auditing.export import safe_cell


@pytest.mark.parametrize(
    "cell",
    ["=1+1", "+1", "-1", "@SUM(A1)", "\t=1", '  =HYPERLINK("http://x")', "\n\n+1", " \r\n@A1"],
)
def test_a_cell_a_spreadsheet_would_read_as_a_formula_is_defused(cell):
    assert safe_cell(cell) == "'" + cell


@pytest.mark.parametrize("cell", ["Found 3 documents", "a = b", "1-2", "user@example.com"])
def test_other_cells_stay_as_written(cell):
    assert safe_cell(cell) == cell
