"""LocalStack's RuntimeExecutor contract, implemented with host processes.

LocalStack's docker executor starts a container whose init binary serves the
Runtime API to the function and reports to LocalStack's "executor endpoint"
(``/_localstack_lambda/<id>/...``): status ready/error, each invocation's
response/error and logs. LocalStack's side of that (ExecutionEnvironment,
VersionManager) only needs the executor's synchronous ``start(env)`` (returns
when the runtime is ready, raises on startup failure) and
``invoke(payload) -> InvocationResult`` (with the invocation's logs, which the
VersionManager stores in CloudWatch Logs under ``/aws/lambda/<function>``).
So this executor serves the Runtime API itself (:mod:`hostexec.environment`)
and answers LocalStack directly, without the HTTP round trip through the
gateway.

Only OS-only runtimes (``provided``, ``provided.al2``, ``provided.al2023``)
with zip code are supported: ``bootstrap`` runs as it is, so it must be built
for this host (an arm64 binary on x86_64 is refused at function creation with
a message saying so, instead of an ``Exec format error`` at each invocation).

Settings (environment of the LocalStack process):

- ``HOSTEXEC_LOG_DIR``: append each function's output to
  ``<dir>/localstack-lambda-<function>.log``;
- ``HOSTEXEC_STATE_DIR``: a ``<pgid>.pgid`` file per running bootstrap, so a
  supervisor can kill what a killed LocalStack left behind;
- ``HOSTEXEC_INIT_TIMEOUT``: seconds a bootstrap has to poll ``/next`` (30).
"""

from __future__ import annotations

import logging
import os
import platform
import tempfile
from pathlib import Path

from localstack import config
from localstack.aws.api.lambda_ import PackageType
from localstack.services.lambda_.invocation.executor_endpoint import StatusErrorException
from localstack.services.lambda_.invocation.lambda_models import FunctionVersion, InvocationResult
from localstack.services.lambda_.invocation.runtime_executor import LambdaRuntimeException, RuntimeExecutor
from localstack.utils.strings import to_bytes

from hostexec.environment import HostEnvironment, StartupError

LOG = logging.getLogger(__name__)

# Variables LocalStack sets for its init binary; meaningless for a host process.
_INIT_ONLY_VARIABLES = ("LOCALSTACK_RUNTIME_ENDPOINT", "LOCALSTACK_RUNTIME_ID", "LOCALSTACK_CHMOD_PATHS", "LOCALSTACK_USER")

# ELF e_machine values -> platform.machine() names
_ELF_MACHINES = {0x3E: "x86_64", 0xB7: "aarch64", 0x03: "i386", 0x28: "arm"}
_MACHINE_ALIASES = {"amd64": "x86_64", "arm64": "aarch64"}


def _gateway_host() -> str:
    host = config.GATEWAY_LISTEN[0].host
    return "127.0.0.1" if host in ("", "0.0.0.0", "::", "[::]") else host


def elf_machine(path: Path) -> str | None:
    """The architecture of an ELF executable, None for anything else (a script)."""
    try:
        with open(path, "rb") as f:
            head = f.read(20)
    except OSError:
        return None
    if len(head) < 20 or head[:4] != b"\x7fELF":
        return None
    machine = int.from_bytes(head[18:20], "little" if head[5] == 1 else "big")
    return _ELF_MACHINES.get(machine, f"ELF machine 0x{machine:x}")


def check_bootstrap(code_dir: Path, function_name: str) -> None:
    """Raises LambdaRuntimeException unless code_dir/bootstrap can run on this host."""
    bootstrap = code_dir / "bootstrap"
    if not bootstrap.is_file():
        raise LambdaRuntimeException(f"hostexec: {function_name}: no 'bootstrap' file at the root of the code ({code_dir})")
    if not os.access(bootstrap, os.X_OK):
        raise LambdaRuntimeException(f"hostexec: {function_name}: 'bootstrap' is not executable")
    arch = elf_machine(bootstrap)
    host = platform.machine().lower()
    host = _MACHINE_ALIASES.get(host, host)
    if arch is not None and arch != host:
        raise LambdaRuntimeException(
            f"hostexec: {function_name}: bootstrap is built for {arch}, this host is {host}: it would fail with "
            f"'Exec format error'. Build it for the host (e.g. CGO_ENABLED=0 go build -tags lambda.norpc -o bootstrap) "
            f"for a local deploy; the function's declared architecture is ignored."
        )


