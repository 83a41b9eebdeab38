"""The LocalStack adapter (needs localstack-core importable, not running)."""

import json
import struct
from importlib import metadata
from pathlib import Path
from types import SimpleNamespace

import pytest

pytest.importorskip("localstack")

from localstack.services.lambda_.invocation.executor_endpoint import StatusErrorException  # noqa: E402
from localstack.services.lambda_.invocation.runtime_executor import LambdaRuntimeException  # noqa: E402

from hostexec.executor import HostRuntimeExecutor, check_bootstrap, elf_machine  # noqa: E402


def function_version(code_dir: Path, timeout=5, runtime="provided.al2023"):
    return SimpleNamespace(
        id=SimpleNamespace(function_name="fn", qualifier="$LATEST", region="us-east-1", account="000000000000"),
        config=SimpleNamespace(
            code=SimpleNamespace(get_unzipped_code_location=lambda: code_dir, prepare_for_execution=lambda: None),
            timeout=timeout,
            memory_size=256,
            runtime=runtime,
            package_type="Zip",
            layers=[],
        ),
        qualified_arn="arn:aws:lambda:us-east-1:000000000000:function:fn:$LATEST",
    )


def test_entry_points_are_registered():
    eps = metadata.entry_points(group="localstack.lambda.runtime_executor")
    assert "host" in {ep.name for ep in eps}, "pip install the package (localstack.sh install does)"
    hooks = metadata.entry_points(group="localstack.hooks.on_infra_start")
    assert "_hostexec_s3_storage_dir" in {ep.name for ep in hooks}


def test_plugin_loads_the_executor():
    from hostexec.plugin import HostRuntimeExecutorPlugin

    assert HostRuntimeExecutorPlugin().load() is HostRuntimeExecutor


def test_s3_storage_hook(tmp_path, monkeypatch):
    from localstack.services.s3 import provider

    from hostexec.plugin import _hostexec_s3_storage_dir

    monkeypatch.setattr(provider, "DEFAULT_S3_TMP_DIR", provider.DEFAULT_S3_TMP_DIR)
    monkeypatch.setenv("HOSTEXEC_S3_STORAGE_DIR", str(tmp_path / "s3"))
    _hostexec_s3_storage_dir()
    assert provider.DEFAULT_S3_TMP_DIR == str(tmp_path / "s3")
    assert (tmp_path / "s3").is_dir()


def test_start_invoke_stop(code_dir, tmp_path, monkeypatch):
    monkeypatch.setenv("HOSTEXEC_LOG_DIR", str(tmp_path / "logs"))
    ex = HostRuntimeExecutor("envid123456", function_version(code_dir))
    ex.start({
        "AWS_LAMBDA_FUNCTION_NAME": "fn",
        "AWS_LAMBDA_FUNCTION_MEMORY_SIZE": 256,  # LocalStack passes ints
        "LOCALSTACK_RUNTIME_ENDPOINT": "http://x",
        "AWS_ENDPOINT_URL": "http://127.0.0.1:4566",
    })
    try:
        res = ex.invoke({"invoke-id": "rid", "invoked-function-arn": "arn:fn", "payload": json.dumps({"op": "log", "n": 1}), "trace-id": "Root=1"})
        assert not res.is_error
        b = json.loads(res.payload)
        assert b["requestId"] == "rid" and b["arn"] == "arn:fn" and b["trace"] == "Root=1"
        assert b["env"]["AWS_ENDPOINT_URL"] == "http://127.0.0.1:4566"
        assert "START RequestId: rid" in res.logs and "log 0" in res.logs
        assert "log 0" in ex.get_logs()
        assert (tmp_path / "logs" / "localstack-lambda-fn.log").exists()
    finally:
        ex.stop()


def test_startup_failure_is_a_status_error(code_dir, monkeypatch):
    (code_dir / "bootstrap").write_text("#!/bin/sh\necho cannot start\nexit 7\n")
    ex = HostRuntimeExecutor("envid", function_version(code_dir))
    with pytest.raises(StatusErrorException) as e:
        ex.start({})
    assert b"exit status 7" in e.value.payload
    ex.stop()


def elf(machine: int) -> bytes:
    return b"\x7fELF\x02\x01\x01" + b"\0" * 9 + struct.pack("<HH", 2, machine) + b"\0" * 40


def test_elf_machine(tmp_path):
    p = tmp_path / "b"
    p.write_bytes(elf(0xB7))
    assert elf_machine(p) == "aarch64"
    p.write_bytes(elf(0x3E))
    assert elf_machine(p) == "x86_64"
    p.write_text("#!/bin/sh\n")
    assert elf_machine(p) is None


def test_foreign_architecture_is_refused(tmp_path, monkeypatch):
    import platform

    monkeypatch.setattr(platform, "machine", lambda: "x86_64")
    (tmp_path / "bootstrap").write_bytes(elf(0xB7))
    (tmp_path / "bootstrap").chmod(0o755)
    with pytest.raises(LambdaRuntimeException, match="built for aarch64, this host is x86_64"):
        check_bootstrap(tmp_path, "fn")
    (tmp_path / "bootstrap").write_bytes(elf(0x3E))
    check_bootstrap(tmp_path, "fn")


def test_prepare_version_refuses_other_runtimes(code_dir):
    with pytest.raises(LambdaRuntimeException, match="not supported"):
        HostRuntimeExecutor.prepare_version(function_version(code_dir, runtime="python3.12"))
    HostRuntimeExecutor.prepare_version(function_version(code_dir))
