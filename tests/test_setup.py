"""Start-up checks: Java version, settings from the environment."""

from pathlib import Path

import pytest

from lb_pipeline.errors import SetupError
from lb_pipeline.settings import spark_settings_from_env
from lb_pipeline.spark import java


@pytest.mark.parametrize("text, major", [
    ('openjdk version "17.0.15" 2025-04-15', 17), ('java version "1.8.0_392"', 8), ('openjdk version "21" 2023', 21),
])
def test_java_version_is_parsed(text, major):
    assert java.parse_java_major(text) == major


def test_old_java_gives_a_one_line_fix(monkeypatch, tmp_path):
    fake = tmp_path / "java"
    fake.write_text('#!/bin/sh\necho \'java version "1.8.0_392"\' >&2\n')
    fake.chmod(0o755)
    monkeypatch.setenv("JAVA_HOME", str(tmp_path / "nowhere"))
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(SetupError, match="Java 17\\+ is required .* is Java 8") as exc:
        java.require_java()
    assert "\n" not in str(exc.value)


def test_missing_java_says_how_to_install(monkeypatch, tmp_path):
    monkeypatch.delenv("JAVA_HOME", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(SetupError, match="apt-get install"):
        java.require_java()


def test_spark_settings_come_from_the_environment():
    s = spark_settings_from_env({"LB_SPARK_MASTER": "spark://m:7077", "LB_SPARK_CONF": '{"spark.executor.memory": "4g"}',
                                 "LB_DELTA_JARS_DIR": "/opt/jars"})
    assert (s.master, s.conf, s.delta_jars_dir) == ("spark://m:7077", {"spark.executor.memory": "4g"}, "/opt/jars")


def test_malformed_spark_conf_is_a_clear_error():
    with pytest.raises(SetupError, match="LB_SPARK_CONF must be a JSON object"):
        spark_settings_from_env({"LB_SPARK_CONF": "spark.x=1"})


def test_jar_folder_without_delta_is_refused(tmp_path):
    from lb_pipeline.settings import SparkSettings
    from lb_pipeline.spark.session import delta_builder

    with pytest.raises(SetupError, match="holds no delta-spark"):
        delta_builder(SparkSettings(delta_jars_dir=str(tmp_path)))


def test_doctor_repairs_a_jar_cache_poisoned_by_a_cut_short_download(tmp_path, monkeypatch, capsys):
    import zipfile

    from lb_pipeline.cli import main

    ivy = tmp_path / "ivy"
    module = ivy / "cache" / "io.delta" / "delta-spark_4.2_2.13"
    (module / "jars").mkdir(parents=True)
    (ivy / "jars").mkdir()
    good = ivy / "jars" / "org.x_y-1.0.jar"
    with zipfile.ZipFile(good, "w") as z:
        z.writestr("A.class", b"\xca\xfe\xba\xbe" * 100)
    cut = good.read_bytes()[:60]  # what a download cut short leaves
    (module / "jars" / "delta-spark_4.2_2.13-4.4.1.jar").write_bytes(cut)
    (ivy / "jars" / "io.delta_delta-spark_4.2_2.13-4.4.1.jar").write_bytes(cut)
    (module / "ivy-4.4.1.xml").write_text("<ivy-module><info")
    monkeypatch.setenv("LB_IVY_DIR", str(ivy))
    monkeypatch.delenv("LB_DELTA_JARS_DIR", raising=False)
    assert main(["doctor"]) == 0
    out = capsys.readouterr()
    assert out.err.count("damaged: ") == 3 and "removed 3 damaged file(s)" in out.out
    assert not module.exists() and not (ivy / "jars" / "io.delta_delta-spark_4.2_2.13-4.4.1.jar").exists()
    assert good.exists()  # intact jars stay
    assert main(["doctor"]) == 0 and "damaged" not in capsys.readouterr().err


def _jar(path):
    import zipfile

    path.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("A.class", b"\xca\xfe\xba\xbe")


def test_doctor_says_the_jar_cache_is_ready_only_when_it_holds_the_installed_delta_jars(tmp_path, monkeypatch, capsys):
    from importlib.metadata import version

    from lb_pipeline.cli import main

    release = version("delta-spark")
    ivy = tmp_path / "ivy"
    monkeypatch.setenv("LB_IVY_DIR", str(ivy))
    monkeypatch.delenv("LB_DELTA_JARS_DIR", raising=False)
    assert main(["doctor"]) == 0
    assert "no delta-spark or delta-storage yet: the first Spark start downloads them" in capsys.readouterr().out
    _jar(ivy / "jars" / f"io.delta_delta-spark_4.2_2.13-{release}.jar")
    _jar(ivy / "jars" / "io.delta_delta-storage-0.0.1.jar")  # another release's: not what Spark will load
    assert main(["doctor"]) == 0 and "no delta-storage yet" in capsys.readouterr().out
    _jar(ivy / "jars" / f"io.delta_delta-storage-{release}.jar")
    assert main(["doctor"]) == 0 and capsys.readouterr().out.rstrip().endswith(": ready")


def test_doctor_refuses_a_delta_jar_folder_without_both_jars(tmp_path, monkeypatch, capsys):
    from importlib.metadata import version

    from lb_pipeline.cli import main

    _jar(tmp_path / f"delta-spark_4.2_2.13-{version('delta-spark')}.jar")
    monkeypatch.setenv("LB_DELTA_JARS_DIR", str(tmp_path))
    assert main(["doctor"]) == 1 and "lacks delta-storage" in capsys.readouterr().err


def test_version_names_the_releases_that_move_together(capsys):
    from importlib.metadata import version

    from lb_pipeline.cli import main

    with pytest.raises(SystemExit) as done:
        main(["--version"])
    assert done.value.code == 0
    out = capsys.readouterr().out
    assert f"pyspark {version('pyspark')}" in out and f"delta-spark {version('delta-spark')}" in out


def test_without_a_mirror_delta_is_resolved_from_central_only_not_from_a_local_maven_repository(tmp_path):
    """Spark's default chain tries ~/.m2 first, and a POM there without its jar fails every start ("download
    failed: javax.annotation#javax.annotation-api;1.3.2!javax.annotation-api.jar", seen after a Maven build)."""
    from xml.etree import ElementTree

    from lb_pipeline.settings import SparkSettings
    from lb_pipeline.spark.session import delta_builder

    mirror = tmp_path / "mirror.xml"
    mirror.write_text("<ivysettings/>")
    ivy = tmp_path / "ivy"
    built = delta_builder(SparkSettings(ivy_dir=str(ivy)))._options
    resolvers = ElementTree.parse(built["spark.jars.ivySettings"]).getroot().find("resolvers")
    assert [(r.tag, r.get("root")) for r in resolvers] == [("ibiblio", "https://repo1.maven.org/maven2/")]
    assert built["spark.jars.ivySettings"].startswith(str(ivy))
    assert delta_builder(SparkSettings(ivy_dir=str(ivy), ivy_settings=str(mirror)))._options[
        "spark.jars.ivySettings"] == str(mirror)  # a mirror named is used as it is


_START = r'''
import subprocess, sys, time
from lb_pipeline.spark.quiet_start import quiet_start
fail = sys.argv[1] == "fail"
children = []
try:
    with quiet_start():
        children.append(subprocess.Popen(["sh", "-c", "echo ':: resolving dependencies :: x'; "
                                          "printf '\\tfound io.delta#delta-storage;4.4.0 in central\\n'; "
                                          "echo 'a line that is no noise'; sleep 3; "
                                          "printf '\\tat org.apache.spark.Later(X.java:1)\\n'"]))
        time.sleep(0.5)
        if fail:
            raise RuntimeError("start failed")
except RuntimeError:
    pass
children[0].wait()
time.sleep(0.5)
'''


@pytest.mark.parametrize("outcome", ["ok", "fail"])
def test_the_jvms_start_up_noise_is_printed_only_when_the_start_fails(outcome):
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-c", _START, outcome], capture_output=True, text=True, timeout=60,
                          cwd=Path(__file__).resolve().parents[1])
    lines = (done.stdout + done.stderr).splitlines()
    noise = [":: resolving dependencies :: x", "\tfound io.delta#delta-storage;4.4.0 in central"]
    assert "a line that is no noise" in lines and "\tat org.apache.spark.Later(X.java:1)" in lines  # later: as is
    assert all((n in lines) == (outcome == "fail") for n in noise), lines


