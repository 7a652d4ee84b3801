"""Fail early, in one line, when the JVM PySpark needs is missing or too old (PySpark 4.x needs Java 17+)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess

from lb_pipeline.errors import SetupError

MIN_JAVA = 17
_VERSION = re.compile(r'version "(\d+)(?:\.(\d+))?')


def java_executable() -> str | None:
    home = os.environ.get("JAVA_HOME")
    if home:
        candidate = os.path.join(home, "bin", "java")
        if os.access(candidate, os.X_OK):
            return candidate
    return shutil.which("java")


def parse_java_major(version_output: str) -> int | None:
    """``java -version`` prints e.g. ``openjdk version "17.0.15"`` or, before Java 9, ``"1.8.0_392"``."""
    m = _VERSION.search(version_output)
    if not m:
        return None
    major = int(m.group(1))
    if major == 1 and m.group(2):  # 1.8 -> 8
        major = int(m.group(2))
    return major


def require_java(minimum: int = MIN_JAVA) -> int:
    java = java_executable()
    if java is None:
        raise SetupError(
            f"Java {minimum}+ is required by Spark but no 'java' was found on PATH or in JAVA_HOME; "
            "install it (Debian/Ubuntu: apt-get install openjdk-17-jre-headless) and retry."
        )
    out = subprocess.run([java, "-version"], capture_output=True, text=True, timeout=60)
    major = parse_java_major(out.stderr + out.stdout)
    if major is None:
        raise SetupError(f"Could not read the Java version from '{java} -version'; Java {minimum}+ is required.")
    if major < minimum:
        raise SetupError(
            f"Java {minimum}+ is required by Spark 4, but {java} is Java {major}; "
            f"install Java {minimum} or 21 and point JAVA_HOME at it."
        )
    return major