class HostRuntimeExecutor(RuntimeExecutor):
    def __init__(self, id: str, function_version: FunctionVersion) -> None:
        super().__init__(id=id, function_version=function_version)
        self._env: HostEnvironment | None = None

    # --- where things are ---------------------------------------------------------

    def get_address(self) -> str:
        return "127.0.0.1"

    def get_endpoint_from_executor(self) -> str:
        # the function runs on this host: LocalStack is at the gateway's own address
        return _gateway_host()

    def get_runtime_endpoint(self) -> str:
        # only read into LOCALSTACK_RUNTIME_ENDPOINT, which no host process uses
        return f"http://{_gateway_host()}:{config.GATEWAY_LISTEN[0].port}/_localstack_lambda/{self.id}"

    # --- lifecycle ------------------------------------------------------------------

    def start(self, env_vars: dict[str, str]) -> None:
        cfg = self.function_version.config
        name = self.function_version.id.function_name
        code_dir = Path(cfg.code.get_unzipped_code_location())
        env = {k: str(v) for k, v in env_vars.items() if v is not None and k not in _INIT_ONLY_VARIABLES}
        env["LAMBDA_RUNTIME_DIR"] = str(code_dir)
        log_dir = os.environ.get("HOSTEXEC_LOG_DIR")
        log_file = None
        if log_dir:
            Path(log_dir).mkdir(parents=True, exist_ok=True)
            log_file = Path(log_dir) / f"localstack-lambda-{name}.log"
        self._env = HostEnvironment(
            code_dir=code_dir,
            env=env,
            function_name=name,
            timeout_s=cfg.timeout,
            memory_mb=cfg.memory_size,
            version=self.function_version.id.qualifier,
            runtime_name=str(cfg.runtime),
            init_timeout_s=float(os.environ.get("HOSTEXEC_INIT_TIMEOUT") or 30),
            work_dir=Path(tempfile.gettempdir()) / "hostexec" / self.id,
            log_file=log_file,
            state_dir=os.environ.get("HOSTEXEC_STATE_DIR") or None,
            label=f"{name} {self.id[:8]}",
        )
        try:
            self._env.start()
        except StartupError as e:
            LOG.warning("hostexec: %s: %s\n%s", name, e, e.logs)
            raise StatusErrorException(str(e), payload=e.payload) from e

    def stop(self) -> None:
        if self._env is not None:
            self._env.stop()

    def invoke(self, payload: dict[str, str]) -> InvocationResult:
        if self._env is None:
            raise LambdaRuntimeException(f"hostexec: executor {self.id} was not started")
        result = self._env.invoke(
            request_id=payload["invoke-id"],
            payload=to_bytes(payload.get("payload") or ""),
            function_arn=payload.get("invoked-function-arn") or self.function_version.qualified_arn,
            trace_id=payload.get("trace-id"),
        )
        return InvocationResult(request_id=result.request_id, payload=result.payload, is_error=result.is_error, logs=result.logs)

    def get_logs(self) -> str:
        return self._env.output() if self._env is not None else ""

    # --- versions -------------------------------------------------------------------

    @classmethod
    def prepare_version(cls, function_version: FunctionVersion) -> None:
        cfg = function_version.config
        name = function_version.id.function_name
        if cfg.package_type != PackageType.Zip or not cfg.code:
            raise LambdaRuntimeException(f"hostexec: {name}: only zip packages are supported, not container images")
        runtime = str(cfg.runtime or "")
        if not runtime.startswith("provided"):
            raise LambdaRuntimeException(
                f"hostexec: {name}: runtime {runtime!r} is not supported; hostexec runs OS-only runtimes "
                f"(provided.al2023, provided.al2), whose 'bootstrap' is an executable"
            )
        if cfg.layers:
            LOG.warning("hostexec: %s: layers are ignored (no /opt on the host)", name)
        cfg.code.prepare_for_execution()
        check_bootstrap(Path(cfg.code.get_unzipped_code_location()), name)

    @classmethod
    def cleanup_version(cls, function_version: FunctionVersion) -> None:
        pass

    @classmethod
    def validate_environment(cls) -> bool:
        return True
