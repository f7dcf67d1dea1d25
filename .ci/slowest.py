"""The slowest tests of a junit XML (pytest --junitxml), slowest first:
`python .ci/slowest.py build/junit-fast.xml 10`."""

import sys
import xml.etree.ElementTree as ET


def slowest(path: str, count: int) -> list[tuple[float, str]]:
    cases = ET.parse(path).getroot().iter("testcase")
    name = "{}.py::{}".format
    times = [(float(c.get("time", 0)), name(c.get("classname", "").replace(".", "/"), c.get("name"))) for c in cases]
    return sorted(times, reverse=True)[:count]


if __name__ == "__main__":
    for seconds, test in slowest(sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 10):
        print(f"{seconds:8.1f} s  {test}")