LOCK_HOLDER = """
import sys, time
from lb_pipeline.settings import SparkSettings
from lb_pipeline.spark.session import resolution_lock
with resolution_lock(SparkSettings(ivy_dir=sys.argv[1])):
    print("held", flush=True)
    time.sleep(1.5)
    print("released", flush=True)
"""


def test_two_processes_resolve_delta_jars_one_at_a_time_and_a_jar_folder_needs_no_lock(tmp_path):
    """Ivy's cache breaks under two resolutions at once (a test session and the nights beside it, on a fresh
    machine): the lock around the JVM's start makes the second wait for the first."""
    import fcntl
    import subprocess
    import sys
    import time

    from lb_pipeline.settings import SparkSettings
    from lb_pipeline.spark.session import resolution_lock

    holder = subprocess.Popen([sys.executable, "-c", LOCK_HOLDER, str(tmp_path / "ivy")], stdout=subprocess.PIPE,
                              text=True)
    assert holder.stdout.readline().strip() == "held"
    started = time.monotonic()
    with resolution_lock(SparkSettings(ivy_dir=str(tmp_path / "ivy"))):
        waited = time.monotonic() - started
        assert holder.stdout.readline().strip() == "released"  # the holder was done before this one got the lock
    holder.wait(10)
    assert waited > 0.5
    held_open = open(tmp_path / "ivy" / ".resolve.lock", "a")  # a jar folder: no lock taken, nothing waits
    fcntl.flock(held_open, fcntl.LOCK_EX)
    with resolution_lock(SparkSettings(ivy_dir=str(tmp_path / "ivy"), delta_jars_dir=str(tmp_path / "jars"))):
        pass
    held_open.close()


def test_great_expectations_imports_in_a_process_whose_main_module_has_no_file():
    """The run worker Dagster's daemon launches has a ``__main__`` with neither spec nor file, as ``python -c``
    has: there, pyspark's Spark Connect check took the import for a doctest run and called ``sys.exit(0)``, and every
    scheduled night ended at ``bronze_checks`` (the daemon-launched night of ``tests/background.py`` runs it all)."""
    import subprocess
    import sys

    code = "import lb_pipeline.quality, great_expectations; print('imported', great_expectations.__version__)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300,
                          cwd=Path(__file__).resolve().parents[1])
    assert done.returncode == 0 and done.stdout.startswith("imported 1."), (done.stdout, done.stderr[-2000:])
    assert "Skipping doctests" not in done.stderr
