"""Write tests/integration/durations.json (seconds per test file) from a JUnit XML file of an integration run:

    make integration    # writes tests/output/integration.xml
    .venv/bin/python scripts/integration-durations.py tests/output/integration.xml

The integration conftest orders files longest first from it (only the order: nothing is skipped or timed out)."""

import collections
import json
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

if len(sys.argv) != 2:
    sys.exit("usage: python scripts/integration-durations.py JUNIT_XML")
seconds = collections.Counter()
for case in ET.parse(sys.argv[1]).iter("testcase"):
    seconds[case.get("classname", "").split(".")[-1] + ".py"] += float(case.get("time") or 0)
out = Path(__file__).resolve().parents[1] / "tests" / "integration" / "durations.json"
out.write_text(json.dumps({k: round(v) for k, v in seconds.most_common()}, indent=1) + "\n")
print("%s: %d files, %.0f s in all" % (out, len(seconds), sum(seconds.values())))
