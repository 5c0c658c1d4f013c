"""`--backend ray` with an address that cannot be joined fails in one line with the fix, and makes no run
folder (issue 30, item 18): the folder is created only once Ray is connected."""

from __future__ import annotations

from pathlib import Path

import pytest

from simulator.cli import main
from simulator.engine.ray_backend import RayBackendOptions, _connect_error
from tests.conftest import REQUIRE_ALL

try:
    import ray  # noqa: F401
except ImportError:
    if REQUIRE_ALL:  # CI runs every test: a missing Ray is a failure there
        raise
    pytest.skip("needs Ray: pip install -e '.[ray]'", allow_module_level=True)


@pytest.mark.parametrize("address", ["ray://127.0.0.1:1", "ray://localhost:9"])
def test_a_ray_client_address_without_the_client_is_one_line_and_no_folder(
    suite_dir: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    address: str,
) -> None:
    import ray

    if ray.is_initialized():
        pytest.skip("Ray is already running in this process")
    try:
        import ray.util.client.worker

        has_client = True
        # Ray's client tries 3 times, waiting 5, 10 and 15 s for a port nobody serves: 30 s a case. The
        # waits are read at import, so the module's own figures are lowered (the attempts still happen).
        monkeypatch.setattr(ray.util.client.worker, "INITIAL_TIMEOUT_SEC", 1)
        monkeypatch.setattr(ray.util.client.worker, "MAX_TIMEOUT_SEC", 1)
    except ImportError:
        has_client = False
    out = tmp_path / "run"
    argv = ["run", str(suite_dir / "suite.yaml"), "--out", str(out), "--no-progress"]
    assert main([*argv, "--backend", "ray", "--address", address]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err and address in err
    assert ("ray[client]" in err) if not has_client else ("RAY_AUTH_MODE=token" in err)
    assert not out.exists()  # no folder left `running` by a failed attempt


@pytest.mark.parametrize(
    "exc",
    [ConnectionError("Could not find any running Ray instance"), SystemExit(15), RuntimeError("auth failed")],
)
def test_connection_failures_say_the_fix(exc: BaseException) -> None:
    error = _connect_error("10.0.0.5:6379", exc)
    text = str(error)
    assert "10.0.0.5:6379" in text and "RAY_AUTH_MODE=token" in text and "\n" not in text
    assert RayBackendOptions("x").address == "x"
