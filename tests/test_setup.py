"""Start-up checks: Java version, settings from the environment."""

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
