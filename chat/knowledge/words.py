"""The words the search reads a question with, and the demo model too: plain text rules,
with no models behind them (the agent runtime may import this module, not the search)."""

from __future__ import annotations

import re

CJK = re.compile(r"[\u3400-\u9fff\uf900-\ufaff]")
STOPWORDS = frozenset(
    """a about all also am an and any are as at be been but by can could did do does for from
    get give had has have help how i if in into is it its just know let like me more my need
    of on or our please should so some tell than that the their them then there these they
    this to us want was we what when where which who why will with would you your
    il lo la gli le un una di da con su per tra fra che come cosa mi mio mia ho ha sono è
    non del della dei delle al alla posso puoi può devo vorrei voglio fare qual quale quali
    quanto questo questa""".split()
)
