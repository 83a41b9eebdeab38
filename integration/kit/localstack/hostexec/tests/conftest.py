import json
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).parent


@pytest.fixture
def code_dir(tmp_path: Path) -> Path:
    """A function code folder whose bootstrap is fake_bootstrap.py."""
    d = tmp_path / "code"
    d.mkdir()
    src = (HERE / "fake_bootstrap.py").read_text()
    boot = d / "bootstrap"
    boot.write_text(f"#!{sys.executable}\n{src}")
    boot.chmod(0o755)
    return d


@pytest.fixture
def make_env(tmp_path: Path, code_dir: Path):
    from hostexec.environment import HostEnvironment

    made = []

    def make(**kw) -> HostEnvironment:
        args = dict(
            code_dir=code_dir,
            env={"AWS_LAMBDA_FUNCTION_NAME": "fn", "CUSTOM_VAR": "custom"},
            function_name="fn",
            timeout_s=10,
            init_timeout_s=10,
            work_dir=tmp_path / f"work{len(made)}",
            log_file=tmp_path / "fn.log",
            state_dir=tmp_path / "state",
        )
        args.update(kw)
        env = HostEnvironment(**args)
        made.append(env)
        return env

    yield make
    for env in made:
        env.stop()


def invoke(env, event: dict, rid: str = "req-1", **kw):
    return env.invoke(rid, json.dumps(event).encode(), "arn:aws:lambda:us-east-1:000000000000:function:fn", **kw)
