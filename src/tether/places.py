"""Where tether keeps an index when none is named: the one definition of each default path,
light enough for the CLI to import at start-up (no model, no pydantic).

What it cannot do: it names paths relative to the current folder; finding an index in a
parent folder, or the one a setting names, is `tether.app.locate_index`'s job.
"""

from pathlib import Path

DEFAULT_INDEX = Path(".tether") / "index.sqlite"  # a collection's own index, beside it
DEMO_INDEX = Path(".tether") / "demo.sqlite"  # where the bundled demo is ingested
